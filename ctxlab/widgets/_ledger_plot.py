"""The ledger's figure: per model call, the prompt split into cache read / cache write / uncached
input (stacked bars, left axis, tokens), and the cumulative cost (line, right axis, USD).

Drawn on ctxlab's own template (``_plots.figure``), so a stored figure does not change when plotly
does. Calls are numbered in ledger order on the x axis; the hover names the thread and the call
within it. Unpriced calls add nothing to the cost line, and its legend entry says how many there
were. Calls over the context window get a marker above their bar. The ledger itself
(``ctxlab/ledger.py``) knows its text and HTML tables only; its figure is drawn here:
``ledger_figure(replay(conv, "sliding").ledger)``, exported as ``ctxlab.widgets.ledger_figure``.
Taught in chapter 04.
"""

from __future__ import annotations

from itertools import accumulate

import plotly.graph_objects as go

from ctxlab.base.safe_text import shown
from ctxlab.ledger import Ledger
from ctxlab.widgets._plots import figure

# What a colour means in every ledger figure.
LEDGER_COLOURS = {"cache_read": "#59a14f", "cache_write": "#f28e2b", "uncached": "#e15759",
                  "cost": "#4e79a7", "overflow": "#333333"}
BARS = (("cache read", "cache_read_tokens", "cache_read"),
        ("cache write", "cache_write_tokens", "cache_write"),
        ("uncached input", "uncached_input_tokens", "uncached"))


def ledger_figure(ledger: Ledger, title: str | None = None, *, height: int = 380) -> go.Figure:
    """The figure for ``ledger``: three bar traces and a ``cumulative cost`` line (and ``overflow`` markers).

    ``title`` defaults to the ledger's title (else "Prompt tokens per model call"); ``height`` in pixels.
    Chapter 04.
    """
    rows = ledger.rows
    x = list(range(1, len(rows) + 1))
    labels = [f"{shown(r.thread)} #{r.call}" for r in rows]  # thread names and notes come from the file: escaped
    fig = figure(title if title is not None else (shown(ledger.title) or "Prompt tokens per model call"), height=height,
                 barmode="stack", bargap=0.1 if len(rows) < 60 else 0,
                 xaxis=dict(title="model call"), yaxis=dict(title="prompt tokens"),
                 yaxis2=dict(title="cumulative cost (USD)", overlaying="y", side="right", showgrid=False,
                             rangemode="tozero", tickprefix="$"),
                 legend=dict(orientation="h", yanchor="top", y=-0.2, x=0), margin=dict(l=60, r=70, t=50, b=90))
    for name, attr, colour in BARS:
        fig.add_trace(go.Bar(x=x, y=[getattr(r, attr) for r in rows], name=name, customdata=labels,
                             marker=dict(color=LEDGER_COLOURS[colour], line=dict(width=0)),
                             hovertemplate="%{customdata}<br>" + name + ": %{y:,} tokens<extra></extra>"))
    unpriced = sum(r.cost_usd is None for r in rows)
    cumulative = list(accumulate((r.cost_usd or 0.0) for r in rows))
    left_out = f" ({unpriced} unpriced call{'s' * (unpriced != 1)} left out)" if unpriced else ""
    fig.add_trace(go.Scatter(
        x=x, y=cumulative, name="cumulative cost" + left_out, yaxis="y2", mode="lines",
        line=dict(color=LEDGER_COLOURS["cost"], width=2), customdata=labels,
        hovertemplate="%{customdata}<br>cost so far: $%{y:,.4f}<extra></extra>"))
    over = [(i, r) for i, r in zip(x, rows) if r.overflow]
    if over:
        fig.add_trace(go.Scatter(x=[i for i, _ in over], y=[r.total_input_tokens for _, r in over], name="overflow",
                                 mode="markers", marker=dict(symbol="x", size=9, color=LEDGER_COLOURS["overflow"]),
                                 customdata=[shown(r.note) for _, r in over],
                                 hovertemplate="%{customdata}<extra></extra>"))
    return fig
