"""A replay's overflow rule holds a call to both limits: input + reply within the window, and input within the
model's ``max_input_tokens`` (GPT-5: 272,000 of a 400,000 window).

Source of the GPT-5 figure (reported, not an official page): the API's error quoted on the OpenAI Developer
Community, "Input tokens exceed the configured limit of 272,000 tokens. Your messages resulted in 297,006 tokens."
(https://community.openai.com/t/huge-gpt-5-documentation-gap-flaw-causing-bugs-input-tokens-exceed-the-configured-
limit-of-272-000-tokens/1344734, no page date, read 2026-12-02). The tests use a hand-built profile (window 1,000,
input limit 600) so that small transcripts cross each limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import importlib

import pytest

from ctxlab.messages import Conversation, Message, TextPart, ToolSpec, user
from ctxlab.strategies import Decision, SideCall, overflow_note, whole_context
from ctxlab.tables.profiles import ModelProfile, profile_for

replay_module = importlib.import_module("ctxlab.replay")  # the module (ctxlab.replay is also the function's name)
TOY = ModelProfile(name="toy", provider="openai", context_window=1_000, max_input_tokens=600)


@pytest.fixture
def toy(monkeypatch):
    """Every call of a replay gets the toy profile."""
    monkeypatch.setattr(replay_module, "profile_for", lambda model, provider=None: TOY)


def growing(n: int, words: int = 40) -> Conversation:
    """``n`` user/assistant turns of about ``words`` tokens each: the prompt grows at every call."""
    items = []
    for k in range(1, n + 1):
        items += [user("word " * words, f"u{k}"), Message("assistant", (TextPart("ok " * 5),), id=f"a{k}")]
    return Conversation("c", tuple(items), model="toy", provider="openai")


def test_the_note_names_the_limit_it_breaks():
    assert overflow_note(600, TOY) == ""
    assert overflow_note(601, TOY) == "overflow: 601 > input limit 600 (max_input_tokens of toy; window 1,000)"
    assert overflow_note(1_001, TOY) == "overflow: 1,001 > window 1,000"
    assert overflow_note(500, TOY, reply_tokens=501) == "overflow: 500 + reply 501 > window 1,000"
    gpt5 = profile_for("gpt-5")
    assert (gpt5.context_window, gpt5.max_input_tokens) == (400_000, 272_000)
    assert "input limit 272,000" in overflow_note(272_001, gpt5) and overflow_note(272_000, gpt5) == ""


@pytest.mark.parametrize("strategy", ["full", "recorded"])
def test_a_replay_counts_calls_over_the_input_limit_as_overflows(toy, strategy):
    result = replay_module.replay(growing(24), strategy)
    sizes = [r.context_tokens for r in result.records]
    assert any(600 < s <= 1_000 for s in sizes) and any(s > 1_000 for s in sizes)  # the transcript crosses both
    for record, row in zip(result.records, result.ledger.rows):
        assert record.overflow == row.overflow == (record.context_tokens > 600)
        if 600 < record.context_tokens <= 1_000:
            assert "> input limit 600" in row.note
        elif record.context_tokens > 1_000:
            assert "> window 1,000" in row.note and "input limit" not in row.note
    assert result.ledger.totals().overflow_calls == sum(s > 600 for s in sizes)


def test_without_an_input_limit_only_the_window_counts(monkeypatch):
    monkeypatch.setattr(replay_module, "profile_for", lambda model, provider=None: ModelProfile(
        name="toy", provider="openai", context_window=1_000))
    result = replay_module.replay(growing(24), "full")
    assert [r.overflow for r in result.records] == [r.context_tokens > 1_000 for r in result.records]
    assert any(600 < r.context_tokens <= 1_000 and not r.overflow for r in result.records)


@dataclass
class SummaryEveryCall:
    """Sends the whole history and, before it, a side call with the same context and a reply cap."""

    max_tokens: int = 50
    name: str = "side-every-call"
    budgeted: ClassVar[bool] = False
    added_tools: ClassVar[tuple[ToolSpec, ...]] = ()

    def decide(self, history, call, profile, meter):
        ctx = whole_context(history, profile, meter)
        return Decision(ctx, side_calls=(SideCall("summary", ctx, 10, "test", max_tokens=self.max_tokens),))


def test_a_side_call_over_the_input_limit_is_an_overflow_and_a_violation(toy):
    result = replay_module.replay(growing(24), SummaryEveryCall(), check=True)
    sides = [r for r in result.ledger.rows if r.kind == "summary"]
    over_input = [r for r in sides if 600 < r.total_input_tokens and r.total_input_tokens + 50 <= 1_000]
    assert over_input and all(r.overflow and "> input limit 600" in r.note for r in over_input)
    assert all(not r.overflow for r in sides if r.total_input_tokens <= 600 and r.total_input_tokens + 50 <= 1_000)
    rules = [v for rec in result.records for v in rec.violations if v.rule == "side_call_window"]
    assert any("over the input limit of 600" in v.detail for v in rules)
    assert len(rules) == sum(r.overflow for r in sides)


@pytest.mark.parametrize("strategy", ["full", "recorded"])
def test_the_overflow_note_states_the_rows_own_prompt(sample, strategy):
    """One count per call: the overflow is judged on the prompt the row shows (what is sent), and the note's
    figure is that prompt (a fresh tester found the note's figure above the row's on a real transcript)."""
    rows = replay_module.replay(sample, strategy, window=12_000).ledger.rows
    flagged = [r for r in rows if r.overflow]
    assert flagged and all(r.total_input_tokens > 12_000 for r in flagged)
    assert all(r.total_input_tokens <= 12_000 for r in rows if not r.overflow)
    for r in flagged:
        figure = next(n for n in r.note.split("; ") if n.startswith("overflow:")).split()[1]
        assert int(figure.replace(",", "")) == r.total_input_tokens, r.note
