"""Chapters 07 (with its going-further notebook) and 08 run top to bottom on real transcripts, not only on the bundled sample.

The same check as ``test_ch04_real_input.py``: each chapter is executed with nbclient in a fresh kernel
with its ``TRANSCRIPT = None`` line replaced by a shared transcript (pi's ``before-compaction.jsonl``,
484 calls and two recorded compactions; a Claude Code session cut to its main thread, whose 16,000-token
tools and system prompt make compaction's floor matter). Outputs are not compared with the committed
ones; the run must finish without an error, and the cells that set a widget's controls, and the cell that
measures the learner's own transcript, must print what shows they reacted.

Runtime: chapter 07 replays the transcript about fifteen times (pi: about 20 s of CPU); chapter 08 compares
four strategies and ``recorded`` on a long transcript instead of all nine (pi: about 16 s). The default run
uses the Claude Code session (about 5 and 8 s); pi carries the ``thorough`` marker (``python run.py test -m
thorough``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from notebook_runner import cell_output, matrix, run_on, shared_file  # tests/notebook_runner.py

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
CHAPTERS = ("07_compaction", "07_compaction_further", "08_putting_it_together")
TRANSCRIPTS = {"pi": "pi-mono/before-compaction.jsonl", "claude-code": "claude-code-viewer/*.jsonl"}
# chapter -> ((a line of a cell's source, text its output must contain), ...)
CHECKS = {
    "07_compaction": (("for slider, value in", "the largest context stays inside"),
                      ("print(policy_table([trims_pi, small, batch]))", "Verdict: ")),
    "07_compaction_further": (("cov = coverage_after(conv, WINDOW)", ""),
                              ("first = first_triggers(conv, windows)", "counting: first compaction at call")),
    "08_putting_it_together": (("lw.strategy.value = strategy", "cheapest inside the window"),
                               ("own = own_leaderboard(mine)", "strategy ")),
}


@pytest.mark.shared
@pytest.mark.parametrize(("chapter", "which"), matrix([(c, w) for c in CHAPTERS for w in sorted(TRANSCRIPTS)],
                                                       {(c, "claude-code") for c in CHAPTERS}))
def test_chapter_runs_on_a_real_transcript(shared_transcripts: Path, chapter: str, which: str) -> None:
    nb = run_on(f"{chapter}.ipynb", shared_file(shared_transcripts, TRANSCRIPTS[which]), timeout=240)
    for marker, expected in CHECKS[chapter]:
        text = cell_output(nb, marker)
        assert text.strip(), f"{chapter}: the cell with {marker!r} printed nothing"
        assert expected in text, text
