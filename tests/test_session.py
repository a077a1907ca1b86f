"""Session files: append-only, branchable, never rewritten; and the JSON codec they use."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # until ctxlab is installed or a conftest puts the repo on the path
    sys.path.insert(0, str(ROOT))

from ctxlab.io import codec
from ctxlab.base.errors import SessionError, TranscriptError  # noqa: E402
from ctxlab.io.formats import ctxlab_session  # noqa: E402
from ctxlab.messages import (  # noqa: E402
    Conversation, Entry, ImagePart, Message, SourceRef, TextPart, ThinkingPart, ToolCallPart, ToolSpec,
    Transcript, Usage, assistant, tool_result, user,
)
from ctxlab.io.session import Session  # noqa: E402
from ctxlab.io.session_file import new_header  # noqa: E402

TOOLS = (ToolSpec("bash", "Run a shell command.", {"type": "object", "properties": {"cmd": {"type": "string"}},
                                                    "required": ["cmd"]}),)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def small_session(path: Path) -> Session:
    s = Session.create(path, system=("You are a coding agent.", "cwd: /repo"), tools=TOOLS,
                       model="claude-sonnet-4-5", provider="anthropic", title="t", created="2025-10-14T09:00:00Z")
    s.append(user("list the files 中文", "u1"))
    s.append(assistant("", "a1", calls=(("c1", "bash", {"cmd": "ls"}),), stop_reason="tool_use",
                       usage=Usage(uncached_input_tokens=3, cache_write_tokens=900, output_tokens=20)))
    s.append(tool_result("c1", "README.md\nsrc/", "t1", name="bash"))
    s.append(Entry("model_change", "e1", {"provider": "anthropic", "model": "claude-opus-4-5"}))
    s.append(assistant("Two entries.", "a2", stop_reason="stop"))
    return s


# ---- create / append / open ----------------------------------------------------------------------

def test_create_append_open_round_trip(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    s = small_session(f)
    again = Session.open(f)
    assert again.path() == s.path()
    assert [i.id for i in again.path()] == ["u1", "a1", "t1", "e1", "a2"]
    assert again.head == "a2" and again.leaves() == ["a2"]
    assert (again.id, again.system, again.tools, again.model, again.provider, again.title, again.created) == \
        ("s", ("You are a coding agent.", "cwd: /repo"), TOOLS, "claude-sonnet-4-5", "anthropic", "t",
         "2025-10-14T09:00:00Z")
    conv = again.conversation()
    assert isinstance(conv, Conversation)
    assert conv.items == again.path() and conv.system == again.system and conv.tools == TOOLS
    assert conv.title == "t" and conv.model == "claude-sonnet-4-5" and conv.notes == ()
    assert again.warnings == []
    lines = f.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["type"] == "session" and json.loads(lines[0])["version"] == 1
    assert [json.loads(x)["parent"] for x in lines[1:]] == [None, "u1", "a1", "t1", "e1"]
    assert "中文" in lines[1]  # ensure_ascii=False


def test_create_refuses_existing_file(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    f.write_text("precious\n")
    with pytest.raises(SessionError, match="already exists"):
        Session.create(f)
    assert f.read_text() == "precious\n"


def test_fork_gives_two_leaves_and_two_paths(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    s = small_session(f)
    s.fork("t1")
    s.append(assistant("other answer", "b2"))
    assert s.leaves() == ["a2", "b2"]
    for session in (s, Session.open(f)):
        assert [i.id for i in session.path("a2")] == ["u1", "a1", "t1", "e1", "a2"]
        assert [i.id for i in session.path("b2")] == ["u1", "a1", "t1", "b2"]
        assert session.children("t1") == ("e1", "b2")
    reopened = Session.open(f)
    assert reopened.head == "b2"
    assert "other leaves: 'a2'" in reopened.conversation().notes[0]
    # explicit parent, without fork
    s.append(user("again", "u9"), parent="u1")
    assert s.leaves() == ["a2", "b2", "u9"] and s.parent("u9") == "u1"


def test_reading_never_changes_the_file(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    small_session(f)
    before = sha(f)
    s = Session.open(f)
    s.path(), s.conversation(), s.leaves(), s.fork("a1"), s.path("a1")
    ctxlab_session.read(f)
    assert sha(f) == before


def test_append_adds_exactly_one_line_and_keeps_the_prefix(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    small_session(f)
    before = f.read_bytes()
    s = Session.open(f)
    s.append(user("one more", "u2"))
    after = f.read_bytes()
    assert after.startswith(before)
    added = after[len(before):]
    assert added.count(b"\n") == 1 and added.endswith(b"\n")
    assert json.loads(added)["id"] == "u2" and json.loads(added)["parent"] == "a2"


def test_duplicate_id_refused(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    s = small_session(f)
    before = f.read_bytes()
    with pytest.raises(SessionError, match="'a1'"):
        s.append(user("dup", "a1"))
    assert f.read_bytes() == before


def test_unknown_parent_and_empty_id(tmp_path: Path) -> None:
    s = Session.in_memory()
    with pytest.raises(SessionError, match="nope"):
        s.append(user("x", "u1"), parent="nope")
    assert s.append(user("x", "")) == "i1"
    assert s.append(user("y", "")) == "i2"


def test_in_memory_writes_nothing_and_matches_file(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    on_disk = small_session(f)
    mem = Session.in_memory(system=on_disk.system, tools=TOOLS)
    for item in on_disk.path():
        mem.append(item)
    assert mem.path() == on_disk.path() and mem.file is None
    assert list(tmp_path.iterdir()) == [f]


def test_import_transcript(tmp_path: Path) -> None:
    items = (user("hi", "u1"), assistant("hello", "a1"))
    conv = Conversation(id="c1", items=items, system=("sys",), tools=TOOLS, title="T", model="m", provider="p")
    transcript = Transcript(format="test", file="x.json", conversations=(conv,))
    s = Session.import_transcript(transcript, tmp_path / "imp.jsonl")
    back = Session.open(tmp_path / "imp.jsonl").conversation()
    assert back.items == items and back.system == ("sys",) and back.tools == TOOLS
    assert (back.id, back.title, back.model, back.provider) == ("c1", "T", "m", "p")
    assert Session.import_transcript(transcript, None).path() == s.path()


# ---- damaged files -------------------------------------------------------------------------------

def test_torn_last_line_is_reported_skipped_and_appending_still_works(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    small_session(f)
    good = f.read_bytes()
    torn = b'{"type":"message","id":"a3","parent":"a2","role":"assi'
    f.write_bytes(good + torn)  # the writer died mid-line

    s = Session.open(f)
    assert s.head == "a2" and "a3" not in s
    assert len(s.warnings) == 1 and "s.jsonl:7" in s.warnings[0] and "torn" in s.warnings[0]

    # Decision: the torn bytes stay untouched; the append ends that line, writes a marker naming
    # it, then the record, so later opens know the bad line is a known torn write.
    s.append(assistant("after the crash", "a4"))
    after = f.read_bytes()
    assert after.startswith(good + torn)
    tail = after[len(good + torn):].decode()
    assert tail.startswith("\n")
    marker, record = tail[1:].splitlines()
    assert json.loads(marker) == {"type": "torn", "line": 7}
    assert json.loads(record)["id"] == "a4" and json.loads(record)["parent"] == "a2"

    again = Session.open(f)
    assert [i.id for i in again.path()][-2:] == ["a2", "a4"]
    assert len(again.warnings) == 1 and "s.jsonl:7" in again.warnings[0]
    again.append(user("and on", "u5"))  # a normal append again: one line
    assert Session.open(f).head == "u5"


def test_valid_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    small_session(f)
    f.write_bytes(f.read_bytes().rstrip(b"\n"))
    s = Session.open(f)
    assert s.head == "a2" and s.warnings == []
    s.append(user("next", "u2"))
    assert [i.id for i in Session.open(f).path()][-2:] == ["a2", "u2"]


def test_bad_middle_line_names_its_line(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    small_session(f)
    lines = f.read_bytes().split(b"\n")
    lines[3] = lines[3][:20]  # line 4 cut short, in the middle of the file
    f.write_bytes(b"\n".join(lines))
    with pytest.raises(SessionError, match=r"s\.jsonl:4: not valid JSON"):
        Session.open(f)
    with pytest.raises(TranscriptError) as info:
        ctxlab_session.read(f)
    assert info.value.line == 4
    lenient = ctxlab_session.read(f, strict=False)  # salvage: skip line 4 (t1), re-attach its child
    assert any("s.jsonl:4" in n for n in lenient.notes)
    assert [i.id for i in lenient.conversation().items] == ["u1", "a1", "e1", "a2"]


def test_dangling_parent_raises(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    small_session(f)
    with open(f, "ab") as out:
        out.write(codec.dumps({"type": "message", "id": "x1", "parent": "ghost", "role": "user",
                               "parts": [{"type": "text", "text": "?"}]}).encode() + b"\n")
    with pytest.raises(SessionError, match=r"s\.jsonl:7: parent 'ghost' points nowhere"):
        Session.open(f)


def test_cycle_raises(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    header = new_header("c", (), (), None, None, None, None)
    rec = lambda i, p: {"type": "message", "id": i, "parent": p, "role": "user",  # noqa: E731
                        "parts": [{"type": "text", "text": i}]}
    f.write_text("\n".join(codec.dumps(x) for x in (header, rec("a", "b"), rec("b", "a"))) + "\n")
    with pytest.raises(SessionError, match=r"s\.jsonl:2: parent 'b' is at line 3"):
        Session.open(f)


@pytest.mark.parametrize("content, problem", [
    (b"", "empty"),
    (b'{"type":"message"}\n', "session header"),
    (b'{"type":"session","version":2,"id":"x"}\n', "version 2"),
])
def test_bad_header(tmp_path: Path, content: bytes, problem: str) -> None:
    f = tmp_path / "s.jsonl"
    f.write_bytes(content)
    with pytest.raises(SessionError, match=problem):
        Session.open(f)


def test_append_refuses_a_file_changed_behind_its_back(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    s = small_session(f)
    other = Session.open(f)
    other.append(user("from elsewhere", "u7"))
    with pytest.raises(SessionError, match="changed on disk"):
        s.append(user("stale", "u8"))


# ---- the reader ----------------------------------------------------------------------------------

def test_reader_sniff_and_read(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    s = small_session(f)
    s.fork("t1")
    s.append(assistant("branch", "b2"))
    text = f.read_text(encoding="utf-8")
    assert ctxlab_session.NAME == "ctxlab-session"
    assert ctxlab_session.sniff(f, text[:4096])
    assert ctxlab_session.sniff(f, text[:30])  # header longer than head: reads the line itself
    pi_like = tmp_path / "pi.jsonl"
    pi_like.write_text('{"type":"session","version":3,"id":"x","cwd":"/w"}\n')
    assert not ctxlab_session.sniff(pi_like, pi_like.read_text())
    assert not ctxlab_session.sniff(f, "not json\n")
    t = ctxlab_session.read(f)
    assert t.format == "ctxlab-session" and t.file == "s.jsonl" and len(t.conversations) == 1
    assert [i.id for i in t.conversation().items] == ["u1", "a1", "t1", "b2"]
    assert "'a2'" in t.conversation().notes[0]


# ---- the codec: exact round trips (property test) ------------------------------------------------

json_scalars = st.none() | st.booleans() | st.integers(-10**12, 10**12) | \
    st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)
opt_text = st.none() | st.text(max_size=20)
parts = st.one_of(
    st.builds(TextPart, st.text(max_size=50)),
    st.builds(ThinkingPart, st.text(max_size=50), opt_text, st.booleans()),
    st.builds(ToolCallPart, st.text(min_size=1, max_size=10), st.text(min_size=1, max_size=10), st.text(max_size=40)),
    st.builds(ImagePart, st.sampled_from(["image/png", "image/jpeg"]), st.none() | st.integers(1, 4000),
              st.none() | st.integers(1, 4000), st.integers(0, 10**7)),
)
tokens = st.integers(0, 10**7)
usages = st.builds(Usage, tokens, tokens, tokens, tokens, tokens,
                   st.none() | st.dictionaries(st.sampled_from(["input", "output", "cache_read", "total"]),
                                               st.floats(0, 100, allow_nan=False)),
                   st.dictionaries(st.text(max_size=10), json_values, max_size=3))
sources = st.none() | st.builds(SourceRef, st.text(min_size=1, max_size=12), st.integers(1, 10**6))
messages = st.builds(
    Message, role=st.sampled_from(["user", "assistant", "tool"]), parts=st.tuples(parts, parts) | st.tuples(parts),
    id=st.text(min_size=1, max_size=12), tool_call_id=opt_text, tool_name=opt_text, is_error=st.booleans(),
    name=opt_text, response_id=opt_text, timestamp=opt_text, model=opt_text, provider=opt_text,
    stop_reason=st.none() | st.sampled_from(["stop", "tool_use", "length", "aborted", "error"]),
    thread=st.sampled_from(["main", "sub-1"]), origin=st.none() | st.sampled_from(["system", "meta", "synthetic"]),
    source=sources, usage=st.none() | usages,
)
entries = st.builds(Entry, kind=st.sampled_from(["compaction", "model_change", "thinking_level_change", "title",
                                                 "paged_result", "note", "tool_choice_change"]),
                    id=st.text(min_size=1, max_size=12),
                    data=st.dictionaries(st.text(max_size=8), json_values, max_size=4),
                    timestamp=opt_text, thread=st.sampled_from(["main", "t2"]), source=sources)
specs = st.builds(ToolSpec, st.text(min_size=1, max_size=12), st.text(max_size=30),
                  st.dictionaries(st.text(max_size=8), json_values, max_size=3))


def through_json(d: dict) -> dict:
    return json.loads(codec.dumps(d))


@settings(max_examples=200, deadline=None)
@given(messages)
def test_message_round_trip(m: Message) -> None:
    back = codec.message_from_dict(through_json(codec.message_to_dict(m)))
    assert back == m
    assert (back.usage.raw if back.usage else None) == (m.usage.raw if m.usage else None)


@settings(max_examples=100, deadline=None)
@given(entries)
def test_entry_round_trip(e: Entry) -> None:
    assert codec.entry_from_dict(through_json(codec.entry_to_dict(e))) == e
    assert codec.item_from_dict(through_json(codec.item_to_dict(e))) == e


@settings(max_examples=100, deadline=None)
@given(messages, st.sampled_from(["paged_result", "pruned_result"]))
def test_a_replacement_is_a_message_in_memory_and_its_dict_in_a_file(m: Message, kind: str) -> None:
    """The codec alone converts a replaced result's Message: the file holds exactly message_to_dict's form."""
    e = Entry(kind, "r1", {"message_id": m.id, "replacement": m, "reason": "x"})
    d = codec.entry_to_dict(e)
    assert d["data"] == {"message_id": m.id, "replacement": codec.message_to_dict(m), "reason": "x"}
    assert e.data["replacement"] is m  # writing leaves the entry as it was
    back = codec.item_from_dict(through_json(codec.item_to_dict(e)))
    assert back == e and isinstance(back.data["replacement"], Message)


def test_a_replacement_that_is_not_a_message_object_is_refused() -> None:
    with pytest.raises(ValueError, match="'replacement' must be a message object"):
        codec.entry_from_dict({"kind": "paged_result", "id": "p", "data": {"message_id": "t", "replacement": "x"}})


@settings(max_examples=100, deadline=None)
@given(specs, usages, parts)
def test_toolspec_usage_part_round_trip(spec: ToolSpec, usage: Usage, part) -> None:
    assert codec.toolspec_from_dict(through_json(codec.toolspec_to_dict(spec))) == spec
    assert codec.usage_from_dict(through_json(codec.usage_to_dict(usage))) == usage
    assert codec.part_from_dict(through_json(codec.part_to_dict(part))) == part


@settings(max_examples=50, deadline=None)
@given(st.lists(messages, min_size=1, max_size=5, unique_by=lambda m: m.id))
def test_session_file_round_trip(tmp_path_factory, ms: list[Message]) -> None:
    f = tmp_path_factory.mktemp("prop") / "s.jsonl"
    s = Session.create(f)
    for m in ms:
        s.append(m)
    assert Session.open(f).path() == tuple(ms)


def test_codec_refuses_unknown_keys() -> None:
    with pytest.raises(ValueError, match="unknown key 'rol'"):
        codec.message_from_dict({"role": "user", "id": "u", "parts": [], "rol": "x"})
    with pytest.raises(ValueError, match="unknown type"):
        codec.part_from_dict({"type": "video"})
