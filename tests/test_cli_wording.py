"""Error lines a fresh user met after the restructuring (issue 15's trial): each is one sentence, then the hint."""

from __future__ import annotations

from ctxlab.base.errors import TranscriptError
from ctxlab.cli.main import main
from ctxlab.lab.data import SAMPLE_SESSION


def test_a_problem_without_its_own_full_stop_gets_one_before_the_hint():
    err = TranscriptError("s.jsonl", 2, "missing key 'role'", hint="Fix the line.")
    assert str(err) == "s.jsonl:2: missing key 'role'. Fix the line."
    ended = TranscriptError("s.jsonl", 2, "not JSON (column 29).", hint="Fix the line.")
    assert str(ended) == "s.jsonl:2: not JSON (column 29). Fix the line."


def test_negative_rows_is_refused_in_one_line(capsys):
    assert main(["replay", str(SAMPLE_SESSION), "--rows", "-1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--rows must be 0 or more" in err[0] and "-1" in err[0]
