"""Chapter 08's measurements: every strategy side by side, the committed pi figures, and ctxlab inside an agent loop.

Plain functions returning frozen rows (no ipywidgets, no plotly: :mod:`ctxlab.widgets.ch08_leaderboard`
draws them); the leaderboard itself (:func:`~ctxlab.lab.compare.leaderboard`, one row per strategy) is
:mod:`ctxlab.lab.compare`. What it holds:

* :func:`facts_for` — the bundled fact checklist that belongs to a conversation (the sample's, pi's, or none);
* :func:`leaderboard_window` — the window a transcript's leaderboard is measured at (its model's own when the
  transcript fills it, else one where the strategies differ); :func:`quick_strategies` — the strategies a long
  transcript is compared under; :func:`best` — the cheapest strategy that stayed inside the window;
* :func:`read_leaderboard_csv` — the committed pi figures (``data/leaderboard_pi.csv``), as leaderboard rows
  and as chapter 07's policy rows;
* :func:`fake_llm` / :func:`fake_tool` / :func:`run_fake_loop` — a dozen steps of an agent loop driven through
  :class:`~ctxlab.loop.AgentLoop` by a fake model (no network), the session file in a folder you pick;
* :func:`leaderboard_state` — what the chapter's widget shows for one strategy on one board.

Simplified on purpose: the fake model's usage is made up from the request's size (chars/4).
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ctxlab.facts import Fact
from ctxlab.fast import FAST
from ctxlab.io.checklist import load_facts
from ctxlab.io.session import Session
from ctxlab.lab.ch07_compaction import compaction_window, prefix_rewrites
from ctxlab.lab.ch07_policies import PolicyRow, policy_name
from ctxlab.lab.compare import CompareRow, Leaderboard, strategies_for
from ctxlab.lab.data import CHECKLISTS, LEADERBOARD_PI
from ctxlab.lab.replays import REPLAYS
from ctxlab.loop import AgentLoop
from ctxlab.messages import Conversation, ToolSpec
from ctxlab.tables.profiles import profile_for, with_window

# The strategies compared on a long transcript (a full leaderboard of pi takes about a minute).
QUICK_STRATEGIES = ("full", "budgeted", "compaction", "pipeline")
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
    cap = profile_for(conversation.model or "claude-sonnet-4-5", conversation.provider).context_window
    peak = max((rec.context_tokens for rec in REPLAYS.replay(conversation, "full").records), default=0)
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
    """One step of chapter 08's fake loop: the request's size (tokens) and messages, whether the strategy
    compacted before it, and the session file afterwards (bytes, lines, and whether it only grew)."""

    step: int
    request_tokens: int
    messages: int
    compacted: bool
    file_bytes: int
    file_lines: int
    appended_only: bool


@dataclass(frozen=True)
class LoopRun:
    """Chapter 08's fake agent run: its steps, the first request bodies (both providers'), the session file's
    name and the window (tokens)."""

    steps: tuple[LoopStep, ...]
    first_anthropic_body: dict[str, Any]
    first_openai_body: dict[str, Any]
    file_name: str
    window: int


def run_fake_loop(path: str | Path, *, steps: int = 12, window: int = 6_000, strategy: str = "compaction",
                  model: str = "claude-sonnet-4-5") -> LoopRun:
    """An agent loop driven by :func:`fake_llm` through :class:`~ctxlab.loop.AgentLoop`, the session written
    to ``path`` (a new file). Swap ``fake_llm`` for your HTTP client and ``fake_tool`` for your tools. Chapter 08."""
    path = Path(path)
    session = Session.create(path, system=[SYSTEM], tools=TOOLS, model=model)
    manager = AgentLoop(session, strategy, model=model, profile=with_window(profile_for(model), window), speedup=FAST)
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
