"""The page store on disk and the ``read_page`` tool's answer: the plumbing behind chapter 05's paging.

What it holds: :class:`PageStore`, where ``paging.py`` puts large tool results that should outlive
the process (``PagedStrategy(store=PageStore("pages"))``), and :data:`MAX_PAGE_BYTES`;
:func:`read_page`, a line or token range of a page in any store (:class:`ctxlab.paging.Pages`);
:func:`execute_read_page`, what an agent runs when the model calls ``read_page`` (it parses the
model's JSON arguments and never raises), and the tool's wire forms (:func:`openai_tool_schema`,
:func:`anthropic_tool_schema`). ``PageStore.in_memory()`` keeps its pages in a
:class:`ctxlab.paging.MemoryPages`, as a replay does by default.

The store is, with ``session.py``, the only writer: pages are named by content hash
(:func:`ctxlab.paging.page_handle`), written via a temp file and ``os.replace`` in the same
directory, and read only through validated handles (:func:`ctxlab.paging.check_handle`) — nothing
outside the store can be named, and a symbolic link under a page's name is refused. A page file is
sized before it is read (``os.fstat``): against the size the store recorded when it put or last
read that page, or, for a page it has no record of, against :data:`MAX_PAGE_BYTES`; a bigger file
is refused without a byte of it read (a planted 2 GB file), a smaller one fails the hash check.

Simplified on purpose: pages are never deleted; there is no lock (one writer at a time). Plumbing
for chapter 05.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import Any, Mapping

from ctxlab.base.errors import CtxlabError
from ctxlab.io.codec import loads
from ctxlab.messages import ToolSpec
from ctxlab.paging import READ_PAGE_TOOL, MemoryPages, PageError, Pages, check_handle, page_handle, page_lines
from ctxlab.pruning import TokenCutter
from ctxlab.tokens import TiktokenCounter, TokenCounter

__all__ = ["MAX_PAGE_BYTES", "PageStore", "anthropic_tool_schema", "execute_read_page", "openai_tool_schema",
           "read_page"]

MAX_PAGE_BYTES = 256 * 1024 * 1024
"""Bytes: the largest page file a store reads without a record of its size (one it did not put or
read itself, e.g. written by an earlier run). A bigger one is refused before it is read. Chapter 05."""


class PageStore:
    """Tool results by content hash. ``h = store.put(text)``; ``store.read(h, lines=(3, 5))``.

    ``PageStore(root)`` keeps ``<root>/<handle>.txt`` files (``root`` is made if missing);
    ``PageStore.in_memory()`` a dict. Every method raises :class:`~ctxlab.paging.PageError` (a
    CtxlabError) for a bad handle, a missing page or a page file that is not the page. Chapter 05.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root: Path | None = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._real_root = self.root.resolve(strict=True)
        self._memory: MemoryPages | None = None
        self._sizes: dict[str, int] = {}  # handle -> bytes of the page as put (or read and verified) here

    @classmethod
    def in_memory(cls) -> "PageStore":
        """A store that never touches the disk (notebooks, tests, replays): its pages live in a
        :class:`~ctxlab.paging.MemoryPages`, with the same handles and the same validation. Chapter 05."""
        store = cls.__new__(cls)
        store.root, store._real_root, store._memory, store._sizes = None, None, MemoryPages(), {}
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
        """Store ``text``; return its handle (:func:`~ctxlab.paging.page_handle`). Chapter 05.

        The same text twice is a no-op. A file is written to a temp name and renamed into place,
        so no reader ever sees half a page. PageError if the page's file holds something else.
        """
        if self._memory is not None:
            return self._memory.put(text)
        data = text.encode("utf-8", "surrogatepass")  # a transcript's JSON may hold a lone surrogate
        handle = page_handle(text)
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
        """The whole page. Chapter 05.

        Raises PageError for a bad handle, a missing page, or a page file that is not the page: not a
        regular file, bigger than the size recorded (or than :data:`MAX_PAGE_BYTES` without a record;
        checked before reading), or not hashing to its handle."""
        if self._memory is not None:
            return self._memory.get(handle)
        data = self._read_bytes(self._path(handle), self._sizes.get(handle))
        # Handles are content hashes, so a page proves itself: a hard link or a copied file
        # planted under a page's name (both look like plain files in the store) fails here.
        try:
            text: str | None = data.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            text = None  # not even UTF-8: no page put here
        if text is None or page_handle(text) != handle:
            raise PageError(f"Refusing page {handle}: its content does not hash to its handle "
                            "(the file was changed or planted; pages are written only by put).")
        self._sizes[handle] = len(data)
        return text

    def __contains__(self, handle: object) -> bool:
        try:
            self.get(handle)  # type: ignore[arg-type]
        except PageError:
            return False
        return True

    def read(self, handle: str, *, lines: tuple[int, int] | None = None, tokens: tuple[int, int] | None = None,
             counter: TokenCounter | None = None) -> str:
        """Lines ``first..last`` or tokens ``first..last`` of a page (1-based, inclusive): :func:`read_page`
        on this store, whose PageErrors it raises. ``read(h, lines=(2, 2))`` → the second line. Chapter 05."""
        return read_page(self, handle, lines=lines, tokens=tokens, counter=counter)


def read_page(store: Pages, handle: str, *, lines: tuple[int, int] | None = None,
              tokens: tuple[int, int] | None = None, counter: TokenCounter | None = None) -> str:
    """Lines ``first..last`` or tokens ``first..last`` of a page in ``store`` (1-based, inclusive). Chapter 05.

    ``read_page(store, h, lines=(2, 2))`` → exactly the second line (as :func:`ctxlab.paging.page_lines`
    numbers them). A range running past the end stops at the end. Token ranges need ``counter``
    (tiktoken tokens, or characters x N for ``chars/N``). Raises PageError for a bad handle, an
    unknown page or a bad range, saying which.
    """
    if (lines is None) == (tokens is None):
        raise PageError("Give exactly one of lines=(first, last) or tokens=(first, last).")
    text = store.get(handle)
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
    cut = TokenCutter(text, counter)
    per_token = len(cut) / max(1, counter.count(text))  # characters per token for an estimator
    lo, hi = (first - 1, last) if cut.encoding else (round((first - 1) * per_token), round(last * per_token))
    if lo >= len(cut):
        raise PageError(f"Page {handle} has about {counter.count(text):,} tokens; token {first:,} is past the end.")
    return cut.span(lo, hi)


# ---- the read_page tool, on the agent's side ----

def openai_tool_schema(spec: ToolSpec = READ_PAGE_TOOL) -> dict[str, Any]:
    """The chat-completions ``tools`` entry (the form ``render.to_openai_body`` writes), for an agent
    that registers ``read_page`` itself. Chapter 05."""
    return {"type": "function", "function": {"name": spec.name, "description": spec.description,
                                             "parameters": spec.parameters}}


def anthropic_tool_schema(spec: ToolSpec = READ_PAGE_TOOL) -> dict[str, Any]:
    """The Messages API ``tools`` entry (the form ``render.to_anthropic_body`` writes). Chapter 05."""
    return {"name": spec.name, "description": spec.description, "input_schema": spec.parameters}


def execute_read_page(store: Pages, arguments: Mapping[str, Any] | str, *,
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
        out = read_page(store, handle, **{f"{unit}s": (first, last)}, counter=counter)
        last, note = min(last, total), ""
        if counter.count(out) > max_tokens:
            cut = TokenCutter(out, counter)
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
