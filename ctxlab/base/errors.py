"""The errors ctxlab raises on bad input: each names what was wrong, where, and what to do.

All derive from :class:`CtxlabError` (a ``ValueError``), so ``except ValueError`` still works.
"""

from __future__ import annotations


class CtxlabError(ValueError):
    """Base class: bad input or an impossible request, explained in the message. Chapters 02–08 raise it."""

    def _render_traceback_(self) -> list[str]:
        """What a notebook shows for it: one line, the class and the message, no traceback — the message already says
        what was wrong, where and what to do. IPython calls this hook on an exception that has one ("Exception
        classes can customise their traceback", ``InteractiveShell.showtraceback``); a script still gets Python's
        traceback. ``MissingFileError("x.jsonl: not there.")._render_traceback_()`` →
        ``["MissingFileError: x.jsonl: not there."]``. Chapters 00–09 (every setup cell)."""
        return [f"{type(self).__name__}: {self}"]


class MissingFileError(CtxlabError, FileNotFoundError):
    """A file that is not there; also a ``FileNotFoundError``, so ``except FileNotFoundError`` still works.
    Chapter 00 (the ``TRANSCRIPT`` cell)."""


class TranscriptError(CtxlabError):
    """A transcript could not be read. ``file``, ``line`` (1-based or None) and ``field`` say where.

    ``str(err)`` reads like ``pi.jsonl:40: field 'message.role': unknown role 'robot'. Fix the
    line or load with strict=False to skip it.`` Chapter 02.
    """

    def __init__(self, file: str, line: int | None, problem: str, *, field: str | None = None,
                 hint: str | None = None) -> None:
        self.file, self.line, self.field, self.problem, self.hint = file, line, field, problem, hint
        where = f"{file}:{line}" if line is not None else file
        what = f"field {field!r}: {problem}" if field else problem
        stop = "" if what.rstrip().endswith((".", "!", "?")) else "."  # the hint is a sentence of its own
        super().__init__(f"{where}: {what}" + (f"{stop} {hint}" if hint else ""))


class UnknownFormatError(TranscriptError):
    """No reader recognises the file: its format is not one ctxlab reads (yet).

    Raised by :func:`ctxlab.io.formats.detect` (and so by ``load``) only when every reader's sniff
    said no; a file that a reader claims and then finds damaged raises a plain
    :class:`TranscriptError` naming the line. Chapter 02.
    """


class OrphanError(CtxlabError):
    """A tool result without its call, or a call without its result, where pairing is required. Chapter 03."""


class BudgetError(CtxlabError):
    """The token budget cannot hold what must be kept. ``needed`` and ``budget`` are in tokens. Chapter 03."""

    def __init__(self, message: str, *, needed: int, budget: int) -> None:
        self.needed, self.budget = needed, budget
        super().__init__(message)


class SessionError(CtxlabError):
    """A session file is damaged or an append would break its tree. Chapter 02."""
