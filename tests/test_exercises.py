"""The graded exercises: every reference passes, a stub is "not solved yet", plausible wrong answers
fail on their smallest failing input, and the grader says the same thing on every run.

The generic tests run for every exercise module found (``ctxlab/exercises/ex0N_*.py``). Each
exercise needs at least one plausible wrong solution in ``WRONG`` below: the mistake a newcomer makes.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ctxlab.exercises import EXERCISES, check, hint, reference, reset_hints, show_solution
from ctxlab.exercises._grader import Exercise, by_size, grade, not_solved_message
from ctxlab.exercises.ex01_message_tokens import count_tokens

NUMBERS = sorted(EXERCISES)
REPO = Path(__file__).resolve().parents[1]


# ---- plausible wrong solutions: what a newcomer writes first ------------------------------------

def ex01_no_framing(text, role, name):
    return count_tokens(text)  # forgets the 3 tokens per message and the role


def ex01_no_name_token(text, role, name):
    tokens = 3 + count_tokens(role) + count_tokens(text)
    return tokens + (count_tokens(name) if name else 0)  # forgets the 1 token a name adds


def ex02_file_order(records, leaf):
    ids = [rid for rid, _ in records]  # reads the file as a list: wrong after a fork
    return ids[: ids.index(leaf) + 1]


def ex02_not_reversed(records, leaf):
    parent, path = dict(records), []
    while leaf is not None:
        path.append(leaf)
        leaf = parent[leaf]
    return path  # leaf first


def ex03_one_message_one_unit(messages):
    return [[i] for i in range(len(messages))]  # splits every call from its result


def ex03_assistant_starts_unit(messages):
    units = []
    for i, (role, _) in enumerate(messages):
        if role == "tool":
            units[-1].append(i)
        else:
            units.append([i])  # a second assistant message splits a round whose calls are still open
    return units


def ex04_strict_minimum(previous, current, provider, prices):
    total = sum(t for _, t in current)
    shared, same = 0, 0
    for old, new in zip(previous, current):
        if old != new:
            break
        shared, same = shared + new[1], same + 1
    read = write = 0
    if total > 1024:  # off by one: a prompt of exactly 1,024 tokens is cached
        if provider == "anthropic":
            read = shared if same == len(previous) and shared > 1024 else 0
            write = total - read
        else:
            read = shared // 128 * 128 if shared // 128 * 128 > 1024 else 0
    uncached = total - read - write
    return read, write, uncached, (uncached * prices[0] + read * prices[1] + write * prices[2]) / 1e6


def ex04_anthropic_reads_shared_prefix(previous, current, provider, prices):
    total = sum(t for _, t in current)
    shared = 0
    for old, new in zip(previous, current):
        if old != new:
            break
        shared += new[1]
    read = shared // 128 * 128 if provider == "openai" else shared  # no breakpoint: reads any shared start
    read = read if read >= 1024 and total >= 1024 else 0
    write = total - read if provider == "anthropic" and total >= 1024 else 0
    uncached = total - read - write
    return read, write, uncached, (uncached * prices[0] + read * prices[1] + write * prices[2]) / 1e6


def ex05_negative_tail_slice(text, head_chars, tail_chars):
    from ctxlab.exercises.ex05_prune import MARKER

    if len(text) <= head_chars + tail_chars:
        return text
    omitted = len(text) - head_chars - tail_chars
    return text[:head_chars] + MARKER.format(omitted=omitted) + text[-tail_chars:]  # whole text when tail is 0


def ex06_user_messages_only(messages):
    from ctxlab.exercises.ex06_constraints import CONSTRAINT

    found = []
    for m in messages:
        if m.role != "user":  # what the rule-based summarizer does: misses rules inside tool results
            continue
        for line in m.text.splitlines():
            if CONSTRAINT.search(line.strip()) and line.strip() not in found:
                found.append(line.strip())
    return found


def ex07_skips_units_that_do_not_fit(unit_tokens, fixed_tokens, window, trigger_ratio, target_ratio):
    if fixed_tokens + sum(unit_tokens) <= trigger_ratio * window:
        return 0
    newest = len(unit_tokens) - 1
    floor = fixed_tokens + unit_tokens[newest]
    if floor > int(0.9 * window):
        return -1
    room, first = max(int(target_ratio * window), floor) - floor, newest
    for i in range(newest - 1, -1, -1):
        if unit_tokens[i] > room:
            continue  # keeps looking past a unit that does not fit: a hole in the history
        room -= unit_tokens[i]
        first = i
    return first


def ex08_stop_reason_not_normalised(reply):
    blocks = reply["content"]
    return {"text": "\n".join(b["text"] for b in blocks if b["type"] == "text"),
            "tool_calls": [(b["id"], b["name"], b["input"]) for b in blocks if b["type"] == "tool_use"],
            "usage": reply["usage"], "stop_reason": reply["stop_reason"]}  # 'end_turn' is ctxlab's 'stop'


WRONG = {
    1: [ex01_no_framing, ex01_no_name_token],
    2: [ex02_file_order, ex02_not_reversed],
    3: [ex03_one_message_one_unit, ex03_assistant_starts_unit],
    4: [ex04_strict_minimum, ex04_anthropic_reads_shared_prefix],
    5: [ex05_negative_tail_slice],
    6: [ex06_user_messages_only],
    7: [ex07_skips_units_that_do_not_fit],
    8: [ex08_stop_reason_not_normalised],
}
WRONG_CASES = [(n, fn) for n in NUMBERS for fn in WRONG.get(n, [])]


def _first_failing(ex: Exercise, fn) -> tuple | None:
    """The first case, in the exercise's order, on which ``fn`` disagrees with the reference."""
    for args in ex.cases():
        expected = ex.reference(*copy.deepcopy(args))
        try:
            actual = fn(*copy.deepcopy(args))
        except Exception:
            return args
        if not ex.same(expected, actual):
            return args
    return None


# ---- every exercise ----------------------------------------------------------------------------

def test_modules_are_discovered_by_file_name():
    names = sorted(p.stem for p in (REPO / "ctxlab" / "exercises").glob("ex[0-9][0-9]_*.py"))
    assert [int(name[2:4]) for name in names] == NUMBERS
    assert {1, 2, 3, 4} <= set(NUMBERS)


@pytest.mark.parametrize("n", NUMBERS)
def test_reference_passes_its_own_cases(n):
    ex = EXERCISES[n]
    result = grade(ex, ex.reference)
    assert result.passed and result.failing_input is None
    assert result.cases == len(ex.cases()) >= 20
    assert result.message == f"✓ passed {result.cases} cases"


@pytest.mark.parametrize("n", NUMBERS)
def test_exercise_is_well_formed(n):
    ex = EXERCISES[n]
    assert ex.number == n and ex.reference is reference(n)
    assert ex.reference.__name__ == ex.function and ex.signature.startswith(f"{ex.function}(")
    assert 2 <= len(ex.hints) <= 3
    cases = ex.cases()
    assert all(isinstance(c, tuple) for c in cases)
    assert repr(cases) == repr(ex.cases())  # generated the same way every time
    assert len({repr(c) for c in cases}) == len(cases)  # no case graded twice


@pytest.mark.parametrize("n", NUMBERS)
def test_a_stub_is_not_solved_yet(n, capsys):
    def stub(*args):
        raise NotImplementedError  # your code here

    result = check(n, stub)
    message = (f"not solved yet: write the body of `{EXERCISES[n].function}`, then run this cell again.\n"
               f"hint({n}) gives a hint; show_solution({n}) prints the reference.")
    assert not result.passed and result.message == message == not_solved_message(EXERCISES[n])
    assert capsys.readouterr().out == message + "\n"


@pytest.mark.parametrize("n", NUMBERS)
def test_every_exercise_has_a_plausible_wrong_solution(n):
    assert WRONG.get(n), (f"exercise {n} has no plausible wrong solution: add the mistake a newcomer "
                          "makes to WRONG in tests/test_exercises.py")


@pytest.mark.parametrize("n,wrong", WRONG_CASES, ids=[f"{n}-{fn.__name__}" for n, fn in WRONG_CASES])
def test_a_wrong_solution_fails_on_its_smallest_failing_input(n, wrong):
    ex = EXERCISES[n]
    result = grade(ex, wrong)
    first = _first_failing(ex, wrong)
    assert not result.passed and first is not None
    assert repr(result.failing_input) == repr(first)
    assert repr(result.expected) == repr(ex.reference(*copy.deepcopy(first)))
    assert result.message.startswith("✗ failed on the smallest failing input:\n  input: ")
    assert f"\n  input: {ex.show_input(first)}\n" in result.message
    assert f"\n  expected: {ex.show_output(result.expected)}\n  got: " in result.message
    assert grade(ex, wrong).message == result.message  # the same words on a second run


def test_smallest_failing_inputs_are_the_ones_that_teach():
    """The cases are ordered smallest first, so each mistake is shown on the input that explains it."""
    assert grade(EXERCISES[1], ex01_no_framing).failing_input == ("", "user", None)
    assert grade(EXERCISES[1], ex01_no_name_token).failing_input == ("", "user", "ana")
    assert grade(EXERCISES[2], ex02_file_order).failing_input == ([("m1", None), ("m2", "m1"), ("m3", "m1")], "m3")
    assert grade(EXERCISES[2], ex02_not_reversed).failing_input == ([("m1", None), ("m2", "m1")], "m2")
    assert grade(EXERCISES[3], ex03_one_message_one_unit).failing_input == (
        [("user", ()), ("assistant", ("c1",)), ("tool", ("c1",))],)
    parallel = grade(EXERCISES[3], ex03_assistant_starts_unit)
    assert parallel.message.splitlines()[1:] == [
        "  input: 0:user 1:assistant(c1) 2:assistant(c2) 3:tool(c1) 4:tool(c2)",
        "  expected: [[0], [1, 2, 3, 4]]",
        "  got: [[0], [1], [2, 3, 4]]"]
    previous, current, _, _ = grade(EXERCISES[4], ex04_strict_minimum).failing_input
    assert sum(t for _, t in current) == 1024 or sum(t for _, t in previous) == 1024


def test_an_error_in_the_learners_code_is_reported_with_its_line():
    def branch_path(records, leaf):
        if len(records) > 1:
            raise ValueError("not yet for forks")
        return [leaf]

    result = grade(EXERCISES[2], branch_path)
    assert result.failing_input == ([("m1", None), ("m2", "m1")], "m2")
    assert result.message.endswith("  got: raised ValueError('not yet for forks') (line 3 of `branch_path`)")
    assert isinstance(result.actual, ValueError)


def test_a_learner_mutating_its_input_cannot_change_the_input_shown_or_the_reference():
    def branch_path(records, leaf):
        records.clear()  # mutates the argument, then answers wrongly
        return [leaf]

    result = grade(EXERCISES[2], branch_path)
    assert result.failing_input == ([("m1", None), ("m2", "m1")], "m2")
    assert result.expected == ["m1", "m2"] and "records=[('m1', None), ('m2', 'm1')]" in result.message


def test_not_implemented_after_the_first_case_is_a_failure_not_a_stub():
    def count_message(text, role, name):
        if name is not None:
            raise NotImplementedError("names")
        return 3 + count_tokens(role) + count_tokens(text)

    result = grade(EXERCISES[1], count_message)
    assert result.failing_input == ("", "user", "ana")
    assert "got: raised NotImplementedError('names') (line 3 of `count_message`)" in result.message


def test_a_value_of_the_wrong_type_fails_instead_of_crashing_the_grader():
    result = grade(EXERCISES[4], lambda previous, current, provider, prices: None)
    assert not result.passed and result.message.endswith("got: None")


@pytest.mark.parametrize("n", NUMBERS)
def test_hints_step_one_level_at_a_time(n, capsys):
    ex = EXERCISES[n]
    reset_hints(n)
    for level, text in enumerate(ex.hints, start=1):
        hint(n)
        out = capsys.readouterr().out
        assert out.split() == f"hint {level} of {len(ex.hints)}: {text}".split()  # wrapped at 100 columns
        assert all(len(line) <= 100 for line in out.splitlines())
    for _ in range(2):
        hint(n)
        assert capsys.readouterr().out == f"no more hints — show_solution({n}) prints the reference\n"
    reset_hints(n)
    hint(n)
    assert capsys.readouterr().out.startswith(f"hint 1 of {len(ex.hints)}: ")
    reset_hints()


@pytest.mark.parametrize("n", NUMBERS)
def test_show_solution_prints_the_reference_source(n, capsys):
    show_solution(n)
    out = capsys.readouterr().out
    assert out.startswith(f"def {EXERCISES[n].function}(") and "return" in out


def test_unknown_exercise_names_the_ones_that_exist():
    with pytest.raises(KeyError, match=r"no exercise 99; the exercises are \[1, 2, 3, 4"):
        check(99, lambda: None)


def test_by_size_orders_smallest_first_keeps_ties_and_drops_repeats():
    cases = [([3, 3],), ([1],), ([2],), ([1],), ([],)]
    assert by_size(cases, lambda c: len(c[0])) == [([],), ([1],), ([2],), ([3, 3],)]


def test_grading_gives_the_same_text_in_another_process_with_another_hash_seed():
    """nbval compares the grader's output byte for byte: no set order, id or address may leak in."""
    script = textwrap.dedent("""
        import hashlib, json
        from ctxlab.exercises import EXERCISES
        from ctxlab.exercises._grader import grade
        def stub(*args):
            raise NotImplementedError
        out = {}
        for n, ex in sorted(EXERCISES.items()):
            cases = hashlib.sha256(repr(ex.cases()).encode()).hexdigest()
            out[n] = [cases, grade(ex, stub).message, grade(ex, lambda *a: None).message,
                      grade(ex, ex.reference).message]
        print(json.dumps(out))
    """)
    runs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                              cwd=REPO, timeout=120)
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout))
    assert runs[0] == runs[1]
    assert sorted(int(n) for n in runs[0]) == NUMBERS


# ---- the references agree with the library the chapters teach ------------------------------------

def test_ex01_reference_is_the_message_meter_under_gpt_4o():
    from ctxlab.messages import Message, TextPart
    from ctxlab.tables.profiles import profile_for
    from ctxlab.tokens import MessageMeter

    meter = MessageMeter(profile_for("gpt-4o"))
    for text, role, name in EXERCISES[1].cases():
        msg = Message(role=role, parts=(TextPart(text),), id="m", name=name)
        assert reference(1)(text, role, name) == meter.message(msg), (text, role, name)


def test_ex02_reference_is_the_session_path():
    from ctxlab.messages import user
    from ctxlab.io.session import Session

    for records, leaf in EXERCISES[2].cases():
        session = Session.in_memory()
        for rid, parent in records:
            session.append(user(rid, rid), parent)
        assert reference(2)(records, leaf) == [item.id for item in session.path(leaf)]


def test_ex03_reference_is_group_units_at_round_granularity():
    from ctxlab.interactions import group_units
    from ctxlab.messages import assistant, tool_result, user

    for (messages,) in EXERCISES[3].cases():
        built = []
        for i, (role, ids) in enumerate(messages):
            if role == "user":
                built.append(user("u", f"m{i}"))
            elif role == "assistant":
                built.append(assistant("" if ids else "ok", f"m{i}", calls=tuple((c, "run", {}) for c in ids)))
            else:
                built.append(tool_result(ids[0], "out", f"m{i}"))
        units = [list(range(u.start, u.stop)) for u in group_units(built, "round")]
        assert reference(3)(messages) == units, messages


def test_ex04_reference_is_the_cache_simulators_and_the_price_table():
    from ctxlab.cache import request_from_sizes
    from ctxlab.cache_anthropic import AnthropicCache
    from ctxlab.cache_openai import OpenAICache
    from ctxlab.tables.prices import cost, price_for

    models = {"anthropic": "claude-sonnet-4-6", "openai": "gpt-4o"}  # the chapters' model (was Sonnet 4.5, retired)
    for provider, model in models.items():  # the exercise's prices are the table's
        table = price_for(model)
        assert EXERCISES[4].cases()  # generated
        from ctxlab.exercises.ex04_cache_row import PRICES
        assert PRICES[provider][:2] == (table.input_per_mtok, table.cache_read_per_mtok)
    seen = set()
    for previous, current, provider, prices in EXERCISES[4].cases():
        cache = AnthropicCache() if provider == "anthropic" else OpenAICache()
        cache.request(request_from_sizes(previous, model=models[provider], provider=provider), None)
        outcome = cache.request(request_from_sizes(current, model=models[provider], provider=provider), None)
        read, write, uncached, usd = reference(4)(previous, current, provider, prices)
        assert (read, write, uncached) == (outcome.cache_read_tokens, outcome.cache_write_tokens,
                                           outcome.uncached_input_tokens), (previous, current, provider)
        billed = cost(models[provider], uncached_input_tokens=uncached, cache_read_tokens=read,
                      cache_write_tokens=write, output_tokens=0)
        assert usd == pytest.approx(billed.total, rel=1e-9, abs=1e-12)
        seen.add((provider, read > 0, write > 0, uncached > 0))
    # the cases reach every kind of row: hits and misses under both rules, writes, below-minimum prompts
    assert {("anthropic", True, True, False), ("anthropic", False, True, False), ("anthropic", False, False, True),
            ("openai", True, False, True), ("openai", False, False, True)} <= seen
