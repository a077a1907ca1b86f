"""Summary strategies: the summary as a model call, where it goes, and ``budgeted+summary``.

Unlike ``summary.py``, which decides what a summary keeps, this module asks a model for one and
puts it into the context:

* :class:`LLMSummarizer` — the summary's sections asked of any function ``str -> str`` you pass
  (:data:`DEFAULT_PROMPT`, the dropped messages as text by :func:`render_transcript`);
* :func:`summary_call` — a summary is a model call: the :class:`~ctxlab.strategies.SideCall` the
  replay turns into its own ledger row (``kind="summary"``), fresh or on the cached prefix;
* :func:`place_summary` — one of :data:`PLACEMENTS`: the end of the system prompt (the texts'
  placement), a system block of its own, or the first message;
* :class:`BudgetedSummaryStrategy` (``budgeted+summary``) — the texts' strategy: build under a share of the
  budget, summarise what was dropped, place it (opening with ``views.SUMMARY_MARKER``). When to summarise is
  :data:`REGENERATE`: the texts regenerate the summary at every call that truncates (``every_call``: the cost
  grows with the square of the session, a summary of everything dropped at every call); ``on_change`` only when
  what is dropped changes; ``extend`` (the default) summarises only the newly dropped messages into the summary
  so far, the way pi updates its compaction summary (``UPDATE_SUMMARIZATION_PROMPT``: the previous summary and
  only the new messages, pi-mono's coding-agent compaction, read 2026-12-03), and starts again from scratch only
  when the dropped messages stop growing at the end (a rewrite, a wider budget).

The rule for a summary call's size is ``summary_chunks.py``'s: a summary call obeys the same window, and
dropped messages that do not fit one request are summarised in chunks (:func:`summarise_in_chunks`, its names
re-exported here), each chunk summarised again only when its messages or its prompt changed. The strategy, too,
reads only what changed since the last call: the dropped messages are extended where the context's report starts
as it did (:class:`Dropped`), and a summary placed as before is cut and counted once, not at every call.

The three placements under Anthropic's and OpenAI's cache rules are measured in ``ctxlab/lab/placement.py``.
Simplified on purpose: one summary per context, of everything dropped. Taught in chapter 06.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from operator import attrgetter
from typing import Any, Callable, ClassVar, Literal, Sequence

from ctxlab.base import validate
from ctxlab.base.errors import BudgetError
from ctxlab.context import BudgetPolicy, Context, UnitReport, build_context
from ctxlab.interactions import Unit, group_units
from ctxlab.messages import Conversation, Message, TextPart, ToolSpec
from ctxlab.pruning import cut_to_tokens
from ctxlab.strategies import Call, Decision, SideCall, history_units, whole_context
from ctxlab.summary import RuleBasedSummarizer, Summarizer, Summary, held_to
from ctxlab.summary_chunks import (DEFAULT_PROMPT, UPDATE, Summarised, ask_for,  # noqa: F401 (UPDATE: re-exported)
                                   fresh_request, instruction, render_transcript, shared_prefix, summarise_in_chunks)
from ctxlab.tables.profiles import ModelProfile
from ctxlab.tokens import MessageMeter, TiktokenCounter, TokenCounter
from ctxlab.views import SUMMARY_MARKER


@dataclass(frozen=True)
class LLMSummarizer:
    """Any function ``prompt -> summary`` as a summarizer; its answer is used verbatim: ``LLMSummarizer(lambda p:
    my_client.complete(p))``. ``prompt`` holds ``{max_tokens}`` (a whole number of tokens, 0 or more, else
    CtxlabError). Chapter 06."""

    fn: Callable[[str], str]
    prompt: str = DEFAULT_PROMPT
    max_tokens: int = 1_000
    counter: TokenCounter = field(default_factory=TiktokenCounter)

    def __post_init__(self) -> None:
        validate.settle(self, max_tokens=validate.tokens("max_tokens", self.max_tokens, allow_zero=True,
                                                         allow_none=False))

    def instruction(self, previous: str | None = None) -> str:
        return instruction(self.prompt, self.max_tokens, previous)

    def build_prompt(self, dropped: Sequence[Message], previous: str | None = None) -> str:
        return f"{self.instruction(previous)}\n\n<conversation>\n{render_transcript(dropped)}\n</conversation>"

    def summarize(self, dropped: Sequence[Message], previous: str | None = None) -> Summary:
        text = self.fn(self.build_prompt(dropped, previous))
        return Summary(text, tuple(m.id for m in dropped), tokens=self.counter.count(text))  # kept: unknown


def summary_call(history: Conversation, dropped: Sequence[Message], summary: Summary, profile: ModelProfile,
                 meter: MessageMeter, *, prompt: str | None = None, on_cached_prefix: bool = False,
                 prefix: Context | None = None, max_tokens: int | None = None) -> SideCall:
    """The summary as one model call, of any size: a :class:`~ctxlab.strategies.SideCall` (its own ledger row;
    input: what is sent, output: the summary's tokens, ``max_tokens``: the reply's cap). Fresh (default): one
    user message, ``prompt`` plus the dropped messages as text. On the cached prefix: the request sent last
    (``prefix``; without one, the system prompt, the tools and the dropped messages) with ``prompt`` as a last
    user message, so the provider reads that request from its cache. Chapter 06."""
    prompt = prompt or DEFAULT_PROMPT.format(max_tokens=summary.tokens or 1_000)
    thread = dropped[0].thread if dropped else "main"
    if on_cached_prefix:
        ask = Message("user", (TextPart(prompt),), id="summary-request", thread=thread)
        view = replace(history, items=(*(prefix.messages if prefix else dropped), ask),
                       system=prefix.system if prefix else history.system)
    else:
        view = fresh_request(history, prompt, dropped, thread)
    how = "on the cached prefix" if on_cached_prefix else "fresh"
    return SideCall("summary", whole_context(view, profile, meter), meter.text(summary.text),
                    f"{len(dropped)} dropped messages, {how}", max_tokens=max_tokens)


# where a summary goes: the end of the last system block (the texts'), a system block of its own, the first message
Placement = Literal["system_end", "system_block", "first_user"]
PLACEMENTS: tuple[Placement, ...] = ("system_end", "system_block", "first_user")
# when a summary is made: at every call that truncates (the texts'), only when what is dropped changes, or extended:
# only the newly dropped messages, summarised into the summary so far (pi's update prompt; ctxlab's default)
Regenerate = Literal["every_call", "on_change", "extend"]
REGENERATE: tuple[Regenerate, ...] = ("every_call", "on_change", "extend")


def place_summary(context: Context, wrapped: str, placement: Placement, meter: MessageMeter, *,
                  like: Context | None = None) -> Context:
    """``context`` with ``wrapped`` appended to its last system block (``system_end``), as a system block
    of its own (``system_block``) or as the first message (``first_user``); token fields updated. ``like``: a
    context placed before, whose system blocks or first message are taken when they are equal (the meter counts
    them by identity: an unchanged summary is counted once). Chapter 06."""
    system, messages, extra = context.system, context.messages, 0
    if placement == "first_user":
        note = Message("user", (TextPart(wrapped),), id="summary:budgeted", origin="compact_summary",
                       thread=messages[0].thread if messages else "main")
        note = like.messages[0] if like is not None and like.messages and like.messages[0] == note else note
        messages, extra = (note, *messages), meter.message(note)
    elif placement == "system_end" and system:
        system = (*system[:-1], f"{system[-1]}\n\n{wrapped}")
    else:
        system = (*system, wrapped)
    system = like.system if like is not None and like.system == system else system
    return replace(context, system=system, messages=messages, system_tokens=meter.system(system),
                   message_tokens=context.message_tokens + extra)


@dataclass
class Dropped:
    """The messages a thread's last context dropped (oldest first) and their ids, kept so the next call reads only
    what changed: where its report and its units start as they did, the dropped messages start as they did (a
    unit's line and messages decide what it adds). ``starts[i]``: how many the report's first i lines dropped.
    Chapter 06."""

    report: tuple[UnitReport, ...] = ()
    units: list[Unit] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    starts: list[int] = field(default_factory=lambda: [0])
    unchanged: int = 0

    def update(self, context: Context, units: Sequence[Unit]) -> list[Message]:
        """The messages of the units ``context`` dropped (a new list); ``units``: those its report has a line for."""
        units, report = list(units), tuple(context.report)  # compared as the same types
        k = min(shared_prefix(self.report, report), shared_prefix(self.units, units))  # the lines as they were
        self.unchanged = self.starts[k]  # the first dropped messages, the same as at the last update
        del self.messages[self.starts[k]:], self.ids[self.starts[k]:], self.starts[k + 1:]
        for line in report[k:]:
            if line.decision == "dropped":
                self.messages += units[line.unit].messages
                self.ids += [m.id for m in units[line.unit].messages]
            self.starts.append(len(self.messages))
        self.report, self.units = report, units  # a copy: the meter's own list grows
        return list(self.messages)


@dataclass
class BudgetedSummaryStrategy:
    """``budgeted+summary``, the texts' strategy: build the context under (1 - ``summary_share``) of the budget;
    when units were dropped, summarise them and place the summary. ``regenerate`` (:data:`REGENERATE`, else
    ValueError): ``"extend"`` (default) summarises only what dropped since the last call into the summary so far
    (one small call, not a summary of everything again), ``"every_call"`` the texts' rule (the summary of everything
    dropped made again at every call that truncates), ``"on_change"`` that, but only when what is dropped changes.
    Each summary call
    is a side call (a ledger row) within the window: on the cached prefix when that fits, else fresh, in
    chunks when one does not fit (:func:`summarise_in_chunks`: a chunk whose messages and prompt are the same as
    at the last call keeps its summary, so only the chunk the newly dropped messages fall in is summarised
    again; the calls are all sent, each a row). The total stays within the budget: when the
    newest units need part of the share, the summary gets what is left. State per thread: the context sent
    last, its summary and its calls. ``summary_share`` is a ratio in [0, 1) (else CtxlabError naming it).
    ``replay(conv, BudgetedSummaryStrategy(placement="system_block"), window=30_000)``. Chapter 06."""

    policy: BudgetPolicy = field(default_factory=BudgetPolicy)
    summarizer: Summarizer = field(default_factory=RuleBasedSummarizer)
    placement: Placement = "system_end"
    summary_share: float = 0.2
    on_cached_prefix: bool = False
    regenerate: Regenerate = "extend"
    name: str = "budgeted+summary"
    budgeted: ClassVar[bool] = True
    added_tools: ClassVar[tuple[ToolSpec, ...]] = ()
    last: dict[str, tuple[Context, Summary | None, tuple[SideCall, ...]]] = field(default_factory=dict, repr=False)
    memo: dict = field(default_factory=dict, repr=False, compare=False)  # the chunks' runs, Dropped, cut and count

    def __post_init__(self) -> None:
        self.summary_share = validate.ratio("summary_share", self.summary_share, lo_open=False, hi_open=True)

    def decide(self, history: Conversation, call: Call, profile: ModelProfile, meter: MessageMeter) -> Decision:
        if self.placement not in PLACEMENTS:
            raise ValueError(f"placement {self.placement!r}: choose one of {', '.join(PLACEMENTS)}")
        if self.regenerate not in REGENERATE:
            raise ValueError(f"regenerate {self.regenerate!r}: choose one of {', '.join(REGENERATE)}")
        budget = self.policy.budget_for(profile)
        reserve, notes = int(budget * self.summary_share), []
        try:
            ctx = build_context(history, replace(self.policy, budget_tokens=budget - reserve), profile=profile,
                                meter=meter)
        except BudgetError:  # the newest units need part of the share: the summary gets what is left
            ctx = build_context(history, replace(self.policy, budget_tokens=budget), profile=profile, meter=meter)
            notes.append(f"the newest units need more than {1 - self.summary_share:.0%} of the budget")
        ctx = replace(ctx, budget_tokens=budget)
        prefix, before, sides = self.last.get(call.thread, (None, None, ()))
        if "dropped" not in map(attrgetter("decision"), ctx.report):  # nothing dropped: nothing to summarise
            self.last[call.thread] = (ctx, None, ())
            return Decision(ctx, notes=tuple(notes))
        grouping = (self.policy.granularity, self.policy.unanswered)
        units = (history_units(history, meter) if grouping == ("round", "stub") else  # the meter may remember them
                 group_units([m for m in history.messages if m.origin != "meta"], *grouping))
        gone = self.memo.setdefault("dropped", {}).setdefault(call.thread, Dropped())
        dropped = gone.update(ctx, units)  # what changed since the last call is read, not the whole history
        cap = max(0, min(reserve, budget - ctx.total_tokens) - 16)  # 16: the wrapper line, the placement's overhead
        extend, new = self.regenerate == "extend", self._uncovered(call.thread, before, gone, dropped)
        same = not new and len(before.sources) == len(dropped)
        reuse = same and self.regenerate == "on_change" or extend and not new  # it covers all that is dropped
        grow = extend and before is not None and bool(new)  # only the newly dropped, into the summary so far
        summary, made, how = ((before, sides, ()) if reuse else
                              self._summarise(history, new if grow else dropped, cap, prefix, profile, meter,
                                              before if grow else None))
        self._cover(call.thread, before, summary, grow, len(new), len(dropped))
        body = self._again("cut", lambda: cut_to_tokens(summary.text, cap, meter.counter), cap, meter.counter,
                           summary.text) if summary else ""
        while summary:
            wrapped = f"{SUMMARY_MARKER} of {len(summary.sources if extend else dropped)} dropped messages]\n{body}"
            placed = place_summary(ctx, wrapped, self.placement, meter, like=prefix)
            if placed.total_tokens <= budget or not body:
                break  # else a token boundary merged differently: trim a little
            body = cut_to_tokens(body, meter.counter.count(body) - (placed.total_tokens - budget), meter.counter)
        if summary is None or placed.total_tokens > budget:  # no summary call fits, or no room for its opening line
            self.last[call.thread] = (ctx, None, ())
            notes[:0] = how if summary is None else [f"no room for a summary of {len(dropped)} dropped messages: its "
                                                     f"opening line alone would make {placed.total_tokens:,} tokens, "
                                                     f"over the budget of {budget:,}"]
            return Decision(ctx, notes=tuple(notes))
        self.last[call.thread] = (placed, summary, made)
        tokens = self._again("count", lambda: meter.counter.count(wrapped), meter.counter, wrapped)
        again = len(summary.sources) - len(dropped) if extend and reuse else 0  # covered, now kept again
        notes[:0] = [f"summary of {len(dropped) + again} dropped messages: {tokens:,} tokens ({self.placement})"
                     f"{', unchanged' if reuse or same else ''}{f' ({again} of them kept again)' if again > 0 else ''}",
                     *how]
        return Decision(placed, notes=tuple(notes), side_calls=() if reuse else made)

    def _uncovered(self, thread: str, before: Summary | None, gone: Dropped, dropped: list[Message]) -> list[Message]:
        """The dropped messages the summary so far (``before``) does not cover, oldest first: all without one. Only
        those dropped since the last call are looked at (the others were covered then): a pinned message dropped
        later is found wherever it sits, the order of the summary's sources does not matter."""
        if before is None:
            return dropped
        hit = self.memo.setdefault("covered", {}).get(thread)
        ids, known = (hit[1], hit[2]) if hit is not None and hit[0] is before else (set(before.sources), 0)
        return [m for m in dropped[min(known, gone.unchanged):] if m.id not in ids]

    def _cover(self, thread: str, before: Summary | None, summary: Summary | None, grow: bool, asked: int,
               dropped: int) -> None:
        """Remember the ids ``summary`` covers and how many first dropped messages (of ``dropped``) are known to be
        among them, for :meth:`_uncovered` at the next call. ``asked``: how many messages it was asked to add."""
        memo = self.memo.setdefault("covered", {})
        hit = memo.get(thread)
        ids = hit[1] if hit is not None and before is not None and hit[0] is before else None
        if summary is None:
            memo.pop(thread, None)
        elif summary is before:  # reused: it covers every dropped message
            memo[thread] = (summary, set(summary.sources) if ids is None else ids, dropped)
        elif grow:  # the summary so far and the messages it was asked to add, unless a call did not fit
            added = summary.sources[len(before.sources):]
            ids = set(before.sources) if ids is None else ids
            ids.update(added)
            memo[thread] = (summary, ids, dropped if len(added) == asked else 0)
        else:  # made afresh: its sources are the first dropped messages, in order
            memo[thread] = (summary, set(summary.sources), len(summary.sources))

    def _again(self, what: str, make: Callable[[], Any], *key: object) -> Any:
        """What ``make()`` gave the last time ``what`` was asked with the same ``key``, else ``make()``: an unchanged
        summary is cut to its cap and counted once, not at every call."""
        hit = self.memo.get(what)
        if hit is None or hit[0] != key:
            hit = self.memo[what] = (key, make())
        return hit[1]

    def _summarise(self, history: Conversation, dropped: list[Message], cap: int, prefix: Context | None,
                   profile: ModelProfile, meter: MessageMeter, previous: Summary | None = None) -> Summarised:
        """The summary, its calls and notes: on the cached prefix when that request fits the window, else fresh.
        ``previous``: the summary so far, which ``dropped`` (the newly dropped messages) updates."""
        summarizer, notes = held_to(self.summarizer, cap, meter.counter), ()
        if previous is not None:
            notes = (f"extended: {len(dropped)} newly dropped messages into the summary of {len(previous.sources)}",)
        if self.on_cached_prefix:  # its output tokens are known once the summary is made; the prefix holds the last
            ask = summary_call(history, dropped, Summary("", ()), profile, meter, prompt=ask_for(summarizer, cap),
                               on_cached_prefix=True, prefix=prefix, max_tokens=cap)  # summary and what dropped now
            if ask.context.total_tokens + cap <= profile.context_window:
                summary = summarizer.summarize(dropped, previous.text if previous else None)
                summary = replace(summary, sources=(*(previous.sources if previous else ()), *summary.sources))
                return summary, (replace(ask, output_tokens=meter.text(summary.text)),), notes
            notes += (f"the cached prefix with the summary prompt needs {ask.context.total_tokens:,} tokens + "
                      f"max_tokens {cap:,}, over the window of {profile.context_window:,}: the summary is asked fresh",)
        summary, sides, more = summarise_in_chunks(history, dropped, summarizer, cap, profile, meter, self.memo,
                                                   previous=previous)
        return summary, sides, notes + more
