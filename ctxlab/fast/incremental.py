"""build_context for an agent loop: the same Context, with the work of earlier calls remembered.

The book's :func:`~ctxlab.context.build_context` reads the whole history each time (it groups every message into
units and writes a report line per unit: O(history) a call). An agent loop's history only grows from one call to the
next, so an :class:`IncrementalMeter` keeps a :class:`HistoryMemo` of the last history it built from (it fills the
book's :class:`~ctxlab.context.ContextMemory` slot: build_context asks it first) and redoes only what changed:

* the new history must **extend** the remembered one: its first items are the same objects (a tuple comparison,
  which runs in C and succeeds on identity without looking inside a message);
* units closed earlier never change (a round closes when all its calls have their results; a user message is a unit
  of its own), so only the **last unit and the new messages** are grouped again, by ``group_units`` itself;
* each unit's tokens are summed **once** into a running **prefix sum** (the meter counts each message once): any run
  of units costs one subtraction; the pins come from the list of units that start with a user message;
* the walk back from the newest unit keeps units while they fit: where it stops is found by **bisection** on the
  prefix sums, the kept messages are one slice of the units' messages laid end to end, and the report lines ("kept:
  fits"; past the cut the book's "not counted", tokens None, though every unit is counted here, or "older than a
  unit that did not fit" for a full report) are made once per unit and reused.

A call then costs O(new messages + log history) in Python, plus C-speed copies (the prefix check, the report, the
kept messages; ``bench/`` measures it all). A history that does not extend a remembered one is grouped from scratch;
a budget error, an orphan or an empty conversation returns ``None``, so that build_context raises its own error
(errors have one implementation). ``tests/test_fast.py`` and ``tests/test_incremental.py`` check that both paths
give equal Contexts. The meter also gives the strategies the units it grouped, and ``sliding`` the context of a
window of them (``window.py``). Chapter 03 teaches build_context; this module only makes it fast.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field, replace

from ctxlab.base.errors import BudgetError
from ctxlab.context import (NOT_COUNTED, OLDER, BudgetPolicy, Context, UnitDecision, UnitReport, check_fixed_part,
                            fixed_part, pins_for)
from ctxlab.fast.window import RESUME, SlidingWindows
from ctxlab.interactions import Orphan, Pairing, Unit, group_units, pairing_notes
from ctxlab.messages import Conversation, Item, Message
from ctxlab.tables.profiles import ModelProfile
from ctxlab.tokens import MessageMeter, TokenCounter, infer_static_head, thinking_counts

MAX_MEMOS = 4  # histories one meter remembers (a strategy may build from a view and from the raw history)
PAST_COUNTED: tuple[UnitDecision, str] = ("dropped", OLDER)  # past the cut, counted (a full report)
PAST_UNCOUNTED: tuple[UnitDecision, str] = ("dropped", NOT_COUNTED)  # past the cut, not counted (the default)
FITS: tuple[UnitDecision, str] = ("kept", "fits")
OLDER_STAND_IN = UnitReport(-1, "", "", 0, 0, *PAST_COUNTED)  # holds a report line's place until it is written


@dataclass
class HistoryMemo:
    """What one history's last build learnt, for one granularity and unanswered-call treatment. Per unit, in order:
    ``tokens``, the prefix sums ``cum`` (``cum[i]`` = tokens of units before i), where its messages start in ``flat``
    (``flat_at``), three reusable report lines. Under the ``current_turn`` thinking rule the tokens depend on the
    newest user message (``turn``, a unit index). Bonus reading after chapter 08."""

    key: tuple[str, str, str]  # (granularity, unanswered, thinking rule)
    items: tuple[Item, ...] = ()  # conversation.items last seen
    messages: list[Message] = field(default_factory=list)  # sent messages (meta left out)
    meta: int = 0  # meta messages seen
    units: list[Unit] = field(default_factory=list)
    user_units: list[int] = field(default_factory=list)  # units whose first message is a real user message
    pairing: Pairing = field(default_factory=Pairing)  # find_orphans' pairing, fed `messages`
    paired: dict = field(default_factory=dict)  # unanswered -> the pairing notes written so far (orphan_notes)
    usage_seen: bool = False  # some assistant message so far recorded usage (infer_static_head's trigger)
    head: tuple[object, object, int] | None = None  # (system, tools, inferred head tokens) when computed
    turn: int = -1  # the newest user unit the tokens were summed under
    tokens: list[int] = field(default_factory=list)
    cum: list[int] = field(default_factory=lambda: [0])
    flat: list[Message] = field(default_factory=list)  # every unit's messages, end to end
    flat_at: list[int] = field(default_factory=lambda: [0])
    older: list[UnitReport] = field(default_factory=list)  # "dropped: older than ..." per unit (full report)
    uncounted: list[UnitReport] = field(default_factory=list)  # "dropped: not counted ...", tokens None, per unit
    fits: list[UnitReport] = field(default_factory=list)  # "kept: fits" per unit

    def extends(self, items: tuple[Item, ...]) -> bool:
        k = len(self.items)  # the last remembered item first: a history that cannot extend this one costs no slice
        return len(items) >= k and (k == 0 or items[k - 1] is self.items[-1]) and items[:k] == self.items

    def forget_from(self, unit: int) -> None:
        """Drop what was learnt about units ``unit`` and later (regrouped, or their tokens changed)."""
        del self.tokens[unit:], self.cum[unit + 1:], self.older[unit:], self.uncounted[unit:], self.fits[unit:]

    def update(self, items: tuple[Item, ...], granularity: str, unanswered: str) -> None:
        """Take in the items after the remembered ones; regroup from the start of the last unit."""
        new = items[len(self.items):]
        self.items = items
        got = [item for item in new if isinstance(item, Message)]
        sent = [m for m in got if m.origin != "meta"]
        self.meta += len(got) - len(sent)
        if not self.usage_seen:
            self.usage_seen = any(m.role == "assistant" and m.usage and m.usage.total_input_tokens > 0 for m in got)
        if not sent:
            return
        last = self.units[-1] if self.units else None
        resumable = last is not None and last.kind != "preamble" and (granularity == "round" or last.first.is_real_user)
        at_unit, at = (last.index, last.start) if resumable else (0, 0)
        self.messages += sent
        if at == 0:
            fresh = group_units(self.messages, granularity, unanswered)
        else:
            tail = group_units([RESUME, *self.messages[at:]], granularity, unanswered)[1:]
            fresh = [replace(u, index=at_unit + k, start=u.start - 1 + at, stop=u.stop - 1 + at)
                     for k, u in enumerate(tail)]
        self.forget_from(at_unit)
        del self.units[at_unit:], self.flat[self.flat_at[at_unit]:], self.flat_at[at_unit + 1:]
        del self.user_units[bisect.bisect_left(self.user_units, at_unit):]
        for u in fresh:
            self.units.append(u)
            self.flat += u.messages
            self.flat_at.append(len(self.flat))
            if u.kind in ("user", "turn") and u.first.is_real_user:
                self.user_units.append(u.index)
        for msg in sent:  # find_orphans' pairing, carried on: which calls still wait, which results are set aside
            self.pairing.feed(msg)

    def sum_tokens(self, profile: ModelProfile, meter: MessageMeter) -> None:
        """Sum every unit's tokens not summed yet, as build_context does (thinking counted per position)."""
        turn = self.user_units[-1] if self.user_units else -1
        if profile.thinking == "current_turn" and turn != self.turn:
            self.forget_from(max(0, min(turn, self.turn)))  # thinking before the newest user message stops counting
        self.turn = turn
        last_user = self.units[turn].start if turn >= 0 else -1
        while len(self.tokens) < len(self.units):
            u = self.units[len(self.tokens)]
            n = sum(meter.message(m, thinking_counts(profile, u.start + k, last_user))
                    for k, m in enumerate(u.messages))
            self.tokens.append(n)
            self.cum.append(self.cum[-1] + n)

    def lines(self, cache: list[UnitReport], upto: int, decision: tuple[UnitDecision, str],
              start: int = 0) -> list[UnitReport]:
        """Report lines ``start`` to ``upto`` with ``decision``, made once per unit (a copy of the list's part)."""
        while len(cache) < upto:
            u = self.units[len(cache)]
            n = None if decision == PAST_UNCOUNTED else self.tokens[u.index]  # "not counted": no tokens
            cache.append(UnitReport(u.index, u.kind, u.first.id, len(u.messages), n, *decision))
        return cache[start:upto]

    def orphan_notes(self, unanswered: str) -> list[str]:
        """``pairing_notes(self.pairing.orphans(), unanswered)``, each orphan's note written once: the orphans of a
        long session grow with it, and naming each one again at every call would be O(history) in Python. The
        violations found only grow (their notes are kept in order); the calls still waiting are looked up by id."""
        found, done, waiting = self.paired.setdefault(unanswered, ([], [0], {}))
        found += pairing_notes(self.pairing.found[done[0]:], unanswered)  # one note per orphan: only the new ones
        done[0] = len(self.pairing.found)
        notes = list(found)
        for cid, msg in self.pairing.open_calls.items():
            hit = waiting.get(cid)
            if hit is None or hit[0] is not msg:
                hit = waiting[cid] = (msg, pairing_notes([Orphan("call_without_result", cid, msg.id, msg.where())],
                                                         unanswered))
            notes += hit[1]
        return notes

    def head_tokens(self, conversation: Conversation, meter: MessageMeter) -> int:
        """infer_static_head's answer, computed once the history has a call with recorded usage (then fixed), else 0."""
        if conversation.system or conversation.tools or not self.usage_seen:
            return 0
        if self.head is None or self.head[0] is not conversation.system or self.head[1] is not conversation.tools:
            inferred = infer_static_head(conversation, meter)
            self.head = (conversation.system, conversation.tools, inferred.tokens if inferred else 0)
        return self.head[2]


class IncrementalMeter(SlidingWindows, MessageMeter):
    """A :class:`~ctxlab.tokens.MessageMeter` that also remembers the last few histories it built contexts from
    (:data:`MAX_MEMOS`, most recently used last), so :func:`~ctxlab.context.build_context` on a history that only
    grew redoes only what changed: the book's ``ContextMemory`` slot, filled. The same counts and the same Contexts as
    the plain meter. ``IncrementalMeter(profile)`` (an agent loop's or a replay's meter, one per thread and profile).
    Bonus reading after chapter 08 (the algorithm: chapter 03)."""

    def __init__(self, profile: ModelProfile, counter: TokenCounter | None = None) -> None:
        super().__init__(profile, counter)
        self.memos: list[HistoryMemo] = []
        self.grouping: HistoryMemo | None = None  # the units_of memo, apart from the LRU of build_context's

    def units_of(self, history: Conversation) -> list[Unit]:
        """What ``group_units`` gives the history's sent messages (default granularity and unanswered calls), from
        the units grouped at the last call when the history only grew: the book's ``UnitMemory`` slot
        (``strategies.history_units``), filled. The list is the memo's: read it, do not change it."""
        items = history.items
        if self.grouping is None or not self.grouping.extends(items):
            self.grouping = HistoryMemo(("round", "stub", "units"))
        self.grouping.update(items, "round", "stub")
        return self.grouping.units

    def recall(self, conversation: Conversation, policy: BudgetPolicy, profile: ModelProfile,
               full_report: bool = False) -> Context | None:
        """The Context build_context would return, read off the memo (None: let build_context build it)."""
        return incremental_context(conversation, policy, profile, self, full_report)


def _memo_for(meter: IncrementalMeter, items: tuple[Item, ...], key: tuple[str, str, str]) -> HistoryMemo:
    memos = meter.memos
    for memo in memos:
        if memo.key == key and memo.extends(items):
            memos.remove(memo)
            break
    else:
        memo = HistoryMemo(key)
    memos.append(memo)  # most recently used last
    del memos[:-MAX_MEMOS]
    return memo


def _walk_stop(memo: HistoryMemo, newest: int, must: dict[int, str], room: int) -> int:
    """The unit where build_context's walk stops for lack of room (-1: everything fits).

    ``free(j)`` = tokens of the units from j up to the newest, pinned ones left out (they are paid for already). It
    only grows as j goes down, so the first j where it fits is found by bisection; the walk stops one unit below it
    (never a pinned one: skipping it would not have used room)."""
    cum, tokens = memo.cum, memo.tokens

    def free(j: int) -> int:
        return cum[newest] - cum[j] - sum(tokens[m] for m in must if j <= m < newest)

    return bisect.bisect_left(range(newest), True, key=lambda j: free(j) <= room) - 1  # free(newest) = 0 fits


def _nth_unpinned_below(newest: int, n: int, must: dict[int, str]) -> int:
    """The n-th unit below the newest that is not pinned (-1 when there are fewer)."""
    i = newest - n
    while i >= 0 and (newest - i - sum(i <= m < newest for m in must) < n or i in must):
        i -= 1
    return i


def incremental_context(conversation: Conversation, policy: BudgetPolicy, profile: ModelProfile,
                        meter: IncrementalMeter, full_report: bool = False) -> Context | None:
    """The Context build_context would return, from the meter's memo, its report as ``full_report`` asks; ``None``
    where build_context must speak for itself (a budget error, no messages). Bonus reading after chapter 08."""
    items = conversation.items if isinstance(conversation.items, tuple) else tuple(conversation.items)
    memo = _memo_for(meter, items, (policy.granularity, policy.unanswered, profile.thinking))
    memo.update(items, policy.granularity, policy.unanswered)
    if not memo.units:
        return None
    budget = policy.budget_for(profile)
    notes = [n for n in (profile.tokenizer_note,) if n]
    if memo.meta:
        notes.append(f"{memo.meta} meta messages are never sent and were left out")
    known = conversation.inferred_head_tokens  # else inferred once, from the first recorded usage
    head_t = memo.head_tokens(conversation, meter) if known is None else known
    if head_t:
        notes.append(f"static head of {head_t:,} tokens inferred from recorded usage (not in the transcript)")
    part = fixed_part(conversation, profile, meter, head_t)
    try:
        fixed = check_fixed_part(part.tools_tokens, part.system_tokens, head_t, profile, budget)
    except BudgetError:
        return None
    notes += memo.orphan_notes(policy.unanswered)
    memo.sum_tokens(profile, meter)
    units, tokens = memo.units, memo.tokens
    newest = len(units) - 1
    pins = pins_for(memo.user_units, policy)
    must = {newest: "newest unit", **pins}
    first_task_dropped = pins.get(0) == "pinned: first task message" and fixed + sum(tokens[i] for i in must) > budget
    if first_task_dropped:  # build_context counted it all the same: its report line has its tokens
        del must[0], pins[0]
        notes.append("the first task message is pinned but does not fit; it was dropped")
    must_t = sum(tokens[i] for i in must)
    if fixed + must_t > budget:
        return None
    # build_context's walk, read off the prefix sums: units above `stop` are kept (or pinned), `stop` is the cut
    room = budget - fixed - must_t
    stop = _walk_stop(memo, newest, must, room)
    why_stop, stop_counted = "", True  # the book counts the unit that does not fit, not one max_units stops at
    if stop >= 0:  # the room left when the walk reached it: the units kept above it are paid for
        left = room - (memo.cum[newest] - memo.cum[stop + 1]) + sum(tokens[m] for m in must if stop < m < newest)
        why_stop = f"needs {tokens[stop]:,}, {left:,} left"
    if policy.max_units is not None:
        capped = _nth_unpinned_below(newest, max(0, policy.max_units - len(must)) + 1, must)
        if capped >= 0 and capped >= stop:
            stop, why_stop = capped, f"max_units={policy.max_units} reached"
            stop_counted = full_report or (capped == 0 and first_task_dropped)  # not reached by the book's walk
    decision: dict[int, tuple[UnitDecision, str]] = {i: ("pinned" if i in pins else "kept", w) for i, w in must.items()}
    first = stop + 1  # the first unit of the kept run above the stop
    if profile.requires_user_first and not any(m < stop for m in must):  # a pinned unit is a user message
        while first < newest and units[first].first.role != "user":
            decision[first] = ("dropped", "the provider needs a user message first")
            first += 1
    cache, past = (memo.older, PAST_COUNTED) if full_report else (memo.uncounted, PAST_UNCOUNTED)
    report = memo.lines(cache, max(stop, 0), past)  # past the cut: counted for a full report, or as a dropped task
    if first_task_dropped and 0 < stop:
        decision[0] = PAST_COUNTED
    if stop >= 0:
        decision.setdefault(stop, ("dropped", why_stop))
        report.append(OLDER_STAND_IN)  # the unit the walk stopped at: its line is written below, with the decisions
    report += memo.lines(memo.fits, newest + 1, FITS, stop + 1)  # the kept run: only its lines copied
    for i, d in decision.items():
        u = units[i]
        n = tokens[i] if i != stop or stop_counted else None
        report[i] = UnitReport(i, u.kind, u.first.id, len(u.messages), n, *d)
    below = sorted(m for m in must if m < stop)  # pinned units kept below the run
    flat, at = memo.flat, memo.flat_at
    kept_messages = [m for i in below for m in units[i].messages] + flat[at[first]:at[newest + 1]]
    return Context(system=conversation.system, tools=conversation.tools, messages=tuple(kept_messages), profile=profile,
                   counter=meter.counter.name, budget_tokens=budget, tools_tokens=part.tools_tokens,
                   system_tokens=part.system_tokens, head_tokens=head_t, overhead_tokens=part.overhead_tokens,
                   message_tokens=sum(tokens[i] for i in below) + memo.cum[newest + 1] - memo.cum[first],
                   report=tuple(report), notes=tuple(notes))
