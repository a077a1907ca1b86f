"""Every chapter 01-08 has the shape DESIGN.md promises, in this order: learning goals at the top, a
myth box in the common format, a graded exercise, a takeaway backed by a measured number, and the
file to read next.

The committed outputs are read (nothing is executed): the exercise cell must show the grader's
"not solved yet" message, and the takeaway must print a number the chapter computed.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from ctxlab.exercises import EXERCISES
from ctxlab.exercises._grader import not_solved_message

REPO = Path(__file__).resolve().parents[1]
CHAPTERS = range(1, 9)
MYTH_HEADER = re.compile(r'^> \*\*🔎 Myth box · "[^"\n]+"\*\*\n')


def _notebook(n: int) -> nbformat.NotebookNode:
    paths = sorted((REPO / "notebooks").glob(f"{n:02d}_*.ipynb"))
    assert len(paths) == 1, f"expected one notebooks/{n:02d}_*.ipynb, found {[p.name for p in paths]}"
    return nbformat.read(paths[0], as_version=4)


def _output(cell: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")


def _find(cells, predicate, what: str, after: int = -1) -> int:
    for i, cell in enumerate(cells):
        if i > after and predicate(cell):
            return i
    raise AssertionError(f"no {what}" + (f" after cell {after}" if after >= 0 else ""))


@pytest.mark.parametrize("n", CHAPTERS)
def test_chapter_opens_with_learning_goals(n):
    cells = _notebook(n).cells
    assert any(c.cell_type == "markdown" and "**What you will be able to do:**" in c.source for c in cells[:3]), \
        f"chapter {n:02d}: the first three cells state no learning goals ('**What you will be able to do:**')"


@pytest.mark.parametrize("n", CHAPTERS)
def test_chapter_has_myth_boxes_in_the_common_format(n):
    boxes = [c.source for c in _notebook(n).cells if c.cell_type == "markdown" and "Myth box" in c.source]
    assert boxes, f"chapter {n:02d} has no myth box"
    for box in boxes:
        assert MYTH_HEADER.match(box), f"chapter {n:02d}: a myth box must open with '> **🔎 Myth box · \"…\"**'"
        for part in ("> **Claim**", "> **Measured", "> **Verdict"):
            assert part in box, f"chapter {n:02d}: myth box {box.splitlines()[0]!r} lacks {part!r}"
        assert all(line.startswith(">") for line in box.splitlines()), "a myth box is one block quote"


@pytest.mark.parametrize("n", CHAPTERS)
def test_chapter_ends_with_exercise_takeaway_and_read_next(n):
    cells = _notebook(n).cells
    assert not any("Exercise coming" in c.source for c in cells), f"chapter {n:02d} still has a placeholder"

    exercise = _find(cells, lambda c: c.cell_type == "code" and f"check({n}, " in c.source,
                     f"exercise cell calling check({n}, ...) in chapter {n:02d}")
    stub = cells[exercise].source
    assert "raise NotImplementedError" in stub and "def " in stub, "the exercise cell holds the learner's stub"
    assert n in EXERCISES, f"chapter {n:02d} calls check({n}, ...) but ctxlab/exercises has no exercise {n}"
    # a fresh chapter shows the grader's verdict on the stub (the cell may print a helper's value first)
    assert _output(cells[exercise]).endswith(not_solved_message(EXERCISES[n]) + "\n")
    assert any(c.cell_type == "markdown" and f"hint({n})" in c.source and f"show_solution({n})" in c.source
               for c in cells[exercise - 2: exercise + 3]), f"chapter {n:02d}: name hint({n}) and show_solution({n})"
    assert any(c.cell_type == "markdown" and EXERCISES[n].function in c.source for c in cells[:exercise]), \
        "a markdown cell before the exercise states the task"

    takeaway = _find(cells, lambda c: c.cell_type == "code" and _output(c).startswith("Takeaway:"),
                     f"takeaway cell printing 'Takeaway: …' in chapter {n:02d}", after=exercise)
    printed = _output(cells[takeaway]).splitlines()[0]
    assert re.search(r"\d", printed), f"chapter {n:02d}: the takeaway names no measured number: {printed!r}"
    assert printed not in cells[takeaway].source, "the takeaway's number is computed, not typed in"

    read_next = _find(cells, lambda c: c.cell_type == "markdown" and "**Read next:**" in c.source,
                      f"'Read next' cell in chapter {n:02d}", after=takeaway)
    files = re.findall(r"`(ctxlab/[\w/]+\.py)", cells[read_next].source)
    assert files and all((REPO / f).is_file() for f in files), f"chapter {n:02d}: read next names {files}"
