"""Chapters 00–03 run top to bottom on real transcripts, not only on the bundled sample.

Each chapter is executed with nbclient in a fresh kernel with its ``TRANSCRIPT = None`` line
replaced by a shared transcript: pi's ``before-compaction.jsonl`` (~1,000 messages, no tool
definitions recorded) and a Claude Code session (sub-agent threads, meta lines); chapters 02 and 03
also on a swe-agent ReAct trajectory (no tool calls: actions are text) and an OpenHands run (a
single user turn). Outputs are not compared with the committed ones; the run must finish without
an error, the cells that set a widget's control and print its state must show the widget reacted,
and no working copy of chapter 02 may be left behind.
"""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
CHAPTERS = ("00_start_here", "01_token_accounting", "02_session_and_context", "03_interactions_and_budget")
TRANSCRIPTS = {"pi": "pi-mono/before-compaction.jsonl", "claude-code": "claude-code-viewer/*.jsonl",
               "swe-agent-react": "swe-agent/ctf_web_i_got_id_demo.traj", "openhands": "openhands/*.jsonl"}
# chapter -> the transcripts it runs on (swe-agent: no tool call, for 03; openhands: one user turn, for 02)
CASES = [(chapter, which) for chapter in CHAPTERS for which in ("claude-code", "pi")] + [
    (chapter, which) for chapter in ("02_session_and_context", "03_interactions_and_budget")
    for which in ("openhands", "swe-agent-react")]

# chapter -> (a line of the driving cell's source, text its output must contain)
REACTIONS = {
    "00_start_here": ("bill.pricing.value = choice", "no prompt cache: $"),
    "01_token_accounting": ('xr.encoding.value = encoding', "cl100k_base"),
    "02_session_and_context": ("branch.leaf.value = leaf", "fork-u1"),
    "03_interactions_and_budget": ("w.budget.value = budget", "the bar adds up to the budget every time: True"),
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
@pytest.mark.parametrize(("chapter", "which"), CASES)
def test_chapter_runs_on_a_real_transcript(shared_transcripts: Path, chapter: str, which: str, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    files = sorted(shared_transcripts.glob(TRANSCRIPTS[which]))
    if not files:
        pytest.skip(f"no {TRANSCRIPTS[which]} under {shared_transcripts}")
    nb = nbformat.read(NOTEBOOKS / f"{chapter}.ipynb", as_version=4)
    slots = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("TRANSCRIPT = None")]
    assert len(slots) == 1, f"{chapter}: expected one 'TRANSCRIPT = None' cell, found {len(slots)}"
    slots[0].source = f"TRANSCRIPT = {str(files[0])!r}"

    # the kernel's temporary folders (the working copy of chapter 02) go under this test's tmp_path
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", record_timing=False,
                                     resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()  # raises CellExecutionError, naming the cell, on any error; then stops the kernel
    assert not list(tmp_path.glob("ctxlab-ch02-*")), "a working copy outlived the kernel"

    marker, expected = REACTIONS[chapter]
    driving = [c for c in nb.cells if c.cell_type == "code" and marker in c.source]
    assert driving, f"{chapter}: no cell sets the widget's control ({marker!r})"
    assert expected in _output_text(driving[0]), _output_text(driving[0])
