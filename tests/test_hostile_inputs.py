"""Hostile and broken input: one test per kind of damage, each checking what the user reads.

Every test builds its files in ``tmp_path`` (nothing committed) with the small builders below and
checks, for each format where the damage can happen (ctxlab session, pi, Claude Code, OpenAI chat):

* strict mode: the error's text names the file, the line, the field where there is one, and what
  to do (the hint);
* lenient mode (``load(path, strict=False)``): the bad line is listed with its reason in the
  transcript's notes and every good line is kept;
* reading never changes the file.

Where a format's reader keeps everything in line order and loses nothing (Claude Code's tree
links), the damage is a note rather than an error; the test says so.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Sequence

import pytest

from ctxlab.cli.main import main
from ctxlab.base.errors import SessionError, TranscriptError
from ctxlab.context import build_context
from ctxlab.io.formats import load
from ctxlab.interactions import group_units
from ctxlab.messages import Transcript
from ctxlab.io.session import Session

STRICT_HINT = "load with strict=False"
SESSION_HINT = "salvage the rest with ctxlab.io.formats.load(path, strict=False)"

# ---- builders: the smallest valid line of each format, to damage one field at a time -------------

PI_HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2025-02-01T09:00:00.000Z", "cwd": "/w"}
SESSION_HEADER = {"type": "session", "version": 1, "id": "s1", "system": [], "tools": []}


def pi(id: str | None, parent: str | None, role: str = "user", content: Any = "hi", **message: Any) -> dict:
    """A pi v3 message entry."""
    line = {"type": "message", "id": id, "parentId": parent, "message": {"role": role, "content": content, **message}}
    return {k: v for k, v in line.items() if not (k == "id" and v is None)}


def cc(uuid: str | None, parent: str | None, kind: str = "user", content: Any = "hi", **message: Any) -> dict:
    """A Claude Code line (``kind`` is the line's ``type``: user, assistant, ...)."""
    line = {"parentUuid": parent, "isSidechain": False, "sessionId": "sess-1", "type": kind,
            "message": {"role": kind, "content": content, **message}, "uuid": uuid,
            "timestamp": "2025-03-01T08:00:00.000Z"}
    return {k: v for k, v in line.items() if not (k == "uuid" and v is None)}


def rec(id: str | None, parent: str | None, role: str = "user", text: Any = "hi", **fields: Any) -> dict:
    """A ctxlab session record (a message)."""
    line = {"type": "message", "id": id, "parent": parent, "role": role, "parts": [{"type": "text", "text": text}],
            **fields}
    return {k: v for k, v in line.items() if not (k == "id" and v is None)}


def jsonl(path: Path, lines: Sequence[dict | str | bytes], *, newline_at_end: bool = True) -> Path:
    """One JSON object (or raw text/bytes, for damage) per line."""
    raw = [x if isinstance(x, bytes) else (x if isinstance(x, str) else json.dumps(x)).encode("utf-8") for x in lines]
    path.write_bytes(b"\n".join(raw) + (b"\n" if newline_at_end else b""))
    return path


def chat(path: Path, messages: Sequence[dict | str]) -> Path:
    """An OpenAI chat list, message i on line i + 2 (line 1 is the ``[``)."""
    path.write_text("[\n" + ",\n".join(m if isinstance(m, str) else json.dumps(m) for m in messages) + "\n]\n",
                    encoding="utf-8")
    return path


# ---- what the user reads -----------------------------------------------------------------------

def strict_error(path: Path, line: int | None, *says: str, field: str | None = None,
                 hint: str = STRICT_HINT) -> TranscriptError:
    """``load(path)`` raises a TranscriptError naming file, line and field, saying ``says`` and the hint."""
    before = path.read_bytes() if path.is_file() else None
    with pytest.raises(TranscriptError) as info:
        load(path)
    err, text = info.value, str(info.value)
    where = f"{path.name}:{line}: " if line is not None else f"{path.name}: "
    assert text.startswith(where), text
    assert (err.file, err.line) == (path.name, line)
    if field is not None:
        assert err.field is not None and err.field.startswith(field) and f"field {err.field!r}" in text, text
    for phrase in says:
        assert phrase in text, text
    assert hint in text, text
    assert before is None or path.read_bytes() == before
    return err


def session_error(path: Path, line: int, *says: str) -> None:
    """``Session.open(path)`` raises a SessionError naming file and line, saying ``says`` and what to do."""
    before = path.read_bytes()
    with pytest.raises(SessionError) as info:
        Session.open(path)
    text = str(info.value)
    assert text.startswith(f"{path.name}:{line}: "), text
    assert all(phrase in text for phrase in says), text
    assert SESSION_HINT in text, text
    assert path.read_bytes() == before  # opening never rewrites


def lenient(path: Path, skipped: dict[int, str], kept: list[str]) -> Transcript:
    """``load(path, strict=False)`` lists each skipped line with its reason and keeps every good item."""
    before = path.read_bytes()
    transcript = load(path, strict=False)
    for line, reason in skipped.items():
        said = [n for n in transcript.notes
                if n.startswith(f"skipped line {line}: ") or (n.startswith(f"{path.name}:{line}: ") and "skipped" in n)]
        assert len(said) == 1 and reason in said[0], (line, reason, transcript.notes)
    assert len(transcript.notes) >= len(skipped)
    assert [item.id for item in transcript.conversation().items] == kept
    assert path.read_bytes() == before
    return transcript


def cli_one_line(capsys: pytest.CaptureFixture[str], path: Path, *says: str) -> str:
    """``ctxlab inspect PATH``: exit 2, nothing on stdout, one line on stderr, no traceback."""
    code = main(["inspect", str(path)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"ctxlab inspect: error: {path.name}"), err
    assert "Traceback" not in err and "unexpected" not in err
    assert all(phrase in err for phrase in says), err
    return err


# ---- one test per kind of damage -----------------------------------------------------------------

def test_truncated_last_line(tmp_path: Path) -> None:
    # pi and Claude Code: the writer died mid-line. Strict names the line; lenient keeps the rest.
    p = tmp_path / "pi.jsonl"
    p.write_bytes(jsonl(p, [PI_HEADER, pi("a", None)]).read_bytes() + json.dumps(pi("b", "a")).encode()[:-12])
    strict_error(p, 3, "not valid JSON", "Unterminated string")
    lenient(p, {3: "not valid JSON"}, kept=["a"])

    c = tmp_path / "cc.jsonl"
    c.write_bytes(jsonl(c, [cc("u1", None)]).read_bytes() + json.dumps(cc("u2", "u1")).encode()[:-5])
    strict_error(c, 2, "not valid JSON")
    lenient(c, {2: "not valid JSON"}, kept=["u1"])

    # A ctxlab session: a torn last line is expected after a crash, so even Session.open reads on,
    # reporting it; the next append leaves the torn bytes alone (tests/test_crash_safety.py).
    s = tmp_path / "s.jsonl"
    s.write_bytes(jsonl(s, [SESSION_HEADER, rec("a", None)]).read_bytes() + json.dumps(rec("b", "a")).encode()[:-3])
    before = s.read_bytes()
    session = Session.open(s)
    assert session.head == "a" and s.read_bytes() == before
    assert session.warnings == ["s.jsonl:3: torn last line (no newline, not valid JSON) skipped"]
    assert load(s).notes == ("s.jsonl:3: torn last line (no newline, not valid JSON) skipped",)

    # A whole-file JSON transcript cut short cannot be salvaged: the error says where it ends.
    o = chat(tmp_path / "chat.json", [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}])
    o.write_bytes(o.read_bytes()[:-12])
    strict_error(o, 3, "not valid JSON", hint="The file may be truncated")
    with pytest.raises(TranscriptError, match="chat.json:3: not valid JSON"):
        load(o, strict=False)


def test_a_line_that_is_not_json(tmp_path: Path) -> None:
    p = jsonl(tmp_path / "pi.jsonl", [PI_HEADER, pi("a", None), "hello, this is not JSON", pi("b", "a")])
    strict_error(p, 3, "not valid JSON (Expecting value at column 1)")
    lenient(p, {3: "not valid JSON"}, kept=["a", "b"])

    c = jsonl(tmp_path / "cc.jsonl", [cc("u1", None), "[1, 2, 3]", cc("u2", "u1")])
    strict_error(c, 2, "expected a JSON object, got list")
    lenient(c, {2: "expected a JSON object"}, kept=["u1", "u2"])

    s = jsonl(tmp_path / "s.jsonl", [SESSION_HEADER, rec("a", None), "hello", rec("b", "a")])
    session_error(s, 3, "not valid JSON")
    lenient(s, {3: "not valid JSON"}, kept=["a", "b"])


def test_wrong_types(tmp_path: Path) -> None:
    p = jsonl(tmp_path / "pi.jsonl", [PI_HEADER, pi("a", None), pi("b", "a", content=5), pi("c", "b")])
    strict_error(p, 3, "got 5", field="message.content")
    lenient(p, {3: "got 5"}, kept=["a", "c"])  # the tree is walked first, so c still hangs below a

    c = jsonl(tmp_path / "cc.jsonl", [cc("u1", None), cc("a1", "u1", "assistant", content="not a list of blocks")])
    strict_error(c, 2, "a valid list", field="message.content")
    lenient(c, {2: "a valid list"}, kept=["u1"])

    o = chat(tmp_path / "chat.json", [{"role": "user", "content": "hi"}, {"role": "user", "content": 7},
                                      {"role": "assistant", "content": "yo"}])
    strict_error(o, 3, "got 7", field="messages[1].content")
    lenient(o, {3: "got 7"}, kept=["chat:0", "chat:2"])

    s = jsonl(tmp_path / "s.jsonl", [SESSION_HEADER, rec("a", None), rec("b", "a", text=5),
                                     rec("c", "a", "assistant", usage={"output_tokens": "many"})])
    session_error(s, 3, "text part: 'text' must be a string, got int")
    lenient(s, {3: "'text' must be a string", 4: "'output_tokens': a token count must be an integer"}, kept=["a"])


def test_missing_id(tmp_path: Path) -> None:
    p = jsonl(tmp_path / "pi.jsonl", [PI_HEADER, pi("a", None), pi(None, "a"), pi("c", "a")])
    strict_error(p, 3, "needs a non-empty string id", field="id")
    lenient(p, {3: "needs a non-empty string id"}, kept=["a", "c"])

    c = jsonl(tmp_path / "cc.jsonl", [cc("u1", None), cc(None, "u1"), cc("u3", "u1")])
    strict_error(c, 2, "field required", field="uuid")
    lenient(c, {2: "field required"}, kept=["u1", "u3"])

    o = chat(tmp_path / "chat.json", [{"role": "user", "content": "hi"}, {"role": "tool", "content": "result"},
                                      {"role": "assistant", "content": "yo"}])
    strict_error(o, 3, "a tool message must name the call it answers", field="messages[1].tool_call_id")
    lenient(o, {3: "must name the call"}, kept=["chat:0", "chat:2"])

    s = jsonl(tmp_path / "s.jsonl", [SESSION_HEADER, rec("a", None), rec(None, "a"), rec("c", "a")])
    session_error(s, 3, "missing key 'id'")
    lenient(s, {3: "missing key 'id'"}, kept=["a", "c"])


def test_duplicate_ids(tmp_path: Path) -> None:
    p = jsonl(tmp_path / "pi.jsonl", [PI_HEADER, pi("a", None), pi("b", "a"), pi("a", "b", content="again")])
    strict_error(p, 4, "duplicate id 'a' (first at line 2)", field="id")
    lenient(p, {4: "duplicate id 'a'"}, kept=["a", "b"])

    s = jsonl(tmp_path / "s.jsonl", [SESSION_HEADER, rec("a", None), rec("b", "a"), rec("a", "b")])
    session_error(s, 4, "duplicate id 'a' (first at line 2)")
    lenient(s, {4: "duplicate id 'a'"}, kept=["a", "b"])

    # Claude Code is read in line order and never walks its tree: both lines are kept, and said.
    c = jsonl(tmp_path / "cc.jsonl", [cc("u1", None), cc("u1", "u1", content="again")])
    conv = load(c).conversation()
    assert [m.text for m in conv.messages] == ["hi", "again"]
    assert "repeated uuids, kept in line order: line 2 repeats uuid 'u1' of line 1" in conv.notes

    # OpenAI chat: one call id used by two calls is kept as recorded, and said.
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    o = chat(tmp_path / "chat.json", [{"role": "user", "content": "hi"},
                                      {"role": "assistant", "content": None, "tool_calls": [call]},
                                      {"role": "tool", "tool_call_id": "c1", "content": "1"},
                                      {"role": "assistant", "content": None, "tool_calls": [call]},
                                      {"role": "tool", "tool_call_id": "c1", "content": "2"}])
    assert any("tool call ids reused by several calls, kept as recorded: 'c1' x2" in n
               for n in load(o).conversation().notes)


def test_tool_result_before_its_call(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Readers keep the order as recorded; inspect names both orphans with their source lines, and grouping
    # sets the early result aside (issue 12: it never stops a replay) while the call gets its stub.
    call = [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "x"}}]
    p = jsonl(tmp_path / "pi.jsonl", [PI_HEADER, pi("u", None), pi("r", "u", "toolResult", "text", toolCallId="c1"),
                                      pi("a", "r", "assistant", call)])
    conv = load(p).conversation()
    assert [m.id for m in conv.messages] == ["u", "r", "a"]
    units = group_units(conv.messages)
    assert [[m.id for m in u.messages] for u in units] == [["u"], ["a", "stub:c1"]]
    assert main(["inspect", str(p)]) == 0
    out = capsys.readouterr().out
    assert "result_without_call: call 'c1' in message 'r' (thread main, pi.jsonl:3)" in out
    assert "call_without_result: call 'c1' in message 'a' (thread main, pi.jsonl:4)" in out


def test_result_for_an_unknown_call(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    o = chat(tmp_path / "chat.json", [{"role": "user", "content": "hi"},
                                      {"role": "tool", "tool_call_id": "ghost", "content": "nobody asked"},
                                      {"role": "assistant", "content": "yo"}])
    conv = load(o).conversation()
    assert [[m.id for m in u.messages] for u in group_units(conv.messages)] == [["chat:0"], ["chat:2"]]
    ctx = build_context(conv)
    assert any("tool result in tool message 'chat:1' (chat.json:3) answers no call" in n
               for n in ctx.notes), ctx.notes
    c = jsonl(tmp_path / "cc.jsonl", [cc("u1", None), cc("u2", "u1", content=[
        {"type": "tool_result", "tool_use_id": "toolu_ghost", "content": "nobody asked"}])])
    assert main(["inspect", str(c)]) == 0
    out = capsys.readouterr().out
    assert "result_without_call: call 'toolu_ghost' in message 'u2' (thread main, cc.jsonl:2)" in out
    assert "cannot be grouped" not in out  # the result is set aside, and the line above names it


def test_unknown_role(tmp_path: Path) -> None:
    p = jsonl(tmp_path / "pi.jsonl", [PI_HEADER, pi("a", None), pi("b", "a", role="robot")])
    strict_error(p, 3, "unknown role 'robot'", field="message.role")
    lenient(p, {3: "unknown role 'robot'"}, kept=["a"])

    o = chat(tmp_path / "chat.json", [{"role": "user", "content": "hi"}, {"role": "robot", "content": "beep"}])
    strict_error(o, 3, "got 'robot'", field="messages[1].role")
    lenient(o, {3: "got 'robot'"}, kept=["chat:0"])

    s = jsonl(tmp_path / "s.jsonl", [SESSION_HEADER, rec("a", None), rec("b", "a", role="robot")])
    session_error(s, 3, "unknown role 'robot' (expected user, assistant or tool)")
    lenient(s, {3: "unknown role 'robot'"}, kept=["a"])

    # Claude Code writes dozens of UI line types: one it does not know is left out, counted in the notes
    # with its first line; but a line that holds a message under an unknown type is an error, not a drop.
    c = jsonl(tmp_path / "cc.jsonl", [cc("u1", None), cc("r1", "u1", kind="robot")])
    strict_error(c, 2, "unknown line type 'robot' on a line that holds a message", field="type")
    lenient(c, {2: "unknown line type 'robot'"}, kept=["u1"])
    ui = cc("r2", "u1", kind="robot")
    del ui["message"]
    c2 = jsonl(tmp_path / "cc2.jsonl", [cc("u1", None), ui])
    assert "left out 1 'robot' line(s) (first at line 2): UI records, not sent to the model" in load(c2).conversation().notes


def test_a_line_without_a_type(tmp_path: Path) -> None:
    # the record type decides what a line is: missing, null or a number is a damaged line, never a silent drop
    for bad_type in (None, 7):
        line = pi("b", "a")
        line["type"] = bad_type
        p = jsonl(tmp_path / "pi.jsonl", [PI_HEADER, pi("a", None), line])
        strict_error(p, 3, f"every pi entry names its type (a string), got {bad_type!r}", field="type")
        lenient(p, {3: "every pi entry names its type"}, kept=["a"])
        c_line = cc("r1", "u1")
        c_line["type"] = bad_type
        c = jsonl(tmp_path / "cc.jsonl", [cc("u1", None), c_line])
        strict_error(c, 2, f"every Claude Code line names its type (a string), got {bad_type!r}", field="type")
        lenient(c, {2: "every Claude Code line names its type"}, kept=["u1"])
    typo = pi("b", "a")
    typo["type"] = "mesage"
    p = jsonl(tmp_path / "pi.jsonl", [PI_HEADER, pi("a", None), typo])
    strict_error(p, 3, "unknown entry type 'mesage' on an entry that holds a message", field="type")


def test_parent_that_points_nowhere(tmp_path: Path) -> None:
    p = jsonl(tmp_path / "pi.jsonl", [PI_HEADER, pi("a", None), pi("b", "ghost"), pi("c", "b")])
    strict_error(p, 3, "parent 'ghost' points nowhere", field="parentId",
                 hint="load with strict=False to read the branch from this entry on")
    t = load(p, strict=False)
    assert [i.id for i in t.conversation().items] == ["b", "c"]
    assert "line 3: parent 'ghost' points nowhere (no entry has that id); the branch starts here" \
        in t.conversation().notes
    assert any("1 entries on other branches left out" in n for n in t.conversation().notes)  # 'a': said, not lost

    s = jsonl(tmp_path / "s.jsonl", [SESSION_HEADER, rec("a", None), rec("b", "ghost"), rec("c", "b")])
    session_error(s, 3, "parent 'ghost' points nowhere")
    t = load(s, strict=False)  # salvage: attached to the record before it, and said
    assert [i.id for i in t.conversation().items] == ["a", "b", "c"]
    assert "s.jsonl:3: parent 'ghost' is missing; attached to 'a', the record before it" in t.notes

    c = jsonl(tmp_path / "cc.jsonl", [cc("u1", None), cc("u2", "ghost")])
    conv = load(c).conversation()
    assert [m.id for m in conv.messages] == ["u1", "u2"]
    assert any(n.startswith("parents not in this file") and "line 2: parentUuid 'ghost'" in n for n in conv.notes)


def test_parent_cycle(tmp_path: Path) -> None:
    p = jsonl(tmp_path / "pi.jsonl", [PI_HEADER, pi("a", "b"), pi("b", "a")])
    strict_error(p, 2, "parent 'b' closes a cycle", field="parentId")
    t = load(p, strict=False)
    assert [i.id for i in t.conversation().items] == ["a", "b"]
    assert any("line 2: parent 'b' closes a cycle" in n for n in t.conversation().notes)

    s = jsonl(tmp_path / "s.jsonl", [SESSION_HEADER, rec("a", "b"), rec("b", "a")])
    session_error(s, 2, "parent 'b' is at line 3, not before this line", "a cycle or a reordered file")

    c = jsonl(tmp_path / "cc.jsonl", [cc("u1", "u2"), cc("u2", "u1")])
    conv = load(c).conversation()
    assert [m.id for m in conv.messages] == ["u1", "u2"]
    assert any("a cycle or a reordered file" in n and "line 1: parentUuid 'u2' is at line 2" in n for n in conv.notes)


def test_invalid_utf8(tmp_path: Path) -> None:
    bad = json.dumps(pi("b", "a", content="caf_")).encode().replace(b"caf_", b"caf\xe9")  # Latin-1, not UTF-8
    p = jsonl(tmp_path / "pi.jsonl", [PI_HEADER, pi("a", None), bad, pi("c", "a")])
    column = bad.index(b"\xe9") + 1
    strict_error(p, 3, f"not UTF-8 text (byte 0xe9 at column {column})", hint="re-saved as UTF-8")
    lenient(p, {3: "not UTF-8"}, kept=["a", "c"])

    c = jsonl(tmp_path / "cc.jsonl", [cc("u1", None), json.dumps(cc("u2", "u1")).encode() + b"\xff"])
    strict_error(c, 2, "not UTF-8 text (byte 0xff", hint="re-saved as UTF-8")
    lenient(c, {2: "not UTF-8"}, kept=["u1"])

    o = tmp_path / "chat.json"
    o.write_bytes(b'[\n{"role": "user", "content": "hi"},\n{"role": "user", "content": "caf\xe9"}\n]')
    strict_error(o, 3, "not UTF-8 text (byte 0xe9 at column 33)", hint="re-saved as UTF-8")

    s = jsonl(tmp_path / "s.jsonl", [SESSION_HEADER, rec("a", None),
                                     json.dumps(rec("b", "a", text="caf_")).encode().replace(b"caf_", b"caf\xe9")])
    s.write_bytes(s.read_bytes() + json.dumps(rec("c", "a")).encode() + b"\n")
    session_error(s, 3, "not valid UTF-8")
    lenient(s, {3: "not valid UTF-8"}, kept=["a", "c"])


def test_byte_order_mark_reads_fine(tmp_path: Path) -> None:
    bom = b"\xef\xbb\xbf"
    files = {
        "pi.jsonl": jsonl(tmp_path / "pi.jsonl", [PI_HEADER, pi("a", None), pi("b", "a", "assistant", [])]),
        "cc.jsonl": jsonl(tmp_path / "cc.jsonl", [cc("u1", None), cc("u2", "u1")]),
        "chat.json": chat(tmp_path / "chat.json", [{"role": "user", "content": "hi"}]),
        "s.jsonl": jsonl(tmp_path / "s.jsonl", [SESSION_HEADER, rec("a", None)]),
    }
    for name, path in files.items():
        plain = load(path)
        path.write_bytes(bom + path.read_bytes())
        with_bom = load(path)
        assert with_bom.format == plain.format and with_bom.notes == plain.notes == (), name
        assert with_bom.conversation().items == plain.conversation().items, name
    assert Session.open(files["s.jsonl"]).head == "a"


def test_empty_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for content in (b"", b"\n\n  \n"):
        e = tmp_path / "empty.jsonl"
        e.write_bytes(content)
        strict_error(e, None, "the file is empty", hint="it may still be writing, or was cut off")
        with pytest.raises(TranscriptError, match="the file is empty"):
            load(e, strict=False)  # nothing to skip to: lenient says the same
    e.write_bytes(b"")
    with pytest.raises(SessionError, match=r"^empty\.jsonl:1: the file is empty; a session file starts with a header"):
        Session.open(e)
    cli_one_line(capsys, e, "the file is empty")


def test_fifty_megabyte_line(tmp_path: Path) -> None:
    # Generated here, never committed. Run in a child process so a hang fails the test (timeout)
    # instead of stopping the suite; the child reports what it read.
    script = textwrap.dedent("""
        import json, sys
        from pathlib import Path
        from ctxlab.base.errors import TranscriptError
        from ctxlab.io.formats import load
        folder, out = Path(sys.argv[1]), {}
        header = json.dumps({"type": "session", "version": 3, "id": "s1", "cwd": "/w"})
        big = "x" * (50 * 1024 * 1024)
        good = folder / "big.jsonl"  # a 50 MB message (a pasted log), then a normal one
        with open(good, "w", encoding="utf-8") as f:
            f.write(header + "\\n" + '{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"')
            f.write(big + '"}}\\n')
            f.write('{"type":"message","id":"b","parentId":"a","message":{"role":"user","content":"ok"}}\\n')
        conv = load(good).conversation()
        out["lengths"] = [len(m.text) for m in conv.messages]
        junk = folder / "junk.jsonl"  # 50 MB of something that is not JSON on line 2
        junk.write_text(header + "\\n" + big + "\\n", encoding="utf-8")
        try:
            load(junk)
        except TranscriptError as err:
            out["error"] = str(err)
        out["lenient_notes"] = list(load(junk, strict=False).notes)
        print(json.dumps(out))
    """)
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert out["lengths"] == [50 * 1024 * 1024, 2]
    assert out["error"] == ("junk.jsonl:2: not valid JSON (Expecting value at column 1). "
                            "Fix the line or load with strict=False to skip it.")  # short: no 50 MB echo
    assert out["lenient_notes"] == ["skipped line 2: not valid JSON (Expecting value at column 1)."]


def test_nan_and_huge_numbers(tmp_path: Path) -> None:
    usage = '{"input":NaN,"output":1}'
    p = jsonl(tmp_path / "pi.jsonl", [PI_HEADER, pi("a", None),
                                      json.dumps(pi("b", "a", "assistant", [])).replace(
                                          '"content"', f'"usage":{usage},"content"'),
                                      pi("c", "b", "assistant", [], usage={"input": 10**30})])
    strict_error(p, 3, "input should be a finite number, got nan", field="message.usage.input")
    lenient(p, {3: "finite number", 4: "less than or equal to 9007199254740991"}, kept=["a"])

    c = jsonl(tmp_path / "cc.jsonl", [cc("u1", None),
                                      json.dumps(cc("a1", "u1", "assistant", [], usage={"input_tokens": 1})).replace(
                                          '"input_tokens": 1', '"input_tokens": 1e400'),
                                      cc("a2", "u1", "assistant", [], usage={"output_tokens": -5})])
    strict_error(c, 2, "finite number, got inf", field="message.usage.input_tokens")
    lenient(c, {2: "finite number", 3: "greater than or equal to 0"}, kept=["u1"])

    o = tmp_path / "chat.json"
    o.write_text('[\n{"role": "user", "content": "hi"},\n{"role": "user", "content": NaN}\n]', encoding="utf-8")
    strict_error(o, 3, "got nan", field="messages[1].content")

    # ctxlab never writes NaN, Infinity or an impossible count, so a session holding one is damaged
    s = jsonl(tmp_path / "s.jsonl", [SESSION_HEADER, rec("a", None),
                                     json.dumps(rec("b", "a", "assistant", usage={"output_tokens": 1})).replace(
                                         '"output_tokens": 1', '"output_tokens": NaN'),
                                     rec("c", "a", "assistant", usage={"output_tokens": 10**30}),
                                     '{"type":"message","id":"d","parent":"a","role":"user","parts":[],"x":1e400}',
                                     rec("e", "a")])
    session_error(s, 3, "not valid JSON: NaN is not a number JSON allows")
    lenient(s, {3: "NaN", 4: "token count 1e+30 is outside 0 .. 2**53 - 1", 5: "1e400 is too large"}, kept=["a", "e"])


def test_deep_nesting(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep = "[" * 100_000 + "]" * 100_000  # Python's json raises RecursionError on this
    p = jsonl(tmp_path / "pi.jsonl", [PI_HEADER, pi("a", None),
                                      json.dumps(pi("b", "a", content="X")).replace('"X"', deep), pi("c", "a")])
    strict_error(p, 3, "not valid JSON (nested 100,002 levels deep, more than Python's JSON parser follows")
    lenient(p, {3: "nested 100,002 levels deep"}, kept=["a", "c"])

    o = tmp_path / "chat.json"  # a whole-file JSON: the error points at the deepest bracket
    opening = '{"role": "user", "content": '
    o.write_text('[\n{"role": "user", "content": "hi"},\n' + opening + deep + "}\n]", encoding="utf-8")
    strict_error(o, 3, "nested 100,002 levels deep", f"at column {len(opening) + 100_000}",
                 hint="The file may be truncated or not JSON at all")
    cli_one_line(capsys, o, "chat.json:3: not valid JSON (nested 100,002 levels deep")

    one_line = tmp_path / "one.json"  # the first line is the whole file: the sniffers must not crash either
    one_line.write_text('{"messages": [{"role": "user", "content": ' + deep + "}]}", encoding="utf-8")
    strict_error(one_line, 1, "nested 100,003 levels deep", hint="The file may be truncated")

    s = jsonl(tmp_path / "s.jsonl", [SESSION_HEADER, rec("a", None),
                                     '{"type":"entry","id":"e","parent":"a","kind":"note","data":{"x":' + deep + "}}",
                                     rec("c", "a")])
    session_error(s, 3, "not valid JSON: nested 100,002 levels deep")
    lenient(s, {3: "nested 100,002 levels deep"}, kept=["a", "c"])


def test_a_file_that_looks_like_another_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a pi header, then Claude Code lines: read as Claude Code, and the stray header is refused
    m = jsonl(tmp_path / "mixed.jsonl", [PI_HEADER, cc("u1", None), cc("u2", "u1")])
    strict_error(m, 1, "a session header line (pi or ctxlab) in a Claude Code file: the file mixes formats",
                 field="type", hint="split the file, or load with strict=False to skip this line")
    lenient(m, {1: "the file mixes formats"}, kept=["u1", "u2"])
    # Claude Code lines, then pi message lines
    m2 = jsonl(tmp_path / "mixed2.jsonl", [cc("u1", None), pi("a", None), cc("u2", "u1")])
    strict_error(m2, 2, "a pi message line in a Claude Code file", field="type")
    # JSON that is neither: the error lists what ctxlab reads and what to do
    n = tmp_path / "neither.json"
    n.write_text(json.dumps({"hello": "world", "n": [1, 2, 3]}), encoding="utf-8")
    err = strict_error(n, None, "unknown transcript format", "Known formats: ctxlab-session, claude-code, pi",
                       hint="Pass format=NAME to load()")
    assert "openai-chat" in str(err)
    # a ctxlab session header the session reader refuses (version 9) is not taken for pi either
    v = jsonl(tmp_path / "v9.jsonl", [{**SESSION_HEADER, "version": 9}, rec("a", None)])
    session_error(v, 1, "session version 9 is not supported")
    cli_one_line(capsys, m, "mixed.jsonl:1: field 'type'", "mixes formats")


def test_a_directory_passed_as_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "runs"
    d.mkdir()
    strict_error(d, None, "is a directory, not a transcript file", hint="Pass one file inside it")
    with pytest.raises(SessionError, match=r"runs: cannot be read as a session file .*Pass the path of a \.jsonl file"):
        Session.open(d)
    cli_one_line(capsys, d, "is a directory")


def test_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gone = tmp_path / "gone.jsonl"
    strict_error(gone, None, f"no such file: {gone}", hint="Check the path")
    with pytest.raises(SessionError, match=r"gone\.jsonl: no such session file\. Check the path"):
        Session.open(gone)
    cli_one_line(capsys, gone, "no such file")
    assert not gone.exists()  # reading never creates it


def test_a_binary_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = tmp_path / "image.jsonl"
    b.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    strict_error(b, None, "a binary file, not a transcript (a NUL byte at byte 9)", hint="UTF-8 text")
    with pytest.raises(TranscriptError, match="binary file"):
        load(b, strict=False)
    with pytest.raises(SessionError, match=r"image\.jsonl:1: .*session header"):
        Session.open(b)
    cli_one_line(capsys, b, "a binary file")
    # a gzip-compressed transcript: say so, and how to open it
    z = tmp_path / "run.jsonl.gz"
    z.write_bytes(gzip.compress(json.dumps(PI_HEADER).encode()))
    strict_error(z, None, "a gzip-compressed file", hint="Decompress it first (gunzip run.jsonl.gz)")
    # UTF-16 (a Windows editor's "Unicode"): NUL bytes, so the same clear refusal
    u = tmp_path / "utf16.json"
    u.write_text('[{"role": "user", "content": "hi"}]', encoding="utf-16")
    strict_error(u, None, "a binary file", hint="re-saved as UTF-8")


@pytest.mark.parametrize("name, lines, says", [
    ("trunc.jsonl", [PI_HEADER, pi("a", None), '{"type":"message","id":"b","par'], "trunc.jsonl:3: not valid JSON"),
    ("role.jsonl", [PI_HEADER, pi("a", None), pi("b", "a", role="robot")], "role.jsonl:3: field 'message.role'"),
    ("deep.jsonl", [PI_HEADER, "[" * 50_000 + "]" * 50_000], "deep.jsonl:2: not valid JSON (nested 50,000 levels"),
    ("latin1.jsonl", [cc("u1", None), b'{"x": "\xe9"}'], "latin1.jsonl:2: not UTF-8 text"),
    ("nan.jsonl", [cc("u1", None), json.dumps(cc("a", "u1", "assistant", [], usage={"output_tokens": 1})).replace(
        '"output_tokens": 1', '"output_tokens": NaN')], "nan.jsonl:2: field 'message.usage.output_tokens'"),
    ("session.jsonl", [SESSION_HEADER, rec("a", "ghost")], "session.jsonl:2: parent 'ghost' points nowhere"),
])
def test_cli_hostile_file_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                                             lines: list, says: str) -> None:
    path = jsonl(tmp_path / name, lines)
    err = cli_one_line(capsys, path, says)
    assert "run with --lenient" in err and "strict=False" not in err  # the hint in the CLI's own words
    assert main(["replay", str(path)]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("ctxlab replay: error: ") and err.count("\n") == 1 and says in err


def test_cli_lenient_lists_every_skipped_line_and_keeps_the_rest(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = jsonl(tmp_path / "pi.jsonl", [PI_HEADER, pi("a", None), "not json", pi("b", "a", role="robot"),
                                         pi("c", "b"), b'{"bad": "\xff"}'])
    assert main(["inspect", str(path), "--lenient", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["messages"] == 2
    skipped = [n for n in rep["notes"] if n.startswith("skipped line")]
    assert sorted(n.split(":")[0] for n in skipped) == ["skipped line 3", "skipped line 4", "skipped line 6"]
    by_line = {n.split(":")[0]: n for n in skipped}
    assert "unknown role 'robot'" in by_line["skipped line 4"] and "not UTF-8" in by_line["skipped line 6"]


def test_a_token_count_written_as_a_string_or_a_boolean(tmp_path: Path) -> None:
    # pydantic would read "12" as 12 and true as 1: a count is a JSON number, or the line is damaged
    for value, kind in (("12", "string"), (True, "boolean")):
        line = cc("a1", "u1", kind="assistant", content=[{"type": "text", "text": "ok"}], id="msg_1",
                  usage={"input_tokens": value, "output_tokens": 3})
        c = jsonl(tmp_path / "cc.jsonl", [cc("u1", None), line])
        strict_error(c, 2, f"a token count is a JSON number, not a {kind}", field="message.usage.input_tokens")
        lenient(c, {2: f"a token count is a JSON number, not a {kind}"}, kept=["u1"])
    whole = cc("a1", "u1", kind="assistant", content=[{"type": "text", "text": "ok"}], id="msg_1",
               usage={"input_tokens": 12.0, "output_tokens": 3})
    conv = load(jsonl(tmp_path / "whole.jsonl", [cc("u1", None), whole])).conversation()
    assert conv.messages[1].usage.uncached_input_tokens == 12  # a whole number written as 12.0 is a count


def test_a_line_repeated_byte_for_byte_is_read_once(tmp_path: Path) -> None:
    # an event log appended to twice (or a copy pasted twice): each event once, the repeat noted
    src = Path(__file__).resolve().parent / "fixtures" / "formats" / "copilot_cli_events.jsonl"
    lines = src.read_bytes().splitlines()
    doubled = tmp_path / "events.jsonl"
    doubled.write_bytes(b"\n".join(lines[:5] + [lines[3]] + lines[5:]) + b"\n")
    once, twice = load(src).conversation(), load(doubled)
    assert [m.parts for m in twice.conversation().messages] == [m.parts for m in once.messages]
    assert "line 6 repeats line 4 byte for byte: read once" in twice.notes


@pytest.mark.parametrize("fixture, kind, says", [
    ("codex_rollout.jsonl", "response_item", "unknown line type 'assistnat' on a line that holds a model item"),
    ("copilot_cli_events.jsonl", "assistant.message", "unknown event type 'assistnat' on an event that holds a message"),
    ("gemini_session.jsonl", "gemini", "unknown record type 'assistnat' on a record that holds a model reply"),
])
def test_a_misspelt_type_on_a_message_is_an_error_not_a_drop(tmp_path: Path, fixture: str, kind: str, says: str) -> None:
    """A typo in the record type of an assistant line used to drop the message (and its usage) with exit 0."""
    import re

    src = Path(__file__).resolve().parent / "fixtures" / "formats" / fixture
    lines = src.read_text(encoding="utf-8").splitlines()
    pattern = re.compile(r'"type": ?"' + re.escape(kind) + '"')
    at = next(i for i, x in enumerate(lines) if pattern.search(x) and (kind != "response_item" or '"assistant"' in x))
    lines[at] = pattern.sub('"type": "assistnat"', lines[at], count=1)
    path = tmp_path / fixture
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    strict_error(path, at + 1, says, field="type")
    assert any(n.startswith(f"skipped line {at + 1}: field 'type': {says}") for n in load(path, strict=False).notes)
