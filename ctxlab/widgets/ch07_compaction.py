"""Chapter 07's widget: the sawtooth of one compaction policy, drawn over :mod:`ctxlab.lab.ch07_compaction`.

What it holds:

* :func:`sawtooth_figure` — context tokens per call, the compactions (before → after), and the window,
  trigger and target as lines, for one :class:`~ctxlab.lab.ch07_compaction.SawtoothState`;
* :class:`SawtoothWidget` — one choice, the compaction policy (trigger and target sliders).

The chapter's measurements (the window, the replays, the policies side by side, the floor, coverage
after two compactions, metering) are plain functions in :mod:`ctxlab.lab.ch07_compaction`,
:mod:`ctxlab.lab.ch07_policies`, :mod:`ctxlab.lab.ch07_floor` and :mod:`ctxlab.lab.ch07_metering`. The
widget keeps every state it showed, keyed by (trigger, target), so going back to a setting is instant; its
replays are the chapters' shared ones (:data:`ctxlab.lab.replays.REPLAYS`: the window search's 80% → 50% replay
opens it). A first visit moves the progress bar under the sliders; on a long transcript (more than 150 model
calls) the widget replays the settings one slider step away in the background after each change.
"""

from __future__ import annotations

import html
import time
from typing import Any

import plotly.graph_objects as go

from ctxlab.base import validate
from ctxlab.base.errors import CtxlabError
from ctxlab.base.safe_text import safe_html
from ctxlab.compaction import CompactionPolicy
from ctxlab.lab.ch07_compaction import (
    SAWTOOTH_COLUMNS,
    SawtoothState,
    policy_replay,
    sawtooth,
    sawtooth_rows,
    sawtooth_summary,
    two_decimals,
)
from ctxlab.lab.replays import REPLAYS
from ctxlab.lab.workbook import text_table
from ctxlab.messages import Conversation
from ctxlab.replay import ReplayResult
from ctxlab.widgets._inputs import conversation_of, ratio_widened
from ctxlab.widgets._plots import COLOURS, error_html, figure, show_in
from ctxlab.widgets._progress import WORKER, Progress, background_wanted


def sawtooth_figure(state: SawtoothState, title: str | None = None) -> go.Figure:
    """Context tokens per call (line), each compaction as a drop from before to after, and the window,
    trigger and target as horizontal lines (tokens). Chapter 07."""
    x = list(range(1, state.calls + 1))
    fig = figure(title or f"Context per call · trigger {state.trigger_ratio:.0%} → target {state.target_ratio:.0%}",
                 height=380, xaxis=dict(title="model call"), yaxis=dict(title="context tokens", rangemode="tozero"),
                 legend=dict(orientation="h", yanchor="top", y=-0.2, x=0), margin=dict(l=60, r=20, t=50, b=90))
    fig.add_trace(go.Scatter(x=x, y=list(state.context_tokens), name="context sent", mode="lines",
                             line=dict(color=COLOURS["kept"], width=2),
                             hovertemplate="call %{x}: %{y:,} tokens<extra></extra>"))
    xs: list[Any] = []
    ys: list[Any] = []
    for c in state.compactions:
        xs += [c.call, c.call, None]
        ys += [c.tokens_before, c.tokens_after, None]
    if state.compactions:
        fig.add_trace(go.Scatter(x=xs, y=ys, name="compaction (before → after)", mode="lines+markers",
                                 line=dict(color=COLOURS["rewrite"], width=2, dash="dot"),
                                 marker=dict(size=7, color=COLOURS["rewrite"]),
                                 hovertemplate="call %{x}: %{y:,} tokens<extra></extra>"))
    for name, level, colour, dash in (("window", state.window, "#333333", "solid"),
                                      ("trigger", state.trigger_ratio * state.window, COLOURS["no_cache"], "dash"),
                                      ("target", state.target_ratio * state.window, COLOURS["system"], "dash")):
        fig.add_trace(go.Scatter(x=[1, max(x, default=1)], y=[level, level], name=f"{name} {level:,.0f}", mode="lines",
                                 line=dict(color=colour, width=1, dash=dash), hoverinfo="skip"))
    return fig


class SawtoothWidget:
    """One choice, the compaction policy: ``trigger`` and ``target`` sliders (ratios of the window). Shows the
    context per call (the sawtooth), the compactions with their summary calls, and the totals.

    ``w = SawtoothWidget(conv, 30_000); w.trigger.value = 0.6; w.state.compaction_calls`` → (31, 32, 59).
    ``compute(trigger, target)`` is the pure part; ``timings`` holds what each first visit cost (seconds).
    ``background``: replay the settings one step away after each change (None: on a transcript of more than 150
    model calls); ``progress`` is the bar under the sliders. Chapter 07.
    """

    def __init__(self, conversation: Conversation, window: int, *, trigger: float = 0.8, target: float = 0.5,
                 background: bool | None = None) -> None:
        import ipywidgets as W

        conversation = conversation_of(conversation, "SawtoothWidget")
        try:
            window = validate.tokens("window", window, allow_none=False)
        except CtxlabError as err:
            raise CtxlabError(f"SawtoothWidget: {err}") from None
        # a ratio off a slider's range widens it (the slider would clamp it quietly)
        trigger, trigger_lo, trigger_hi = ratio_widened("SawtoothWidget", "trigger", trigger, 0.5, 0.95)
        target, target_lo, target_hi = ratio_widened("SawtoothWidget", "target", target, 0.1, 0.9)
        self.conversation = conversation
        self.window = window
        self.cache: dict[tuple, ReplayResult] = {}  # (window, policy, metering) -> replay; policy_rows can share it
        self._states: dict[tuple[float, float], SawtoothState] = {}
        self.timings: dict[tuple[float, float], float] = {}
        style = {"description_width": "initial"}
        self.trigger = W.FloatSlider(value=trigger, min=trigger_lo, max=trigger_hi, step=0.05,
                                     description="trigger (share of window)", readout_format=".0%",
                                     continuous_update=False, style=style, layout=W.Layout(width="48%"))
        self.target = W.FloatSlider(value=target, min=target_lo, max=target_hi, step=0.05,
                                    description="target (share of window)",
                                    readout_format=".0%", continuous_update=False, style=style,
                                    layout=W.Layout(width="48%"))
        self.controls = W.HBox([self.trigger, self.target])
        self.progress = Progress()
        self.label = W.HTML()
        self.plot = W.Output()
        self.table = W.HTML()
        self.widget = W.VBox([self.controls, self.progress.widget, self.label, self.plot, self.table])
        self.background = background_wanted(conversation, background)
        self.state = self.compute(self.trigger.value, self.target.value)
        for control in (self.trigger, self.target):
            control.observe(self._on_change, names="value")
        self._render()
        self._plan()

    def result(self, trigger: float, target: float) -> ReplayResult:
        """The replay for this policy (run once, then kept)."""
        key = (self.window, (two_decimals(trigger), two_decimals(target)), "count")
        if key not in self.cache:
            self.cache[key] = policy_replay(self.conversation, self.window, trigger, target)
        return self.cache[key]

    def held(self, trigger: float, target: float) -> bool:
        """Whether this policy's state or replay is computed: showing it replays nothing. Chapter 07."""
        pair = (two_decimals(trigger), two_decimals(target))
        return pair in self._states or (self.window, pair, "count") in self.cache or REPLAYS.held(
            self.conversation, "compaction", window=self.window, policy=CompactionPolicy(*pair))

    def next_settings(self) -> list[tuple[float, float]]:
        """The (trigger, target) pairs one slider step away from the sliders' (target below trigger). Chapter 07."""
        tr, ta = self.trigger, self.target
        pairs = [(tr.value + d * tr.step, ta.value) for d in (-1, 1) if tr.min <= tr.value + d * tr.step <= tr.max]
        pairs += [(tr.value, ta.value + d * ta.step) for d in (-1, 1) if ta.min <= ta.value + d * ta.step <= ta.max]
        return [(two_decimals(a), two_decimals(b)) for a, b in pairs if two_decimals(b) < two_decimals(a)]

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the background has replayed what it planned (at once without a background); False if
        ``timeout`` seconds passed first. Chapter 07."""
        return WORKER.wait(self, timeout)

    def _plan(self) -> None:
        if self.background:
            WORKER.submit(self, [(f"{a:.0%} → {b:.0%}", lambda a=a, b=b: self.compute(a, b, progress=False))
                                 for a, b in self.next_settings() if not self.held(a, b)], self.progress.background)

    def compute(self, trigger: float, target: float, *, progress: bool = True) -> SawtoothState:
        """The sawtooth for one policy; a target at or above the trigger is reported, not replayed. ``progress``:
        move the bar when it must replay. Chapter 07."""
        key = (two_decimals(trigger), two_decimals(target))
        if key in self._states:
            return self._states[key]
        started = time.perf_counter()
        fresh = progress and key[1] < key[0] and not self.held(*key)
        if fresh:
            self.progress.start(1, f"compaction {key[0]:.0%} → {key[1]:.0%}")
        if key[1] >= key[0]:
            state = SawtoothState(self.window, *key, error="the target must be below the trigger")
        else:
            try:
                state = sawtooth(self.result(*key), self.window, *key)
            except CtxlabError as err:
                state = SawtoothState(self.window, *key, error=" ".join(str(err).split())[:200])
        if fresh:
            self.progress.step(f"{key[0]:.0%} → {key[1]:.0%}")
            self.progress.done(f"replayed compaction {key[0]:.0%} → {key[1]:.0%}")
        self._states.setdefault(key, state)  # the background may have measured it meanwhile: keep one
        self.timings.setdefault(key, time.perf_counter() - started)
        return self._states[key]

    def _on_change(self, change: dict[str, Any]) -> None:
        self.state = self.compute(self.trigger.value, self.target.value)
        self._render()
        self._plan()

    def _render(self) -> None:
        s = self.state
        if s.error:
            self.label.value = error_html("no replay", s.error)
            self.plot.outputs = ()
            self.table.value = ""
            return
        self.label.value = html.escape(sawtooth_summary(s))  # numbers; an error is escaped by sawtooth_summary
        show_in(self.plot, sawtooth_figure(s))
        self.table.value = ("<pre style='font-size:11px'>" + safe_html(text_table(sawtooth_rows(s), SAWTOOTH_COLUMNS),
                                                                       multiline=True)
                            + "</pre>")

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = (f"SawtoothWidget(window={self.window:,}, trigger={self.trigger.value:.2f}, "
                                f"target={self.target.value:.2f})")
        return bundle
