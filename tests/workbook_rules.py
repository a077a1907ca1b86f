#!/usr/bin/env python3
"""The workbook rules every chapter notebook meets, as pure functions over an nbformat notebook.

    python tests/workbook_rules.py notebooks/04_*.ipynb   # the violations, per notebook; exit 1 when any

Each ``rule_N(nb, name)`` returns a list of violations, one line each, naming the notebook, the cell
index and the offending text. ``name`` is the notebook's file name (``04_prefix_cache_ledger.ipynb``):
it decides whether the notebook is a core chapter (``NN_*.ipynb``) or a going-further notebook
(``NN_*_further.ipynb``). ``tests/test_workbook_rules.py`` runs every rule on every notebook.

The rules (issue 16, "Workbook rules"):

1. core chapters: ≤ 1,000 words of markdown prose (outside fenced code and ``<details>`` answers) and
   ≤ 40 table lines (markdown ``|`` rows + text tables in outputs: header, ``----  ----`` rule, rows).
2. every number the prose states (with ``$ % ×``, an ``x`` suffix, a decimal point, a thousands comma,
   or ≥ 100) appears in some output of the same notebook (commas ignored on both sides).
3. no unescaped ``$`` in markdown (two or more in a cell render as LaTeX).
4. output lines (stream, text/plain) ≤ 100 characters.
5. the first markdown cell tells the learner to Run All.
6. no test or tool talk: no ``# NBVAL_`` comments, no tests/, pytest, nbval, "shared transcripts",
   ../shared in markdown; "Read next" names no private identifiers.
7. core chapters end with a ``## Questions`` cell holding two or more ``<details>`` answers.
9. Chinese: no 令牌 (write 词元), no 地板 (write 下限) in markdown.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

MAX_WORDS = 1000
MAX_TABLE_LINES = 40
MAX_WIDTH = 100

CORE = re.compile(r"^\d\d_(?!.*_further\.ipynb$).*\.ipynb$")
FURTHER = re.compile(r"^\d\d_.*_further\.ipynb$")
FENCE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[^\n]*$", re.S | re.M)
DETAILS = re.compile(r"<details\b.*?</details>", re.S | re.I)
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
WORD = re.compile(r"\S*\w\S*")  # a whitespace-separated token with a letter or digit in it
RULE_LINE = re.compile(r"^ *-+(?: +-+)+ *$")
# a number as prose writes it: a thousands-comma number or plain digits, an optional decimal part
NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
URL = re.compile(r"https?://\S+|www\.\S+")
LINK_TARGET = re.compile(r"\]\([^)]*\)")
HTML_TAG = re.compile(r"</?[A-Za-z][^>]*>")
CHAPTER_HEADING = re.compile(r"^(#+[ \t]*)\d+(?:[ \t]*·)?", re.M)
TOOL_TALK = ("tests/", "pytest", "nbval", "shared transcripts", "../shared")
PRIVATE = re.compile(r"(?:^|[./])_(?!_)\w")
# a number right after one of these words is a name or a reference, not a measurement:
# "Claude Sonnet 4.6", "Opus 4.5", "Python 3.11", "section 4.2", "issue 16"
NAME_WORDS = re.compile(r"(?:sonnet|opus|haiku|claude|gpt|gemini|llama|qwen|mistral|deepseek|python|version|"
                        r"section|chapter|issue|exercise|ch|§)[ \t\xa0]*$", re.I)


def is_core(name: str) -> bool:
    """A core chapter: ``NN_topic.ipynb`` (not ``NN_topic_further.ipynb``)."""
    return bool(CORE.match(Path(name).name))


def _markdown(nb) -> list[tuple[int, str]]:
    return [(i, c.source) for i, c in enumerate(nb.cells) if c.cell_type == "markdown"]


def _outputs(cell, kinds=("text/plain",)) -> list[str]:
    """The text of a code cell's stream outputs and of its results in the given mime types."""
    texts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            texts.append(out.get("text", ""))
        elif "data" in out:
            for kind in kinds:
                value = out["data"].get(kind)
                if value:
                    texts.append(value if isinstance(value, str) else "".join(value))
    return texts


def _short(text: str, width: int = 70) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= width else text[: width - 1] + "…")


def _no_code(source: str) -> str:
    """Markdown with fenced code blocks and inline code removed."""
    return INLINE_CODE.sub(" ", FENCE.sub(" ", source))


# --- rule 1 ---------------------------------------------------------------------------------------------

def prose_words(source: str) -> int:
    """Word tokens of a markdown cell outside fenced code and ``<details>`` blocks."""
    return len(WORD.findall(DETAILS.sub(" ", FENCE.sub(" ", source))))


def text_table_lines(text: str) -> int:
    """Lines of text tables in an output: for each ``----  ----`` rule, the header above it, the rule,
    and the rows below it up to the next blank line."""
    lines = text.splitlines()
    counted: set[int] = set()
    for i, line in enumerate(lines):
        if not RULE_LINE.match(line):
            continue
        if i > 0 and lines[i - 1].strip():
            counted.add(i - 1)
        counted.add(i)
        j = i + 1
        while j < len(lines) and lines[j].strip():
            counted.add(j)
            j += 1
    return len(counted)


def table_lines_by_cell(nb) -> dict[int, int]:
    """Table lines per cell index: markdown ``|`` rows (outside fences) and text-table rows of outputs."""
    counts: dict[int, int] = {}
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            n = sum(1 for line in FENCE.sub(" ", cell.source).splitlines() if line.lstrip().startswith("|"))
        elif cell.cell_type == "code":
            n = sum(text_table_lines(t) for t in _outputs(cell))
        else:
            n = 0
        if n:
            counts[i] = n
    return counts


def _top(counts: dict[int, int]) -> str:
    top = sorted(counts.items(), key=lambda kv: -kv[1])[:4]
    return ", ".join(f"cell {i}: {n}" for i, n in top)


def rule_1(nb, name: str) -> list[str]:
    """Core chapters: ≤ 1,000 prose words and ≤ 40 table lines (going-further notebooks: no limit)."""
    if not is_core(name):
        return []
    found = []
    words = {i: prose_words(src) for i, src in _markdown(nb)}
    total = sum(words.values())
    if total > MAX_WORDS:
        found.append(f"{name}: rule 1: {total:,} words of prose > {MAX_WORDS:,} (largest: {_top(words)})")
    tables = table_lines_by_cell(nb)
    total = sum(tables.values())
    if total > MAX_TABLE_LINES:
        found.append(f"{name}: rule 1: {total} table lines > {MAX_TABLE_LINES} (largest: {_top(tables)})")
    return found


# --- rule 2 ---------------------------------------------------------------------------------------------

def output_numbers(nb) -> set[str]:
    """Every number token in the notebook's outputs (stream, text/plain, text/html, text/markdown), commas
    removed first: 4,480 in an output gives ``4480``."""
    kinds = ("text/plain", "text/html", "text/markdown")
    text = "\n".join(t for c in nb.cells if c.cell_type == "code" for t in _outputs(c, kinds))
    return set(NUMBER.findall(text.replace(",", "")))


def _prose_for_numbers(source: str) -> str:
    """Markdown with what rule 2 exempts blanked out (same length, so positions keep their context):
    fenced and inline code, URLs, link targets, HTML tags, a heading's leading chapter number."""
    def blank(m: re.Match) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))
    for pattern in (FENCE, INLINE_CODE, LINK_TARGET, URL, HTML_TAG):
        source = pattern.sub(blank, source)
    return CHAPTER_HEADING.sub(lambda m: m.group(1) + " " * (len(m.group(0)) - len(m.group(1))), source)


def prose_numbers(source: str) -> list[str]:
    """The numbers a markdown cell states that must come from an output, as written (``$42.60``, ``4,480``,
    ``97.0%``, ``1.25×``, ``2x``, ``484``). Skipped: years 1990–2099 written plainly, numbers under 100 with
    no mark (no ``$ % ×``, x suffix, decimal point or comma), numbers inside names (attached to a word
    by ``-``, ``_`` or letters: gpt-4.1, claude-sonnet-4-6, o200k_base, GPT-5.6, 300k) and numbers right
    after a model family or a reference word (Claude Sonnet 4.6, Opus 4.5, Python 3.11, section 4.2)."""
    text = _prose_for_numbers(source)
    found = []
    for m in NUMBER.finditer(text):
        start, end, digits = m.start(), m.end(), m.group(0)
        before = text[start - 1] if start else " "
        before2 = text[start - 2] if start > 1 else " "
        after = text[end] if end < len(text) else " "
        after2 = text[end + 1] if end + 1 < len(text) else " "
        if before.isdigit() or before in ".,":  # the tail of a longer run (1.2.3, 1,2345)
            continue
        if before.isalpha() or before == "_" or (before == "-" and (before2.isalnum() or before2 == "_")):
            continue  # part of a name: gpt-4.1, o200k, claude-sonnet-4-6 (a leading minus sign is kept)
        if NAME_WORDS.search(text[max(0, start - 12): start]):
            continue  # Claude Sonnet 4.6, section 4.2
        if after == "." and after2.isdigit():
            continue  # a version: 1.2.3
        x_suffix = after in "xX" and not (after2.isalnum() or after2 == "_")
        if (after.isalpha() and not x_suffix) or after == "_" or (after == "-" and after2.isalnum()):
            continue  # part of a name: 4o, 300k, 4_6, 5-minute
        dollar = before == "$"
        percent = after == "%"
        times = after == "×" or x_suffix
        marked = dollar or percent or times or "." in digits or "," in digits
        value = float(digits.replace(",", ""))
        if not marked:
            if value < 100 or (len(digits) == 4 and 1990 <= value <= 2099):
                continue
        found.append(("$" if dollar else "") + digits + ("%" if percent else "") + (after if times else ""))
    return found


def rule_2(nb, name: str) -> list[str]:
    """Every prose number appears, as a number token, in the notebook's outputs (commas ignored)."""
    have = output_numbers(nb)
    found = []
    for i, source in _markdown(nb):
        missing = [n for n in prose_numbers(source) if NUMBER.search(n).group(0).replace(",", "") not in have]
        for n in dict.fromkeys(missing):
            found.append(f"{name} cell {i}: rule 2: {n!r} in prose appears in no output")
    return found


# --- rule 3 ---------------------------------------------------------------------------------------------

def rule_3(nb, name: str) -> list[str]:
    """No markdown cell with two or more unescaped ``$`` outside code (they render as LaTeX)."""
    found = []
    for i, source in _markdown(nb):
        text = _no_code(source)
        spots = [m.start() for m in re.finditer(r"(?<!\\)\$", text)]
        if len(spots) >= 2:
            shown = "; ".join(_short(text[max(0, s - 15): s + 15], 40) for s in spots[:3])
            found.append(f"{name} cell {i}: rule 3: {len(spots)} unescaped $ (write \\$): {shown}")
    return found


# --- rule 4 ---------------------------------------------------------------------------------------------

def rule_4(nb, name: str) -> list[str]:
    """Output lines (stream and text/plain) ≤ 100 characters."""
    found = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        wide = [line for t in _outputs(cell) for line in t.splitlines() if len(line) > MAX_WIDTH]
        if wide:
            more = f" (+{len(wide) - 1} more)" if len(wide) > 1 else ""
            found.append(f"{name} cell {i}: rule 4: output line of {len(wide[0])} chars > {MAX_WIDTH}: "
                         f"{_short(wide[0], 60)}{more}")
    return found


# --- rule 5 ---------------------------------------------------------------------------------------------

def rule_5(nb, name: str) -> list[str]:
    """The first markdown cell says "Run All"."""
    cells = _markdown(nb)
    if not cells:
        return [f"{name}: rule 5: no markdown cell"]
    i, source = cells[0]
    if "Run All" not in source:
        return [f"{name} cell {i}: rule 5: the first markdown cell does not say 'Run All': {_short(source, 50)}"]
    return []


# --- rule 6 ---------------------------------------------------------------------------------------------

def rule_6(nb, name: str) -> list[str]:
    """No ``# NBVAL_`` comments in code; no tests/, pytest, nbval, shared transcripts, ../shared in markdown;
    "Read next" names no private identifier (a backticked name starting with ``_``, or with a ``._`` / ``/_``
    part; dunders such as ``__init__`` are not private)."""
    found = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            for line in cell.source.splitlines():
                if line.lstrip().startswith("# NBVAL_"):
                    found.append(f"{name} cell {i}: rule 6: {line.strip()!r} comment (use a cell tag)")
        elif cell.cell_type == "markdown":
            low = cell.source.lower()
            for word in TOOL_TALK:
                at = low.find(word)
                if at >= 0:
                    found.append(f"{name} cell {i}: rule 6: {word!r} in markdown: "
                                 f"{_short(cell.source[max(0, at - 25): at + 35], 60)}")
            if "read next" in low:
                for ident in re.findall(r"`([^`\n]+)`", cell.source):
                    if PRIVATE.search(ident):
                        found.append(f"{name} cell {i}: rule 6: 'Read next' names a private name `{ident}`")
    return found


# --- rule 7 ---------------------------------------------------------------------------------------------

def rule_7(nb, name: str) -> list[str]:
    """Core chapters: a markdown cell starting ``## Questions`` with two or more ``<details>`` answers."""
    if not is_core(name):
        return []
    cells = [(i, s) for i, s in _markdown(nb) if s.lstrip().startswith("## Questions")]
    if not cells:
        inside = [i for i, s in _markdown(nb) if re.search(r"^## Questions", s, re.M)]
        where = f" (cell {inside[0]} has it below other text: give the questions a cell of their own)" if inside else ""
        return [f"{name}: rule 7: no markdown cell starting '## Questions'{where}"]
    if not any(len(re.findall(r"<details\b", s, re.I)) >= 2 for _, s in cells):
        i, s = cells[0]
        n = len(re.findall(r"<details\b", s, re.I))
        return [f"{name} cell {i}: rule 7: '## Questions' has {n} <details> answer(s), needs ≥ 2 "
                "(one <details><summary>Answer</summary> … </details> per question)"]
    return []


# --- rule 9 ---------------------------------------------------------------------------------------------

def rule_9(nb, name: str) -> list[str]:
    """Chinese terms: no 令牌 (token is 词元) and no 地板 (floor is 下限) in markdown."""
    found = []
    for i, source in _markdown(nb):
        for bad, good in (("令牌", "词元"), ("地板", "下限")):
            at = source.find(bad)
            if at >= 0:
                found.append(f"{name} cell {i}: rule 9: {bad} (write {good}): "
                             f"{_short(source[max(0, at - 20): at + 20], 50)}")
    return found


RULES = {1: rule_1, 2: rule_2, 3: rule_3, 4: rule_4, 5: rule_5, 6: rule_6, 7: rule_7, 9: rule_9}


def check(nb, name: str) -> dict[int, list[str]]:
    """Every rule's violations for one notebook, by rule number."""
    return {n: rule(nb, name) for n, rule in RULES.items()}


def check_file(path: str | Path) -> dict[int, list[str]]:
    """:func:`check` on a notebook file (named by its file name)."""
    path = Path(path)
    return check(nbformat.read(path, as_version=4), path.name)


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
    total = 0
    for path in paths:
        found = [v for vs in check_file(path).values() for v in vs]
        total += len(found)
        print(f"== {path.name}: {len(found)} violation(s)")
        for v in found:
            print("  " + v)
    print(f"{total} violation(s) in {len(paths)} notebook(s)")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
