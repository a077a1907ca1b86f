"""Chapter 05's measurements of paging: what can be read back of a large tool result, against what pruning keeps.

Unlike :mod:`ctxlab.lab.ch05_pruning`, where the middle of a pruned text is gone, a page keeps the
whole text in a store and shows a head and a tail; a model reads any line back through the
``read_page`` tool. What it holds (plain functions returning frozen rows; the widget that draws them
is :class:`ctxlab.widgets.ch05_pruning.PruneWidget`):

* :func:`read_line` — a line fetched back from a page through the ``read_page`` tool, as a model would;
* :func:`mechanism_rows` / :func:`policy_rows` / :func:`reason_rows` — pruning against paging on one
  result, measured, and the paging policy per tool of a conversation and per kind of tool;
* :func:`cited_line` — a line of a result that a checklist fact cites as ``path:N``;
* :func:`prune_state` — what the widget shows for one head, tail and line: the pruned view, the paged
  preview and that line read back (:class:`PruneState`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from ctxlab.io.page_store import PageStore, execute_read_page
from ctxlab.lab.ch05_pruning import PruneView, line_kept, o200k_counter, prune_view, pruned_view
from ctxlab.messages import Conversation, Message
from ctxlab.paging import DEFAULT_ACTIONS, REASONS, Pages, PagingPolicy, page_lines, page_message
from ctxlab.pruning import ArrivalCap, prune_text, text_tokens
from ctxlab.tokens import TokenCounter

# ---- a line read back from a page ----------------------------------------------------------------------

def read_line(store: Pages, handle: str, line: int) -> str:
    """Line ``line`` of a page, read through the ``read_page`` tool as a model would call it; the tool's
    header line removed. An error comes back as the tool's ``error: ...`` text. Chapter 05."""
    out = execute_read_page(store, {"handle": handle, "start_line": line, "end_line": line})
    return out if out.startswith("error:") else out.partition("\n")[2]


# ---- pruning against paging, measured ---------------------------------------------------------------

# Chapter 05: the columns of :meth:`MechanismRow.as_row`.
MECHANISM_COLUMNS = ("mechanism", "stored", "middle readable", "in context (bytes)", "tokens in context",
                     "tokens saved", "lines readable")


@dataclass(frozen=True)
class MechanismRow:
    """One way of handling a result: what the context holds (UTF-8 bytes, tokens) and what can be read.
    Chapter 05."""

    mechanism: str
    stored_bytes: int  # bytes written to a page store (0: nothing stored)
    recoverable: bool  # every line can still be read (in view, or through read_page when stored)
    context_bytes: int
    context_tokens: int
    original_tokens: int
    lines_readable: int  # lines a model can still read, in view or through read_page
    lines: int

    def as_row(self) -> tuple[Any, ...]:
        """One line of :data:`MECHANISM_COLUMNS`."""
        readable = "yes (read_page)" if self.stored_bytes else "yes, in view" if self.recoverable else "no, gone"
        return (self.mechanism, f"{self.stored_bytes:,} bytes" if self.stored_bytes else "no", readable,
                self.context_bytes, self.context_tokens,
                self.original_tokens - self.context_tokens, f"{self.lines_readable:,} of {self.lines:,}")


def mechanism_rows(msg: Message, cap: ArrivalCap | None = None, paging: PagingPolicy | None = None,
                   counter: TokenCounter | None = None) -> list[MechanismRow]:
    """The result as recorded, pruned by ``cap`` and paged under ``paging``'s head and tail: one row each.

    Measured, not declared: bytes and tokens of what the context shows, bytes the store holds, and the
    lines a model can still read (whole lines in view; every line for a page). Chapter 05.
    """
    cap, paging, counter = cap or ArrivalCap(), paging or PagingPolicy(), counter or o200k_counter()
    text, lines = msg.text, len(page_lines(msg.text))
    original = counter.count(text)
    limit = cap.limit_for(msg.tool_name)
    pruned = pruned_view(text, prune_text(text, limit, counter, head_share=cap.head_share), 0, 0, limit, counter)
    store = PageStore.in_memory()
    shown, entry = page_message(msg, store, head_tokens=paging.head_tokens, tail_tokens=paging.tail_tokens,
                                counter=counter)
    stored = len(store.get(entry.data["handle"]).encode("utf-8", "surrogatepass"))

    def size(t: str) -> int:
        return len(t.encode("utf-8", "surrogatepass"))

    return [MechanismRow("as recorded", 0, True, size(text), original, original, lines, lines),
            MechanismRow(f"pruned (cap {limit:,} tokens)", 0, not pruned.omitted_tokens, size(pruned.text),
                         pruned.total_tokens,
                         original, pruned.lines_whole, lines),
            MechanismRow(f"paged (head {paging.head_tokens:,} + tail {paging.tail_tokens:,})", stored, True,
                         size(shown.text), counter.count(shown.text), original, lines, lines)]


# Chapter 05: the columns of :func:`policy_rows` and of :func:`reason_rows`.
POLICY_COLUMNS = ("tool", "kind", "action", "results", "over the cap", "largest (tokens)")
REASON_COLUMNS = ("kind", "action", "why")


def policy_rows(conversation: Conversation, paging: PagingPolicy | None = None, cap: ArrivalCap | None = None,
                counter: TokenCounter | None = None) -> list[tuple[Any, ...]]:
    """Per tool of the conversation: its kind and action under ``paging``, how many results it returned,
    how many are over ``cap``'s limit, and the largest (tokens). Chapter 05."""
    paging, cap, counter = paging or PagingPolicy(), cap or ArrivalCap(), counter or o200k_counter()
    sizes: dict[str, list[int]] = {}  # tool name -> text tokens of each of its results
    for m in conversation.messages:
        if m.role == "tool":
            sizes.setdefault(m.tool_name or "(unnamed)", []).append(text_tokens(m, counter))
    declared = [t.name for t in conversation.tools]
    rows = []
    for name in declared + [n for n in sizes if n not in declared]:
        found = sizes.get(name, [])
        rows.append((name, paging.kind_of(name), paging.action_of(name), len(found),
                     sum(n > cap.limit_for(name) for n in found), max(found, default=0)))
    return rows


def reason_rows(paging: PagingPolicy | None = None) -> list[tuple[str, str, str]]:
    """Per kind of tool: the action under ``paging`` and the reason written down for the default
    (:data:`~ctxlab.paging.REASONS`); an overridden action says so. Chapter 05."""
    paging = paging or PagingPolicy()
    rows = []
    for kind, why in REASONS.items():
        action = paging.actions.get(kind, "page")
        rows.append((kind, action, why.split(":", 1)[1].strip() if action == DEFAULT_ACTIONS[kind]
                     else "overridden: not the default"))
    return rows


def cited_line(conversation: Conversation, msg: Message, texts: Sequence[str]) -> int | None:
    """A line of ``msg`` that one of ``texts`` cites as ``path:N``, where ``path`` occurs in the arguments of
    the call that produced ``msg`` (the sample: ``logs/ci-2025-10-14.log:536``, the log the CI command
    wrote with ``tee``) → N; None when no text cites it. Chapter 05."""
    call = next((c for m in conversation.messages for c in m.tool_calls if c.id == msg.tool_call_id), None)
    if call is None:
        return None
    for text in texts:
        found = re.fullmatch(r"\s*([\w./-]+):(\d+)\s*", text)
        if found and found.group(1) in call.arguments and 1 <= int(found.group(2)) <= len(page_lines(msg.text)):
            return int(found.group(2))
    return None

# ---- what the widget shows -----------------------------------------------------------------------------

@dataclass(frozen=True)
class PruneState:
    """What the pruning widget shows: the pruned view, the paged preview (its tokens and handle) and line
    ``line`` as recorded, whether the pruned text still holds it whole, and what ``read_page`` returned.
    Chapter 05."""

    view: PruneView
    page_tokens: int
    handle: str
    hidden_lines: str  # "37-610": the lines the page notice names as not shown
    line: int
    original_line: str
    line_in_pruned: bool
    read_back: str

    @property
    def read_back_exact(self) -> bool:
        """``read_page`` gave back exactly the line as recorded."""
        return self.read_back == self.original_line


# Chapter 05: the columns of :func:`state_row`.
STATE_COLUMNS = ("head", "tail", "budget", "head kept", "tail kept", "omitted", "pruned total", "within budget",
                 "lines whole", "paged preview")


def state_row(s: PruneState) -> tuple[Any, ...]:
    """One line of :data:`STATE_COLUMNS`. Chapter 05."""
    v = s.view
    if v.error:
        return (v.head_budget, v.tail_budget, v.budget, 0, 0, 0, 0, "—", 0, s.page_tokens)
    return (v.head_budget, v.tail_budget, v.budget, v.head_tokens, v.tail_tokens, v.omitted_tokens, v.total_tokens,
            v.within_budget, f"{v.lines_whole:,} of {v.lines:,}", s.page_tokens)


def paged_preview(msg: Message, store: Pages, head_tokens: int, tail_tokens: int,
                  counter: TokenCounter | None = None) -> tuple[Message, str]:
    """``msg`` paged into ``store`` with ``head_tokens`` and ``tail_tokens`` shown: the message the context
    shows and the page's handle (the content's, so the same result gives the same handle). Chapter 05."""
    shown, entry = page_message(msg, store, head_tokens=head_tokens, tail_tokens=tail_tokens,
                                counter=counter or o200k_counter())
    return shown, entry.data["handle"]


def prune_state(msg: Message, head: int, tail: int, line: int, store: Pages,
                paged: tuple[Message, str] | None = None, counter: TokenCounter | None = None) -> PruneState:
    """What the pruning widget shows for a head and a tail (tokens) and a line number (1-based, clamped to the
    text's lines): ``msg`` pruned, its paged preview (``paged``: from :func:`paged_preview`, made here when
    None) and that line read back from ``store`` through ``read_page``. The sample's CI log at 1,000 + 500,
    line 536 → ``line_in_pruned`` False, ``read_back_exact`` True. Chapter 05."""
    counter = counter or o200k_counter()
    view = prune_view(msg.text, head, tail, counter)
    shown, handle = paged or paged_preview(msg, store, head, tail, counter)
    found = re.search(r"lines ([\d,]+)-([\d,]+) of", shown.text)  # the page notice names the lines not shown
    hidden = f"{found.group(1)}-{found.group(2)}" if found else "none"
    lines = page_lines(msg.text)
    line = min(max(1, line), len(lines))
    return PruneState(view, counter.count(shown.text), handle, hidden, line, lines[line - 1],
                      not view.error and line_kept(msg.text, view, line), read_line(store, handle, line))


__all__ = ["read_line", "MECHANISM_COLUMNS", "MechanismRow", "mechanism_rows", "POLICY_COLUMNS", "REASON_COLUMNS",
           "policy_rows", "reason_rows", "cited_line", "PruneState", "STATE_COLUMNS", "state_row", "paged_preview",
           "prune_state"]
