"""The chapters' widgets: built on a small synthetic conversation (and on the bundled data when it is
there), driven by setting their controls, checked through their ``state``."""

from __future__ import annotations

import base64
import json
import random
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import pytest

from ctxlab.context import BudgetPolicy, build_context
from ctxlab.messages import Conversation, ToolSpec, assistant, tool_result, user
from ctxlab.tables.profiles import profile_for
from ctxlab.io.session import Session
from ctxlab.estimators import get_counter
from ctxlab.tokens import MessageMeter
from ctxlab.lab.ch00_bill import find_rewrites, notable_rewrites, read_bill, summarize
from ctxlab.lab.ch01_content import (chinese_passage, classify, content_samples, estimator_rows, guess_texts,
                                     verdicts)
from ctxlab.lab.ch01_tokens import overhead_rows, reveal_guess, xray
from ctxlab.lab.ch02_session import compare_contexts, first_lines, fork_points, sha256_of, working_copy
from ctxlab.lab.ch03_budget import call_and_result, granularity_stats, kept_under, minimum_budget, state_row
from ctxlab.lab.data import PI_BILL, REPO, SAMPLE_SESSION
from ctxlab.lab.workbook import load_workbook_conversation, rel, save_upload, text_table

pytest.importorskip("ipywidgets")
pytest.importorskip("plotly")

from ctxlab.widgets import _plots  # noqa: E402
from ctxlab.widgets.ch00_bill import BillWidget, TranscriptUpload, tokens_figure  # noqa: E402
from ctxlab.widgets.ch01_tokens import TokenXray  # noqa: E402
from ctxlab.widgets.ch02_session import BranchWidget  # noqa: E402
from ctxlab.widgets.ch03_budget import BudgetWidget  # noqa: E402

CHINESE = ("上下文窗口管理的核心是区分会话和上下文。会话保存完整的历史，只追加不删除；"
           "上下文在每次调用模型之前按预算重新构建，可以截断。截断必须以完整的交互为单位，"
           "工具调用和工具结果必须成对保留或者成对丢弃，否则服务端会直接拒绝请求。") * 3
PROSE = ("The agent read the configuration file, found the port setting on line forty-two, and changed it. "
         "Then it ran the tests again. Two of them failed because the certificate was missing. ")
CODE = "\n".join(f"    {i}\tdef handler_{i}(request):\n    {i}\t    return respond(request, status={200 + i})"
                 for i in range(12))
B64 = "(binary file, shown base64)\n" + "\n".join(
    base64.b64encode(random.Random(7).randbytes(57)).decode() for _ in range(20))
LOG = "\n".join(f"10:00:{i:02d}.120 [ci] INFO step {i}: ok" for i in range(20))


def make_conversation(big_result_chars: int = 6_000) -> Conversation:
    """system + tools; U, A(c1,c2) T T, A, U(zh), A(c3) T(big), A, U, A(c4) T, A."""
    msgs = [
        user(PROSE, "u1"),
        assistant("Reading both files.", "a1", calls=(("c1", "read_file", {"path": "src/app/handlers.py", "offset": 1}),
                                                      ("c2", "read_file", {"path": "config/settings.json"}))),
        tool_result("c1", CODE, "t1"),
        tool_result("c2", json.dumps({"port": 8443, "tls": {"min": "1.3", "cert": "certs/dev.pem"},
                                      "limits": [{"id": i, "rps": 10 * i} for i in range(8)]}, indent=2), "t2"),
        assistant("Both read. " + PROSE, "a2"),
        user(CHINESE, "u2"),
        assistant("", "a3", calls=(("c3", "bash", {"command": "make ci"}),)),
        tool_result("c3", (LOG + "\n") * (big_result_chars // len(LOG) + 1), "t3"),
        assistant("CI passed. " + PROSE, "a4"),
        user("Now attach the receipt.", "u3"),
        assistant("", "a5", calls=(("c4", "read_file", {"path": "receipt.pdf"}),)),
        tool_result("c4", B64, "t4"),
        assistant("Attached. " + PROSE, "a6"),
    ]
    tools = (ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {
        "path": {"type": "string", "description": "Path relative to the repository."}}}),
             ToolSpec("bash", "Run a shell command.", {"type": "object", "properties": {
                 "command": {"type": "string", "description": "The command."}}}))
    return Conversation(id="synthetic", items=tuple(msgs), system=("You are a careful coding agent.",), tools=tools,
                        model="claude-sonnet-4-5", provider="anthropic")


@pytest.fixture
def conv() -> Conversation:
    return make_conversation()


@pytest.fixture
def scratch(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Temporary folders the widgets make (uploads, working copies) go under this test's tmp_path."""
    folder = tmp_path / "scratch"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


needs_sample = pytest.mark.skipif(not SAMPLE_SESSION.exists(), reason="data/sample_session.jsonl not generated yet")
needs_bill = pytest.mark.skipif(not PI_BILL.exists(), reason="data/pi_bill.csv not generated yet")


# ---- workbook helpers and plots -------------------------------------------------------------------

def test_text_table_aligns_numbers_right_and_text_left():
    out = text_table([("o200k_base", 12, "+1.5%"), ("chars/4", 1234, "-60.1%")], ["counter", "tokens", "error"])
    lines = out.splitlines()
    assert lines[0] == "counter     tokens   error"
    assert lines[2] == "o200k_base      12   +1.5%"
    assert lines[3] == "chars/4      1,234  -60.1%"
    assert text_table([{"a": 1}], ["a"]).splitlines()[-1].strip() == "1"


def test_rel_never_prints_an_absolute_path(tmp_path):
    assert rel(REPO / "data" / "x.csv") == "data/x.csv"
    assert rel(tmp_path / "mine.jsonl") == "mine.jsonl"


def test_show_in_sets_widget_state_and_prints_nothing(capsys):
    import ipywidgets as W

    out = W.Output()
    fig = _plots.figure("t")
    _plots.show_in(out, fig)
    assert capsys.readouterr().out == ""
    data = out.outputs[0]["data"]
    assert set(data) == {"application/vnd.plotly.v1+json", "text/plain"}
    # our own template: no plotly default template (which changes between plotly releases) is embedded
    layout = data["application/vnd.plotly.v1+json"]["layout"]
    assert layout["template"]["layout"]["font"]["family"] == _plots.FONT
    assert "plotly" not in json.dumps(layout["template"]).lower()


def test_load_workbook_conversation_picks_the_main_thread(tmp_path, conv):
    s = Session.create(tmp_path / "threads.jsonl", model="claude-sonnet-4-5")
    for m in conv.messages[:5]:
        s.append(m)
    s.append(user("sub-agent task", "s1", thread="sidechain-1"))
    loaded = load_workbook_conversation(tmp_path / "threads.jsonl")
    assert loaded.threads() == ("main",)
    assert any("sidechain-1" in n for n in loaded.notes)
    side = load_workbook_conversation(tmp_path / "threads.jsonl", thread="sidechain-1")
    assert [m.id for m in side.messages] == ["s1"]
    with pytest.raises(FileNotFoundError, match="nope.jsonl"):
        load_workbook_conversation(tmp_path / "nope.jsonl")


# ---- chapter 00 -------------------------------------------------------------------------------------

BILL_HEADER = ("call,timestamp,model,provider,stop_reason,gap_s,input,cache_read,cache_write,output,cost_input,"
               "cost_output,cost_cache_read,cost_cache_write,cost_total,event\n")


def _bill(tmp_path: Path) -> Path:
    """Six calls at $5/M input, $0.5/M read, $6.25/M write, $25/M output: call 3 reads what call 2 wrote;
    a thinking change before call 4; call 5 aborted (zero usage); a 10-minute pause before call 6."""
    rows = [(1, "", 1000, 0, 0, 100, ""), (2, "4", 10, 0, 1100, 100, ""), (3, "5", 10, 1100, 50, 100, ""),
            (4, "5", 10, 0, 20_000, 100, "thinking_level_change:low>high"), (5, "5", 0, 0, 0, 0, ""),
            (6, "600", 10, 0, 20_500, 100, "")]
    lines = []
    for call, gap, inp, read, write, out, event in rows:
        ci, cr, cw, co = inp * 5e-6, read * 5e-7, write * 6.25e-6, out * 25e-6
        lines.append(f"{call},t,claude-x,anthropic,stop,{gap},{inp},{read},{write},{out},{ci},{co},{cr},{cw},"
                     f"{ci + co + cr + cw},{event}")
    path = tmp_path / "bill.csv"
    path.write_text(BILL_HEADER + "\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_bill_summary_and_rewrites_on_a_small_bill(tmp_path):
    calls = read_bill(_bill(tmp_path))
    s = summarize(calls)
    assert s.calls == 6 and s.empty_calls == 1
    assert s.cost_usd == pytest.approx(sum(c.cost_total for c in calls))
    assert s.cache_read_share == pytest.approx(1100 / s.prompt_tokens)
    assert s.no_cache_cost_usd == pytest.approx(s.prompt_tokens * 5e-6 + s.output_tokens * 25e-6)
    rewrites = find_rewrites(calls, min_tokens=1_000)
    assert [r.call for r in rewrites] == [4, 6]  # call 2 writes what call 1 never cached: not a re-write
    assert rewrites[0].cause == "thinking setting changed"
    assert rewrites[0].rewritten_tokens == 1_150  # what call 3 left in the cache: read 1,100 + wrote 50
    assert "pause of 10.1 min" in rewrites[1].cause  # 5 s + 600 s: the aborted call does not refresh the cache
    assert rewrites[1].rewritten_tokens == 20_000
    assert rewrites[1].extra_usd == pytest.approx(20_000 * (6.25e-6 - 5e-7))
    assert set(notable_rewrites(rewrites)) == {"after a pause", "after a thinking or model change"}


def test_bill_widget_toggle_changes_the_total(tmp_path):
    calls = read_bill(_bill(tmp_path))
    w = BillWidget(calls, min_rewrite_tokens=1_000)
    assert w.state.total_usd == pytest.approx(summarize(calls).cost_usd)
    w.pricing.value = "no prompt cache"
    assert w.state.pricing == "no prompt cache"
    assert w.state.total_usd == pytest.approx(summarize(calls).no_cache_cost_usd)
    assert len(w.state.cumulative_usd) == 6
    assert w.state.cumulative_usd == tuple(sorted(w.state.cumulative_usd))
    fig = w.plot.outputs[0]["data"]["application/vnd.plotly.v1+json"]
    assert fig["data"][0]["name"] == "no prompt cache"
    assert fig["data"][1]["x"] == [4, 6]  # the re-write markers
    assert "no prompt cache" in w.label.value
    with pytest.raises(ValueError):
        w.compute("free")


@needs_bill
def test_the_real_bill_adds_up():
    calls = read_bill(PI_BILL)
    s = summarize(calls)
    assert s.calls == len(calls) > 100
    assert 0.9 < s.cache_read_share < 1
    assert s.no_cache_cost_usd > 3 * s.cost_usd
    causes = {r.cause for r in find_rewrites(calls)}
    assert any("pause" in c for c in causes) and any("thinking" in c for c in causes)
    assert len(tokens_figure(calls).data) == 3


def test_upload_saves_to_a_temporary_folder_and_loads(tmp_path, conv, scratch):
    s = Session.create(tmp_path / "mine.jsonl", model="claude-sonnet-4-5")
    for m in conv.messages:
        s.append(m)
    data = (tmp_path / "mine.jsonl").read_bytes()
    w = TranscriptUpload()
    w.upload.value = ({"name": "../../mine.jsonl", "type": "", "size": len(data), "content": memoryview(data),
                       "last_modified": datetime(2025, 1, 1, tzinfo=timezone.utc)},)
    assert w.error is None
    assert w.path is not None and w.path.name == "mine.jsonl"
    assert w.path.parent.parent == scratch and REPO not in w.path.parents
    assert len(w.conversation.messages) == len(conv.messages)
    assert "mine.jsonl" in w.status.value
    assert w.load("junk.jsonl", b"not json\n") is None
    assert w.error and "junk.jsonl" in w.status.value


def test_save_upload_keeps_only_a_safe_file_name(tmp_path):
    assert save_upload("..\\evil dir\\a b.jsonl", b"x", tmp_path) == tmp_path / "a_b.jsonl"
    assert save_upload("...", b"x", tmp_path).name == "transcript.jsonl"


# ---- chapter 01 -------------------------------------------------------------------------------------

def test_xray_counts_equal_the_counters_and_chips_rebuild_the_text():
    text = "Session 会话 vs context 上下文: {\"a\": 1}"
    for enc in ("o200k_base", "cl100k_base"):
        st = xray(text, enc)
        assert st.tokens == get_counter(enc).count(text)
        assert st.counts == {n: get_counter(n).count(text) for n in ("o200k_base", "cl100k_base", "chars/3", "chars/4")}
        assert "".join(p for p, _ in st.chips) == text
        assert sum(n for _, n in st.chips) == st.tokens
    with pytest.raises(ValueError):
        xray(text, "chars/4")


def test_token_xray_reacts_to_its_controls():
    x = TokenXray("hello world")
    assert x.state.tokens == 2 and x.state.encoding == "o200k_base"
    x.text.value = CHINESE[:100]
    assert x.state.chars == 100
    o200k = x.state.tokens
    x.encoding.value = "cl100k_base"
    assert x.state.encoding == "cl100k_base"
    assert x.state.tokens == get_counter("cl100k_base").count(CHINESE[:100]) != o200k
    assert any(n > 1 for _, n in x.state.chips)  # cl100k splits some Han characters over tokens
    assert "dashed" in x.view.value


def test_reveal_guess():
    r = reveal_guess("x", "hello world", 3)
    assert (r.exact, r.guess, r.error) == (2, 3, 0.5)


@pytest.mark.parametrize("text,kind", [(PROSE, "English prose"), (CODE, "code"), (CHINESE, "Chinese"), (B64, "base64"),
                                       (LOG, "logs"), (json.dumps({"a": list(range(30))}), "JSON"), ("short", None)])
def test_classify(text, kind):
    assert classify(text) == kind


def test_content_samples_and_estimators(conv):
    samples = content_samples(conv)
    assert {"English prose", "code", "JSON", "Chinese", "base64", "logs", "tool-call arguments"} <= set(samples)
    assert all(len(v) <= 4_000 for v in samples.values())
    assert "(binary file" not in samples["base64"]
    rows = {r.label: r for r in estimator_rows(samples)}
    assert rows["English prose"].error("chars/3") > 0  # over-counts English
    assert rows["Chinese"].error("chars/4") < -0.3  # badly under-counts Chinese
    assert dict((label, v) for label, _, v in verdicts(list(rows.values())))["Chinese"].startswith("UNSAFE")
    game = guess_texts(samples)
    assert list(game) == ["English prose", "JSON", "Chinese"] and all(len(t) <= 160 for t in game.values())


def test_chinese_passage(conv):
    p = chinese_passage(conv)
    assert p is not None and len(p) == 300
    assert get_counter("chars/4").count(p) < get_counter("o200k_base").count(p)
    assert chinese_passage(Conversation(id="x", items=(user(PROSE, "u"),))) is None


def test_overhead_rows_add_up_to_the_meter():
    meter = MessageMeter(profile_for("gpt-4o"))
    msgs = [user("Which port?", "d1"), user("Thanks", "d2", name="ana")]
    rows = overhead_rows(msgs, meter)
    assert [r.framing for r in rows] == [4, 4]  # 3 per message + the role
    assert rows[1].name == 2  # +1 per name + the name itself
    assert [r.total for r in rows] == [meter.message(m) for m in msgs]
    assert all(r.content + r.framing + r.name == r.total for r in rows)


# ---- chapter 02 -------------------------------------------------------------------------------------

def _session_file(tmp_path: Path, conv: Conversation) -> Path:
    s = Session.create(tmp_path / "s.jsonl", system=conv.system, tools=conv.tools, model=conv.model,
                       provider=conv.provider)
    for m in conv.messages:
        s.append(m)
    return tmp_path / "s.jsonl"


def test_working_copy_never_writes_next_to_the_source(tmp_path, conv, scratch):
    source = _session_file(tmp_path, conv)
    before = sha256_of(source)
    copy = working_copy(source)
    assert copy.parent != source.parent and copy.read_bytes() == source.read_bytes()
    Session.open(copy).append(user("more", "x1"))
    assert sha256_of(source) == before and sha256_of(copy) != before
    assert first_lines(copy, 1, 40)[0].endswith("…") and len(first_lines(copy, 1, 40)[0]) == 40


def test_working_copy_imports_other_formats(tmp_path, scratch):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"},
                                             {"role": "assistant", "content": "hello"}]}), encoding="utf-8")
    try:
        copy = working_copy(path)
    except Exception as err:  # the format is another engineer's; skip if it is not read yet
        pytest.skip(f"openai-chat reader not ready: {err}")
    assert copy.name == "chat.session.jsonl"
    assert [m.text for m in Session.open(copy).conversation().messages] == ["hi", "hello"]


def test_fork_and_branch_widget(tmp_path, conv):
    path = _session_file(tmp_path, conv)
    session = Session.open(path)
    size, sha = path.stat().st_size, sha256_of(path)
    points = fork_points(session)
    assert points == ["a2", "a4"]  # the item before each real user message after the first
    session.fork("a2")
    session.append(user("another question", "f1"))
    assert sha256_of(path, size) == sha and path.stat().st_size > size
    w = BranchWidget(session)
    assert w.base == "a6"  # the longest branch
    assert [v for _, v in w.leaf.options] == ["a6", "f1"]
    assert w.state.leaf == "f1"  # the head after the append
    assert w.state.path_items == 6 and w.state.shared == 5
    w.leaf.value = "a6"
    assert w.state.leaf == "a6" and w.state.path_items == len(conv.messages) and w.state.shared == len(conv.messages)
    assert w.state.context_messages == len(conv.messages)
    cmp = compare_contexts(w.context("a6"), w.context("f1"))
    assert cmp.shared_prefix == 5 and cmp.b_messages == 6
    session.append(user("and another", "f2"), parent="a4")
    w.refresh()
    assert "f2" in [v for _, v in w.leaf.options]


# ---- chapter 03 -------------------------------------------------------------------------------------

def test_granularity_stats(conv):
    meter = MessageMeter(profile_for(conv.model))
    r, t = granularity_stats(conv, meter)
    assert (r.granularity, t.granularity) == ("round", "turn")
    assert t.units < r.units and t.largest >= r.largest
    assert r.total == t.total and sum(r.bins) == r.units
    assert minimum_budget(conv, meter.profile, meter, "turn") >= minimum_budget(conv, meter.profile, meter, "round")


def test_kept_under_reports_an_impossible_budget(conv):
    profile = profile_for(conv.model)
    meter = MessageMeter(profile)
    rows = kept_under(conv, 300, profile, meter)
    assert all(k.error.startswith("cannot build") for k in rows)
    ok = kept_under(conv, 100_000, profile, meter)
    assert all(not k.error and k.units_dropped == 0 for k in ok)


def test_budget_widget_smaller_budget_keeps_fewer_units(conv):
    w = BudgetWidget(conv)
    assert list(w.profiles) == ["claude-sonnet-4-5", "gpt-4o"]
    assert w.budget.value == w.budget.max and w.state.dropped_units == 0
    kept = []
    for budget in (w.budget.max, 4_000, 1_500):
        w.budget.value = budget
        assert w.state.budget == budget
        assert not w.state.error
        assert sum(w.state.breakdown.values()) == budget  # the token bar fills the budget exactly
        expected = build_context(conv, BudgetPolicy(budget_tokens=budget), profile=profile_for(conv.model))
        assert w.state.kept_messages == len(expected.messages)
        kept.append(w.state.kept_units + w.state.pinned_units)
    assert kept[0] > kept[1] > kept[2]
    assert w.state.decisions.count("dropped") == w.state.dropped_units
    assert "dropped" in w.units.value and "free" in w.bar.value


def test_call_and_result_finds_a_pair_or_none(conv):
    caller, result = call_and_result(conv.messages)
    assert (caller.id, result.id) == ("a1", "t1")
    assert call_and_result([user("hi", "u1"), assistant("hello", "a1")]) is None  # a plain chat has no pair
    unanswered = [m for m in conv.messages if m.id not in ("t1", "t2")]  # a1's results gone: the next pair
    assert [m.id for m in call_and_result(unanswered)] == ["a3", "t3"]


def test_budget_widget_spread_stays_distinct_inside_the_slider(conv):
    w = BudgetWidget(conv)
    budgets = w.spread()
    assert len(budgets) == 3 and budgets == sorted(set(budgets))
    assert all(w.budget.min <= b <= w.budget.max and (b - w.budget.min) % w.budget.step == 0 for b in budgets)
    w.budget.min, w.budget.max = 1_000, 1_500  # a range of one step: no value twice
    assert w.spread() == [1_000, 1_500]


def test_budget_widget_profile_switch_and_errors(conv):
    w = BudgetWidget(conv)
    w.budget.value = 4_000
    claude = w.state
    w.profile.value = "gpt-4o"
    assert w.state.profile == "gpt-4o" and w.state.budget == 4_000
    assert w.state.breakdown["tools"] < claude.breakdown["tools"]  # no hidden tool-use prompt
    assert w.budget.max <= profile_for("gpt-4o").context_window
    w.budget.value = w.budget.min
    assert w.state.error or sum(w.state.breakdown.values()) == w.state.budget
    assert w.compute(10, "gpt-4o").error  # an impossible budget is reported, not raised
    assert state_row(w.compute(10, "gpt-4o"))[1] == 10


# ---- on the bundled sample --------------------------------------------------------------------------

@needs_sample
def test_widgets_on_the_bundled_sample(scratch):
    conv = load_workbook_conversation()
    samples = content_samples(conv)
    assert {"English prose", "code", "Chinese", "base64", "logs"} <= set(samples)
    assert chinese_passage(conv) is not None
    w = BudgetWidget(conv)
    w.budget.value = 20_000
    small = w.state
    w.budget.value = 40_000
    assert w.state.kept_units + w.state.pinned_units >= small.kept_units + small.pinned_units
    assert sum(w.state.breakdown.values()) == 40_000
    copy = working_copy()
    assert copy.read_bytes() == SAMPLE_SESSION.read_bytes() and copy.parent != SAMPLE_SESSION.parent
