"""``python -m ctxlab replay``: ledger output, --json, --check, --recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import run
from ctxlab.cli.main import main

SAMPLE = str(Path(__file__).resolve().parents[1] / "data" / "sample_session.jsonl")


@pytest.mark.parametrize("strategy", ["full", "sliding", "budgeted", "recorded"])
def test_replay_json_has_rows_totals_prices(capsys, strategy):
    code, out, err = run(capsys, "replay", SAMPLE, "--strategy", strategy, "--window", "40000", "--json", "--check")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["strategy"] == strategy and doc["check"]["ok"] is True
    assert doc["prices"]["package"] == "genai-prices"
    row = doc["rows"][0]
    for field in ("thread", "call", "total_input_tokens", "cache_read_tokens", "cache_write_tokens",
                  "uncached_input_tokens", "output_tokens", "cost_usd", "hit_rate"):
        assert field in row
    assert doc["totals"]["calls"] == len(doc["rows"])
    assert sum(r["cache_read_tokens"] for r in doc["rows"]) == doc["totals"]["cache_read_tokens"]


def test_small_window_shows_the_strategies_apart(capsys):
    totals = {}
    for strategy in ("full", "budgeted"):
        _, out, _ = run(capsys, "replay", SAMPLE, "--strategy", strategy, "--window", "30000", "--json")
        totals[strategy] = json.loads(out)["totals"]
    assert totals["full"]["overflow_calls"] > 0 and totals["budgeted"]["overflow_calls"] == 0
    assert totals["budgeted"]["total_input_tokens"] < totals["full"]["total_input_tokens"]


def test_check_failure_names_call_and_rule(capsys, monkeypatch):
    import sys

    from ctxlab.checks import Violation

    replay_module = sys.modules["ctxlab.replay"]  # `ctxlab.replay` the attribute is the function
    monkeypatch.setattr(replay_module, "check_context", lambda ctx, hist, s, **kw: [Violation("pairing", "planted")])
    code, _, err = run(capsys, "replay", SAMPLE, "--check")
    assert code == 1
    assert "call 1" in err and "pairing: planted" in err


def test_text_output_lists_calls_and_a_total_line(capsys):
    code, out, _ = run(capsys, "replay", SAMPLE, "--rows", "5")
    assert code == 0
    assert "all: 77 calls" in out and "hit rate" in out and "genai-prices" in out


def test_bad_file_is_one_line_exit_2(capsys, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    code, out, err = run(capsys, "replay", str(bad))
    assert code == 2 and "Traceback" not in err and "bad.jsonl" in err


@pytest.mark.shared
@pytest.mark.parametrize("rel", ["pi-mono/before-compaction.jsonl",
                                 "claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"])
def test_recorded_ledger_and_fidelity_on_shared(capsys, shared_transcripts, rel):
    code, out, err = run(capsys, "replay", str(shared_transcripts / rel), "--recorded", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["fidelity"]["structural"]["within"] > 0.97
    assert doc["fidelity"]["end_to_end"]["within"] > 0.9
    assert doc["totals"]["cost_usd"] > 0


@pytest.mark.shared
@pytest.mark.parametrize("strategy", ["full", "sliding", "budgeted", "recorded"])
def test_every_strategy_checks_clean_on_claude_code(capsys, shared_transcripts, strategy):
    path = shared_transcripts / "claude-code-viewer" / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
    code, out, err = run(capsys, "replay", str(path), "--strategy", strategy, "--check", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["check"]["ok"]
    assert {r["thread"] for r in doc["rows"]} == set(doc["per_thread"]) and len(doc["per_thread"]) > 1


def test_a_torn_last_line_is_said_not_dropped_silently(capsys, tmp_path):
    torn = tmp_path / "torn.jsonl"
    data = Path(SAMPLE).read_bytes()
    torn.write_bytes(data[: len(data) - 300])
    code, out, _ = run(capsys, "replay", str(torn), "--json")
    assert code == 0
    assert any("torn last line" in n for n in json.loads(out)["notes"])


def test_window_must_be_positive(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["replay", SAMPLE, "--window", "0"])
    assert exit_.value.code == 2 and "positive number of tokens" in capsys.readouterr().err


def test_one_bad_conversation_of_many_is_skipped_and_named(capsys, tmp_path):
    runs = [{"task_id": 0, "trial": 0, "reward": 1, "info": {}, "traj": [
                {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]},
            {"task_id": 1, "trial": 0, "reward": 0, "info": {}, "traj": [  # a question no 2,000-token window holds
                {"role": "user", "content": "hi " * 3_000}, {"role": "assistant", "content": "done"}]}]
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(runs), encoding="utf-8")
    code, out, err = run(capsys, "replay", str(path), "--json", "--window", "2000")
    doc = json.loads(out)
    assert code == 0 and doc["skipped_conversations"] == ["task1-trial0"]
    assert "1 of 2 conversations could not be replayed" in err
    assert len(doc["rows"]) == 1
