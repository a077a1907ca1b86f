"""Chapter 05's measurements of pruning: what stays of a large tool result cut to a head and a tail.

What it holds (plain functions returning frozen rows; the widget that draws them is
:class:`ctxlab.widgets.ch05_pruning.PruneWidget`):

* :func:`checklist_for` — the fact checklist that belongs to a conversation (the sample's, pi's, or none);
* :func:`largest_tool_result` / :func:`chinese_tool_result` — the results the chapter works on;
* :func:`prune_view` — a text pruned to a head and a tail budget (tokens), with the account of what
  stayed (:class:`PruneView`), and :func:`line_kept` — is line N still whole in the pruned text?
* :func:`evidence_line` — a line lost to pruning that is worth reading back;
* :func:`chinese_rows` — a Chinese text pruned to several budgets: valid UTF-8 and within each budget?

What paging keeps instead (the whole text, readable back through ``read_page``), pruning against
paging measured, and what the widget shows are in :mod:`ctxlab.lab.ch05_paging`. The chapter's cap
that depends on the history (``RecomputedCapStrategy``, a teaching foil) and the replays that measure
what it does to the cache are in :mod:`ctxlab.lab.ch05_caps`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

from ctxlab.facts import Fact
from ctxlab.io.checklist import load_facts
from ctxlab.lab.data import PI_FACTS, SAMPLE_FACTS
from ctxlab.messages import Conversation, Message
from ctxlab.paging import page_lines
from ctxlab.pruning import DEFAULT_MARKER, PruneBudgetError, PrunedText, prune_text, text_tokens
from ctxlab.tokens import TiktokenCounter, TokenCounter

_CJK = re.compile(r"[\u3400-\u9fff]")
_EVIDENCE = re.compile(r"(?i)\berror\b|\bfail(?:ed|ure)?\b|\bE\d{3,5}\b|exception|traceback")


def o200k_counter() -> TokenCounter:
    """The fixed counter chapter 05 prunes and pages with (``o200k_base``, like :class:`~ctxlab.pruning.ArrivalCap`):
    a cut must not move when the model changes. Chapter 05."""
    return TiktokenCounter("o200k_base")


# ---- the results the chapter works on ---------------------------------------------------------------

def checklist_for(conversation: Conversation, candidates: Sequence[Path] = (SAMPLE_FACTS, PI_FACTS)
                  ) -> tuple[list[Fact], Path | None]:
    """The first checklist whose every fact names a message of ``conversation``; ``([], None)`` if none fits.

    The bundled sample → ``data/sample_facts.json``; the shared pi session → ``data/pi_facts.json``.
    Chapters 05 and 06.
    """
    ids = {it.id for it in conversation.items}
    for path in candidates:
        if Path(path).exists():
            facts = load_facts(path)
            if facts and all(f.message_id in ids for f in facts):
                return facts, Path(path)
    return [], None


def largest_tool_result(conversation: Conversation, counter: TokenCounter | None = None) -> Message | None:
    """The tool result with the most text tokens (the first on a tie); None without tool results.

    The bundled sample → ``m069``, a 50,852-character CI log (19,129 o200k tokens). Chapter 05.
    """
    counter = counter or o200k_counter()
    results = [m for m in conversation.messages if m.role == "tool" and m.text]
    return max(results, key=lambda m: text_tokens(m, counter), default=None)


def chinese_tool_result(conversation: Conversation) -> Message | None:
    """The tool result with the most Chinese characters (the sample: its Chinese README); None if none. Chapter 05."""
    results = [(len(_CJK.findall(m.text)), k, m) for k, m in enumerate(conversation.messages) if m.role == "tool"]
    best = max(results, key=lambda t: (t[0], -t[1]), default=None)
    return best[2] if best and best[0] else None


# ---- pruning one text to a head and a tail budget ---------------------------------------------------

@dataclass(frozen=True)
class PruneView:
    """A text pruned to ``head_budget`` + marker + ``tail_budget`` tokens. Tokens under ``counter``.

    ``budget`` = head budget + the marker's tokens + tail budget; ``total_tokens`` is the pruned
    text's own count (marker included), never above ``budget``. ``head`` / ``tail`` are the kept
    ends as strings (a prefix and a suffix of the original); ``lines_whole`` counts the original's
    lines still whole in them. ``error`` says why nothing could be pruned (budget under the marker).
    Chapter 05.
    """

    head_budget: int
    tail_budget: int
    budget: int
    original_tokens: int
    head_tokens: int
    tail_tokens: int
    omitted_tokens: int
    total_tokens: int
    lines: int
    lines_whole: int
    text: str
    head: str
    tail: str
    marker: str
    error: str = ""

    @property
    def within_budget(self) -> bool:
        """The pruned text's tokens are at most ``budget``."""
        return self.total_tokens <= self.budget


def marker_tokens(original_tokens: int, counter: TokenCounter, marker: str = DEFAULT_MARKER) -> int:
    """Tokens of the omission marker for a text of ``original_tokens`` (``[... 17,629 tokens omitted ...]``).
    Chapter 05."""
    return counter.count(marker.format(omitted=original_tokens))


def _line_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) character offsets of each line :func:`~ctxlab.paging.page_lines` numbers from 1."""
    spans, start = [], 0
    for line in page_lines(text):
        spans.append((start, start + len(line)))
        start += len(line) + 1
    return spans


def line_kept(original: str, view: PruneView, line: int) -> bool:
    """Is line ``line`` (1-based) of ``original`` still whole in the pruned text (in its head or its tail)?
    Chapter 05."""
    spans = _line_spans(original)
    if not 1 <= line <= len(spans):
        return False
    start, end = spans[line - 1]
    return end <= len(view.head) or start >= len(original) - len(view.tail)


def pruned_view(text: str, pruned: PrunedText, head_budget: int, tail_budget: int, budget: int,
                counter: TokenCounter) -> PruneView:
    """A :class:`PruneView` of ``pruned`` (what :func:`~ctxlab.pruning.prune_text` returned for ``text``).

    ``head_budget`` / ``tail_budget`` / ``budget`` (tokens) are recorded as given; the pruned text's
    tokens are counted again under ``counter``, and the original's lines still whole in the kept
    head and tail are counted. A text that was not pruned comes back whole. Chapter 05.
    """
    n_lines = len(page_lines(text))
    if not pruned.pruned:
        return PruneView(head_budget, tail_budget, budget, pruned.original_tokens, pruned.original_tokens, 0, 0,
                         pruned.original_tokens, n_lines, n_lines, text, text, "", "")
    marker = DEFAULT_MARKER.format(omitted=pruned.omitted_tokens)
    head, _, tail = pruned.text.partition(marker)
    view = PruneView(head_budget, tail_budget, budget, pruned.original_tokens, pruned.head_tokens, pruned.tail_tokens,
                     pruned.omitted_tokens, counter.count(pruned.text), n_lines, 0, pruned.text, head, tail, marker)
    cut = len(text) - len(tail)
    return replace(view, lines_whole=sum(1 for a, b in _line_spans(text) if b <= len(head) or a >= cut))


def prune_view(text: str, head_tokens: int, tail_tokens: int, counter: TokenCounter | None = None) -> PruneView:
    """``text`` pruned to its first ``head_tokens`` and last ``tail_tokens`` tokens, with the marker between.

    The budget given to :func:`~ctxlab.pruning.prune_text` is head + marker + tail and the head's share
    is head / (head + tail); the re-count may keep a token less at a join. A text within the budget
    comes back whole. ``prune_view(log, 1_000, 500)`` on the sample's CI log → 1,000 + 11 + 500 =
    1,511 tokens, 17,629 omitted. Chapter 05.
    """
    counter = counter or o200k_counter()
    original = counter.count(text)
    budget = head_tokens + tail_tokens + marker_tokens(original, counter)
    share = head_tokens / (head_tokens + tail_tokens) if head_tokens + tail_tokens else 0.5
    try:
        pruned = prune_text(text, budget, counter, head_share=share)
    except PruneBudgetError as err:
        n_lines = len(page_lines(text))
        return PruneView(head_tokens, tail_tokens, budget, original, 0, 0, original, 0, n_lines, 0, "", "", "", "",
                         str(err))
    return pruned_view(text, pruned, head_tokens, tail_tokens, budget, counter)


def evidence_line(text: str, view: PruneView, needles: Sequence[str] = ()) -> int:
    """A line worth reading back: the first line lost to pruning that holds one of ``needles`` (checklist
    facts), else one that looks like an error, else the middle line. The sample's CI log → 536 (``E1234``).
    Chapter 05."""
    lines = page_lines(text)
    lost = [k for k in range(1, len(lines) + 1) if not line_kept(text, view, k)]
    for pick in ([k for k in lost if any(n in lines[k - 1] for n in needles)],
                 [k for k in lost if _EVIDENCE.search(lines[k - 1])], lost):
        if pick:
            return pick[0]
    return max(1, len(lines) // 2)


# ---- Chinese ----------------------------------------------------------------------------------------

# Chapter 05: the columns of :func:`chinese_rows`.
CHINESE_COLUMNS = ("budget", "tokens", "within budget", "valid UTF-8", "characters kept", "head … tail")


def valid_utf8(text: str) -> bool:
    """True when ``text`` encodes to UTF-8 and back unchanged and holds no replacement character (U+FFFD).
    Chapter 05."""
    try:
        return text.encode("utf-8").decode("utf-8") == text and "\ufffd" not in text
    except UnicodeError:
        return False


def chinese_rows(text: str, budgets: Sequence[int], counter: TokenCounter | None = None) -> list[tuple[Any, ...]]:
    """``text`` pruned to each budget: tokens, within the budget, valid UTF-8, characters kept, and the
    first and last few characters around the marker. A budget under the marker's floor says so. Chapter 05."""
    counter = counter or o200k_counter()
    rows = []
    for budget in budgets:
        try:
            p = prune_text(text, budget, counter)
        except PruneBudgetError as err:
            rows.append((budget, "—", "—", "—", "—", f"refused: needs at least {err.needed:,} tokens"))
            continue
        head, _, tail = p.text.partition(DEFAULT_MARKER.format(omitted=p.omitted_tokens)) if p.pruned else \
            (p.text, "", "")
        ends = f"{head[-8:]!r} … {tail[:8]!r}" if p.pruned else "(whole text)"
        rows.append((budget, counter.count(p.text), counter.count(p.text) <= budget, valid_utf8(p.text),
                     len(head) + len(tail), ends.replace("\\n", "⏎").replace("\\t", "⇥")))
    return rows


__all__ = ["o200k_counter", "checklist_for", "largest_tool_result", "chinese_tool_result", "PruneView", "marker_tokens",
           "line_kept", "pruned_view", "prune_view", "evidence_line", "CHINESE_COLUMNS", "valid_utf8", "chinese_rows"]
