"""Reader-trial findings for chapters 01–03 (issue 16): each one a check on the committed outputs or the code."""

from pathlib import Path

import nbformat
import pytest

from ctxlab.context import BudgetPolicy, build_context
from ctxlab.lab.calibration import factor_source
from ctxlab.lab.ch02_session import budget_line
from ctxlab.lab.workbook import load_workbook_conversation
from ctxlab.tables.model_facts import model_facts
from ctxlab.tables.profiles import profile_for
from ctxlab.tokens import TiktokenCounter

REPO = Path(__file__).resolve().parents[1]


def printed(name: str) -> str:
    nb = nbformat.read(REPO / "notebooks" / name, as_version=4)
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


def test_a_calibrated_counter_reads_as_a_product():
    # The trial read "o200k_basex1.257" as one name; the label is the encoding times the factor.
    assert TiktokenCounter("o200k_base", 1.257).name == "o200k_base × 1.257"
    assert TiktokenCounter("o200k_base").name == "o200k_base"
    assert "basex" not in printed("02_session_and_context.ipynb")


def test_chapter_02_says_where_its_budget_comes_from():
    conv = load_workbook_conversation(None)
    ctx = build_context(conv)
    line = budget_line(conv)
    p = profile_for(conv.model, conv.provider)
    assert f"budget {ctx.budget_tokens:,} tokens" in line and f"{p.context_window:,}-token window" in line
    assert ctx.budget_tokens == round(p.context_window * 0.9)
    assert line in printed("02_session_and_context.ipynb")
    assert budget_line(conv, BudgetPolicy(budget_tokens=5_000)).startswith("budget 5,000 tokens, set by the policy")


def test_chapter_01_prints_where_the_claude_factor_comes_from():
    source = model_facts("claude-sonnet-4-6").o200k_calibration.source
    out = " ".join(printed("01_token_accounting.ipynb").split())  # fill() wraps lines
    assert source.quote in out, "chapter 01 must quote the calibration row that 1.257 comes from"
    assert factor_source(profile_for("claude-sonnet-4-6")) in out


def test_factor_source_for_a_claude_model_the_table_lacks():
    # claude-trace records claude-3-5-haiku, which has no row: chapter 01 stopped with UnknownModelError there.
    p = profile_for("claude-3-5-haiku", "anthropic")
    line = factor_source(p)
    assert line.startswith("claude-3-5-haiku has no row in the model table") and f"{p.calibration:g}" in line


@pytest.mark.parametrize("model", ["claude-sonnet-4-6", "gpt-4o"])
def test_budget_line_on_other_models(model):
    from ctxlab.messages import Conversation, user
    conv = Conversation("t", (user("hi", "u1"),), model=model)
    assert f"{profile_for(model).context_window:,}-token window of {model}" in budget_line(conv)


def test_the_orphan_verdict_names_the_pair_rule_not_only_the_first_found():
    # The trial read "first: tool_result_first" (a block-order rule) where the chapter had dropped a call.
    from ctxlab.lab.ch03_budget import call_and_result, provider_verdicts

    ctx = build_context(load_workbook_conversation(None))
    messages = list(ctx.messages)
    caller, result = call_and_result(messages)
    dropped_call = provider_verdicts(ctx, [m for m in messages if m is not caller])
    assert "tool_result_orphan ×" in dropped_call["anthropic"] and "the pair: tool_result_orphan" in dropped_call["anthropic"]
    dropped_result = provider_verdicts(ctx, [m for m in messages if m is not result])
    assert "the pair: tool_use_answered" in dropped_result["anthropic"]
    assert provider_verdicts(ctx, messages) == {"anthropic": "accepted", "openai": "accepted"}


@pytest.mark.parametrize("path", sorted((REPO / "notebooks").glob("0[0-8]_*.ipynb")), ids=lambda p: p.name)
def test_questions_come_before_the_takeaway_in_every_chapter(path):
    # The second trial: chapters 03 and 04 put the takeaway first, the others after the questions.
    nb = nbformat.read(path, as_version=4)
    heads = [c.source.split("\n")[0] for c in nb.cells if c.cell_type == "markdown"]
    questions = [i for i, h in enumerate(heads) if h.startswith("## Questions")]
    takeaway = [i for i, h in enumerate(heads) if h.startswith("## Takeaway")]
    if questions and takeaway:
        assert questions[0] < takeaway[0], f"{path.name}: the takeaway comes before the questions"
