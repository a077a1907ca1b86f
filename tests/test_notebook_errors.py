"""Bad input in a chapter's setup cell is one line in the notebook, not a traceback (the fresh reader's stumble).

A learner who sets ``TRANSCRIPT`` to a path that is not there, an empty file, a truncated line or a binary file got
the right message at the bottom of a 19–46-line IPython traceback. ctxlab's errors (:class:`CtxlabError` and its
kinds, :class:`MissingFileError` for a missing file) render as one line in IPython through its
``_render_traceback_`` hook; a script still gets Python's traceback. The file is read, never changed.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import nbclient
import nbformat
import pytest

from ctxlab.base.errors import CtxlabError, MissingFileError, TranscriptError
from ctxlab.lab.workbook import load_workbook_conversation

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def bad_files(tmp: Path) -> dict[str, Path]:
    real = '{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00Z","cwd":"/tmp"}\n'
    (tmp / "empty.jsonl").write_text("", encoding="utf-8")
    (tmp / "truncated.jsonl").write_text(real + '{"type":"message","id":"m1","message":{"role":"us', encoding="utf-8")
    (tmp / "binary.jsonl").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4)
    return {"missing": tmp / "not-there.jsonl", "empty": tmp / "empty.jsonl", "truncated": tmp / "truncated.jsonl",
            "binary": tmp / "binary.jsonl"}


def test_every_bad_setup_raises_a_ctxlab_error_of_one_rendered_line(tmp_path: Path) -> None:
    files = bad_files(tmp_path)
    before = {k: hashlib.sha256(p.read_bytes()).hexdigest() for k, p in files.items() if p.exists()}
    for name, path in files.items():
        with pytest.raises(CtxlabError) as caught:
            load_workbook_conversation(path)
        lines = caught.value._render_traceback_()  # noqa: SLF001 - IPython's hook, what the notebook shows
        assert len(lines) == 1 and "\n" not in lines[0] and path.name in lines[0], (name, lines)
    with pytest.raises(FileNotFoundError):  # the old contract still holds
        load_workbook_conversation(files["missing"])
    assert isinstance(MissingFileError("x"), FileNotFoundError) and issubclass(TranscriptError, CtxlabError)
    assert before == {k: hashlib.sha256(p.read_bytes()).hexdigest() for k, p in files.items() if p.exists()}


def test_a_notebook_cell_shows_the_one_line(tmp_path: Path) -> None:
    """A real kernel: the error output's traceback is the one line, whose text names the file and what to do."""
    files = bad_files(tmp_path)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("from ctxlab.lab.workbook import load_workbook_conversation")]
    nb.cells += [nbformat.v4.new_code_cell(f"load_workbook_conversation({str(p)!r})") for p in files.values()]
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                                     resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()
    for cell, (name, path) in zip(nb.cells[1:], files.items()):
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert len(errors) == 1, (name, cell.outputs)
        assert len(errors[0].traceback) == 1 and path.name in errors[0].traceback[0], (name, errors[0].traceback)
    assert "Set TRANSCRIPT to an existing file" in nb.cells[1].outputs[0].traceback[0]
