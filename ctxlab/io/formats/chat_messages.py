"""OpenAI chat-completions message lists → a Conversation: the core the chat-style readers share.

Used by ``openai-chat`` (and its swe-agent, tau-bench and mini-swe-agent sub-readers) and by
``messages-jsonl``; :mod:`.openai_chat`'s docstring states the mapping and the positional pairing
rule for tool messages without ``tool_call_id``. Content is a string or a list of parts:
OpenAI's ``{"type": "text", "text"}`` / ``image_url`` / ``refusal``, and LLaMA-Factory v1's
``{"type": "text" | "reasoning" | "tool_call" | "image_url" | ..., "value"}`` (hiyouga/LLaMA-Factory
``src/llamafactory/v1/utils/types.py`` ``Content``, and ``v1/core/rendering/format.py``
``_to_hf_messages``, which reads a ``tool_call`` value as JSON ``{"name", "arguments"}``; read at
commit ff6d4d12, 2026-12-01). ``reasoning_content`` (litellm, DeepSeek) and litellm's
``thinking_blocks`` become thinking parts. Plumbing for chapter 02.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import Any, Callable, Literal

from pydantic import BaseModel

from ctxlab.io.codec import loads
from ctxlab.base.errors import TranscriptError
from ctxlab.messages import (Conversation, ImagePart, Message, Part, SourceRef, TextPart, ThinkingPart, ToolCallPart,
                        ToolSpec, Usage, canonical_arguments)
from ctxlab.io.formats import TokenCount, bad, check, skip_note, unknown_block_text
from ctxlab.tables.usage_rules import uncached_part

AMBIGUOUS_HINT = ("Give each tool message its tool_call_id, or load with strict=False to pair it with the oldest "
                  "open call (noted).")
_STOP = {"stop": "stop", "tool_calls": "tool_use", "function_call": "tool_use", "length": "length",
         "content_filter": "error"}


class _Function(BaseModel):
    name: str
    arguments: str | dict[str, Any] | list[Any] | None = None


class _ToolCall(BaseModel):
    id: str
    type: str = "function"
    function: _Function


class _ChatMessage(BaseModel):
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[Any] | None = None
    name: str | None = None
    tool_calls: list[_ToolCall] | None = None
    function_call: _Function | None = None
    tool_call_id: str | None = None
    tool_call_ids: list[str] | None = None  # SWE-agent
    reasoning_content: str | None = None  # litellm / DeepSeek
    thinking_blocks: list[Any] | None = None  # litellm's Anthropic thinking


class _MiniMessage(_ChatMessage):
    role: Literal["system", "developer", "user", "assistant", "tool", "function", "exit"]  # type: ignore[assignment]


class _ValueCall(BaseModel):  # LLaMA-Factory v1 tool_call value
    name: str
    arguments: Any = None


class _PromptDetails(BaseModel):
    cached_tokens: TokenCount | None = 0
    cache_write_tokens: TokenCount | None = None  # OpenAI, GPT-5.6 on (and OpenRouter)
    cache_creation_tokens: TokenCount | None = None  # LiteLLM from ~v1.80 (next to cache_creation_input_tokens)


class _ChatUsage(BaseModel):
    prompt_tokens: TokenCount | None = 0
    completion_tokens: TokenCount | None = 0
    prompt_tokens_details: _PromptDetails | None = None
    cache_read_input_tokens: TokenCount | None = None  # LiteLLM, Anthropic models
    cache_creation_input_tokens: TokenCount | None = None


def chat_usage(raw: Any, *, file: str, line: int | None, at: str) -> Usage:
    """An OpenAI-shaped chat ``usage`` (OpenAI's own, LiteLLM's, OpenRouter's) → neutral fields. Chapter 04.

    Fields read (openai-python ``src/openai/types/completion_usage.py`` @ e43b422, 2026-08-21):
    ``prompt_tokens`` ("Number of tokens in the prompt."), ``prompt_tokens_details.cached_tokens`` ("Cached
    tokens present in the prompt.") and ``prompt_tokens_details.cache_write_tokens`` ("The unadjusted number
    of prompt tokens written to cache.", GPT-5.6 on); LiteLLM's ``cache_read_input_tokens`` /
    ``cache_creation_input_tokens`` beside them (docs.litellm.ai/docs/completion/prompt_caching, last updated
    2026-10-07: "cache_creation_input_tokens are the number of tokens that were written to cache."). The prompt
    holds the parts by :func:`ctxlab.tables.usage_rules.uncached_part` (OpenAI's rule, and older LiteLLM releases
    that leave the write out): ``{"prompt_tokens": 2600, "prompt_tokens_details": {"cached_tokens": 2000,
    "cache_write_tokens": 400}}`` → ``Usage(200, 2000, 400, 0)``. Raises TranscriptError naming ``at`` when the
    parts exceed the whole."""
    u = check(_ChatUsage, raw, file=file, line=line, at=at)
    d = u.prompt_tokens_details or _PromptDetails()
    read = u.cache_read_input_tokens if u.cache_read_input_tokens is not None else (d.cached_tokens or 0)
    write = next((w for w in (u.cache_creation_input_tokens, d.cache_creation_tokens, d.cache_write_tokens)
                  if w is not None), 0)
    prompt = u.prompt_tokens or 0
    uncached = uncached_part(prompt, read, write, write_may_be_outside=u.cache_creation_input_tokens is not None
                             and d.cache_creation_tokens is None)  # an older LiteLLM: the write is outside
    if uncached is None:
        raise bad(file, line, f"{read} cache read + {write} cache write tokens exceed the {prompt} prompt tokens "
                              "they are part of", field=at)
    return Usage(uncached_input_tokens=uncached, cache_read_tokens=read, cache_write_tokens=write,
                 output_tokens=u.completion_tokens or 0, raw=dict(raw))


def iso_time(stamp: Any) -> str | None:
    """A unix time (mini-swe-agent's ``time.time()``) → ISO 8601 UTC; an ISO string stays; else None."""
    if isinstance(stamp, str):
        return stamp
    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool) and 0 < stamp < 1e11:
        return datetime.fromtimestamp(stamp, tz=timezone.utc).isoformat().replace("+00:00", "Z")
    return None


def parts_of(content: str | list[Any] | None, *, new_call_id: Callable[[], str], file: str, line: int | None,
             at: str) -> tuple[list[Part], list[str]]:
    """Content (a string or a list of parts) → our parts, plus notes on anything unmodelled."""
    if content is None or content == "":
        return [], []
    if isinstance(content, str):
        return [TextPart(content)], []
    parts: list[Part] = []
    notes: list[str] = []
    for k, item in enumerate(content):
        kind = item.get("type") if isinstance(item, dict) else None
        value = item.get("value") if isinstance(item, dict) else None
        if kind in ("text", "input_text", "output_text") and isinstance(item.get("text"), str):
            parts.append(TextPart(item["text"]))
        elif kind == "refusal" and isinstance(item.get("refusal"), str):
            parts.append(TextPart(item["refusal"]))
        elif kind == "image_url" and isinstance(item.get("image_url"), dict):
            url = str(item["image_url"].get("url", ""))
            media = re.match(r"data:([^;,]+);base64,", url)
            parts.append(ImagePart(media_type=media.group(1) if media else "image/png",
                                   data_chars=len(url) - media.end() if media else 0))
        elif isinstance(value, str) and kind in ("text", "reasoning", "tool_call"):  # LLaMA-Factory v1
            if kind == "text":
                parts.append(TextPart(value))
            elif kind == "reasoning":
                parts.append(ThinkingPart(value))
            else:
                try:
                    data = loads(value)
                except json.JSONDecodeError as err:
                    raise bad(file, line, f"a tool_call value must be JSON {{\"name\", \"arguments\"}} ({err.msg} "
                                          f"at column {err.colno})", field=f"{at}[{k}].value") from None
                call = check(_ValueCall, data, file=file, line=line, at=f"{at}[{k}].value")
                parts.append(ToolCallPart(new_call_id(), call.name, canonical_arguments(call.arguments or {})))
        elif isinstance(item, str):
            parts.append(TextPart(item))
        else:
            parts.append(TextPart(unknown_block_text(item)))
            what = "an image given by path, no size known" if kind == "image_url" else "not modelled"
            notes.append(f"content part of type {kind!r} kept as its JSON text ({what})")
    return parts, notes


def _thinking(msg: _ChatMessage) -> list[Part]:
    blocks = [b for b in msg.thinking_blocks or [] if isinstance(b, dict)]
    if blocks:
        return [ThinkingPart(str(b.get("thinking") or ""), b.get("signature") or b.get("data"),
                             redacted=b.get("type") == "redacted_thinking") for b in blocks]
    return [ThinkingPart(msg.reasoning_content)] if msg.reasoning_content else []


def _arguments(arguments: str | dict[str, Any] | list[Any] | None) -> str:
    """The string the model emitted stays verbatim (even ``"{ }"`` or broken JSON); an object is canonicalised."""
    return "" if arguments is None else canonical_arguments(arguments)


def _mini_fields(obj: dict[str, Any], *, file: str, line: int | None, at: str) -> dict[str, Any]:
    """mini-swe-agent's per-message ``extra``: timestamp, and for a model response its usage, model,
    id and finish reason (``extra.response`` is litellm's ModelResponse dump)."""
    extra = obj.get("extra") if isinstance(obj.get("extra"), dict) else {}
    fields: dict[str, Any] = {"timestamp": iso_time(extra.get("timestamp", obj.get("timestamp")))}
    response = extra.get("response")
    if obj.get("role") == "assistant" and isinstance(response, dict):
        if response.get("usage") is not None:
            fields["usage"] = chat_usage(response["usage"], file=file, line=line, at=f"{at}.extra.response.usage")
        if isinstance(response.get("model"), str):
            fields["model"] = response["model"]
        if isinstance(response.get("id"), str):
            fields["response_id"] = response["id"]
        choices = response.get("choices")
        reason = choices[0].get("finish_reason") if isinstance(choices, list) and choices and isinstance(
            choices[0], dict) else None
        if isinstance(reason, str):
            fields["stop_reason"] = _STOP.get(reason, reason)
    return {k: v for k, v in fields.items() if v is not None}


def conversation(conv_id: str, raw: list[Any], *, file: str, line_of: Callable[[Any], int | None],
                 strict: bool, notes: list[str], at: str, fallback_line: int | None = None,
                 tools: tuple[ToolSpec, ...] = (), model: str | None = None,
                 provider: str | None = None, mini: bool = False) -> Conversation:
    """One chat-message list → a :class:`Conversation`. ``notes`` collects skip notes for the transcript.
    ``mini``: mini-swe-agent's ``exit`` role and per-message ``extra`` are read too."""
    items: list[Message] = []
    system: list[str] = []
    conv_notes: list[str] = []
    names: dict[str, str] = {}  # call id -> tool name
    calls_seen: dict[str, int] = {}  # call id -> times used
    open_calls: list[tuple[str, bool]] = []  # (call id, id made up by us) issued and not answered yet, oldest first
    by_position = 0
    legacy_call: str | None = None
    started = False
    for index, obj in enumerate(raw):
        line = line_of(obj) or fallback_line
        where = f"{at}[{index}]"
        made: list[str] = []

        def new_call_id() -> str:
            made.append(f"{conv_id}:{index}:call{len(made)}")
            return made[-1]

        try:
            if not isinstance(obj, dict):
                raise bad(file, line, f"expected a message object, got {type(obj).__name__}", field=where)
            msg = check(_MiniMessage if mini else _ChatMessage, obj, file=file, line=line, at=where)
            parts, part_notes = parts_of(msg.content, new_call_id=new_call_id, file=file, line=line,
                                         at=f"{where}.content")
            extra = _mini_fields(obj, file=file, line=line, at=where) if mini else {}
            tool_id = msg.tool_call_id or (msg.tool_call_ids[0] if msg.tool_call_ids else None)
            if msg.role == "function":
                tool_id = legacy_call
            guess = None
            if msg.role in ("tool", "function") and not tool_id:
                tool_id, guess = _positional(open_calls, file=file, line=line, at=where, strict=strict)
                by_position += guess is None
        except TranscriptError as err:
            if strict:
                raise
            notes.append(skip_note(err))
            conv_notes.append(skip_note(err))
            continue
        if guess:
            conv_notes.append(f"message {index} (line {line}): {guess}")
            notes.append(f"{file}:{line}: {guess}")
        common = dict(id=f"{conv_id}:{index}", source=SourceRef(file, line or 0), name=msg.name)
        if msg.role in ("system", "developer") and not started:
            system += [p.text for p in parts if isinstance(p, TextPart)]
            continue
        started = True
        conv_notes += [f"message {index}: {n}" for n in part_notes]
        if msg.role == "exit":  # mini-swe-agent's end marker: never sent to the model
            items.append(Message(role="user", parts=tuple(parts), origin="meta", timestamp=extra.get("timestamp"),
                                 **common))
            status = (obj.get("extra") or {}).get("exit_status") if isinstance(obj.get("extra"), dict) else None
            conv_notes.append(f"message {index}: the run's exit marker (exit status {status!r}) is kept as a meta "
                              "message, never sent")
        elif msg.role in ("system", "developer"):
            items.append(Message(role="user", parts=tuple(parts), origin="system", **common))
            conv_notes.append(f"message {index} (line {line}): a {msg.role} message after the conversation "
                              "started is kept as a user message with origin 'system'")
        elif msg.role == "user":
            items.append(Message(role="user", parts=tuple(parts), timestamp=extra.get("timestamp"), **common))
        elif msg.role == "assistant":
            parts = _thinking(msg) + parts
            for call in msg.tool_calls or []:
                parts.append(ToolCallPart(call.id, call.function.name, _arguments(call.function.arguments)))
            if msg.function_call is not None:
                legacy_call = f"{conv_id}:{index}:fc"
                parts.append(ToolCallPart(legacy_call, msg.function_call.name, _arguments(msg.function_call.arguments)))
            for p in parts:
                if isinstance(p, ToolCallPart):
                    names[p.id] = p.name
                    calls_seen[p.id] = calls_seen.get(p.id, 0) + 1
                    open_calls.append((p.id, p.id in made))
            fields = {"model": model, "provider": provider, **extra}
            items.append(Message(role="assistant", parts=tuple(parts), **fields, **common))
        else:  # tool / function
            if msg.tool_call_ids and len(msg.tool_call_ids) > 1:
                conv_notes.append(f"message {index}: answers {len(msg.tool_call_ids)} calls; paired with the first")
            open_calls[:] = [c for c in open_calls if c[0] != tool_id]
            common["name"] = None
            items.append(Message(role="tool", parts=tuple(parts), tool_call_id=tool_id, timestamp=extra.get("timestamp"),
                                 tool_name=msg.name or names.get(tool_id or ""), **common))
    reused = {cid: n for cid, n in calls_seen.items() if n > 1}
    if reused:
        listing = ", ".join(f"{cid!r} x{n}" for cid, n in reused.items())
        conv_notes.append(f"tool call ids reused by several calls, kept as recorded: {listing}")
    weighted = sum(1 for obj in raw if isinstance(obj, dict) and "loss_weight" in obj)
    if weighted:
        conv_notes.append(f"loss_weight on {weighted} message(s) ignored (a training weight, never sent)")
    if by_position:
        conv_notes.append(f"{by_position} tool message(s) without tool_call_id paired by position: each answers the "
                          "one call open before it (or the oldest, where the file gives its calls no ids)")
    first_model = model or next((m.model for m in items if m.model), None)
    return Conversation(id=conv_id, items=tuple(items), system=tuple(system), tools=tools, model=first_model,
                        provider=provider, notes=tuple(conv_notes))


def _positional(open_calls: list[tuple[str, bool]], *, file: str, line: int | None, at: str,
                strict: bool) -> tuple[str, str | None]:
    """The call a tool message without ``tool_call_id`` answers: ``(call id, None)`` by the rule,
    ``(oldest, note)`` when ambiguous and not strict; raises otherwise (see openai_chat's docstring)."""
    if not open_calls:
        raise bad(file, line, "a tool message must name the call it answers (no tool_call_id, and no call "
                              "before it is still open)", field=f"{at}.tool_call_id")
    if len(open_calls) == 1 or all(made for _, made in open_calls):
        return open_calls[0][0], None
    ids = ", ".join(repr(c) for c, _ in open_calls[:4]) + (" ..." if len(open_calls) > 4 else "")
    problem = (f"a tool message without tool_call_id while {len(open_calls)} calls are open ({ids}): "
               "which one it answers is ambiguous")
    if strict:
        raise TranscriptError(file, line, problem + ".", field=f"{at}.tool_call_id", hint=AMBIGUOUS_HINT)
    return open_calls[0][0], f"{problem}; paired with the oldest, {open_calls[0][0]!r} (a guess)"
