"""One suite, run plain and fast: ``ctxlab/fast/`` gives exactly the book's answers (issue 15).

The rasbt/LLMs-from-scratch way (its KV cache is tested by one test parametrised over the plain and the
cached model, against one expected output): every test here runs twice, with ``speedup=None`` — the
book's own ``MessageMeter`` and ``render_blocks``, every call worked out from scratch — and with
``speedup=FAST`` (incremental meters and a render cache), and compares what it gets with one expected
output, the plain path's (worked out once per test process; the plain case then checks that a replay
leaves nothing behind that changes the next one):

* a replay of the bundled sample under every strategy: the ledger rows, each call's context (its
  messages, report, notes and token fields), the rendered request's blocks (digests, tokens,
  breakpoints), the new entries and the notes; the sample's ledger totals are also written below;
* a replay of every shared transcript (``@pytest.mark.shared``) under two strategies in the default run,
  and under every strategy with and without a window under ``-m thorough``. The default run compares the
  fast path with the plain one on every file; the plain case (a second plain replay against the first: a
  determinism check) runs by default only on :data:`PLAIN_AGAIN`'s two files, on the others under
  ``-m thorough`` (it was most of this file's time: tau-bench, pi and aider replayed plain twice). On a file
  of many conversations (:data:`MANY`: tau-bench's 200, LLaMA-Factory's 300, aider's 984: each replayed on
  its own) the default run replays :func:`default_slice` of them — every tenth and the twenty largest, which
  hold aider's BudgetError and CompactionError conversations and most of its compactions — and the whole
  file under ``-m thorough`` (the three whole files were two thirds of this file's time);
* an agent loop (:class:`~ctxlab.loop.AgentLoop`) driven through the sample's calls: every request.

Run ``python tests/test_fast.py`` to print the sample's totals (to update :data:`SAMPLE_TOTALS` when a
chapter's numbers are meant to change).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import SHARED_TRANSCRIPTS, shared_transcript_files, skip_unless_a_reader_recognises

from ctxlab.context import Context
from ctxlab.fast import FAST, IncrementalMeter, RenderCache
from ctxlab.io import formats
from ctxlab.io.session import Session
from ctxlab.ledger import LedgerRow
from ctxlab.loop import AgentLoop
from ctxlab.messages import Conversation, Message
from ctxlab.render import RenderedRequest
from ctxlab.replay import STRATEGY_NAMES, ReplayResult, get_strategy, replay
from ctxlab.tables.profiles import profile_for, with_window
from ctxlab.tokens import MessageMeter
from helpers import Recording

SPEEDUPS = pytest.mark.parametrize("speedup", [None, FAST], ids=["plain", "fast"])
WINDOW = 30_000  # the chapters' window on the sample: every strategy cuts, compacts or pages under it
SHARED_DEFAULT = ("budgeted", "compaction")  # the default run on every shared file; -m thorough runs them all
# The shared files whose plain case (plain replay == plain replay) runs by default; on the others it is thorough.
# claude-code-viewer: Claude Code's shape, 170 calls, budgeted builds every context and compaction adds 7
# summaries at WINDOW; gemini-cli: a small file of another provider's shape whose compaction adds 3 summaries.
PLAIN_AGAIN = ("claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl", "gemini-cli/gemini-cli-session.jsonl")

# The sample's ledger totals under each strategy at WINDOW (and full at its own window): calls (rows),
# total input, cache read, cache write and output tokens. Both paths must give them.
# Issue 13 (H1): regenerated with `python tests/test_fast.py` after profile_for read the dated model table (the
# sample's claude-sonnet-4-6: thinking keep_all, tool prompt 497, calibration 1.257, window 1,000,000) together with
# the other issue-13 changes in the tree on 2026-12-02 05:10 UTC; regenerate once more after the last merge.
SAMPLE_TOTALS: dict[tuple[str, int | None], tuple[int, ...]] = {
    ("full", None): (77, 2_526_818, 2_315_552, 211_266, 6_448),
    ("sliding", 30_000): (77, 661_327, 573_713, 74_313, 6_448),
    ("budgeted", 30_000): (77, 661_327, 573_713, 74_313, 6_448),
    ("recorded", 30_000): (77, 2_526_818, 2_315_552, 211_266, 6_448),
    ("pruned", 30_000): (77, 1_374_501, 1_209_568, 164_933, 6_448),
    ("paged", 30_000): (77, 1_374_256, 1_193_874, 180_382, 6_448),
    ("budgeted+summary", 30_000): (81, 666_753, 522_917, 132_999, 11_522),  # extended, not regenerated (issue 18)
    ("compaction", 30_000): (79, 1_019_043, 905_199, 113_844, 8_405),
    ("pipeline", 30_000): (78, 1_097_830, 983_569, 114_261, 7_435),
}


# ---- what a replay gave, in a form two runs can be compared in ----------------------------------------

def _digest(value: Any) -> str:
    return hashlib.sha256(repr(value).encode("utf-8")).hexdigest()[:32]


class Digests:
    """A digest per message, made once per message object (a replay's contexts share their messages)."""

    def __init__(self) -> None:
        self._seen: dict[int, tuple[Message, str]] = {}  # id(message) -> (message, digest): the object pins its id

    def message(self, msg: Message) -> str:
        hit = self._seen.get(id(msg))
        if hit is None or hit[0] is not msg:
            hit = self._seen[id(msg)] = (msg, _digest(msg))
        return hit[1]

    def context(self, ctx: Context) -> str:
        """Everything a Context holds: its messages, report, notes, token fields, system, tools and profile."""
        return _digest((tuple(self.message(m) for m in ctx.messages), ctx.report, ctx.notes, ctx.system, ctx.tools,
                        ctx.profile, ctx.counter, ctx.budget_tokens, ctx.tools_tokens, ctx.system_tokens,
                        ctx.head_tokens, ctx.overhead_tokens, ctx.message_tokens))


def request_digest(req: RenderedRequest) -> str:
    """A rendered request's blocks (kind, label, digest, prefix digest, tokens, breakpoint) and its totals."""
    return _digest((req.provider, req.model, req.thinking, req.overhead_tokens, req.cum_tokens,
                    tuple((b.kind, b.label, b.digest, b.prefix_digest, b.tokens, b.breakpoint, b.message_id)
                          for b in req.blocks)))



@dataclasses.dataclass(frozen=True)
class Replayed:
    """A replay's outcome: its ledger rows, per call (context digests, request digest, notes, overflow), the
    new entries and the notes; or the error it raised (type and message)."""

    rows: tuple = ()
    calls: tuple = ()
    entries: tuple = ()
    notes: tuple = ()
    error: str | None = None


def replayed(conversation: Conversation, strategy: str, window: int | None, speedup: Any) -> Replayed:
    recording = Recording(get_strategy(strategy))
    try:
        result: ReplayResult = replay(conversation, recording, window=window, speedup=speedup)
    except ValueError as err:  # CtxlabError (BudgetError, OrphanError, ...) is a ValueError
        return Replayed(error=f"{type(err).__name__}: {err}")
    digests = Digests()
    assert len(recording.contexts) == len(result.records)
    calls = tuple((tuple(digests.context(c) for c in contexts), request_digest(rec.request), rec.notes,
                   rec.overflow, rec.context_tokens, rec.messages)
                  for contexts, rec in zip(recording.contexts, result.records))
    return Replayed(tuple(dataclasses.astuple(r) for r in result.ledger.rows), calls,
                    tuple(repr(e) for e in result.new_entries), tuple(result.notes))


def where_they_part(got: Any, expected: Any) -> str:
    """The first field and position where two outcomes differ, for the assertion message."""
    if got.error != expected.error:
        return f"error: {got.error!r} != {expected.error!r}"
    for name in ("rows", "calls", "entries", "notes"):
        a, b = getattr(got, name), getattr(expected, name)
        if a != b:
            k = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            return f"{name}[{k}] differs ({len(a)} vs {len(b)} items): {a[k:k + 1]!r} != {b[k:k + 1]!r}"
    return "equal"


def assert_same(got: Any, expected: Any) -> None:
    assert got == expected, where_they_part(got, expected)


# ---- the bundled sample ----------------------------------------------------------------------------------

@functools.lru_cache(maxsize=4)
def expected_on_sample(strategy: str, window: int | None) -> Replayed:
    from ctxlab.lab.workbook import load_workbook_conversation

    return replayed(load_workbook_conversation(), strategy, window, None)


def totals(outcome: Replayed) -> tuple[int, ...]:
    """(rows, total input, cache read, cache write, output tokens) summed over the ledger."""
    fields = [f.name for f in dataclasses.fields(LedgerRow)]
    at = [fields.index(n) for n in ("total_input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")]
    return (len(outcome.rows), *(sum(r[k] for r in outcome.rows) for k in at))


@SPEEDUPS
@pytest.mark.parametrize("strategy, window", sorted(SAMPLE_TOTALS, key=lambda k: STRATEGY_NAMES.index(k[0])),
                         ids=[f"{s}-{w or 'own window'}" for s, w in sorted(
                             SAMPLE_TOTALS, key=lambda k: STRATEGY_NAMES.index(k[0]))])
def test_the_sample_replays_to_the_same_ledger_contexts_and_requests(sample, strategy, window, speedup):
    got = replayed(sample, strategy, window, speedup)
    assert got.error is None and len(got.calls) >= 77
    assert totals(got) == SAMPLE_TOTALS[(strategy, window)]
    assert_same(got, expected_on_sample(strategy, window))


@pytest.mark.thorough
@SPEEDUPS
@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
def test_the_sample_replays_alike_at_its_own_window(sample, strategy, speedup):
    assert_same(replayed(sample, strategy, None, speedup), expected_on_sample(strategy, None))


def test_the_fast_path_is_really_taken(sample):
    """FAST's meters answer build_context from memory and its renderer continues earlier requests: without
    this, the tests above would compare the plain path with itself."""
    recording = Recording(get_strategy("budgeted"))
    meters: list[MessageMeter] = []

    def meter(profile: Any) -> MessageMeter:
        meters.append(IncrementalMeter(profile))
        return meters[-1]

    caches: list[RenderCache] = []

    def renderer() -> RenderCache:
        caches.append(RenderCache())
        return caches[-1]

    replay(sample, recording, window=WINDOW, speedup=dataclasses.replace(FAST, meter=meter, renderer=renderer))
    assert meters and all(isinstance(m, IncrementalMeter) and m.memos for m in meters)
    assert len(caches) == 1 and caches[0]._recent  # one render cache a replay, holding earlier requests


# ---- every shared transcript -------------------------------------------------------------------------------

# The shared files of many conversations (200, 300, 984), sliced in the default run (see default_slice); named here,
# not counted at collection, so that collecting reads no transcript.
MANY = ("tau-bench/gpt-4o-airline.json", "llama-factory-toolcall/glaive_toolcall_zh_demo.json",
        "aider/aider-chat-history.md")


@functools.lru_cache(maxsize=2)
def conversations_of(path: Path) -> tuple[Conversation, ...]:
    return tuple(formats.load(path).conversations)  # read once: a replay changes nothing in its conversation


def default_slice(conversations: tuple[Conversation, ...]) -> tuple[int, ...]:
    """The conversations a sliced default case replays (indices, in order): every tenth, and the twenty largest
    by characters of message text — on aider's log those include both conversations whose fixed part alone
    exceeds the window (BudgetError, CompactionError) and four of its six with a compaction."""
    largest = sorted(range(len(conversations)), key=lambda k: -sum(len(m.text) for m in conversations[k].messages))
    return tuple(sorted(set(range(0, len(conversations), 10)) | set(largest[:20])))


def replayed_file(path: Path, strategy: str, window: int | None, speedup: Any,
                  sliced: bool = False) -> tuple[Replayed, ...]:
    """Every conversation of the file (or only :func:`default_slice`'s) replayed on its own."""
    convs = conversations_of(path)
    chosen = default_slice(convs) if sliced else range(len(convs))
    return tuple(replayed(convs[k], strategy, window, speedup) for k in chosen)


@functools.lru_cache(maxsize=4)
def expected_on_file(path: Path, strategy: str, window: int | None, sliced: bool = False) -> tuple[Replayed, ...]:
    return replayed_file(path, strategy, window, None, sliced)


def check_shared(shared_transcripts: Path, shared_transcript: str, strategy: str, window: int | None,
                 speedup: Any, sliced: bool = False) -> None:
    path = shared_transcripts / shared_transcript
    if not path.is_file():
        pytest.skip(f"no transcript files under {shared_transcripts}")
    skip_unless_a_reader_recognises(path)
    got = replayed_file(path, strategy, window, speedup, sliced)
    expected = expected_on_file(path, strategy, window, sliced)
    assert got and (not sliced or len(got) < len(conversations_of(path)))
    assert len(got) == len(expected)
    for k, (a, b) in enumerate(zip(got, expected)):
        assert a == b, f"conversation {k}: {where_they_part(a, b)}"


def shared_cases() -> list:
    """(file, strategy, speedup, sliced) for every shared file (ids as ``conftest``'s ``shared_transcript`` gives
    them): the fast case always, the plain case marked thorough unless the file is in :data:`PLAIN_AGAIN`. A file in
    :data:`MANY` gets a default case on :func:`default_slice` (id ``...-slice-fast``) and
    its whole-file cases marked thorough."""
    names = [p.relative_to(SHARED_TRANSCRIPTS).as_posix() for p in shared_transcript_files()] or ["(none)"]
    cases = []
    for name in names:
        for strategy in SHARED_DEFAULT:
            if name in MANY:
                cases.append(pytest.param(name, strategy, FAST, True, id=f"{name}-{strategy}-slice-fast"))
            for speedup in (None, FAST):
                thorough = name in MANY or (speedup is None and name not in PLAIN_AGAIN)
                cases.append(pytest.param(name, strategy, speedup, False,
                                          id=f"{name}-{strategy}-{'plain' if speedup is None else 'fast'}",
                                          marks=[pytest.mark.thorough] if thorough else []))
    return cases


@pytest.mark.shared
@pytest.mark.parametrize("transcript, strategy, speedup, sliced", shared_cases())
def test_every_shared_transcript_replays_alike(shared_transcripts, transcript, strategy, speedup, sliced):
    check_shared(shared_transcripts, transcript, strategy, WINDOW, speedup, sliced)


@pytest.mark.shared
@pytest.mark.thorough
@SPEEDUPS
@pytest.mark.parametrize("window", [None, WINDOW], ids=["own window", "30k"])
@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
def test_every_shared_transcript_replays_alike_under_every_strategy(shared_transcripts, shared_transcript, strategy,
                                                                   window, speedup):
    check_shared(shared_transcripts, shared_transcript, strategy, window, speedup)


# ---- the agent loop ------------------------------------------------------------------------------------------

MODEL = "claude-sonnet-4-5"


def drive(conversation: Conversation, strategy: str, speedup: Any) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """An AgentLoop fed the sample's items in order: each recorded reply is preceded by ``next_request()``;
    returns every request as (context digest, digest of both bodies, notes)."""
    session = Session.in_memory(system=conversation.system, tools=conversation.tools, model=MODEL)
    loop = AgentLoop(session, strategy, model=MODEL, profile=with_window(profile_for(MODEL), WINDOW),
                     speedup=speedup)
    digests, requests = Digests(), []
    for item in conversation.items:
        if isinstance(item, Message) and item.role == "assistant" and item.origin is None:
            request = loop.next_request()
            bodies = json.dumps([request.anthropic_body, request.openai_body], sort_keys=True, ensure_ascii=False)
            requests.append((digests.context(request.context), _digest(bodies), request.notes))
            loop.record_response(item.text, [(c.id, c.name, c.arguments) for c in item.tool_calls],
                                 stop_reason=item.stop_reason)
        elif isinstance(item, Message) and item.is_real_user:
            loop.add_user(item.text)
        elif isinstance(item, Message) and item.role == "tool":
            loop.add_tool_result(item.tool_call_id or "", item.text, name=item.name, is_error=item.is_error)
        else:  # entries and messages of other origins go into the record as they are
            session.append(item)
    return tuple(requests)


@functools.lru_cache(maxsize=4)
def expected_loop(strategy: str) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    from ctxlab.lab.workbook import load_workbook_conversation

    return drive(load_workbook_conversation(), strategy, None)


@SPEEDUPS
@pytest.mark.parametrize("strategy", ["budgeted", "compaction", "pipeline"])
def test_an_agent_loop_builds_the_same_requests(sample, strategy, speedup):
    got = drive(sample, strategy, speedup)
    assert len(got) == 77
    assert got == expected_loop(strategy)


def test_a_plain_replay_takes_the_books_path(sample):
    """Without a speedup every strategy gets the book's own meter (no memory of earlier contexts)."""
    seen: list[MessageMeter] = []
    strategy = get_strategy("budgeted")
    decide = strategy.decide

    def spy(history: Conversation, call: Any, profile: Any, meter: MessageMeter) -> Any:
        seen.append(meter)
        return decide(history, call, profile, meter)

    strategy.decide = spy  # type: ignore[method-assign]
    replay(sample, strategy, window=WINDOW)
    assert seen and all(type(m) is MessageMeter for m in seen)


def test_a_plain_agent_loop_has_a_plain_meter(tmp_path):
    session = Session.in_memory(model=MODEL)
    assert type(AgentLoop(session, model=MODEL).meter) is MessageMeter
    assert isinstance(AgentLoop(session, model=MODEL, speedup=FAST).meter, IncrementalMeter)


if __name__ == "__main__":
    from ctxlab.lab.workbook import load_workbook_conversation

    conv = load_workbook_conversation()
    for key in sorted(SAMPLE_TOTALS, key=lambda k: STRATEGY_NAMES.index(k[0])):
        print(f"    {key!r}: ({', '.join(f'{n:_}' for n in totals(replayed(conv, *key, None)))}),")
