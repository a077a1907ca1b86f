"""Every core chapter runs top to bottom on every kind of real transcript (issue 16, item 9).

The matrix: each core chapter (``notebooks/NN_*.ipynb``, 00–09, those present at collection) × one file from
every folder under ``../shared/data/transcripts`` — the folder's first file, by name, that
:func:`ctxlab.io.formats.load` reads. A case passes when the chapter ran to its last cell with no error and no
cell printed a Python traceback (a section whose data is missing says so in one line and the chapter goes on).

Each case starts a kernel and runs a whole chapter, so the matrix is marked ``thorough``
(``python run.py test -m thorough``); the default run keeps the crashes issue 16 names: chapter 05 on OpenHands
and 07 on LLaMA-Factory (no model recorded, so unpriced) here, and 06 on tau-bench in
``tests/test_ch05_06_real_input.py``'s default case, which runs that chapter on the same file and
makes this file's check too (:func:`printed_traceback`): one kernel run instead of two.
Skipped cleanly when ``../shared`` is absent.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from conftest import SHARED_TRANSCRIPTS, is_transcript  # tests/conftest.py
from notebook_runner import NOTEBOOKS, matrix, run_on  # tests/notebook_runner.py

CORE = re.compile(r"^0\d_(?!.*_further\.ipynb$).*\.ipynb$")
CHAPTERS = sorted(p.name for p in NOTEBOOKS.glob("0[0-9]_*.ipynb") if CORE.match(p.name))
FOLDERS = sorted(p.name for p in SHARED_TRANSCRIPTS.iterdir() if p.is_dir()) if SHARED_TRANSCRIPTS.is_dir() else []
TRACEBACK = re.compile(r"Traceback \(most recent call last\):?\s*\n(?:.*\n){0,3}?\s*File \"([^\"]+)\"")
# a frame of the chapter's own run: the kernel's cells, the package, an installed library. A traceback
# inside the transcript's text (an agent's tool output, shown by a chapter) names other files.
OWN_FRAME = re.compile(r"ipykernel_|<ipython-input|/ctxlab/|site-packages|/lib/python3")

DEFAULT = {("05_pruning_and_paging.ipynb", "openhands"), ("07_compaction.ipynb", "llama-factory-toolcall")}
# ("06_summaries.ipynb", "tau-bench") runs by default in tests/test_ch05_06_real_input.py, with the same check
CASES = [(chapter, folder) for chapter in CHAPTERS for folder in FOLDERS]


@functools.lru_cache(maxsize=None)
def first_readable(folder: str) -> Path | None:
    """The first file of ``folder`` (by name, documentation left out) that ``formats.load`` reads; None when none."""
    from ctxlab.io import formats

    for path in sorted(p for p in (SHARED_TRANSCRIPTS / folder).iterdir() if is_transcript(p)):
        try:
            formats.load(path)
        except Exception:  # noqa: BLE001 - a file no reader takes is not this matrix's case
            continue
        return path
    return None


def printed_traceback(cell) -> str | None:
    """The last line of a Python traceback the cell printed (stdout or stderr), or None. A traceback counts when
    it is on stderr, or when its first frame is the chapter's own code (see ``OWN_FRAME``)."""
    for o in cell.get("outputs", []):
        if o.get("output_type") != "stream":
            continue
        text = o.get("text", "")
        for m in TRACEBACK.finditer(text):
            if o.get("name") == "stderr" or OWN_FRAME.search(m.group(1)):
                rest = [line for line in text[m.end():].splitlines() if re.match(r"^\w[\w.]*(Error|Exception)", line)]
                return rest[0] if rest else m.group(0).splitlines()[0]
    return None


def present_cases() -> list:
    if not CASES:
        return [pytest.param("(none)", "(none)", id="no-shared-transcripts")]
    default = DEFAULT & set(CASES)
    return matrix(CASES, default)


@pytest.mark.shared
@pytest.mark.parametrize(("chapter", "folder"), present_cases())
def test_the_chapter_runs_to_the_end_on_the_transcript(chapter, folder, shared_transcripts):
    if chapter == "(none)":
        pytest.skip("no chapters or no transcript folders")
    transcript = first_readable(folder)
    if transcript is None:
        pytest.skip(f"{folder}: no file a reader takes")
    nb = run_on(chapter, transcript, timeout=300)  # raises CellExecutionError, naming the cell, on any error
    tracebacks = [(i, tb) for i, c in enumerate(nb.cells) if c.cell_type == "code"
                  for tb in [printed_traceback(c)] if tb]
    assert not tracebacks, f"{chapter} on {folder}/{transcript.name}: cells printed a traceback: {tracebacks}"
