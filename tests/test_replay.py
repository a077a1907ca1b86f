"""The replay loop and the first strategies (full, sliding, budgeted, recorded)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ctxlab.messages import Conversation, Entry, ToolSpec, Usage, assistant, parse_time, tool_result, user
from ctxlab.replay import STRATEGY_NAMES, get_strategy, replay
from ctxlab.strategies import model_calls
from ctxlab.fast import FAST

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample_session.jsonl"


def stamp(minute: float) -> str:
    return f"2025-01-01T10:{int(minute):02d}:{int(minute % 1 * 60):02d}Z"


def agent_session(rounds=12, result_chars=3000, gap_min=0.5):
    """A growing coding session with timestamps and Claude usage, big enough to cache."""
    items = [user("Refactor the parser. Keep the public API.", "u0", timestamp=stamp(0))]
    t = 0.0
    for r in range(rounds):
        t += gap_min
        items.append(assistant(f"step {r}", f"a{r}", calls=((f"c{r}", "read_file", {"path": f"src/m{r}.py"}),),
                               timestamp=stamp(t), model="claude-sonnet-4-5", provider="anthropic",
                               usage=Usage(output_tokens=40)))
        items.append(tool_result(f"c{r}", f"# module {r}\n" + "x = compute(y)\n" * (result_chars // 15), f"t{r}",
                                 timestamp=stamp(t)))
    t += gap_min
    items.append(assistant("done", "final", timestamp=stamp(t), model="claude-sonnet-4-5", provider="anthropic"))
    system = ("You are a coding agent. " * 80,)
    tools = (ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}}),)
    return Conversation("s", tuple(items), system=system, tools=tools, model="claude-sonnet-4-5", provider="anthropic")


def test_parse_time():
    assert parse_time("2025-12-08T22:41:05.306Z") == pytest.approx(1765233665.306)
    assert parse_time(None) is None and parse_time("yesterday") is None
    # one instant, whatever the offset; a stamp without one is UTC (as the price table reads it), not local time
    assert parse_time("2025-12-09T06:41:05.306+08:00") == parse_time("2025-12-08T22:41:05.306") == 1765233665.306


def test_model_calls_follow_model_and_thinking_entries():
    c = agent_session(3)
    items = list(c.items)
    items.insert(2, Entry("thinking_level_change", "e1", {"level": "high"}))
    items.insert(4, Entry("model_change", "e2", {"model": "claude-opus-4-5", "provider": "anthropic"}))
    items = [replace(i, model=None) if hasattr(i, "role") else i for i in items]
    calls = model_calls(replace(c, items=tuple(items)))
    assert [k.thinking for _, k in calls] == [None, "high", "high", "high"]
    assert [k.model for _, k in calls] == ["claude-sonnet-4-5", "claude-opus-4-5", "claude-opus-4-5", "claude-opus-4-5"]
    assert calls[1][1].at_s == parse_time(c.items[2].timestamp)  # request time = last item before the call


def test_every_strategy_gives_one_row_per_call_and_valid_contexts():
    c = agent_session()
    for name in STRATEGY_NAMES:
        result = replay(c, name, window=12_000)
        calls = [row for row in result.ledger.rows if not row.note.startswith("summary call")]
        assert len(calls) == len(result.records) == len(model_calls(c))
        for rec in result.records:
            assert rec.outcome.total_input_tokens == rec.request.total_tokens
        for row in result.ledger.rows:
            assert row.cache_read_tokens + row.cache_write_tokens + row.uncached_input_tokens == row.total_input_tokens


def test_full_flags_overflow_and_budgeted_stays_within_budget():
    c = agent_session()
    full = replay(c, "full", window=12_000)
    assert any(r.overflow for r in full.records)
    assert any(row.overflow for row in full.ledger.rows)
    budgeted = replay(c, "budgeted", window=12_000)
    assert not any(r.overflow for r in budgeted.records)
    assert all(r.context_tokens <= int(12_000 * 0.9) for r in budgeted.records)


def test_growing_session_reads_the_previous_prompt_under_full():
    result = replay(agent_session(), "full")
    rows = result.ledger.rows
    for prev, row in zip(rows[1:], rows[2:]):
        assert row.cache_read_tokens >= prev.cache_read_tokens  # the prefix only grows: reads grow
    assert rows[-1].hit_rate > 0.8


def test_sliding_window_collapses_to_the_static_head():
    c = agent_session(rounds=14)
    full = replay(c, "full", window=200_000)
    sliding = replay(c, "sliding", window=10_000)
    dropped_from = next(i for i, r in enumerate(sliding.records) if any("window starts" in n for n in r.notes))
    later = sliding.ledger.rows[dropped_from + 1:]
    # tools + system + the first user message, which sliding keeps: since issue 13 (tool prompt 346 -> 496 for
    # claude-sonnet-4-5) the first call is above the 1,024-token minimum and caches that prefix too
    head = sliding.records[0].request.cum_tokens[2]
    assert later and all(row.cache_read_tokens <= head for row in later)
    assert sum(r.hit_rate for r in later) / len(later) < sum(r.hit_rate for r in full.ledger.rows[dropped_from + 1:]) / len(later)


def test_coffee_break_expires_the_cache():
    c = agent_session(rounds=4, gap_min=0.5)
    items = list(c.items)
    # the tool result before call 4 arrives after a 28-minute pause: the request goes out then
    late = [replace(i, timestamp=stamp(30)) if getattr(i, "id", "") in ("t2", "a3", "t3", "final") else i for i in items]
    rows = replay(replace(c, items=tuple(late)), "full").ledger.rows
    assert rows[3].cache_read_tokens == 0 and "expired" in rows[3].note


def test_recorded_strategy_applies_a_recorded_compaction():
    c = agent_session(rounds=6)
    items = list(c.items)
    first_kept = "a4"
    at = next(k for k, i in enumerate(items) if getattr(i, "id", "") == "t4") + 1
    items.insert(at, Entry("compaction", "cmp", {"summary": "Read m0..m3; nothing changed yet.",
                                                "first_kept_id": first_kept, "origin": "recorded"}))
    result = replay(replace(c, items=tuple(items)), "recorded")
    after = [r for r in result.records if r.call.index > 5]
    assert after and all(any("recorded compaction" in n for n in r.notes) for r in after)
    first = result.records[-1]
    assert first.messages < len([i for i in c.items if hasattr(i, "role")])


def test_replay_never_writes_next_to_the_input(tmp_path):
    src = tmp_path / "s.jsonl"
    src.write_bytes(SAMPLE.read_bytes())
    before = sorted(p.name for p in tmp_path.iterdir())
    from ctxlab.io.formats import load
    replay(load(src).conversation(), "budgeted", window=30_000)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert src.read_bytes() == SAMPLE.read_bytes()


def test_unknown_strategy_is_named():
    with pytest.raises(ValueError, match="Unknown strategy 'greedy'"):
        get_strategy("greedy")


@pytest.mark.shared
def test_replay_shared_pi_under_each_strategy(shared_transcripts):
    from ctxlab.io.formats import load
    c = load(shared_transcripts / "pi-mono" / "before-compaction.jsonl").conversation()
    for name in ("budgeted", "recorded"):
        result = replay(c, name, speedup=FAST)  # the plain path on every shared file: tests/test_fast.py
        assert len(result.ledger.rows) == len(model_calls(c))
        for rec in result.records:
            assert rec.outcome.total_input_tokens == rec.request.total_tokens


def test_recorded_compaction_that_keeps_a_result_without_its_call_is_repaired_and_reported():
    c = agent_session(rounds=6)
    items = list(c.items)
    at = next(k for k, i in enumerate(items) if getattr(i, "id", "") == "t4") + 1
    items.insert(at, Entry("compaction", "cmp", {"summary": "s", "first_kept_id": "t3", "origin": "recorded"}))
    result = replay(replace(c, items=tuple(items)), "recorded")
    last = result.records[-1]
    assert any("removed 1 tool results whose calls the summary replaced: t3" in n for n in last.notes)
    assert not any(b.label == "tool_result c3" for b in last.request.blocks)


def test_a_call_with_nothing_before_it_is_skipped_with_a_note():
    # a file cut from a longer run (OpenHands' goal_events.jsonl) can open with a model call
    from ctxlab.messages import Conversation, Usage, assistant, tool_result, user

    items = (assistant("", "a0", calls=(("c0", "ls", {}),), usage=Usage(uncached_input_tokens=900, output_tokens=5)),
             tool_result("c0", "a.txt", "t0"), user("and then?", "u1"),
             assistant("done", "a1", usage=Usage(uncached_input_tokens=950, output_tokens=3)))
    result = replay(Conversation("cut", items, model="claude-sonnet-4-5"), "budgeted")
    assert [r.call.message.id for r in result.records] == ["a1"]
    assert any(n.startswith("call 1 of thread 'main'") and "nothing before it to send" in n for n in result.notes)
