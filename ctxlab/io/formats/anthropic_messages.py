"""Reader for Anthropic Messages API transcripts: a JSON list of messages, or a whole request body.

Shapes, from the Messages API reference (https://docs.anthropic.com/en/api/messages; the same
types in anthropic-sdk-python ``src/anthropic/types/message_create_params.py`` and the
``*_block_param.py`` files beside it):

* a JSON list of ``{"role": "user" | "assistant", "content": str | [blocks]}``;
* a request body ``{"model", "max_tokens", "system": str | [text blocks], "tools": [{"name",
  "description", "input_schema"}], "messages": [...]}``.

Blocks: ``text``, ``image`` (``source`` base64 or url), ``tool_use`` (``id``, ``name``, ``input``),
``tool_result`` (``tool_use_id``, ``content`` str or blocks, ``is_error``), ``thinking``
(``thinking``, ``signature``), ``redacted_thinking`` (``data``); any other block (document,
server-tool blocks, ...) is kept as its JSON text, noted.

Mapping: a user message's ``tool_result`` blocks become one ``tool`` message each and its other
blocks a ``user`` message, in their order (as the Claude Code reader does); ids are
``f"{conversation}:{index}"``, ``:1``, ``:2`` ... for the later pieces. An assistant entry saved
from a response object (``"type": "message"`` with ``id``, ``model``, ``stop_reason``, ``usage``)
keeps them; usage is converted as :func:`ctxlab.io.formats.claude_code.usage` does (``input_tokens``
is the uncached part). Server tools (no ``input_schema``, e.g. ``web_search``) are defined by
Anthropic, not in the request: left out of ``tools``, noted. Plumbing for chapter 02.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Literal

from pydantic import BaseModel

from ctxlab.base.errors import TranscriptError
from ctxlab.messages import Conversation, Message, Part, SourceRef, TextPart, ToolSpec, Transcript
from ctxlab.io.formats import TokenCount, bad, check, load_json, skip_note
from ctxlab.io.formats.claude_code import block_parts  # the same block shapes as Claude Code lines
from ctxlab.io.formats.claude_code import usage as anthropic_usage
from ctxlab.io.formats.openai_chat import SWE_AGENT, TAU_BENCH

NAME = "anthropic-messages"
_STOP = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_use", "max_tokens": "length"}
# what no OpenAI chat file holds: Anthropic block types, a tool schema key, a top-level system prompt
MARKERS = re.compile(r'"type"\s*:\s*"(tool_use|tool_result|thinking|redacted_thinking)"|"(input_schema|tool_use_id)"\s*:')
_SYSTEM_KEY = re.compile(r'"system"\s*:\s*["\[]')
BLOCK_TYPES = {"tool_use", "tool_result", "thinking", "redacted_thinking"}


class _Message(BaseModel):
    role: Literal["user", "assistant"]
    content: str | list[Any]
    id: str | None = None
    model: str | None = None
    stop_reason: str | None = None
    usage: dict[str, Any] | None = None


class _Usage(BaseModel):  # checked here so a damaged count names its line (then converted as Claude Code's)
    input_tokens: TokenCount | None = 0
    cache_creation_input_tokens: TokenCount | None = 0
    cache_read_input_tokens: TokenCount | None = 0
    output_tokens: TokenCount | None = 0


class _ToolResult(BaseModel):
    tool_use_id: str
    content: str | list[Any] | None = None
    is_error: bool | None = False


class _Tool(BaseModel):
    name: str
    description: str | None = None
    input_schema: dict[str, Any] | None = None
    type: str | None = None


class _Text(BaseModel):
    text: str


def sniff(path: Path, head: str) -> bool:
    text = head.lstrip()
    if SWE_AGENT.sniff(path, head) or TAU_BENCH.sniff(path, head):  # read by openai_chat, detected after us
        return False
    if text.startswith("["):
        return (re.match(r'\[\s*\{', text) is not None and re.search(r'"role"\s*:\s*"(user|assistant)"', text) is not None
                and MARKERS.search(text) is not None)
    return (text.startswith("{") and re.search(r'"messages"\s*:\s*\[', text) is not None
            and (MARKERS.search(text) is not None or _SYSTEM_KEY.search(text) is not None))


def looks_anthropic(obj: dict[str, Any]) -> bool:
    """True when a ``{"messages": [...]}`` object is in Anthropic shape rather than OpenAI chat shape:
    a top-level ``system``, a tool with ``input_schema``, or an Anthropic-only content block."""
    if "system" in obj or any(isinstance(t, dict) and "input_schema" in t for t in obj.get("tools") or []):
        return True
    return any(isinstance(b, dict) and b.get("type") in BLOCK_TYPES
               for m in obj.get("messages") or [] if isinstance(m, dict) and isinstance(m.get("content"), list)
               for b in m["content"])


def system_blocks(raw: Any, *, file: str, line: int | None, at: str = "system") -> tuple[str, ...]:
    """``system``: a string → one block; a list of text blocks → their texts. ``None`` → ``()``."""
    if raw is None or raw == "":
        return ()
    if isinstance(raw, str):
        return (raw,)
    if not isinstance(raw, list):
        raise bad(file, line, f"system must be a string or a list of text blocks, got {type(raw).__name__}", field=at)
    return tuple(check(_Text, b, file=file, line=line, at=f"{at}[{i}]").text for i, b in enumerate(raw))


def tool_specs(raw: Any, *, file: str, line: int | None, notes: list[str], at: str = "tools") -> tuple[ToolSpec, ...]:
    """``tools`` → ToolSpecs (``input_schema`` becomes ``parameters``); server tools are noted, not kept."""
    specs = []
    for i, item in enumerate(raw if isinstance(raw, list) else []):
        tool = check(_Tool, item, file=file, line=line, at=f"{at}[{i}]")
        if tool.input_schema is None:
            notes.append(f"tool {tool.name!r} (type {tool.type!r}) is a server tool defined by Anthropic: "
                         "left out of the tools (its definition is not in the file)")
            continue
        specs.append(ToolSpec(tool.name, tool.description or "", tool.input_schema))
    return tuple(specs)


def _user(msg: _Message, base: dict[str, Any], *, file: str, line: int | None, at: str,
          names: dict[str, str], notes: list[str]) -> list[Message]:
    """One user message → tool messages (one per tool_result) and user messages, in block order."""
    blocks = [msg.content] if isinstance(msg.content, str) else msg.content
    out: list[Message] = []
    run: list[Part] = []

    def new_id() -> str:
        return base["id"] if not out else f"{base['id']}:{len(out)}"

    def flush() -> None:
        if run:
            out.append(Message(role="user", parts=tuple(run), **{**base, "id": new_id()}))
            run.clear()

    for i, block in enumerate(blocks):
        where = f"{at}.content[{i}]"
        if isinstance(block, dict) and block.get("type") == "tool_result":
            flush()
            r = check(_ToolResult, block, file=file, line=line, at=where)
            parts = block_parts(r.content, file=file, line=line or 0, at=f"{where}.content", notes=notes)
            out.append(Message(role="tool", parts=tuple(parts), tool_call_id=r.tool_use_id,
                               tool_name=names.get(r.tool_use_id), is_error=bool(r.is_error),
                               **{**base, "id": new_id()}))
        elif isinstance(block, (str, dict)):
            run += block_parts(block if isinstance(block, str) else [block], file=file, line=line or 0,
                               at=f"{at}.content", notes=notes, start=i)
        else:
            raise bad(file, line, f"a content block must be an object, got {type(block).__name__}", field=where)
    if not out and not run:
        run.append(TextPart(""))  # an empty user message is still a message
    flush()
    return out


def conversation(conv_id: str, raw: list[Any], *, file: str, line_of: Callable[[Any], int | None], strict: bool,
                 notes: list[str], at: str = "messages", fallback_line: int | None = None,
                 system: tuple[str, ...] = (), tools: tuple[ToolSpec, ...] = (), model: str | None = None,
                 conv_notes: tuple[str, ...] = ()) -> Conversation:
    """An Anthropic message list → a :class:`Conversation`; a bad message raises (strict) or is skipped
    with a note in both ``notes`` (the transcript's) and the conversation's notes."""
    items: list[Message] = []
    own_notes: list[str] = list(conv_notes)
    names: dict[str, str] = {}  # tool_use id -> tool name
    for index, obj in enumerate(raw):
        line = line_of(obj) or fallback_line
        where = f"{at}[{index}]"
        base: dict[str, Any] = dict(id=f"{conv_id}:{index}", source=SourceRef(file, line or 0))
        try:
            if not isinstance(obj, dict):
                raise bad(file, line, f"expected a message object, got {type(obj).__name__}", field=where)
            msg = check(_Message, obj, file=file, line=line, at=where)
            if msg.role == "user":
                items += _user(msg, base, file=file, line=line, at=where, names=names, notes=own_notes)
                continue
            blocks = [{"type": "text", "text": msg.content}] if isinstance(msg.content, str) else msg.content
            parts = block_parts(blocks, file=file, line=line or 0, at=f"{where}.content", notes=own_notes)
            if msg.usage:
                check(_Usage, msg.usage, file=file, line=line, at=f"{where}.usage")
            usage = anthropic_usage(msg.usage) if msg.usage else None
        except TranscriptError as err:
            if strict:
                raise
            notes.append(skip_note(err))
            own_notes.append(skip_note(err))
            continue
        names.update((p.id, p.name) for p in parts if p.type == "tool_call")
        items.append(Message(role="assistant", parts=tuple(parts), response_id=msg.id, model=msg.model or model,
                             provider="anthropic", stop_reason=_STOP.get(msg.stop_reason or "", msg.stop_reason),
                             usage=usage, **base))
    first_model = model or next((m.model for m in items if m.model), None)
    return Conversation(id=conv_id, items=tuple(items), system=system, tools=tools, model=first_model,
                        provider="anthropic", notes=tuple(own_notes))


def read(path: Path, *, strict: bool = True) -> Transcript:
    data, line_of = load_json(path)
    notes: list[str] = []
    head_notes: list[str] = []
    system: tuple[str, ...] = ()
    tools: tuple[ToolSpec, ...] = ()
    model = None
    body = isinstance(data, dict)
    if body:
        line = line_of(data)
        system = system_blocks(data.get("system"), file=path.name, line=line)
        tools = tool_specs(data.get("tools"), file=path.name, line=line, notes=head_notes)
        model = data.get("model") if isinstance(data.get("model"), str) else None
        data = data.get("messages")
    if not isinstance(data, list):
        raise TranscriptError(path.name, 1, "expected a JSON list of Anthropic messages or a request body "
                              "{\"system\": ..., \"messages\": [...]}.", field="messages",
                              hint="Each message is {\"role\": \"user\" | \"assistant\", \"content\": ...}.")
    conv = conversation(path.stem, data, file=path.name, line_of=line_of, strict=strict, notes=notes,
                        at="messages" if body else "", system=system, tools=tools, model=model,
                        conv_notes=tuple(head_notes))
    return Transcript(format=NAME, file=path.name, conversations=(conv,), notes=tuple(notes))
