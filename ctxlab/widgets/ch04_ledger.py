"""Chapter 04: the prefix-cache ledger — per model call, what the cache read, wrote and missed, and the cost.

What it holds:

* :func:`example_calls` — the texts' three-call example built from block sizes and run through a
  cache simulator (Anthropic or OpenAI rules), with the provider's own usage fields beside ours;
* :func:`with_pause` — a "coffee break": a copy of a conversation in which everything after one
  call's response happens some minutes later (pure: the input is not changed);
* :func:`bill_ledger` — the recorded ledger of the pi session from ``data/pi_bill.csv``;
* :func:`cache_saving` — what a ledger cost against the same calls with no prompt cache;
* :func:`collapse` — where a replay dropped history, and what each call read against the static head;
* :func:`read_fidelity_table` — the committed fidelity and calibration figures (``data/fidelity.csv``);
* :class:`LedgerWidget` — strategy, cache rules, model, window and a coffee break; shows the ledger
  figure, a per-call table, the totals and the prefix diff of one call against the one before it.

Simplified on purpose: the widget keeps every replay it ran and the numbers it showed (keyed by its
settings), so going back to a setting is instant; a new setting replays the whole conversation (about
0.1 s on the sample), unless ``precompute=True`` replayed every strategy and provider when it opened.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Sequence

from ctxlab.tables import prices
from ctxlab.cache import AnthropicCache, OpenAICache, request_from_sizes, to_provider_fields
from ctxlab.base.errors import CtxlabError
from ctxlab.ledger import Ledger, make_row
from ctxlab.messages import Conversation, Entry
from ctxlab.tables.profiles import profile_for
from ctxlab.render import prefix_diff
from ctxlab.replay import ReplayResult, model_calls, replay
from ctxlab.base.safe_text import safe_html, shown
from ctxlab.widgets._plots import error_html, show_in

# ---- the texts' three calls ------------------------------------------------------------------------

EXAMPLE_MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4o"}  # minimum cacheable ≤ 4,480 on both


@dataclass(frozen=True)
class ExampleCall:
    """One call of the example: neutral fields (tokens), the provider's own usage fields, prompt cost (USD)."""

    call: int
    provider: str
    model: str
    total_input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    uncached_input_tokens: int
    provider_fields: dict[str, Any]
    reason: str
    cost_usd: float
    no_cache_cost_usd: float  # the same prompt with every token at the uncached price


def example_pieces(sizes: Sequence[int] = (4_480, 380, 130)) -> list[list[tuple[str, int]]]:
    """The blocks of each call: tools 1,500 + system 2,600 + the task, then per call a tool call and its result.

    ``example_pieces()[1]`` → call 1's three blocks, a tool call (60) and its result (320): 4,860 tokens. Chapter 04.
    """
    first, *added = sizes
    calls = [[("tools", 1_500), ("system", 2_600), ("user: the task", first - 4_100)]]
    for k, n in enumerate(added, start=1):
        call_tokens = 60 if n > 100 else n // 3  # the assistant's tool call; the rest is its result
        calls.append(calls[-1] + [(f"assistant: tool call {k}", call_tokens), (f"tool result {k}", n - call_tokens)])
    return calls


def example_calls(provider: str = "anthropic", sizes: Sequence[int] = (4_480, 380, 130),
                  gap_s: float = 30.0) -> list[ExampleCall]:
    """The texts' example under one provider's rules: calls ``gap_s`` apart, breakpoint on the last block.

    Anthropic: reads 0 / 4,480 / 4,860 and writes 4,480 / 380 / 130. OpenAI: reads 0 / 4,480 / 4,736
    (128-token steps) and sends 254 uncached on call 3. Chapter 04.
    """
    sim = AnthropicCache() if provider == "anthropic" else OpenAICache()
    model = EXAMPLE_MODELS[provider]
    out = []
    for k, pieces in enumerate(example_pieces(sizes)):
        o = sim.request(request_from_sizes(pieces, model=model, provider=provider), k * gap_s)
        c = prices.cost(model, provider, uncached_input_tokens=o.uncached_input_tokens,
                        cache_read_tokens=o.cache_read_tokens, cache_write_tokens=o.cache_write_tokens, output_tokens=0)
        plain = prices.cost(model, provider, uncached_input_tokens=o.total_input_tokens, cache_read_tokens=0,
                            cache_write_tokens=0, output_tokens=0)
        out.append(ExampleCall(k + 1, provider, model, o.total_input_tokens, o.cache_read_tokens, o.cache_write_tokens,
                               o.uncached_input_tokens, to_provider_fields(o, provider), o.reason,
                               c.total if c else math.nan, plain.total if plain else math.nan))
    return out


# ---- a coffee break --------------------------------------------------------------------------------

def _later(stamp: str, delta: timedelta) -> str:
    """``"2025-10-14T09:02:12.634Z"`` + 10 min → ``"2025-10-14T09:12:12.634Z"`` (same style as given)."""
    when = datetime.fromisoformat(stamp.replace("Z", "+00:00")) + delta
    spec = "seconds" if "." not in stamp else ("milliseconds" if len(stamp.split(".")[1].rstrip("Z")) <= 3 else
                                               "microseconds")
    text = when.isoformat(timespec=spec)
    return text.replace("+00:00", "Z") if stamp.endswith("Z") else text


def with_pause(conversation: Conversation, before_call: int, minutes: float, thread: str | None = None) -> Conversation:
    """A copy of ``conversation`` with a pause of ``minutes`` before call ``before_call`` (1-based, in ``thread``).

    Everything recorded after the previous call's response moves ``minutes`` later, and a ``note``
    entry marks the break (so the pause shows even when the call follows that response directly).
    The input is not changed. ``with_pause(conv, 20, 10)`` → call 20 is requested 10 minutes later
    than recorded: longer than a 5-minute TTL, so it reads nothing. Chapter 04.
    """
    if minutes <= 0:
        return conversation
    calls = model_calls(conversation)
    thread = thread or (calls[0][1].thread if calls else "main")
    mine = [(k, c) for k, c in calls if c.thread == thread]
    if not 2 <= before_call <= len(mine):
        raise CtxlabError(f"a pause goes before call 2..{len(mine)} of thread {thread!r}; got {before_call}.")
    at, previous = mine[before_call - 2][0], mine[before_call - 2][1].message
    if not previous.timestamp:
        raise CtxlabError(f"call {before_call - 1} of thread {thread!r} has no timestamp: a pause cannot be placed.")
    delta = timedelta(minutes=minutes)
    items = list(conversation.items)
    moved = [replace(it, timestamp=_later(it.timestamp, delta)) if k > at and it.timestamp else it
             for k, it in enumerate(items)]
    note = Entry("note", f"pause-before-{thread}-{before_call}", {"text": f"a pause of {minutes:g} min"},
                 _later(previous.timestamp, delta), thread)
    return replace(conversation, items=tuple(moved[: at + 1] + [note] + moved[at + 1:]))


# ---- recorded ledger of the pi bill, and what the cache saved -------------------------------------

def bill_ledger(path: str | Path) -> Ledger:
    """The recorded ledger of a bill CSV (``data/pi_bill.csv``), priced by ``genai-prices`` beside pi's own cost.

    ``bill_ledger(PI_BILL).totals().cost_usd`` → 42.5959 (pi recorded the same). Chapter 04.
    """
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    out = []
    for r in rows:
        recorded = {k: float(r[f"cost_{k}"] or 0) for k in ("input", "cache_read", "cache_write", "output", "total")}
        out.append(make_row(thread="main", call=int(r["call"]), model=r["model"], provider=r["provider"] or None,
                            at=r["timestamp"], stop_reason=r["stop_reason"], uncached_input_tokens=int(r["input"]),
                            cache_read_tokens=int(r["cache_read"]), cache_write_tokens=int(r["cache_write"]),
                            output_tokens=int(r["output"]), note=r.get("event") or "", recorded_cost_usd=recorded))
    return Ledger(out, title=f"recorded: {Path(path).name}")


MISS_COLUMNS = ("call", "gap", "prompt", "read", "written", "hit", "cost", "note")


def miss_rows(ledger: Ledger, below: float = 0.5, ttl_s: float = 300.0) -> list[tuple[Any, ...]]:
    """Lines of :data:`MISS_COLUMNS` for the calls that read less than ``below`` of their prompt (empty calls left
    out). ``gap``: seconds since the previous call; ``note``: what the record shows as a cause — the first call, a
    previous prompt below the model's minimum, a gap over the TTL, what was recorded in between — or nothing
    (the record holds no cause). Chapter 04."""
    from ctxlab.tables.cache_rules import rule_for

    out, previous, prompt = [], None, None  # previous: time of the previous call; prompt: its prompt tokens
    for r in ledger.rows:
        when = datetime.fromisoformat(r.at.replace("Z", "+00:00")) if r.at else None
        gap = (when - previous).total_seconds() if when and previous else None
        if r.total_input_tokens and r.hit_rate < below:
            minimum = rule_for(r.model, r.provider).min_tokens
            causes = ["first call"] if prompt is None else []
            if prompt is not None and prompt < minimum:
                causes.append(f"previous prompt below the {minimum:,} minimum")
            causes += [f"gap over the {ttl_s / 60:g}-min TTL"] if gap is not None and gap > ttl_s else []
            causes += [r.note] if r.note else []
            out.append((r.call, "" if gap is None else f"{gap:,.0f} s", r.total_input_tokens, r.cache_read_tokens,
                        r.cache_write_tokens, f"{100 * r.hit_rate:.0f}%",
                        "—" if r.cost_usd is None else f"${r.cost_usd:,.4f}", "; ".join(causes)[:80]))
        previous = when or previous
        prompt = r.total_input_tokens if r.total_input_tokens else prompt
    return out


@dataclass(frozen=True)
class Saving:
    """A ledger's cost against the same calls with every prompt token uncached. Money in USD; shares 0..1."""

    name: str
    calls: int
    prompt_tokens: int
    read_share: float
    write_share: float
    cost_usd: float
    no_cache_cost_usd: float
    prompt_cost_usd: float  # cost_usd without the output tokens
    no_cache_prompt_cost_usd: float

    @property
    def saving(self) -> float:
        return 1 - self.cost_usd / self.no_cache_cost_usd if self.no_cache_cost_usd else 0.0

    @property
    def prompt_saving(self) -> float:
        return 1 - self.prompt_cost_usd / self.no_cache_prompt_cost_usd if self.no_cache_prompt_cost_usd else 0.0

    @property
    def rule_of_thumb(self) -> float:
        """0.9 x read share − 0.25 x write share: the prompt saving when reads cost 0.1x and writes 1.25x."""
        return 0.9 * self.read_share - 0.25 * self.write_share


def cache_saving(ledger: Ledger, name: str = "") -> Saving:
    """Price every priced row again as if nothing were cached. Unpriced rows are left out of both sides.

    The texts' three calls (Sonnet 4.5): 50% cheaper, not 90%: the first call paid 1.25x to write. Chapter 04.
    """
    rows = [r for r in ledger.rows if r.cost_usd is not None]
    no_cache = no_cache_prompt = 0.0
    for r in rows:
        c = prices.cost(r.model, r.provider, uncached_input_tokens=r.total_input_tokens, cache_read_tokens=0,
                        cache_write_tokens=0, output_tokens=r.output_tokens)
        no_cache += c.total if c else r.cost_usd
        no_cache_prompt += (c.total - c.output) if c else r.cost_usd - (r.cost_output or 0)
    total = sum(r.total_input_tokens for r in rows)
    return Saving(name or ledger.title, len(rows), total,
                  sum(r.cache_read_tokens for r in rows) / total if total else 0.0,
                  sum(r.cache_write_tokens for r in rows) / total if total else 0.0,
                  sum(r.cost_usd for r in rows), no_cache, sum(r.cost_usd - (r.cost_output or 0) for r in rows),
                  no_cache_prompt)


def saving_row(s: Saving) -> tuple[Any, ...]:
    """One line of :data:`SAVING_COLUMNS`."""
    return (s.name, s.calls, s.prompt_tokens, f"{100 * s.read_share:.1f}%", f"{100 * s.write_share:.1f}%",
            f"${s.cost_usd:,.4f}", f"${s.no_cache_cost_usd:,.4f}", f"{100 * s.prompt_saving:.1f}%",
            f"{100 * s.rule_of_thumb:.1f}%", f"{100 * s.saving:.1f}%")


SAVING_COLUMNS = ("ledger", "calls", "prompt tokens", "read", "written", "cost", "no-cache cost", "prompt saving",
                  "0.9r−0.25w", "saving incl. output")


# ---- what a dropping strategy does to the cache ------------------------------------------------------

def call_pairs(result: ReplayResult) -> list[tuple[Any, Any]]:
    """(CallRecord, LedgerRow) per recorded model call, in ledger order. Rows of a strategy's own side calls
    (a summary, later chapters) carry no message id and are left out: they are in the totals, not here."""
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
    return {b.message_id for b in request.blocks if b.message_id is not None}


@dataclass(frozen=True)
class CollapseCall:
    """One call of a replay: the static head (tools + system, tokens), the read, and how many messages it dropped."""

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
    before and after the first drop."""

    calls: tuple[CollapseCall, ...]
    first_drop: int | None  # call number
    hit_rate_before: float  # token-weighted, calls before the first drop
    hit_rate_after: float  # from the first drop on

    @property
    def drops(self) -> tuple[CollapseCall, ...]:
        return tuple(c for c in self.calls if c.dropped_messages)

    @property
    def drops_reading_at_most_head(self) -> int:
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


# ---- committed fidelity figures ------------------------------------------------------------------------

from ctxlab.lab.data import FIDELITY_TABLE


def read_fidelity_table(path: str | Path = FIDELITY_TABLE) -> list[dict[str, str]]:
    """The rows of ``data/fidelity.csv`` (written by ``data/make_fidelity_table.py``), as strings. Chapter 04."""
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


# ---- the widget -----------------------------------------------------------------------------------------

# This chapter's strategies (ctxlab.strategies.STRATEGY_NAMES grows as later chapters add theirs).
STRATEGIES = ("full", "sliding", "budgeted", "recorded")
MODELS = ("as recorded", "claude-sonnet-4-5", "claude-opus-4-5", "claude-haiku-4-5", "gpt-4o", "gpt-4.1", "gpt-5.1")
PROVIDERS = ("anthropic", "openai")


def _event(reason: str) -> str:
    """A cache outcome's reason in a word or two: ``"miss: expired after 952 s (ttl 300)"`` → ``"expired"``;
    a read that stopped short of an entry the 20-block lookback could not reach gets ``", lookback"``."""
    if reason.startswith("hit"):
        word = "hit"
    else:
        word = next((w for key, w in (("lookback", "lookback"), ("cold", "cold"), ("expired", "expired"),
                                      ("below minimum", "below minimum"), ("model changed", "model changed"),
                                      ("thinking changed", "thinking changed"), ("parallel", "parallel"),
                                      ("no breakpoint", "no breakpoint"), ("no documented", "no caching"))
                     if key in reason), "miss")
    return word + (", lookback" if word == "hit" and "lookback" in reason else "")


@dataclass(frozen=True)
class CallRow:
    """One call as the widget's table shows it. Tokens in tokens, cost in USD (None: unpriced)."""

    call: int
    total_input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    uncached_input_tokens: int
    output_tokens: int
    cost_usd: float | None
    dropped_messages: int
    overflow: bool
    event: str  # "hit", "cold", "expired", ... and "dropped N" / "overflow"


@dataclass(frozen=True)
class LedgerState:
    """What the widget shows for one choice of its controls: plain numbers. ``error`` when no replay was possible."""

    strategy: str
    provider: str
    model: str
    window: int
    pause_minutes: int
    pause_call: int
    calls: int
    total_input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    uncached_input_tokens: int
    output_tokens: int
    hit_rate: float
    cost_usd: float | None
    overflow_calls: int
    dropped_calls: int  # calls that dropped history the previous call sent
    rows: tuple[CallRow, ...] = ()
    error: str = ""


@dataclass(frozen=True)
class DiffState:
    """The prefix diff of one call against the previous call of its thread, and what the cache did."""

    call: int
    previous: int | None
    index: int | None  # first differing block (None: the new request only appends)
    shared_tokens: int
    reason: str
    old_block: str
    new_block: str
    cache_read_tokens: int
    cache_write_tokens: int
    cache_reason: str


STATE_COLUMNS = ("strategy", "provider", "model", "window", "pause", "calls", "prompt", "read", "written", "uncached",
                 "hit rate", "cost", "overflows", "drops", "note")
ROW_COLUMNS = ("call", "prompt", "read", "written", "uncached", "hit", "cost", "event")


def state_row(s: LedgerState) -> tuple[Any, ...]:
    """One line of :data:`STATE_COLUMNS` for a state (an error leaves the numbers at 0)."""
    pause = f"{s.pause_minutes} min @ {s.pause_call}" if s.pause_minutes else "none"
    cost = "—" if s.cost_usd is None else f"${s.cost_usd:,.4f}"
    return (s.strategy, s.provider, s.model, s.window, pause, s.calls, s.total_input_tokens, s.cache_read_tokens,
            s.cache_write_tokens, s.uncached_input_tokens, f"{100 * s.hit_rate:.1f}%", cost, s.overflow_calls,
            s.dropped_calls, s.error[:60])


def notable_calls(state: LedgerState, around: int = 1) -> list[int]:
    """Calls worth a line in a compact table: the first and the last, every call that was not a plain hit
    (a miss, a drop, an overflow), and ``around`` calls either side of each."""
    n = len(state.rows)
    marked = {1, n} | {r.call for r in state.rows if r.event != "hit"}
    return sorted({c for m in marked for c in range(m - around, m + around + 1) if 1 <= c <= n})


def call_rows(state: LedgerState, calls: Sequence[int] | None = None) -> list[tuple[Any, ...]]:
    """Lines of :data:`ROW_COLUMNS`, for every call or the ``calls`` given."""
    pick = set(calls) if calls is not None else None
    return [(r.call, r.total_input_tokens, r.cache_read_tokens, r.cache_write_tokens, r.uncached_input_tokens,
             f"{100 * r.cache_read_tokens / r.total_input_tokens:.0f}%" if r.total_input_tokens else "0%",
             "—" if r.cost_usd is None else f"${r.cost_usd:,.4f}", r.event)
            for r in state.rows if pick is None or r.call in pick]


class LedgerWidget:
    """Replay a conversation and read its ledger. Controls: ``strategy``, ``provider`` (cache rules), ``model``,
    ``window`` (tokens), ``pause_minutes`` and ``pause_call`` (a coffee break), ``diff_call`` (the prefix diff shown).

    ``w = LedgerWidget(conv); w.pause_minutes.value = 10; w.state.rows[w.pause_call.value - 1].cache_read_tokens``
    → 0. ``compute(...)`` is the pure part: the same numbers, no widgets touched. ``precompute=True`` replays
    every strategy under both providers' rules when the widget opens (see :meth:`precompute`). Chapter 04.
    """

    def __init__(self, conversation: Conversation, *, window: int | None = None, strategy: str = "full",
                 provider: str | None = None, models: Sequence[str] = MODELS, precompute: bool = False) -> None:
        import ipywidgets as W

        self.conversation = conversation
        self._results: dict[tuple, ReplayResult | CtxlabError] = {}  # settings -> replay (or the error it raised)
        self._states: dict[tuple, LedgerState] = {}  # settings -> the numbers shown, computed once
        self._paused: dict[tuple[int, int], Conversation] = {}  # (minutes, call) -> conversation with that pause
        own = profile_for(conversation.model or "claude-sonnet-4-5", conversation.provider)
        provider = provider or (own.provider if own.provider in PROVIDERS else "anthropic")
        n = max(2, sum(1 for _, c in model_calls(conversation) if c.thread == self._thread()))
        top = max(200_000, own.context_window if own.context_window <= 1_000_000 else 200_000)
        style = {"description_width": "initial"}
        self.strategy = W.Dropdown(options=list(STRATEGIES), value=strategy, description="strategy")
        self.provider = W.Dropdown(options=list(PROVIDERS), value=provider, description="cache rules")
        self.model = W.Dropdown(options=list(models), value=models[0], description="model")
        self.window = W.IntSlider(value=window or min(own.context_window, top), min=5_000, max=top, step=5_000,
                                  description="window (tokens)", continuous_update=False, readout_format=",",
                                  style=style, layout=W.Layout(width="60%"))
        self.pause_minutes = W.IntSlider(value=0, min=0, max=90, step=1, description="coffee break (min)",
                                         continuous_update=False, style=style)
        self.pause_call = W.IntSlider(value=min(20, n), min=2, max=n, description="before call",
                                      continuous_update=False, style=style)
        self.diff_call = W.IntSlider(value=min(20, n), min=1, max=n, description="prefix diff of call",
                                     continuous_update=False, style=style)
        self.controls = W.VBox([W.HBox([self.strategy, self.provider, self.model]), self.window,
                                W.HBox([self.pause_minutes, self.pause_call]), self.diff_call])
        self.label = W.HTML()
        self.plot = W.Output()
        self.table = W.HTML()
        self.diff_view = W.HTML()
        self.widget = W.VBox([self.controls, self.label, self.plot, self.table, self.diff_view])
        if precompute:
            self.precompute()
        self.state = self.compute(**self.settings())
        self.diff = self.compute_diff(self.diff_call.value, **self.settings())
        for control in (self.strategy, self.provider, self.model, self.window, self.pause_minutes, self.pause_call):
            control.observe(self._on_change, names="value")
        self.diff_call.observe(self._on_diff, names="value")
        self._render()

    # -- the pure part ----------------------------------------------------------------------------------

    def _thread(self) -> str:
        calls = model_calls(self.conversation)
        return calls[0][1].thread if calls else "main"

    def settings(self) -> dict[str, Any]:
        """The controls' values as :meth:`compute`'s keyword arguments."""
        return dict(strategy=self.strategy.value, provider=self.provider.value, model=self.model.value,
                    window=self.window.value, pause_minutes=self.pause_minutes.value, pause_call=self.pause_call.value)

    def paused(self, pause_minutes: int, pause_call: int) -> Conversation:
        """The conversation with the coffee break (kept, so a second look costs nothing)."""
        if pause_minutes <= 0:
            return self.conversation
        key = (pause_minutes, pause_call)
        if key not in self._paused:
            self._paused[key] = with_pause(self.conversation, pause_call, pause_minutes, self._thread())
        return self._paused[key]

    def result(self, strategy: str, provider: str, model: str, window: int, pause_minutes: int = 0,
               pause_call: int = 2) -> ReplayResult:
        """The replay for these settings (run once, then kept). Raises what the replay raised (a BudgetError)."""
        key = (strategy, provider, model, window, pause_minutes, pause_call if pause_minutes > 0 else 0)
        if key not in self._results:
            try:
                self._results[key] = replay(self.paused(pause_minutes, pause_call), strategy, provider=provider,
                                            model=None if model == "as recorded" else model, window=window)
            except CtxlabError as err:
                self._results[key] = err
        got = self._results[key]
        if isinstance(got, CtxlabError):
            raise got
        return got

    def precompute(self) -> None:
        """Replay every strategy under both providers' cache rules at the current model, window and pause, so
        that changing the strategy or the provider shows numbers already computed (slower to open, instant to use)."""
        s = self.settings()
        for strategy in STRATEGIES:
            for provider in PROVIDERS:
                self.compute(**{**s, "strategy": strategy, "provider": provider})

    def compute(self, strategy: str, provider: str, model: str, window: int, pause_minutes: int = 0,
                pause_call: int = 2) -> LedgerState:
        """The ledger's numbers for these settings; an impossible window is reported in ``error``, not raised."""
        head = (strategy, provider, model, window, pause_minutes, pause_call)
        if head not in self._states:
            self._states[head] = self._compute(*head)
        return self._states[head]

    def _compute(self, strategy: str, provider: str, model: str, window: int, pause_minutes: int,
                 pause_call: int) -> LedgerState:
        head = (strategy, provider, model, window, pause_minutes, pause_call)
        try:
            result = self.result(*head)
        except CtxlabError as err:
            return LedgerState(*head, 0, 0, 0, 0, 0, 0, 0.0, None, 0, 0, (), str(err))
        drops = {c.call: c.dropped_messages for c in collapse(result).calls}
        rows = []
        for rec, r in call_pairs(result):
            event = _event(rec.outcome.reason)
            event += f", dropped {drops[r.call]}" if drops.get(r.call) else ""
            event += ", overflow" if r.overflow else ""
            rows.append(CallRow(r.call, r.total_input_tokens, r.cache_read_tokens, r.cache_write_tokens,
                                r.uncached_input_tokens, r.output_tokens, r.cost_usd, drops.get(r.call, 0),
                                r.overflow, event))
        t = result.ledger.totals()
        return LedgerState(*head, t.calls, t.total_input_tokens, t.cache_read_tokens, t.cache_write_tokens,
                           t.uncached_input_tokens, t.output_tokens, t.hit_rate, t.cost_usd, t.overflow_calls,
                           sum(1 for d in drops.values() if d), tuple(rows))

    def compute_diff(self, call: int, strategy: str, provider: str, model: str, window: int, pause_minutes: int = 0,
                     pause_call: int = 2) -> DiffState | None:
        """Call ``call`` against the previous call of its thread: the first differing block and why. None on error."""
        try:
            result = self.result(strategy, provider, model, window, pause_minutes, pause_call)
        except CtxlabError:
            return None
        records = result.records
        k = min(max(call, 1), len(records)) - 1
        rec = records[k]
        prev = next((r for r in reversed(records[:k]) if r.call.thread == rec.call.thread), None)
        o = rec.outcome
        if prev is None:
            return DiffState(rec.call.index, None, None, 0, "the first call: nothing to compare with", "", "",
                             o.cache_read_tokens, o.cache_write_tokens, o.reason)
        d = prefix_diff(prev.request, rec.request)
        return DiffState(rec.call.index, prev.call.index, d.index, d.shared_tokens, d.reason,
                         d.old.label if d.old else "", d.new.label if d.new else "", o.cache_read_tokens,
                         o.cache_write_tokens, o.reason)

    def compare(self, window: int, provider: str | None = None, model: str | None = None) -> list[LedgerState]:
        """The four strategies under one window (the other settings as the controls stand, no pause)."""
        return [self.compute(s, provider or self.provider.value, model or self.model.value, window)
                for s in STRATEGIES]

    def contrast_window(self, step: int = 5_000) -> int:
        """A window where the strategies differ: half the largest prompt ``full`` sends (rounded up to
        ``step``, at most the model's window), raised until ``budgeted`` can build every call. The sample: 30,000."""
        s = self.settings()
        full = self.compute("full", s["provider"], s["model"], self.window.max)
        peak = max((r.total_input_tokens for r in full.rows), default=step)
        model = None if s["model"] == "as recorded" else s["model"]
        cap = profile_for(model or self.conversation.model or "claude-sonnet-4-5").context_window
        window = min(cap, math.ceil(peak / 2 / step) * step)
        for _ in range(5):
            try:
                self.result("budgeted", s["provider"], s["model"], window)
                return window
            except CtxlabError as err:
                needed = getattr(err, "needed", None)
                if not needed:
                    return window
                window = math.ceil(needed / 0.9 / step) * step
        return window

    # -- the view ---------------------------------------------------------------------------------------

    def _on_change(self, change: dict[str, Any]) -> None:
        self.state = self.compute(**self.settings())
        self.diff = self.compute_diff(self.diff_call.value, **self.settings())
        self._render()

    def _on_diff(self, change: dict[str, Any]) -> None:
        self.diff = self.compute_diff(change["new"], **self.settings())
        self._render_diff()

    def _render(self) -> None:
        from ctxlab.lab.workbook import text_table

        s = self.state
        if s.error:
            self.label.value = error_html("no replay", s.error)
            self.plot.outputs = ()
            self.table.value = ""
        else:
            cost = "unpriced" if s.cost_usd is None else f"${s.cost_usd:,.4f}"
            vendor = profile_for(s.model).provider if s.model != "as recorded" else s.provider
            what_if = (f" <i>(a what-if: {shown(s.model, html=True)} is not served under {s.provider}'s rules)</i>"
                       if vendor in PROVIDERS and vendor != s.provider else "")
            self.label.value = (f"<b>{s.strategy}</b> under {s.provider}'s cache rules, model {shown(s.model, html=True)}, "
                                f"window {s.window:,}: {s.calls} calls, cost <b>{cost}</b>, hit rate "
                                f"<b>{100 * s.hit_rate:.1f}%</b> (token-weighted), {s.overflow_calls} over the window, "
                                f"{s.dropped_calls} dropped history{what_if}")
            result = self.result(**self.settings())
            show_in(self.plot, result.ledger.figure(f"{s.strategy} · {s.provider} rules · window {s.window:,}"))
            self.table.value = ("<pre style='max-height:260px;overflow:auto;font-size:11px'>"
                                + safe_html(text_table(call_rows(s), ROW_COLUMNS), multiline=True) + "</pre>")
        self._render_diff()

    def _render_diff(self) -> None:
        d = self.diff
        if d is None:
            self.diff_view.value = ""
            return
        where = "nothing differs: the request only appends" if d.index is None else \
            f"first differing block: #{d.index} ({shown(d.old_block, html=True)} → {shown(d.new_block, html=True)})"
        self.diff_view.value = (f"<b>prefix diff, call {d.call} against call {d.previous}</b>: "
                                f"{shown(d.reason, html=True)}; {where}; {d.shared_tokens:,} tokens shared.<br>"
                                f"cache: read {d.cache_read_tokens:,}, wrote {d.cache_write_tokens:,} — "
                                f"{shown(d.cache_reason, html=True)}")

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = (f"LedgerWidget(strategy={self.strategy.value!r}, provider={self.provider.value!r}, "
                                f"model={self.model.value!r}, window={self.window.value:,})")
        return bundle


def diff_rows(d: DiffState) -> list[tuple[str, str]]:
    """(what, value) lines of a prefix diff, for a text table."""
    return [("call", f"{d.call} against {d.previous}"), ("first differing block", "none (appends only)"
            if d.index is None else f"#{d.index}: {d.old_block} → {d.new_block}"), ("why", d.reason),
            ("tokens shared", f"{d.shared_tokens:,}"), ("cache read", f"{d.cache_read_tokens:,}"),
            ("cache write", f"{d.cache_write_tokens:,}"), ("simulator", d.cache_reason)]
