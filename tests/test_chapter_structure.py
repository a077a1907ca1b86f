"""Every chapter 01-08 has the shape DESIGN.md promises, in this order: learning goals at the top, a
myth box in the common format, a graded exercise, a takeaway backed by a measured number, and the
file to read next.

Chapter 09, the capstone ("your agent"), has learning goals and a takeaway backed by a number too, but
no myth box and no graded exercise: its work is the learner's own transcript, judged by a rubric
(issue 16, item 7). Its tests run once notebooks/09_*.ipynb exists.

Going-further notebooks (``NN_topic_further.ipynb``, DESIGN.md) are not chapters here: each names its
core chapter in its first markdown cell, and the core chapter links to it.

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
CAPSTONE = 9  # learning goals and a takeaway; no myth box, no graded exercise (a rubric instead)
FURTHER = sorted((REPO / "notebooks").glob("[0-9][0-9]_*_further.ipynb"))
MYTH_HEADER = re.compile(r'^> \*\*🔎 Myth box · "[^"\n]+"\*\*\n')


def _core_paths(n: int) -> list[Path]:
    """notebooks/NN_*.ipynb, the going-further notebooks (NN_*_further.ipynb) left out."""
    return [p for p in sorted((REPO / "notebooks").glob(f"{n:02d}_*.ipynb")) if not p.stem.endswith("_further")]


def _notebook(n: int) -> nbformat.NotebookNode:
    paths = _core_paths(n)
    assert len(paths) == 1, f"expected one notebooks/{n:02d}_*.ipynb (not _further), found {[p.name for p in paths]}"
    return nbformat.read(paths[0], as_version=4)


def _output(cell: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")


def _find(cells, predicate, what: str, after: int = -1) -> int:
    for i, cell in enumerate(cells):
        if i > after and predicate(cell):
            return i
    raise AssertionError(f"no {what}" + (f" after cell {after}" if after >= 0 else ""))


def _capstone_or_skip() -> None:
    if not _core_paths(CAPSTONE):
        pytest.skip(f"notebooks/{CAPSTONE:02d}_*.ipynb (the capstone) is not written yet")


@pytest.mark.parametrize("n", [*CHAPTERS, CAPSTONE])
def test_chapter_opens_with_learning_goals(n):
    if n == CAPSTONE:
        _capstone_or_skip()
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


def test_the_capstone_ends_with_a_measured_takeaway_and_needs_no_myth_box_or_exercise():
    """The capstone (09) is the learner's own agent: a takeaway printed from what it measured, as in every
    chapter; a myth box and a graded exercise are not required (its work is judged by a rubric)."""
    _capstone_or_skip()
    cells = _notebook(CAPSTONE).cells
    takeaway = _find(cells, lambda c: c.cell_type == "code" and _output(c).startswith("Takeaway:"),
                     f"takeaway cell printing 'Takeaway: …' in chapter {CAPSTONE:02d}")
    printed = _output(cells[takeaway]).splitlines()[0]
    assert re.search(r"\d", printed), f"chapter {CAPSTONE:02d}: the takeaway names no measured number: {printed!r}"
    assert printed not in cells[takeaway].source, "the takeaway's number is computed, not typed in"
    assert any(c.cell_type == "markdown" and "rubric" in c.source.lower() for c in cells), \
        f"chapter {CAPSTONE:02d}: the capstone states its rubric"


def test_going_further_notebooks_exist_beside_chapters():
    assert FURTHER, "no notebooks/NN_*_further.ipynb"
    for path in FURTHER:
        n = int(path.name[:2])
        assert _core_paths(n), f"{path.name} has no core chapter notebooks/{n:02d}_*.ipynb"


@pytest.mark.parametrize("path", FURTHER, ids=lambda p: p.name)
def test_a_going_further_notebook_names_its_core_chapter_first(path):
    n = int(path.name[:2])
    core = _core_paths(n)[0].name
    cells = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown"]
    first = cells[0].source if cells else ""
    assert core in first or re.search(rf"\bchapter {n:02d}\b", first, re.I), \
        f"{path.name}: the first markdown cell names neither {core} nor 'chapter {n:02d}'"


@pytest.mark.parametrize("path", FURTHER, ids=lambda p: p.name)
def test_the_core_chapter_links_to_its_going_further_notebook(path):
    n = int(path.name[:2])
    link = re.compile(rf"\]\(\s*(?:\./)?{re.escape(path.name)}(?:#[^)]*)?\s*\)")
    sources = [c.source for c in _notebook(n).cells if c.cell_type == "markdown"]
    assert any(link.search(s) for s in sources), \
        f"chapter {n:02d} has no markdown link to {path.name} (write [text]({path.name}): a learner clicks it)"
