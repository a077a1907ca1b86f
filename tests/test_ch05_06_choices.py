"""Chapter 06's core widget and its lab rows: where the summary goes and how often it is made, read off the ledger.

On the bundled sample at the chapter's 30,000-token window: regenerating only on a change makes 6 summary calls
instead of 129 and the bill falls from $4.9132 to $1.2633 (extending with what newly dropped: 4 calls, $0.9508);
the placement moves it by less than a cent. A
transcript that records no model is unpriced until ``priced`` names one.
"""

from __future__ import annotations

import pytest

from ctxlab.base.errors import CtxlabError
from ctxlab.lab.ch06_choices import CHOICE_COLUMNS, choice_row, choice_rows, priced, pricing_line
from ctxlab.lab.data import SAMPLE_SESSION
from ctxlab.lab.workbook import load_workbook_conversation

pytest.importorskip("ipywidgets")
from ctxlab.widgets.ch06_choices import SummaryChoiceWidget  # noqa: E402

needs_sample = pytest.mark.skipif(not SAMPLE_SESSION.exists(), reason="data/sample_session.jsonl not generated yet")


@pytest.fixture(scope="module")
def sample():
    return load_workbook_conversation()


@needs_sample
def test_regenerating_on_a_change_cuts_the_summary_calls_and_the_bill(sample):
    rows = {(r.placement, r.regenerate): r for r in choice_rows(sample, 30_000)}
    every, change = rows[("system_end", "every_call")], rows[("system_end", "on_change")]
    assert (every.summary_calls, change.summary_calls) == (129, 6)
    extend = rows[("system_end", "extend")]  # ctxlab's default (issue 18): only what newly dropped is summarised
    assert extend.summary_calls == 4 and round(extend.total_cost_usd, 4) == 0.9508
    assert extend.summary_input_tokens < change.summary_input_tokens and extend.summaries == change.summaries
    assert round(every.total_cost_usd, 4) == 4.9132 and round(change.total_cost_usd, 4) == 1.2633
    spread = max(r.total_cost_usd for r in rows.values() if r.regenerate == "every_call") - \
        min(r.total_cost_usd for r in rows.values() if r.regenerate == "every_call")
    assert 0 < spread < 0.01 < every.total_cost_usd - change.total_cost_usd
    assert every.summaries <= every.summary_calls and len(every.as_row()) == len(CHOICE_COLUMNS)
    assert every.total_cost_usd == pytest.approx(every.main_cost_usd + every.summary_cost_usd)


@needs_sample
def test_the_widget_moves_both_choices_and_keeps_what_it_saw(sample):
    w = SummaryChoiceWidget(sample, 30_000)
    first = w.state
    assert first.summary_calls == 129 and "129" in w.label.value and "$4.9132" in w.label.value
    w.regenerate.value = "on_change"
    assert w.state.summary_calls == 6 and "$1.2633" in w.label.value and "summary calls" in w.bar.value
    w.regenerate.value = "extend"
    assert w.state.summary_calls == 4 and "$0.9508" in w.label.value and "extend with what is new" in w.label.value
    w.regenerate.value = "on_change"
    w.placement.value = "first_user"
    assert w.state.placement == "first_user" and w.replays == 4
    w.placement.value, w.regenerate.value = "system_end", "every_call"
    assert w.state is first and w.replays == 4  # a second visit runs nothing
    assert "regenerate='every_call'" in w._repr_mimebundle_()["text/plain"]


@pytest.mark.shared
def test_an_unpriced_transcript_says_so_and_priced_names_a_model(shared_transcripts, sample):
    from notebook_runner import shared_file  # tests/notebook_runner.py

    bare = load_workbook_conversation(shared_file(shared_transcripts, "tau-bench/*.json"))  # records no model
    assert "no model recorded" in pricing_line(bare) and "MODEL = " in pricing_line(bare) and len(pricing_line(bare)) <= 100
    row = choice_row(bare, 5_000, regenerate="on_change")
    assert row.total_cost_usd is None and row.as_row()[-1] == "—" and row.summary_calls > 0
    assert "unpriced" in SummaryChoiceWidget(bare, 5_000).label.value
    named = priced(bare, "gpt-4o")
    assert named.model == "gpt-4o" and named.provider == "openai" and priced(sample, "gpt-4o") is sample
    assert choice_row(named, 5_000, regenerate="on_change").total_cost_usd > 0


@needs_sample
def test_bad_settings_are_refused_and_an_impossible_window_reported(sample):
    with pytest.raises(ValueError):
        choice_row(sample, 30_000, placement="middle")
    with pytest.raises(CtxlabError):
        SummaryChoiceWidget(sample, 0)
    with pytest.raises(CtxlabError):
        SummaryChoiceWidget(sample, 30_000, regenerate="sometimes")
    bad = choice_row(sample, 2_000)
    assert bad.error and bad.summary_calls == 0
    w = SummaryChoiceWidget(sample, 2_000)
    assert "no replay" in w.label.value and w.bar.value == ""
