"""``ctxlab/fast/wire_cache.py`` shows the oracle exactly the bodies the book renders, so a checked replay finds
exactly the violations the plain check finds (issue 18).

A replay checks one context after another; the body cache renders each sent message once and lays the bodies
out as ``ctxlab/bodies.py`` does. Each test records the contexts (and histories) a replay's strategy decided, in
order, passes them through one cache, and requires, context by context, bodies equal (``==``) to
``checks.request_bodies`` and the same :func:`~ctxlab.checks.check_context` violations as without the cache —
on every shared transcript, on hypothesis sessions with the shapes providers refuse (tests/session_gen.py), under
both providers' bodies, and on contexts cut and broken by hand so that the oracle has something to find.
The shared cases over ~2 s (pi-mono's 484 calls and tau-bench's 200 conversations, both strategies; pi-mono
``full`` ~9 s) run under ``-m thorough``; every other shared file (Claude Code's and the OpenAI-shaped ones
among them) runs in the default run, LLaMA-Factory's 300 and aider's 984 conversations on the slice
``tests/test_fast.py`` replays by default (``default_slice``: every tenth and the twenty largest; each conversation
is checked on its own), the whole file under ``-m thorough``.
"""

from __future__ import annotations

import dataclasses
import random

import pytest
from conftest import SHARED_TRANSCRIPTS, shared_transcript_files, skip_unless_a_reader_recognises
from hypothesis import HealthCheck, given, settings, strategies as st
from session_gen import sessions

from ctxlab.checks import check_context, request_bodies
from ctxlab.fast import FAST
from ctxlab.fast.wire_cache import BodyCache
from ctxlab.io import formats
from ctxlab.messages import Conversation, Message, TextPart, ThinkingPart, ToolCallPart
from ctxlab.replay import get_strategy, replay
from helpers import Recording
from test_fast import MANY, default_slice

WINDOW = 30_000



def decided(conv: Conversation, strategy: str, window: int | None, **settings) -> tuple[list, object]:
    """The (context, history) pairs a replay of ``conv`` decided, in order (as far as it got), and the strategy."""
    recording = Recording(get_strategy(strategy))
    try:
        replay(conv, recording, window=window, speedup=FAST, **settings)
    except ValueError:  # a strategy that cannot build a context (BudgetError): the contexts before it still count
        pass
    seen = [(context, record[0]) for record, contexts in zip(recording.records, recording.contexts)
            for context in contexts]  # (context, the history it was decided on)
    return seen, recording.strategy


def same_verdicts(pairs, strategy) -> int:
    """Through one cache, in order: the same bodies and the same violations as the book's; how many violations."""
    cache, found = BodyCache(), 0
    for k, (context, history) in enumerate(pairs):
        expected = check_context(context, history, strategy)
        assert cache(context) == request_bodies(context), f"context {k}: the bodies differ"
        assert check_context(context, history, strategy, bodies=cache) == expected, f"context {k}"
        found += len(expected)
    return found


def broken(pairs, seed: int) -> list:
    """The contexts again, some cut (a message dropped, the front moved) and some with a part the APIs refuse (a
    whitespace text, a thinking block with no signature, arguments that are not an object): shapes the oracle
    judges. Every context stays in the order the replay asked for it."""
    rng = random.Random(seed)
    out = []
    for context, history in pairs:
        out.append((context, history))
        messages = list(context.messages)
        if not messages or rng.random() > 0.4:
            continue
        k = rng.randrange(len(messages))
        choice = rng.randrange(4)
        if choice == 0:
            del messages[k]
        elif choice == 1:
            messages = messages[k:]
        else:
            msg = messages[k]
            extra = {1: TextPart("  "), 2: ThinkingPart("hm", None), 3: ToolCallPart("call 1", "bash", "[1]")}[choice]
            extra = extra if msg.role == "assistant" or choice == 1 else TextPart(" \n")
            messages[k] = dataclasses.replace(msg, parts=msg.parts + (extra,))
        out.append((dataclasses.replace(context, messages=tuple(messages)), history))
    return out


# ---- generated sessions -------------------------------------------------------------------------------------

@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(sessions(huge=False), st.sampled_from(["full", "sliding", "budgeted", "compaction", "paged"]),
       st.sampled_from([None, 2_000, 6_000]), st.sampled_from([{}, {"provider": "openai", "model": "gpt-4.1"}]),
       st.integers(0, 3))
def test_generated_sessions_get_the_books_bodies_and_violations(conv, strategy, window, settings_, seed):
    pairs, made = decided(conv, strategy, window, **settings_)
    same_verdicts(broken(pairs, seed), made)


def test_the_hand_broken_contexts_give_the_oracle_something_to_find(sample):
    """Not vacuous: on the sample's contexts, cut and broken, the oracle finds violations, the same ones."""
    pairs, made = decided(sample, "budgeted", WINDOW)
    assert same_verdicts(broken(pairs, 0), made) > 0
    openai_pairs, made = decided(sample, "compaction", WINDOW, provider="openai", model="gpt-4.1")
    assert same_verdicts(broken(openai_pairs, 1), made) > 0


def test_a_remembered_block_is_not_marked_by_a_later_body(sample):
    """The breakpoint goes on a copy of the last block: the block a later body shares stays as rendered."""
    pairs, _ = decided(sample, "full", None)
    cache = BodyCache()
    first = cache(pairs[3][0])[0][1]
    for context, _ in pairs[4:8]:
        cache(context)
    assert first == request_bodies(pairs[3][0])[0][1]
    later = cache(pairs[8][0])[0][1]["messages"]
    assert all("cache_control" not in block for m in later[:-1] for block in m["content"])


# ---- every shared transcript ----------------------------------------------------------------------------------

SLOW = {"pi-mono/before-compaction.jsonl", "tau-bench/gpt-4o-airline.json"}  # ~2-10 s a case: -m thorough


def shared_cases() -> list:
    """(file, strategy) for every shared file (ids as ``conftest``'s ``shared_transcript`` gives them); the
    files in :data:`SLOW` marked thorough."""
    names = [p.relative_to(SHARED_TRANSCRIPTS).as_posix() for p in shared_transcript_files()] or ["(none)"]
    sliced = [pytest.param(name, strategy, True, id=f"{name}-{strategy}-slice")
              for name in names if name in MANY and name not in SLOW for strategy in ("full", "compaction")]
    return sliced + [pytest.param(name, strategy, False, id=f"{name}-{strategy}",
                                  marks=[pytest.mark.thorough] if name in SLOW or name in MANY else [])
                     for name in names for strategy in ("full", "compaction")]


@pytest.mark.shared
@pytest.mark.parametrize("transcript, strategy, sliced", shared_cases())
def test_every_shared_transcript_gets_the_books_violations(shared_transcripts, transcript, strategy, sliced):
    path = shared_transcripts / transcript
    if not path.is_file():
        pytest.skip(f"no transcript files under {shared_transcripts}")
    skip_unless_a_reader_recognises(path)
    convs = formats.load(path).conversations
    for conv in [convs[k] for k in default_slice(convs)] if sliced else convs:
        pairs, made = decided(conv, strategy, None if strategy == "full" else WINDOW)
        same_verdicts(pairs, made)
