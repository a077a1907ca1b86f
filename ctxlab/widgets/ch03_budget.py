"""Chapter 03: interactions (units) and the budget — what a context keeps, drops, and why.

What it holds:

* :func:`unit_sizes` / :func:`granularity_rows` / :func:`granularity_figure` — the same conversation
  cut into units at ``round`` and at ``turn`` granularity: how many units, how big;
* :func:`kept_under` — what each granularity keeps under one budget (or why it cannot build);
* :func:`call_and_result` — the first tool call and its result in a message list (for making orphans);
* :class:`BudgetWidget` — one choice, the token budget (a slider), under a profile picked in a
  dropdown: the token bar (tools / system / head / kept / free) and one square per unit
  (kept, pinned, dropped).

Simplified on purpose: one :class:`~ctxlab.tokens.MessageMeter` per profile is kept for the life of
the widget, so moving the slider re-counts nothing (counts are cached per message) and, the meter
being incremental, regroups nothing either: a move only walks the units again (``incremental.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ctxlab.context import BudgetPolicy, Context, build_context
from ctxlab.base.errors import BudgetError, CtxlabError
from ctxlab.interactions import Granularity, group_units
from ctxlab.messages import Conversation, Message
from ctxlab.tables.profiles import ModelProfile, profile_for
from ctxlab.base.safe_text import safe_text, shown
from ctxlab.tokens import MessageMeter
from ctxlab.widgets._plots import COLOURS, figure, html_bar, html_units

SIZE_BINS = (100, 1_000, 10_000, 50_000)  # unit-size bin edges in tokens: <100, 100-1k, 1k-10k, 10k-50k, >=50k


def sent_messages(conversation: Conversation) -> list[Message]:
    """The messages a context is built from (meta lines are never sent)."""
    return [m for m in conversation.messages if m.origin != "meta"]


def unit_sizes(conversation: Conversation, granularity: Granularity, meter: MessageMeter) -> list[int]:
    """Tokens of each unit, oldest first (every message counted with its thinking)."""
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
    """Units of one granularity: count and size distribution in tokens; ``bins`` counts units per size bin."""

    granularity: str
    units: int
    median: int
    p90: int
    largest: int
    total: int
    bins: tuple[int, ...] = field(default=())

    @property
    def largest_share(self) -> float:
        return self.largest / self.total if self.total else 0.0


def bin_labels(edges: Sequence[int] = SIZE_BINS) -> list[str]:
    def k(n: int) -> str:
        return f"{n // 1000}k" if n >= 1000 else str(n)
    labels = [f"< {k(edges[0])}"] + [f"{k(a)}–{k(b)}" for a, b in zip(edges, edges[1:])] + [f"≥ {k(edges[-1])}"]
    return labels


def granularity_stats(conversation: Conversation, meter: MessageMeter,
                      granularities: Sequence[Granularity] = ("round", "turn")) -> list[GranularityStats]:
    """Unit count and size distribution per granularity."""
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
    """Rows for a text table: units, median / p90 / largest unit in tokens, then units per size bin."""
    rows = []
    for s in stats:
        row: dict[str, Any] = {"granularity": s.granularity, "units": s.units, "median": s.median, "p90": s.p90,
                               "largest": s.largest, "largest share": f"{100 * s.largest_share:.0f}%"}
        row.update({label: n for label, n in zip(bin_labels(), s.bins)})
        rows.append(row)
    return rows


def granularity_figure(stats: Sequence[GranularityStats]):  # -> plotly Figure
    """Grouped bars: how many units fall in each size bin, per granularity."""
    import plotly.graph_objects as go

    fig = figure("Unit sizes by granularity", xaxis_title="unit size (tokens)", yaxis_title="units",
                 barmode="group", legend=dict(orientation="h", y=-0.25))
    for s, colour in zip(stats, (COLOURS["kept"], COLOURS["system"])):
        fig.add_trace(go.Bar(x=bin_labels(), y=list(s.bins), name=s.granularity, marker_color=colour))
    return fig


@dataclass(frozen=True)
class KeptUnder:
    """What one granularity keeps under one budget; ``error`` says why no context could be built."""

    granularity: str
    budget: int
    units_kept: int
    units_dropped: int
    messages_kept: int
    tokens: int
    error: str = ""


def kept_under(conversation: Conversation, budget: int, profile: ModelProfile, meter: MessageMeter,
               granularities: Sequence[Granularity] = ("round", "turn")) -> list[KeptUnder]:
    """Build the context at each granularity under ``budget``; a BudgetError becomes ``error``."""
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
    and the pinned ones. Read from the :class:`~ctxlab.base.errors.BudgetError` that smaller budgets raise."""
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

    A conversation with no tool call (a plain chat, a ReAct agent whose actions are text) has no pair
    to break: ``call_and_result([user("hi", "u1"), assistant("hello", "a1")])`` → ``None``.
    """
    for caller in messages:
        if caller.role == "assistant" and caller.tool_calls:
            result = next((m for m in messages if m.role == "tool" and m.tool_call_id in caller.call_ids), None)
            if result is not None:
                return caller, result
    return None


# ---- the budget widget ------------------------------------------------------------------------------

@dataclass(frozen=True)
class BudgetState:
    """What the budget widget shows: the breakdown sums to ``budget`` when a context could be built."""

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
        return sum(v for k, v in self.breakdown.items() if k != "free")


def default_profiles(conversation: Conversation) -> dict[str, ModelProfile]:
    """The transcript's own model (or Claude when it names none) and gpt-4o, for the profile dropdown."""
    own = profile_for(conversation.model, conversation.provider)
    if own.name in ("generic", ""):
        own = profile_for("claude-sonnet-4-5")
    other = profile_for("gpt-4o") if own.provider != "openai" else profile_for("claude-sonnet-4-5")
    return {own.name: own, other.name: other}


class BudgetWidget:
    """Move the budget; see which units stay. Controls: ``budget`` (IntSlider, tokens), ``profile`` (Dropdown).

    ``w = BudgetWidget(conv); w.budget.value = 20_000; w.state.kept_units`` → the units kept under
    20,000 tokens. The profile decides the window (the slider's end), the counter and the overheads.
    """

    def __init__(self, conversation: Conversation, profiles: Mapping[str, ModelProfile] | None = None,
                 budget: int | None = None, step: int = 500) -> None:
        import ipywidgets as W

        self.conversation = conversation
        self.profiles = dict(profiles or default_profiles(conversation))
        self.step = step
        self._meters: dict[str, MessageMeter] = {}  # profile name -> its meter (counts cached per message)
        self._switching = False
        first = next(iter(self.profiles))
        self.profile = W.Dropdown(options=[(safe_text(n), n) for n in self.profiles], value=first,  # names: the file's model
                                  description="profile")
        lo, hi = self.bounds(first)
        self.budget = W.IntSlider(value=min(max(budget or hi, lo), hi), min=lo, max=hi, step=step,
                                  description="budget", continuous_update=False, readout_format=",",
                                  layout=W.Layout(width="95%"), style={"description_width": "initial"})
        self.controls = W.VBox([self.profile, self.budget])
        self.label = W.HTML()
        self.bar = W.HTML()
        self.units = W.HTML()
        self.widget = W.VBox([self.controls, self.label, self.bar, self.units])
        self.state = self.compute(self.budget.value, first)
        self.budget.observe(self._on_budget, names="value")
        self.profile.observe(self._on_profile, names="value")
        self._render()

    def meter(self, name: str) -> MessageMeter:
        if name not in self._meters:  # incremental: the slider rebuilds the same history, reusing its units
            self._meters[name] = MessageMeter(self.profiles[name], incremental=True)
        return self._meters[name]

    def bounds(self, name: str) -> tuple[int, int]:
        """The slider's range under a profile: from a little below what must be kept to the window
        (or to everything, when everything fits in less)."""
        profile, meter = self.profiles[name], self.meter(name)
        fixed = meter.tools(self.conversation.tools) + meter.system(self.conversation.system) \
            + (self.conversation.inferred_head_tokens or 0) + profile.per_request_tokens
        everything = fixed + sum(unit_sizes(self.conversation, "round", meter))
        hi = min(profile.context_window, math.ceil(everything * 1.05 / self.step) * self.step)
        needed = minimum_budget(self.conversation, profile, meter)
        lo = max(self.step, (int(needed * 0.9) // self.step) * self.step)
        return lo, max(hi, lo + self.step)

    def spread(self, fractions: Sequence[float] = (0.1, 0.5, 0.9)) -> list[int]:
        """Budgets at ``fractions`` of the way along the slider's range, on its step, distinct, smallest first.

        What a cell sets the slider to: fixed numbers would be clamped to the range of another
        transcript's slider and print the same row twice. For a slider from 1,000 to 61,000 (step
        500): ``[7_000, 31_000, 55_000]``.
        """
        lo, hi, step = self.budget.min, self.budget.max, self.budget.step
        return sorted({min(hi, lo + round(f * (hi - lo) / step) * step) for f in fractions})

    def context(self, budget: int, name: str) -> Context:
        return build_context(self.conversation, BudgetPolicy(budget_tokens=budget), profile=self.profiles[name],
                             meter=self.meter(name))

    def compute(self, budget: int, name: str) -> BudgetState:
        """The context under ``budget`` tokens and profile ``name``; an impossible budget is reported, not raised."""
        try:
            ctx = self.context(budget, name)
        except CtxlabError as err:
            return BudgetState(name, budget, 0, 0, 0, 0, 0, {"tools": 0, "system": 0, "head": 0, "kept": 0, "free": budget},
                               (), str(err), getattr(err, "needed", 0))
        decisions = tuple(r.decision for r in ctx.report)
        return BudgetState(name, budget, len(ctx.report), decisions.count("kept"), decisions.count("pinned"),
                           decisions.count("dropped"), len(ctx.messages), ctx.breakdown(), decisions)

    def _on_budget(self, change: dict[str, Any]) -> None:
        if self._switching:
            return  # a profile change moves the slider; it recomputes once itself
        self.state = self.compute(change["new"], self.profile.value)
        self._render()

    def _on_profile(self, change: dict[str, Any]) -> None:
        lo, hi = self.bounds(change["new"])
        self._switching = True
        try:  # widen first, then move the value, then narrow: the slider never clamps a value twice
            self.budget.min, self.budget.max = min(lo, self.budget.min), max(hi, self.budget.max)
            self.budget.value = min(max(self.budget.value, lo), hi)
            self.budget.min, self.budget.max = lo, hi
        finally:
            self._switching = False
        self.state = self.compute(self.budget.value, change["new"])
        self._render()

    def _render(self) -> None:
        s = self.state
        if s.error:
            self.label.value = (f"<span style='color:#c62828'><b>no context under {s.budget:,} tokens:</b> "
                                f"{shown(s.error, html=True)}</span>")
        else:
            self.label.value = (f"<b>{shown(s.profile, html=True)}</b>, budget {s.budget:,}: kept <b>{s.kept_units + s.pinned_units:,}</b> of "
                                f"{s.units:,} units ({s.kept_messages:,} messages), dropped <b>{s.dropped_units:,}</b>")
        b = s.breakdown
        self.bar.value = html_bar([("tools", b["tools"], COLOURS["tools"]), ("system", b["system"], COLOURS["system"]),
                                   ("head", b["head"], COLOURS["head"]), ("kept", b["kept"], COLOURS["kept"]),
                                   ("free", b["free"], COLOURS["free"])], total=s.budget)
        self.units.value = html_units(s.decisions)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = f"BudgetWidget(profile={self.profile.value!r}, budget={self.budget.value:,})"
        return bundle


def state_rows(state: BudgetState) -> list[tuple[str, str]]:
    """(what, value) rows of a budget state, for a text table."""
    rows = [("profile", state.profile), ("budget", f"{state.budget:,}")]
    if state.error:
        return rows + [("error", state.error)]
    rows += [("units", f"{state.units:,}"), ("kept", f"{state.kept_units:,}"), ("pinned", f"{state.pinned_units:,}"),
             ("dropped", f"{state.dropped_units:,}"), ("messages kept", f"{state.kept_messages:,}")]
    rows += [(f"bar: {k}", f"{v:,}") for k, v in state.breakdown.items()]
    return rows


STATE_COLUMNS = ("profile", "budget", "kept", "pinned", "dropped", "messages", "tools", "system", "head", "kept tokens",
                 "free", "note")


def state_row(state: BudgetState) -> tuple[Any, ...]:
    """One line per widget state, in :data:`STATE_COLUMNS` order (an error leaves the counts at 0)."""
    b = state.breakdown
    note = "" if not state.error else (f"too small: needs {state.needed:,}" if state.needed else "no context")
    return (state.profile, state.budget, state.kept_units, state.pinned_units, state.dropped_units,
            state.kept_messages, b["tools"], b["system"], b["head"], b["kept"], b["free"], note)
