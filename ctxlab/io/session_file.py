"""The session file's format: its lines parsed, its header made: what :class:`ctxlab.io.session.Session`
reads and writes. Chapter 02.

File layout (one JSON object per line, UTF-8)::

    {"type":"session","version":1,"id":"s1","system":["..."],"tools":[{...}],"model":...,
     "provider":...,"title":...,"created":"2025-10-14T09:02:11.000Z"}
    {"type":"message","id":"m1","parent":null,"role":"user","parts":[...],...}
    {"type":"entry","id":"e1","parent":"m1","kind":"model_change","data":{...}}
    {"type":"message","id":"m2","parent":"m1",...}        <- m1 now has two children: a fork

A record's parent is the leaf it was appended to. The payload after ``parent`` is the JSON form
of :mod:`ctxlab.io.codec`.

A torn tail (the writer died mid-write: the bad lines after the last good one, usually one last
line without its newline) is skipped and reported in ``session.warnings``; appends only ever touch
the end of the file, so a crash can damage nothing else. The next append leaves those bytes
untouched: it ends the last line with a newline if it has none, writes a marker
``{"type":"torn","line":N}`` (``"count": K`` when K > 1 lines are torn — a crash during that very
append can leave two) saying lines N.. are known to be torn, then the record. On later opens bad
lines followed by their marker are skipped with a warning; any other bad line raises
:class:`~ctxlab.base.errors.SessionError` naming the line. ``tests/test_crash_safety.py`` cuts an append at
every byte and SIGKILLs a writer twenty times in a row to check this.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ctxlab.base.errors import SessionError
from ctxlab.io.codec import (item_from_dict, loads, repair_note, repair_surrogates, toolspec_from_dict,
                              toolspec_to_dict)
from ctxlab.messages import Item, ToolSpec

__all__ = ["SESSION_VERSION", "LineProblem", "ParsedSession", "parse_session", "regular_file", "new_header",
           "repair_header"]

SESSION_VERSION = 1
_HEADER_KEYS = {"type", "version", "id", "system", "tools", "model", "provider", "title", "created"}


class LineProblem(Exception):
    """A bad line while parsing: ``line`` (1-based) and what is wrong.

    Raised by :func:`parse_session`; ``Session.open`` turns it into a SessionError, the
    ``ctxlab-session`` reader into a TranscriptError. Chapter 02."""

    def __init__(self, line: int, problem: str) -> None:
        super().__init__(f"line {line}: {problem}")
        self.line, self.problem = line, problem


@dataclass(frozen=True)
class ParsedSession:
    """A session file's content, parsed but not yet a :class:`Session`: what :func:`parse_session`
    returns and :meth:`Session.from_parsed` builds from. Chapter 02."""

    header: dict[str, Any]
    records: list[tuple[int, Item, str | None]]  # (line, item, parent id)
    warnings: list[str]
    size: int  # bytes read (a byte-order mark included)
    ends_with_newline: bool
    torn_tail: tuple[int, int] | None  # (first line, count) of an unacknowledged torn tail


def parse_session(data: bytes, name: str, *, strict: bool = True) -> ParsedSession:
    """Parse a session file's bytes (``name``: the file name, for warnings). Chapter 02.

    Raises :class:`LineProblem` for a bad line. ``strict=False`` skips bad lines with a warning instead
    of raising, and attaches a record whose parent was skipped to the record before it (salvage, not
    repair). The one parser: ``Session.open`` and the ``ctxlab-session`` reader both use it."""
    size = len(data)
    if data.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark some editors add: not part of the header
        data = data[3:]
    if not data:
        raise LineProblem(1, "the file is empty; a session file starts with a header line")
    ends_with_newline = data.endswith(b"\n")
    raw_lines = data.split(b"\n")
    if ends_with_newline:
        raw_lines.pop()  # the empty string after the final newline
    warnings: list[str] = []

    decoded: list[Any] = []  # parsed JSON per line, or a LineProblem
    for n, raw in enumerate(raw_lines, start=1):
        found: list[Any] = []
        try:
            if b"\x00" in raw:
                raise ValueError(f"{raw.count(0):,} NUL byte(s) (a crash or a disk fault left zeros)")
            decoded.append(loads(raw, allow_nan=False, repaired=found))  # NaN: dumps never writes it
            warnings += [f"{name}:{n}: {repair_note(field, char)}" for field, _, char in found]
        except UnicodeDecodeError as exc:
            decoded.append(LineProblem(n, f"not valid UTF-8 (byte {exc.start + 1})"))
        except json.JSONDecodeError as exc:
            decoded.append(LineProblem(n, f"not valid JSON: {exc.msg} (column {exc.colno})"))
        except ValueError as exc:  # NaN, Infinity, 1e400
            decoded.append(LineProblem(n, f"not valid JSON: {exc}"))

    header = decoded[0]
    if isinstance(header, LineProblem) or not isinstance(header, dict) or header.get("type") != "session":
        raise LineProblem(1, "the first line must be a session header "
                              '{"type": "session", "version": 1, ...}')
    if header.get("version") != SESSION_VERSION:
        raise LineProblem(1, f"session version {header.get('version')!r} is not supported "
                              f"(this ctxlab reads version {SESSION_VERSION})")
    unknown = header.keys() - _HEADER_KEYS
    if unknown:
        raise LineProblem(1, f"unknown header key {sorted(unknown)[0]!r}")
    if not isinstance(header.get("id"), str) or not header["id"]:
        raise LineProblem(1, "the header needs a non-empty string 'id'")
    system = header.get("system") or []
    if not isinstance(system, list) or not all(isinstance(b, str) for b in system):
        raise LineProblem(1, "header 'system' must be a list of strings (the prompt's blocks)")
    odd = next((k for k in ("model", "provider", "title", "created")
                if not isinstance(header.get(k), (str, type(None)))), None)
    if odd:
        raise LineProblem(1, f"header {odd!r} must be a string or null, got {type(header[odd]).__name__}")
    try:
        if not isinstance(header.get("tools") or [], list):
            raise ValueError("must be a list of tool definitions")
        for spec in header.get("tools") or ():
            toolspec_from_dict(spec)
    except (ValueError, TypeError) as exc:
        raise LineProblem(1, f"header 'tools': {exc}") from None

    # Appends only touch the end, so a crash leaves bad lines only after the last good one: the torn tail.
    last = len(decoded)
    last_good = max(n for n, o in enumerate(decoded, start=1) if not isinstance(o, LineProblem))
    torn_tail = (last_good + 1, last - last_good) if last > last_good else None
    marked: dict[int, int] = {}  # bad line -> line of the torn marker naming it (checked when reached)
    for n, obj in enumerate(decoded, start=1):
        if isinstance(obj, dict) and obj.get("type") == "torn" and isinstance(obj.get("line"), int):
            marked.update((k, n) for k in range(obj["line"], n))
    records: list[tuple[int, Item, str | None]] = []
    line_of: dict[str, int] = {}  # item id -> line
    for n, obj in enumerate(decoded[1:], start=2):
        if isinstance(obj, LineProblem):
            if n > last_good:
                what = ("torn last line (no newline, not valid JSON)" if n == last and not ends_with_newline
                        else "torn line at the end of the file (a write cut short)")
                warnings.append(f"{name}:{n}: {what} skipped")
                continue
            if n in marked:
                warnings.append(f"{name}:{n}: torn line (marked at line {marked[n]}) skipped")
                continue
            if strict:
                raise obj
            warnings.append(f"{name}:{n}: {obj.problem}; skipped")
            continue
        try:
            if not isinstance(obj, dict):
                raise ValueError("a record must be a JSON object")
            if obj.get("type") == "torn":
                first, count = obj.get("line"), obj.get("count", 1)
                if (obj.keys() - {"type", "line", "count"} or type(first) is not int or type(count) is not int
                        or first < 2 or first + count != n
                        or not all(isinstance(decoded[k - 1], LineProblem) for k in range(first, n))):
                    raise ValueError(f"torn marker must name the bad lines just before it (up to line {n - 1})")
                continue
            if "parent" not in obj:
                raise ValueError("missing key 'parent'")
            parent = obj["parent"]
            item = item_from_dict({k: v for k, v in obj.items() if k != "parent"})
            if not item.id:
                raise ValueError("empty id")
            if item.id in line_of:
                raise ValueError(f"duplicate id {item.id!r} (first at line {line_of[item.id]})")
            if parent is not None and parent not in line_of:
                later = next((m for m, o in enumerate(decoded, start=1)
                              if isinstance(o, dict) and o.get("id") == parent and m >= n), None)
                if later is not None:
                    raise ValueError(f"parent {parent!r} is at line {later}, not before this line: "
                                     "records must follow their parent (a cycle or a reordered file)")
                if strict or not records:
                    raise ValueError(f"parent {parent!r} points nowhere (no earlier record has that id)")
                warnings.append(f"{name}:{n}: parent {parent!r} is missing; attached to {records[-1][1].id!r}, "
                                "the record before it")
                parent = records[-1][1].id
        except (ValueError, KeyError, TypeError) as exc:
            problem = exc.args[0] if isinstance(exc, ValueError) and exc.args else repr(exc)
            if strict:
                raise LineProblem(n, str(problem)) from None
            warnings.append(f"{name}:{n}: {problem}; skipped")
            continue
        line_of[item.id] = n
        records.append((n, item, parent))
    return ParsedSession(header, records, warnings, size, ends_with_newline, torn_tail)


def regular_file(file: Path, st: os.stat_result) -> os.stat_result:
    """``st`` if it is a regular file's, else the SessionError naming what ``file`` is. Chapter 02."""
    if not stat.S_ISREG(st.st_mode):
        what = next((name for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                                              (stat.S_ISCHR, "a character device"), (stat.S_ISSOCK, "a socket"))
                     if test(st.st_mode)), "not a regular file")
        raise SessionError(f"{file}: cannot be read as a session file (it is {what}). Pass the path of a .jsonl file.")
    return st


def new_header(id: str, system: Iterable[str], tools: Iterable[ToolSpec], model: str | None,
               provider: str | None, title: str | None, created: str | None) -> dict[str, Any]:
    """The first line of a new session file, as a dict: ``{"type": "session", "version": 1, "id": ..., ...}``.
    Chapter 02."""
    return {"type": "session", "version": SESSION_VERSION, "id": id, "system": list(system),
            "tools": [toolspec_to_dict(t) for t in tools], "model": model, "provider": provider,
            "title": title, "created": created}


def repair_header(header: dict[str, Any]) -> list[str]:
    """Lone surrogates in a new header (no UTF-8 can hold one) become U+FFFD, in place; the warnings saying so.
    Chapter 02."""
    found: list[Any] = []
    repair_surrogates(header, found)
    return [f"header: {repair_note(field, char)}" for field, _, char in found]
