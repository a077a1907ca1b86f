"""Sendable: a context's messages in the form a provider's API accepts, by declared rules.

A strategy decides *which* messages a context holds. A transcript records them as the agent saw
them, and that is not always what an API takes back: an aborted turn recorded with no content, a
tool that returned ``""``, thinking another provider signed, a call id some gateway numbered per
turn, a system reminder written between a call and its result. Sent as recorded, each is a 400.
:func:`sendable` applies one rule for each, in this order, and says what it changed:

1. **Empty text goes.** A text part that is empty or only whitespace is left out (a tool result
   may end up with no part: it is sent with no content). Anthropic rejects empty text blocks.
2. **Thinking goes back only to whoever signed it.** Anthropic takes a ``thinking`` block only
   with the signature Anthropic issued: thinking with no signature, or recorded from another
   provider (an OpenAI reasoning item's ``encrypted_content``), is dropped. The Responses API takes
   back only OpenAI's own reasoning items; chat completions take no thinking at all.
3. **Consecutive assistant messages are one turn.** ``[A(c1), A(c2), T(c1), T(c2)]`` is one turn
   calling c1 and c2, then both results: parallel calls, as they were made. The Messages API body
   sends a turn as one message (``bodies.py``); chat completions get one message when a call is not
   in the turn's last message (its results must follow it).
4. **A turn never ends with thinking, and a turn left empty is not sent**: thinking belongs to the
   answer or call after it (Anthropic refuses an assistant message that ends with thinking), so an
   aborted turn (``content: []``), a reply that was one empty text block and a thinking-only
   message are not sent. A user message with no text left is sent as :data:`EMPTY_USER` (the turn stays).
5. **Each result comes right after its call.** Results move up to follow the turn that called them,
   in the order recorded; what was recorded between (a system reminder) follows them.
6. **Ids the wire accepts.** Anthropic needs ``tool_use`` ids unique within a request and matching
   ``^[a-zA-Z0-9_-]+$``: other characters become ``_`` and a second use gets ``_2``
   (``functions.write_todos:0`` → ``functions_write_todos_0``); the result takes its call's new id.
7. **No trailing whitespace at the end** of a final assistant message (Anthropic treats it as a
   prefill and rejects trailing whitespace).
8. **A user message first** (Anthropic): a context that starts with an assistant turn — a session
   recorded with no user message, as some agent SDKs log a goal — gets :data:`OPENER` before it.

The rules are the renderer's side; the providers' side — what they accept, with the documentation
it comes from — is the independent oracle in ``ctxlab/wire/``. Messages a rule leaves untouched are
the same objects (counts cached by identity stay valid). Taught in chapter 04.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Callable, Sequence

from ctxlab.messages import Message, TextPart, ThinkingPart, ToolCallPart

KINDS = ("anthropic", "openai", "openai-responses")  # Messages API, chat completions, Responses API
ID_PATTERN = re.compile(r"^[a-zA-Z0-9_-]+$")  # Anthropic's tool_use id pattern
EMPTY_USER = "(empty message)"  # what a user message with no text left is sent as
OPENER = Message(role="user", parts=(TextPart("(the conversation continues)"),), id="opener", origin="synthetic")


Memo = dict  # what :func:`sendable` may be handed to make the same object for the same inputs at every call


def _made(memo: Memo | None, sources: tuple[Message, ...], extra: object, make: Callable[[], Message]) -> Message:
    """``make()``, or the object made earlier from the same source objects and ``extra`` (with a memo)."""
    if memo is None:
        return make()
    key = (*map(id, sources), extra)
    hit = memo.get(key)
    if hit is None or any(a is not b for a, b in zip(hit[0], sources)):
        hit = memo[key] = (sources, make())  # the sources are kept, so their ids are not reused
    return hit[1]


def signed_by(msg: Message) -> str | None:
    """Which provider signed ``msg``'s thinking: its recorded provider, else ``anthropic`` for a Claude model
    id or no model at all (the benefit of the doubt), else None. Chapter 04."""
    if msg.provider:
        return msg.provider
    return "anthropic" if not msg.model or "claude" in msg.model else None


def _keep_part(part: object, msg: Message, kind: str) -> bool:
    """Rules 1 and 2 for one part."""
    if isinstance(part, TextPart):
        return bool(part.text.strip())
    if isinstance(part, ThinkingPart):
        wanted = "anthropic" if kind == "anthropic" else "openai" if kind == "openai-responses" else None
        return wanted is not None and bool(part.signature) and signed_by(msg) == wanted
    return True


def _end_turn(run: list[Message], notes: list[str], memo: Memo | None) -> list[Message]:
    """Rule 4 for one turn: its trailing thinking goes, then the messages left empty. Other runs pass through."""
    if run[0].role != "assistant":
        return run
    out = list(run)
    while out:
        last = out[-1]
        parts = last.parts
        while parts and isinstance(parts[-1], ThinkingPart):
            parts = parts[:-1]  # thinking belongs to the answer or call after it: none came
        if parts:
            if len(parts) < len(last.parts):
                out[-1] = _made(memo, (last,), "trailing thinking", lambda m=last, ps=parts: replace(m, parts=ps))
            break
        notes.append(f"not sent: {last.where()} holds {'only thinking' if last.parts else 'nothing (an aborted turn)'}")
        out.pop()
    for m in out[:-1]:
        if not m.parts:
            notes.append(f"not sent: {m.where()} holds nothing (an aborted turn)")
    return [m for m in out[:-1] if m.parts] + out[-1:]


def _needs_merge(run: list[Message]) -> bool:
    """Chat completions: a turn whose calls are not in its last message goes as one message."""
    return len(run) > 1 and any(m.call_ids for m in run[:-1])


def _merge(run: list[Message]) -> Message:
    """Rule 3 for chat completions: one assistant message, the first's identity, every part in order."""
    return replace(run[0], parts=tuple(p for m in run for p in m.parts), usage=run[-1].usage)


def _turns(messages: list[Message]) -> list[list[Message]]:
    """Runs of consecutive assistant messages (one turn each); every other message a run of its own."""
    runs: list[list[Message]] = []
    for msg in messages:
        if runs and msg.role == "assistant" and runs[-1][-1].role == "assistant":
            runs[-1].append(msg)
        else:
            runs.append([msg])
    return runs


def _results_after_calls(runs: list[list[Message]]) -> list[list[Message]]:
    """Rule 5: every result right after the turn that called it, in recorded order; the rest keep their order.
    ``[A(c1), R, T(c1)]`` → ``[A(c1), T(c1), R]``."""
    waiting: dict[str, list[int]] = {}  # call id -> indexes (into runs) of the results carrying it, in order
    for k, run in enumerate(runs):
        if run[0].role == "tool":
            waiting.setdefault(run[0].tool_call_id or "", []).append(k)
    claimed: set[int] = set()  # results already moved up
    out: list[list[Message]] = []
    for k, run in enumerate(runs):
        if k in claimed:
            continue
        out.append(run)
        answers = []
        for cid in (c for m in run if m.role == "assistant" for c in m.call_ids):
            later = waiting.get(cid, [])
            while later and later[0] <= k:
                later.pop(0)  # a result recorded before this call answers an earlier one
            if later:
                answers.append(later.pop(0))
        claimed.update(answers)
        out += [runs[j] for j in sorted(answers)]
    return out


def wire_id(call_id: str, used: set[str]) -> str:
    """Rule 6: an id unique in ``used`` and matching ``^[a-zA-Z0-9_-]+$`` (added to ``used``).
    Example: ``"functions.write_todos:0"`` → ``"functions_write_todos_0"``; ``"call_0"`` a second time →
    ``"call_0_2"``.
    Chapter 04."""
    base = call_id if ID_PATTERN.match(call_id) else (re.sub(r"[^a-zA-Z0-9_-]", "_", call_id) or "call")
    new, n = base, 1
    while new in used:
        n += 1
        new = f"{base}_{n}"
    used.add(new)
    return new


def _rename_ids(messages: list[Message], memo: Memo | None) -> list[Message]:
    """Rule 6 over a message list: each call gets a wire id, and each result the id its call got."""
    used: set[str] = set()
    current: dict[str, str] = {}  # recorded id -> the wire id of its latest call
    out = []
    for msg in messages:
        if msg.role == "assistant" and msg.call_ids:
            parts = []
            for p in msg.parts:
                if isinstance(p, ToolCallPart):
                    current[p.id] = wire_id(p.id, used)
                    p = p if current[p.id] == p.id else replace(p, id=current[p.id])
                parts.append(p)
            if any(a is not b for a, b in zip(parts, msg.parts)):
                msg = _made(memo, (msg,), ("ids", *(p.id for p in parts if isinstance(p, ToolCallPart))),
                            lambda m=msg, ps=tuple(parts): replace(m, parts=ps))
        elif msg.role == "tool" and msg.tool_call_id in current and current[msg.tool_call_id] != msg.tool_call_id:
            new_id = current[msg.tool_call_id]
            msg = _made(memo, (msg,), ("id", new_id), lambda m=msg, n=new_id: replace(m, tool_call_id=n))
        out.append(msg)
    return out


def _strip_final(messages: list[Message], memo: Memo | None) -> list[Message]:
    """Rule 7: a final assistant message ends without trailing whitespace."""
    last = messages[-1] if messages else None
    if last is None or last.role != "assistant" or not last.parts or not isinstance(last.parts[-1], TextPart):
        return messages
    text = last.parts[-1].text.rstrip()
    if text == last.parts[-1].text:
        return messages
    parts = last.parts[:-1] + ((TextPart(text),) if text else ())
    return messages[:-1] + ([_made(memo, (last,), "strip", lambda: replace(last, parts=parts))] if parts else [])


def sendable(messages: Sequence[Message], kind: str, memo: Memo | None = None
             ) -> tuple[tuple[Message, ...], tuple[str, ...]]:
    """``messages`` as ``kind`` (``anthropic``, ``openai`` or ``openai-responses``) accepts them, and one note per
    change. Raises ValueError for another kind. ``memo``: a dict kept across calls (the fast path's), so a message
    a rule changed is the same object at every call. Chapter 04.

    ``[A([]), U("go")]`` → ``([U("go")], ("not sent: assistant a1 holds nothing the API takes ...",))``.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown wire kind {kind!r}; one of {', '.join(KINDS)}")
    notes: list[str] = []
    kept: list[Message] = []
    for msg in messages:  # rules 1 and 2
        parts = tuple(p for p in msg.parts if _keep_part(p, msg, kind))
        if len(parts) < len(msg.parts):
            msg = _made(memo, (msg,), ("parts", kind), lambda m=msg, ps=parts: replace(m, parts=ps))
        if msg.role == "user" and not parts:  # the turn stays (the newest user message may be this one)
            msg = _made(memo, (msg,), "empty user", lambda m=msg: replace(m, parts=(TextPart(EMPTY_USER),)))
            notes.append(f"{msg.where()} holds no text the API takes: sent as {EMPTY_USER!r}")
        kept.append(msg)
    runs = [_end_turn(run, notes, memo) for run in _turns(kept)]  # rules 3 and 4
    moved = _results_after_calls([run for run in runs if run])  # rule 5
    if any(a is not b for a, b in zip((m for run in moved for m in run), (m for run in runs for m in run))):
        notes.append("moved: tool results placed right after the turn that called them")
    if kind == "openai":  # chat completions: a message with tool_calls must be followed by their results
        moved = [[_made(memo, tuple(run), "merge", lambda r=run: _merge(r))] if _needs_merge(run) else run
                 for run in moved]
    ordered = [m for run in moved for m in run]
    out = _rename_ids(ordered, memo) if kind == "anthropic" else ordered
    if kind == "anthropic":
        out = _strip_final(out, memo)
        if out and out[0].role != "user":
            out = [OPENER, *out]
            notes.append(f"opened: the context starts with {out[1].where()}; a user turn {OPENER.text!r} goes first")
    return tuple(out), tuple(notes)
