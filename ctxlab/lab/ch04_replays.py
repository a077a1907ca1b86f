"""Chapter 04's ledger widget, measured: one conversation replayed under each setting of its controls.

Unlike :mod:`ctxlab.lab.ch04_ledger` (the texts' example and a recorded bill, priced once), this runs
replays. What it holds (plain numbers; :class:`ctxlab.widgets.ch04_ledger.LedgerWidget` draws them):

* :class:`LedgerReplays` — the replays behind the widget: one per choice of strategy, cache rules,
  model, window and coffee break (:func:`~ctxlab.lab.ch04_ledger.with_pause`), kept;
* :class:`LedgerState` (the totals and one :class:`CallRow` per call) and :class:`DiffState` (one
  call's prefix diff against the call before it) — what it measures;
* :func:`state_row`, :func:`call_rows`, :func:`notable_calls`, :func:`diff_rows` — their lines for a text table.

Simplified on purpose: the replays come from the cache the chapters share (:data:`ctxlab.lab.replays.REPLAYS`,
one replay per setting, whoever asked first), and :class:`LedgerReplays` keeps the numbers it measured (keyed by
the settings), so going back to a setting is instant; a new setting replays the whole conversation (about 0.1 s
on the sample, seconds on a long transcript).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any, Sequence

from ctxlab.base.errors import CtxlabError
from ctxlab.cache import prefix_diff
from ctxlab.lab.ch04_collapse import call_pairs, dropped_messages
from ctxlab.lab.ch04_ledger import with_pause
from ctxlab.lab.replays import REPLAYS
from ctxlab.messages import Conversation
from ctxlab.replay import ReplayResult
from ctxlab.strategies import model_calls
from ctxlab.tables.default_model import DEFAULT_MODEL
from ctxlab.tables.profiles import profile_for

# Chapter 04's strategies, models and cache rules (ctxlab.replay.STRATEGY_NAMES grows as later chapters
# add theirs).
STRATEGIES = ("full", "sliding", "budgeted", "recorded")
MODELS = ("as recorded", DEFAULT_MODEL, "claude-opus-4-5", "claude-haiku-4-5", "gpt-4o", "gpt-4.1", "gpt-5.1",
          "gpt-5.6")
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
    """One call as the ledger widget's table shows it. Tokens in tokens, cost in USD (None: unpriced). Chapter 04."""

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
    """What the ledger widget shows for one choice of its controls: plain numbers. ``error`` when no replay was
    possible. Chapter 04."""

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
    """The prefix diff of one call against the previous call of its thread, and what the cache did. Chapter 04."""

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


# Chapter 04: the columns of :func:`state_row` and of :func:`call_rows`.
STATE_COLUMNS = ("strategy", "provider", "model", "window", "pause", "calls", "prompt", "read", "written", "uncached",
                 "hit rate", "cost", "overflows", "drops", "note")
ROW_COLUMNS = ("call", "prompt", "read", "written", "uncached", "hit", "cost", "event")


def state_row(s: LedgerState) -> tuple[Any, ...]:
    """One line of :data:`STATE_COLUMNS` for a state (an error leaves the numbers at 0). Chapter 04."""
    pause = f"{s.pause_minutes} min @ {s.pause_call}" if s.pause_minutes else "none"
    cost = "—" if s.cost_usd is None else f"${s.cost_usd:,.4f}"
    return (s.strategy, s.provider, s.model, s.window, pause, s.calls, s.total_input_tokens, s.cache_read_tokens,
            s.cache_write_tokens, s.uncached_input_tokens, f"{100 * s.hit_rate:.1f}%", cost, s.overflow_calls,
            s.dropped_calls, s.error[:60])


def notable_calls(state: LedgerState, around: int = 1) -> list[int]:
    """Calls worth a line in a compact table: the first and the last, every call that was not a plain hit
    (a miss, a drop, an overflow), and ``around`` calls either side of each. Chapter 04."""
    n = len(state.rows)
    marked = {1, n} | {r.call for r in state.rows if r.event != "hit"}
    return sorted({c for m in marked for c in range(m - around, m + around + 1) if 1 <= c <= n})


def call_rows(state: LedgerState, calls: Sequence[int] | None = None) -> list[tuple[Any, ...]]:
    """Lines of :data:`ROW_COLUMNS`, for every call or the ``calls`` given. Chapter 04."""
    pick = set(calls) if calls is not None else None
    return [(r.call, r.total_input_tokens, r.cache_read_tokens, r.cache_write_tokens, r.uncached_input_tokens,
             f"{100 * r.cache_read_tokens / r.total_input_tokens:.0f}%" if r.total_input_tokens else "0%",
             "—" if r.cost_usd is None else f"${r.cost_usd:,.4f}", r.event)
            for r in state.rows if pick is None or r.call in pick]


def diff_rows(d: DiffState) -> list[tuple[str, str]]:
    """(what, value) lines of a prefix diff, for a text table. Chapter 04."""
    return [("call", f"{d.call} against {d.previous}"), ("first differing block", "none (appends only)"
            if d.index is None else f"#{d.index}: {d.old_block} → {d.new_block}"), ("why", d.reason),
            ("tokens shared", f"{d.shared_tokens:,}"), ("cache read", f"{d.cache_read_tokens:,}"),
            ("cache write", f"{d.cache_write_tokens:,}"), ("simulator", d.cache_reason)]


# ---- the replays behind the widget ---------------------------------------------------------------------

class LedgerReplays:
    """One conversation replayed under each setting asked for, run once and kept: what the ledger widget shows.

    A setting is (strategy, provider = cache rules, model or ``"as recorded"``, window in tokens, pause in
    minutes, the call the pause goes before). :meth:`compute` gives a :class:`LedgerState`, :meth:`compute_diff`
    a :class:`DiffState`; an impossible window is reported in ``LedgerState.error``, not raised.
    ``LedgerReplays(conv).compute("full", "anthropic", "as recorded", 200_000, 10, 20).rows[19].cache_read_tokens``
    → 0 on the sample (a 10-minute break outlives the 5-minute TTL). Chapter 04.
    """

    def __init__(self, conversation: Conversation) -> None:
        self.conversation = conversation
        calls = model_calls(conversation)
        self.thread = calls[0][1].thread if calls else "main"  # the thread a pause and a prefix diff count in
        self._states: dict[tuple, LedgerState] = {}  # settings -> the numbers measured, computed once
        self._paused: dict[tuple[int, int], Conversation] = {}  # (minutes, call) -> conversation with that pause
        self._lock = threading.Lock()  # a widget's background thread asks too: one paused copy per pause

    def paused(self, pause_minutes: int, pause_call: int) -> Conversation:
        """The conversation with the coffee break (kept, so a second look costs nothing). Chapter 04."""
        if pause_minutes <= 0:
            return self.conversation
        key = (pause_minutes, pause_call)
        with self._lock:
            if key not in self._paused:
                self._paused[key] = with_pause(self.conversation, pause_call, pause_minutes, self.thread)
            return self._paused[key]

    def result(self, strategy: str, provider: str, model: str, window: int, pause_minutes: int = 0,
               pause_call: int = 2) -> ReplayResult:
        """The replay for these settings (from :data:`~ctxlab.lab.replays.REPLAYS`: run once, then kept). Raises what
        the replay raised (a BudgetError). Chapter 04."""
        return REPLAYS.replay(self.paused(pause_minutes, pause_call), strategy, provider=provider,
                              model=None if model == "as recorded" else model, window=window)

    def held(self, strategy: str, provider: str, model: str, window: int, pause_minutes: int = 0,
             pause_call: int = 2) -> bool:
        """Whether these settings' numbers (or at least their replay) are computed: showing them replays nothing.
        Chapter 04."""
        return (strategy, provider, model, window, pause_minutes, pause_call) in self._states or REPLAYS.ready(
            self.paused(pause_minutes, pause_call), strategy, provider=provider,
            model=None if model == "as recorded" else model, window=window)

    def precompute(self, model: str, window: int, pause_minutes: int = 0, pause_call: int = 2) -> None:
        """Replay every strategy of :data:`STRATEGIES` under both providers' cache rules at this model, window
        and pause, so that a later change of strategy or provider finds its numbers computed. Chapter 04."""
        for strategy in STRATEGIES:
            for provider in PROVIDERS:
                self.compute(strategy, provider, model, window, pause_minutes, pause_call)

    def compute(self, strategy: str, provider: str, model: str, window: int, pause_minutes: int = 0,
                pause_call: int = 2) -> LedgerState:
        """The ledger's numbers for these settings; an impossible window is reported in ``error``, not raised.
        Chapter 04."""
        head = (strategy, provider, model, window, pause_minutes, pause_call)
        if head not in self._states:
            state = self._compute(*head)  # outside the lock: the replay may take seconds
            with self._lock:
                self._states.setdefault(head, state)  # two threads may measure it: one state is kept
        return self._states[head]

    def _compute(self, strategy: str, provider: str, model: str, window: int, pause_minutes: int,
                 pause_call: int) -> LedgerState:
        head = (strategy, provider, model, window, pause_minutes, pause_call)
        try:
            result = self.result(*head)
        except CtxlabError as err:
            return LedgerState(*head, 0, 0, 0, 0, 0, 0, 0.0, None, 0, 0, (), str(err))
        drops = dropped_messages(result)  # collapse(result)'s drops, without its prefix diffs
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
        """Call ``call`` against the previous call of its thread: the first differing block and why. None on error.
        Chapter 04."""
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

    def compare(self, window: int, provider: str, model: str) -> list[LedgerState]:
        """The strategies of :data:`STRATEGIES` under one window, cache rules and model, no pause. Chapter 04."""
        return [self.compute(s, provider, model, window) for s in STRATEGIES]

    def contrast_window(self, provider: str, model: str, top_window: int, step: int = 5_000) -> int:
        """A window where the strategies differ: half the largest prompt ``full`` sends at ``top_window``
        (rounded up to ``step``, at most the model's window), raised until ``budgeted`` can build every call.
        The sample: 30,000. Chapter 04."""
        full = self.compute("full", provider, model, top_window)
        peak = max((r.total_input_tokens for r in full.rows), default=step)
        named = None if model == "as recorded" else model
        cap = profile_for(named or self.conversation.model or DEFAULT_MODEL).context_window
        window = min(cap, math.ceil(peak / 2 / step) * step)
        for _ in range(5):
            try:
                self.result("budgeted", provider, model, window)
                return window
            except CtxlabError as err:
                needed = getattr(err, "needed", None)
                if not needed:
                    return window
                window = math.ceil(needed / 0.9 / step) * step
        return window


__all__ = ["STRATEGIES", "MODELS", "PROVIDERS", "CallRow", "LedgerState", "DiffState", "STATE_COLUMNS", "ROW_COLUMNS",
           "state_row", "notable_calls", "call_rows", "diff_rows", "LedgerReplays"]
