"""Rendering: request bodies and cacheable blocks."""

from __future__ import annotations

from dataclasses import replace

from ctxlab.context import BudgetPolicy, build_context
from ctxlab.interactions import find_orphans
from ctxlab.messages import Conversation, Message, TextPart, ThinkingPart, ToolSpec, assistant, tool_result, user
from ctxlab.tables.profiles import profile_for
from ctxlab.bodies import to_anthropic_body, to_openai_body
from ctxlab.render import render_blocks
from ctxlab.cache import prefix_diff

CLAUDE = profile_for("claude-sonnet-4-5")
GPT = profile_for("gpt-4o")
TOOLS = (ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}}),
         ToolSpec("bash", "Run a command.", {"type": "object", "properties": {"cmd": {"type": "string"}}}))


def conversation(n_rounds=3):
    msgs = [user("Fix the flaky test. 不要修改 config/prod.yaml", "u0")]
    for r in range(n_rounds):
        msgs.append(assistant(f"step {r}", f"a{r}", calls=((f"c{r}a", "bash", {"cmd": "pytest -x"}),
                                                           (f"c{r}b", "read_file", {"path": "tests/test_x.py"}))))
        msgs.append(tool_result(f"c{r}b", "def test_x(): ...\n" * 10, f"t{r}b"))
        msgs.append(tool_result(f"c{r}a", "1 failed, 20 passed\n" * 5, f"t{r}a"))
    return Conversation("c", tuple(msgs), system=("You are a coding agent.", "Project rules: be brief."), tools=TOOLS)


def test_anthropic_body_merges_consecutive_tool_results_and_places_breakpoints():
    body = to_anthropic_body(build_context(conversation(), profile=CLAUDE))
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant", "user"]
    results = body["messages"][2]["content"]
    assert [b["tool_use_id"] for b in results] == ["c0b", "c0a"]  # recorded order kept
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}


def test_openai_body_has_system_message_and_tool_calls():
    body = to_openai_body(build_context(conversation(), profile=GPT))
    assert body["messages"][0] == {"role": "system", "content": "You are a coding agent.\n\nProject rules: be brief."}
    call = body["messages"][2]["tool_calls"][0]
    assert call["function"] == {"name": "bash", "arguments": '{"cmd":"pytest -x"}'}
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "c0b", "content": "def test_x(): ...\n" * 10}
    assert body["tools"][0]["type"] == "function"


def test_thinking_is_sent_as_recorded_but_earlier_turns_count_nothing():
    think = Message(role="assistant", parts=(ThinkingPart("secret reasoning " * 20, signature="sig"), TextPart("hi")), id="a")
    c = Conversation("c", (user("q1", "u1"), think, user("q2", "u2"), replace(think, id="b")))
    body = to_anthropic_body(build_context(c, profile=CLAUDE))
    first, second = body["messages"][1]["content"], body["messages"][3]["content"]
    assert [b["type"] for b in first] == ["thinking", "text"] == [b["type"] for b in second]
    assert first[0]["signature"] == "sig"
    # the same thinking block, current turn vs an earlier turn: identical bytes, but on a last-turn-only model
    # (Sonnet 4.5) the new user turn strips it and the prefix from it on is new (changed for issue 13: the
    # prefix digests were equal) -- tests/test_anthropic_invalidation.py quotes the rule ...
    now = render_blocks(build_context(Conversation("c", c.items[:2]), profile=CLAUDE))
    later = render_blocks(build_context(Conversation("c", c.items[:3]), profile=CLAUDE))
    assert now.blocks[1].digest == later.blocks[1].digest
    assert now.blocks[0].prefix_digest == later.blocks[0].prefix_digest
    assert now.blocks[1].prefix_digest != later.blocks[1].prefix_digest
    # ... but once a new user turn starts it no longer counts toward the context (Anthropic's rule)
    from ctxlab.tokens import MessageMeter
    meter = MessageMeter(CLAUDE)
    assert now.blocks[1].tokens == meter.overhead(think) + meter.part(think.parts[0])
    assert later.blocks[1].tokens == meter.overhead(think)  # the thinking itself counts 0


def test_blocks_add_up_to_the_context_count():
    for profile in (CLAUDE, GPT):
        ctx = build_context(conversation(), profile=profile)
        req = render_blocks(ctx)
        assert req.total_tokens == ctx.total_tokens
        assert [b.kind for b in req.blocks][:2] == ["tools", "tools"]


def test_prefix_digests_agree_exactly_on_the_shared_prefix():
    long, short = conversation(3), conversation(2)
    a = render_blocks(build_context(short, profile=CLAUDE))
    b = render_blocks(build_context(long, profile=CLAUDE))
    d = prefix_diff(a, b)
    # the last block of `a` carried the final breakpoint, but breakpoints are not part of the digest
    assert d.index is None and "appended" in d.reason
    assert d.shared_tokens == a.total_tokens


def test_prefix_diff_names_a_dropped_unit_and_a_thinking_change():
    c = conversation(3)
    full = render_blocks(build_context(c, profile=CLAUDE))
    dropped = render_blocks(build_context(c, BudgetPolicy(max_units=2), profile=CLAUDE))
    d = prefix_diff(full, dropped)
    assert d.index is not None and d.new.kind == "message" and "history changed" in d.reason
    assert d.shared_tokens == full.cum_tokens[d.index - 1]
    ctx = build_context(c, profile=CLAUDE)
    off, high = render_blocks(ctx, thinking="off"), render_blocks(ctx, thinking="high")
    d = prefix_diff(off, high)
    assert "thinking" in d.reason and d.old.kind == "message"
    assert all(x.prefix_digest == y.prefix_digest for x, y in zip(off.blocks, high.blocks) if x.kind != "message")


def test_at_most_four_breakpoints():
    req = render_blocks(build_context(conversation(5), profile=CLAUDE))
    assert 1 <= len(req.breakpoints) <= 4
    assert req.breakpoints[-1] == len(req.blocks) - 1


def test_rendered_context_has_no_orphans():
    ctx = build_context(conversation(), BudgetPolicy(max_units=3), profile=CLAUDE)
    assert find_orphans(ctx.messages) == []
