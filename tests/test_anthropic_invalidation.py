"""Anthropic's cache invalidation, simulated: each row of the doc's table is a request pair whose read we predict.

Every test renders real contexts (``render_blocks``) and sends them through ``AnthropicCache``; the expected
read is the token count of the level the doc says survives (tools, tools + system, or up to a message).
Page: https://platform.claude.com/docs/en/build-with-claude/prompt-caching, text as captured in
gpambrozio/ClaudeDocs snapshot ff5b8ed (2026-08-22), read 2026-12-02.
"""

from __future__ import annotations

import pytest

from ctxlab.cache import prefix_diff
from ctxlab.cache_anthropic import AnthropicCache
from ctxlab.context import build_context
from ctxlab.fast.render_cache import RenderCache
from ctxlab.messages import Conversation, ImagePart, Message, TextPart, ThinkingPart, ToolSpec, tool_result, user
from ctxlab.messages import ToolCallPart
from ctxlab.render import level_salts, render_blocks, tool_choice_name
from ctxlab.tables.cache_invalidation import ANTHROPIC_INVALIDATION, first_level, row
from ctxlab.tables.cache_rules import ANTHROPIC_INVALIDATION as FROM_RULES
from ctxlab.tables.profiles import profile_for

MODEL = "claude-sonnet-4-6"  # minimum 1,024: the tools alone reach it, so the tools level has its own entry
TOOLS = tuple(ToolSpec(f"tool_{k}", "Does one thing. " * 60, {"type": "object", "properties": {}}) for k in range(3))
SYSTEM = ("You are a careful coding agent. " * 200,)


def context(messages, model=MODEL, tools=TOOLS, system=SYSTEM):
    return build_context(Conversation("c", tuple(messages), system=system, tools=tools), profile=profile_for(model))


def rendered(messages, model=MODEL, tools=TOOLS, system=SYSTEM, thinking=None, tool_choice="auto"):
    return render_blocks(context(messages, model, tools, system), "anthropic", model, thinking=thinking,
                         tool_choice=tool_choice)


def level_end(req, kind):
    """Tokens up to the last block of a level (the breakpoint an agent puts there)."""
    return req.cum_tokens[max(i for i, b in enumerate(req.blocks) if b.kind == kind)]


HISTORY = [user("Fix the flaky test, please. " * 30, "u1"),
           Message("assistant", (TextPart("Looking."), ToolCallPart("c1", "tool_0", "{}")), id="a1"),
           tool_result("c1", "the file's text " * 80, "t1")]


def second_read(first, second):
    cache = AnthropicCache()
    cache.request(first, 0.0)
    return cache.request(second, 10.0)


def test_the_table_is_the_one_cache_rules_names_and_says_what_survives():
    """"| **Tool choice** | ✓ | ✓ | ✘ | Changes to `tool_choice` parameter only affect message blocks |" and
    "| **Tool definitions** | ✘ | ✘ | ✘ |" (prompt-caching page, snapshot 2026-08-22, read 2026-12-02)."""
    assert FROM_RULES is ANTHROPIC_INVALIDATION
    assert row("tool_choice").survives == ("tools", "system") == row("images").survives
    assert next(r for r in ANTHROPIC_INVALIDATION if r.change == "tool definitions").survives == ()
    assert first_level("thinking") == "messages" and first_level("web_search") == "system"
    assert level_salts("high") == {"messages": "thinking=high"}
    assert level_salts("high", "any", True) == {"messages": "thinking=high;tool_choice=any;images"}
    with pytest.raises(KeyError, match="no invalidation row for 'colour'"):
        row("colour")


def test_same_request_reads_everything():
    a = rendered(HISTORY)
    assert second_read(a, rendered(HISTORY)).cache_read_tokens == a.total_tokens


def test_tool_choice_change_invalidates_messages_only():
    """"| **Tool choice** | ✓ | ✓ | ✘ | Changes to `tool_choice` parameter only affect message blocks |"
    (https://platform.claude.com/docs/en/build-with-claude/prompt-caching, snapshot 2026-08-22, read 2026-12-02)."""
    a, b = rendered(HISTORY), rendered(HISTORY, tool_choice={"type": "any"})
    o = second_read(a, b)
    # tools and system read, every message written again; b's head counts the any/tool prompt (589, not 497)
    assert o.cache_read_tokens == level_end(b, "system") == level_end(a, "system") + 589 - 497
    assert o.cache_write_tokens == b.total_tokens - level_end(b, "system") == a.total_tokens - level_end(a, "system")
    assert "tool_choice changed (auto → any)" in o.reason
    assert "tool_choice changed" in prefix_diff(a, b).reason and b.tool_choice == "any"
    assert tool_choice_name({"type": "tool", "name": "tool_1"}) == "tool:tool_1"


def test_adding_an_image_invalidates_messages_only():
    """"| **Images** | ✓ | ✓ | ✘ | Adding/removing images anywhere in the prompt affects message blocks |"
    (https://platform.claude.com/docs/en/build-with-claude/prompt-caching, snapshot 2026-08-22, read 2026-12-02)."""
    shot = Message("user", (TextPart("Here is the screenshot."), ImagePart(width=200, height=200, data_chars=9000)),
                   id="u2")
    a, b = rendered(HISTORY), rendered([*HISTORY, shot])
    assert b.images and not a.images
    o = second_read(a, b)
    assert o.cache_read_tokens == level_end(a, "system")  # without the rule: all of a (it is b's prefix)
    assert "images changed (False → True)" in o.reason
    no_image = rendered([*HISTORY, user("Here is the screenshot.", "u2")])
    assert second_read(a, no_image).cache_read_tokens == a.total_tokens  # the same growth without an image


def test_thinking_change_invalidates_messages_only():
    """"| **Thinking parameters** | Model-specific | Model-specific | ✘ |" (prompt-caching page, snapshot 2026-08-22,
    read 2026-12-02): the messages level always; ctxlab keeps tools and system (the documented minimum)."""
    a, b = rendered(HISTORY, thinking="off"), rendered(HISTORY, thinking="high")
    o = second_read(a, b)
    assert o.cache_read_tokens == level_end(a, "system") and "thinking changed (off → high)" in o.reason


def test_system_change_invalidates_system_and_messages():
    """"the cache follows the hierarchy: `tools` → `system` → `messages`. Changes at each level invalidate that level
    and all subsequent levels." (prompt-caching page, snapshot 2026-08-22, read 2026-12-02)."""
    a, b = rendered(HISTORY), rendered(HISTORY, system=("You are a terse coding agent. " * 200,))
    o = second_read(a, b)
    assert o.cache_read_tokens == level_end(a, "tools") >= 1024  # only the tools' entry survives


def test_tool_definition_change_invalidates_everything():
    """"| **Tool definitions** | ✘ | ✘ | ✘ |" (https://platform.claude.com/docs/en/build-with-claude/prompt-caching,
    snapshot 2026-08-22, read 2026-12-02)."""
    new_tools = (*TOOLS[:2], ToolSpec("tool_2", "Does another thing. " * 60, {"type": "object", "properties": {}}))
    a, b = rendered(HISTORY), rendered(HISTORY, tools=new_tools)
    o = second_read(a, b)
    assert o.cache_read_tokens == 0 and o.cache_write_tokens == b.total_tokens


# ---- earlier thinking stripped on last-turn-only models --------------------------------------------------------

THINK = "Let me reason about the failing test. " * 40


def turn_one():
    """u1, then a thinking assistant calling a tool, its result, and a thinking final answer."""
    a1 = Message("assistant", (ThinkingPart(THINK, signature="s1"), ToolCallPart("c1", "tool_0", "{}")), id="a1")
    a2 = Message("assistant", (ThinkingPart(THINK, signature="s2"), TextPart("Fixed: a race in setup.")), id="a2")
    return [HISTORY[0], a1, HISTORY[2], a2]


@pytest.mark.parametrize("model, kept", [("claude-sonnet-4-5", False), ("claude-haiku-4-5", False),
                                         ("claude-sonnet-4-6", True), ("claude-opus-4-5", True)])
def test_a_new_user_turn_strips_earlier_thinking_only_on_last_turn_only_models(model, kept):
    """"On Opus 4.5+ and Sonnet 4.6+, thinking blocks are preserved by default, so the cache remains valid (✓). On
    earlier Opus/Sonnet models and all Haiku models, all previously-cached thinking blocks are stripped from context,
    and any messages that follow those thinking blocks are removed from the cache (✘)." (prompt-caching page,
    section cache invalidation, gpambrozio/ClaudeDocs snapshot ff5b8ed, 2026-08-22, read 2026-12-02).

    Requests: [u1]; [u1, a1, t1] (a tool result: not a new user turn); [u1, a1, t1, a2, u2] (a new user turn).
    Haiku 4.5's minimum is 4,096: the system prompt is made long enough for every model."""
    system = ("You are a careful coding agent. " * 700,)
    u1, a1, t1, a2 = turn_one()
    steps = [[u1], [u1, a1, t1], [u1, a1, t1, a2, user("Now add a test for it.", "u2")]]
    reqs = [rendered(s, model, system=system, thinking="high") for s in steps]
    cache = AnthropicCache()
    outs = [cache.request(r, 10.0 * k) for k, r in enumerate(reqs)]
    assert outs[1].cache_read_tokens == reqs[0].total_tokens  # a tool loop keeps the thinking: the prefix holds
    until_u1, until_t1 = reqs[0].total_tokens, reqs[1].total_tokens
    if kept:
        assert outs[2].cache_read_tokens == until_t1  # everything the second request wrote
    else:
        assert outs[2].cache_read_tokens == until_u1  # up to the stripped thinking (a1's) and no further
        assert "earlier thinking stripped" in outs[2].reason
        assert "earlier thinking stripped" in prefix_diff(reqs[1], reqs[2]).reason


def test_the_render_cache_salts_and_strips_like_render_blocks():
    """The fast path (``ctxlab/fast/render_cache.py``) gives the same blocks on the requests above, a tool_choice
    change and an image appearing and disappearing."""
    system = ("You are a careful coding agent. " * 200,)
    u1, a1, t1, a2 = turn_one()
    shot = Message("user", (ImagePart(width=64, height=64, data_chars=900),), id="u3")
    steps = [([u1], "auto"), ([u1, a1, t1], "auto"), ([u1, a1, t1, a2, user("More.", "u2")], "auto"),
             ([u1, a1, t1, a2, user("More.", "u2")], "any"), ([u1, a1, t1, a2, user("More.", "u2"), shot], "any"),
             ([u1, a1, t1, a2, user("More.", "u2")], "any")]
    for model in ("claude-sonnet-4-5", "claude-sonnet-4-6"):
        fast = RenderCache()
        for msgs, choice in steps:
            ctx = context(msgs, model, system=system)
            plain = render_blocks(ctx, "anthropic", model, None, "high", tool_choice=choice)
            quick = fast(ctx, "anthropic", model, None, "high", tool_choice=choice)
            assert quick == plain, (model, len(msgs), choice)
