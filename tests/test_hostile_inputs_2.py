"""Hostile input, round two: lone surrogates, NUL lines, special files, planted pages, swapped sessions.

The style of ``tests/test_hostile_inputs.py`` (whose builders and checks this file reuses): one
test per kind, each checking the one line the user reads — ``ctxlab inspect`` exits 2 with one
line on stderr and no traceback — or the exception and its message; and every file's bytes are
the same after the test as before it. Nothing here is timed: ``bench/hostile_times.py`` times it.

* A lone surrogate (``"\\ud800"``: legal JSON, but no UTF-8 text can hold it) is replaced with
  U+FFFD where the JSON is decoded, and a note names the file, the line and the field; strict mode
  reads on (a declared repair, not a damaged line), and every strategy replays.
* A line of NUL bytes in the middle of a JSON Lines file is a damaged line, named by its number;
  a file that starts with NUL (UTF-16, a binary) is still "a binary file".
* A FIFO, a character device, a socket are refused before they are opened (a FIFO's open blocks).
* A 2 GB page file planted in a page store is refused by its size, unread.
* A session file swapped for another of the same size is refused at the next append.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from ctxlab.cli.main import main
from ctxlab.base.errors import SessionError, TranscriptError
from ctxlab.io.formats import load
from ctxlab.messages import Message, TextPart, user
from ctxlab.io.page_store import MAX_PAGE_BYTES, PageStore, execute_read_page
from ctxlab.paging import PageError
from ctxlab.io.session import Session
from test_hostile_inputs import PI_HEADER, SESSION_HEADER, cc, cli_one_line, jsonl, lenient, pi, rec, strict_error

FIXTURES = Path(__file__).parent / "fixtures" / "formats"
REPAIRED = "a lone surrogate \\ud800 (half of a UTF-16 pair; no UTF-8 text can hold it) replaced with U+FFFD"
POSIX_ONLY = pytest.mark.skipif(os.name != "posix", reason="FIFOs, devices and sockets are POSIX files")


def all_notes(path: Path) -> list[str]:
    t = load(path)
    return [*t.notes, *(n for c in t.conversations for n in c.notes)]


def replays_every_strategy(capsys: pytest.CaptureFixture[str], path: Path) -> None:
    """``inspect --json`` and ``replay --compare --json`` (every strategy) exit 0 with valid UTF-8 JSON."""
    for argv in (["inspect", str(path), "--json"], ["replay", str(path), "--compare", "--json"]):
        code = main(argv)
        out, err = capsys.readouterr()
        assert code == 0 and err == "", (argv, err)
        json.loads(out.encode("utf-8"))  # encodable: no surrogate reached the output


# The child of cli_subprocess: ``python -m ctxlab ARGV`` is ``sys.exit(main(ARGV))``; this runs ``main`` once per
# argv and prints a JSON list of [exit code, stdout, stderr]. An exception main lets out is its traceback on stderr.
CLI_CHILD = """
import contextlib, io, json, sys, traceback
from ctxlab.cli.main import main
done = []
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit:
            code = exit.code
        except BaseException:
            traceback.print_exc()
            code = None
    done.append([code, out.getvalue(), err.getvalue()])
sys.stdout.write(json.dumps(done))
"""


def cli_subprocess(*argvs: list[str], stdin: Any = subprocess.DEVNULL) -> list[tuple[int, str, str]]:
    """The CLI's ``main(argv)`` for each argv, in one child process, so that a hang fails the test (timeout)
    instead of stopping the suite; one interpreter start serves every command of a test."""
    done = subprocess.run([sys.executable, "-c", CLI_CHILD, json.dumps(argvs)], capture_output=True, text=True,
                          timeout=60, stdin=stdin, encoding="utf-8")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return [tuple(r) for r in json.loads(done.stdout)]


def refused_in_one_line(cases: dict[Path, tuple[str, ...]], stdin: Any = subprocess.DEVNULL) -> None:
    """``ctxlab inspect PATH`` and ``ctxlab replay PATH`` exit 2 with one line on stderr saying each phrase."""
    argvs = [[command, str(path)] for path in cases for command in ("inspect", "replay")]
    for (command, path), (code, out, err) in zip(argvs, cli_subprocess(*argvs, stdin=stdin), strict=True):
        assert code == 2 and out == "" and err.count("\n") == 1, (command, path, code, out, err)
        name = Path(path).name
        assert err.startswith(f"ctxlab {command}: error: {name}: is ") and "Traceback" not in err, err
        assert all(phrase in err for phrase in cases[Path(path)]), err


# ---- 1. lone surrogates --------------------------------------------------------------------------

CALL = {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "notes.txt"}}


def claude_code_file(path: Path, field: str) -> Path:
    """A Claude Code session with a lone surrogate in one field: message text, tool name, arguments or title."""
    call = {**CALL, "name": "re\\ud800ad"} if field == "tool name" else (
        {**CALL, "input": {"path": "no\\ud800tes.txt"}} if field == "tool arguments" else CALL)
    lines = [
        cc("u1", None, content="read \\ud800 the notes" if field == "message text" else "read the notes"),
        cc("a1", "u1", "assistant", [call], model="claude-sonnet-4-5", usage={"input_tokens": 20, "output_tokens": 5}),
        cc("u2", "a1", content=[{"type": "tool_result", "tool_use_id": "toolu_1", "content": "line one"}]),
        cc("a2", "u2", "assistant", [{"type": "text", "text": "done"}], model="claude-sonnet-4-5",
           usage={"input_tokens": 40, "output_tokens": 3}),
        {"type": "summary", "summary": "Notes \\ud800 read" if field == "title" else "Notes read", "leafUuid": "a2"},
    ]
    # json.dumps would escape the backslash: write the escape itself, as an agent's JSON writer does
    return jsonl(path, [json.dumps(line).replace("\\\\ud800", "\\ud800") for line in lines])


@pytest.mark.parametrize("field, line, at, value", [
    ("message text", 1, "message.content", lambda c: c.messages[0].text),
    ("tool name", 2, "message.content[0].name", lambda c: c.messages[1].parts[0].name),
    ("tool arguments", 2, "message.content[0].input.path", lambda c: c.messages[1].parts[0].arguments),
    ("title", 5, "summary", lambda c: c.title),
])
def test_lone_surrogate_is_replaced_and_noted(tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str,
                                              line: int, at: str, value: Any) -> None:
    path = claude_code_file(tmp_path / "cc.jsonl", field)
    before = path.read_bytes()
    assert b"\\ud800" in before
    conv = load(path).conversation()  # strict: a declared repair, not a damaged line
    assert "\ufffd" in value(conv)
    assert f"cc.jsonl:{line}: field {at!r}: {REPAIRED}" in all_notes(path)
    replays_every_strategy(capsys, path)
    assert main(["inspect", str(path)]) == 0
    assert f"cc.jsonl:{line}: field {at!r}: a lone surrogate" in capsys.readouterr().out
    assert path.read_bytes() == before


def test_lone_surrogate_in_a_json_document_and_in_arguments_kept_as_text(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    # One JSON document (read whole, not line by line): the note names the line of the object
    # holding the field. Arguments kept verbatim as JSON text are decoded when rendered.
    args = '{"path": "a\\ud800b"}'  # JSON text whose own escape decodes to a lone surrogate
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": args}}
    path = tmp_path / "chat.json"
    path.write_text("[\n" + ",\n".join(json.dumps(m) for m in [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"}])
                    + ',\n{"role": "assistant", "content": "do\\udc00ne"}\n]\n', encoding="utf-8")
    before = path.read_bytes()
    conv = load(path).conversation()
    assert conv.messages[3].text == "do\ufffdne" and conv.messages[1].parts[0].arguments == args
    notes = all_notes(path)
    assert f"chat.json:5: field '[3].content': {REPAIRED.replace('ud800', 'udc00')}" in notes
    assert (f"chat.json:3: the arguments of tool call 'c1' (kept verbatim), field 'path': {REPAIRED} "
            "when rendered") in notes
    replays_every_strategy(capsys, path)
    assert path.read_bytes() == before


@pytest.mark.parametrize("fixture", sorted(p.name for p in FIXTURES.iterdir()
                                           if "bad" not in p.name and "ambiguous" not in p.name
                                           and p.suffix != ".md" and p.name != "unknown.json"))
def test_lone_surrogate_in_every_reader(tmp_path: Path, capsys: pytest.CaptureFixture[str], fixture: str) -> None:
    # Each JSON fixture with "\ud800" put in front of its first message text found in the file:
    # every reader (proxy logs, Gemini, Copilot, OpenHands ... included) reads it strictly and notes it.
    raw = (FIXTURES / fixture).read_text(encoding="utf-8")
    texts = [m.text for c in load(FIXTURES / fixture).conversations for m in c.messages if len(m.text) >= 4]
    at = next(k for k in (raw.find('"' + form) for t in texts for form in
                          (json.dumps(t, ensure_ascii=False)[1:-1], json.dumps(t)[1:-1])) if k >= 0)
    path = tmp_path / fixture
    path.write_text(raw[:at + 1] + "\\ud800" + raw[at + 1:], encoding="utf-8")
    before = path.read_bytes()
    transcript = load(path)
    assert any("lone surrogate \\ud800" in n and n.startswith(f"{fixture}:") for n in all_notes(path))
    for conv in transcript.conversations:
        for m in conv.messages:
            for part in m.parts:
                for text in (getattr(part, f.name) for f in dataclasses.fields(part)):  # parts have __slots__
                    assert not isinstance(text, str) or text.encode("utf-8") is not None
    replays_every_strategy(capsys, path)
    assert path.read_bytes() == before


def test_lone_surrogate_in_a_session_file_and_in_an_append(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    s = jsonl(tmp_path / "s.jsonl", [json.dumps({**SESSION_HEADER, "title": "T\\ud800"}).replace("\\\\", "\\"),
                                     json.dumps(rec("a", None, text="x\\ud800y")).replace("\\\\", "\\")])
    before = s.read_bytes()
    session = Session.open(s)  # strict, and still appendable
    assert session.title == "T\ufffd" and session["a"].text == "x\ufffdy"  # type: ignore[union-attr]
    assert session.warnings == [f"s.jsonl:1: field 'title': {REPAIRED}",
                                f"s.jsonl:2: field 'parts[0].text': {REPAIRED}"]
    assert list(load(s).notes) == session.warnings and s.read_bytes() == before
    replays_every_strategy(capsys, s)
    # an append of a Message holding one: written (and kept) as U+FFFD, said in the warnings
    assert session.append(user("b\udc00c", "b\ud800")) == "b\ufffd"
    low = REPAIRED.replace("ud800", "udc00")
    assert session.warnings[-2:] == [f"s.jsonl: item 'b\ufffd', field 'id': {REPAIRED}",
                                     f"s.jsonl: item 'b\ufffd', field 'parts[0].text': {low}"]
    assert session["b\ufffd"].text == "b\ufffdc"  # type: ignore[union-attr]
    again = Session.open(s)
    assert again["b\ufffd"] == session["b\ufffd"] and again.head == "b\ufffd"
    assert s.read_bytes().startswith(before)
    # a new session whose title holds one
    made = Session.create(tmp_path / "new.jsonl", title="t\ud800")
    assert made.title == "t\ufffd" and made.warnings == [f"header: field 'title': {REPAIRED}"]
    assert Session.open(tmp_path / "new.jsonl").title == "t\ufffd"


def test_a_markdown_file_cannot_hold_a_lone_surrogate(tmp_path: Path) -> None:
    # aider's log is UTF-8 text: a surrogate encoded anyway (ED A0 80) is bytes UTF-8 refuses, so
    # the rule for bytes that are not UTF-8 applies, not the surrogate rule.
    md = tmp_path / ".aider.chat.history.md"
    md.write_bytes(b"\n# aider chat started at 2025-03-04 09:15:02\n\n#### read \xed\xa0\x80 it  \n\nok\n")
    strict_error(md, 4, "not UTF-8 text (byte 0xed at column 11)", hint="re-saved as UTF-8")
    conv = load(md, strict=False).conversation()
    assert "read \ufffd\ufffd\ufffd it" in conv.messages[0].text


# ---- 2. a line of NUL bytes ------------------------------------------------------------------------

def test_a_line_of_nul_bytes_is_a_damaged_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = jsonl(tmp_path / "pi.jsonl", [PI_HEADER, pi("a", None), b"\x00" * 4096, pi("b", "a")])
    strict_error(p, 3, "4,096 NUL byte(s), the first at column 1: not JSON text")
    lenient(p, {3: "4,096 NUL byte(s)"}, kept=["a", "b"])
    cli_one_line(capsys, p, "pi.jsonl:3: 4,096 NUL byte(s)", "run with --lenient")
    assert main(["inspect", str(p), "--lenient", "--json"]) == 0
    assert any(n.startswith("skipped line 3: 4,096 NUL byte(s)") for n in json.loads(capsys.readouterr().out)["notes"])
    # a session file: the same line is named too (and a torn tail of zeros after a crash is skipped)
    s = jsonl(tmp_path / "s.jsonl", [SESSION_HEADER, rec("a", None), b"\x00" * 10, rec("b", "a")])
    with pytest.raises(SessionError, match=r"^s\.jsonl:3: not valid JSON: 10 NUL byte\(s\)"):
        Session.open(s)
    # a file that starts with NUL, or holds one on its first line, is still a binary file
    for name, data in (("zeros.jsonl", b"\x00" * 100 + b"\n" + json.dumps(PI_HEADER).encode()),
                       ("utf16.jsonl", json.dumps(PI_HEADER).encode("utf-16-le") + b"\n\x00")):
        b = tmp_path / name
        b.write_bytes(data)
        strict_error(b, None, "a binary file, not a transcript (a NUL byte at byte", hint="re-saved as UTF-8")
        with pytest.raises(TranscriptError, match="binary file"):
            load(b, strict=False)


# ---- 3. special files ------------------------------------------------------------------------------

@POSIX_ONLY
def test_a_fifo_is_refused_before_it_is_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "run.jsonl"
    os.mkfifo(fifo)
    cases = {fifo: ("is a FIFO (a named pipe), not a transcript file", "save the transcript to a file")}
    if Path("/dev/stdin").exists():  # /dev/stdin is a pipe when the input is piped
        cases[Path("/dev/stdin")] = ("is a FIFO",)
    refused_in_one_line(cases, stdin=subprocess.PIPE)

    def unblock() -> None:  # if an open blocked after all, give it a writer so the test fails, not hangs
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass

    watchdog = threading.Timer(10, unblock)
    watchdog.start()
    try:
        for fmt in (None, "pi", "ctxlab-session"):
            with pytest.raises(TranscriptError, match=r"^run\.jsonl: is a FIFO \(a named pipe\)"):
                load(fifo, format=fmt)
        with pytest.raises(SessionError, match=r"run\.jsonl: cannot be read as a session file \(it is a FIFO\)"):
            Session.open(fifo)
    finally:
        watchdog.cancel()


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero here")
def test_dev_zero_is_refused_as_a_device(tmp_path: Path) -> None:
    refused_in_one_line({Path("/dev/zero"): ("zero: is a character device, not a transcript file: /dev/zero",)})
    for fmt in (None, "pi"):  # format given: no detection first, the reader itself must not read forever
        with pytest.raises(TranscriptError, match=r"^zero: is a character device"):
            load("/dev/zero", format=fmt)
    with pytest.raises(SessionError, match=r"it is a character device"):
        Session.open("/dev/zero")


@POSIX_ONLY
def test_a_socket_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(path))
    except OSError as err:  # a path too long for AF_UNIX
        pytest.skip(f"cannot bind a unix socket here: {err}")
    try:
        refused_in_one_line({path: ("is a socket, not a transcript file",)})
        with pytest.raises(TranscriptError, match=r"^s\.sock: is a socket"):
            load(path, format="pi")
    finally:
        server.close()


# ---- 4. a planted page ---------------------------------------------------------------------------

@pytest.mark.skipif(os.name != "posix", reason="a sparse file")
def test_a_planted_two_gigabyte_page_is_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = PageStore(tmp_path / "pages")
    handle = store.put("a small page")
    page = tmp_path / "pages" / f"{handle}.txt"
    planted = tmp_path / "pages" / "0123456789abcdef.txt"
    for f in (page, planted):  # sparse: 2 GB long, no disk used, nothing written
        with open(f, "ab") as fh:
            fh.truncate(2 * 1024**3)

    def no_reading(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the page was opened for reading")

    with monkeypatch.context() as m:
        m.setattr(os, "fdopen", no_reading)  # PageStore reads a page only through os.fdopen(fd)
        with pytest.raises(PageError, match=rf"^Refusing page {handle}: it is 2,147,483,648 bytes on disk, more "
                                            r"than the 12 bytes put there \(the file was changed or planted"):
            store.get(handle)
        with pytest.raises(PageError, match=rf"it is 2,147,483,648 bytes on disk, more than the {MAX_PAGE_BYTES:,} "
                                            "bytes a store reads of a page it has no record of"):
            store.get("0123456789abcdef")  # no record of it: the store-wide limit
        out = execute_read_page(store, {"handle": handle, "start_line": 1})
        assert out.startswith("error: Refusing page") and len(out) < 400
        with pytest.raises(PageError, match="bytes on disk, more than"):
            PageStore(tmp_path / "pages").get(handle)  # another store over the same folder: no record either
    assert page.stat().st_size == 2 * 1024**3  # refused, and left as it was


# ---- 5. a swapped session file -------------------------------------------------------------------

def test_a_session_file_swapped_for_one_of_the_same_size_is_refused(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    jsonl(a, [SESSION_HEADER, rec("m1", None, text="aaaa")])
    jsonl(b, [SESSION_HEADER, rec("m1", None, text="bbbb")])
    assert a.stat().st_size == b.stat().st_size
    session = Session.open(a)
    os.replace(b, a)  # same name, same size, another file
    swapped = a.read_bytes()
    with pytest.raises(SessionError) as info:
        session.append(user("late", "m2"))
    assert str(info.value) == (f"{a}: is not the file this session read (it was replaced, moved or deleted since); "
                               "open it again before appending")
    assert a.read_bytes() == swapped and "m2" not in session
    reopened = Session.open(a)  # what the message says to do
    reopened.append(user("late", "m2"))
    assert Session.open(a).path()[-1] == Message("user", (TextPart("late"),), id="m2")


def test_a_session_file_with_a_byte_order_mark_takes_appends(tmp_path: Path) -> None:
    # An editor's UTF-8 byte-order mark is read past; the append's size check counts it (it once
    # refused: "changed on disk since it was read (217 → 220 bytes)").
    s = jsonl(tmp_path / "s.jsonl", [SESSION_HEADER, rec("a", None)])
    s.write_bytes(b"\xef\xbb\xbf" + s.read_bytes())
    before = s.read_bytes()
    Session.open(s).append(user("next", "b"))
    assert Session.open(s).head == "b" and s.read_bytes().startswith(before)
