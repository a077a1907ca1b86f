"""Compaction: rarely, and in one big batch, fold old history into a summary.

The texts' rule: at 80% of the window, summarise the oldest history in one go, down to under 50%; in between, only
append, so the prefix (and the cache) stays stable. Each compaction is a session **entry**, never an edit of the
history; the next calls see the history through it (``views.compacted_view``).

Per call, :class:`CompactionStrategy` does:

1. **meter** the context: count it all (``metering="count"``), or, as real agents do, the previous request's size
   plus a chars/4 estimate of what was added since (``metering="usage"``);
2. under ``trigger_ratio`` x window, and within the budget as counted: send it as it is. The count is the backstop
   for an estimate that errs low (chars/4 does not see an image): a context counted over the budget is never sent
   as it is, whatever the meter says; it is compacted (or refused) like one over the trigger;
3. else compute the **floor** — tools + system + the newest user message + the newest unit + room for the summary —
   and the target, ``max(target_ratio x window, floor)``. If the floor itself is over the budget, shrink the newest
   unit's tool results once (prune to head + tail); if it still does not fit, raise :class:`CompactionError` — one
   attempt, never a loop;
4. keep the newest units backwards while they fit the target (:func:`compaction_cut`); summarise the older ones
   with the previous summary (keeping its sources) in a side call of its own, held to the room the budget leaves;
   record the compaction entry (``target``: the effective target in tokens);
5. nothing new to summarise → no compaction (reported), unless the previous summary itself takes the context over
   the budget: then it is summarised again, shorter; above target afterwards → reported.

The summary call obeys the same window as any model call: its request plus the reply's ``max_tokens`` (the cap
the summary is held to, lowered to the room the budget leaves; a longer reply is cut there) must fit. It is sent
the first way that fits: on the cached prefix (the context, then the instruction); on the prefix up to the first
kept message; fresh, in chunks that each fit, oldest first (chapter 06's ``summarise_in_chunks``); when not even
the prompt fits, no call is sent and what it could not cover is dropped without a summary.

A note says which way was taken; one compaction per call at most; the summary is the first user message. Chapter 07.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

from ctxlab.base import validate
from ctxlab.context import Context
from ctxlab.base.errors import BudgetError
from ctxlab.interactions import Unit, group_units
from ctxlab.messages import Conversation, Entry, Message, ToolSpec, user
from ctxlab.tables.profiles import ModelProfile
from ctxlab.pruning import cut_to_tokens, fair_shares, prune_message
from ctxlab.strategies import Call, Decision, SideCall, whole_context
from ctxlab.summary import RuleBasedSummarizer, Summarizer, Summary, held_to
from ctxlab.summary_strategy import ask_for, summarise_in_chunks
from ctxlab.tokens import CharsPerTokenCounter, MessageMeter, TokenCounter
from ctxlab.views import SUMMARY_PREFIX, compacted_view, without_recorded

SUMMARY_INSTRUCTION = ("Summarise the conversation so far for your own later use: the task and the user's "
                       "requests, constraints and decisions, files read and changed, commands run, errors, "
                       "and the steps still open. Keep exact paths, codes and numbers.")


class CompactionError(BudgetError):
    """Even the floor (tools, system, newest user message and unit, results shrunk) is over budget. Chapter 07."""


def compaction_cut(unit_tokens: list[int], room: int, pinned: int | None = None) -> tuple[int, int]:
    """Where a compaction cuts the history: ``(index of the first unit kept, tokens of room left)``. Chapter 07.

    ``unit_tokens``: each unit's size in tokens, oldest first. ``room``: the target minus the floor (tools, system,
    summary room, the newest unit and the ``pinned`` one). Walks back from the unit before the newest, keeping each."""
    first_kept = len(unit_tokens) - 1  # the newest unit is always kept
    for k in range(len(unit_tokens) - 2, -1, -1):
        if k != pinned:  # the pinned unit is counted in the floor
            if unit_tokens[k] > room:
                break  # never split a unit: the first that does not fit stops the walk
            room, first_kept = room - unit_tokens[k], k
    return first_kept, room


@dataclass(frozen=True)
class _Continued:
    """``summarizer`` as a summary call runs it: merging ``previous`` (the summary being replaced) unless given a
    newer one, its reply cut at ``max_tokens`` (a model stops there), asking chapter 06's prompt. Chapter 07."""

    summarizer: Summarizer
    max_tokens: int
    previous: str | None
    counter: TokenCounter

    def instruction(self, previous: str | None = None) -> str:
        return ask_for(self.summarizer, self.max_tokens, previous or self.previous)

    def summarize(self, messages: list[Message], previous: str | None = None) -> Summary:
        summary = self.summarizer.summarize(messages, previous or self.previous)
        text = cut_to_tokens(summary.text, self.max_tokens, self.counter)
        return summary if text == summary.text else replace(summary, text=text, tokens=self.counter.count(text))


@dataclass(frozen=True)
class CompactionPolicy:
    """When and how far to compact. Ratios of the context window, each in (0, 1]; ``summary_share``
    (in [0, 1)) of the target is kept free for the summary itself. A ratio out of range raises
    CtxlabError (a ValueError) naming it. Chapter 07."""

    trigger_ratio: float = 0.8
    target_ratio: float = 0.5
    input_ratio: float = 0.9
    summary_share: float = 0.1
    metering: Literal["count", "usage"] = "count"

    def __post_init__(self) -> None:
        validate.settle(self, **{name: validate.ratio(name, getattr(self, name))
                                 for name in ("trigger_ratio", "target_ratio", "input_ratio")},
                        summary_share=validate.ratio("summary_share", self.summary_share, lo_open=False,
                                                     hi_open=True))


@dataclass
class CompactionStrategy:
    """Compact at ``trigger_ratio`` down to ``target_ratio``; freeze the summary in between.

    State per thread: the previous request's size and message ids (for usage-anchored metering).
    ``summarizer`` is anything with ``summarize(messages, previous) -> obj with .text, .sources``;
    the rule-based one by default. Each compaction is an entry whose data holds ``summary``,
    ``first_kept_id``, ``pinned_ids``, ``tokens_before``, ``target`` (tokens), ``sources``, ``origin``
    ("ctxlab") and ``tokens_after``. ``replay(conv, CompactionStrategy(), window=30_000)``. Chapter 07.
    """

    policy: CompactionPolicy = field(default_factory=CompactionPolicy)
    summarizer: Summarizer | None = None
    name: str = "compaction"
    budgeted: ClassVar[bool] = True
    added_tools: ClassVar[tuple[ToolSpec, ...]] = ()
    last_request: dict[str, tuple[int, frozenset[str]]] = field(default_factory=dict)  # thread -> (tokens, ids)
    memo: dict = field(default_factory=dict, repr=False, compare=False)  # summarise_in_chunks' sizes and requests

    def metered(self, ctx: Context, call: Call, meter: MessageMeter) -> int:
        """The context size the trigger sees: counted, or anchored on the previous request's size."""
        previous = self.last_request.get(call.thread)
        if self.policy.metering == "count" or previous is None:
            return ctx.total_tokens
        tokens, ids = previous
        estimate = CharsPerTokenCounter(4)  # the texts' cheap estimator for what was added since
        added = [m for m in ctx.messages if m.id not in ids]
        output = call.message.usage.output_tokens if call.message.usage else 0
        return tokens + output + sum(estimate.count(m.text) + meter.overhead(m) for m in added)

    def decide(self, history: Conversation, call: Call, profile: ModelProfile, meter: MessageMeter) -> Decision:
        view, entry, notes = compacted_view(without_recorded(history, self.memo.setdefault("unrecorded", {})),
                                            self.memo.setdefault("view", {}))
        ctx = whole_context(view, profile, meter)
        size = self.metered(ctx, call, meter)
        if self.sends_as_is(ctx, size, profile, notes):
            return self.send(ctx, call, notes, profile)
        return self._compact(view, entry, ctx, size, call, profile, meter, notes)

    def sends_as_is(self, ctx: Context, size: int, profile: ModelProfile, notes: list[str]) -> bool:
        """Under the trigger as metered (``size``) and within the budget as counted; under the one, over the other: a
        note, and the context is compacted. Chapter 07."""
        budget = profile.budget_tokens(self.policy.input_ratio)
        under = size <= self.policy.trigger_ratio * profile.context_window
        if under and ctx.total_tokens > budget:
            notes.append(f"metered {size:,} tokens, under the trigger, but counted {ctx.total_tokens:,}, over the "
                         f"budget of {budget:,}: compacted")
        return under and ctx.total_tokens <= budget

    def send(self, ctx: Context, call: Call, notes: list[str], profile: ModelProfile, **extra: Any) -> Decision:
        """Send ``ctx`` as it is (under the input budget, an overflow noted), remembering its size for the
        usage-anchored meter; ``extra``: the Decision's other fields (new entries, side calls). Chapter 07."""
        self.last_request[call.thread] = (ctx.total_tokens, frozenset(m.id for m in ctx.messages))
        budget = profile.budget_tokens(self.policy.input_ratio)
        over = ctx.total_tokens > profile.context_window
        if over:
            notes = notes + [f"overflow: {ctx.total_tokens:,} > window {profile.context_window:,}"]
        return Decision(replace(ctx, budget_tokens=budget), notes=tuple(notes), overflow=over, **extra)

    def _compact(self, view: Conversation, entry: Entry | None, ctx: Context, size: int, call: Call,
                 profile: ModelProfile, meter: MessageMeter, notes: list[str]) -> Decision:
        window, budget = profile.context_window, profile.budget_tokens(self.policy.input_ratio)
        head = ctx.total_tokens - ctx.message_tokens  # tools + system + inferred head + request overhead
        summary_msg = [m for m in view.messages if m.origin == "compact_summary"]
        units = group_units([m for m in view.messages if m.origin not in ("compact_summary", "meta")])
        tokens = [sum(meter.message(m) for m in u.messages) for u in units]
        pinned = max((u.index for u in units if u.first.is_real_user), default=None)
        newest = units[-1].index
        # room for the summary: its share of the target, and never less than its message's fixed opening
        opening = meter.message(user(SUMMARY_PREFIX, "summary:empty"))
        reserve = max(int(self.policy.summary_share * min(self.policy.target_ratio * window, budget)), opening)
        floor = head + reserve + tokens[newest] + (tokens[pinned] if pinned not in (None, newest) else 0)
        shrunk_entries: tuple[Entry, ...] = ()
        if floor > budget:
            units, tokens, shrunk, shrunk_entries = self._shrink_newest(units, tokens, floor - budget, meter)
            floor -= shrunk
            view = replace(view, items=(*view.items, *shrunk_entries))
            notes.append("the floor was over the budget: the newest unit's tool results were pruned by "
                         f"{shrunk:,} tokens")
            if floor > budget:
                raise CompactionError(
                    f"Compaction cannot help: the floor (tools + system {head:,}, summary room {reserve:,}, newest "
                    f"unit {tokens[newest]:,}, newest user message) needs {floor:,} tokens after shrinking the "
                    f"newest tool results once, over the budget of {budget:,} (window {window:,}). Raise the "
                    "window or shorten the system prompt or tools.", needed=floor, budget=budget)
        target = max(min(int(self.policy.target_ratio * window), budget), floor)  # a window over the input limit
        first_kept, room = compaction_cut(tokens, target - floor, pinned)
        dropped = [m for u in units[:first_kept] if u.index != pinned for m in u.messages]
        if not dropped:
            if shrunk_entries:  # the pruned newest results are all that changed
                ctx = whole_context(compacted_view(view)[0], profile, meter)
            if ctx.total_tokens <= budget or entry is None:
                notes.append(f"compaction due ({size:,} tokens metered) but nothing new could be summarised")
                return self.send(ctx, call, notes, profile, new_entries=shrunk_entries)
            # the previous summary is what overflows: summarise it again, within the room that is left
            notes.append(f"over the budget ({ctx.total_tokens:,} > {budget:,}) with nothing new to summarise: "
                         "the previous summary was summarised again, shorter")

        previous = entry.data.get("summary") if entry else None
        # the summary gets what the budget leaves: the reserve plus whatever the kept units did not use
        cap = budget - (floor - reserve) - (target - floor - room) - opening
        summary, covered, sides = self._summarise(view, dropped, units[first_kept].first.id, previous, cap, profile,
                                                  meter, notes)
        sources = sorted(set(entry.data.get("sources", ()) if entry else ()) | set(covered)
                         | {m.id for m in summary_msg})
        kept_pinned = [units[pinned].first.id] if pinned is not None and pinned < first_kept else []
        made = text = summary.text if summary else previous or ""  # no call fitted: the previous summary stays
        for _ in range(4):  # a summarizer without a cap (or a token merge) may overshoot: cut the text to fit
            new_entry = Entry("compaction", f"compaction:{call.thread}:{call.index}", thread=call.thread, data={
                "summary": text, "first_kept_id": units[first_kept].first.id, "pinned_ids": kept_pinned,
                "tokens_before": ctx.total_tokens, "target": target, "sources": sources, "origin": "ctxlab"})
            after_view, _, _ = compacted_view(replace(view, items=(*view.items, new_entry)))
            after = whole_context(after_view, profile, meter)
            if after.total_tokens <= budget or not text:
                break
            text = cut_to_tokens(text, meter.counter.count(text) - (after.total_tokens - budget), meter.counter)
        if after.total_tokens > budget:
            raise CompactionError(
                f"Compaction cannot fit: summarising {len(dropped)} messages leaves {after.total_tokens:,} tokens even "
                f"with the summary cut to nothing, over the budget of {budget:,} (window {window:,}). Raise the "
                "window or shorten the system prompt or tools.", needed=after.total_tokens, budget=budget)
        if text != made:
            notes.append(f"the summary was cut from {meter.counter.count(made):,} to "
                         f"{meter.counter.count(text):,} tokens to fit the budget")
        new_entry = replace(new_entry, data={**new_entry.data, "tokens_after": after.total_tokens})
        new_entries = (*shrunk_entries, new_entry)
        notes.append(f"compacted {len(dropped)} messages: {ctx.total_tokens:,} → {after.total_tokens:,} tokens "
                     f"(trigger {self.policy.trigger_ratio:.0%}, target {target:,} tokens)")
        if after.total_tokens > target:
            notes.append(f"above target after compaction: {after.total_tokens:,} > {target:,}")
        return self.send(after, call, notes, profile, new_entries=new_entries, side_calls=sides)

    def _shrink_newest(self, units: list[Unit], tokens: list[int], excess: int, meter: MessageMeter
                       ) -> tuple[list[Unit], list[int], int, tuple[Entry, ...]]:
        """Prune the newest unit's tool results by ``excess`` tokens in all (never below 64 each).

        Returns the new units and counts, the tokens saved, and one ``pruned_result`` entry per result
        (the session keeps the original; the context shows the pruned one from now on).
        """
        newest = units[-1]
        results = [m for m in newest.messages if m.role == "tool"]
        sizes = [meter.message(m) - meter.overhead(m) for m in results]  # tokens of each result's content
        if not results or sum(sizes) == 0:
            return units, tokens, 0, ()
        swaps: dict[str, Message] = {}  # message id -> its pruned replacement
        shrunk, new_tokens, want = newest.messages, tokens[-1], excess
        for _ in range(4):  # re-measured: the omission markers and the 64-token floors cost what a cut did not see
            # water-filling: small results keep their size, the large ones give up the excess between them
            for m, size, share in zip(results, sizes, fair_shares(sizes, max(0, sum(sizes) - want))):
                pruned = prune_message(m, max(64, share), meter.counter) if share < size else m
                if pruned is not m:
                    swaps[m.id] = pruned
            shrunk = tuple(swaps.get(m.id, m) for m in newest.messages)
            new_tokens = sum(meter.message(m) for m in shrunk)
            if tokens[-1] - new_tokens >= excess:
                break
            want += excess - (tokens[-1] - new_tokens)
        entries = tuple(Entry("pruned_result", f"pruned:{mid}", thread=m.thread,
                              data={"message_id": mid, "replacement": m, "reason": "floor over budget"})
                        for mid, m in swaps.items())
        return (units[:-1] + [replace(newest, messages=shrunk)], tokens[:-1] + [new_tokens], tokens[-1] - new_tokens,
                entries)

    def _summarise(self, view: Conversation, dropped: list[Message], kept_id: str, previous: str | None, cap: int,
                   profile: ModelProfile, meter: MessageMeter, notes: list[str]
                   ) -> tuple[Summary | None, list[str], tuple[SideCall, ...]]:
        """The summary (None when no call fits), the ids of the dropped messages it covers and its calls, each sent
        the first way that fits the window (the module's rule; ``kept_id``: the first kept message). Chapter 07."""
        self.summarizer = self.summarizer if self.summarizer is not None else RuleBasedSummarizer()
        limit = min(cap, getattr(self.summarizer, "max_tokens", cap))  # max_tokens: the cap the summary is held to
        held = held_to(self.summarizer, limit, meter.counter)  # under the meter's counter, when it has those settings
        summarizer, window, sizes = _Continued(held, limit, previous, meter.counter), profile.context_window, []
        ask = user(SUMMARY_INSTRUCTION, f"summary-request:{len(view.items)}", origin="synthetic")
        at = next((k for k, m in enumerate(view.messages) if m.id == kept_id), len(view.messages))
        for how, items in (("on the cached prefix", view.items), ("on the cached prefix up to the kept messages",
                                                                    view.messages[:at])):
            request = whole_context(replace(view, items=(*items, ask)), profile, meter)
            if request.total_tokens + limit <= window:
                notes.extend(f"the summary call on the whole prefix needs {n:,} tokens + max_tokens {limit:,}, over "
                             f"the window of {window:,}: it stops before the kept messages" for n in sizes)
                summary = summarizer.summarize(dropped)
                side = SideCall("summary", request, meter.text(summary.text), how, max_tokens=limit)
                return summary, [m.id for m in dropped], (side,)
            sizes.append(request.total_tokens)
        notes.append(f"the summary call on the cached prefix needs {sizes[0]:,} tokens, {sizes[1]:,} up to the kept "
                     f"messages, + max_tokens {limit:,}: over the window of {window:,}, so it is asked fresh")
        summary, sides, more = summarise_in_chunks(view, dropped, summarizer, limit, profile, meter, self.memo)
        notes.extend(more)
        return summary, list(summary.sources) if summary else [], sides
