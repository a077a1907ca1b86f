"""AgentLoop refuses, before writing, what would break every later request (issue 12, item 5).

The session is append-only: a tool result for no open call, or a call id that is still open, would stay in
it for good and make every ``next_request()`` raise. Each refusal leaves the session as it was (same length;
for a file, the same bytes) and the loop still builds the next request.
"""

from __future__ import annotations

import pytest

from ctxlab.base.errors import CtxlabError, OrphanError
from ctxlab.interactions import STUB_TEXT, find_orphans
from ctxlab.io.session import Session
from ctxlab.loop import AgentLoop
from ctxlab.messages import ToolSpec, user

TOOLS = (ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}}),)
MODEL = "claude-sonnet-4-5"


def new_loop(session: Session | None = None) -> AgentLoop:
    if session is None:  # (an empty Session is falsy: it has no items)
        session = Session.in_memory(system=["You are a coding agent."], tools=TOOLS, model=MODEL)
    loop = AgentLoop(session, "budgeted", model=MODEL)
    loop.add_user("Read a.py.")
    return loop


def call(cid: str, path: str = "a.py") -> tuple[str, str, dict]:
    return (cid, "read_file", {"path": path})


def refused(loop: AgentLoop, error: type[Exception], attempt, *names: str) -> str:
    """Run ``attempt``; it must raise ``error`` naming each of ``names``, append nothing, and leave the loop
    able to build its next request. Returns the message."""
    before = len(loop.session)
    with pytest.raises(error) as info:
        attempt()
    message = str(info.value)
    assert "\n" not in message
    for name in names:
        assert repr(name) in message, message
    assert len(loop.session) == before
    loop.next_request()  # the record is still sendable
    return message


def test_a_result_for_an_unknown_id_is_refused():
    loop = new_loop()
    loop.record_response(tool_calls=[call("c1"), call("c2", "b.py")])
    message = refused(loop, OrphanError, lambda: loop.add_tool_result("x", "contents"), "x", "c1", "c2")
    assert "no open tool call" in message and "record_response(tool_calls=" in message
    loop.add_tool_result("c1", "contents of a.py")  # the open calls still take their results
    loop.add_tool_result("c2", "contents of b.py")
    assert find_orphans(loop.next_request().context.messages) == []


def test_a_result_with_no_call_at_all_is_refused():
    loop = new_loop()
    message = refused(loop, OrphanError, lambda: loop.add_tool_result("call_0", "contents"), "call_0")
    assert "open: none" in message


def test_a_second_result_for_an_answered_call_is_refused():
    loop = new_loop()
    loop.record_response(tool_calls=[call("c1")])
    first = loop.add_tool_result("c1", "contents of a.py")
    message = refused(loop, OrphanError, lambda: loop.add_tool_result("c1", "again"), "c1", first.id)
    assert "already answered" in message


def test_a_response_reusing_an_open_id_is_refused():
    loop = new_loop()
    made = loop.record_response(tool_calls=[call("call_0")])
    message = refused(loop, OrphanError, lambda: loop.record_response(tool_calls=[call("call_0", "b.py")]),
                      "call_0", made.id)
    assert "still open" in message and "add_tool_result('call_0'" in message
    loop.add_tool_result("call_0", "contents of a.py")
    assert find_orphans(loop.next_request().context.messages) == []


def test_one_response_with_the_same_id_twice_is_refused():
    loop = new_loop()
    message = refused(loop, OrphanError,
                      lambda: loop.record_response("Reading both.", [call("c1"), call("c1", "b.py")]), "c1")
    assert "twice" in message


def test_a_result_after_an_interrupting_user_message_is_refused():
    loop = new_loop()
    loop.record_response(tool_calls=[call("c1")])
    stop = loop.add_user("Stop, read b.py instead.")
    message = refused(loop, OrphanError, lambda: loop.add_tool_result("c1", "contents of a.py"), "c1", stop.id)
    assert "interrupted" in message and "stubs" in message
    context = loop.next_request().context
    assert [m.text for m in context.messages if m.role == "tool"] == [STUB_TEXT]
    assert find_orphans(context.messages) == []


def test_a_system_reminder_does_not_interrupt_a_call():
    loop = new_loop()
    loop.record_response(tool_calls=[call("c1")])
    loop.session.append(user("<reminder>Stay read-only.</reminder>", "reminder", origin="system"))
    loop.add_tool_result("c1", "contents of a.py")  # the reminder rides along in the open round
    loop.next_request()


def test_an_id_reused_after_its_call_was_answered_is_accepted():
    """tau-bench and SWE-agent reuse ids once the earlier call is answered (find_orphans allows it)."""
    loop = new_loop()
    for step in range(3):
        loop.record_response(tool_calls=[call("call_0", f"m{step}.py")])
        loop.add_tool_result("call_0", f"contents of m{step}.py")
    assert find_orphans(loop.session.conversation().messages) == []
    assert find_orphans(loop.next_request().context.messages) == []


def test_an_id_reused_after_an_interrupted_call_is_accepted():
    loop = new_loop()
    loop.record_response(tool_calls=[call("c1")])
    loop.add_user("Read b.py instead.")
    loop.record_response(tool_calls=[call("c1", "b.py")])  # the old call is stubbed; the id is free again
    loop.add_tool_result("c1", "contents of b.py")
    context = loop.next_request().context
    assert find_orphans(context.messages) == []
    assert [m.text for m in context.messages if m.role == "tool"] == [STUB_TEXT, "contents of b.py"]


def test_a_malformed_tool_call_is_refused_with_a_ctxlab_error():
    loop = new_loop()
    refused(loop, CtxlabError, lambda: loop.record_response(tool_calls=[("c1", "read_file")]))
    refused(loop, CtxlabError, lambda: loop.record_response(tool_calls=[("", "read_file", {})]))
    refused(loop, CtxlabError, lambda: loop.record_response(tool_calls=[("c1", "read_file", {1, 2})]), "c1")


def test_arguments_that_are_not_an_object_are_recorded_as_given():
    """The model said it: not refused (Anthropic needs an object; the renderer deals with that)."""
    loop = new_loop()
    msg = loop.record_response(tool_calls=[("c1", "read_file", ["a.py"]), ("c2", "read_file", '["b.py"]')])
    assert [c.arguments for c in msg.tool_calls] == ['["a.py"]', '["b.py"]']
    loop.add_tool_result("c1", "contents of a.py")
    loop.add_tool_result("c2", "contents of b.py")
    loop.next_request()


def test_a_refusal_leaves_the_session_file_byte_for_byte(tmp_path):
    path = tmp_path / "run.jsonl"
    loop = new_loop(Session.create(path, system=["You are a coding agent."], tools=TOOLS, model=MODEL))
    loop.record_response(tool_calls=[call("c1")])
    loop.add_tool_result("c1", "contents of a.py")
    before = path.read_bytes()
    refused(loop, OrphanError, lambda: loop.add_tool_result("c1", "again"), "c1")
    refused(loop, OrphanError, lambda: loop.add_tool_result("x", "contents"), "x")
    refused(loop, OrphanError, lambda: loop.record_response(tool_calls=[call("c2"), call("c2")]), "c2")
    assert path.read_bytes() == before
    reopened = Session.open(path)
    assert len(reopened) == len(loop.session)
    AgentLoop(reopened, "budgeted", model=MODEL).next_request()
