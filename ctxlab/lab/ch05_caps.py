"""Chapter 05's teaching foil: a cap on tool results that depends on the history, and what it does to the cache.

Unlike :class:`~ctxlab.pruning.ArrivalCap` (a fixed limit per tool, applied once when a result
arrives), :class:`RecomputedCapStrategy` prunes every large result to a share of the room the rest of
the history leaves, recomputed at every call (or, with ``recompute=False``, fixed when the result
first appears). :func:`cap_comparison` replays it beside ``pruned`` and a run with no cap;
:func:`rerendered_calls` finds the calls whose request shows an earlier message with different bytes,
:func:`diff_at` where one call's request parts from the one before, and :func:`cap_notes` the cap
applied at each call. The figure over these replays is :func:`ctxlab.widgets.ch05_pruning.cap_figure`.

Simplified on purpose: :class:`RecomputedCapStrategy` is a teaching foil, not a recommendation — the
"room left" it divides counts every message except tool results, so it is cheap to compute and
shrinks at every call, which is exactly what breaks the cache.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from ctxlab.base.errors import CtxlabError
from ctxlab.context import BudgetPolicy, build_context
from ctxlab.fast import FAST
from ctxlab.lab.ch05_pruning import o200k_counter
from ctxlab.messages import Conversation, Message
from ctxlab.pruning import ArrivalCap, prune_message, text_tokens
from ctxlab.pruning_strategy import PrunedStrategy
from ctxlab.cache import PrefixDiff, prefix_diff
from ctxlab.replay import CallRecord, ReplayResult, replay
from ctxlab.strategies import BudgetedStrategy, Call, Decision, Strategy
from ctxlab.tables.profiles import ModelProfile
from ctxlab.tokens import MessageMeter, TokenCounter, infer_static_head


@dataclass
class RecomputedCapStrategy:
    """Prune every tool result to ``share`` of the room the rest of the history leaves — recomputed each call.

    The room = the budget minus tools, system prompt, static head, per-request overhead and every
    message that is not a tool result; the cap is ``max(floor_tokens, share x room)``. As the history
    grows the room shrinks, so the same result is cut a little shorter at every call: its bytes change
    and the prefix cache breaks there. ``recompute=False`` applies the same rule once, when the result
    first appears, and keeps that cut (what :class:`~ctxlab.pruning.ArrivalCap` does with a fixed
    limit). ``replay(conv, RecomputedCapStrategy(share=0.25), window=60_000)``. Chapter 05.
    """

    share: float = 0.25
    floor_tokens: int = 500
    recompute: bool = True
    policy: BudgetPolicy = field(default_factory=BudgetPolicy)
    counter: TokenCounter = field(default_factory=o200k_counter)  # fixed, like ArrivalCap's
    name: str = ""
    caps: list[int] = field(default_factory=list, repr=False)  # the cap at each call, in call order
    # message id -> (recorded, shown): with recompute=False, the cut made when the result first appeared
    _fixed: dict[str, tuple[Message, Message]] = field(default_factory=dict, repr=False)
    _sizes: dict[int, tuple[Message, int]] = field(default_factory=dict, repr=False)  # id(msg) -> (msg, text tokens)
    # (id(msg), cap) -> (msg, shown): the previous call's cuts, reused when the cap did not move (at the floor)
    _cuts: dict[tuple[int, int], tuple[Message, Message]] = field(default_factory=dict, repr=False)
    _next_cuts: dict[tuple[int, int], tuple[Message, Message]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not 0 < self.share <= 1:
            raise ValueError(f"share is a fraction of the room left, in (0, 1]; got {self.share}")
        self.name = self.name or ("recomputed cap" if self.recompute else "same rule, fixed at arrival")

    def _size(self, msg: Message) -> int:
        hit = self._sizes.get(id(msg))
        if hit is None or hit[0] is not msg:
            hit = self._sizes[id(msg)] = (msg, text_tokens(msg, self.counter))
        return hit[1]

    def cap_tokens(self, history: Conversation, profile: ModelProfile, meter: MessageMeter) -> int:
        """The cap for this call: ``max(floor_tokens, share x room left)``, in tokens."""
        fixed = meter.tools(history.tools) + meter.system(history.system) + (history.inferred_head_tokens or 0) \
            + profile.per_request_tokens
        rest = sum(meter.message(m) for m in history.messages if m.role != "tool" and m.origin != "meta")
        return max(self.floor_tokens, int(self.share * (self.policy.budget_for(profile) - fixed - rest)))

    def _shown(self, msg: Message, cap: int) -> Message:
        if self.recompute:
            if self._size(msg) <= cap:
                return msg
            hit = self._cuts.get((id(msg), cap))
            if hit is None or hit[0] is not msg:
                hit = (msg, prune_message(msg, cap, self.counter))
            self._next_cuts[(id(msg), cap)] = hit
            return hit[1]
        hit = self._fixed.get(msg.id)
        if hit is None or hit[0] is not msg:
            hit = self._fixed[msg.id] = (msg, msg if self._size(msg) <= cap else prune_message(msg, cap, self.counter))
        return hit[1]

    def decide(self, history: Conversation, call: Call, profile: ModelProfile, meter: MessageMeter) -> Decision:
        """The budgeted context of this call with every tool result in reach cut to this call's cap."""
        if history.inferred_head_tokens is None:  # infer from the recorded messages, not the pruned ones
            head = infer_static_head(history, meter)
            history = replace(history, inferred_head_tokens=head.tokens if head else 0)
        cap = self.cap_tokens(history, profile, meter)
        self.caps.append(cap)
        # Newest first, and only as far back as the budget could reach: the backward walk of build_context
        # stops at the first unit that does not fit, so a result older than that is dropped whatever its
        # form. Counting without thinking gives a lower bound of what build_context counts (it is safe).
        # A pinned first task can be kept from beyond that point: then every result is cut.
        items, used = list(history.items), 0
        budget = self.policy.budget_for(profile) if not self.policy.pin_first_task else float("inf")
        for k in range(len(items) - 1, -1, -1):
            it = items[k]
            if not isinstance(it, Message) or it.origin == "meta":
                continue
            if used > budget:
                break
            if it.role == "tool":
                it = items[k] = self._shown(it, cap)
            used += meter.message(it, include_thinking=False)
        self._cuts, self._next_cuts = self._next_cuts, {}
        ctx = build_context(replace(history, items=tuple(items)), self.policy, profile=profile, meter=meter)
        return Decision(ctx, notes=(f"tool results capped at {cap:,} tokens",))


def rerendered_calls(result: ReplayResult) -> list[int]:
    """Calls whose request shows a message the previous call of the thread also sent, with other bytes.

    0 for a strategy whose renderings are fixed; every such call loses the cache from that message on. Chapter 05.
    """
    out, previous = [], {}  # thread -> {message id: digest of its blocks}
    for rec in result.records:
        blocks: dict[str, list[str]] = {}
        for b in rec.request.blocks:
            if b.message_id is not None:
                blocks.setdefault(b.message_id, []).append(b.digest)
        digests = {k: "".join(v) for k, v in blocks.items()}
        before = previous.get(rec.call.thread, {})
        if any(before.get(k, d) != d for k, d in digests.items()):
            out.append(rec.call.index)
        previous[rec.call.thread] = digests
    return out


# Chapter 05: the columns of :meth:`CapRow.as_row`.
CAP_COLUMNS = ("strategy", "calls", "prompt", "read", "written", "uncached", "hit rate", "cost", "re-rendered calls")


@dataclass(frozen=True)
class CapRow:
    """One replay's totals (tokens; cost in USD, None if unpriced) and how many calls re-rendered a message.
    Chapter 05."""

    strategy: str
    calls: int
    total_input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    uncached_input_tokens: int
    hit_rate: float
    cost_usd: float | None
    rerendered: int
    error: str = ""

    def as_row(self) -> tuple[Any, ...]:
        """One line of :data:`CAP_COLUMNS` (an error in place of the re-rendered count)."""
        cost = "—" if self.cost_usd is None else f"${self.cost_usd:,.4f}"
        return (self.strategy, self.calls, self.total_input_tokens, self.cache_read_tokens, self.cache_write_tokens,
                self.uncached_input_tokens, f"{100 * self.hit_rate:.1f}%", cost,
                self.error[:60] if self.error else self.rerendered)


def cap_strategies(share: float = 0.25, cap_tokens: int = 4_000, baseline: bool = True) -> list[Strategy]:
    """The caps compared: no cap at all (``budgeted``, with ``baseline``), the library's fixed per-tool cap,
    the share rule fixed at arrival, and the share rule recomputed at every call (fresh objects: strategies
    hold state). Chapter 05."""
    return [*([BudgetedStrategy(name="no cap (budgeted)")] if baseline else []),
            PrunedStrategy(cap=ArrivalCap(default_tokens=cap_tokens), name=f"arrival cap ({cap_tokens:,})"),
            RecomputedCapStrategy(share=share, recompute=False),
            RecomputedCapStrategy(share=share)]


def cap_comparison(conversation: Conversation, window: int = 60_000, share: float = 0.25, cap_tokens: int = 4_000,
                   provider: str | None = None, baseline: bool = True) -> tuple[list[CapRow], dict[str, ReplayResult]]:
    """Replay :func:`cap_strategies` at ``window``; one :class:`CapRow` each, and the replays by name.

    The sample at 60,000 (Anthropic's rules): the recomputed cap re-renders the CI log at every call
    after it arrives and its hit rate falls far below both fixed caps. Chapter 05.
    """
    rows, results = [], {}
    for strategy in cap_strategies(share, cap_tokens, baseline):
        try:
            result = replay(conversation, strategy, window=window, provider=provider, speedup=FAST)
        except CtxlabError as err:
            rows.append(CapRow(strategy.name, 0, 0, 0, 0, 0, 0.0, None, 0, " ".join(str(err).split())))
            continue
        t = result.ledger.totals()
        results[strategy.name] = result
        rows.append(CapRow(strategy.name, t.calls, t.total_input_tokens, t.cache_read_tokens, t.cache_write_tokens,
                           t.uncached_input_tokens, t.hit_rate, t.cost_usd, len(rerendered_calls(result))))
    return rows, results


def diff_at(result: ReplayResult, call: int, thread: str | None = None
            ) -> tuple[PrefixDiff, CallRecord, CallRecord]:
    """Call ``call`` of ``thread`` (default: the first call's thread) against the call before it:
    ``(PrefixDiff, its CallRecord, the previous CallRecord)``. Raises ValueError for the first call. Chapter 05."""
    thread = thread or result.records[0].call.thread
    mine = [r for r in result.records if r.call.thread == thread]
    k = next(i for i, r in enumerate(mine) if r.call.index == call)
    if k == 0:
        raise ValueError(f"call {call} is the first of thread {thread!r}: nothing to compare with")
    return prefix_diff(mine[k - 1].request, mine[k].request), mine[k], mine[k - 1]


def cap_notes(result: ReplayResult) -> dict[int, int]:
    """call -> the cap :class:`RecomputedCapStrategy` applied at it (read from the replay's notes). Chapter 05."""
    out = {}
    for rec in result.records:
        for note in rec.notes:
            found = re.match(r"tool results capped at ([\d,]+) tokens", note)
            if found:
                out[rec.call.index] = int(found.group(1).replace(",", ""))
    return out


__all__ = ["RecomputedCapStrategy", "rerendered_calls", "CAP_COLUMNS", "CapRow", "cap_strategies", "cap_comparison",
           "diff_at", "cap_notes"]
