"""The lines of a Claude Code transcript → messages: the models, content blocks, split responses.

Helpers of :mod:`ctxlab.io.formats.claude_code` (its docstring says what maps to what and cites the
sources). :class:`LineReader` holds the state of one read: the items so far, the responses being
merged by ``message.id``, the compaction waiting for its summary line, and what the notes count.
Plumbing for chapter 02.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel

from ctxlab.base.errors import TranscriptError
from ctxlab.messages import (Entry, ImagePart, Item, Message, Part, SourceRef, TextPart, ThinkingPart, ToolCallPart,
                        Usage, canonical_arguments)
from ctxlab.io.formats import LeftOut, TokenCount, bad, check, unknown_block_text
from ctxlab.io.formats.claude_code_tree import Threads

META_ORIGIN = "system"  # isMeta lines: sent to the model, written by Claude Code (not "meta": never sent)
_STOP = {"end_turn": "stop", "tool_use": "tool_use", "max_tokens": "length", "stop_sequence": "stop"}
TITLES = {"summary": "summary", "custom-title": "customTitle", "ai-title": "aiTitle"}
"""Claude Code's title line types → the field holding the title (used by the reader; chapter 02)."""


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
    isMeta: bool | None = False
    isCompactSummary: bool | None = False
    isVisibleInTranscriptOnly: bool | None = False


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


def usage(raw: dict[str, Any]) -> Usage:
    """Anthropic usage → neutral fields. ``{"input_tokens": 0, "cache_creation_input_tokens": 380,
    "cache_read_input_tokens": 4480}`` → ``Usage(0, 4480, 380)`` (total input 4860)."""
    u = _Usage.model_validate(raw)
    return Usage(uncached_input_tokens=u.input_tokens or 0, cache_read_tokens=u.cache_read_input_tokens or 0,
                 cache_write_tokens=u.cache_creation_input_tokens or 0, output_tokens=u.output_tokens or 0,
                 cache_write_1h_tokens=(u.cache_creation.ephemeral_1h_input_tokens or 0) if u.cache_creation else 0,
                 raw=raw)


def block_parts(blocks: str | list[Any] | None, *, file: str, line: int, at: str, notes: list[str],
                start: int = 0) -> list[Part]:
    """Anthropic content blocks other than tool_result → parts (tool_use included), in order.

    ``[{"type": "text", "text": "hi"}]`` → ``[TextPart("hi")]``; a string is one text part. ``start``
    numbers the blocks in ``at`` (``message.content[3]``) for errors, which are TranscriptErrors naming
    file, line and field. Shared with the Anthropic Messages reader. Plumbing for chapter 02.
    """
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


class LineReader:
    """The state of one read: items so far and what the notes will count. Each method reads one
    line (a dict) and raises :class:`TranscriptError` on a bad one."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.items: list[Item] = []
        self.notes: list[str] = []
        self.responses: dict[tuple[str, str], _Response] = {}  # (thread, message.id) -> merged response
        self.tool_names: dict[str, str] = {}  # tool_use id -> tool name
        self.pending: dict[str, int] = {}  # thread -> index of a compaction entry awaiting its summary
        self.left_out = LeftOut()  # lines never sent, by kind, with the first line of each
        self.meta = 0  # isMeta / isVisibleInTranscriptOnly user lines read as sent
        self.agent_lines: Counter[str] = Counter()  # sub-agent thread -> messages read from progress copies

    def assistant(self, obj: dict[str, Any], thread: str, line: int) -> None:
        """One assistant line: its blocks join the response of its ``message.id`` (a new one if first)."""
        a = check(_AssistantLine, obj, file=self.file, line=line)
        parts = block_parts(a.message.content, file=self.file, line=line, at="message.content", notes=self.notes)
        key = (thread, a.message.id or a.uuid)
        resp = self.responses.get(key)
        if resp is None:
            resp = self.responses[key] = _Response(len(self.items), a.uuid, a.timestamp, SourceRef(self.file, line))
            self.items.append(None)  # type: ignore[arg-type]  # filled just below
        resp.parts += parts
        self.tool_names.update((p.id, p.name) for p in parts if isinstance(p, ToolCallPart))
        resp.last = a
        resp.usage_raw = obj["message"].get("usage") or resp.usage_raw
        resp.stop = a.message.stop_reason or resp.stop
        self.items[resp.slot] = resp.message(thread)

    def boundary(self, obj: dict[str, Any], thread: str, line: int) -> None:
        """A ``compact_boundary`` line: a recorded compaction entry, its summary filled by the next summary line."""
        s = check(_SystemLine, obj, file=self.file, line=line)
        meta = s.compactMetadata or {}
        self.pending[thread] = len(self.items)
        data = {"summary": "", "first_kept_id": None, "tokens_before": meta.get("preTokens"), "origin": "recorded"}
        self.items.append(Entry("compaction", s.uuid, data, s.timestamp, thread, SourceRef(self.file, line)))
        self.notes.append(f"line {line}: compaction ({meta.get('trigger') or 'trigger not recorded'}, "
                          f"{meta.get('preTokens') if meta.get('preTokens') is not None else '?'} tokens before it): "
                          "nothing from before it is sent again but its summary")

    def user(self, obj: dict[str, Any], thread: str, line: int) -> None:
        """One user line → messages (tool results split out, in order), or a compaction summary."""
        u = check(_UserLine, obj, file=self.file, line=line)
        src, content, file = SourceRef(self.file, line), u.message.content, self.file
        if u.isCompactSummary:
            text = "\n".join(p.text for p in block_parts(content, file=file, line=line, at="message.content",
                                                    notes=self.notes) if isinstance(p, TextPart))
            slot = self.pending.pop(thread, None)
            if slot is not None:
                entry = self.items[slot]
                assert isinstance(entry, Entry)
                self.items[slot] = replace(entry, data={**entry.data, "summary": text})
            else:
                self.items.append(Entry("compaction", u.uuid, {"summary": text, "first_kept_id": None,
                                                               "tokens_before": None, "origin": "recorded"},
                                        u.timestamp, thread, src))
            return
        origin = META_ORIGIN if u.isMeta or u.isVisibleInTranscriptOnly else None
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
                parts = block_parts(r.content, file=file, line=line, at=f"message.content[{i}].content", notes=self.notes)
                out.append(Message(role="tool", parts=tuple(parts), id=new_id(), tool_call_id=r.tool_use_id,
                                   tool_name=self.tool_names.get(r.tool_use_id), is_error=bool(r.is_error),
                                   timestamp=u.timestamp, thread=thread, source=src))
            else:
                run += block_parts(block if isinstance(block, str) else [block], file=file, line=line,
                              at="message.content", notes=self.notes, start=i)
        if not out and not run:
            run.append(TextPart(""))  # an empty user line is still a message
        flush()
        self.meta += sum(1 for m in out if m.origin == META_ORIGIN)
        self.items += out

    def progress(self, obj: dict[str, Any], threads: Threads, line: int, seen: tuple[set[str], set[str]]) -> None:
        """A ``progress`` line: an ``agent_progress`` copy of a sub-agent message is read into its thread
        (once: ``seen`` holds the uuids of the lines read and of the copies read)."""
        data = obj.get("data") if isinstance(obj.get("data"), dict) else {}
        inner = data.get("message")
        if data.get("type") != "agent_progress" or not isinstance(inner, dict) or inner.get("type") not in (
                "user", "assistant"):
            self.left_out.add(f"progress/{data.get('type')}", line)
            return
        agent = data.get("agentId")
        if not isinstance(agent, str) or not agent:
            raise bad(self.file, line, "an agent_progress line needs the sub-agent's id", field="data.agentId")
        lines, copies = seen
        if inner.get("uuid") in lines or inner.get("uuid") in copies:  # already read
            self.left_out["progress/agent_progress (a copy of a message already read)"] += 1
            return
        if isinstance(inner.get("uuid"), str):
            copies.add(inner["uuid"])
        thread = threads.agent(agent)
        self.agent_lines[thread] += 1
        copy = {**inner, "isSidechain": True, "parentUuid": None}
        try:
            (self.assistant if inner["type"] == "assistant" else self.user)(copy, thread, line)
        except TranscriptError as err:  # name the field where it sits in this line
            raise TranscriptError(err.file, err.line, err.problem, hint=err.hint,
                                  field=f"data.message.{err.field}" if err.field else "data.message") from None


