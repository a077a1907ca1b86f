"""Chapters 05 and 06 run top to bottom on real transcripts, not only on the bundled sample.

The same check as ``test_ch04_real_input.py``: each chapter is executed with nbclient in a fresh kernel
with its ``TRANSCRIPT = None`` line replaced by a shared transcript (pi's ``before-compaction.jsonl``:
484 calls, a 49,931-character ``read`` result, a hand-written checklist; a Claude Code session cut to
its main thread: small results, no checklist, no Chinese). Outputs are not compared with the committed
ones; the run must finish without an error and the cells that set the widgets' controls must show the
widgets reacted.

The default run uses the Claude Code session (about 5 s of CPU per chapter). pi carries the ``thorough``
marker (``python run.py test -m thorough``): chapter 06 takes about 90 s of CPU on it (its placement
replays run 484 calls each, seven times), chapter 05 about 11 s.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from notebook_runner import cell_output, matrix, run_on, shared_file  # tests/notebook_runner.py

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
TRANSCRIPTS = {"pi": "pi-mono/before-compaction.jsonl", "claude-code": "claude-code-viewer/*.jsonl"}
# notebook -> (a line of a cell's source, text its output must contain)
CHECKS = {
    "05_pruning_and_paging.ipynb": (
        ("w.head.value, w.tail.value = head, tail", "every pruned text within its budget: True"),
        ("read back exactly as recorded", "read back exactly as recorded: True"),
        ("cap_comparison(conv", "recomputed cap"),
    ),
    "06_summaries.ipynb": (
        ("w.window.value = window", "replays run:"),
        ("regen = regeneration_rows(", "on change, on the cached prefix"),
        ("fake = PromptRecorder()\nresult = replay(", "prompts recorded:"),
    ),
}


@pytest.mark.shared
@pytest.mark.parametrize(("chapter", "which"), matrix([(c, w) for c in sorted(CHECKS) for w in sorted(TRANSCRIPTS)],
                                                       {(c, "claude-code") for c in CHECKS}))
def test_chapters_05_06_run_on_a_real_transcript(shared_transcripts: Path, which: str, chapter: str) -> None:
    nb = run_on(chapter, shared_file(shared_transcripts, TRANSCRIPTS[which]), timeout=600)
    for marker, expected in CHECKS[chapter]:
        text = cell_output(nb, marker)
        assert expected in text, text
