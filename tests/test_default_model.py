"""No shipped default uses a retired model (issue 13): the chapters' default and every model literal of the
chapters' code, checked against the model lifecycle rows as of the price table's date.

The rows quote Anthropic's pages: "| claude-sonnet-4-6 | Active | N/A | Not sooner than February 17, 2027 |"
(Model deprecations, https://platform.claude.com/docs/en/about-claude/model-deprecations, snapshot 2026-08-22,
read 2026-12-02) and "Claude Sonnet 4.5 is deprecated: it is still functional but no longer recommended, and
retires on November 30, 2026." (https://platform.claude.com/docs/pt-BR/models/sonnet-4-5/overview.md, read
2026-12-02).
"""

from __future__ import annotations

import ast
import re
from datetime import date
from pathlib import Path

import pytest

from ctxlab.tables.default_model import DEFAULT_MODEL, DEFAULT_PROVIDER
from ctxlab.tables.model_facts import UnknownModelError, family_of, model_facts
from ctxlab.tables.prices import price_for, price_table_date

ROOT = Path(__file__).resolve().parents[1]
# the chapters' code: lab, exercises, widgets, the agent loop, the benchmarks
SCANNED = [p for d in ("ctxlab/lab", "ctxlab/exercises", "ctxlab/widgets", "bench")
           for p in sorted((ROOT / d).glob("*.py"))]
SCANNED.append(ROOT / "ctxlab" / "loop.py")
# Retired on purpose: chapter 03 shows the window rule (input + max_tokens within the window) that Anthropic enforced
# before Claude 4.5; every model before 4.5 is retired, and the chapter's table labels the row "(retired)".
RETIRED_ON_PURPOSE = {("ctxlab/lab/ch03_walk.py", "claude-sonnet-4-20250514")}
MODEL_SHAPED = re.compile(r"^[a-z][a-z0-9.\-:/@]*\d[a-z0-9.\-:/@]*$")  # an id, not prose


def model_literals(path: Path) -> list[tuple[int, str]]:
    """(line, literal) for every string constant of the file that names a model family the table knows."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and MODEL_SHAPED.match(node.value):
            try:
                family_of(node.value)
            except UnknownModelError:
                continue
            found.append((node.lineno, node.value))
    return found


def test_the_price_table_date_is_a_date():
    assert isinstance(price_table_date(), date) and price_table_date() >= date(2026, 12, 2)


def test_the_default_model_does_not_retire_on_or_before_the_price_tables_date():
    """The issue's test: it fails once the default's retirement date is on or before the price table's date."""
    life = model_facts(DEFAULT_MODEL, on=price_table_date()).lifecycle.value
    on = price_table_date()
    assert life.retires_on is None or date.fromisoformat(life.retires_on) > on, \
        f"{DEFAULT_MODEL} retires on {life.retires_on}: pick a current default in ctxlab/tables/default_model.py"
    assert life.state_on(on) == "active"


def test_the_default_is_documented_priced_and_anthropics():
    """The default's rules are documented (not assumed), and it has a list price."""
    row = model_facts(DEFAULT_MODEL)
    assert (row.family, row.provider) == (DEFAULT_MODEL, DEFAULT_PROVIDER)
    for field in ("context_window_tokens", "min_cache_tokens", "thinking_rule", "tool_prompt_tokens", "lifecycle"):
        assert row.facts()[field].source.status == "documented", field
    assert price_for(DEFAULT_MODEL) is not None


def test_the_old_default_is_retired_so_the_check_can_fail():
    """The rule this file applies, on the model it replaced: Sonnet 4.5 is retired on the price table's date."""
    assert model_facts("claude-sonnet-4-5", on=price_table_date()).lifecycle.value.state_on(price_table_date()) \
        == "retired"


def test_the_scan_finds_model_literals():
    """The source scan sees literals (a scan that finds nothing would pass anything)."""
    found = {lit for p in SCANNED for _, lit in model_literals(p)}
    assert {"claude-opus-4-5", "gpt-4o"} <= found
    assert len(SCANNED) > 40
    assert model_literals(ROOT / "tests" / "test_default_model.py")  # this file names Sonnet 4.5: seen


@pytest.mark.parametrize("path", SCANNED, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_model_literal_of_the_chapters_code_is_retired(path):
    """Every model id written in the chapters' code (defaults, dropdown choices, synthetic conversations) is
    not retired on the price table's date."""
    on = price_table_date()
    rel = path.relative_to(ROOT).as_posix()
    retired = [f"{rel}:{line}: {lit!r}" for line, lit in model_literals(path)
               if model_facts(lit, on=on).lifecycle.value.state_on(on) == "retired"
               and (rel, lit) not in RETIRED_ON_PURPOSE]
    assert not retired, f"retired as of {on}: " + "; ".join(retired) + f" (use DEFAULT_MODEL, {DEFAULT_MODEL!r})"


def test_a_model_retired_on_purpose_is_retired_and_labelled_so():
    on = price_table_date()
    for rel, lit in RETIRED_ON_PURPOSE:
        assert model_facts(lit, on=on).lifecycle.value.state_on(on) == "retired", (rel, lit)
        assert "(retired)" in (ROOT / rel).read_text(encoding="utf-8"), f"{rel} must label {lit} as retired"
