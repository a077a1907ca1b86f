"""Chapter 08's second edition (issue 16): the reply room an agent loop keeps (``AgentLoop(max_tokens=...)``),
the leaderboard text table within 100 characters, and ``sliding`` merged into ``budgeted`` on the chapter's board."""

from __future__ import annotations

import pytest

from ctxlab.base.errors import CtxlabError
from ctxlab.lab.ch08_leaderboard import MERGED, quick_strategies, run_fake_loop, same_contexts
from ctxlab.lab.compare import CompareRow, format_rows, leaderboard
from ctxlab.lab.workbook import load_workbook_conversation
from ctxlab.loop import AgentLoop
from ctxlab.io.session import Session
from ctxlab.tables.profiles import profile_for


@pytest.fixture(scope="module")
def sample():
    return load_workbook_conversation(None)


def test_with_max_tokens_every_request_leaves_the_whole_reply_room(tmp_path):
    """Anthropic, Context windows (https://platform.claude.com/docs/en/build-with-claude/context-windows, mirror
    snapshot 2026-08-22, as ModelProfile.input_limit and tests/test_wire_limits.py quote it): "if input tokens plus `max_tokens` exceeds the context window size, the API returns a validation
    error" on earlier models; newer ones stop at the window. With max_tokens the loop keeps input + max_tokens
    within the window at every step."""
    window, asked = 6_000, 1_024
    run = run_fake_loop(tmp_path / "run.jsonl", steps=12, window=window, max_tokens=asked)
    assert all(s.request_tokens + asked <= window for s in run.steps)
    assert all(s.max_tokens == asked for s in run.steps)
    assert any(s.compacted for s in run.steps)


def test_without_max_tokens_the_reply_room_shrinks(tmp_path):
    run = run_fake_loop(tmp_path / "loose.jsonl", steps=12, window=6_000)
    worst = min(run.steps, key=lambda s: s.max_tokens)
    assert worst.max_tokens == 6_000 - worst.request_tokens < 4_096  # reply_cap: what the window leaves


def test_max_tokens_above_the_models_output_limit_is_refused(tmp_path):
    profile = profile_for("claude-sonnet-4-6")
    if profile.max_output_tokens is None:
        pytest.skip("no max_output_tokens known for the default model")
    session = Session.create(tmp_path / "s.jsonl", system=["x"])
    with pytest.raises(CtxlabError, match="max_output_tokens"):
        AgentLoop(session, "compaction", model="claude-sonnet-4-6", max_tokens=profile.max_output_tokens + 1)
    assert len(Session.open(tmp_path / "s.jsonl")) == len(session)  # nothing written


def test_format_rows_fits_100_characters_even_with_an_error(sample):
    rows = list(leaderboard(sample, ["full", "compaction"], window=30_000).rows)
    rows.append(CompareRow("budgeted", None, None, 0, 0, 0, 0, error="x " * 120, contexts=0))
    text = format_rows(rows)
    assert all(len(line) <= 100 for line in text.splitlines())
    assert "x " * 10 in text and "in summaries" in text.splitlines()[0]


def test_sliding_is_merged_because_it_sends_what_budgeted_sends(sample):
    assert "sliding" in MERGED and "sliding" not in quick_strategies(sample)
    for window in (30_000, 50_000):
        same, calls = same_contexts(sample, "sliding", "budgeted", window=window)
        assert same == calls > 0
