"""Chapter 06's placement findings: where a summary goes, and what the prompt cache reads when it changes.

Unlike :mod:`ctxlab.lab.placement`, which runs the experiment (one :class:`~ctxlab.lab.placement.PlacementRow`
per call, placement and cache rules), this reads its rows: :func:`change_call` — the first call whose
summary changed for a reason of its own; :func:`placement_table` — what the calls around it read, per
placement; :func:`placement_stability` — per placement, how often the prefix only grew and how far it
reached at a change. :func:`stable_then_changing` is a tiny synthetic session whose summary stays the
same for minutes, then changes at every call.
"""

from __future__ import annotations

import datetime
from typing import Any, Sequence

from ctxlab.lab.placement import PlacementRow
from ctxlab.messages import Conversation, Message, assistant, user
from ctxlab.tables.default_model import DEFAULT_MODEL


def _by_setting(rows: Sequence[PlacementRow]) -> dict[tuple[str, str], dict[int, PlacementRow]]:
    out: dict[tuple[str, str], dict[int, PlacementRow]] = {}  # (placement, provider) -> call -> row
    for r in rows:
        out.setdefault((r.placement, r.provider), {})[r.call] = r
    return out


def change_call(rows: Sequence[PlacementRow]) -> int | None:
    """The first call whose summary changed for a reason of its own (not at a model change, which breaks
    every cache alike); else the first call with a new summary; None when no call has a summary. Chapter 06."""
    first = [r for r in rows if (r.placement, r.provider) == (rows[0].placement, rows[0].provider)] if rows else []
    for states in (("changed",), ("new",)):
        for r in first:
            if r.summary in states and not r.diverged_at.startswith("model changed"):
                return r.call
    return None


def placement_table(rows: Sequence[PlacementRow], call: int, around: int = 1) -> tuple[list[str], list[tuple]]:
    """Columns and lines: per placement and provider, the head (tools + base system prompt) and what each call
    from ``call - around`` to ``call + around`` read of its prompt (``read / prompt``). Chapter 06."""
    by = _by_setting(rows)
    calls = [c for c in range(call - around, call + around + 1) if any(c in v for v in by.values())]
    first = next(iter(by.values()))
    columns = ["placement", "rules", "head"] + [f"call {c} ({first[c].summary})" for c in calls] + \
        [f"diverged at call {call}"]
    lines = []
    for (placement, provider), v in by.items():
        lines.append((placement, provider, v[call].head_tokens,
                      *[f"{v[c].cache_read_tokens:,} / {v[c].total_input_tokens:,}" for c in calls],
                      v[call].diverged_at or "(only appended)"))
    return columns, lines


STABILITY_COLUMNS = ("placement", "rules", "calls with the same summary", "of them only appended",
                     "summary changes", "shared past the head (max)", "read at a change", "hit rate")


def placement_stability(rows: Sequence[PlacementRow]) -> list[tuple[Any, ...]]:
    """Per placement and provider: of the calls whose summary stayed the same, how many only appended to the
    request before; at the changes (not at a model change), how far past the head the shared prefix
    reached (tokens) and what was read; the token-weighted hit rate. Chapter 06."""
    out = []
    for (placement, provider), v in _by_setting(rows).items():
        same = [r for r in v.values() if r.summary == "same"]
        changes = [r for r in v.values() if r.summary in ("new", "changed") and not
                   r.diverged_at.startswith("model changed")]
        total = sum(r.total_input_tokens for r in v.values())
        past = max((r.shared_tokens - r.head_tokens for r in changes), default=0)
        out.append((placement, provider, len(same), sum(1 for r in same if not r.diverged_at), len(changes), past,
                    _span([r.cache_read_tokens for r in changes]),
                    f"{100 * sum(r.cache_read_tokens for r in v.values()) / total:.1f}%" if total else "—"))
    return out


def _span(values: Sequence[int]) -> str:
    """``"0"``, ``"0–2,001"`` (min–max) or ``"—"`` for no values."""
    if not values:
        return "—"
    lo, hi = min(values), max(values)
    return f"{lo:,}" if lo == hi else f"{lo:,}–{hi:,}"


def stable_then_changing() -> Conversation:
    """A small synthetic session (Sonnet, a 2,000-token system prompt, no tools): a long task, then 40 short
    turns 25 s apart. At a 4,600-token window the summary appears at call 4, stays the same for about eight
    minutes (longer than the 5-minute TTL), then changes at every call. Chapter 06."""
    start = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()

    def ts(s: int) -> str:
        return (start + datetime.timedelta(seconds=s)).isoformat().replace("+00:00", "Z")

    def text(n: int, seed: int) -> str:
        return " ".join(f"{words[(i * 7 + seed) % 12]}{(i * 13 + seed) % 97}" for i in range(n))

    items: list[Message] = [user("Task: never touch prod. " + text(400, 2), "u1", timestamp=ts(0))]
    t = 0
    for i in range(40):
        t += 20
        items.append(assistant(f"step {i} " + text(8, i + 3), f"a{i}", timestamp=ts(t), model=DEFAULT_MODEL,
                               provider="anthropic"))
        t += 5
        items.append(user(f"ok {i} " + text(6, i + 50), f"u{i + 2}", timestamp=ts(t)))
    return Conversation("stable-then-changing", tuple(items), system=("You are careful. " + text(700, 1),),
                        model=DEFAULT_MODEL, provider="anthropic")

