"""Reader for ctxlab's own session files (the JSONL tree :mod:`ctxlab.io.session` writes).

What it holds: ``NAME``, ``sniff`` and ``read``, the three things the format registry asks of a
reader. ``read`` returns one conversation: the path from the root to the newest leaf (the last
record of the file); other branches are only named in the conversation's notes — open the file
with :class:`ctxlab.io.session.Session` to walk them.

Simplified on purpose: the parsing is :mod:`ctxlab.io.session`'s own (one parser, so the reader and
the writer cannot disagree); this module only converts its complaints into
:class:`~ctxlab.base.errors.TranscriptError`. Taught in chapter 02.
"""

from __future__ import annotations

from pathlib import Path

from ctxlab.io.codec import loads
from ctxlab.base.errors import TranscriptError
from ctxlab.messages import Transcript
from ctxlab.io.session import Session
from ctxlab.io.session_file import LineProblem, parse_session

from ctxlab.io.formats._detect import read_regular

NAME = "ctxlab-session"


def sniff(path: Path, head: str) -> bool:
    """True when the first line is a ctxlab session header: ``{"type":"session","version":1,"system":[...],"tools":[...],...}``.

    ``type`` and ``version`` are required as the header defines them; ``system`` and ``tools``
    are checked too, because other agents (pi) also open their files with ``"type": "session"``.
    When ``head`` ends before the first line does (a long system prompt), the line is read from ``path``.
    """
    first = head.split("\n", 1)[0]
    if "\n" not in head:
        try:
            with open(path, encoding="utf-8") as f:
                first = f.readline()
        except (OSError, UnicodeDecodeError):
            return False
    try:
        obj = loads(first)  # a JSONDecodeError (a ValueError) also for nesting too deep to parse
    except ValueError:
        return False
    return (isinstance(obj, dict) and obj.get("type") == "session" and "version" in obj
            and isinstance(obj.get("system"), list) and isinstance(obj.get("tools"), list))


def read(path: Path, *, strict: bool = True) -> Transcript:
    """One conversation: root → newest leaf. ``strict=False`` skips bad lines (noted) instead of raising."""
    path = Path(path)
    try:
        parsed = parse_session(read_regular(path), path.name, strict=strict)
    except LineProblem as p:
        raise TranscriptError(path.name, p.line, p.problem,
                              hint="Fix the line or load with strict=False to skip it.") from None
    session = Session.from_parsed(parsed, None)
    conversation = session.conversation()
    return Transcript(format=NAME, file=path.name, conversations=(conversation,),
                      notes=tuple(session.warnings))
