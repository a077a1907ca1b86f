"""The chapter widgets' arguments (chapters 03–07), the shared replays' counter, and the background's priority: counted and compared, never timed (``bench/widget_latency.py`` times them).

* a widget given what ``ctxlab.load`` returns (a Transcript) opens on its conversation; given anything else it says
  in one line what to pass; a starting value off a slider's range is honoured (the range widened), never clamped;
* :class:`~ctxlab.lab.replays.CountedOnce` counts as its counter does, and the cache's replays (counting through it)
  give the ledgers of a plain fast replay;
* the worker's replay pauses between two model calls while another thread replays; chapter 06's widget opens
  before its first replay on a long transcript and shows the numbers the foreground would.
"""

from __future__ import annotations

import dataclasses
import threading

import pytest

from ctxlab.base.errors import CtxlabError
from ctxlab.facts import fact_retention
from ctxlab.fast import FAST
from ctxlab.lab.ch05_pruning import checklist_for, largest_tool_result
from ctxlab.lab.replays import REPLAYS, CountedOnce, ReplayCache
from ctxlab.messages import Transcript
from ctxlab.replay import replay
from ctxlab.tokens import TiktokenCounter

pytest.importorskip("ipywidgets")
pytest.importorskip("plotly")

from ctxlab.widgets._progress import WORKER, Worker
from ctxlab.widgets.ch03_budget import BudgetWidget
from ctxlab.widgets.ch04_ledger import LedgerWidget
from ctxlab.widgets.ch05_pruning import PruneWidget
from ctxlab.widgets.ch06_summaries import SummaryWidget
from ctxlab.widgets.ch07_compaction import SawtoothWidget

WINDOW = 30_000


def copy(conv):
    """The same conversation under a new identity: nothing the shared cache holds answers for it."""
    return dataclasses.replace(conv)


def transcript(*conversations) -> Transcript:
    return Transcript("pi", "session.jsonl", tuple(conversations))


# ---- a Transcript, or something else ----

def test_every_widget_opens_on_a_transcripts_conversation(sample):
    t = transcript(sample)
    assert LedgerWidget(t).conversation is sample
    assert BudgetWidget(t).conversation is sample
    assert SummaryWidget(t, windows=[WINDOW]).conversation is sample
    assert SawtoothWidget(t, WINDOW).conversation is sample


@pytest.mark.parametrize("make", [lambda x: LedgerWidget(x), lambda x: BudgetWidget(x),
                                  lambda x: SummaryWidget(x, windows=[WINDOW]), lambda x: SawtoothWidget(x, WINDOW)])
def test_a_widget_given_no_conversation_says_what_to_pass(sample, make):
    with pytest.raises(CtxlabError, match=r"takes a Conversation .*got str.*ctxlab\.load"):
        make("pi.jsonl")
    with pytest.raises(CtxlabError, match=r"holds 2 conversations; pass one of them.*conversations\[0\]"):
        make(transcript(sample, copy(sample)))


def test_the_prune_widget_wants_one_message(sample):
    with pytest.raises(CtxlabError, match="PruneWidget takes one message .*got Conversation"):
        PruneWidget(sample)


# ---- a starting value off the slider's range: honoured ----

def test_the_ledger_widget_honours_a_small_window(sample):
    w = LedgerWidget(sample, window=1_000)
    assert w.window.value == 1_000 == w.window.min and w.state.window == 1_000
    assert w.state.overflow_calls == w.state.calls  # full sends everything: every call over 1,000, not 5,000
    assert w.state == w.replays.compute(**{**w.settings(), "window": 1_000})
    wide = LedgerWidget(sample, window=1_500_000)  # over the sample model's own 1,000,000 (Sonnet 4.6): widens the slider
    assert wide.window.value == wide.window.max == 1_500_000 and wide.state.window == 1_500_000
    with pytest.raises(CtxlabError, match=r"LedgerWidget: window must be a positive whole number of tokens"):
        LedgerWidget(sample, window=0)


def test_the_budget_widget_honours_a_budget_below_its_range(sample):
    w = BudgetWidget(sample, budget=500)
    assert w.budget.value == 500 == w.budget.min and w.state.budget == 500
    with pytest.raises(CtxlabError, match="BudgetWidget: budget must be"):
        BudgetWidget(sample, budget=-5)


def test_the_prune_widget_honours_head_and_tail_and_refuses_a_line_it_does_not_have(sample):
    from ctxlab.tokens import TiktokenCounter

    counter = TiktokenCounter("o200k_base")
    msg = largest_tool_result(sample, counter)
    w = PruneWidget(msg, head=20_000, tail=0, counter=counter)
    assert w.head.value == 20_000 == w.head.max and w.tail.value == 0
    default = PruneWidget(msg, counter=counter)
    assert (default.head.value, default.tail.value) == (1_000, 500)
    with pytest.raises(CtxlabError, match=r"PruneWidget: line must be from 1 to [\d,]+, the message's lines"):
        PruneWidget(msg, line=10**6, counter=counter)


def test_the_sawtooth_widget_honours_its_ratios_and_checks_its_window(sample):
    w = SawtoothWidget(sample, WINDOW, trigger=0.4, target=0.05)
    assert (w.trigger.value, w.target.value) == (0.4, 0.05) and (w.trigger.min, w.target.min) == (0.4, 0.05)
    with pytest.raises(CtxlabError, match=r"SawtoothWidget: trigger must be a ratio in \(0, 1\)"):
        SawtoothWidget(sample, WINDOW, trigger=1.5)
    with pytest.raises(CtxlabError, match="SawtoothWidget: window must be a positive whole number of tokens"):
        SawtoothWidget(sample, "30000")


def test_the_summary_widget_takes_each_window_as_given(sample):
    w = SummaryWidget(sample, windows=[WINDOW, 1_000])
    assert [v for _, v in w.window.options] == [WINDOW, 1_000]
    w.window.value = 1_000
    assert w.state.window == 1_000 and w.state.error  # too small: said, not clamped
    with pytest.raises(CtxlabError, match="SummaryWidget: windows must be a positive whole number of tokens"):
        SummaryWidget(sample, windows=[WINDOW, 0])


# ---- the shared counter and the checklist score ----

def test_counted_once_counts_as_its_counter_and_remembers():
    base = TiktokenCounter("o200k_base")
    once = CountedOnce(base, max_chars=20)
    assert (once.name, once.exact, once.encoding_name) == (base.name, base.exact, "o200k_base")
    for text in ("hello world", "hello world", "", "a longer text than twenty characters", "你好"):
        assert once.count(text) == base.count(text)
    assert once.encode("hello") == base.encode("hello")


def test_the_caches_replays_give_the_ledgers_of_a_plain_fast_replay(sample):
    cache = ReplayCache()
    for strategy in ("full", "budgeted", "budgeted+summary", "compaction"):
        mine = cache.replay(sample, strategy, window=WINDOW)
        assert mine.ledger.rows == replay(sample, strategy, window=WINDOW, speedup=FAST).ledger.rows, strategy
    assert cache._counters  # one per counter the profiles use (o200k, calibrated per model family)


def test_the_caches_score_is_fact_retentions_and_is_kept(sample):
    facts, _ = checklist_for(sample)
    result = REPLAYS.replay(sample, "budgeted+summary", window=WINDOW)
    got = REPLAYS.retention(result, facts, sample)
    assert got == fact_retention(result, facts, sample) and REPLAYS.retention(result, facts, sample) is got


# ---- priority: the background waits for the click ----

def test_a_background_job_pauses_at_its_checkpoints_while_another_thread_replays():
    worker, steps, started, go = Worker(), [], threading.Event(), threading.Event()
    owner = object()

    def job():
        started.set()
        go.wait(60)
        for k in range(3):
            worker.checkpoint()  # between two model calls of a replay
            steps.append(k)

    worker.submit(owner, [("replay", job)])
    assert started.wait(60)
    with worker.foreground():  # a click's own replay
        go.set()
        assert not worker.wait(owner, timeout=0.3) and steps == []  # paused at its first checkpoint
    assert worker.wait(owner, timeout=60) and steps == [0, 1, 2] and worker.paused == 1
    worker.checkpoint()  # on another thread: returns at once


def test_the_shared_replays_pass_through_the_pause_and_agree(sample):
    conv, calls = copy(sample), []
    cache = ReplayCache()
    cache.pause = lambda: calls.append(1)
    result = cache.replay(conv, "budgeted", window=WINDOW)
    assert len(calls) == len(result.records)  # once before each request rendered (no side calls under budgeted)
    assert result.ledger.rows == replay(conv, "budgeted", window=WINDOW, speedup=FAST).ledger.rows


# ---- chapter 06 on a long transcript: on screen first, numbers when the background has them ----

def test_the_summary_widget_opens_before_its_first_replay_and_shows_what_the_foreground_would(sample):
    facts, _ = checklist_for(sample)
    conv = copy(sample)
    with WORKER.foreground():  # the background cannot start yet: the widget must open without the replay
        w = SummaryWidget(conv, facts, windows=[WINDOW, 40_000], background=True)
        assert w.replays == 0 and "replaying" in w.label.value and w.progress.bar.value == 0
    assert w.wait(timeout=600)
    state = w.state  # waits for the background's replay if it still runs
    assert w.replays == 1 and w.progress.bar.value == w.progress.bar.max
    plain = SummaryWidget(copy(sample), facts, windows=[WINDOW, 40_000], background=False)
    assert state == plain.state and w.label.value == plain.label.value
    w.window.value = 40_000  # precomputed in the background: one more first visit, no foreground replay
    assert w.replays == 2 and w.state == SummaryWidget(copy(sample), facts, windows=[40_000]).state


def test_the_chapters_replays_pause_for_the_widgets_worker():
    assert REPLAYS.pause == WORKER.checkpoint and REPLAYS.guard == WORKER.foreground


def test_a_window_changed_before_the_first_replay_is_drawn_is_the_one_shown(sample):
    facts, _ = checklist_for(sample)
    conv = copy(sample)
    with WORKER.foreground():
        w = SummaryWidget(conv, facts, windows=[WINDOW, 40_000], background=True)
        w.window.value = 40_000  # before the background could start: this visit runs in the foreground
        assert w.replays == 1 and "40,000" in w.label.value
    assert w.wait(timeout=600)
    assert w.window.value == 40_000 and "40,000" in w.label.value  # the background's first replay did not redraw
    w.window.value = WINDOW  # replayed by the background meanwhile
    assert w.replays == 2 and w.state == SummaryWidget(copy(sample), facts, windows=[WINDOW]).state
