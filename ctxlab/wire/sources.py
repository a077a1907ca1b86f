"""Where each wire rule comes from: the :class:`Source` of a rule, the verdict, and the ``RULES`` table.

A rule is worth only as much as the sentence behind it. Every rule the oracle checks names the page
that states it, the page's address, the day it was read, and the sentence itself, copied word for
word. Where the providers' pages state nothing, ``quote`` is ``""`` and ``note`` says what the
evidence is instead (the text of the API's own 400, as reported in a public issue).

The pages were read on 2026-12-01 from stored copies of the providers' documentation (the mirrors
were fetched from the live sites between 2026-08 and 2026-09); a live page may have moved on since. The
per-model limits (``output_over_max``, and the window and input limit the size rules default to) were read
on 2026-12-02 with :mod:`ctxlab.tables.model_facts` (:mod:`.model_limits`).
Taught in chapter 04, where the bodies are rendered; docs/wire-rules.md lists the same table.
"""

from __future__ import annotations

from dataclasses import dataclass

from ctxlab.base import validate

READ = "2026-12-01"  # the day the pages below were read


@dataclass(frozen=True)
class Source:
    """One documented rule: the page title, its URL, the day it was read, the sentence. Chapter 04."""

    page: str
    url: str
    read: str
    quote: str
    note: str = ""


@dataclass(frozen=True)
class WireViolation:
    """One broken rule in one body, with the place it was found and the page that states it. Chapter 04.

    ``str(v)`` reads ``anthropic first_message_user at messages[0]: ... (Create a Message ..., read
    2026-12-01)``.
    """

    provider: str
    rule: str
    path: str
    detail: str
    source: Source

    def __str__(self) -> str:
        where = f"{self.source.page}, read {self.source.read}"
        return f"{self.provider} {self.rule} at {self.path}: {self.detail} ({where})"


def _page(title: str, url: str):
    def source(quote: str, note: str = "") -> Source:
        return Source(title, url, READ, quote, note)
    return source


# Anthropic's pages.
A_CREATE = _page("Create a Message - Claude API Reference", "https://platform.claude.com/docs/en/api/messages/create")
A_COUNT = _page("Count tokens in a Message - Claude API Reference",
                "https://platform.claude.com/docs/en/api/messages-count-tokens")
A_PY = _page("Create a Message Batch - Python SDK API reference (the request params)",
             "https://platform.claude.com/docs/en/api/python/beta/messages/batches/create")
A_TOOLS = _page("Handle tool calls - Claude Platform Docs",
                "https://platform.claude.com/docs/en/agents-and-tools/tool-use/handle-tool-calls")
A_SYSTEM = _page("Mid-conversation system messages and tool changes",
                 "https://platform.claude.com/docs/en/build-with-claude/mid-conversation-system-messages")
A_CACHE = _page("Prompt caching - Claude API Docs",
                "https://platform.claude.com/docs/en/build-with-claude/prompt-caching")
A_THINK = _page("Building with extended thinking",
                "https://platform.claude.com/docs/en/build-with-claude/extended-thinking")
A_WINDOW = _page("Context windows", "https://platform.claude.com/docs/en/build-with-claude/context-windows")
# OpenAI's pages.
O_CHAT = _page("Chat Completions: Create chat completion - OpenAI API reference",
               "https://developers.openai.com/api/reference/resources/chat")
O_RESP = _page("Responses: Create a model response - OpenAI API reference",
               "https://developers.openai.com/api/reference/resources/responses")
O_REASON = _page("Reasoning models - OpenAI API docs", "https://developers.openai.com/api/docs/guides/reasoning")
O_STATE = _page("Conversation state - OpenAI API docs",
                "https://developers.openai.com/api/docs/guides/conversation-state")

GH = "https://github.com/"


def _issue(title: str, url: str, note: str) -> Source:
    """A rule no docs page states: the issue that shows the API's 400 is the source, and ``quote`` is empty."""
    return Source(title, url, READ, "", note)


_WINDOW_OPENAI = O_STATE("This max tokens number includes input, output, and reasoning tokens.",
                         "The 400 reads 'This model's maximum context length is N tokens. However, you requested M "
                         "tokens'.")
_MAX_INPUT = O_STATE("The context window is the maximum number of tokens that can be used in a single request.",
                     "max_input_tokens is the caller's limit, else the model's published maximum input from "
                     "ctxlab.tables.model_facts where it is below the window (GPT-5: 272,000 of 400,000, from the "
                     "API's 400 'Input tokens exceed the configured limit of 272,000 tokens.' quoted on OpenAI's "
                     "forum); a model the table does not know is skipped, and the verdict says so.")
READ_FACTS = "2026-12-02"  # the day the per-model facts (ctxlab.tables.model_facts) were read
_SDK = "https://github.com/openai/openai-python/blob/e43b422/src/openai/types/"
_REASONING = "visible output tokens and [reasoning tokens](https://platform.openai.com/docs/guides/reasoning)."
_CAP_NOTE = ("The ceiling per model is ctxlab.tables.model_facts(model).max_output_tokens (OpenAI's model pages "
             "were not read: third-party values, status 'assumed'); a model without one is skipped, and the "
             "verdict says so.")
_OUTPUT_MAX_CHAT = Source("openai-python SDK: chat/completion_create_params.py (from OpenAI's OpenAPI spec, e43b422)",
                          _SDK + "chat/completion_create_params.py", READ_FACTS,
                          "An upper bound for the number of tokens that can be generated for a completion, including "
                          + _REASONING, _CAP_NOTE)
_OUTPUT_MAX_RESP = Source("openai-python SDK: responses/response_create_params.py (from OpenAI's OpenAPI spec, "
                          "e43b422)", _SDK + "responses/response_create_params.py", READ_FACTS,
                          "An upper bound for the number of tokens that can be generated for a response, including "
                          + _REASONING, _CAP_NOTE)

RULES: dict[str, dict[str, Source]] = {
    "anthropic": {
        "malformed": A_CREATE("Each input message must be an object with a `role` and `content`.",
                              "Also: the body is an object with `model`, `max_tokens` and a `messages` list; content "
                              "is a string or a list of blocks."),
        "too_many_messages": A_CREATE("There is a limit of 100,000 messages in a single request."),
        "max_tokens": A_CREATE("The maximum number of tokens to generate before stopping.",
                               "max_tokens is listed without 'optional', with minimum 0: 'Set to `0` to populate the "
                               "prompt cache without generating a response.' A whole number >= 0 passes."),
        "role_known": A_COUNT('role: "user" or "assistant" or "system"',
                              "The 2026-09 reference lists three roles; older copies of the same page still say "
                              "'there is no \"system\" role for input messages'."),
        "first_message_user": _issue("lobehub/lobehub#1601 (the API's 400 text)", GH + "lobehub/lobehub/issues/1601",
                                     "Not stated in the docs pages read; the API's 400 'messages: first message must "
                                     "use the \"user\" role' is the evidence. A mid-conversation system message must "
                                     "follow a user turn, so it cannot be first either."),
        "roles_alternate": A_CREATE("Consecutive `user` or `assistant` turns in your request will be combined into a "
                                    "single turn.",
                                    "Not a 400: the API merges them itself. ctxlab asks its renderer to merge them, so "
                                    "the body shows the turns the model reads."),
        "system_message_model": A_SYSTEM("This feature is available on Claude Fable 5.1, Claude Mythos 5.1, Claude "
                                         "Fable 5, Claude Mythos 5, Claude Opus 5.5, Claude Opus 4.8, and Claude Opus "
                                         "5.", "The same page: 'This feature is not available on Claude Sonnet 5.'"),
        "system_message_placement": A_SYSTEM(
            "A mid-conversation system message must immediately follow a `user` turn (or an `assistant` turn ending "
            "in a server tool result), and must either be the last entry in `messages` or be immediately followed by "
            "an `assistant` turn."),
        "tool_use_answered": A_TOOLS("Tool result blocks must immediately follow their corresponding tool use blocks "
                                     "in the message history.",
                                     "The 400 reads 'tool_use ids were found without tool_result blocks immediately "
                                     "after'."),
        "tool_result_first": A_TOOLS("In the user message containing tool results, the tool_result blocks must come "
                                     "FIRST in the content array."),
        "tool_result_orphan": A_TOOLS("`tool_use_id`: The `id` of the tool use request this is a result for.",
                                      "Read with 'You cannot include any messages between the assistant's tool use "
                                      "message and the user's tool result message': the request is the previous "
                                      "assistant message."),
        "tool_use_id_unique": A_TOOLS("`id`: A unique identifier for this particular tool use block."),
        "tool_id_pattern": A_PY("pattern: ^[a-zA-Z0-9_-]+$",
                                "The schema line under tool_use.id and tool_result.tool_use_id. The 400 reads "
                                "'messages.N.content.M.tool_use.id: String should match pattern' "
                                "(" + GH + "RooCodeInc/Roo-Code/pull/10649)."),
        "tool_use_input_object": A_TOOLS("`input`: An object containing the input being passed to the tool, "
                                         "conforming to the tool's `input_schema`."),
        "tool_result_error_empty": _issue("bytedance/trae-agent#230 (the API's 400 text)",
                                          GH + "bytedance/trae-agent/issues/230",
                                          "Not stated in the docs: 'Handle tool calls' shows an empty tool_result "
                                          "(content omitted) as valid. The API's 400 'tool_result: content cannot be "
                                          "empty if `is_error` is true' is the evidence."),
        "empty_text": A_PY("minLength: 1",
                           "The schema line under text blocks' `text` (messages, system, tool_result content). "
                           "Whitespace-only text is not in the docs; the API's 400 'text content blocks must contain "
                           "non-whitespace text' (" + GH + "anthropics/claude-code/issues/23440) is the evidence."),
        "empty_content": _issue("anthropics/claude-code#3196 (the API's 400 text)",
                                GH + "anthropics/claude-code/issues/3196",
                                "Not stated in the docs; the API's 400 'all messages must have non-empty content "
                                "except for the optional final assistant message' is the evidence."),
        "thinking_signature": A_CREATE("The `signature` value of this thinking block, exactly as returned by the API "
                                       "in a previous response.",
                                       "Missing, the 400 reads 'thinking.signature: Field required' "
                                       "(" + GH + "lbjlaq/Antigravity-Manager/issues/1650). The `thinking` text "
                                       "itself may be empty (display 'omitted')."),
        "redacted_thinking_data": A_CREATE("The `data` value of this redacted thinking block, exactly as returned by "
                                           "the API in a previous response."),
        "ends_with_thinking": _issue("NousResearch/hermes-agent#11098 (the API's 400 text)",
                                     GH + "NousResearch/hermes-agent/pull/11098",
                                     "Not stated in the docs; the API's 400 'The final block in an assistant message "
                                     "cannot be `thinking`' is the evidence. A probe in "
                                     + GH + "router-for-me/CLIProxyAPI/issues/5321 found only the final message "
                                     "rejected; the oracle flags every assistant message."),
        "cache_control_limit": A_CACHE("You can define up to 4 cache breakpoints",
                                       "And: 'When used together, the automatic cache breakpoint uses one of the 4 "
                                       "available breakpoint slots.' Tools, system and message blocks all count."),
        "cache_control_empty_text": A_CACHE("Empty text blocks cannot be cached."),
        "cache_control_thinking": A_CACHE("Thinking blocks cannot be cached directly with `cache_control`."),
        "prefill_trailing_whitespace": _issue("tailcallhq/forgecode#1872 (the API's 400 text)",
                                              GH + "tailcallhq/forgecode/issues/1872",
                                              "Not stated in the docs; the API's 400 'messages: final assistant "
                                              "content cannot end with trailing whitespace' is the evidence."),
        "input_over_window": A_WINDOW("If the input alone already exceeds the model's context window, the API returns "
                                      "a 400 `invalid_request_error` (\"prompt is too long\") on every model."),
        "output_over_window": A_WINDOW("On earlier models, the API returns a validation error instead.",
                                       "'Earlier' than Claude 4.5: 'On Claude 4.5 models and newer, if input tokens "
                                       "plus `max_tokens` exceeds the context window size, the API accepts the "
                                       "request.' The oracle checks it only for models before 4.5 (a model id "
                                       "whose version it cannot read is skipped, and the verdict says so); the "
                                       "window is the caller's, else ctxlab.tables.model_facts'."),
        "output_over_max": Source("Building with extended thinking", "https://platform.claude.com/docs/en/"
                                  "build-with-claude/thinking", READ_FACTS,
                                  "Claude Fable 5, Claude Mythos 5, Claude Mythos Preview, Claude Opus 5, Claude Opus "
                                  "4.8, Claude Opus 4.7, Claude Sonnet 5, Claude Opus 4.6, and Claude Sonnet 4.6 "
                                  "support up to 128k output tokens per request. Claude Haiku 4.5, Claude Sonnet 4.5, "
                                  "and Claude Opus 4.5 support up to 64k.",
                                  "Read from the gpambrozio/ClaudeDocs snapshot ff5b8ed (2026-08-22). The ceiling per "
                                  "model is ctxlab.tables.model_facts(model).max_output_tokens; a model without one "
                                  "(Opus 4.1, Sonnet 4: not read) is skipped, and the verdict says so."),
    },
    "openai-chat": {
        "malformed": O_CHAT("A list of messages comprising the conversation so far.",
                            "The body is an object with a `messages` list of message objects."),
        "role_known": O_CHAT("Developer-provided instructions that the model should follow, regardless of messages "
                             "sent by the user.",
                             "The reference lists six message types: developer, system, user, assistant, tool and "
                             "function (deprecated); the quote opens the first."),
        "assistant_content": O_CHAT("The contents of the assistant message. Required unless `tool_calls` or "
                                    "`function_call` is specified.",
                                    "Flagged: content missing, null or an empty list with no tool_calls. An empty "
                                    "string is not flagged (no evidence found)."),
        "tool_calls_answered": _issue("RamiAwar/dataline#172 (the API's 400 text)", GH + "RamiAwar/dataline/issues/172",
                                      "Not stated in the reference; the API's 400 'An assistant message with "
                                      "'tool_calls' must be followed by tool messages responding to each "
                                      "'tool_call_id'' is the evidence."),
        "tool_message_orphan": O_CHAT("Tool call that this message is responding to.",
                                      "The line under `tool_call_id`. The 400 reads 'messages with role 'tool' must be "
                                      "a response to a preceeding message with 'tool_calls'' "
                                      "(" + GH + "crewAIInc/crewAI/pull/1620)."),
        "arguments_string": O_CHAT("The arguments to call the function with, as generated by the model in JSON "
                                   "format.", "`arguments: string` in the reference: a JSON text, not an object."),
        "input_over_max": _MAX_INPUT,
        "input_over_window": _WINDOW_OPENAI,
        "output_over_window": _WINDOW_OPENAI,
        "output_over_max": _OUTPUT_MAX_CHAT,
    },
    "openai-responses": {
        "malformed": O_RESP("Text, image, or file inputs to the model, used to generate a response.",
                            "The line under `input`: a string or a list of item objects."),
        "function_call_answered": O_RESP("The unique ID of the function tool call generated by the model.",
                                         "The line under `call_id`. The 400 reads 'No tool output found for function "
                                         "call call_...' (" + GH + "openai/codex/issues/620)."),
        "function_call_output_orphan": O_RESP("The unique ID of the function tool call generated by the model.",
                                              "The 400 reads 'No tool call found for function call output with "
                                              "call_id ...' (" + GH + "continuedev/continue/issues/10092). Skipped "
                                              "with previous_response_id or conversation (the call may be stored)."),
        "reasoning_followed": _issue("continuedev/continue#8933 (the API's 400 text)",
                                     GH + "continuedev/continue/issues/8933",
                                     "Not stated in the docs; the API's 400 'Item 'rs_...' of type 'reasoning' was "
                                     "provided without its required following item.' is the evidence. Following items "
                                     "accepted: an assistant message or a tool call."),
        "reasoning_encrypted": O_REASON("When using the Responses API in a stateless mode (either with `store` set to "
                                        "`false`, or when an organization is enrolled in zero data retention), you "
                                        "must still retain reasoning items across conversation turns using the "
                                        "techniques described above.",
                                        "Sent back by id alone with store false, the 400 reads 'Item with id 'rs_...' "
                                        "not found. Items are not persisted when `store` is set to false.' "
                                        "(" + GH + "vercel/ai/issues/7543): the item must carry encrypted_content."),
        "arguments_string": O_RESP("A JSON string of the arguments to pass to the function."),
        "input_over_max": _MAX_INPUT,
        "input_over_window": _WINDOW_OPENAI,
        "output_over_window": _WINDOW_OPENAI,
        "output_over_max": _OUTPUT_MAX_RESP,
    },
}


def violation(provider: str, rule: str, path: str, detail: str) -> WireViolation:
    """A :class:`WireViolation` for ``RULES[provider][rule]``. Raises KeyError for a rule not in the table."""
    return WireViolation(provider, rule, path, detail, RULES[provider][rule])


def limits(input_tokens: int | None, context_window: int | None,
           max_input_tokens: int | None = None) -> tuple[int | None, int | None, int | None]:
    """The size arguments every check takes, validated: whole numbers of tokens (``input_tokens`` may be 0) or
    None. Raises CtxlabError naming the argument. Chapter 04."""
    return (validate.tokens("input_tokens", input_tokens, allow_zero=True),
            validate.tokens("context_window", context_window), validate.tokens("max_input_tokens", max_input_tokens))
