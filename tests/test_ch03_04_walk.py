"""Chapter 03's page material: the walk on the page is build_context's own code, the slider's range includes the
inferred static head, the reserve rule and the stub."""

from __future__ import annotations

import inspect
from pathlib import Path

import nbformat
import pytest

from ctxlab.context import build_context
from ctxlab.lab.ch03_walk import (OLD_CLAUDE, SMALL_CLAUDE, context_without_stub, fixed_tokens, reserve_rows,
                                  stub_rows, walk_source, window_verdicts)
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
    # Anthropic, Context windows: input + max_tokens must fit the window, so the budget is window − max_tokens.
    p = profile_for("claude-haiku-4-5")
    rows = {r[1]: r for r in reserve_rows(p, (64_000,))}
    assert rows["any"][2] == p.context_window * 9 // 10 and rows[64_000][2] == p.context_window - 64_000


@pytest.mark.parametrize("model", ["gpt-4o", "claude-haiku-4-5", "claude-sonnet-4-6"])
def test_reserve_rows_stay_within_the_models_max_output(model):
    # The reader trial's crash: gpt-4o allows 16,384 output tokens, so 32,000 and 64,000 were asked of input_limit.
    p = profile_for(model)
    rows = reserve_rows(p)
    asked = [r[1] for r in rows[1:]]
    assert asked and max(asked) == p.max_output_tokens and all(m <= p.max_output_tokens for m in asked)
    assert all(r[2] + r[3] == p.context_window for r in rows)


def test_sample_stub_and_window_verdicts():
    conv = load_workbook_conversation(None)
    ctx = build_context(conv)
    stubs = stub_rows(ctx.messages)
    assert len(stubs) == 1 and len(ctx.messages) == len(conv.messages) + 1
    assert not stub_rows(context_without_stub(ctx).messages)
    verdicts = list(window_verdicts(ctx))
    assert [v.split(":")[0] for _, v in verdicts] == ["accepted", "output_over_window", "accepted",
                                                      "input_over_window"]
    small, old = profile_for(SMALL_CLAUDE), profile_for(OLD_CLAUDE)
    assert small.context_window == old.context_window  # the same window: only the model generation differs
    assert f"{small.context_window + 1:,} input" in verdicts[3][0]  # one token over the real window, not a made-up one
    assert f"{small.budget_tokens(0.9):,} input + {small.max_output_tokens:,} max_tokens" in verdicts[1][0]


def test_window_verdicts_name_no_retired_model_as_the_comparison():
    from ctxlab.tables.model_facts import model_facts
    state = model_facts(SMALL_CLAUDE).lifecycle.value.published_state
    assert state == "active", f"{SMALL_CLAUDE} is {state}: chapter 03 needs an active 200k model to compare with"


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
