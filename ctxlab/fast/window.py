"""The context of a window of units, read off the units grouped once: ``sliding`` (chapter 04) made fast.

:class:`~ctxlab.strategies.SlidingStrategy` sends the whole of a window over the history's units, ``[newest user
unit] + units[first:]`` (:func:`~ctxlab.strategies.window_context`). The book builds that window's context from
scratch, as :func:`~ctxlab.context.build_context` does any conversation: its messages grouped again, counted, one report
line per unit — O(window) in Python for every window it tries, and the window moves at almost every call of a long
session. Here the window's units come from the units the meter grouped already (``IncrementalMeter.units_of``):

* a unit grouped again on its own, after a user message (a unit boundary: no round open), gives itself, or — when a
  stub was added for an unanswered call — a few **pieces**; each unit's pieces, and each piece's tokens with and
  without thinking, are worked out **once** (by ``group_units`` and the meter themselves) and kept by unit;
* the window's units are then its units' pieces in order, except that a window that does not start with a user
  message starts with one ``preamble`` unit: its pieces up to the first one that does, merged (``_preamble``);
* what build_context decides for a window it keeps whole is fixed: every unit kept ("fits"), the newest one "newest
  unit", the newest real user message pinned, a leading preamble dropped for a provider that needs a user message
  first; thinking counts by position after the newest user message (``tokens.thinking_counts``).

What is left per window is one report line per unit (the window's unit numbers shift whenever it slides) and C-speed
slices. A unit whose pieces would not hold exactly its messages (a result set aside, a stub added on its own), or
that pairs badly on its own (``find_orphans``: then the window could pair differently), makes :func:`window_context`
return None, and the book builds the window. ``tests/test_sliding_window.py`` checks both give equal Contexts at
every call. Bonus reading after chapter 08.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ctxlab.context import Context, UnitReport, fixed_part
from ctxlab.interactions import Unit, find_orphans, group_units
from ctxlab.messages import Conversation, Message, TextPart
from ctxlab.tables.profiles import ModelProfile
from ctxlab.tokens import MessageMeter

WHOLE = 10**12  # strategies.whole_context's budget: nothing is ever dropped for lack of room
# A real user message put in front of messages that start at a unit boundary: group_units then starts them in the
# state it had there (no open round, no preamble). Its unit is removed again. incremental.py resumes the same way.
RESUME = Message(role="user", parts=(TextPart(""),), id="resume:incremental")


@dataclass(frozen=True)
class Piece:
    """One unit of a window, as group_units makes it from a unit of the history: its first message's role, whether
    a real user message opens it (a pin), its message count, and its report line's fields with its tokens without
    thinking and with it (``lines``: two dicts, all but the line's unit number). Bonus reading after chapter 08."""

    first_role: str
    real_user: bool
    size: int
    lines: tuple[dict, dict]


def pieces_of(unit: Unit, meter: MessageMeter) -> tuple[Piece, ...] | None:
    """The units group_units makes of ``unit``'s messages after a unit boundary, or None when they do not hold
    exactly its messages or its calls and results do not pair on their own. Bonus reading after chapter 08."""
    again = group_units([RESUME, *unit.messages])[1:]
    if tuple(m for u in again for m in u.messages) != unit.messages or find_orphans(unit.messages):
        return None
    return tuple(Piece(u.first.role, u.kind == "user" and u.first.is_real_user, len(u.messages),
                       tuple(_fields(u.kind, u.first.id, len(u.messages), sum(meter.message(m, t) for m in u.messages))
                             for t in (False, True)))  # type: ignore[arg-type]
                 for u in again)


def _fields(kind: str, first_id: str, size: int, tokens: int, decision: str = "kept", reason: str = "fits") -> dict:
    return {"kind": kind, "first_id": first_id, "messages": size, "tokens": tokens, "decision": decision,
            "reason": reason}


def _line(unit: int, fields: dict) -> UnitReport:
    """``UnitReport(unit, **fields)``, without the frozen dataclass's checks per field (a window makes hundreds)."""
    line = object.__new__(UnitReport)
    object.__setattr__(line, "__dict__", {"unit": unit, **fields})
    return line


class WindowMemo:
    """The pieces of the history's units, laid end to end as the units are (``at[i]``: where unit i's start), kept
    while each unit is the same object: the history's units only change at their end (incremental.py regroups its
    last unit), so the pieces are made once per unit. ``bad[i]``: units before i with no pieces. Chapter 08's bonus."""

    def __init__(self) -> None:
        self.units: list[Unit] = []
        self.pieces: list[Piece] = []
        self.at: list[int] = [0]
        self.bad: list[int] = [0]
        # the last window's report lines as first built (every unit "kept: fits"): (key, its pieces' end, lines)
        self.built: tuple[tuple, int, list[UnitReport]] | None = None
        self.dirty = 0  # pieces from here on were made again since those lines were built

    def sync(self, units: Sequence[Unit], meter: MessageMeter) -> None:
        """Know the pieces of every unit of ``units``."""
        k = min(len(self.units), len(units))
        while k > 0 and self.units[k - 1] is not units[k - 1]:  # a unit regrouped since: it and those after it
            k -= 1
        self.dirty = min(self.dirty, self.at[k])
        del self.units[k:], self.pieces[self.at[k]:], self.at[k + 1:], self.bad[k + 1:]
        for u in units[k:]:
            pieces = pieces_of(u, meter)
            self.units.append(u)
            self.pieces += pieces or ()
            self.at.append(len(self.pieces))
            self.bad.append(self.bad[-1] + (pieces is None))


def window_context(history: Conversation, window: Sequence[Unit], profile: ModelProfile, meter: MessageMeter,
                   units: Sequence[Unit], flat: Sequence[Message], flat_at: Sequence[int],
                   memo: WindowMemo) -> Context | None:
    """The Context ``strategies.whole_context`` gives the window's messages, or None (let it build them).

    ``units``: the history's units (``flat``: their messages end to end, ``flat_at[i]``: where unit i's start);
    ``window``: ``units[first:]``, maybe after one earlier unit that a real user message opens (the newest one's).
    Bonus reading after chapter 08."""
    n = len(units)
    if not window or window[-1] is not units[-1]:
        return None
    pre: Unit | None = None
    first = window[0].index
    if len(window) != n - first or window[0] is not units[first]:
        pre, first = window[0], window[1].index if len(window) > 1 else -1
        if (first < 0 or len(window) != n - first + 1 or window[1] is not units[first] or pre.index >= first
                or pre is not units[pre.index] or not pre.first.is_real_user):
            return None
    head_t = history.inferred_head_tokens
    if head_t is None:
        if not history.tools:
            return None  # build_context would infer the head from the window's own messages
        head_t = 0
    memo.sync(units, meter)
    if memo.bad[n] - memo.bad[first] or (pre is not None and memo.bad[pre.index + 1] - memo.bad[pre.index]):
        return None
    lo, hi = memo.at[first], memo.at[n]
    lead = memo.pieces[memo.at[pre.index]:memo.at[pre.index + 1]] if pre is not None else []
    seq = lead + memo.pieces[lo:hi]  # the window's units as group_units makes them, before a preamble is merged
    # thinking counts after the newest real user message (tokens.thinking_counts; none in the window: all counts)
    rule, last_user = profile.thinking, next((j for j in range(len(seq) - 1, -1, -1) if seq[j].real_user), -1)
    opening = next((j for j, p in enumerate(seq) if p.first_role == "user"), len(seq))  # a preamble's pieces
    shift = max(opening - 1, 0)  # piece j >= opening is the window's unit j - shift
    # the lines of the last window with the same start, preamble and pin, for the pieces it shares with this one
    key = (pre.index if pre is not None else -1, lo, opening, last_user, rule)
    same = memo.built is not None and memo.built[0] == key
    shared = len(lead) + min(memo.built[1], memo.dirty, hi) - lo if same else 0  # type: ignore[index]
    lines = memo.built[2][:max(0, shared - shift)] if same and shared >= opening else []  # type: ignore[index]
    if opening and not lines:  # before the window's first user message: one preamble unit (interactions._preamble)
        flags = [rule == "all" or (rule == "current_turn" and j > last_user) for j in range(opening)]
        lines.append(_line(0, _fields("preamble", seq[0].lines[0]["first_id"], sum(p.size for p in seq[:opening]),
                                      sum(p.lines[t]["tokens"] for p, t in zip(seq, flags)))))
    lines += [_line(j - shift, seq[j].lines[rule == "all" or (rule == "current_turn" and j > last_user)])
              for j in range(len(lines) + shift, len(seq))]
    memo.built, memo.dirty = (key, hi, lines), len(memo.pieces)
    return _context(history, profile, meter, head_t, lines, last_user - shift, opening > 0, pre,
                    flat[flat_at[first]:flat_at[n]])


def _context(history: Conversation, profile: ModelProfile, meter: MessageMeter, head_t: int,
             lines: list[UnitReport], pinned: int, preamble: bool, pre: Unit | None,
             body: Sequence[Message]) -> Context | None:
    """build_context's answer for a window kept whole, from its report lines as first built (every unit "kept:
    fits"): the newest unit and the newest real user message (``pinned``, -1: none) marked, a leading preamble
    dropped for a provider that needs a user message first."""
    report = list(lines)
    newest = len(report) - 1
    report[newest] = _line(newest, {**vars(lines[newest]), "reason": "newest unit"})
    if pinned >= 0:
        report[pinned] = _line(pinned, {**vars(lines[pinned]), "decision": "pinned",
                                        "reason": "pinned: newest user message"})
    skip = 0  # messages of a leading preamble dropped: the provider needs a user message first
    if profile.requires_user_first and newest > 0 and preamble:
        report[0] = _line(0, {**vars(lines[0]), "decision": "dropped",
                              "reason": "the provider needs a user message first"})
        skip = lines[0].messages
    part = fixed_part(history, profile, meter, head_t)
    kept_t = sum([line.tokens for line in lines]) - (lines[0].tokens if skip else 0)  # type: ignore[misc]
    if part.total_tokens + kept_t > WHOLE:
        return None
    messages = (*(pre.messages if pre is not None else ()), *body[skip:])
    notes = [n for n in (profile.tokenizer_note,) if n]
    if head_t:
        notes.append(f"static head of {head_t:,} tokens inferred from recorded usage (not in the transcript)")
    return Context(system=history.system, tools=history.tools, messages=messages, profile=profile,
                   counter=meter.counter.name, budget_tokens=WHOLE, tools_tokens=part.tools_tokens,
                   system_tokens=part.system_tokens, head_tokens=head_t, overhead_tokens=part.overhead_tokens,
                   message_tokens=kept_t, report=tuple(report), notes=tuple(notes))


class SlidingWindows:
    """What a meter with a ``grouping`` memo (``IncrementalMeter.units_of``'s) adds: ``window_context``, the book's
    ``strategies.WindowMemory`` slot, filled. Bonus reading after chapter 08."""

    grouping: Any  # incremental.HistoryMemo | None: the units, their messages end to end (flat, flat_at)
    windows: WindowMemo

    def window_context(self, history: Conversation, window: list[Unit], profile: ModelProfile) -> Context | None:
        """The Context ``strategies.window_context`` builds for ``window``, some of the units ``units_of(history)``
        gave, read off them (None: let the book build it)."""
        g = self.grouping
        if g is None or g.items is not history.items or not isinstance(self, MessageMeter):
            return None
        if "windows" not in self.__dict__:
            self.windows = WindowMemo()
        return window_context(history, window, profile, self, g.units, g.flat, g.flat_at, self.windows)
