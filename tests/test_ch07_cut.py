"""Chapter 07: the compaction cut is one public function, and the strategy's results did not change with it."""

from __future__ import annotations

import inspect

import pytest

import ctxlab
from ctxlab import compaction
from ctxlab.compaction import CompactionPolicy, CompactionStrategy, compaction_cut
from ctxlab.replay import replay


def old_cut(tokens: list[int], room: int, pinned: int | None = None) -> tuple[int, int]:
    """The loop ``CompactionStrategy._compact`` ran before the cut became a function (units indexed 0..n-1)."""
    newest = len(tokens) - 1
    first_kept = newest
    for index in reversed(range(newest)):
        if index == pinned:
            continue
        if tokens[index] > room:
            break
        room -= tokens[index]
        first_kept = index
    return first_kept, room


def test_compaction_cut_is_public_and_short():
    assert ctxlab.compaction_cut is compaction_cut  # __all__: the lead adds it with tests/test_public_api.py ADDED
    assert len(inspect.getsource(compaction_cut).splitlines()) <= 20
    assert "compaction_cut(" in inspect.getsource(CompactionStrategy._compact)


@pytest.mark.parametrize(("tokens", "room", "pinned"), [
    ([10, 30, 20, 20], 25, None), ([10, 30, 20, 20], 60, None), ([5, 5, 5], 0, None), ([7], 3, None),
    ([4, 9, 3, 8, 2], 12, 1), ([4, 9, 3, 8, 2], 100, 0), ([50, 1, 1, 1], 2, 2)])
def test_cut_matches_the_old_loop(tokens, room, pinned):
    assert compaction_cut(tokens, room, pinned) == old_cut(tokens, room, pinned)


def _ledger(result) -> list:
    return list(result.ledger.rows)  # frozen dataclass rows: equal field by field


@pytest.mark.parametrize("policy", [CompactionPolicy(), CompactionPolicy(trigger_ratio=0.6, target_ratio=0.3)])
def test_replay_unchanged_on_the_sample(sample, monkeypatch, policy):
    new = replay(sample, CompactionStrategy(policy=policy), window=30_000)
    monkeypatch.setattr(compaction, "compaction_cut", old_cut)  # the old code path
    old = replay(sample, CompactionStrategy(policy=policy), window=30_000)
    assert [e.data for e in new.new_entries] == [e.data for e in old.new_entries]
    assert _ledger(new) == _ledger(old) and new.ledger.totals() == old.ledger.totals()
    assert any(e.kind == "compaction" for e in new.new_entries)


def test_window_over_the_input_limit_keeps_the_summary_room_inside_the_budget(sample):
    """A window override above the model's input limit (chapter 07's metering pass uses 10**9) once made the
    summary room 10% of half that window — 50,000,000 tokens — and raised CompactionError; both now stay within
    the budget (input limit capped)."""
    from dataclasses import replace as dc_replace

    from ctxlab.tables.profiles import profile_for
    from ctxlab.tokens import MessageMeter
    from ctxlab.strategies import model_calls

    profile = dc_replace(profile_for(sample.model), context_window=10**9, max_input_tokens=20_000)
    assert profile.budget_tokens() == 20_000
    strategy = CompactionStrategy(policy=CompactionPolicy(trigger_ratio=1.0, target_ratio=0.5))
    at, call = model_calls(sample)[-1]
    history = dc_replace(sample, items=sample.items[:at])
    decision = strategy.decide(history, call, profile, MessageMeter(profile))
    assert decision.context.total_tokens <= 20_000
