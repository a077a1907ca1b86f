"""Chapter 08: putting it together — every strategy side by side, and ctxlab inside an agent loop.

What it holds:

* :func:`leaderboard` — :func:`ctxlab.lab.compare.compare` that also keeps each strategy's replay (so a widget can
  show its ledger without replaying again); its rows equal ``compare``'s;
* :func:`facts_for` — the bundled fact checklist that belongs to a conversation (the sample's, pi's, or none);
* :func:`leaderboard_window` — the window a transcript's leaderboard is measured at (its model's own when the
  transcript fills it, else one where the strategies differ);
* :func:`leaderboard_figure` — cost per strategy as bars, the facts kept and hit rate written on them;
* :func:`read_leaderboard_csv` — the committed pi figures (``data/leaderboard_pi.csv``), as leaderboard rows
  and as chapter 07's policy rows;
* :func:`fake_llm` / :func:`fake_tool` / :func:`run_fake_loop` — a dozen steps of an agent loop driven through
  :class:`~ctxlab.loop.ContextManager` by a fake model (no network), the session file in a folder you pick;
* :class:`LeaderboardWidget` — strategy and window: the leaderboard at that window, the strategy's row
  highlighted, and its ledger.

Simplified on purpose: the widget computes a window's leaderboard on its first visit and keeps it
(``timings`` holds what that cost); a strategy change only picks another kept replay.
"""

from __future__ import annotations

import csv
import io
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ctxlab.lab.compare import CompareRow, strategies_for
from ctxlab.base.errors import CtxlabError
from ctxlab.facts import Fact, fact_retention, load_facts
from ctxlab.loop import ContextManager
from ctxlab.messages import Conversation, ToolSpec
from ctxlab.tables.profiles import profile_for, with_window
from ctxlab.replay import ReplayResult, replay
from ctxlab.base.safe_text import safe_html, shown
from ctxlab.io.session import Session
from ctxlab.widgets._plots import COLOURS, figure, show_in
from ctxlab.widgets.ch07_compaction import PolicyRow, compaction_window, policy_name, prefix_rewrites

from ctxlab.lab.data import CHECKLISTS, DATA, LEADERBOARD_PI
# The strategies compared on a long transcript (a full leaderboard of pi takes about a minute).
QUICK_STRATEGIES = ("full", "budgeted", "compaction", "pipeline")
LONG_TRANSCRIPT_CALLS = 150

# ---- the leaderboard -----------------------------------------------------------------------------------


def compare_row(name: str, result: ReplayResult, conversation: Conversation,
                facts: Sequence[Fact] | None = None) -> CompareRow:
    """The leaderboard row of one replay, as :func:`ctxlab.lab.compare.compare` builds it. Chapter 08."""
    totals = result.ledger.totals()
    kept = fact_retention(result, facts, conversation) if facts else None
    return CompareRow(
        name=name, cost_usd=totals.cost_usd, hit_rate=totals.hit_rate,
        compactions=sum(1 for e in result.new_entries if e.kind == "compaction"),
        summary_calls=sum(1 for r in result.ledger.rows if r.note.startswith("summary call")),
        overflows=sum(1 for r in result.records if r.overflow), total_input_tokens=totals.total_input_tokens,
        facts_kept=kept.facts_kept_last if kept else None, facts_kept_min=kept.facts_kept_min if kept else None,
        violations=sum(len(r.violations) for r in result.records))


@dataclass(frozen=True)
class Leaderboard:
    """Every strategy at one window: the rows (as ``compare`` gives them), each replay, and the seconds it took."""

    window: int | None
    rows: tuple[CompareRow, ...]
    results: dict[str, ReplayResult]
    seconds: float

    def row(self, name: str) -> CompareRow:
        return next(r for r in self.rows if r.name == name)


def leaderboard(conversation: Conversation, strategies: Sequence[str] | None = None, *, window: int | None = None,
                facts: Sequence[Fact] | None = None, check: bool = True) -> Leaderboard:
    """Replay ``conversation`` under each strategy, as :func:`ctxlab.lab.compare.compare` does, keeping the replays.

    ``leaderboard(sample, window=30_000, facts=load_facts(SAMPLE_FACTS)).row("compaction").cost_usd`` → 0.8820.
    A strategy that cannot build a context gets a row with ``error``. Chapter 08.
    """
    started = time.perf_counter()
    rows, results = [], {}
    for name in strategies or strategies_for(conversation):
        try:
            result = replay(conversation, name, window=window, check=check)
        except CtxlabError as err:
            rows.append(CompareRow(name, None, None, 0, 0, 0, 0, error=" ".join(str(err).split())[:200]))
            continue
        results[name] = result
        rows.append(compare_row(name, result, conversation, facts))
    return Leaderboard(window, tuple(rows), results, time.perf_counter() - started)


def facts_for(conversation: Conversation) -> list[Fact] | None:
    """The bundled checklist whose every fact names a message of ``conversation`` (the sample's or pi's), else None.
    Chapter 08."""
    ids = {m.id for m in conversation.messages}
    for path in CHECKLISTS:
        if path.exists():
            facts = load_facts(path)
            if facts and all(f.message_id in ids for f in facts):
                return facts
    return None


def leaderboard_window(conversation: Conversation, step: int = 5_000) -> int:
    """The model's own window when ``full`` fills 80% of it (the strategies already differ there, and ``recorded``
    is what the agent did); else a window where they differ (chapter 07's :func:`compaction_window`). Chapter 08."""
    cap = profile_for(conversation.model or "claude-sonnet-4-5", conversation.provider).context_window
    peak = max((rec.context_tokens for rec in replay(conversation, "full").records), default=0)
    return cap if peak > 0.8 * cap else compaction_window(conversation, step)


def quick_strategies(conversation: Conversation) -> tuple[str, ...]:
    """Every strategy for a short transcript; for a long one (over 150 calls) :data:`QUICK_STRATEGIES`, plus
    ``recorded`` when it holds compactions of its own. Chapter 08."""
    names = strategies_for(conversation)
    calls = sum(1 for m in conversation.messages if m.role == "assistant" and m.origin is None)
    if calls <= LONG_TRANSCRIPT_CALLS:
        return names
    return QUICK_STRATEGIES + tuple(n for n in names if n == "recorded")


def best(rows: Sequence[CompareRow]) -> CompareRow | None:
    """The cheapest row that built a context for every call inside the window (no error, no overflow). Chapter 08."""
    valid = [r for r in rows if not r.error and not r.overflows and r.cost_usd is not None]
    return min(valid, key=lambda r: r.cost_usd) if valid else None


def leaderboard_figure(rows: Sequence[CompareRow], title: str = "", highlight: str | None = None) -> Any:
    """Cost per strategy (bars, USD); on each bar the hit rate and the facts kept. A strategy that sent calls over
    the window is grey (a provider would have refused them); one that could not build a context has no bar.
    Chapter 08."""
    import plotly.graph_objects as go

    shown = [r for r in rows if not r.error]
    colours = [COLOURS["dropped"] if r.overflows else COLOURS["pinned"] if r.name == highlight else COLOURS["cost"]
               for r in shown]
    text = [f"{100 * (r.hit_rate or 0):.0f}% hit" + (f" · {r.facts_kept} facts" if r.facts_kept is not None else "")
            + (f" · {r.overflows} over" if r.overflows else "") for r in shown]
    hover = [f"{r.compactions} compactions, {r.summary_calls} summary calls, {r.overflows} over the window, "
             f"{r.total_input_tokens:,} input tokens" for r in shown]
    fig = figure(title or "Leaderboard: cost per strategy", height=360, xaxis=dict(title="strategy"),
                 yaxis=dict(title="cost (USD)", tickprefix="$", rangemode="tozero"), showlegend=False)
    fig.add_trace(go.Bar(x=[r.name for r in shown], y=[r.cost_usd or 0.0 for r in shown], marker=dict(color=colours),
                         text=text, textposition="outside", customdata=hover, cliponaxis=False,
                         hovertemplate="%{x}: $%{y:,.4f}<br>%{customdata}<extra></extra>"))
    return fig


def rewrite_counts(board: Leaderboard) -> dict[str, int]:
    """Prefix rewrites per strategy (chapter 07's :func:`~ctxlab.widgets.ch07_compaction.prefix_rewrites`).
    Chapter 08."""
    return {name: len(prefix_rewrites(result)) for name, result in board.results.items()}


# ---- the committed pi figures ----------------------------------------------------------------------------------

CSV_COLUMNS = ("section", "window", "name", "trigger_ratio", "target_ratio", "cost_usd", "hit_rate", "compactions",
               "summary_calls", "overflows", "prefix_rewrites", "total_input_tokens", "largest_context", "facts_kept",
               "facts_kept_min", "violations", "error")


@dataclass(frozen=True)
class CommittedFigures:
    """``data/leaderboard_pi.csv``: the header comment as ``key: value`` pairs, and the rows as strings."""

    header: dict[str, str]
    rows: tuple[dict[str, str], ...]

    def section(self, name: str) -> list[dict[str, str]]:
        return [r for r in self.rows if r["section"] == name]

    def compare_rows(self, section: str = "leaderboard") -> list[CompareRow]:
        """The rows of a section as leaderboard rows (what ``compare`` would give)."""
        return [CompareRow(r["name"], _float(r["cost_usd"]), _float(r["hit_rate"]), int(r["compactions"] or 0),
                           int(r["summary_calls"] or 0), int(r["overflows"] or 0), int(r["total_input_tokens"] or 0),
                           _int(r["facts_kept"]), _int(r["facts_kept_min"]), int(r["violations"] or 0),
                           r["error"] or None) for r in self.section(section)]

    def policy_rows(self, section: str = "policies") -> list[PolicyRow]:
        """The rows of a section as chapter 07's policy rows."""
        return [PolicyRow(policy_name((float(r["trigger_ratio"]), float(r["target_ratio"]))) if r["trigger_ratio"]
                          else r["name"], int(r["window"]), _float(r["trigger_ratio"]), _float(r["target_ratio"]),
                          int(r["compactions"] or 0), int(r["prefix_rewrites"] or 0), int(r["summary_calls"] or 0),
                          _float(r["hit_rate"]) or 0.0, _float(r["cost_usd"]), int(r["total_input_tokens"] or 0),
                          int(r["largest_context"] or 0), _int(r["facts_kept"]), _int(r["facts_kept_min"]),
                          r["error"]) for r in self.section(section)]


def _float(text: str) -> float | None:
    return float(text) if text else None


def _int(text: str) -> int | None:
    return int(text) if text else None


def read_leaderboard_csv(path: str | Path = LEADERBOARD_PI) -> CommittedFigures:
    """The committed figures: ``# key: value`` comment lines, then a CSV with :data:`CSV_COLUMNS`. Chapter 08."""
    header, body = {}, []
    for line in Path(path).read_text(encoding="utf-8").splitlines(keepends=True):
        if line.startswith("#"):
            key, _, value = line[1:].strip().partition(": ")
            if value:
                header[key] = value
        else:
            body.append(line)
    return CommittedFigures(header, tuple(csv.DictReader(io.StringIO("".join(body)))))


# ---- plug it into your loop ------------------------------------------------------------------------------------

SYSTEM = "You are a careful coding agent. Use the tools; answer briefly."
TASK = "Read every module under src/ and list the functions that return None. Never edit files."
TOOLS = (ToolSpec("read_file", "Read a file and return its text.",
                  {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),)


def fake_llm(body: dict[str, Any], step: int, steps: int = 12) -> dict[str, Any]:
    """A stand-in for a model API (no network): asks to read ``src/mod<step>.py`` until ``steps``, then answers.
    Its usage is made up in Anthropic's fields from the body's size (chars/4), as a real reply would carry it.
    Chapter 08."""
    size = len(json.dumps(body)) // 4
    if step < steps:
        return {"text": f"Reading src/mod{step}.py next.",
                "tool_calls": [(f"call{step}", "read_file", {"path": f"src/mod{step}.py"})],
                "usage": {"input_tokens": 3, "cache_read_input_tokens": max(0, size - 3), "output_tokens": 25}}
    return {"text": "Done: half of the handlers return None.", "tool_calls": [],
            "usage": {"input_tokens": 3, "cache_read_input_tokens": max(0, size - 3), "output_tokens": 12}}


def fake_tool(name: str, arguments: str) -> str:
    """A deterministic tool: ``read_file`` returns about 600 tokens of Python for any path. Chapter 08."""
    path = json.loads(arguments).get("path", "?")
    return f"# {path}\n" + "".join(f"def handler_{i}(request):\n    return {'None' if i % 2 else 'request.ok'}\n\n"
                                   for i in range(60))


@dataclass(frozen=True)
class LoopStep:
    """One step of the loop: the request's size (tokens) and messages, whether the strategy compacted before it,
    and the session file afterwards (bytes, lines, and whether it only grew)."""

    step: int
    request_tokens: int
    messages: int
    compacted: bool
    file_bytes: int
    file_lines: int
    appended_only: bool


@dataclass(frozen=True)
class LoopRun:
    """A fake agent run: its steps, the first request body, and the session file's name."""

    steps: tuple[LoopStep, ...]
    first_anthropic_body: dict[str, Any]
    first_openai_body: dict[str, Any]
    file_name: str
    window: int


def run_fake_loop(path: str | Path, *, steps: int = 12, window: int = 6_000, strategy: str = "compaction",
                  model: str = "claude-sonnet-4-5") -> LoopRun:
    """An agent loop driven by :func:`fake_llm` through :class:`~ctxlab.loop.ContextManager`, the session written
    to ``path`` (a new file). Swap ``fake_llm`` for your HTTP client and ``fake_tool`` for your tools. Chapter 08."""
    path = Path(path)
    session = Session.create(path, system=[SYSTEM], tools=TOOLS, model=model)
    manager = ContextManager(session, strategy, model=model, profile=with_window(profile_for(model), window))
    manager.add_user(TASK)
    log, first = [], None
    for step in range(1, steps + 1):
        before = path.read_bytes()
        request = manager.next_request()  # 1. the strategy decides what to send (and may compact)
        first = first or request
        reply = fake_llm(request.anthropic_body, step, steps)  # 2. your model call
        message = manager.record_response(reply["text"], reply["tool_calls"], usage=reply["usage"])  # 3. record it
        for call in message.tool_calls:  # 4. run the tools, record their results
            manager.add_tool_result(call.id, fake_tool(call.name, call.arguments), name=call.name)
        after = path.read_bytes()
        log.append(LoopStep(step, request.context.total_tokens, len(request.context.messages),
                            any(n.startswith("compacted") for n in request.notes), len(after), after.count(b"\n"),
                            after.startswith(before)))
        if not message.tool_calls:
            break
    assert first is not None
    return LoopRun(tuple(log), first.anthropic_body, first.openai_body, path.name, window)


def body_shape(body: Any, depth: int = 0, max_depth: int = 3) -> list[str]:
    """A request body's shape, one line per key: ``messages: list[1]`` and, indented, the first item's keys;
    strings as ``str`` with their length. No content. Chapter 08."""
    pad = "  " * depth
    lines = []
    if isinstance(body, dict):
        for k, v in body.items():
            if isinstance(v, (dict, list)) and depth < max_depth:
                lines.append(f"{pad}{k}: {_kind(v)}")
                lines += body_shape(v if isinstance(v, dict) else (v[0] if v else {}), depth + 1, max_depth)
            else:
                lines.append(f"{pad}{k}: {_kind(v)}")
    return lines


def _kind(v: Any) -> str:
    if isinstance(v, list):
        return f"list[{len(v)}]" + (" (first item below)" if v and isinstance(v[0], dict) else "")
    if isinstance(v, dict):
        return "object"
    if isinstance(v, str):
        return f"str ({len(v)} chars)" if len(v) > 40 else repr(v)
    return type(v).__name__ if not isinstance(v, (int, float, bool)) else repr(v)


# ---- the widget -------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LeaderboardState:
    """What the widget shows for one (strategy, window): the leaderboard rows and the chosen strategy's numbers."""

    window: int
    strategy: str
    rows: tuple[CompareRow, ...]
    selected: CompareRow | None
    rank: int | None  # 1 = the cheapest strategy that stayed inside the window; None if it did not
    calls: int
    max_context: int
    rewrites: int

    @property
    def best(self) -> CompareRow | None:
        return best(self.rows)


class LeaderboardWidget:
    """Two choices, ``strategy`` and ``window`` (dropdowns): the leaderboard at that window (bars + text table) with
    the strategy highlighted, and its ledger figure.

    ``w = LeaderboardWidget(sample, windows=(30_000, 50_000), facts=facts); w.window.value = 50_000;
    w.state.selected.cost_usd``. ``boards`` passes leaderboards already computed (window -> :class:`Leaderboard`).
    ``timings`` holds what each window's first visit cost (seconds); ``last_reaction_s`` the last control change.
    Chapter 08.
    """

    def __init__(self, conversation: Conversation, windows: Sequence[int], *, facts: Sequence[Fact] | None = None,
                 strategies: Sequence[str] | None = None, strategy: str = "compaction",
                 boards: dict[int, Leaderboard] | None = None) -> None:
        import ipywidgets as W

        self.conversation = conversation
        self.facts = list(facts) if facts else None
        self.names = tuple(strategies or strategies_for(conversation))
        self.boards: dict[int, Leaderboard] = dict(boards or {})
        self.timings: dict[int, float] = {w: b.seconds for w, b in self.boards.items()}
        self.last_reaction_s = 0.0
        self.strategy = W.Dropdown(options=list(self.names), description="strategy",
                                   value=strategy if strategy in self.names else self.names[0])
        self.window = W.Dropdown(options=[(f"{w:,}", w) for w in windows], value=windows[0], description="window")
        self.controls = W.HBox([self.strategy, self.window])
        self.label = W.HTML()
        self.bars = W.Output()
        self.ledger = W.Output()
        self.table = W.HTML()
        self.widget = W.VBox([self.controls, self.label, self.bars, self.table, self.ledger])
        self.state = self.compute(self.strategy.value, self.window.value)
        for control in (self.strategy, self.window):
            control.observe(self._on_change, names="value")
        self._render()

    def board(self, window: int) -> Leaderboard:
        """The leaderboard at ``window`` (computed on the first visit, then kept)."""
        if window not in self.boards:
            self.boards[window] = leaderboard(self.conversation, self.names, window=window, facts=self.facts)
            self.timings[window] = self.boards[window].seconds
        return self.boards[window]

    def compute(self, strategy: str, window: int) -> LeaderboardState:
        """The numbers for one (strategy, window): pure given the kept leaderboards."""
        board = self.board(window)
        selected = next((r for r in board.rows if r.name == strategy), None)
        valid = sorted((r for r in board.rows if not r.error and not r.overflows and r.cost_usd is not None),
                       key=lambda r: r.cost_usd)
        rank = next((k for k, r in enumerate(valid, start=1) if r.name == strategy), None)
        result = board.results.get(strategy)
        return LeaderboardState(window, strategy, board.rows, selected, rank,
                                len(result.records) if result else 0,
                                max((r.context_tokens for r in result.records), default=0) if result else 0,
                                len(prefix_rewrites(result)) if result else 0)

    def _on_change(self, change: dict[str, Any]) -> None:
        started = time.perf_counter()
        self.state = self.compute(self.strategy.value, self.window.value)
        self._render()
        self.last_reaction_s = time.perf_counter() - started

    def _render(self) -> None:
        from ctxlab.lab.compare import format_rows

        s = self.state
        r = s.selected
        if r is None or r.error:
            why = r.error if r is not None else "not in this leaderboard"
            self.label.value = (f"<b>{shown(s.strategy, html=True)}</b> at window {s.window:,}: "
                                f"<span style='color:#c62828'>{shown(why, html=True)}</span>")
            self.ledger.outputs = ()
        else:
            cost = "unpriced" if r.cost_usd is None else f"${r.cost_usd:,.4f}"
            where = (f"rank <b>{s.rank}</b> of the strategies that stayed inside the window" if s.rank else
                     f"<span style='color:#c62828'>{r.overflows} calls over the window</span>")
            facts = f", facts kept {r.facts_kept} (worst call {r.facts_kept_min})" if r.facts_kept is not None else ""
            self.label.value = (f"<b>{shown(s.strategy, html=True)}</b> at window {s.window:,}: cost <b>{cost}</b>, "
                                f"hit rate {100 * (r.hit_rate or 0):.1f}%, {r.compactions} compactions, "
                                f"{s.rewrites} prefix rewrites, largest context {s.max_context:,}{facts} — {where}")
            show_in(self.ledger, self.board(s.window).results[s.strategy].ledger.figure(
                f"{s.strategy} · window {s.window:,}"))
        show_in(self.bars, leaderboard_figure(s.rows, f"Leaderboard · window {s.window:,}", highlight=s.strategy))
        self.table.value = "<pre style='font-size:11px'>" + safe_html(format_rows(s.rows), multiline=True) + "</pre>"

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = f"LeaderboardWidget(strategy={self.strategy.value!r}, window={self.window.value:,})"
        return bundle
