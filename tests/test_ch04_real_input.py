"""Chapter 04 runs top to bottom on real transcripts, not only on the bundled sample.

The same check as ``test_notebooks_real_input.py`` does for chapters 00–03: the chapter is executed
with nbclient in a fresh kernel with its ``TRANSCRIPT = None`` line replaced by a shared transcript
(pi's ``before-compaction.jsonl``, 484 calls, two recorded compactions; a Claude Code session, cut to
its main thread). Outputs are not compared with the committed ones; the run must finish without an
error, the cell that sets the widget's controls must show the widget reacted, and the cell that
measures the learner's own transcript must print its recorded ledger.
"""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "04_prefix_cache_ledger.ipynb"
TRANSCRIPTS = {"pi": "pi-mono/before-compaction.jsonl", "claude-code": "claude-code-viewer/*.jsonl"}
# (a line of a cell's source, text its output must contain)
CHECKS = (('w.provider.value = "openai"', "reads under OpenAI's rules are multiples of 128: True"),
          ("recorded = recorded_ledger(conv)", "<Ledger recorded"))


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
def test_chapter_04_runs_on_a_real_transcript(shared_transcripts: Path, which: str) -> None:
    files = sorted(shared_transcripts.glob(TRANSCRIPTS[which]))
    if not files:
        pytest.skip(f"no {TRANSCRIPTS[which]} under {shared_transcripts}")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    slots = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("TRANSCRIPT = None")]
    assert len(slots) == 1, f"expected one 'TRANSCRIPT = None' cell, found {len(slots)}"
    slots[0].source = f"TRANSCRIPT = {str(files[0])!r}"

    client = nbclient.NotebookClient(nb, timeout=180, kernel_name="python3", record_timing=False,
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()  # raises CellExecutionError, naming the cell, on any error

    for marker, expected in CHECKS:
        cells = [c for c in nb.cells if c.cell_type == "code" and marker in c.source]
        assert cells, f"no cell contains {marker!r}"
        assert expected in _output_text(cells[0]), _output_text(cells[0])
