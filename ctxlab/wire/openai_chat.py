"""OpenAI Chat Completions' acceptance rules, checked on a body exactly as it would be sent.

:func:`check_openai_chat` reads the ``/chat/completions`` request dict and returns every rule it
breaks, in message order: roles, assistant content, tool calls answered by ``tool`` messages
before the next other message, no orphan ``tool`` message, string ``arguments``, then the sizes.
The rules and their sentences are in ``sources.RULES["openai-chat"]``. Taught in chapter 04.
"""

from __future__ import annotations

from typing import Any

from ctxlab.wire.model_limits import Verdict, model_limits, output_cap, sized, skip
from ctxlab.wire.sources import WireViolation, limits, violation

PROVIDER = "openai-chat"
ROLES = ("developer", "system", "user", "assistant", "tool", "function")  # function: deprecated, still listed


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def size_violations(provider: str, body: dict, output_field: str | None, *, input_tokens: int | None,
                    context_window: int | None, max_input_tokens: int | None,
                    skipped: list[str]) -> list[WireViolation]:
    """The size rules both OpenAI APIs share, judged by the model's documented limits (:mod:`.model_limits`):
    the output cap within the model's maximum output; input within ``max_input_tokens`` (the caller's, else the
    model's where it is below the window: GPT-5's 272,000 of 400,000); input, then input plus the output cap,
    within the window (which "includes input, output, and reasoning tokens", OpenAI's "Conversation state"
    guide). ``output_field``: the body field that caps the output (``max_completion_tokens``…), or None. A rule
    whose limit is not known appends its reason to ``skipped``.
    """
    lim = model_limits(body.get("model"), context_window, max_input_tokens)
    found = output_cap(provider, body, output_field, lim, skipped)
    if input_tokens is None:
        skipped.append("input_over_max, input_over_window, output_over_window skipped: no input_tokens given")
        return found
    limit = lim.max_input if (max_input_tokens is not None or lim.window is None or lim.max_input is None
                              or lim.max_input < lim.window) else None
    if lim.max_input is None:
        skipped.append(skip("input_over_max", lim, "max_input"))
    elif limit is not None and input_tokens > limit:
        found.append(violation(provider, "input_over_max", "input", f"{input_tokens:,} input tokens exceed "
                               f"max_input_tokens {limit:,}"))
    output = body.get(output_field) if output_field else None
    if not sized("input_over_window", lim, input_tokens, skipped):
        return found
    window = lim.window
    if input_tokens > window:
        found.append(violation(provider, "input_over_window", "input", f"{input_tokens:,} input tokens exceed "
                               f"the {window:,}-token window"))
    elif isinstance(output, int) and not isinstance(output, bool) and input_tokens + output > window:
        found.append(violation(provider, "output_over_window", output_field, f"{input_tokens:,} input + "
                               f"{output:,} {output_field} = {input_tokens + output:,} > the {window:,}-token window"))
    return found


def _check_tool_calls(found: list, message: dict, path: str) -> list[tuple[str, str]]:
    """The (id, path) of each tool call in an assistant message, after checking its shape."""
    calls = message.get("tool_calls")
    if calls is None:
        return []
    if not isinstance(calls, list):
        found.append(violation(PROVIDER, "malformed", f"{path}.tool_calls", f"tool_calls must be a list, got "
                               f"{_kind(calls)}"))
        return []
    ids = []
    for j, call in enumerate(calls):
        where = f"{path}.tool_calls[{j}]"
        if not isinstance(call, dict):
            found.append(violation(PROVIDER, "malformed", where, f"a tool call must be an object, got {_kind(call)}"))
            continue
        function = call.get("function")
        if call.get("type", "function") == "function":
            arguments = function.get("arguments") if isinstance(function, dict) else None
            if not isinstance(arguments, str):
                found.append(violation(PROVIDER, "arguments_string", where, f"tool call {call.get('id')!r} has "
                                       f"function.arguments of type {_kind(arguments)}; send a JSON string"))
        ids.append((call.get("id"), where))
    return ids


def check_openai_chat(body: dict, *, input_tokens: int | None = None, context_window: int | None = None,
                      max_input_tokens: int | None = None) -> list[WireViolation]:
    """Every Chat Completions rule ``body`` breaks, in message order; ``[]`` when the API would accept it.

    ``body``: the request dict as it would be sent. ``input_tokens``: the caller's count of the
    input; None skips the input and window rules. ``context_window`` / ``max_input_tokens``: None takes
    the model's documented values (:func:`.model_limits.model_limits`). The output cap is
    ``max_completion_tokens``, else ``max_tokens``, judged against the model's maximum output. Returns a
    :class:`.model_limits.Verdict` (a list; ``.skipped`` names each size rule not judged and why). Raises
    nothing for a bad body (a ``malformed`` violation); CtxlabError for a bad limit. Sources:
    ``RULES["openai-chat"]`` (Create chat completion reference; Conversation state guide; the API's 400 texts
    where no page states a rule).
    """
    input_tokens, context_window, max_input_tokens = limits(input_tokens, context_window, max_input_tokens)
    if not isinstance(body, dict):
        return Verdict([violation(PROVIDER, "malformed", "body", f"the body must be an object, got {_kind(body)}")],
                       ["size rules skipped: the body is not an object"])
    found: list[WireViolation] = []
    messages = body.get("messages")
    if not isinstance(messages, list):
        found.append(violation(PROVIDER, "malformed", "messages", f"messages must be a list, got {_kind(messages)}"))
        messages = []
    elif not any(isinstance(m, dict) and m.get("role") not in ("system", "developer") for m in messages):
        found.append(violation(PROVIDER, "malformed", "messages", "no message besides the instructions: a request "
                                                                  "sends at least one"))
    pending: list[tuple[str, str]] = []  # (id, path) of tool calls not answered yet
    for i, message in enumerate(messages):
        path = f"messages[{i}]"
        if not isinstance(message, dict):
            found.append(violation(PROVIDER, "malformed", path, f"a message must be an object, got {_kind(message)}"))
            continue
        role = message.get("role")
        if role not in ROLES:
            found.append(violation(PROVIDER, "role_known", path, f"role {role!r} is not one of {', '.join(ROLES)}"))
            continue
        if role == "tool":
            ref = message.get("tool_call_id")
            match = next((p for p in pending if p[0] == ref), None)
            if match is None:
                found.append(violation(PROVIDER, "tool_message_orphan", path, f"tool message for {ref!r} answers no "
                                       "tool call of the assistant message before it"))
            else:
                pending.remove(match)
            continue
        for ref, where in pending:
            found.append(violation(PROVIDER, "tool_calls_answered", where, f"tool call {ref!r} has no tool message "
                                   f"before {path} ({role})"))
        pending = []
        if role == "assistant":
            calls = _check_tool_calls(found, message, path)
            content = message.get("content")
            if not calls and not message.get("function_call") and (content is None or content == []):
                found.append(violation(PROVIDER, "assistant_content", path, f"assistant message has content "
                                       f"{content!r} and no tool_calls"))
            pending = calls
    for ref, where in pending:
        found.append(violation(PROVIDER, "tool_calls_answered", where, f"tool call {ref!r} has no tool message "
                               "(the request ends here)"))
    output_field = "max_completion_tokens" if "max_completion_tokens" in body else "max_tokens"
    skipped: list[str] = []
    found += size_violations(PROVIDER, body, output_field, input_tokens=input_tokens,
                             context_window=context_window, max_input_tokens=max_input_tokens, skipped=skipped)
    return Verdict(found, skipped)
