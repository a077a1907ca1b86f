"""Chapter 04's measurement of what a dropping strategy does to the prompt cache: where history was dropped,
and what each call read against the static head.

Unlike :mod:`ctxlab.lab.ch04_ledger`, which prices calls given as block sizes or as a recorded bill,
this reads a replay: :func:`call_pairs` pairs each recorded model call with its ledger row, and
:func:`collapse` measures, per call, the static head (tools + system), the read, the messages dropped
since the previous call and the tokens before the first block that changed (:class:`Collapse`).
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from ctxlab.cache import prefix_diff
from ctxlab.replay import ReplayResult


def call_pairs(result: ReplayResult) -> list[tuple[Any, Any]]:
    """(CallRecord, LedgerRow) per recorded model call, in ledger order. Rows of a strategy's own side calls
    (a summary, later chapters) carry no message id and are left out: they are in the totals, not here.
    Raises ValueError when the records and the rows do not pair up. Chapter 04."""
    rows = [r for r in result.ledger.rows if r.message_id is not None]
    if len(rows) != len(result.records):
        raise ValueError(f"{len(result.records)} calls but {len(rows)} ledger rows with a message id")
    return list(zip(result.records, rows))


def _head_tokens(request: Any) -> int:
    n = 0
    for b in request.blocks:  # tools and system come first
        if b.kind not in ("tools", "system"):
            break
        n += b.tokens
    return n


def _message_ids(request: Any) -> set[str]:
    ids = set(map(_MESSAGE_ID, request.blocks))  # no Python step per block: a pi request holds hundreds
    ids.discard(None)
    return ids


_MESSAGE_ID = attrgetter("message_id")


def dropped_messages(result: ReplayResult) -> dict[int, int]:
    """Call number -> messages the previous call of its thread sent that this one does not (0: it only appended):
    :func:`collapse`'s ``dropped_messages`` without the rest of its measures (what the ledger widget shows).
    Chapter 04."""
    out, last = {}, {}  # last: thread -> that thread's previous request's message ids
    for rec, row in call_pairs(result):
        ids = _message_ids(rec.request)
        out[row.call] = len(last.get(row.thread, set()) - ids)
        last[row.thread] = ids
    return out


@dataclass(frozen=True)
class CollapseCall:
    """One call of a replay: the static head (tools + system, tokens), the read, and how many messages it dropped.
    Chapter 04."""

    call: int
    head_tokens: int
    total_input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    dropped_messages: int  # messages the previous call sent that this one does not
    unchanged_tokens: int  # tokens before the first block that differs from the previous call's request


@dataclass(frozen=True)
class Collapse:
    """Measured on one replay: the calls that dropped history, what they read, and the hit rates (token-weighted)
    before and after the first drop. Chapter 04."""

    calls: tuple[CollapseCall, ...]
    first_drop: int | None  # call number
    hit_rate_before: float  # token-weighted, calls before the first drop
    hit_rate_after: float  # from the first drop on

    @property
    def drops(self) -> tuple[CollapseCall, ...]:
        """The calls that dropped messages the previous call sent."""
        return tuple(c for c in self.calls if c.dropped_messages)

    @property
    def drops_reading_at_most_head(self) -> int:
        """Drops that read no more than the static head (tools + system)."""
        return sum(c.cache_read_tokens <= c.head_tokens for c in self.drops)

    @property
    def drops_reading_at_most_unchanged(self) -> int:
        """Drops that read no more than the unchanged start (the head, plus a pinned message kept in front)."""
        return sum(c.cache_read_tokens <= c.unchanged_tokens for c in self.drops)

    @property
    def after_without_drop(self) -> tuple[CollapseCall, ...]:
        """Calls after the first drop that dropped nothing: they append, and the cache works again."""
        return tuple(c for c in self.calls if self.first_drop and c.call > self.first_drop and not c.dropped_messages)

    @property
    def rewritten_tokens(self) -> int:
        """Tokens written to the cache again at the calls that dropped history."""
        return sum(c.cache_write_tokens for c in self.drops)


def collapse(result: ReplayResult) -> Collapse:
    """Per call: the head, the read, the messages dropped since the previous call (same thread) and the tokens
    before the first block that changed. Chapter 04."""
    out, last = [], {}  # last: thread -> (its previous request, that request's message ids)
    for rec, row in call_pairs(result):
        ids, (before, before_ids) = _message_ids(rec.request), last.get(row.thread, (None, set()))
        dropped = len(before_ids - ids)
        unchanged = prefix_diff(before, rec.request).shared_tokens if before is not None else 0
        last[row.thread] = (rec.request, ids)
        out.append(CollapseCall(row.call, _head_tokens(rec.request), row.total_input_tokens, row.cache_read_tokens,
                                row.cache_write_tokens, dropped, unchanged))
    first = next((c.call for c in out if c.dropped_messages), None)

    def rate(cs: list[CollapseCall]) -> float:
        total = sum(c.total_input_tokens for c in cs)
        return sum(c.cache_read_tokens for c in cs) / total if total else 0.0

    cut = next((i for i, c in enumerate(out) if c.dropped_messages), len(out))
    return Collapse(tuple(out), first, rate(out[:cut]), rate(out[cut:]))


__all__ = ["call_pairs", "CollapseCall", "Collapse", "collapse", "dropped_messages"]
