"""Chapter 08's measurements: every strategy side by side, the committed pi figures, and the chapter's widget rows.

Plain functions returning frozen rows (no ipywidgets, no plotly: :mod:`ctxlab.widgets.ch08_leaderboard`
draws them); the leaderboard itself (:func:`~ctxlab.lab.compare.leaderboard`, one row per strategy) is
:mod:`ctxlab.lab.compare`. What it holds:

* :func:`facts_for` — the bundled fact checklist that belongs to a conversation (the sample's, pi's, or none);
* :func:`leaderboard_window` — the window a transcript's leaderboard is measured at (its model's own when the
  transcript fills it, else one where the strategies differ); :func:`quick_strategies` — the strategies a long
  transcript is compared under; :func:`best` — the cheapest strategy that stayed inside the window;
* :func:`own_leaderboard` — the chapter's "your transcript" cell: that leaderboard, its checklist, and the
  windows its widget offers (:func:`widget_windows`);
* :func:`read_leaderboard_csv` — the committed pi figures (``data/leaderboard_pi.csv``), as leaderboard rows
  and as chapter 07's policy rows;
* :func:`fake_llm` / :func:`fake_tool` / :func:`run_fake_loop` / :func:`body_shape` — a dozen steps of an agent
  loop driven by a fake model (no network): :mod:`ctxlab.lab.ch08_loop`, re-exported here;
* :func:`leaderboard_state` — what the chapter's widget shows for one strategy on one board, and
  :func:`widget_row`, the line the chapter prints for it.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ctxlab.facts import Fact
from ctxlab.io.checklist import load_facts
from ctxlab.lab.ch07_compaction import compaction_window, prefix_rewrites
from ctxlab.lab.ch07_policies import PolicyRow, policy_name
from ctxlab.lab.ch08_loop import (SYSTEM, TASK, TOOLS, LoopRun, LoopStep, body_shape, fake_llm,  # noqa: F401
                                  fake_tool, run_fake_loop)
from ctxlab.lab.compare import CompareRow, Leaderboard, leaderboard, strategies_for
from ctxlab.lab.data import CHECKLISTS, LEADERBOARD_PI
from ctxlab.lab.replays import REPLAYS
from ctxlab.messages import Conversation
from ctxlab.tables.default_model import DEFAULT_MODEL
from ctxlab.tables.profiles import profile_for

# The strategies compared on a long transcript (a full leaderboard of pi takes about a minute).
QUICK_STRATEGIES = ("full", "budgeted", "compaction", "pipeline")
# Strategies the chapter leaves off its board, with the one that sends the same (see same_contexts).
MERGED = {"sliding": "budgeted"}
LONG_TRANSCRIPT_CALLS = 150

# ---- the leaderboard -----------------------------------------------------------------------------------


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
    is what the agent did); else a window where they differ (chapter 07's :func:`compaction_window`). The replay of
    ``full`` is the shared one (:data:`~ctxlab.lab.replays.REPLAYS`). Chapter 08."""
    cap = profile_for(conversation.model or DEFAULT_MODEL, conversation.provider).context_window
    return cap if full_peak(conversation) > 0.8 * cap else compaction_window(conversation, step)


def full_peak(conversation: Conversation) -> int:
    """The largest context (tokens) the ``full`` strategy sends on ``conversation``, from the shared replay
    (:data:`~ctxlab.lab.replays.REPLAYS`); 0 without calls. Chapter 08."""
    return max((rec.context_tokens for rec in REPLAYS.replay(conversation, "full").records), default=0)


def window_reason(conversation: Conversation, window: int, recorded: bool = False) -> str:
    """Why :func:`leaderboard_window` chose ``window``, in one sentence: the model's own window, or a smaller one
    because ``full`` never fills 80% of the model's (its peak named); with ``recorded`` (the board holds that row),
    that what the agent sent is judged at the smaller window too, so it can overflow there. Example: the sample →
    "window 30,000, not claude-sonnet-4-6's 1,000,000: full peaks at 57,266 tokens …". Chapter 08 (also 09)."""
    profile = profile_for(conversation.model or DEFAULT_MODEL, conversation.provider)
    if window == profile.context_window:
        return f"window {window:,}: {profile.name}'s own, which the full history fills past 80%"
    peak = full_peak(conversation)
    return (f"window {window:,}, not {profile.name}'s {profile.context_window:,}: full peaks at {peak:,} tokens, "
            "under 80% of it, so the board uses a window where the strategies differ"
            + ("; 'recorded', what the agent sent, is judged at it too, so it can overflow" if recorded else ""))


def is_long(conversation: Conversation) -> bool:
    """Whether ``conversation`` has more than 150 model calls (its recorded assistant messages). Chapter 08."""
    calls = sum(1 for m in conversation.messages if m.role == "assistant" and m.origin is None)
    return calls > LONG_TRANSCRIPT_CALLS


def quick_strategies(conversation: Conversation) -> tuple[str, ...]:
    """The strategies chapter 08 compares: every one of :func:`~ctxlab.lab.compare.strategies_for` but those of
    :data:`MERGED` for a short transcript; for a long one (over 150 calls) :data:`QUICK_STRATEGIES`, plus
    ``recorded`` when it holds compactions of its own. Chapter 08."""
    names = tuple(n for n in strategies_for(conversation) if n not in MERGED)
    if not is_long(conversation):
        return names
    return QUICK_STRATEGIES + tuple(n for n in names if n == "recorded")


def same_contexts(conversation: Conversation, a: str = "sliding", b: str = "budgeted", *,
                  window: int | None = None) -> tuple[int, int]:
    """(calls where strategies ``a`` and ``b`` sent the same request, calls compared): the rendered blocks compared
    call by call (tokens; ``window`` None: the model's own). Why :data:`MERGED` holds ``sliding``: on a history
    that only grows, ``budgeted``'s oldest kept unit only moves forward too, so both send the same — on the sample
    at 30,000 tokens at every one of its 77 calls. Chapter 08."""
    first, second = (REPLAYS.replay(conversation, name, window=window) for name in (a, b))
    pairs = list(zip(first.records, second.records))
    same = sum(1 for x, y in pairs if x.request is not None and y.request is not None
               and x.request.blocks == y.request.blocks)
    return same, len(pairs)


def widget_windows(window: int, step: int = 5_000) -> tuple[int, ...]:
    """The windows chapter 08's widget offers around a leaderboard's ``window``: it, then 3/4, 1/2 and 1/4 of it,
    rounded to ``step`` tokens (at least one step), without repeats. ``widget_windows(200_000)`` →
    ``(200000, 150000, 100000, 50000)``. Chapter 08."""
    return tuple(dict.fromkeys(max(step, round(window * f / step) * step) for f in (1, 3 / 4, 1 / 2, 1 / 4)))


@dataclass(frozen=True)
class OwnBoard:
    """Chapter 08's leaderboard of a learner's transcript: the strategies compared, the window, the checklist
    (None when no bundled one belongs to it), the board, whether its replays ran the invariant checks, and the
    windows the widget offers. Chapter 08."""

    conversation: Conversation
    names: tuple[str, ...]
    window: int
    facts: list[Fact] | None
    board: Leaderboard
    checked: bool
    windows: tuple[int, ...]

    @property
    def long(self) -> bool:
        """Whether only :data:`QUICK_STRATEGIES` (and ``recorded``) were compared: a long transcript."""
        return is_long(self.conversation)


def own_leaderboard(conversation: Conversation, *, check: bool | None = None) -> OwnBoard:
    """The leaderboard chapter 08 shows for a learner's transcript: :func:`quick_strategies` at
    :func:`leaderboard_window`, scored against :func:`facts_for`'s checklist when one belongs to it. ``check``:
    replay with chapter 04's invariant checks (None: on a short transcript; a long one is replayed without them,
    which takes about a quarter of the time on pi — ``leaderboard(..., check=True)`` adds them). The replays are the
    chapters' shared ones (:data:`~ctxlab.lab.replays.REPLAYS`: the window search's ``full`` is reused).
    Chapter 08."""
    names = quick_strategies(conversation)
    window = leaderboard_window(conversation)
    facts = facts_for(conversation)
    checked = not is_long(conversation) if check is None else check
    board = leaderboard(conversation, names, window=window, facts=facts, check=checked)
    return OwnBoard(conversation, names, window, facts, board, checked, widget_windows(window))


def best(rows: Sequence[CompareRow]) -> CompareRow | None:
    """The cheapest row that built a context for every call inside the window (no error, no overflow). Chapter 08."""
    valid = [r for r in rows if not r.error and not r.overflows and r.cost_usd is not None]
    return min(valid, key=lambda r: r.cost_usd) if valid else None


def rewrite_counts(board: Leaderboard) -> dict[str, int]:
    """Prefix rewrites per strategy (chapter 07's :func:`~ctxlab.lab.ch07_compaction.prefix_rewrites`).
    Chapter 08."""
    return {name: len(prefix_rewrites(result)) for name, result in board.results.items()}


# ---- the committed pi figures ----------------------------------------------------------------------------------

CSV_COLUMNS = ("section", "window", "name", "trigger_ratio", "target_ratio", "cost_usd", "hit_rate", "compactions",
               "summary_calls", "overflows", "prefix_rewrites", "total_input_tokens", "largest_context", "facts_kept",
               "facts_kept_min", "violations", "error")


@dataclass(frozen=True)
class CommittedFigures:
    """``data/leaderboard_pi.csv``: the header comment as ``key: value`` pairs, and the rows as strings.
    Chapter 08 (chapter 07 reads its policy rows)."""

    header: dict[str, str]
    rows: tuple[dict[str, str], ...]

    def section(self, name: str) -> list[dict[str, str]]:
        """The rows whose ``section`` column is ``name`` (``"leaderboard"`` or ``"policies"``). Chapter 08."""
        return [r for r in self.rows if r["section"] == name]

    def compare_rows(self, section: str = "leaderboard") -> list[CompareRow]:
        """The rows of a section as leaderboard rows (what ``compare`` would give). Chapter 08."""
        return [CompareRow(r["name"], _float(r["cost_usd"]), _float(r["hit_rate"]), int(r["compactions"] or 0),
                           int(r["summary_calls"] or 0), int(r["overflows"] or 0), int(r["total_input_tokens"] or 0),
                           _int(r["facts_kept"]), _int(r["facts_kept_min"]), int(r["violations"] or 0),
                           r["error"] or None) for r in self.section(section)]

    def policy_rows(self, section: str = "policies") -> list[PolicyRow]:
        """The rows of a section as chapter 07's policy rows (read in chapters 07 and 08)."""
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


# ---- what the chapter's widget shows -------------------------------------------------------------------

@dataclass(frozen=True)
class LeaderboardState:
    """What chapter 08's widget shows for one (strategy, window): the leaderboard rows and the chosen strategy's
    numbers (its calls, its largest context in tokens, its prefix rewrites)."""

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
        """The cheapest strategy that stayed inside the window (:func:`best`). Chapter 08."""
        return best(self.rows)


WIDGET_COLUMNS = ("strategy", "window", "cost", "hit rate", "compactions", "prefix rewrites", "largest context",
                  "facts kept", "rank", "cheapest inside the window")


def widget_row(state: LeaderboardState) -> tuple:
    """One row of the table chapter 08 prints after moving its widget (:data:`WIDGET_COLUMNS`); a strategy that
    could not build a context, or is not on the board, says so in the cost column. Chapter 08."""
    r, top = state.selected, state.best
    cheapest = top.name if top else "—"
    if r is None or r.error or r.cost_usd is None:
        why = "not on the board" if r is None else "cannot build a context" if r.error else "unpriced"
        return (state.strategy, state.window, why, "—", "—", state.rewrites, state.max_context, "—", "—",
                cheapest)
    return (state.strategy, state.window, f"${r.cost_usd:,.4f}", f"{100 * (r.hit_rate or 0):.1f}%", r.compactions,
            state.rewrites, state.max_context, r.facts_kept, state.rank or "—", cheapest)


def leaderboard_state(board: Leaderboard, strategy: str, window: int) -> LeaderboardState:
    """The numbers for ``strategy`` on ``board`` (the leaderboard at ``window``): its row, its rank among the
    strategies that stayed inside the window (None when it did not, or is not on the board), and from its
    replay the calls, the largest context (tokens) and the prefix rewrites (0 without a replay). Chapter 08."""
    selected = next((r for r in board.rows if r.name == strategy), None)
    valid = sorted((r for r in board.rows if not r.error and not r.overflows and r.cost_usd is not None),
                   key=lambda r: r.cost_usd)
    rank = next((k for k, r in enumerate(valid, start=1) if r.name == strategy), None)
    result = board.results.get(strategy)
    return LeaderboardState(window, strategy, board.rows, selected, rank,
                            len(result.records) if result else 0,
                            max((r.context_tokens for r in result.records), default=0) if result else 0,
                            len(prefix_rewrites(result)) if result else 0)
