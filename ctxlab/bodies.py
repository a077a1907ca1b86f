"""Request bodies: a context as the dict an engineer would ``json.dumps`` and send.

Three APIs, three shapes of the same context:

* :func:`to_anthropic_body` — the Messages API: tools, a system list, and messages that alternate
  user / assistant; a turn's tool results share one user message, first in it;
  ``cache_control`` breakpoints where an agent puts them;
* :func:`to_openai_body` — chat completions: the system prompt as the first message, each tool
  result a ``tool`` message right after its call, thinking not sent;
* :func:`to_responses_body` — the Responses API: ``instructions`` and a list of ``input`` items
  (``message``, ``function_call``, ``function_call_output``, ``reasoning``).

Each first passes the messages through :func:`ctxlab.sendable.sendable` (the declared rules that
turn a recorded history into one the API accepts); whether it does accept is judged apart, by the
oracle in ``ctxlab/wire/`` written from the providers' documentation. :func:`wire_text` is the bytes
a block is sent as: keys in the order the body has them (ctxlab's own keys in a fixed order, a tool's
schema and a call's arguments as recorded), so the cache simulator hashes what is sent. Images are
stood in for by their size. Taught in chapter 04.
"""

from __future__ import annotations

import json
from typing import Any

from ctxlab.base.json_text import loads
from ctxlab.context import Context
from ctxlab.messages import ImagePart, Message, TextPart, ThinkingPart, ToolCallPart
from ctxlab.sendable import sendable

EMPTY_ERROR = "(the tool failed with no output)"  # the content of an error result that recorded none
DEFAULT_MAX_TOKENS = 4096  # the reply's cap when the caller gives none (clamped to what the window leaves)


def wire_text(obj: Any) -> str:
    """The bytes ``obj`` is sent as (as text): compact JSON, keys in the dict's own order, UTF-8 kept.
    ``{"b": 1, "a": "中"}`` → ``'{"b":1,"a":"中"}'`` (key order is part of the bytes). Chapter 04."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def tool_input(arguments: str) -> dict[str, Any]:
    """A call's arguments as Anthropic's ``tool_use.input``, which must be an object. Arguments that are not a
    JSON object (invalid JSON, or ``"[1,2,3]"``) go verbatim under ``_raw``. ``'{"a":1}'`` → ``{"a": 1}``;
    ``"[1,2,3]"`` → ``{"_raw": "[1,2,3]"}``. Chapter 04."""
    if not arguments:
        return {}
    try:
        value = loads(arguments)  # hostile nesting is a JSONDecodeError
    except json.JSONDecodeError:
        value = None
    return value if isinstance(value, dict) else {"_raw": arguments}


def anthropic_part(part: Any) -> dict[str, Any]:
    """One part as a Messages API content block. ``TextPart("hi")`` → ``{"type": "text", "text": "hi"}``.
    Raises TypeError for an unknown part. Chapter 04."""
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ThinkingPart):
        if part.redacted:
            return {"type": "redacted_thinking", "data": part.signature or ""}
        return {"type": "thinking", "thinking": part.text, "signature": part.signature or ""}
    if isinstance(part, ToolCallPart):
        return {"type": "tool_use", "id": part.id, "name": part.name, "input": tool_input(part.arguments)}
    if isinstance(part, ImagePart):
        return {"type": "image", "source": {"type": "base64", "media_type": part.media_type,
                                            "data": f"<{part.data_chars} base64 chars>"}}
    raise TypeError(f"unknown part {part!r}")


def anthropic_result(msg: Message) -> dict[str, Any]:
    """A tool message as a ``tool_result`` block; a result with no text left is sent with no ``content``
    (the field is optional; an empty text block is rejected), an error with none as :data:`EMPTY_ERROR` (an
    error result must have content). Chapter 04."""
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": msg.tool_call_id}
    if msg.parts:
        block["content"] = [anthropic_part(p) for p in msg.parts]
    if msg.is_error:
        block["is_error"] = True
        block.setdefault("content", [{"type": "text", "text": EMPTY_ERROR}])  # an error needs content
    return block


def anthropic_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """Sendable messages as Messages API messages: one per turn, consecutive same-role messages merged (a tool
    result is a user turn; results first, as :func:`~ctxlab.sendable.sendable` ordered them). Chapter 04."""
    out: list[dict[str, Any]] = []
    for msg in messages:
        role = "user" if msg.role == "tool" else msg.role
        content = [anthropic_result(msg)] if msg.role == "tool" else [anthropic_part(p) for p in msg.parts]
        if out and out[-1]["role"] == role:
            out[-1]["content"] += content
        else:
            out.append({"role": role, "content": content})
    return out


def anthropic_tool(spec: Any) -> dict[str, Any]:
    """A tool definition as the Messages API takes it. Chapter 04."""
    return {"name": spec.name, "description": spec.description, "input_schema": spec.parameters}


def openai_tool(spec: Any) -> dict[str, Any]:
    """A tool definition as chat completions take it. Chapter 04."""
    return {"type": "function", "function": {"name": spec.name, "description": spec.description,
                                             "parameters": spec.parameters}}


def reply_cap(context: Context, max_tokens: int | None, window: int | None = None) -> int:
    """``max_tokens`` for the reply: the one asked (default 4,096), at most what the window (default the context's
    own; :class:`~ctxlab.loop.AgentLoop` passes the model's when its strategy decided under a smaller one) leaves
    after the context's tokens, at least 1. A 200,000 window holding 199,000 → 1,000. Anthropic requires input +
    ``max_tokens`` within the window. Chapter 04."""
    room = (window or context.window_tokens) - context.total_tokens
    return max(1, min(max_tokens or DEFAULT_MAX_TOKENS, room))


def to_anthropic_body(context: Context, model: str | None = None, breakpoints: bool = True,
                      max_tokens: int | None = None) -> dict[str, Any]:
    """The Messages API request for ``context``: ``{"model", "max_tokens", "messages", "system"?, "tools"?}``.

    With ``breakpoints``, ``cache_control: {"type": "ephemeral"}`` goes on the last tool, the last system block
    and the last content block of the last message, as most agents place them. ``max_tokens``: see
    :func:`reply_cap`. Chapter 04.
    """
    messages = anthropic_messages(sendable(context.messages, "anthropic")[0])
    tools = [anthropic_tool(t) for t in context.tools]
    system = [{"type": "text", "text": s} for s in context.system if s.strip()]
    if breakpoints:
        for section in (tools, system):
            if section:
                section[-1]["cache_control"] = {"type": "ephemeral"}
        if messages and messages[-1]["content"]:
            messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    body: dict[str, Any] = {"model": model or context.profile.name, "max_tokens": reply_cap(context, max_tokens),
                            "messages": messages}
    if system:
        body["system"] = system
    if tools:
        body["tools"] = tools
    return body


def openai_message(msg: Message) -> dict[str, Any]:
    """One sendable message as a chat-completions message (text parts joined by newlines). Chapter 04."""
    text = "\n".join(p.text for p in msg.parts if isinstance(p, TextPart))
    if msg.role == "tool":
        return {"role": "tool", "tool_call_id": msg.tool_call_id, "content": text}
    out: dict[str, Any] = {"role": msg.role, "content": text or None}
    if msg.role == "user" and any(isinstance(p, ImagePart) for p in msg.parts):
        out["content"] = ([{"type": "text", "text": text}] if text else []) + [
            {"type": "image_url", "image_url": {"url": f"data:{p.media_type};base64,<{p.data_chars} chars>"}}
            for p in msg.parts if isinstance(p, ImagePart)]
    if msg.tool_calls:
        out["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                             for c in msg.tool_calls]
    if msg.name:
        out["name"] = msg.name
    return out


def to_openai_body(context: Context, model: str | None = None) -> dict[str, Any]:
    """The chat-completions request for ``context``: ``{"model", "messages", "tools"?}``, the system prompt as one
    system message; thinking is not sent. Chapter 04."""
    messages: list[dict[str, Any]] = []
    if any(s.strip() for s in context.system):
        messages.append({"role": "system", "content": "\n\n".join(context.system)})
    messages += [openai_message(m) for m in sendable(context.messages, "openai")[0]]
    body: dict[str, Any] = {"model": model or context.profile.name, "messages": messages}
    if context.tools:
        body["tools"] = [openai_tool(t) for t in context.tools]
    return body


def responses_items(msg: Message) -> list[dict[str, Any]]:
    """One sendable message as Responses API input items, in part order. A reasoning item goes only before the
    item it belongs to (a message or a call of the same turn); one with nothing after it is left out. Chapter 04."""
    if msg.role == "tool":
        return [{"type": "function_call_output", "call_id": msg.tool_call_id,
                 "output": "\n".join(p.text for p in msg.parts if isinstance(p, TextPart))}]
    items: list[dict[str, Any]] = []
    kind = "output_text" if msg.role == "assistant" else "input_text"
    for p in msg.parts:
        if isinstance(p, ThinkingPart):
            items.append({"type": "reasoning", "summary": [{"type": "summary_text", "text": p.text}] if p.text else [],
                          "encrypted_content": p.signature})
        elif isinstance(p, ToolCallPart):
            items.append({"type": "function_call", "call_id": p.id, "name": p.name, "arguments": p.arguments})
        else:
            block = ({"type": kind, "text": p.text} if isinstance(p, TextPart) else
                     {"type": "input_image", "image_url": f"data:{p.media_type};base64,<{p.data_chars} chars>"})
            if items and items[-1]["type"] == "message":
                items[-1]["content"].append(block)
            else:
                items.append({"type": "message", "role": msg.role, "content": [block]})
    while items and items[-1]["type"] == "reasoning":
        items.pop()  # a trailing reasoning item (an interrupted turn) belongs to nothing
    return items


def to_responses_body(context: Context, model: str | None = None) -> dict[str, Any]:
    """The Responses API request for ``context``: ``{"model", "input", "instructions"?, "tools"?}``, with
    ``store: False`` (reasoning goes back as its ``encrypted_content``). Chapter 04."""
    items = [item for m in sendable(context.messages, "openai-responses")[0] for item in responses_items(m)]
    return {"model": model or context.profile.name, "input": items, "store": False, **responses_head(context)}


def responses_head(context: Context) -> dict[str, Any]:
    """A Responses body's ``instructions`` (the system blocks joined, when any has text) and ``tools`` (when there
    are tools), as :func:`to_responses_body` adds them after ``model``, ``input`` and ``store``. Chapter 04."""
    head: dict[str, Any] = {}
    if any(s.strip() for s in context.system):
        head["instructions"] = "\n\n".join(context.system)
    if context.tools:
        head["tools"] = [{"type": "function", "name": t.name, "description": t.description,
                          "parameters": t.parameters} for t in context.tools]
    return head
