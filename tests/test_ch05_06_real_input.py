"""Chapters 05 and 06 run top to bottom on real transcripts, not only on the bundled sample.

The same check as ``test_ch04_real_input.py``: each chapter is executed with nbclient in a fresh kernel
with its ``TRANSCRIPT = None`` line replaced by a shared transcript (pi's ``before-compaction.jsonl``:
484 calls, a 49,931-character ``read`` result, a hand-written checklist; a Claude Code session cut to
its main thread: small results, no checklist, no Chinese). Outputs are not compared with the committed
ones; the run must finish without an error and the cells that set the widgets' controls must show the
widgets reacted. On pi, chapter 06 takes about three minutes (its replays run 484 calls each).
"""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

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
@pytest.mark.parametrize("chapter", sorted(CHECKS))
def test_chapters_05_06_run_on_a_real_transcript(shared_transcripts: Path, which: str, chapter: str) -> None:
    files = sorted(shared_transcripts.glob(TRANSCRIPTS[which]))
    if not files:
        pytest.skip(f"no {TRANSCRIPTS[which]} under {shared_transcripts}")
    path = NOTEBOOKS / chapter
    nb = nbformat.read(path, as_version=4)
    slots = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("TRANSCRIPT = None")]
    assert len(slots) == 1, f"expected one 'TRANSCRIPT = None' cell, found {len(slots)}"
    slots[0].source = f"TRANSCRIPT = {str(files[0])!r}"

    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", record_timing=False,
                                     resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()  # raises CellExecutionError, naming the cell, on any error

    for marker, expected in CHECKS[chapter]:
        cells = [c for c in nb.cells if c.cell_type == "code" and marker in c.source]
        assert cells, f"no cell contains {marker!r}"
        assert expected in _output_text(cells[0]), _output_text(cells[0])
