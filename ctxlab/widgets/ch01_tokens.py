"""Chapter 01's widgets: the token x-ray, and the estimator-error figure.

What it holds (the measurements are in :mod:`ctxlab.lab.ch01_tokens`):

* :func:`xray_html` and :class:`TokenXray` — a text cut into its tokens (coloured chips) under an
  encoding, with its count under every counter; the one choice is the encoding;
* :func:`estimator_figure` — (estimate − exact) / exact per content type and estimator, as bars.
"""

from __future__ import annotations

from typing import Any, Sequence

import plotly.graph_objects as go

from ctxlab.base.safe_text import safe_html
from ctxlab.estimators import EstimateRow
from ctxlab.lab.ch01_content import ESTIMATORS
from ctxlab.lab.ch01_tokens import ENCODINGS, XrayState, xray
from ctxlab.widgets._plots import ESTIMATOR_COLOURS, figure

__all__ = ["CHIP_COLOURS", "xray_html", "TokenXray", "estimator_figure"]

CHIP_COLOURS = ("#dbe9f6", "#fde2c8", "#d8f0d2", "#f6d5da", "#e6dcf2", "#fff2b3")  # Chapter 01: x-ray chips


def _chip_html(piece: str, n: int, i: int) -> str:
    # ESC, CR, U+202E ... shown as escapes (the file's text can hold them); spaces, newlines and tabs drawn
    shown = safe_html(piece, multiline=True).replace(" ", "&middot;").replace("\n", "&#8629;<br>").replace("\t", "&rarr;")
    border = "border:1px dashed #888;" if n > 1 else ""
    title = f"{n} tokens (one character split over tokens)" if n > 1 else "1 token"
    return (f"<span title='{title}' style='background:{CHIP_COLOURS[i % len(CHIP_COLOURS)]};{border}"
            f"padding:1px 0;margin:0 1px 2px 0;border-radius:3px;font-family:monospace;white-space:pre-wrap'>{shown}</span>")


def xray_html(state: XrayState) -> str:
    """Chapter 01: the chips and a counts line of an x-ray, as HTML (the text escaped)."""
    body = "".join(_chip_html(p, n, i) for i, (p, n) in enumerate(state.chips))
    drawn = sum(n for _, n in state.chips)
    more = f"<div style='color:#666'>… {state.tokens - drawn:,} more tokens not drawn</div>" if drawn < state.tokens else ""
    table = "".join(f"<td style='padding:0 10px;text-align:right'><b>{v:,}</b><br><span style='font-size:11px'>{k}</span></td>"
                    for k, v in state.counts.items())
    return (f"<div style='line-height:1.9'>{body}</div>{more}"
            f"<table style='margin-top:6px'><tr><td style='padding-right:10px'>{state.chars:,} chars</td>{table}</tr></table>")


class TokenXray:
    """Chapter 01: type a text, pick an encoding, see its tokens.

    Controls: ``text`` (Textarea), ``encoding`` (Dropdown).

    ``x = TokenXray("hello world"); x.encoding.value = "cl100k_base"; x.state.tokens`` → 2.
    """

    def __init__(self, text: str = "", encoding: str = "o200k_base") -> None:
        import ipywidgets as W

        self.text = W.Textarea(value=text, description="text", layout=W.Layout(width="100%", height="90px"),
                               continuous_update=True)  # the x-ray follows every keystroke
        self.encoding = W.Dropdown(options=ENCODINGS, value=encoding, description="encoding")
        self.controls = W.VBox([self.text, self.encoding])
        self.view = W.HTML()
        self.widget = W.VBox([self.controls, self.view])
        self.state = self.compute(text, encoding)
        self.text.observe(self._on_change, names="value")
        self.encoding.observe(self._on_change, names="value")
        self._render()

    def compute(self, text: str, encoding: str) -> XrayState:
        """The x-ray of ``text`` under ``encoding`` (:func:`ctxlab.lab.ch01_tokens.xray`). Chapter 01."""
        return xray(text, encoding)

    def _on_change(self, _change: dict[str, Any]) -> None:
        self.state = self.compute(self.text.value, self.encoding.value)
        self._render()

    def _render(self) -> None:
        self.view.value = xray_html(self.state)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        s = self.state
        bundle["text/plain"] = f"TokenXray({s.chars:,} chars, {s.tokens:,} tokens under {s.encoding})"
        return bundle


def estimator_figure(rows: Sequence[EstimateRow], estimators: Sequence[str] = ESTIMATORS) -> go.Figure:
    """Chapter 01: grouped bars of (estimate − exact) / exact in percent, per content type and estimator."""
    fig = figure("Estimate error against exact o200k_base tokens", yaxis_title="(estimate − exact) / exact, %",
                 barmode="group", legend=dict(orientation="h", y=-0.2))
    for e in estimators:
        fig.add_trace(go.Bar(x=[r.label for r in rows], y=[round(100 * r.error(e), 1) for r in rows], name=e,
                             marker_color=ESTIMATOR_COLOURS.get(e)))
    return fig
