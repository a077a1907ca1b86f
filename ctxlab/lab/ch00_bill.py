"""Chapter 00's measurements: a real agent's bill — its totals, and the calls that re-wrote the cache.

What it holds:

* :func:`read_bill` — ``data/pi_bill.csv`` (one row per model call of a real pi session, with the
  usage and cost pi recorded) as :class:`BillCall` rows;
* :func:`summarize` — the bill's totals: cost, prompt tokens, the share read from the prompt cache,
  and what the same calls would have cost with no cache at all;
* :func:`miss_table` — the calls that read less than half their prompt, with the gap before each and the cause
  the record shows: chapter 04's definition (:func:`ctxlab.lab.ch04_ledger.miss_rows`), the one both chapters print;
* :func:`find_rewrites` — the calls that wrote again, to the cache, a prefix the previous call had already
  cached, with the cause the record shows (a pause past the cache lifetime, a thinking or model change, a compaction);
* :func:`bill_view` — the cumulative cost line under one pricing (as billed, or no prompt cache):
  what :class:`ctxlab.widgets.ch00_bill.BillWidget` draws.

Simplified on purpose: prices per token are recovered from the bill itself (recorded cost divided
by tokens, per model), not from a price table; "re-written" tokens are
``min(cache_write, previously cached − cache_read)`` — the part of what the previous call left in
the cache (its cache read + cache write) that this call paid to write again instead of reading.
Anthropic's documented cache lifetime is 5 minutes from the last use (the default ``ephemeral``
TTL); the bill's ``gap_s`` is start to start, which is when the previous call last used the cache.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from ctxlab.lab.ch04_ledger import bill_ledger, miss_rows

__all__ = ["CACHE_TTL_S", "BillCall", "read_bill", "miss_table", "misses_by_cause", "Prices", "prices_from_bill",
           "BillSummary", "no_cache_cost", "summarize", "Rewrite", "find_rewrites", "rewrite_rows", "REWRITE_COLUMNS",
           "notable_rewrites", "PRICINGS", "BillView", "bill_view"]

CACHE_TTL_S = 300  # Chapter 00: Anthropic's default prompt-cache lifetime (seconds), refreshed on every use
_INT = ("input", "cache_read", "cache_write", "output")
_FLOAT = ("cost_input", "cost_output", "cost_cache_read", "cost_cache_write", "cost_total")


@dataclass(frozen=True)
class BillCall:
    """One model call of chapter 00's bill. Tokens are the provider's buckets (``input`` = uncached part);
    costs in USD; ``gap_s`` is seconds since the previous call started (None on the first)."""

    call: int
    timestamp: str
    model: str
    stop_reason: str
    gap_s: float | None
    input: int
    cache_read: int
    cache_write: int
    output: int
    cost_input: float
    cost_output: float
    cost_cache_read: float
    cost_cache_write: float
    cost_total: float
    event: str

    @property
    def prompt_tokens(self) -> int:
        """Every prompt token of the call: uncached + cache read + cache write."""
        return self.input + self.cache_read + self.cache_write


def read_bill(path: str | Path) -> list[BillCall]:
    """The rows of a bill CSV (``data/pi_bill.csv``'s columns), for chapter 00. ``read_bill(PI_BILL)[0].call`` → 1.

    Raises ``OSError`` when the file cannot be read, ``KeyError`` / ``ValueError`` on a missing column
    or a cell that is not a number.
    """
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    out = []
    for r in rows:
        out.append(BillCall(
            call=int(r["call"]), timestamp=r["timestamp"], model=r["model"], stop_reason=r["stop_reason"],
            gap_s=float(r["gap_s"]) if r["gap_s"] else None,
            **{k: int(float(r[k] or 0)) for k in _INT}, **{k: float(r[k] or 0) for k in _FLOAT},
            event=r.get("event") or ""))
    return out


def miss_table(path: str | Path) -> list[tuple[int, str, str]]:
    """``(call, gap, cause)`` for the calls of a bill CSV that read less than half their prompt: chapter 04's
    :func:`~ctxlab.lab.ch04_ledger.miss_rows` of its :func:`~ctxlab.lab.ch04_ledger.bill_ledger`, not a second
    definition (gap: since the previous call that sent a prompt; cause: what the record shows, or empty). On
    ``data/pi_bill.csv``: 14 calls, the first ``(1, "", "first call")``. ``OSError`` on an unreadable file. Chapter 00.
    """
    return [(row[0], row[1], row[-1]) for row in miss_rows(bill_ledger(path))]


def misses_by_cause(rows: Sequence[tuple[int, str, str]]) -> list[tuple[str, list[tuple[int, str]]]]:
    """:func:`miss_table`'s rows as ``[(cause, [(call, gap), ...]), ...]``, causes in order of first occurrence, the
    calls with none last (``"no cause recorded"``): the compact form chapter 00 prints. Chapter 00."""
    groups: dict[str, list[tuple[int, str]]] = {}
    for call, gap, cause in rows:
        groups.setdefault(cause, []).append((call, gap))
    none = groups.pop("", None)
    return list(groups.items()) + ([("no cause recorded", none)] if none else [])


@dataclass(frozen=True)
class Prices:
    """USD per token of one model, recovered from chapter 00's bill: recorded cost / recorded tokens."""

    input: float
    cache_read: float
    cache_write: float
    output: float


def prices_from_bill(calls: Sequence[BillCall]) -> dict[str, Prices]:
    """model -> :class:`Prices` (USD per token); a bucket the model never used gets the price 0. Chapter 00."""
    def per_token(rows: list[BillCall], cost: str, tokens: str) -> float:
        n = sum(getattr(c, tokens) for c in rows)
        return sum(getattr(c, cost) for c in rows) / n if n else 0.0

    out: dict[str, Prices] = {}
    for model in sorted({c.model for c in calls}):
        mine = [c for c in calls if c.model == model]
        out[model] = Prices(per_token(mine, "cost_input", "input"), per_token(mine, "cost_cache_read", "cache_read"),
                            per_token(mine, "cost_cache_write", "cache_write"), per_token(mine, "cost_output", "output"))
    return out


@dataclass(frozen=True)
class BillSummary:
    """Chapter 00's bill totals. Tokens in tokens, money in USD; ``cache_read_share`` is of all prompt tokens."""

    calls: int
    empty_calls: int  # aborted or failed requests recorded with zero usage
    cost_usd: float
    no_cache_cost_usd: float  # the same calls with every prompt token at the uncached input price
    prompt_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    uncached_tokens: int
    output_tokens: int

    @property
    def cache_read_share(self) -> float:
        """The share (0–1) of all prompt tokens read from the cache."""
        return self.cache_read_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    @property
    def saved_share(self) -> float:
        """How much cheaper the bill is than the same calls without a prompt cache (0.8 = 80 %)."""
        return 1 - self.cost_usd / self.no_cache_cost_usd if self.no_cache_cost_usd else 0.0

    def rows(self) -> list[tuple[str, str]]:
        """(what, value) lines for a text table."""
        return [
            ("model calls", f"{self.calls:,}"),
            ("  of which recorded with zero usage", f"{self.empty_calls:,}"),
            ("prompt tokens", f"{self.prompt_tokens:,}"),
            ("  read from the cache", f"{self.cache_read_tokens:,}"),
            ("  written to the cache", f"{self.cache_write_tokens:,}"),
            ("  uncached", f"{self.uncached_tokens:,}"),
            ("output tokens", f"{self.output_tokens:,}"),
            ("share of prompt tokens read from cache", f"{100 * self.cache_read_share:.1f}%"),
            ("cost as billed", f"${self.cost_usd:,.2f}"),
            ("cost of the same calls with no prompt cache", f"${self.no_cache_cost_usd:,.2f}"),
            ("saved by the cache", f"{100 * self.saved_share:.1f}%"),
        ]


def no_cache_cost(call: BillCall, prices: Prices) -> float:
    """The call's cost (USD) had every prompt token been charged at the uncached input price. Chapter 00."""
    return call.prompt_tokens * prices.input + call.cost_output


def summarize(calls: Sequence[BillCall]) -> BillSummary:
    """Totals of a bill, for chapter 00. On ``data/pi_bill.csv``: 484 calls, the recorded cost pi summed."""
    prices = prices_from_bill(calls)
    return BillSummary(
        calls=len(calls), empty_calls=sum(1 for c in calls if c.prompt_tokens == 0),
        cost_usd=sum(c.cost_total for c in calls),
        no_cache_cost_usd=sum(no_cache_cost(c, prices[c.model]) for c in calls),
        prompt_tokens=sum(c.prompt_tokens for c in calls), cache_read_tokens=sum(c.cache_read for c in calls),
        cache_write_tokens=sum(c.cache_write for c in calls), uncached_tokens=sum(c.input for c in calls),
        output_tokens=sum(c.output for c in calls))


@dataclass(frozen=True)
class Rewrite:
    """A call that wrote again what the previous call had cached (chapter 00).

    ``rewritten_tokens`` = min(cache_write, previously cached − cache_read), where "previously cached"
    is the previous call's cache read + cache write; ``gap_s`` is the time since the previous call
    that used the cache; ``extra_usd`` what writing instead of reading those tokens cost.
    """

    call: int
    gap_s: float
    previous_prompt_tokens: int
    cache_read: int
    cache_write: int
    rewritten_tokens: int
    extra_usd: float
    cause: str
    event: str


def _cause(gap_s: float, events: str, ttl_s: int) -> str:
    causes = []
    if "compaction" in events:
        causes.append("compaction rewrote the history")
    if "thinking_level_change" in events:
        causes.append("thinking setting changed")
    if "model_change" in events:
        causes.append("model changed")
    if gap_s > ttl_s:
        causes.append(f"pause of {gap_s / 60:.1f} min > {ttl_s // 60}-min cache lifetime")
    return "; ".join(causes) or "none recorded"


def find_rewrites(calls: Sequence[BillCall], min_tokens: int = 10_000, ttl_s: int = CACHE_TTL_S) -> list[Rewrite]:
    """Calls that re-wrote at least ``min_tokens`` of the previous prompt, with the recorded cause. Chapter 00.

    BillWidget's marks when given no calls; the chapter marks :func:`miss_table`'s.
    Calls recorded with zero usage (aborted requests) are skipped: they neither read nor refresh
    the cache, so the gap and the events they carry count toward the next call that did.
    ``previous_prompt_tokens`` is kept for reference: the whole prompt of the previous call.
    """
    prices = prices_from_bill(calls)
    out: list[Rewrite] = []
    previous: BillCall | None = None
    gap, events = 0.0, []
    for c in calls:
        gap += c.gap_s or 0.0
        if c.event:
            events.append(c.event)
        if c.prompt_tokens == 0:
            continue
        if previous is not None:
            cached = previous.cache_read + previous.cache_write  # what the previous call left in the cache
            rewritten = max(0, min(c.cache_write, cached - c.cache_read))
            if rewritten >= min_tokens:
                p = prices[c.model]
                joined = ";".join(events)
                out.append(Rewrite(c.call, round(gap, 3), previous.prompt_tokens, c.cache_read, c.cache_write,
                                   rewritten, rewritten * (p.cache_write - p.cache_read), _cause(gap, joined, ttl_s),
                                   joined))
        previous, gap, events = c, 0.0, []
    return out


def rewrite_rows(rewrites: Sequence[Rewrite]) -> list[dict[str, Any]]:
    """Chapter 00's rows for :func:`ctxlab.lab.workbook.text_table`, keyed by :data:`REWRITE_COLUMNS`."""
    return [{"call": r.call, "gap": f"{r.gap_s:.0f} s", "rewritten": r.rewritten_tokens,
             "extra": f"${r.extra_usd:.2f}", "cause": r.cause} for r in rewrites]


REWRITE_COLUMNS = ("call", "gap", "rewritten", "extra", "cause")  # Chapter 00: the columns of rewrite_rows


def notable_rewrites(rewrites: Sequence[Rewrite]) -> dict[str, Rewrite]:
    """The largest re-write of each recorded cause: ``{"after a pause": ..., ...}`` (absent left out). Chapter 00."""
    kinds = {"after a pause": ("pause",), "after a thinking or model change": ("thinking", "model changed"),
             "after a compaction": ("compaction",), "with no recorded cause": ("none recorded",)}
    out = {}
    for label, words in kinds.items():
        found = [r for r in rewrites if any(w in r.cause for w in words)]
        if found:
            out[label] = max(found, key=lambda r: r.rewritten_tokens)
    return out


PRICINGS = ("as billed", "no prompt cache")  # Chapter 00: the two ways bill_view prices the calls


@dataclass(frozen=True)
class BillView:
    """Chapter 00's cost line for one pricing: the cumulative cost after each call (USD), the total, the re-writes."""

    pricing: str
    total_usd: float
    cumulative_usd: tuple[float, ...]
    rewrite_calls: tuple[int, ...]


def bill_view(calls: Sequence[BillCall], pricing: str, rewrites: Sequence[Rewrite] = (),
              prices: Mapping[str, Prices] | None = None) -> BillView:
    """The cumulative cost line of ``calls`` under ``pricing`` (one of :data:`PRICINGS`). Chapter 00.

    ``prices`` defaults to :func:`prices_from_bill` of the calls (pass it to reuse one). Raises
    ``ValueError`` on another pricing. ``bill_view(calls, "as billed").total_usd`` == ``summarize(calls).cost_usd``.
    """
    if pricing not in PRICINGS:
        raise ValueError(f"pricing must be one of {PRICINGS}, not {pricing!r}")
    per_model = prices if prices is not None else prices_from_bill(calls)
    running, line = 0.0, []
    for c in calls:
        running += c.cost_total if pricing == PRICINGS[0] else no_cache_cost(c, per_model[c.model])
        line.append(running)
    return BillView(pricing, running, tuple(line), tuple(r.call for r in rewrites))
