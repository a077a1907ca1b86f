"""``replay --compare`` on files of several conversations, and ``--check``'s exit code when a
strategy cannot build a context (it used to print the leaderboard and exit 0 when all failed)."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import run
from ctxlab.io import formats

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
    from ctxlab.io.session import Session

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


def test_compare_lenient_lists_the_skipped_lines(capsys, tmp_path):
    lines = MULTI.read_text(encoding="utf-8").splitlines()
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text("\n".join(lines[:1] + ['{"messages": [tor'] + lines[1:]) + "\n", encoding="utf-8")
    code, out, err = run(capsys, "replay", damaged, "--compare", "--lenient")
    assert code == 0, err
    assert "note: skipped line 2:" in out
    code, out, err = run(capsys, "replay", damaged, "--compare", "--lenient", "--json")
    assert any(n.startswith("skipped line 2:") for n in json.loads(out)["notes"])


def test_a_conversation_picked_by_its_id(capsys):
    conv = formats.load(MULTI).conversations[1]
    for command in (["--compare"], ["--strategy", "budgeted"]):
        code, out, err = run(capsys, "replay", MULTI, *command, "--conversation", conv.id, "--json")
        assert code == 0, err
        body = json.loads(out)
        assert body.get("conversation", (body.get("conversations") or [None])[0]) == conv.id
    code, out, err = run(capsys, "replay", MULTI, "--compare", "--conversation", "no such id")
    assert code == 2 and "has no conversation 'no such id': give an index 0.." in err


def test_one_failing_conversation_does_not_blank_the_sums(capsys, tmp_path):
    # a file of two conversations, one of which no strategy but `full` can fit in a 300-token window
    small = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    big = {"messages": [{"role": "user", "content": "word " * 600}, {"role": "assistant", "content": "ok"}]}
    path = tmp_path / "two.jsonl"
    path.write_text(json.dumps(small) + "\n" + json.dumps(big) + "\n", encoding="utf-8")
    code, out, err = run(capsys, "replay", path, "--compare", "--window", "300", "--json")
    body = json.loads(out)
    budgeted = next(r for r in body["strategies"] if r["name"] == "budgeted")
    alone = next(r for r in body["conversations"][0]["strategies"] if r["name"] == "budgeted")
    assert budgeted["error"] is None and budgeted["total_input_tokens"] == alone["total_input_tokens"] > 0
    assert any(n.startswith("budgeted: could not build a context in 1 of 2 conversations, left out of its sums "
                            "(first: #1 ") for n in body["notes"])
