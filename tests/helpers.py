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


class Recording:
    """A strategy wrapped so every decision it returns is kept, with what it was given (a replay keeps only the
    rendered requests); anything else is the strategy's own (``name``, ``budgeted``, ``added_tools``, ...).

    ``records``: ``(history, call, profile, meter, decision)`` per call, in order; ``decisions``: the decisions;
    ``sides``: every side call, in order; ``contexts``: per call, ``[main context, *side call contexts]``.
    """

    def __init__(self, strategy: Any) -> None:
        self.strategy, self.records = strategy, []

    def decide(self, history: Any, call: Any, profile: Any, meter: Any) -> Any:
        decision = self.strategy.decide(history, call, profile, meter)
        self.records.append((history, call, profile, meter, decision))
        return decision

    def __getattr__(self, name: str) -> Any:
        return getattr(self.strategy, name)

    @property
    def decisions(self) -> list[Any]:
        return [r[-1] for r in self.records]

    @property
    def sides(self) -> list[Any]:
        return [s for d in self.decisions for s in d.side_calls]

    @property
    def contexts(self) -> list[list[Any]]:
        return [[d.context, *(s.context for s in d.side_calls)] for d in self.decisions]
