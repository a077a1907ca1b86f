"""Reader for pi coding-agent sessions (JSON Lines), both layouts.

* v1 (linear): every line after the ``session`` header is an entry, addressed by its 0-based
  line index (the header is index 0); a compaction names ``firstKeptEntryIndex``.
* v2/v3 (tree): entries carry ``id``/``parentId``; a compaction names ``firstKeptEntryId``. We
  read the path from the root to the **last** entry in the file — the branch pi was on when the
  file ended — and note how many entries on other branches were left out.

Message roles: ``user``; ``assistant`` (blocks ``text``, ``thinking``, ``toolCall``; ``usage`` with
per-bucket ``cost``; ``stopReason``); ``toolResult`` → ``tool``; ``bashExecution`` (a command the
person ran with ``!``) → a ``user`` message with ``origin="shell"``, its text rendered the way pi
shows it to the model (``Ran `cmd``` + fenced output); ``!!`` commands (``excludeFromContext``) get
``origin="meta"``. ``custom`` / ``hookMessage`` (extension messages) → ``user`` with
``origin="system"``; ``branch_summary`` entries → ``user`` with ``origin="compact_summary"``.
``compaction``, ``model_change``, ``thinking_level_change`` and ``session_info`` become entries;
``label``/``custom`` and other bookkeeping entries never reach the model and are left out (noted).

Simplified on purpose: aborted assistant turns whose calls never got a result are kept as recorded
(the interaction module reports them); pi's wrapper text around branch summaries is not added.
Plumbing for chapter 02.
"""

from __future__ import annotations

import bisect
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..errors import TranscriptError
from ..messages import (Conversation, Entry, ImagePart, Item, Message, Part, SourceRef, TextPart,
                        ThinkingPart, ToolCallPart, Transcript, Usage, canonical_arguments)
from . import TokenCount, bad, check, head_objects, iter_jsonl, skip_note, unknown_block_text

NAME = "pi"
_STOP = {"toolUse": "tool_use", "stop": "stop", "aborted": "aborted", "error": "error", "length": "length"}


class _Header(BaseModel):
    id: str | None = None
    provider: str | None = None
    modelId: str | None = None
    version: int | None = None


class _Line(BaseModel):
    id: str | None = None
    parentId: str | None = None
    timestamp: str | None = None


class _MessageLine(_Line):
    message: dict[str, Any]


class _ModelChange(_Line):
    provider: str | None = None
    modelId: str


class _ThinkingChange(_Line):
    thinkingLevel: str


class _Compaction(_Line):
    summary: str
    firstKeptEntryIndex: int | None = None
    firstKeptEntryId: str | None = None
    tokensBefore: int | None = None


class _SummaryLine(_Line):
    summary: str


class _SessionInfo(_Line):
    name: str | None = None


class _Cost(BaseModel):
    input: float = 0
    output: float = 0
    cacheRead: float = 0
    cacheWrite: float = 0
    total: float = 0


class _Usage(BaseModel):
    input: TokenCount = 0
    output: TokenCount = 0
    cacheRead: TokenCount = 0
    cacheWrite: TokenCount = 0
    totalTokens: TokenCount = 0
    cost: _Cost | None = None


class _User(BaseModel):
    content: str | list[Any]


class _Assistant(_User):
    content: list[Any]
    provider: str | None = None
    model: str | None = None
    usage: _Usage | None = None
    stopReason: str | None = None


class _ToolResult(_User):
    toolCallId: str
    toolName: str | None = None
    content: str | list[Any] = ""
    isError: bool = False


class _Bash(BaseModel):
    command: str
    output: str = ""
    exitCode: int | None = None
    cancelled: bool = False
    truncated: bool = False
    fullOutputPath: str | None = None
    excludeFromContext: bool = False


class _Text(BaseModel):
    text: str


class _Image(BaseModel):
    data: str = ""
    mimeType: str = "image/png"


class _Thinking(BaseModel):
    thinking: str = ""
    thinkingSignature: str | None = None
    redacted: bool = False


class _ToolCall(BaseModel):
    id: str
    name: str
    arguments: Any = None


def sniff(path: Path, head: str) -> bool:
    objs = head_objects(head, 5)
    if not objs or "uuid" in objs[0] or "sessionId" in objs[0]:
        return False
    first = objs[0]
    return (first.get("type") == "session" and ("cwd" in first or "version" in first)) or (
        first.get("type") == "message" and isinstance(first.get("message"), dict) and "role" in first["message"])


def _parts(content: str | list[Any], *, file: str, line: int, at: str, notes: list[str]) -> list[Part]:
    if isinstance(content, str):
        return [TextPart(content)] if content else []
    parts: list[Part] = []
    for i, block in enumerate(content):
        where = f"{at}[{i}]"
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            parts.append(TextPart(check(_Text, block, file=file, line=line, at=where).text))
        elif kind == "image":
            img = check(_Image, block, file=file, line=line, at=where)
            parts.append(ImagePart(media_type=img.mimeType, data_chars=len(img.data)))
        elif kind == "thinking":
            th = check(_Thinking, block, file=file, line=line, at=where)
            parts.append(ThinkingPart(th.thinking, th.thinkingSignature, th.redacted))
        elif kind == "toolCall":
            call = check(_ToolCall, block, file=file, line=line, at=where)
            parts.append(ToolCallPart(call.id, call.name, canonical_arguments(call.arguments or {})))
        else:
            parts.append(TextPart(unknown_block_text(block)))
            notes.append(f"line {line}: content block of type {kind!r} kept as its JSON text")
    return parts


def _bash_text(b: _Bash) -> str:
    """How pi shows a user's shell command to the model."""
    text = f"Ran `{b.command}`\n" + (f"```\n{b.output}\n```" if b.output else "(no output)")
    if b.cancelled:
        text += "\n\n(command cancelled)"
    elif b.exitCode not in (None, 0):
        text += f"\n\nCommand exited with code {b.exitCode}"
    if b.truncated and b.fullOutputPath:
        text += f"\n\n[Output truncated. Full output: {b.fullOutputPath}]"
    return text


def _iso(ms: Any) -> str | None:
    """pi's message timestamps are Unix milliseconds: ``1735725601000`` → ``"2025-01-01T10:00:01.000Z"``."""
    if isinstance(ms, str):
        return ms
    if not isinstance(ms, (int, float)) or isinstance(ms, bool):
        return None
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _usage(u: _Usage, raw: dict[str, Any]) -> Usage:
    cost = None if u.cost is None else {"uncached_input": u.cost.input, "cache_read": u.cost.cacheRead,
                                         "cache_write": u.cost.cacheWrite, "output": u.cost.output,
                                         "total": u.cost.total}
    return Usage(uncached_input_tokens=u.input, cache_read_tokens=u.cacheRead, cache_write_tokens=u.cacheWrite,
                 output_tokens=u.output, cost_usd=cost, raw=raw)


_Row = tuple[int, int, dict[str, Any]]  # (line, index, object)


def _branch(rows: list[_Row], *, file: str, strict: bool, skipped: list[str], notes: list[str]) -> list[_Row]:
    """The rows on the path from the root to the last entry (tree layouts).

    An entry without an id or with an id already used, a parent no entry has, and a parent cycle
    raise (strict) — each would silently cut the branch short — or are noted and worked around.
    """
    by_id: dict[str, _Row] = {}  # entry id -> its row
    for row in rows:
        line, _, obj = row
        entry_id = obj.get("id")
        if not isinstance(entry_id, str) or not entry_id:
            err = bad(file, line, "a tree-layout entry needs a non-empty string id", field="id")
        elif entry_id in by_id:
            err = bad(file, line, f"duplicate id {entry_id!r} (first at line {by_id[entry_id][0]})", field="id")
        else:
            by_id[entry_id] = row
            continue
        if strict:
            raise err
        skipped.append(skip_note(err))
    rows = list(by_id.values())
    leaf = rows[-1] if rows else None
    path: list[_Row] = []
    seen: set[str] = set()
    while leaf is not None:
        path.append(leaf)
        seen.add(leaf[2]["id"])
        parent = leaf[2].get("parentId")
        problem = None
        if parent is not None and parent not in by_id:
            problem = f"parent {parent!r} points nowhere (no entry has that id)"
        elif parent in seen:
            problem = f"parent {parent!r} closes a cycle (it is a descendant of this entry)"
        if problem:
            if strict:
                raise TranscriptError(file, leaf[0], problem + ".", field="parentId", hint="Fix the line, or load "
                                      "with strict=False to read the branch from this entry on.")
            notes.append(f"line {leaf[0]}: {problem}; the branch starts here")
            break
        leaf = by_id.get(parent) if parent is not None else None
    path.reverse()
    if len(path) < len(rows):
        notes.append(f"tree layout: read the branch ending at the last entry ({len(path)} of {len(rows)} "
                     f"entries); {len(rows) - len(path)} entries on other branches left out")
    return path


def read(path: Path, *, strict: bool = True) -> Transcript:
    file, skipped, notes = path.name, [], []
    rows = list(iter_jsonl(path, strict=strict, notes=skipped))
    header = next((check(_Header, o, file=file, line=n) for n, _, o in rows[:1] if o.get("type") == "session"), _Header())
    rows = [r for r in rows if r[2].get("type") != "session"]
    conv_id = header.id or path.stem
    tree = (header.version or 1) >= 2 or any("parentId" in o for _, _, o in rows[:5])
    if tree:
        rows = _branch(rows, file=file, strict=strict, skipped=skipped, notes=notes)
    model, provider = header.modelId, header.provider
    items: list[Item] = []
    kept: list[tuple[int, str]] = []  # (entry index or path position, message id), in order
    position: dict[str, int] = {}  # entry id -> path position (tree layout)
    left_out: Counter[str] = Counter()
    for pos, (line, index, obj) in enumerate(rows):
        kind, key = obj.get("type"), (pos if tree else index)
        try:
            base = check(_Line, obj, file=file, line=line)
            item_id = base.id if tree and base.id else f"{conv_id}:{index}"
            position[item_id] = key
            src = SourceRef(file, line)
            meta: dict[str, Any] = dict(id=item_id, timestamp=base.timestamp, source=src)
            if kind == "message":
                entry = check(_MessageLine, obj, file=file, line=line)
                item = _message(entry.message, meta, file=file, line=line, model=model, provider=provider, notes=notes)
            elif kind == "model_change":
                change = check(_ModelChange, obj, file=file, line=line)
                model, provider = change.modelId, change.provider or provider
                item = Entry("model_change", item_id, {"provider": provider, "model": model}, base.timestamp, source=src)
            elif kind == "thinking_level_change":
                level = check(_ThinkingChange, obj, file=file, line=line).thinkingLevel
                item = Entry("thinking_level_change", item_id, {"level": level}, base.timestamp, source=src)
            elif kind == "compaction":
                comp = check(_Compaction, obj, file=file, line=line)
                target = position.get(comp.firstKeptEntryId) if tree else comp.firstKeptEntryIndex
                at = bisect.bisect_left([k for k, _ in kept], target) if target is not None else len(kept)
                first_kept = kept[at][1] if at < len(kept) else None
                if first_kept is None:
                    notes.append(f"line {line}: compaction keeps no earlier message (first kept entry "
                                 f"{comp.firstKeptEntryId or comp.firstKeptEntryIndex!r} not found before it)")
                item = Entry("compaction", item_id, {"summary": comp.summary, "first_kept_id": first_kept,
                                                     "tokens_before": comp.tokensBefore, "origin": "recorded"},
                             base.timestamp, source=src)
            elif kind == "branch_summary":
                summary = check(_SummaryLine, obj, file=file, line=line).summary
                item = Message(role="user", parts=(TextPart(summary),), origin="compact_summary",
                               model=model, provider=provider, **meta)
            elif kind == "custom_message":
                content = check(_User, obj, file=file, line=line).content
                item = Message(role="user", parts=tuple(_parts(content, file=file, line=line, at="content", notes=notes)),
                               origin="system", model=model, provider=provider, **meta)
            elif kind == "session_info":
                item = Entry("title", item_id, {"title": check(_SessionInfo, obj, file=file, line=line).name},
                             base.timestamp, source=src)
            else:
                left_out[str(kind)] += 1
                continue
        except TranscriptError as err:
            if strict:
                raise
            skipped.append(skip_note(err))
            continue
        items.append(item)
        if isinstance(item, Message):
            kept.append((key, item.id))
    notes += [f"left out {n} '{k}' line(s): not part of the model's context" for k, n in left_out.items()]
    titles = [e.data["title"] for e in items if isinstance(e, Entry) and e.kind == "title" and e.data["title"]]
    conv = Conversation(id=conv_id, items=tuple(items), title=titles[-1] if titles else None,
                        model=header.modelId or next((m.model for m in items if isinstance(m, Message) and m.model), None),
                        provider=header.provider or next((m.provider for m in items if isinstance(m, Message) and m.provider), None),
                        notes=tuple(skipped + notes))
    return Transcript(format=NAME, file=file, conversations=(conv,), notes=tuple(skipped))


def _message(raw: dict[str, Any], meta: dict[str, Any], *, file: str, line: int, model: str | None,
             provider: str | None, notes: list[str]) -> Message:
    """One pi ``message`` payload → a Message (raises TranscriptError on a bad shape)."""
    role = raw.get("role")
    meta = {**meta, "model": model, "provider": provider, "timestamp": meta["timestamp"] or _iso(raw.get("timestamp"))}

    def parts(content: str | list[Any]) -> tuple[Part, ...]:
        return tuple(_parts(content, file=file, line=line, at="message.content", notes=notes))

    if role == "user":
        return Message(role="user", parts=parts(check(_User, raw, file=file, line=line, at="message").content), **meta)
    if role == "assistant":
        a = check(_Assistant, raw, file=file, line=line, at="message")
        meta.update(model=a.model or model, provider=a.provider or provider)
        return Message(role="assistant", parts=parts(a.content), stop_reason=_STOP.get(a.stopReason or "", a.stopReason),
                       usage=_usage(a.usage, raw["usage"]) if a.usage is not None else None, **meta)
    if role == "toolResult":
        t = check(_ToolResult, raw, file=file, line=line, at="message")
        return Message(role="tool", parts=parts(t.content), tool_call_id=t.toolCallId, tool_name=t.toolName,
                       is_error=t.isError, **meta)
    if role == "bashExecution":
        b = check(_Bash, raw, file=file, line=line, at="message")
        return Message(role="user", parts=(TextPart(_bash_text(b)),), origin="meta" if b.excludeFromContext else "shell", **meta)
    if role in ("custom", "hookMessage"):
        return Message(role="user", parts=parts(check(_User, raw, file=file, line=line, at="message").content),
                       origin="system", **meta)
    if role in ("branchSummary", "compactionSummary"):
        s = check(_SummaryLine, raw, file=file, line=line, at="message")
        return Message(role="user", parts=(TextPart(s.summary),), origin="compact_summary", **meta)
    raise bad(file, line, f"unknown role {role!r}; pi writes user, assistant, toolResult, bashExecution, custom",
              field="message.role")
