"""Small helpers every chapter calls (chapter 00 introduces them): loading a transcript, text tables.

What it holds: :func:`load_workbook_conversation` (the bundled sample, or a learner's own transcript),
:func:`save_upload` (an uploaded transcript, saved to a fresh temporary directory),
:func:`conversation_rows` (what a loaded conversation holds), :func:`text_table` (the plain table
printed under every figure) and :func:`rel` (a path as the chapters print it: relative to the
repository, never absolute). The paths of the bundled files (:data:`SAMPLE_SESSION`,
:data:`PI_BILL`, ...) are :mod:`ctxlab.lab.data`'s.

Plumbing for the notebooks, not a concept of its own. Simplified on purpose: when a learner's file
holds several conversations and none is named, the one with the most messages is taken (and the
choice is written into the conversation's notes).
"""

from __future__ import annotations

import dataclasses
import re
import tempfile
from pathlib import Path
from typing import Any, Mapping, Sequence

from ctxlab.base.errors import CtxlabError, MissingFileError, TranscriptError
from ctxlab.base.safe_text import shown
from ctxlab.io.formats import load
from ctxlab.lab.data import REPO, SAMPLE_SESSION
from ctxlab.messages import Conversation

__all__ = ["load_workbook_conversation", "save_upload", "conversation_rows", "text_table", "rel"]


def rel(path: str | Path) -> str:
    """A path as a chapter prints it (chapter 00 on): relative to the repository, else just the file name.

    ``rel(REPO / "data" / "pi_bill.csv")`` → ``"data/pi_bill.csv"``; a path outside the repository → its name.
    """
    p = Path(path)
    try:
        return p.resolve().relative_to(REPO).as_posix()
    except ValueError:
        return p.name


def load_workbook_conversation(path: str | Path | None = None, conversation: int | None = None,
                               thread: str | None = None, strict: bool = True) -> Conversation:
    """The conversation a chapter measures: the bundled sample, or the learner's transcript at ``path``.

    Any format :func:`ctxlab.io.formats.load` reads is accepted. ``conversation`` picks one of several
    (a tau-bench or OpenAI file holds many); left ``None``, the one with the most messages is taken.
    A conversation with several threads (Claude Code sub-agents) is cut to ``thread``, by default
    ``main`` — each thread is its own agent with its own context. Every choice made for you is
    written into ``notes``, and so is what the reader noted of the file (a line skipped with ``strict=False``, a
    repaired parent). ``load_workbook_conversation()`` → the sample session. Chapter 00 on.

    Raises :class:`~ctxlab.base.errors.MissingFileError` (a ``FileNotFoundError``) when the file is not there,
    CtxlabError for a thread it does not hold, and what :func:`ctxlab.io.formats.load` raises for a file it cannot read, its hint in a
    chapter's words: a bad line is skipped (and named in ``notes``) with ``strict=False``, which a chapter's
    setup cell takes as ``load_workbook_conversation(TRANSCRIPT, strict=False)``.
    """
    file = Path(path).expanduser() if path is not None else SAMPLE_SESSION  # "~/..." as a shell reads it
    if not file.exists():
        what = "the bundled sample" if path is None else "your transcript"
        where = rel(file) if path is None else str(file.resolve())  # the learner's file: its full path
        raise MissingFileError(f"{where}: {what} is not there. "
                                + ("Run: python data/make_sample.py" if path is None else
                                   "Set TRANSCRIPT to an existing file (absolute, or relative to the notebooks folder)."))
    try:
        transcript = load(file, strict=strict)
    except TranscriptError as err:  # the readers' hint, in a chapter's words
        if not err.hint or "strict=False" not in err.hint:
            raise
        hint = err.hint.replace("load with strict=False", "pass strict=False (load_workbook_conversation(TRANSCRIPT, "
                                "strict=False) in the chapter's setup cell)")
        raise type(err)(err.file, err.line, err.problem, field=err.field, hint=hint) from None
    skipped = transcript.notes  # the file's notes (a skipped line, a repaired parent)
    if conversation is not None or len(transcript.conversations) == 1:
        chosen = transcript.conversation(conversation if conversation is not None else None)
    else:
        index = max(range(len(transcript.conversations)), key=lambda i: len(transcript.conversations[i].messages))
        chosen = transcript.conversations[index]
        chosen = dataclasses.replace(chosen, notes=chosen.notes + (
            f"{transcript.file} holds {len(transcript.conversations)} conversations; "
            f"took #{index} ({chosen.id}), the one with the most messages",))
    threads = chosen.threads()
    if thread is not None or len(threads) > 1:
        name = thread if thread is not None else ("main" if "main" in threads else threads[0])
        if name not in threads:
            raise CtxlabError(f"{transcript.file} has threads {', '.join(threads)}; no thread {name!r}.")
        others = [t for t in threads if t != name]
        kept = chosen.thread(name)
        note = f"took thread {name!r}" + (f"; other threads: {', '.join(others)}" if others else "")
        chosen = dataclasses.replace(kept, notes=kept.notes + (note,))
    missing = tuple(n for n in skipped if n not in chosen.notes)
    return dataclasses.replace(chosen, notes=missing + chosen.notes) if missing else chosen


_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def save_upload(name: str, content: bytes, directory: str | Path | None = None) -> Path:
    """Write uploaded bytes to a fresh temporary directory (or ``directory``); returns the file's path.

    What chapter 00's upload widget does with a learner's transcript: nothing is written next to the
    learner's files. The name is reduced to its last component and safe characters:
    ``"../a b.jsonl"`` → ``a_b.jsonl``. Raises ``OSError`` when the file cannot be written.
    """
    base = _SAFE_NAME.sub("_", Path(name.replace("\\", "/")).name).strip("._") or "transcript.jsonl"
    folder = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="ctxlab-upload-"))
    target = folder / base
    target.write_bytes(content)
    return target


def conversation_rows(conversation: Conversation) -> list[tuple[str, Any]]:
    """(what, value) rows describing a conversation: model, messages by role, calls, threads, notes. Chapter 00."""
    msgs = conversation.messages
    rows: list[tuple[str, Any]] = [
        ("conversation", conversation.id),
        ("model", conversation.model or "(not recorded)"),
        ("messages", len(msgs)),
        ("  user", sum(m.role == "user" for m in msgs)),
        ("  assistant", sum(m.role == "assistant" for m in msgs)),
        ("  tool results", sum(m.role == "tool" for m in msgs)),
        ("tool calls", sum(len(m.tool_calls) for m in msgs)),
        ("entries (compactions, setting changes, ...)", len(conversation.entries)),
        ("system prompt blocks", len(conversation.system)),
        ("tool definitions", len(conversation.tools)),
    ]
    rows += [("note", n) for n in conversation.notes]
    return rows


def _cell(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.2f}"
    # a pasted API key is shown masked (ctxlab.base.redact), control and invisible characters escaped
    # (ctxlab.base.safe_text); numbers are untouched
    return shown(str(value), multiline=True)


def text_table(rows: Sequence[Mapping[str, Any] | Sequence[Any]], columns: Sequence[str]) -> str:
    """A plain-text table: numbers right-aligned with thousands separators, text left-aligned.

    ``text_table([("o200k_base", 12)], ["counter", "tokens"])`` →
    ``'counter     tokens\\n----------  ------\\no200k_base      12'``. Rows may be dicts keyed by column.
    Ints get ``1,234``; floats two decimals — pass a formatted string for anything else. Text
    that looks like an API key is masked (:func:`ctxlab.base.redact.redact`): tables are for display.
    Every chapter prints one under its figures (chapter 00 on).
    """
    cells = [[_cell(r.get(c) if isinstance(r, Mapping) else r[i]) for i, c in enumerate(columns)] for r in rows]
    raw = [[(r.get(c) if isinstance(r, Mapping) else r[i]) for i, c in enumerate(columns)] for r in rows]
    numeric = [bool(raw) and all(isinstance(row[i], (int, float)) and not isinstance(row[i], bool)
                                 or (isinstance(row[i], str) and _looks_numeric(row[i])) for row in raw)
               for i in range(len(columns))]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]

    def line(values: Sequence[str]) -> str:
        out = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)]
        return "  ".join(out).rstrip()

    return "\n".join([line(columns), line(["-" * w for w in widths])] + [line(r) for r in cells])


def _looks_numeric(text: str) -> bool:
    """'1,234', '-12.5%', '$0.87', '+3', '271 s', '1.25x' look numeric (right-aligned); 'o200k_base' does not."""
    return bool(_NUMERIC.match(text.strip()))


_NUMERIC = re.compile(r"^[+\-−]?\$?[\d,]*\.?\d+\s*(%|x|s|ms|min|tokens)?$")
