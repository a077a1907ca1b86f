"""What the chapter widgets accept, checked when they open: one clear line instead of a bare error or a quiet clamp.

UI plumbing for chapters 03–07 (not a concept). What it holds:

* :func:`conversation_of` — a :class:`~ctxlab.messages.Conversation` as given, or the one a
  :class:`~ctxlab.messages.Transcript` (what ``ctxlab.load`` returns) holds; anything else is refused;
* :func:`widened` and :func:`ratio_widened` — a slider's starting value honoured: the slider's range widened to
  hold it (an ``ipywidgets`` slider would clamp it silently: ``window=1000`` on a slider from 5,000 would show
  5,000); a value that is no token count (or no ratio) is refused.

The errors are :class:`~ctxlab.base.errors.CtxlabError` (a ``ValueError``) naming the widget, the argument and what
it accepts.
"""

from __future__ import annotations

from typing import Any

from ctxlab.base import validate
from ctxlab.base.errors import CtxlabError
from ctxlab.messages import Conversation, Transcript


def conversation_of(value: Any, widget: str) -> Conversation:
    """``value`` if it is a Conversation; a Transcript's only conversation (a Transcript of several: a CtxlabError
    saying to pass ``transcript.conversations[i]``); anything else: a CtxlabError saying what to pass.
    ``conversation_of(load("pi.jsonl"), "LedgerWidget")`` → its conversation. Chapters 03–07."""
    if isinstance(value, Conversation):
        return value
    if isinstance(value, Transcript):
        if len(value.conversations) == 1:
            return value.conversations[0]
        raise CtxlabError(f"{widget}: {value.file} holds {len(value.conversations)} conversations; pass one of them, "
                          f"e.g. {widget}(transcript.conversations[0])")
    raise CtxlabError(f"{widget} takes a Conversation (or what ctxlab.load returns, a Transcript), got "
                      f"{type(value).__name__}: e.g. {widget}(ctxlab.load(path))")


def widened(widget: str, name: str, value: Any, lo: int, hi: int, unit: str = "tokens",
            allow_zero: bool = False) -> tuple[int, int, int]:
    """A slider's starting value, honoured: ``(value, lo, hi)`` with the range widened to hold it (an ``ipywidgets``
    slider clamps a value outside its range silently). ``value`` must be a whole number of ``unit`` (positive unless
    ``allow_zero``), else a CtxlabError naming the widget and the argument. ``widened("LedgerWidget", "window",
    1_000, 5_000, 200_000)`` → ``(1000, 1000, 200000)``. Chapters 03–05."""
    try:
        number = validate.whole(name, value, unit=unit, allow_zero=allow_zero, allow_none=False)
    except CtxlabError as err:
        raise CtxlabError(f"{widget}: {err}") from None
    assert number is not None
    return number, min(lo, number), max(hi, number)


def ratio_widened(widget: str, name: str, value: Any, lo: float, hi: float) -> tuple[float, float, float]:
    """A ratio slider's starting value, honoured: ``(value, lo, hi)`` with the range widened to hold it; ``value``
    must be a ratio in (0, 1), else a CtxlabError naming the widget and the argument. ``ratio_widened(
    "SawtoothWidget", "trigger", 0.3, 0.5, 0.95)`` → ``(0.3, 0.3, 0.95)``. Chapter 07."""
    try:
        number = validate.ratio(name, value, lo=0.0, hi=1.0, hi_open=True)
    except CtxlabError as err:
        raise CtxlabError(f"{widget}: {err}") from None
    assert number is not None
    return number, min(lo, number), max(hi, number)


__all__ = ["conversation_of", "ratio_widened", "widened"]
