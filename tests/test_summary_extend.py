"""``budgeted+summary`` with ``regenerate="extend"`` (its default since issue 18): the summary so far, extended.

The rule (ctxlab/summary_strategy.py): at a call that truncates, only the dropped messages the summary so far does not
cover are summarised, into that summary (the summarizer's ``previous``; pi's ``UPDATE_SUMMARIZATION_PROMPT`` does the
same: the previous summary and only the new messages). What these tests hold it to:

* every dropped message is given to the summarizer once in the whole replay (the texts' ``every_call`` gives the same
  messages again at every call: the contrast shows the test can fail);
* after every call the summary covers every message the context dropped;
* the incremental look-up (only what dropped since the last call is looked at) finds exactly what the plain set
  difference over all dropped messages finds: the same ledger and decisions;
* the summary calls grow with the session, not with its square: on the sample tiled 2x and 4x;
* a bad ``regenerate`` is one clear error.
Chapter 06.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from ctxlab import load
from ctxlab.fast import FAST
from ctxlab.replay import replay
from ctxlab.strategies import model_calls
from ctxlab.summary import RuleBasedSummarizer, Summary
from ctxlab.summary_strategy import BudgetedSummaryStrategy
from ctxlab.tokens import TiktokenCounter
from helpers import Recording

WINDOW = 30_000  # the sample truncates from about call 30 under it (chapter 06's window)
PI = "pi-mono/before-compaction.jsonl"


@dataclass(frozen=True)
class Logged:
    """The rule-based summarizer, logging the ids of the messages it is asked to summarise (``held_to`` copies it with
    another cap and counter: the copies share the log)."""

    max_tokens: int = 1_000
    counter: object = field(default_factory=TiktokenCounter)
    log: list = field(default_factory=list, compare=False)

    def summarize(self, dropped, previous=None) -> Summary:
        self.log.append(tuple(m.id for m in dropped))
        return RuleBasedSummarizer(self.max_tokens, self.counter).summarize(dropped, previous)


class Covering(BudgetedSummaryStrategy):
    """The strategy, checking after every call that its summary covers every dropped message."""

    def decide(self, history, call, profile, meter):
        decision = super().decide(history, call, profile, meter)
        summary = self.last[call.thread][1]
        if summary is not None:
            dropped = set(self.memo["dropped"][call.thread].ids)
            assert dropped <= set(summary.sources), f"call {call.index}: dropped messages the summary does not cover"
        return decision


def pi_session(shared_transcripts, calls: int):
    path = shared_transcripts / PI
    if not path.exists():
        pytest.skip(f"{PI} not found under {shared_transcripts} (the shared folder sits beside the repository)")
    from dataclasses import replace

    conv = load(path).conversations[0]
    positions = [k for k, _ in model_calls(conv)]
    return replace(conv, items=conv.items[:positions[calls]])


def asked(conv, regenerate: str, window: int) -> list[tuple[str, ...]]:
    summarizer = Logged()
    replay(conv, Covering(summarizer=summarizer, regenerate=regenerate), window=window, speedup=FAST)
    return summarizer.log


@pytest.mark.parametrize("window", [WINDOW, 45_000], ids=["30000", "45000"])
def test_every_dropped_message_is_summarised_once(sample, window: int) -> None:
    log = asked(sample, "extend", window)
    ids = [i for chunk in log for i in chunk]
    assert ids and len(ids) == len(set(ids))  # each message given to the summarizer once
    texts = [i for chunk in asked(sample, "every_call", window) for i in chunk]
    assert set(texts) == set(ids) and len(texts) > 3 * len(ids)  # the texts' rule: the same messages again and again


@pytest.mark.shared
def test_on_pi_too(shared_transcripts) -> None:
    """pi's first 250 calls at a tenth of its session's size (bench/growth.py's full window): a pinned user message
    dropped later, after newer ones (the case a prefix comparison alone misses)."""
    log = asked(pi_session(shared_transcripts, 250), "extend", 46_592)
    ids = [i for chunk in log for i in chunk]
    assert len(ids) == len(set(ids)) > 100


def plain_uncovered(self, thread, before, gone, dropped):
    """The definition: the dropped messages whose ids the summary so far does not hold, every one looked at."""
    return dropped if before is None else [m for m in dropped if m.id not in set(before.sources)]


@pytest.mark.parametrize("speedup", [None, FAST], ids=["plain", "fast"])
@pytest.mark.parametrize("options", [{}, {"placement": "first_user"}, {"on_cached_prefix": True}],
                         ids=["default", "first_user", "cached-prefix"])
def test_the_incremental_look_up_finds_what_the_set_difference_finds(sample, monkeypatch, options, speedup) -> None:
    a = Recording(BudgetedSummaryStrategy(**options))
    fast = replay(sample, a, window=WINDOW, speedup=speedup)
    with monkeypatch.context() as patch:
        patch.setattr(BudgetedSummaryStrategy, "_uncovered", plain_uncovered)
        b = Recording(BudgetedSummaryStrategy(**options))
        plain = replay(sample, b, window=WINDOW, speedup=speedup)
    assert fast.ledger.rows == plain.ledger.rows and a.decisions == b.decisions
    assert any(r.kind == "summary" for r in fast.ledger.rows)


def test_the_summary_calls_grow_with_the_session_not_its_square(sample) -> None:
    """The sample tiled 1x, 2x and 4x (each copy with its own ids): the texts' rule makes ~4x the summary calls when
    the session doubles; extended, about 2x."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from sessions import tiled_calls

    calls = len(model_calls(sample))
    rows = {}
    for rule in ("extend", "every_call"):
        for k in (1, 2, 4):
            result = replay(tiled_calls(sample, k * calls), BudgetedSummaryStrategy(regenerate=rule), window=WINDOW,
                            speedup=FAST)
            rows[rule, k] = sum(r.kind == "summary" for r in result.ledger.rows)
    assert rows["extend", 4] <= 2.5 * rows["extend", 2] <= 6.25 * rows["extend", 1]
    assert rows["every_call", 4] > 3 * rows["every_call", 2]  # the square: the test can tell the two apart


def test_the_notes_say_what_was_extended(sample) -> None:
    spy = Recording(BudgetedSummaryStrategy())
    replay(sample, spy, window=WINDOW)
    notes = [n for d in spy.decisions for n in d.notes]
    assert any(n.startswith("extended: ") and "newly dropped messages into the summary of" in n for n in notes)


def test_a_bad_rule_is_one_clear_error(sample) -> None:
    with pytest.raises(ValueError, match="regenerate 'sometimes': choose one of every_call, on_change, extend"):
        replay(sample, BudgetedSummaryStrategy(regenerate="sometimes"), window=WINDOW)
