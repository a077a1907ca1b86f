"""Chapter 06: summaries — the window widget and the retention figure, over :mod:`ctxlab.lab.ch06_summaries`.

What it holds:

* :func:`retention_figure` — the checklist facts each strategy's model can read, call by call;
* :class:`SummaryWidget` — one choice, the window: the summary at the last call and the facts kept.

The measurements (the window, the retention rows, the fake LLM) are in :mod:`ctxlab.lab.ch06_summaries`,
the placements in :mod:`ctxlab.lab.ch06_placement`, the cost of regenerating in
:mod:`ctxlab.lab.ch06_regeneration`. Simplified on purpose: the widget keeps every state it showed, keyed by
its window, so a second visit is instant; a new window replays the whole conversation (about 0.3 s on the
sample; the progress bar under the slider says so), through the chapters' shared replays
(:data:`ctxlab.lab.replays.REPLAYS`: the chapter's retention table then reuses the widget's). On a long
transcript (more than 150 model calls) the widget is on screen at once: its first window's replay and checklist
score are the background thread's first job (the progress bar says so; reading ``state`` waits for them), then
the slider's other stops, nearest first.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Sequence

import plotly.graph_objects as go

from ctxlab.base import validate
from ctxlab.base.errors import CtxlabError
from ctxlab.base.safe_text import shown
from ctxlab.facts import Fact
from ctxlab.lab.ch06_summaries import Retention, SummaryState, default_windows, summary_run
from ctxlab.lab.replays import REPLAYS
from ctxlab.messages import Conversation
from ctxlab.replay import ReplayResult
from ctxlab.strategies import model_calls
from ctxlab.summary_strategy import BudgetedSummaryStrategy
from ctxlab.widgets._inputs import conversation_of
from ctxlab.widgets._plots import error_html, figure
from ctxlab.widgets._progress import WORKER, Progress, background_wanted


def retention_figure(rows: Sequence[Retention]) -> go.Figure:
    """Facts the model can read without a tool call (visible + in the summary), per call, per strategy. Chapter 06."""
    fig = figure("Checklist facts the model can read, per call", xaxis_title="call", yaxis_title="facts",
                 legend=dict(orientation="h", y=-0.25))
    known = next((r.report for r in rows if r.report), None)
    if known:
        fig.add_trace(go.Scatter(x=[x.call for x in known.rows], y=[x.known for x in known.rows], name="known so far",
                                 mode="lines", line=dict(dash="dot", color="#999999")))
    for r in rows:
        if r.report:
            fig.add_trace(go.Scatter(x=[x.call for x in r.report.rows], y=[x.kept for x in r.report.rows],
                                     name=r.strategy, mode="lines"))
    return fig


class SummaryWidget:
    """One choice, the window (a SelectionSlider): ``budgeted+summary`` replayed at it, the summary placed
    at the last call, and the checklist's facts at that call — visible, in the summary, or lost.

    ``w = SummaryWidget(conv, facts, windows=[30_000, 60_000]); w.window.value = 60_000; w.state.lost``.
    Every state is kept by window (``timings`` holds what each first visit cost, in seconds; ``replays`` counts the
    first visits). ``background``: open at once and replay the first stop, then the others, in the background
    (None: on a transcript of more than 150 model calls); ``progress`` is the bar under the slider. ``windows``
    are taken as given (whole numbers of tokens; a window too small for any context shows why). ``conversation``
    may be what ``ctxlab.load`` returns (a Transcript of one conversation). Chapter 06.
    """

    def __init__(self, conversation: Conversation, facts: Sequence[Fact] = (), *, windows: Sequence[int] | None = None,
                 placement: str = "system_end", background: bool | None = None) -> None:
        import ipywidgets as W

        conversation = conversation_of(conversation, "SummaryWidget")
        try:  # each stop a window of its own, honoured as given (one too small shows why, it is not clamped)
            given = None if windows is None else [validate.tokens("windows", w, allow_none=False) for w in windows]
        except CtxlabError as err:
            raise CtxlabError(f"SummaryWidget: {err}") from None
        self.conversation = conversation
        self.facts = list(facts)
        self.placement = placement
        self.thread = next((c.thread for _, c in model_calls(conversation)), "main")
        self._states: dict[int, SummaryState] = {}  # window -> state
        self._runs: dict[int, tuple[BudgetedSummaryStrategy, ReplayResult]] = {}  # window -> its replay
        self._lock = threading.Lock()
        self.replays = 0  # first visits so far, each a replay unless the shared cache held it (a second visit: none)
        self.timings: dict[int, float] = {}  # window -> seconds its first computation took
        options = list(dict.fromkeys(given)) if given else default_windows(conversation)
        self.window = W.SelectionSlider(options=[(f"{w:,}", w) for w in options], value=options[0],
                                        description="window (tokens)", continuous_update=False,
                                        style={"description_width": "initial"}, layout=W.Layout(width="60%"))
        self.controls = W.VBox([self.window])
        self.progress = Progress()
        self.label = W.HTML()
        self.summary_view = W.HTML(layout=W.Layout(width="60%"))
        self.facts_view = W.HTML(layout=W.Layout(width="40%"))
        self.widget = W.VBox([self.controls, self.progress.widget, self.label,
                              W.HBox([self.summary_view, self.facts_view])])
        self.background = background_wanted(conversation, background)
        self._shown: int | None = None  # the window whose state the view shows (None: not yet)
        first = self.window.value
        if self.background and not REPLAYS.held(conversation, "budgeted+summary", window=first, placement=placement):
            # a long transcript: the widget is on screen at once, its first replay is the background's first job
            self.progress.start(1, f"budgeted+summary at {first:,}")
            self.label.value = (f"window <b>{first:,}</b>: replaying <code>budgeted+summary</code> and scoring the "
                                "checklist; the numbers appear here when it is done (reading <code>.state</code> "
                                "waits for them).")
        else:
            self._show(first)
        self.window.observe(self._on_change, names="value")
        self._plan()

    @property
    def state(self) -> SummaryState:
        """The state at the slider's window: computed now if it is not yet (waiting for the background when it is
        replaying it). Chapter 06."""
        window = self.window.value
        if window not in self._states:
            self.compute(window)
        return self._states[window]

    def _show(self, window: int) -> None:
        """Compute (or read) ``window``'s state and draw it, if the slider still stands there."""
        state = self.compute(window)
        if self.window.value == window:
            self._shown = window
            self._render(state)

    def compute(self, window: int) -> SummaryState:
        """The state for ``window``, from the kept replay or a new one; an impossible window is reported. Chapter 06."""
        with self._lock:  # the background draws the first window when it has it: one first visit, counted once
            return self._compute(window)

    def _compute(self, window: int) -> SummaryState:
        if window in self._states:
            return self._states[window]
        started = time.perf_counter()
        self.replays += 1
        fresh = not REPLAYS.held(self.conversation, "budgeted+summary", window=window, placement=self.placement)
        if fresh:
            self.progress.start(1, f"budgeted+summary at {window:,}")
        state, run = summary_run(self.conversation, self.facts, window, placement=self.placement, thread=self.thread)
        if fresh or self.progress.bar.value < self.progress.bar.max:  # this replay, or the background's first one
            self.progress.step(f"budgeted+summary at {window:,}")
            self.progress.done(f"replayed budgeted+summary at {window:,}")
        if run is not None:
            self._runs[window] = run
        self._states[window] = state
        self.timings[window] = time.perf_counter() - started
        return state

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the background has replayed the stops it planned (at once without a background); False if
        ``timeout`` seconds passed first. Chapter 06."""
        return WORKER.wait(self, timeout)

    def _plan(self) -> None:
        """Queue the stops not yet replayed, nearest to the slider's first: the replay and its checklist score go
        into the shared cache, and a visit then only reads them."""
        if not self.background:
            return
        stops = [v for _, v in self.window.options]
        here = stops.index(self.window.value)
        todo = [w for w in sorted(stops, key=lambda v: (abs(stops.index(v) - here), v)) if w not in self._states]
        WORKER.submit(self, [(f"budgeted+summary at {w:,}", lambda w=w: self._ahead(w)) for w in todo],
                      self.progress.background)

    def _ahead(self, window: int) -> None:
        """The background's job: the replay and its score into the shared cache; drawn if the slider waits for it."""
        summary_run(self.conversation, self.facts, window, placement=self.placement, thread=self.thread)
        if self.window.value == window and self._shown != window:
            self._show(window)

    def run(self, window: int) -> tuple[BudgetedSummaryStrategy, ReplayResult]:
        """The strategy (holding its last summary) and the replay behind a window's state; raises the
        replay's error (CtxlabError) for an impossible window. Chapter 06."""
        self.compute(window)
        if window not in self._runs:
            raise CtxlabError(self._states[window].error)
        return self._runs[window]

    def _on_change(self, change: dict[str, Any]) -> None:
        self._show(change["new"])
        self._plan()

    def _render(self, state: SummaryState | None = None) -> None:
        s = state if state is not None else self.state
        if s.error:
            self.label.value = error_html("no replay", s.error)
            self.summary_view.value = self.facts_view.value = ""
            return
        cost = "unpriced" if s.cost_usd is None else f"${s.cost_usd:,.4f}"
        what = (f"the summary at the last call: <b>{s.summary_tokens:,}</b> tokens for {s.summarised_messages} dropped "
                "messages" if s.summary else "the last call dropped nothing: <b>no summary</b>")
        facts = (f"; checklist at the last call: <b>{s.kept}</b> of {s.known} readable ({len(s.visible)} visible, "
                 f"{len(s.in_summary)} only in the summary), <b>{len(s.lost)}</b> lost; worst call {s.kept_min}"
                 if self.facts else "; no checklist for this transcript")
        self.label.value = (f"window <b>{s.window:,}</b>: {what}{facts}. {s.summary_calls} summary calls, hit rate "
                            f"{100 * s.hit_rate:.1f}%, cost {cost}.")
        sections = ", ".join(f"{name} {n}" for name, n in s.sections)
        self.summary_view.value = (f"<div style='padding-right:6px'><b>summary</b> "
                                   f"({shown(sections, html=True) or 'none'})<pre style='white-space:pre-wrap;"
                                   f"max-height:360px;overflow:auto;font-size:11px'>"
                                   f"{shown(s.summary, multiline=True, html=True)}</pre></div>")
        status = {**{f: "visible" for f in s.visible}, **{f: "in summary" for f in s.in_summary},
                  **{f: "via page" for f in s.paged}, **{f: "lost" for f in s.lost}}
        colour = {"visible": "#2e7d32", "in summary": "#1565c0", "via page": "#f28e2b", "lost": "#c62828"}
        rows = "".join(f"<tr style='color:{colour[status[f.id]]}'><td>{shown(f.id, html=True)}</td>"
                       f"<td style='white-space:nowrap'>{status[f.id]}</td>"
                       f"<td>{shown(f.text[:60], html=True)}</td></tr>" for f in self.facts if f.id in status)
        self.facts_view.value = (f"<div style='padding-left:6px;font-size:11px'>"
                                 f"<b>facts known at the last call</b><table>{rows}</table></div>")

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = f"SummaryWidget(window={self.window.value:,}, placement={self.placement!r})"
        return bundle

