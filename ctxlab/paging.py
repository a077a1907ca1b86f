"""Paging (换页): store a large tool result whole, show its head and tail, read the rest on demand.

Where pruning (``pruning.py``) drops the middle of a result for good, paging puts the whole
result in a **page store** and puts into the context its head, a notice naming the page's
handle and how to read it, and its tail. The model reads the middle back with the
``read_page`` tool, by line or by token range. The tool is in the request from the first call
when paging is on: adding a tool later changes the tools block, the first thing a provider
caches, and every cached prefix after it is lost.

Which results to page, and which to prune, is a policy per kind of tool (:data:`REASONS`):

=========  ====================================  =======  ==========================================
kind       default tools                          action   why
=========  ====================================  =======  ==========================================
log        bash, shell, run, grep, ls, glob, ...  prune    start and end say what ran and how it ended;
                                                           the middle is rarely needed again
document   read, read_file, cat, web_fetch, ...   page     any line may matter later (a function in the
                                                           middle of a file); keep it readable
data       query, sql, search, http/json APIs     page     the row the task needs may be anywhere
other      anything not in the table              page     unknown content: keep it recoverable
=========  ====================================  =======  ==========================================

A page store is anything with ``put(text) -> handle`` and ``get(handle) -> text`` (:class:`Pages`);
a page's handle is its content hash (:func:`page_handle`), checked whenever the model sends one back
(:func:`check_handle`). :class:`MemoryPages` keeps pages in a dict: a replay uses it, so it never
writes a file. The plumbing is in ``ctxlab/io/page_store.py``: ``PageStore`` keeps pages as files,
behind the file-system checks, and ``execute_read_page`` answers a ``read_page`` call from a store.

Simplified on purpose: lines are split on ``"\\n"`` only; pages are never deleted; a handle is
64 bits of sha256, and a collision is reported, not resolved. Taught in chapter 05.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from typing import ClassVar, Literal, Mapping, Protocol

from ctxlab.base import validate
from ctxlab.base.errors import CtxlabError
from ctxlab.messages import Conversation, Entry, Message, TextPart, ToolSpec
from ctxlab.pruning import TokenCutter, text_tokens
from ctxlab.pruning_strategy import PrunedStrategy, PruneStep, replacement_entry
from ctxlab.tokens import TokenCounter

HANDLE_CHARS = 16
_HANDLE = re.compile(r"[0-9a-f]{16}", re.ASCII)  # lower-case hex only: one spelling per page


class PageError(CtxlabError):
    """A bad handle, a missing page or a bad range; the message says which and what is allowed. Chapter 05."""


def page_handle(text: str) -> str:
    """A page's handle: the first 16 hex digits of the sha256 of its UTF-8 bytes (a lone surrogate kept
    as it is). The same text always gets the same handle, so putting it twice is a no-op. Chapter 05."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:HANDLE_CHARS]


def check_handle(handle: object) -> str:
    """``handle`` if it is exactly 16 lower-case hex digits, else PageError. ``"../etc"`` → error. Chapter 05."""
    if not isinstance(handle, str):
        raise PageError(f"A page handle is a string of {HANDLE_CHARS} hex digits, not {type(handle).__name__}.")
    if len(handle) != HANDLE_CHARS or not _HANDLE.fullmatch(handle):
        shown = repr(handle[:40]) + ("..." if len(handle) > 40 else "")
        raise PageError(f"Not a page handle: {shown}. A handle is exactly {HANDLE_CHARS} lower-case hex digits "
                        "(0-9, a-f), as the page notice gave it.")
    return handle


def page_lines(text: str) -> list[str]:
    """The lines ``read_page`` numbers from 1: split on ``"\\n"``, no empty line after a final newline.

    ``page_lines("a\\nb\\n")`` → ``["a", "b"]``. Chapter 05.
    """
    lines = text.split("\n")
    return lines[:-1] if len(lines) > 1 and lines[-1] == "" else lines


class Pages(Protocol):
    """What paging needs of a page store: ``put(text)`` → its :func:`page_handle`; ``get(handle)`` → the
    text, or PageError for a bad or unknown handle. :class:`MemoryPages` and ``io.page_store.PageStore``
    are two. Chapter 05."""

    def put(self, text: str) -> str: ...

    def get(self, handle: str) -> str: ...


class MemoryPages:
    """Pages in a dict, never on disk: ``h = pages.put(text)``; ``pages.get(h) == text``. Chapter 05.

    Raises PageError for a bad handle, an unknown page, or a different text under a handle (a hash
    collision).
    """

    def __init__(self) -> None:
        self.pages: dict[str, str] = {}  # handle -> text

    def __repr__(self) -> str:
        return f"<MemoryPages: {len(self.pages):,} page(s)>"

    def put(self, text: str) -> str:
        handle = page_handle(text)
        if self.pages.setdefault(handle, text) != text:
            raise PageError(f"Page {handle} already holds different content (a 64-bit hash collision).")
        return handle

    def get(self, handle: str) -> str:
        text = self.pages.get(check_handle(handle))
        if text is None:
            raise PageError(f"No page {handle} in this store.")
        return text


# ---- the read_page tool ----

READ_PAGE_TOOL = ToolSpec(
    name="read_page",
    description=("Read part of a large tool result that was stored as a page. A result over the size limit is "
                 "shown as its start and its end with a notice naming its handle, its lines and its tokens; "
                 "call read_page with that handle and a line range (start_line, end_line) or a token range "
                 "(start_token, end_token) to read the part that was not shown. Ranges are 1-based and "
                 "inclusive; one call returns at most 3,000 tokens and says where to read on."),
    parameters={
        "type": "object",
        "properties": {
            "handle": {"type": "string", "pattern": "^[0-9a-f]{16}$",
                       "description": "The page handle from the notice: 16 lower-case hex digits."},
            "start_line": {"type": "integer", "minimum": 1, "description": "First line to read (1-based)."},
            "end_line": {"type": "integer", "minimum": 1, "description": "Last line to read (inclusive)."},
            "start_token": {"type": "integer", "minimum": 1, "description": "First token to read (1-based)."},
            "end_token": {"type": "integer", "minimum": 1, "description": "Last token to read (inclusive)."},
        },
        "required": ["handle"],
        "additionalProperties": False,
    },
)
"""The tool the model reads a page back with. Chapter 05; ``io.page_store.execute_read_page`` answers a call."""


# ---- paging a message ----

# a live page handle, as page_message's notice names it: "[... page 3f2a...: ..." or read_page(handle="3f2a...")
PAGE_HANDLE = re.compile(r'\bpage ([0-9a-f]{16})\b|\bhandle=\\?"?([0-9a-f]{16})\b')


def page_message(msg: Message, store: Pages, *, head_tokens: int, tail_tokens: int,
                 counter: TokenCounter, entry_id: str | None = None) -> tuple[Message, Entry]:
    """Store ``msg``'s text whole; return the message the context shows and a ``paged_result`` entry.

    The entry's data: ``handle``, ``message_id``, ``tool_call_id``, ``lines``, ``tokens`` (of the
    whole result) and ``replacement`` (the shown message, see ``messages.Entry``).

    A 900-line log → its first ``head_tokens``, a notice ``[... page 3f2a...: lines 12-880 not
    shown ... read_page(handle="3f2a...", start_line=12, end_line=880) ...]``, its last
    ``tail_tokens``. Non-text parts and every field of the message are kept. Chapter 05.
    """
    text = msg.text
    handle = store.put(text)
    total_tokens, n_lines = counter.count(text), len(page_lines(text))
    cut = TokenCutter(text, counter)
    per_token = len(cut) / max(1, total_tokens)
    h_units, t_units = round(head_tokens * per_token), round(tail_tokens * per_token)
    if h_units + t_units >= len(cut):
        head, tail = text, ""
    else:
        head, tail = cut.head(h_units), cut.tail(t_units)
    middle_end = len(text) - len(tail)
    if middle_end > len(head):
        first, last = text.count("\n", 0, len(head)) + 1, text.count("\n", 0, middle_end - 1) + 1
        hidden = counter.count(text[len(head):middle_end])
        notice = (f"\n[... page {handle}: {hidden:,} of {total_tokens:,} tokens not shown, lines {first:,}-{last:,} "
                  f"of {n_lines:,}. Read them with read_page(handle=\"{handle}\", start_line={first}, "
                  f"end_line={last}) ...]\n")
    else:
        notice = f"\n[page {handle}: shown whole above, {n_lines:,} lines, {total_tokens:,} tokens]"
    where = next((k for k, p in enumerate(msg.parts) if isinstance(p, TextPart)), 0)
    others = [p for p in msg.parts if not isinstance(p, TextPart)]
    shown = replace(msg, parts=tuple(others[:where] + [TextPart(head + notice + tail)] + others[where:]))
    return shown, replacement_entry("paged_result", entry_id or f"page:{msg.id}", msg, shown, handle=handle,
                                    tool_call_id=msg.tool_call_id, lines=n_lines, tokens=total_tokens)


# ---- the policy ----

Kind = Literal["log", "document", "data", "other"]
Action = Literal["prune", "page"]

# tool name (lower case) -> kind. "log" covers lists too: both read well from their two ends.
DEFAULT_TOOL_KINDS: dict[str, Kind] = {
    **dict.fromkeys(("bash", "shell", "sh", "run", "exec", "execute", "terminal", "run_command",
                     "execute_command", "run_terminal_cmd", "bashoutput", "killbash", "python", "test",
                     "grep", "glob", "ls", "list_dir", "list_files", "find", "search_files", "todowrite",
                     "todo_write"), "log"),
    **dict.fromkeys(("read", "read_file", "cat", "view", "open", "open_file", "str_replace_editor",
                     "web_fetch", "webfetch", "fetch", "browse", "get_file"), "document"),
    **dict.fromkeys(("query", "sql", "run_sql", "execute_sql", "db_query", "search", "web_search",
                     "websearch", "http", "http_request", "api", "api_call", "curl", "get_json"), "data"),
}
DEFAULT_ACTIONS: dict[Kind, Action] = {"log": "prune", "document": "page", "data": "page", "other": "page"}
REASONS: dict[Kind, str] = {
    "log": "pruned: a log or a list reads from its ends (what ran, the first error, how it ended); "
           "the middle is rarely needed again and not worth a store round trip",
    "document": "paged: any part of a file or a web page may be needed later; a handle keeps it readable",
    "data": "paged: the row or record the task needs may sit anywhere in a result set",
    "other": "paged: unknown content, so keep it recoverable; the cost is one write",
}


@dataclass(frozen=True)
class PagingPolicy:
    """Which tool results are paged and which pruned, and how much of a paged one stays in view.

    ``PagingPolicy().kind_of("mcp__fs__read_file")`` → ``"document"`` → ``action_of`` ``"page"``.
    Override the table with ``PagingPolicy(kinds={**DEFAULT_TOOL_KINDS, "my_tool": "data"})``. Chapter 05.
    """

    kinds: Mapping[str, Kind] = field(default_factory=lambda: dict(DEFAULT_TOOL_KINDS))
    actions: Mapping[Kind, Action] = field(default_factory=lambda: dict(DEFAULT_ACTIONS))
    head_tokens: int = 1_000  # of a paged result, in view (whole tokens, 0 or more, else CtxlabError)
    tail_tokens: int = 500

    def __post_init__(self) -> None:
        validate.settle(self, **{name: validate.tokens(name, getattr(self, name), allow_zero=True, allow_none=False)
                                 for name in ("head_tokens", "tail_tokens")})

    def kind_of(self, tool_name: str | None) -> Kind:
        """Exact name first (case-insensitive), then the last segment of ``mcp__server__tool`` / ``ns.tool``."""
        name = (tool_name or "").lower()
        last = re.split(r"__|\.|/|:", name)[-1]
        return self.kinds.get(name) or self.kinds.get(last) or "other"

    def action_of(self, tool_name: str | None) -> Action:
        return self.actions.get(self.kind_of(tool_name), "page")


@dataclass
class PagedStrategy(PrunedStrategy):
    """``pruned``, but a result over its tool's limit is paged when the policy says so (logs are pruned).

    ``read_page`` is in the tools of every call, from the first; the first time a result is paged
    the decision carries a ``paged_result`` entry. Pages live in ``store`` (a :class:`MemoryPages` by
    default): ``replay(conv, PagedStrategy(store=PageStore("pages")))`` keeps them on disk. Chapter 05.
    """

    paging: PagingPolicy = field(default_factory=PagingPolicy)
    store: Pages = field(default_factory=MemoryPages)
    name: str = "paged"
    added_tools: ClassVar[tuple[ToolSpec, ...]] = (READ_PAGE_TOOL,)  # what the checks let it add

    def tools(self, history: Conversation) -> tuple[ToolSpec, ...]:
        same = [t for t in history.tools if t.name == READ_PAGE_TOOL.name]
        if same and same[0] != READ_PAGE_TOOL:
            raise CtxlabError("The conversation already has a different tool named 'read_page'; rename one.")
        return history.tools if same else history.tools + (READ_PAGE_TOOL,)

    def arrive(self, msg: Message, step: PruneStep) -> Message:
        limit, counter = self.cap.limit_for(msg.tool_name), self.cap.counter
        never = msg.tool_name == READ_PAGE_TOOL.name  # a page read back is never paged again: capped at most
        if never or self.paging.action_of(msg.tool_name) == "prune" or text_tokens(msg, counter) <= limit:
            return super().arrive(msg, step)
        shown, entry = page_message(msg, self.store, head_tokens=self.paging.head_tokens,
                                    tail_tokens=self.paging.tail_tokens, counter=counter,
                                    entry_id=self.entry_id("page", msg.id))
        if msg.id not in self.entry_ids(step.history.items, "paged_result"):
            step.entries.append(entry)  # the first time this result is paged
        step.notes.append(f"paged on arrival: {msg.id} ({msg.tool_name}, {self.paging.kind_of(msg.tool_name)}) "
                          f"{text_tokens(msg, counter):,} tokens → {text_tokens(shown, counter):,} in view")
        return shown

    def shrink(self, msg: Message, budget_tokens: int, counter: TokenCounter) -> tuple[Message, Entry]:
        """Re-page with a smaller head and tail; prune when the policy says so or the notice cannot fit."""
        if self.paging.action_of(msg.tool_name) == "page":
            share = self.paging.head_tokens / max(1, self.paging.head_tokens + self.paging.tail_tokens)
            trial = MemoryPages()  # sizing only; the real store gets the one that fits
            room = budget_tokens - text_tokens(page_message(msg, trial, head_tokens=0, tail_tokens=0,
                                                            counter=counter)[0], counter)
            for _ in range(8):
                if room <= 0:
                    break
                head = round(room * share)
                shown = page_message(msg, trial, head_tokens=head, tail_tokens=room - head, counter=counter)[0]
                over = text_tokens(shown, counter) - budget_tokens
                if over <= 0:
                    return page_message(msg, self.store, head_tokens=head, tail_tokens=room - head, counter=counter,
                                        entry_id=self.entry_id("page", msg.id))
                room -= over
        return super().shrink(msg, budget_tokens, counter)
