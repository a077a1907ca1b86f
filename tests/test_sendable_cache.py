"""``ctxlab/fast/sendable_cache.py`` gives exactly what the book's ``sendable`` gives (issue 18).

A replay asks for one context after another; the cache lays a remembered prefix and a new piece end to end
only where no rule crosses the seam. Each test feeds it the contexts a replay would ask for — every prefix of
a history (the ``full`` strategy's contexts), windows that slide forward (``sliding``), windows whose front
jumps (``budgeted`` after a rewrite), and the same context twice — and compares every answer with
``sendable(messages, kind)[0]``, message by message, for the three wire kinds. The inputs are hypothesis
sessions with the shapes providers refuse (tests/session_gen.py: reused and foreign call ids, results after
an interrupt, aborted turns, thinking from another provider ...), hand-made seams that must be refused, and
every shared transcript.
"""

from __future__ import annotations

import random

import pytest
from conftest import skip_unless_a_reader_recognises
from hypothesis import HealthCheck, given, settings
from session_gen import sessions

from ctxlab.fast.sendable_cache import SendableCache
from ctxlab.io import formats
from ctxlab.messages import Message, TextPart, ToolCallPart
from ctxlab.sendable import KINDS, OPENER, sendable


def contexts(messages: tuple[Message, ...], seed: int = 0) -> list[tuple[Message, ...]]:
    """The contexts a replay asks for, in order: every prefix, windows sliding and jumping, repeats."""
    rng = random.Random(seed)
    out: list[tuple[Message, ...]] = []
    start = 0
    for end in range(1, len(messages) + 1):
        out.append(messages[:end])  # full: the history so far
        if rng.random() < 0.3:
            start = min(end - 1, start + rng.randint(0, 3))  # sliding: the start only moves forward
        out.append(messages[start:end])
        if rng.random() < 0.1:
            out.append(messages[rng.randint(0, end - 1):end])  # a rewrite: the front jumps
            out.append(out[-1])  # the same context again
    return out


def check(messages: tuple[Message, ...], seed: int = 0) -> int:
    """Every context of :func:`contexts` through one cache per kind equals sendable's answer; how many were asked."""
    asked = 0
    for kind in KINDS:
        cache = SendableCache()
        for ctx in contexts(messages, seed):
            assert list(cache.messages(ctx, kind)) == list(sendable(ctx, kind)[0]), (kind, [m.id for m in ctx])
            asked += 1
    return asked


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(sessions(huge=False))
def test_every_context_of_a_generated_session_is_sent_as_the_book_sends_it(conv):
    sent = tuple(m for m in conv.messages if m.origin != "meta")
    assert check(sent) >= 3 * len(sent)


def _a(id_: str, *calls: str, text: str = "") -> Message:
    parts = ((TextPart(text),) if text else ()) + tuple(ToolCallPart(c, "bash", "{}") for c in calls)
    return Message("assistant", parts, id=id_)


def _t(id_: str, call: str) -> Message:
    return Message("tool", (TextPart("ok"),), id=id_, tool_call_id=call, tool_name="bash")


def _u(id_: str, text: str = "go") -> Message:
    return Message("user", (TextPart(text),), id=id_)


SEAMS = {  # histories where laying pieces end to end would be wrong: the cache must notice each seam
    "a result answers a call before the seam": (_u("u1"), _a("a1", "c1"), _u("u2", "stop"), _t("t1", "c1"),
                                               _a("a2", text="done")),
    "an id reused across the seam": (_u("u1"), _a("a1", "call_0"), _t("t1", "call_0"), _a("a2", "call_0"),
                                     _t("t2", "call_0"), _a("a3", text="end ")),
    "a result moved up leaves an assistant last": (_u("u1"), _a("a1", "c1"), _t("t0", "c0"), _a("a2", text="x "),
                                                  _t("t1", "c1"), _a("a3", "c2"), _t("t2", "c2")),
    "ids the wire rewrites": (_u("u1"), _a("a1", "functions.bash:0"), _t("t1", "functions.bash:0"),
                              _a("a2", "functions_bash_0"), _t("t2", "functions_bash_0"), _a("a3", text="ok")),
    "an opener in the input": (_a("a0", text="hi"), OPENER, _a("a1", "c1"), _t("t1", "c1"), _u("u1")),
    "a context that starts with a call": (_a("a1", "c1"), _t("t1", "c1"), _a("a2", "c2"), _t("t2", "c2"), _u("u1")),
    "aborted turns": (_u("u1"), Message("assistant", (), id="a1"), _a("a2", "c1"), _t("t1", "c1"),
                      Message("assistant", (), id="a3"), _u("u2")),
}


@pytest.mark.parametrize("name", SEAMS)
def test_a_seam_a_rule_crosses_is_not_laid_end_to_end(name):
    history = SEAMS[name]
    for seed in range(5):
        check(history, seed)


def test_the_cache_really_reuses_pieces():
    """Not only correct but incremental: a history that grows by a round re-sends only the new piece."""
    history: tuple[Message, ...] = (_u("u0"),)
    cache, calls = SendableCache(), []
    import ctxlab.fast.sendable_cache as module

    real = module.sendable

    def spy(messages, kind, memo=None):
        calls.append(len(messages))
        return real(messages, kind, memo)

    module.sendable = spy
    try:
        for k in range(1, 60):
            history += (_a(f"a{k}", f"c{k}"), _t(f"t{k}", f"c{k}"))
            assert cache.messages(history, "anthropic") == real(history, "anthropic")[0]
    finally:
        module.sendable = real
    assert max(calls) <= 4, calls  # each piece is the newest round, never the whole history


@pytest.mark.shared
def test_every_shared_transcript_is_sent_as_the_book_sends_it(shared_transcripts, shared_transcript):
    path = shared_transcripts / shared_transcript
    skip_unless_a_reader_recognises(path)
    for conv in formats.load(path, strict=False).conversations[:5]:
        for thread in conv.threads():
            sent = tuple(m for m in conv.thread(thread).messages if m.origin != "meta")[:150]
            check(sent)
