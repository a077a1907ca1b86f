"""Chapter 01's measurements on real text: a conversation's texts sorted by content type, and estimator error on each.

Unlike :mod:`ctxlab.lab.ch01_tokens`, which counts one text you give it, this finds the texts: it
takes real text from a conversation and measures the cheap estimators on each kind. What it holds:

* :func:`classify` and :func:`content_samples` — real text from a conversation sorted by content type
  (English prose, code, JSON, Chinese, base64, logs), so estimators can be measured per type;
* :func:`chinese_passage` — the first ``n`` characters of Chinese text in a conversation;
* :func:`guess_texts` — short texts of a few types for the guessing game;
* :func:`estimator_rows` / :func:`estimator_table` / :func:`verdicts` — (estimate − exact) / exact per type;
* :func:`claude_verdicts` — the same estimator judged against a calibrated Claude count (o200k × the profile's
  ``calibration``, one factor for all content: an estimate too);
* :func:`book_estimate` / :func:`book_estimator_rows` — the book's own estimator: the messages stringified as
  JSON, characters ÷ 3, rounded up, against the o200k and calibrated Claude counts of the same messages.

Simplified on purpose: the content classifier is a handful of rules (share of Han characters, a
long base64 run, parses as JSON, log-line and code-line patterns, letters-and-spaces prose) — good
enough to pick clear examples from a transcript, not a general-purpose detector. Texts that fit no
rule are left out of the comparison.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Iterator, Sequence

from ctxlab.bodies import anthropic_messages, wire_text
from ctxlab.estimators import EstimateRow, compare_estimates
from ctxlab.messages import Conversation, Message, TextPart, ToolCallPart
from ctxlab.sendable import sendable
from ctxlab.tokens import MessageMeter

__all__ = ["CONTENT_TYPES", "classify", "content_samples", "chinese_passage", "han_count", "guess_texts", "ESTIMATORS",
           "estimator_rows", "estimator_table", "verdicts", "claude_verdicts", "CLAUDE_COLUMNS", "book_estimate",
           "book_estimator_rows"]

# Chapter 01: the content types estimators are measured on
CONTENT_TYPES = ("English prose", "code", "JSON", "Chinese", "base64", "logs", "tool-call arguments")


# ---- real text by content type ----------------------------------------------------------------------

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{160,}={0,2}")  # one long run (a data URL, a JSON field)
_BASE64_LINE = re.compile(r"^[A-Za-z0-9+/]{40,}={0,2}$", re.M)  # or wrapped lines (MIME style, 76 a line)
_LOG_LINE = re.compile(r"^\s*(\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}|\[?\d{2}:\d{2}:\d{2}"
                       r"|\[?(INFO|WARN|WARNING|ERROR|DEBUG|TRACE)\b"
                       r"|(PASS|FAIL|ok|FAILED|PASSED|ERROR|Traceback)\b|> \S|npm (ERR|WARN)|Checked \d+ files"
                       r"|\S+\(\d+,\d+\): error|\S+:\d+:\d+ |[✓✗×]|File \"|={5,}|_{5,})"
                       r"|\b(PASSED|FAILED|ERROR)\b.*\[\s*\d+%\]\s*$|\[\s*\d+%\]\s*$")
_CODE_LINE = re.compile(r"(^\s*(def |class |import |from \S+ import|function |const |let |var |return\b|if \(|"
                        r"for \(|export |#include|//|/\*|\*|@\w+|\}|async |await |public |private |assert |raise |"
                        r"try:|except\b|with |elif |else:|\w+(\.\w+)* = \S|\w+\[.*\] = )"
                        r"|[;{}(\[,]\s*$|\):\s*$|^\s{4,}\S)")
_GUTTER = re.compile(r"^ *\d+(\t|→)", re.M)


def _base64_part(text: str) -> str:
    """The base64 in a text: its wrapped base64 lines joined by newlines, else its long runs."""
    lines = _BASE64_LINE.findall(text)
    if sum(map(len, lines)) >= 160:
        return "\n".join(lines)
    return "".join(m.group() for m in _BASE64_RUN.finditer(text))


def _strip_gutter(text: str) -> str:
    """A file read shown with line numbers (``     3\tfoo``) without them: ``foo``."""
    return _GUTTER.sub("", text)


def _texts(conversation: Conversation, arguments: bool = True) -> Iterator[str]:
    """Every text a model saw in the conversation, in order: text parts (and tool-call arguments)."""
    for text, _is_arguments in _sourced_texts(conversation, arguments):
        yield text


def _sourced_texts(conversation: Conversation, arguments: bool = True) -> Iterator[tuple[str, bool]]:
    """(text, is tool-call arguments) for every text a model saw, in order."""
    for msg in conversation.messages:
        if msg.origin == "meta":
            continue
        for part in msg.parts:
            if isinstance(part, TextPart):
                yield part.text, False
            elif isinstance(part, ToolCallPart) and arguments:
                yield part.arguments, True


def classify(text: str) -> str | None:
    """The content type of a text (one of :data:`CONTENT_TYPES`), or None when no rule fits (or it is
    shorter than 40 characters). Chapter 01.

    ``classify('{"a": [1, 2]}' * 4)`` → None (not one JSON value); ``classify("上下文窗口" * 10)`` → ``"Chinese"``.
    """
    t = text.strip()
    if len(t) < 40:
        return None
    if len(_HAN.findall(t)) / len(t) > 0.3:
        return "Chinese"
    if len(_base64_part(t)) / len(t) > 0.5:
        return "base64"
    if t[0] in "{[":
        try:
            json.loads(t)
            return "JSON"
        except ValueError:
            pass
    lines = [ln for ln in _strip_gutter(t).splitlines() if ln.strip()]
    if len(lines) >= 3:
        if sum(bool(_LOG_LINE.search(ln)) for ln in lines) / len(lines) >= 0.4:
            return "logs"
        if sum(bool(_CODE_LINE.search(ln)) for ln in lines) / len(lines) >= 0.4:
            return "code"
    letters = sum(ch.isascii() and (ch.isalpha() or ch in " .,;:'\"!?()-\n") for ch in t)
    if letters / len(t) >= 0.93 and re.search(r"[a-z]{3,}[.!?]( |\n|$)", t) and t.count(" ") / len(t) > 0.1:
        return "English prose"
    return None


def content_samples(conversation: Conversation, max_chars: int = 4_000,
                    types: Sequence[str] = CONTENT_TYPES) -> dict[str, str]:
    """type -> up to ``max_chars`` of real text of that type from the conversation, in order of appearance.

    Chapter 01 measures the estimators on these. Tool-call arguments (compact JSON the model wrote)
    are a type of their own, apart from the JSON documents in messages and tool results. Base64 keeps
    only its base64 (a header line is not). Types the conversation does not hold are absent from the result.
    """
    found: dict[str, list[str]] = {t: [] for t in types}
    size: dict[str, int] = {t: 0 for t in types}
    for text, is_arguments in _sourced_texts(conversation):
        kind = ("tool-call arguments" if len(text) >= 40 else None) if is_arguments else classify(text)
        if kind not in found or size[kind] >= max_chars:
            continue
        piece = _base64_part(text) if kind == "base64" else text.strip()
        piece = piece[: max_chars - size[kind]]
        found[kind].append(piece)
        size[kind] += len(piece) + 1
    return {t: "\n".join(found[t]) for t in types if found[t]}


def chinese_passage(conversation: Conversation, n_chars: int = 300) -> str | None:
    """``n_chars`` characters of the conversation's Chinese prose, or None when it holds fewer. Chapter 01.

    From the Chinese texts, in order, the lines that are mostly Han characters (at least half of
    their non-space characters; line-number gutters of file reads removed) are joined and cut to
    ``n_chars``. Short ASCII inside such lines (``TLS 1.3``, a path) stays: Chinese technical prose
    looks like that. :func:`han_count` says how many of the characters are Han.
    """
    lines = []
    for text in _texts(conversation):
        if classify(text) != "Chinese":
            continue
        for line in _strip_gutter(text).splitlines():
            body = line.strip()
            dense = body and han_count(body) >= 0.5 * len(body.replace(" ", ""))
            if dense:
                lines.append(body)
    passage = "\n".join(lines)[:n_chars]
    return passage if len(passage) == n_chars else None


def han_count(text: str) -> int:
    """How many Han (Chinese) characters a text holds. Chapter 01: ``han_count("上下文 window")`` → 3."""
    return len(_HAN.findall(text))


def guess_texts(samples: dict[str, str], n_chars: int = 160,
                types: Sequence[str] = ("English prose", "JSON", "Chinese", "code", "logs")) -> dict[str, str]:
    """Short texts for chapter 01's guessing game: up to three content types present, each cut to at
    most ``n_chars`` at a line or word boundary (file-read line numbers removed)."""
    out = {}
    for t in types:
        if t not in samples or len(out) == 3:
            continue
        text = _strip_gutter(samples[t])
        if len(text) > n_chars:
            cut = text[:n_chars]
            at = cut.rfind("\n")
            if at <= n_chars // 2:
                at = cut.rfind(" ")
            text = cut[:at] if at > n_chars // 2 else cut
        out[t] = text.rstrip()
    return out


# ---- estimator error ----------------------------------------------------------------------------------

ESTIMATORS = ("chars/3", "chars/4", "cl100k_base")  # Chapter 01: the cheap counters measured against o200k_base


def estimator_rows(samples: dict[str, str], estimators: Sequence[str] = ESTIMATORS) -> list[EstimateRow]:
    """Exact ``o200k_base`` tokens vs each estimator, per content type (see
    :func:`ctxlab.estimators.compare_estimates`). Chapter 01."""
    return compare_estimates(samples, exact="o200k_base", estimators=estimators)


def estimator_table(rows: Sequence[EstimateRow], estimators: Sequence[str] = ESTIMATORS) -> list[dict[str, Any]]:
    """Chapter 01's rows for a text table: type, chars, exact tokens, chars per token, then the error
    of each estimator (``"+12.5%"``)."""
    out = []
    for r in rows:
        row: dict[str, Any] = {"content": r.label, "chars": r.chars, "o200k": r.exact_tokens,
                               "chars/token": f"{r.chars / max(1, r.exact_tokens):.2f}"}
        for e in estimators:
            row[e] = f"{100 * r.error(e):+.1f}%"
        out.append(row)
    return out


def verdicts(rows: Sequence[EstimateRow], estimator: str = "chars/3") -> list[tuple[str, str, str]]:
    """Chapter 01: (content type, error, verdict) of one estimator: over-estimates are safe, under-estimates are not."""
    out = []
    for r in rows:
        e = r.error(estimator)
        verdict = "safe: over-counts" if e > 0 else "UNSAFE: under-counts"
        out.append((r.label, f"{100 * e:+.1f}%", verdict))
    return out


CLAUDE_COLUMNS = ("content", "o200k", "Claude", "chars/3", "vs o200k", "vs Claude", "verdict (Claude)")  # Chapter 01


def claude_verdicts(rows: Sequence[EstimateRow], calibration: float,
                    estimator: str = "chars/3") -> list[tuple[Any, ...]]:
    """Chapter 01: one estimator against o200k and against a calibrated Claude count, per content type.

    The Claude count is ``ceil(o200k × calibration)`` (``profile_for("claude-sonnet-4-6").calibration`` → 1.257,
    measured from recorded usage: ``ctxlab/lab/calibration.py``). Rows under :data:`CLAUDE_COLUMNS`; the verdict
    is "safe" when the estimate is at or above the Claude count.
    """
    out = []
    for r in rows:
        claude = math.ceil(r.exact_tokens * calibration)
        est = r.estimates[estimator]
        vs_claude = (est - claude) / max(1, claude)
        out.append((r.label, r.exact_tokens, claude, est, f"{100 * r.error(estimator):+.1f}%",
                    f"{100 * vs_claude:+.1f}%", "safe: over" if vs_claude >= 0 else "UNSAFE: under"))
    return out


def book_estimate(messages: Sequence[Message]) -> tuple[int, int]:
    """(characters, tokens) of the book's estimator: the messages as the Messages API takes them
    (:func:`ctxlab.bodies.anthropic_messages`), stringified as compact JSON (what ``JSON.stringify`` gives),
    ``ceil(characters / 3)``. Chapter 01."""
    chars = len(wire_text(anthropic_messages(sendable(tuple(messages), "anthropic")[0]))) if messages else 0
    return chars, math.ceil(chars / 3)


def book_estimator_rows(conversation: Conversation, o200k: MessageMeter,
                        claude: MessageMeter) -> tuple[list[tuple[Any, ...]], float]:
    """Chapter 01: the book's estimator on a conversation's messages, and the share of single messages it
    under-counts by more than 5 % against ``claude``'s count.

    Rows (what, tokens, book ÷ counted − 1): the book's estimate, the o200k count (``o200k``'s meter, with its
    framing), the calibrated Claude count. ``([], 0.0)`` for a conversation without messages.
    """
    msgs = [m for m in conversation.messages if m.origin != "meta"]
    if not msgs:
        return [], 0.0
    chars, book = book_estimate(msgs)
    counted = {"o200k_base": o200k.messages(msgs), claude.profile.name: claude.messages(msgs)}
    rows: list[tuple[Any, ...]] = [(f"book: {chars:,} JSON chars / 3", book, "")]
    rows += [(name, n, f"{100 * (book - n) / max(1, n):+.1f}%") for name, n in counted.items()]
    under = sum(book_estimate([m])[1] < 0.95 * claude.message(m) for m in msgs)
    return rows, under / len(msgs)
