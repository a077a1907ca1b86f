"""The sliding window read off units grouped once (``ctxlab/fast/window.py``) gives the book's Contexts (issue 18).

``SlidingStrategy`` asks ``strategies.window_context`` for the whole context of a window of the history's units at
every call, several times a call when the window slides. The fast meter answers from the pieces it made once per unit;
the book builds the window's messages from scratch. :class:`CheckedMeter` answers like the fast meter and, at every
one of those requests, also builds the book's answer with a plain meter and requires equality (messages, report,
notes, every token field). It runs over generated sessions (orphans, stubs, system reminders, interrupted calls) at
small windows under three profiles, the bundled sample and pi's session tiled to 1,000 calls (``bench/sessions``);
and the replays' ledgers are compared plain and fast. The paged strategy's incremental ``entry_ids`` is checked at
every call against the entries read from scratch.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from session_gen import sessions

from ctxlab.base.errors import CtxlabError
from ctxlab.fast import FAST, IncrementalMeter
from ctxlab.fast.render_cache import RenderCache
from ctxlab.fast.wire_cache import BodyCache
from ctxlab.messages import Entry
from ctxlab.paging import PagedStrategy
from ctxlab.replay import Speedup, replay
from ctxlab.strategies import SlidingStrategy, whole_context
from ctxlab.tokens import MessageMeter

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from sessions import tiled_calls  # noqa: E402 (bench/ is not a package)

PI = Path(__file__).resolve().parents[2] / "shared" / "data" / "transcripts" / "pi-mono" / "before-compaction.jsonl"
ANSWERED: dict[str, int] = {"fast": 0, "book": 0}  # window requests the fast path answered, and left to the book


class CheckedMeter(IncrementalMeter):
    """The fast meter, whose every window is also built by the book (a plain meter) and compared."""

    def __init__(self, profile, counter=None) -> None:
        super().__init__(profile, counter)
        self.plain = MessageMeter(profile, counter)

    def window_context(self, history, window, profile):
        fast = super().window_context(history, window, profile)
        ANSWERED["fast" if fast is not None else "book"] += 1
        if fast is not None:
            book = whole_context(replace(history, items=tuple(m for u in window for m in u.messages)), profile,
                                 self.plain)
            assert fast.report == book.report, "report lines differ"
            assert fast == book
        return fast


CHECKED = Speedup(meter=CheckedMeter, renderer=RenderCache, bodies=BodyCache)


def outcome(conv, strategy, speedup, **options):
    """The ledger rows and each call's context, or the error (type, message): both paths must agree on either."""
    try:
        result = replay(conv, strategy, speedup=speedup, **options)
    except CtxlabError as err:
        return type(err).__name__, str(err)
    return result.ledger.rows, [(r.context_tokens, r.messages, r.notes) for r in result.records]


def checked(conv, **options) -> tuple[int, int]:
    """Replay ``sliding`` with the checked meter and plain; both must agree. Returns the window requests the fast
    path answered and those it left to the book."""
    before = dict(ANSWERED)
    assert outcome(conv, SlidingStrategy(), CHECKED, **options) == outcome(conv, SlidingStrategy(), None, **options)
    return ANSWERED["fast"] - before["fast"], ANSWERED["book"] - before["book"]


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(sessions(max_turns=5, max_rounds=4, huge=False),
       st.sampled_from([("claude-sonnet-4-5", "anthropic"), ("gpt-4o", "openai"), ("claude-opus-4-5", "anthropic")]),
       st.integers(1_500, 8_000))
def test_generated_sessions_slide_alike(conv, model, window):
    checked(conv, model=model[0], provider=model[1], window=window)


@pytest.mark.parametrize("model", [("claude-sonnet-4-6", "anthropic"), ("gpt-4o", "openai")])
@pytest.mark.parametrize("window", [30_000, 60_000])  # below 30,000 its 51k-char log alone is over
def test_the_tiled_sample_slides_alike(sample, model, window):
    fast, book = checked(tiled_calls(sample, 250), model=model[0], provider=model[1], window=window)
    assert fast > 250 and book == 0  # the sample's windows are all read off its units


@pytest.mark.shared
@pytest.mark.skipif(not PI.exists(), reason="pi's session is in ../shared (absent here)")
@pytest.mark.parametrize(("options", "calls"), [
    pytest.param({"window": 47_000}, 484, id="window full, pi itself"),  # the default run: one case, the real session
    *(pytest.param(options, 1_000, id=f"{name}, tiled to 1,000 calls", marks=pytest.mark.thorough)
      for name, options in (("default window", {}), ("window full", {"window": 47_000}),
                            ("gpt-4o", {"model": "gpt-4o", "provider": "openai"})))])
def test_pi_slides_alike(options, calls):
    from ctxlab.io.formats import load

    conv = tiled_calls(load(PI).conversation(), calls)
    before = dict(ANSWERED)
    rows, records = outcome(conv, SlidingStrategy(), CHECKED, **options)  # every window checked against the book
    fast, book = ANSWERED["fast"] - before["fast"], ANSWERED["book"] - before["book"]
    assert len(rows) == calls and fast >= calls and book == 0
    assert (rows, records) == outcome(conv, SlidingStrategy(), FAST, **options)


class CheckedPaged(PagedStrategy):
    """``paged``, whose incremental ``entry_ids`` is compared with the entries read from scratch at every call."""

    def entry_ids(self, items, kind):
        ids = super().entry_ids(items, kind)
        assert ids == {e.data.get("message_id") for e in items if isinstance(e, Entry) and e.kind == kind}
        return ids


def test_paged_entry_ids_follow_the_history(sample):
    conv = tiled_calls(sample, 250)
    strategy = CheckedPaged()
    result = replay(conv, strategy, speedup=FAST, window=12_000)
    assert strategy.last_ids, "no result was paged: the check checked nothing"
    plain = replay(conv, PagedStrategy(), window=12_000)
    assert result.ledger.rows == plain.ledger.rows and result.new_entries == plain.new_entries
