"""Chapters 04 and 05's measurements (``ctxlab/lab/ch04_ledger.py``, ``ch04_collapse.py``, ``ch04_replays.py``,
``ch05_pruning.py``, ``ch05_paging.py``, ``ch05_caps.py``): plain functions returning frozen rows, tested without
ipywidgets or plotly. The widgets over them are tested in ``test_widget_ch04.py`` and ``test_widget_ch05_06.py``."""

from __future__ import annotations

import dataclasses

import pytest

from ctxlab.io.page_store import PageStore
from ctxlab.lab import ch04_collapse, ch04_ledger, ch04_replays, ch05_caps, ch05_paging, ch05_pruning
from ctxlab.lab.ch04_collapse import call_pairs
from ctxlab.lab.ch04_ledger import SAVING_COLUMNS, cache_saving, example_calls, example_pieces, saving_row
from ctxlab.lab.ch04_replays import ROW_COLUMNS, STATE_COLUMNS, LedgerReplays, call_rows, diff_rows, state_row
from ctxlab.lab.ch05_caps import CAP_COLUMNS, CapRow, RecomputedCapStrategy
from ctxlab.lab.ch05_paging import MECHANISM_COLUMNS, mechanism_rows, paged_preview, prune_state
from ctxlab.lab.ch05_paging import STATE_COLUMNS as PRUNE_COLUMNS
from ctxlab.lab.ch05_paging import state_row as prune_row
from ctxlab.lab.ch05_pruning import line_kept, o200k_counter, pruned_view
from ctxlab.lab.data import SAMPLE_SESSION
from ctxlab.lab.workbook import load_workbook_conversation
from ctxlab.ledger import Ledger, make_row
from ctxlab.messages import Conversation, assistant, tool_result, user
from ctxlab.paging import page_lines
from ctxlab.pruning import prune_text
from ctxlab.replay import replay

MODULES = (ch04_ledger, ch04_collapse, ch04_replays, ch05_pruning, ch05_paging, ch05_caps)
needs_sample = pytest.mark.skipif(not SAMPLE_SESSION.exists(), reason="data/sample_session.jsonl not generated yet")


@pytest.fixture(scope="module")
def sample() -> Conversation:
    if not SAMPLE_SESSION.exists():
        pytest.skip("data/sample_session.jsonl not generated yet")
    return load_workbook_conversation()


def _log(lines: int = 300) -> str:
    out = [f"10:00:{i % 60:02d}.{i:03d} [ci] step {i}: test_case_{i} PASSED" for i in range(1, lines + 1)]
    out[lines // 2] = "10:00:30.500 [ci] test_tls FAILED: E1234 handshake failed"
    return "\n".join(out)


# ---- every module: no UI, every public name names its chapter, rows are frozen --------------------------

# (No UI library in lab/, and a chapter named by every public name: tests/test_layout.py, for every module.)


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_result_rows_are_frozen(module):
    classes = [getattr(module, n) for n in module.__all__ if dataclasses.is_dataclass(getattr(module, n))
               and getattr(module, n) is not RecomputedCapStrategy]  # a strategy holds state: not a result row
    assert classes and all(c.__dataclass_params__.frozen for c in classes)


# ---- chapter 04 -----------------------------------------------------------------------------------------

def test_example_pieces_and_the_rows_of_a_saving():
    pieces = example_pieces()
    assert [sum(n for _, n in p) for p in pieces] == [4_480, 4_860, 4_990]
    rows = [make_row(thread="main", call=c.call, model=c.model, provider=c.provider, output_tokens=0,
                     uncached_input_tokens=c.uncached_input_tokens, cache_read_tokens=c.cache_read_tokens,
                     cache_write_tokens=c.cache_write_tokens) for c in example_calls("anthropic")]
    line = saving_row(cache_saving(Ledger(rows), "three calls"))
    assert len(line) == len(SAVING_COLUMNS) and line[:3] == ("three calls", 3, 14_330)


@needs_sample
def test_ledger_replays_measure_without_a_widget(sample):
    replays = LedgerReplays(sample)
    s = replays.compute("full", "anthropic", "as recorded", 200_000)
    assert replays.compute("full", "anthropic", "as recorded", 200_000) is s  # computed once, then kept
    t = replay(sample, "full", provider="anthropic", window=200_000).ledger.totals()
    assert (s.calls, s.total_input_tokens, s.cache_read_tokens) == (t.calls, t.total_input_tokens, t.cache_read_tokens)
    assert len(call_rows(s)) == s.calls and len(call_rows(s)[0]) == len(ROW_COLUMNS)
    assert len(state_row(s)) == len(STATE_COLUMNS)
    paused = replays.compute("full", "anthropic", "as recorded", 200_000, 10, 20)
    assert paused.rows[19].cache_read_tokens == 0 and paused.rows[19].event == "expired"  # the docstring's example
    assert replays.paused(10, 20) is replays.paused(10, 20) and replays.paused(0, 20) is sample
    pairs = call_pairs(replays.result("full", "anthropic", "as recorded", 200_000))
    assert [row.call for _, row in pairs] == [r.call for r in s.rows]


@needs_sample
def test_ledger_replays_report_an_impossible_window_and_diff_a_drop(sample):
    replays = LedgerReplays(sample)
    broken = replays.compute("budgeted", "anthropic", "as recorded", 5_000)
    assert broken.error and broken.calls == 0 and broken.rows == ()
    assert replays.compute_diff(20, "budgeted", "anthropic", "as recorded", 5_000) is None
    assert replays.contrast_window("anthropic", "as recorded", 200_000) == 30_000
    states = replays.compare(30_000, "anthropic", "as recorded")
    assert [x.strategy for x in states] == list(ch04_replays.STRATEGIES)
    sliding = next(x for x in states if x.strategy == "sliding")
    first = next(r.call for r in sliding.rows if r.dropped_messages)
    d = replays.compute_diff(first, "sliding", "anthropic", "as recorded", 30_000)
    assert d.call == first and d.previous == first - 1 and d.index is not None
    lines = dict(diff_rows(d))
    assert lines["call"] == f"{first} against {first - 1}" and lines["first differing block"].startswith("#")
    assert replays.compute_diff(1, "sliding", "anthropic", "as recorded", 30_000).previous is None


# ---- chapter 05 -----------------------------------------------------------------------------------------

def test_prune_state_reads_back_a_line_pruning_lost():
    msg = tool_result("c1", _log(), "t1", name="bash")
    store, counter = PageStore.in_memory(), o200k_counter()
    middle = len(page_lines(msg.text)) // 2 + 1  # the failure line
    s = prune_state(msg, 200, 200, middle, store, counter=counter)
    assert not s.line_in_pruned and s.read_back == s.original_line and s.read_back_exact and "E1234" in s.read_back
    assert s.line_in_pruned == line_kept(msg.text, s.view, middle)
    first, last = (int(x) for x in s.hidden_lines.split("-"))
    assert first < middle < last
    again = prune_state(msg, 200, 200, 10_000, store, paged_preview(msg, store, 200, 200, counter), counter)
    assert again.line == len(page_lines(msg.text)) and again.handle == s.handle  # clamped; the content's handle
    row = prune_row(s)
    assert len(row) == len(PRUNE_COLUMNS) and row[:2] == (200, 200) and row[-1] == s.page_tokens


def test_prune_state_of_an_impossible_budget_keeps_the_page():
    msg = tool_result("c1", _log(), "t1", name="bash")
    s = prune_state(msg, 0, 0, 1, PageStore.in_memory())
    assert s.view.error and not s.line_in_pruned and s.read_back_exact
    assert prune_row(s)[3:8] == (0, 0, 0, 0, "—")


def test_pruned_view_accounts_for_what_prune_text_kept():
    """``pruned_view`` (shared by ``prune_view`` and ``mechanism_rows``): a pruned text's ends and whole lines,
    and a text under its budget coming back whole."""
    text, counter = _log(), o200k_counter()
    pruned = prune_text(text, 300, counter)
    v = pruned_view(text, pruned, 0, 0, 300, counter)
    assert pruned.pruned and text.startswith(v.head) and text.endswith(v.tail) and v.marker in v.text
    assert v.total_tokens == counter.count(pruned.text) and v.omitted_tokens == pruned.omitted_tokens
    assert v.lines_whole == sum(line_kept(text, v, k) for k in range(1, v.lines + 1)) < v.lines
    whole = pruned_view("short", prune_text("short", 300, counter), 0, 0, 300, counter)
    assert (whole.text, whole.head, whole.tail, whole.lines_whole) == ("short", "short", "", 1)


def test_the_rows_of_mechanisms_and_caps_fit_their_columns():
    msg = tool_result("c1", _log(), "t1", name="bash")
    rows = mechanism_rows(msg, counter=o200k_counter())
    assert [len(r.as_row()) for r in rows] == [len(MECHANISM_COLUMNS)] * 3
    assert CapRow("x", 1, 10, 5, 5, 0, 0.5, None, 2).as_row()[-2:] == ("—", 2)
    assert len(CapRow("x", 0, 0, 0, 0, 0, 0.0, None, 0, "too small").as_row()) == len(CAP_COLUMNS)


def test_the_recomputed_cap_is_a_strategy_replay_accepts():
    conv = Conversation("tiny", (user("Run the CI. " * 50, "u1"),
                                 assistant("", "a1", calls=(("c1", "bash", {"command": "make ci"}),)),
                                 tool_result("c1", _log(), "t1", name="bash"),
                                 assistant("It failed: E1234. " * 20, "a2"), user("Why? " * 30, "u2"),
                                 assistant("The handshake. " * 20, "a3")),
                        system=("You are careful. " * 30,), model="claude-sonnet-4-5", provider="anthropic")
    s = RecomputedCapStrategy(floor_tokens=100)
    result = replay(conv, s, window=8_000)
    assert len(s.caps) == len(result.records) and all(c >= 100 for c in s.caps)
    assert ch05_caps.cap_notes(result) == dict(zip(range(1, len(s.caps) + 1), s.caps))
