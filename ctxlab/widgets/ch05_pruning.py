"""Chapter 05's widget and figure: a large tool result pruned and paged, and the cache under two caps.

What it holds:

* :class:`PruneWidget` — head and tail sliders over one result, the paged preview with its handle,
  and a line number read back through ``read_page`` beside the pruned version;
* :func:`cap_figure` — cache read per call, one line per replay of
  :func:`~ctxlab.lab.ch05_caps.cap_comparison`.

The numbers come from :mod:`ctxlab.lab.ch05_pruning` and :mod:`ctxlab.lab.ch05_paging`
(:func:`~ctxlab.lab.ch05_paging.prune_state` for the widget); this module only draws them. Tool output is
shown with anything that looks like an API key masked and every control character escaped.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from ctxlab.base.errors import CtxlabError
from ctxlab.base.safe_text import shown
from ctxlab.io.page_store import PageStore
from ctxlab.lab.ch05_paging import PruneState, paged_preview, prune_state
from ctxlab.lab.ch05_pruning import evidence_line, o200k_counter, prune_view
from ctxlab.messages import Message
from ctxlab.paging import page_lines
from ctxlab.replay import ReplayResult
from ctxlab.tokens import TokenCounter
from ctxlab.widgets._inputs import widened
from ctxlab.widgets._plots import figure


def _shown(text: str) -> str:
    """Tool output as HTML: anything that looks like an API key masked, then control, bidi and invisible
    characters escaped (``\\n`` and ``\\t`` kept), then HTML-escaped (display only)."""
    return shown(text, multiline=True, html=True)


def cap_figure(results: dict[str, ReplayResult]) -> go.Figure:
    """Cache read per call, one line per replay: where a recomputed cap falls to the static head. Chapter 05."""
    fig = figure("Cache read per call", xaxis_title="call", yaxis_title="tokens read from the cache",
                 legend=dict(orientation="h", y=-0.25))
    for name, result in results.items():
        rows = [r for r in result.ledger.rows if r.message_id is not None]
        fig.add_trace(go.Scatter(x=[r.call for r in rows], y=[r.cache_read_tokens for r in rows], name=name,
                                 mode="lines"))
    return fig


class PruneWidget:
    """One large tool result, pruned and paged. Controls: ``head`` and ``tail`` (IntSliders, tokens) and
    ``line`` (a line number to read back).

    ``w = PruneWidget(msg); w.head.value = 2_000; w.state.view.head_tokens`` → 2,000. The pruned text is
    shown with its marker; the paged preview (same head and tail) with its handle; line ``line`` as
    recorded, whether the pruned text still holds it, and what ``read_page`` returns for it. Chapter 05.
    """

    def __init__(self, msg: Message, *, head: int | None = None, tail: int | None = None, line: int | None = None,
                 counter: TokenCounter | None = None, max_tokens: int = 8_000) -> None:
        import ipywidgets as W

        if not isinstance(msg, Message):
            raise CtxlabError(f"PruneWidget takes one message (a large tool result), got {type(msg).__name__}: e.g. "
                              "PruneWidget(largest_tool_result(conversation, counter))")
        self.msg = msg
        self.counter = counter or o200k_counter()
        self.store = PageStore.in_memory()
        self.lines = page_lines(msg.text)
        top = max(100, min(max_tokens, self.counter.count(msg.text)))
        # None: 1,000 and 500, within the slider; a value given is honoured (the slider widened to it, never clamped)
        head, _, top = widened("PruneWidget", "head", head, 0, top, allow_zero=True) if head is not None else \
            (min(1_000, top), 0, top)
        tail, _, top = widened("PruneWidget", "tail", tail, 0, top, allow_zero=True) if tail is not None else \
            (min(500, top), 0, top)
        if line is not None and not (isinstance(line, int) and 1 <= line <= max(1, len(self.lines))):
            raise CtxlabError(f"PruneWidget: line must be from 1 to {max(1, len(self.lines)):,}, the message's lines "
                              f"(got {line!r})")
        style = {"description_width": "initial"}
        self.head = W.IntSlider(value=head, min=0, max=top, step=50, description="head (tokens)",
                                continuous_update=False, readout_format=",", style=style, layout=W.Layout(width="60%"))
        self.tail = W.IntSlider(value=tail, min=0, max=top, step=50, description="tail (tokens)",
                                continuous_update=False, readout_format=",", style=style, layout=W.Layout(width="60%"))
        self.line = W.BoundedIntText(value=1, min=1, max=max(1, len(self.lines)), description="read line",
                                     style=style, layout=W.Layout(width="220px"))
        self.controls = W.VBox([self.head, self.tail, self.line])
        self.label = W.HTML()
        self.pruned_view = W.HTML(layout=W.Layout(width="50%"))
        self.paged_view = W.HTML(layout=W.Layout(width="50%"))
        self.line_view = W.HTML()
        self.widget = W.VBox([self.controls, self.label,
                              W.HBox([self.pruned_view, self.paged_view], layout=W.Layout(width="100%")),
                              self.line_view])
        if line is None:
            line = evidence_line(msg.text, prune_view(msg.text, self.head.value, self.tail.value, self.counter))
        self.line.value = min(max(1, line), self.line.max)
        self._paged: dict[tuple[int, int], tuple[Message, str]] = {}  # (head, tail) -> (shown, handle)
        self.state = self.compute(self.head.value, self.tail.value, self.line.value)
        for control in (self.head, self.tail, self.line):
            control.observe(self._on_change, names="value")
        self._render()

    def paged(self, head: int, tail: int) -> tuple[Message, str]:
        """The paged preview for this head and tail, and the page's handle (the same page every time). Chapter 05."""
        if (head, tail) not in self._paged:
            self._paged[(head, tail)] = paged_preview(self.msg, self.store, head, tail, self.counter)
        return self._paged[(head, tail)]

    def compute(self, head: int, tail: int, line: int) -> PruneState:
        """The numbers for these settings (pure but for the page store, which only ever holds this one result):
        :func:`~ctxlab.lab.ch05_paging.prune_state`. Chapter 05."""
        return prune_state(self.msg, head, tail, line, self.store, self.paged(head, tail), self.counter)

    def _on_change(self, change: dict[str, Any]) -> None:
        self.state = self.compute(self.head.value, self.tail.value, self.line.value)
        self._render()

    def _render(self) -> None:
        s, v = self.state, self.state.view
        pre = "<pre style='white-space:pre-wrap;max-height:320px;overflow:auto;font-size:11px;margin:0'>"
        if v.error:
            self.label.value = f"<span style='color:#c62828'><b>cannot prune:</b> {shown(v.error, html=True)}</span>"
            self.pruned_view.value = ""
        else:
            self.label.value = (f"<b>{shown(self.msg.id, html=True)}</b> "
                                f"({shown(self.msg.tool_name or 'tool', html=True)}): "
                                f"{v.original_tokens:,} tokens, {v.lines:,} lines. Pruned: head "
                                f"<b>{v.head_tokens:,}</b>"
                                f" + marker + tail <b>{v.tail_tokens:,}</b> = <b>{v.total_tokens:,}</b> tokens "
                                f"(budget {v.budget:,}); {v.omitted_tokens:,} omitted for good; "
                                f"{v.lines_whole:,} of {v.lines:,} lines still whole.")
            marked = shown(v.marker, multiline=True, html=True)
            marker = f"<span style='background:#fde2e1;color:#c62828'>{marked}</span>"
            body = _shown(v.head) + marker + _shown(v.tail) if v.marker else _shown(v.text)
            self.pruned_view.value = f"<div style='padding-right:6px'><b>pruned</b>{pre}{body}</pre></div>"
        paged_text = self.paged(v.head_budget, v.tail_budget)[0].text
        body = _shown(paged_text).replace(f"page {s.handle}",
                                          f"<span style='background:#dbe9f6'>page {s.handle}</span>")
        self.paged_view.value = (f"<div style='padding-left:6px'><b>paged</b> ({s.page_tokens:,} tokens, "
                                 f"handle <code>{s.handle}</code>){pre}{body}</pre></div>")
        verdict = ("still whole in the pruned text" if s.line_in_pruned else
                   "<b style='color:#c62828'>not in the pruned text: gone for good</b>")
        self.line_view.value = (f"<b>line {s.line:,}</b> as recorded: <code>{_shown(s.original_line[:200])}</code>"
                                f"<br>pruned: {verdict}<br>read_page(handle=\"{s.handle}\", start_line={s.line}, "
                                f"end_line={s.line}) → <code>{_shown(s.read_back[:200])}</code> "
                                f"({'exactly the recorded line' if s.read_back_exact else 'differs'})")

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = (f"PruneWidget({self.msg.id!r}, head={self.head.value:,}, tail={self.tail.value:,}, "
                                f"line={self.line.value:,})")
        return bundle
