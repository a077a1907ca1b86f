"""``replay --compare`` on files of several conversations, and ``--check``'s exit code when a
strategy cannot build a context (it used to print the leaderboard and exit 0 when all failed)."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import run
from ctxlab import formats

FIX = Path(__file__).resolve().parent / "fixtures" / "formats"
MULTI = FIX / "messages.jsonl"  # one conversation per line


def test_every_conversation_is_compared_and_the_table_is_their_sum(capsys):
    conversations = formats.load(MULTI).conversations
    assert len(conversations) > 1
    code, out, err = run(capsys, "replay", MULTI, "--compare", "--check", "--json")
    assert code == 0, err
    body = json.loads(out)
    assert [c["conversation"] for c in body["conversations"]] == [c.id for c in conversations]
    for i, total in enumerate(body["strategies"]):
        parts = [c["strategies"][i] for c in body["conversations"]]
        assert {p["name"] for p in parts} == {total["name"]}
        assert total["total_input_tokens"] == sum(p["total_input_tokens"] for p in parts) > 0
        assert total["overflows"] == sum(p["overflows"] for p in parts)
    code, out, _ = run(capsys, "replay", MULTI, "--compare", "--check")
    assert code == 0 and f"({len(conversations)} conversations, summed)" in out and "check: OK" in out


def test_one_conversation_keeps_the_single_shape(capsys):
    code, out, err = run(capsys, "replay", MULTI, "--compare", "--conversation", "1", "--json")
    assert code == 0, err
    body = json.loads(out)
    assert body["conversation"] == formats.load(MULTI).conversations[1].id and "conversations" not in body


def test_check_fails_when_a_strategy_cannot_build_a_context(capsys):
    # a 40-token window holds no conversation's fixed part: every strategy but `full` refuses
    code, out, err = run(capsys, "replay", MULTI, "--compare", "--window", "40")
    assert code == 0 and "cannot build a context" in out  # without --check the table says why
    code, out, err = run(capsys, "replay", MULTI, "--compare", "--window", "40", "--check")
    assert code == 1
    assert err.count("\n") == 1 and "could not build a context" in err and "strategy " in err
    assert "conversation " in err


def test_a_checklist_needs_one_conversation(capsys):
    code, out, err = run(capsys, "replay", MULTI, "--compare", "--facts", FIX / "missing.json")
    assert code == 2 and "--conversation N" in err and err.count("\n") == 1


def test_a_recorded_prompt_over_the_window_is_named(capsys, tmp_path):
    # aider's shared log says it sent 10,466 tokens to gpt-4 (an 8,192-token window): a transcript's
    # own figures can be over the window; then no strategy fits and the note says why
    from ctxlab.messages import Usage, assistant, user
    from ctxlab.session import Session

    path = tmp_path / "over.jsonl"
    session = Session.create(path, model="gpt-4", provider="openai")
    session.append(user("Run the tests.", "u1"))
    session.append(assistant("Done.", "a1", model="gpt-4", usage=Usage(uncached_input_tokens=10_466, output_tokens=5)))
    code, out, err = run(capsys, "replay", path, "--compare", "--check")
    assert code == 1 and "could not build a context" in err
    assert "note: conversation over: 1 recorded call(s) sent more than the 8,192-token window of gpt-4" in out
    assert "(the largest 10,466 tokens" in out and "--window N" in out
    code, out, err = run(capsys, "replay", path, "--compare", "--check", "--window", "20000")
    assert code == 0 and "note:" not in out
