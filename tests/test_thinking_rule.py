"""The meter counts earlier thinking by the model's documented rule (issue 13): keep_all vs last_turn_only.

Source: Anthropic, 'Thinking' (https://platform.claude.com/docs/en/build-with-claude/thinking), mirror snapshot
ff5b8ed 2026-08-22, read 2026-12-02; the older wording from 'Prompt caching', snapshot e57bffd8 (2026-01-13).
"""

from __future__ import annotations

from ctxlab.lab.calibration import measure_calibration
from ctxlab.messages import Conversation, Message, TextPart, ThinkingPart, Usage, assistant, tool_result, user
from ctxlab.tables.profiles import profile_for
from ctxlab.tokens import MessageMeter, TiktokenCounter, thinking_counts

def test_keep_all_models_count_earlier_turns_thinking():
    """"**Keep all prior turns:** Claude Opus 4.5 and later Opus models, Claude Sonnet 4.6 and later Sonnet models,
    Claude Fable 5, Claude Mythos 5, and Claude Mythos Preview." and "On models that keep all prior turns, previous
    thinking blocks remain in context, count toward the window, and are billed as input tokens like the rest of the
    conversation history." (Thinking, snapshot ff5b8ed 2026-08-22)."""
    for model in ("claude-opus-4-5", "claude-opus-4-6", "claude-opus-4-7", "claude-opus-5", "claude-sonnet-4-6",
                  "claude-sonnet-5"):
        p = profile_for(model)
        assert p.thinking == "all", model
        assert thinking_counts(p, 3, last_user=4) and thinking_counts(p, 5, last_user=4)
        assert "Thinking https://platform.claude.com/docs/en/build-with-claude/thinking" in p.source


def test_last_turn_only_models_strip_earlier_turns_thinking():
    """"**Keep the last turn only:** earlier Opus and Sonnet models, and all Haiku models through Claude Haiku 4.5.
    When you pass older thinking blocks back, the API strips them automatically. You don't need to remove them
    yourself." (Thinking, snapshot ff5b8ed 2026-08-22)."""
    for model in ("claude-opus-4-1", "claude-sonnet-4", "claude-sonnet-4-5", "claude-haiku-4-5"):
        p = profile_for(model)
        assert p.thinking == "current_turn", model
        assert not thinking_counts(p, 3, last_user=4) and thinking_counts(p, 5, last_user=4)


def test_sonnet_4_6_before_2026_04_28_stripped_earlier_thinking():
    """"When non-tool results are passed in requests while extended thinking is enabled, all previously-cached
    thinking blocks are stripped from context" (Prompt caching, snapshot e57bffd8 2026-01-13): the old behaviour,
    in force for Sonnet 4.6 until the 2026-04-28 snapshot; before issue 13 ctxlab applied it to every Claude."""
    assert profile_for("claude-sonnet-4-6", on="2026-04-27").thinking == "current_turn"
    assert profile_for("claude-sonnet-4-6", on="2026-04-28").thinking == "all"
    assert profile_for("gpt-5").thinking == "none" and not thinking_counts(profile_for("gpt-5"), 5, last_user=-1)


def _two_turns(model: str, added: int) -> Conversation:
    """u1, a1 (thinking + text, usage), u2, a2 (usage): a2's prompt grew by ``added`` tokens over a1's."""
    a1 = Message(role="assistant", parts=(ThinkingPart("weigh the options " * 30), TextPart("Use a dict.")), id="a1",
                 model=model, provider="anthropic",
                 usage=Usage(uncached_input_tokens=3, cache_write_tokens=2000, cache_read_tokens=0))
    a2 = assistant("Done.", "a2", model=model, provider="anthropic",
                   usage=Usage(uncached_input_tokens=3, cache_write_tokens=added, cache_read_tokens=2000))
    return Conversation("c", (user("pick a structure", "u1"), a1, user("go on", "u2"), a2), model=model,
                        provider="anthropic")


def test_calibration_counts_thinking_and_crosses_user_turns_only_on_keep_all():
    """The previous sentence's rule in the calibration: on a keep_all model the pair a1 -> a2 is measured across the
    user message, a1's thinking counted; on a last_turn_only model the API strips it then, so the pair is skipped."""
    meter = MessageMeter(profile_for("claude-sonnet-4-6"), TiktokenCounter("o200k_base"))
    conv = _two_turns("claude-sonnet-4-6", 400)
    report = measure_calibration(conv)
    counted = meter.message(conv.messages[1], True) + meter.message(conv.messages[2])
    assert report is not None and report.pairs == 1 and report.counted_tokens == counted
    assert counted > meter.message(conv.messages[1], False) + meter.message(conv.messages[2])
    assert measure_calibration(_two_turns("claude-sonnet-4-5", 400)) is None


def test_calibration_counts_the_current_loops_thinking_on_last_turn_only():
    """"When you pass older thinking blocks back, the API strips them automatically" — older turns only: within one
    tool-use loop the reply's thinking is sent back and counted (Thinking, snapshot ff5b8ed 2026-08-22)."""
    a1 = Message(role="assistant", parts=(ThinkingPart("check the file " * 25), TextPart("Reading.")), id="a1",
                 model="claude-sonnet-4-5", provider="anthropic",
                 usage=Usage(uncached_input_tokens=3, cache_write_tokens=2000, cache_read_tokens=0))
    t1 = tool_result("c1", "print('hi')\n" * 20, "t1")
    a2 = assistant("Done.", "a2", model="claude-sonnet-4-5", provider="anthropic",
                   usage=Usage(uncached_input_tokens=3, cache_write_tokens=500, cache_read_tokens=2000))
    conv = Conversation("c", (user("read it", "u1"), a1, t1, a2), model="claude-sonnet-4-5", provider="anthropic")
    meter = MessageMeter(profile_for("claude-sonnet-4-5"), TiktokenCounter("o200k_base"))
    report = measure_calibration(conv)
    assert report is not None and report.counted_tokens == meter.message(a1, True) + meter.message(t1)
