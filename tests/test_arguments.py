"""Bad numbers given to the public functions and policies: one line naming the argument and what it takes.

Each public function or constructor that takes tokens, a window, a budget, a ratio or a TTL refuses
``0`` (where zero means nothing), ``-5``, ``1000.5`` (where a whole number is meant), ``True`` (an
``int`` in Python, never a count), ``nan``, ``inf`` and ``"1000"`` with a CtxlabError (a ValueError)
that starts ``<argument> must be ...`` and quotes the value; good values, ``None`` where the default
is meant, still work. Also here: ``replay --check`` fails when a conversation could not be replayed,
``--compare --check`` when every strategy failed, ``sliding``'s message when the system prompt alone
is over the budget, and NaN and 1e999 in fields ctxlab does not read.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import pytest

from ctxlab import (AnthropicCache, ArrivalCap, BudgetedSummaryStrategy, BudgetPolicy, CompactionPolicy,
                    CtxlabError, LLMSummarizer, OpenAICache, PagingPolicy, PipelineStrategy, RuleBasedSummarizer,
                    SlidingStrategy, TiktokenCounter, TranscriptError, neutral_usage, placement_experiment,
                    profile_for, prune_message, prune_text, replay, tool_result, with_window)
from ctxlab.base import validate
from ctxlab.tables.cache_rules import rule_for
from ctxlab.base.errors import BudgetError
from ctxlab.io.formats import load
from ctxlab.messages import Conversation, ToolSpec, assistant, user
from ctxlab.replay import get_strategy
from helpers import run

O200K = TiktokenCounter("o200k_base")
CONV = Conversation("c", (user("Fix the test.", "u1"), assistant("Done.", "a1", model="gpt-4o", provider="openai")),
                    model="gpt-4o", provider="openai")
RESULT = tool_result("c1", "log line\n" * 400, "t1", name="bash")

# what each kind of argument refuses, beyond 0 (zero is refused where the case says so)
NOT_WHOLE = [-5, 1000.5, True, float("nan"), float("inf"), "1000"]  # tokens, windows, budgets, counts
NOT_RATIO = [-5, 1000.5, True, float("nan"), float("inf"), "1000"]  # ratios: 1000.5 is out of range
NOT_SECONDS = [-5, True, float("nan"), float("inf"), "1000"]  # 1000.5 s is a fine TTL

# (case id, argument name, call with the value, values refused, a good value)
CASES: list[tuple[str, str, Callable[[Any], Any], list[Any], Any]] = [
    ("replay", "window", lambda v: replay(CONV, window=v), [0, *NOT_WHOLE], 50_000),
    ("with_window", "context_window", lambda v: with_window(profile_for("gpt-4o"), v), [0, *NOT_WHOLE], 30_000),
    ("BudgetPolicy", "budget_tokens", lambda v: BudgetPolicy(budget_tokens=v), [0, *NOT_WHOLE], 20_000),
    ("BudgetPolicy", "input_ratio", lambda v: BudgetPolicy(input_ratio=v), [0, *NOT_RATIO], 0.5),
    ("BudgetPolicy", "max_units", lambda v: BudgetPolicy(max_units=v), [0, *NOT_WHOLE], 3),
    ("SlidingStrategy", "input_ratio", lambda v: SlidingStrategy(input_ratio=v), [0, *NOT_RATIO], 1.0),
    ("get_strategy", "input_ratio", lambda v: get_strategy("sliding", input_ratio=v), [0, *NOT_RATIO], 0.8),
    ("CompactionPolicy", "trigger_ratio", lambda v: CompactionPolicy(trigger_ratio=v), [0, *NOT_RATIO], 1.0),
    ("CompactionPolicy", "target_ratio", lambda v: CompactionPolicy(target_ratio=v), [0, *NOT_RATIO], 0.3),
    ("CompactionPolicy", "input_ratio", lambda v: CompactionPolicy(input_ratio=v), [0, *NOT_RATIO], 0.95),
    ("CompactionPolicy", "summary_share", lambda v: CompactionPolicy(summary_share=v), [1, *NOT_RATIO], 0.0),
    ("ArrivalCap", "default_tokens", lambda v: ArrivalCap(default_tokens=v), [0, *NOT_WHOLE], 200),
    ("ArrivalCap", "limits['bash']", lambda v: ArrivalCap({"bash": v}), [0, *NOT_WHOLE], 2_000),
    ("ArrivalCap", "head_share", lambda v: ArrivalCap(head_share=v), NOT_RATIO, 0.0),
    ("prune_text", "budget_tokens", lambda v: prune_text("word " * 300, v, O200K), NOT_WHOLE, 40),
    ("prune_text", "head_share", lambda v: prune_text("word " * 300, 40, O200K, head_share=v), NOT_RATIO, 1.0),
    ("prune_message", "budget_tokens", lambda v: prune_message(RESULT, v, O200K), NOT_WHOLE, 60),
    ("PagingPolicy", "head_tokens", lambda v: PagingPolicy(head_tokens=v), NOT_WHOLE, 0),
    ("PagingPolicy", "tail_tokens", lambda v: PagingPolicy(tail_tokens=v), NOT_WHOLE, 100),
    ("PipelineStrategy", "per_result_tokens", lambda v: PipelineStrategy(per_result_tokens=v), [0, *NOT_WHOLE], 500),
    ("RuleBasedSummarizer", "max_tokens", lambda v: RuleBasedSummarizer(max_tokens=v), NOT_WHOLE, 0),
    ("RuleBasedSummarizer", "request_chars", lambda v: RuleBasedSummarizer(request_chars=v), [0, *NOT_WHOLE], 300),
    ("RuleBasedSummarizer", "per_result", lambda v: RuleBasedSummarizer(per_result=v), [0, *NOT_WHOLE], 2),
    ("LLMSummarizer", "max_tokens", lambda v: LLMSummarizer(str.upper, max_tokens=v), NOT_WHOLE, 300),
    ("BudgetedSummaryStrategy", "summary_share", lambda v: BudgetedSummaryStrategy(summary_share=v),
     [1, *NOT_RATIO], 0.3),
    ("placement_experiment", "window", lambda v: placement_experiment(CONV, window=v, providers=("openai",),
                                                                      placements=("system_end",)),
     [0, *NOT_WHOLE], 30_000),
    ("AnthropicCache", "min_tokens", lambda v: AnthropicCache(min_tokens=v), [0, *NOT_WHOLE], 1_000),
    ("AnthropicCache", "ttl_s", lambda v: AnthropicCache(ttl_s=v), [0, *NOT_SECONDS], 3600),
    ("OpenAICache", "min_tokens", lambda v: OpenAICache(min_tokens=v), [0, *NOT_WHOLE], 1_024),
    ("OpenAICache", "ttl_s", lambda v: OpenAICache(ttl_s=v), [0, *NOT_SECONDS], 600.5),
    ("CacheRule", "ttl_s", lambda v: replace(rule_for("claude-opus-4-5"), ttl_s=v), [0, *NOT_SECONDS], 300),
    ("CacheRule", "min_tokens", lambda v: replace(rule_for("claude-opus-4-5"), min_tokens=v), [0, *NOT_WHOLE], 4096),
    ("CacheRule", "increment_tokens", lambda v: replace(rule_for("gpt-4o"), increment_tokens=v), [0, *NOT_WHOLE],
     128),
    ("replay cache_rules", "ttl_s", lambda v: replay(CONV, cache_rules={"ttl_s": v}), [0, *NOT_SECONDS], 60),
    ("neutral_usage", "usage['output_tokens']", lambda v: neutral_usage({"output_tokens": v}), NOT_WHOLE, 0),
    ("neutral_usage", "usage['prompt_tokens']", lambda v: neutral_usage({"prompt_tokens": v}), NOT_WHOLE, 10),
]
BAD = [pytest.param(call, name, value, id=f"{case}-{name}-{value!r}")
       for case, name, call, values, _ in CASES for value in values]
GOOD = [pytest.param(call, value, id=f"{case}-{name}-{value!r}") for case, name, call, _, value in CASES]


@pytest.mark.parametrize(("call", "name", "value"), BAD)
def test_a_bad_number_is_refused_naming_the_argument(call, name, value):
    with pytest.raises(CtxlabError) as info:
        call(value)
    text = str(info.value)
    assert isinstance(info.value, ValueError)
    assert text.startswith(f"{name} must be "), text
    shown = repr(value) if isinstance(value, (bool, str)) else str(float(value) if isinstance(value, float) else value)
    assert text.endswith(")") and f"(got {shown}" in text, text
    assert "\n" not in text


@pytest.mark.parametrize(("call", "value"), GOOD)
def test_a_good_number_is_still_accepted(call, value):
    call(value)


@pytest.mark.parametrize("call", [
    lambda: replay(CONV, window=None), lambda: BudgetPolicy(budget_tokens=None, max_units=None),
    lambda: AnthropicCache(min_tokens=None, ttl_s=None), lambda: OpenAICache(ttl_s=None),
    lambda: neutral_usage({"input_tokens": None, "output_tokens": 3}),
], ids=["replay", "BudgetPolicy", "AnthropicCache", "OpenAICache", "neutral_usage"])
def test_none_means_the_default(call):
    call()


def test_the_messages_say_what_is_accepted():
    def said(call: Callable[[], Any]) -> str:
        with pytest.raises(CtxlabError) as info:
            call()
        return str(info.value)

    assert said(lambda: replay(CONV, window=0)) == "window must be a positive whole number of tokens (got 0)"
    assert said(lambda: replay(CONV, window=True)) == \
        "window must be a positive whole number of tokens (got True, a bool)"
    assert said(lambda: replay(CONV, window="1000")) == \
        "window must be a positive whole number of tokens (got '1000', a string)"
    assert said(lambda: BudgetPolicy(input_ratio=1.5)) == "input_ratio must be a ratio in (0, 1] (got 1.5)"
    assert said(lambda: CompactionPolicy(summary_share=1)) == "summary_share must be a ratio in [0, 1) (got 1)"
    assert said(lambda: ArrivalCap(head_share=float("nan"))) == "head_share must be a ratio in [0, 1] (got nan)"
    assert said(lambda: prune_text("x", -5, O200K)) == \
        "budget_tokens must be a whole number of tokens, 0 or more (got -5)"
    assert said(lambda: AnthropicCache(ttl_s=0)) == "ttl_s must be a positive number of seconds (got 0)"
    assert said(lambda: OpenAICache(ttl_s=float("inf"))) == "ttl_s must be a positive number of seconds (got inf)"
    assert said(lambda: replace(rule_for("gpt-4o"), read_multiplier=-1)) == \
        "read_multiplier must be a number of 0 or more (got -1)"
    assert said(lambda: neutral_usage({"prompt_tokens": 5, "prompt_tokens_details": {"cached_tokens": 9}})) == (
        "usage['prompt_tokens_details'] cached_tokens + cache_write_tokens (9) must be at most "
        "usage['prompt_tokens'] (5): OpenAI counts both inside it")


def test_replay_window_zero_no_longer_means_the_models_own():
    # it used to be falsy, so the profile's 128,000-token window was used without a word
    with pytest.raises(ValueError, match=r"^window must be a positive whole number of tokens \(got 0\)$"):
        replay(CONV, "budgeted", window=0)
    small = replay(CONV, "budgeted", window=1_000)
    assert small.records[0].request.total_tokens <= 1_000 and small.ledger.rows


def test_whole_floats_are_taken_as_ints():
    assert BudgetPolicy(budget_tokens=0.9 * 20_000).budget_tokens == 18_000
    assert type(with_window(profile_for("gpt-4o"), 30_000.0).context_window) is int
    assert validate.tokens("window", None) is None and validate.seconds("ttl_s", 300) == 300.0
    assert validate.ratio("head_share", 0, lo_open=False) == 0.0


def test_the_helpers_docstring_examples():
    assert validate.whole("max_units", 3, unit="units") == 3
    with pytest.raises(CtxlabError, match=r"^max_units must be a positive whole number of units \(got 0\)$"):
        validate.whole("max_units", 0, unit="units")
    assert validate.tokens("window", 200_000) == 200_000
    assert validate.ratio("input_ratio", 0.9) == 0.9
    with pytest.raises(CtxlabError, match=r"^input_ratio must be a ratio in \(0, 1\] \(got 0\)$"):
        validate.ratio("input_ratio", 0)
    with pytest.raises(CtxlabError, match=r"^ttl_s must be a positive number of seconds \(got 0\)$"):
        validate.seconds("ttl_s", 0)
    with pytest.raises(CtxlabError, match=r"got 1000000000000000000000000000000000000\.\.\."):
        validate.ratio("r", 10**400)  # too large for a float: refused, and quoted short


# ---- the sliding strategy names the fixed part, as budgeted does -------------------------------------------

def test_sliding_names_the_fixed_part_when_the_system_prompt_alone_is_over():
    big_system = ("You are a careful agent. Follow every rule below. " * 200,)  # about 2,000 tokens
    conv = Conversation("s", (user("hi", "u1"), assistant("hello", "a1", model="gpt-4o", provider="openai")),
                        system=big_system, model="gpt-4o", provider="openai")
    with pytest.raises(BudgetError) as sliding:
        replay(conv, "sliding", window=1_000)
    with pytest.raises(BudgetError) as budgeted:
        replay(conv, "budgeted", window=1_000)
    text = str(sliding.value)
    assert text.startswith("The fixed part alone needs ") and "system " in text and "but the budget is 900" in text
    assert "newest unit" not in text
    assert text == str(budgeted.value)  # one wording, from one function
    assert (sliding.value.needed, sliding.value.budget) == (budgeted.value.needed, budgeted.value.budget)


def test_sliding_still_blames_the_newest_unit_when_that_is_what_does_not_fit():
    tools = (ToolSpec("bash", "Run a command.", {"type": "object"}),)
    conv = Conversation("s", (user("run it", "u1"),
                              assistant("", "a1", calls=(("c1", "bash", {"command": "make"}),), model="gpt-4o",
                                        provider="openai"),
                              tool_result("c1", "error line\n" * 2_000, "t1"),
                              assistant("done", "a2", model="gpt-4o", provider="openai")),
                        tools=tools, model="gpt-4o", provider="openai")
    with pytest.raises(BudgetError, match=r"^sliding: the newest unit needs"):
        replay(conv, "sliding", window=2_000)


# ---- replay --check: a conversation that could not be replayed is a failure ---------------------------------

def messages_file(tmp_path: Path) -> Path:
    """Three conversations (messages JSONL, one per line); before the second's only reply there is nothing but a
    tool result whose call is nowhere: set aside (issue 12), it leaves that call nothing to send."""
    lines = [
        {"messages": [{"role": "user", "content": "Capital of Peru?"}, {"role": "assistant", "content": "Lima."}]},
        {"messages": [{"role": "tool", "tool_call_id": "nowhere", "content": "x"},
                      {"role": "assistant", "content": "done"}]},
        {"messages": [{"role": "user", "content": "Capital of Chile?"}, {"role": "assistant", "content": "Santiago."}]},
    ]
    path = tmp_path / "three.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_check_fails_when_a_conversation_could_not_be_replayed(capsys, tmp_path):
    path = messages_file(tmp_path)
    ids = [c.id for c in load(path).conversations]
    code, out, err = run(capsys, "replay", path, "--check")
    assert code == 1, (out, err)
    assert "check: OK" not in out
    assert "check: 0 violations, 1 of 3 conversations not replayed" in out
    assert err.count("\n") == 1
    assert err.startswith(f"ctxlab replay --check: 1 of 3 conversations could not be replayed ({ids[1]}); "
                          f"first: {ids[1]}: Conversation {ids[1]!r} has nothing to send: tool result in"), err

    code, out, err = run(capsys, "replay", path, "--check", "--json")
    assert code == 1 and json.loads(out)["check"]["ok"] is False
    assert json.loads(out)["skipped_conversations"] == [ids[1]] and "could not be replayed" in err


def test_without_check_the_summary_line_counts_the_skipped(capsys, tmp_path):
    code, out, err = run(capsys, "replay", messages_file(tmp_path))
    assert code == 0
    summary = [line for line in out.splitlines() if line.startswith("all: ")][-1]  # the file's, after the ledgers'
    assert "1 of 3 conversations skipped" in summary, summary
    assert err.startswith("ctxlab replay: 1 of 3 conversations could not be replayed")


def test_check_fails_when_a_window_fits_one_conversation_only(capsys, tmp_path):
    short = {"messages": [{"role": "user", "content": "Hi."}, {"role": "assistant", "content": "Hello."}]}
    long = {"messages": [{"role": "user", "content": "Summarise: " + "a long pasted text " * 300},
                         {"role": "assistant", "content": "It is long."}]}
    path = tmp_path / "two.jsonl"
    path.write_text(json.dumps(short) + "\n" + json.dumps(long) + "\n", encoding="utf-8")
    code, out, err = run(capsys, "replay", path, "--window", "300", "--check")
    assert code == 1 and "check: OK" not in out
    assert "1 of 2 conversations could not be replayed" in err and "The newest unit" in err


def test_compare_check_fails_when_every_strategy_failed(capsys, tmp_path):
    # before the only reply, nothing but a tool result whose call appears nowhere: set aside (issue 12), it leaves
    # no strategy, `full` included, anything to send
    path = tmp_path / "orphan.jsonl"
    path.write_text(json.dumps({"messages": [
        {"role": "tool", "tool_call_id": "nowhere", "content": "x"},
        {"role": "assistant", "content": "done"}]}) + "\n", encoding="utf-8")
    code, out, err = run(capsys, "replay", path, "--compare", "--json")
    assert all(r["error"] for r in json.loads(out)["strategies"])  # every strategy failed
    code, out, err = run(capsys, "replay", path, "--compare", "--check")
    assert code == 1 and "check: OK" not in out
    assert err.count("\n") == 1 and "could not build a context" in err and "has nothing to send" in err


# ---- NaN and 1e999 anywhere in a transcript: named with file, line and field -----------------------------

NONFINITE = ["NaN", "Infinity", "-Infinity", "1e999", "-1e999"]
PI_HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2025-02-01T09:00:00.000Z", "cwd": "/w"}


def _got(token: str) -> str:
    return "nan" if token == "NaN" else "-inf" if token.startswith("-") else "inf"


@pytest.mark.parametrize("token", NONFINITE)
def test_a_non_finite_number_in_a_field_ctxlab_does_not_read_is_named(tmp_path, token):
    first = json.dumps({"type": "message", "id": "a", "parentId": None, "message": {"role": "user", "content": "hi"}})
    pi = tmp_path / "pi.jsonl"
    pi.write_text(json.dumps(PI_HEADER) + "\n" + first + "\n" + '{"type":"message","id":"b","parentId":"a",'
                  '"message":{"role":"user","content":"x","meta":{"score":%s}}}\n' % token, encoding="utf-8")
    cc = tmp_path / "cc.jsonl"
    cc.write_text('{"parentUuid":null,"isSidechain":false,"sessionId":"s","type":"user","uuid":"u1",'
                  '"timestamp":"2025-03-01T08:00:00.000Z","message":{"role":"user","content":"hi"},'
                  '"costUSD":%s}\n' % token, encoding="utf-8")
    chat = tmp_path / "chat.json"
    chat.write_text('[\n{"role": "user", "content": "hi"},\n{"role": "assistant", "content": "yo",\n'
                    ' "logprob": %s}\n]\n' % token, encoding="utf-8")
    for path, line, field in ((pi, 3, "message.meta.score"), (cc, 1, "costUSD"), (chat, 4, "[1].logprob")):
        before = path.read_bytes()
        with pytest.raises(TranscriptError) as info:
            load(path)
        err = info.value
        assert (err.file, err.line, err.field) == (path.name, line, field), str(err)
        assert f"finite number, got {_got(token)}" in str(err)
        assert path.read_bytes() == before
        # strict=False reads on: the value is in a field no reader reads, so the line is kept, and said
        lenient = load(path, strict=False)
        said = [n for n in lenient.notes if n.startswith(f"{path.name}:{line}: field {field!r}: ")]
        assert len(said) == 1 and said[0].endswith("; kept as read"), lenient.notes
        assert f"got {_got(token)}" in said[0]
    assert [i.id for i in load(pi, strict=False).conversation().items] == ["a", "b"]


def test_a_non_finite_number_in_a_messages_jsonl_conversation_is_named(tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_text('{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}\n'
                    '{"messages": [{"role": "user", "content": "hi"}], "reward": NaN}\n', encoding="utf-8")
    with pytest.raises(TranscriptError) as info:
        load(path)
    assert (info.value.line, info.value.field) == (2, "reward") and "got nan" in str(info.value)


def test_codec_loads_stays_permissive_and_the_readers_check():
    # codec.loads (used on tool arguments too) reads all of these as floats, as Python's json does, today and
    # after the change: the check belongs to the transcript readers, which know the file, the line and the field
    from ctxlab.io.codec import loads

    values = [loads(t) for t in NONFINITE]
    assert math.isnan(values[0]) and values[1:] == [math.inf, -math.inf, math.inf, -math.inf]
