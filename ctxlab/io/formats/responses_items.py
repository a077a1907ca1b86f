"""OpenAI Responses API items → messages: shared by the ``openai-responses`` and ``codex`` readers.

Item shapes, from the Responses API reference (https://platform.openai.com/docs/api-reference/responses;
the same types in openai-python ``src/openai/types/responses/``: ``response_input_item_param.py``,
``response_reasoning_item.py``, ``response_usage.py``): ``message`` (``role`` user/system/
developer/assistant; ``content`` a string or parts ``input_text`` / ``output_text`` / ``refusal`` /
``input_image``; ``type`` may be left out), ``reasoning`` (``summary`` of ``summary_text``, optional
``content`` of ``reasoning_text``, ``encrypted_content``), ``function_call`` (``call_id``, ``name``,
``arguments`` — a JSON string), ``function_call_output`` (``call_id``, ``output`` string or parts),
``custom_tool_call`` (``input``, free text) / ``custom_tool_call_output``, ``local_shell_call``
(``action``) / ``local_shell_call_output`` (its ``id`` names the call).

Mapping: the model-output items of one response (assistant message, reasoning, calls) become ONE
``assistant`` message (id ``f"{conversation}:{index}"`` of its first item); each ``*_output`` item
becomes a ``tool`` message. Reasoning becomes a ThinkingPart (its summary text, or its reasoning
text; ``encrypted_content`` kept as the signature; ``redacted`` when only the encrypted blob is
there). A ``*_call`` item of a hosted tool without a ``call_id`` (web search, file search, code
interpreter, MCP, image generation) was run by OpenAI and has no output item: kept as JSON text in
the assistant message, noted. System/developer messages before the first other item become
``Conversation.system``; a later one becomes a ``user`` message with ``origin="system"`` (as the
OpenAI chat reader does). Other item types (``item_reference``, ...) are left out, counted in the notes.

Usage (a response's ``usage``, or Codex's token counts): ``input_tokens`` INCLUDES the cached tokens
(``input_tokens_details.cached_tokens``, Codex: ``cached_input_tokens``) and the tokens written to the cache
(GPT-5.6 on: ``input_tokens_details.cache_write_tokens``, Codex: ``cache_write_input_tokens``), so ``uncached =
input - cached - written`` (:func:`usage` gives the sources); ``output_tokens`` includes the reasoning tokens.
Plumbing for chapter 02.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from pydantic import BaseModel

from ctxlab.messages import (Conversation, Entry, ImagePart, Item, Message, Part, SourceRef, TextPart, ThinkingPart,
                        ToolCallPart, ToolSpec, Usage, canonical_arguments)
from ctxlab.io.formats import TokenCount, bad, check, unknown_block_text


class _Message(BaseModel):
    role: Literal["user", "assistant", "system", "developer"]
    content: str | list[Any]


class _Summary(BaseModel):
    text: str


class _Reasoning(BaseModel):
    summary: list[_Summary] = []
    content: list[_Summary] | None = None
    encrypted_content: str | None = None


class _Call(BaseModel):
    call_id: str
    name: str
    arguments: str | dict[str, Any] | None = None  # function_call
    input: str | None = None  # custom_tool_call


class _Output(BaseModel):
    output: Any = None


class _InputDetails(BaseModel):
    cached_tokens: TokenCount = 0
    cache_write_tokens: TokenCount | None = None  # GPT-5.6 on; a required int in the SDK, absent from older logs


class _Usage(BaseModel):
    input_tokens: TokenCount = 0
    output_tokens: TokenCount = 0
    cached_input_tokens: TokenCount | None = None  # Codex's name
    cache_write_input_tokens: TokenCount | None = None  # Codex's name for the write (rollouts from ~0.148)
    cache_write_tokens: TokenCount | None = None  # the same, as some builds and fixtures write it
    input_tokens_details: _InputDetails | None = None  # the Responses API's {"cached_tokens": N, ...}


_WRITE_NAMES = ("cache_write_input_tokens", "cache_write_tokens")


def usage(raw: Any, *, file: str, line: int | None, at: str = "usage") -> Usage:
    """Responses usage (or Codex ``TokenUsage``) → neutral fields. Chapter 04.

    Responses API (openai-python ``src/openai/types/responses/response_usage.py`` @ e43b422, 2026-08-21):
    ``input_tokens`` ("The number of input tokens."), ``input_tokens_details.cached_tokens`` ("The number of
    tokens that were retrieved from the cache.") and ``input_tokens_details.cache_write_tokens`` ("The number of
    input tokens that were written to the cache."). Both are part of ``input_tokens`` (OpenAI's prompt-caching
    guide: "Cache-write pricing is not an additive fee: input tokens use the uncached-input, cached-input, or
    cache-write rate."): ``{"input_tokens": 2600, "input_tokens_details": {"cached_tokens": 2000,
    "cache_write_tokens": 400}, "output_tokens": 50}`` → ``Usage(200, 2000, 400, 50)``.

    Codex ``token_count`` usage: ``cached_input_tokens`` and, from the GPT-5.6 era, ``cache_write_input_tokens``
    (the rollout line quoted in ccusage/ccusage#1617, @openai/codex-sdk 0.148.0, 2026-08-20; openai/codex#32479,
    2026-07-11, reported the field dropped by 0.144.1); ``cache_write_tokens`` is read as the same. Raises
    TranscriptError naming the field when the cached or written tokens exceed the input they are part of."""
    u = check(_Usage, raw, file=file, line=line, at=at)
    cached = u.cached_input_tokens if u.cached_input_tokens is not None else (
        u.input_tokens_details.cached_tokens if u.input_tokens_details else 0)
    if cached > u.input_tokens:
        raise bad(file, line, f"{cached} cached tokens exceed the {u.input_tokens} input tokens they are part of",
                  field=at)
    name = next((n for n in _WRITE_NAMES if getattr(u, n) is not None), None)
    written = getattr(u, name) if name else (u.input_tokens_details.cache_write_tokens or 0
                                             if u.input_tokens_details else 0)
    if written > u.input_tokens - cached:
        raise bad(file, line, f"{written} cache-write tokens exceed the {u.input_tokens - cached} input tokens not "
                              "read from the cache",
                  field=f"{at}.{name}" if name else f"{at}.input_tokens_details.cache_write_tokens")
    return Usage(uncached_input_tokens=u.input_tokens - cached - written, cache_read_tokens=cached,
                 cache_write_tokens=written, output_tokens=u.output_tokens, raw=dict(raw))


def content_parts(content: str | list[Any] | None, notes: list[str], where: str) -> list[Part]:
    """Message or output content (a string or parts) → our parts; unknown parts kept as JSON text, noted."""
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [TextPart(content)]
    parts: list[Part] = []
    for item in content:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind in ("input_text", "output_text", "text") and isinstance(item.get("text"), str):
            parts.append(TextPart(item["text"]))
        elif kind == "refusal" and isinstance(item.get("refusal"), str):
            parts.append(TextPart(item["refusal"]))
        elif kind == "input_image":
            url = str(item.get("image_url") or "")
            media = re.match(r"data:([^;,]+);base64,", url)
            parts.append(ImagePart(media_type=media.group(1) if media else "image/png",
                                   data_chars=len(url) - media.end() if media else 0))
        else:
            parts.append(TextPart(unknown_block_text(item)))
            notes.append(f"{where}: content part of type {kind!r} kept as its JSON text")
    return parts


def tool_specs(raw: Any, notes: list[str]) -> tuple[ToolSpec, ...]:
    """Responses ``tools`` (flat: ``{"type": "function", "name", "description", "parameters"}``) → ToolSpecs;
    built-in tools (``{"type": "web_search"}``, no name) are defined by OpenAI: noted, not kept."""
    specs = []
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            specs.append(ToolSpec(item["name"], item.get("description") or "",
                                  item.get("parameters") or {"type": "object", "properties": {}}))
        else:
            kind = item.get("type") if isinstance(item, dict) else type(item).__name__
            notes.append(f"built-in tool {kind!r} has no definition in the file: left out of the tools")
    return tuple(specs)


@dataclass
class _Response:
    """One model response being built from model-output items: its slot in ``items`` and its fields."""

    slot: int
    id: str
    source: SourceRef
    timestamp: str | None
    model: str | None
    parts: list[Part] = field(default_factory=list)
    usage: Usage | None = None
    fields: dict[str, Any] = field(default_factory=dict)  # response_id, stop_reason


class ItemReader:
    """Responses items → messages, one item at a time (this reader and the Codex reader use it).

    ``add(item, index=..., line=...)`` raises :class:`TranscriptError` on a bad item. The model-output
    items of one response become one assistant message; the response ends at a user message, at
    ``close()``, and (when ``end_on_output``) at a tool output. ``set_usage`` gives usage to the
    newest response without any; ``pending_usage`` is taken by the next response that starts (for
    logs that write a call's usage before its items). ``user_origin(text)`` may mark harness-made
    user messages.
    """

    def __init__(self, conv_id: str, file: str, *, model: str | None = None, provider: str | None = "openai",
                 user_origin: Callable[[str], str | None] | None = None, end_on_output: bool = True) -> None:
        self.conv_id, self.file, self.model, self.provider = conv_id, file, model, provider
        self.user_origin, self.end_on_output = user_origin, end_on_output
        self.items: list[Item] = []
        self.system: list[str] = []
        self.notes: list[str] = []
        self.left_out: Counter[str] = Counter()
        self.names: dict[str, str] = {}  # call id -> tool name
        self.pending_usage: Usage | None = None
        self._open: _Response | None = None
        self._unbilled: _Response | None = None  # the newest response without usage
        self._started = False

    def _render(self, r: _Response) -> None:
        self.items[r.slot] = Message(role="assistant", parts=tuple(r.parts), id=r.id, timestamp=r.timestamp,
                                     model=r.model, provider=self.provider, source=r.source, usage=r.usage, **r.fields)

    def _assistant(self, parts: list[Part], index: int, line: int | None, timestamp: str | None) -> None:
        self._started = True
        if self._open is None:
            self._open = _Response(len(self.items), f"{self.conv_id}:{index}", SourceRef(self.file, line or 0),
                                   timestamp, self.model, usage=self.pending_usage)
            self.items.append(None)  # type: ignore[arg-type]  # rendered just below
            self._unbilled = None if self.pending_usage else self._open
            self.pending_usage = None
        self._open.parts += parts
        self.names.update((p.id, p.name) for p in parts if isinstance(p, ToolCallPart))
        self._render(self._open)

    def close(self) -> None:
        """End the model response being built: the next model-output item starts a new one."""
        self._open = None

    def set_usage(self, usage: Usage, **fields: Any) -> bool:
        """Usage (and e.g. ``response_id``, ``stop_reason``) for the newest response without usage;
        ends it. False when every response already has usage (nothing to attach to)."""
        self.close()
        r, self._unbilled = self._unbilled, None
        if r is None:
            return False
        r.usage, r.fields = usage, {**r.fields, **fields}
        self._render(r)
        return True

    def add_entry(self, entry: Entry) -> None:
        self.close()
        self.items.append(entry)

    def add(self, raw: Any, *, index: int, line: int | None, at: str, timestamp: str | None = None) -> None:
        """One item (a dict) → appended to :attr:`items` (or :attr:`system`); raises TranscriptError."""
        file = self.file
        if not isinstance(raw, dict):
            raise bad(file, line, f"expected an item object, got {type(raw).__name__}", field=at)
        kind = raw.get("type") or ("message" if "role" in raw else None)
        if not isinstance(kind, str):
            raise bad(file, line, "an item needs a 'type' (or a 'role' for a message)", field=f"{at}.type")
        where = f"line {line}" if line else at
        if kind == "message":
            msg = check(_Message, raw, file=file, line=line, at=at)
            parts = content_parts(msg.content, self.notes, where)
            if msg.role == "assistant":
                self._assistant(parts, index, line, timestamp)
                return
            self.close()
            text = "\n".join(p.text for p in parts if isinstance(p, TextPart))
            if msg.role in ("system", "developer") and not self._started:
                self.system.append(text)
                return
            origin = "system" if msg.role in ("system", "developer") else (
                self.user_origin(text) if self.user_origin else None)
            if msg.role != "user":
                self.notes.append(f"{where}: a {msg.role} message after the conversation started is kept as a "
                                  "user message with origin 'system'")
            self._started = True
            self.items.append(Message(role="user", parts=tuple(parts), id=f"{self.conv_id}:{index}", origin=origin,
                                      timestamp=timestamp, source=SourceRef(file, line or 0)))
        elif kind == "reasoning":
            r = check(_Reasoning, raw, file=file, line=line, at=at)
            text = "\n\n".join(s.text for s in r.summary) or "\n\n".join(s.text for s in r.content or [])
            self._assistant([ThinkingPart(text, r.encrypted_content, redacted=not text and bool(r.encrypted_content))],
                            index, line, timestamp)
        elif kind in ("function_call", "custom_tool_call"):
            c = check(_Call, raw, file=file, line=line, at=at)
            arguments = c.input if kind == "custom_tool_call" else c.arguments
            self._assistant([ToolCallPart(c.call_id, c.name, canonical_arguments(arguments or ""))], index, line, timestamp)
        elif kind.endswith("_call"):  # local_shell_call, computer_call, web_search_call, mcp_call, ...
            call_id = raw.get("call_id")
            rest = {k: v for k, v in raw.items() if k not in ("type", "id", "call_id", "status")}
            if isinstance(call_id, str):
                name = raw.get("name") if isinstance(raw.get("name"), str) else kind.removesuffix("_call")
                args = raw.get("arguments", raw.get("action", rest))
                self._assistant([ToolCallPart(call_id, name, canonical_arguments(args))], index, line, timestamp)
            else:  # run by OpenAI itself: no output item will answer it
                self._assistant([TextPart(unknown_block_text(raw))], index, line, timestamp)
                self.notes.append(f"{where}: hosted {kind!r} (run by the provider, no call_id) kept as its JSON text")
        elif kind.endswith("_call_output"):
            call_id = raw.get("call_id", raw.get("id"))  # local_shell_call_output names its call by id
            if not isinstance(call_id, str):
                raise bad(file, line, f"a {kind} item must name the call it answers", field=f"{at}.call_id")
            out = check(_Output, raw, file=file, line=line, at=at).output
            parts = (content_parts(out, self.notes, where) if isinstance(out, (str, list)) or out is None
                     else [TextPart(json.dumps(out, ensure_ascii=False))])
            if self.end_on_output:
                self.close()
            self._started = True
            self.items.append(Message(role="tool", parts=tuple(parts), id=f"{self.conv_id}:{index}",
                                      tool_call_id=call_id, tool_name=self.names.get(call_id),
                                      timestamp=timestamp, source=SourceRef(file, line or 0)))
        else:
            self.left_out[kind] += 1

    def conversation(self, *, tools: tuple[ToolSpec, ...] = (), instructions: tuple[str, ...] = (),
                     extra_notes: list[str] | None = None, title: str | None = None) -> Conversation:
        notes = (extra_notes or []) + self.notes + [f"left out {n} '{k}' item(s): not modelled"
                                                    for k, n in self.left_out.items()]
        first_model = next((m.model for m in self.items if isinstance(m, Message) and m.model), self.model)
        return Conversation(id=self.conv_id, items=tuple(self.items), system=instructions + tuple(self.system),
                            tools=tools, title=title, model=first_model, provider=self.provider, notes=tuple(notes))


def response_stop_reason(response: dict[str, Any], calls: bool) -> str | None:
    """A Responses API response's status → a normalised stop reason: ``{"status": "completed"}`` → ``"stop"``."""
    if response.get("status") == "incomplete":
        reason = (response.get("incomplete_details") or {}).get("reason")
        return "length" if reason == "max_output_tokens" else "aborted"
    return "tool_use" if calls else ("stop" if response.get("status") == "completed" else None)
