"""Chapter 07's measurements of what compaction cannot do and what it keeps: the floor, and two compactions.

What it holds:

* :func:`floor_case` / :func:`naive_rounds` / :func:`loop_trap` — the floor above the budget: what a
  "compact until it fits" loop would do, and what ctxlab does instead (shrink once, then a typed error);
* :func:`coverage_after` — after two compactions, every message is in the context or in the newest
  summary's sources.

Plain rows, no UI; the sawtooth is in :mod:`ctxlab.lab.ch07_compaction`, the policies side by side in
:mod:`ctxlab.lab.ch07_policies`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ctxlab.base.errors import CtxlabError
from ctxlab.compaction import CompactionError, CompactionPolicy, CompactionStrategy
from ctxlab.fast import FAST
from ctxlab.interactions import group_units
from ctxlab.lab.ch07_compaction import two_decimals
from ctxlab.messages import Conversation, ToolSpec, assistant, tool_result, user
from ctxlab.replay import replay
from ctxlab.strategies import Call, Decision, model_calls, whole_context
from ctxlab.summary import RuleBasedSummarizer
from ctxlab.tables.profiles import ModelProfile, profile_for, with_window
from ctxlab.tokens import MessageMeter
from ctxlab.views import compacted_view, without_recorded

# ---- the loop trap --------------------------------------------------------------------------------------------

FLOOR_MODEL = "gpt-4o"  # o200k is gpt-4o's own tokenizer: the counts below are exact


@dataclass(frozen=True)
class FloorCase:
    """A tiny session whose floor is near or over the budget: the history before the last call, that call, and
    the profile (window set by the caller); the system prompt's and the newest tool result's sizes (tokens).
    Chapter 07."""

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
    shrinking the newest results once, or the error it raised (with its numbers). Chapter 07."""

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
    """Ask :class:`~ctxlab.compaction.CompactionStrategy` for the floor case's last call; catch its typed error
    (:class:`~ctxlab.compaction.CompactionError`) into the row. Chapter 07."""
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

    def decide(self, history: Conversation, call: Call, profile: ModelProfile, meter: MessageMeter) -> Decision:
        if self.captured is None and sum(1 for e in history.entries if e.kind == "compaction"
                                         and e.data.get("origin") == "ctxlab") >= self.after:
            self.captured = (call, history)
        return super().decide(history, call, profile, meter)


@dataclass(frozen=True)
class Coverage:
    """At ``call``, the first call after ``compactions`` compactions: the messages of the history, how many the
    context shows verbatim, how many the newest summary stands for, and the ids in neither (none, we hope).
    Chapter 07."""

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
    with :func:`~ctxlab.views.compacted_view` and the newest entry's ``sources``. A replay that cannot build
    a context comes back in ``error`` (never raised). Chapter 07.

    On the sample at 30,000: call 33, 68 messages, 3 shown verbatim + 65 in the summary, none lost."""
    strategy = _CaptureAfter(CompactionPolicy(two_decimals(trigger_ratio), two_decimals(target_ratio)), after=after)
    try:
        replay(conversation, strategy, window=window, speedup=FAST)
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
