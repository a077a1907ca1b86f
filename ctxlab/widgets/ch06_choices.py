"""Chapter 06's core widget: the two choices that change what a summary costs, over :mod:`ctxlab.lab.ch06_choices`.

:class:`SummaryChoiceWidget` — ``placement`` (where the summary goes) and ``regenerate`` (every truncating call,
only when what is dropped changes, or extended with only what newly dropped), each a row of toggle buttons; it shows the ledger of that replay: the prompt
tokens of the main calls and of the summary calls as one bar, the summary calls, the hit rate and the cost.
Simplified on purpose: one window (the chapter's); every setting's state is kept, so a second visit is instant.
The window slider of the first edition lives on in ``06_summaries_further`` (:class:`~ctxlab.widgets.ch06_summaries.
SummaryWidget`).
"""

from __future__ import annotations

from typing import Any

from ctxlab.base import validate
from ctxlab.base.errors import CtxlabError
from ctxlab.lab.ch06_choices import REGENERATE, ChoiceRow, choice_row
from ctxlab.messages import Conversation
from ctxlab.summary_strategy import PLACEMENTS
from ctxlab.widgets._inputs import conversation_of
from ctxlab.widgets._plots import COLOURS, error_html, html_bar

LABELS = {"system_end": "end of system prompt", "system_block": "own system block", "first_user": "first user message",
          "every_call": "every truncating call", "on_change": "only on a change",
          "extend": "extend with what is new"}


class SummaryChoiceWidget:
    """Two choices over ``budgeted+summary`` at one window: ``placement`` and ``regenerate`` (ToggleButtons).

    ``w = SummaryChoiceWidget(conv, 30_000); w.regenerate.value = "on_change"; w.state.summary_calls`` → 6 on the
    sample (129 at ``"every_call"``, 4 at ``"extend"``). ``state`` is the :class:`~ctxlab.lab.ch06_choices.ChoiceRow` of the current
    setting; ``replays`` counts the settings computed so far. ``window`` is a positive whole number of tokens (else
    CtxlabError naming it). Chapter 06.
    """

    def __init__(self, conversation: Conversation, window: int, *, placement: str = "system_end",
                 regenerate: str = "every_call") -> None:
        import ipywidgets as W

        conversation = conversation_of(conversation, "SummaryChoiceWidget")
        try:
            self.window = validate.tokens("window", window, allow_none=False)
        except CtxlabError as err:
            raise CtxlabError(f"SummaryChoiceWidget: {err}") from None
        if placement not in PLACEMENTS or regenerate not in REGENERATE:
            raise CtxlabError(f"SummaryChoiceWidget: placement one of {', '.join(PLACEMENTS)}, regenerate one of "
                              f"{', '.join(REGENERATE)} (got {placement!r}, {regenerate!r})")
        self.conversation = conversation
        self._states: dict[tuple[str, str], ChoiceRow] = {}
        self.replays = 0
        style = {"description_width": "initial", "button_width": "170px"}
        self.placement = W.ToggleButtons(options=[(LABELS[p], p) for p in PLACEMENTS], value=placement,
                                         description="summary goes at", style=style)
        self.regenerate = W.ToggleButtons(options=[(LABELS[g], g) for g in REGENERATE], value=regenerate,
                                          description="regenerate it", style=style)
        self.controls = W.VBox([self.placement, self.regenerate])
        self.label = W.HTML()
        self.bar = W.HTML()
        self.widget = W.VBox([self.controls, self.label, self.bar])
        self._render()
        for control in (self.placement, self.regenerate):
            control.observe(lambda _change: self._render(), names="value")

    def compute(self, placement: str, regenerate: str) -> ChoiceRow:
        """The ledger for one setting, from the kept states or a replay. Chapter 06."""
        key = (placement, regenerate)
        if key not in self._states:
            self.replays += 1
            self._states[key] = choice_row(self.conversation, self.window, placement, regenerate)
        return self._states[key]

    @property
    def state(self) -> ChoiceRow:
        """The :class:`~ctxlab.lab.ch06_choices.ChoiceRow` at the controls' setting. Chapter 06."""
        return self.compute(self.placement.value, self.regenerate.value)

    def _render(self) -> None:
        s = self.state
        if s.error:
            self.label.value = error_html("no replay", s.error)
            self.bar.value = ""
            return
        cost = ("unpriced (no model recorded)" if s.total_cost_usd is None else
                f"<b>${s.total_cost_usd:,.4f}</b>, of which summary calls ${s.summary_cost_usd or 0:,.4f}")
        self.label.value = (f"window <b>{s.window:,}</b> · summary at <b>{LABELS[s.placement]}</b>, regenerated "
                            f"<b>{LABELS[s.regenerate]}</b>: <b>{s.summary_calls:,}</b> summary calls for "
                            f"{s.summaries:,} summaries beside {s.main_calls:,} main calls; hit rate "
                            f"<b>{100 * s.hit_rate:.1f}%</b>; cost {cost}.")
        self.bar.value = html_bar([("main calls' prompts (tokens)", s.main_input_tokens, COLOURS["kept"]),
                                   ("summary calls' prompts (tokens)", s.summary_input_tokens, COLOURS["rewrite"])])

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = (f"SummaryChoiceWidget(window={self.window:,}, placement={self.placement.value!r}, "
                                f"regenerate={self.regenerate.value!r})")
        return bundle
