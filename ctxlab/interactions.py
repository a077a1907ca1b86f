"""Interactions: the units a context keeps or drops whole.

A provider rejects a request in which a tool result has no tool call before it, or a tool call
has no result after it (an *orphan*). So history is cut only between **units**:

* ``round`` granularity (the default): an assistant message, every tool result answering its
  calls, and any further assistant message that arrives while some of those calls are still
  open — the contiguous closure over call ids. ``[A(c1), A(c2), T(c1), T(c2)]`` is one unit;
  ``[A(c1), T(c1), A(c2), T(c2)]`` is two. An assistant message without calls is a unit too.
* every user message is a unit of its own; messages before the first user message form one
  ``preamble`` unit.
* ``turn`` granularity (taught beside it): a real user message and everything up to the next one.

A call that never got a result (the agent was interrupted) gets one declared treatment —
``stub`` (a synthetic error result is added right after the calling message's results) or
``drop`` (the call is removed from its assistant message) — and is always reported. A result that
cannot be placed — no call before it, a second result, or one recorded after the user's message
interrupted its call (``[A(c1), U("stop"), T(c1)]``: c1 is stubbed at the interrupt) — is **set
aside**: not sent, and reported (:func:`find_orphans` names it, the context's notes say so).

Pinning (which units must be kept) is a separate idea; see ``context.py``. Taught in chapter 03.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal, Sequence

from ctxlab.messages import Message, TextPart, ToolCallPart

Granularity = Literal["round", "turn"]
Unanswered = Literal["stub", "drop"]

STUB_TEXT = "[no result recorded: this tool call was interrupted before it returned]"


@dataclass(frozen=True)
class Orphan:
    """One pairing violation. ``kind``: ``call_without_result``, ``result_without_call``,
    ``duplicate_result``, ``duplicate_call`` or ``late_result`` (a result recorded after a user message
    interrupted its call); ``where`` names the message and its source line. Chapter 03."""

    kind: str
    call_id: str
    message_id: str
    where: str

    def __str__(self) -> str:
        return f"{self.kind}: call {self.call_id!r} in {self.where}"


@dataclass(frozen=True)
class Unit:
    """A run of messages kept or dropped together.

    ``kind``: ``preamble``, ``user``, ``round`` or ``turn``. ``start``/``stop`` index the message
    list the units were made from (stop exclusive). ``messages`` may differ from that slice only
    by the declared treatment of ``unanswered`` calls (a stub added or a call removed). Chapter 03.
    """

    index: int
    kind: str
    start: int
    stop: int
    messages: tuple[Message, ...]
    call_ids: tuple[str, ...] = ()
    unanswered: tuple[str, ...] = ()

    @property
    def first(self) -> Message:
        return self.messages[0]

    def label(self) -> str:
        """``round #4 (3 msgs, calls c1,c2)`` — for reports and tables."""
        calls = f", calls {','.join(self.call_ids)}" if self.call_ids else ""
        return f"{self.kind} #{self.index} ({len(self.messages)} msgs{calls})"


class Pairing:
    """Calls and results paired as messages arrive: :func:`find_orphans` feeds it a whole list, an
    incremental builder one message at a time. ``open_calls``: call id → the message still waiting. Chapter 03."""

    def __init__(self) -> None:
        self.open_calls: dict[str, Message] = {}  # call_id -> the assistant message waiting for its result
        self.interrupted: dict[str, Message] = {}  # open call id -> the real user message that came after it
        self.answered: dict[str, Message] = {}  # call id -> the tool message that answered its latest call
        self.found: list[Orphan] = []  # violations found so far, in order (open calls not yet among them)

    def feed(self, msg: Message) -> None:
        """Take in the next message."""
        if msg.role == "assistant":
            for cid in msg.call_ids:
                if cid in self.open_calls and cid not in self.interrupted:
                    self.found.append(Orphan("duplicate_call", cid, msg.id, msg.where()))
                self.open_calls[cid] = msg
                self.answered.pop(cid, None)
                self.interrupted.pop(cid, None)
        elif _closes_round(msg):
            self.interrupted.update({cid: msg for cid in self.open_calls if cid not in self.interrupted})
        elif msg.role == "tool":
            cid = msg.tool_call_id or ""
            kind = ("late_result" if cid in self.interrupted else None if cid in self.open_calls else
                    "duplicate_result" if cid in self.answered else "result_without_call")
            if kind:
                self.found.append(Orphan(kind, cid, msg.id, msg.where()))
            else:
                del self.open_calls[cid]
                self.answered[cid] = msg

    def orphans(self) -> list[Orphan]:
        """Every violation so far, the calls still waiting last."""
        return self.found + [Orphan("call_without_result", cid, m.id, m.where()) for cid, m in self.open_calls.items()]


def find_orphans(messages: Sequence[Message]) -> list[Orphan]:
    """Every pairing violation in order of discovery; ``[]`` when every call has its result after it.

    A call id may be used again once its earlier call was answered (tau-bench and SWE-agent runs do):
    only a call made while the same id is still open is a ``duplicate_call``. A real user message
    interrupts the calls still open: a result for one of them after it is a ``late_result``, and the
    call stays ``call_without_result``. Chapter 03.
    """
    pairing = Pairing()
    for msg in messages:
        pairing.feed(msg)
    return pairing.orphans()


SET_ASIDE = {"late_result": "arrived after a user message interrupted its call",
             "result_without_call": "answers no call made before it", "duplicate_result": "answers a call again"}


def pairing_notes(orphans: Sequence[Orphan], unanswered: Unanswered) -> list[str]:
    """One note per call that got its declared treatment and per result set aside (``interactions``).
    Chapter 03."""
    treatment = "a stub error result was added" if unanswered == "stub" else "the call was removed"
    return [f"call {o.call_id!r} in {o.where} never got a result: {treatment}" if o.kind == "call_without_result"
            else f"tool result in {o.where} {SET_ASIDE[o.kind]} (call {o.call_id!r}): set aside, not sent"
            for o in orphans if o.kind in SET_ASIDE or o.kind == "call_without_result"]


def _closes_round(msg: Message) -> bool:
    """A user message that ends an open round. System reminders and meta lines ride along inside it."""
    return msg.role == "user" and msg.origin not in ("system", "meta")


def _treat_unanswered(messages: list[Message], unanswered: list[str], treatment: Unanswered) -> list[Message]:
    if not unanswered:
        return messages
    if treatment == "stub":
        stubs = [Message(role="tool", parts=(TextPart(STUB_TEXT),), id=f"stub:{cid}", tool_call_id=cid,
                         is_error=True, origin="synthetic", thread=messages[0].thread) for cid in unanswered]
        # Each stub goes right after the calling message's last result (or the calling message itself).
        out = list(messages)
        for stub in stubs:
            caller = max(i for i, m in enumerate(out) if m.role == "assistant" and stub.tool_call_id in m.call_ids)
            calls = out[caller].call_ids
            at = caller + 1
            while at < len(out) and out[at].role == "tool" and out[at].tool_call_id in calls:
                at += 1
            out.insert(at, stub)
        return out
    out = list(messages)
    for cid in unanswered:  # the newest call of that id is the unanswered one (an answered one may share it)
        k = max(i for i, m in enumerate(out) if m.role == "assistant" and cid in m.call_ids)
        parts = tuple(p for p in out[k].parts if not (isinstance(p, ToolCallPart) and p.id == cid))
        out[k] = replace(out[k], parts=parts)
    return [m for m in out if m.parts or m.role != "assistant"]  # a message that held only those calls goes


def _preamble(messages: Sequence[Message], aside: set[int]) -> tuple[int, list[str]]:
    """Where the preamble — the messages before the first user message — ends, and its calls still open there.

    Its tool calls pair like a round's: a system reminder while one is open rides along
    (``[A(c1), R, T(c1), U]`` → preamble ``[A(c1), R, T(c1)]``), and one still open at the first real
    user message is unanswered (``[A(c1), U]`` → ``c1`` gets the declared treatment). A result answering
    no open call is set aside: its index goes into ``aside``.
    """
    open_calls: list[str] = []
    for i, msg in enumerate(messages):
        if msg.role == "user" and (not open_calls or _closes_round(msg)):
            return i, open_calls
        if msg.role == "assistant":
            open_calls += list(msg.call_ids)
        elif msg.role == "tool":
            if msg.tool_call_id in open_calls:
                open_calls.remove(msg.tool_call_id)
            else:
                aside.add(i)
    return len(messages), open_calls


def group_units(messages: Sequence[Message], granularity: Granularity = "round",
                unanswered: Unanswered = "stub") -> list[Unit]:
    """Split messages into units. ``[U, A(c1), T(c1), A, U2]`` → ``[U] [A(c1) T(c1)] [A] [U2]``.

    A tool result that answers no open call — none was made, it was answered already, or a user message
    interrupted it (``[U, A(c1), U2, T(c1)]`` → ``[U] [A(c1) stub(c1)] [U2]``) — is set aside: in no
    unit (:func:`find_orphans` reports it). Raises nothing for any order of messages. Chapter 03.
    """
    spans: list[tuple[str, int, int, list[str]]] = []  # (kind, start, stop, unanswered call ids)
    aside: set[int] = set()  # indexes of results set aside
    first_user, still_open = _preamble(messages, aside)
    if first_user > 0:
        spans.append(("preamble", 0, first_user, still_open))

    start, open_calls = None, []  # the round being built: start index, calls still waiting

    def close(stop: int) -> None:
        nonlocal start, open_calls
        if start is not None:
            spans.append(("round", start, stop, list(open_calls)))
        start, open_calls = None, []

    for i in range(first_user, len(messages)):
        msg = messages[i]
        if msg.role == "tool":
            if msg.tool_call_id not in open_calls:
                aside.add(i)  # rides along inside an open round, or sits between units: sent in neither
                continue
            open_calls.remove(msg.tool_call_id)
            if not open_calls:
                close(i + 1)
        elif msg.role == "assistant":
            if start is None or not open_calls:
                close(i)
                start = i
            open_calls += list(msg.call_ids)
            if not open_calls:
                close(i + 1)
        elif start is not None and open_calls and not _closes_round(msg):
            continue  # a system reminder inside an open round stays in it
        else:
            close(i)
            spans.append(("user", i, i + 1, []))
    close(len(messages))

    if granularity == "turn":
        spans = _merge_into_turns(spans, messages)

    units: list[Unit] = []
    for kind, lo, hi, missing in spans:
        span = [m for k, m in enumerate(messages[lo:hi], lo) if k not in aside]
        msgs = _treat_unanswered(span, missing, unanswered)
        if not msgs:
            continue  # "drop" removed a message that held nothing but unanswered calls
        calls = tuple(c for m in span if m.role == "assistant" for c in m.call_ids)
        units.append(Unit(len(units), kind, lo, hi, tuple(msgs), calls, tuple(missing)))
    return units


def _merge_into_turns(spans: list[tuple[str, int, int, list[str]]],
                      messages: Sequence[Message]) -> list[tuple[str, int, int, list[str]]]:
    """A turn: a real user message and every span after it up to the next real user message."""
    merged: list[tuple[str, int, int, list[str]]] = []
    for kind, lo, hi, missing in spans:
        starts_turn = kind == "user" and messages[lo].is_real_user
        if merged and not starts_turn and merged[-1][0] != "preamble":
            k, mlo, _, mmissing = merged[-1]
            merged[-1] = (k, mlo, hi, mmissing + missing)
        else:
            merged.append(("turn" if kind == "user" else kind, lo, hi, list(missing)))
    return merged
