"""Reader for Claude Code transcripts (``~/.claude/projects/<project>/<session>.jsonl``).

Each line has a ``type``; ``user`` and ``assistant`` lines carry an Anthropic Messages API
``message`` and sit in a ``uuid``/``parentUuid`` tree. What this reader does with the quirks:

* **Split responses**: one API response is written over several lines (one content block each)
  sharing ``message.id``; they become ONE assistant message — parts in order, ``response_id`` =
  ``message.id``, usage and stop reason from the last line (usage repeats on every line).
* **Threads**: ``isSidechain`` lines (sub-agent / Task traffic) form one thread per sidechain
  root, named ``sidechain-1``, ``sidechain-2``, ... in order of appearance; the rest is ``main``.
* **Mixed user lines**: a user line holding ``tool_result`` blocks and text becomes, in order, one
  ``tool`` message per result and a ``user`` message per run of other blocks.
* ``isMeta`` lines (expanded slash commands, caveats) → ``origin="meta"``: kept, never sent.
* **Compactions**: a ``system`` line with ``subtype: "compact_boundary"`` plus the next
  ``isCompactSummary`` user line → one ``compaction`` Entry (Claude Code keeps nothing from before
  the boundary, so ``first_kept_id`` is ``None``), not a message.
* ``summary`` / ``custom-title`` lines are titles → ``title`` entries and ``Conversation.title``.
* Other system lines and bookkeeping lines (file-history snapshots, queue operations, ...) are UI
  records, never sent to the model: left out, counted in the notes.

Simplified on purpose: the whole file is one Conversation in line order; edits/rewinds that fork
the main thread are kept in line order (noted). Tool specs and the system prompt are not in the
file, so ``tools=()`` and ``system=()``. Plumbing for chapter 02.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..errors import TranscriptError
from ..messages import (Conversation, Entry, ImagePart, Item, Message, Part, SourceRef, TextPart,
                        ThinkingPart, ToolCallPart, Transcript, Usage, canonical_arguments)
from . import TokenCount, bad, check, head_objects, iter_jsonl, skip_note, unknown_block_text

NAME = "claude-code"
_STOP = {"end_turn": "stop", "tool_use": "tool_use", "max_tokens": "length"}


class _CacheCreation(BaseModel):
    ephemeral_5m_input_tokens: TokenCount | None = 0
    ephemeral_1h_input_tokens: TokenCount | None = 0


class _Usage(BaseModel):
    input_tokens: TokenCount | None = 0
    cache_creation_input_tokens: TokenCount | None = 0
    cache_read_input_tokens: TokenCount | None = 0
    cache_creation: _CacheCreation | None = None
    output_tokens: TokenCount | None = 0


class _UserMessage(BaseModel):
    content: str | list[Any]


class _AssistantMessage(BaseModel):
    id: str | None = None
    model: str | None = None
    content: list[Any]
    stop_reason: str | None = None
    usage: _Usage | None = None


class _Line(BaseModel):
    uuid: str
    parentUuid: str | None = None
    isSidechain: bool = False
    timestamp: str | None = None


class _UserLine(_Line):
    message: _UserMessage
    isMeta: bool = False
    isCompactSummary: bool = False
    isVisibleInTranscriptOnly: bool = False


class _AssistantLine(_Line):
    message: _AssistantMessage


class _SystemLine(_Line):
    subtype: str | None = None
    compactMetadata: dict[str, Any] | None = None


class _Text(BaseModel):
    text: str


class _Thinking(BaseModel):
    thinking: str = ""
    signature: str | None = None


class _ToolUse(BaseModel):
    id: str
    name: str
    input: Any = None


class _ToolResult(BaseModel):
    tool_use_id: str
    content: str | list[Any] | None = None
    is_error: bool | None = False


def sniff(path: Path, head: str) -> bool:
    for obj in head_objects(head, 20):
        if obj.get("type") in ("user", "assistant", "system") and "uuid" in obj and "sessionId" in obj:
            return True
        if (obj.get("type") == "summary" and "leafUuid" in obj) or (
                obj.get("type") == "file-history-snapshot" and "messageId" in obj):
            return True
    # the first line may be longer than the head (a pasted image): fall back on the key names
    return head.lstrip().startswith("{") and all(f'"{k}"' in head for k in ("parentUuid", "isSidechain", "sessionId"))


def usage(raw: dict[str, Any]) -> Usage:
    """Anthropic usage → neutral fields. ``{"input_tokens": 0, "cache_creation_input_tokens": 380,
    "cache_read_input_tokens": 4480}`` → ``Usage(0, 4480, 380)`` (total input 4860)."""
    u = _Usage.model_validate(raw)
    return Usage(uncached_input_tokens=u.input_tokens or 0, cache_read_tokens=u.cache_read_input_tokens or 0,
                 cache_write_tokens=u.cache_creation_input_tokens or 0, output_tokens=u.output_tokens or 0,
                 cache_write_1h_tokens=(u.cache_creation.ephemeral_1h_input_tokens or 0) if u.cache_creation else 0,
                 raw=raw)


def _parts(blocks: str | list[Any] | None, *, file: str, line: int, at: str, notes: list[str],
           start: int = 0) -> list[Part]:
    """Content blocks other than tool_result → parts (tool_use included); ``start`` numbers them."""
    if blocks is None or isinstance(blocks, str):
        return [TextPart(blocks)] if blocks else []
    parts: list[Part] = []
    for i, block in enumerate(blocks):
        where, kind = f"{at}[{start + i}]", block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            parts.append(TextPart(check(_Text, block, file=file, line=line, at=where).text))
        elif kind == "thinking":
            th = check(_Thinking, block, file=file, line=line, at=where)
            parts.append(ThinkingPart(th.thinking, th.signature))
        elif kind == "redacted_thinking":
            parts.append(ThinkingPart("", str(block.get("data", "")), redacted=True))
        elif kind == "tool_use":
            use = check(_ToolUse, block, file=file, line=line, at=where)
            parts.append(ToolCallPart(use.id, use.name, canonical_arguments(use.input if use.input is not None else {})))
        elif kind == "image":
            source = block.get("source") or {}
            parts.append(ImagePart(media_type=source.get("media_type", "image/png"), width=block.get("width"),
                                   height=block.get("height"), data_chars=len(source.get("data") or "")))
        else:
            parts.append(TextPart(unknown_block_text(block)))
            notes.append(f"line {line}: content block of type {kind!r} kept as its JSON text")
    return parts


_FOREIGN = {"session": "a session header line (pi or ctxlab)", "message": "a pi message line"}  # type -> what it is


class _Tree:
    """Checks the uuid / parentUuid links. The reader keeps lines in file order and never walks the
    tree, so a repeated uuid, a parent that is not in the file (a resumed or trimmed session) or one
    that comes later (a cycle, a reordered file) loses nothing: each is noted, not raised."""

    def __init__(self) -> None:
        self.first: dict[str, int] = {}  # uuid -> line of its first appearance
        self.repeated: list[str] = []
        self.parents: list[tuple[int, str]] = []  # (line, parentUuid) not seen before that line

    def see(self, line: int, obj: dict[str, Any]) -> None:
        uuid, parent = obj.get("uuid"), obj.get("parentUuid")
        if isinstance(parent, str) and parent not in self.first:
            self.parents.append((line, parent))
        if isinstance(uuid, str):
            if uuid in self.first:
                self.repeated.append(f"line {line} repeats uuid {uuid!r} of line {self.first[uuid]}")
            else:
                self.first[uuid] = line

    def notes(self) -> list[str]:
        later = [f"line {n}: parentUuid {p!r} is at line {self.first[p]}" for n, p in self.parents if p in self.first]
        nowhere = [f"line {n}: parentUuid {p!r}" for n, p in self.parents if p not in self.first]
        out = []
        for found, what in ((self.repeated, "repeated uuids"),
                            (later, "parents after their child (a cycle or a reordered file)"),
                            (nowhere, "parents not in this file (a resumed or trimmed session?)")):
            if found:
                more = f" and {len(found) - 5} more" if len(found) > 5 else ""
                out.append(f"{what}, kept in line order: {'; '.join(found[:5])}{more}")
        return out


@dataclass
class _Response:
    """Assistant lines sharing one ``message.id``, merged as they arrive (id/time/source of the first)."""

    slot: int  # index into items
    id: str
    timestamp: str | None
    source: SourceRef
    parts: list[Part] = field(default_factory=list)
    last: _AssistantLine | None = None
    usage_raw: dict[str, Any] | None = None
    stop: str | None = None

    def message(self, thread: str) -> Message:
        assert self.last is not None
        m = self.last.message
        return Message(role="assistant", parts=tuple(self.parts), id=self.id, response_id=m.id,
                       timestamp=self.timestamp, model=m.model, provider="anthropic",
                       stop_reason=_STOP.get(self.stop or "", self.stop), thread=thread, source=self.source,
                       usage=usage(self.usage_raw) if self.usage_raw else None)


class _Threads:
    """Thread names: ``main``, or ``sidechain-N`` for each sidechain root (a sidechain line whose
    parent is absent or on the main thread), numbered in order of appearance."""

    def __init__(self) -> None:
        self.of: dict[str, str] = {}  # uuid -> thread name
        self.roots = 0

    def name(self, uuid: Any, parent: Any, sidechain: Any) -> str:
        if not sidechain:
            name = "main"
        elif parent is not None and self.of.get(parent, "main") != "main":
            name = self.of[parent]
        else:
            self.roots += 1
            name = f"sidechain-{self.roots}"
        if isinstance(uuid, str):
            self.of[uuid] = name
        return name

    def line(self, line: _Line) -> str:
        return self.name(line.uuid, line.parentUuid, line.isSidechain)


def read(path: Path, *, strict: bool = True) -> Transcript:
    file, skipped, notes = path.name, [], []
    items: list[Item] = []
    responses: dict[tuple[str, str], _Response] = {}  # (thread, message.id) -> merged response
    tool_names: dict[str, str] = {}  # tool_use id -> tool name
    pending: dict[str, int] = {}  # thread -> index of a compaction entry awaiting its summary
    threads, left_out, titles = _Threads(), Counter(), []
    session_id: str | None = None
    children: Counter[str] = Counter()  # main-thread parent uuid -> number of children
    tree = _Tree()
    for line, _, obj in iter_jsonl(path, strict=strict, notes=skipped):
        kind = obj.get("type")
        try:
            if kind in _FOREIGN and "uuid" not in obj:
                raise TranscriptError(file, line, f"{_FOREIGN[kind]} in a Claude Code file: the file mixes formats.",
                                      field="type", hint="A transcript holds one agent's lines: split the file, or "
                                                         "load with strict=False to skip this line.")
            session_id = session_id or obj.get("sessionId")
            if kind in ("user", "assistant") and not obj.get("isSidechain") and isinstance(obj.get("parentUuid"), str):
                children[obj["parentUuid"]] += 1
            tree.see(line, obj)
            if kind == "summary" or kind == "custom-title":
                title = obj.get("summary") if kind == "summary" else obj.get("customTitle")
                if not isinstance(title, str):
                    raise bad(file, line, "a title line needs a string", field="summary" if kind == "summary" else "customTitle")
                titles.append(title)
                items.append(Entry("title", str(obj.get("uuid") or f"title:{line}"), {"title": title}, source=SourceRef(file, line)))
            elif kind == "assistant":
                a = check(_AssistantLine, obj, file=file, line=line)
                parts = _parts(a.message.content, file=file, line=line, at="message.content", notes=notes)
                thread = threads.line(a)
                key = (thread, a.message.id or a.uuid)
                resp = responses.get(key)
                if resp is None:
                    resp = responses[key] = _Response(len(items), a.uuid, a.timestamp, SourceRef(file, line))
                    items.append(None)  # type: ignore[arg-type]  # filled just below
                resp.parts += parts
                tool_names.update((p.id, p.name) for p in parts if isinstance(p, ToolCallPart))
                resp.last = a
                resp.usage_raw = obj["message"].get("usage") or resp.usage_raw
                resp.stop = a.message.stop_reason or resp.stop
                items[resp.slot] = resp.message(thread)
            elif kind == "user":
                u = check(_UserLine, obj, file=file, line=line)
                thread = threads.line(u)
                items += _user(u, thread, file=file, line=line, tool_names=tool_names, pending=pending,
                               items=items, notes=notes)
            elif kind == "system" and obj.get("subtype") == "compact_boundary":
                s = check(_SystemLine, obj, file=file, line=line)
                thread = threads.line(s)
                tokens = (s.compactMetadata or {}).get("preTokens")
                pending[thread] = len(items)
                items.append(Entry("compaction", s.uuid, {"summary": "", "first_kept_id": None,
                                                          "tokens_before": tokens, "origin": "recorded"},
                                   s.timestamp, thread, SourceRef(file, line)))
            else:  # registered all the same, so a sidechain hanging off it is not taken for a new root
                if isinstance(obj.get("uuid"), str):
                    threads.name(obj["uuid"], obj.get("parentUuid"), obj.get("isSidechain"))
                left_out[f"{kind}/{obj.get('subtype')}" if kind == "system" else str(kind)] += 1
        except TranscriptError as err:
            if strict:
                raise
            skipped.append(skip_note(err))
    notes += [f"left out {n} '{k}' line(s): UI records, not sent to the model" for k, n in left_out.items()]
    notes += tree.notes()
    notes += [f"compaction at {items[i].source} has no summary line" for i in pending.values()]
    forks = sum(1 for n in children.values() if n > 1)
    if forks:
        notes.append(f"the main thread forks at {forks} point(s) (edits or rewinds); all branches kept in line order")
    first_model = next((m.model for m in items if isinstance(m, Message) and m.model and m.model != "<synthetic>"), None)
    conv = Conversation(id=session_id or path.stem, items=tuple(items), title=titles[-1] if titles else None,
                        model=first_model, provider="anthropic", notes=tuple(skipped + notes))
    return Transcript(format=NAME, file=file, conversations=(conv,), notes=tuple(skipped))


def _user(u: _UserLine, thread: str, *, file: str, line: int, tool_names: dict[str, str],
          pending: dict[str, int], items: list[Item], notes: list[str]) -> list[Item]:
    """One user line → messages (tool results split out, in order), or a compaction summary."""
    src, content = SourceRef(file, line), u.message.content
    if u.isCompactSummary:
        text = "\n".join(p.text for p in _parts(content, file=file, line=line, at="message.content", notes=notes)
                         if isinstance(p, TextPart))
        slot = pending.pop(thread, None)
        if slot is not None:
            boundary = items[slot]
            assert isinstance(boundary, Entry)
            items[slot] = replace(boundary, data={**boundary.data, "summary": text})
            return []
        return [Entry("compaction", u.uuid, {"summary": text, "first_kept_id": None, "tokens_before": None,
                                             "origin": "recorded"}, u.timestamp, thread, src)]
    origin = "meta" if u.isMeta or u.isVisibleInTranscriptOnly else None
    blocks = [content] if isinstance(content, str) else content
    out: list[Message] = []
    run: list[Part] = []

    def new_id() -> str:
        return u.uuid if not out else f"{u.uuid}:{len(out)}"

    def flush() -> None:
        if run:
            out.append(Message(role="user", parts=tuple(run), id=new_id(), timestamp=u.timestamp,
                               thread=thread, origin=origin, source=src))
            run.clear()

    for i, block in enumerate(blocks):
        if isinstance(block, dict) and block.get("type") == "tool_result":
            flush()
            r = check(_ToolResult, block, file=file, line=line, at=f"message.content[{i}]")
            parts = _parts(r.content, file=file, line=line, at=f"message.content[{i}].content", notes=notes)
            out.append(Message(role="tool", parts=tuple(parts), id=new_id(), tool_call_id=r.tool_use_id,
                               tool_name=tool_names.get(r.tool_use_id), is_error=bool(r.is_error),
                               timestamp=u.timestamp, thread=thread, origin=origin, source=src))
        else:
            run += _parts(block if isinstance(block, str) else [block], file=file, line=line,
                          at="message.content", notes=notes, start=i)
    if not out and not run:
        run.append(TextPart(""))  # an empty user line is still a message
    flush()
    return list(out)
