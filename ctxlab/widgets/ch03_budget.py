"""Chapter 03's widget and figure: the token budget — what a context keeps, drops, and why.

What it holds (the measurements are in :mod:`ctxlab.lab.ch03_budget`):

* :func:`granularity_figure` — how many units fall in each size bin, at ``round`` and ``turn`` granularity;
* :class:`BudgetWidget` — one choice, the token budget (a slider), under a profile picked in a
  dropdown: the token bar (tools / system / head / kept / free) and one square per unit
  (kept, pinned, dropped), from :func:`ctxlab.lab.ch03_budget.budget_state`.

Simplified on purpose: one meter per profile (:class:`~ctxlab.fast.incremental.IncrementalMeter`) is
kept for the life of the widget, so moving the slider re-counts nothing (counts are cached per message)
and, the meter being incremental, regroups nothing either: a move only walks the units again.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import plotly.graph_objects as go

from ctxlab.base.safe_text import safe_text, shown
from ctxlab.context import Context
from ctxlab.fast.incremental import IncrementalMeter
from ctxlab.lab.ch03_budget import (
    BudgetState,
    GranularityStats,
    bin_labels,
    budget_bounds,
    budget_context,
    budget_state,
    default_profiles,
    spread_budgets,
)
from ctxlab.messages import Conversation
from ctxlab.tables.profiles import ModelProfile
from ctxlab.widgets._inputs import conversation_of, widened
from ctxlab.widgets._plots import COLOURS, figure, html_bar, html_units

__all__ = ["granularity_figure", "BudgetWidget"]


def granularity_figure(stats: Sequence[GranularityStats]) -> go.Figure:
    """Chapter 03: grouped bars: how many units fall in each size bin, per granularity."""
    fig = figure("Unit sizes by granularity", xaxis_title="unit size (tokens)", yaxis_title="units",
                 barmode="group", legend=dict(orientation="h", y=-0.25))
    for s, colour in zip(stats, (COLOURS["kept"], COLOURS["system"])):
        fig.add_trace(go.Bar(x=bin_labels(), y=list(s.bins), name=s.granularity, marker_color=colour))
    return fig


class BudgetWidget:
    """Chapter 03: move the budget; see which units stay. Controls: ``budget`` (IntSlider, tokens),
    ``profile`` (Dropdown).

    ``w = BudgetWidget(conv); w.budget.value = 20_000; w.state.kept_units`` → the units kept under
    20,000 tokens. The profile decides the window (the slider's end), the counter and the overheads.
    """

    def __init__(self, conversation: Conversation, profiles: Mapping[str, ModelProfile] | None = None,
                 budget: int | None = None, step: int = 500) -> None:
        import ipywidgets as W

        conversation = conversation_of(conversation, "BudgetWidget")
        self.conversation = conversation
        self.profiles = dict(profiles or default_profiles(conversation))
        self.step = step
        self._meters: dict[str, IncrementalMeter] = {}  # profile name -> its meter (counts cached per message)
        self._switching = False
        first = next(iter(self.profiles))
        self.profile = W.Dropdown(options=[(safe_text(n), n) for n in self.profiles], value=first,  # names: the file's model
                                  description="profile")
        lo, hi = self.bounds(first)
        if budget is not None:  # a budget off the slider's range widens it (the slider would clamp it quietly)
            budget, lo, hi = widened("BudgetWidget", "budget", budget, lo, hi)
        self.budget = W.IntSlider(value=hi if budget is None else budget, min=lo, max=hi, step=step,
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

    def meter(self, name: str) -> IncrementalMeter:
        """The meter of profile ``name``, made once (incremental: the slider rebuilds the same history,
        reusing its units). Chapter 03."""
        if name not in self._meters:
            self._meters[name] = IncrementalMeter(self.profiles[name])
        return self._meters[name]

    def bounds(self, name: str) -> tuple[int, int]:
        """The slider's range (tokens) under profile ``name`` (:func:`ctxlab.lab.ch03_budget.budget_bounds`).
        Chapter 03."""
        return budget_bounds(self.conversation, self.profiles[name], self.meter(name), self.step)

    def spread(self, fractions: Sequence[float] = (0.1, 0.5, 0.9)) -> list[int]:
        """Budgets at ``fractions`` of the way along the slider's range, on its step, distinct, smallest first
        (:func:`ctxlab.lab.ch03_budget.spread_budgets`). Chapter 03: for a slider from 1,000 to 61,000
        (step 500): ``[7_000, 31_000, 55_000]``."""
        return spread_budgets(self.budget.min, self.budget.max, self.budget.step, fractions)

    def context(self, budget: int, name: str) -> Context:
        """The context under ``budget`` tokens and profile ``name``; raises
        :class:`~ctxlab.base.errors.BudgetError` when it cannot be built. Chapter 03."""
        return budget_context(self.conversation, budget, self.profiles[name], self.meter(name))

    def compute(self, budget: int, name: str) -> BudgetState:
        """The context under ``budget`` tokens and profile ``name``; an impossible budget is reported, not raised.
        Chapter 03 (:func:`ctxlab.lab.ch03_budget.budget_state`)."""
        return budget_state(self.conversation, budget, name, self.profiles[name], self.meter(name))

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
