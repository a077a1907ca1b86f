"""Chapter 07's measurements of one compaction policy: the window, the replay, and its sawtooth. Plain rows, no UI.

What it holds:

* :func:`compaction_window` — a window at which a conversation must compact, and ``budgeted`` can still
  build every call (the sample: 30,000);
* :func:`policy_replay` — a replay under ``compaction`` (or ``pipeline``) with one trigger / target pair;
* :func:`prefix_rewrites` — the calls whose request changed history the previous request had sent;
* :func:`sawtooth` — context tokens per call, the compactions (before → after) and what their summary calls
  cost, as a :class:`SawtoothState` (drawn by :mod:`ctxlab.widgets.ch07_compaction`).

Strategies and trigger / target pairs side by side (and the decision pipeline's steps) are in
:mod:`ctxlab.lab.ch07_policies`; the floor and what two compactions keep in :mod:`ctxlab.lab.ch07_floor`;
counting against usage-anchored metering in :mod:`ctxlab.lab.ch07_metering`. Simplified on purpose: one
thread (the chapters cut a transcript to its main thread).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ctxlab.base.errors import CtxlabError
from ctxlab.base.safe_text import shown
from ctxlab.cache import prefix_diff
from ctxlab.compaction import CompactionPolicy
from ctxlab.lab.replays import REPLAYS
from ctxlab.ledger import LedgerRow
from ctxlab.messages import Conversation
from ctxlab.replay import ReplayResult
from ctxlab.tables.default_model import DEFAULT_MODEL
from ctxlab.tables.profiles import profile_for

# ---- the window, the replays, the rewrites ------------------------------------------------------------


def _peak_full(conversation: Conversation) -> int:
    """The largest prompt ``full`` sends (tokens), at the model's own window."""
    return max((rec.context_tokens for rec in REPLAYS.replay(conversation, "full").records), default=0)


def compaction_window(conversation: Conversation, step: int = 5_000) -> int:
    """A window where compaction must act: half the largest prompt ``full`` sends, rounded up to ``step`` (at
    most the model's window), raised until ``budgeted`` and ``compaction`` (80% → 50%) can build every call.
    The sample → 30,000. Chapter 07."""
    cap = profile_for(conversation.model or DEFAULT_MODEL, conversation.provider).context_window
    window = min(cap, max(step, math.ceil(_peak_full(conversation) / 2 / step) * step))
    for _ in range(8):
        try:
            for name in ("budgeted", "compaction"):
                REPLAYS.replay(conversation, name, window=window)  # kept: the widget and policy_rows reuse them
            return window
        except CtxlabError as err:
            needed = getattr(err, "needed", None)
            if not needed or window >= cap:
                return window
            window = min(cap, max(window + step, math.ceil(needed / 0.9 / step) * step))
    return window


def two_decimals(x: float) -> float:
    """A slider's ratio as two decimals, the key every chapter-07 replay is kept under:
    ``two_decimals(0.7000000000000001)`` → ``0.7``. Chapter 07."""
    return round(float(x), 2)


def policy_replay(conversation: Conversation, window: int, trigger_ratio: float = 0.8, target_ratio: float = 0.5,
                  *, metering: str = "count", strategy: str = "compaction", check: bool = False) -> ReplayResult:
    """``conversation`` replayed under ``compaction`` (or ``pipeline``) with one policy (ratios of ``window``,
    tokens). A ratio out of range raises ``ValueError`` (from :class:`~ctxlab.compaction.CompactionPolicy`); a
    context that cannot be built raises a :class:`~ctxlab.base.errors.CtxlabError`. Chapter 07.

    ``policy_replay(sample, 30_000).new_entries`` → two compaction entries (calls 31 and 32). The replay is the
    shared one (:data:`~ctxlab.lab.replays.REPLAYS`): the same policy at the same window is replayed once.
    """
    policy = CompactionPolicy(two_decimals(trigger_ratio), two_decimals(target_ratio),
                              metering=metering)  # type: ignore[arg-type]
    return REPLAYS.replay(conversation, strategy, window=window, check=check, policy=policy)


def prefix_rewrites(result: ReplayResult) -> list[int]:
    """Calls whose request changed something the previous request of the thread had sent — a message dropped,
    summarised or replaced, the system prompt rewritten — so the cache can serve only what stands before the
    change. A change of model or thinking setting (the transcript's, the same under every strategy) is not
    counted. ``budgeted`` on the sample at 30,000 → [31, 37]. Chapter 07."""
    last: dict[str, Any] = {}  # thread -> its previous rendered request
    out = []
    for rec in result.records:
        previous, last[rec.call.thread] = last.get(rec.call.thread), rec.request
        if previous is None:
            continue
        d = prefix_diff(previous, rec.request)  # a model change comes back with no blocks (old is None)
        if d.index is not None and d.old is not None and not d.reason.startswith("thinking"):
            out.append(rec.call.index)
    return out


def summary_rows(result: ReplayResult) -> list[LedgerRow]:
    """The ledger rows of a replay's summary calls (``kind == "summary"``), in call order. Chapter 07."""
    return [r for r in result.ledger.rows if r.kind == "summary"]


def compaction_call(entry_id: str) -> int:
    """The call that made a compaction entry: ``compaction_call("compaction:main:31")`` → 31. Chapter 07."""
    return int(entry_id.rsplit(":", 1)[1])


# ---- the sawtooth -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CompactionPoint:
    """One compaction: the call that made it, the context before and after (tokens), the target it aimed at,
    the messages its summary stands for so far, and the summary call's cost (USD; None when unpriced).
    Chapter 07."""

    call: int
    tokens_before: int
    tokens_after: int
    target_tokens: int | None  # the target it aimed at: target ratio x window, raised to the floor when that is higher
    sources: int
    above_target: bool  # the context after is still over the target (tokens_after > target_tokens)
    shrunk: bool  # the floor was over the budget: the newest unit's tool results were pruned first
    summary_cost_usd: float | None


@dataclass(frozen=True)
class SawtoothState:
    """What the sawtooth shows for one policy: plain numbers (tokens, USD, ratios of ``window``). ``error``
    when no replay was possible. Chapter 07."""

    window: int
    trigger_ratio: float
    target_ratio: float
    context_tokens: tuple[int, ...] = ()  # per model call, what was sent
    compactions: tuple[CompactionPoint, ...] = ()
    summary_calls: int = 0
    summary_cost_usd: float = 0.0
    cost_usd: float | None = None  # every ledger row, the summary calls included
    hit_rate: float = 0.0
    rewrites: int = 0
    overflows: int = 0
    error: str = ""

    @property
    def calls(self) -> int:
        """Model calls replayed."""
        return len(self.context_tokens)

    @property
    def max_context(self) -> int:
        """The largest context sent (tokens)."""
        return max(self.context_tokens, default=0)

    @property
    def compaction_calls(self) -> tuple[int, ...]:
        """The calls that compacted, in order."""
        return tuple(c.call for c in self.compactions)


def sawtooth(result: ReplayResult, window: int, trigger_ratio: float, target_ratio: float) -> SawtoothState:
    """The sawtooth of one compaction replay: context per call, each compaction and its summary call. Chapter 07.

    ``sawtooth(policy_replay(sample, 30_000), 30_000, 0.8, 0.5).compaction_calls`` → (31, 32)."""
    summaries = {r.call: r for r in summary_rows(result)}  # call -> its summary call's row (one at most)
    notes = {rec.call.index: rec.notes for rec in result.records}
    points = []
    for e in result.new_entries:
        if e.kind != "compaction":
            continue
        call = compaction_call(e.id)
        row = summaries.get(call)
        target = e.data.get("target")  # the effective target (tokens), raised to the floor when that is higher
        points.append(CompactionPoint(call, e.data["tokens_before"], e.data["tokens_after"], target,
                                      len(e.data["sources"]), target is not None and e.data["tokens_after"] > target,
                                      any("floor was over the budget" in n for n in notes.get(call, ())),
                                      row.cost_usd if row else None))
    t = result.ledger.totals()
    rows = summary_rows(result)
    return SawtoothState(window, two_decimals(trigger_ratio), two_decimals(target_ratio),
                         tuple(rec.context_tokens for rec in result.records), tuple(points), len(rows),
                         sum(r.cost_usd or 0.0 for r in rows), t.cost_usd, t.hit_rate, len(prefix_rewrites(result)),
                         sum(1 for rec in result.records if rec.overflow))


SAWTOOTH_COLUMNS = ("call", "before", "after", "aimed at", "messages in summary", "note", "summary call")


def landed_far_below(c: Any) -> bool:
    """Whether a compaction ended under half the tokens it aimed at (``tokens_after`` < ``target_tokens`` / 2):
    units are kept whole, newest first, so the next older unit would have passed the target. Chapter 07."""
    return c.target_tokens is not None and c.tokens_after < c.target_tokens / 2


def sawtooth_rows(state: SawtoothState) -> list[tuple[Any, ...]]:
    """One line of :data:`SAWTOOTH_COLUMNS` per compaction. Its note says why a compaction landed where it did:
    the target raised to the floor, results pruned first, above the target, or under half of it ("next unit too
    big for target": units are kept whole, newest first, and the next older one would have passed the target; on
    the sample at 30,000, call 32 aims at 15,000 and lands at 2,772). Chapter 07."""
    out = []
    for c in state.compactions:
        raised = c.target_tokens is not None and c.target_tokens > state.target_ratio * state.window
        far_below = landed_far_below(c)
        note = ", ".join([w for w, on in (("target raised to the floor", raised), ("results pruned first", c.shrunk),
                                           ("above target", c.above_target),
                                           ("next unit too big for target", far_below)) if on])
        cost = "—" if c.summary_cost_usd is None else f"${c.summary_cost_usd:,.4f}"
        aimed = "—" if c.target_tokens is None else c.target_tokens
        out.append((c.call, c.tokens_before, c.tokens_after, aimed, c.sources, note, cost))
    return out


STATE_COLUMNS = ("trigger", "target", "compactions", "at calls", "largest context", "prefix rewrites",
                 "summary calls", "cost", "hit rate")


def state_row(s: SawtoothState) -> tuple[Any, ...]:
    """One line of :data:`STATE_COLUMNS` for a policy (an error keeps the policy and the reason). Chapter 07."""
    if s.error:
        return (f"{s.trigger_ratio:.0%}", f"{s.target_ratio:.0%}", "—", s.error[:50], *("—",) * 5)
    cost, summaries = ("unpriced", "unpriced") if s.cost_usd is None else (f"${s.cost_usd:,.4f}",
                                                                          f"${s.summary_cost_usd:,.4f}")
    return (f"{s.trigger_ratio:.0%}", f"{s.target_ratio:.0%}", len(s.compactions),
            ", ".join(map(str, s.compaction_calls)) or "—", s.max_context, s.rewrites, summaries, cost,
            f"{100 * s.hit_rate:.1f}%")


def sawtooth_summary(state: SawtoothState) -> str:
    """One line: the policy, compactions, peak, rewrites, and the cost with the summary calls' share (an
    error's text is passed through :func:`~ctxlab.base.safe_text.shown`). Chapter 07."""
    if state.error:
        return f"trigger {state.trigger_ratio:.0%}, target {state.target_ratio:.0%}: {shown(state.error)}"
    cost = "unpriced" if state.cost_usd is None else f"${state.cost_usd:,.4f}"
    summaries = "" if state.cost_usd is None else f" ${state.summary_cost_usd:,.4f}"  # no $0.0000 beside unpriced
    return (f"window {state.window:,}, trigger {state.trigger_ratio:.0%} ({state.trigger_ratio * state.window:,.0f}), "
            f"target {state.target_ratio:.0%} ({state.target_ratio * state.window:,.0f}): "
            f"{_n(len(state.compactions), 'compaction')} "
            f"(calls {', '.join(map(str, state.compaction_calls)) or '—'}); "
            f"largest context {state.max_context:,} tokens; {_n(state.rewrites, 'prefix rewrite')}; cost {cost}, of "
            f"which {_n(state.summary_calls, 'summary call')}{summaries}; hit rate "
            f"{100 * state.hit_rate:.1f}%")


def _n(count: int, noun: str) -> str:
    """``_n(1, "compaction")`` → ``"1 compaction"``; ``_n(2, ...)`` → ``"2 compactions"``."""
    return f"{count} {noun}{'s' * (count != 1)}"
