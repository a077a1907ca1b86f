"""Chapter 07's lab modules on their own (ctxlab/lab/ch07_compaction.py, ch07_policies.py, ch07_floor.py,
ch07_metering.py): they run without the UI stack, read typed fields (a ledger row's ``kind``, a compaction entry's
``target``) that agree with the prose notes they replaced, and format their rows as the chapter prints them. The
widget over them is tested in tests/test_widget_ch07_08.py."""

from __future__ import annotations

import re
import subprocess
import sys

from ctxlab.lab.ch07_compaction import (
    CompactionPoint,
    SawtoothState,
    compaction_call,
    policy_replay,
    sawtooth,
    sawtooth_rows,
    sawtooth_summary,
    state_row,
    summary_rows,
    two_decimals,
)
from ctxlab.lab.ch07_floor import FLOOR_MODEL, floor_case
from ctxlab.lab.ch07_metering import MeteringComparison
from ctxlab.lab.ch07_policies import PolicyRow, pipeline_steps, policy_name, policy_row

WINDOW = 30_000


def test_the_lab_modules_load_without_the_ui_stack():
    code = ("import sys\nimport ctxlab.lab.ch07_compaction, ctxlab.lab.ch07_floor, ctxlab.lab.ch07_metering\n"
            "import ctxlab.lab.ch07_policies\n"
            "print(sorted(m for m in ('ipywidgets', 'plotly', 'IPython') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_small_helpers():
    assert two_decimals(0.7000000000000001) == 0.7 and two_decimals(1) == 1.0
    assert compaction_call("compaction:main:31") == 31
    assert policy_name("budgeted") == "budgeted" and policy_name((0.8, 0.5)) == "compaction 0.80 → 0.50"


def test_typed_fields_agree_with_the_notes_they_replaced(sample):
    """The target and the summary calls come from typed fields now; the notes still say the same numbers."""
    result = policy_replay(sample, WINDOW)
    rows = summary_rows(result)
    assert [r.call for r in rows] == [31, 32]
    assert rows == [r for r in result.ledger.rows if r.note.startswith("summary call")]
    state = sawtooth(result, WINDOW, 0.8, 0.5)
    notes = {rec.call.index: rec.notes for rec in result.records}
    for c in state.compactions:
        said = next(m.group(1) for n in notes[c.call] if (m := re.search(r"^compacted .*target ([\d,]+) tokens\)", n)))
        assert c.target_tokens == int(said.replace(",", ""))
        assert c.above_target == any(n.startswith("above target") for n in notes[c.call])
    assert state.compaction_calls == (31, 32) and state.summary_calls == 2


def test_rows_are_formatted_as_the_chapter_prints_them():
    point = CompactionPoint(31, 25_000, 14_000, 16_000, 40, False, True, 0.0123)
    state = SawtoothState(30_000, 0.8, 0.5, (1_000, 25_000, 14_000), (point,), 1, 0.0123, 0.5, 0.25, 1)
    assert sawtooth_rows(state) == [(31, 25_000, 14_000, 16_000, 40, "target raised to the floor, results pruned "
                                     "first", "$0.0123")]
    assert state_row(state) == ("80%", "50%", 1, "31", 25_000, 1, "$0.0123", "$0.5000", "25.0%")
    assert sawtooth_summary(state).startswith("window 30,000, trigger 80% (24,000), target 50% (15,000): "
                                              "1 compaction (calls 31); largest context 25,000 tokens")
    failed = SawtoothState(30_000, 0.8, 0.9, error="the target must be below the trigger")
    assert state_row(failed)[2:4] == ("—", "the target must be below the trigger")
    assert policy_row(PolicyRow("budgeted", 30_000, None, None, error="too small"))[-1] == "too small"
    assert policy_row(PolicyRow("budgeted", 30_000, None, None, 0, 4, 0, 0.5, None, 10, 9, 20, 18))[6:] == (
        "unpriced", 10, 9, "20 (min 18)")


def test_the_metering_comparison_finds_its_extremes():
    m = MeteringComparison(100, 0.8, (), ((1, 70, 90), (2, 85, 79), (3, 50, 100), (4, 105, 100)))
    assert m.largest_under == (3, 50, 100) and m.largest_over == (2, 85, 79)  # by share: -50% and +7.6%
    assert [e[0] for e in m.disagreements] == [1, 2, 3]  # the meter and the count on opposite sides of 80


def test_the_floor_case_is_an_openai_session_with_the_window_asked_for():
    case = floor_case(window=1_200)
    assert case.profile.context_window == 1_200 and case.history.model == FLOOR_MODEL
    assert case.call.message.id == "a2" and "a2" not in {m.id for m in case.history.messages}  # the call to make


def test_pipeline_steps_count_every_call(sample):
    result = policy_replay(sample, WINDOW, strategy="pipeline")
    assert pipeline_steps(result) == {"sent as is": 74, "results shrunk": 2, "compacted": 1}
