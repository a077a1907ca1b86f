"""A session: an agent's whole history as an append-only JSONL tree — the only writer of session files.

What it holds: :class:`Session`, which creates, opens and appends to a session file, and answers
questions about its tree (``leaves``, ``path``, ``conversation``). The file is never rewritten:
``create`` refuses an existing file, ``open`` only reads, ``append`` adds one line at the end
(then flushes and fsyncs). A branch is made by appending with an earlier parent (``fork``).

The file's layout, its torn tails and their markers are described in :mod:`ctxlab.io.session_file`;
this module holds the tree and the one writer.

Hostile input: ``open`` refuses a path that is not a regular file (a FIFO, a device) before it
opens it; a lone surrogate (a ``\\ud800`` JSON escape, which no UTF-8 can hold) read from a line,
or held by an item given to ``append`` or ``create``, becomes U+FFFD with a line in
``session.warnings`` naming the line (or the item) and the field — a declared repair, so the
file stays writable and strict opening does not raise.

Simplified on purpose: one writer at a time (an append checks that the file is still the one it
read — same device, inode and size — but there is no lock); the whole file is read into memory; ids
are the items' own ids (an empty id gets ``i<N>``). Taught in chapter 02.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, Iterable

from ctxlab.base.errors import SessionError
from ctxlab.io.codec import (dumps, item_from_dict, item_to_dict, might_hold_surrogates, repair_note,
                              repair_surrogates, toolspec_from_dict)
from ctxlab.io.session_file import LineProblem, ParsedSession, new_header, parse_session, regular_file, repair_header
from ctxlab.messages import Conversation, Entry, Item, Message, ToolSpec, Transcript

__all__ = ["Session"]


class Session:
    """An append-only tree of messages and entries, in a file or in memory (chapter 02).

    ``s = Session.in_memory(); s.append(user("hi", "u1")); s.append(assistant("yo", "a1"))``
    → ``s.path()`` is ``(u1, a1)``; ``s.fork("u1"); s.append(assistant("hey", "a2"))`` → leaves
    ``["a1", "a2"]``, and ``s.path("a1")`` still reads ``(u1, a1)``.
    """

    def __init__(self, header: dict[str, Any], file: Path | None) -> None:
        """Use :meth:`create`, :meth:`open` or :meth:`in_memory` instead."""
        self.id: str = header["id"]
        self.system: tuple[str, ...] = tuple(header.get("system") or ())
        self.tools: tuple[ToolSpec, ...] = tuple(toolspec_from_dict(t) for t in header.get("tools") or ())
        self.model: str | None = header.get("model")
        self.provider: str | None = header.get("provider")
        self.title: str | None = header.get("title")
        self.created: str | None = header.get("created")
        self.file: Path | None = file
        self.warnings: list[str] = []
        self.head: str | None = None  # the leaf the next append attaches to
        self._items: dict[str, Item] = {}  # id -> item, in append order
        self._parent: dict[str, str | None] = {}  # id -> parent id
        self._children: dict[str, list[str]] = {}  # id -> child ids in append order
        self._size = 0  # bytes of the file as far as this object knows it
        self._ends_with_newline = True
        self._torn_tail: tuple[int, int] | None = None  # (first line, count) of a torn tail to mark
        self._identity: tuple[int, int] | None = None  # (device, inode) of the file as read

    # ---- making one ----------------------------------------------------------------------------

    @classmethod
    def create(cls, path: str | os.PathLike[str], *, system: Iterable[str] = (), tools: Iterable[ToolSpec] = (),
               model: str | None = None, provider: str | None = None, title: str | None = None,
               id: str | None = None, created: str | None = None) -> "Session":
        """Start a new session file holding only the header; refuses to overwrite (SessionError).

        ``id`` defaults to the file's stem; ``created`` is an ISO time you pass (ctxlab reads no clock).
        ``Session.create("run.jsonl", system=("Be brief.",))`` → an empty session, head ``None``.
        """
        file = Path(path)
        header = new_header(id or file.stem, system, tools, model, provider, title, created)
        repaired = repair_header(header)
        line = (dumps(header) + "\n").encode("utf-8")
        try:
            with open(file, "xb") as f:
                f.write(line)
                f.flush()
                os.fsync(f.fileno())
                st = os.fstat(f.fileno())
        except FileExistsError:
            raise SessionError(f"{file}: already exists; a session file is never overwritten. "
                               "Open it with Session.open or pick a new path.") from None
        session = cls(header, file)
        session._size, session._identity, session.warnings = len(line), (st.st_dev, st.st_ino), repaired
        return session

    @classmethod
    def in_memory(cls, *, system: Iterable[str] = (), tools: Iterable[ToolSpec] = (), model: str | None = None,
                  provider: str | None = None, title: str | None = None, id: str | None = None,
                  created: str | None = None) -> "Session":
        """A session with no file (replay uses it): same tree, same checks, nothing written."""
        header = new_header(id or "memory", system, tools, model, provider, title, created)
        repaired = repair_header(header)
        session = cls(header, None)
        session.warnings = repaired
        return session

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> "Session":
        """Read a session file (never writes). Head = the last record. Bad lines raise SessionError;
        so does a path that is not a regular file (a directory, a FIFO, a device), before it is opened."""
        file = Path(path)
        try:
            regular_file(file, os.stat(file))  # before opening: opening a FIFO blocks, /dev/zero never ends
            with open(file, "rb", opener=lambda p, flags: os.open(p, flags | getattr(os, "O_NONBLOCK", 0))) as f:
                st = regular_file(file, os.fstat(f.fileno()))  # a FIFO swapped in meanwhile: still no hang
                data = f.read()
        except FileNotFoundError:
            raise SessionError(f"{file}: no such session file. Check the path, or start one with "
                               "Session.create.") from None
        except OSError as exc:  # a directory (IsADirectoryError; PermissionError on Windows), no access
            raise SessionError(f"{file}: cannot be read as a session file ({exc.strerror or exc}). "
                               "Pass the path of a .jsonl file.") from None
        try:
            parsed = parse_session(data, file.name)
        except LineProblem as p:
            raise SessionError(f"{file.name}:{p.line}: {p.problem}. A session file is append-only: restore it "
                               "from a copy, or salvage the rest with ctxlab.io.formats.load(path, strict=False) "
                               "and Session.import_transcript into a new file.") from None
        session = cls.from_parsed(parsed, file)
        session._identity = (st.st_dev, st.st_ino)
        return session

    @classmethod
    def from_parsed(cls, parsed: ParsedSession, file: Path | None) -> "Session":
        """The session a :func:`parse_session` result holds; ``file`` is where appends go (None: they
        stay in memory, as for the one the ``ctxlab-session`` reader makes). Chapter 02."""
        session = cls(parsed.header, file)
        for _line, item, parent in parsed.records:
            session._add(item, parent)
        session.warnings = list(parsed.warnings)
        session._size, session._ends_with_newline = parsed.size, parsed.ends_with_newline
        session._torn_tail = parsed.torn_tail
        return session

    @classmethod
    def import_transcript(cls, transcript: Transcript, path: str | os.PathLike[str] | None,
                          conversation: int | None = None) -> "Session":
        """Write a new session from a loaded transcript (``ctxlab.io.formats.load``); ``path=None`` → in memory.

        The items go in as one straight line (root → newest); header from the conversation.
        """
        conv = transcript.conversation(conversation)
        kw = dict(system=conv.system, tools=conv.tools, model=conv.model, provider=conv.provider,
                  title=conv.title, id=conv.id)
        session = cls.in_memory(**kw) if path is None else cls.create(path, **kw)
        for item in conv.items:
            session.append(item)
        return session

    # ---- the tree ------------------------------------------------------------------------------

    def _add(self, item: Item, parent: str | None) -> None:
        self._items[item.id] = item
        self._parent[item.id] = parent
        self._children[item.id] = []
        if parent is not None:
            self._children[parent].append(item.id)
        self.head = item.id

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._items

    def __getitem__(self, item_id: str) -> Item:
        self._need(item_id)
        return self._items[item_id]

    def __repr__(self) -> str:
        where = f"file={self.file.name!r}" if self.file else "in memory"
        return (f"Session(id={self.id!r}, {len(self)} items, {len(self.leaves())} leaves, "
                f"head={self.head!r}, {where})")

    def _need(self, item_id: str) -> None:
        if item_id not in self._items:
            raise SessionError(f"session {self.id!r} has no item {item_id!r}")

    def items(self) -> tuple[Item, ...]:
        """Every item in append (file) order, all branches."""
        return tuple(self._items.values())

    def parent(self, item_id: str) -> str | None:
        """The id ``item_id`` was appended to (``None`` for a root)."""
        self._need(item_id)
        return self._parent[item_id]

    def children(self, item_id: str) -> tuple[str, ...]:
        """Ids appended to ``item_id``; two or more means a fork."""
        self._need(item_id)
        return tuple(self._children[item_id])

    def leaves(self) -> list[str]:
        """Ids with no children, oldest first: one per branch. The last one is the newest."""
        return [i for i, kids in self._children.items() if not kids]

    def path(self, leaf_id: str | None = None) -> tuple[Item, ...]:
        """Items from the root to ``leaf_id`` (default: ``head``). ``s.path("m3")`` → (m1, m2, m3)."""
        at = self.head if leaf_id is None else leaf_id
        out: list[Item] = []
        while at is not None:
            self._need(at)
            out.append(self._items[at])
            at = self._parent[at]
        return tuple(reversed(out))

    def conversation(self, leaf_id: str | None = None) -> Conversation:
        """The path to ``leaf_id`` as a :class:`Conversation` with the header's system, tools and model."""
        leaf = self.head if leaf_id is None else leaf_id
        leaves = self.leaves()
        notes: tuple[str, ...] = ()
        if len(leaves) > 1:
            others = [x for x in leaves if x != leaf]
            notes = (f"session has {len(leaves)} branches; this is the path to {leaf!r}; "
                     f"other leaves: {', '.join(map(repr, others))}",)
        return Conversation(id=self.id, items=self.path(leaf), system=self.system, tools=self.tools,
                            title=self.title, model=self.model, provider=self.provider, notes=notes)

    def fork(self, at_id: str) -> None:
        """Move ``head`` back to ``at_id``: the next append starts a new branch there."""
        self._need(at_id)
        self.head = at_id

    # ---- writing -------------------------------------------------------------------------------

    def append(self, item: Item, parent: str | None = None) -> str:
        """Append one item under ``parent`` (default: ``head``) as one new line; returns its id.

        Refuses a duplicate id. An item with an empty id gets ``i<N>``. The new item becomes ``head``.
        A lone surrogate in any of its text (which no UTF-8 file can hold) is written, and kept, as
        U+FFFD, and said in ``warnings`` (``"s.jsonl: item 'u1', field 'parts[0].text': a lone
        surrogate \\ud800 ... replaced with U+FFFD"``); the id returned is the item's (repaired) id.
        """
        if not isinstance(item, (Message, Entry)):
            raise SessionError(f"can only append a Message or an Entry, not {type(item).__name__}")
        if not item.id:
            n = len(self._items) + 1
            while f"i{n}" in self._items:
                n += 1
            item = dataclasses.replace(item, id=f"i{n}")
        at = self.head if parent is None else parent
        if at is not None:
            self._need(at)
        payload = item_to_dict(item)
        record = {"type": payload.pop("type"), "id": payload.pop("id"), "parent": at, **payload}
        line = dumps(record) + "\n"  # dumps fails (ValueError) before anything is written
        found: list[Any] = []
        if might_hold_surrogates(line):  # no UTF-8 can hold a lone surrogate: U+FFFD, kept and said
            repair_surrogates(record, found)
        if found:
            line = dumps(record) + "\n"
            item = item_from_dict({k: v for k, v in record.items() if k != "parent"})
        if item.id in self._items:
            raise SessionError(f"session {self.id!r} already has an item with id {item.id!r}; "
                               "ids are unique — give the new item another id")
        if self.file is not None:
            self._write(line)
        where = self.file.name if self.file is not None else f"session {self.id!r}"
        self.warnings += [f"{where}: item {item.id!r}, {repair_note(field, char)}" for field, _, char in found]
        self._add(item, at)
        return item.id

    def _write(self, line: str) -> None:
        assert self.file is not None
        try:
            st: os.stat_result | None = os.stat(self.file)
        except OSError:
            st = None
        if st is None or (st.st_dev, st.st_ino) != self._identity:
            raise SessionError(f"{self.file}: is not the file this session read (it was replaced, moved or "
                               "deleted since); open it again before appending")
        size = st.st_size
        if size != self._size:
            raise SessionError(f"{self.file}: changed on disk since it was read ({self._size} → {size} bytes); "
                               "open it again before appending")
        prefix = b"" if self._ends_with_newline else b"\n"  # end the last line; its bytes stay as they were
        if self._torn_tail is not None:
            first, count = self._torn_tail
            marker = {"type": "torn", "line": first, **({"count": count} if count > 1 else {})}
            prefix += (dumps(marker) + "\n").encode("utf-8")
        data = prefix + line.encode("utf-8")
        with open(self.file, "ab") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        self._size += len(data)
        self._ends_with_newline, self._torn_tail = True, None
