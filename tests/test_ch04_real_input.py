"""Chapter 04 runs top to bottom on real transcripts, not only on the bundled sample.

The same check as ``test_notebooks_real_input.py`` does for chapters 00–03: the chapter is executed
with nbclient in a fresh kernel with its ``TRANSCRIPT = None`` line replaced by a shared transcript
(pi's ``before-compaction.jsonl``, 484 calls, two recorded compactions; a Claude Code session, cut to
its main thread). Outputs are not compared with the committed ones; the run must finish without an
error, the cell that sets the widget's controls must show the widget reacted, and the cell that
measures the learner's own transcript must print its recorded ledger.

The default run uses the Claude Code session (about 5 s of CPU); pi, about 15 s, carries the ``thorough``
marker (``python run.py test -m thorough``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from notebook_runner import cell_output, matrix, run_on, shared_file  # tests/notebook_runner.py

NOTEBOOKS = ("04_prefix_cache_ledger.ipynb", "04_prefix_cache_ledger_further.ipynb")
TRANSCRIPTS = {"pi": "pi-mono/before-compaction.jsonl", "claude-code": "claude-code-viewer/*.jsonl"}
# per notebook: (a line of a cell's source, text its output must contain)
CHECKS = {NOTEBOOKS[0]: (("pw.provider.value = provider", "openai rules, 6-minute pause: call"),),
          NOTEBOOKS[1]: (('w.provider.value = "openai"', "reads under OpenAI's rules are multiples of 128: True"),
                         ("recorded = recorded_ledger(conv)", "<Ledger recorded"))}


@pytest.mark.shared
@pytest.mark.parametrize("which,notebook", matrix([(w, n) for w in sorted(TRANSCRIPTS) for n in NOTEBOOKS],
                                                  {("claude-code", NOTEBOOKS[0]), ("claude-code", NOTEBOOKS[1])}))
def test_chapter_04_runs_on_a_real_transcript(shared_transcripts: Path, which: str, notebook: str) -> None:
    nb = run_on(notebook, shared_file(shared_transcripts, TRANSCRIPTS[which]))
    for marker, expected in CHECKS[notebook]:
        text = cell_output(nb, marker)
        assert expected in text, text
