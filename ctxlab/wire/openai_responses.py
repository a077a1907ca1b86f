"""OpenAI Responses API acceptance rules, checked on a body's ``input`` items exactly as they would be sent.

:func:`check_openai_responses` reads the ``/responses`` request dict and returns every rule it
breaks, in item order: each ``function_call`` answered by a ``function_call_output`` with its
``call_id``, no output without its call, each ``reasoning`` item followed by the item it belongs
to (an assistant message or a tool call), reasoning sent with ``encrypted_content`` when
``store`` is false, string ``arguments``, then the sizes. The sentences are in
``sources.RULES["openai-responses"]``. Taught in chapter 04.
"""

from __future__ import annotations

from typing import Any

from ctxlab.wire.model_limits import Verdict
from ctxlab.wire.openai_chat import size_violations
from ctxlab.wire.sources import WireViolation, limits, violation

PROVIDER = "openai-responses"


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def item_type(item: dict) -> str | None:
    """An input item's type: its ``type``, or ``"message"`` for the short form ``{"role", "content"}``."""
    kind = item.get("type")
    return kind if isinstance(kind, str) else ("message" if "role" in item else None)


def _follows_reasoning(item: Any) -> bool:
    """Whether ``item`` may follow a reasoning item: an assistant message or a tool call (not its output)."""
    if not isinstance(item, dict):
        return False
    kind = item_type(item) or ""
    if kind == "message":
        return item.get("role") == "assistant"
    return kind.endswith("_call")  # function_call, custom_tool_call, web_search_call, ...


def _check_reasoning(found: list, items: list, i: int, stateless: bool) -> None:
    item, path = items[i], f"input[{i}]"
    j = i + 1
    while j < len(items) and isinstance(items[j], dict) and item_type(items[j]) == "reasoning":
        j += 1  # a run of reasoning items belongs to the item after the run
    if j >= len(items) or not _follows_reasoning(items[j]):
        nxt = items[j] if j < len(items) else None
        what = item_type(nxt) if isinstance(nxt, dict) else _kind(nxt)
        after = "nothing" if j >= len(items) else f"input[{j}] ({what})"
        found.append(violation(PROVIDER, "reasoning_followed", path, f"reasoning item {item.get('id')!r} is followed "
                               f"by {after}, not an assistant message or a tool call"))
    encrypted = item.get("encrypted_content")
    if stateless and not (isinstance(encrypted, str) and encrypted):
        found.append(violation(PROVIDER, "reasoning_encrypted", path, f"store is false and reasoning item "
                               f"{item.get('id')!r} has no encrypted_content; the API cannot look it up by id"))


def check_openai_responses(body: dict, *, input_tokens: int | None = None, context_window: int | None = None,
                           max_input_tokens: int | None = None) -> list[WireViolation]:
    """Every Responses API rule ``body`` breaks, in item order; ``[]`` when the API would accept it.

    ``body``: the request dict as it would be sent; ``input`` is a string or a list of items.
    ``input_tokens``: the caller's count; None skips the input and window rules. ``context_window`` /
    ``max_input_tokens``: None takes the model's documented values (:func:`.model_limits.model_limits`; GPT-5:
    272,000 input of a 400,000 window). The output cap is ``max_output_tokens``, judged against the model's
    maximum output. Orphan outputs are not flagged when ``previous_response_id`` or ``conversation`` is set
    (the call may be stored server-side). Returns a :class:`.model_limits.Verdict` (``.skipped``: the size rules
    not judged and why). Raises nothing for a bad body (a ``malformed`` violation); CtxlabError for a bad
    limit. Sources: ``RULES["openai-responses"]``.
    """
    input_tokens, context_window, max_input_tokens = limits(input_tokens, context_window, max_input_tokens)
    if not isinstance(body, dict):
        return Verdict([violation(PROVIDER, "malformed", "body", f"the body must be an object, got {_kind(body)}")],
                       ["size rules skipped: the body is not an object"])
    found: list[WireViolation] = []
    items = body.get("input")
    if isinstance(items, str):
        items = []
    elif isinstance(items, list) and not items:
        found.append(violation(PROVIDER, "malformed", "input", "input is empty: a request sends at least one item"))
    elif not isinstance(items, list):
        found.append(violation(PROVIDER, "malformed", "input", f"input must be a string or a list, got "
                               f"{_kind(items)}"))
        items = []
    stored_elsewhere = bool(body.get("previous_response_id") or body.get("conversation"))
    stateless = body.get("store") is False
    calls: dict[str, int] = {}  # call_id -> index of its function_call
    outputs = {item.get("call_id") for item in items if isinstance(item, dict)
               and item_type(item) == "function_call_output"}
    for i, item in enumerate(items):
        path = f"input[{i}]"
        if not isinstance(item, dict):
            found.append(violation(PROVIDER, "malformed", path, f"an input item must be an object, got {_kind(item)}"))
            continue
        kind = item_type(item)
        if kind == "function_call":
            call_id = item.get("call_id")
            if not isinstance(call_id, str) or not call_id:
                found.append(violation(PROVIDER, "malformed", path, f"function_call has call_id {call_id!r}"))
            if not isinstance(item.get("arguments"), str):
                found.append(violation(PROVIDER, "arguments_string", path, f"function_call {call_id!r} has arguments "
                                       f"of type {_kind(item.get('arguments'))}; send a JSON string"))
            calls.setdefault(call_id, i)
            later = any(isinstance(x, dict) and item_type(x) == "function_call_output" and x.get("call_id") == call_id
                        for x in items[i + 1:])
            if not later:
                where = "anywhere" if call_id not in outputs else "after it (only before)"
                found.append(violation(PROVIDER, "function_call_answered", path, f"function_call {call_id!r} has no "
                                       f"function_call_output {where}"))
        elif kind == "function_call_output":
            call_id = item.get("call_id")
            if call_id not in calls and not stored_elsewhere:
                found.append(violation(PROVIDER, "function_call_output_orphan", path, f"function_call_output for "
                                       f"{call_id!r} has no function_call before it"))
        elif kind == "reasoning":
            _check_reasoning(found, items, i, stateless)
    skipped: list[str] = []
    found += size_violations(PROVIDER, body, "max_output_tokens", input_tokens=input_tokens,
                             context_window=context_window, max_input_tokens=max_input_tokens, skipped=skipped)
    return Verdict(found, skipped)
