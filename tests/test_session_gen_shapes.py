"""The session generator (tests/session_gen.py) draws each shape it promises, in the form it promises.

The property tests are only as good as their inputs: each of ``session_gen.SHAPES`` (the conditions
real agents record, issue 12) must turn up when forced, never when left out, and each in the exact
form its docstring states. Cheap: about 80 small sessions in all (a few seconds).
"""

from __future__ import annotations

import functools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from session_gen import CLAUDE, REASONING, REASONING_MODEL, SHAPES, outline, sessions, shapes_of

from ctxlab.interactions import find_orphans
from ctxlab.messages import Conversation, Entry, Message, ThinkingPart

DRAWS = settings(max_examples=12, derandomize=True, database=None, deadline=None,
                 suppress_health_check=list(HealthCheck))
SMALL = {"max_turns": 3, "max_rounds": 2, "huge": False}


def drawn(strategy, examples: int = 12) -> list[Conversation]:
    """``examples`` derandomized draws of ``strategy`` (the same ones on every run)."""
    out: list[Conversation] = []

    @settings(DRAWS, max_examples=examples)
    @given(strategy)
    def collect(conversation):
        out.append(conversation)

    collect()
    return out


@functools.cache
def forced() -> tuple[Conversation, ...]:
    """Sessions with every shape on (each still drawn at its odds): what the form checks below read."""
    return tuple(drawn(sessions(force=set(SHAPES), **SMALL), 16))


@pytest.mark.parametrize("shape", SHAPES)
def test_every_shape_is_drawn_when_forced(shape):
    # forced alone, so the draws do not depend on a set's order (PYTHONHASHSEED differs between processes)
    assert any(shape in shapes_of(c) for c in drawn(sessions(force={shape}, **SMALL), 24)), f"{shape} never drawn"


def test_a_left_out_shape_is_never_drawn():
    assert not any(shapes_of(c) for c in drawn(sessions(without=set(SHAPES), **SMALL), 10))
    some = {"late_result", "reused_call_id", "blank_reply", "cross_provider"}
    rest = set(SHAPES) - some
    assert not any(shapes_of(c) & some for c in drawn(sessions(without=some, force=rest, **SMALL), 8))


def test_the_default_sessions_hold_the_old_shapes_and_the_new_ones_modestly():
    held = [shapes_of(c) for c in drawn(sessions(**SMALL), 30)]
    assert sum(not h for h in held) >= len(held) // 3, "most sessions should hold none of the new shapes"
    assert len(set().union(*held)) >= 4, f"the default sessions draw few of the new shapes: {held}"


def test_an_unknown_or_contradictory_shape_is_refused():
    with pytest.raises(ValueError, match="late_reslt"):
        drawn(sessions(without={"late_reslt"}), 1)
    with pytest.raises(ValueError, match="late_result"):
        drawn(sessions(without={"late_result"}, force={"late_result"}), 1)


def test_a_call_id_is_reused_only_once_its_first_call_was_answered():
    for c in forced():
        kinds = {o.kind for o in find_orphans(c.messages)}
        assert not kinds & {"duplicate_call", "duplicate_result"}, outline(c)


def test_a_late_result_comes_right_after_the_users_interrupting_message():
    for c in forced():
        items = c.items
        for k, m in enumerate(items):
            if not (isinstance(m, Message) and m.role == "tool"):
                continue
            call_at = max(j for j in range(k) if isinstance(items[j], Message) and m.tool_call_id in items[j].call_ids)
            between = [i for i in items[call_at + 1:k] if isinstance(i, Message) and i.is_real_user]
            assert not between or items[k - 1] is between[-1], f"the late result follows the interrupt\n{outline(c)}"


def test_a_cross_provider_session_starts_on_openai_reasoning_and_continues_on_claude():
    for c in forced():
        assert (c.model, c.provider) == (REASONING_MODEL, "openai")
        switch = next((k for k, i in enumerate(c.items) if isinstance(i, Entry) and i.kind == "model_change"),
                      len(c.items))
        assert switch == len(c.items) or c.items[switch].data == {"provider": "anthropic", "model": CLAUDE}
        for k, m in enumerate(c.items):
            if isinstance(m, Message) and m.role == "assistant":
                assert (m.provider, m.model if k < switch else m.model[:6]) == \
                    (("openai", REASONING_MODEL) if k < switch else ("anthropic", CLAUDE[:6]))
                reasoning = [p for p in m.parts if isinstance(p, ThinkingPart) and p.signature == REASONING]
                assert all(p.redacted and p.text == "" for p in reasoning)
                assert k < switch or not reasoning, "no OpenAI reasoning item after the switch"


def test_odd_arguments_and_aborted_turns_are_as_stated():
    found = set()
    for c in forced():
        for m in c.messages:
            if m.role == "assistant" and not m.parts:
                assert m.stop_reason in ("aborted", "error"), outline(c)
            for call in m.tool_calls:
                try:
                    found.add(type(json.loads(call.arguments)).__name__)
                except ValueError:
                    found.add("invalid")
    assert {"dict", "invalid"} <= found and found - {"dict", "invalid"}, found
