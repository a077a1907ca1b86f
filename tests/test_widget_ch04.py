"""Chapter 04's measurements (``ctxlab.lab.ch04_ledger``, ``ch04_collapse``, ``ch04_replays``) and widget: the
texts' three calls, the coffee break, the pi bill, the collapse, and the ledger widget driven by setting its controls
(on the bundled sample)."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ctxlab.base.errors import CtxlabError
from ctxlab.lab.ch04_collapse import collapse
from ctxlab.lab.ch04_ledger import (
    bill_ledger,
    cache_saving,
    example_calls,
    miss_rows,
    read_fidelity_table,
    with_pause,
)
from ctxlab.lab.ch04_replays import call_rows, notable_calls
from ctxlab.lab.data import FIDELITY_TABLE
from ctxlab.lab.data import PI_BILL, SAMPLE_SESSION
from ctxlab.lab.workbook import load_workbook_conversation
from ctxlab.ledger import Ledger, make_row
from ctxlab.messages import parse_time
from ctxlab.replay import replay
from ctxlab.strategies import model_calls

pytest.importorskip("ipywidgets")
pytest.importorskip("plotly")

from ctxlab.widgets.ch04_ledger import LedgerWidget  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
needs_sample = pytest.mark.skipif(not SAMPLE_SESSION.exists(), reason="data/sample_session.jsonl not generated yet")


@pytest.fixture(scope="module")
def sample():
    if not SAMPLE_SESSION.exists():
        pytest.skip("data/sample_session.jsonl not generated yet")
    return load_workbook_conversation()


@pytest.fixture
def widget(sample):
    return LedgerWidget(sample)


# ---- the texts' three calls ----

def test_example_calls_under_anthropic_rules_give_the_texts_numbers():
    calls = example_calls("anthropic")
    assert [(c.total_input_tokens, c.cache_read_tokens, c.cache_write_tokens, c.uncached_input_tokens) for c in calls] \
        == [(4_480, 0, 4_480, 0), (4_860, 4_480, 380, 0), (4_990, 4_860, 130, 0)]
    raw = calls[1].provider_fields
    assert (raw["input_tokens"], raw["cache_creation_input_tokens"], raw["cache_read_input_tokens"]) == (0, 380, 4_480)


def test_example_calls_under_openai_rules_read_in_128_token_steps():
    calls = example_calls("openai")
    assert [c.cache_read_tokens for c in calls] == [0, 4_480, 4_736]
    assert calls[2].uncached_input_tokens == 254
    assert [c.provider_fields["prompt_tokens"] for c in calls] == [4_480, 4_860, 4_990]  # cached tokens inside


def test_a_read_never_exceeds_what_an_earlier_call_wrote():
    one, two, _ = example_calls("anthropic", sizes=(4_400, 460, 130))
    assert one.cache_write_tokens == 4_400 and two.cache_read_tokens == 4_400  # not the texts' 4,480


def test_the_three_calls_save_half_not_ninety_percent():
    rows = [make_row(thread="main", call=c.call, model=c.model, provider=c.provider, output_tokens=0,
                     uncached_input_tokens=c.uncached_input_tokens, cache_read_tokens=c.cache_read_tokens,
                     cache_write_tokens=c.cache_write_tokens) for c in example_calls("anthropic")]
    s = cache_saving(Ledger(rows))
    assert s.prompt_saving == pytest.approx(0.4995, abs=1e-4)  # 7,171.5 / 14,330 token-prices
    assert s.rule_of_thumb == pytest.approx(s.prompt_saving, abs=1e-9)  # one model, 0.1x reads, 1.25x writes


# ---- the coffee break ----

@needs_sample
def test_with_pause_is_pure_and_moves_only_what_comes_after(sample):
    before = [(id(i), i.timestamp) for i in sample.items]
    paused = with_pause(sample, 20, 10)
    assert [(id(i), i.timestamp) for i in sample.items] == before  # the input is untouched
    calls = model_calls(sample)
    at = calls[18][0]  # call 19's response: the last item before the pause
    assert len(paused.items) == len(sample.items) + 1
    note = paused.items[at + 1]
    assert note.kind == "note"
    assert parse_time(note.timestamp) == pytest.approx(parse_time(sample.items[at].timestamp) + 600)
    for old, new in zip(sample.items[: at + 1], paused.items[: at + 1]):
        assert new is old
    for old, new in zip(sample.items[at + 1:], paused.items[at + 2:]):
        assert new.id == old.id
        assert parse_time(new.timestamp) == pytest.approx(parse_time(old.timestamp) + 600)
        assert len(new.timestamp) == len(old.timestamp) and new.timestamp.endswith("Z")
    assert with_pause(sample, 20, 0) is sample


@needs_sample
def test_with_pause_rejects_what_it_cannot_do(sample):
    with pytest.raises(CtxlabError):
        with_pause(sample, 1, 10)  # nothing before call 1 could have been cached
    with pytest.raises(CtxlabError):
        with_pause(sample, len(model_calls(sample)) + 1, 10)
    bare = dataclasses.replace(sample, items=tuple(dataclasses.replace(i, timestamp=None) for i in sample.items))
    with pytest.raises(CtxlabError, match="no timestamp"):
        with_pause(bare, 20, 10)


# ---- the widget, driven by its controls ----

@needs_sample
def test_a_coffee_break_longer_than_the_ttl_turns_the_read_into_a_write(widget):
    widget.pause_call.value = 20
    hit = widget.state.rows[19]
    assert hit.cache_read_tokens > 0
    widget.pause_minutes.value = 4  # 4 min + the recorded 7 s: still inside the 5-minute TTL
    assert widget.state.rows[19].cache_read_tokens == hit.cache_read_tokens
    widget.pause_minutes.value = 10
    row = widget.state.rows[19]
    assert row.cache_read_tokens == 0 and row.cache_write_tokens == row.total_input_tokens == hit.total_input_tokens
    assert row.event == "expired" and widget.state.cost_usd > widget.compute("full", "anthropic", "as recorded",
                                                                            widget.window.value).cost_usd
    assert widget.state.rows[20].cache_read_tokens > 0  # the call after it reads what the break made it write
    widget.pause_call.value = 40
    assert widget.state.rows[19].cache_read_tokens == hit.cache_read_tokens
    assert widget.state.rows[39].cache_read_tokens == 0


@needs_sample
def test_openai_rules_read_in_multiples_of_128(widget):
    anthropic = widget.state
    assert any(r.cache_read_tokens % 128 for r in anthropic.rows)
    widget.provider.value = "openai"
    s = widget.state
    assert s.provider == "openai" and s.cache_read_tokens > 0
    assert all(r.cache_read_tokens % 128 == 0 for r in s.rows)
    assert all(r.cache_read_tokens == 0 or r.cache_read_tokens >= 1_024 for r in s.rows)
    assert s.cache_write_tokens == 0  # the recorded Claude model under OpenAI's rules: writes are not billed
    # a chat-completions body carries no thinking, so the current turn's thinking is not sent (issue 12)
    assert s.total_input_tokens < anthropic.total_input_tokens and s.cost_usd != anthropic.cost_usd


@needs_sample
def test_a_smaller_window_makes_full_overflow_and_budgeted_drop(widget):
    wide = widget.state
    assert wide.overflow_calls == 0 and wide.dropped_calls == 0
    widget.window.value = 30_000
    assert widget.state.overflow_calls > 0
    assert widget.state.total_input_tokens == wide.total_input_tokens  # full flags, never fixes
    widget.strategy.value = "budgeted"
    s = widget.state
    assert s.overflow_calls == 0 and s.dropped_calls > 0
    assert s.total_input_tokens < wide.total_input_tokens
    assert all(r.total_input_tokens <= 27_000 for r in s.rows)  # the budget: 90% of the window
    widget.window.value = 5_000  # below what the newest unit needs: reported, not raised
    assert widget.state.error and widget.state.calls == 0 and widget.diff is None


@needs_sample
def test_model_and_strategy_controls_change_the_numbers(widget):
    base = widget.state
    widget.model.value = "claude-opus-4-5"
    assert widget.state.cost_usd > base.cost_usd  # Opus costs more per token
    widget.model.value = "as recorded"
    widget.window.value = 30_000
    widget.strategy.value = "sliding"
    assert widget.state.strategy == "sliding" and widget.state.dropped_calls > 0


@needs_sample
@pytest.mark.parametrize("settings", [
    dict(strategy="full", provider="anthropic", model="as recorded", window=200_000),
    dict(strategy="sliding", provider="openai", model="gpt-4o", window=30_000),
    dict(strategy="budgeted", provider="anthropic", model="claude-sonnet-4-6", window=40_000, pause_minutes=12,
         pause_call=33),
    dict(strategy="recorded", provider="anthropic", model="as recorded", window=100_000),
])
def test_compute_equals_a_direct_replay(sample, widget, settings):
    s = widget.compute(**settings)
    conv = with_pause(sample, settings.get("pause_call", 2), settings.get("pause_minutes", 0))
    model = None if settings["model"] == "as recorded" else settings["model"]
    t = replay(conv, settings["strategy"], provider=settings["provider"], model=model,
               window=settings["window"]).ledger.totals()
    assert (s.calls, s.total_input_tokens, s.cache_read_tokens, s.cache_write_tokens, s.uncached_input_tokens,
            s.output_tokens, s.overflow_calls) == (t.calls, t.total_input_tokens, t.cache_read_tokens,
                                                   t.cache_write_tokens, t.uncached_input_tokens, t.output_tokens,
                                                   t.overflow_calls)
    assert s.hit_rate == pytest.approx(t.hit_rate) and s.cost_usd == pytest.approx(t.cost_usd)
    assert sum(r.cache_read_tokens for r in s.rows) == s.cache_read_tokens


@needs_sample
def test_prefix_diff_names_the_first_dropped_block(widget):
    widget.window.value = 30_000
    widget.strategy.value = "budgeted"
    first = next(r.call for r in widget.state.rows if r.dropped_messages)
    widget.diff_call.value = first
    d = widget.diff
    assert d.call == first and d.previous == first - 1 and d.index is not None
    assert "dropped or replaced" in d.reason and d.cache_read_tokens <= d.shared_tokens
    assert f"call {first} against call {first - 1}" in widget.diff_view.value
    widget.diff_call.value = first + 1  # the call after it only appends
    assert widget.diff.index is None and "appended" in widget.diff.reason
    widget.diff_call.value = 1
    assert widget.diff.previous is None


@needs_sample
def test_the_view_shows_the_figure_and_the_table(widget):
    assert "hit rate" in widget.label.value and "<pre" in widget.table.value
    data = widget.plot.outputs[0]["data"]["application/vnd.plotly.v1+json"]["data"]
    assert [t["name"] for t in data[:3]] == ["cache read", "cache write", "uncached input"]
    assert len(data[0]["y"]) == widget.state.calls
    assert "LedgerWidget(strategy='full'" in widget._repr_mimebundle_()["text/plain"]


@needs_sample
def test_contrast_window_on_the_sample(widget):
    assert widget.contrast_window() == 30_000


# ---- the measurements of the chapter ----

@needs_sample
def test_each_sliding_drop_reads_at_most_the_static_head(widget):
    cut = collapse(widget.result("sliding", "anthropic", "as recorded", 30_000))
    assert cut.first_drop is not None and cut.drops
    assert cut.drops_reading_at_most_head == cut.drops_reading_at_most_unchanged == len(cut.drops)
    assert cut.hit_rate_after < cut.hit_rate_before
    assert cut.rewritten_tokens == sum(c.cache_write_tokens for c in cut.drops) > 0
    full = collapse(widget.result("full", "anthropic", "as recorded", 200_000))
    assert full.first_drop is None and not full.drops


@pytest.mark.skipif(not PI_BILL.exists(), reason="data/pi_bill.csv not generated yet")
def test_the_pi_bill_ledger_equals_what_pi_recorded():
    ledger = bill_ledger(PI_BILL)
    priced = [r for r in ledger.rows if r.cost_usd is not None]
    assert len(ledger.rows) == 484 and priced
    assert all(abs(r.cost_usd - r.recorded_cost_usd["total"]) <= 1e-6 for r in priced)
    s = cache_saving(ledger)
    assert 0.8 < s.saving < 0.9  # a 97% hit rate, and still not 90%
    misses = miss_rows(ledger)
    assert misses and all(m[3] < m[2] / 2 for m in misses)
    assert misses[0][-1].startswith("first call")
    assert any("TTL" in m[-1] for m in misses) and any("minimum" in m[-1] for m in misses)


@needs_sample
def test_notable_calls_keep_the_misses_and_their_neighbours(widget):
    widget.window.value = 30_000
    widget.strategy.value = "sliding"
    calls = notable_calls(widget.state)
    assert calls[0] == 1 and calls[-1] == widget.state.calls and calls == sorted(set(calls))
    assert {r.call for r in widget.state.rows if r.event != "hit"} <= set(calls)
    assert len(call_rows(widget.state, calls)) == len(calls) < widget.state.calls


# ---- the committed fidelity table ----

def test_the_fidelity_table_is_committed_and_complete():
    rows = read_fidelity_table()
    assert [r["transcript"] for r in rows] == ["pi-mono", "claude-code-viewer"]
    for r in rows:
        assert r["source"] and r["licence"].startswith("MIT")
        assert int(r["structural_within"]) > int(r["naive_within"])  # the simulator beats the naive rule
        assert float(r["calibration"]) == pytest.approx(float(r["profile_calibration"]), abs=0.0005)
    assert FIDELITY_TABLE.name in (REPO / "data" / "README.md").read_text(encoding="utf-8")


@pytest.mark.shared
def test_the_fidelity_table_equals_a_fresh_regeneration(shared_transcripts, tmp_path):
    done = subprocess.run([sys.executable, str(REPO / "data" / "make_fidelity_table.py"), str(shared_transcripts),
                           str(tmp_path)], check=False, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    if not (tmp_path / "fidelity.csv").exists():
        pytest.skip(done.stdout.strip())
    assert (tmp_path / "fidelity.csv").read_bytes() == FIDELITY_TABLE.read_bytes(), \
        "data/fidelity.csv is stale: run `python data/make_fidelity_table.py`"


def test_no_absolute_path_or_timestamp_in_the_committed_chapter():
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(REPO / "notebooks" / "04_prefix_cache_ledger.ipynb", as_version=4)
    assert "widgets" not in nb.metadata
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            text = out.get("text", "") + str(out.get("data", {}).get("text/plain", ""))
            assert str(REPO) not in text and "/tmp/" not in text
            assert not re.search(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}", text), text  # no dates or times printed
