"""A ``full`` or ``recorded`` replay moved to another window (``ctxlab/lab/replay_windows.py``) is the replay that
window gives from scratch: records, ledger rows, notes, and the checklist score — on the sample and on pi, at
windows where nothing, some and most calls overflow. And the shared cache answers a new window that way (one
replay run, the others moved), which is what chapter 08's leaderboard and chapter 04's window slider read."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ctxlab import load
from ctxlab.facts import fact_retention
from ctxlab.fast import FAST
from ctxlab.fast.retention import fact_retention_fast
from ctxlab.lab.ch04_collapse import collapse, dropped_messages
from ctxlab.lab.ch05_pruning import checklist_for
from ctxlab.lab.replay_windows import WINDOW_FREE, at_window, can_move
from ctxlab.lab.replays import ReplayCache
from ctxlab.replay import replay

PI = Path(__file__).resolve().parents[2] / "shared" / "data" / "transcripts" / "pi-mono" / "before-compaction.jsonl"


def same_replay(moved, scratch) -> None:
    assert moved is not None
    assert len(moved.records) == len(scratch.records)
    for a, b in zip(moved.records, scratch.records):
        assert a == b, f"call {b.call.index}: {a.notes} != {b.notes}"
    assert moved.ledger.rows == scratch.ledger.rows
    assert moved.ledger.totals() == scratch.ledger.totals()
    assert (moved.strategy, moved.notes, moved.new_entries) == (scratch.strategy, scratch.notes, scratch.new_entries)
    assert moved == scratch


@pytest.mark.parametrize("strategy", WINDOW_FREE)
@pytest.mark.parametrize("provider", [None, "openai"])
def test_a_moved_replay_is_the_plain_replay_at_that_window_on_the_sample(sample, strategy, provider):
    base = replay(sample, strategy, window=40_000, provider=provider)
    overflowing = []
    for window in (None, 200_000, 60_000, 30_000, 10_000):
        scratch = replay(sample, strategy, window=window, provider=provider)  # the book's plain replay
        same_replay(at_window(base, window), scratch)
        overflowing.append(scratch.ledger.totals().overflow_calls)
    assert overflowing[0] == 0 < overflowing[-2] < overflowing[-1]  # the verdicts really changed


def test_what_cannot_be_moved_is_not(sample):
    assert not can_move("budgeted", (), False) and not can_move("full", (), True)
    assert not can_move("full", (("x", 1),), False) and can_move("recorded", (), False)
    assert at_window(replay(sample, "budgeted", window=40_000), 50_000) is None


def test_the_cache_moves_full_and_recorded_and_scores_them_as_the_scratch_replay(sample):
    facts, _ = checklist_for(sample)
    cache = ReplayCache()
    first = cache.replay(sample, "full", window=30_000)
    assert not cache.held(sample, "full", window=60_000) and cache.ready(sample, "full", window=60_000)
    assert not cache.ready(sample, "budgeted", window=60_000)
    assert not cache.ready(sample, "full", window=60_000, check=True)
    moved = cache.replay(sample, "full", window=60_000)
    assert (cache.computed, cache.moved) == (1, 1) and moved is cache.replay(sample, "full", window=60_000)
    same_replay(moved, replay(sample, "full", window=60_000, speedup=FAST))
    assert moved.records[-1].request is first.records[-1].request  # the same requests, held once
    scratch = replay(sample, "full", window=60_000)
    assert cache.retention(moved, facts, sample) == fact_retention(scratch, facts, sample)
    assert cache.retention(moved, facts, sample) is cache.retention(first, facts, sample)  # scored once
    cache.replay(sample, "full", window=60_000, check=True)  # checked: run, never moved
    assert (cache.computed, cache.moved) == (2, 1)


@pytest.mark.thorough  # minutes on pi; the sample's cases above run by default
@pytest.mark.shared
@pytest.mark.skipif(not PI.exists(), reason="the shared pi transcript is not here")
@pytest.mark.parametrize("strategy", WINDOW_FREE)
def test_a_moved_replay_is_the_replay_at_that_window_on_pi(strategy):
    conv = load(PI).conversations[0]
    facts, _ = checklist_for(conv)
    cache = ReplayCache()
    cache.replay(conv, strategy, window=200_000)
    for window in (150_000, 100_000, 50_000, None):
        scratch = replay(conv, strategy, window=window, speedup=FAST)
        moved = cache.replay(conv, strategy, window=window)
        same_replay(moved, scratch)
        assert cache.retention(moved, facts, conv) == fact_retention(scratch, facts, conv)
    assert (cache.computed, cache.moved) == (1, 4)


# ---- the shared replays' other economies: one checklist scan per block text, one reading per summarised message ----

STRATEGIES = ("full", "sliding", "budgeted", "recorded", "pruned", "paged", "budgeted+summary", "compaction",
              "pipeline")


def test_the_fast_score_is_the_books_for_every_strategy_on_the_sample(sample):
    facts, _ = checklist_for(sample)
    memo: dict = {}
    for window in (30_000, 50_000):
        for name in STRATEGIES:
            result = replay(sample, name, window=window, speedup=FAST)
            assert fact_retention_fast(result, facts, sample, memo) == fact_retention(result, facts, sample), name
    assert fact_retention_fast(result, facts[:5], sample, memo) == fact_retention(result, facts[:5], sample)
    with pytest.raises(ValueError, match="not in conversation"):
        fact_retention_fast(result, [dataclasses.replace(facts[0], message_id="nowhere")], sample)


def test_summarised_replays_sharing_the_rules_findings_are_the_replays_from_scratch(sample):
    cache = ReplayCache()
    for window in (30_000, 40_000):
        for name in ("compaction", "pipeline", "budgeted+summary"):
            assert cache.replay(sample, name, window=window) == replay(sample, name, window=window, speedup=FAST)
    assert cache._findings  # noqa: SLF001 - they did share it


@pytest.mark.thorough  # minutes on pi; the sample's cases above run by default
@pytest.mark.shared
@pytest.mark.skipif(not PI.exists(), reason="the shared pi transcript is not here")
def test_the_leaderboards_replays_and_scores_at_two_windows_are_those_from_scratch_on_pi():
    conv = load(PI).conversations[0]
    facts, _ = checklist_for(conv)
    cache = ReplayCache()
    for window in (200_000, 150_000):
        for name in ("full", "budgeted", "compaction", "pipeline", "recorded"):
            shared = cache.replay(conv, name, window=window)
            scratch = replay(conv, name, window=window, speedup=FAST)
            same_replay(shared, scratch)
            assert cache.retention(shared, facts, conv) == fact_retention(scratch, facts, conv), (name, window)
    assert (cache.computed, cache.moved) == (8, 2)


@pytest.mark.parametrize("strategy", ("full", "sliding", "budgeted", "recorded", "compaction"))
def test_the_ledger_widgets_drops_are_collapses(sample, strategy):
    result = replay(sample, strategy, window=30_000)
    drops = dropped_messages(result)
    assert drops == {c.call: c.dropped_messages for c in collapse(result).calls}
    assert strategy in ("full", "recorded") or any(drops.values())
