"""One logged model call → a :class:`Call`: its request body as recorded, its reply and usage.

The call records of the ``proxy-log`` reader (:mod:`.proxy_log` cites the writers' sources). A
claude-trace pair's reply is a Messages response (``response.body``) or a stream (``body_raw``:
server-sent events, or for Bedrock AWS event-stream bytes carrying base64 JSON events under
``"bytes"``), rebuilt from ``message_start`` (id, model, usage), ``content_block_start`` /
``_delta`` (``text_delta``, ``input_json_delta``, ``thinking_delta``, ``signature_delta``,
``citations_delta``), ``message_delta`` (stop reason, final usage) and ``message_stop``. A
LiteLLM / OpenHands log's reply is a LiteLLM ``ModelResponse``; its usage is LiteLLM's:
``prompt_tokens`` is the whole prompt (recent LiteLLM releases add Anthropic's ``cache_creation_input_tokens``
and ``cache_read_input_tokens`` to it; some 2025 releases added only the read — see
:func:`.chat_messages.chat_usage`), ``prompt_tokens_details.cached_tokens`` the part read from the cache, and
OpenAI's own ``prompt_tokens_details.cache_write_tokens`` (GPT-5.6 on) the part written. Plumbing for chapter 02.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Annotated, Any
from urllib.parse import unquote, urlparse

from pydantic import BaseModel, Field

from ctxlab.io.codec import loads
from ctxlab.messages import ToolSpec, Usage
from ctxlab.render import tool_choice_name
from ctxlab.io.formats import TokenCount, bad, check
from ctxlab.io.formats.anthropic_messages import system_blocks, tool_specs
from ctxlab.io.formats.chat_messages import chat_usage
from ctxlab.io.formats.claude_code import usage as anthropic_usage

Stamp = Annotated[float, Field(ge=0, le=1e11, allow_inf_nan=False)]  # seconds since the epoch
Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]
STOP = {"end_turn": "stop", "stop_sequence": "stop", "stop": "stop", "tool_use": "tool_use", "tool_calls": "tool_use",
        "function_call": "tool_use", "max_tokens": "length", "length": "length", "refusal": "error",
        "content_filter": "error"}


@dataclass
class Call:
    """One logged model call. ``response`` is the assistant message in the request family's shape (None when
    the call got no reply: ``failure`` says why); ``head`` keys its system prompt + tools."""

    line: int
    family: str  # "anthropic" (Messages API) or "openai" (chat completions, through LiteLLM)
    body: dict[str, Any]
    messages: list[Any]
    system: tuple[str, ...] = ()
    tools: tuple[ToolSpec, ...] = ()
    head: str = ""
    response: dict[str, Any] | None = None
    usage: Usage | None = None
    model: str | None = None
    provider: str | None = None
    response_id: str | None = None
    stop_reason: str | None = None
    requested_at: float | None = None
    answered_at: float | None = None
    failure: str | None = None
    notes: list[str] = field(default_factory=list)
    tool_choice: str = "auto"  # the request's, as choice_name gives it


def choice_name(raw: Any) -> str:
    """A request body's ``tool_choice`` as one string (what ``Call.tool_choice`` and a ``tool_choice_change`` entry
    hold): Anthropic's ``{"type": "any"}`` → ``"any"``, ``{"type": "tool", "name": "f"}`` → ``"tool:f"``; OpenAI's
    ``"required"`` → ``"any"`` (the same promise: some tool is called), ``{"type": "function", "function":
    {"name": "f"}}`` → ``"tool:f"``; absent → ``"auto"`` (both APIs' default with tools); Anthropic's
    ``"disable_parallel_tool_use": true`` adds ``"+no_parallel"`` (``"auto+no_parallel"``): a changed option is a
    changed ``tool_choice``, which invalidates the messages. Anthropic 'Tool use with Claude' and OpenAI 'Function
    calling' (read 2026-12-02)."""
    if isinstance(raw, dict) and raw.get("type") == "function":
        fn = raw.get("function")
        return f"tool:{fn.get('name') if isinstance(fn, dict) else None}"
    if isinstance(raw, dict):
        return tool_choice_name(raw)  # Anthropic's shape: the renderer's own reading
    if raw == "required":
        return "any"
    return raw if isinstance(raw, str) and raw else "auto"


def iso(stamp: float | None) -> str | None:
    """Seconds → ISO 8601 in UTC. ``1748554705.03`` → ``"2025-05-29T21:38:25.030000Z"``."""
    return None if stamp is None else datetime.fromtimestamp(stamp, timezone.utc).isoformat().replace("+00:00", "Z")


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k != "cache_control"}
    return [_strip(v) for v in obj] if isinstance(obj, list) else obj


def canon(obj: Any) -> str:
    """The canonical JSON of ``obj`` without ``cache_control`` keys (agents move their breakpoints every call)."""
    return json.dumps(_strip(obj), ensure_ascii=False, sort_keys=True, separators=(",", ":"))


# ---------------------------------------------------------------- claude-trace

class _Pair(BaseModel):
    request: dict[str, Any]
    response: dict[str, Any] | None = None
    note: str | None = None


class _Request(BaseModel):
    timestamp: Stamp | None = None
    method: str = "GET"
    url: str
    body: Any = None


class _Response(BaseModel):
    timestamp: Stamp | None = None
    status_code: int | None = None
    body: Any = None
    body_raw: str | None = None
    events: list[Any] | None = None  # RawPair.events: parsed server-sent events {event, data, timestamp}


class _Body(BaseModel):
    model: str | None = None
    messages: list[Any]
    system: Any = None
    tools: list[Any] | None = None
    tool_choice: Any = None


class _AUsage(BaseModel):  # checked so that a damaged count names its line
    input_tokens: TokenCount | None = 0
    cache_creation_input_tokens: TokenCount | None = 0
    cache_read_input_tokens: TokenCount | None = 0
    output_tokens: TokenCount | None = 0


class _AMessage(BaseModel):
    id: str | None = None
    model: str | None = None
    content: list[Any]
    stop_reason: str | None = None
    usage: dict[str, Any] | None = None


_BEDROCK = re.compile(r"bedrock-runtime\.[^/]*amazonaws\.com/model/([^/]+)/invoke")


def trace_call(obj: dict[str, Any], line: int, file: str) -> Call | str:
    """One claude-trace pair → a Call, or (a request that is not a model call) its ``"METHOD /path"`` label."""
    pair = check(_Pair, obj, file=file, line=line)
    req = check(_Request, pair.request, file=file, line=line, at="request")
    bedrock = _BEDROCK.search(req.url)
    path = urlparse(req.url).path
    if req.method.upper() != "POST" or not (path.rstrip("/").endswith("/v1/messages") or bedrock):
        return f"{req.method.upper()} {path or req.url}"
    if not isinstance(req.body, dict):
        raise bad(file, line, f"a model request body must be a JSON object, got {type(req.body).__name__}",
                  field="request.body")
    body = check(_Body, req.body, file=file, line=line, at="request.body")
    call = Call(line, "anthropic", req.body, body.messages, provider="anthropic", requested_at=req.timestamp,
                head=canon([body.system or None, body.tools or None]))
    call.system = system_blocks(body.system, file=file, line=line, at="request.body.system")
    call.tools = tool_specs(body.tools, file=file, line=line, notes=call.notes, at="request.body.tools")
    if bedrock:  # us.anthropic.claude-3-5-haiku-20241022-v1:0 → claude-3-5-haiku-20241022-v1, as claude-trace names it
        found = re.search(r"anthropic\.([^:]+)", unquote(bedrock.group(1)))
        call.model = found.group(1) if found else unquote(bedrock.group(1))
    call.model, call.tool_choice = body.model or call.model, choice_name(body.tool_choice)
    if pair.response is None:
        call.failure = "no response was logged" + (f": {pair.note}" if pair.note else "")
        return call
    resp = check(_Response, pair.response, file=file, line=line, at="response")
    call.answered_at = resp.timestamp
    if resp.status_code is not None and not 200 <= resp.status_code < 300:
        error = resp.body.get("error") if isinstance(resp.body, dict) else None
        call.failure = f"HTTP {resp.status_code}" + (f" {error.get('type')}" if isinstance(error, dict) else "")
        return call
    message, at = resp.body if isinstance(resp.body, dict) and "content" in resp.body else None, "response.body"
    if message is None and (resp.body_raw is not None or resp.events is not None):
        events = _events(resp.body_raw, file, line) if resp.body_raw is not None else \
            [e.get("data") if isinstance(e, dict) else e for e in resp.events or []]
        message, at = _from_events(events, call, file, line), "response.body_raw"
    if message is None:
        call.failure = call.failure or "the response has no body"
        return call
    msg = check(_AMessage, message, file=file, line=line, at=at)
    if msg.usage is not None:
        check(_AUsage, msg.usage, file=file, line=line, at=f"{at}.usage")
        call.usage = anthropic_usage(msg.usage)
    call.response = {"role": "assistant", "content": msg.content}
    call.response_id, call.model = msg.id, msg.model or call.model
    call.stop_reason = STOP.get(msg.stop_reason or "", msg.stop_reason)
    return call


def _events(raw: str, file: str, line: int) -> list[Any]:
    """The JSON events of a stream: ``data:`` lines of server-sent events, or Bedrock's base64 ``bytes`` payloads."""
    events: list[Any] = []
    try:
        if raw.startswith("\x00") or '{"bytes":"' in raw[:4096]:
            return [loads(base64.b64decode(b).decode("utf-8")) for b in re.findall(r'\{"bytes":"([A-Za-z0-9+/=]*)"', raw)]
        for text in raw.split("\n"):
            if text.startswith("data:") and text[5:].strip() not in ("", "[DONE]"):
                events.append(loads(text[5:].strip()))
    except (ValueError, binascii.Error) as err:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise bad(file, line, f"event {len(events) + 1} of the stream is not valid JSON ({err})",
                  field="response.body_raw") from None
    return events


_DELTA_KEYS = {"text_delta": "text", "thinking_delta": "thinking", "signature_delta": "signature"}


def _from_events(events: list[Any], call: Call, file: str, line: int) -> dict[str, Any] | None:
    """Rebuild the Messages response from its stream events (as claude-trace's own viewer does)."""
    msg: dict[str, Any] = {}
    usage: dict[str, Any] = {}
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}  # block index -> input_json_delta text so far
    stopped, unknown = False, 0
    for n, ev in enumerate(e if isinstance(e, dict) else {} for e in events):
        kind, index, delta = ev.get("type"), ev.get("index"), ev.get("delta") if isinstance(ev.get("delta"), dict) else {}
        if kind in ("content_block_start", "content_block_delta") and not isinstance(index, int):
            raise bad(file, line, "a content block event needs an integer index",
                      field=f"response.body_raw (event {n + 1}, {kind})")
        if kind == "message_start" and isinstance(ev.get("message"), dict):
            msg.update({k: v for k, v in ev["message"].items() if k in ("id", "model", "stop_reason")})
            usage.update(ev["message"].get("usage") or {})
        elif kind == "content_block_start" and isinstance(ev.get("content_block"), dict):
            blocks[index] = dict(ev["content_block"])
        elif kind == "content_block_delta" and index in blocks and (key := _DELTA_KEYS.get(str(delta.get("type")))):
            blocks[index][key] = str(blocks[index].get(key) or "") + str(delta.get(key) or "")
        elif kind == "content_block_delta" and index in blocks and delta.get("type") == "input_json_delta":
            partial[index] = partial.get(index, "") + str(delta.get("partial_json") or "")
        elif kind == "content_block_delta" and index in blocks and delta.get("type") == "citations_delta":
            blocks[index].setdefault("citations", []).append(delta.get("citation"))
        elif kind == "message_delta":
            msg["stop_reason"] = delta.get("stop_reason") or msg.get("stop_reason")
            usage.update({k: v for k, v in (ev.get("usage") or {}).items() if v is not None})
        elif kind == "error":
            error = ev.get("error") if isinstance(ev.get("error"), dict) else {}
            call.failure = f"the stream ended with an error ({error.get('type', 'unknown')})"
        else:
            stopped = stopped or kind == "message_stop"
            unknown += kind not in ("ping", "content_block_stop", "message_stop")
    if "id" not in msg and not blocks:
        call.failure = call.failure or "the stream holds no message"
        return None
    for index, text in partial.items():  # a tool's input arrives as JSON text in pieces
        try:
            blocks[index]["input"] = loads(text) if text.strip() else {}
        except ValueError:
            blocks[index]["input"] = text  # kept verbatim: the model emitted it so
    if unknown:
        call.notes.append(f"line {line}: {unknown} stream event(s) or delta(s) of unknown types left out")
    if not stopped and call.failure is None:
        call.notes.append(f"line {line}: the stream has no message_stop (cut off): its message is kept as far as it got")
        msg["stop_reason"] = msg.get("stop_reason") or "aborted"
    return {**msg, "content": [blocks[i] for i in sorted(blocks)], "usage": usage or None}


# ---------------------------------------------------------------- LiteLLM / OpenHands call logs

class _Log(BaseModel):
    messages: list[Any]
    tools: list[Any] | None = None
    kwargs: dict[str, Any] | None = None
    response: dict[str, Any] | str | None = None
    raw_response: dict[str, Any] | None = None  # mocked function calling: the reply as the model wrote it
    raw_messages: list[Any] | None = None
    error: dict[str, Any] | None = None  # Telemetry.on_error
    timestamp: Stamp | None = None
    latency_sec: Seconds | None = None
    cost: Seconds | None = None
    # LiteLLM's StandardLoggingPayload
    model: str | None = None
    model_parameters: dict[str, Any] | None = None
    status: str | None = None
    error_str: str | None = None
    startTime: Stamp | None = None
    endTime: Stamp | None = None
    response_cost: Seconds | None = None
    prompt_tokens: TokenCount | None = None
    completion_tokens: TokenCount | None = None


class _Choice(BaseModel):
    message: dict[str, Any]
    finish_reason: str | None = None


class _ModelResponse(BaseModel):
    id: str | None = None
    model: str | None = None
    choices: list[_Choice]
    usage: dict[str, Any] | None = None


def litellm_usage(raw: dict[str, Any], *, file: str, line: int, at: str) -> Usage:
    """LiteLLM usage → neutral fields, read by :func:`.chat_messages.chat_usage` (the one reader of OpenAI-shaped
    usage; its docstring gives the sources). ``{"prompt_tokens": 1000, "prompt_tokens_details": {"cached_tokens":
    800}, "cache_creation_input_tokens": 150, "completion_tokens": 20}`` → ``Usage(50, 800, 150, 20)``."""
    return chat_usage(raw, file=file, line=line, at=at)


def route_model(route: str | None) -> tuple[str | None, str | None]:
    """A LiteLLM route → (model id, provider): ``litellm_proxy/anthropic/claude-sonnet-4-20250514`` →
    ``("claude-sonnet-4-20250514", "anthropic")``; the provider is the route's, or the model family's."""
    if not route:
        return None, None
    *parts, model = route.split("/")
    if "anthropic" in parts or model.startswith("claude"):
        return model, "anthropic"
    if "openai" in parts or re.match(r"(gpt-|o\d|chatgpt)", model):
        return model, "openai"
    return model, next((p for p in parts if p != "litellm_proxy"), None)


def _tools(raw: Any, notes: list[str], line: int) -> tuple[list[Any], tuple[ToolSpec, ...]]:
    """Chat ``tools`` → (the wire list, ToolSpecs). Newer OpenHands logs hold its ToolDefinition dumps instead
    (``title``, ``description``, no schema): kept by name and description, noted."""
    wire, specs, bare = [], [], 0
    for item in raw if isinstance(raw, list) else []:
        fn = item.get("function") if isinstance(item, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            wire.append(item)
            specs.append(ToolSpec(fn["name"], fn.get("description") or "",
                                  fn.get("parameters") or {"type": "object", "properties": {}}))
        elif isinstance(item, dict) and isinstance(item.get("title") or item.get("name"), str):
            specs.append(ToolSpec(item.get("title") or item["name"], str(item.get("description") or "")))
            bare += 1
    if bare:
        notes.append(f"line {line}: {bare} tool(s) logged as OpenHands ToolDefinitions (no parameter schema): "
                     "kept by name and description, so their size is under-counted")
    return wire, tuple(specs)


def litellm_call(obj: dict[str, Any], line: int, file: str) -> Call:
    """One LiteLLM / OpenHands call log → a Call; its body is what LiteLLM was called with (messages + kwargs)."""
    if obj.get("llm_path") == "responses" or ("input" in obj and "messages" not in obj):
        raise bad(file, line, "an OpenHands Responses-API call log (llm_path 'responses') is not read yet",
                  field="input")
    log = check(_Log, obj, file=file, line=line)
    kwargs = dict(log.kwargs or log.model_parameters or {})
    mocked = log.raw_messages is not None
    call = Call(line, "openai", {}, log.messages, answered_at=log.timestamp or log.endTime)
    if log.startTime is not None or (call.answered_at is not None and log.latency_sec is not None):
        call.requested_at = log.startTime or call.answered_at - (log.latency_sec or 0)
    wire, call.tools = _tools(kwargs.get("tools") or log.tools, call.notes, line)
    if mocked:
        call.tools, wire = (), []
        call.notes.append(f"line {line}: function calling was mocked in the prompt (raw_messages recorded): the "
                          "messages are the prompt as sent, the reply is raw_response as the model wrote it, and "
                          "the tool definitions are inside the system prompt's text")
    lead = next((i for i, m in enumerate(log.messages) if not (isinstance(m, dict) and m.get("role") in
                                                                ("system", "developer"))), len(log.messages))
    call.head = canon([log.messages[:lead], [] if mocked else kwargs.get("tools") or log.tools or []])
    route, call.tool_choice = log.model or kwargs.get("model"), choice_name(kwargs.get("tool_choice"))
    call.body = {"model": route, "messages": log.messages, **({"tools": wire} if wire else {}),
                 **{k: v for k, v in kwargs.items() if k not in ("tools", "messages", "model")}}
    resp = log.raw_response if mocked and log.raw_response else log.response
    if log.error is not None or log.status == "failure" or resp is None:
        call.failure = f"the call failed: {str((log.error or {}).get('type') or log.error_str or 'no response')[:80]}"
    elif isinstance(resp, str):  # a StandardLoggingPayload may hold the reply as text
        call.response = {"role": "assistant", "content": resp}
    else:
        r = check(_ModelResponse, resp, file=file, line=line, at="raw_response" if mocked else "response")
        if not r.choices:
            raise bad(file, line, "the response has no choices", field="response.choices")
        if len(r.choices) > 1:
            call.notes.append(f"line {line}: {len(r.choices)} choices: the first is kept")
        call.response = {**r.choices[0].message, "role": "assistant"}
        call.response_id, route = r.id, r.model or route
        call.stop_reason = STOP.get(r.choices[0].finish_reason or "", r.choices[0].finish_reason)
        if r.usage is not None:
            call.usage = litellm_usage(r.usage, file=file, line=line, at="response.usage")
    if call.response is not None and call.usage is None and log.prompt_tokens is not None:
        call.usage = Usage(log.prompt_tokens, output_tokens=log.completion_tokens or 0,
                           raw={"prompt_tokens": log.prompt_tokens, "completion_tokens": log.completion_tokens})
    cost = log.cost or log.response_cost
    if call.usage is not None and cost:
        call.usage = replace(call.usage, cost_usd={"total": cost})
    call.model, call.provider = route_model(route)
    return call
