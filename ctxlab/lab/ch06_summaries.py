"""Chapter 06's measurements: what a summary of dropped history keeps, scored against a checklist.

Plain functions returning frozen rows (no ipywidgets, no plotly: :mod:`ctxlab.widgets.ch06_summaries`
draws them). What it holds:

* :func:`summary_window` — a window small enough that history must be dropped (the sample: 30,000);
* :func:`last_summary` / :func:`summary_sections` — the rule-based summary a ``budgeted+summary``
  replay placed at its last call, and its sections;
* :func:`retention` — the checklist scored per strategy at one window (visible / in the summary /
  only through a page / lost) with :func:`~ctxlab.facts.fact_retention`;
* :func:`read_pi_scores` — the committed scores of pi's two recorded LLM summaries against the
  rule-based one (``data/pi_summaries_score.csv``);
* :class:`PromptRecorder` — a fake LLM for :class:`~ctxlab.summary_strategy.LLMSummarizer` that records the prompt;
* :func:`summary_run` — what the chapter's widget shows for one window (:class:`SummaryState`).

Where the summary goes (what each placement costs the prompt cache) is in :mod:`ctxlab.lab.ch06_placement`;
what regenerating it costs, in :mod:`ctxlab.lab.ch06_regeneration`. Simplified on purpose: a summary call is
a ledger row whose ``kind`` is ``"summary"``; every measurement replays the whole conversation (about 0.3 s
on the sample), once per setting: the replays are the ones the chapters share (:data:`ctxlab.lab.replays.REPLAYS`,
through :data:`ctxlab.fast.FAST`: the same numbers as the book's plain replay, sooner on a long transcript).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ctxlab.base.errors import CtxlabError
from ctxlab.context import BudgetPolicy, build_context
from ctxlab.facts import Fact, FactReport
from ctxlab.lab.data import PI_SCORES
from ctxlab.lab.replays import REPLAYS
from ctxlab.messages import Conversation
from ctxlab.replay import ReplayResult
from ctxlab.strategies import model_calls
from ctxlab.summary import Summary
from ctxlab.summary_strategy import BudgetedSummaryStrategy
from ctxlab.tables.default_model import DEFAULT_MODEL
from ctxlab.tables.profiles import profile_for
from ctxlab.tokens import MessageMeter

replay = REPLAYS.replay  # the chapter's replays are the shared ones: one per setting (a strategy name, keywords)

# ---- the window ------------------------------------------------------------------------------------

def peak_prompt_tokens(conversation: Conversation) -> int:
    """Tokens of the whole conversation as one context (tools, system, every message): the largest
    prompt ``full`` would send, under the conversation's own profile. Chapter 06."""
    profile = profile_for(conversation.model or DEFAULT_MODEL, conversation.provider)
    meter = MessageMeter(profile, REPLAYS.counter(profile))  # the shared replays' counter: they count these again
    ctx = build_context(conversation, BudgetPolicy(budget_tokens=10**12), profile=profile, meter=meter)
    return ctx.total_tokens


def summary_window(conversation: Conversation, step: int = 5_000) -> int:
    """A window at which history must be dropped: half the peak prompt, rounded up to ``step`` (at most
    the model's window), raised until ``budgeted`` can build every call. The sample → 30,000. Chapter 06."""
    profile = profile_for(conversation.model or DEFAULT_MODEL, conversation.provider)
    window = min(profile.context_window, max(step, math.ceil(peak_prompt_tokens(conversation) / 2 / step) * step))
    for _ in range(5):
        try:
            replay(conversation, "budgeted", window=window)
            return window
        except CtxlabError as err:
            needed = getattr(err, "needed", None)
            if not needed:
                return window
            window = min(profile.context_window, math.ceil(needed / 0.9 / step) * step)
    return window


# ---- what a summary keeps ---------------------------------------------------------------------------

def last_summary(strategy: BudgetedSummaryStrategy, thread: str = "main") -> Summary | None:
    """The summary ``strategy`` placed at the last call of ``thread`` in the replay it ran (None: the last
    call dropped nothing). Chapter 06."""
    got = strategy.last.get(thread) or next(iter(strategy.last.values()), None)
    return got[1] if got else None


def summary_sections(text: str) -> list[tuple[str, list[str]]]:
    """A rule-based summary's sections: ``[("Task", [items...]), ...]`` in order (an item's next lines
    joined). Chapter 06."""
    out: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("## "):
            out.append((line[3:], []))
        elif out and line.startswith("- "):
            out[-1][1].append(line[2:])
        elif out and out[-1][1] and line.startswith("  "):
            out[-1][1][-1] += " / " + line.strip()
    return out


def clipped_summary(text: str, per_section: int = 3, chars: int = 110) -> str:
    """The summary with at most ``per_section`` items per section, each cut to ``chars`` characters. Chapter 06."""
    lines = []
    for section, items in summary_sections(text):
        lines.append(f"## {section} ({len(items)} items)")
        for item in items[:per_section]:
            lines.append("- " + (item if len(item) <= chars else item[: chars - 1] + "…"))
        if len(items) > per_section:
            lines.append(f"  … {len(items) - per_section} more")
    return "\n".join(lines)


# Chapter 06: the columns of Retention.as_row. "known (last)": the checklist facts recorded before the last call
# (FactRow.known, the same number as FactReport.facts_known_last) — not the checklist's size: a fact in the last
# call's own reply, or on another branch, is in the checklist but not known to any call.
RETENTION_COLUMNS = ("strategy", "known (last)", "visible", "in summary", "via page", "lost", "kept (last)",
                     "worst call", "summary calls", "cost", "lost at the last call")


@dataclass(frozen=True)
class Retention:
    """One strategy's checklist score at one window (from its replay) and the replay's cost (USD); ``error``:
    why the strategy could not build a context (then ``report`` is None). Chapter 06."""

    strategy: str
    window: int
    report: FactReport | None
    summary_calls: int
    cost_usd: float | None
    error: str = ""

    def as_row(self, facts_by_id: dict[str, Fact] | None = None) -> tuple[Any, ...]:
        """One line of :data:`RETENTION_COLUMNS` (an error leaves the counts at 0). Chapter 06."""
        if self.report is None or not self.report.rows:
            return (self.strategy, 0, 0, 0, 0, 0, "—", "—", 0, "—", self.error[:60])
        last, rep = self.report.rows[-1], self.report
        cost = "—" if self.cost_usd is None else f"${self.cost_usd:,.4f}"
        return (self.strategy, last.known, len(last.visible), len(last.summary), len(last.paged), len(last.lost),
                f"{rep.facts_kept_last} of {rep.facts_known_last}",
                f"{rep.facts_kept_min} of {rep.facts_known_at_min} @ {rep.min_call}", self.summary_calls, cost,
                " ".join(last.lost))


def retention(conversation: Conversation, facts: Sequence[Fact], window: int,
              strategies: Sequence[str] = ("budgeted", "budgeted+summary", "compaction"),
              done: dict[str, ReplayResult] | None = None) -> list[Retention]:
    """Replay each strategy at ``window`` and score the checklist at every call. A strategy that cannot
    build a context gets ``error`` instead of a report. ``done``: replays already run at this window, by
    strategy name, used instead of running them again (the others come from :data:`~ctxlab.lab.replays.REPLAYS`,
    where the widget's ``budgeted+summary`` at the same window already is). Chapter 06."""
    out = []
    for name in strategies:
        try:
            result = (done or {}).get(name) or replay(conversation, name, window=window)
        except CtxlabError as err:
            out.append(Retention(name, window, None, 0, None, " ".join(str(err).split())))
            continue
        calls = sum(1 for r in result.ledger.rows if r.kind == "summary")
        report = REPLAYS.retention(result, facts, conversation) if facts else None
        out.append(Retention(name, window, report, calls, result.ledger.totals().cost_usd))
    return out


def read_pi_scores(path: str | Path = PI_SCORES) -> list[dict[str, Any]]:
    """The committed scores: one dict per recorded compaction of the pi session (ints where numeric,
    fact ids as lists). Chapter 06."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    out = []
    for r in rows:
        out.append({k: (v.split() if k.endswith("_ids") else int(v)) for k, v in r.items()})
    return out


PI_COLUMNS = ("compaction", "messages summarised", "facts in scope", "LLM summary (tokens)", "LLM kept",
              "rules (tokens)", "rules kept", "only the LLM kept", "only the rules kept")


def pi_rows(scores: Sequence[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Lines of :data:`PI_COLUMNS` from :func:`read_pi_scores`. Chapter 06."""
    return [(s["compaction"], s["messages_new"], s["facts_in_scope"], s["tokens_llm"], s["kept_llm"], s["tokens_rule"],
             s["kept_rule"], " ".join(sorted(set(s["kept_llm_ids"]) - set(s["kept_rule_ids"]))) or "—",
             " ".join(sorted(set(s["kept_rule_ids"]) - set(s["kept_llm_ids"]))) or "—") for s in scores]


# ---- an LLM summarizer without a network ------------------------------------------------------------

@dataclass
class PromptRecorder:
    """A stand-in for a model: records every prompt it is given and answers with ``answer``.

    ``LLMSummarizer(PromptRecorder())`` summarises without a network; ``.prompts`` holds what a real
    model would have been sent. Chapter 06.
    """

    answer: str = "## Task\n- (a fake model's summary: no model was called)"
    prompts: list[str] = field(default_factory=list)

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.answer


# ---- what the chapter's widget shows ------------------------------------------------------------------

@dataclass(frozen=True)
class SummaryState:
    """What chapter 06's widget shows for one window: the summary at the last call (text, tokens, messages it
    covers, items per section) and the checklist at the last call by status (fact ids), the worst call,
    and the replay's summary calls, hit rate and cost (USD). ``error``: why no replay was possible."""

    window: int
    summary: str
    summary_tokens: int
    summarised_messages: int
    sections: tuple[tuple[str, int], ...]
    known: int
    visible: tuple[str, ...]
    in_summary: tuple[str, ...]
    paged: tuple[str, ...]
    lost: tuple[str, ...]
    kept_min: str
    summary_calls: int
    hit_rate: float
    cost_usd: float | None
    error: str = ""

    @property
    def kept(self) -> int:
        """Facts the model can read at the last call without a tool: visible plus only in the summary. Chapter 06."""
        return len(self.visible) + len(self.in_summary)


STATE_COLUMNS = ("window", "summary tokens", "messages summarised", "known", "visible", "in summary", "lost",
                 "worst call", "summary calls", "hit rate", "cost")


def state_row(s: SummaryState) -> tuple[Any, ...]:
    """One line of :data:`STATE_COLUMNS` (an error leaves the numbers at 0). Chapter 06."""
    cost = "—" if s.cost_usd is None else f"${s.cost_usd:,.4f}"
    return (s.window, s.summary_tokens, s.summarised_messages, s.known, len(s.visible), len(s.in_summary), len(s.lost),
            s.kept_min, s.summary_calls, f"{100 * s.hit_rate:.1f}%", cost)


def default_windows(conversation: Conversation, small: int | None = None, step: int = 5_000) -> list[int]:
    """The window slider's stops: the small window x 1, 4/3, 5/3, 2, 8/3 (rounded to ``step``, at most
    the model's window). The sample → 30,000 ... 80,000. Where the model's window leaves fewer than three stops
    (pi: the small window is the model's), stops below it are added (x 1/2, 2/3, 5/6; a stop too small for any
    context shows why in the widget). Chapter 06."""
    small = small or summary_window(conversation, step)
    cap = profile_for(conversation.model or DEFAULT_MODEL, conversation.provider).context_window
    stops = {min(cap, round(small * f / step) * step) for f in (1, 4 / 3, 5 / 3, 2, 8 / 3)}
    if len(stops) < 3:
        stops |= {max(step, round(small * f / step) * step) for f in (1 / 2, 2 / 3, 5 / 6)}
    return sorted(stops)


def summary_run(conversation: Conversation, facts: Sequence[Fact], window: int, *, placement: str = "system_end",
                thread: str | None = None) -> tuple[SummaryState, tuple[BudgetedSummaryStrategy, ReplayResult] | None]:
    """Replay ``budgeted+summary`` (summary at ``placement``) at ``window``: the :class:`SummaryState` of
    its last call of ``thread`` (default: the first model call's thread), scored against ``facts``, and
    the strategy (holding its last summary) with the replay. A window where no context can be built
    gives a state with ``error`` and None instead of the replay (never raises). The replay is the shared one
    (:data:`~ctxlab.lab.replays.REPLAYS`): its strategy object holds the summaries, read it, never run it again.
    Chapter 06."""
    try:
        made, result = REPLAYS.run(conversation, "budgeted+summary", window=window, placement=placement)
        strategy: BudgetedSummaryStrategy = made  # type: ignore[assignment]
    except CtxlabError as err:
        error = " ".join(str(err).split())
        return SummaryState(window, "", 0, 0, (), 0, (), (), (), (), "—", 0, 0.0, None, error), None
    thread = thread or next((c.thread for _, c in model_calls(conversation)), "main")
    summary = last_summary(strategy, thread)
    report = REPLAYS.retention(result, facts, conversation) if facts else None
    last = report.rows[-1] if report and report.rows else None
    t = result.ledger.totals()
    state = SummaryState(
        window, summary.text if summary else "", summary.tokens if summary else 0,
        len(summary.sources) if summary else 0, summary.kept if summary else (), last.known if last else 0,
        last.visible if last else (), last.summary if last else (), last.paged if last else (),
        last.lost if last else (),
        f"{report.facts_kept_min} of {report.facts_known_at_min} @ {report.min_call}" if report else "—",
        sum(1 for r in result.ledger.rows if r.kind == "summary"), t.hit_rate, t.cost_usd)
    return state, (strategy, result)

