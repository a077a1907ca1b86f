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
``stub`` (a synthetic error result is added after the round) or ``drop`` (the call is removed
from its assistant message) — and is always reported. A result with no call before it cannot be
placed: :func:`group_units` raises :class:`~ctxlab.base.errors.OrphanError` naming it.

Pinning (which units must be kept) is a separate idea; see ``context.py``. Taught in chapter 03.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal, Sequence

from ctxlab.base.errors import OrphanError
from ctxlab.messages import Message, TextPart, ToolCallPart

Granularity = Literal["round", "turn"]
Unanswered = Literal["stub", "drop"]

STUB_TEXT = "[no result recorded: this tool call was interrupted before it returned]"


@dataclass(frozen=True)
class Orphan:
    """One pairing violation. ``kind``: ``call_without_result``, ``result_without_call``,
    ``duplicate_result`` or ``duplicate_call``; ``where`` names the message and its source line. Chapter 03."""

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


def find_orphans(messages: Sequence[Message]) -> list[Orphan]:
    """Every pairing violation in order of discovery; ``[]`` when every call has its result after it.

    A call id may be used again once its earlier call was answered (tau-bench and SWE-agent runs do):
    only a call made while the same id is still open is a ``duplicate_call``. Chapter 03.
    """
    open_calls: dict[str, Message] = {}  # call_id -> the assistant message waiting for its result
    answered: set[str] = set()  # ids whose latest call has its result
    found: list[Orphan] = []
    for msg in messages:
        if msg.role == "assistant":
            for cid in msg.call_ids:
                if cid in open_calls:
                    found.append(Orphan("duplicate_call", cid, msg.id, msg.where()))
                open_calls[cid] = msg
                answered.discard(cid)
        elif msg.role == "tool":
            cid = msg.tool_call_id or ""
            if cid in open_calls:
                del open_calls[cid]
                answered.add(cid)
            elif cid in answered:
                found.append(Orphan("duplicate_result", cid, msg.id, msg.where()))
            else:
                found.append(Orphan("result_without_call", cid, msg.id, msg.where()))
    found += [Orphan("call_without_result", cid, m.id, m.where()) for cid, m in open_calls.items()]
    return found


def _closes_round(msg: Message) -> bool:
    """A user message that ends an open round. System reminders and meta lines ride along inside it."""
    return msg.role == "user" and msg.origin not in ("system", "meta")


def _treat_unanswered(messages: list[Message], unanswered: list[str], treatment: Unanswered) -> list[Message]:
    if not unanswered:
        return messages
    if treatment == "stub":
        stubs = [Message(role="tool", parts=(TextPart(STUB_TEXT),), id=f"stub:{cid}", tool_call_id=cid,
                         is_error=True, origin="synthetic", thread=messages[0].thread) for cid in unanswered]
        # Stubs go right after the last tool result (or the calling message) so results stay adjacent.
        last_tool = max((i for i, m in enumerate(messages) if m.role in ("tool", "assistant")),
                        default=len(messages) - 1)
        return messages[: last_tool + 1] + stubs + messages[last_tool + 1:]
    gone = set(unanswered)
    out = []
    for m in messages:
        if m.role == "assistant" and gone.intersection(m.call_ids):
            parts = tuple(p for p in m.parts if not (isinstance(p, ToolCallPart) and p.id in gone))
            if not parts:
                continue  # the message held nothing but the unanswered calls
            m = replace(m, parts=parts)
        out.append(m)
    return out


def _orphan_result(msg: Message, reason: str) -> OrphanError:
    return OrphanError(
        f"Orphan tool result: {msg.where()} answers call {msg.tool_call_id!r}, but {reason}. "
        "Fix the transcript; `python -m ctxlab inspect FILE` (or find_orphans() in Python) lists every such message.")


def _preamble(messages: Sequence[Message]) -> tuple[int, list[str]]:
    """Where the preamble — the messages before the first user message — ends, and its calls still open there.

    Its tool calls pair like a round's: a system reminder while one is open rides along
    (``[A(c1), R, T(c1), U]`` → preamble ``[A(c1), R, T(c1)]``), and one still open at the first real
    user message is unanswered (``[A(c1), U]`` → ``c1`` gets the declared treatment).
    """
    open_calls: list[str] = []
    for i, msg in enumerate(messages):
        if msg.role == "user" and (not open_calls or _closes_round(msg)):
            return i, open_calls
        if msg.role == "assistant":
            open_calls += list(msg.call_ids)
        elif msg.role == "tool":
            if msg.tool_call_id not in open_calls:
                raise _orphan_result(msg, "no earlier assistant message made that call")
            open_calls.remove(msg.tool_call_id)
    return len(messages), open_calls


def group_units(messages: Sequence[Message], granularity: Granularity = "round",
                unanswered: Unanswered = "stub") -> list[Unit]:
    """Split messages into units. ``[U, A(c1), T(c1), A, U2]`` → ``[U] [A(c1) T(c1)] [A] [U2]``.

    Raises OrphanError for a tool result that answers no earlier call (or answers a call whose
    round a user message already closed), naming the message and its source line. Chapter 03.
    """
    spans: list[tuple[str, int, int, list[str]]] = []  # (kind, start, stop, unanswered call ids)
    first_user, still_open = _preamble(messages)
    if first_user > 0:
        spans.append(("preamble", 0, first_user, still_open))

    start, open_calls = None, []  # the round being built: start index, calls still waiting
    seen: set[str] = {c for m in messages[:first_user] for c in m.call_ids}

    def close(stop: int) -> None:
        nonlocal start, open_calls
        if start is not None:
            spans.append(("round", start, stop, list(open_calls)))
        start, open_calls = None, []

    for i in range(first_user, len(messages)):
        msg = messages[i]
        if msg.role == "tool":
            if msg.tool_call_id not in open_calls:
                raise _orphan_result(msg, "its round was already closed by a user message" if msg.tool_call_id in seen
                                     else "no earlier assistant message made that call")
            open_calls.remove(msg.tool_call_id)
            if not open_calls:
                close(i + 1)
        elif msg.role == "assistant":
            if start is None or not open_calls:
                close(i)
                start = i
            open_calls += list(msg.call_ids)
            seen.update(msg.call_ids)
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
        msgs = _treat_unanswered(list(messages[lo:hi]), missing, unanswered)
        if not msgs:
            continue  # "drop" removed a message that held nothing but unanswered calls
        calls = tuple(c for m in messages[lo:hi] if m.role == "assistant" for c in m.call_ids)
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


def _anthropic_positions(messages: Sequence[Message]) -> list[int]:
    """Index of each message in the Anthropic request, where consecutive tool results share one user message."""
    positions, pos = [], -1
    for k, m in enumerate(messages):
        if not (m.role == "tool" and k > 0 and messages[k - 1].role == "tool"):
            pos += 1
        positions.append(pos)
    return positions


def provider_error(messages: Sequence[Message], provider: str) -> str | None:
    """The 400 error a provider returns for the first orphan in ``messages``, or None if it would accept them.

    The texts follow the providers' published error messages (Anthropic Messages API
    ``invalid_request_error``; OpenAI chat completions ``invalid_request_error``), with the ids filled in.
    Chapter 03 shows them: ``[A(c1), U]`` → Anthropic "messages.0: `tool_use` ids were found without
    `tool_result` blocks immediately after: c1 ...".
    """
    pos = _anthropic_positions(messages)
    for k, m in enumerate(messages):
        if m.role == "assistant" and m.call_ids:
            after = []
            for n in messages[k + 1:]:
                if n.role != "tool":
                    break
                after.append(n.tool_call_id)
            missing = [c for c in m.call_ids if c not in after]
            if missing:
                if provider == "anthropic":
                    return (f"messages.{pos[k]}: `tool_use` ids were found without `tool_result` blocks immediately "
                            f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding "
                            "`tool_result` block in the next message.")
                return ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                        "'tool_call_id'. The following tool_call_ids did not have response messages: "
                        f"{', '.join(missing)}")
        if m.role == "tool":
            k0 = k
            while k0 > 0 and messages[k0 - 1].role == "tool":
                k0 -= 1
            caller = messages[k0 - 1] if k0 > 0 else None
            if caller is None or caller.role != "assistant" or m.tool_call_id not in caller.call_ids:
                if provider == "anthropic":
                    return (f"messages.{pos[k]}.content.{k - k0}: unexpected `tool_use_id` found in `tool_result` "
                            f"blocks: {m.tool_call_id}. Each `tool_result` block must have a corresponding `tool_use` "
                            "block in the previous message.")
                return ("Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                        "with 'tool_calls'.")
    return None
