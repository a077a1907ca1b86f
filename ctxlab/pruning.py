"""Pruning (剪枝): keep the head and the tail of a large tool result, drop the middle for good.

A pruned result reads ``head + "[... 1,234 tokens omitted ...]" + tail``. The start of a result
usually says what ran and the first error; the end says how it finished. The middle is gone —
unlike paging (``paging.py``), nothing is stored, so nothing can be read back.

Three ideas, each a function or a class:

* :func:`prune_text` — a text to a token budget under the chosen counter. It cuts on token
  boundaries, backs off to whole characters (a byte-level BPE token can end inside a Chinese
  character or an emoji) and re-counts the final string, marker included, so it never exceeds
  the budget. An estimator counter (``chars/3``) has no tokens to cut on: it cuts characters.
* :class:`ArrivalCap` — a fixed per-tool limit applied once, when a result is recorded. It
  depends only on the result and its tool's limit, never on the history's size, so the capped
  result renders to the same bytes on every later call and stays cacheable.
* :func:`prune_message` — a message's text parts pruned to one budget, shared by water-filling
  (:func:`fair_shares`); the strategy that prunes the newest unit to fit is in ``pruning_strategy.py``.

Simplified on purpose: cuts fall on tokens, not on lines or grapheme clusters (a family emoji
may lose a member, never a byte); a message's text parts share its budget by water-filling.
Taught in chapter 05.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from ctxlab.base import validate
from ctxlab.tables.offline_encodings import get_encoding
from ctxlab.base.errors import BudgetError, CtxlabError
from ctxlab.messages import Message, TextPart
from ctxlab.tokens import TiktokenCounter, TokenCounter

DEFAULT_MARKER = "\n[... {omitted:,} tokens omitted ...]\n"
_ROUNDS = 16  # re-count rounds before prune_text falls back to the marker alone (always fits)


class PruneBudgetError(BudgetError):
    """The budget cannot hold the omission marker plus one token of the text (a BudgetError). Chapter 05."""


@dataclass(frozen=True)
class PrunedText:
    """A pruned text and its account, in tokens under the counter used. Chapter 05.

    ``head_tokens`` / ``tail_tokens`` count the kept ends, ``omitted_tokens`` the dropped middle,
    ``original_tokens`` the whole input. Unpruned text: head = original, the rest 0.
    """

    text: str
    head_tokens: int
    tail_tokens: int
    omitted_tokens: int
    original_tokens: int

    @property
    def pruned(self) -> bool:
        return self.omitted_tokens > 0


class TokenCutter:
    """A text cut by its counter's units: tiktoken tokens, or characters for an estimator. Chapter 05.

    ``TokenCutter("上下文", o200k).head(1)`` → ``"上下"`` (one token holds two characters). ``len()``
    is the number of units; every cut is shrunk to whole characters. Shared by pruning and paging.
    """

    def __init__(self, text: str, counter: TokenCounter) -> None:
        self.text = text
        name = getattr(counter, "encoding_name", None)
        self.encoding = get_encoding(name) if name in ("o200k_base", "cl100k_base") else None
        self.units: Sequence[Any] = (self.encoding.encode(text, disallowed_special=())
                                     if self.encoding else text)

    def __len__(self) -> int:
        return len(self.units)

    def span(self, lo: int, hi: int) -> str:
        """Units ``lo:hi`` as a string, shrunk inward to whole characters."""
        if self.encoding is None:
            return self.text[lo:hi]
        while lo < hi:
            data = self.encoding.decode_bytes(self.units[lo:hi])
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError as bad:
                # Back off to a character boundary: a broken start drops a token in front,
                # a character cut short at the end drops the last token (a character is <= 4 bytes).
                if bad.start == 0:
                    lo += 1
                else:
                    hi -= 1
        return ""

    def head(self, n: int) -> str:
        """The first ``n`` units, as whole characters (``""`` for ``n <= 0``)."""
        return self.span(0, min(n, len(self))) if n > 0 else ""

    def tail(self, n: int) -> str:
        """The last ``n`` units, as whole characters (``""`` for ``n <= 0``)."""
        return self.span(max(0, len(self) - n), len(self)) if n > 0 else ""


def prune_text(text: str, budget_tokens: int, counter: TokenCounter, *, head_share: float = 0.5,
               marker: str = DEFAULT_MARKER) -> PrunedText:
    """Head + marker + tail of ``text`` within ``budget_tokens`` under ``counter``.

    A 150-token log at budget 40 → its first ~14 tokens, ``"[... 122 tokens omitted ...]"``,
    its last ~14. ``head_share`` is the head's part of the kept tokens (0.5 = even, 1.0 = head
    only). ``marker`` is formatted with ``omitted`` (an int). Text within budget comes back
    unchanged. Raises :class:`PruneBudgetError` when the budget is under marker + 1 token, and
    CtxlabError (a ValueError) naming the argument unless ``budget_tokens`` is a whole number of
    tokens (0 or more) and ``head_share`` a ratio in [0, 1]. Chapter 05.
    """
    budget_tokens = validate.tokens("budget_tokens", budget_tokens, allow_zero=True, allow_none=False)
    head_share = validate.ratio("head_share", head_share, lo_open=False)
    original = counter.count(text)
    if original <= budget_tokens:
        return PrunedText(text, original, 0, 0, original)
    floor = counter.count(marker.format(omitted=original)) + 1
    if budget_tokens < floor:
        raise PruneBudgetError(
            f"Cannot prune a {original:,}-token text to {budget_tokens:,} tokens: the omission marker alone "
            f"needs {floor - 1:,} tokens under {counter.name}, so the budget must be at least {floor:,}.",
            needed=floor, budget=budget_tokens)
    cut = TokenCutter(text, counter)
    per_token = len(cut) / original  # units per counted token: 1 for exact tiktoken, ~N for chars/N
    keep = int((budget_tokens - floor + 1) * per_token)  # units for head + tail, before re-counting
    for attempt in range(_ROUNDS):
        if attempt == _ROUNDS - 1:
            keep = 0  # last round: the marker alone, which fits by the floor check
        n_head = round(keep * head_share)
        head, tail = cut.head(n_head), cut.tail(keep - n_head)
        omitted = counter.count(text[len(head): len(text) - len(tail)])
        out = head + marker.format(omitted=omitted) + tail
        used = counter.count(out)  # re-count: tokens can merge across the joins
        if used <= budget_tokens:
            return PrunedText(out, counter.count(head), counter.count(tail), omitted, original)
        keep = max(0, keep - max(1, math.ceil((used - budget_tokens) * per_token)))
    raise AssertionError("unreachable: the marker alone fits the budget")  # pragma: no cover


def fair_shares(sizes: Sequence[int], budget: int) -> list[int]:
    """Water-filling: parts under an even share keep their size, the big ones split the rest.

    ``fair_shares([10, 500, 800], 310)`` → ``[10, 150, 150]``. Chapter 05.
    """
    shares = [0] * len(sizes)
    left = budget
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    for k, i in enumerate(order):
        shares[i] = min(sizes[i], left // (len(order) - k))
        left -= shares[i]
    return shares


def cut_to_tokens(text: str, cap: int, counter: TokenCounter, marker: str = "\n…[summary cut to fit]") -> str:
    """The longest prefix of ``text`` (+ ``marker``) within ``cap`` tokens, cut on a character boundary.

    Unlike :func:`prune_text` it keeps the head only (a summary's sections are in order of importance):
    ``cut_to_tokens("a b c d", 2, counter, marker="")`` → ``"a b"`` under a counter of one token a word.
    A text within ``cap`` comes back unchanged; a marker that alone does not fit is left out; ``""``
    when nothing fits. Chapters 06 and 07.
    """
    if counter.count(text) <= cap:
        return text
    if counter.count(marker) >= cap:
        marker = ""
    lo, hi = 0, len(text)
    while lo < hi:  # the longest n with count(text[:n] + marker) <= cap
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if counter.count(text[:mid] + marker) <= cap else (lo, mid - 1)
    return text[:lo].rstrip() + marker if lo else ""


def prune_message(msg: Message, budget_tokens: int, counter: TokenCounter, *, head_share: float = 0.5,
                  marker: str = DEFAULT_MARKER) -> Message:
    """The message with its text parts pruned to ``budget_tokens`` in total (parts' text only).

    Non-text parts (images) and every field (id, tool_call_id, ...) are kept; a message already
    within budget is returned as is (the same object). Arguments are checked as by
    :func:`prune_text`. Chapter 05.
    """
    budget_tokens = validate.tokens("budget_tokens", budget_tokens, allow_zero=True, allow_none=False)
    head_share = validate.ratio("head_share", head_share, lo_open=False)
    where = [k for k, p in enumerate(msg.parts) if isinstance(p, TextPart)]
    sizes = [counter.count(msg.parts[k].text) for k in where]
    if sum(sizes) <= budget_tokens:
        return msg
    parts = list(msg.parts)
    for k, size, share in zip(where, sizes, fair_shares(sizes, budget_tokens)):
        if size > share:
            parts[k] = TextPart(prune_text(parts[k].text, share, counter, head_share=head_share,
                                           marker=marker).text)
    return replace(msg, parts=tuple(parts))


def text_tokens(msg: Message, counter: TokenCounter) -> int:
    """Tokens of a message's text parts (no per-message overhead). Chapter 05."""
    return sum(counter.count(p.text) for p in msg.parts if isinstance(p, TextPart))


@dataclass(frozen=True)
class ArrivalCap:
    """A fixed per-tool limit applied to a tool result once, when it is recorded.

    ``ArrivalCap({"bash": 2_000}, default_tokens=4_000).cap(result)`` → the result pruned to its
    tool's limit. The counter is fixed here (not taken from the model of the call), so the same
    result caps to the same bytes whatever the session, the call or the history's size. Limits are
    positive whole numbers of tokens and ``head_share`` a ratio in [0, 1], else CtxlabError (a
    ValueError) naming the field. Chapter 05.
    """

    limits: Mapping[str, int] = field(default_factory=dict)  # tool name -> tokens
    default_tokens: int = 4_000
    counter: TokenCounter = field(default_factory=lambda: TiktokenCounter("o200k_base"))
    head_share: float = 0.5

    def __post_init__(self) -> None:
        if not isinstance(self.limits, Mapping):
            raise CtxlabError(f"limits must map tool names to tokens, e.g. {{'bash': 2000}} "
                              f"(got {type(self.limits).__name__})")
        validate.settle(self, limits={name: validate.tokens(f"limits[{name!r}]", n, allow_none=False)
                                      for name, n in self.limits.items()},
                        default_tokens=validate.tokens("default_tokens", self.default_tokens, allow_none=False),
                        head_share=validate.ratio("head_share", self.head_share, lo_open=False))

    def limit_for(self, tool_name: str | None) -> int:
        return self.limits.get(tool_name or "", self.default_tokens)

    def cap(self, msg: Message) -> Message:
        """A tool result within its limit (other roles unchanged). Chapter 05."""
        if msg.role != "tool":
            return msg
        return prune_message(msg, self.limit_for(msg.tool_name), self.counter, head_share=self.head_share)
