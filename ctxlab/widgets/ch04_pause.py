"""Chapter 04's core widget: two choices — a pause before one call, and whose cache rules — and what they cost.

What it holds: :class:`PauseWidget` — a coffee break (minutes) before a call and the cache rules (Anthropic's
breakpoints or OpenAI's automatic prefix); it shows the calls around the pause (read, written, uncached, cost) and
the session's totals. The numbers come from :class:`ctxlab.lab.ch04_replays.LedgerReplays` (the same replays as
:class:`ctxlab.widgets.ch04_ledger.LedgerWidget`, which the going-further notebook uses with all its controls).

Simplified on purpose: the strategy is ``full`` (everything is sent) and the model the one recorded, so only the pause
and the rules change what the cache reads.
"""

from __future__ import annotations

from typing import Any

from ctxlab.lab.ch04_replays import PROVIDERS, ROW_COLUMNS, LedgerReplays, LedgerState, call_rows
from ctxlab.lab.workbook import text_table
from ctxlab.messages import Conversation
from ctxlab.strategies import model_calls
from ctxlab.tables.default_model import DEFAULT_MODEL
from ctxlab.tables.profiles import profile_for
from ctxlab.widgets._inputs import conversation_of

__all__ = ["PauseWidget"]


class PauseWidget:
    """Chapter 04: pause before one call; switch the cache rules. Controls: ``pause_minutes`` (IntSlider, minutes)
    and ``provider`` (ToggleButtons: ``anthropic`` / ``openai``).

    ``w = PauseWidget(conv); w.pause_minutes.value = 10; w.pause_row().cache_read_tokens`` → 0 on the sample (a
    10-minute break outlives Anthropic's 5-minute lifetime). ``call``: the call the pause comes before (default the
    20th, or the last). The window is the model's (at most 1,000,000 tokens), so nothing is dropped.
    """

    def __init__(self, conversation: Conversation, *, call: int | None = None, provider: str | None = None) -> None:
        import ipywidgets as W

        conversation = conversation_of(conversation, "PauseWidget")
        self.conversation = conversation
        self.replays = LedgerReplays(conversation)
        own = profile_for(conversation.model or DEFAULT_MODEL, conversation.provider)
        provider = provider or (own.provider if own.provider in PROVIDERS else "anthropic")
        n = max(2, sum(1 for _, c in model_calls(conversation) if c.thread == self.replays.thread))
        self.call = min(call or 20, n)
        self.window = min(own.context_window, 1_000_000)
        style = {"description_width": "initial"}
        self.pause_minutes = W.IntSlider(value=0, min=0, max=60, step=1, description=f"pause before call {self.call}"
                                         " (min)", continuous_update=False, style=style, layout=W.Layout(width="60%"))
        self.provider = W.ToggleButtons(options=list(PROVIDERS), value=provider, description="cache rules")
        self.label = W.HTML()
        self.table = W.HTML()
        self.widget = W.VBox([self.pause_minutes, self.provider, self.label, self.table])
        self.state = self.compute(self.pause_minutes.value, self.provider.value)
        for control in (self.pause_minutes, self.provider):
            control.observe(self._on_change, names="value")
        self._render()

    def compute(self, pause_minutes: int, provider: str) -> LedgerState:
        """The ledger's numbers under ``full`` with this pause and these rules (replayed once, then kept).
        Chapter 04."""
        return self.replays.compute("full", provider, "as recorded", self.window, pause_minutes, self.call)

    def pause_row(self) -> Any:
        """The ledger row of the call after the pause (a :class:`~ctxlab.lab.ch04_replays.CallRow`). Chapter 04."""
        return next((r for r in self.state.rows if r.call == self.call), None)

    def rows_text(self) -> str:
        """The calls around the pause (the one before, the paused one, the one after), as a text table.
        Chapter 04."""
        if self.pause_row() is None:
            return "(no ledger rows: " + (self.state.error or "no model call") + ")"
        return text_table(call_rows(self.state, [self.call - 1, self.call, self.call + 1]), list(ROW_COLUMNS))

    def summary(self) -> str:
        """One line: the rules, the pause, the paused call's read and the session's cost. Chapter 04."""
        s, r = self.state, self.pause_row()
        if r is None:  # a transcript without timestamps cannot take a pause; one without calls has no row
            return f"{s.provider} rules, {s.pause_minutes}-minute pause: {(s.error or 'no model call')[:60]}"
        cost = "unpriced" if s.cost_usd is None else f"${s.cost_usd:,.4f}"
        return (f"{s.provider} rules, {s.pause_minutes}-minute pause: call {self.call} reads "
                f"{r.cache_read_tokens:,} of {r.total_input_tokens:,} tokens; session {cost}")

    def _on_change(self, change: dict[str, Any]) -> None:
        self.state = self.compute(self.pause_minutes.value, self.provider.value)
        self._render()

    def _render(self) -> None:
        from html import escape
        if self.state.error:
            self.label.value = f"<span style='color:#c62828'>{escape(self.state.error)}</span>"
            self.table.value = ""
            return
        self.label.value = f"<b>{escape(self.summary())}</b>"
        self.table.value = f"<pre>{escape(self.rows_text())}</pre>"

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = f"PauseWidget(pause_minutes={self.pause_minutes.value}, provider={self.provider.value!r})"
        return bundle
