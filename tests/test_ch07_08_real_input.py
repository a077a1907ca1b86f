"""Chapters 07 and 08 run top to bottom on real transcripts, not only on the bundled sample.

The same check as ``test_ch04_real_input.py``: each chapter is executed with nbclient in a fresh kernel
with its ``TRANSCRIPT = None`` line replaced by a shared transcript (pi's ``before-compaction.jsonl``,
484 calls and two recorded compactions; a Claude Code session cut to its main thread, whose 16,000-token
tools and system prompt make compaction's floor matter). Outputs are not compared with the committed
ones; the run must finish without an error, and the cells that set a widget's controls, and the cell that
measures the learner's own transcript, must print what shows they reacted.

Runtime: chapter 07 replays the transcript about fifteen times (pi: about 40 s); chapter 08 compares four
strategies and ``recorded`` on a long transcript instead of all nine (pi: about 20 s).
"""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
CHAPTERS = ("07_compaction", "08_putting_it_together")
TRANSCRIPTS = {"pi": "pi-mono/before-compaction.jsonl", "claude-code": "claude-code-viewer/*.jsonl"}
# chapter -> ((a line of a cell's source, text its output must contain), ...)
CHECKS = {
    "07_compaction": (("for slider, value in", "the largest context stays inside"),
                      ("cov = coverage_after(conv, WINDOW)", "")),
    "08_putting_it_together": (("lw.strategy.value = strategy", "cheapest inside the window"),
                               ("mine = load_workbook_conversation(TRANSCRIPT)", "strategy ")),
}


def _output_text(cell: nbformat.NotebookNode) -> str:
    out = []
    for o in cell.get("outputs", []):
        if o.get("output_type") == "stream":
            out.append(o.get("text", ""))
        elif "data" in o:
            out.append(str(o["data"].get("text/plain", "")))
    return "".join(out)


@pytest.mark.shared
@pytest.mark.parametrize("which", sorted(TRANSCRIPTS))
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_runs_on_a_real_transcript(shared_transcripts: Path, chapter: str, which: str) -> None:
    files = sorted(shared_transcripts.glob(TRANSCRIPTS[which]))
    if not files:
        pytest.skip(f"no {TRANSCRIPTS[which]} under {shared_transcripts}")
    nb = nbformat.read(NOTEBOOKS / f"{chapter}.ipynb", as_version=4)
    slots = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("TRANSCRIPT = None")]
    assert len(slots) == 1, f"{chapter}: expected one 'TRANSCRIPT = None' cell, found {len(slots)}"
    slots[0].source = f"TRANSCRIPT = {str(files[0])!r}"

    client = nbclient.NotebookClient(nb, timeout=240, kernel_name="python3", record_timing=False,
                                     resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()  # raises CellExecutionError, naming the cell, on any error

    for marker, expected in CHECKS[chapter]:
        cells = [c for c in nb.cells if c.cell_type == "code" and marker in c.source]
        assert cells, f"{chapter}: no cell contains {marker!r}"
        text = _output_text(cells[0])
        assert text.strip(), f"{chapter}: the cell with {marker!r} printed nothing"
        assert expected in text, text
