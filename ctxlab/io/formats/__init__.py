"""Transcript readers: find out which agent wrote a file, and read it into messages and entries.

``load("session.jsonl")`` sniffs the first 64 KiB of the file (then, if nothing claimed it and it is
one JSON document of up to 64 MiB, the whole parsed document), picks a reader and returns a
:class:`~ctxlab.messages.Transcript`. Each reader is a module (or module-like object) with

* ``NAME`` — the format's name (``"pi"``, ``"claude-code"``, ...);
* ``sniff(path, head) -> bool`` — ``head`` is the first 64 KiB of the file as text;
* ``read(path, *, strict=True) -> Transcript``;
* optionally ``sniff_value(path, value) -> bool`` — asked, when no ``sniff`` claimed the file and
  it is one JSON document, with the whole parsed document (see :func:`detect`); and ``EXPECTS``
  (a phrase: what it reads) / ``EXPECT_KEYS`` for the message when no reader claims a file.

Detection tries :data:`READERS` in order; the first reader whose ``sniff`` says yes reads the
file. With ``strict=True`` a bad line raises :class:`~ctxlab.base.errors.TranscriptError` naming the
file, the line and the field; with ``strict=False`` it is skipped and recorded in the notes as
``"skipped line N: reason"`` — never dropped silently. Two things are refused before any reader
runs: a path that is not a regular file (a FIFO, ``/dev/zero``, a socket, a directory; decided
before it is opened) and a binary file. One thing is repaired rather than refused, in strict mode
too: a lone surrogate (``"\\ud800"``, legal JSON that no UTF-8 text can hold) becomes U+FFFD, and
a note names the file, the line and the field (:func:`load` adds the notes of every reader).

This module also holds the small helpers the readers share (reading JSON Lines, JSON with line
numbers, turning a pydantic ``ValidationError`` into a ``TranscriptError``). Plumbing, not a
chapter; the types it produces are taught in chapter 02.
"""

from __future__ import annotations

import bisect
from collections import Counter
import hashlib
import contextlib
import contextvars
import dataclasses
import importlib
import json
import json.decoder
import json.scanner
import math
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, Callable, Iterator, Protocol, Sequence, TypeVar

from pydantic import BaseModel, BeforeValidator, Field, ValidationError

from ctxlab.io.codec import MAX_TOKEN_COUNT, Repair, collect_repairs, loads, nonfinite, might_hold_surrogates, repair_note
from ctxlab.io.codec import repair_surrogates, too_deep
from ctxlab.base.errors import TranscriptError, UnknownFormatError
from ctxlab.messages import ToolCallPart, Transcript
from ctxlab.io.formats._detect import binary_at, document, read_regular, regular_lines, unknown_format, value_head

__all__ = ["READERS", "UNAVAILABLE", "Reader", "detect", "load", "names"]

HEAD_CHARS = 64 * 1024
STRICT_HINT = "Fix the line or load with strict=False to skip it."
TEXT_HINT = "Transcripts are UTF-8 text (JSON or JSON Lines): pass the file the agent wrote, re-saved as UTF-8."

def _count(value: Any) -> Any:
    """A token count as recorded: a whole JSON number (``12`` or ``12.0``); a string or a boolean is refused."""
    if isinstance(value, (bool, str)):
        raise ValueError(f"a token count is a JSON number, not a {'boolean' if isinstance(value, bool) else 'string'}")
    if isinstance(value, float) and not math.isfinite(value):  # NaN, or 1e400 read as infinity
        raise ValueError("input should be a finite number")
    return int(value) if isinstance(value, float) and value.is_integer() else value


TokenCount = Annotated[int, BeforeValidator(_count), Field(ge=0, le=MAX_TOKEN_COUNT, strict=True)]
"""A recorded token count for the readers' models: a JSON integer in 0 .. 2**53 - 1
(:data:`ctxlab.io.codec.MAX_TOKEN_COUNT`); NaN, ``1e400``, ``10**30``, ``12.5``, ``"12"`` or ``true`` is a
damaged line (strict: a string or a boolean is never taken for a count)."""


class Reader(Protocol):
    """What a reader exposes (a module, or an object shaped like one)."""

    NAME: str

    def sniff(self, path: Path, head: str) -> bool: ...

    def read(self, path: Path, *, strict: bool = True) -> Transcript: ...

    # optional: def sniff_value(self, path: Path, value: Any) -> bool: ...  (see detect)


# ---------------------------------------------------------------- shared helpers for readers

M = TypeVar("M", bound=BaseModel)


def _sentence(text: str) -> str:
    return text if text.endswith((".", "!", "?")) else text + "."


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def field_path(at: str, loc: Sequence[Any]) -> str:
    """``field_path("message", ("content", 0, "id"))`` → ``"message.content[0].id"``."""
    out = at
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def check(model: type[M], data: Any, *, file: str, line: int | None, at: str = "") -> M:
    """Validate ``data`` with a pydantic model; a failure becomes a :class:`TranscriptError`.

    Only the first problem is spelled out (the rest are counted), and the library traceback is
    cut (``from None``): the user reads ``pi.jsonl:40: field 'message.role': ...``.
    """
    try:
        return model.model_validate(data)
    except ValidationError as err:
        problems = err.errors(include_url=False)
        first = problems[0]
        msg = first["msg"].removeprefix("Value error, ")  # a validator's own sentence, as it wrote it
        problem = msg[:1].lower() + msg[1:]
        if first["type"] != "missing":
            problem += f", got {_short(first.get('input'))}"
        if len(problems) > 1:
            problem += f" (and {len(problems) - 1} more problem(s) on this line)"
        raise TranscriptError(file, line, _sentence(problem), field=field_path(at, first["loc"]) or None,
                              hint=STRICT_HINT) from None


def interned(value: Any) -> Any:
    """A short name a transcript repeats on every line (a model, a provider, a tool's name, a JSON key) as
    one shared string (:func:`sys.intern`): a 200 MB file then holds each name once, not once per line.
    Anything that is not a ``str`` comes back as it is. Texts are not interned: they are rarely repeated."""
    return sys.intern(value) if type(value) is str else value


def interned_keys(value: Any, depth: int = 2) -> Any:
    """A parsed JSON object kept as recorded (``Usage.raw``), rebuilt with its keys interned — and those of the
    objects it holds, ``depth`` levels down (deeper values are kept as they are); equal to ``value``.
    ``{"input": 3, "cost": {"total": 0.1}}`` → an equal dict. A parsed line's keys are new strings on every
    line (the parser shares them within one document only): ten keys of usage cost ~600 bytes a line."""
    if depth > 0 and isinstance(value, dict):
        return {interned(k): interned_keys(v, depth - 1) for k, v in value.items()}
    return value


def bad(file: str, line: int | None, problem: str, field: str | None = None) -> TranscriptError:
    """A bad-line error with the standard hint."""
    return TranscriptError(file, line, _sentence(problem), field=field, hint=STRICT_HINT)


def skip_note(err: TranscriptError) -> str:
    """The note recorded when ``strict=False`` skips a line: ``"skipped line 3: field 'x': ..."``."""
    what = f"field {err.field!r}: {err.problem}" if err.field else err.problem
    return f"skipped line {err.line}: {what}" if err.line is not None else f"skipped: {what}"


def nonfinite_error(file: str, line: int | None, field: str, number: float, hint: str = STRICT_HINT) -> TranscriptError:
    """A NaN or an infinity in a transcript, in any field, worded as the readers' own check words it."""
    return TranscriptError(file, line, f"input should be a finite number, got {number} (JSON has no NaN or Infinity, "
                           "and a number as large as 1e999 reads as infinity).", field=field or None, hint=hint)


def nonfinite_note(err: TranscriptError) -> str:
    """The note when ``strict=False`` reads on: the line is kept as read (a reader that reads the field skips it)."""
    where = f"{err.file}:{err.line}" if err.line is not None else err.file
    return f"{where}: field {err.field!r}: {err.problem.removesuffix('.')}; kept as read"


_NONFINITE: contextvars.ContextVar[list[TranscriptError] | None] = contextvars.ContextVar("nonfinite", default=None)


def _msg(err: json.JSONDecodeError) -> str:
    """The parser's complaint, without the dangling "at" some end with ("Unterminated string starting at")."""
    return err.msg.removesuffix(" at")


def read_bytes(path: Path) -> bytes:
    """The file's bytes, a UTF-8 byte-order mark dropped; a missing file names the path, and anything
    not a regular file (a directory, a FIFO, a device, a socket) is refused before it is opened."""
    data = read_regular(path)
    return data[3:] if data.startswith(b"\xef\xbb\xbf") else data


def _not_utf8(file: str, data: bytes, err: UnicodeDecodeError, first_line: int = 1,
              hint: str = TEXT_HINT) -> TranscriptError:
    """The error for a byte that is not UTF-8 in ``data`` (which starts at line ``first_line``),
    naming its line and its position in that line."""
    line_start = data.rfind(b"\n", 0, err.start) + 1
    return TranscriptError(file, first_line + data.count(b"\n", 0, err.start),
                           f"not UTF-8 text (byte {data[err.start]:#04x} at column {err.start - line_start + 1}).",
                           hint=hint)


def read_text(path: Path) -> str:
    """The file as text (UTF-8, a byte-order mark dropped); errors name the file and the line."""
    data = read_bytes(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise _not_utf8(path.name, data, err) from None


def iter_jsonl(path: Path, *, strict: bool, notes: list[str],
               once: bool = False) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """Yield ``(line_number, index, object)`` per non-blank line of a JSON Lines file.

    ``once=True`` is for formats whose every line is a distinct record (an event with its own id
    and time): a line that repeats an earlier one byte for byte (a copy pasted twice, a log
    appended to twice) is read once and noted, ``"line 9 repeats line 4 byte for byte: read once"``,
    never counted twice. (Bare chat messages can repeat legitimately: those readers leave it off.)

    ``index`` counts non-blank lines from 0 (pi addresses entries that way). A line that is not
    UTF-8, holds NUL bytes (zeros a crash left), is not JSON (nesting too deep for Python's parser
    included) or not a JSON object raises, or with ``strict=False`` is skipped with a note. A lone
    surrogate is replaced with U+FFFD and noted (``"pi.jsonl:3: field 'message.content': a lone
    surrogate ..."``), in strict mode too: a declared repair, not a damaged line. Splits on ``\\n``
    only: a raw U+2028 inside a JSON string is legal and must not shift line numbers. The file is read
    a line at a time (:func:`._detect.regular_lines`): a reader that does not keep every object holds
    one line, not the file.
    """
    index = -1
    seen: dict[bytes, int] = {}  # a line's sha256 -> its first line number (once=True)
    for number, raw_bytes in enumerate(regular_lines(path), start=1):  # a line at a time: never the whole file
        raw_bytes = raw_bytes.strip()
        if not raw_bytes:
            continue
        if once:
            digest = hashlib.sha256(raw_bytes).digest()
            if digest in seen:
                notes.append(f"line {number} repeats line {seen[digest]} byte for byte: read once")
                continue
            seen[digest] = number
        index += 1
        obj, error, found = None, None, []
        try:
            if b"\x00" in raw_bytes:
                raise _nul_line(path.name, number, raw_bytes)
            text = raw_bytes.decode("utf-8")  # strictly: a UnicodeDecodeError names the byte
            obj = loads(text, repaired=found)
        except TranscriptError as err:
            error = err
        except UnicodeDecodeError as err:
            error = _not_utf8(path.name, raw_bytes, err, number,
                              TEXT_HINT + " Or load with strict=False to skip the line.")
        except json.JSONDecodeError as err:
            error = bad(path.name, number, f"not valid JSON ({_msg(err)} at column {err.colno})")
        else:
            error = None if isinstance(obj, dict) else bad(path.name, number,
                                                           f"expected a JSON object, got {type(obj).__name__}")
            # in any field, read or not; most lines are looked at in C only (_may_be_nonfinite)
            bad_number = nonfinite(obj, text) if error is None and _may_be_nonfinite(raw_bytes) else None
            if bad_number:
                err = nonfinite_error(path.name, number, bad_number[0], bad_number[1])
                if strict:
                    error = err
                else:
                    notes.append(nonfinite_note(err))
        if error is not None:
            if strict:
                raise error
            notes.append(skip_note(error))
            continue
        if found:
            notes += _repaired(path.name, found, lambda _: number)
        yield number, index, obj


_DIGITS_AND_E = bytes(ord("0") if chr(b) in "0123456789" else ord("e") if chr(b) in "eE" else
                      ord("+") if chr(b) in "+-" else ord(".") for b in range(256))


def _may_be_nonfinite(raw: bytes) -> bool:
    """Whether a line may hold NaN, Infinity or a number that overflows: what ``nonfinite``'s own first look
    (``NaN|Infinity|[eE][+-]?\\d{3}``, a regular expression: ~20 MB/s) would find, decided with ``in`` on the
    bytes and one ``translate`` (digits → 0, e/E → e, +/- → +) for ASCII lines (~1 GB/s); another line is left
    to that regular expression (a ``\\d`` matches non-ASCII digits too). False: the line holds none."""
    if b"NaN" in raw or b"Infinity" in raw or not raw.isascii():
        return True
    shape = raw.translate(_DIGITS_AND_E)
    return b"e000" in shape or b"e+000" in shape


def _nul_line(file: str, line: int, raw: bytes) -> TranscriptError:
    return bad(file, line, f"{raw.count(0):,} NUL byte(s), the first at column {raw.index(0) + 1}: not JSON text "
                           "(a crash or a disk fault can leave zeros in a file)")


_REPAIRED: contextvars.ContextVar[list[tuple[str, str]] | None] = contextvars.ContextVar("repaired", default=None)


def _repaired(file: str, found: list[Repair], line_of: Callable[[Any], int | None]) -> list[str]:
    """The notes for lone surrogates replaced in ``file`` (also handed to the :func:`load` in progress)."""
    notes = []
    for field, owner, char in found:
        line = line_of(owner)
        notes.append(f"{file}:{line}: {repair_note(field, char)}" if line else f"{file}: {repair_note(field, char)}")
    said = _REPAIRED.get()
    if said is not None:
        said += [(field, note) for (field, _, _), note in zip(found, notes)]
    return notes


def load_json(path: Path) -> tuple[Any, Callable[[Any], int | None]]:
    """Parse a whole JSON file; also return ``line_of(obj)``: the 1-based line where a parsed
    dict began (``None`` for anything else). ``line_of(data["history"][3])`` → ``57``. Lone surrogates
    are replaced with U+FFFD; :func:`load` adds the notes naming the line of the object and the field."""
    text = read_text(path)
    starts: dict[int, int] = {}  # id(dict) -> character offset of its "{"
    decoder = json.JSONDecoder()
    plain_object = json.decoder.JSONObject

    def parse_object(s_and_end: tuple[str, int], *args: Any, **kwargs: Any) -> tuple[Any, int]:
        obj, end = plain_object(s_and_end, *args, **kwargs)
        starts[id(obj)] = s_and_end[1] - 1
        return obj, end

    decoder.parse_object = parse_object  # type: ignore[assignment]
    decoder.scan_once = json.scanner.py_make_scanner(decoder)  # the C scanner takes no hooks
    try:
        try:
            data = decoder.decode(text)
        except RecursionError:  # Python's parser recurses once per level: say where and how deep instead
            raise too_deep(text) from None
    except json.JSONDecodeError as err:
        raise TranscriptError(path.name, err.lineno, f"not valid JSON ({_msg(err)} at column {err.colno}).",
                              hint="The file may be truncated or not JSON at all.") from None
    newlines = [m.start() for m in re.finditer("\n", text)]
    bad_number = nonfinite(data, text)  # in any field, read or not
    if bad_number:
        field, number, at = bad_number
        err = nonfinite_error(path.name, None if at is None else bisect.bisect_left(newlines, at) + 1, field, number,
                              hint="Replace it with a number or null, or load with strict=False to read on.")
        pending = _NONFINITE.get()
        if pending is None:  # not inside load(): strict
            raise err
        pending.append(err)  # load() raises it after the reader (whose own check names a field it reads first)

    def line_of(obj: Any) -> int | None:
        offset = starts.get(id(obj))
        return None if offset is None else bisect.bisect_left(newlines, offset) + 1

    if might_hold_surrogates(text, decoded=True):  # a lone one becomes U+FFFD, noted at the object's line
        found: list[Repair] = []
        data = repair_surrogates(data, found)
        _repaired(path.name, found, line_of)
    return data, line_of


def head_objects(head: str, limit: int = 20) -> list[dict[str, Any]]:
    """The JSON objects on the first ``limit`` non-blank lines of ``head`` (unparsable ones skipped)."""
    out: list[dict[str, Any]] = []
    for raw in head.split("\n"):
        if len(out) >= limit:
            break
        raw = raw.strip()
        if raw.startswith("{"):
            try:
                obj = loads(raw, repaired=[])  # a sniff: the reader notes what it repairs
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict):
                out.append(obj)
    return out


class LeftOut(Counter):
    """Lines a reader leaves out (never sent to a model), counted per kind, with the first line each
    kind was seen on where the reader knows it. ``left.add("progress/hook", 12)`` twice, then
    ``left.notes("UI records")`` → ``["left out 2 'progress/hook' line(s) (first at line 12): UI records"]``.
    A plain ``left[kind] += 1`` still counts (no line then)."""

    def __init__(self) -> None:
        super().__init__()
        self.first: dict[str, int] = {}

    def add(self, kind: str, line: int) -> None:
        self[kind] += 1
        self.first.setdefault(kind, line)

    def notes(self, why: str) -> list[str]:
        return [f"left out {n} '{k}' line(s){f' (first at line {self.first[k]})' if k in self.first else ''}: {why}"
                for k, n in self.items()]


def unknown_block_text(block: Any) -> str:
    """An unmodelled content block kept as its JSON text, so its size still counts."""
    return json.dumps(block, ensure_ascii=False)


# ---------------------------------------------------------------- the registry

# codex ... openai_responses come before openai_chat, whose sniff takes any list of role/content
# messages; their sniffs leave SWE-agent and tau-bench files to openai_chat's sub-readers
_ORDER = ("ctxlab_session", "claude_code", "pi", "sharegpt", "openhands", "codex", "proxy_log", "gemini_cli",
          "copilot_cli", "openhands_events", "aider", "messages_jsonl", "anthropic_messages", "openai_responses",
          "openai_chat")
UNAVAILABLE: dict[str, str] = {}  # reader module -> why it could not be imported


def _load_readers() -> tuple[Reader, ...]:
    found: list[Any] = []
    for name in _ORDER:
        try:
            module: ModuleType = importlib.import_module(f"{__name__}.{name}")
        except ImportError as err:  # ctxlab_session is written separately; run without it
            UNAVAILABLE[name] = str(err)
            continue
        found.extend(getattr(module, "SUB_READERS", ()))  # openai_chat also holds swe-agent, tau-bench
        found.append(module)
    return tuple(found)


# Formats recognised but not read yet: (name, what it is, test on the head). None at present.
_NOT_YET: tuple[tuple[str, str, Callable[[str], bool]], ...] = ()


def names() -> tuple[str, ...]:
    """The names of the formats :func:`load` can read, in detection order. Chapter 02."""
    return tuple(r.NAME for r in READERS)


def _head(path: Path) -> str:
    data = read_regular(path, HEAD_CHARS)  # a FIFO, a device, a socket or a directory: refused unopened
    if data.startswith(b"\x1f\x8b"):
        raise TranscriptError(path.name, None, "a gzip-compressed file, not a transcript.",
                              hint=f"Decompress it first (gunzip {path.name}) and pass the result.")
    nul = binary_at(data)  # UTF-16 and binary files; a later NUL line of JSON Lines is the reader's to name
    if nul is not None:
        raise TranscriptError(path.name, None, f"a binary file, not a transcript (a NUL byte at byte "
                                               f"{nul + 1}).", hint=TEXT_HINT)
    return data.decode("utf-8", errors="replace").lstrip("\ufeff")


def _sniff_value(reader: Reader, path: Path, value: Any, view: str | None) -> bool:
    """The second look: ``reader.sniff_value(path, value)`` when the reader has one, else its
    ``sniff`` on :func:`._detect.value_head` of the document (``view``; None: it already saw all)."""
    by_value = getattr(reader, "sniff_value", None)
    if by_value is not None:
        return bool(by_value(path, value))
    return view is not None and reader.sniff(path, view)


def detect(path: str | Path) -> str:
    """The format name of a transcript file. ``detect("run.traj")`` → ``"swe-agent"``. Chapter 02.

    First every reader's ``sniff(path, head)`` looks at the first 64 KiB, in :data:`READERS` order.
    When none claims the file and it is one JSON document (parsed whole, up to
    :data:`._detect.DOCUMENT_LIMIT` = 64 MiB), each reader looks again at the parsed value: its
    optional ``sniff_value(path, value)``, or its ``sniff`` shown the document re-serialised
    compactly (every key, long strings and lists cut) — so keys beyond the first 64 KiB count.
    No claim raises :class:`UnknownFormatError` naming the deciding line, the nearest readers and
    why they said no (``err.reasons``: every reader's reason).
    """
    path = Path(path)
    head = _head(path)
    if not head.strip():
        raise TranscriptError(path.name, None, "the file is empty (or only white space): there is nothing to read.",
                              hint="Pass the transcript the agent wrote; it may still be writing, or was cut off.")
    for reader in READERS:
        if reader.sniff(path, head):
            return reader.NAME
    value, why_not = document(path, head)
    if value is not None:
        try:
            view = value_head(value) if path.stat().st_size > HEAD_CHARS else None
            for reader in READERS:
                if _sniff_value(reader, path, value, view):
                    return reader.NAME
        except RecursionError:  # nested deeper than a sniff can walk: no claim
            pass
    for name, what, test in _NOT_YET:
        if test(head):
            raise UnknownFormatError(path.name, None, f"format not supported yet: this looks like {what} ({name}).",
                                  hint=f"ctxlab reads {', '.join(names())}; convert the file to OpenAI chat "
                                       "messages (a JSON list of {role, content}) to use it now.")
    raise unknown_format(path, head, value, why_not, READERS,
                         hint=f"Known formats: {', '.join(names())}. Pass format=NAME to load() if you know "
                              "which it is, or convert the file to a JSON list of OpenAI chat messages.")


def load(path: str | Path, *, strict: bool = True, format: str | None = None) -> Transcript:
    """Read a transcript, detecting its format (or using ``format``). Taught in chapter 02.

    ``load("before-compaction.jsonl").conversation().messages[0].role`` → ``"user"``.

    Every lone surrogate a reader met (in a line, or in JSON text held in a field) is U+FFFD in
    what it returns, and said once in ``Transcript.notes`` if the reader did not say it already;
    strict mode does not raise for it (a declared repair). A path that is not a regular file is
    refused before it is opened, ``format`` given or not. A leading ``~`` is the user's home directory
    (``load("~/.pi/agent/sessions/x.jsonl")``), as a shell would read it.
    """
    path = Path(path).expanduser()
    read_regular(path, 0)
    name = format or detect(path)
    for reader in READERS:
        if reader.NAME == name:
            said: list[tuple[str, str]] = []
            pending: list[TranscriptError] = []
            token, numbers = _REPAIRED.set(said), _NONFINITE.set(pending)
            try:
                with collect_repairs() as nested:
                    transcript = _with_repairs(reader.read(path, strict=strict), said, nested)
            finally:
                _REPAIRED.reset(token)
                _NONFINITE.reset(numbers)
            if pending and strict:
                raise pending[0]
            notes = [n for n in map(nonfinite_note, pending) if n not in transcript.notes]
            return dataclasses.replace(transcript, notes=transcript.notes + tuple(notes)) if notes else transcript
    raise TranscriptError(path.name, None, f"no reader named {name!r}.", hint=f"Known formats: {', '.join(names())}.")


def _with_repairs(transcript: Transcript, said: list[tuple[str, str]], nested: list[Repair]) -> Transcript:
    """``transcript`` with a note for each repair the reader did not put in its notes already, and for
    each tool call whose arguments (JSON text kept verbatim) hold a lone surrogate escape: rendering
    decodes them with :func:`~ctxlab.io.codec.loads`, which makes it U+FFFD."""
    have = {*transcript.notes, *(n for c in transcript.conversations for n in c.notes)}
    fields = {field for field, _ in said}
    extra = [note for _, note in said if note not in have]
    extra += [f"{transcript.file}: in JSON text held in a string, {repair_note(field, char)}"
              for field, _, char in nested if field not in fields]
    for msg, part in ((m, p) for c in transcript.conversations for m in c.messages for p in m.parts
                      if isinstance(p, ToolCallPart) and might_hold_surrogates(p.arguments)):
        found: list[Repair] = []
        with contextlib.suppress(ValueError):
            loads(part.arguments, repaired=found)
        where = f"{msg.source.file}:{msg.source.line}" if msg.source else transcript.file
        extra += [f"{where}: the arguments of tool call {part.id!r} (kept verbatim), {repair_note(field, char)} "
                  "when rendered" for field, _, char in found]
    extra = list(dict.fromkeys(extra))
    return dataclasses.replace(transcript, notes=transcript.notes + tuple(extra)) if extra else transcript


READERS: tuple[Reader, ...] = _load_readers()
