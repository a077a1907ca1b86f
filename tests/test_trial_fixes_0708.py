"""Issue 16's reader trial, chapter 07: a compaction aimed at 15,000 landed at 2,772 with no word on why."""

import pytest

from ctxlab.exercises.ex07_compaction_cut import real_cuts
from ctxlab.lab.ch07_compaction import sawtooth_rows
from ctxlab.lab.data import SAMPLE_SESSION
from ctxlab.lab.workbook import load_workbook_conversation
from ctxlab.widgets.ch07_compaction import SawtoothWidget

WINDOW = 30_000


@pytest.mark.skipif(not SAMPLE_SESSION.exists(), reason="the bundled sample is not there")
def test_a_compaction_far_under_its_target_says_the_next_unit_was_too_big():
    conv = load_workbook_conversation(None)
    rows = {r[0]: r for r in sawtooth_rows(SawtoothWidget(conv, WINDOW).state)}
    cuts = {c.call: c for c in real_cuts(conv, WINDOW)}
    flagged = [call for call, r in rows.items() if "next unit too big for target" in r[5]]
    assert flagged, rows
    for call in flagged:
        after, aimed = rows[call][2], rows[call][3]
        assert after < aimed / 2
        cut = cuts[call]
        kept = cut.units.index(cut.kept_unit)
        older = cut.unit_tokens[kept - 1]  # the unit just older than the first one kept
        assert kept > 0 and older > aimed - after, (call, older, aimed, after)  # keeping it would pass the target


@pytest.mark.skipif(not SAMPLE_SESSION.exists(), reason="the bundled sample is not there")
def test_an_unpriced_replay_shows_no_dollar_figure_for_its_summary_calls():
    # The trial saw "unpriced" beside "summary calls $0.0000" on a transcript with no model.
    import dataclasses

    from ctxlab.lab.ch07_compaction import sawtooth_summary, state_row

    priced_state = SawtoothWidget(load_workbook_conversation(None), WINDOW).state
    assert priced_state.cost_usd is not None and "$" in sawtooth_summary(priced_state)
    state = dataclasses.replace(priced_state, cost_usd=None)  # what a replay with no price gives
    line = sawtooth_summary(state)
    assert "cost unpriced" in line and "$" not in line, line
    assert "$" not in " ".join(map(str, state_row(state))) and "unpriced" in state_row(state)


@pytest.mark.skipif(not SAMPLE_SESSION.exists(), reason="the bundled sample is not there")
def test_the_capstone_says_why_its_window_is_not_the_models():
    # The second trial: chapter 09 replayed a 1M-window model at 100,000 and did not say why.
    from ctxlab.lab.ch08_leaderboard import leaderboard_window, window_reason
    from ctxlab.lab.replays import REPLAYS
    from ctxlab.tables.profiles import profile_for

    conv = load_workbook_conversation(None)
    window = leaderboard_window(conv)
    cap = profile_for(conv.model, conv.provider).context_window
    peak = max(r.context_tokens for r in REPLAYS.replay(conv, "full").records)
    line = window_reason(conv, window)
    assert window < cap and peak < 0.8 * cap
    assert f"window {window:,}, not {conv.model}'s {cap:,}: full peaks at {peak:,} tokens" in line
    assert "recorded" not in line and "recorded" in window_reason(conv, window, recorded=True)
    assert window_reason(conv, cap).startswith(f"window {cap:,}: {conv.model}'s own")
