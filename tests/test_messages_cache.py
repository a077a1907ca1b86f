"""``Message.tool_calls`` and ``Message.call_ids`` are worked out once per message (issue 18), kept in spare slots
(``ctxlab/base/once.py``) that are not fields: equality, hashing, ``repr``, ``dataclasses.replace``, ``asdict``,
copying and pickling behave as before; a message has no ``__dict__``."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from ctxlab.messages import Message, TextPart, ToolCallPart, assistant, tool_result, user


def _calls(msg: Message) -> tuple[ToolCallPart, ...]:  # what the properties computed at every access before
    return tuple(p for p in msg.parts if isinstance(p, ToolCallPart))


def _ids(msg: Message) -> tuple[str, ...]:
    if msg.role == "tool":
        return (msg.tool_call_id,) if msg.tool_call_id else ()
    return tuple(c.id for c in _calls(msg))


MESSAGES = [
    assistant("let me look", "a1", calls=(("c1", "read", {"path": "x"}), ("c2", "bash", {"cmd": "ls"}))),
    assistant("no calls", "a2"),
    tool_result("c1", "contents", "t1", name="read"),
    Message(role="tool", parts=(TextPart("orphan"),), id="t2"),  # a result with no call id
    user("hi", "u1"),
]


def test_the_cached_values_are_what_the_parts_say():
    for msg in MESSAGES:
        assert msg.tool_calls == _calls(msg) and msg.call_ids == _ids(msg)
        assert msg.tool_calls is msg.tool_calls and msg.call_ids is msg.call_ids  # worked out once


def test_equality_hash_and_repr_ignore_the_cache():
    for msg in MESSAGES:
        fresh = dataclasses.replace(msg)  # an equal message whose properties were never read
        before = repr(fresh), hash(fresh)
        assert msg.call_ids is not None and fresh == msg
        fresh.call_ids  # noqa: B018 - fill the cache of one side only
        assert fresh == msg and (repr(fresh), hash(fresh)) == before == (repr(msg), hash(msg))
        assert "call_ids" not in repr(msg) and "tool_calls" not in repr(msg)
        assert dataclasses.asdict(fresh) == dataclasses.asdict(msg)
        assert [f.name for f in dataclasses.fields(Message)].count("call_ids") == 0


def test_replace_works_the_values_out_again():
    msg = MESSAGES[0]
    assert msg.call_ids == ("c1", "c2")
    fewer = dataclasses.replace(msg, parts=msg.parts[:2])  # text + the first call
    assert fewer.call_ids == ("c1",) and fewer.tool_calls == msg.tool_calls[:1]
    renamed = dataclasses.replace(msg, parts=tuple(dataclasses.replace(p, id=p.id + "~1")
                                                   if isinstance(p, ToolCallPart) else p for p in msg.parts))
    assert renamed.call_ids == ("c1~1", "c2~1") and msg.call_ids == ("c1", "c2")
    answered = dataclasses.replace(MESSAGES[2], tool_call_id="c9")
    assert answered.call_ids == ("c9",) and MESSAGES[2].call_ids == ("c1",)
    assert dataclasses.replace(MESSAGES[2], role="user").call_ids == ()


def test_copies_and_pickles_stay_equal_and_consistent():
    for msg in MESSAGES:
        msg.call_ids  # noqa: B018 - cached before copying
        for twin in (copy.copy(msg), copy.deepcopy(msg), pickle.loads(pickle.dumps(msg))):
            assert twin == msg and hash(twin) == hash(msg) and repr(twin) == repr(msg)
            assert twin.call_ids == _ids(twin) and twin.tool_calls == _calls(twin)
    unread = dataclasses.replace(MESSAGES[0])
    assert pickle.loads(pickle.dumps(unread)).call_ids == ("c1", "c2")


def test_a_frozen_message_stays_frozen_and_has_no_dict():
    msg = MESSAGES[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        msg.role = "user"  # type: ignore[misc]
    # a name that is no field is refused too (Python 3.10-3.11 word it as a TypeError for a slotted frozen class)
    with pytest.raises((dataclasses.FrozenInstanceError, TypeError, AttributeError)):
        msg.stray = 1  # type: ignore[attr-defined]
    assert not hasattr(msg, "__dict__")  # ~900 bytes a message saved, 85,000 messages in a 200 MB file
    assert Message.call_ids.__doc__ and "found once" in Message.call_ids.__doc__  # help() still reads it


def test_where_is_made_once_and_follows_replace():
    from ctxlab.messages import SourceRef

    msg = user("hi", "u7", source=SourceRef("pi.jsonl", 40))
    assert msg.where() == "user message 'u7' (pi.jsonl:40)" and msg.where() is msg.where()  # made once
    assert user("hi", "u8").where() == "user message 'u8'"
    moved = dataclasses.replace(msg, id="u9", source=SourceRef("pi.jsonl", 41))
    assert moved.where() == "user message 'u9' (pi.jsonl:41)" and msg.where() == "user message 'u7' (pi.jsonl:40)"
    assert moved != msg and dataclasses.replace(moved, id="u7", source=msg.source) == msg  # not a field
    assert pickle.loads(pickle.dumps(msg)).where() == msg.where() and "_where" not in repr(msg)


def test_the_meter_counts_each_part_once_with_or_without_thinking_and_in_copies():
    from dataclasses import replace

    from ctxlab.messages import ThinkingPart
    from ctxlab.tables.profiles import profile_for
    from ctxlab.tokens import CharsPerTokenCounter, MessageMeter

    CLAUDE = profile_for("claude-sonnet-4-5")

    calls = []

    class Spy(CharsPerTokenCounter):
        def count(self, text):
            calls.append(text)
            return super().count(text)

    meter = MessageMeter(CLAUDE, Spy(4))
    m = Message(role="assistant", parts=(ThinkingPart("hmm " * 30), TextPart("ok " * 10)), id="a")
    both, without = meter.message(m, include_thinking=True), meter.message(m, include_thinking=False)
    assert both - without == CharsPerTokenCounter(4).count("hmm " * 30)
    assert calls.count("hmm " * 30) == 1 and calls.count("ok " * 10) == 1  # each part once, not once per setting
    copy = replace(m, id="a2")  # a wire rule's copy keeps the parts it does not change
    assert meter.message(copy) == both and meter.part(m.parts[1]) == CharsPerTokenCounter(4).count("ok " * 10)
    assert calls.count("hmm " * 30) == 1 and calls.count("ok " * 10) == 1
    assert meter.part(TextPart("ok " * 10)) == CharsPerTokenCounter(4).count("ok " * 10)  # a new equal part: again
    assert calls.count("ok " * 10) == 2
