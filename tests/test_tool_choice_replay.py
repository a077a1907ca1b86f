"""A transcript carries the ``tool_choice`` in force per call, and a replay sends each call with it.

Readers of request bodies (the proxy log) write a ``tool_choice_change`` entry ``{"tool_choice": "any"}`` when a
call's choice differs from its thread's previous call's; ``model_calls`` gives ``Call.tool_choice`` (default
``"auto"``); the replay renders each call with it, so Anthropic's chain is salted at the first message block and
the hidden tool-use prompt is counted for that choice. A ctxlab session file round-trips the entry.
"""

from __future__ import annotations

import json

from ctxlab import load
from ctxlab.fast import FAST
from ctxlab.io.formats.proxy_bodies import choice_name
from ctxlab.io.session import Session
from ctxlab.messages import Conversation, Entry, Message, TextPart, ToolCallPart, ToolSpec, tool_result, user
from ctxlab.replay import replay
from ctxlab.strategies import model_calls
from ctxlab.tables.profiles import profile_for
from ctxlab.tokens import MessageMeter, tools_tokens

MODEL = "claude-sonnet-4-6"  # tool prompt 497 (auto, none) / 589 (any, tool); minimum cacheable prompt 1,024
TOOLS = (ToolSpec("read_file", "Reads one file of the repository. " * 20,
                  {"type": "object", "properties": {"path": {"type": "string"}}}),)
SYSTEM = ("You are a careful coding agent. " * 200,)


def turns(n: int, switch_at: int | None = None, to: str = "any") -> list:
    """``n`` calls (user, assistant tool call, tool result, ...); a tool_choice_change before call ``switch_at``."""
    items: list = [user("Fix the flaky test, please. " * 20, "u1")]
    for k in range(1, n + 1):
        if k == switch_at:
            items.append(Entry("tool_choice_change", f"tc{k}", {"tool_choice": to}))
        items.append(Message("assistant", (TextPart(f"Step {k}."), ToolCallPart(f"c{k}", "read_file", "{}")),
                             id=f"a{k}", model=MODEL, provider="anthropic"))
        items.append(tool_result(f"c{k}", f"contents of file {k} " * 40, f"t{k}"))
    return items


def conversation(items: list) -> Conversation:
    return Conversation("c", tuple(items), system=SYSTEM, tools=TOOLS, model=MODEL, provider="anthropic")


def head_end(request) -> int:
    """Tokens of the tools and system blocks (the last head block's prefix sum)."""
    return request.cum_tokens[max(i for i, b in enumerate(request.blocks) if b.kind != "message")]


def test_model_calls_carry_the_tool_choice_in_force_per_call():
    calls = [c for _, c in model_calls(conversation(turns(5, switch_at=3)))]
    assert [c.tool_choice for c in calls] == ["auto", "auto", "any", "any", "any"]
    assert {c.tool_choice for _, c in model_calls(conversation(turns(5)))} == {"auto"}


def test_tool_choice_auto_to_any_at_call_3_reads_only_tools_and_system():
    """Anthropic's invalidation table: "| **Tool choice** | ✓ | ✓ | ✘ | Changes to `tool_choice` parameter only
    affect message blocks |" (https://platform.claude.com/docs/en/build-with-claude/prompt-caching, mirror
    gpambrozio/ClaudeDocs ff5b8ed, snapshot 2026-08-22, read 2026-12-02): tools and system still read, every
    message block is written again. The all-auto twin reads call 2's whole prompt instead."""
    switched = replay(conversation(turns(5, switch_at=3)), "full")
    plain = replay(conversation(turns(5)), "full")
    third, twin = switched.records[2], plain.records[2]
    assert third.request.tool_choice == "any" and twin.request.tool_choice == "auto"
    assert third.outcome.cache_read_tokens == head_end(third.request)  # tools + system, no message
    assert "tool_choice changed (auto → any)" in third.outcome.reason
    assert twin.outcome.cache_read_tokens == plain.records[1].request.total_tokens > head_end(twin.request)
    assert switched.records[3].outcome.cache_read_tokens == third.request.total_tokens  # any → any: all read


def test_the_hidden_tool_prompt_grows_by_the_any_figure():
    """Anthropic, 'Tool use with Claude' pricing table (mirror snapshot 2026-08-22, read 2026-12-02): Claude Sonnet
    4.6 adds 497 tokens with tool_choice auto/none and 589 with any/tool. Those are Claude's own token counts, so
    they are added as they are: the o200k calibration (1.257) scales only what ctxlab counts with o200k."""
    profile = profile_for(MODEL)
    grow = profile.tool_prompt_tokens("any") - profile.tool_prompt_tokens("auto")
    assert grow == 589 - 497 == 92
    switched = replay(conversation(turns(5, switch_at=3)), "full")
    plain = replay(conversation(turns(5)), "full")
    sizes = [(s.request.total_tokens, p.request.total_tokens) for s, p in zip(switched.records, plain.records)]
    assert [s - p for s, p in sizes] == [0, 0, grow, grow, grow]


def test_an_all_auto_transcript_counts_the_auto_prompt_as_before():
    """No entry: every call is "auto" and the first tool block carries the 497-token auto prompt (tool_system_tokens,
    as build_context counts it), so an all-auto replay's sizes are the context's own."""
    result = replay(conversation(turns(4)), "full")
    meter = MessageMeter(profile_for(MODEL))
    for record in result.records:
        assert record.request.tool_choice == "auto"
        assert record.request.blocks[0].tokens == tools_tokens(list(TOOLS), meter.counter) + 497
        assert record.request.total_tokens == record.context_tokens


def test_fast_replay_matches_plain_with_a_tool_choice_switch():
    conv = conversation(turns(6, switch_at=3, to="tool:read_file"))
    plain, fast = replay(conv, "full"), replay(conv, "full", speedup=FAST)
    assert plain.ledger.rows == fast.ledger.rows
    assert [r.request.blocks for r in plain.records] == [r.request.blocks for r in fast.records]


def test_a_session_file_round_trips_the_entry(tmp_path):
    path = tmp_path / "s.jsonl"
    session = Session.create(path, system=SYSTEM, tools=TOOLS, model=MODEL, provider="anthropic")
    for item in turns(4, switch_at=2):
        session.append(item)
    conv = load(path).conversation()
    entries = [i for i in conv.items if isinstance(i, Entry)]
    assert [(e.kind, e.data) for e in entries] == [("tool_choice_change", {"tool_choice": "any"})]
    assert [c.tool_choice for _, c in model_calls(conv)] == ["auto", "any", "any", "any"]


def trace_line(k: int, messages: list, tool_choice: dict | None) -> str:
    body = {"model": MODEL, "max_tokens": 1024, "system": [{"type": "text", "text": SYSTEM[0]}],
            "tools": [{"name": "read_file", "description": "Reads a file.", "input_schema": {"type": "object"}}],
            "messages": messages, **({"tool_choice": tool_choice} if tool_choice else {})}
    reply = {"id": f"msg_{k}", "type": "message", "role": "assistant", "model": MODEL, "stop_reason": "tool_use",
             "content": [{"type": "tool_use", "id": f"c{k}", "name": "read_file", "input": {}}],
             "usage": {"input_tokens": 100 + k, "output_tokens": 10}}
    return json.dumps({"request": {"timestamp": 1000.0 + k, "method": "POST",
                                   "url": "https://api.anthropic.com/v1/messages", "body": body},
                       "response": {"timestamp": 1000.5 + k, "status_code": 200, "body": reply},
                       "logged_at": "2026-12-02T06:00:00Z"})


def test_a_proxy_log_writes_an_entry_only_where_the_choice_changes(tmp_path):
    """A claude-trace log whose bodies send tool_choice auto (absent), auto, any, any, auto: two entries."""
    choices = [None, {"type": "auto"}, {"type": "any"}, {"type": "any"}, None]
    messages: list = [{"role": "user", "content": "Fix the test."}]
    lines = []
    for k, choice in enumerate(choices, 1):
        lines.append(trace_line(k, messages, choice))
        messages = messages + [{"role": "assistant", "content": [{"type": "tool_use", "id": f"c{k}",
                                                                  "name": "read_file", "input": {}}]},
                               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"c{k}",
                                                             "content": f"file {k}"}]}]
    path = tmp_path / "log-2026-12-02-06-00-00.jsonl"
    path.write_text("\n".join(lines) + "\n")
    conv = load(path).conversation()
    entries = [i for i in conv.items if isinstance(i, Entry)]
    assert [e.data["tool_choice"] for e in entries] == ["any", "auto"]
    assert all(e.kind == "tool_choice_change" and e.source.line in (3, 5) for e in entries)
    assert [c.tool_choice for _, c in model_calls(conv)] == ["auto", "auto", "any", "any", "auto"]


def test_request_bodies_name_their_tool_choice():
    """Anthropic: ``{"type": "auto" | "any" | "tool" | "none"}`` ('Tool use with Claude', mirror snapshot
    2026-08-22); OpenAI chat: ``"auto"``, ``"required"``, ``"none"`` or ``{"type": "function", "function": {"name"}}``
    ('Function calling', read 2026-12-02). Absent is auto."""
    assert [choice_name(x) for x in (None, {"type": "auto"}, {"type": "any"}, {"type": "tool", "name": "f"},
                                     "required", "none", {"type": "function", "function": {"name": "f"}})] == \
        ["auto", "auto", "any", "tool:f", "any", "none", "tool:f"]


def test_a_changed_tool_choice_option_is_a_changed_tool_choice():
    """Anthropic's invalidation table lists "Changes to `tool_choice` parameter" as invalidating message blocks
    (Prompt caching, mirror snapshot 2026-08-22, read 2026-12-02): ``disable_parallel_tool_use`` is part of that
    parameter, so turning it on is a change; the hidden prompt keeps the choice's size (589 for any)."""
    from ctxlab.io.formats.proxy_bodies import choice_name
    from ctxlab.render import tool_choice_name, tool_prompt
    assert choice_name({"type": "auto", "disable_parallel_tool_use": True}) == "auto+no_parallel"
    assert tool_choice_name({"type": "any", "disable_parallel_tool_use": True}) == "any+no_parallel"
    assert choice_name({"type": "auto"}) == choice_name(None) == "auto"
    assert choice_name("required") == "any" and choice_name({"type": "function", "function": {"name": "f"}}) == "tool:f"
    from types import SimpleNamespace
    ctx = SimpleNamespace(profile=profile_for("claude-sonnet-4-6"))
    assert tool_prompt(ctx, "anthropic", "any+no_parallel") == tool_prompt(ctx, "anthropic", "any") == 589
