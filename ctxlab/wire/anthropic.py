"""The Anthropic Messages API's acceptance rules, checked on a body exactly as it would be sent.

:func:`check_anthropic` reads the dict you would ``json.dumps`` and returns every rule it breaks,
in body order: the top-level fields, then ``tools``, ``system`` and ``messages`` (the order the
API's own cache hierarchy uses). It knows nothing of how the body was made, so it can judge the
renderer that made it. Each rule and the sentence behind it is in ``sources.RULES["anthropic"]``.
Taught in chapter 04.
"""

from __future__ import annotations

import re
from typing import Any

from ctxlab.wire.model_limits import Verdict, model_limits, output_cap, sized
from ctxlab.wire.sources import WireViolation, limits, violation

PROVIDER = "anthropic"
ID_PATTERN = re.compile(r"^[a-zA-Z0-9_-]+$")  # tool_use.id and tool_result.tool_use_id
THINKING = ("thinking", "redacted_thinking")
MAX_BREAKPOINTS = 4
MAX_MESSAGES = 100_000
# Models the "Mid-conversation system messages" page lists (later minor versions of a family included).
SYSTEM_ROLE_MODELS = re.compile(r"^claude-(fable-5|mythos-5|opus-5|opus-4-8)")


def claude_version(model: Any) -> tuple[int, int] | None:
    """``"claude-sonnet-4-5-20250929"`` → ``(4, 5)``; ``"claude-3-7-sonnet"`` → ``(3, 7)``; else None."""
    if not isinstance(model, str):
        return None
    found = re.search(r"claude-(?:[a-z]+-)?(\d+)(?:-(\d{1,2})(?!\d))?", model)
    return (int(found.group(1)), int(found.group(2) or 0)) if found else None


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


class _Walk:
    """One pass over a body: the violations found so far, and the cache breakpoints counted so far."""

    def __init__(self, reserved: int):
        self.found: list[WireViolation] = []
        self.breakpoints = reserved  # the top-level automatic breakpoint takes a slot
        self.reserved = reserved

    def add(self, rule: str, path: str, detail: str) -> None:
        self.found.append(violation(PROVIDER, rule, path, detail))

    def breakpoint(self, path: str) -> None:
        self.breakpoints += 1
        if self.breakpoints > MAX_BREAKPOINTS:
            slot = " (top-level automatic caching takes one slot)" if self.reserved else ""
            self.add("cache_control_limit", path, f"cache breakpoint {self.breakpoints}; at most "
                     f"{MAX_BREAKPOINTS} are allowed{slot}")


def _automatic_slot(body: dict, messages: list) -> int:
    """1 when the body's top-level ``cache_control`` takes a breakpoint slot, else 0."""
    if not isinstance(body.get("cache_control"), dict):
        return 0
    last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
    content = last.get("content")
    last_block = content[-1] if isinstance(content, list) and content else None
    same = isinstance(last_block, dict) and last_block.get("cache_control") == body["cache_control"]
    return 0 if same else 1  # the same marker on the last block already makes automatic caching a no-op


def _empty(content: Any) -> bool:
    if content is None:
        return True
    if isinstance(content, str):
        return not content.strip()
    return isinstance(content, list) and not content


def _check_block(walk: _Walk, block: Any, path: str) -> None:
    """The rules of one content block (and, for a tool_result, of the blocks inside it)."""
    if not isinstance(block, dict):
        walk.add("malformed", path, f"a content block must be an object, got {_kind(block)}")
        return
    kind = block.get("type")
    marked = "cache_control" in block and block["cache_control"] is not None
    if marked:
        walk.breakpoint(path)
    if kind == "text":
        text = block.get("text")
        if not isinstance(text, str) or not text.strip():
            walk.add("empty_text", path, f"text block holds {text!r}; text must be non-empty and not only whitespace")
            if marked:
                walk.add("cache_control_empty_text", path, "cache_control on an empty text block")
    elif kind in THINKING:
        field = "signature" if kind == "thinking" else "data"
        value = block.get(field)
        if not isinstance(value, str) or not value:
            walk.add("thinking_signature" if kind == "thinking" else "redacted_thinking_data", path,
                     f"{kind} block has {field}={value!r}; pass the value the API returned")
        if marked:
            walk.add("cache_control_thinking", path, f"cache_control on a {kind} block")
    elif kind == "tool_use":
        if not isinstance(block.get("id"), str) or not ID_PATTERN.match(block["id"]):
            walk.add("tool_id_pattern", path, f"tool_use id {block.get('id')!r} does not match ^[a-zA-Z0-9_-]+$")
        if not isinstance(block.get("input"), dict):
            walk.add("tool_use_input_object", path, f"tool_use {block.get('id')!r} has input of type "
                     f"{_kind(block.get('input'))}, not an object")
    elif kind == "tool_result":
        ref = block.get("tool_use_id")
        if not isinstance(ref, str) or not ID_PATTERN.match(ref):
            walk.add("tool_id_pattern", path, f"tool_result tool_use_id {ref!r} does not match ^[a-zA-Z0-9_-]+$")
        content = block.get("content")
        if block.get("is_error") is True and _empty(content):
            walk.add("tool_result_error_empty", path, f"tool_result for {ref!r} has is_error true and content "
                     f"{content!r}")
        if isinstance(content, list):
            for k, inner in enumerate(content):
                _check_block(walk, inner, f"{path}.content[{k}]")
        elif content is not None and not isinstance(content, str):
            walk.add("malformed", path, f"tool_result content must be a string or a list, got {_kind(content)}")


def _blocks(message: Any) -> list:
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


def _of_type(message: Any, kind: str) -> list[tuple[int, dict]]:
    return [(j, b) for j, b in enumerate(_blocks(message)) if isinstance(b, dict) and b.get("type") == kind]


def _check_pairs(walk: _Walk, messages: list, i: int, seen: dict[str, str]) -> None:
    """tool_use ↔ tool_result: answered in the very next user message, results first, no orphans."""
    message, path = messages[i], f"messages[{i}]"
    if message.get("role") == "assistant":
        nxt = messages[i + 1] if i + 1 < len(messages) else None
        answered = {b.get("tool_use_id") for _, b in _of_type(nxt, "tool_result")}
        if not (isinstance(nxt, dict) and nxt.get("role") == "user"):
            answered = set()
        where = f"messages[{i + 1}]" if nxt is not None else "no message (the request ends here)"
        for j, block in _of_type(message, "tool_use"):
            tid = block.get("id")
            if isinstance(tid, str) and tid in seen:
                walk.add("tool_use_id_unique", f"{path}.content[{j}]", f"tool_use id {tid!r} is used again "
                         f"(first at {seen[tid]})")
            elif isinstance(tid, str):
                seen[tid] = f"{path}.content[{j}]"
            if tid not in answered:
                walk.add("tool_use_answered", f"{path}.content[{j}]", f"tool_use {tid!r} has no tool_result "
                         f"in the next user message ({where})")
    if message.get("role") == "user":
        prev = messages[i - 1] if i > 0 else None
        called = set()
        if isinstance(prev, dict) and prev.get("role") == "assistant":
            called = {b.get("id") for _, b in _of_type(prev, "tool_use")}
        other_before = False
        for j, block in enumerate(_blocks(message)):
            if not (isinstance(block, dict) and block.get("type") == "tool_result"):
                other_before = True
                continue
            ref = block.get("tool_use_id")
            if other_before:
                walk.add("tool_result_first", f"{path}.content[{j}]", f"tool_result for {ref!r} comes after "
                         "another block; tool_result blocks must come first")
            if ref not in called:
                walk.add("tool_result_orphan", f"{path}.content[{j}]", f"tool_result for {ref!r} answers no "
                         f"tool_use in messages[{i - 1}]" if i else f"tool_result for {ref!r} has no earlier message")


def _check_system_message(walk: _Walk, messages: list, i: int, model: Any) -> None:
    path = f"messages[{i}]"
    if not (isinstance(model, str) and SYSTEM_ROLE_MODELS.match(model)):
        walk.add("system_message_model", path, f"role 'system' in messages is not available on model {model!r}")
    prev = messages[i - 1] if i > 0 and isinstance(messages[i - 1], dict) else {}
    nxt = messages[i + 1] if i + 1 < len(messages) and isinstance(messages[i + 1], dict) else None
    last = _blocks(prev)[-1] if _blocks(prev) else None
    after_server_result = (prev.get("role") == "assistant" and isinstance(last, dict)
                           and str(last.get("type", "")).endswith("_tool_result"))
    if not (prev.get("role") == "user" or after_server_result):
        walk.add("system_message_placement", path, f"a system message must follow a user turn; it follows "
                 f"{prev.get('role', 'nothing')!r}")
    if nxt is not None and nxt.get("role") != "assistant":
        walk.add("system_message_placement", path, f"a system message must be last or be followed by an "
                 f"assistant turn; messages[{i + 1}] is {nxt.get('role')!r}")


def _check_prefill(walk: _Walk, content: str | list, path: str) -> None:
    """The final assistant message is a prefill: its text may not end with whitespace."""
    if isinstance(content, str):
        text, where = content, f"{path}.content"
    else:
        last = content[-1] if content else None
        if not (isinstance(last, dict) and last.get("type") == "text"):
            return
        text, where = last.get("text"), f"{path}.content[{len(content) - 1}]"
    if isinstance(text, str) and text.strip() and text != text.rstrip():
        walk.add("prefill_trailing_whitespace", where, f"the final assistant text ends with "
                 f"{text[len(text.rstrip()):]!r}")


def _check_messages(walk: _Walk, messages: list, model: Any) -> None:
    seen: dict[str, str] = {}
    prev_role = None
    for i, message in enumerate(messages):
        path = f"messages[{i}]"
        if not isinstance(message, dict):
            walk.add("malformed", path, f"a message must be an object, got {_kind(message)}")
            continue
        role, content = message.get("role"), message.get("content")
        final_assistant = i == len(messages) - 1 and role == "assistant"
        if i == 0 and role != "user":
            walk.add("first_message_user", path, f"the first message has role {role!r}, not 'user'")
        if role not in ("user", "assistant", "system"):
            walk.add("role_known", path, f"role {role!r} is not user, assistant or system")
            continue
        if role == "system":
            _check_system_message(walk, messages, i, model)
        elif role == prev_role:
            walk.add("roles_alternate", path, f"messages[{i - 1}] and messages[{i}] are both {role!r}; merge them")
        prev_role = role if role != "system" else prev_role
        if isinstance(content, str):
            if content == "" and not final_assistant:
                walk.add("empty_content", path, f"{role} message content is an empty string")
            elif content and not content.strip():
                walk.add("empty_text", f"{path}.content", f"content {content!r} is only whitespace")
        elif isinstance(content, list):
            if not content and not final_assistant:
                walk.add("empty_content", path, f"{role} message content is an empty list")
            for j, block in enumerate(content):
                _check_block(walk, block, f"{path}.content[{j}]")
        else:
            walk.add("malformed", path, f"content must be a string or a list, got {_kind(content)}")
            continue
        last = content[-1] if isinstance(content, list) and content else None
        if role == "assistant" and isinstance(last, dict) and last.get("type") in THINKING:
            walk.add("ends_with_thinking", f"{path}.content[{len(content) - 1}]",
                     f"the assistant message ends with a {last['type']} block")
        _check_pairs(walk, messages, i, seen)
        if final_assistant:
            _check_prefill(walk, content, path)


def check_anthropic(body: dict, *, input_tokens: int | None = None,
                    context_window: int | None = None) -> list[WireViolation]:
    """Every Messages API rule ``body`` breaks, in body order; ``[]`` when the API would accept it.

    ``body``: the request dict as it would be sent. ``input_tokens``: the caller's count of the
    body's input (the oracle counts nothing); None skips the window rules. ``context_window``: None
    takes the model's documented window (:func:`.model_limits.model_limits`: Sonnet 4.6 1,000,000,
    Sonnet 4.5 200,000). ``max_tokens`` is judged against the model's documented maximum output (Sonnet
    4.6: 128k, Sonnet 4.5: 64k), and input + ``max_tokens`` against the window for models before Claude 4.5
    only. Returns a :class:`.model_limits.Verdict` (a list; ``.skipped`` names each size rule not judged and
    why: an unknown model, a value the table leaves None, no input count). Raises nothing for a bad body (a
    ``malformed`` violation); CtxlabError for a bad limit (``input_tokens=-1``). Sources:
    ``RULES["anthropic"]`` (Messages API reference, Handle tool calls, Prompt caching, Context windows,
    Building with extended thinking).
    """
    input_tokens, context_window, _ = limits(input_tokens, context_window)
    if not isinstance(body, dict):
        return Verdict([violation(PROVIDER, "malformed", "body", f"the body must be an object, got {_kind(body)}")],
                       ["size rules skipped: the body is not an object"])
    model, max_tokens, messages = body.get("model"), body.get("max_tokens"), body.get("messages")
    if not isinstance(messages, list):
        messages = []
    walk = _Walk(_automatic_slot(body, messages))
    if not isinstance(model, str) or not model:
        walk.add("malformed", "model", f"model must be a model id, got {model!r}")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 0:
        walk.add("max_tokens", "max_tokens", f"max_tokens must be a whole number >= 0, got {max_tokens!r}")
        max_tokens = None
    skipped: list[str] = []
    lim = model_limits(model, context_window)
    walk.found += output_cap(PROVIDER, body, "max_tokens", lim, skipped)
    if not isinstance(body.get("messages"), list):
        walk.add("malformed", "messages", f"messages must be a list, got {_kind(body.get('messages'))}")
    elif not messages:
        walk.add("malformed", "messages", "messages is empty: a request sends at least one message")
    elif len(messages) > MAX_MESSAGES:
        walk.add("too_many_messages", "messages", f"{len(messages):,} messages; the limit is {MAX_MESSAGES:,}")
    for i, tool in enumerate(body.get("tools") or []):
        if isinstance(tool, dict) and tool.get("cache_control") is not None:
            walk.breakpoint(f"tools[{i}]")
    system = body.get("system")
    for i, block in enumerate(system if isinstance(system, list) else []):
        _check_block(walk, block, f"system[{i}]")
    _check_messages(walk, messages, model)
    if sized("input_over_window", lim, input_tokens, skipped):
        window, version = lim.window, claude_version(model)
        if input_tokens > window:
            walk.add("input_over_window", "messages", f"{input_tokens:,} input tokens exceed the "
                     f"{window:,}-token window")
        elif version is None:
            skipped.append(f"output_over_window skipped: no Claude version in the model id {model!r}")
        elif max_tokens is not None and version < (4, 5) and input_tokens + max_tokens > window:
            walk.add("output_over_window", "max_tokens", f"{input_tokens:,} input + {max_tokens:,} max_tokens = "
                     f"{input_tokens + max_tokens:,} > the {window:,}-token window of {model}")
    return Verdict(walk.found, skipped)
