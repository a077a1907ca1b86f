"""Chapter 07: compaction — rarely and in one big batch; the floor; what repeated compactions keep.

What it holds:

* :func:`compaction_window` — a window at which a conversation must compact, and ``budgeted`` can still
  build every call (the sample: 30,000);
* :func:`policy_replay` — a replay under ``compaction`` (or ``pipeline``) with one trigger / target pair;
* :func:`prefix_rewrites` — the calls whose request changed history the previous request had sent;
* :func:`sawtooth` / :func:`sawtooth_figure` — context tokens per call, the compactions (before → after)
  and what their summary calls cost;
* :func:`policy_rows` — strategies and trigger / target pairs side by side: compactions, prefix rewrites,
  hit rate, cost (summary calls included), facts kept; :func:`policy_grid` — the pairs of a small grid;
* :func:`floor_case` / :func:`naive_rounds` / :func:`loop_trap` — the floor above the budget: what a
  "compact until it fits" loop would do, and what ctxlab does instead (shrink once, then a typed error);
* :func:`coverage_after` — after two compactions, every message is in the context or in the newest
  summary's sources;
* :func:`metering_compare` — counting every token against usage-anchored metering: when each triggers;
* :func:`pipeline_steps` — which step of the decision pipeline each call took;
* :class:`SawtoothWidget` — one choice, the compaction policy (trigger and target sliders).

Simplified on purpose: one thread (the chapters cut a transcript to its main thread); the widget keeps
every replay it ran, keyed by (trigger, target), so going back to a setting is instant.
"""

from __future__ import annotations

import html
import math
import re
import time
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

from ctxlab.compaction import CompactionError, CompactionPolicy, CompactionStrategy, without_recorded
from ctxlab.base.errors import CtxlabError
from ctxlab.facts import Fact, fact_retention
from ctxlab.interactions import group_units
from ctxlab.messages import Conversation, ToolSpec, assistant, tool_result, user
from ctxlab.tables.profiles import ModelProfile, profile_for, with_window
from ctxlab.render import prefix_diff
from ctxlab.replay import ReplayResult, model_calls, replay
from ctxlab.base.safe_text import safe_html, shown
from ctxlab.strategies import Call, compacted_view, get_strategy, whole_context
from ctxlab.summary import RuleBasedSummarizer
from ctxlab.tokens import MessageMeter
from ctxlab.widgets._plots import COLOURS, error_html, figure, show_in

# ---- the window, the replays, the rewrites ------------------------------------------------------------


def _peak_full(conversation: Conversation) -> int:
    """The largest prompt ``full`` sends (tokens), at the model's own window."""
    return max((rec.context_tokens for rec in replay(conversation, "full").records), default=0)


def compaction_window(conversation: Conversation, step: int = 5_000) -> int:
    """A window where compaction must act: half the largest prompt ``full`` sends, rounded up to ``step`` (at
    most the model's window), raised until ``budgeted`` and ``compaction`` (80% → 50%) can build every call.
    The sample → 30,000. Chapter 07."""
    cap = profile_for(conversation.model or "claude-sonnet-4-5", conversation.provider).context_window
    window = min(cap, max(step, math.ceil(_peak_full(conversation) / 2 / step) * step))
    for _ in range(8):
        try:
            for name in ("budgeted", "compaction"):
                replay(conversation, name, window=window)
            return window
        except CtxlabError as err:
            needed = getattr(err, "needed", None)
            if not needed or window >= cap:
                return window
            window = min(cap, max(window + step, math.ceil(needed / 0.9 / step) * step))
    return window


def _ratio(x: float) -> float:
    """A slider's float as two decimals: 0.7000000000000001 → 0.7."""
    return round(float(x), 2)


def policy_replay(conversation: Conversation, window: int, trigger_ratio: float = 0.8, target_ratio: float = 0.5,
                  *, metering: str = "count", strategy: str = "compaction", check: bool = False) -> ReplayResult:
    """``conversation`` replayed under ``compaction`` (or ``pipeline``) with one policy. Chapter 07.

    ``policy_replay(sample, 30_000).new_entries`` → two compaction entries (calls 31 and 32).
    """
    policy = CompactionPolicy(_ratio(trigger_ratio), _ratio(target_ratio), metering=metering)  # type: ignore[arg-type]
    return replay(conversation, get_strategy(strategy, policy=policy), window=window, check=check)


def prefix_rewrites(result: ReplayResult) -> list[int]:
    """Calls whose request changed something the previous request of the thread had sent — a message dropped,
    summarised or replaced, the system prompt rewritten — so the cache can serve only what stands before the
    change. A change of model or thinking setting (the transcript's, the same under every strategy) is not
    counted. ``budgeted`` on the sample at 30,000 → [31, 37]. Chapter 07."""
    last: dict[str, Any] = {}  # thread -> its previous rendered request
    out = []
    for rec in result.records:
        previous, last[rec.call.thread] = last.get(rec.call.thread), rec.request
        if previous is None:
            continue
        d = prefix_diff(previous, rec.request)  # a model change comes back with no blocks (old is None)
        if d.index is not None and d.old is not None and not d.reason.startswith("thinking"):
            out.append(rec.call.index)
    return out


def _summary_rows(result: ReplayResult) -> list[Any]:
    return [r for r in result.ledger.rows if r.note.startswith("summary call")]


_TARGET = re.compile(r"^compacted .*target ([\d,]+)\)")  # the effective target in a compaction's note


def _compaction_call(entry_id: str) -> int:
    """``"compaction:main:31"`` → 31 (the call that made it)."""
    return int(entry_id.rsplit(":", 1)[1])


# ---- the sawtooth -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CompactionPoint:
    """One compaction: the call that made it, the context before and after (tokens), the messages its summary
    stands for so far, and the summary call's cost (USD; None when unpriced)."""

    call: int
    tokens_before: int
    tokens_after: int
    target_tokens: int | None  # the target it aimed at: target ratio x window, raised to the floor when that is higher
    sources: int
    above_target: bool
    shrunk: bool  # the floor was over the budget: the newest unit's tool results were pruned first
    summary_cost_usd: float | None


@dataclass(frozen=True)
class SawtoothState:
    """What the sawtooth shows for one policy: plain numbers. ``error`` when no replay was possible."""

    window: int
    trigger_ratio: float
    target_ratio: float
    context_tokens: tuple[int, ...] = ()  # per model call, what was sent
    compactions: tuple[CompactionPoint, ...] = ()
    summary_calls: int = 0
    summary_cost_usd: float = 0.0
    cost_usd: float | None = None  # every ledger row, the summary calls included
    hit_rate: float = 0.0
    rewrites: int = 0
    overflows: int = 0
    error: str = ""

    @property
    def calls(self) -> int:
        return len(self.context_tokens)

    @property
    def max_context(self) -> int:
        return max(self.context_tokens, default=0)

    @property
    def compaction_calls(self) -> tuple[int, ...]:
        return tuple(c.call for c in self.compactions)


def sawtooth(result: ReplayResult, window: int, trigger_ratio: float, target_ratio: float) -> SawtoothState:
    """The sawtooth of one compaction replay: context per call, each compaction and its summary call. Chapter 07."""
    summaries = {r.call: r for r in _summary_rows(result)}  # call -> its summary call's row (one at most)
    notes = {rec.call.index: rec.notes for rec in result.records}
    points = []
    for e in result.new_entries:
        if e.kind != "compaction":
            continue
        call = _compaction_call(e.id)
        row = summaries.get(call)
        aimed = next((m.group(1) for n in notes.get(call, ()) if (m := _TARGET.search(n))), None)
        points.append(CompactionPoint(call, e.data["tokens_before"], e.data["tokens_after"],
                                      int(aimed.replace(",", "")) if aimed else None, len(e.data["sources"]),
                                      any(n.startswith("above target") for n in notes.get(call, ())),
                                      any("floor was over the budget" in n for n in notes.get(call, ())),
                                      row.cost_usd if row else None))
    t = result.ledger.totals()
    rows = _summary_rows(result)
    return SawtoothState(window, _ratio(trigger_ratio), _ratio(target_ratio),
                         tuple(rec.context_tokens for rec in result.records), tuple(points), len(rows),
                         sum(r.cost_usd or 0.0 for r in rows), t.cost_usd, t.hit_rate, len(prefix_rewrites(result)),
                         sum(1 for rec in result.records if rec.overflow))


SAWTOOTH_COLUMNS = ("call", "before", "after", "aimed at", "messages in summary", "note", "summary call")


def sawtooth_rows(state: SawtoothState) -> list[tuple[Any, ...]]:
    """One line of :data:`SAWTOOTH_COLUMNS` per compaction. Chapter 07."""
    out = []
    for c in state.compactions:
        raised = c.target_tokens is not None and c.target_tokens > state.target_ratio * state.window
        note = ", ".join([w for w, on in (("target raised to the floor", raised), ("results pruned first", c.shrunk),
                                           ("above target", c.above_target)) if on])
        cost = "—" if c.summary_cost_usd is None else f"${c.summary_cost_usd:,.4f}"
        aimed = "—" if c.target_tokens is None else c.target_tokens
        out.append((c.call, c.tokens_before, c.tokens_after, aimed, c.sources, note, cost))
    return out


STATE_COLUMNS = ("trigger", "target", "compactions", "at calls", "largest context", "prefix rewrites",
                 "summary calls", "cost", "hit rate")


def state_row(s: SawtoothState) -> tuple[Any, ...]:
    """One line of :data:`STATE_COLUMNS` for a policy (an error keeps the policy and the reason). Chapter 07."""
    if s.error:
        return (f"{s.trigger_ratio:.0%}", f"{s.target_ratio:.0%}", "—", s.error[:50], *("—",) * 5)
    cost = "unpriced" if s.cost_usd is None else f"${s.cost_usd:,.4f}"
    return (f"{s.trigger_ratio:.0%}", f"{s.target_ratio:.0%}", len(s.compactions),
            ", ".join(map(str, s.compaction_calls)) or "—", s.max_context, s.rewrites, f"${s.summary_cost_usd:,.4f}",
            cost, f"{100 * s.hit_rate:.1f}%")


def sawtooth_summary(state: SawtoothState) -> str:
    """One line: the policy, compactions, peak, rewrites, and the cost with the summary calls' share. Chapter 07."""
    if state.error:
        return f"trigger {state.trigger_ratio:.0%}, target {state.target_ratio:.0%}: {shown(state.error)}"
    cost = "unpriced" if state.cost_usd is None else f"${state.cost_usd:,.4f}"
    return (f"window {state.window:,}, trigger {state.trigger_ratio:.0%} ({state.trigger_ratio * state.window:,.0f}), "
            f"target {state.target_ratio:.0%} ({state.target_ratio * state.window:,.0f}): "
            f"{_n(len(state.compactions), 'compaction')} "
            f"(calls {', '.join(map(str, state.compaction_calls)) or '—'}); "
            f"largest context {state.max_context:,} tokens; {_n(state.rewrites, 'prefix rewrite')}; cost {cost}, of "
            f"which {_n(state.summary_calls, 'summary call')} ${state.summary_cost_usd:,.4f}; hit rate "
            f"{100 * state.hit_rate:.1f}%")


def _n(count: int, noun: str) -> str:
    """``_n(1, "compaction")`` → ``"1 compaction"``; ``_n(2, ...)`` → ``"2 compactions"``."""
    return f"{count} {noun}{'s' * (count != 1)}"


def sawtooth_figure(state: SawtoothState, title: str | None = None) -> Any:
    """Context tokens per call (line), each compaction as a drop from before to after, and the window,
    trigger and target as horizontal lines. Chapter 07."""
    import plotly.graph_objects as go

    x = list(range(1, state.calls + 1))
    fig = figure(title or f"Context per call · trigger {state.trigger_ratio:.0%} → target {state.target_ratio:.0%}",
                 height=380, xaxis=dict(title="model call"), yaxis=dict(title="context tokens", rangemode="tozero"),
                 legend=dict(orientation="h", yanchor="top", y=-0.2, x=0), margin=dict(l=60, r=20, t=50, b=90))
    fig.add_trace(go.Scatter(x=x, y=list(state.context_tokens), name="context sent", mode="lines",
                             line=dict(color=COLOURS["kept"], width=2),
                             hovertemplate="call %{x}: %{y:,} tokens<extra></extra>"))
    xs: list[Any] = []
    ys: list[Any] = []
    for c in state.compactions:
        xs += [c.call, c.call, None]
        ys += [c.tokens_before, c.tokens_after, None]
    if state.compactions:
        fig.add_trace(go.Scatter(x=xs, y=ys, name="compaction (before → after)", mode="lines+markers",
                                 line=dict(color=COLOURS["rewrite"], width=2, dash="dot"),
                                 marker=dict(size=7, color=COLOURS["rewrite"]),
                                 hovertemplate="call %{x}: %{y:,} tokens<extra></extra>"))
    for name, level, colour, dash in (("window", state.window, "#333333", "solid"),
                                      ("trigger", state.trigger_ratio * state.window, COLOURS["no_cache"], "dash"),
                                      ("target", state.target_ratio * state.window, COLOURS["system"], "dash")):
        fig.add_trace(go.Scatter(x=[1, max(x, default=1)], y=[level, level], name=f"{name} {level:,.0f}", mode="lines",
                                 line=dict(color=colour, width=1, dash=dash), hoverinfo="skip"))
    return fig


# ---- strategies and policies side by side -------------------------------------------------------------------

@dataclass(frozen=True)
class PolicyRow:
    """One strategy or trigger / target pair at one window. Money in USD; ``facts_*`` None without a checklist."""

    name: str
    window: int
    trigger_ratio: float | None
    target_ratio: float | None
    compactions: int = 0
    rewrites: int = 0
    summary_calls: int = 0
    hit_rate: float = 0.0
    cost_usd: float | None = None
    total_input_tokens: int = 0
    max_context: int = 0
    facts_kept: int | None = None
    facts_kept_min: int | None = None
    error: str = ""


def policy_name(policy: Any) -> str:
    """``"budgeted"`` → ``"budgeted"``; ``(0.8, 0.5)`` → ``"compaction 0.80 → 0.50"``. Chapter 07."""
    if isinstance(policy, str):
        return policy
    return f"compaction {policy[0]:.2f} → {policy[1]:.2f}"


def cached_replay(conversation: Conversation, window: int, policy: Any, cache: dict | None = None) -> ReplayResult:
    """The replay of one policy — a strategy name, or a (trigger, target) pair for ``compaction`` — kept in
    ``cache`` (keyed by window, policy and metering). ``"pipeline"`` runs with the default 80% → 50% policy.
    Chapter 07."""
    cache = {} if cache is None else cache
    key = (window, policy if isinstance(policy, str) else (_ratio(policy[0]), _ratio(policy[1])), "count")
    if key not in cache:
        if not isinstance(policy, str):
            cache[key] = policy_replay(conversation, window, *key[1])
        elif policy == "pipeline":
            cache[key] = policy_replay(conversation, window, strategy="pipeline")
        else:
            cache[key] = replay(conversation, policy, window=window)
    return cache[key]


def policy_rows(conversation: Conversation, window: int, policies: Sequence[Any], *,
                facts: Sequence[Fact] | None = None, cache: dict | None = None) -> list[PolicyRow]:
    """One :class:`PolicyRow` per policy: a strategy name (``"budgeted"``, ``"pipeline"``) or a (trigger, target)
    pair for ``compaction``. ``cache`` (a dict) keeps replays between calls. Chapter 07.

    On the sample at 30,000: budgeted → 4 rewrites, $0.6078; (0.8, 0.5) → 2 compactions, $0.8820."""
    cache = {} if cache is None else cache
    out = []
    for policy in policies:
        trigger, target = (None, None) if isinstance(policy, str) else (_ratio(policy[0]), _ratio(policy[1]))
        try:
            result = cached_replay(conversation, window, policy, cache)
        except CtxlabError as err:
            out.append(PolicyRow(policy_name(policy), window, trigger, target, error=" ".join(str(err).split())[:160]))
            continue
        t = result.ledger.totals()
        kept = fact_retention(result, facts, conversation) if facts else None
        out.append(PolicyRow(policy_name(policy), window, trigger, target,
                             sum(1 for e in result.new_entries if e.kind == "compaction"), len(prefix_rewrites(result)),
                             len(_summary_rows(result)), t.hit_rate, t.cost_usd, t.total_input_tokens,
                             max((rec.context_tokens for rec in result.records), default=0),
                             kept.facts_kept_last if kept else None, kept.facts_kept_min if kept else None))
    return out


POLICY_COLUMNS = ("strategy", "window", "compactions", "prefix rewrites", "summary calls", "hit rate", "cost",
                  "input tokens", "largest context", "facts kept")


def policy_row(r: PolicyRow) -> tuple[Any, ...]:
    """One line of :data:`POLICY_COLUMNS` (an error keeps only the name and the reason). Chapter 07."""
    if r.error:
        return (r.name, r.window, "—", "—", "—", "—", "—", "—", "—", r.error[:60])
    cost = "unpriced" if r.cost_usd is None else f"${r.cost_usd:,.4f}"
    facts = "—" if r.facts_kept is None else f"{r.facts_kept} (min {r.facts_kept_min})"
    return (r.name, r.window, r.compactions, r.rewrites, r.summary_calls, f"{100 * r.hit_rate:.1f}%", cost,
            r.total_input_tokens, r.max_context, facts)


GRID_TRIGGERS = (0.6, 0.7, 0.8, 0.9)
GRID_TARGETS = (0.3, 0.5, 0.7)


def policy_grid(triggers: Sequence[float] = GRID_TRIGGERS, targets: Sequence[float] = GRID_TARGETS,
                extra: Sequence[tuple[float, float]] = ((0.8, 0.75),)) -> list[tuple[float, float]]:
    """The (trigger, target) pairs of a small grid, target below trigger, plus ``extra``. → 10 pairs. Chapter 07."""
    pairs = [(a, b) for a in triggers for b in targets if b < a] + [p for p in extra]
    return sorted(set(pairs))


# ---- the loop trap --------------------------------------------------------------------------------------------

FLOOR_MODEL = "gpt-4o"  # o200k is gpt-4o's own tokenizer: the counts below are exact


@dataclass(frozen=True)
class FloorCase:
    """A tiny session whose floor is near or over the budget: the history before the last call, that call, and
    the profile (window set by the caller)."""

    history: Conversation
    call: Call
    profile: ModelProfile
    system_tokens: int
    result_tokens: int


def floor_case(system_tokens: int = 600, result_tokens: int = 500, window: int = 1_000, earlier: int = 2) -> FloorCase:
    """The issue's case — window 1,000, a 600-token system prompt, a newest unit with a 500-token tool result —
    after ``earlier`` small rounds of older history (something a compaction can fold).

    ``floor_case()`` → a floor (tools + system + newest user message + newest unit) of about 1,160 tokens
    against a budget of 900. Chapter 07.
    """
    system = ("hello" + " hello" * (system_tokens - 1),)  # one token per word in o200k
    items: list[Any] = [user("List the logs in this folder, then show me the big one.", "u0")]
    for k in range(earlier):
        lines = "".join(f"part{k}.log line {i}: ok\n" for i in range(20))
        items += [assistant(f"Looking at part {k + 1}.", f"e{k}", calls=((f"e{k}c", "cat", {"path": f"part{k}.log"}),)),
                  tool_result(f"e{k}c", lines, f"e{k}t", name="cat")]
    items += [assistant("Both parts are fine.", "e-done"), user("Show me big.log.", "u1"),
              assistant("", "a1", calls=(("c1", "cat", {"path": "big.log"}),)),
              tool_result("c1", " word" * result_tokens, "t1", name="cat"), assistant("It is long.", "a2")]
    tools = (ToolSpec("cat", "Print a file.", {"type": "object", "properties": {"path": {"type": "string"}}}),)
    conv = Conversation("floor", tuple(items), system=system, tools=tools, model=FLOOR_MODEL, provider="openai")
    call = model_calls(conv)[-1][1]
    return FloorCase(replace(conv, items=tuple(items[:-1])), call, with_window(profile_for(FLOOR_MODEL), window),
                     system_tokens, result_tokens)


def naive_rounds(case: FloorCase, rounds: int = 4) -> list[tuple[int, int, int]]:
    """What a "compact until it fits" loop would see, stopped after ``rounds`` (a real one has no such limit):
    per round (round, messages it could fold into a summary, context tokens after), round 0 the start. Compaction
    can only fold history older than the newest unit, so once that is gone the size never falls again. Chapter 07."""
    meter = MessageMeter(case.profile)
    budget = case.profile.budget_tokens()
    view = case.history
    out = [(0, 0, whole_context(view, case.profile, meter).total_tokens)]
    for k in range(1, rounds + 1):
        units = group_units([m for m in view.messages if m.origin not in ("compact_summary", "meta")])
        pinned = max((u.index for u in units if u.first.is_real_user), default=None)
        foldable = [m for u in units[:-1] if u.index != pinned for m in u.messages]
        if foldable:
            text = RuleBasedSummarizer().summarize(foldable).text
            kept = tuple(m for m in view.messages if m not in foldable)
            view = replace(view, items=(user(text, f"summary-{k}", origin="compact_summary"), *kept))
        size = whole_context(view, case.profile, meter).total_tokens
        out.append((k, len(foldable), size))
        if size <= budget:
            break
    return out


@dataclass(frozen=True)
class LoopTrap:
    """What ctxlab did with a floor case: the floor's parts (tokens), and either the context it sent after
    shrinking the newest results once, or the error it raised (with its numbers)."""

    window: int
    budget: int
    head_tokens: int  # tools + system + request overhead
    newest_unit_tokens: int
    sent_tokens: int | None
    notes: tuple[str, ...]
    pruned_results: int
    error: str = ""
    needed: int | None = None


def loop_trap(case: FloorCase) -> LoopTrap:
    """Ask :class:`~ctxlab.compaction.CompactionStrategy` for the floor case's last call; catch its typed error.
    Chapter 07."""
    meter = MessageMeter(case.profile)
    ctx = whole_context(case.history, case.profile, meter)
    head = ctx.total_tokens - ctx.message_tokens
    units = group_units(list(case.history.messages))
    newest = sum(meter.message(m) for m in units[-1].messages)
    budget = case.profile.budget_tokens()
    try:
        d = CompactionStrategy().decide(case.history, case.call, case.profile, meter)
    except CompactionError as err:
        return LoopTrap(case.profile.context_window, budget, head, newest, None, (), 0, str(err), err.needed)
    return LoopTrap(case.profile.context_window, budget, head, newest, d.context.total_tokens, d.notes,
                    sum(1 for e in d.new_entries if e.kind == "pruned_result"))


# ---- two compactions, nothing lost --------------------------------------------------------------------------

@dataclass
class _CaptureAfter(CompactionStrategy):
    """``compaction`` that keeps the history it was given at the first call after ``after`` compactions."""

    after: int = 2
    captured: tuple[Call, Conversation] | None = None

    def decide(self, history: Conversation, call: Call, profile: ModelProfile, meter: MessageMeter) -> Any:
        if self.captured is None and sum(1 for e in history.entries if e.kind == "compaction"
                                         and e.data.get("origin") == "ctxlab") >= self.after:
            self.captured = (call, history)
        return super().decide(history, call, profile, meter)


@dataclass(frozen=True)
class Coverage:
    """At ``call``, the first call after ``compactions`` compactions: the messages of the history, how many the
    context shows verbatim, how many the newest summary stands for, and the ids in neither (none, we hope)."""

    call: int | None
    compactions: tuple[str, ...]
    messages: int
    visible: int
    covered: int
    both: int  # kept verbatim although the summary also names them (a pinned task)
    lost: tuple[str, ...]
    sources: int
    earlier_sources_kept: bool  # every source of an earlier summary is a source of the newest one
    error: str = ""  # the replay could not build a context (a CompactionError)


def coverage_after(conversation: Conversation, window: int, trigger_ratio: float = 0.8, target_ratio: float = 0.5,
                   after: int = 2) -> Coverage:
    """Replay ``compaction`` until ``after`` compactions have happened, then check the history at the next call
    with :func:`~ctxlab.strategies.compacted_view` and the newest entry's ``sources``. Chapter 07.

    On the sample at 30,000: call 33, 68 messages, 3 shown verbatim + 65 in the summary, none lost."""
    strategy = _CaptureAfter(CompactionPolicy(_ratio(trigger_ratio), _ratio(target_ratio)), after=after)
    try:
        replay(conversation, strategy, window=window)
    except CtxlabError as err:
        if strategy.captured is None:
            return Coverage(None, (), 0, 0, 0, 0, (), 0, True, " ".join(str(err).split())[:200])
    if strategy.captured is None:
        return Coverage(None, (), 0, 0, 0, 0, (), 0, True)
    call, history = strategy.captured
    history = without_recorded(history)  # what the strategy itself sees (the agent's own compactions left out)
    view, entry, _ = compacted_view(history)
    visible = {m.id for m in view.messages}
    covered = set(entry.data.get("sources", ())) if entry else set()
    ids = [m.id for m in history.messages if m.origin != "meta"]
    done = [e for e in history.entries if e.kind == "compaction"]
    earlier = all(set(e.data.get("sources", ())) <= covered for e in done[:-1])
    return Coverage(call.index, tuple(e.id for e in done), len(ids), sum(i in visible for i in ids),
                    sum(i in covered for i in ids), sum(i in visible and i in covered for i in ids),
                    tuple(i for i in ids if i not in visible and i not in covered), len(covered), earlier)


# ---- counting against usage-anchored metering ------------------------------------------------------------------

@dataclass
class _Metered(CompactionStrategy):
    """``compaction`` that records, per call, what the trigger saw and what counting gives for the same context."""

    seen: list[tuple[int, int, int]] = field(default_factory=list)  # (call, metered, counted)

    def metered(self, ctx: Any, call: Call, meter: MessageMeter) -> int:
        value = super().metered(ctx, call, meter)
        self.seen.append((call.index, value, ctx.total_tokens))
        return value


@dataclass(frozen=True)
class MeteringRun:
    """One metering's replay: the compaction calls, the largest context sent, overflows, cost (USD)."""

    metering: str
    compaction_calls: tuple[int, ...]
    max_context: int
    overflows: int
    cost_usd: float | None
    error: str = ""


@dataclass(frozen=True)
class MeteringComparison:
    """Counting against usage-anchored metering at one window, and the estimate's error call by call.

    ``estimates``: per call of the usage-anchored replay, (call, what the meter saw, the counted size of the
    same context)."""

    window: int
    trigger_ratio: float
    runs: tuple[MeteringRun, ...]
    estimates: tuple[tuple[int, int, int], ...]

    @property
    def largest_under(self) -> tuple[int, int, int] | None:
        """The call the usage-anchored meter under-counted most (call, metered, counted)."""
        under = [e for e in self.estimates if e[1] < e[2]]
        return min(under, key=lambda e: (e[1] - e[2]) / e[2]) if under else None

    @property
    def disagreements(self) -> tuple[tuple[int, int, int], ...]:
        """Calls of the usage-anchored replay at which the meter and a count of the same context fall on different
        sides of the trigger (call, metered, counted)."""
        level = self.trigger_ratio * self.window
        return tuple(e for e in self.estimates if (e[1] > level) != (e[2] > level))

    @property
    def largest_over(self) -> tuple[int, int, int] | None:
        over = [e for e in self.estimates if e[1] > e[2]]
        return max(over, key=lambda e: (e[1] - e[2]) / e[2]) if over else None


def _run(strategy: _Metered, conversation: Conversation, window: int, metering: str) -> MeteringRun:
    try:
        result = replay(conversation, strategy, window=window)
    except CtxlabError as err:
        return MeteringRun(metering, (), 0, 0, None, " ".join(str(err).split())[:200])
    return MeteringRun(metering, tuple(_compaction_call(e.id) for e in result.new_entries if e.kind == "compaction"),
                       max((r.context_tokens for r in result.records), default=0),
                       sum(1 for r in result.records if r.overflow), result.ledger.totals().cost_usd)


def metering_compare(conversation: Conversation, window: int, trigger_ratio: float = 0.8,
                     target_ratio: float = 0.5) -> MeteringComparison:
    """Replay ``compaction`` counting every token, and anchored on the previous request's size (+ chars/4 for what
    was added since), at one window. Chapter 07. On the sample at 40,000: counting compacts at calls 31 and 41,
    usage-anchored only at 32 (it saw the 24,000-token CI log as about 12,000)."""
    runs, usage = [], None
    for metering in ("count", "usage"):
        policy = CompactionPolicy(_ratio(trigger_ratio), _ratio(target_ratio),
                                  metering=metering)  # type: ignore[arg-type]
        s = _Metered(policy)
        runs.append(_run(s, conversation, window, metering))
        usage = s if metering == "usage" else usage
    return MeteringComparison(window, _ratio(trigger_ratio), tuple(runs), tuple(usage.seen if usage else ()))


def first_triggers(conversation: Conversation, windows: Sequence[int], trigger_ratio: float = 0.8
                   ) -> list[tuple[int, int | None, int | None]]:
    """Per window, the first call at which counting and usage-anchored metering would reach the trigger:
    (window, counting, usage-anchored), None if never. One pass that never compacts, so both meters see the
    same history up to there. The sample → (30,000, 31, 31), (40,000, 31, 32), ... Chapter 07."""
    never = _Metered(CompactionPolicy(trigger_ratio=1.0, target_ratio=0.5, metering="usage"))
    replay(conversation, never, window=10**9)  # nothing compacts: both meters see the whole history
    out = []
    for w in windows:
        level = _ratio(trigger_ratio) * w
        out.append((w, next((c for c, _, n in never.seen if n > level), None),
                    next((c for c, m, _ in never.seen if m > level), None)))
    return out


# ---- the decision pipeline ---------------------------------------------------------------------------------------

def pipeline_steps(result: ReplayResult) -> dict[str, int]:
    """Calls of a ``pipeline`` replay by the step that settled them: sent as it was, tool results shrunk (paged or
    pruned) and then under the trigger, or compacted. Chapter 07."""
    out = {"sent as is": 0, "results shrunk": 0, "compacted": 0}
    for rec in result.records:
        if any(n.startswith("compacted") for n in rec.notes):
            out["compacted"] += 1
        elif any("paged or pruned" in n for n in rec.notes):
            out["results shrunk"] += 1
        else:
            out["sent as is"] += 1
    return out


# ---- the widget -----------------------------------------------------------------------------------------------

class SawtoothWidget:
    """One choice, the compaction policy: ``trigger`` and ``target`` sliders (ratios of the window). Shows the
    context per call (the sawtooth), the compactions with their summary calls, and the totals.

    ``w = SawtoothWidget(conv, 30_000); w.trigger.value = 0.6; w.state.compaction_calls`` → (31, 32, 59).
    ``compute(trigger, target)`` is the pure part; ``timings`` holds what each first visit cost (seconds). Chapter 07.
    """

    def __init__(self, conversation: Conversation, window: int, *, trigger: float = 0.8, target: float = 0.5) -> None:
        import ipywidgets as W

        self.conversation = conversation
        self.window = window
        self.cache: dict[tuple, ReplayResult] = {}  # (window, policy, metering) -> replay; policy_rows can share it
        self._states: dict[tuple[float, float], SawtoothState] = {}
        self.timings: dict[tuple[float, float], float] = {}
        style = {"description_width": "initial"}
        self.trigger = W.FloatSlider(value=trigger, min=0.5, max=0.95, step=0.05,
                                     description="trigger (share of window)", readout_format=".0%",
                                     continuous_update=False, style=style, layout=W.Layout(width="48%"))
        self.target = W.FloatSlider(value=target, min=0.1, max=0.9, step=0.05, description="target (share of window)",
                                    readout_format=".0%", continuous_update=False, style=style,
                                    layout=W.Layout(width="48%"))
        self.controls = W.HBox([self.trigger, self.target])
        self.label = W.HTML()
        self.plot = W.Output()
        self.table = W.HTML()
        self.widget = W.VBox([self.controls, self.label, self.plot, self.table])
        self.state = self.compute(self.trigger.value, self.target.value)
        for control in (self.trigger, self.target):
            control.observe(self._on_change, names="value")
        self._render()

    def result(self, trigger: float, target: float) -> ReplayResult:
        """The replay for this policy (run once, then kept)."""
        key = (self.window, (_ratio(trigger), _ratio(target)), "count")
        if key not in self.cache:
            self.cache[key] = policy_replay(self.conversation, self.window, trigger, target)
        return self.cache[key]

    def compute(self, trigger: float, target: float) -> SawtoothState:
        """The sawtooth for one policy; a target at or above the trigger is reported, not replayed."""
        key = (_ratio(trigger), _ratio(target))
        if key in self._states:
            return self._states[key]
        started = time.perf_counter()
        if key[1] >= key[0]:
            state = SawtoothState(self.window, *key, error="the target must be below the trigger")
        else:
            try:
                state = sawtooth(self.result(*key), self.window, *key)
            except CtxlabError as err:
                state = SawtoothState(self.window, *key, error=" ".join(str(err).split())[:200])
        self._states[key] = state
        self.timings[key] = time.perf_counter() - started
        return state

    def _on_change(self, change: dict[str, Any]) -> None:
        self.state = self.compute(self.trigger.value, self.target.value)
        self._render()

    def _render(self) -> None:
        from ctxlab.lab.workbook import text_table

        s = self.state
        if s.error:
            self.label.value = error_html("no replay", s.error)
            self.plot.outputs = ()
            self.table.value = ""
            return
        self.label.value = html.escape(sawtooth_summary(s))  # numbers; an error is escaped by sawtooth_summary
        show_in(self.plot, sawtooth_figure(s))
        self.table.value = ("<pre style='font-size:11px'>" + safe_html(text_table(sawtooth_rows(s), SAWTOOTH_COLUMNS),
                                                                       multiline=True)
                            + "</pre>")

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = (f"SawtoothWidget(window={self.window:,}, trigger={self.trigger.value:.2f}, "
                                f"target={self.target.value:.2f})")
        return bundle
