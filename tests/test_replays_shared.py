"""The replay cache the chapters share (``ctxlab.lab.replays``), the widgets' progress bar and their background
thread (``ctxlab.widgets._progress``): one replay per setting, bounded, shared by a widget and the chapter's lab
functions; a bar that moves one step per replay a first visit runs; a background that computes the same numbers
the foreground would. Counted and compared, never timed (``bench/widget_latency.py`` times them)."""

from __future__ import annotations

import dataclasses
import gc
import threading
import weakref

import pytest

from ctxlab.base.errors import CtxlabError
from ctxlab.compaction import CompactionPolicy
from ctxlab.lab.ch05_pruning import checklist_for
from ctxlab.lab.ch06_summaries import PromptRecorder, retention
from ctxlab.lab.ch07_compaction import compaction_window
from ctxlab.lab.compare import leaderboard
from ctxlab.lab.replays import REPLAYS, ReplayCache, options_key
from ctxlab.replay import replay
from ctxlab.summary_strategy import LLMSummarizer

pytest.importorskip("ipywidgets")
pytest.importorskip("plotly")

from ctxlab.widgets._progress import Progress, Worker, background_wanted, run_steps
from ctxlab.widgets.ch04_ledger import LedgerWidget
from ctxlab.widgets.ch06_summaries import SummaryWidget
from ctxlab.widgets.ch07_compaction import SawtoothWidget
from ctxlab.widgets.ch08_leaderboard import LeaderboardWidget

WINDOW = 30_000


def copy(conv):
    """The same conversation under a new identity: nothing the shared cache holds answers for it."""
    return dataclasses.replace(conv)


# ---- the cache ----

def test_the_same_setting_gives_the_same_replay_object(sample):
    cache = ReplayCache()
    first = cache.replay(sample, "budgeted", window=WINDOW)
    assert cache.replay(sample, "budgeted", window=WINDOW) is first
    assert (cache.computed, cache.hits, len(cache)) == (1, 1, 1)
    assert first.ledger.totals() == replay(sample, "budgeted", window=WINDOW).ledger.totals()  # FAST = the book


def test_another_setting_gives_another_replay(sample):
    cache = ReplayCache()
    base = cache.replay(sample, "budgeted", window=WINDOW)
    others = [cache.replay(sample, "budgeted", window=40_000), cache.replay(sample, "budgeted", window=WINDOW,
                                                                            provider="openai"),
              cache.replay(sample, "sliding", window=WINDOW), cache.replay(copy(sample), "budgeted", window=WINDOW)]
    assert all(o is not base for o in others) and len({id(o) for o in others}) == 4 and cache.computed == 5
    placed = cache.replay(sample, "budgeted+summary", window=WINDOW, placement="system_block")
    assert placed is not cache.replay(sample, "budgeted+summary", window=WINDOW)


def test_options_equal_to_the_defaults_are_the_same_key(sample):
    cache = ReplayCache()
    assert options_key("compaction", {"policy": CompactionPolicy(0.8, 0.5)}) == ()
    assert options_key("budgeted+summary", {"placement": "system_end"}) == ()
    low = CompactionPolicy(0.6, 0.3)
    assert options_key("compaction", {"policy": low}) == (("policy", low),)
    assert cache.replay(sample, "compaction", window=WINDOW, policy=CompactionPolicy(0.8, 0.5)) \
        is cache.replay(sample, "compaction", window=WINDOW)


def test_a_strategy_with_an_object_for_an_option_is_never_shared(sample):
    cache = ReplayCache()
    fake = PromptRecorder()
    assert cache.key(sample, "budgeted+summary", window=WINDOW, summarizer=LLMSummarizer(fake)) is None
    one = cache.replay(sample, "budgeted+summary", window=WINDOW, summarizer=LLMSummarizer(fake))
    asked = len(fake.prompts)
    two = cache.replay(sample, "budgeted+summary", window=WINDOW, summarizer=LLMSummarizer(fake))
    assert one is not two and len(fake.prompts) == 2 * asked > 0 and cache.computed == 0 and len(cache) == 0


def test_the_cache_is_bounded_by_replays_and_by_calls(sample):
    cache = ReplayCache(max_replays=2)
    for window in (30_000, 40_000, 50_000):
        cache.replay(sample, "budgeted", window=window)
    assert len(cache) == 2 and not cache.held(sample, "budgeted", window=30_000)  # the least recently used went
    assert cache.held(sample, "budgeted", window=50_000)
    small = ReplayCache(max_calls=100)  # a sample replay holds 77 calls: one at a time
    small.replay(sample, "budgeted", window=30_000)
    small.replay(sample, "budgeted", window=40_000)
    assert len(small) == 1 and small.calls == 77 and small.held(sample, "budgeted", window=40_000)


def test_the_cache_keeps_the_conversation_alive_until_it_forgets_it(sample):
    cache = ReplayCache()
    conv = copy(sample)
    ref = weakref.ref(conv)
    cache.replay(conv, "budgeted", window=WINDOW)
    del conv
    gc.collect()
    assert ref() is not None  # held: its id cannot be given to another conversation meanwhile
    cache.forget(ref())
    gc.collect()
    assert ref() is None and len(cache) == 0


def test_an_error_is_kept_and_raised_again(sample):
    cache = ReplayCache()
    for _ in range(2):
        with pytest.raises(CtxlabError):
            cache.replay(sample, "budgeted", window=5_000)  # the newest unit alone needs more
    assert cache.computed == 1 and cache.held(sample, "budgeted", window=5_000)


def test_a_checked_replay_answers_an_unchecked_request_not_the_reverse(sample):
    cache = ReplayCache()
    checked = cache.replay(sample, "full", window=WINDOW, check=True)
    assert cache.replay(sample, "full", window=WINDOW) is checked and cache.computed == 1
    plain = cache.replay(sample, "sliding", window=WINDOW)
    assert cache.replay(sample, "sliding", window=WINDOW, check=True) is not plain and cache.computed == 3


def test_two_threads_asking_at_once_run_one_replay(sample):
    cache, got = ReplayCache(), []
    conv = copy(sample)
    start = threading.Barrier(3)

    def ask():
        start.wait()
        got.append(cache.replay(conv, "sliding", window=WINDOW))

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 3 and got[0] is got[1] is got[2] and cache.computed == 1 and cache.hits == 2


def test_retention_is_scored_once_per_replay(sample):
    facts, _ = checklist_for(sample)
    result = REPLAYS.replay(sample, "budgeted", window=WINDOW)
    assert REPLAYS.retention(result, facts, sample) is REPLAYS.retention(result, facts, sample)


# ---- a widget and the chapter's lab functions share it ----

def test_the_sawtooth_opens_on_the_window_search_replays(sample):
    assert compaction_window(sample) == WINDOW  # replays budgeted and compaction 80% → 50% at 30,000
    before = REPLAYS.computed
    w = SawtoothWidget(sample, WINDOW)
    assert REPLAYS.computed == before  # nothing replayed to open
    assert w.result(0.8, 0.5) is REPLAYS.replay(sample, "compaction", window=WINDOW)


def test_the_leaderboard_widget_opens_on_the_cells_board(sample):
    facts, _ = checklist_for(sample)
    board = leaderboard(sample, ["budgeted", "compaction"], window=WINDOW, facts=facts)
    before = REPLAYS.computed
    w = LeaderboardWidget(sample, (WINDOW,), facts=facts, strategies=("budgeted", "compaction"))  # no boards=
    assert REPLAYS.computed == before and w.progress.steps == 0
    assert w.board(WINDOW).results["compaction"] is board.results["compaction"]
    assert w.state.rows == board.rows


def test_the_summary_widget_and_the_retention_table_share_one_replay(sample):
    facts, _ = checklist_for(sample)
    w = SummaryWidget(sample, facts, windows=[WINDOW])
    mine = w.run(WINDOW)[1]
    assert mine is REPLAYS.replay(sample, "budgeted+summary", window=WINDOW)
    before = REPLAYS.computed
    rows = {r.strategy: r for r in retention(sample, facts, WINDOW, strategies=("budgeted+summary",))}
    assert REPLAYS.computed == before and rows["budgeted+summary"].cost_usd == mine.ledger.totals().cost_usd


def test_two_ledger_widgets_share_their_replays(sample):
    conv = copy(sample)
    one = LedgerWidget(conv)
    before = REPLAYS.computed
    two = LedgerWidget(conv)
    assert REPLAYS.computed == before and two.progress.steps == 0
    assert two.result(**two.settings()) is one.result(**one.settings())


# ---- the progress bar ----

def test_progress_and_run_steps():
    p = Progress()
    assert p.bar.value == p.bar.max  # nothing to do: full
    assert run_steps(p, [("a", lambda: 1), ("b", lambda: 2)], "two things", "done") == [1, 2]
    assert (p.bar.value, p.bar.max, p.steps, p.text.value) == (2, 2, 2, "done")
    p.start(3, "x <b>")
    assert p.bar.value == 0 and "&lt;b&gt;" in p.text.value
    p.background(1, 4, "budgeted")
    assert "1 of 4" in p.later.value
    p.background(4, 4, "budgeted")
    assert p.later.value == ""


def test_the_ledger_widget_shows_its_progress_and_reaches_the_end(sample):
    conv = copy(sample)
    w = LedgerWidget(conv)
    assert w.progress.widget in w.widget.children
    assert (w.progress.steps, w.progress.bar.value) == (1, w.progress.bar.max)  # opening replayed one setting
    w.strategy.value = "budgeted"  # a first visit
    assert w.progress.steps == 2 and w.progress.bar.value == w.progress.bar.max
    w.strategy.value = "full"  # seen before: the bar does not move
    assert w.progress.steps == 2
    w.precompute()  # the six settings not seen yet, one step each
    assert w.progress.steps == 8 and w.progress.bar.value == w.progress.bar.max == 6


def test_the_leaderboard_widget_moves_one_step_per_strategy_replayed(sample):
    conv = copy(sample)
    w = LeaderboardWidget(conv, (WINDOW, 50_000), strategies=("full", "budgeted", "compaction"))
    assert w.progress.widget in w.widget.children and w.progress.steps == 3
    w.window.value = 50_000
    assert w.progress.steps == 6 and w.progress.bar.value == w.progress.bar.max == 3
    w.window.value = WINDOW
    assert w.progress.steps == 6


def test_the_summary_and_sawtooth_widgets_show_their_progress(sample):
    conv = copy(sample)
    s = SummaryWidget(conv, windows=[WINDOW, 40_000])
    assert s.progress.widget in s.widget.children and s.progress.steps == 1
    s.window.value = 40_000
    assert s.progress.steps == 2 and s.progress.bar.value == s.progress.bar.max
    t = SawtoothWidget(conv, WINDOW)
    assert t.progress.widget in t.widget.children and t.progress.steps == 1
    t.trigger.value = 0.6
    assert t.progress.steps == 2 and t.progress.bar.value == t.progress.bar.max
    t.target.value = 0.7  # above the trigger: reported, not replayed
    assert t.progress.steps == 2 and t.state.error


# ---- the background ----

def test_the_background_is_off_on_the_sample_unless_asked(sample):
    assert not background_wanted(sample, None) and background_wanted(sample, True)
    assert not background_wanted(sample, False)


def test_the_leaderboard_background_computes_what_the_foreground_would(sample):
    conv, names = copy(sample), ("budgeted", "compaction")
    w = LeaderboardWidget(conv, (WINDOW, 50_000, 60_000), strategies=names, background=True)
    assert w.wait(timeout=600)
    assert all(REPLAYS.held(conv, n, window=v, check=True) for n in names for v in (50_000, 60_000))
    steps = w.progress.steps
    w.window.value = 60_000  # computed in the background: the bar does not move
    assert w.progress.steps == steps and w.progress.later.value == ""
    assert w.state.rows == tuple(leaderboard(copy(sample), names, window=60_000).rows)


def test_the_ledger_background_replays_the_next_settings(sample):
    conv = copy(sample)
    w = LedgerWidget(conv, background=True)
    planned = w.next_settings()
    assert {n["strategy"] for n in planned} == {"full", "sliding", "budgeted", "recorded"}
    assert w.wait(timeout=600) and all(w.replays.held(**n) for n in planned)
    w.provider.value = "openai"  # one click away: computed before the click
    assert w.progress.steps == 1 and w.state == LedgerWidget(copy(sample), provider="openai").state


def test_the_worker_runs_jobs_in_order_and_a_new_plan_drops_the_old():
    worker, ran, gate = Worker(), [], threading.Event()
    owner = object()
    first = worker.submit(owner, [("wait", gate.wait), ("a", lambda: ran.append("a")), ("b", lambda: ran.append("b"))])
    second = worker.submit(owner, [("c", lambda: ran.append("c"))])  # re-planned: a and b are dropped
    gate.set()
    assert worker.wait(owner, timeout=60) and worker.wait(timeout=60)
    assert ran == ["c"] and first.cancelled and second.done == 1 and worker.idle()


def test_the_worker_starts_nothing_while_another_thread_replays_and_keeps_errors():
    worker, ran = Worker(), []
    owner = object()
    with worker.foreground():
        batch = worker.submit(owner, [("a", lambda: ran.append("a"))])
        assert not worker.wait(owner, timeout=0.2) and ran == []  # held back
    assert worker.wait(owner, timeout=60) and ran == ["a"] and batch.done == 1
    bad = worker.submit(owner, [("boom", lambda: 1 / 0)])
    assert worker.wait(owner, timeout=60) and isinstance(bad.errors[0], ZeroDivisionError)
