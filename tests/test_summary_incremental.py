"""``budgeted+summary`` grows linearly and answers as before (issue 18): the incremental chunking against a frozen copy.

``summary_chunks.summarise_in_chunks`` keeps its last run and summarises again only the chunk the newly dropped
messages fall in; ``BudgetedSummaryStrategy`` takes the units from the meter's memory. Neither may change an
answer. The strongest check is the algorithm as it stood before (commit 408dbe5, ``git show
408dbe5:ctxlab/summary_strategy.py``), frozen below as :func:`reference_chunks` and :class:`ReferenceStrategy`: a
replay under each must give the same ledger rows (every field), the same notes and the same contexts and side calls
at every call — on the bundled sample and on the shared pi session, at the model's window and at 30,000 tokens,
plain and with ``speedup=FAST``, under the texts' rule (``regenerate="every_call"``), ``regenerate="on_change"``, ``on_cached_prefix=True`` and
the three placements. The reference is replayed once per conversation, options and window (with ``speedup=FAST``, in
:func:`reference_replay`): the strategy's plain and FAST replays must both equal that one. Compaction (chapter 07) chunks through the same function: it is held to the reference too.
Direct runs of the function over a growing, shrinking and rewritten list of dropped messages (with pruned
messages and a prompt that fits nothing) check the memo against fresh runs. Chapter 06.
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from typing import Any, Sequence

import pytest

import ctxlab.compaction
from ctxlab import load
from ctxlab.base.errors import BudgetError
from ctxlab.context import Context, build_context
from ctxlab.fast import FAST
from ctxlab.interactions import group_units
from ctxlab.messages import Conversation, Message, TextPart, assistant, tool_result, user
from ctxlab.pruning import cut_to_tokens, prune_text
from ctxlab.replay import ReplayResult, replay
from ctxlab.strategies import Decision, SideCall, model_calls, whole_context
from ctxlab.summary import RuleBasedSummarizer, Summary, held_to
from ctxlab.summary_chunks import summarise_in_chunks
from ctxlab.summary_strategy import (PLACEMENTS, BudgetedSummaryStrategy, LLMSummarizer, fresh_request,
                                     place_summary, render_transcript, summary_call)
from ctxlab.tables.profiles import profile_for, with_window
from ctxlab.tokens import MessageMeter
from ctxlab.views import SUMMARY_MARKER
from helpers import Recording

PI = "pi-mono/before-compaction.jsonl"
SPEEDUPS = pytest.mark.parametrize("speedup", [None, FAST], ids=["plain", "fast"])
# pi: a window a tenth of the session's size (bench/growth.py's); under 30,000 tokens its 31,285-token round cannot fit
PI_WINDOWS = pytest.mark.parametrize("window", [None, 46_592], ids=["own-window", "46592"])
OPTIONS = [{}, {"regenerate": "on_change"}, {"on_cached_prefix": True},
           *({"placement": p} for p in PLACEMENTS if p != "system_end")]  # system_end is the default's


# ---- the algorithm as it stood before issue 18 (commit 408dbe5), frozen --------------------------------------------

def reference_ask_for(summarizer: Any, cap: int, previous: str | None = None) -> str:
    own = getattr(summarizer, "instruction", None)
    return own(previous) if own else LLMSummarizer(str, max_tokens=cap).instruction(previous)


def reference_chunks(history, dropped, summarizer, cap, profile, meter, memo=None):
    """``summarise_in_chunks`` at commit 408dbe5, verbatim but for the names."""
    window, room = profile.context_window, profile.context_window - cap
    thread, memo = dropped[0].thread if dropped else "main", {} if memo is None else memo
    last, made = memo.pop("requests", {}), memo.setdefault("requests", {})

    def size(m: Message) -> int:
        if (hit := memo.get(id(m))) is None or hit[0] is not m:
            hit = memo[id(m)] = (m, meter.text(render_transcript([m])) + 1)
        return hit[1]

    def request(prompt: str, chunk: Sequence[Message]) -> Context:
        view = fresh_request(history, prompt, chunk, thread)
        key = (id(meter), thread, view.messages[0].text)
        made[key] = made.get(key) or last.get(key) or whole_context(view, profile, meter)
        return made[key]

    sides, notes, rest, previous, summary = [], [], list(dropped), None, None
    while rest or summary is None:
        prompt = reference_ask_for(summarizer, cap, previous)
        n, used = 0, (fixed := request(prompt, ()).total_tokens)
        while n < len(rest) and used + size(rest[n]) <= room:
            used, n = used + size(rest[n]), n + 1
        chunk = rest[:max(n, 1)]
        for _ in range(8):
            sent = request(prompt, chunk)
            if (over := sent.total_tokens - room) <= 0 or not chunk:
                break
            if len(chunk) > 1:
                while len(chunk) > 1 and over > 0:
                    over, chunk = over - size(chunk[-1]), chunk[:-1]
                continue
            text = render_transcript([rest[0]]).split("] ", 1)[-1]
            try:
                chunk = [replace(rest[0], parts=(TextPart(prune_text(text, size(chunk[0]) - over - 8,
                                                                     meter.counter).text),))]
            except ValueError:
                break
        if (sent := request(prompt, chunk)).total_tokens > room:
            notes.append(f"the summary prompt needs {fixed:,} tokens + max_tokens {cap:,}: no summary call fits the "
                         f"window of {window:,}, so {len(rest)} dropped messages are left out of the summary")
            break
        if chunk and chunk[0] is not rest[0]:
            notes.append(f"{rest[0].where()} needs {size(rest[0]):,} tokens as text, more than one summary call "
                         f"can hold: sent pruned to {size(chunk[0]):,}")
        summary = summarizer.summarize(chunk, previous)
        sides.append(SideCall("summary", sent, meter.text(summary.text), f"{len(chunk)} dropped messages, fresh",
                              max_tokens=cap))
        previous, rest = summary.text, rest[len(chunk):]
    if len(sides) > 1:
        sides = [replace(c, note=f"{c.note}, chunk {k} of {len(sides)}") for k, c in enumerate(sides, 1)]
        notes.insert(0, f"summarised in {len(sides)} summary calls, oldest first, each within the window of "
                        f"{window:,} with max_tokens {cap:,}")
    covered = tuple(m.id for m in dropped[:len(dropped) - len(rest)])
    return replace(summary, sources=covered) if summary else None, tuple(sides), tuple(notes)


@dataclasses.dataclass
class ReferenceStrategy(BudgetedSummaryStrategy):
    """``BudgetedSummaryStrategy.decide`` and ``_summarise`` at commit 408dbe5."""

    def decide(self, history, call, profile, meter):
        if self.placement not in PLACEMENTS:
            raise ValueError(f"placement {self.placement!r}: choose one of {', '.join(PLACEMENTS)}")
        budget = self.policy.budget_for(profile)
        reserve, notes = int(budget * self.summary_share), []
        try:
            ctx = build_context(history, replace(self.policy, budget_tokens=budget - reserve), profile=profile,
                                meter=meter)
        except BudgetError:
            ctx = build_context(history, replace(self.policy, budget_tokens=budget), profile=profile, meter=meter)
            notes.append(f"the newest units need more than {1 - self.summary_share:.0%} of the budget")
        ctx = replace(ctx, budget_tokens=budget)
        prefix, before, sides = self.last.get(call.thread, (None, None, ()))
        gone = {r.unit for r in ctx.dropped()}
        if not gone:
            self.last[call.thread] = (ctx, None, ())
            return _decision(ctx, notes)
        units = group_units([m for m in history.messages if m.origin != "meta"], self.policy.granularity,
                            self.policy.unanswered)
        dropped = [m for u in units if u.index in gone for m in u.messages]
        cap = max(0, min(reserve, budget - ctx.total_tokens) - 16)
        same = before is not None and before.sources == tuple(m.id for m in dropped)
        reuse = same and self.regenerate == "on_change"
        summary, made, how = ((before, sides, ()) if reuse
                              else self._summarise(history, dropped, cap, prefix, profile, meter))
        body = cut_to_tokens(summary.text, cap, meter.counter) if summary else ""
        while summary:
            wrapped = f"{SUMMARY_MARKER} of {len(dropped)} dropped messages]\n{body}"
            placed = place_summary(ctx, wrapped, self.placement, meter)
            if placed.total_tokens <= budget or not body:
                break
            body = cut_to_tokens(body, meter.counter.count(body) - (placed.total_tokens - budget), meter.counter)
        if summary is None or placed.total_tokens > budget:
            self.last[call.thread] = (ctx, None, ())
            notes[:0] = how if summary is None else [f"no room for a summary of {len(dropped)} dropped messages: its "
                                                     f"opening line alone would make {placed.total_tokens:,} tokens, "
                                                     f"over the budget of {budget:,}"]
            return _decision(ctx, notes)
        self.last[call.thread] = (placed, summary, made)
        notes[:0] = [f"summary of {len(dropped)} dropped messages: {meter.counter.count(wrapped):,} tokens "
                     f"({self.placement}){', unchanged' if same else ''}", *how]
        return _decision(placed, notes, () if reuse else made)

    def _summarise(self, history, dropped, cap, prefix, profile, meter):
        summarizer, notes = held_to(self.summarizer, cap, meter.counter), ()
        if self.on_cached_prefix:
            ask = summary_call(history, dropped, Summary("", ()), profile, meter,
                               prompt=reference_ask_for(summarizer, cap), on_cached_prefix=True, prefix=prefix,
                               max_tokens=cap)
            if ask.context.total_tokens + cap <= profile.context_window:
                summary = summarizer.summarize(dropped)
                return summary, (replace(ask, output_tokens=meter.text(summary.text)),), ()
            notes = (f"the cached prefix with the summary prompt needs {ask.context.total_tokens:,} tokens + "
                     f"max_tokens {cap:,}, over the window of {profile.context_window:,}: the summary is asked fresh",)
        summary, sides, more = reference_chunks(history, dropped, summarizer, cap, profile, meter, self.memo)
        return summary, sides, notes + more


def _decision(ctx, notes, side_calls=()):
    return Decision(ctx, notes=tuple(notes), side_calls=tuple(side_calls))


# ---- comparing two replays -----------------------------------------------------------------------------------------


def replayed(conv: Conversation, strategy, **kw) -> tuple[ReplayResult, list]:
    recording = Recording(strategy)
    return replay(conv, recording, **kw), recording.decisions


_REFERENCES: dict[tuple, tuple[Conversation, tuple[ReplayResult, list]]] = {}


def reference_replay(conv: Conversation, options: dict, window: int | None) -> tuple[ReplayResult, list]:
    """The frozen reference's replay, made once per conversation, options and window in a test process (the slow
    half of each comparison: it summarises every chunk again at every call). It is replayed with ``speedup=FAST``
    and serves the strategy's plain and FAST replays alike: both must equal it, so a plain replay is also held to
    the fast path's answers (test_fast.py's property, here on the summaries too)."""
    key = (id(conv), tuple(sorted(options.items())), window)
    if key not in _REFERENCES:
        _REFERENCES[key] = (conv, replayed(conv, ReferenceStrategy(**options), window=window, speedup=FAST))
    kept, old = _REFERENCES[key]
    assert kept is conv  # the id was not reused by another conversation
    return old


def assert_same_replay(conv: Conversation, options: dict, window: int | None = None, speedup=None) -> ReplayResult:
    """The strategy and the frozen reference give equal rows, notes, contexts and side calls at every call. The
    reference knows the texts' rules only: ``regenerate`` is ``"every_call"`` unless ``options`` says otherwise (the
    strategy's default, ``"extend"``, came after it: tests/test_summary_extend.py)."""
    options = {"regenerate": "every_call", **options}
    new, new_decisions = replayed(conv, BudgetedSummaryStrategy(**options), window=window, speedup=speedup)
    old, old_decisions = reference_replay(conv, options, window)
    assert new.ledger.rows == old.ledger.rows
    assert new.notes == old.notes and [r.notes for r in new.records] == [r.notes for r in old.records]
    assert len(new_decisions) == len(old_decisions)
    for k, (a, b) in enumerate(zip(new_decisions, old_decisions)):
        assert a == b, f"call {k}: the decisions differ"
    assert [r.request for r in new.records] == [r.request for r in old.records]
    return new


_PI: dict[int | None, Conversation] = {}


def pi_session(calls: int | None = None) -> Conversation:
    """The shared pi session (skipped when absent), cut before its model call number ``calls`` (None: whole); read
    once per test process (the same object each time, so its reference replays are shared)."""
    from conftest import SHARED_TRANSCRIPTS

    path = SHARED_TRANSCRIPTS / PI
    if not path.exists():
        pytest.skip(f"{PI} not found under {SHARED_TRANSCRIPTS} (the shared folder sits beside the repository)")
    if calls not in _PI:
        conv = load(path).conversations[0]
        positions = [k for k, _ in model_calls(conv)]
        whole = calls is None or calls >= len(positions)
        _PI[calls] = conv if whole else replace(conv, items=conv.items[:positions[calls]])
    return _PI[calls]


@pytest.fixture(scope="module", autouse=True)
def _forget_the_replays():
    """The shared replays live as long as this module's tests run."""
    yield
    _REFERENCES.clear()
    _PI.clear()


# ---- the strategy against the reference ----------------------------------------------------------------------------

def _name(options: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in options.items()) or "default"


# the default run: the default options four ways, each other option at 30,000 tokens with FAST; -m thorough: all
SAMPLE_CASES = [pytest.param(o, w, f, id=f"{_name(o)}-{w or 'own-window'}-{'fast' if f else 'plain'}",
                             marks=() if not o or (w and f) else pytest.mark.thorough)
                for o in OPTIONS for w in (None, 30_000) for f in (None, FAST)]


@pytest.mark.parametrize(("options", "window", "speedup"), SAMPLE_CASES)
def test_the_sample_replays_as_before(sample: Conversation, options: dict, window, speedup) -> None:
    result = assert_same_replay(sample, options, window=window, speedup=speedup)
    if window:  # the sample truncates under 30,000 tokens: summaries were made, in chunks
        assert any(row.kind == "summary" for row in result.ledger.rows)


# the default run: both windows with FAST and the tenth window plain; plain at its own window under -m thorough (the
# sample's own-window case replays plain in the default run)
PI_CASES = [pytest.param(w, f, id=f"{w or 'own-window'}-{'fast' if f else 'plain'}",
                         marks=pytest.mark.thorough if (w, f) == (None, None) else ())
            for w in (None, 46_592) for f in (None, FAST)]


@pytest.mark.shared
@pytest.mark.parametrize(("window", "speedup"), PI_CASES)
def test_the_pi_session_replays_as_before(shared_transcripts, window, speedup) -> None:
    """Its first 250 calls (it truncates from about call 200 at its model's window); the whole session under
    ``-m thorough``."""
    result = assert_same_replay(pi_session(250), {}, window=window, speedup=speedup)
    assert sum(row.kind == "summary" for row in result.ledger.rows) > 50  # it truncates: many summary calls


@pytest.mark.shared
@pytest.mark.thorough
@PI_WINDOWS
@pytest.mark.parametrize("options", OPTIONS, ids=_name)
def test_the_whole_pi_session_replays_as_before_under_each_option(shared_transcripts, options: dict, window) -> None:
    assert_same_replay(pi_session(), options, window=window, speedup=FAST)


@SPEEDUPS
def test_compaction_chunks_as_before(sample: Conversation, speedup, monkeypatch) -> None:
    """Chapter 07's compaction summarises through the same function: the same replay with the frozen one."""
    for window in (2_500, 6_000):  # the summary calls go fresh; under 2,500 tokens some in two chunks
        new, new_decisions = replayed(sample, ctxlab.compaction.CompactionStrategy(), window=window, speedup=speedup)
        with monkeypatch.context() as patch:
            patch.setattr(ctxlab.compaction, "summarise_in_chunks", reference_chunks)
            old, old_decisions = replayed(sample, ctxlab.compaction.CompactionStrategy(), window=window,
                                          speedup=speedup)
        assert new.ledger.rows == old.ledger.rows and new_decisions == old_decisions
        assert [r.notes for r in new.records] == [r.notes for r in old.records]


# ---- the function itself, over a list of dropped messages that changes between calls -------------------------------

def messages(n: int, big: Sequence[int] = ()) -> list[Message]:
    """A task, then rounds of a read and its result (about 130 tokens each; a round in ``big`` holds 3,000)."""
    out = [user("Fix the failing test in src/app.py; never touch config/prod.yaml.", "u0")]
    for k in range(n):
        out.append(assistant(f"Reading part {k}.", f"a{k}", calls=((f"c{k}", "read_file", {"path": f"p{k}.py"}),)))
        lines = 400 if k in big else 8
        out.append(tool_result(f"c{k}", "\n".join(f"src/p{k}.py:{i}: v_{k}_{i} = f({i}, {k})" for i in range(lines)),
                               f"t{k}", name="read_file"))
    return out


HISTORY = Conversation("synthetic", (), model="claude-sonnet-4-5", provider="anthropic")


@pytest.mark.parametrize("window", [1_500, 2_500, 6_000], ids=["tight", "small", "roomy"])
def test_a_memo_gives_what_a_fresh_run_gives(window: int) -> None:
    """One memo through a list that grows, stays, shrinks, is rewritten in the middle and changes its summarizer:
    each answer is the reference's, run fresh."""
    profile = with_window(profile_for("claude-sonnet-4-5", "anthropic"), window)
    meter, memo = MessageMeter(profile), {}
    every = messages(40, big=(7, 23))
    steps = [every[:n] for n in (1, 3, 9, 9, 17, 30, 31, 60, 45, 81)]
    steps += [every[:20] + every[30:81], every[:81]]  # a unit leaves the middle, then comes back
    summarizers = [RuleBasedSummarizer(max_tokens=200)] * len(steps)
    summarizers[-3:-1] = [RuleBasedSummarizer(max_tokens=150)] * 2  # another summarizer: nothing is taken over
    caps = [200, 200, 180, 200, 200, 180, 180, 200, 200, 200, 180, 200]  # a cap that dips and comes back: two runs
    for more in (0, 200):
        for dropped, summarizer, cap in zip(steps, summarizers, caps):
            got = summarise_in_chunks(HISTORY, dropped, summarizer, cap + more, profile, meter, memo)
            want = reference_chunks(HISTORY, dropped, summarizer, cap + more, profile, MessageMeter(profile))
            assert got == want, f"{len(dropped)} dropped messages, cap {cap + more}"


# 720 (700 before issue 13): Claude Sonnet 4.5's calibration went 1.267 -> 1.257, and the window where the summary
# fits at first and then outgrows the room moved with it
@pytest.mark.parametrize("window", [400, 720], ids=["no-call-fits", "the-summary-so-far-outgrows-the-room"])
def test_a_prompt_that_fits_nothing_is_said_each_time(window: int) -> None:
    profile = with_window(profile_for("claude-sonnet-4-5", "anthropic"), window)
    meter, memo, every, stuck = MessageMeter(profile), {}, messages(6), []
    for n in (2, 5, 9, 13, 13):
        got = summarise_in_chunks(HISTORY, every[:n], RuleBasedSummarizer(), 200, profile, meter, memo)
        assert got == reference_chunks(HISTORY, every[:n], RuleBasedSummarizer(), 200, profile, meter)
        stuck.append(bool(got[2]) and got[2][-1].endswith("dropped messages are left out of the summary"))
        assert window > 400 or (got[0] is None and got[2][-1].endswith(f"so {n} dropped messages are left out of "
                                                                       "the summary"))
    assert stuck[-1] and (window == 400 or not stuck[0])  # at 720 tokens: fits at first, then stuck


def test_only_the_chunk_the_new_messages_fall_in_is_summarised_again() -> None:
    """An LLMSummarizer over a model is asked each distinct request once, where the frozen algorithm asked every
    chunk at every call; the calls sent (a ledger row each) and the answers are the same."""
    # 2,400 (2,500 before issue 13, whose calibration change 1.267 -> 1.257 left 70 old asks to 24 new there)
    profile = with_window(profile_for("claude-sonnet-4-5", "anthropic"), 2_400)
    asked: dict[str, list[str]] = {"new": [], "old": []}

    def model(who: str) -> LLMSummarizer:  # a deterministic model: the same request, the same answer
        return LLMSummarizer(lambda p: asked[who].append(p) or f"## Task\n- {len(p)} chars, ending {p[-40:]!r}",
                             max_tokens=100)

    new, old, meter, memo, every = model("new"), model("old"), MessageMeter(profile), {}, messages(40)
    sent = 0
    for n in range(20, 81, 3):
        got = summarise_in_chunks(HISTORY, every[:n], new, 100, profile, meter, memo)
        assert got == reference_chunks(HISTORY, every[:n], old, 100, profile, meter)
        assert got[0] is not None and got[0].sources == tuple(m.id for m in every[:n])
        sent += len(got[1])
    assert len(asked["old"]) == sent > 3 * len(asked["new"])  # before: every chunk asked again at every call
    assert sorted(asked["new"]) == sorted(set(asked["old"]))  # now: each distinct request asked once
