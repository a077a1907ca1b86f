"""Codex rollouts: what a ``compacted`` line makes the history, prompts kept only as events, dynamic tools.

Helpers of :mod:`ctxlab.io.formats.codex` (its docstring cites the sources). Codex rebuilds the
history from a rollout in ``codex-rs/core/src/rollout/replay.rs`` (``replay_rollout_response_items``):
at a ``compacted`` line with ``replacement_history`` the history BECOMES that list; without one it
is rebuilt as the initial context + the user messages so far (newest first, at most
``COMPACT_USER_MESSAGE_MAX_TOKENS`` = 20,000 tokens of ``bytes / 4``; ``codex-rs/core/src/compact.rs``)
+ the summary. Here that becomes a ``compaction`` entry whose ``pinned_ids`` name the earlier
messages the new history sends again, followed by the replacement items found nowhere earlier
(origin ``"compact_summary"``). An encrypted ``compaction`` item (alias ``compaction_summary``;
``context_compaction``) — a remote compaction's summary — is kept as a redacted ThinkingPart: its
text is not in the file, so it counts 0 tokens (noted, with Codex's own estimate of the new
history when a token count records one). Ghost snapshots are git bookkeeping, never sent.
Also here: ``session_meta.dynamic_tools`` → ToolSpecs, and the notes counting what the response
items hold that ctxlab cannot count (encrypted reasoning, hosted tool calls whose results are not
in the file).

Plumbing for chapter 02.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace
from typing import Any

from pydantic import BaseModel

from ctxlab.messages import Message, SourceRef, TextPart, ThinkingPart, ToolSpec
from ctxlab.io.formats import bad
from ctxlab.io.formats.responses_items import ItemReader, content_parts

OPAQUE = ("compaction", "compaction_summary", "context_compaction")  # encrypted summary items
USER_BUDGET = 20_000  # COMPACT_USER_MESSAGE_MAX_TOKENS, approximate tokens (UTF-8 bytes / 4)


class DynamicTool(BaseModel):
    """One ``session_meta.dynamic_tools`` entry (``DynamicToolSpec``, camelCase on the wire)."""

    name: str
    description: str = ""
    inputSchema: dict[str, Any] | None = None
    input_schema: dict[str, Any] | None = None  # the same field, for a writer that kept snake_case
    deferLoading: bool = False
    exposeToContext: bool = True


def tool_specs(dynamic_tools: list[dict[str, Any]], notes: list[str]) -> tuple[ToolSpec, ...]:
    """``session_meta.dynamic_tools`` (tools a client declared at thread start) → ToolSpecs; a deferred
    one (``deferLoading``, or ``exposeToContext: false``) is not in the first request's tools: noted."""
    specs, deferred = [], []
    for raw in dynamic_tools:
        tool = DynamicTool.model_validate(raw)
        if tool.deferLoading or not tool.exposeToContext:
            deferred.append(tool.name)
            continue
        specs.append(ToolSpec(tool.name, tool.description,
                              tool.inputSchema or tool.input_schema or {"type": "object", "properties": {}}))
    if deferred:
        notes.append(f"{len(deferred)} dynamic tool(s) loaded on demand, not in the tool list sent: {', '.join(deferred)}")
    notes.append("Codex's built-in tool definitions (shell, apply_patch, ...) are not in the rollout: tools holds "
                 f"only the {len(specs)} dynamic tool(s) the client declared")
    return tuple(specs)


def _text(item: dict[str, Any], notes: list[str], where: str) -> str:
    return "\n".join(p.text for p in content_parts(item.get("content"), notes, where) if isinstance(p, TextPart))


def replacement(reader: ItemReader, history: list[Any], *, summary: str, system: tuple[str, ...], index: int,
                line: int, timestamp: str | None, notes: list[str]) -> tuple[list[str], list[Message], dict[str, int]]:
    """``replacement_history`` → (ids of earlier messages sent again, new messages, counts by what was done).

    Raises TranscriptError for an item that is not an object with a ``type`` (or a ``role``)."""
    file, where = reader.file, f"line {line}"
    users = [m for m in reader.items if isinstance(m, Message) and m.role == "user"]
    blocks = {b.strip() for b in (*system, *reader.system)}
    sub = ItemReader(reader.conv_id, file, model=reader.model, provider=reader.provider)
    pinned: list[str] = []
    counts = {"pinned": 0, "summary": 0, "system prompt": 0, "new": 0, "encrypted": 0, "ghost snapshot": 0}
    for k, item in enumerate(history):
        at = f"payload.replacement_history[{k}]"
        kind = (item.get("type") or ("message" if "role" in item else None)) if isinstance(item, dict) else None
        if not isinstance(kind, str):
            raise bad(file, line, "a replacement-history item needs a 'type' (or a 'role' for a message)", field=at)
        msg_id, src = f"{reader.conv_id}:{index}.{k}", SourceRef(file, line)
        if kind == "message":
            if not isinstance(item.get("content"), (str, list)):
                raise bad(file, line, "a replacement-history message needs its content (a string or a list of parts)",
                          field=f"{at}.content")
            text, role = _text(item, notes, where), item.get("role")
            match = next((m.id for m in reversed(users) if m.text == text and m.id not in pinned), None)
            if summary.strip() and summary.strip() in text:
                counts["summary"] += 1  # the compaction entry's summary itself
            elif role in ("developer", "system") and text.strip() in blocks:
                counts["system prompt"] += 1
            elif match is not None and role == "user":
                pinned.append(match)
                counts["pinned"] += 1
            else:
                sub.close()
                sub.items.append(Message(role="assistant" if role == "assistant" else "user",
                                         parts=tuple(content_parts(item.get("content"), notes, where)), id=msg_id,
                                         timestamp=timestamp, origin="compact_summary", source=src))
                counts["new"] += 1
        elif kind in OPAQUE:
            blob = item.get("encrypted_content")
            sub.close()
            sub.items.append(Message(role="user", parts=(ThinkingPart("", blob if isinstance(blob, str) else None,
                                                                      redacted=True),),
                                     id=msg_id, timestamp=timestamp, origin="compact_summary", source=src))
            counts["encrypted"] += 1
            notes.append(f"line {line}: the compaction's summary is an encrypted {kind!r} item "
                         f"({len(blob) if isinstance(blob, str) else 0:,} chars of encrypted_content): its text is not "
                         "in the file, counted as 0 tokens")
        elif kind == "ghost_snapshot":
            counts["ghost snapshot"] += 1
        else:
            sub.add(item, index=f"{index}.{k}", line=line, at=at, timestamp=timestamp)  # type: ignore[arg-type]
            counts["new"] += 1
    reader.names.update(sub.names)
    notes += sub.notes + [f"line {line}: {n} '{kind}' replacement-history item(s) not modelled"
                          for kind, n in sub.left_out.items()]
    extra = [m if m.origin else _resent(m) for m in sub.items if isinstance(m, Message)]
    pinned.sort(key=[m.id for m in users].index)
    return pinned, extra, counts


def _resent(m: Message) -> Message:
    """A replacement item read by the item reader: marked as the compaction's, never a new model call."""
    return replace(m, origin="compact_summary", usage=None)


def rebuilt(reader: ItemReader) -> tuple[list[str], str]:
    """No ``replacement_history`` (older rollouts): the ids Codex's rebuild sends again, and a note.

    The initial context (Codex's own messages before the first prompt) and the newest prompts up to
    20,000 approximate tokens; the prompt that crosses the limit is truncated by Codex (not pinned)."""
    users = [m for m in reader.items if isinstance(m, Message) and m.role == "user" and m.origin != "compact_summary"]
    first = next((k for k, m in enumerate(users) if m.origin is None), len(users))
    context = [m.id for m in users[:first]]
    kept: list[str] = []
    left = USER_BUDGET
    for m in reversed([m for m in users if m.origin is None]):
        cost = math.ceil(len(m.text.encode("utf-8")) / 4)
        if cost > left:
            break
        kept.append(m.id)
        left -= cost
    prompts = sum(1 for m in users if m.origin is None)
    return context + kept[::-1], (f"{len(kept)} of {prompts} earlier prompt(s) and {len(context)} context message(s) "
                                  "sent again (Codex's rebuild: the newest prompts up to 20,000 tokens; one crossing that limit is "
                                  "sent truncated, not counted here)")


def echoed(rows: list[tuple[int, int, dict[str, Any]]], k: int) -> bool:
    """Is the ``event_msg/user_message`` at ``rows[k]`` a copy of a ``response_item`` user message of the
    same turn (searched both ways up to the nearest model output)? Codex writes both forms; some
    Codex Desktop releases wrote only the event."""
    event = rows[k][2]["payload"]
    text = event.get("message") if isinstance(event.get("message"), str) else ""
    for step in (-1, 1):
        j = k + step
        while 0 <= j < len(rows):
            obj = rows[j][2]
            payload = obj.get("payload") if isinstance(obj.get("payload"), dict) else {}
            kind = str(payload.get("type", ""))
            if obj.get("type") == "response_item":
                if payload.get("role") == "user" and (not text.strip() or text.strip() in _loose_text(payload)):
                    return True
                if payload.get("role") == "assistant" or kind == "reasoning" or kind.endswith("_call"):
                    break
            elif obj.get("type") == "event_msg" and kind == "user_message" and j != k:
                break  # the next prompt
            j += step
    return False


def _loose_text(item: dict[str, Any]) -> str:
    """The text of a message item, or "" when its content has no readable shape (the line itself is
    checked when it is read)."""
    try:
        return _text(item, [], "")
    except (TypeError, AttributeError):
        return ""


def prompt_item(event: dict[str, Any]) -> dict[str, Any]:
    """An ``event_msg/user_message`` payload → the user message item it stands for (text, then images;
    a local image's bytes are not in the event: an image of unknown size)."""
    content: list[dict[str, Any]] = [{"type": "input_text", "text": event.get("message") or ""}]
    content += [{"type": "input_image", "image_url": u} for u in event.get("images") or [] if isinstance(u, str)]
    content += [{"type": "input_image", "image_url": ""} for _ in event.get("local_images") or []]
    return {"type": "message", "role": "user", "content": content}


def item_notes(rows: list[tuple[int, int, dict[str, Any]]]) -> list[str]:
    """What the response items hold that ctxlab cannot count: encrypted reasoning, hosted tool results."""
    encrypted, hosted = 0, Counter()
    for _, _, obj in rows:
        p = obj.get("payload") if obj.get("type") == "response_item" and isinstance(obj.get("payload"), dict) else {}
        if p.get("type") == "reasoning" and p.get("encrypted_content") and not (p.get("summary") or p.get("content")):
            encrypted += 1
        elif str(p.get("type", "")).endswith("_call") and not isinstance(p.get("call_id"), str):
            hosted[p["type"]] += 1
    out = [f"{encrypted} reasoning item(s) hold only encrypted_content: kept as redacted thinking, counted as 0 "
           "tokens"] if encrypted else []
    out += [f"{n} hosted {kind!r} item(s): OpenAI ran them; their results are not in the rollout (only the call "
            "is counted)" for kind, n in hosted.items()]
    return out
