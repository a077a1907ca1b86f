"""Chapter 04's page material: the cache rules shown are the simulators' code, the multipliers and lifetimes come from
the tables, and the core widget (a pause, the cache rules) reacts."""

from __future__ import annotations

import inspect
from pathlib import Path

import nbformat

from ctxlab.cache_anthropic import AnthropicCache
from ctxlab.cache_openai import OpenAICache
from ctxlab.lab.ch04_rules import anthropic_rule_source, multiplier_rows, openai_rule_source, retention_rows
from ctxlab.lab.workbook import load_workbook_conversation

REPO = Path(__file__).resolve().parents[1]
CORE = REPO / "notebooks/04_prefix_cache_ledger.ipynb"


def _lines_in(excerpt: str, fn) -> None:
    body = inspect.getsource(fn)
    for line in excerpt.splitlines():
        assert line.strip() in body, line


def test_the_rules_on_the_page_are_the_simulators_code():
    a, o = anthropic_rule_source(), openai_rule_source()
    assert len(a.splitlines()) <= 20 and len(o.splitlines()) <= 20
    _lines_in(a, AnthropicCache.request)
    _lines_in(o.split("\n\n")[0], OpenAICache.request)
    assert "floor_to" in o and "lookback_blocks" in a


def test_chapter_04_prints_the_rules_before_exercise_4():
    nb = nbformat.read(CORE, as_version=4)
    cells = nb.cells
    exercise = next(i for i, c in enumerate(cells) if c.cell_type == "code" and "check(4, " in c.source)
    printed = {i: "".join(o.get("text", "") for o in c.get("outputs", [])) for i, c in enumerate(cells)
               if c.cell_type == "code"}
    a = next(i for i, t in printed.items() if t.strip() == anthropic_rule_source().strip())
    o = next(i for i, t in printed.items() if t.strip() == openai_rule_source().strip())
    assert a < exercise and o < exercise


def test_multipliers_and_lifetimes_per_provider():
    rows = {r[0]: r for r in multiplier_rows()}
    assert rows["claude-sonnet-4-6"][2] == "0.1×" and rows["gpt-4o"][2] == "0.5×" and rows["gpt-4.1"][2] == "0.25×"
    life = {r[0]: r for r in retention_rows()}
    assert life["anthropic"][4].startswith("5 min") and life["openai"][3] == "128"
    assert all(r[5].startswith("https://") for r in life.values())


def test_pause_widget_reacts_to_the_pause_and_the_rules():
    from ctxlab.widgets.ch04_pause import PauseWidget
    w = PauseWidget(load_workbook_conversation(None))
    assert w.pause_row().cache_read_tokens > 0
    w.pause_minutes.value = 10
    assert w.pause_row().cache_read_tokens == 0 and "10-minute pause" in w.label.value
    w.pause_minutes.value = 0
    w.provider.value = "openai"
    assert all(r.cache_read_tokens % 128 == 0 for r in w.state.rows)
    assert "openai rules" in w.summary()
