"""Parsing JSON that ctxlab did not write, safely: the one ``loads`` every reader and the session use.

Unlike :mod:`ctxlab.io.codec` (ctxlab's own JSON form of its types, and :func:`~ctxlab.io.codec.dumps`),
this module is about hostile text: nesting too deep for Python's parser becomes a
``json.JSONDecodeError`` at the deepest bracket (:func:`too_deep`), not a ``RecursionError``; a lone
surrogate escape (``"\\ud800"``: legal JSON, no UTF-8 text can hold it) comes back as U+FFFD and is
reported (:func:`repair_surrogates`, :func:`collect_repairs`); NaN, ``Infinity`` and numbers that
overflow to infinity are found in any field (:func:`nonfinite`). Re-exported by :mod:`ctxlab.io.codec`.
Plumbing for chapter 02.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import math
import re
import sys
from typing import Any, Iterator

__all__ = ["loads", "nonfinite", "too_deep", "repair_surrogates", "might_hold_surrogates", "repair_note",
           "collect_repairs", "Repair"]


_BRACKETS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')  # a JSON string (skipped whole) or a bracket


def _deepest(text: str) -> tuple[int, int]:
    """``(depth, offset)`` of the deepest bracket of a JSON text: ``_deepest('{"a": [[1]]}')`` → ``(3, 7)``."""
    depth, best, at = 0, 0, 0
    for m in _BRACKETS.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > best:
                best, at = depth, m.start()
        elif c in "]}":
            depth -= 1
    return best, at


def _no_nan(token: str) -> float:
    raise ValueError(f"{token} is not a number JSON allows")


def _finite(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise ValueError(f"{token} is too large for a number (it reads as infinity)")
    return value


def loads(text: str | bytes, *, allow_nan: bool = True, repaired: list[Repair] | None = None) -> Any:
    """``json.loads``, made safe for hostile input: ``loads("[" * 100_000 + "]" * 100_000)`` raises a
    ``json.JSONDecodeError`` ("nested 100,000 levels deep ...") at the deepest bracket instead of
    Python's ``RecursionError`` (its parser recurses once per level, up to ``sys.getrecursionlimit()``).

    ``allow_nan=False`` also refuses ``NaN``, ``Infinity`` and numbers that overflow to infinity
    (``1e400``) with a ``ValueError``: :func:`dumps` never writes them, so a session file holding one
    was not written by ctxlab.

    A lone surrogate (``loads('{"a": "x\\ud800"}')`` → ``{"a": "x\\ufffd"}``) is replaced with
    U+FFFD, never raised: each replacement is appended to ``repaired`` as a :data:`Repair`, or,
    with ``repaired=None``, to the list of the enclosing :func:`collect_repairs` block (if any).
    Bytes are decoded as UTF-8, strictly (a ``UnicodeDecodeError`` for bytes that are not). Chapter 02.
    """
    decoded = isinstance(text, (bytes, bytearray))
    if decoded:
        text = bytes(text).decode("utf-8")
    try:
        if allow_nan:
            value = json.loads(text)
        else:
            value = json.loads(text, parse_constant=_no_nan, parse_float=_finite)
    except RecursionError:
        raise too_deep(text) from None
    if might_hold_surrogates(text, decoded=decoded):  # type: ignore[arg-type]
        found: list[Repair] = []
        value = repair_surrogates(value, found)
        into = repaired if repaired is not None else _COLLECTED.get()
        if found and into is not None:
            into.extend(found)
    return value


# ---- lone surrogates ------------------------------------------------------------------------------

Repair = tuple[str, Any, str]
"""One lone surrogate replaced: ``(field, owner, char)`` — the field's path (``"message.content[0].text"``,
``""`` for the value itself), the innermost dict holding it (``None`` if none) and the first
surrogate replaced there, spelled ``"\\ud800"``."""

_LONE = re.compile("[\ud800-\udfff]")
_ESCAPE = re.compile(r"\\u[dD]([89a-fA-F])")  # the start of a \\uD800-\\uDFFF escape (or of letters after "\\\\")
_COLLECTED: contextvars.ContextVar[list[Repair] | None] = contextvars.ContextVar("ctxlab_repairs", default=None)


def might_hold_surrogates(text: str, *, decoded: bool = False) -> bool:
    """Whether a JSON text decodes to a lone surrogate: it holds one, or a ``\\uD800``-``\\uDFFF``
    escape that is not half of a pair (``\\ud83d\\ude00`` is one character, U+1F600; ``"\\\\ud800"``
    is an escaped backslash and letters). One regular-expression scan; a Python step per surrogate
    escape found. ``decoded=True``: the text was decoded from UTF-8 strictly, so holds none itself."""
    if not decoded and not text.isascii() and _LONE.search(text):
        return True
    low_at = -1  # where the low half of the last pair starts
    for m in _ESCAPE.finditer(text):
        at = back = m.start()
        while back and text[back - 1] == "\\":
            back -= 1
        if (at - back) % 2 or at == low_at:  # an escaped backslash and letters; a pair's low half
            continue
        low = text[at + 6:at + 10]
        if m.group(1) in "89abAB" and low[:3] in ("\\ud", "\\uD") and low[3:] in tuple("cdefCDEF"):
            low_at = at + 6
            continue
        return True
    return False


def repair_surrogates(value: Any, found: list[Repair], at: str = "") -> Any:
    """Replace every lone surrogate (U+D800..U+DFFF alone: a JSON ``\\ud800`` escape with no partner,
    which ``str.encode("utf-8")`` refuses) in the strings of a parsed JSON value, keys included, with
    U+FFFD; lists and dicts are changed in place (the same objects), a str is returned anew. Each
    field changed is appended to ``found``. ``repair_surrogates(["ok", "a\\ud800"], found)`` →
    ``["ok", "a\\ufffd"]``, ``found == [("[1]", None, "\\ud800")]``. Chapter 02."""
    def fix(text: str, field: str, owner: Any) -> str:
        found.append((field, owner, f"\\u{ord(_LONE.search(text).group()):04x}"))  # type: ignore[union-attr]
        return _LONE.sub("\ufffd", text)

    if isinstance(value, str):
        return fix(value, at, None) if _LONE.search(value) else value
    stack: list[tuple[Any, str, Any]] = [(value, at, None)]
    while stack:  # a loop, not recursion: a value nested 900 levels deep is legal JSON
        node, path, owner = stack.pop()
        if isinstance(node, dict):
            owner = node
            if any(_LONE.search(k) for k in node if isinstance(k, str)):  # a key: rebuilt in order, same dict
                items = list(node.items())
                node.clear()
                for k, v in items:
                    if isinstance(k, str) and _LONE.search(k):
                        clean = _LONE.sub("\ufffd", k)
                        fix(k, f"{path}.{clean}" if path else clean, node)
                        k = clean
                    node[k] = v
            children: Any = node.items()
        elif isinstance(node, list):
            children = enumerate(node)
        else:
            continue
        later = []
        for k, v in children:
            field = f"{path}[{k}]" if isinstance(node, list) else (f"{path}.{k}" if path else str(k))
            if isinstance(v, str):
                if _LONE.search(v):
                    node[k] = fix(v, field, owner)
            elif isinstance(v, (dict, list)):
                later.append((v, field, owner))
        stack.extend(reversed(later))
    return value


def repair_note(field: str, char: str) -> str:
    """What a note says of one :data:`Repair`: ``repair_note("title", "\\ud800")`` → ``"field 'title': a lone
    surrogate \\ud800 (half of a UTF-16 pair; no UTF-8 text can hold it) replaced with U+FFFD"``."""
    where = f"field {field!r}: " if field else ""
    return f"{where}a lone surrogate {char} (half of a UTF-16 pair; no UTF-8 text can hold it) replaced with U+FFFD"


@contextlib.contextmanager
def collect_repairs() -> Iterator[list[Repair]]:
    """Within the block, :func:`loads` calls given no ``repaired`` list report to the list yielded
    (``ctxlab.io.formats.load`` turns them into notes). Blocks nest; the innermost collects."""
    found: list[Repair] = []
    token = _COLLECTED.set(found)
    try:
        yield found
    finally:
        _COLLECTED.reset(token)


# a token Python's parser reads as NaN or an infinity: NaN, Infinity, or an exponent of 3+ digits (1e999)
_MAYBE_NONFINITE = re.compile(r"NaN|Infinity|[eE][+-]?\d{3}")
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|-?Infinity|NaN|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?')


def nonfinite(value: Any, text: str | None = None) -> tuple[str, float, int | None] | None:
    """The first NaN or infinity in a parsed JSON value: ``(field, number, offset)``, or None.

    Python's parser reads ``NaN``, ``Infinity`` and a number too large for a float (``1e999``)
    without a word; JSON allows none of them. ``nonfinite(loads('{"a": {"b": [1, NaN]}}'))`` →
    ``("a.b[1]", nan, None)``. Given the ``text`` the value was parsed from, the offset of that
    token in it too (for its line), and a text holding no such token is not walked. Chapter 02.
    """
    if text is not None and not _MAYBE_NONFINITE.search(text):
        return None
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:  # depth first in document order, a loop (nesting may be deep)
        path, v = stack.pop()
        if isinstance(v, float) and not math.isfinite(v):
            at = None if text is None else next(  # the first such token outside a string: this one
                (m.start() for m in _TOKEN.finditer(text) if m.group()[0] != '"' and not math.isfinite(float(m.group()))),
                None)
            return path, v, at
        if isinstance(v, dict):
            stack.extend(reversed([(f"{path}.{k}" if path else str(k), x) for k, x in v.items()]))
        elif isinstance(v, list):
            stack.extend(reversed([(f"{path}[{i}]", x) for i, x in enumerate(v)]))
    return None


def too_deep(text: str) -> json.JSONDecodeError:
    """The error for a JSON text whose parse ran out of recursion, located at its deepest bracket."""
    depth, at = _deepest(text)
    return json.JSONDecodeError(f"nested {depth:,} levels deep, more than Python's JSON parser follows "
                                f"(about {sys.getrecursionlimit():,})", text, at)
