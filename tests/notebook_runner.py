"""Run a chapter top to bottom on a learner's transcript: the helper the real-input tests share.

The chapter's ``TRANSCRIPT = None`` cell is replaced by a path, the notebook is executed with nbclient
in a fresh kernel, and the executed notebook is returned so a test can read the cells that drive a
widget. Outputs are not compared with the committed ones: real transcripts change the numbers.

Each run starts a kernel and runs the whole chapter (2–8 s of CPU on a short transcript; chapter 06 on
pi's 484 calls, about 90 s), so the default test run executes each chapter on one real transcript
and the rest of each file's matrix carries the ``thorough`` marker: ``python run.py test -m thorough``.
"""

from __future__ import annotations

from pathlib import Path

import nbclient
import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def matrix(cases: list[tuple[str, ...]], default: set[tuple[str, ...]]) -> list:
    """``cases`` as pytest parameters (same ids as plain tuples): those in ``default`` run in every test
    run, the others only under ``-m thorough``."""
    unknown = default - set(cases)
    assert not unknown, f"default cases not in the matrix: {sorted(unknown)}"
    return [pytest.param(*case, marks=() if case in default else pytest.mark.thorough) for case in cases]


def shared_file(shared_transcripts: Path, pattern: str) -> Path:
    """The first shared transcript matching ``pattern``; the test is skipped when there is none."""
    files = sorted(shared_transcripts.glob(pattern))
    if not files:
        pytest.skip(f"no {pattern} under {shared_transcripts}")
    return files[0]


def run_on(notebook: str, transcript: Path, timeout: int = 180) -> nbformat.NotebookNode:
    """Execute ``notebooks/<notebook>`` with ``TRANSCRIPT`` set to ``transcript``; raise on any cell error."""
    nb = nbformat.read(NOTEBOOKS / notebook, as_version=4)
    slots = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("TRANSCRIPT = None")]
    assert len(slots) == 1, f"{notebook}: expected one 'TRANSCRIPT = None' cell, found {len(slots)}"
    slots[0].source = f"TRANSCRIPT = {str(transcript)!r}"
    client = nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                                     resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()  # raises CellExecutionError, naming the cell; then stops the kernel
    return nb


def output_text(cell: nbformat.NotebookNode) -> str:
    """A cell's printed text and plain-text results, joined."""
    out = []
    for o in cell.get("outputs", []):
        if o.get("output_type") == "stream":
            out.append(o.get("text", ""))
        elif "data" in o:
            out.append(str(o["data"].get("text/plain", "")))
    return "".join(out)


def cell_output(nb: nbformat.NotebookNode, marker: str) -> str:
    """The output of the first code cell whose source contains ``marker`` (fails when there is none)."""
    cells = [c for c in nb.cells if c.cell_type == "code" and marker in c.source]
    assert cells, f"no cell contains {marker!r}"
    return output_text(cells[0])
