"""Argument checks for the public functions: one line naming the argument and what it accepts.

Every public function and policy that takes a token count, a window, a budget, a ratio or a time
passes it through one of these, so ``replay(conv, window=0)`` says ``window must be a positive
whole number of tokens (got 0)`` instead of quietly using the model's own window. Refused
everywhere: ``bool`` (``True`` is an ``int`` in Python, never a token count), strings (``"1000"``:
parse it first), ``NaN`` and the infinities, and a float with a fraction where a whole number is
meant (``1000.5``); a float without one (``18000.0``, as ``0.9 * 20_000`` gives) is taken as the int.

The errors are :class:`~ctxlab.base.errors.CtxlabError` (a ``ValueError``), so the CLI prints them as one
line and exits 2. Plumbing for every chapter; the arguments themselves are taught where they live.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from ctxlab.base.errors import CtxlabError

__all__ = ["ratio", "seconds", "settle", "tokens", "whole"]


def _shown(value: Any) -> str:
    """The bad value as the message quotes it: ``0``, ``nan``, ``True, a bool``, ``'1000', a string``."""
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, numbers.Integral)):
        value = float(value)  # numpy floats print as plain numbers
    text = str(value) if isinstance(value, numbers.Real) and not isinstance(value, bool) else repr(value)
    text = text if len(text) <= 40 else text[:37] + "..."
    if isinstance(value, bool):
        return f"{text}, a bool"
    if isinstance(value, str):
        return f"{text}, a string"
    return text if isinstance(value, numbers.Real) else f"{text}, a {type(value).__name__}"


def _fail(name: str, value: Any, accepts: str) -> CtxlabError:
    return CtxlabError(f"{name} must be {accepts} (got {_shown(value)})")


def _real(value: Any) -> bool:
    """A real number that is not a bool (numpy numbers included)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _finite(value: Any) -> float | None:
    """``value`` as a finite float, or None (NaN, an infinity, an int too large for a float)."""
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def whole(name: str, value: Any, *, unit: str = "tokens", allow_zero: bool = False,
          allow_none: bool = True) -> int | None:
    """``value`` as an ``int``: a whole number of ``unit``, positive (or 0 with ``allow_zero``).

    ``whole("max_units", 3, unit="units")`` → ``3``; ``whole("max_units", 0, unit="units")`` →
    CtxlabError ``max_units must be a positive whole number of units (got 0)``. ``None`` comes back
    as ``None`` (the caller's default) unless ``allow_none=False``.
    """
    if value is None and allow_none:
        return None
    accepts = f"a whole number of {unit}, 0 or more" if allow_zero else f"a positive whole number of {unit}"
    if not _real(value):
        raise _fail(name, value, accepts)
    if not isinstance(value, numbers.Integral):
        number = _finite(value)
        if number is None or not number.is_integer():
            raise _fail(name, value, accepts)
        value = number
    out = int(value)
    if out < 0 or (out == 0 and not allow_zero):
        raise _fail(name, value, accepts)
    return out


def tokens(name: str, value: Any, *, allow_zero: bool = False, allow_none: bool = True) -> int | None:
    """A token count, window or budget: a whole number of tokens, positive unless ``allow_zero``.

    ``tokens("window", 200_000)`` → ``200000``; ``tokens("window", 0)`` → CtxlabError ``window must
    be a positive whole number of tokens (got 0)``; ``tokens("window", True)`` → ``... (got True, a
    bool)``; ``tokens("window", None)`` → ``None`` (the default is meant).
    """
    return whole(name, value, unit="tokens", allow_zero=allow_zero, allow_none=allow_none)


def _interval(lo: float, hi: float | None, lo_open: bool, hi_open: bool) -> str:
    def num(x: float) -> str:
        return f"{x:g}"

    if hi is None:
        return f"a number above {num(lo)}" if lo_open else f"a number of {num(lo)} or more"
    return f"a ratio in {'(' if lo_open else '['}{num(lo)}, {num(hi)}{')' if hi_open else ']'}"


def ratio(name: str, value: Any, lo: float = 0.0, hi: float | None = 1.0, *, lo_open: bool = True,
          hi_open: bool = False, allow_none: bool = False) -> float | None:
    """``value`` as a ``float`` in the interval from ``lo`` to ``hi`` (open at an end where told).

    The default interval is (0, 1]: ``ratio("input_ratio", 0.9)`` → ``0.9``; ``ratio("input_ratio",
    0)`` → CtxlabError ``input_ratio must be a ratio in (0, 1] (got 0)``. ``ratio("head_share", 0,
    lo_open=False)`` → ``0.0`` ([0, 1]). ``hi=None``: no upper end (``"a number of 0 or more"``, for a
    price multiplier). NaN and the infinities are refused everywhere.
    """
    if value is None and allow_none:
        return None
    accepts = _interval(lo, hi, lo_open, hi_open)
    number = _finite(value) if _real(value) else None
    if number is None:
        raise _fail(name, value, accepts)
    below = number <= lo if lo_open else number < lo
    above = hi is not None and (number >= hi if hi_open else number > hi)
    if below or above:
        raise _fail(name, value, accepts)
    return number


def seconds(name: str, value: Any, *, allow_none: bool = True) -> float | None:
    """A duration such as a cache TTL: a positive, finite number of seconds, as a ``float``.

    ``seconds("ttl_s", 300)`` → ``300.0``; ``seconds("ttl_s", 0)`` → CtxlabError ``ttl_s must be a
    positive number of seconds (got 0)``; ``seconds("ttl_s", None)`` → ``None`` (the default is meant).
    """
    if value is None and allow_none:
        return None
    number = _finite(value) if _real(value) else None
    if number is None or number <= 0:
        raise _fail(name, value, "a positive number of seconds")
    return number


def settle(obj: Any, **values: Any) -> None:
    """Store checked values on a dataclass, frozen or not: in a ``__post_init__``,
    ``settle(self, window=tokens("window", self.window))`` keeps ``18000`` for ``18000.0``."""
    for name, value in values.items():
        object.__setattr__(obj, name, value)
