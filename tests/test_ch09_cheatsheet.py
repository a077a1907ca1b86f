"""docs/cheatsheet.md: every measured number in its verdict column appears in the outputs of the chapter its
"where" column names (read from the committed notebooks at test time, so a re-executed chapter that changes a
number fails here until the cheat sheet follows), no unescaped ``$``, no 令牌 / 地板.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from workbook_rules import NUMBER, output_numbers, prose_numbers  # tests/workbook_rules.py

REPO = Path(__file__).resolve().parents[1]
SHEET = REPO / "docs" / "cheatsheet.md"


def _rows() -> list[list[str]]:
    rows = [line for line in SHEET.read_text(encoding="utf-8").splitlines() if line.startswith("| ")]
    return [[c.strip() for c in line.strip("|").split("|")] for line in rows[1:]]


def _chapter(where: str) -> nbformat.NotebookNode:
    n = re.match(r"(\d\d) ·", where)
    assert n, f"the where column must start with a chapter number: {where!r}"
    paths = [p for p in sorted((REPO / "notebooks").glob(f"{n.group(1)}_*.ipynb")) if "_further" not in p.name]
    assert len(paths) == 1, paths
    return nbformat.read(paths[0], as_version=4)


def test_the_cheat_sheet_has_the_books_decisions() -> None:
    rows = _rows()
    assert len(rows) >= 10
    assert all(len(r) == 4 for r in rows), "decision | the texts say | measured verdict | where"
    text = SHEET.read_text(encoding="utf-8")
    for word in ("截断单位", "前缀稳定", "摘要位置", "预算分配", "80%"):
        assert word in text


@pytest.mark.parametrize("row", range(len(_rows())))
def test_every_verdict_number_is_in_the_named_chapters_outputs(row: int) -> None:
    decision, _, verdict, where = _rows()[row]
    have = output_numbers(_chapter(where))
    numbers = prose_numbers(verdict.replace("\\$", "$"))
    assert numbers, f"{decision}: the verdict states no measured number"
    missing = [n for n in numbers if NUMBER.search(n).group(0).replace(",", "") not in have]
    assert not missing, f"{decision}: {missing} not in the outputs of chapter {where}"


def test_no_unescaped_dollar_and_the_chinese_words() -> None:
    text = SHEET.read_text(encoding="utf-8")
    assert not re.search(r"(?<!\\)\$", text), "escape $ as \\$ (GitHub renders $…$ as math)"
    assert "令牌" not in text and "地板" not in text
