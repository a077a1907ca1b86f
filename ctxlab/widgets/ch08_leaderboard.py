"""Chapter 08: putting it together — the leaderboard widget and its figure, over :mod:`ctxlab.lab`.

What it holds:

* :func:`leaderboard_figure` — cost per strategy as bars, the facts kept and hit rate written on them;
* :class:`LeaderboardWidget` — strategy and window: the leaderboard at that window, the strategy's row
  highlighted, and its ledger.

The leaderboard is :func:`ctxlab.lab.compare.leaderboard`; the chapter's other measurements (the window, the
committed pi figures, the fake agent loop) are in :mod:`ctxlab.lab.ch08_leaderboard`. Simplified on purpose:
the widget computes a window's leaderboard on its first visit and keeps it (``timings`` holds what that cost);
a strategy change only picks another kept replay. The replays are the chapters' shared ones
(:data:`ctxlab.lab.replays.REPLAYS`): the board the chapter's cell computed at a window opens at once. A first
visit moves the progress bar under the controls, one step per strategy replayed; on a long transcript (more
than 150 model calls) the widget replays the other windows in the background after it opens, one strategy at a
time, so that a later window change finds its board computed (``wait()`` blocks until it is). There, a window
whose board is not computed yet answers at once: the label says what is being replayed, the background replays
that window first and draws its board when it has it (reading ``state`` waits for it). ``full`` and ``recorded``
send the same requests at every window: at a new window their replays are moved from the ones held
(:mod:`ctxlab.lab.replay_windows`, milliseconds), so a first visit replays only the other strategies.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Sequence

import plotly.graph_objects as go

from ctxlab.base.errors import CtxlabError
from ctxlab.base.safe_text import safe_html, shown
from ctxlab.facts import Fact
from ctxlab.lab.ch08_leaderboard import LeaderboardState, OwnBoard, leaderboard_state, quick_strategies
from ctxlab.lab.compare import CompareRow, Leaderboard, format_rows, leaderboard
from ctxlab.lab.replays import REPLAYS
from ctxlab.messages import Conversation
from ctxlab.widgets._ledger_plot import ledger_figure
from ctxlab.widgets._plots import COLOURS, figure, show_in
from ctxlab.widgets._progress import WORKER, Progress, background_wanted


def leaderboard_figure(rows: Sequence[CompareRow], title: str = "", highlight: str | None = None) -> go.Figure:
    """Cost per strategy (bars, USD); on each bar the hit rate and the facts kept. A strategy that sent calls over
    the window — main or summary calls — is grey (a provider would have refused them); one that could not build a
    context has no bar. Chapter 08."""
    shown = [r for r in rows if not r.error]
    colours = [COLOURS["dropped"] if r.overflows else COLOURS["pinned"] if r.name == highlight else COLOURS["cost"]
               for r in shown]
    text = [f"{100 * (r.hit_rate or 0):.0f}% hit" + (f" · {r.facts_kept} facts" if r.facts_kept is not None else "")
            + (f" · {r.overflows} over" if r.overflows else "") for r in shown]
    hover = [f"{r.compactions} compactions, {r.summary_calls} summary calls, {r.overflows} over the window"
             f" ({r.summary_overflows} of them summary calls), {r.total_input_tokens:,} input tokens" for r in shown]
    fig = figure(title or "Leaderboard: cost per strategy", height=360, xaxis=dict(title="strategy"),
                 yaxis=dict(title="cost (USD)", tickprefix="$", rangemode="tozero"), showlegend=False)
    fig.add_trace(go.Bar(x=[r.name for r in shown], y=[r.cost_usd or 0.0 for r in shown], marker=dict(color=colours),
                         text=text, textposition="outside", customdata=hover, cliponaxis=False,
                         hovertemplate="%{x}: $%{y:,.4f}<br>%{customdata}<extra></extra>"))
    return fig


class LeaderboardWidget:
    """Two choices, ``strategy`` and ``window`` (dropdowns): the leaderboard at that window (bars + text table) with
    the strategy highlighted, and its ledger figure.

    ``w = LeaderboardWidget(sample, windows=(30_000, 50_000), facts=facts); w.window.value = 50_000;
    w.state.selected.cost_usd``. ``strategies``: the default is :func:`~ctxlab.lab.ch08_leaderboard.quick_strategies`
    (all of them on the sample, five on a long transcript). ``boards`` passes leaderboards already computed
    (window -> :class:`Leaderboard`); replays held in :data:`~ctxlab.lab.replays.REPLAYS` are reused anyway.
    ``check``: replay with the invariant checks, as :func:`~ctxlab.lab.compare.leaderboard` does. ``background``:
    precompute the other windows after opening (None: on a transcript of more than 150 model calls).
    ``progress`` is the bar under the controls; ``timings`` holds what each window's first visit cost (seconds),
    ``last_reaction_s`` the last control change. Raises ValueError for no window, or a window that is not a
    positive whole number. :meth:`for_board` opens it on the chapter's leaderboard of your transcript. Chapter 08.
    """

    def __init__(self, conversation: Conversation, windows: Sequence[int], *, facts: Sequence[Fact] | None = None,
                 strategies: Sequence[str] | None = None, strategy: str = "compaction",
                 boards: dict[int, Leaderboard] | None = None, check: bool = True,
                 background: bool | None = None) -> None:
        import ipywidgets as W

        windows = tuple(windows)
        if not windows:
            raise ValueError("LeaderboardWidget needs at least one window (tokens), e.g. windows=(30_000, 50_000)")
        bad = [w for w in windows if isinstance(w, bool) or not isinstance(w, int) or w <= 0]
        if bad:
            raise ValueError(f"a window is a positive whole number of tokens, got {bad[0]!r}")
        windows = tuple(dict.fromkeys(windows))  # a window offered twice is one choice
        self.conversation = conversation
        self.facts = list(facts) if facts else None
        self.names = tuple(strategies or quick_strategies(conversation))
        self.check = check
        self.boards: dict[int, Leaderboard] = dict(boards or {})
        self.timings: dict[int, float] = {w: b.seconds for w, b in self.boards.items()}
        self.last_reaction_s = 0.0
        self._states: dict[tuple[int, str], LeaderboardState] = {}
        self._lock = threading.Lock()  # the background draws a board a control waits for: one drawing at a time
        self._shown: tuple[int, str] | None = None  # the (window, strategy) the view shows (None: not yet)
        self.strategy = W.Dropdown(options=list(self.names), description="strategy",
                                   value=strategy if strategy in self.names else self.names[0])
        self.window = W.Dropdown(options=[(f"{w:,}", w) for w in windows], value=windows[0], description="window")
        self.controls = W.HBox([self.strategy, self.window])
        self.progress = Progress()
        self.label = W.HTML()
        self.bars = W.Output()
        self.ledger = W.Output()
        self.table = W.HTML()
        self.widget = W.VBox([self.controls, self.progress.widget, self.label, self.bars, self.table, self.ledger])
        self.background = background_wanted(conversation, background)
        self._answer()
        for control in (self.strategy, self.window):
            control.observe(self._on_change, names="value")
        self._plan()

    @property
    def state(self) -> LeaderboardState:
        """The numbers at the controls' (strategy, window): computed now if they are not yet (waiting for the
        background when it is replaying them). Chapter 08."""
        return self.compute(self.strategy.value, self.window.value)

    @classmethod
    def for_board(cls, own: OwnBoard, **options: Any) -> "LeaderboardWidget":
        """The widget over the transcript of :func:`~ctxlab.lab.ch08_leaderboard.own_leaderboard`'s board: its
        strategies, checklist and invariant checks, opening at its window (the board kept, nothing replayed) with
        :func:`~ctxlab.lab.ch08_leaderboard.widget_windows` around it. ``options``: the constructor's others
        (``strategy``, ``background``). Chapter 08."""
        return cls(own.conversation, own.windows, facts=own.facts, strategies=own.names,
                   boards={own.window: own.board}, check=own.checked, **options)

    def board(self, window: int, *, progress: bool = True) -> Leaderboard:
        """The leaderboard at ``window`` (computed on the first visit, then kept); ``progress``: move the bar, one
        step per strategy that had to be replayed. Chapter 08."""
        if window not in self.boards:
            todo = [n for n in self.names if not REPLAYS.ready(self.conversation, n, window=window, check=self.check)]
            if progress and todo:
                self.progress.start(len(todo), f"{len(todo)} strategies at window {window:,}")

            def step(name: str) -> None:
                if progress and name in todo:
                    self.progress.step(f"{name} at {window:,}")

            board = leaderboard(self.conversation, self.names, window=window, facts=self.facts, check=self.check,
                                progress=step)
            self.boards.setdefault(window, board)  # the background may have built it meanwhile: keep one
            self.timings.setdefault(window, board.seconds)
            if progress:
                self.progress.done(f"window {window:,}: {len(todo)} of {len(self.names)} strategies replayed now")
        return self.boards[window]

    def compute(self, strategy: str, window: int) -> LeaderboardState:
        """The numbers for one (strategy, window): pure given the kept leaderboards. Chapter 08."""
        key = (window, strategy)
        if key not in self._states:
            self._states[key] = leaderboard_state(self.board(window), strategy, window)
        return self._states[key]

    def _ready(self, window: int) -> bool:
        """Whether ``window``'s board can be shown without replaying (built, or every replay held)."""
        return window in self.boards or all(REPLAYS.ready(self.conversation, n, window=window, check=self.check)
                                            for n in self.names)

    def _answer(self) -> None:
        """Show the controls' setting: drawn now when its board needs no replay, or on a short transcript; on a
        long one, a label saying what the background replays first (it draws the board when done)."""
        window, strategy = self.window.value, self.strategy.value
        if self.background and not self._ready(window):
            todo = [n for n in self.names if not REPLAYS.ready(self.conversation, n, window=window, check=self.check)]
            with self._lock:  # the background may have drawn it meanwhile: then it stays drawn
                if window not in self.boards:
                    self._shown = None  # the background draws this setting when it has its board
                    self.label.value = (
                        f"<b>{shown(strategy, html=True)}</b> at window <b>{window:,}</b>: replaying {len(todo)} of "
                        f"{len(self.names)} strategies ({shown(', '.join(todo), html=True)}) first; the leaderboard "
                        "appears here when they are done (reading <code>.state</code> waits for it).")
                    return
        self._show(window, strategy)

    def _show(self, window: int, strategy: str) -> None:
        """Compute (or read) a setting's state and draw it, if the controls still stand there."""
        with self._lock:
            state = self.compute(strategy, window)
            if (self.window.value, self.strategy.value) == (window, strategy) and self._shown != (window, strategy):
                self._shown = (window, strategy)
                self._render(state)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the background has computed what it planned (at once without a background); False if
        ``timeout`` seconds passed first. Chapter 08."""
        return WORKER.wait(self, timeout)

    def _plan(self) -> None:
        """Queue, in the background, every replay the other windows need (the nearest windows and the selected
        strategy first), then each window's board."""
        if not self.background:
            return
        values = [v for _, v in self.window.options]
        here = values.index(self.window.value)
        names = sorted(self.names, key=lambda n: n != self.strategy.value)
        jobs = []
        for w in sorted(values, key=lambda v: (abs(values.index(v) - here), values.index(v))):
            if w in self.boards:
                continue
            jobs += [(f"{n} at {w:,}", lambda n=n, w=w: self._quietly(n, w)) for n in names
                     if not REPLAYS.ready(self.conversation, n, window=w, check=self.check)]
            jobs.append((f"the board at {w:,}", lambda w=w: self._ahead(w)))
        WORKER.submit(self, jobs, self.progress.background)

    def _ahead(self, window: int) -> None:
        """The background's job: a window's board; drawn if the controls wait for it."""
        self.board(window, progress=False)
        if self.window.value == window:
            self._show(window, self.strategy.value)

    def _quietly(self, name: str, window: int) -> None:
        try:
            REPLAYS.run(self.conversation, name, window=window, check=self.check)
        except CtxlabError:
            pass  # kept by the cache: the board shows the reason

    def _on_change(self, change: dict[str, Any]) -> None:
        started = time.perf_counter()
        self._answer()
        self.last_reaction_s = time.perf_counter() - started
        self._plan()

    def _render(self, s: LeaderboardState) -> None:
        r = s.selected
        if r is None or r.error:
            why = r.error[:200] if r is not None else "not in this leaderboard"  # the row keeps it whole
            self.label.value = (f"<b>{shown(s.strategy, html=True)}</b> at window {s.window:,}: "
                                f"<span style='color:#c62828'>{shown(why, html=True)}</span>")
            self.ledger.outputs = ()
        else:
            cost = "unpriced" if r.cost_usd is None else f"${r.cost_usd:,.4f}"
            where = (f"rank <b>{s.rank}</b> of the strategies that stayed inside the window" if s.rank else
                     f"<span style='color:#c62828'>{r.overflows} calls over the window"
                     f"{f' ({r.summary_overflows} of them summary calls)' if r.summary_overflows else ''}</span>")
            facts = f", facts kept {r.facts_kept} (worst call {r.facts_kept_min})" if r.facts_kept is not None else ""
            self.label.value = (f"<b>{shown(s.strategy, html=True)}</b> at window {s.window:,}: cost <b>{cost}</b>, "
                                f"hit rate {100 * (r.hit_rate or 0):.1f}%, {r.compactions} compactions, "
                                f"{s.rewrites} prefix rewrites, largest context {s.max_context:,}{facts} — {where}")
            show_in(self.ledger, ledger_figure(self.board(s.window).results[s.strategy].ledger,
                                               f"{s.strategy} · window {s.window:,}"))
        show_in(self.bars, leaderboard_figure(s.rows, f"Leaderboard · window {s.window:,}", highlight=s.strategy))
        self.table.value = "<pre style='font-size:11px'>" + safe_html(format_rows(s.rows), multiline=True) + "</pre>"

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = f"LeaderboardWidget(strategy={self.strategy.value!r}, window={self.window.value:,})"
        return bundle
