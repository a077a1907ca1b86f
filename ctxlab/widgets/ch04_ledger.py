"""Chapter 04's widget: the prefix-cache ledger of a replay, with its controls.

What it holds: :class:`LedgerWidget` — strategy, cache rules, model, window and a coffee break; it
shows the ledger figure (:func:`~ctxlab.widgets._ledger_plot.ledger_figure`), a per-call table, the
totals and the prefix diff of one call against the one before it. The numbers come from
:class:`ctxlab.lab.ch04_replays.LedgerReplays` (the chapter's measurements live in
:mod:`ctxlab.lab.ch04_ledger`, :mod:`ctxlab.lab.ch04_collapse` and :mod:`ctxlab.lab.ch04_replays`); this
module only draws them.

Simplified on purpose: the widget keeps the numbers it showed (keyed by its settings) and its replays are the
chapters' shared ones (:data:`ctxlab.lab.replays.REPLAYS`), so going back to a setting is instant; a new
setting replays the whole conversation (about 0.1 s on the sample, seconds on a long transcript: the progress
bar under the controls says what runs), unless ``precompute=True`` replayed every strategy and provider when it
opened. On a long transcript (more than 150 model calls) the widget also replays, in the background after each
change, the settings one click away (:meth:`LedgerWidget.next_settings`), so the next click finds them computed.
"""

from __future__ import annotations

from typing import Any, Sequence

from ctxlab.base.safe_text import safe_html, shown
from ctxlab.lab.ch04_replays import (
    MODELS,
    PROVIDERS,
    ROW_COLUMNS,
    STRATEGIES,
    DiffState,
    LedgerReplays,
    LedgerState,
    call_rows,
)
from ctxlab.lab.workbook import text_table
from ctxlab.messages import Conversation
from ctxlab.replay import ReplayResult
from ctxlab.strategies import model_calls
from ctxlab.tables.default_model import DEFAULT_MODEL
from ctxlab.tables.profiles import profile_for
from ctxlab.widgets._inputs import conversation_of, widened
from ctxlab.widgets._ledger_plot import ledger_figure
from ctxlab.widgets._plots import error_html, show_in
from ctxlab.widgets._progress import WORKER, Progress, background_wanted, run_steps


class LedgerWidget:
    """Replay a conversation and read its ledger. Controls: ``strategy``, ``provider`` (cache rules), ``model``,
    ``window`` (tokens), ``pause_minutes`` and ``pause_call`` (a coffee break), ``diff_call`` (the prefix diff shown).

    ``w = LedgerWidget(conv); w.pause_minutes.value = 10; w.state.rows[w.pause_call.value - 1].cache_read_tokens``
    → 0. ``compute(...)`` is the pure part (:class:`~ctxlab.lab.ch04_replays.LedgerReplays`, kept in
    ``replays``): the same numbers, no widgets touched. ``precompute=True`` replays every strategy under both
    providers' rules when the widget opens (see :meth:`precompute`). ``background``: replay the settings one click
    away after each change (None: on a transcript of more than 150 model calls); ``progress`` is the bar under the
    controls. ``conversation`` may be what ``ctxlab.load`` returns (a Transcript of one conversation); a ``window``
    off the slider's range (5,000 to the model's window) widens it, it is never clamped. Chapter 04.
    """

    def __init__(self, conversation: Conversation, *, window: int | None = None, strategy: str = "full",
                 provider: str | None = None, models: Sequence[str] = MODELS, precompute: bool = False,
                 background: bool | None = None) -> None:
        import ipywidgets as W

        conversation = conversation_of(conversation, "LedgerWidget")
        self.conversation = conversation
        self.replays = LedgerReplays(conversation)  # every replay run and every state measured, by settings
        own = profile_for(conversation.model or DEFAULT_MODEL, conversation.provider)
        provider = provider or (own.provider if own.provider in PROVIDERS else "anthropic")
        n = max(2, sum(1 for _, c in model_calls(conversation) if c.thread == self.replays.thread))
        top = max(200_000, own.context_window if own.context_window <= 1_000_000 else 200_000)
        window, low, top = widened("LedgerWidget", "window", window, 5_000, top) if window is not None else \
            (min(own.context_window, top), 5_000, top)  # a window off the slider's range widens it (no quiet clamp)
        style = {"description_width": "initial"}
        self.strategy = W.Dropdown(options=list(STRATEGIES), value=strategy, description="strategy")
        self.provider = W.Dropdown(options=list(PROVIDERS), value=provider, description="cache rules")
        self.model = W.Dropdown(options=list(models), value=models[0], description="model")
        self.window = W.IntSlider(value=window, min=low, max=top, step=5_000,
                                  description="window (tokens)", continuous_update=False, readout_format=",",
                                  style=style, layout=W.Layout(width="60%"))
        self.pause_minutes = W.IntSlider(value=0, min=0, max=90, step=1, description="coffee break (min)",
                                         continuous_update=False, style=style)
        self.pause_call = W.IntSlider(value=min(20, n), min=2, max=n, description="before call",
                                      continuous_update=False, style=style)
        self.diff_call = W.IntSlider(value=min(20, n), min=1, max=n, description="prefix diff of call",
                                     continuous_update=False, style=style)
        self.controls = W.VBox([W.HBox([self.strategy, self.provider, self.model]), self.window,
                                W.HBox([self.pause_minutes, self.pause_call]), self.diff_call])
        self.progress = Progress()
        self.label = W.HTML()
        self.plot = W.Output()
        self.table = W.HTML()
        self.diff_view = W.HTML()
        self.widget = W.VBox([self.controls, self.progress.widget, self.label, self.plot, self.table,
                              self.diff_view])
        self.background = background_wanted(conversation, background)
        if precompute:
            self.precompute()
        self.state = self._visit()
        self.diff = self.compute_diff(self.diff_call.value, **self.settings())
        for control in (self.strategy, self.provider, self.model, self.window, self.pause_minutes, self.pause_call):
            control.observe(self._on_change, names="value")
        self.diff_call.observe(self._on_diff, names="value")
        self._render()
        self._plan()

    # -- the numbers, from lab/ (the controls' values passed in) ----------------------------------------

    def settings(self) -> dict[str, Any]:
        """The controls' values as :meth:`compute`'s keyword arguments. Chapter 04."""
        return dict(strategy=self.strategy.value, provider=self.provider.value, model=self.model.value,
                    window=self.window.value, pause_minutes=self.pause_minutes.value, pause_call=self.pause_call.value)

    def result(self, strategy: str, provider: str, model: str, window: int, pause_minutes: int = 0,
               pause_call: int = 2) -> ReplayResult:
        """The replay for these settings (run once, then kept). Raises what the replay raised (a BudgetError).
        Chapter 04."""
        return self.replays.result(strategy, provider, model, window, pause_minutes, pause_call)

    def precompute(self) -> None:
        """Replay every strategy under both providers' cache rules at the current model, window and pause, so
        that changing the strategy or the provider shows numbers already computed (slower to open, instant to use).
        Chapter 04."""
        s = self.settings()
        todo = [{**s, "strategy": x, "provider": p} for x in STRATEGIES for p in PROVIDERS]
        steps = [(f"{n['strategy']} · {n['provider']}", lambda n=n: self.compute(**n)) for n in todo
                 if not self.replays.held(**n)]
        run_steps(self.progress, steps, f"{len(steps)} settings", f"{len(steps)} settings replayed when it opened")

    def next_settings(self) -> list[dict[str, Any]]:
        """The settings one click away from the controls' (as :meth:`settings` gives them), the likeliest first:
        another strategy, the other cache rules (then both), the window one step either side, another model.
        What the background replays after each change. Chapter 04."""
        s, w = self.settings(), self.window
        out = [{**s, "strategy": x} for x in STRATEGIES if x != s["strategy"]]
        for provider in (p for p in PROVIDERS if p != s["provider"]):
            out += [{**s, "provider": provider, "strategy": x}
                    for x in (s["strategy"], *(x for x in STRATEGIES if x != s["strategy"]))]
        out += [{**s, "window": v} for v in (s["window"] - w.step, s["window"] + w.step) if w.min <= v <= w.max]
        out += [{**s, "model": m} for m in self.model.options if m != s["model"]]
        return out

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the background has replayed what it planned (at once without a background); False if
        ``timeout`` seconds passed first. Chapter 04."""
        return WORKER.wait(self, timeout)

    def _plan(self) -> None:
        if self.background:
            todo = [n for n in self.next_settings() if not self.replays.held(**n)]
            WORKER.submit(self, [(f"{n['strategy']} · {n['provider']} · {n['model']} · {n['window']:,}",
                                  lambda n=n: self.compute(**n)) for n in todo], self.progress.background)

    def _visit(self) -> LedgerState:
        """The state for the controls' settings; the progress bar moves when it must replay."""
        s = self.settings()
        if self.replays.held(**s):
            return self.compute(**s)
        what = f"{s['strategy']} under {s['provider']}'s rules, window {s['window']:,}"
        self.progress.start(1, what)
        state = self.compute(**s)
        self.progress.step(what)
        self.progress.done(f"replayed {what}")
        return state

    def compute(self, strategy: str, provider: str, model: str, window: int, pause_minutes: int = 0,
                pause_call: int = 2) -> LedgerState:
        """The ledger's numbers for these settings; an impossible window is reported in ``error``, not raised.
        Chapter 04."""
        return self.replays.compute(strategy, provider, model, window, pause_minutes, pause_call)

    def compute_diff(self, call: int, strategy: str, provider: str, model: str, window: int, pause_minutes: int = 0,
                     pause_call: int = 2) -> DiffState | None:
        """Call ``call`` against the previous call of its thread: the first differing block and why. None on error.
        Chapter 04."""
        return self.replays.compute_diff(call, strategy, provider, model, window, pause_minutes, pause_call)

    def compare(self, window: int, provider: str | None = None, model: str | None = None) -> list[LedgerState]:
        """The four strategies under one window (the other settings as the controls stand, no pause). Chapter 04."""
        return self.replays.compare(window, provider or self.provider.value, model or self.model.value)

    def contrast_window(self, step: int = 5_000) -> int:
        """A window where the strategies differ: half the largest prompt ``full`` sends (rounded up to
        ``step``, at most the model's window), raised until ``budgeted`` can build every call. The sample: 30,000.
        Chapter 04."""
        return self.replays.contrast_window(self.provider.value, self.model.value, self.window.max, step)

    # -- the view ---------------------------------------------------------------------------------------

    def _on_change(self, change: dict[str, Any]) -> None:
        self.state = self._visit()
        self.diff = self.compute_diff(self.diff_call.value, **self.settings())
        self._render()
        self._plan()

    def _on_diff(self, change: dict[str, Any]) -> None:
        self.diff = self.compute_diff(change["new"], **self.settings())
        self._render_diff()

    def _render(self) -> None:
        s = self.state
        if s.error:
            self.label.value = error_html("no replay", s.error)
            self.plot.outputs = ()
            self.table.value = ""
        else:
            cost = "unpriced" if s.cost_usd is None else f"${s.cost_usd:,.4f}"
            vendor = profile_for(s.model).provider if s.model != "as recorded" else s.provider
            what_if = (f" <i>(a what-if: {shown(s.model, html=True)} is not served under {s.provider}'s rules)</i>"
                       if vendor in PROVIDERS and vendor != s.provider else "")
            self.label.value = (f"<b>{s.strategy}</b> under {s.provider}'s cache rules, "
                                f"model {shown(s.model, html=True)}, window {s.window:,}: {s.calls} calls, "
                                f"cost <b>{cost}</b>, hit rate "
                                f"<b>{100 * s.hit_rate:.1f}%</b> (token-weighted), {s.overflow_calls} over the window, "
                                f"{s.dropped_calls} dropped history{what_if}")
            result = self.result(**self.settings())
            title = f"{s.strategy} · {s.provider} rules · window {s.window:,}"
            show_in(self.plot, ledger_figure(result.ledger, title))
            self.table.value = ("<pre style='max-height:260px;overflow:auto;font-size:11px'>"
                                + safe_html(text_table(call_rows(s), ROW_COLUMNS), multiline=True) + "</pre>")
        self._render_diff()

    def _render_diff(self) -> None:
        d = self.diff
        if d is None:
            self.diff_view.value = ""
            return
        where = "nothing differs: the request only appends" if d.index is None else \
            f"first differing block: #{d.index} ({shown(d.old_block, html=True)} → {shown(d.new_block, html=True)})"
        self.diff_view.value = (f"<b>prefix diff, call {d.call} against call {d.previous}</b>: "
                                f"{shown(d.reason, html=True)}; {where}; {d.shared_tokens:,} tokens shared.<br>"
                                f"cache: read {d.cache_read_tokens:,}, wrote {d.cache_write_tokens:,} — "
                                f"{shown(d.cache_reason, html=True)}")

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = (f"LedgerWidget(strategy={self.strategy.value!r}, provider={self.provider.value!r}, "
                                f"model={self.model.value!r}, window={self.window.value:,})")
        return bundle
