"""Chapters 05 and 06 (and their going-further notebooks) run top to bottom on every kind of real transcript.

Each notebook is executed with nbclient in a fresh kernel with its ``TRANSCRIPT = None`` cell replaced by a shared
transcript: OpenHands, tau-bench, SWE-agent and LLaMA-Factory record no model (so every cost is unpriced), the
SWE-agent demo and LLaMA-Factory hold no tool results (chapter 05 then says so and uses the bundled sample), pi's
``before-compaction.jsonl`` is long (484 calls) and Claude Code's viewer session short. Outputs are not compared
with the committed ones; the run must finish without an error and the cells named below must print what shows
the section ran, or the one line saying why the data could not give it.

The default run executes one unpriced case per chapter (about 5 s of CPU each); the rest of the matrix carries the
``thorough`` marker (``python run.py test -m thorough``); pi's chapter 06 further notebook replays 484 calls in
seven placements (about 90 s). No cell may print a Python traceback either (``test_notebooks_every_transcript``'s
check; that file's default case of chapter 06 on tau-bench is this file's, run once).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from notebook_runner import cell_output, matrix, run_on, shared_file  # tests/notebook_runner.py
from test_notebooks_every_transcript import printed_traceback

TRANSCRIPTS = {
    "openhands": "openhands/*.jsonl",
    "tau-bench": "tau-bench/*.json",
    "swe-agent": "swe-agent/ctf_web_i_got_id_demo.traj",  # no model, no tool results
    "llama-factory-toolcall": "llama-factory-toolcall/*.json",  # no model, no tool results
    "pi-mono": "pi-mono/before-compaction.jsonl",
    "claude-code-viewer": "claude-code-viewer/*.jsonl",
}
UNPRICED = {"openhands", "tau-bench", "swe-agent", "llama-factory-toolcall"}
NO_TOOL_RESULTS = {"swe-agent", "llama-factory-toolcall"}
# notebook -> (a line of a cell's source, text its output must contain)
CHECKS = {
    "05_pruning_and_paging.ipynb": (
        ("w.head.value, w.tail.value = head, tail", "every pruned text within its budget: True"),
        ("read back exactly as recorded", "read back exactly as recorded: True"),
        ("cap_comparison(conv", "recomputed cap"),
    ),
    "05_pruning_and_paging_further.ipynb": (
        ("chinese_rows(", "all within budget: True"),
    ),
    "06_summaries.ipynb": (
        ("w.placement.value, w.regenerate.value = placement, regenerate", "only on a change:"),
    ),
    "06_summaries_further.ipynb": (
        ("w.window.value = window", "replays run:"),
        ("regen = regeneration_rows(", "on change, on the cached prefix"),
        ("fake = PromptRecorder()\nresult = replay(", "summary calls in the ledger:"),
    ),
}
DEFAULT = {("05_pruning_and_paging.ipynb", "swe-agent"), ("05_pruning_and_paging_further.ipynb", "openhands"),
           ("06_summaries.ipynb", "tau-bench"), ("06_summaries_further.ipynb", "openhands")}


@pytest.mark.shared
@pytest.mark.parametrize(("chapter", "which"), matrix([(c, w) for c in sorted(CHECKS) for w in sorted(TRANSCRIPTS)],
                                                       DEFAULT))
def test_chapters_05_06_run_on_a_real_transcript(shared_transcripts: Path, which: str, chapter: str) -> None:
    nb = run_on(chapter, shared_file(shared_transcripts, TRANSCRIPTS[which]), timeout=600)
    tracebacks = [(i, tb) for i, c in enumerate(nb.cells) if c.cell_type == "code"
                  for tb in [printed_traceback(c)] if tb]
    assert not tracebacks, f"{chapter} on {which}: cells printed a traceback: {tracebacks}"
    for marker, expected in CHECKS[chapter]:
        text = cell_output(nb, marker)
        assert expected in text, text
    setup = cell_output(nb, "conv = priced(load_workbook_conversation(TRANSCRIPT), MODEL)")
    if which in UNPRICED and not (which in NO_TOOL_RESULTS and chapter.startswith("05_")):  # one line says so
        assert "costs are unpriced" in setup and "set MODEL" in setup, setup
    if which in NO_TOOL_RESULTS and chapter.startswith("05_"):
        assert "no tool results" in setup, setup
    if chapter == "06_summaries.ipynb" and which in UNPRICED:
        assert "set MODEL above to price them" in cell_output(nb, "w.placement.value, w.regenerate.value = p")
