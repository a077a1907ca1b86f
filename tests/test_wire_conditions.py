"""Issue 12: every request ctxlab emits is one the provider accepts, on the conditions real agents record.

Each test is one condition, taken from public bug reports of agent frameworks and coding agents, as a small
history. Every strategy replays it for a Claude model and for an OpenAI model with ``check=True``, which runs
the independent oracle (``ctxlab/wire/``) on the bodies each context renders to; the three bodies built from the
whole history are judged too, and each test asserts the shape the declared rule (``ctxlab/sendable.py``) gives.
On the main before issue 12 each of these failed: the oracle did not exist, and the bodies broke the rule named.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

import ctxlab.bodies as bodies_module
from ctxlab.base.errors import CtxlabError
from helpers import run
from ctxlab.bodies import to_anthropic_body, to_openai_body, to_responses_body, wire_text
from ctxlab.cache_anthropic import AnthropicCache
from ctxlab.context import BudgetPolicy, build_context
from ctxlab.interactions import find_orphans
from ctxlab.io.session import Session
from ctxlab.loop import AgentLoop
from ctxlab.messages import Conversation, Message, TextPart, ThinkingPart, ToolSpec, assistant, tool_result, user
from ctxlab.render import render_blocks
from ctxlab.replay import STRATEGY_NAMES, replay
from ctxlab.wire import check_anthropic, check_openai_chat, check_openai_responses

TOOLS = (ToolSpec("read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}}),)
TARGETS = (("anthropic", "claude-sonnet-4-5"), ("openai", "gpt-4o"))


def conversation(*messages: Message, model: str = "claude-sonnet-4-5") -> Conversation:
    return Conversation("c", tuple(messages), system=("You are a coding agent.",), tools=TOOLS, model=model)


def bodies(conv: Conversation) -> dict[str, dict]:
    """The three bodies of the whole history (a window large enough to keep it all)."""
    claude = build_context(replace(conv, model="claude-sonnet-4-5", provider="anthropic"), BudgetPolicy())
    gpt = build_context(replace(conv, model="gpt-4o", provider="openai"), BudgetPolicy())
    return {"anthropic": to_anthropic_body(claude), "openai-chat": to_openai_body(gpt),
            "openai-responses": to_responses_body(gpt)}


def assert_accepted(conv: Conversation, window: int | None = None) -> dict[str, dict]:
    """Every strategy's every context passes ``--check`` (invariants + oracle) for both providers; the whole
    history's three bodies pass the oracle. Returns those bodies for the test's own assertions."""
    for provider, model in TARGETS:
        for name in STRATEGY_NAMES:
            result = replay(conv, name, provider=provider, model=model, window=window, check=True)
            broken = [f"call {r.call.index}: {v}" for r in result.records for v in r.violations]
            assert not broken, f"{name} on {model}: {broken[:3]}"
    out = bodies(conv)
    found = (check_anthropic(out["anthropic"]) + check_openai_chat(out["openai-chat"])
             + check_openai_responses(out["openai-responses"]))
    assert not found, [str(v) for v in found]
    return out


def texts(body: dict) -> list[dict]:
    """Every content block of an Anthropic body, tool results' inner blocks included."""
    out = []
    for m in body["messages"]:
        for b in m["content"]:
            out.append(b)
            out += b.get("content", []) if b.get("type") == "tool_result" else []
    return out


def call(cid: str, mid: str, text: str = "", args: object = None, **kw: object) -> Message:
    return assistant(text, mid, calls=((cid, "read", {"path": "a.py"} if args is None else args),), **kw)


def test_a_tool_that_returned_nothing():
    conv = conversation(user("go", "u1"), call("c1", "a1"), tool_result("c1", "", "t1"), assistant("done", "a2"))
    out = assert_accepted(conv)
    result = out["anthropic"]["messages"][2]["content"][0]
    assert result == {"type": "tool_result", "tool_use_id": "c1"}  # no empty text block: no content at all
    assert not [b for b in texts(out["anthropic"]) if b.get("type") == "text" and not b["text"].strip()]


def test_a_reply_that_was_one_empty_text_block():
    empty = Message(role="assistant", parts=(TextPart(""),), id="a1")
    conv = conversation(user("go", "u1"), empty, user("again", "u2"), assistant("ok", "a2"))
    out = assert_accepted(conv)
    messages = out["anthropic"]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]  # a1 not sent; u1 and u2 merged: roles alternate
    assert [b["text"] for b in messages[0]["content"]] == ["go", "again"]
    assert all(m.get("content") is not None for m in out["openai-chat"]["messages"][1:])


def test_an_interrupted_call_dropped_leaves_no_thinking_only_message():
    thinking_and_call = Message(role="assistant", id="a1", parts=(
        ThinkingPart("let me look", signature="sig-1"), *call("c1", "x").parts))
    conv = conversation(user("go", "u1"), thinking_and_call, user("stop, do this instead", "u2"))
    ctx = build_context(conv, BudgetPolicy(unanswered="drop"))
    body = to_anthropic_body(ctx)
    assert [m["role"] for m in body["messages"]] == ["user"]  # a1 held only thinking once its call was dropped
    assert check_anthropic(body) == []
    assert_accepted(conv)


def test_a_trailing_reasoning_item_with_nothing_after_it():
    reasoning = ThinkingPart("", signature="gAAAA-encrypted", redacted=True)
    conv = conversation(user("go", "u1"),
                        Message(role="assistant", id="a1", parts=(TextPart("looking"), reasoning), provider="openai"),
                        Message(role="assistant", id="a2", parts=(reasoning,), provider="openai"),
                        user("and?", "u2"), model="gpt-5")
    out = assert_accepted(conv)
    assert [i["type"] for i in out["openai-responses"]["input"]] == ["message", "message", "message"]


def test_a_call_id_used_twice_in_one_history():
    conv = conversation(user("go", "u1"), call("call_0", "a1"), tool_result("call_0", "one", "t1"),
                        call("call_0", "a2"), tool_result("call_0", "two", "t2"), assistant("done", "a3"))
    out = assert_accepted(conv)
    ids = [b["id"] for b in texts(out["anthropic"]) if b["type"] == "tool_use"]
    answers = [b["tool_use_id"] for b in texts(out["anthropic"]) if b["type"] == "tool_result"]
    assert ids == answers == ["call_0", "call_0_2"]


@pytest.mark.parametrize("cid", ["functions.write_todos:0", "chat:3:fc", "call 7", "x" * 60])
def test_ids_from_other_providers_and_from_ctxlab_readers(cid):
    conv = conversation(user("go", "u1"), call(cid, "a1"), tool_result(cid, "ok", "t1"), assistant("done", "a2"))
    out = assert_accepted(conv)
    (use,) = [b for b in texts(out["anthropic"]) if b["type"] == "tool_use"]
    (result,) = [b for b in texts(out["anthropic"]) if b["type"] == "tool_result"]
    assert use["id"] == result["tool_use_id"]


def test_a_session_started_on_an_openai_reasoning_model_continues_on_claude():
    blob = ThinkingPart("", signature="gAAAAB-openai-encrypted-content", redacted=True)
    conv = conversation(user("go", "u1"),
                        Message(role="assistant", id="a1", parts=(blob, TextPart("hello")), provider="openai",
                                model="gpt-5"),
                        user("go on", "u2"),
                        Message(role="assistant", id="a2", parts=(TextPart("on it"),), provider="anthropic",
                                model="claude-sonnet-4-5"))
    out = assert_accepted(conv)
    assert "gAAAAB" not in json.dumps(out["anthropic"])  # never another provider's encrypted_content
    assert "gAAAAB" in json.dumps(out["openai-responses"])  # its own API takes it back


def test_aborted_turns_recorded_with_no_content():
    aborted = Message(role="assistant", parts=(), id="a1", stop_reason="aborted")
    conv = conversation(user("go", "u1"), aborted, user("try again", "u2"), assistant("ok", "a2"))
    out = assert_accepted(conv)
    assert all(m["content"] is not None for m in out["openai-chat"]["messages"] if m["role"] == "assistant")
    assert not [b for b in texts(out["anthropic"]) if b.get("type") == "text" and not b["text"]]


def test_two_assistant_messages_that_each_call_before_both_results_arrive():
    conv = conversation(user("go", "u1"), call("c1", "a1"), call("c2", "a2"), tool_result("c1", "x", "t1"),
                        tool_result("c2", "y", "t2"), assistant("done", "a3"))
    out = assert_accepted(conv)
    assert [m["role"] for m in out["openai-chat"]["messages"]] == ["system", "user", "assistant", "tool", "tool",
                                                                  "assistant"]


def test_a_system_reminder_recorded_between_a_call_and_its_result():
    reminder = user("<system-reminder>the file changed</system-reminder>", "r1", origin="system")
    conv = conversation(user("go", "u1"), call("c1", "a1"), reminder, tool_result("c1", "x", "t1"),
                        assistant("done", "a2"))
    out = assert_accepted(conv)
    merged = out["anthropic"]["messages"][2]["content"]
    assert [b["type"] for b in merged] == ["tool_result", "text"]  # the result first, then the reminder


def test_ctxlab_stub_goes_right_after_the_calling_message():
    conv = conversation(user("go", "u1"), assistant("", "a1", calls=(("c1", "read", {}), ("c2", "read", {}))),
                        tool_result("c1", "x", "t1"), assistant("still waiting on c2", "a2"), user("next", "u2"),
                        assistant("ok", "a3"))
    out = assert_accepted(conv)
    roles = [m["role"] for m in out["openai-chat"]["messages"]]
    assert roles[:5] == ["system", "user", "assistant", "tool", "tool"]


@pytest.mark.parametrize("args", ["[1,2,3]", '"text"', "42", "{not json"])
def test_tool_arguments_that_are_not_a_json_object(args):
    conv = conversation(user("go", "u1"), call("c1", "a1", args=args), tool_result("c1", "x", "t1"),
                        assistant("done", "a2"))
    out = assert_accepted(conv)
    (use,) = [b for b in texts(out["anthropic"]) if b["type"] == "tool_use"]
    assert use["input"] == {"_raw": args}


def test_a_final_assistant_message_with_trailing_whitespace():
    conv = conversation(user("go", "u1"), assistant("Here is the plan:  \n", "a1"))
    ctx = build_context(conv, BudgetPolicy())
    body = to_anthropic_body(ctx)
    assert body["messages"][-1]["content"][-1]["text"] == "Here is the plan:"
    assert check_anthropic(body) == []


def test_a_tool_result_recorded_after_the_users_interrupting_message():
    conv = conversation(user("go", "u1"), call("c1", "a1"), user("stop", "u2"), tool_result("c1", "late", "t1"),
                        assistant("stopped", "a2"), user("now this", "u3"), assistant("ok", "a3"))
    assert [o.kind for o in find_orphans(conv.messages)] == ["late_result", "call_without_result"]
    assert_accepted(conv)
    ctx = build_context(conv, BudgetPolicy())
    assert "t1" not in [m.id for m in ctx.messages] and "stub:c1" in [m.id for m in ctx.messages]
    assert any("set aside, not sent" in n and "t1" in n for n in ctx.notes)


def test_a_result_whose_call_appears_nowhere_is_set_aside_with_a_note():
    conv = conversation(user("go", "u1"), tool_result("ghost", "nobody asked", "t1"), assistant("hm", "a1"))
    assert_accepted(conv)
    ctx = build_context(conv, BudgetPolicy())
    assert any("answers no call made before it" in n for n in ctx.notes)


def test_the_reply_cap_leaves_input_plus_max_tokens_within_the_window():
    conv = conversation(user("go " * 500, "u1"))
    ctx = build_context(conv, BudgetPolicy(budget_tokens=5_000))
    small = replace(ctx, profile=replace(ctx.profile, context_window=ctx.total_tokens + 100))
    body = to_anthropic_body(small)
    assert body["max_tokens"] == 100
    window = {"input_tokens": small.total_tokens, "context_window": small.window_tokens}
    assert check_anthropic(body, **window) == []
    # Models before Claude 4.5 refuse input + max_tokens over the window (later ones stop the reply instead)
    older = {**body, "model": "claude-sonnet-4-20250514", "max_tokens": 4096}
    assert [v.rule for v in check_anthropic(older, **window)] == ["output_over_window"]
    assert check_anthropic({**older, "max_tokens": body["max_tokens"]}, **window) == []


def test_two_requests_that_differ_only_in_json_key_order_are_not_simulated_as_a_cache_hit():
    # Issue 12, item 4: digests come from the bytes as sent. Old main hashed sorted keys, so these two were a hit.
    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    reordered = {"required": ["path"], "properties": {"path": {"type": "string"}}, "type": "object"}
    convs = [Conversation("c", (user("read a.py " * 400, "u1"),), system=("You are a coding agent. " * 100,),
                          tools=(ToolSpec("read", "Read a file. " * 100, s),), model="claude-sonnet-4-5")
             for s in (schema, reordered)]
    requests = [render_blocks(build_context(c)) for c in convs]
    assert requests[0].blocks[0].digest != requests[1].blocks[0].digest
    body = to_anthropic_body(build_context(convs[1]), breakpoints=False)
    assert requests[1].blocks[0].text == wire_text(body["tools"][0])  # the block is the body's own bytes
    assert wire_text(body["tools"][0]) in json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    cache = AnthropicCache()
    assert cache.request(requests[0], 0.0).cache_read_tokens == 0
    again = cache.request(requests[0], 10.0)
    assert again.cache_read_tokens > 0  # the same bytes: a hit
    assert cache.request(requests[1], 20.0).cache_read_tokens == 0  # other bytes, the same meaning: a miss


def test_ctxlab_serialises_its_own_bodies_deterministically():
    conv = conversation(user("go", "u1"), call("c1", "a1", args={"b": 1, "a": 2}), tool_result("c1", "x", "t1"))
    first, second = bodies(conv), bodies(conv)
    assert json.dumps(first) == json.dumps(second)
    (use,) = [b for b in texts(first["anthropic"]) if b["type"] == "tool_use"]
    assert list(use["input"]) == ["b", "a"]  # the model's own key order, as it emitted the call


def session_file(path, *messages: Message):
    """A ctxlab session file holding ``messages`` (what ``replay`` reads from disk)."""
    session = Session.create(path, system=["You are a coding agent."], tools=list(TOOLS), model="claude-sonnet-4-5")
    for m in messages:
        session.append(m)
    return path


def test_compare_check_exits_0_on_the_conditions_and_1_naming_strategy_call_and_rule_when_broken(
        tmp_path, capsys, monkeypatch):
    path = session_file(tmp_path / "s.jsonl", user("go", "u1"), Message(role="assistant", parts=(), id="a1"),
                        user("again", "u2"), call("functions.read:0", "a2"), tool_result("functions.read:0", "", "t1"),
                        assistant("done", "a3"))
    code, out, err = run(capsys, "replay", path, "--compare", "--check")
    assert code == 0, err
    assert "check: OK, every strategy built every context and passed every rule" in out
    # broken on purpose: the bodies skip the declared rules and send the history as recorded
    monkeypatch.setattr(bodies_module, "sendable", lambda messages, kind, memo=None: (tuple(messages), ()))
    code, out, err = run(capsys, "replay", path, "--compare", "--check")
    assert code == 1
    assert "strategy full" in err and "call 2" in err and "wire:empty_content" in err, err


def test_a_result_after_the_interrupt_replays_with_a_note_instead_of_stopping(tmp_path, capsys):
    path = session_file(tmp_path / "s.jsonl", user("go", "u1"), call("c1", "a1"), user("stop", "u2"),
                        tool_result("c1", "late", "t1"), assistant("stopped", "a2"))
    code, out, err = run(capsys, "inspect", path)
    assert code == 0 and "late_result: call 'c1' in message 't1'" in out
    code, out, err = run(capsys, "replay", path, "--strategy", "budgeted", "--check")
    assert code == 0, err
    assert "set aside, not sent" in out


def test_every_request_an_agent_loop_builds_passes_the_oracle():
    loop = AgentLoop(Session.in_memory(system=["You are a coding agent."], tools=list(TOOLS), model="claude-sonnet-4-5"))
    loop.add_user("go")
    requests = []
    loop.record_response("", [("functions.read:0", "read", "[1,2,3]")])  # a foreign id, arguments not an object
    loop.add_tool_result("functions.read:0", "")  # the tool returned nothing
    requests.append(loop.next_request())
    loop.record_response("Done.  \n")  # ends with whitespace, and is the last message: a prefill
    requests.append(loop.next_request())
    for req in requests:
        assert check_anthropic(req.anthropic_body) == []
        assert check_openai_chat(req.openai_body) == [] and check_openai_responses(req.responses_body) == []
    assert requests[1].anthropic_body["messages"][-1]["content"][-1]["text"] == "Done."


def test_an_error_result_with_no_output():
    conv = conversation(user("go", "u1"), call("c1", "a1"), tool_result("c1", " \n", "t1", is_error=True),
                        assistant("done", "a2"))
    out = assert_accepted(conv)
    (result,) = [b for b in texts(out["anthropic"]) if b.get("type") == "tool_result"]
    assert result["is_error"] and result["content"] == [{"type": "text", "text": "(the tool failed with no output)"}]


def test_a_reused_id_whose_second_call_is_interrupted_keeps_the_first_call_under_drop():
    # Found by the property run: "drop" removed every call of the id, the answered one too, and build_context
    # then failed its own orphan assertion.
    conv = conversation(user("go", "u0"), assistant("", "a1", calls=(("call_0", "read", {}), ("call_1", "read", {}))),
                        tool_result("call_0", "ok", "t2"), assistant("", "a3", calls=(("call_0", "read", {}),)),
                        assistant("x", "a4"))
    ctx = build_context(conv, BudgetPolicy(unanswered="drop"))
    assert [c.id for m in ctx.messages for c in m.tool_calls] == ["call_0"]  # the answered one stays
    assert check_anthropic(to_anthropic_body(ctx)) == []


def test_a_user_message_of_only_whitespace_keeps_its_turn():
    # Found by the fresh trial: the blank newest user message vanished and the Anthropic body had no message at all,
    # which the oracle did not flag either.
    conv = conversation(user("hi", "u1"), assistant("ok", "a1"), user("   ", "u2"))
    out = assert_accepted(conv)
    assert out["anthropic"]["messages"][-1]["content"][0]["text"] == "(empty message)"
    assert [v.rule for v in check_anthropic({"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": []})] \
        == ["malformed"]
    assert [v.rule for v in check_openai_responses({"model": "gpt-5", "input": []})] == ["malformed"]
    assert [v.rule for v in check_openai_chat({"model": "gpt-5", "messages": [{"role": "system", "content": "x"}]})] \
        == ["malformed"]


@pytest.mark.parametrize("method, args", [("add_user", (None,)), ("add_tool_result", ("c1", None)),
                                          ("record_response", (5,))])
def test_an_agent_loop_refuses_text_that_is_not_a_string(method, args):
    loop = AgentLoop(Session.in_memory(system=["Be brief."], model="claude-sonnet-4-5"))
    loop.add_user("go")
    loop.record_response("", [("c1", "read", {})])
    before = len(loop.session)
    with pytest.raises(CtxlabError, match=f"{method}: text must be a str"):
        getattr(loop, method)(*args)
    assert len(loop.session) == before
    loop.add_tool_result("c1", "fine")
    assert check_anthropic(loop.next_request().anthropic_body) == []
