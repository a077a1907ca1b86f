"""Crash safety of session files: a writer that dies at any moment loses at most the line it was
writing, opening never rewrites the file, and the next append carries on.

Two tests. The first is exact: it cuts one append at every byte (the file a crash at that moment
leaves) from three starting states, opens each result and appends again. The second is real: a
writer process appends until it is SIGKILLed at a seeded moment, twenty rounds in a row on one
file. fsync is what makes an append durable; the first test switches it off (it is about which
bytes are where, and 5 ms per fsync on a disk would make it slow), the second keeps it.
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
import traceback
from pathlib import Path

import pytest

from crash_writer import APPENDED, STALLED, record_text, write_until_killed
from ctxlab.io.formats import load
from ctxlab.messages import Message, user
from ctxlab.io.session import Session

ROUNDS = 20
SEED = 20251014


def lines_of(data: bytes) -> list[bytes]:
    """The file's lines (the empty string after a final newline left out)."""
    lines = data.split(b"\n")
    return lines[:-1] if data.endswith(b"\n") else lines


def parsed(line: bytes) -> object:
    """The line's JSON value, or ``None`` when it is not JSON (a torn line)."""
    try:
        return json.loads(line)
    except ValueError:
        return None


def complete_record_ids(data: bytes) -> list[str]:
    """Ids of the records whose whole line is in ``data`` (a valid last line without its newline counts)."""
    objs = [parsed(line) for line in lines_of(data)[1:]]
    return [o["id"] for o in objs if isinstance(o, dict) and o.get("type") in ("message", "entry")]


def open_unchanged(path: Path) -> Session:
    """Open the session and check the bytes on disk did not change."""
    before = path.read_bytes()
    session = Session.open(path)
    assert path.read_bytes() == before, "opening a session must never rewrite it"
    return session


def check_reads_every_complete_line(path: Path, *, via_reader: bool = True) -> Session:
    """Every complete record is read, in order, on one branch; every bad line is reported in the
    warnings; an unmarked torn tail is at most the last line, plus one line per later crash that
    cut short the torn marker an append writes in front of its record."""
    data = path.read_bytes()
    session = open_unchanged(path)
    lines = lines_of(data)
    objs = [parsed(line) for line in lines]
    assert [item.id for item in session.path()] == [o["id"] for o in objs[1:] if isinstance(o, dict)
                                                    and o.get("type") in ("message", "entry")]
    bad = [n for n, o in enumerate(objs, start=1) if o is None]
    for n in bad:
        assert sum(w.startswith(f"{path.name}:{n}: torn ") for w in session.warnings) == 1, (n, session.warnings)
    tail = [int(w.split(":")[1]) for w in session.warnings if "torn last line" in w or "at the end of the file" in w]
    assert tail == bad[len(bad) - len(tail):] and (not tail or tail[-1] == len(lines))  # only at the end
    marker = b'{"type":"torn","line":'
    for n in tail[1:]:  # more than one: each later one is a torn marker cut short by another crash
        assert lines[n - 1][:len(marker)] == marker[:len(lines[n - 1])], (n, lines[n - 1])
    if via_reader:  # the notes a reader of the file sees say the same
        assert list(load(path, strict=False).notes) == session.warnings
    return session


# ---- 1. one append cut at every byte ---------------------------------------------------------

def base_session(path: Path) -> bytes:
    session = Session.create(path, system=("Be brief.",), created="2025-10-14T09:00:00Z")
    for i in range(3):
        session.append(user(f"message {i}", f"m{i}"))
    return path.read_bytes()


def appended_bytes(data: bytes, folder: Path, item: Message) -> bytes:
    """What ``Session.append(item)`` adds to a session file holding ``data`` (done on a scratch copy)."""
    scratch = folder / "scratch.jsonl"
    scratch.write_bytes(data)
    Session.open(scratch).append(item)
    out = scratch.read_bytes()
    assert out.startswith(data)  # appends never touch what is there
    scratch.unlink()
    return out[len(data):]


@pytest.mark.parametrize("state", ["clean", "torn last line", "torn line ended by a newline"])
def test_an_append_cut_at_every_byte_is_read_and_appended_to(tmp_path: Path, state: str, monkeypatch) -> None:
    monkeypatch.setattr(os, "fsync", lambda fd: None)  # durability is the second test's business
    clean = base_session(tmp_path / "base.jsonl")
    torn = b'{"type":"message","id":"m3","parent":"m2","role":"us'
    base = {"clean": clean, "torn last line": clean + torn, "torn line ended by a newline": clean + torn + b"\n"}[state]
    first = appended_bytes(base, tmp_path, user("after", "n1"))
    if state != "clean":
        assert b'{"type":"torn","line":5}\n' in first  # the marker naming the torn line 5
    f = tmp_path / "s.jsonl"
    for cut in range(len(first) + 1):
        f.write_bytes(base + first[:cut])
        session = check_reads_every_complete_line(f)
        assert ("n1" in session) == (cut >= len(first) - 1)  # the record is whole once its "}" is on disk
        # the next append, from whatever the crash left
        session.append(user("again", "n2"))
        after = check_reads_every_complete_line(f)
        assert after.head == "n2" and after.parent("n2") == ("n1" if "n1" in session else "m2")
        assert f.read_bytes().startswith(base + first[:cut])


def test_a_crash_while_marking_a_torn_line_is_survived_too(tmp_path: Path, monkeypatch) -> None:
    # The worst case: the writer died mid-line, and the next writer died while writing the newline
    # and marker that acknowledge it: cut that append inside its newline and marker (nothing, the
    # newline alone, a few marker lengths), then cut the append after it at every byte of its own
    # marker and at the end of its record.
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    base = base_session(tmp_path / "base.jsonl") + b'{"type":"message","id":"m3","par'
    first = appended_bytes(base, tmp_path, user("after", "n1"))
    marker_end = first.index(b"}\n") + 2  # b'\n{"type":"torn","line":5}\n'
    f = tmp_path / "s.jsonl"
    for cut in sorted({0, 1, 2, 3, marker_end // 2, marker_end - 2, marker_end - 1}):
        state = base + first[:cut]
        second = appended_bytes(state, tmp_path, user("later", "n2"))
        cuts = [*range(second.index(b"}\n") + 3), len(second) - 2, len(second) - 1, len(second)]
        for cut2 in cuts:
            f.write_bytes(state + second[:cut2])
            session = check_reads_every_complete_line(f, via_reader=False)
            assert ("n2" in session) == (cut2 >= len(second) - 1)
            session.append(user("again", "n3"))
            assert check_reads_every_complete_line(f, via_reader=False).head == "n3"


# ---- 2. a real writer, SIGKILLed twenty times ------------------------------------------------

def start_writer(path: Path, tag: str, seed: int, stall_at: int | None) -> tuple[int, int]:
    """Fork a writer (tests/crash_writer.py) appending to ``path``; returns its pid and the read end
    of its progress pipe (``APPENDED`` per append, ``STALLED`` once a stalled append is half on
    disk). A fork, not a fresh ``python``: a new interpreter spends 1-2 s importing ctxlab, and
    twenty rounds of that would take most of a minute."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the writer: append until killed; never return into pytest
        code = 1
        try:
            os.close(read_end)
            write_until_killed(str(path), tag, seed, write_end, stall_at)
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(write_end)
    return pid, read_end


def read_progress(read_end: int, count: int) -> bytes:
    """Block until the writer has sent ``count`` progress bytes (or ended); returns what it sent."""
    seen = b""
    while len(seen) < count:
        chunk = os.read(read_end, count - len(seen))
        if not chunk:
            break
        seen += chunk
    return seen


@pytest.mark.skipif(not hasattr(signal, "SIGKILL") or not hasattr(os, "fork"),
                    reason="Windows has no SIGKILL (nor fork): a killed writer cannot be simulated there; "
                           "the every-byte tests above still run")
def test_twenty_sigkills_in_a_row(tmp_path: Path) -> None:
    """Deterministic: what a kill leaves never depends on timing for the assertions. In half the
    rounds (the even ones) the kill lands between or inside small appends after a seeded pause (any
    outcome is legal, and every one is checked); in the odd ones the writer stalls inside the ``write()``
    of its next append with a seeded prefix on disk, so the kill always leaves a torn last line."""
    path = tmp_path / "run.jsonl"
    Session.create(path, system=("You are a coding agent.",), created="2025-10-14T09:00:00Z")
    rng = random.Random(SEED)
    mid_line_rounds = torn_rounds = 0
    for round_ in range(ROUNDS):
        target, mid_line = rng.randrange(3, 30), round_ % 2 == 1
        pid, progress = start_writer(path, f"r{round_}", SEED + round_, stall_at=target if mid_line else None)
        reported = read_progress(progress, target + mid_line)
        if not mid_line:
            time.sleep(rng.uniform(0, 0.005))
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        os.close(progress)
        assert reported == APPENDED * target + STALLED * mid_line, \
            f"round {round_}: the writer reported {reported!r} before the kill"
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, \
            f"round {round_}: the writer ended on its own (status {status})"

        session = check_reads_every_complete_line(path, via_reader=False)
        records = [m for m in session.path() if isinstance(m, Message)]
        assert sum(m.id.startswith(f"r{round_}-") for m in records) >= target  # its reported appends survived
        for m in records:
            assert m.text == record_text(m.id), f"round {round_}: record {m.id} holds other text"
        torn = any("torn last line" in w for w in session.warnings[-2:])
        if mid_line:
            assert torn, f"round {round_}: the stalled append left no torn last line: {session.warnings[-2:]}"
            assert not any(m.id.startswith(f"r{round_}-{target}-") for m in records)  # the torn record is not read
        mid_line_rounds += mid_line
        torn_rounds += torn
    # after the last kill, the test itself appends: the file is still a sound session
    session = Session.open(path)
    session.append(user("still here", "final"))
    final = check_reads_every_complete_line(path)
    assert final.head == "final" and len(final.path()) == len(complete_record_ids(path.read_bytes()))
    print(f"{ROUNDS} kills, {len(final.path())} records, {torn_rounds} rounds left a torn last line")
    assert mid_line_rounds == ROUNDS // 2 and torn_rounds >= mid_line_rounds
