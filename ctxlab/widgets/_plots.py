"""Shared plotting helpers for the chapter widgets: one template, fixed colours, offline rendering.

What it holds: ctxlab's plotly template (:data:`TEMPLATE`, registered as ``"ctxlab"``), the colours
every chapter uses for the same things (tools, system, kept history, free room; kept / pinned /
dropped units), :func:`figure` (a blank figure on that template), :func:`show_in` (put a figure
into an ``ipywidgets.Output`` without printing anything into the cell) and :func:`html_bar`
(a stacked bar drawn in plain HTML, for places where plotly is too heavy).

Why a template of our own: a stored figure embeds its whole template; plotly's default one
changes between releases, ours does not. Why :func:`show_in` sets ``Output.outputs`` instead of
``with out: display(fig)``: the second goes through the cell's output stream, which notebook
testers without a frontend (nbval) record as cell output; setting the widget's state does not.
"""

from __future__ import annotations

import html
from typing import Sequence

import plotly.graph_objects as go
import plotly.io as pio

from ctxlab.base.safe_text import shown

FONT = "Helvetica, Arial, sans-serif"
# What a colour means, the same in every chapter.
COLOURS = {
    "tools": "#8e6c8a",
    "system": "#4e79a7",
    "head": "#9c755f",
    "kept": "#59a14f",
    "free": "#e8e8e8",
    "pinned": "#1565c0",
    "dropped": "#bab0ac",
    "cost": "#4e79a7",
    "no_cache": "#e15759",
    "rewrite": "#f28e2b",
    "exact": "#4e79a7",
}
ESTIMATOR_COLOURS = {"chars/3": "#f28e2b", "chars/4": "#76b7b2", "cl100k_base": "#b07aa1", "o200k_base": "#4e79a7"}

TEMPLATE = go.layout.Template(layout=dict(
    font=dict(family=FONT, size=12, color="#333333"),
    paper_bgcolor="white",
    plot_bgcolor="white",
    colorway=["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#9c755f"],
    xaxis=dict(showgrid=True, gridcolor="#eeeeee", zeroline=False, linecolor="#999999", ticks="outside"),
    yaxis=dict(showgrid=True, gridcolor="#eeeeee", zeroline=True, zerolinecolor="#999999",
               linecolor="#999999", ticks="outside"),
    margin=dict(l=60, r=20, t=50, b=50),
    hovermode="closest",
))


def register_template() -> None:
    """Register :data:`TEMPLATE` as ``"ctxlab"`` (idempotent); figures still name it explicitly."""
    pio.templates["ctxlab"] = TEMPLATE


def figure(title: str = "", *, height: int = 360, **layout: object) -> go.Figure:
    """An empty figure on ctxlab's template: ``figure("Cost", xaxis_title="call")``."""
    fig = go.Figure(layout=dict(template=TEMPLATE, height=height, **layout))
    if title:
        fig.update_layout(title=dict(text=title, x=0, xanchor="left"))
    return fig


def mimebundle(fig: go.Figure) -> dict[str, object]:
    """The figure as the ``plotly_mimetype`` renderer stores it (JSON only, no HTML, no script)."""
    return {"application/vnd.plotly.v1+json": fig.to_plotly_json() | {"config": {"displaylogo": False}},
            "text/plain": f"<plotly figure: {fig.layout.title.text or 'untitled'}>"}


def show_in(output: object, fig: go.Figure) -> None:
    """Replace what an ``ipywidgets.Output`` shows with ``fig`` (widget state only; no cell output)."""
    output.outputs = ({"output_type": "display_data", "data": mimebundle(fig), "metadata": {}},)  # type: ignore[attr-defined]


def error_html(what: str, error: str) -> str:
    """A widget's label when it cannot compute: ``what`` in bold, then the error, in red (keys masked,
    control characters and HTML escaped: errors quote the file)."""
    return f"<span style='color:#c62828'><b>{what}:</b> {shown(error, html=True)}</span>"


def html_bar(segments: Sequence[tuple[str, int, str]], total: int | None = None, *, height_px: int = 26) -> str:
    """A horizontal stacked bar in plain HTML: ``segments`` = (label, tokens, colour).

    Widths are shares of ``total`` (default: the sum). Labels with their numbers sit under the bar,
    so the bar reads without hovering.
    """
    total = total if total is not None else sum(n for _, n, _ in segments)
    total = max(total, 1)
    blocks = "".join(
        f"<div title='{html.escape(label)}: {n:,}' style='width:{100 * n / total:.3f}%;background:{colour};"
        f"height:{height_px}px'></div>"
        for label, n, colour in segments if n > 0)
    legend = " ".join(
        f"<span style='white-space:nowrap;margin-right:12px'><span style='display:inline-block;width:10px;"
        f"height:10px;background:{colour};border:1px solid #999;margin-right:4px'></span>"
        f"{html.escape(label)} {n:,}</span>"
        for label, n, colour in segments)
    return (f"<div style='display:flex;width:100%;border:1px solid #999;box-sizing:border-box'>{blocks}</div>"
            f"<div style='font-size:12px;margin-top:4px'>{legend}</div>")


def html_units(decisions: Sequence[str], *, max_cells: int = 400) -> str:
    """One small square per unit, coloured by decision (kept / pinned / dropped), oldest on the left."""
    shown = decisions if len(decisions) <= max_cells else decisions[-max_cells:]
    cells = "".join(
        f"<span title='{d}' style='display:inline-block;width:7px;height:14px;margin:0 1px 1px 0;"
        f"background:{COLOURS.get(d, COLOURS['kept'])}'></span>" for d in shown)
    more = (f" (the oldest {len(decisions) - len(shown):,} units are not drawn)" if len(shown) < len(decisions) else "")
    legend = " ".join(
        f"<span style='display:inline-block;width:9px;height:9px;background:{COLOURS[d]};margin:0 3px 0 8px'></span>{d}"
        for d in ("kept", "pinned", "dropped"))
    return (f"<div style='line-height:10px'>{cells}</div>"
            f"<div style='font-size:11px;color:#555'>one square per unit, oldest on the left:{legend}{more}</div>")
