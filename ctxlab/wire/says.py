"""What each wire rule asks of a body, in one line: ``SAYS[provider][rule]`` (docs/wire-rules.md shows it beside
the rule's source, :data:`ctxlab.wire.sources.RULES`). Plain data, no imports. Chapter 04.
"""

SHARED = {"input_over_max": "input_tokens <= max_input_tokens: the caller's, else the model's published input limit "
                            "where it is below the window.",
          "input_over_window": "input_tokens <= the context window (the caller's, else the model's published one).",
          "output_over_window": "input_tokens + the output cap <= the context window.",
          "output_over_max": "The output cap <= the model's published maximum output (skipped when unknown)."}
SAYS: dict[str, dict[str, str]] = {
    "anthropic": {
        "malformed": "The body, each message and each block are objects; messages is a list; model is set.",
        "too_many_messages": "At most 100,000 messages.", "max_tokens": "max_tokens is a whole number >= 0.",
        "role_known": "Roles are user, assistant or system.", "first_message_user": "The first message is a user one.",
        "roles_alternate": "No two consecutive user (or assistant) messages: merge them.",
        "system_message_model": "role 'system' in messages only on the models the page lists.",
        "system_message_placement": "A system message follows a user turn and is last or before an assistant turn.",
        "tool_use_answered": "Every tool_use is answered by a tool_result in the very next (user) message.",
        "tool_result_first": "In a user message, tool_result blocks come before any other block.",
        "tool_result_orphan": "A tool_result answers a tool_use of the previous assistant message.",
        "tool_use_id_unique": "tool_use ids are unique within the request.",
        "tool_id_pattern": "tool_use.id and tool_result.tool_use_id match ^[a-zA-Z0-9_-]+$.",
        "tool_use_input_object": "tool_use.input is an object.",
        "tool_result_error_empty": "A tool_result with is_error true has content (empty is fine otherwise).",
        "empty_text": "No empty or whitespace-only text (blocks, string content, system, tool_result content).",
        "empty_content": "No empty content (\"\" or []) but in the final assistant message.",
        "thinking_signature": "A thinking block carries a non-empty signature.",
        "redacted_thinking_data": "A redacted_thinking block carries non-empty data.",
        "ends_with_thinking": "No assistant message ends with (or holds only) thinking blocks.",
        "cache_control_limit": "At most 4 cache breakpoints: tools, system and message blocks, plus automatic.",
        "cache_control_empty_text": "No cache_control on an empty text block.",
        "cache_control_thinking": "No cache_control on a thinking or redacted_thinking block.",
        "prefill_trailing_whitespace": "A final assistant message (a prefill) does not end with whitespace.",
        "input_over_window": SHARED["input_over_window"],
        "output_over_window": "input_tokens + max_tokens <= the window, for models before Claude 4.5.",
        "output_over_max": SHARED["output_over_max"],
    },
    "openai-chat": {
        "malformed": "The body and each message are objects; messages and tool_calls are lists.",
        "role_known": "Roles are developer, system, user, assistant, tool or function.",
        "assistant_content": "An assistant message has content or tool_calls (content null alone is refused).",
        "tool_calls_answered": "Each tool call id is answered by a tool message before the next other message.",
        "tool_message_orphan": "A tool message answers a pending tool call of the assistant message before it.",
        "arguments_string": "function.arguments is a string (JSON text).", **SHARED,
    },
    "openai-responses": {
        "malformed": "input is a string or a list of objects; a function_call has a call_id.",
        "function_call_answered": "Each function_call has a later function_call_output with its call_id.",
        "function_call_output_orphan": "Each function_call_output follows the function_call with its call_id.",
        "reasoning_followed": "A reasoning item is followed by an assistant message or a tool call.",
        "reasoning_encrypted": "With store false, a reasoning item carries encrypted_content.",
        "arguments_string": "A function_call's arguments is a string (JSON text).", **SHARED,
    },
}
