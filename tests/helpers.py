"""Small helpers the reader and CLI tests share (not a test module)."""

from __future__ import annotations

from typing import Any

from ctxlab.cli.main import main
from ctxlab.messages import Message


def kinds(conv: Any) -> list[tuple[str, str | None]]:
    """Items as short tags, in order: ``(role, origin)`` for a message, ``("entry", kind)`` for an entry."""
    return [(i.role, i.origin) if isinstance(i, Message) else ("entry", i.kind) for i in conv.items]


def run(capsys: Any, *argv: Any) -> tuple[int, str, str]:
    """``python -m ctxlab ARGV`` in-process: ``(exit code, stdout, stderr)``."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err
