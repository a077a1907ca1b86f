"""docs/providers.md, the provider rules a learner reads: generated from ctxlab/tables/model_facts.py, never drifting.

The committed file must be exactly what :func:`ctxlab.tables.providers_doc.render` makes from the table today, and
its rows, read back as a learner reads them, must give every family's value for every field on every date range.
Provider rules quoted below were read on 2026-12-02 (Anthropic pages via the gpambrozio/ClaudeDocs mirror).
"""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

from ctxlab.tables.model_facts import FIELDS, all_facts, families, family_of
from ctxlab.tables.providers_doc import (
    DOC_PATH,
    REGENERATE,
    SECTIONS,
    changes,
    format_value,
    models,
    render,
    span,
)

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / DOC_PATH
LABELS = {label: field for _, fields, _ in SECTIONS for field, label in fields}


def table_rows(text: str) -> list[list[str]]:
    """The 8-cell rows of every table in the document (header and rule lines left out)."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if len(cells) == 8 and cells[0] != "rule" and not set(cells[0]) <= set("-"):
            rows.append(cells)
    return rows


def families_of_cell(cell: str) -> list[str]:
    every = re.fullmatch(r"every (\w+) model in the table \((\d+)\)", cell)
    if every:
        provider = {"Anthropic": "anthropic", "OpenAI": "openai", "Google": "google"}[every.group(1)]
        found = [f for f in families() if family_of(f)[1] == provider]
        assert len(found) == int(every.group(2))
        return found
    return re.findall(r"`([^`]+)`", cell)


def test_the_committed_file_is_what_the_table_gives():
    assert DOC.exists(), f"{DOC_PATH} is missing: run {REGENERATE}"
    assert DOC.read_text(encoding="utf-8") == render(), f"{DOC_PATH} is out of date: run {REGENERATE}"


def test_every_fact_of_the_table_has_its_row():
    """Read back from the text: for every (family, field, fact), a row with the field's label, the value as shown,
    a models cell naming the family (or all of its provider's), the fact's dates and its status."""
    rows = table_rows(render())
    assert rows
    index = {(LABELS[r[0]], fam, r[1], r[3], r[7]) for r in rows for fam in families_of_cell(r[2])}
    missing = [(fam, field, fact.value) for fam, field, fact in all_facts()
               if (field, fam, format_value(field, fact.value).replace("|", "\\|"), span(fact.since, fact.until),
                   fact.source.status) not in index]
    assert missing == []
    assert {LABELS[r[0]] for r in rows} == set(FIELDS), "every field has a section"
    assert len(index) == len(all_facts()), "no row names a family the table does not give that value"


def test_the_opus_4_7_minimum_shows_its_change_on_2026_06_10():
    """Prompt caching, 'Cache limitations' (snapshot 28085629, 2026-06-09): "- 4,096 tokens for [Claude Mythos
    Preview](...), Claude Opus 4.7, Claude Opus 4.6, and Claude Opus 4.5"; snapshot ff5b8ed (2026-08-22): "- 2,048
    tokens for [Claude Mythos Preview](...) and Claude Opus 4.7". platform.claude.com/docs/en/build-with-claude/
    prompt-caching, read 2026-12-02."""
    line = "* `claude-opus-4-7`: 4,096 tokens (to 2026-06-09) → 2,048 tokens (from 2026-06-10)"
    assert line in changes("min_cache_tokens")
    assert line in render()


def test_opus_5_5_reads_at_a_twentieth_and_the_others_at_a_tenth():
    """Claude Opus 5.5 overview (platform.claude.com/docs/zh-CN/models/opus-5-5/overview, read 2026-12-02):
    "- Input\\n- $4 / MTok" and "- Cache read\\n- $0.20 / MTok" (0.05×); Pricing (snapshot ff5b8ed):
    "| Cache read (hit) | 0.1x base input price | Same duration as the preceding write |"."""
    reads: dict[str, list[str]] = {}
    for r in table_rows(render()):
        if LABELS[r[0]] == "cache_read_multiplier":
            reads.setdefault(r[1], []).extend(families_of_cell(r[2]))
    assert reads["0.05×"] == ["claude-opus-5-5"]
    assert "claude-sonnet-4-6" in reads["0.1×"] and "claude-opus-5-5" not in reads["0.1×"]


def test_helpers_format_as_a_reader_expects():
    assert span(None, None) == "all dates read"
    assert span(date(2026, 2, 27), date(2026, 5, 14)) == "2026-02-27 to 2026-05-13"
    assert format_value("ttl_options_s", (300.0, 3600.0)) == "5 min, 1 h"
    assert format_value("ttl_default_s", 86400.0) == "24 h"
    assert format_value("min_cache_tokens", None) == "not known"
    claude = [f for f in families() if f.startswith("claude-")]
    assert models(claude) == f"every Anthropic model in the table ({len(claude)})"
    assert models(["gpt-4o", "gpt-5"]) == "`gpt-4o`, `gpt-5`"


def test_the_two_provider_documents_link_each_other():
    facts = (REPO / "docs" / "provider_facts.md").read_text(encoding="utf-8")
    assert "(providers.md)" in facts and "(provider_facts.md)" in render()
