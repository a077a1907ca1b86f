"""``replay --compare`` says how far it is on a terminal, and prints nothing extra into a pipe or a file.

On pi the leaderboard takes tens of seconds; with no line on the screen a user took it for a hang (trial of
issue 18). The progress goes to stderr only when stderr is a terminal, so ``--json`` readers and CI logs see
the same bytes as before.
"""

from __future__ import annotations

import io
import sys

import pytest

from ctxlab.cli.main import main
from ctxlab.lab.data import SAMPLE_SESSION


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def run(monkeypatch: pytest.MonkeyPatch, stderr: io.StringIO, capsys: pytest.CaptureFixture[str]) -> str:
    monkeypatch.setattr(sys, "stderr", stderr)
    assert main(["replay", str(SAMPLE_SESSION), "--compare", "--window", "30000"]) == 0
    return capsys.readouterr().out


def test_a_terminal_sees_each_strategy_counted(monkeypatch, capsys) -> None:
    screen = Terminal()
    out = run(monkeypatch, screen, capsys)
    said = screen.getvalue()
    rows = [line for line in out.splitlines()[3:] if line.strip() and not line.startswith("note")]
    assert f"\r{len(rows)} strategies replayed" in said  # one update per leaderboard row, the last one the total
    assert said.count("\r") == len(rows) and said.endswith("\n")


def test_a_pipe_sees_nothing_on_stderr(monkeypatch, capsys) -> None:
    pipe = io.StringIO()
    out = run(monkeypatch, pipe, capsys)
    assert pipe.getvalue() == "" and "compaction" in out
