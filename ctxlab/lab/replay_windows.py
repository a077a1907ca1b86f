"""A replay at another window without replaying: for the strategies whose requests do not depend on the window.

``full`` sends the whole history at every call and ``recorded`` what the agent sent (its own compactions
applied): neither reads the window to decide what to send (``FullStrategy`` / ``RecordedStrategy`` in
``ctxlab/strategies.py`` read it only for :func:`~ctxlab.strategies.overflow_note`, and their contexts' budget,
which nothing rendered or cached reads). So at any two windows they render the same requests, the cache
simulator sees the same prompts and gives the same outcomes, and their ledgers differ only in which calls are
over the window — the verdict, judged on each call's prompt, as :func:`~ctxlab.replay.replay` judges it.
:func:`at_window` builds that other window's :class:`~ctxlab.replay.ReplayResult` from one already run: the same
records and rows where the verdict is unchanged, new ones (the overflow note swapped, the row priced again)
where it changed. The cache the chapters share (:data:`ctxlab.lab.replays.REPLAYS`) answers a new window this
way when it holds the strategy at another (chapter 08's leaderboard at its other windows, chapter 04's window
slider). ``tests/test_widget_replay_windows.py`` compares it with a replay from scratch, record by record.

Simplified on purpose: only unchecked replays (``check=False``): a checked one also holds the oracle's
verdict on each body, whose ``max_tokens`` reads the window. Chapters 04 and 08.
"""

from __future__ import annotations

from dataclasses import replace

from ctxlab.ledger import Ledger, from_outcome
from ctxlab.replay import ReplayResult
from ctxlab.strategies import overflow_note
from ctxlab.tables.profiles import ModelProfile, profile_for, with_window

WINDOW_FREE = ("full", "recorded")  # the strategies whose requests do not depend on the window


def can_move(strategy: str, options: tuple, check: bool) -> bool:
    """Whether a replay of ``strategy`` (with these non-default options, checked or not) can be moved to another
    window by :func:`at_window`: a strategy of :data:`WINDOW_FREE`, its defaults, unchecked. Chapters 04 and 08."""
    return strategy in WINDOW_FREE and not options and not check


def at_window(result: ReplayResult, window: int | None) -> ReplayResult | None:
    """``result`` (a replay of a :data:`WINDOW_FREE` strategy, unchecked) as the same replay at ``window`` (tokens;
    None: each model's own) would give it; None when ``result`` is not one that can be moved (a side call, an entry
    the strategy added, a checked record, a ledger with a title or notes). Chapters 04 and 08."""
    rows = result.ledger.rows if result.ledger is not None else ()
    if (result.strategy not in WINDOW_FREE or result.new_entries or len(rows) != len(result.records)
            or result.ledger.title or result.ledger.notes
            or any(r.kind != "main" or rec.violations or not rec.notes for r, rec in zip(rows, result.records))):
        return None
    profiles: dict[tuple, ModelProfile] = {}
    records, new_rows = [], []
    for rec, row in zip(result.records, rows):
        pk = (row.model, row.provider)  # the replay's (call model, call provider): what its profile was made of
        if pk not in profiles:
            profiles[pk] = profile_for(*pk) if window is None else with_window(profile_for(*pk), window)
        over = overflow_note(rec.outcome.total_input_tokens, profiles[pk])
        said = tuple(n for n in rec.notes[:-1] if n.startswith("overflow:"))  # the last note is the cache's reason
        if said == ((over,) if over else ()):
            records.append(rec)
            new_rows.append(row)
            continue
        notes = (*(n for n in rec.notes[:-1] if not n.startswith("overflow:")), *([over] * bool(over)))
        records.append(replace(rec, notes=notes + rec.notes[-1:], overflow=bool(over)))
        new_rows.append(from_outcome(rec.outcome, thread=row.thread, call=row.call, message_id=row.message_id,
                                     model=row.model, provider=row.provider, at=row.at,
                                     output_tokens=row.output_tokens, stop_reason=row.stop_reason,
                                     note="; ".join(notes), overflow=bool(over)))
    return ReplayResult(result.strategy, Ledger(new_rows), records, list(result.notes), [])


__all__ = ["WINDOW_FREE", "at_window", "can_move"]
