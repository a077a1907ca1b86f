"""The ledger: one row per model call — what the prompt cache read, wrote and missed, and what it cost.

A call's prompt splits three ways, and each part has its own price:

* ``cache_read_tokens`` — the prefix the provider found in its cache (about 0.1x the input price);
* ``cache_write_tokens`` — the part it stored for the next call (1.25x for 5 minutes, 2x for 1 hour);
* ``uncached_input_tokens`` — the rest, at the full input price.

``total_input_tokens`` is their sum, and ``hit_rate`` = read / total. Providers name these
differently, which is why the ledger never uses the bare word "input": Anthropic's
``input_tokens`` is the *uncached* part only, OpenAI's ``prompt_tokens`` is the *whole* prompt
with ``cached_tokens`` inside it. Readers convert both into these neutral fields.

Rows come from a cache simulator (:func:`from_outcome`, used by the replay: a strategy's side call, a
summary, is a row too, over the window when its prompt plus its reply's ``max_tokens`` is) or from what a
transcript recorded (:func:`recorded_ledger`). Every row is priced with :mod:`ctxlab.tables.prices`; a
model the price table does not know gets cost ``None`` and a note, never 0. Totals weight the hit rate by
tokens: sum(read) / sum(total input), not the mean of per-call rates (a tiny call with no hit must not
count as much as a 100k-token call with a full hit).

Simplified on purpose: one row per provider response, nothing finer (no streaming chunks), and
output tokens are priced as recorded, thinking included. The text and HTML tables show thread names,
notes and titles with keys masked and control characters escaped (:func:`ctxlab.base.safe_text.shown`).
Taught in chapter 04.
"""

from __future__ import annotations

import html
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

from ctxlab.cache import CacheOutcome
from ctxlab.tables import prices
from ctxlab.messages import Conversation, Message, Usage, parse_time
from ctxlab.base.safe_text import shown


@dataclass(frozen=True)
class LedgerRow:
    """One model call. Tokens in tokens, costs in USD (``None`` when the model is unpriced).

    ``cost_input`` is the cost of the *uncached* prompt tokens. ``recorded_cost_usd`` is what the
    transcript itself said the call cost, per bucket (pi records it), beside ours. Chapter 04.
    """

    thread: str
    call: int  # 1-based within the thread
    message_id: str | None
    model: str | None
    provider: str | None
    at: str | None  # ISO 8601 timestamp, as recorded
    total_input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cache_write_1h_tokens: int  # part of cache_write_tokens written with the 1-hour TTL
    uncached_input_tokens: int
    output_tokens: int
    cost_input: float | None
    cost_cache_read: float | None
    cost_cache_write: float | None
    cost_output: float | None
    cost_usd: float | None
    hit_rate: float
    stop_reason: str | None = None
    note: str = ""
    kind: str = "main"  # "main": a recorded model call; else a strategy's side call's kind ("summary", ...)
    overflow: bool = False
    price_source: str | None = None  # "genai-prices 0.2.3 (claude-opus-4-5)"
    recorded_cost_usd: dict[str, float] | None = field(default=None, hash=False)


def make_row(*, thread: str, call: int, uncached_input_tokens: int, cache_read_tokens: int,
             cache_write_tokens: int, output_tokens: int, cache_write_1h_tokens: int = 0,
             model: str | None = None, provider: str | None = None, message_id: str | None = None,
             at: str | None = None, stop_reason: str | None = None, note: str = "", overflow: bool = False,
             window_tokens: int | None = None, recorded_cost_usd: dict[str, float] | None = None,
             kind: str = "main", reply_tokens: int = 0) -> LedgerRow:
    """A priced row from the three prompt buckets. ``read 4480, write 380, uncached 0`` → total 4860, hit 0.92.
    ``kind``: ``"main"`` (a recorded model call) or a side call's kind (``"summary"``). Given ``window_tokens``, the
    row overflows when the prompt plus ``reply_tokens`` (a side call's ``max_tokens``) is over it. Chapter 04."""
    total = uncached_input_tokens + cache_read_tokens + cache_write_tokens
    when = parse_time(at)  # priced as at the call's time: the table dates price changes and off-peak hours
    c = prices.cost(model, provider, uncached_input_tokens=uncached_input_tokens, cache_read_tokens=cache_read_tokens,
                    cache_write_tokens=cache_write_tokens, cache_write_1h_tokens=cache_write_1h_tokens,
                    output_tokens=output_tokens,
                    at=None if when is None else datetime.fromtimestamp(when, timezone.utc))
    notes = [note] if note else []
    notes += [stop_reason] if stop_reason in ("aborted", "error") and stop_reason not in note else []
    if window_tokens is not None and total + reply_tokens > window_tokens:
        overflow, reply = True, f" + reply {reply_tokens:,}" if reply_tokens else ""
        notes.append(f"overflow: {total:,}{reply} > window {window_tokens:,}")
    elif overflow and "overflow" not in note:
        notes.append("overflow")
    if c is None:
        notes.append(prices.unpriced_note(model, provider))
    else:
        if c.tier_above_tokens:
            notes.append(f"long-context price (prompt > {c.tier_above_tokens:,})")
        notes += c.notes
    return LedgerRow(
        thread=thread, call=call, message_id=message_id, model=model, provider=provider, at=at,
        total_input_tokens=total, cache_read_tokens=cache_read_tokens, cache_write_tokens=cache_write_tokens,
        cache_write_1h_tokens=cache_write_1h_tokens, uncached_input_tokens=uncached_input_tokens,
        output_tokens=output_tokens, cost_input=c and c.input, cost_cache_read=c and c.cache_read,
        cost_cache_write=c and c.cache_write, cost_output=c and c.output, cost_usd=c and c.total,
        hit_rate=cache_read_tokens / total if total else 0.0, stop_reason=stop_reason, note="; ".join(notes),
        kind=kind, overflow=overflow, price_source=c and c.source, recorded_cost_usd=recorded_cost_usd)


def from_outcome(outcome: CacheOutcome, *, output_tokens: int, model: str | None, provider: str | None,
                 thread: str = "main", call: int = 1, message_id: str | None = None, at: str | None = None,
                 stop_reason: str | None = None, note: str = "", overflow: bool = False,
                 window_tokens: int | None = None, kind: str = "main", reply_tokens: int = 0) -> LedgerRow:
    """A row from a cache simulator's ``CacheOutcome`` (any object with its token attributes).

    The outcome's ``reason`` (why it missed) joins the note unless the note already says it. ``kind``,
    ``window_tokens`` and ``reply_tokens`` as in :func:`make_row` (the replay passes all three for a side call).
    Chapter 04."""
    reason = getattr(outcome, "reason", "") or ""
    note = "; ".join(x for x in (note, reason if reason not in note else "") if x)
    return make_row(thread=thread, call=call, uncached_input_tokens=outcome.uncached_input_tokens,
                    cache_read_tokens=outcome.cache_read_tokens, cache_write_tokens=outcome.cache_write_tokens,
                    cache_write_1h_tokens=getattr(outcome, "cache_write_1h_tokens", 0) or 0, kind=kind, at=at,
                    output_tokens=output_tokens, model=model, provider=provider, message_id=message_id, note=note,
                    stop_reason=stop_reason, overflow=overflow, window_tokens=window_tokens, reply_tokens=reply_tokens)


_RECORDED_KEYS = {"input": "input", "uncached_input": "input", "cacheRead": "cache_read", "cache_read": "cache_read",
                  "cacheWrite": "cache_write", "cache_write": "cache_write", "output": "output", "total": "total"}


def _recorded_cost(usage: Usage | None) -> dict[str, float] | None:
    """A transcript's own per-bucket cost, keys as in :class:`ctxlab.tables.prices.Cost` (input = uncached)."""
    if usage is None or not usage.cost_usd:
        return None
    return {_RECORDED_KEYS[k]: float(v) for k, v in usage.cost_usd.items() if k in _RECORDED_KEYS}


def recorded_ledger(conversation: Conversation) -> "Ledger":
    """The ledger of what really happened: one row per assistant message, from its recorded usage.

    Aborted and failed calls are rows too (they may have cost money); a call with no recorded usage
    is a row of zeros, unpriced, with the note "no usage recorded". Threads (Claude Code sidechains)
    are kept and numbered on their own. Chapter 04.
    """
    rows, count = [], {}  # count: thread -> calls so far
    for m in conversation.messages:
        if m.role != "assistant" or m.origin is not None:
            continue
        count[m.thread] = count.get(m.thread, 0) + 1
        rows.append(_recorded_row(m, count[m.thread]))
    missing = sum(1 for r in rows if r.note.startswith("no usage recorded"))
    notes = (f"{missing} of {len(rows)} calls recorded no usage",) if missing else ()
    return Ledger(rows, title=f"recorded: {conversation.id}", notes=notes)


def _recorded_row(m: Message, call: int) -> LedgerRow:
    u = m.usage
    if u is None:
        return LedgerRow(m.thread, call, m.id, m.model, m.provider, m.timestamp, 0, 0, 0, 0, 0, 0, None, None,
                         None, None, None, 0.0, m.stop_reason, "no usage recorded")
    return make_row(thread=m.thread, call=call, message_id=m.id, model=m.model, provider=m.provider, at=m.timestamp,
                    uncached_input_tokens=u.uncached_input_tokens, cache_read_tokens=u.cache_read_tokens,
                    cache_write_tokens=u.cache_write_tokens, cache_write_1h_tokens=u.cache_write_1h_tokens,
                    output_tokens=u.output_tokens, stop_reason=m.stop_reason, recorded_cost_usd=_recorded_cost(u))


@dataclass(frozen=True)
class LedgerTotals:
    """Sums over some rows. ``hit_rate`` is token-weighted; ``cost_usd`` sums the priced calls only
    (``None`` when no call was priced) and ``unpriced_calls`` says how many were left out. Chapter 04."""

    thread: str  # "all" for the whole ledger
    calls: int
    total_input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    uncached_input_tokens: int
    output_tokens: int
    hit_rate: float
    cost_usd: float | None
    priced_calls: int
    unpriced_calls: int
    overflow_calls: int
    recorded_cost_usd: float | None = None  # sum of the transcript's own totals, where it recorded them


def _totals(thread: str, rows: list[LedgerRow]) -> LedgerTotals:
    s = {k: sum(getattr(r, k) for r in rows) for k in ("total_input_tokens", "cache_read_tokens",
                                                       "cache_write_tokens", "uncached_input_tokens", "output_tokens")}
    priced = [r.cost_usd for r in rows if r.cost_usd is not None]
    recorded = [r.recorded_cost_usd["total"] for r in rows if r.recorded_cost_usd and "total" in r.recorded_cost_usd]
    return LedgerTotals(thread, len(rows), **s,
                        hit_rate=s["cache_read_tokens"] / s["total_input_tokens"] if s["total_input_tokens"] else 0.0,
                        cost_usd=sum(priced) if priced else None, priced_calls=len(priced),
                        unpriced_calls=len(rows) - len(priced), overflow_calls=sum(r.overflow for r in rows),
                        recorded_cost_usd=sum(recorded) if recorded else None)


def _usd(x: float | None) -> str:
    return "—" if x is None else f"${x:,.4f}"


_COLUMNS = ("thread", "call", "prompt", "read", "write", "uncached", "output", "hit", "cost", "note")


@dataclass(frozen=True)
class Ledger:
    """The rows of a session (or a replay), their totals, a text table and an HTML table. Chapter 04.
    Its figure is drawn by the widgets: ``ctxlab.widgets.ledger_figure(ledger)``."""

    rows: tuple[LedgerRow, ...]
    title: str = ""
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "rows", tuple(self.rows))

    @property
    def prices(self) -> dict[str, str]:
        """The price table the costs came from: ``{"package": "genai-prices", "version": "0.2.3"}``."""
        return {"package": prices.PACKAGE, "version": prices.package_version()}

    def totals(self) -> LedgerTotals:
        """Sums over every row (thread ``"all"``)."""
        return _totals("all", list(self.rows))

    def per_thread(self) -> dict[str, LedgerTotals]:
        """thread -> its totals, threads in order of first appearance."""
        by: dict[str, list[LedgerRow]] = {}
        for r in self.rows:
            by.setdefault(r.thread, []).append(r)
        return {t: _totals(t, rs) for t, rs in by.items()}

    def to_records(self) -> list[dict[str, Any]]:
        """One plain dict per row (JSON-ready)."""
        return [asdict(r) for r in self.rows]

    def to_pandas(self) -> Any:
        """A DataFrame, one row per call; the transcript's own costs as ``recorded_cost_<bucket>`` columns."""
        import pandas as pd

        records = []
        for rec in self.to_records():
            recorded = rec.pop("recorded_cost_usd") or {}
            records.append(rec | {f"recorded_cost_{k}": v for k, v in recorded.items()})
        return pd.DataFrame.from_records(records, columns=None if records else list(LedgerRow.__dataclass_fields__))

    def _cells(self, r: LedgerRow) -> tuple[str, ...]:
        """One row's cells as displayed (thread and note from the file: escaped, one line each)."""
        return (shown(r.thread), str(r.call), f"{r.total_input_tokens:,}", f"{r.cache_read_tokens:,}",
                f"{r.cache_write_tokens:,}", f"{r.uncached_input_tokens:,}", f"{r.output_tokens:,}",
                f"{100 * r.hit_rate:.0f}%", _usd(r.cost_usd), shown(r.note))

    def _summary(self) -> list[str]:
        lines = []
        for t in [*threads.values(), self.totals()] if len(threads := self.per_thread()) > 1 else [self.totals()]:
            cost = _usd(t.cost_usd) + (f" ({t.unpriced_calls} of {t.calls} calls unpriced)" if t.unpriced_calls else "")
            over = f", {t.overflow_calls} over the window" if t.overflow_calls else ""
            lines.append(f"{shown(t.thread)}: {t.calls} calls, prompt {t.total_input_tokens:,} tokens, hit rate "
                         f"{100 * t.hit_rate:.1f}% (token-weighted), output {t.output_tokens:,}, cost {cost}{over}")
        ids = sorted({r.price_source.rsplit(" (", 1)[1].rstrip(")") for r in self.rows if r.price_source})
        source = f"prices: {prices.PACKAGE} {prices.package_version()}" + (f" ({', '.join(ids)})" if ids else "")
        return lines + [shown(source) + ", USD", *(shown(n) for n in self.notes)]

    def to_text(self, max_rows: int | None = None) -> str:
        """A fixed-width table, one line per call, then the totals. ``max_rows`` keeps the first and last rows."""
        rows = list(self.rows)
        cut = max_rows is not None and len(rows) > max_rows
        picked = rows[: max_rows // 2] + rows[len(rows) - (max_rows - max_rows // 2):] if cut else rows
        table = [_COLUMNS] + [self._cells(r) for r in picked]
        widths = [max(len(c[i]) for c in table) for i in range(len(_COLUMNS) - 1)]
        lines = ["  ".join(c.rjust(w) if i > 0 else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))
                 + ("  " + cells[-1] if cells[-1] else "") for cells in table]
        if cut:
            lines.insert(1 + max_rows // 2, f"... {len(rows) - len(picked)} calls not shown ...")
        return "\n".join(([shown(self.title)] if self.title else []) + lines + self._summary())

    __str__ = to_text  # print(ledger): the text table

    def __repr__(self) -> str:
        t = self.totals()
        name = f" {shown(self.title)}" if self.title else ""
        return f"<Ledger{name}: {t.calls} calls, hit rate {100 * t.hit_rate:.1f}%, cost {_usd(t.cost_usd)}>"

    def _repr_html_(self, max_rows: int = 60) -> str:
        rows = list(self.rows)
        picked = rows if len(rows) <= max_rows else rows[: max_rows // 2] + rows[-max_rows // 2:]
        head = "".join(f"<th>{c}</th>" for c in _COLUMNS)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in self._cells(r)) + "</tr>"
                       for r in picked)  # the cells are escaped for a terminal already: HTML-escaped here
        more = (f"<p>{len(rows) - len(picked)} calls not shown; <code>to_pandas()</code> has them all.</p>"
                if len(picked) < len(rows) else "")
        summary = "<br>".join(html.escape(s) for s in self._summary())
        caption = f"<b>{shown(self.title, html=True)}</b><br>" if self.title else ""
        return (f"<div>{caption}<p>{summary}</p><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
                f"{more}</div>")

