"""check_context: each rule catches a context that breaks it, and passes the sound ones."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ctxlab.checks import check_context
from ctxlab.strategies import Promise
from ctxlab.context import BudgetPolicy, build_context
from ctxlab.messages import Conversation, Entry, ToolSpec, assistant, tool_result, user
from ctxlab.paging import READ_PAGE_TOOL
from ctxlab.replay import get_strategy
from ctxlab.tables.profiles import profile_for
from ctxlab.views import SUMMARY_MARKER

GPT = profile_for("gpt-4o")
BASH = ToolSpec("bash", "Run a shell command.")
REMINDER = user("<system-reminder>files changed</system-reminder>", "R", origin="system")


def history(*items, system=("Be careful.",), tools=(BASH,)):
    return Conversation("h", items, system=system, tools=tools)


HISTORY = history(user("fix the test 修复", "U1"), assistant("", "A1", calls=(("c1", "bash", {"cmd": "pytest"}),)),
                  tool_result("c1", "1 failed 💥", "T1"), assistant("found it", "A2"), user("go on", "U2"))


def whole(conv, **changes):
    ctx = build_context(conv, BudgetPolicy(budget_tokens=100_000), profile=GPT)
    return replace(ctx, **changes)


def rules(ctx, conv=HISTORY, strategy="budgeted"):
    return [v.rule for v in check_context(ctx, conv, get_strategy(strategy))]


def test_a_sound_context_breaks_no_rule():
    assert rules(whole(HISTORY)) == []


def test_a_reminder_between_a_call_and_its_result_is_sent_after_the_result():
    # Old main judged this by ctxlab's own pairing check and excused it when the history had it so; now the
    # oracle judges the bodies (no exception), and the renderer's declared rule puts the result first.
    recorded = history(*HISTORY.items[:2], REMINDER, *HISTORY.items[2:])
    assert rules(whole(recorded), recorded) == []
    ctx = whole(HISTORY)
    moved = (ctx.messages[0], ctx.messages[1], REMINDER, *ctx.messages[2:])  # a strategy that made one up
    assert rules(replace(ctx, messages=moved)) == ["history"]  # not in the history; the wire is still valid


@pytest.mark.parametrize("messages, what", [
    (lambda m: (m[0], m[0], *m[1:]), "sent twice"),
    (lambda m: (m[0], m[3], m[1], m[2], m[4]), "out of the history's order"),
    (lambda m: (*m, user("made up", "X")), "not in the history"),
])
def test_messages_come_from_the_history_in_order_once(messages, what):
    ctx = whole(HISTORY)
    found = check_context(replace(ctx, messages=messages(ctx.messages)), HISTORY)
    assert any(v.rule == "history" and what in v.detail for v in found)


def test_stubs_and_summaries_are_the_only_messages_a_context_may_add():
    summary = user(f"{SUMMARY_MARKER} of 2 dropped messages]", "summary:budgeted", origin="compact_summary")
    ctx = whole(HISTORY)
    assert rules(replace(ctx, messages=(summary, *ctx.messages))) == []


def test_only_declared_tools_and_summary_blocks_may_follow_the_head():
    ctx = whole(HISTORY)
    assert rules(replace(ctx, tools=(*ctx.tools, READ_PAGE_TOOL)), strategy="paged") == []
    assert rules(replace(ctx, tools=(*ctx.tools, READ_PAGE_TOOL)), strategy="pipeline") == []
    assert "head" in rules(replace(ctx, tools=(*ctx.tools, READ_PAGE_TOOL)))  # budgeted declares no tool
    rm_rf = ToolSpec("rm_rf", "Delete everything.")
    assert "head" in rules(replace(ctx, tools=(*ctx.tools, rm_rf)), strategy="paged")
    assert check_context(replace(ctx, tools=(*ctx.tools, rm_rf)), HISTORY, Promise(added_tools=(rm_rf,))) == []
    assert rules(replace(ctx, system=(*ctx.system, f"{SUMMARY_MARKER} of 3 dropped messages]\n- a"))) == []
    assert "head" in rules(replace(ctx, system=(*ctx.system, "You may push to main.")))
    assert "head" in rules(replace(ctx, system=("Be reckless.",)))


def test_the_newest_user_message_may_be_missing_only_where_a_compaction_summarised_it():
    ctx = whole(HISTORY)
    summary = user(f"{SUMMARY_MARKER} of 4 dropped messages]", "summary:budgeted", origin="compact_summary")
    without = replace(ctx, messages=(summary, *ctx.messages[:-1]))
    assert "newest_user" in rules(without)  # a summary in the context does not excuse it
    compacted = history(*HISTORY.items, Entry("compaction", "k1", {"summary": "all of it", "first_kept_id": None}),
                        assistant("after the compaction", "A3"))
    view = whole(compacted)  # every message; the compaction left U2 out of the view the model saw
    summarised = replace(view, messages=tuple(m for m in view.messages if m.id != "U2"))
    assert "newest_user" not in rules(summarised, compacted, "recorded")


def test_a_budget_larger_than_the_window_is_a_violation():
    ctx = whole(HISTORY)
    assert "budget" in rules(replace(ctx, budget_tokens=GPT.context_window + 1), strategy="full")
    assert rules(replace(ctx, budget_tokens=GPT.context_window), strategy="full") == []


def test_what_a_strategy_promises_is_what_it_declares():
    """check_context names no strategy: ``budgeted`` and ``added_tools`` come from the object it is given."""
    over = replace(whole(HISTORY), budget_tokens=10)
    assert "budget" in rules(over) and "budget" not in rules(over, strategy="full")
    assert "budget" not in [v.rule for v in check_context(over, HISTORY, Promise(budgeted=False))]
    assert [v.rule for v in check_context(over, HISTORY)] == rules(over)  # the default promise: budgeted
    assert {n: (get_strategy(n).budgeted, get_strategy(n).added_tools) for n in ("full", "recorded", "paged")} == {
        "full": (False, ()), "recorded": (False, ()), "paged": (True, (READ_PAGE_TOOL,))}

    class Plain:  # a user's strategy that declares nothing promises a budget and adds no tool
        name = "mine"

    assert "budget" in [v.rule for v in check_context(over, HISTORY, Plain())]
    with pytest.raises(TypeError, match="get_strategy"):
        check_context(over, HISTORY, "full")  # a name would silently promise a budget: refused
