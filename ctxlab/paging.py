"""Paging (换页): store a large tool result whole, show its head and tail, read the rest on demand.

Where pruning (``pruning.py``) drops the middle of a result for good, paging writes the whole
result to a **page store** and puts into the context its head, a notice naming the page's
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

The store is the one piece of plumbing here (the only writer besides ``session.py``): entries
are named by content hash, written via a temp file and ``os.replace`` in the same directory, and
read only through validated handles — nothing outside the store can be named. A page file is
sized before it is read (``os.fstat``): against the size the store recorded when it put or last
read that page, or, for a page it has no record of, against :data:`MAX_PAGE_BYTES`; a bigger file
is refused without a byte of it read (a planted 2 GB file), a smaller one fails the hash check.
``PageStore.in_memory()`` keeps pages in a dict; a replay uses it, so it never writes a file.

Simplified on purpose: lines are split on ``"\\n"`` only; pages are never deleted; a handle is
64 bits of sha256, and a collision is reported, not resolved. Taught in chapter 05.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Mapping

from ctxlab.io.codec import loads
from ctxlab.base.errors import CtxlabError
from ctxlab.messages import Conversation, Entry, Message, TextPart, ToolSpec
from ctxlab.pruning import PrunedStrategy, _Cutter, _Step, replacement_entry, text_tokens
from ctxlab.tokens import TiktokenCounter, TokenCounter

HANDLE_CHARS = 16
MAX_PAGE_BYTES = 256 * 1024 * 1024
"""Bytes: the largest page file a store reads without a record of its size (one it did not put or
read itself, e.g. written by an earlier run). A bigger one is refused before it is read."""
_HANDLE = re.compile(r"[0-9a-f]{16}", re.ASCII)  # lower-case hex only: one spelling per page


class PageError(CtxlabError):
    """A bad handle, a missing page or a bad range; the message says which and what is allowed."""


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

    ``page_lines("a\\nb\\n")`` → ``["a", "b"]``.
    """
    lines = text.split("\n")
    return lines[:-1] if len(lines) > 1 and lines[-1] == "" else lines


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # a transcript's JSON may hold a lone surrogate


class PageStore:
    """Tool results by content hash. ``h = store.put(text)``; ``store.read(h, lines=(3, 5))``.

    ``PageStore(root)`` keeps ``<root>/<handle>.txt`` files; ``PageStore.in_memory()`` a dict. Chapter 05.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root: Path | None = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._real_root = self.root.resolve(strict=True)
        self._memory: dict[str, bytes] | None = None
        self._sizes: dict[str, int] = {}  # handle -> bytes of the page as put (or read and verified) here

    @classmethod
    def in_memory(cls) -> "PageStore":
        """A store that never touches the disk (notebooks, tests, replays); same validation."""
        store = cls.__new__(cls)
        store.root, store._real_root, store._memory, store._sizes = None, None, {}, {}
        return store

    def __repr__(self) -> str:
        return "PageStore.in_memory()" if self.root is None else f"PageStore({str(self.root)!r})"

    def _path(self, handle: object) -> Path:
        """The file for a valid handle, inside the root and not a symbolic link."""
        name = check_handle(handle) + ".txt"
        assert self._real_root is not None
        path = self._real_root / name
        if path.is_symlink():
            raise PageError(f"Refusing page {name}: it is a symbolic link, and a page is a plain file in the store.")
        resolved = path.resolve()
        if resolved.parent != self._real_root or not resolved.is_relative_to(self._real_root):
            raise PageError(f"Refusing page {name}: it resolves outside the store {self._real_root}.")
        return path

    def put(self, text: str) -> str:
        """Store ``text``; return its handle (first 16 hex digits of the sha256 of its UTF-8 bytes).

        The same text twice is a no-op. A file is written to a temp name and renamed into place,
        so no reader ever sees half a page.
        """
        data = _encode(text)
        handle = hashlib.sha256(data).hexdigest()[:HANDLE_CHARS]
        if self._memory is not None:
            if self._memory.setdefault(handle, data) != data:
                raise PageError(f"Page {handle} already holds different content (a 64-bit hash collision).")
            return handle
        path = self._path(handle)
        if path.exists():
            if path.stat().st_size == len(data) and self._read_bytes(path, len(data)) == data:
                self._sizes[handle] = len(data)
                return handle
            raise PageError(f"Page {path} already holds different content (damaged, or a hash collision).")
        fd, tmp = tempfile.mkstemp(dir=self._real_root, prefix=".page-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)  # atomic in one directory: the page appears whole or not at all
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self._sizes[handle] = len(data)
        return handle

    def _read_bytes(self, path: Path, size: int | None) -> bytes:
        # O_NOFOLLOW: a symlink swapped in after the check is refused by the OS (where it has the flag);
        # O_NONBLOCK: a FIFO planted under a page's name does not hang the open.
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            raise PageError(f"No page {path.stem} in this store.") from None
        except OSError as exc:
            raise PageError(f"Cannot open page {path.stem}: {exc.strerror}.") from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # a directory or a FIFO planted under a page's name
            os.close(fd)
            raise PageError(f"Refusing page {path.stem}: it is not a regular file.")
        if st.st_size > (MAX_PAGE_BYTES if size is None else size):  # sized before a byte is read
            os.close(fd)
            was = (f"the {size:,} bytes put there" if size is not None
                   else f"the {MAX_PAGE_BYTES:,} bytes a store reads of a page it has no record of")
            raise PageError(f"Refusing page {path.stem}: it is {st.st_size:,} bytes on disk, more than {was} "
                            "(the file was changed or planted; pages are written only by put).")
        with os.fdopen(fd, "rb") as f:
            return f.read()

    def get(self, handle: str) -> str:
        """The whole page. Raises PageError for a bad handle, a missing page, or a page file that is
        not the page: not a regular file, bigger than the size recorded (or than :data:`MAX_PAGE_BYTES`
        without a record; checked before reading), or not hashing to its handle."""
        if self._memory is not None:
            data = self._memory.get(check_handle(handle))
            if data is None:
                raise PageError(f"No page {handle} in this store.")
        else:
            data = self._read_bytes(self._path(handle), self._sizes.get(handle))
            # Handles are content hashes, so a page proves itself: a hard link or a copied file
            # planted under a page's name (both look like plain files in the store) fails here.
            if hashlib.sha256(data).hexdigest()[:HANDLE_CHARS] != handle:
                raise PageError(f"Refusing page {handle}: its content does not hash to its handle "
                                "(the file was changed or planted; pages are written only by put).")
            self._sizes[handle] = len(data)
        return data.decode("utf-8", "surrogatepass")

    def __contains__(self, handle: object) -> bool:
        try:
            self.get(handle)  # type: ignore[arg-type]
        except PageError:
            return False
        return True

    def read(self, handle: str, *, lines: tuple[int, int] | None = None, tokens: tuple[int, int] | None = None,
             counter: TokenCounter | None = None) -> str:
        """Lines ``first..last`` or tokens ``first..last`` of a page (1-based, inclusive).

        ``read(h, lines=(2, 2))`` → exactly the second line. A range running past the end stops at
        the end. Token ranges need ``counter`` (tiktoken tokens, or characters x N for ``chars/N``).
        """
        if (lines is None) == (tokens is None):
            raise PageError("Give exactly one of lines=(first, last) or tokens=(first, last).")
        text = self.get(handle)
        what, span = ("line", lines) if lines is not None else ("token", tokens)
        if not isinstance(span, (tuple, list)) or len(span) != 2:
            raise PageError(f"A {what} range is a pair (first, last); got {span!r}.")
        first, last = span
        for name, value in (("first", first), ("last", last)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise PageError(f"The {name} {what} must be a whole number >= 1; got {value!r}.")
        if last < first:
            raise PageError(f"The range {what}s {first}..{last} is empty: the last {what} comes before the first.")
        if lines is not None:
            all_lines = page_lines(text)
            if first > len(all_lines):
                raise PageError(f"Page {handle} has {len(all_lines):,} lines; line {first:,} is past the end.")
            return "\n".join(all_lines[first - 1:last])
        if counter is None:
            raise PageError("Reading by tokens needs the counter the page was measured with.")
        cut = _Cutter(text, counter)
        per_token = len(cut) / max(1, counter.count(text))  # characters per token for an estimator
        lo, hi = (first - 1, last) if cut.encoding else (round((first - 1) * per_token), round(last * per_token))
        if lo >= len(cut):
            raise PageError(f"Page {handle} has about {counter.count(text):,} tokens; token {first:,} is past the end.")
        return cut.span(lo, hi)


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


def openai_tool_schema(spec: ToolSpec = READ_PAGE_TOOL) -> dict[str, Any]:
    """The chat-completions ``tools`` entry (the form ``render.to_openai_body`` writes)."""
    return {"type": "function", "function": {"name": spec.name, "description": spec.description,
                                             "parameters": spec.parameters}}


def anthropic_tool_schema(spec: ToolSpec = READ_PAGE_TOOL) -> dict[str, Any]:
    """The Messages API ``tools`` entry (the form ``render.to_anthropic_body`` writes)."""
    return {"name": spec.name, "description": spec.description, "input_schema": spec.parameters}


def execute_read_page(store: PageStore, arguments: Mapping[str, Any] | str, *,
                      counter: TokenCounter | None = None, max_tokens: int = 3_000) -> str:
    """Run one ``read_page`` call; every problem comes back as a short ``error: ...`` string.

    ``{"handle": h, "start_line": 3, "end_line": 3}`` → ``"[page h, lines 3-3 of 40]\\n<line 3>"``.
    A missing end reads to the end; a read over ``max_tokens`` is cut, naming where to read on
    (below the default arrival cap, so a read is never capped or paged again). Ranges and the cut
    count with ``counter`` (default o200k, as pages are measured). Never raises: a tool's failure
    is the model's to read, not an exception in the agent loop. Chapter 05.
    """
    counter = counter or TiktokenCounter("o200k_base")
    try:
        args = loads(arguments) if isinstance(arguments, str) else dict(arguments)
        if not isinstance(args, dict):
            return "error: read_page takes a JSON object of arguments."
        unknown = sorted(set(args) - set(READ_PAGE_TOOL.parameters["properties"]))
        if unknown:
            return f"error: unknown argument(s) {', '.join(map(repr, unknown))[:200]}."
        handle = args.get("handle")
        text = store.get(handle)  # validates the handle before anything else
        by_tokens = "start_token" in args or "end_token" in args
        if by_tokens and ("start_line" in args or "end_line" in args):
            return "error: give a line range or a token range, not both."
        unit, total = ("token", counter.count(text)) if by_tokens else ("line", len(page_lines(text)))
        first, last = args.get(f"start_{unit}", 1), args.get(f"end_{unit}", total)
        out = store.read(handle, **{f"{unit}s": (first, last)}, counter=counter)
        last, note = min(last, total), ""
        if counter.count(out) > max_tokens:
            cut = _Cutter(out, counter)
            out = cut.head(round(max_tokens * len(cut) / counter.count(out)))
            if by_tokens:
                last = first + counter.count(out) - 1  # about: the cut text re-tokenizes
            elif "\n" in out:
                out = out[: out.rfind("\n")]  # whole lines only
                last = first + out.count("\n")
            else:
                return (f"[page {handle}, line {first} alone is over {max_tokens:,} tokens; its start follows, "
                        f"read the rest by tokens]\n{out}")
            note = f"; cut at {max_tokens:,} tokens, read on from {unit} {last + 1}"
        return f"[page {handle}, {unit}s {first}-{last} of {total:,}{note}]\n{out}"
    except (CtxlabError, ValueError, TypeError) as exc:
        return f"error: {str(exc)[:300]}"
    except Exception as exc:  # a tool boundary: report, never raise into the agent loop
        return f"error: read_page failed ({type(exc).__name__}: {str(exc)[:200]})"


# ---- paging a message ----

def page_message(msg: Message, store: PageStore, *, head_tokens: int, tail_tokens: int,
                 counter: TokenCounter, entry_id: str | None = None) -> tuple[Message, Entry]:
    """Store ``msg``'s text whole; return the message the context shows and a ``paged_result`` entry.

    The entry's data: ``handle``, ``message_id``, ``tool_call_id``, ``lines``, ``tokens`` (of the
    whole result) and ``replacement`` (the shown message as a codec dict, see ``messages.Entry``).

    A 900-line log → its first ``head_tokens``, a notice ``[... page 3f2a...: lines 12-880 not
    shown ... read_page(handle="3f2a...", start_line=12, end_line=880) ...]``, its last
    ``tail_tokens``. Non-text parts and every field of the message are kept. Chapter 05.
    """
    text = msg.text
    handle = store.put(text)
    total_tokens, n_lines = counter.count(text), len(page_lines(text))
    cut = _Cutter(text, counter)
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
        from ctxlab.base.validate import settle, tokens

        settle(self, **{name: tokens(name, getattr(self, name), allow_zero=True, allow_none=False)
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
    the decision carries a ``paged_result`` entry. Pages live in ``store`` (in memory by default).
    ``replay(conv, PagedStrategy(store=PageStore("pages")))``. Chapter 05.
    """

    paging: PagingPolicy = field(default_factory=PagingPolicy)
    store: PageStore = field(default_factory=PageStore.in_memory)
    name: str = "paged"

    def tools(self, history: Conversation) -> tuple[ToolSpec, ...]:
        same = [t for t in history.tools if t.name == READ_PAGE_TOOL.name]
        if same and same[0] != READ_PAGE_TOOL:
            raise CtxlabError("The conversation already has a different tool named 'read_page'; rename one.")
        return history.tools if same else history.tools + (READ_PAGE_TOOL,)

    def arrive(self, msg: Message, step: _Step) -> Message:
        limit, counter = self.cap.limit_for(msg.tool_name), self.cap.counter
        never = msg.tool_name == READ_PAGE_TOOL.name  # a page read back is never paged again: capped at most
        if never or self.paging.action_of(msg.tool_name) == "prune" or text_tokens(msg, counter) <= limit:
            return super().arrive(msg, step)
        shown, entry = page_message(msg, self.store, head_tokens=self.paging.head_tokens,
                                    tail_tokens=self.paging.tail_tokens, counter=counter,
                                    entry_id=self.entry_id("page", msg.id))
        if not any(e.kind == "paged_result" and e.data.get("message_id") == msg.id for e in step.history.entries):
            step.entries.append(entry)  # the first time this result is paged
        step.notes.append(f"paged on arrival: {msg.id} ({msg.tool_name}, {self.paging.kind_of(msg.tool_name)}) "
                          f"{text_tokens(msg, counter):,} tokens → {text_tokens(shown, counter):,} in view")
        return shown

    def shrink(self, msg: Message, budget_tokens: int, counter: TokenCounter) -> tuple[Message, Entry]:
        """Re-page with a smaller head and tail; prune when the policy says so or the notice cannot fit."""
        if self.paging.action_of(msg.tool_name) == "page":
            share = self.paging.head_tokens / max(1, self.paging.head_tokens + self.paging.tail_tokens)
            trial = PageStore.in_memory()  # sizing only; the real store gets the one that fits
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
