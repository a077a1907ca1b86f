"""Chapter 01's measurements: token accounting — the x-ray, the guessing game, what a message costs beyond its text.

What it holds:

* :func:`xray` — a text cut into its tokens (:func:`chips`) under an encoding, with its count under
  every counter (``o200k_base``, ``cl100k_base``, ``chars/3``, ``chars/4``); :func:`counter_rows` —
  each counter's error on one text;
* :func:`reveal_guess` — the guessing game: your guess against the exact count;
* :func:`overhead_rows` — what each message costs beyond its text (framing, name) under a profile.

Real text from a conversation sorted by content type, and the estimators' error on each type, are in
:mod:`ctxlab.lab.ch01_content`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from ctxlab.estimators import COUNTER_NAMES, get_counter
from ctxlab.messages import Message
from ctxlab.tables.offline_encodings import get_encoding
from ctxlab.tokens import MessageMeter, TiktokenCounter

__all__ = ["ENCODINGS", "MAX_CHIPS", "XrayState", "chips", "counts", "xray", "GuessResult", "reveal_guess",
           "counter_rows", "OverheadRow", "overhead_rows"]

ENCODINGS = ("o200k_base", "cl100k_base")  # Chapter 01: the encodings the x-ray can cut text with
MAX_CHIPS = 1_500  # Chapter 01: the x-ray draws at most this many tokens (counts cover the whole text)


# ---- the x-ray ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class XrayState:
    """Chapter 01: a text under one encoding: ``chips`` = (text, tokens) pieces in order; ``counts``
    (tokens) under every counter.

    A chip is one token, except where a character's UTF-8 bytes are split across tokens (often in
    Chinese): those tokens are joined into one chip whose second field says how many tokens it holds.
    """

    encoding: str
    tokens: int
    chars: int
    chips: tuple[tuple[str, int], ...]
    counts: dict[str, int] = field(default_factory=dict)


def chips(text: str, encoding: str = "o200k_base", limit: int | None = None) -> list[tuple[str, int]]:
    """The tokens of ``text`` as printable pieces, at most ``limit`` tokens. Chapter 01.

    ``chips("hello world")`` → ``[("hello", 1), (" world", 1)]``. An unknown encoding raises what
    :func:`ctxlab.tables.offline_encodings.get_encoding` raises.
    """
    ids = TiktokenCounter(encoding).encode(text)
    codec = get_encoding(encoding)
    out: list[tuple[str, int]] = []
    pending, n = b"", 0
    for tok in ids[: limit if limit is not None else len(ids)]:
        pending += codec.decode_single_token_bytes(tok)
        n += 1
        try:
            out.append((pending.decode("utf-8"), n))
        except UnicodeDecodeError:
            continue  # a character split over tokens: keep collecting bytes
        pending, n = b"", 0
    if pending:
        out.append((pending.decode("utf-8", errors="replace"), n))
    return out


def counts(text: str, counters: Sequence[str] = COUNTER_NAMES) -> dict[str, int]:
    """Chapter 01: ``{"o200k_base": ..., "cl100k_base": ..., "chars/3": ..., "chars/4": ...}`` (tokens) for one text."""
    return {name: get_counter(name).count(text) for name in counters}


def xray(text: str, encoding: str = "o200k_base", limit: int = MAX_CHIPS) -> XrayState:
    """The x-ray of one text, for chapter 01. ``xray("上下文").counts["chars/4"]`` → 1.

    Raises ``ValueError`` when ``encoding`` is not one of :data:`ENCODINGS`.
    """
    if encoding not in ENCODINGS:
        raise ValueError(f"encoding must be one of {ENCODINGS}, not {encoding!r}")
    c = counts(text)
    return XrayState(encoding, c[encoding], len(text), tuple(chips(text, encoding, limit)), c)


# ---- the guessing game ----------------------------------------------------------------------------

@dataclass(frozen=True)
class GuessResult:
    """Chapter 01's guessing game: your guess against the exact count; ``error`` = (guess − exact) / exact."""

    label: str
    chars: int
    guess: int
    exact: int

    @property
    def error(self) -> float:
        """(guess − exact) / exact: +0.5 = guessed 50 % too many."""
        return (self.guess - self.exact) / max(1, self.exact)


def reveal_guess(label: str, text: str, guess: int, encoding: str = "o200k_base") -> GuessResult:
    """Chapter 01: ``reveal_guess("hi", "hello world", 3)`` → exact 2, error +50 %."""
    return GuessResult(label, len(text), int(guess), get_counter(encoding).count(text))


# ---- every counter on one text ----------------------------------------------------------------------

def counter_rows(text: str) -> list[tuple[str, int, str]]:
    """Chapter 01: (counter, tokens, error against o200k_base) for one text, every counter."""
    c = counts(text)
    exact = max(1, c["o200k_base"])
    return [(name, n, f"{100 * (n - c['o200k_base']) / exact:+.1f}%") for name, n in c.items()]


# ---- what a message costs beyond its text ------------------------------------------------------------

@dataclass(frozen=True)
class OverheadRow:
    """Chapter 01: one message under a profile, in tokens: content, framing (per-message overhead +
    role), name, total."""

    label: str
    content: int
    framing: int
    name: int
    total: int


def overhead_rows(messages: Sequence[Message], meter: MessageMeter) -> list[OverheadRow]:
    """What each message costs beyond its text under ``meter``'s profile (see
    :class:`ctxlab.tokens.MessageMeter`). Chapter 01."""
    out = []
    for m in messages:
        total = meter.message(m)
        framing = meter.profile.per_message_tokens + meter.counter.count(m.role)
        name = (meter.profile.per_name_tokens + meter.counter.count(m.name)) if m.name else 0
        out.append(OverheadRow(f"{m.role}: {m.text[:30]}", total - framing - name, framing, name, total))
    return out
