"""Chapter 00's widgets: a real agent's bill, and loading your own transcript.

What it holds (the measurements are in :mod:`ctxlab.lab.ch00_bill`):

* :func:`tokens_figure` — the prompt tokens of each call, stacked: cache read, cache write, uncached;
* :class:`BillWidget` — the cumulative cost line; one control: price the same calls as billed or
  with no prompt cache (:func:`ctxlab.lab.ch00_bill.bill_view`);
* :class:`TranscriptUpload` — a file picker that saves the chosen file to a fresh temporary
  directory (never next to the learner's files, :func:`ctxlab.lab.workbook.save_upload`) and loads it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import plotly.graph_objects as go

from ctxlab.base.safe_text import shown
from ctxlab.lab.ch00_bill import PRICINGS, BillCall, BillView, bill_view, find_rewrites, prices_from_bill, summarize
from ctxlab.lab.workbook import load_workbook_conversation, save_upload
from ctxlab.messages import Conversation
from ctxlab.widgets._plots import COLOURS, figure, show_in

__all__ = ["tokens_figure", "BillWidget", "TranscriptUpload"]


def tokens_figure(calls: Sequence[BillCall]) -> go.Figure:
    """Chapter 00: the prompt tokens of each call, stacked: read from the cache, written to it, uncached."""
    fig = figure("Prompt tokens per call", xaxis_title="model call", yaxis_title="tokens", barmode="stack",
                 bargap=0, legend=dict(orientation="h", y=-0.2))
    x = [c.call for c in calls]
    for name, attr, colour in (("read from cache", "cache_read", COLOURS["cost"]),
                               ("written to cache", "cache_write", COLOURS["rewrite"]),
                               ("uncached", "input", COLOURS["dropped"])):
        fig.add_trace(go.Bar(x=x, y=[getattr(c, attr) for c in calls], name=name, marker_color=colour,
                             marker_line_width=0))
    return fig


class BillWidget:
    """Chapter 00: the cumulative cost of a real session; the one choice: as billed, or the same calls with no cache.

    ``w = BillWidget(read_bill(PI_BILL)); w.pricing.value = "no prompt cache"; w.state.total_usd`` →
    the no-cache total. ``w.widget`` is what a notebook displays.
    """

    def __init__(self, calls: Sequence[BillCall], *, min_rewrite_tokens: int = 10_000,
                 marked: Sequence[int] | None = None, marked_label: str = "read less than half their prompt") -> None:
        import ipywidgets as W

        self.calls = list(calls)
        self.summary = summarize(self.calls)
        # the calls the line marks: given (chapter 00 passes chapter 04's misses, ctxlab.lab.ch04_ledger.miss_rows)
        # or the re-writes of ctxlab.lab.ch00_bill.find_rewrites
        self.rewrites = [] if marked is not None else find_rewrites(self.calls, min_rewrite_tokens)
        self.marked = tuple(marked) if marked is not None else tuple(r.call for r in self.rewrites)
        self.marked_label = marked_label if marked is not None else "re-wrote the cached prefix"
        self._prices = prices_from_bill(self.calls)
        self.pricing = W.ToggleButtons(options=PRICINGS, value=PRICINGS[0], description="price:")
        self.controls = W.HBox([self.pricing])
        self.label = W.HTML()
        self.plot = W.Output()
        self.widget = W.VBox([self.controls, self.label, self.plot])
        self.state = self.compute(self.pricing.value)
        self.pricing.observe(self._on_change, names="value")
        self._render()

    def compute(self, pricing: str) -> BillView:
        """The cumulative cost line under ``pricing`` (one of :data:`~ctxlab.lab.ch00_bill.PRICINGS`);
        ``ValueError`` on another. Chapter 00."""
        return bill_view(self.calls, pricing, self.rewrites, self._prices)  # rewrite_calls: the re-writes, if any

    def _on_change(self, change: dict[str, Any]) -> None:
        self.state = self.compute(change["new"])
        self._render()

    def figure(self) -> go.Figure:
        """Chapter 00: the cumulative cost line of :attr:`state`, re-write calls marked."""
        s = self.state
        x = [c.call for c in self.calls]
        y = [round(v, 4) for v in s.cumulative_usd]
        fig = figure(f"Cumulative cost, {s.pricing}: ${s.total_usd:,.2f}", xaxis_title="model call",
                     yaxis_title="USD", showlegend=True, legend=dict(x=0.01, y=0.99))
        colour = COLOURS["cost"] if s.pricing == PRICINGS[0] else COLOURS["no_cache"]
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=s.pricing, line=dict(color=colour, width=2)))
        at = {c.call: i for i, c in enumerate(self.calls)}
        marks = [k for k in self.marked if k in at]
        fig.add_trace(go.Scatter(
            x=marks, y=[y[at[k]] for k in marks], mode="markers", name=f"calls that {self.marked_label}",
            marker=dict(color=COLOURS["rewrite"], size=9, symbol="diamond"),
            text=[f"call {k}" for k in marks], hoverinfo="text"))
        return fig

    def _render(self) -> None:
        s = self.state
        self.label.value = (f"<b>{s.pricing}</b>: ${s.total_usd:,.2f} over {len(self.calls):,} calls "
                            f"({len(self.marked)} calls {self.marked_label})")
        show_in(self.plot, self.figure())

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = f"BillWidget(pricing={self.pricing.value!r}, total=${self.state.total_usd:,.2f})"
        return bundle


class TranscriptUpload:
    """Chapter 00: a file picker for your own transcript: saves it to a temporary directory and loads it.

    After an upload, ``.path`` is the temporary copy, ``.conversation`` the loaded conversation (the
    longest when the file holds several) and ``.error`` the reason when it could not be read.
    Nothing is written next to your own files.
    """

    def __init__(self) -> None:
        import ipywidgets as W

        self.upload = W.FileUpload(accept=".jsonl,.json,.traj", multiple=False, description="transcript")
        self.status = W.HTML("<i>no file chosen: the chapters use the bundled sample</i>")
        self.controls = W.HBox([self.upload])
        self.widget = W.VBox([self.controls, self.status])
        self.path: Path | None = None
        self.conversation: Conversation | None = None
        self.error: str | None = None
        self.upload.observe(self._on_upload, names="value")

    def _on_upload(self, change: dict[str, Any]) -> None:
        files = change["new"]
        if not files:
            return
        f = files[0]
        self.load(f["name"], bytes(f["content"]))

    def load(self, name: str, content: bytes) -> Conversation | None:
        """Save and read one file (what an upload does); returns the conversation, or ``None`` with
        the reason in :attr:`error` (nothing is raised into the widget machinery). Chapter 00."""
        self.path = save_upload(name, content)
        try:
            self.conversation = load_workbook_conversation(self.path)
            self.error = None
        except Exception as err:  # shown to the learner, not raised into the widget machinery
            self.conversation, self.error = None, f"{type(err).__name__}: {err}"
        if self.conversation is not None:
            c = self.conversation
            self.status.value = (f"loaded <b>{shown(self.path.name, html=True)}</b>: {len(c.messages):,} messages; "
                                 f"set <code>TRANSCRIPT = upload.path</code> to use it in the chapters")
        else:
            self.status.value = (f"<span style='color:#c62828'>could not read {shown(self.path.name, html=True)}: "
                                 f"{shown(self.error, html=True)}</span>")  # the error quotes the file
        return self.conversation

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = "TranscriptUpload(choose a .jsonl / .json / .traj transcript)"
        return bundle
