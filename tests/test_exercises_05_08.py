"""Exercises 05-08: the references pass; plausible wrong answers fail on their smallest failing input;
each exercise's rule agrees with the ctxlab module it teaches."""

from __future__ import annotations

import copy
import json

import pytest

from ctxlab.exercises import EXERCISES, grade
from ctxlab.exercises.ex05_prune import MARKER, prune
from ctxlab.exercises.ex06_constraints import CONSTRAINT, extract_constraints
from ctxlab.exercises.ex07_compaction_cut import first_kept, real_cuts
from ctxlab.exercises.ex08_reply_adapter import STOP_REASONS, recorded, reply_to_record
from ctxlab.messages import Conversation, ToolSpec, assistant, tool_result, user
from ctxlab.pruning import prune_text
from ctxlab.tokens import CharsPerTokenCounter

from test_exercises import _first_failing  # noqa: E402  (tests/ is on sys.path, as for notebook_runner)

NUMBERS = (5, 6, 7, 8)


def first_failure(n, fn):
    """The first case, in the exercise's order, where ``fn`` disagrees with the reference (or raises)."""
    return _first_failing(EXERCISES[n], fn)  # tests/test_exercises.py: the scan, written once


def assert_fails_smallest(n, wrong, smallest=None):
    result = grade(EXERCISES[n], wrong)
    assert not result.passed
    first = first_failure(n, wrong)
    assert first is not None and result.failing_input == first, "the reported input is the first failing case"
    if smallest is not None:
        assert result.failing_input == smallest
    ex = EXERCISES[n]
    expected = ex.reference(*copy.deepcopy(first))
    assert "smallest failing input" in result.message
    assert f"expected: {ex.show_output(expected)}" in result.message
    assert "got: " in result.message
    return result


@pytest.mark.parametrize("n", NUMBERS)
def test_reference_passes_every_case(n):
    ex = EXERCISES[n]
    result = grade(ex, ex.reference)
    assert result.passed and result.cases == len(ex.cases()) >= 100
    assert ex.cases() == ex.cases(), "cases are generated deterministically"
    assert len(ex.hints) >= 2


@pytest.mark.parametrize("n", NUMBERS)
def test_a_stub_is_not_solved_yet(n):
    def stub(*args):
        raise NotImplementedError  # your code here

    result = grade(EXERCISES[n], stub)
    assert not result.passed and result.failing_input is None
    assert result.message.startswith("not solved yet") and f"hint({n})" in result.message


# ---- plausible wrong solutions: what a newcomer writes first -------------------------------------------
# (module level, so tests/test_exercises.py can add them to its WRONG table)


def ex05_negative_tail(text, head, tail):
    if len(text) <= head + tail:
        return text
    return text[:head] + MARKER.format(omitted=len(text) - head - tail) + text[-tail:]  # text[-0:] is all of it


def ex05_no_marker(text, head, tail):
    return text if len(text) <= head + tail else text[:head] + text[len(text) - tail:]


def ex05_utf8_bytes(text, head, tail):  # cuts bytes, not characters
    if len(text) <= head + tail:
        return text
    data = text.encode()
    return (data[:head].decode(errors="ignore") + MARKER.format(omitted=len(text) - head - tail)
            + data[len(data) - tail:].decode(errors="ignore"))


def ex05_no_thousands_comma(text, head, tail):
    if len(text) <= head + tail:
        return text
    return text[:head] + MARKER.replace(":,", "").format(omitted=len(text) - head - tail) + text[len(text) - tail:]


def ex05_always_prunes(text, head, tail):  # adds a marker even when the text fits
    return text[:head] + MARKER.format(omitted=max(0, len(text) - head - tail)) + text[len(text) - tail:]


def _constraints(roles, strip=True, dedupe=True):
    def extract_constraints(messages):
        found = []
        for m in messages:
            if m.role not in roles:
                continue
            for line in m.text.splitlines():
                line = line.strip() if strip else line
                if CONSTRAINT.search(line) and (not dedupe or line not in found):
                    found.append(line)
        return found
    return extract_constraints


ex06_user_only = _constraints(("user",))  # the summarizer's own rule: misses tool results
ex06_with_assistant = _constraints(("user", "tool", "assistant"))
ex06_unstripped = _constraints(("user", "tool"), strip=False)
ex06_repeats = _constraints(("user", "tool"), dedupe=False)


def ex06_keyword_substrings(messages):  # "commonly" is not "only"
    words = ("must", "never", "don't", "do not", "always", "only", "不要", "必须", "禁止", "只", "务必")
    return list(dict.fromkeys(line.strip() for m in messages if m.role != "assistant"
                              for line in m.text.splitlines() if any(w in line.lower() for w in words)))


def _cut(strict=False, skip=False, trigger=True, limit="budget", fixed_in_room=True):
    def first_kept(units, fixed, window, trigger_ratio, target_ratio):
        if trigger and fixed + sum(units) <= trigger_ratio * window:
            return 0
        floor = fixed + units[-1]
        over = {"budget": int(0.9 * window), "window": window, None: None}[limit]
        if over is not None and floor > over:
            return -1
        room = max(int(target_ratio * window), floor) - (floor if fixed_in_room else units[-1])
        first = len(units) - 1
        for i in range(len(units) - 2, -1, -1):
            if units[i] >= room if strict else units[i] > room:
                if skip:
                    continue
                break
            room -= units[i]
            first = i
        return first
    return first_kept


ex07_one_unit_too_many = _cut(strict=True)  # drops a unit that fits exactly
ex07_skips_past_a_hole = _cut(skip=True)  # continue instead of break: a unit kept past a dropped one
ex07_no_trigger = _cut(trigger=False)
ex07_floor_against_window = _cut(limit="window")
ex07_no_floor_check = _cut(limit=None)
ex07_room_without_fixed = _cut(fixed_in_room=False)


def _adapter(usage=lambda u: u, stop=lambda s: STOP_REASONS.get(s, s), text=None, with_stop=True):
    def reply_to_record(reply):
        blocks = reply["content"]
        out = {"text": text(blocks) if text else "\n".join(b["text"] for b in blocks if b["type"] == "text"),
               "tool_calls": [(b["id"], b["name"], b["input"]) for b in blocks if b["type"] == "tool_use"],
               "usage": usage(reply["usage"])}
        if with_stop:
            out["stop_reason"] = stop(reply["stop_reason"])
        return out
    return reply_to_record


ex08_no_cache_write = _adapter(usage=lambda u: {k: u.get(k, 0) for k in (
    "input_tokens", "cache_read_input_tokens", "output_tokens")})  # ignores cache_creation_input_tokens
ex08_cache_fields_required = _adapter(usage=lambda u: {k: u[k] for k in (
    "input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens")})
ex08_raw_stop_reason = _adapter(stop=lambda s: s)
ex08_no_stop_reason = _adapter(with_stop=False)
ex08_thinking_as_text = _adapter(text=lambda blocks: "\n".join(
    b.get("text") or b.get("thinking") or "" for b in blocks if b["type"] != "tool_use"))

WRONG = {
    5: [ex05_negative_tail, ex05_no_marker, ex05_utf8_bytes, ex05_no_thousands_comma, ex05_always_prunes],
    6: [ex06_user_only, ex06_with_assistant, ex06_unstripped, ex06_repeats, ex06_keyword_substrings],
    7: [ex07_one_unit_too_many, ex07_skips_past_a_hole, ex07_no_trigger, ex07_floor_against_window,
        ex07_no_floor_check, ex07_room_without_fixed],
    8: [ex08_no_cache_write, ex08_cache_fields_required, ex08_raw_stop_reason, ex08_no_stop_reason,
        ex08_thinking_as_text],
}
WRONG_CASES = [(n, fn) for n, fns in WRONG.items() for fn in fns]


@pytest.mark.parametrize("n, wrong", WRONG_CASES, ids=[f"{n}-{k}" for n, fns in WRONG.items() for k in range(len(fns))])
def test_a_wrong_solution_fails_on_the_first_failing_case(n, wrong):
    assert_fails_smallest(n, wrong)


# ---- 05 prune ----------------------------------------------------------------------------------------------


def test_05_mistakes_show_on_the_input_that_explains_them():
    assert_fails_smallest(5, ex05_negative_tail, ("a", 0, 0))
    assert_fails_smallest(5, ex05_no_marker, ("a", 0, 0))
    assert_fails_smallest(5, ex05_utf8_bytes, ("中文", 1, 0))
    assert_fails_smallest(5, ex05_always_prunes, ("", 0, 0))
    late = assert_fails_smallest(5, ex05_no_thousands_comma)
    text, head, tail = late.failing_input
    assert len(text) - head - tail >= 1_000 and f"{len(text) - head - tail:,}" in late.message


def test_05_marker_is_the_pruning_modules_marker_in_characters():
    assert MARKER == "\n[... {omitted:,} characters omitted ...]\n"
    assert prune("abcdefgh", 2, 3) == "ab\n[... 3 characters omitted ...]\nfgh"
    assert prune("上下文窗口管理", 2, 2) == "上下\n[... 3 characters omitted ...]\n管理"
    assert prune("short", 3, 2) == "short"


@pytest.mark.parametrize("text, budget", [("abcdefghij" * 20, 60), ("上下文窗口" * 30, 50), ("log line\n" * 200, 400)])
def test_05_prune_text_under_a_chars_counter_writes_the_same_shape(text, budget):
    """prune_text with a chars/1 counter cuts characters: its output is prune() with the ends it chose."""
    out = prune_text(text, budget, CharsPerTokenCounter(1), marker=MARKER)
    assert out.pruned
    assert out.text == prune(text, out.head_tokens, out.tail_tokens)


# ---- 06 constraints --------------------------------------------------------------------------------------


def test_06_mistakes_show_on_the_input_that_explains_them():
    only_user = assert_fails_smallest(6, ex06_user_only)
    assert [m.role for m in only_user.failing_input[0]] == ["tool"], "the summarizer's rule misses tool results"
    assert_fails_smallest(6, ex06_with_assistant, ([assistant("I must be careful.", "m1")],))
    repeated = assert_fails_smallest(6, ex06_repeats)
    assert len(repeated.actual) > len(repeated.expected)
    wrong = assert_fails_smallest(6, ex06_keyword_substrings)
    assert any("commonly" in line or "onlyfans" in line for line in wrong.actual)


@pytest.fixture(scope="module")
def sample_messages():
    from ctxlab.lab.workbook import load_workbook_conversation

    return list(load_workbook_conversation().messages)


def test_06_the_wider_rule_keeps_a_constraint_the_summarizer_drops(sample_messages):
    from ctxlab.summary import RuleBasedSummarizer

    summary = RuleBasedSummarizer(max_tokens=5_000).summarize(sample_messages)
    constraints = summary.text.split("## Constraints")[1].split("\n## ")[0]
    assert "生产环境只允许 TLS 1.3" not in constraints
    lines = extract_constraints(sample_messages)
    assert any("生产环境只允许 TLS 1.3" in line for line in lines)
    assert len(lines) == len(set(lines))


# ---- 07 compaction cut -----------------------------------------------------------------------------------


def test_07_mistakes_show_on_the_input_that_explains_them():
    assert_fails_smallest(7, ex07_one_unit_too_many, ([35, 10, 40], 0, 100, 0.8, 0.5))
    assert_fails_smallest(7, ex07_skips_past_a_hole, ([5, 40, 5, 40], 0, 100, 0.8, 0.5))
    assert_fails_smallest(7, ex07_floor_against_window, ([90], 5, 100, 0.8, 0.5))
    assert_fails_smallest(7, ex07_no_floor_check, ([90], 5, 100, 0.8, 0.5))
    assert_fails_smallest(7, ex07_room_without_fixed, ([20, 70], 20, 100, 0.8, 0.5))
    under = assert_fails_smallest(7, ex07_no_trigger)
    units, fixed, window, trigger, _ = under.failing_input
    assert fixed + sum(units) <= trigger * window and under.expected == 0


def test_07_worked_example():
    assert first_kept([10, 30, 20, 20], 5, 100, 0.8, 0.5) == 2
    assert first_kept([10, 30, 20, 20], 5, 200, 0.8, 0.5) == 0  # under the trigger
    assert first_kept([10, 30, 20, 90], 5, 100, 0.8, 0.5) == -1  # floor 95 > budget 90


def _rounds(n, lines):
    items = [user("Port the CLI to the new config format.", "u0")]
    for r in range(n):
        items.append(assistant(f"step {r}", f"a{r}", calls=((f"c{r}", "read_file", {"path": f"m{r}.py"}),)))
        items.append(tool_result(f"c{r}", "".join(f"line {i} of module {r}\n" for i in range(lines * (1 + r % 3))),
                                 f"t{r}"))
    items.append(assistant("done", "final"))
    tools = (ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}}),)
    return Conversation("s", tuple(items), system=("You are a careful coding agent. " * 40,), tools=tools,
                        model="claude-sonnet-4-5", provider="anthropic")


@pytest.mark.parametrize("conversation, window", [("sample", 30_000), ("rounds", 12_000)])
def test_07_the_function_cuts_where_compaction_strategy_cuts(conversation, window):
    from ctxlab.lab.workbook import load_workbook_conversation

    conv = load_workbook_conversation() if conversation == "sample" else _rounds(40, 30)
    cuts = real_cuts(conv, window)
    assert cuts, "the replay compacts at least once"
    for cut in cuts:
        k = first_kept(*cut.args())
        assert k >= 0 and cut.units[k] == cut.kept_unit, f"call {cut.call}"


# ---- 08 reply adapter ------------------------------------------------------------------------------------


def test_08_mistakes_show_on_the_input_that_explains_them():
    no_write = assert_fails_smallest(8, ex08_no_cache_write)
    assert no_write.failing_input[0]["usage"]["cache_creation_input_tokens"] > 0
    key_error = assert_fails_smallest(8, ex08_cache_fields_required)
    assert "cache_read_input_tokens" not in key_error.failing_input[0]["usage"]
    assert "raised KeyError" in key_error.message
    raw_stop = assert_fails_smallest(8, ex08_raw_stop_reason)
    assert raw_stop.failing_input[0]["stop_reason"] in ("end_turn", "max_tokens")
    no_stop = assert_fails_smallest(8, ex08_no_stop_reason)
    assert no_stop.failing_input[0]["stop_reason"] not in ("end_turn", "tool_use")
    thinking = assert_fails_smallest(8, ex08_thinking_as_text)
    assert any(b["type"] in ("thinking", "redacted_thinking") for b in thinking.failing_input[0]["content"])


def test_08_an_answer_recording_the_same_message_passes():
    canonical = _adapter()

    def as_lists_and_json(reply):
        out = canonical(reply)
        out["tool_calls"] = [[i, n, json.dumps(a, ensure_ascii=False, separators=(",", ":"))]
                             for i, n, a in out["tool_calls"]]
        return out

    assert grade(EXERCISES[8], as_lists_and_json).passed


def test_08_recorded_matches_a_real_context_manager(tmp_path):
    from ctxlab.loop import AgentLoop
    from ctxlab.io.session import Session

    reply = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
             "content": [{"type": "thinking", "thinking": "check", "signature": "x"},
                         {"type": "text", "text": "Reading it."},
                         {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.py"}}],
             "stop_reason": "tool_use", "stop_sequence": None,
             "usage": {"input_tokens": 3, "cache_creation_input_tokens": 380, "cache_read_input_tokens": 4_480,
                       "output_tokens": 25}}
    manager = AgentLoop(Session.create(tmp_path / "run.jsonl", system=["Be brief."]), "budgeted",
                        model="claude-sonnet-4-5")
    manager.add_user("Read a.py.")
    real = manager.record_response(**reply_to_record(reply))
    mine = recorded(reply_to_record(reply))
    assert (real.parts, real.stop_reason, real.usage) == (mine.parts, mine.stop_reason, mine.usage)
    assert real.usage.cache_write_tokens == 380 and real.usage.total_input_tokens == 4_863
    reopened = [m for m in Session.open(tmp_path / "run.jsonl").conversation().messages if m.role == "assistant"]
    assert reopened[-1].usage == real.usage and reopened[-1].tool_calls == real.tool_calls
