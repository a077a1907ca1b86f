"""Detection helpers for :func:`ctxlab.io.formats.detect`: what kind of file it is, the whole-document pass and
the "unknown format" message.

First, before anything is read: :func:`read_regular` refuses a path that is not a regular file
(a FIFO, a device such as ``/dev/zero``, a socket, a directory) before opening it — a FIFO's open
blocks, ``/dev/zero`` never ends — and :func:`binary_at` tells a binary file (UTF-16, a PNG) from
a JSON Lines file with a damaged line of NUL bytes. Then two jobs, both only reached when a cheap
first look at the file's first 64 KiB decided nothing:

* :func:`document` parses a file that is ONE JSON document whole (up to :data:`DOCUMENT_LIMIT`
  bytes), and :func:`value_head` re-serialises the parsed value compactly (long strings and lists
  cut, keys all kept) so a reader's ``sniff(path, head)`` can see keys that sat beyond the first
  64 KiB — a 69 KB request body whose ``messages`` come after 30 tool definitions;
* :func:`unknown_format` builds the :class:`~ctxlab.base.errors.UnknownFormatError` that says what the
  file looks like (its first line, or its top-level shape), which readers were considered, why
  each said no (``err.reasons``: reader name -> reason) and the nearest few.

A reader may state what it reads in ``EXPECTS`` (a short phrase) and the keys whose presence
points to it in ``EXPECT_KEYS``; readers that do not are described from :data:`_EXPECTS` below.
Plumbing, not a chapter (chapter 02 shows detection).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

from ctxlab.io.codec import loads
from ctxlab.base.errors import TranscriptError, UnknownFormatError

DOCUMENT_LIMIT = 64 * 1024 * 1024
"""Bytes: a file that is one JSON document is parsed whole for detection up to this size (64 MiB)."""

# NAME -> (shape: "jsonl" | "json" | "text", what it reads, keys that point to it, keys it cannot do without)
_EXPECTS: dict[str, tuple[str, str, frozenset[str], tuple[str, ...]]] = {
    "ctxlab-session": ("jsonl", 'JSON Lines opening with a {"type": "session", "version", "system", "tools"} header',
                       frozenset({"type", "version", "system", "tools", "parent", "parts"}), ("type", "version")),
    "claude-code": ("jsonl", 'JSON Lines of {"type", "uuid", "parentUuid", "sessionId", "message"} entries',
                    frozenset({"uuid", "parentUuid", "sessionId", "isSidechain", "message"}), ("uuid", "sessionId")),
    "pi": ("jsonl", 'JSON Lines opening with a {"type": "session", "version", "cwd"} header',
           frozenset({"type", "version", "cwd", "parentId", "message"}), ("type", "cwd")),
    "sharegpt": ("json", 'a JSON list of {"conversations": [{"from", "value"}]}',
                 frozenset({"conversations", "from", "value", "tools", "system"}), ("conversations", "from")),
    "openhands": ("jsonl", 'JSON Lines of {"instance_id", "history"} evaluation outputs',
                  frozenset({"instance_id", "history", "metadata", "instruction"}), ("instance_id", "history")),
    "codex": ("jsonl", 'JSON Lines of {"timestamp", "type", "payload"} rollout lines',
              frozenset({"timestamp", "type", "payload"}), ("payload",)),
    "proxy-log": ("jsonl", 'JSON Lines of logged {"request", "response"} pairs',
                  frozenset({"request", "response", "logged_at", "body"}), ("request", "response")),
    "gemini-cli": ("jsonl", 'a Gemini CLI chat recording ({"sessionId", "messages"} or its JSON Lines form)',
                   frozenset({"sessionId", "projectHash", "messages", "toolCalls", "thoughts"}), ("sessionId",)),
    "copilot-cli": ("jsonl", 'Copilot CLI events.jsonl ({"type": "session.start" | "user.message", "data"})',
                    frozenset({"type", "data", "id", "timestamp"}), ("data",)),
    "openhands-events": ("", 'OpenHands events: a saved trajectory (a JSON list of {"id", "source", "action" | '
                             '"observation"}) or a V1 event log ({"kind", "source", "id", "timestamp"} per line)',
                         frozenset({"kind", "source", "id", "timestamp"}), ("kind", "source")),
    "aider": ("text", "an aider .aider.chat.history.md (markdown with '# aider chat started at' headers)",
              frozenset(), ()),
    "messages-jsonl": ("jsonl", 'JSON Lines of {"messages": [...]} conversations or of bare {"role", "content"} '
                       "messages", frozenset({"messages", "role", "content", "tools"}), ("messages|role",)),
    "anthropic-messages": ("json", 'an Anthropic {"system", "tools", "messages"} body or message list with '
                           "tool_use / tool_result / thinking blocks",
                           frozenset({"messages", "system", "tools", "input_schema", "tool_use_id", "max_tokens"}),
                           ("messages|role",)),
    "openai-responses": ("json", 'OpenAI Responses items, a request {"input", "instructions"} or a response '
                         '{"object": "response", "output"}', frozenset({"input", "output", "instructions", "object",
                                                                        "call_id"}), ("input|output|call_id",)),
    "swe-agent": ("json", 'a SWE-agent .traj object with "history" and "environment"',
                  frozenset({"history", "trajectory", "environment", "replay_config", "info"}), ("history",)),
    "tau-bench": ("json", 'a JSON list of tau-bench runs with "task_id", "trial" and "traj"',
                  frozenset({"task_id", "trial", "traj", "reward"}), ("task_id", "traj")),
    "mini-swe-agent": ("json", 'a mini-swe-agent {"info", "messages", "trajectory_format"} trajectory',
                       frozenset({"info", "messages", "trajectory_format", "model_stats"}), ("trajectory_format",)),
    "openai-chat": ("json", 'a JSON list of {"role", "content"} chat messages or {"messages": [...]}',
                    frozenset({"messages", "role", "content", "tool_calls", "tool_call_id"}), ("messages|role",)),
}


_NOT_REGULAR = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (a named pipe)"),
                (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
_PIPE_HINT = ("ctxlab reads regular files only (a pipe or a device may wait, or never end): save the transcript "
              "to a file and pass that.")


def _unreadable(path: Path, err: OSError) -> TranscriptError:
    if isinstance(err, FileNotFoundError):
        return TranscriptError(path.name, None, f"no such file: {path}.",
                               hint="Check the path (relative paths start at the working directory).")
    return TranscriptError(path.name, None, f"cannot be read: {err.strerror or err} ({path}).",
                           hint="Pass the path of a transcript file.")


def _refuse(path: Path, mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    what = next((name for test, name in _NOT_REGULAR if test(mode)), "not a regular file")
    hint = "Pass one file inside it (a .jsonl or .json transcript)." if stat.S_ISDIR(mode) else _PIPE_HINT
    raise TranscriptError(path.name, None, f"is {what}, not a transcript file: {path}.", hint=hint)


def open_regular(path: Path) -> BinaryIO:
    """A regular file opened for reading bytes. A path that is not one raises a
    :class:`~ctxlab.base.errors.TranscriptError` of one line — ``fifo: is a FIFO (a named pipe), not a
    transcript file`` — decided by ``os.stat`` before it is opened (opening a FIFO blocks until a
    writer comes; ``/dev/zero`` never ends), and checked again on the open file (``O_NONBLOCK``, so
    a FIFO swapped in meanwhile cannot block either). Missing or unreadable files name the path."""
    try:
        _refuse(path, os.stat(path).st_mode)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as err:
        raise _unreadable(path, err) from None
    f = os.fdopen(fd, "rb")
    try:
        _refuse(path, os.fstat(fd).st_mode)
    except BaseException:
        f.close()
        raise
    return f


def read_regular(path: Path, limit: int = -1) -> bytes:
    """The first ``limit`` bytes of a regular file (all with -1), refused as :func:`open_regular` refuses."""
    with open_regular(path) as f:
        try:
            return f.read(limit)
        except OSError as err:
            raise _unreadable(path, err) from None


def regular_lines(path: Path) -> Iterator[bytes]:
    """The lines of a regular file as bytes, each with its ``\\n`` (split on ``\\n`` only, as
    ``bytes.split(b"\\n")`` splits), read a buffer at a time so a 200 MB file is never held whole; a
    UTF-8 byte-order mark at the start is dropped. Refused and named as :func:`open_regular` does;
    the file is closed when the iteration ends or is abandoned."""
    with open_regular(path) as f:
        try:
            first = True
            for line in f:
                if first:
                    line, first = (line[3:] if line.startswith(b"\xef\xbb\xbf") else line), False
                yield line
        except OSError as err:
            raise _unreadable(path, err) from None


def binary_at(data: bytes) -> int | None:
    """The offset of the NUL byte that makes a file whose first bytes are ``data`` a binary file, or
    ``None``. UTF-8 text never holds a NUL. A file that starts with one or holds one on its first
    line (UTF-16, most binary formats), whose first line is not UTF-8 (a PNG signature), or that is
    mostly NULs after a first line that is not a JSON object, is binary. A NUL on a later line of a
    JSON Lines file is a damaged line instead (a crash can leave zeros): the reader names the line."""
    nul = data.find(b"\x00")
    if nul < 0:
        return None
    end = data.find(b"\n")
    if end < 0 or nul < end:
        return nul
    try:
        first = data[:end].decode("utf-8").strip()
    except UnicodeDecodeError:
        return nul
    if data.count(0) * 2 > len(data) and not (first.startswith("{") and first.endswith("}")):
        return nul
    return None


def document(path: Path, head: str) -> tuple[Any, str | None]:
    """``(value, None)`` when the file is one JSON document, else ``(None, why not)`` (``why`` is
    ``None`` too when the file does not even start like one)."""
    if not head.lstrip().startswith(("{", "[")):
        return None, None
    size = path.stat().st_size
    if size > DOCUMENT_LIMIT:
        return None, f"{_size(size)}, more than the {_size(DOCUMENT_LIMIT)} ctxlab parses whole to detect a format"
    try:
        text = read_regular(path).decode("utf-8").lstrip("\ufeff")
    except TranscriptError as err:  # gone, or swapped for a FIFO since the first look
        return None, err.problem.rstrip(".")
    except UnicodeDecodeError as err:
        return None, f"not UTF-8 text ({type(err).__name__})"
    try:
        return loads(text, repaired=[]), None  # detection only: the reader reports what it repairs
    except json.JSONDecodeError as err:
        return None, f"not one JSON document (line {err.lineno}: {err.msg})"


def _size(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB".replace(".0 MiB", " MiB") if n >= 2**20 else f"{n:,} bytes"


def _shrink(value: Any, text: int, items: int, depth: int = 0) -> Any:
    if depth > 40:
        return "..."
    if isinstance(value, str):
        return value if len(value) <= text else value[:text] + "..."
    if isinstance(value, list):
        return [_shrink(v, text, items, depth + 1) for v in value[:items]]
    if isinstance(value, dict):
        return {k: _shrink(v, text, items, depth + 1) for k, v in list(value.items())[:max(items, 100)]}
    return value


def value_head(value: Any, limit: int = 64 * 1024) -> str:
    """The parsed document as compact JSON text of at most ``limit`` characters: every key kept (the
    first 100 of an object), long strings and lists cut. What a ``sniff(path, head)`` is shown on
    the second pass. ``{"tools": [30 big tools], "messages": [...]}`` → its ``"messages"`` key is in it."""
    text = ""
    for chars, items in ((2000, 200), (300, 50), (80, 12), (30, 4)):
        text = json.dumps(_shrink(value, chars, items), ensure_ascii=False)
        if len(text) <= limit:
            return text
    return text[:limit]


def _keys(value: Any, depth: int = 0, into: set[str] | None = None) -> set[str]:
    """Keys of the objects in ``value``, three levels down (the first 20 items of each list)."""
    into = set() if into is None else into
    if depth > 3:
        return into
    if isinstance(value, dict):
        into.update(k for k in value if isinstance(k, str))
        for v in value.values():
            _keys(v, depth + 1, into)
    elif isinstance(value, list):
        for v in value[:20]:
            _keys(v, depth + 1, into)
    return into


def _listing(keys: Iterable[str], limit: int = 6) -> str:
    keys = list(keys)
    shown = ", ".join(repr(k) for k in keys[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "") if keys else "no keys"


def _shape(head: str, value: Any, why_not_document: str | None) -> tuple[str, str, set[str]]:
    """``(shape, what the deciding line holds, keys seen)`` for the message."""
    first = next((line.strip() for line in head.split("\n") if line.strip()), "")
    number = next((n for n, line in enumerate(head.split("\n"), start=1) if line.strip()), 1)
    if value is not None:
        if isinstance(value, dict):
            return "json", f"line {number} opens one JSON object with keys {_listing(value)}", _keys(value)
        if isinstance(value, list):
            kinds = {type(v).__name__ for v in value[:50]}
            firsts = value[0] if value and isinstance(value[0], dict) else {}
            what = f"{len(value)} item(s)" + (f", the first an object with keys {_listing(firsts)}" if firsts else
                                               f" ({', '.join(sorted(kinds))})" if kinds else "")
            return "json", f"line {number} opens one JSON list of {what}", _keys(value)
        return "json", f"line {number} is a bare JSON {type(value).__name__}", set()
    try:
        obj = loads(first)
    except (json.JSONDecodeError, ValueError):
        obj = None
    if isinstance(obj, dict):
        more = f" (the file is {why_not_document})" if why_not_document and "ctxlab parses whole" in why_not_document else ""
        return "jsonl", f"line {number} is a JSON object with keys {_listing(obj)}{more}", _keys(obj)
    if why_not_document:
        return "json", f"line {number} starts JSON, but the file is {why_not_document}", set()
    return "text", f"line {number} is not JSON ({first[:40]!r})", set()


def _reason(name: str, reader: Any, shape: str, keys: set[str]) -> tuple[int, str]:
    """``(score, why this reader said no)``: the higher the score, the nearer the file came
    (one point per key that points to the reader, one for the right shape and minus one for the
    wrong one, minus one for a missing key the reader cannot do without)."""
    want_shape, what, pointing, needed = _EXPECTS.get(name, ("", "", frozenset(), ()))
    what = getattr(reader, "EXPECTS", None) or what or "its own format (its sniff said no)"
    pointing = frozenset(getattr(reader, "EXPECT_KEYS", ()) or pointing)
    missing = [" or ".join(repr(k) for k in alts.split("|")) for alts in needed
               if not any(k in keys for k in alts.split("|"))]
    score = len(pointing & keys) + (1 if want_shape == shape else -1 if want_shape else 0) - bool(missing)
    if want_shape and want_shape != shape:
        why = f"reads {what}: this file is {_SHAPES[shape]}"
    elif missing:
        why = f"reads {what}: no {', '.join(missing)} key here"
    else:
        why = f"reads {what}: the keys are here but not in that shape"
    return score, why


_SHAPES = {"json": "one JSON document", "jsonl": "JSON Lines", "text": "not JSON"}


def unknown_format(path: Path, head: str, value: Any, why_not_document: str | None,
                   readers: Iterable[Any], hint: str) -> UnknownFormatError:
    """The error for a file no reader claims: what it looks like, the nearest readers and why they
    said no; ``err.reasons`` maps every reader considered to its reason."""
    shape, what, keys = _shape(head, value, why_not_document)
    scored = {r.NAME: _reason(r.NAME, r, shape, keys) for r in readers}
    near = sorted((n for n, (s, _) in scored.items() if s > 0), key=lambda n: -scored[n][0])[:2]
    if near:
        said = f" (nearest: {'; '.join(f'{n}, which {scored[n][1]}' for n in near)})"
    else:  # nothing came near: say what the readers of this shape look for
        wanted = dict.fromkeys(needed[0].split("|")[0] for r in readers
                               for want, _, _, needed in [_EXPECTS.get(r.NAME, ("", "", (), ()))]
                               if want == shape and needed)
        said = f" (readers of {_SHAPES[shape]} look for the keys {_listing(wanted, 8)})" if wanted else ""
    problem = f"unknown transcript format: {what}, and none of the {len(scored)} readers claims it{said}."
    err = UnknownFormatError(path.name, None, problem, hint=hint)
    err.reasons = {n: why for n, (_, why) in scored.items()}  # type: ignore[attr-defined]
    return err
