"""Pruning: head + marker + tail to a token budget, the arrival cap, and the ``pruned`` strategy."""

from __future__ import annotations

import base64
import random
import re
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlab.context import BudgetPolicy, build_context
from ctxlab.base.errors import BudgetError, CtxlabError
from ctxlab.io.formats import load
from ctxlab.messages import Conversation, ImagePart, Message, TextPart, assistant, tool_result, user
from ctxlab.tables.profiles import profile_for, with_window
from ctxlab.pruning import DEFAULT_MARKER, ArrivalCap, PruneBudgetError, fair_shares, prune_message, prune_text, text_tokens
from ctxlab.pruning_strategy import PrunedStrategy
from ctxlab.render import render_blocks
from ctxlab.replay import replay
from ctxlab.fast import FAST
from ctxlab.strategies import Call
from ctxlab.views import substituted
from ctxlab.estimators import get_counter
from ctxlab.tokens import CharsPerTokenCounter, MessageMeter, TiktokenCounter

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample_session.jsonl"
O200K = get_counter("o200k_base")
MARKER_RE = re.compile(r"\n\[\.\.\. ([\d,]+) tokens omitted \.\.\.\]\n")
CHINESE = ("上下文窗口管理是智能体工程的核心问题。模型每次调用都要重新读取全部历史，"
           "所以工具结果过大时必须剪枝或者换页。日志类结果优先剪枝，文档类结果优先换页。")
EMOJI = "🙂👨‍👩‍👧🇨🇳🏳️‍🌈✅ 🧪"


def words(n: int) -> str:
    """A text of exactly ``n`` o200k tokens (" word" is one token)."""
    text = " word" * n
    assert O200K.count(text) == n
    return text


def split_pruned(out: str) -> tuple[str, int, str]:
    head, omitted, tail = MARKER_RE.split(out)
    return head, int(omitted.replace(",", "")), tail


# ---- prune_text ----

def test_text_within_budget_is_returned_unchanged():
    r = prune_text(CHINESE, 500, O200K)
    assert r.text is CHINESE and not r.pruned and r.omitted_tokens == 0
    assert r.head_tokens == r.original_tokens == O200K.count(CHINESE)


def test_prune_keeps_head_and_tail_and_names_what_was_omitted():
    log = "\n".join(f"step {i}: ok" for i in range(400)) + "\nFAILED: exit 1"
    r = prune_text(log, 60, O200K)
    head, omitted, tail = split_pruned(r.text)
    assert O200K.count(r.text) <= 60 and r.pruned
    assert log.startswith(head) and log.endswith(tail) and tail.endswith("FAILED: exit 1")
    assert omitted == r.omitted_tokens == O200K.count(log[len(head): len(log) - len(tail)])
    assert r.original_tokens == O200K.count(log) and r.head_tokens == O200K.count(head)


def test_marker_uses_thousands_separators():
    r = prune_text(words(5_000), 100, O200K)
    assert "tokens omitted" in r.text and re.search(r"\d,\d{3} tokens omitted", r.text)


def test_budget_below_marker_plus_one_is_an_error_naming_the_numbers():
    text = words(300)
    floor = O200K.count(DEFAULT_MARKER.format(omitted=300)) + 1
    with pytest.raises(PruneBudgetError) as info:
        prune_text(text, floor - 1, O200K)
    err = info.value
    assert isinstance(err, BudgetError) and isinstance(err, CtxlabError)
    assert err.needed == floor and err.budget == floor - 1
    assert f"{floor - 1:,} tokens" in str(err) and f"at least {floor:,}" in str(err) and "300-token" in str(err)
    assert O200K.count(prune_text(text, floor, O200K).text) <= floor  # the floor itself works


@pytest.mark.parametrize("share", [0.0, 0.25, 0.5, 0.8, 1.0])
def test_head_share_is_respected(share):
    r = prune_text(words(2_000), 200, O200K, head_share=share)
    kept = r.head_tokens + r.tail_tokens
    assert kept >= 180
    assert abs(r.head_tokens - share * kept) <= 2
    head, _, tail = split_pruned(r.text)
    assert (head == "") == (share == 0.0) and (tail == "") == (share == 1.0)


def test_bad_head_share_is_refused():
    with pytest.raises(ValueError, match="head_share"):
        prune_text(words(50), 20, O200K, head_share=1.5)


def test_estimator_counters_cut_by_characters():
    for counter in (CharsPerTokenCounter(3), CharsPerTokenCounter(4)):
        text = "abcdefghij" * 500
        r = prune_text(text, 100, counter)
        head, _, tail = split_pruned(r.text)
        assert counter.count(r.text) <= 100 and text.startswith(head) and text.endswith(tail)
        assert counter.count(r.text) >= 90  # cutting characters wastes almost nothing


def test_calibrated_counter_stays_within_budget():
    counter = TiktokenCounter("o200k_base", calibration=1.3)
    r = prune_text(CHINESE * 40, 150, counter)
    assert counter.count(r.text) <= 150 and r.pruned


def test_custom_marker():
    r = prune_text(words(400), 50, O200K, marker=" <{omitted} cut> ")
    assert re.search(r" <\d+ cut> ", r.text) and O200K.count(r.text) <= 50


def _check_pruned(text: str, budget: int, counter) -> None:
    try:
        r = prune_text(text, budget, counter)
    except PruneBudgetError as err:  # only below marker + 1 token, and it says so
        assert budget < err.needed == counter.count(DEFAULT_MARKER.format(omitted=counter.count(text))) + 1
        assert f"{budget:,} tokens" in str(err)
        return
    out = r.text
    assert counter.count(out) <= budget
    assert "\ufffd" not in out
    assert out.encode("utf-8").decode("utf-8") == out  # valid UTF-8 all the way through
    if r.pruned:
        head, omitted, tail = split_pruned(out)
        assert text.startswith(head) and text.endswith(tail)  # no partial character at either cut
        assert omitted == r.omitted_tokens
    else:
        assert out == text


@settings(max_examples=150, derandomize=True, deadline=None)
@given(seed=st.integers(0, 10**6), length=st.integers(1, 3000), budget=st.integers(5, 500))
def test_chinese_pruned_to_any_budget_is_valid_utf8_within_budget(seed, length, budget):
    rng = random.Random(seed)
    text = "".join(rng.choice(CHINESE + EMOJI) for _ in range(length))
    for counter in (O200K, get_counter("cl100k_base"), CharsPerTokenCounter(3)):
        _check_pruned(text, budget, counter)


@settings(max_examples=60, derandomize=True, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list(EMOJI + "中文字节\n ")), min_size=1, max_size=800),
       budget=st.integers(5, 500))
def test_emoji_and_mixed_text_stay_whole_characters(text, budget):
    _check_pruned(text, budget, O200K)


def test_every_budget_from_5_to_500_on_chinese():
    text = CHINESE * 30
    floor = O200K.count(DEFAULT_MARKER.format(omitted=O200K.count(text))) + 1
    assert floor <= 12  # the marker is small: budgets from 12 up always prune
    for budget in range(5, 501):
        _check_pruned(text, budget, O200K)


# ---- prune_message and fair shares ----

def test_fair_shares():
    assert fair_shares([10, 500, 800], 310) == [10, 150, 150]
    assert fair_shares([100, 100], 1_000) == [100, 100]
    assert sum(fair_shares([7, 300, 41, 999], 200)) <= 200


def test_prune_message_keeps_identity_and_non_text_parts():
    msg = Message(role="tool", parts=(TextPart(words(500)), ImagePart(width=10, height=10), TextPart(words(20))),
                  id="t9", tool_call_id="c9", tool_name="bash", is_error=True, timestamp="2025-01-01T00:00:00Z")
    out = prune_message(msg, 120, O200K)
    assert replace(out, parts=msg.parts) == msg  # every field but the parts is unchanged
    assert [p.type for p in out.parts] == ["text", "image", "text"] and out.parts[1] == msg.parts[1]
    assert out.parts[2] == msg.parts[2]  # the small part fits its fair share whole
    assert text_tokens(out, O200K) <= 120 and "tokens omitted" in out.parts[0].text
    assert prune_message(msg, 10_000, O200K) is msg


# ---- the arrival cap ----

def test_arrival_cap_is_per_tool_and_deterministic():
    cap = ArrivalCap({"bash": 50}, default_tokens=200)
    log = tool_result("c1", words(1_000), "t1", name="bash")
    doc = tool_result("c2", words(1_000), "t2", name="read_file")
    assert text_tokens(cap.cap(log), O200K) <= 50 and text_tokens(cap.cap(doc), O200K) <= 200
    assert cap.cap(user("hi " * 900, "u")).text == "hi " * 900  # only tool results are capped
    # the same result capped twice, or by a second cap with the same limits: the same bytes
    again = ArrivalCap({"bash": 50}, default_tokens=200)
    assert cap.cap(log).text.encode() == cap.cap(log).text.encode() == again.cap(log).text.encode()


def test_capped_result_renders_the_same_bytes_whatever_the_history():
    """The cap depends on the result and its tool's limit only: a short and a long history, and
    two windows, render the capped result to one wire form (same digest)."""
    big = tool_result("c1", words(9_000), "t1", name="bash")
    short = [user("run it", "u1"), assistant("", "a1", calls=(("c1", "bash", {"cmd": "make"}),)), big]
    long = [user(words(3_000), "u0"), assistant("ok", "a0")] + short
    digests = set()
    for history, window in ((short, 200_000), (long, 200_000), (long, 16_000)):
        conv = Conversation("s", tuple(history), model="gpt-4o", provider="openai")
        profile = with_window(profile_for("gpt-4o"), window)
        meter = MessageMeter(profile)
        decision = PrunedStrategy().decide(conv, _call(), profile, meter)
        request = render_blocks(decision.context, "openai", "gpt-4o", meter)
        digests |= {b.digest for b in request.blocks if b.message_id == "t1"}
    assert len(digests) == 1


def test_each_result_is_capped_once():
    seen: list[str] = []

    class Spy(PrunedStrategy):
        def arrive(self, msg, step):
            seen.append(msg.id)
            return super().arrive(msg, step)

    conv = load(SAMPLE).conversation()
    replay(conv, Spy(), window=60_000)
    assert len(seen) == len(set(seen)) == sum(1 for m in conv.messages if m.role == "tool")


def test_base64_result_is_capped_on_arrival_and_never_sent_whole():
    blob = base64.b64encode(random.Random(7).randbytes(30_000)).decode()[:40_000]
    assert len(blob) == 40_000
    items = (user("decode the attachment", "u1"),
             assistant("", "a1", calls=(("c1", "read_file", {"path": "blob.b64"}),), model="gpt-4o", provider="openai"),
             tool_result("c1", blob, "t1", name="read_file"),
             assistant("it is a PNG", "a2", model="gpt-4o", provider="openai"),
             user("and now?", "u2"),
             assistant("done", "a3", model="gpt-4o", provider="openai"))
    conv = Conversation("b64", items, model="gpt-4o", provider="openai")
    result = replay(conv, PrunedStrategy(), check=True)  # a 128k window: the budget never forces a cut
    assert len(result.records) == 3
    for record in result.records:
        assert not record.violations
        wire = "".join(b.text for b in record.request.blocks)
        assert blob not in wire and blob[:10_000] not in wire
    assert any("capped on arrival: t1" in n for r in result.records for n in r.notes)


# ---- the newest unit over budget on its own ----

def _call(index: int = 2) -> Call:
    return Call("main", index, assistant("next", "next"), None, "gpt-4o", "openai")


def over_budget_unit(tool: str = "bash") -> Conversation:
    """``[U·10, A(c1)·5, T(c1)·150]`` tokens of text, sizes checked with the counter."""
    u = user(words(10), "u1")
    meter = MessageMeter(profile_for("gpt-4o"))
    shapes = ["[0]", '{"":0}', "[0,1]", '{"cmd":"make"}']  # JSON strings of 3, 4, 5, 5 tokens, sent verbatim
    a = next(m for m in (assistant("", "a1", calls=(("c1", tool, args),)) for args in shapes)
             if meter.part(m.parts[0]) == 5)
    t = tool_result("c1", words(150), "t1", name=tool)
    assert [sum(meter.part(p) for p in m.parts) for m in (u, a, t)] == [10, 5, 150]
    return Conversation("over", (u, a, t), model="gpt-4o", provider="openai")


def test_newest_unit_over_budget_alone_is_pruned_to_fit():
    conv = over_budget_unit()
    profile, policy = profile_for("gpt-4o"), BudgetPolicy(budget_tokens=100)
    with pytest.raises(BudgetError):  # budgeted alone cannot send it
        build_context(conv, policy, profile=profile)
    strategy = PrunedStrategy(policy)
    decision = strategy.decide(conv, _call(), profile, MessageMeter(profile))
    ctx = decision.context
    assert ctx.total_tokens <= 100
    assert [m.id for m in ctx.messages] == ["u1", "a1", "t1"]  # the pair stays whole (and the task)
    result = ctx.messages[2]
    assert result.tool_call_id == "c1" and "tokens omitted" in result.text
    assert any("newest unit" in n and "t1" in n and "150" in n for n in decision.notes)
    assert decision.notes == ctx.notes[-len(decision.notes):]  # the context's report says it too
    # the rescue is state: a pruned_result entry records what the context shows from now on
    entry, = decision.new_entries
    assert entry.kind == "pruned_result" and entry.data["message_id"] == "t1"
    assert entry.data["replacement"] == result
    # sticky: the next call shows the same pruned bytes, without a new note or entry
    again = strategy.decide(conv, _call(3), profile, MessageMeter(profile))
    assert again.context.messages[2] == result and not again.notes and not again.new_entries
    # a fresh strategy on the session with the entry shows the same (as views.substituted does)
    resumed = replace(conv, items=conv.items + decision.new_entries)
    fresh = PrunedStrategy(policy).decide(resumed, _call(3), profile, MessageMeter(profile))
    assert fresh.context.messages[2] == result == substituted(resumed).messages[2] and not fresh.new_entries


def test_newest_unit_that_cannot_fit_even_pruned_is_a_clear_error():
    conv = over_budget_unit()
    with pytest.raises(BudgetError, match="budget"):
        PrunedStrategy(BudgetPolicy(budget_tokens=30)).decide(conv, _call(), profile_for("gpt-4o"),
                                                              MessageMeter(profile_for("gpt-4o")))


@pytest.mark.parametrize("system_tokens", [500, 110])
def test_fixed_part_over_budget_is_not_hidden(system_tokens):
    """Over by less than the tool result could give: still the fixed-part error, and nothing pruned."""
    conv = replace(over_budget_unit(), system=(words(system_tokens),))
    strategy = PrunedStrategy(BudgetPolicy(budget_tokens=100))
    with pytest.raises(BudgetError, match="fixed part"):
        strategy.decide(conv, _call(), profile_for("gpt-4o"), MessageMeter(profile_for("gpt-4o")))
    assert all(shown is result for result, shown in strategy.shown.values())


# ---- replays ----

@pytest.mark.parametrize("window", [30_000, 60_000])
def test_replay_sample_pruned_passes_checks(window):
    conv = load(SAMPLE).conversation()
    result = replay(conv, PrunedStrategy(), window=window, check=True)
    assert [v for r in result.records for v in r.violations] == []
    assert len(result.ledger.rows) == len(replay(conv, "budgeted", window=window).ledger.rows)
    limit = ArrivalCap().default_tokens * profile_for(conv.model).calibration  # Claude counts = o200k x calibration
    for record in result.records:  # every result in every context is within the cap
        for block in record.request.blocks:
            if block.label.startswith("tool_result"):
                assert block.tokens <= limit + 10  # + the message overhead
    assert any("capped on arrival: m069" in n for r in result.records for n in r.notes)


@pytest.mark.shared
@pytest.mark.parametrize("name,window", [pytest.param("pi-mono/before-compaction.jsonl", None,
                                                      marks=pytest.mark.thorough),
                                         ("pi-mono/before-compaction.jsonl", 60_000),
                                         ("claude-code-viewer/*.jsonl", None),
                                         ("claude-code-viewer/*.jsonl", 30_000)])
def test_replay_shared_transcripts_pruned(shared_transcripts, name, window):
    """Checked replays of two real sessions under ``pruned``. pi at its own window runs under
    ``-m thorough`` only: its contexts grow to ~180k tokens, so checking its 484 calls costs 4-5 s of CPU
    (up to 28 s on a busy machine), and it takes no path that pi at 60,000 does not (both cap the same ten
    results on arrival; 60,000 also cuts the history). Claude Code's session runs at both windows."""
    path = sorted(shared_transcripts.glob(name))[0]
    conv = load(path).conversation()
    result = replay(conv, PrunedStrategy(), window=window, check=True, speedup=FAST)  # plain alike: test_fast.py
    assert result.records and [v for r in result.records for v in r.violations] == []
