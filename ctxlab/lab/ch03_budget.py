"""Chapter 03's measurements: interactions (units) and the budget — what a context keeps, drops, and why.

What it holds:

* :func:`unit_sizes` / :func:`granularity_stats` / :func:`granularity_rows` — the same conversation
  cut into units at ``round`` and at ``turn`` granularity: how many units, how big;
* :func:`kept_under` — what each granularity keeps under one budget (or why not); :func:`minimum_budget`;
* :func:`call_and_result` — the first tool call and its result (for making orphans); :func:`provider_verdicts`;
* :func:`budget_state` — the context under one budget and profile, as the numbers
  :class:`ctxlab.widgets.ch03_budget.BudgetWidget` draws (the token bar, one decision per unit);
  :func:`budget_bounds` and :func:`spread_budgets` — the slider's range and the budgets a cell sets it to;
* :func:`state_rows` / :func:`state_row` — a budget state as text-table rows.

Simplified on purpose: the :class:`~ctxlab.tokens.MessageMeter` is passed in and kept by the caller, so measuring
one conversation under many budgets counts each message once (counts are cached per message); an
:class:`~ctxlab.fast.incremental.IncrementalMeter` (what the widget keeps) regroups nothing: a move walks the units.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

from ctxlab.base.errors import BudgetError, CtxlabError
from ctxlab.bodies import to_anthropic_body, to_openai_body
from ctxlab.context import BudgetPolicy, Context, build_context
from ctxlab.interactions import Granularity, group_units
from ctxlab.lab.ch03_walk import fixed_tokens
from ctxlab.messages import Conversation, Message
from ctxlab.tables.default_model import DEFAULT_MODEL
from ctxlab.tables.profiles import ModelProfile, profile_for
from ctxlab.tokens import MessageMeter
from ctxlab.wire import check_anthropic, check_openai_chat

__all__ = ["SIZE_BINS", "sent_messages", "unit_sizes", "GranularityStats", "bin_labels", "granularity_stats",
           "granularity_rows", "KeptUnder", "kept_under", "minimum_budget", "call_and_result", "provider_verdicts",
           "BudgetState",
           "default_profiles", "budget_bounds", "spread_budgets", "budget_context", "budget_state", "state_rows",
           "STATE_COLUMNS", "state_row"]

# Chapter 03: unit-size bin edges in tokens: <100, 100-1k, 1k-10k, 10k-50k, >=50k
SIZE_BINS = (100, 1_000, 10_000, 50_000)


def sent_messages(conversation: Conversation) -> list[Message]:
    """The messages a context is built from (meta lines are never sent). Chapter 03."""
    return [m for m in conversation.messages if m.origin != "meta"]


def unit_sizes(conversation: Conversation, granularity: Granularity, meter: MessageMeter) -> list[int]:
    """Tokens of each unit, oldest first (every message counted with its thinking). Chapter 03."""
    units = group_units(sent_messages(conversation), granularity)
    return [sum(meter.message(m) for m in u.messages) for u in units]


def _quantile(sorted_values: Sequence[int], q: float) -> int:
    """Nearest-rank quantile: the smallest value with at least ``q`` of the values at or below it."""
    if not sorted_values:
        return 0
    k = max(0, math.ceil(q * len(sorted_values)) - 1)
    return sorted_values[k]


@dataclass(frozen=True)
class GranularityStats:
    """Chapter 03: the units of one granularity: count and size distribution in tokens; ``bins`` counts
    units per size bin (:data:`SIZE_BINS`)."""

    granularity: str
    units: int
    median: int
    p90: int
    largest: int
    total: int
    bins: tuple[int, ...] = field(default=())

    @property
    def largest_share(self) -> float:
        """The largest unit's share (0–1) of all the units' tokens."""
        return self.largest / self.total if self.total else 0.0


def bin_labels(edges: Sequence[int] = SIZE_BINS) -> list[str]:
    """Chapter 03: the size bins as labels: ``bin_labels((100, 1_000))`` → ``["< 100", "100–1k", "≥ 1k"]``."""
    def k(n: int) -> str:
        return f"{n // 1000}k" if n >= 1000 else str(n)
    labels = [f"< {k(edges[0])}"] + [f"{k(a)}–{k(b)}" for a, b in zip(edges, edges[1:])] + [f"≥ {k(edges[-1])}"]
    return labels


def granularity_stats(conversation: Conversation, meter: MessageMeter,
                      granularities: Sequence[Granularity] = ("round", "turn")) -> list[GranularityStats]:
    """Unit count and size distribution (tokens) per granularity. Chapter 03."""
    out = []
    for g in granularities:
        sizes = unit_sizes(conversation, g, meter)
        s = sorted(sizes)
        bins = [0] * (len(SIZE_BINS) + 1)
        for n in sizes:
            bins[sum(n >= e for e in SIZE_BINS)] += 1
        out.append(GranularityStats(g, len(sizes), _quantile(s, 0.5), _quantile(s, 0.9), s[-1] if s else 0,
                                    sum(sizes), tuple(bins)))
    return out


def granularity_rows(stats: Sequence[GranularityStats]) -> list[dict[str, Any]]:
    """Chapter 03's rows for a text table: units, median / p90 / largest unit in tokens, then units per size bin."""
    rows = []
    for s in stats:
        row: dict[str, Any] = {"granularity": s.granularity, "units": s.units, "median": s.median, "p90": s.p90,
                               "largest": s.largest, "largest share": f"{100 * s.largest_share:.0f}%"}
        row.update({label: n for label, n in zip(bin_labels(), s.bins)})
        rows.append(row)
    return rows


@dataclass(frozen=True)
class KeptUnder:
    """Chapter 03: what one granularity keeps under one budget (tokens); ``error`` says why no context
    could be built."""

    granularity: str
    budget: int
    units_kept: int
    units_dropped: int
    messages_kept: int
    tokens: int
    error: str = ""


def kept_under(conversation: Conversation, budget: int, profile: ModelProfile, meter: MessageMeter,
               granularities: Sequence[Granularity] = ("round", "turn")) -> list[KeptUnder]:
    """Build the context at each granularity under ``budget`` tokens; a :class:`~ctxlab.base.errors.CtxlabError`
    (a budget too small) becomes ``error`` instead of being raised. Chapter 03."""
    out = []
    for g in granularities:
        try:
            ctx = build_context(conversation, BudgetPolicy(budget_tokens=budget, granularity=g), profile=profile,
                                meter=meter)
        except CtxlabError as err:
            needed = getattr(err, "needed", None)
            why = f"cannot build: needs {needed:,} tokens" if needed else f"cannot build: {err}"
            out.append(KeptUnder(g, budget, 0, 0, 0, 0, why))
            continue
        out.append(KeptUnder(g, budget, len(ctx.kept()), len(ctx.dropped()), len(ctx.messages), ctx.total_tokens))
    return out


def minimum_budget(conversation: Conversation, profile: ModelProfile, meter: MessageMeter,
                   granularity: Granularity = "round") -> int:
    """The smallest budget (tokens) under which a context can be built: the fixed part, the newest unit
    and the pinned ones. Read from the :class:`~ctxlab.base.errors.BudgetError` that smaller budgets raise.
    Chapter 03."""
    budget = 1
    for _ in range(3):  # the fixed part first, then fixed + newest + pinned
        try:
            build_context(conversation, BudgetPolicy(budget_tokens=budget, granularity=granularity),
                          profile=profile, meter=meter)
            return budget
        except BudgetError as err:
            budget = err.needed
    return budget


def call_and_result(messages: Sequence[Message]) -> tuple[Message, Message] | None:
    """The first assistant message that calls a tool and a result answering it; ``None`` when there is none.

    Chapter 03 breaks such a pair to make an orphan. A conversation with no tool call (a plain chat, a
    ReAct agent whose actions are text) has no pair to break:
    ``call_and_result([user("hi", "u1"), assistant("hello", "a1")])`` → ``None``.
    """
    for caller in messages:
        if caller.role == "assistant" and caller.tool_calls:
            result = next((m for m in messages if m.role == "tool" and m.tool_call_id in caller.call_ids), None)
            if result is not None:
                return caller, result
    return None


def provider_verdicts(context: Context, messages: Sequence[Message]) -> dict[str, str]:
    """What each API says of ``context`` sent with ``messages`` instead: ``"accepted"``, or the rules the oracle
    (``ctxlab.wire``) finds broken, counted by rule, and one with its path and source: the first about a pair
    (``*orphan*``, ``*answered*``) if any, else the first. ``{"anthropic": "6 broken (tool_result_first ×3,
    tool_result_orphan ×3); the pair: tool_result_orphan at messages[0].content[1]: ...", ...}``. Chapter 03."""
    sent = replace(context, messages=tuple(messages))
    found = {"anthropic": check_anthropic(to_anthropic_body(sent)), "openai": check_openai_chat(to_openai_body(sent))}
    out = {}
    for provider, broken in found.items():
        pair = [b for b in broken if "orphan" in b.rule or "answered" in b.rule]
        b = (pair or broken or [None])[0]
        out[provider] = "accepted" if b is None else (
            f"{len(broken)} broken ({', '.join(f'{r} ×{k}' for r, k in Counter(x.rule for x in broken).items())}); "
            f"{'the pair' if pair else 'first'}: {b.rule} at {b.path}: {b.detail}. Source: {b.source.page}"
            + (f": “{b.source.quote}”" if b.source.quote else ""))
    return out


# ---- the budget, as the widget shows it ------------------------------------------------------------

@dataclass(frozen=True)
class BudgetState:
    """Chapter 03: a context under one budget and profile, in tokens and units; the breakdown sums to
    ``budget`` when a context could be built."""

    profile: str
    budget: int
    units: int
    kept_units: int
    pinned_units: int
    dropped_units: int
    kept_messages: int
    breakdown: dict[str, int]
    decisions: tuple[str, ...]  # per unit, oldest first: kept / pinned / dropped
    error: str = ""
    needed: int = 0  # with an error: the smallest budget that would work (tokens), when known

    @property
    def total(self) -> int:
        """Tokens of everything but the free room."""
        return sum(v for k, v in self.breakdown.items() if k != "free")


def default_profiles(conversation: Conversation) -> dict[str, ModelProfile]:
    """Chapter 03: the transcript's own model (or Claude when it names none) and gpt-4o, for the profile dropdown."""
    own = profile_for(conversation.model, conversation.provider)
    own = profile_for(DEFAULT_MODEL) if own.name in ("generic", "") else own
    other = profile_for("gpt-4o") if own.provider != "openai" else profile_for(DEFAULT_MODEL)
    return {own.name: own, other.name: other}


def budget_bounds(conversation: Conversation, profile: ModelProfile, meter: MessageMeter,
                  step: int = 500) -> tuple[int, int]:
    """The budget slider's range (tokens) under a profile: from a little below what must be kept to the
    window (or to everything, when everything fits in less), on ``step``; the fixed part counts the inferred
    static head as build_context does (:func:`ctxlab.lab.ch03_walk.fixed_tokens`). Chapter 03."""
    everything = fixed_tokens(conversation, profile, meter) + sum(unit_sizes(conversation, "round", meter))
    hi = min(profile.context_window, math.ceil(everything * 1.05 / step) * step)
    needed = minimum_budget(conversation, profile, meter)
    lo = max(step, (int(needed * 0.9) // step) * step)
    return lo, max(hi, lo + step)


def spread_budgets(lo: int, hi: int, step: int, fractions: Sequence[float] = (0.1, 0.5, 0.9)) -> list[int]:
    """Budgets at ``fractions`` of the way from ``lo`` to ``hi``, on ``step``, distinct, smallest first.

    Chapter 03: what a cell sets the slider to; fixed numbers would be clamped to the range of another
    transcript's slider and print the same row twice. ``spread_budgets(1_000, 61_000, 500)`` →
    ``[7_000, 31_000, 55_000]``.
    """
    return sorted({min(hi, lo + round(f * (hi - lo) / step) * step) for f in fractions})


def budget_context(conversation: Conversation, budget: int, profile: ModelProfile, meter: MessageMeter) -> Context:
    """The context under ``budget`` tokens (round granularity). Chapter 03.

    Raises :class:`~ctxlab.base.errors.BudgetError` when the budget cannot hold what must be kept.
    """
    return build_context(conversation, BudgetPolicy(budget_tokens=budget), profile=profile, meter=meter)


def budget_state(conversation: Conversation, budget: int, name: str, profile: ModelProfile,
                 meter: MessageMeter) -> BudgetState:
    """The context under ``budget`` tokens and ``profile`` (shown as ``name``), as a :class:`BudgetState`.

    Chapter 03. An impossible budget is reported in ``error`` (and ``needed``), not raised.
    """
    try:
        ctx = budget_context(conversation, budget, profile, meter)
    except CtxlabError as err:
        return BudgetState(name, budget, 0, 0, 0, 0, 0, {"tools": 0, "system": 0, "head": 0, "kept": 0, "free": budget},
                           (), str(err), getattr(err, "needed", 0))
    decisions = tuple(r.decision for r in ctx.report)
    return BudgetState(name, budget, len(ctx.report), decisions.count("kept"), decisions.count("pinned"),
                       decisions.count("dropped"), len(ctx.messages), ctx.breakdown(), decisions)


def state_rows(state: BudgetState) -> list[tuple[str, str]]:
    """Chapter 03: (what, value) rows of a budget state, for a text table."""
    rows = [("profile", state.profile), ("budget", f"{state.budget:,}")]
    if state.error:
        return rows + [("error", state.error)]
    rows += [("units", f"{state.units:,}"), ("kept", f"{state.kept_units:,}"), ("pinned", f"{state.pinned_units:,}"),
             ("dropped", f"{state.dropped_units:,}"), ("messages kept", f"{state.kept_messages:,}")]
    rows += [(f"bar: {k}", f"{v:,}") for k, v in state.breakdown.items()]
    return rows


# Chapter 03: the columns of state_row
STATE_COLUMNS = ("profile", "budget", "kept", "pinned", "dropped", "messages", "tools", "system", "head", "kept tokens",
                 "free", "note")


def state_row(state: BudgetState) -> tuple[Any, ...]:
    """Chapter 03: one line per budget state, in :data:`STATE_COLUMNS` order (an error leaves the counts at 0)."""
    b = state.breakdown
    note = "" if not state.error else (f"too small: needs {state.needed:,}" if state.needed else "no context")
    return (state.profile, state.budget, state.kept_units, state.pinned_units, state.dropped_units,
            state.kept_messages, b["tools"], b["system"], b["head"], b["kept"], b["free"], note)
