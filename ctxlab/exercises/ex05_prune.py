"""Exercise 05 (chapter 05): prune a text to a head, an omission marker and a tail, in characters.

``prune("abcdefgh", 2, 3)`` → ``"ab" + MARKER.format(omitted=3) + "fgh"``. The marker is
``ctxlab.pruning.DEFAULT_MARKER`` with its unit changed to characters, because this exercise counts
characters where ``prune_text`` counts tokens (``prune_text`` under a ``chars/1`` counter cuts
characters too, and writes the same shape). A Python ``str`` is a sequence of whole characters, so
Chinese text is cut on whole characters whatever the slice; cutting UTF-8 bytes would not be.

Cases are generated from a seeded ``random.Random``: ASCII, Chinese, emoji and newlines, short texts
first, then a few over 1,000 characters (the marker writes ``1,234``, with a thousands comma).
"""

from __future__ import annotations

import random

from ctxlab.pruning import DEFAULT_MARKER
from ctxlab.exercises._grader import Exercise, by_size, short

MARKER = DEFAULT_MARKER.replace("tokens", "characters")  # "\n[... {omitted:,} characters omitted ...]\n"


def prune(text: str, head_chars: int, tail_chars: int) -> str:
    if len(text) <= head_chars + tail_chars:
        return text  # it fits: untouched
    head = text[:head_chars]
    tail = text[len(text) - tail_chars:]  # not text[-tail_chars:], which is the whole text when tail_chars is 0
    omitted = len(text) - head_chars - tail_chars
    return head + MARKER.format(omitted=omitted) + tail


_PIECES = ("log ", "ok ", "error: E1234 ", "\n", "  ", "tests/test_orders.py ", "passed ", "上下文", "窗口",
           "不要修改", "。", "生产环境只允许 TLS 1.3", "🙂", "é", "x")
_FIXED = [("", 0, 0), ("a", 0, 0), ("ab", 1, 1), ("abc", 1, 1), ("abcd", 1, 0), ("abcd", 0, 1), ("abc", 3, 0),
          ("中文", 1, 0), ("中文字", 0, 1), ("上下文窗口", 2, 2), ("🙂🙂🙂", 1, 1)]


def _text(rng: random.Random, pieces: int) -> str:
    return "".join(rng.choice(_PIECES) for _ in range(pieces))


def cases() -> list[tuple[str, int, int]]:
    """About 120 cases, smallest text first: the fixed edge cases, short random texts, five long ones."""
    rng = random.Random(5)
    out: list[tuple[str, int, int]] = list(_FIXED)
    for _ in range(100):
        text = _text(rng, rng.randint(1, 12))
        head, tail = rng.randint(0, len(text) + 2), rng.randint(0, len(text) + 2)
        if rng.random() < 0.6:  # mostly texts that do not fit
            head, tail = rng.randint(0, len(text) // 2), rng.randint(0, len(text) // 3)
        out.append((text, head, tail))
    for _ in range(5):
        text = _text(rng, rng.randint(200, 400))
        out.append((text, rng.randint(0, 40), rng.randint(0, 40)))
    return by_size(out, lambda c: (len(c[0]), c[1] + c[2], c[1]))


EXERCISE = Exercise(
    number=5,
    title="prune a text to head + marker + tail",
    function="prune",
    signature="prune(text: str, head_chars: int, tail_chars: int) -> str",
    cases=cases,
    reference=prune,
    show_input=lambda args: f"text={short(args[0])} (len {len(args[0]):,}), head_chars={args[1]}, "
                            f"tail_chars={args[2]}",
    hints=(
        "When the text is no longer than head_chars + tail_chars, return it as it is. Otherwise the answer "
        "is three pieces: the first head_chars characters, MARKER.format(omitted=...), the last tail_chars.",
        "`omitted` is the number of characters left out: len(text) - head_chars - tail_chars. MARKER formats "
        "it with a thousands comma ({omitted:,}), so 1234 appears as 1,234.",
        "Take the tail as text[len(text) - tail_chars:]. text[-tail_chars:] looks the same, but with "
        "tail_chars == 0 it is text[0:], the whole text.",
    ),
)
