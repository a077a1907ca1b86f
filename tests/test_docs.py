"""The documentation: the glossary names every standard term in English and Chinese, its Chinese
words are where it says they are, and every relative link in README.md and docs/*.md resolves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
GLOSSARY = REPO / "docs" / "glossary.md"
TEXTS = REPO.parent / "shared" / "texts"  # the two Chinese texts the chapters teach from (workshop tree only)

# The project brief's standard terms (and the other words every chapter leans on) -> the Chinese the
# glossary must give for each.
STANDARD_TERMS = {
    "session": "会话",
    "context": "上下文",
    "context window": "上下文窗口",
    "token": "词元",  # 令牌 is an auth token (issue 16): token（词元）
    "token budget": "预算",
    "tool call": "工具调用",
    "tool result": "工具结果",
    "interaction": "交互",
    "prefix cache": "前缀缓存",
    "prompt caching": "提示缓存",
    "cache read": "缓存读取",
    "cache write": "缓存写入",
    "compaction": "压缩",
    "pruning": "剪枝",
    "paging": "换页",
    "summary": "摘要",
    "system prompt": "系统提示词",
}
HAN = re.compile(r"[\u3400-\u9fff]+")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def glossary_rows() -> dict[str, str]:
    """English term (lower case, no markup) -> its Chinese cell, from every table of the glossary."""
    rows = {}
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 4 and cells[0] != "English" and not set(cells[0]) <= set("-: "):
            rows[cells[0].replace("*", "").lower()] = cells[1]
    return rows


def without_code(text: str) -> str:
    return re.sub(r"```.*?```", "", text, flags=re.S)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = without_code(path.read_text(encoding="utf-8"))
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*$", text, re.M)}


def test_the_glossary_gives_every_standard_term_in_english_and_chinese() -> None:
    rows = glossary_rows()
    missing = [term for term in STANDARD_TERMS if term not in rows]
    assert not missing, f"docs/glossary.md has no row for {missing}"
    wrong = {term: rows[term] for term, chinese in STANDARD_TERMS.items() if chinese not in rows[term]}
    assert not wrong, f"these rows lack their Chinese term: {wrong}"


def test_the_wrong_chinese_words_are_gone() -> None:
    """Issue 16: 令牌 is the word for an auth token (write token（词元）), and a floor is 下限, not 地板."""
    docs = [GLOSSARY, REPO / "README.md", *sorted((REPO / "notebooks").glob("*.ipynb"))]
    found = [(p.name, w) for p in docs for w in ("令牌", "地板") if w in p.read_text(encoding="utf-8")]
    assert found == [], f"replace 令牌 with 词元 and 地板 with 下限: {found}"


def chinese_claims() -> dict[str, set[str]]:
    """The glossary's Chinese words by where it says they come from: ``texts``, ``chapters`` or ``usual``.

    A cell is split at ``;``; in each part, the words before a ``*chapters*`` / ``*usual*`` mark have
    that origin, the others are the texts' own. Words in parentheses are asides and are not counted.
    """
    claims: dict[str, set[str]] = {"texts": set(), "chapters": set(), "usual": set()}
    for cell in glossary_rows().values():
        for part in cell.split(";"):
            part = re.sub(r"\([^)]*\)", "", part)
            mark = re.search(r"\*(chapters|usual)\*", part)
            before, after = (part[:mark.start()], part[mark.end():]) if mark else ("", part)
            if mark:
                claims[mark.group(1)].update(HAN.findall(before))
            claims["texts"].update(HAN.findall(after))
    return claims


def test_chinese_marked_as_the_chapters_words_is_in_the_chapters() -> None:
    notebooks = "".join(p.read_text(encoding="utf-8") for p in sorted((REPO / "notebooks").glob("*.ipynb")))
    words = chinese_claims()["chapters"]
    assert words, "no word is marked *chapters*"
    assert sorted(w for w in words if w not in notebooks) == []


def test_chinese_not_marked_is_the_texts_own() -> None:
    if not TEXTS.is_dir():
        pytest.skip(f"the texts are not at {TEXTS} (they sit beside the repository in the workshop tree)")
    texts = "".join(p.read_text(encoding="utf-8") for p in sorted(TEXTS.glob("*.txt")))
    words = chinese_claims()["texts"]
    assert len(words) >= 20
    assert sorted(w for w in words if w not in texts) == []


def broken_links(doc: Path) -> list[str]:
    """Relative links of ``doc`` (outside code blocks) whose file, or heading (``#anchor``), does not exist."""
    broken = []
    for target in LINK.findall(without_code(doc.read_text(encoding="utf-8"))):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: — not ours to check offline
            continue
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        if not file.exists():
            broken.append(f"{target}: no file {file}")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading #{anchor} in {file.name}")
    return broken


DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_points_to_an_existing_file_and_heading(doc: Path) -> None:
    assert broken_links(doc) == []


def test_the_link_checker_reports_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("# Read me\n## For facilitators\n", encoding="utf-8")
    doc = tmp_path / "docs" / "a.md"
    doc.write_text("# Title\n[ok](../README.md#for-facilitators) [ok](#title) [web](https://example.com)\n"
                   "[gone](missing.md) [no heading](../README.md#nope)\n```\n[in code](ignored.md)\n```\n",
                   encoding="utf-8")
    assert [b.split(":")[0] for b in broken_links(doc)] == ["missing.md", "../README.md#nope"]
    assert slug("00 · Start here!") == "00--start-here"
