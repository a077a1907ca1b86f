"""Units, orphans and the provider errors an orphan causes."""

from __future__ import annotations

import pytest

from ctxlab.base.errors import OrphanError
from ctxlab.interactions import STUB_TEXT, find_orphans, group_units
from ctxlab.messages import assistant, tool_result, user
from dataclasses import replace


def shape(units):
    return [(u.kind, [m.id for m in u.messages]) for u in units]


def test_round_granularity_splits_sequential_rounds():
    msgs = [user("go", "U"), assistant("", "A1", calls=(("c1", "ls", {}),)), tool_result("c1", "x", "T1"),
            assistant("", "A2", calls=(("c2", "ls", {}),)), tool_result("c2", "y", "T2"), assistant("done", "A3")]
    assert shape(group_units(msgs)) == [("user", ["U"]), ("round", ["A1", "T1"]), ("round", ["A2", "T2"]),
                                        ("round", ["A3"])]


def test_turn_granularity_merges_until_the_next_real_user():
    reminder = replace(user("<system-reminder>todo list changed</system-reminder>", "S"), origin="system")
    msgs = [assistant("hello, I am the agent", "P"), user("go", "U"), assistant("", "A1", calls=(("c1", "ls", {}),)),
            tool_result("c1", "x", "T1"), reminder, assistant("ok", "A2"), user("next", "U2"), assistant("fine", "A3")]
    assert shape(group_units(msgs, "turn")) == [("preamble", ["P"]), ("turn", ["U", "A1", "T1", "S", "A2"]),
                                                ("turn", ["U2", "A3"])]


def test_system_reminder_inside_an_open_round_stays_in_it():
    reminder = replace(user("<system-reminder>", "S"), origin="system")
    msgs = [user("go", "U"), assistant("", "A", calls=(("c1", "ls", {}),)), reminder, tool_result("c1", "x", "T")]
    assert shape(group_units(msgs)) == [("user", ["U"]), ("round", ["A", "S", "T"])]


def test_unanswered_call_is_stubbed_or_dropped_and_reported():
    aborted = replace(assistant("let me run", "A", calls=(("c1", "bash", {}), ("c2", "bash", {}))), stop_reason="aborted")
    msgs = [user("go", "U"), aborted, tool_result("c1", "ok", "T1"), user("stop that", "U2")]
    stub = group_units(msgs, unanswered="stub")[1]
    assert stub.unanswered == ("c2",)
    assert [m.id for m in stub.messages] == ["A", "T1", "stub:c2"]
    assert stub.messages[-1].text == STUB_TEXT and stub.messages[-1].is_error
    assert find_orphans(stub.messages) == []

    dropped = group_units(msgs, unanswered="drop")[1]
    assert [p.id for p in dropped.messages[0].tool_calls] == ["c1"]
    assert dropped.messages[0].text == "let me run"
    assert find_orphans(dropped.messages) == []


def test_a_message_holding_only_unanswered_calls_disappears_under_drop():
    msgs = [user("go", "U"), assistant("", "A", calls=(("c1", "bash", {}),)), user("never mind", "U2")]
    units = group_units(msgs, unanswered="drop")
    assert shape(units) == [("user", ["U"]), ("user", ["U2"])]
    assert [u.index for u in units] == [0, 1]


def test_orphan_result_is_set_aside_and_reported():
    # Old main raised OrphanError here and every strategy stopped; now the result is in no unit, and named.
    msgs = [user("go", "U"), tool_result("c9", "stray", "T9")]
    assert shape(group_units(msgs)) == [("user", ["U"])]
    assert [(o.kind, o.call_id, o.message_id) for o in find_orphans(msgs)] == [("result_without_call", "c9", "T9")]


def test_result_after_a_user_interrupted_its_call_is_set_aside_and_the_call_stubbed():
    # [A(call), U("stop"), T(call)]: old main raised "already closed" and find_orphans said nothing.
    msgs = [user("go", "U"), assistant("", "A", calls=(("c1", "ls", {}),)), user("hurry", "U2"),
            tool_result("c1", "late", "T")]
    units = group_units(msgs)
    assert shape(units) == [("user", ["U"]), ("round", ["A", "stub:c1"]), ("user", ["U2"])]
    assert units[1].messages[1].text == STUB_TEXT
    assert [(o.kind, o.message_id) for o in find_orphans(msgs)] == [("late_result", "T"), ("call_without_result", "A")]


def test_stub_goes_right_after_the_calling_message_not_after_later_text():
    # [A(c1, c2), T(c1), A(text)] with c2 interrupted: old main put the stub after A(text), which no API takes.
    msgs = [user("go", "U"), assistant("", "A", calls=(("c1", "ls", {}), ("c2", "ls", {}))), tool_result("c1", "x", "T1"),
            assistant("thinking aloud", "A2"), user("next", "U2")]
    assert shape(group_units(msgs))[1] == ("round", ["A", "T1", "stub:c2", "A2"])


def test_find_orphans_names_every_kind():
    msgs = [tool_result("c0", "before its call", "T0"), assistant("", "A", calls=(("c1", "ls", {}), ("c2", "ls", {}))),
            tool_result("c1", "x", "T1"), tool_result("c1", "again", "T1b"), assistant("", "B", calls=(("c2", "ls", {}),))]
    kinds = sorted((o.kind, o.call_id, o.message_id) for o in find_orphans(msgs))
    assert kinds == [("call_without_result", "c2", "B"), ("duplicate_call", "c2", "B"),
                     ("duplicate_result", "c1", "T1b"), ("result_without_call", "c0", "T0")]


def test_a_call_id_may_be_reused_once_answered():
    """tau-bench and SWE-agent reuse ids: legal when the earlier call already has its result."""
    msgs = [user("go", "U"), assistant("", "A", calls=(("c1", "ls", {}),)), tool_result("c1", "x", "T1"),
            assistant("", "B", calls=(("c1", "ls", {}),)), tool_result("c1", "y", "T2")]
    assert find_orphans(msgs) == []
    assert [u.kind for u in group_units(msgs)] == ["user", "round", "round"]
