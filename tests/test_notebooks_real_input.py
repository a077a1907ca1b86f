"""Chapters 00–03 run top to bottom on real transcripts, not only on the bundled sample.

Each chapter is executed with nbclient in a fresh kernel with its ``TRANSCRIPT = None`` line
replaced by a shared transcript: pi's ``before-compaction.jsonl`` (~1,000 messages, no tool
definitions recorded) and a Claude Code session (sub-agent threads, meta lines); chapters 02 and 03
also on a swe-agent ReAct trajectory (no tool calls: actions are text) and an OpenHands run (a
single user turn). Outputs are not compared with the committed ones; the run must finish without
an error, the cells that set a widget's control and print its state must show the widget reacted,
and no working copy of chapter 02 may be left behind.

The default run executes each chapter once, on a different format (00 on pi, 01 on Claude Code, 02 on
OpenHands, 03 on swe-agent: the two fallbacks); the other eight cases carry the ``thorough`` marker
(``python run.py test -m thorough``). A run costs 2–5 s of CPU, much of it the kernel's start.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from notebook_runner import cell_output, matrix, run_on, shared_file  # tests/notebook_runner.py

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
CHAPTERS = ("00_start_here", "01_token_accounting", "02_session_and_context", "03_interactions_and_budget")
TRANSCRIPTS = {"pi": "pi-mono/before-compaction.jsonl", "claude-code": "claude-code-viewer/*.jsonl",
               "swe-agent-react": "swe-agent/ctf_web_i_got_id_demo.traj", "openhands": "openhands/*.jsonl"}
# chapter -> the transcripts it runs on (swe-agent: no tool call, for 03; openhands: one user turn, for 02)
CASES = [(chapter, which) for chapter in CHAPTERS for which in ("claude-code", "pi")] + [
    (chapter, which) for chapter in ("02_session_and_context", "03_interactions_and_budget")
    for which in ("openhands", "swe-agent-react")]
DEFAULT = {("00_start_here", "pi"), ("01_token_accounting", "claude-code"), ("02_session_and_context", "openhands"),
           ("03_interactions_and_budget", "swe-agent-react")}  # the rest: -m thorough

# chapter -> (a line of the driving cell's source, text its output must contain)
REACTIONS = {
    "00_start_here": ("bill.pricing.value = choice", "no prompt cache: $"),
    "01_token_accounting": ('xr.encoding.value = encoding', "cl100k_base"),
    "02_session_and_context": ("branch.leaf.value = leaf", "fork-u1"),
    "03_interactions_and_budget": ("w.budget.value = budget", "the bar adds up to the budget every time: True"),
}


@pytest.mark.shared
@pytest.mark.parametrize(("chapter", "which"), matrix(CASES, DEFAULT))
def test_chapter_runs_on_a_real_transcript(shared_transcripts: Path, chapter: str, which: str, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    transcript = shared_file(shared_transcripts, TRANSCRIPTS[which])
    # the kernel's temporary folders (the working copy of chapter 02) go under this test's tmp_path
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    nb = run_on(f"{chapter}.ipynb", transcript, timeout=120)
    assert not list(tmp_path.glob("ctxlab-ch02-*")), "a working copy outlived the kernel"
    marker, expected = REACTIONS[chapter]
    text = cell_output(nb, marker)
    assert expected in text, text
