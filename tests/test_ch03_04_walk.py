"""Chapter 03's page material: the walk on the page is build_context's own code, the slider's range includes the
inferred static head, the reserve rule and the stub."""

from __future__ import annotations

import inspect
from pathlib import Path

import nbformat
import pytest

from ctxlab.context import build_context
from ctxlab.lab.ch03_walk import (context_without_stub, fixed_tokens, reserve_rows, stub_rows, walk_source,
                                  window_verdicts)
from ctxlab.lab.workbook import load_workbook_conversation
from ctxlab.tables.profiles import profile_for
from ctxlab.tokens import MessageMeter

REPO = Path(__file__).resolve().parents[1]
VIEWER = sorted((REPO.parent / "shared/data/transcripts/claude-code-viewer").glob("*.jsonl"))


def test_walk_on_the_page_is_the_builders_code():
    walk = walk_source()
    assert 5 <= len(walk.splitlines()) <= 20
    body = inspect.getsource(build_context)
    for line in walk.splitlines():
        assert line.strip() in body
    assert "break" in walk and "reversed(units)" in walk


def test_chapter_03_prints_the_walk():
    nb = nbformat.read(REPO / "notebooks/03_interactions_and_budget.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and "walk_source()" in c.source)
    printed = "".join(o.get("text", "") for o in cell.outputs)
    assert printed.strip() == walk_source().strip()


def test_reserve_rule_is_window_minus_max_tokens():
    p = profile_for("claude-sonnet-4-5")
    rows = {r[1]: r for r in reserve_rows(p, (64_000,))}
    assert rows["any"][2] == 180_000 and rows[64_000][2] == 136_000


def test_sample_stub_and_window_verdicts():
    conv = load_workbook_conversation(None)
    ctx = build_context(conv)
    stubs = stub_rows(ctx.messages)
    assert len(stubs) == 1 and len(ctx.messages) == len(conv.messages) + 1
    assert not stub_rows(context_without_stub(ctx).messages)
    verdicts = dict(window_verdicts(ctx))
    cases = list(verdicts)
    assert verdicts[cases[0]].startswith("input_over_window")
    assert verdicts[cases[1]].startswith("output_over_window")
    assert verdicts[cases[2]] == "accepted"  # Claude 4.5 and newer accept input + max_tokens over the window


@pytest.mark.skipif(not VIEWER, reason="claude-code-viewer transcript not present")
def test_budget_slider_reaches_a_context_on_claude_code():
    from ctxlab.widgets.ch03_budget import BudgetWidget
    conv = load_workbook_conversation(VIEWER[0])
    w = BudgetWidget(conv)
    p = w.profiles[w.profile.value]
    assert w.budget.max > fixed_tokens(conv, p, w.meter(w.profile.value))
    states = []
    for b in w.spread((0.5, 0.9)):
        w.budget.value = b
        states.append(w.state)
    assert all(not s.error for s in states), [s.error for s in states]
