"""Chapters 00–02, second edition: the sample's storyline found in its data (``ctxlab/lab/ch00_story.py``),
chars/3 judged against a calibrated Claude count and the book's stringified-messages estimator
(``ctxlab/lab/ch01_content.py``), the x-ray that follows every keystroke, the bill's marks from chapter 04."""

from __future__ import annotations

import json
import math

import pytest

from ctxlab.estimators import EstimateRow
from ctxlab.lab.ch00_story import STORY_COLUMNS, fork_events, story_rows, storyline, stub_count
from ctxlab.lab.ch01_content import CLAUDE_COLUMNS, book_estimate, book_estimator_rows, claude_verdicts
from ctxlab.lab.data import SAMPLE_SESSION
from ctxlab.lab.workbook import load_workbook_conversation
from ctxlab.messages import Conversation, assistant, tool_result, user
from ctxlab.tables.profiles import profile_for
from ctxlab.tokens import MessageMeter

needs_sample = pytest.mark.skipif(not SAMPLE_SESSION.exists(), reason="data/sample_session.jsonl not generated")


@needs_sample
def test_the_samples_storyline_is_found_in_the_data():
    conv = load_workbook_conversation()
    events = storyline(conv, SAMPLE_SESSION)
    by_kind = {e.kind: e for e in events}
    assert by_kind["task"].call == 0 and by_kind["task"].text.startswith("Hi! I need the orderly API")
    assert by_kind["largest result"].call == 31 and "50,852 chars" in by_kind["largest result"].text
    assert by_kind["model switch"].call == 42 and "calls 42–47 on claude-opus-4-5" in by_kind["model switch"].text
    assert by_kind["interrupted"].call == 48
    fork = "after call 54: a fork — 3 items from 'm124' on, then back to 'm124'"
    assert by_kind["fork"].call == 54 and fork in by_kind["fork"].text  # the branch's time, not call 54's
    assert [e.call for e in events if e.kind == "pause"] == [30, 55]
    assert by_kind["end"].call == 77 and [e.call for e in events] == sorted(e.call for e in events)
    assert stub_count(conv) == (167, 1, 168)  # the interrupted call's stub: 167 messages become 168
    rows = story_rows(events)
    assert rows[0][0] == "start" and all(len(r) == len(STORY_COLUMNS) for r in rows)
    assert all(len(e.text) <= 80 for e in events)


def test_storyline_without_calls_times_or_forks(tmp_path):
    conv = Conversation(id="x", items=(user("Fix the build, please.", "u1"),
                                       assistant("", "a1", calls=(("c1", "bash", {"command": "make"}),)),
                                       user("stop", "u2"), assistant("Stopped.", "a2")))
    events = storyline(conv)
    assert [e.kind for e in events] == ["task", "interrupted", "end"]
    assert events[1].call == 1 and events[1].at == "" and stub_count(conv) == (4, 1, 5)
    assert storyline(Conversation(id="empty", items=())) == []
    other = tmp_path / "chat.json"
    other.write_text(json.dumps([{"role": "user", "content": "hi"}]), encoding="utf-8")
    assert fork_events(other) == []


def test_model_runs_and_largest_result_are_placed_on_their_calls():
    msgs = [user("go", "u1"), assistant("", "a1", calls=(("c1", "read_file", {"path": "a"}),)),
            tool_result("c1", "x" * 500, "t1"), assistant("done", "a2")]
    events = storyline(Conversation(id="y", items=tuple(msgs)))
    big = next(e for e in events if e.kind == "largest result")
    assert big.call == 2 and "500 chars (call 1's read_file)" in big.text


def test_claude_verdicts_judge_against_the_calibrated_count():
    rows = [EstimateRow("code", 300, 100, {"chars/3": 110}), EstimateRow("prose", 600, 100, {"chars/3": 200})]
    judged = claude_verdicts(rows, 1.25)
    assert [r[2] for r in judged] == [125, 125]
    assert judged[0][4] == "+10.0%" and judged[0][5] == "-12.0%" and judged[0][6].startswith("UNSAFE")
    assert judged[1][6].startswith("safe") and len(judged[0]) == len(CLAUDE_COLUMNS)


def test_book_estimate_is_the_stringified_messages_over_three():
    msgs = [user('say "hi"\nplease', "u1"), assistant("hi", "a1")]
    chars, tokens = book_estimate(msgs)
    expected = len('[{"role":"user","content":[{"type":"text","text":"say \\"hi\\"\\nplease"}]},'
                   '{"role":"assistant","content":[{"type":"text","text":"hi"}]}]')
    assert chars == expected and tokens == math.ceil(chars / 3)
    assert book_estimate([]) == (0, 0)
    conv = Conversation(id="z", items=tuple(msgs))
    rows, under = book_estimator_rows(conv, MessageMeter(profile_for("gpt-4o")),
                                      MessageMeter(profile_for("claude-sonnet-4-6")))
    assert rows[0][1] == tokens and [r[0] for r in rows[1:]] == ["o200k_base", "claude-sonnet-4-6"]
    assert 0 <= under <= 1
    assert book_estimator_rows(Conversation(id="e", items=()), MessageMeter(profile_for("gpt-4o")),
                               MessageMeter(profile_for("gpt-4o"))) == ([], 0.0)


def test_token_xray_follows_every_keystroke():
    pytest.importorskip("ipywidgets")
    from ctxlab.widgets.ch01_tokens import TokenXray

    x = TokenXray("hello")
    assert x.text.continuous_update is True
    x.text.value = "hello world"
    assert x.state.chars == 11 and x.state.tokens == 2


def test_bill_widget_marks_the_calls_it_is_given():
    pytest.importorskip("ipywidgets")
    pytest.importorskip("plotly")
    from ctxlab.lab.ch00_bill import read_bill
    from ctxlab.lab.ch04_ledger import bill_ledger, miss_rows
    from ctxlab.lab.data import PI_BILL
    from ctxlab.widgets.ch00_bill import BillWidget

    if not PI_BILL.exists():
        pytest.skip("data/pi_bill.csv not there")
    misses = [row[0] for row in miss_rows(bill_ledger(PI_BILL))]
    w = BillWidget(read_bill(PI_BILL), marked=misses)
    fig = w.plot.outputs[0]["data"]["application/vnd.plotly.v1+json"]
    assert fig["data"][1]["x"] == misses and f"{len(misses)} calls read less than half" in w.label.value
