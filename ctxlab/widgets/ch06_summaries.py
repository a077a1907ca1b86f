"""Chapter 06: summaries — what a summary of dropped history keeps, where it goes, and what it costs.

What it holds:

* :func:`summary_window` — a window small enough that history must be dropped (the sample: 30,000);
* :func:`last_summary` / :func:`summary_sections` — the rule-based summary a ``budgeted+summary``
  replay placed at its last call, and its sections;
* :func:`retention` — the checklist scored per strategy at one window (visible / in the summary /
  only through a page / lost) with :func:`~ctxlab.facts.fact_retention`;
* :func:`read_pi_scores` — the committed scores of pi's two recorded LLM summaries against the
  rule-based one (``data/pi_summaries_score.csv``);
* :func:`placement_table` / :func:`placement_stability` — the placement experiment around a summary
  change, and its findings per placement; :func:`stable_then_changing` — a tiny synthetic session
  whose summary stays the same for minutes, then changes at every call;
* :func:`regeneration_rows` — what regenerating the summary costs: every call, only on a change,
  fresh or on the cached prefix (the ledger's summary-call rows);
* :class:`PromptRecorder` — a fake LLM for :class:`~ctxlab.summary.LLMSummarizer` that records the prompt;
* :class:`SummaryWidget` — one choice, the window: the summary at the last call and the facts kept.

Simplified on purpose: the widget keeps every replay it ran, keyed by its window, so a second visit
is instant; a new window replays the whole conversation (about 0.3 s on the sample).
"""

from __future__ import annotations

import csv
import datetime
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ctxlab.context import BudgetPolicy, build_context
from ctxlab.base.errors import CtxlabError
from ctxlab.facts import Fact, FactReport, fact_retention
from ctxlab.messages import Conversation, Message, assistant, user
from ctxlab.tables.profiles import profile_for
from ctxlab.replay import ReplayResult, model_calls, replay
from ctxlab.base.safe_text import shown
from ctxlab.summary import BudgetedSummaryStrategy, PlacementRow, Summary
from ctxlab.tokens import MessageMeter
from ctxlab.lab.workbook import DATA
from ctxlab.widgets._plots import error_html
from ctxlab.widgets.ch05_pruning import PI_FACTS, checklist_for  # noqa: F401  (re-exported: the chapter imports it from here)

from ctxlab.lab.data import PI_SCORES


# ---- the checklist and the window -------------------------------------------------------------------

def peak_prompt_tokens(conversation: Conversation) -> int:
    """Tokens of the whole conversation as one context (tools, system, every message): the largest
    prompt ``full`` would send, under the conversation's own profile. Chapter 06."""
    profile = profile_for(conversation.model or "claude-sonnet-4-5", conversation.provider)
    ctx = build_context(conversation, BudgetPolicy(budget_tokens=10**12), profile=profile, meter=MessageMeter(profile))
    return ctx.total_tokens


def summary_window(conversation: Conversation, step: int = 5_000) -> int:
    """A window at which history must be dropped: half the peak prompt, rounded up to ``step`` (at most
    the model's window), raised until ``budgeted`` can build every call. The sample → 30,000. Chapter 06."""
    profile = profile_for(conversation.model or "claude-sonnet-4-5", conversation.provider)
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


RETENTION_COLUMNS = ("strategy", "known", "visible", "in summary", "via page", "lost", "kept (last)", "worst call",
                     "summary calls", "cost", "lost at the last call")


@dataclass(frozen=True)
class Retention:
    """One strategy's checklist score at one window (from its replay) and the replay's cost (USD)."""

    strategy: str
    window: int
    report: FactReport | None
    summary_calls: int
    cost_usd: float | None
    error: str = ""

    def as_row(self, facts_by_id: dict[str, Fact] | None = None) -> tuple[Any, ...]:
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
    strategy name (the widget's ``budgeted+summary``), used instead of running them again. Chapter 06."""
    out = []
    for name in strategies:
        try:
            result = (done or {}).get(name) or replay(conversation, name, window=window)
        except CtxlabError as err:
            out.append(Retention(name, window, None, 0, None, " ".join(str(err).split())))
            continue
        calls = sum(1 for r in result.ledger.rows if r.note.startswith("summary call"))
        report = fact_retention(result, facts, conversation) if facts else None
        out.append(Retention(name, window, report, calls, result.ledger.totals().cost_usd))
    return out


def retention_figure(rows: Sequence[Retention]):  # -> plotly Figure
    """Facts the model can read without a tool call (visible + in the summary), per call, per strategy. Chapter 06."""
    import plotly.graph_objects as go

    from ctxlab.widgets._plots import figure

    fig = figure("Checklist facts the model can read, per call", xaxis_title="call", yaxis_title="facts",
                 legend=dict(orientation="h", y=-0.25))
    known = next((r.report for r in rows if r.report), None)
    if known:
        fig.add_trace(go.Scatter(x=[x.call for x in known.rows], y=[x.known for x in known.rows], name="known so far",
                                 mode="lines", line=dict(dash="dot", color="#999999")))
    for r in rows:
        if r.report:
            fig.add_trace(go.Scatter(x=[x.call for x in r.report.rows], y=[x.kept for x in r.report.rows],
                                     name=r.strategy, mode="lines"))
    return fig


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


# ---- placements --------------------------------------------------------------------------------------

def _by_setting(rows: Sequence[PlacementRow]) -> dict[tuple[str, str], dict[int, PlacementRow]]:
    out: dict[tuple[str, str], dict[int, PlacementRow]] = {}  # (placement, provider) -> call -> row
    for r in rows:
        out.setdefault((r.placement, r.provider), {})[r.call] = r
    return out


def change_call(rows: Sequence[PlacementRow]) -> int | None:
    """The first call whose summary changed for a reason of its own (not at a model change, which breaks
    every cache alike); else the first call with a new summary; None when no call has a summary. Chapter 06."""
    first = [r for r in rows if (r.placement, r.provider) == (rows[0].placement, rows[0].provider)] if rows else []
    for states in (("changed",), ("new",)):
        for r in first:
            if r.summary in states and not r.diverged_at.startswith("model changed"):
                return r.call
    return None


def placement_table(rows: Sequence[PlacementRow], call: int, around: int = 1) -> tuple[list[str], list[tuple]]:
    """Columns and lines: per placement and provider, the head (tools + base system prompt) and what each call
    from ``call - around`` to ``call + around`` read of its prompt (``read / prompt``). Chapter 06."""
    by = _by_setting(rows)
    calls = [c for c in range(call - around, call + around + 1) if any(c in v for v in by.values())]
    first = next(iter(by.values()))
    columns = ["placement", "rules", "head"] + [f"call {c} ({first[c].summary})" for c in calls] + \
        [f"diverged at call {call}"]
    lines = []
    for (placement, provider), v in by.items():
        lines.append((placement, provider, v[call].head_tokens,
                      *[f"{v[c].cache_read_tokens:,} / {v[c].total_input_tokens:,}" for c in calls],
                      v[call].diverged_at or "(only appended)"))
    return columns, lines


STABILITY_COLUMNS = ("placement", "rules", "calls with the same summary", "of them only appended",
                     "summary changes", "shared past the head (max)", "read at a change", "hit rate")


def placement_stability(rows: Sequence[PlacementRow]) -> list[tuple[Any, ...]]:
    """Per placement and provider: of the calls whose summary stayed the same, how many only appended to the
    request before; at the changes (not at a model change), how far past the head the shared prefix
    reached (tokens) and what was read; the token-weighted hit rate. Chapter 06."""
    out = []
    for (placement, provider), v in _by_setting(rows).items():
        same = [r for r in v.values() if r.summary == "same"]
        changes = [r for r in v.values() if r.summary in ("new", "changed") and not
                   r.diverged_at.startswith("model changed")]
        total = sum(r.total_input_tokens for r in v.values())
        past = max((r.shared_tokens - r.head_tokens for r in changes), default=0)
        out.append((placement, provider, len(same), sum(1 for r in same if not r.diverged_at), len(changes), past,
                    _span([r.cache_read_tokens for r in changes]),
                    f"{100 * sum(r.cache_read_tokens for r in v.values()) / total:.1f}%" if total else "—"))
    return out


def _span(values: Sequence[int]) -> str:
    """``"0"``, ``"0–2,001"`` (min–max) or ``"—"`` for no values."""
    if not values:
        return "—"
    lo, hi = min(values), max(values)
    return f"{lo:,}" if lo == hi else f"{lo:,}–{hi:,}"


def stable_then_changing() -> Conversation:
    """A small synthetic session (Sonnet, a 2,000-token system prompt, no tools): a long task, then 40 short
    turns 25 s apart. At a 4,600-token window the summary appears at call 4, stays the same for about eight
    minutes (longer than the 5-minute TTL), then changes at every call. Chapter 06."""
    start = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()

    def ts(s: int) -> str:
        return (start + datetime.timedelta(seconds=s)).isoformat().replace("+00:00", "Z")

    def text(n: int, seed: int) -> str:
        return " ".join(f"{words[(i * 7 + seed) % 12]}{(i * 13 + seed) % 97}" for i in range(n))

    items: list[Message] = [user("Task: never touch prod. " + text(400, 2), "u1", timestamp=ts(0))]
    t = 0
    for i in range(40):
        t += 20
        items.append(assistant(f"step {i} " + text(8, i + 3), f"a{i}", timestamp=ts(t), model="claude-sonnet-4-5",
                               provider="anthropic"))
        t += 5
        items.append(user(f"ok {i} " + text(6, i + 50), f"u{i + 2}", timestamp=ts(t)))
    return Conversation("stable-then-changing", tuple(items), system=("You are careful. " + text(700, 1),),
                        model="claude-sonnet-4-5", provider="anthropic")


# ---- the cost of regenerating -----------------------------------------------------------------------

REGENERATION_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("every call, fresh (the texts)", {}),
    ("every call, on the cached prefix", {"on_cached_prefix": True}),
    ("on change, fresh", {"regenerate": "on_change"}),
    ("on change, on the cached prefix", {"regenerate": "on_change", "on_cached_prefix": True}),
)
REGENERATION_COLUMNS = ("summary regenerated", "summary calls", "their prompt", "read", "written", "output",
                        "summary cost", "main calls cost", "total", "hit rate")


@dataclass(frozen=True)
class RegenerationRow:
    """One option of :class:`~ctxlab.summary.BudgetedSummaryStrategy`: its summary-call rows summed (tokens,
    USD), what the main calls cost, the total and the token-weighted hit rate of the whole ledger."""

    option: str
    summary_calls: int
    summary_input_tokens: int
    summary_read_tokens: int
    summary_write_tokens: int
    summary_output_tokens: int
    summary_cost_usd: float
    main_cost_usd: float
    total_cost_usd: float
    hit_rate: float

    def as_row(self) -> tuple[Any, ...]:
        return (self.option, self.summary_calls, self.summary_input_tokens, self.summary_read_tokens,
                self.summary_write_tokens, self.summary_output_tokens, f"${self.summary_cost_usd:,.4f}",
                f"${self.main_cost_usd:,.4f}", f"${self.total_cost_usd:,.4f}", f"{100 * self.hit_rate:.1f}%")


def regeneration_rows(conversation: Conversation, window: int, placement: str = "system_end",
                      options: Sequence[tuple[str, dict[str, Any]]] = REGENERATION_OPTIONS,
                      done: ReplayResult | None = None) -> list[RegenerationRow]:
    """Replay ``budgeted+summary`` under each option at ``window``; sum the ledger's summary-call rows
    (their note starts with ``summary call``) and the main calls apart. Unpriced rows count as 0. ``done``:
    the replay with the default options (every call, fresh), already run, used for an option without
    settings. Chapter 06."""
    out = []
    for label, opts in options:
        strategy = BudgetedSummaryStrategy(placement=placement, **opts)  # type: ignore[arg-type]
        result = done if done is not None and not opts else replay(conversation, strategy, window=window)
        side = [r for r in result.ledger.rows if r.note.startswith("summary call")]
        main = [r for r in result.ledger.rows if r.message_id is not None]
        totals = result.ledger.totals()
        out.append(RegenerationRow(label, len(side), sum(r.total_input_tokens for r in side),
                                   sum(r.cache_read_tokens for r in side), sum(r.cache_write_tokens for r in side),
                                   sum(r.output_tokens for r in side), sum(r.cost_usd or 0.0 for r in side),
                                   sum(r.cost_usd or 0.0 for r in main), totals.cost_usd or 0.0, totals.hit_rate))
    return out


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


# ---- the widget ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SummaryState:
    """What the widget shows for one window: the summary at the last call (text, tokens, messages it
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
    the model's window). The sample → 30,000 ... 80,000. Chapter 06."""
    small = small or summary_window(conversation, step)
    cap = profile_for(conversation.model or "claude-sonnet-4-5", conversation.provider).context_window
    return sorted({min(cap, round(small * f / step) * step) for f in (1, 4 / 3, 5 / 3, 2, 8 / 3)})


class SummaryWidget:
    """One choice, the window (a SelectionSlider): ``budgeted+summary`` replayed at it, the summary placed
    at the last call, and the checklist's facts at that call — visible, in the summary, or lost.

    ``w = SummaryWidget(conv, facts, windows=[30_000, 60_000]); w.window.value = 60_000; w.state.lost``.
    Every replay is kept by window (``timings`` holds what each first visit cost, in seconds). Chapter 06.
    """

    def __init__(self, conversation: Conversation, facts: Sequence[Fact] = (), *, windows: Sequence[int] | None = None,
                 placement: str = "system_end") -> None:
        import ipywidgets as W

        self.conversation = conversation
        self.facts = list(facts)
        self.placement = placement
        self.thread = next((c.thread for _, c in model_calls(conversation)), "main")
        self._states: dict[int, SummaryState] = {}  # window -> state
        self._runs: dict[int, tuple[BudgetedSummaryStrategy, ReplayResult]] = {}  # window -> its replay
        self.replays = 0  # replays run so far (a second visit to a window runs none)
        self.timings: dict[int, float] = {}  # window -> seconds its first computation took
        options = list(windows or default_windows(conversation))
        self.window = W.SelectionSlider(options=[(f"{w:,}", w) for w in options], value=options[0],
                                        description="window (tokens)", continuous_update=False,
                                        style={"description_width": "initial"}, layout=W.Layout(width="60%"))
        self.controls = W.VBox([self.window])
        self.label = W.HTML()
        self.summary_view = W.HTML(layout=W.Layout(width="60%"))
        self.facts_view = W.HTML(layout=W.Layout(width="40%"))
        self.widget = W.VBox([self.controls, self.label, W.HBox([self.summary_view, self.facts_view])])
        self.state = self.compute(self.window.value)
        self.window.observe(self._on_change, names="value")
        self._render()

    def compute(self, window: int) -> SummaryState:
        """The state for ``window``, from the kept replay or a new one; an impossible window is reported."""
        if window in self._states:
            return self._states[window]
        started = time.perf_counter()
        strategy = BudgetedSummaryStrategy(placement=self.placement)  # type: ignore[arg-type]
        self.replays += 1
        try:
            result = replay(self.conversation, strategy, window=window)
            self._runs[window] = (strategy, result)
        except CtxlabError as err:
            state = SummaryState(window, "", 0, 0, (), 0, (), (), (), (), "—", 0, 0.0, None,
                                 " ".join(str(err).split()))
        else:
            state = self._state(window, strategy, result)
        self._states[window] = state
        self.timings[window] = time.perf_counter() - started
        return state

    def run(self, window: int) -> tuple[BudgetedSummaryStrategy, ReplayResult]:
        """The strategy (holding its last summary) and the replay behind a window's state; raises the
        replay's error for an impossible window."""
        self.compute(window)
        if window not in self._runs:
            raise CtxlabError(self._states[window].error)
        return self._runs[window]

    def _state(self, window: int, strategy: BudgetedSummaryStrategy, result: ReplayResult) -> SummaryState:
        summary = last_summary(strategy, self.thread)
        report = fact_retention(result, self.facts, self.conversation) if self.facts else None
        last = report.rows[-1] if report and report.rows else None
        t = result.ledger.totals()
        return SummaryState(
            window, summary.text if summary else "", summary.tokens if summary else 0,
            len(summary.sources) if summary else 0, summary.kept if summary else (), last.known if last else 0,
            last.visible if last else (), last.summary if last else (), last.paged if last else (),
            last.lost if last else (),
            f"{report.facts_kept_min} of {report.facts_known_at_min} @ {report.min_call}" if report else "—",
            sum(1 for r in result.ledger.rows if r.note.startswith("summary call")), t.hit_rate, t.cost_usd)

    def _on_change(self, change: dict[str, Any]) -> None:
        self.state = self.compute(change["new"])
        self._render()

    def _render(self) -> None:
        s = self.state
        if s.error:
            self.label.value = error_html("no replay", s.error)
            self.summary_view.value = self.facts_view.value = ""
            return
        cost = "unpriced" if s.cost_usd is None else f"${s.cost_usd:,.4f}"
        what = (f"the summary at the last call: <b>{s.summary_tokens:,}</b> tokens for {s.summarised_messages} dropped "
                "messages" if s.summary else "the last call dropped nothing: <b>no summary</b>")
        facts = (f"; checklist at the last call: <b>{s.kept}</b> of {s.known} readable ({len(s.visible)} visible, "
                 f"{len(s.in_summary)} only in the summary), <b>{len(s.lost)}</b> lost; worst call {s.kept_min}"
                 if self.facts else "; no checklist for this transcript")
        self.label.value = (f"window <b>{s.window:,}</b>: {what}{facts}. {s.summary_calls} summary calls, hit rate "
                            f"{100 * s.hit_rate:.1f}%, cost {cost}.")
        sections = ", ".join(f"{name} {n}" for name, n in s.sections)
        self.summary_view.value = (f"<div style='padding-right:6px'><b>summary</b> "
                                   f"({shown(sections, html=True) or 'none'})<pre style='white-space:pre-wrap;"
                                   f"max-height:360px;overflow:auto;font-size:11px'>"
                                   f"{shown(s.summary, multiline=True, html=True)}</pre></div>")
        status = {**{f: "visible" for f in s.visible}, **{f: "in summary" for f in s.in_summary},
                  **{f: "via page" for f in s.paged}, **{f: "lost" for f in s.lost}}
        colour = {"visible": "#2e7d32", "in summary": "#1565c0", "via page": "#f28e2b", "lost": "#c62828"}
        rows = "".join(f"<tr style='color:{colour[status[f.id]]}'><td>{shown(f.id, html=True)}</td>"
                       f"<td style='white-space:nowrap'>{status[f.id]}</td>"
                       f"<td>{shown(f.text[:60], html=True)}</td></tr>" for f in self.facts if f.id in status)
        self.facts_view.value = (f"<div style='padding-left:6px;font-size:11px'>"
                                 f"<b>facts known at the last call</b><table>{rows}</table></div>")

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = f"SummaryWidget(window={self.window.value:,}, placement={self.placement!r})"
        return bundle

