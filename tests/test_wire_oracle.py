"""The wire oracle (ctxlab.wire): each documented rule, a minimal body that breaks it and the minimal fix.

Every case carries the sentence it encodes, copied from ``ctxlab.wire.RULES`` (the test checks the copy
is exact); where no page states the rule the quote is empty and the comment gives the API's 400 text
that is the evidence instead. Then: realistic bodies that must pass, malformed bodies that must give
violations and never raise, the sources table, the docs page and the package's imports.
"""

from __future__ import annotations

import ast
import copy
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from ctxlab.base.errors import CtxlabError
from ctxlab.wire import RULES, SAYS, Source, WireViolation, check_body, rules_markdown

REPO = Path(__file__).resolve().parents[1]
A, C, R = "anthropic", "openai-chat", "openai-responses"
SIG = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"  # an opaque signature, as the API returns one
CC = {"type": "ephemeral"}


# --- Anthropic building blocks ---------------------------------------------------------------------
def ant(messages: list, **extra: Any) -> dict:
    return {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": messages, **extra}


def text(t: str, **extra: Any) -> dict:
    return {"type": "text", "text": t, **extra}


def tool_use(tid: str, **extra: Any) -> dict:
    return {"type": "tool_use", "id": tid, "name": "read_file", "input": {"path": "a.py"}, **extra}


def tool_res(tid: str, **extra: Any) -> dict:
    return {"type": "tool_result", "tool_use_id": tid, "content": "print('a')", **extra}


def thinking(**extra: Any) -> dict:
    return {"type": "thinking", "thinking": "Read the file first.", "signature": SIG, **extra}


U = {"role": "user", "content": "Fix the failing test."}
ASSIST = {"role": "assistant", "content": "Done."}
SYS = {"role": "system", "content": "From now on, answer in one line."}


def calls(*tids: str, before: tuple = ()) -> dict:
    return {"role": "assistant", "content": [*before, text("Reading."), *(tool_use(t) for t in tids)]}


def results(*tids: str, after: tuple = ()) -> dict:
    return {"role": "user", "content": [*(tool_res(t) for t in tids), *after]}


# --- OpenAI building blocks ------------------------------------------------------------------------
def chat(messages: list, **extra: Any) -> dict:
    return {"model": "gpt-4o", "messages": messages, **extra}


def call(cid: str, arguments: Any = '{"cmd": "pytest -x"}') -> dict:
    return {"id": cid, "type": "function", "function": {"name": "bash", "arguments": arguments}}


def asks(*cids: str) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": [call(c) for c in cids]}


def tool_msg(cid: str) -> dict:
    return {"role": "tool", "tool_call_id": cid, "content": "1 failed, 20 passed"}


CU = {"role": "user", "content": "Run the tests."}


def resp(items: Any, **extra: Any) -> dict:
    return {"model": "gpt-5", "input": items, **extra}


def fcall(cid: str, arguments: Any = "{}") -> dict:
    return {"type": "function_call", "call_id": cid, "name": "bash", "arguments": arguments}


def fout(cid: str) -> dict:
    return {"type": "function_call_output", "call_id": cid, "output": "ok"}


def reasoning(rid: str, **extra: Any) -> dict:
    return {"type": "reasoning", "id": rid, "summary": [], **extra}


RU = {"role": "user", "content": "Run the tests."}


class Case(NamedTuple):
    kind: str
    rule: str
    quote: str  # RULES[kind][rule].quote, copied here so the test reads as the rule it checks
    bad: dict
    path: str
    good: dict
    limits: dict | None = None  # input_tokens, context_window, max_input_tokens; None: none
    good_limits: dict | None = None  # the fix of a size rule is a smaller count; None: the same limits


CASES = [
    # "Each input message must be an object with a `role` and `content`."
    Case(A, "malformed", "Each input message must be an object with a `role` and `content`.",
         ant([U, "Done."]), "messages[1]", ant([U, ASSIST])),
    # "There is a limit of 100,000 messages in a single request."
    Case(A, "too_many_messages", "There is a limit of 100,000 messages in a single request.",
         ant([U, ASSIST] * 50_000 + [U]), "messages", ant([U, ASSIST] * 49_999 + [U])),
    # "The maximum number of tokens to generate before stopping." (minimum 0: 0 pre-warms the cache)
    Case(A, "max_tokens", "The maximum number of tokens to generate before stopping.",
         ant([U], max_tokens=-1), "max_tokens", ant([U], max_tokens=0)),
    # 'role: "user" or "assistant" or "system"'
    Case(A, "role_known", 'role: "user" or "assistant" or "system"',
         ant([U, {"role": "tool", "content": "ok"}]), "messages[1]", ant([U, ASSIST])),
    # No page; the 400: 'messages: first message must use the "user" role'
    Case(A, "first_message_user", "", ant([ASSIST, U]), "messages[0]", ant([U, ASSIST, U])),
    # "Consecutive `user` or `assistant` turns in your request will be combined into a single turn."
    Case(A, "roles_alternate", "Consecutive `user` or `assistant` turns in your request will be combined into a "
         "single turn.", ant([U, U]), "messages[1]",
         ant([{"role": "user", "content": [text("Fix it."), text("Now.")]}])),
    # "This feature is available on Claude Fable 5.1, ... Claude Opus 4.8, and Claude Opus 5."
    Case(A, "system_message_model", RULES[A]["system_message_model"].quote,
         ant([U, SYS]), "messages[1]", ant([U, SYS], model="claude-opus-4-8")),
    # "A mid-conversation system message must immediately follow a `user` turn (...), and must either be the
    # last entry in `messages` or be immediately followed by an `assistant` turn."
    Case(A, "system_message_placement", RULES[A]["system_message_placement"].quote,
         ant([U, ASSIST, SYS], model="claude-opus-4-8"), "messages[2]",
         ant([U, SYS, ASSIST], model="claude-opus-4-8")),
    # "Tool result blocks must immediately follow their corresponding tool use blocks in the message history."
    Case(A, "tool_use_answered", "Tool result blocks must immediately follow their corresponding tool use blocks "
         "in the message history.", ant([U, calls("toolu_1"), U]), "messages[1].content[1]",
         ant([U, calls("toolu_1"), results("toolu_1")])),
    # "In the user message containing tool results, the tool_result blocks must come FIRST in the content array."
    Case(A, "tool_result_first", "In the user message containing tool results, the tool_result blocks must come "
         "FIRST in the content array.",
         ant([U, calls("toolu_1"), {"role": "user", "content": [text("Here:"), tool_res("toolu_1")]}]),
         "messages[2].content[1]", ant([U, calls("toolu_1"), results("toolu_1", after=(text("Next?"),))])),
    # "`tool_use_id`: The `id` of the tool use request this is a result for."
    Case(A, "tool_result_orphan", "`tool_use_id`: The `id` of the tool use request this is a result for.",
         ant([U, ASSIST, results("toolu_9")]), "messages[2].content[0]",
         ant([U, calls("toolu_9"), results("toolu_9")])),
    # "`id`: A unique identifier for this particular tool use block."
    Case(A, "tool_use_id_unique", "`id`: A unique identifier for this particular tool use block.",
         ant([U, calls("toolu_1"), results("toolu_1"), calls("toolu_1"), results("toolu_1")]), "messages[3].content[1]",
         ant([U, calls("toolu_1"), results("toolu_1"), calls("toolu_2"), results("toolu_2")])),
    # "pattern: ^[a-zA-Z0-9_-]+$"
    Case(A, "tool_id_pattern", "pattern: ^[a-zA-Z0-9_-]+$", ant([U, calls("functions.bash:0"),
         results("functions.bash:0")]), "messages[1].content[1]", ant([U, calls("functions_bash_0"),
                                                                       results("functions_bash_0")])),
    # "`input`: An object containing the input being passed to the tool, conforming to the tool's `input_schema`."
    Case(A, "tool_use_input_object", RULES[A]["tool_use_input_object"].quote,
         ant([U, {"role": "assistant", "content": [tool_use("toolu_1", input='{"path": "a.py"}')]},
              results("toolu_1")]),
         "messages[1].content[0]", ant([U, calls("toolu_1"), results("toolu_1")])),
    # No page; the 400: 'tool_result: content cannot be empty if `is_error` is true'
    Case(A, "tool_result_error_empty", "", ant([U, calls("toolu_1"), {"role": "user", "content": [
         {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True}]}]), "messages[2].content[0]",
         ant([U, calls("toolu_1"),
              {"role": "user", "content": [tool_res("toolu_1", is_error=True, content="ENOENT")]}])),
    # "minLength: 1" (and the 400 'text content blocks must contain non-whitespace text')
    Case(A, "empty_text", "minLength: 1", ant([{"role": "user", "content": [text(" \n")]}]), "messages[0].content[0]",
         ant([{"role": "user", "content": [text("Fix it.")]}])),
    # No page; the 400: 'all messages must have non-empty content except for the optional final assistant message'
    Case(A, "empty_content", "", ant([U, {"role": "assistant", "content": []}, U]), "messages[1]",
         ant([U, {"role": "assistant", "content": []}])),
    # "The `signature` value of this thinking block, exactly as returned by the API in a previous response."
    Case(A, "thinking_signature", RULES[A]["thinking_signature"].quote,
         ant([U, calls("toolu_1", before=({"type": "thinking", "thinking": "Hm."},)), results("toolu_1")]),
         "messages[1].content[0]", ant([U, calls("toolu_1", before=(thinking(),)), results("toolu_1")])),
    # "The `data` value of this redacted thinking block, exactly as returned by the API in a previous response."
    Case(A, "redacted_thinking_data", RULES[A]["redacted_thinking_data"].quote,
         ant([U, calls("toolu_1", before=({"type": "redacted_thinking", "data": ""},)), results("toolu_1")]),
         "messages[1].content[0]",
         ant([U, calls("toolu_1", before=({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},)),
              results("toolu_1")])),
    # No page; the 400: 'The final block in an assistant message cannot be `thinking`'
    Case(A, "ends_with_thinking", "", ant([U, {"role": "assistant", "content": [thinking()]}, U]),
         "messages[1].content[0]", ant([U, {"role": "assistant", "content": [thinking(), text("Done.")]}, U])),
    # "You can define up to 4 cache breakpoints"
    Case(A, "cache_control_limit", "You can define up to 4 cache breakpoints",
         ant([{"role": "user", "content": [text("a", cache_control=CC), text("b", cache_control=CC)]}],
             tools=[{"name": "bash", "input_schema": {"type": "object"}, "cache_control": CC}],
             system=[text("rules", cache_control=CC), text("more", cache_control=CC)]), "messages[0].content[1]",
         ant([{"role": "user", "content": [text("a", cache_control=CC), text("b")]}],
             tools=[{"name": "bash", "input_schema": {"type": "object"}, "cache_control": CC}],
             system=[text("rules", cache_control=CC), text("more", cache_control=CC)])),
    # "Empty text blocks cannot be cached."
    Case(A, "cache_control_empty_text", "Empty text blocks cannot be cached.",
         ant([U], system=[text("", cache_control=CC)]), "system[0]",
         ant([U], system=[text("rules", cache_control=CC)])),
    # "Thinking blocks cannot be cached directly with `cache_control`."
    Case(A, "cache_control_thinking", "Thinking blocks cannot be cached directly with `cache_control`.",
         ant([U, calls("toolu_1", before=(thinking(cache_control=CC),)), results("toolu_1")]), "messages[1].content[0]",
         ant([U, calls("toolu_1", before=(thinking(),)),
              results("toolu_1", after=(text("Go on.", cache_control=CC),))])),
    # No page; the 400: 'messages: final assistant content cannot end with trailing whitespace'
    Case(A, "prefill_trailing_whitespace", "", ant([U, {"role": "assistant", "content": "The answer is "}]),
         "messages[1].content", ant([U, {"role": "assistant", "content": "The answer is"}])),
    # "If the input alone already exceeds the model's context window, the API returns a 400 ... on every model."
    Case(A, "input_over_window", RULES[A]["input_over_window"].quote, ant([U]), "messages", ant([U]),
         {"input_tokens": 200_001, "context_window": 200_000}, {"input_tokens": 200_000, "context_window": 200_000}),
    # "On earlier models, the API returns a validation error instead." (earlier than Claude 4.5; Sonnet 4's window is
    # the documented 200k: "Other Claude models, including Claude Sonnet 4.5, have a 200k-token context window.")
    Case(A, "output_over_window", "On earlier models, the API returns a validation error instead.",
         ant([U], model="claude-sonnet-4-20250514", max_tokens=64_000), "max_tokens",
         ant([U], model="claude-sonnet-4-20250514", max_tokens=40_000), {"input_tokens": 150_000}),
    # "... Claude Sonnet 4.6 support up to 128k output tokens per request. Claude Haiku 4.5, Claude Sonnet 4.5, and
    # Claude Opus 4.5 support up to 64k." (Building with extended thinking, snapshot 2026-08-22, read 2026-12-02)
    Case(A, "output_over_max", RULES[A]["output_over_max"].quote, ant([U], max_tokens=64_001), "max_tokens",
         ant([U], max_tokens=64_000)),
    # --- OpenAI Chat Completions ---
    # "A list of messages comprising the conversation so far."
    Case(C, "malformed", "A list of messages comprising the conversation so far.", chat("Run the tests."), "messages",
         chat([CU])),
    # "Developer-provided instructions that the model should follow, regardless of messages sent by the user."
    Case(C, "role_known", RULES[C]["role_known"].quote, chat([{"role": "human", "content": "Hi"}]), "messages[0]",
         chat([{"role": "developer", "content": "Be brief."}, CU])),
    # "The contents of the assistant message. Required unless `tool_calls` or `function_call` is specified."
    Case(C, "assistant_content", RULES[C]["assistant_content"].quote,
         chat([CU, {"role": "assistant", "content": None}]), "messages[1]",
         chat([CU, {"role": "assistant", "content": "Done."}])),
    # No page; the 400: 'An assistant message with 'tool_calls' must be followed by tool messages responding to
    # each 'tool_call_id''
    Case(C, "tool_calls_answered", "", chat([CU, asks("call_1", "call_2"), tool_msg("call_1"), CU]),
         "messages[1].tool_calls[1]", chat([CU, asks("call_1", "call_2"), tool_msg("call_2"), tool_msg("call_1"), CU])),
    # "Tool call that this message is responding to."
    Case(C, "tool_message_orphan", "Tool call that this message is responding to.", chat([CU, tool_msg("call_9")]),
         "messages[1]", chat([CU, asks("call_9"), tool_msg("call_9")])),
    # "The arguments to call the function with, as generated by the model in JSON format."
    Case(C, "arguments_string", RULES[C]["arguments_string"].quote,
         chat([CU, {"role": "assistant", "tool_calls": [call("call_1", {"cmd": "ls"})]}, tool_msg("call_1")]),
         "messages[1].tool_calls[0]", chat([CU, asks("call_1"), tool_msg("call_1")])),
    # "The context window is the maximum number of tokens that can be used in a single request."
    Case(C, "input_over_max", RULES[C]["input_over_max"].quote, chat([CU]), "input", chat([CU]),
         {"input_tokens": 100_001, "max_input_tokens": 100_000},
         {"input_tokens": 100_000, "max_input_tokens": 100_000}),
    # "This max tokens number includes input, output, and reasoning tokens."
    Case(C, "input_over_window", RULES[C]["input_over_window"].quote, chat([CU]), "input", chat([CU]),
         {"input_tokens": 128_001, "context_window": 128_000}, {"input_tokens": 128_000, "context_window": 128_000}),
    Case(C, "output_over_window", RULES[C]["output_over_window"].quote, chat([CU], max_completion_tokens=16_000),
         "max_completion_tokens", chat([CU], max_completion_tokens=8_000),
         {"input_tokens": 120_000, "context_window": 128_000}),
    # "An upper bound for the number of tokens that can be generated for a completion, ..." with gpt-4o's 16,384
    # (model_facts, third-party: "| GPT-4o (OpenAI) | 128K tokens | 16,384 (16K) tokens |")
    Case(C, "output_over_max", RULES[C]["output_over_max"].quote, chat([CU], max_completion_tokens=16_385),
         "max_completion_tokens", chat([CU], max_completion_tokens=16_384)),
    # --- OpenAI Responses ---
    # "Text, image, or file inputs to the model, used to generate a response."
    Case(R, "malformed", RULES[R]["malformed"].quote, resp(42), "input", resp("Run the tests.")),
    # "The unique ID of the function tool call generated by the model." (the 400: 'No tool output found ...')
    Case(R, "function_call_answered", RULES[R]["function_call_answered"].quote, resp([RU, fcall("call_1")]),
         "input[1]", resp([RU, fcall("call_1"), fout("call_1")])),
    # ... and the 400: 'No tool call found for function call output with call_id ...'
    Case(R, "function_call_output_orphan", RULES[R]["function_call_output_orphan"].quote, resp([RU, fout("call_1")]),
         "input[1]", resp([fout("call_1")], previous_response_id="resp_1")),
    # No page; the 400: "Item 'rs_...' of type 'reasoning' was provided without its required following item."
    Case(R, "reasoning_followed", "", resp([RU, reasoning("rs_1"), RU]), "input[1]",
         resp([RU, reasoning("rs_1"), fcall("call_1"), fout("call_1"), RU])),
    # "When using the Responses API in a stateless mode (either with `store` set to `false`, ...), you must still
    # retain reasoning items across conversation turns using the techniques described above."
    Case(R, "reasoning_encrypted", RULES[R]["reasoning_encrypted"].quote,
         resp([RU, reasoning("rs_1"), fcall("call_1"), fout("call_1")], store=False), "input[1]",
         resp([RU, reasoning("rs_1", encrypted_content="gAAAAABo..."), fcall("call_1"), fout("call_1")], store=False)),
    # "A JSON string of the arguments to pass to the function."
    Case(R, "arguments_string", "A JSON string of the arguments to pass to the function.",
         resp([RU, fcall("call_1", {"cmd": "ls"}), fout("call_1")]), "input[1]", resp([RU, fcall("call_1"),
                                                                                       fout("call_1")])),
    Case(R, "input_over_max", RULES[R]["input_over_max"].quote, resp([RU]), "input", resp([RU]),
         {"input_tokens": 10, "max_input_tokens": 9}, {"input_tokens": 9, "max_input_tokens": 9}),
    # (the caller's max_input_tokens replaces GPT-5's own 272,000, tested in tests/test_wire_limits.py)
    Case(R, "input_over_window", RULES[R]["input_over_window"].quote, resp([RU]), "input", resp([RU]),
         {"input_tokens": 400_001, "context_window": 400_000, "max_input_tokens": 400_000},
         {"input_tokens": 400_000, "context_window": 400_000, "max_input_tokens": 400_000}),
    Case(R, "output_over_window", RULES[R]["output_over_window"].quote, resp([RU], max_output_tokens=20_000),
         "max_output_tokens", resp([RU], max_output_tokens=10_000),
         {"input_tokens": 385_000, "context_window": 400_000, "max_input_tokens": 400_000}),
    # "An upper bound for the number of tokens that can be generated for a response, ..." with gpt-4.1's 32,768
    # (model_facts, third-party: "- **Maximum output tokens:** 32,768")
    Case(R, "output_over_max", RULES[R]["output_over_max"].quote, resp([RU], model="gpt-4.1", max_output_tokens=32_769),
         "max_output_tokens", resp([RU], model="gpt-4.1", max_output_tokens=32_768)),
]


def found(kind: str, body: Any, **limits: Any) -> list[tuple[str, str]]:
    return [(v.rule, v.path) for v in check_body(kind, body, **limits)]


@pytest.mark.parametrize("case", CASES, ids=[f"{c.kind}:{c.rule}" for c in CASES])
def test_each_rule_names_the_break_and_passes_the_fix(case: Case):
    assert case.quote == RULES[case.kind][case.rule].quote, "the quote in the case is not the one in RULES"
    limits = case.limits or {}
    assert (case.rule, case.path) in found(case.kind, case.bad, **limits)
    assert found(case.kind, case.good, **(limits if case.good_limits is None else case.good_limits)) == []


def test_every_rule_has_a_case():
    covered = {(c.kind, c.rule) for c in CASES}
    missing = [(k, r) for k, rules in RULES.items() for r in rules if (k, r) not in covered]
    assert not missing, f"rules without a break/fix case: {missing}"


# --- details of single rules ----------------------------------------------------------------------
def test_automatic_caching_takes_one_of_the_four_slots():
    """'When used together, the automatic cache breakpoint uses one of the 4 available breakpoint slots.'"""
    four = ant([{"role": "user", "content": [text("a", cache_control=CC), text("b", cache_control=CC), text("c")]}],
               system=[text("rules", cache_control=CC), text("more", cache_control=CC)])
    assert found(A, four) == []
    assert found(A, {**four, "cache_control": CC}) == [("cache_control_limit", "messages[0].content[1]")]


def test_claude_4_5_accepts_input_plus_max_tokens_over_the_window():
    """'On Claude 4.5 models and newer, if input tokens plus `max_tokens` exceeds the context window size, the
    API accepts the request.'"""
    assert found(A, ant([U], max_tokens=64_000), input_tokens=150_000, context_window=200_000) == []


def test_an_empty_tool_result_is_accepted():
    """'Handle tool calls' shows "Example of empty tool result": a tool_result with no content."""
    body = ant([U, calls("toolu_1"), {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]}])
    assert found(A, body) == []
    assert found(A, ant([U, calls("toolu_1"), {"role": "user", "content": [tool_res("toolu_1", content="")]}])) == []


def test_a_system_message_between_tool_use_and_tool_result_is_refused():
    """'Any other position, including between an `assistant` `tool_use` block and the `tool_result` that answers
    it, returns a 400 error.'"""
    rules = {r for r, _ in found(A, ant([U, calls("toolu_1"), SYS, results("toolu_1")], model="claude-opus-4-8"))}
    assert {"system_message_placement", "tool_use_answered", "tool_result_orphan"} <= rules


def test_chat_uses_max_tokens_when_max_completion_tokens_is_absent():
    assert found(C, chat([CU], max_tokens=16_000), input_tokens=120_000, context_window=128_000) == [
        ("output_over_window", "max_tokens")]


def test_every_break_is_reported_not_only_the_first():
    body = ant([ASSIST, {"role": "assistant", "content": [text(""), tool_use("bad id", input="x")]}], max_tokens=None)
    rules = [r for r, _ in found(A, body)]
    for rule in ("max_tokens", "first_message_user", "roles_alternate", "empty_text", "tool_id_pattern",
                 "tool_use_input_object", "tool_use_answered"):
        assert rule in rules
    assert rules.index("first_message_user") < rules.index("empty_text")  # body order


def test_the_context_window_defaults_to_the_models_documented_one():
    """'Other Claude models, including Claude Sonnet 4.5, have a 200k-token context window.' (Context windows,
    snapshot 2026-08-22): the oracle reads ctxlab.tables.model_facts, not the renderer's profile."""
    from ctxlab.tables.model_facts import model_facts

    window = model_facts("claude-sonnet-4-5").context_window_tokens.value
    assert window == 200_000
    assert found(A, ant([U]), input_tokens=window) == []
    assert found(A, ant([U]), input_tokens=window + 1) == [("input_over_window", "messages")]


# --- realistic bodies that must pass ---------------------------------------------------------------
def test_a_tool_loop_with_parallel_calls_thinking_and_four_breakpoints_passes():
    body = {
        "model": "claude-opus-4-8", "max_tokens": 16_000, "thinking": {"type": "adaptive"},
        "tools": [{"name": "read_file", "input_schema": {"type": "object"}},
                  {"name": "bash", "input_schema": {"type": "object"}, "cache_control": CC}],
        "system": [text("You are a coding agent."), text("Project rules: be brief.", cache_control=CC)],
        "messages": [
            {"role": "user", "content": [text("Fix the flaky test. 不要修改 config/prod.yaml")]},
            {"role": "assistant", "content": [thinking(), tool_use("toolu_01A"), tool_use("toolu_01B")]},
            {"role": "user", "content": [tool_res("toolu_01A"), tool_res("toolu_01B", is_error=True, content="ENOENT"),
                                         text("Also check the CI log.", cache_control=CC)]},
            {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
                                              {"type": "thinking", "thinking": "", "signature": SIG},
                                              text("Running it."), tool_use("toolu_02", input={})]},
            {"role": "user", "content": [tool_res("toolu_02", content=[text("1 failed"), text("20 passed")],
                                                  cache_control=CC)]},
            {"role": "system", "content": "The user sent: also update the changelog."},
            {"role": "assistant", "content": "The fix is"},
        ],
    }
    assert check_body(A, body, input_tokens=50_000) == []


def test_a_chat_tool_loop_with_parallel_calls_passes():
    body = chat([{"role": "developer", "content": "Be brief."}, CU, asks("call_a", "call_b"), tool_msg("call_b"),
                 tool_msg("call_a"), {"role": "assistant", "content": "Two tests fail."}, CU, asks("call_c"),
                 tool_msg("call_c")], max_completion_tokens=4_000)
    assert check_body(C, body, input_tokens=20_000, max_input_tokens=100_000) == []


def test_a_stateless_responses_loop_with_reasoning_passes():
    body = resp([{"role": "developer", "content": "Be brief."}, RU,
                 reasoning("rs_1", encrypted_content="gAAAAABo1"), fcall("call_a"), fcall("call_b"),
                 fout("call_a"), fout("call_b"), reasoning("rs_2", encrypted_content="gAAAAABo2"),
                 {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}, RU],
                store=False, include=["reasoning.encrypted_content"], max_output_tokens=8_000)
    assert check_body(R, body, input_tokens=30_000) == []


# --- malformed bodies: violations, never exceptions ------------------------------------------------
GARBAGE = [None, [], "body", 3, {}, {"messages": None}, {"messages": [None, 1, "x", {"role": "user", "content": {}}]},
           {"messages": [{"role": "assistant", "tool_calls": "x"}, {"role": "assistant", "tool_calls": [None]}]},
           {"input": [None, {"type": "function_call"}, {"type": "reasoning"}], "store": False},
           {"model": 3, "max_tokens": True, "system": [None, {"type": "text"}], "tools": [None, 3],
            "messages": [{"role": "user", "content": [{"type": "tool_result", "content": 5}, {"type": "tool_use"}]}]}]


@pytest.mark.parametrize("kind", [A, C, R])
@pytest.mark.parametrize("body", GARBAGE, ids=range(len(GARBAGE)))
def test_a_malformed_body_gives_violations_and_never_raises(kind, body):
    before = copy.deepcopy(body)
    result = check_body(kind, body, input_tokens=10)
    assert all(isinstance(v, WireViolation) for v in result)
    assert body == before, "the oracle must not change the body it judges"
    if not isinstance(body, dict):
        assert [(v.rule, v.path) for v in result] == [("malformed", "body")]


def test_an_unknown_kind_is_an_error_and_a_bad_limit_too():
    with pytest.raises(CtxlabError, match="kind must be one of"):
        check_body("gemini", {})
    with pytest.raises(CtxlabError, match="input_tokens"):
        check_body(A, ant([U]), input_tokens=-1)


def test_a_violation_reads_as_one_line():
    v = check_body(A, ant([ASSIST]))[0]
    assert str(v) == (f"anthropic first_message_user at messages[0]: {v.detail} ({v.source.page}, read 2026-12-01)")


# --- the sources table, the docs page, the imports -------------------------------------------------
def test_every_rule_has_a_page_a_url_a_read_date_and_a_sentence_or_its_evidence():
    for kind, rules in RULES.items():
        assert set(rules) == set(SAYS[kind]), kind
        for name, source in rules.items():
            assert isinstance(source, Source)
            assert source.page and source.url.startswith("https://"), (kind, name)
            assert source.read in ("2026-12-01", "2026-12-02"), (kind, name)  # 12-02: the per-model limits
            if not source.quote:  # no documented sentence: the note must say so and name the evidence
                assert "not stated in the" in source.note.lower() and "github.com" in source.url + source.note


def test_the_docs_page_lists_every_rule_and_is_the_generated_one():
    page = (REPO / "docs" / "wire-rules.md").read_text(encoding="utf-8")
    missing = [f"{k}:{r}" for k, rules in RULES.items() for r in rules if f"`{r}`" not in page]
    assert not missing, f"docs/wire-rules.md does not name {missing}"
    for rules in RULES.values():
        for source in rules.values():
            assert source.url in page
    assert page == rules_markdown(), ("docs/wire-rules.md is stale: regenerate it with\n  python -c \"import "
                                      "ctxlab.wire as w; open('docs/wire-rules.md', 'w').write(w.rules_markdown())\"")


def test_the_wire_package_imports_only_the_stdlib_base_and_tables():
    allowed = ("ctxlab.base", "ctxlab.tables", "ctxlab.wire")
    wrong = []
    for path in sorted((REPO / "ctxlab" / "wire").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            for name in names:
                top = name.split(".")[0]
                ok = name.startswith(allowed) if top == "ctxlab" else (top in sys.stdlib_module_names
                                                                       or top == "__future__")
                if not ok:
                    wrong.append(f"{path.name}: {name}")
    assert not wrong, wrong
