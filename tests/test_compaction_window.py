"""Compaction's calls within the window (issue 12: side calls are model calls), chapter 07.

Two bugs the property run found (``tests/test_properties.py``), each replayed here with ``check=True`` under
``compaction`` and ``pipeline``, with a Claude and an OpenAI model:

* the summary call was checked against the window without its reply, and its fallback ("fresh (the prefix is
  over the window)") sent every dropped message in one request: ``compaction`` at window 100 sent a summary call
  of 140 tokens. Now the call declares ``max_tokens`` (the cap the summary is held to), its request plus that
  must fit, and it goes on the cached prefix, on the prefix up to the first kept message, or fresh in chunks
  (``summarise_in_chunks``); when not even the prompt fits, no call is sent and a note says so;
* with ``metering="usage"`` the context could exceed the window: the chars/4 estimate does not see an image, so
  the meter put a 290-token context under the trigger of a 250-token window and it was sent as it was. Now a
  context counted over the budget is never sent as it is: it is compacted, or refused like counting refuses it.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_compaction import long_session

from ctxlab.base.errors import BudgetError
from ctxlab.compaction import CompactionError, CompactionPolicy, CompactionStrategy
from ctxlab.messages import Conversation, ImagePart, Message, TextPart, assistant, user
from ctxlab.pipeline import PipelineStrategy
from ctxlab.replay import replay
from helpers import Recording

MODELS = [("gpt-4o", "openai"), ("gpt-4", "openai"), ("claude-sonnet-4-5", "anthropic")]
USAGE = CompactionPolicy(metering="usage")
STRATEGIES = {"compaction": lambda: CompactionStrategy(), "compaction[usage]": lambda: CompactionStrategy(USAGE),
              "pipeline": lambda: PipelineStrategy(), "pipeline[usage]": lambda: PipelineStrategy(USAGE)}
TASK = "Fix the failing test in tests/test_api.py."


def long_first_message(model: str, provider: str) -> Conversation:
    """The side-call reproducer: compaction at window 100 sent a summary call of 140 tokens (+ its reply)."""
    return Conversation("r", (user(f"{TASK} " * 8, "u1"), user("x", "u2"), assistant("ok", "a3")),
                        model=model, provider=provider)


def image_turn(model: str, provider: str) -> Conversation:
    """The metering reproducer: usage-metered compaction at window 250 sent 290 tokens at call 2 (gpt-4o). Claude
    counts that 1 x 1 image at a few tokens, so for Claude the image is 500 x 500 (about 330 tokens)."""
    side = 500 if provider == "anthropic" else 1
    return Conversation("r", (user(TASK, "u1"), assistant("", "a2"),
                              Message("user", (TextPart(TASK), ImagePart("image/png", side, side, 1000)), "u3"),
                              assistant("", "a4")), model=model, provider=provider)



def checked(conv: Conversation, strategy, window: int):
    """The replay's result and its violations, or None when the strategy refused with a BudgetError that names
    a need over the budget (what every budgeted strategy may do when not even its floor fits)."""
    try:
        result = replay(conv, strategy, window=window, check=True)
    except BudgetError as err:
        assert err.needed > err.budget, str(err)
        return None, []
    return result, [f"call {rec.call.index}: {v}" for rec in result.records for v in rec.violations]


def assert_side_calls_fit(recording: Recording, window: int) -> None:
    for side in recording.sides:
        assert side.max_tokens is not None, f"a summary call without max_tokens: {side.note}"
        assert side.context.total_tokens + side.max_tokens <= window, side.note
        assert side.output_tokens <= side.max_tokens, side.note  # the reply stops at max_tokens


@pytest.mark.parametrize("model, provider", MODELS)
@pytest.mark.parametrize("name", ["compaction", "compaction[usage]"])
def test_the_summary_call_at_window_100_sends_no_call_over_the_window(name, model, provider):
    conv = long_first_message(model, provider)
    recording = Recording(STRATEGIES[name]())
    result, violations = checked(conv, recording, 100)
    assert result is not None and violations == []
    assert any(e.kind == "compaction" for e in result.new_entries)
    assert_side_calls_fit(recording, 100)
    notes = [n for d in recording.decisions for n in d.notes]
    # not even the fresh prompt fits with its max_tokens: no call, and the note says what is left out
    assert recording.sides == [] and any("no summary call fits" in n and "left out" in n for n in notes)
    assert not [r for r in result.ledger.rows if r.overflow]


@pytest.mark.parametrize("model, provider", MODELS)
@pytest.mark.parametrize("name", list(STRATEGIES))
@pytest.mark.parametrize("make", [long_first_message, image_turn], ids=["long-first-message", "image-turn"])
def test_every_window_either_refuses_or_keeps_every_call_within_it(make, name, model, provider):
    """The windows where these examples broke a rule (64 to 1,200 tokens) and a little above, each replayed: a
    refusal (a BudgetError over the budget), or no violation — side calls within the window with their max_tokens.
    Up to 1,400 since issue 13: the pipeline's tool for Claude Sonnet 4.5 carries the 496-token tool prompt (346
    before), so its floor passes 1,200."""
    conv, replayed = make(model, provider), 0
    for window in range(64, 1_400, 6):
        recording = Recording(STRATEGIES[name]())
        result, violations = checked(conv, recording, window)
        assert violations == [], f"{name} at window {window}: {violations}"
        assert_side_calls_fit(recording, window)
        replayed += result is not None
    assert replayed, "some window must replay to the end"


@pytest.mark.parametrize("model, provider", MODELS)
def test_usage_metering_refuses_what_counting_refuses_instead_of_sending_it(model, provider):
    """Call 2 adds an image the chars/4 estimate cannot see: metered about 35 tokens, counted 290 at window 250
    (budget 225). Sent as it was, that body was over the window; now it is compacted — and here even the floor is
    over the budget, so it is refused exactly as the counting meter refuses it."""
    conv = image_turn(model, provider)
    with pytest.raises(CompactionError) as counted:
        replay(conv, CompactionStrategy(), window=250, check=True)
    with pytest.raises(CompactionError) as metered:
        replay(conv, CompactionStrategy(USAGE), window=250, check=True)
    assert str(metered.value) == str(counted.value) and metered.value.needed > metered.value.budget


@pytest.mark.parametrize("model, provider, window", [(*m, w) for m, w in zip(MODELS, (320, 320, 416))])
def test_usage_metering_compacts_a_context_counted_over_the_budget(model, provider, window):
    """At a window where the floor fits, the usage-metered strategy compacts the context its meter put under the
    trigger, says why, and sends a context within the budget."""
    conv = image_turn(model, provider)
    recording = Recording(CompactionStrategy(USAGE))
    result, violations = checked(conv, recording, window)
    assert result is not None and violations == []
    last = recording.decisions[-1]
    assert any("under the trigger, but counted" in n for n in last.notes)
    assert last.new_entries and last.context.total_tokens <= last.context.budget_tokens


@pytest.mark.parametrize("model, provider", [("claude-sonnet-4-5", "anthropic"), ("gpt-4o", "openai")])
@pytest.mark.parametrize("name", ["compaction", "pipeline"])
def test_summary_calls_take_the_first_way_that_fits(name, model, provider):
    """Over a long session and a range of windows, every summary call declares max_tokens and fits the window
    with it; all three ways are taken: the whole cached prefix, its part before the kept messages, fresh."""
    conv, ways = replace(long_session(), model=model, provider=provider), set()
    for window in (1_500, 2_000, 2_500, 3_000, 4_000, 6_000, 8_000, 12_000):
        recording = Recording(STRATEGIES[name]())
        _, violations = checked(conv, recording, window)
        assert violations == [], f"{name} at window {window}: {violations}"
        assert_side_calls_fit(recording, window)
        ways |= {"fresh" if "fresh" in s.note else s.note for s in recording.sides}
    assert ways == {"on the cached prefix", "on the cached prefix up to the kept messages", "fresh"}
