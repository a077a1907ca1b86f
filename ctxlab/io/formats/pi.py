"""Reader for pi coding-agent sessions (JSON Lines), both layouts.

* v1 (linear): every line after the ``session`` header is an entry, addressed by its 0-based
  line index (the header is index 0); a compaction names ``firstKeptEntryIndex``.
* v2/v3 (tree): entries carry ``id``/``parentId``; a compaction names ``firstKeptEntryId``. We
  read the path from the root to the **last** entry in the file — the branch pi was on when the
  file ended — and note how many entries on other branches were left out.

Message roles: ``user``; ``assistant`` (blocks ``text``, ``thinking``, ``toolCall``; ``usage`` with
per-bucket ``cost``; ``stopReason``; ``responseId`` when recorded); ``toolResult`` → ``tool``;
``bashExecution`` (a command the person ran with ``!``) → a ``user`` message with ``origin="shell"``,
its text rendered the way pi shows it to the model (``Ran `cmd``` + fenced output); ``!!`` commands
(``excludeFromContext``) get ``origin="meta"``. ``custom`` (v3; ``hookMessage`` before) and
``custom_message`` entries (extension messages) → ``user`` with ``origin="system"``;
``branch_summary`` entries → ``user`` with ``origin="compact_summary"``, wrapped in the text pi sends
(``BRANCH_SUMMARY_PREFIX`` ... ``BRANCH_SUMMARY_SUFFIX``). ``compaction`` (``firstKeptEntryId``,
``tokensBefore``; its ``details`` kept in the entry, never sent; ``fromHook`` noted),
``model_change``, ``thinking_level_change`` and ``session_info`` become entries; ``label`` (bookmarks)
and ``custom`` (extension state) entries never reach the model and are left out (noted).

Sources (read 2026-12-01): badlogic/pi-mono at 83378aa — ``packages/coding-agent/src/core/session-manager.ts``
(entry types, ``CURRENT_SESSION_VERSION = 3``, the v1→v2→v3 migrations, ``buildSessionContext``),
``packages/coding-agent/src/core/messages.ts`` (``convertToLlm`` and the summary wrappers),
``packages/coding-agent/docs/session.md``, ``packages/ai/src/types.ts``.

Simplified on purpose: aborted or errored assistant turns are kept as recorded, although pi-ai's
``transformMessages`` leaves them out of later requests (and adds "No result provided" results for
calls left open) — the interaction module reports them; a compaction's summary is not wrapped in
pi's ``COMPACTION_SUMMARY_PREFIX`` (ctxlab's compacted view adds its own). Plumbing for chapter 02.
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import replace
from pathlib import Path
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from ctxlab.base.errors import TranscriptError
from ctxlab.messages import Conversation, Entry, Item, Message, SourceRef, TextPart, Transcript
from ctxlab.io.formats import LeftOut, bad, check, head_objects, interned, iter_jsonl, skip_note
from ctxlab.io.formats.pi_messages import (BRANCH_SUMMARY_PREFIX, BRANCH_SUMMARY_SUFFIX, ContentPayload, SummaryLine,
                                          content_parts, to_message)

NAME = "pi"
class _Header(BaseModel):
    id: str | None = None
    provider: str | None = None
    modelId: str | None = None
    version: int | None = None
    parentSession: str | None = None


class _Line(BaseModel):
    id: str | None = None
    parentId: str | None = None
    timestamp: str | None = None


class _MessageLine(_Line):
    message: dict[str, Any]


class _ModelChange(_Line):
    provider: str | None = None
    modelId: str


class _ThinkingChange(_Line):
    thinkingLevel: str


class _Compaction(_Line):
    summary: str
    firstKeptEntryIndex: int | None = None
    firstKeptEntryId: str | None = None
    tokensBefore: int | None = None
    details: Any = None
    fromHook: bool | None = None


class _SessionInfo(_Line):
    name: str | None = None


_KINDS = frozenset({"session", "message", "model_change", "thinking_level_change", "compaction", "branch_summary",
                    "custom_message", "session_info", "custom", "label"})  # session-manager.ts entry types


def sniff(path: Path, head: str) -> bool:
    """A pi ``session`` header (with ``cwd`` or ``version``) first, or a headerless ``message`` line."""
    objs = head_objects(head, 5)
    if not objs or "uuid" in objs[0] or "sessionId" in objs[0]:
        return False
    first = objs[0]
    return (first.get("type") == "session" and ("cwd" in first or "version" in first)) or (
        first.get("type") == "message" and isinstance(first.get("message"), dict) and "role" in first["message"])


_Row = tuple[int, int, dict[str, Any]]  # (line, index, object)


def _branch(rows: list[_Row], *, file: str, strict: bool, skipped: list[str], notes: list[str]) -> list[_Row]:
    """The rows on the path from the root to the last entry (tree layouts).

    An entry without an id or with an id already used, a parent no entry has, and a parent cycle
    raise (strict) — each would silently cut the branch short — or are noted and worked around.
    """
    by_id: dict[str, _Row] = {}  # entry id -> its row
    for row in rows:
        line, _, obj = row
        entry_id = obj.get("id")
        if not isinstance(entry_id, str) or not entry_id:
            err = bad(file, line, "a tree-layout entry needs a non-empty string id", field="id")
        elif entry_id in by_id:
            err = bad(file, line, f"duplicate id {entry_id!r} (first at line {by_id[entry_id][0]})", field="id")
        else:
            by_id[entry_id] = row
            continue
        if strict:
            raise err
        skipped.append(skip_note(err))
    rows = list(by_id.values())
    leaf = rows[-1] if rows else None
    path: list[_Row] = []
    seen: set[str] = set()
    while leaf is not None:
        path.append(leaf)
        seen.add(leaf[2]["id"])
        parent = leaf[2].get("parentId")
        problem = None
        if parent is not None and parent not in by_id:
            problem = f"parent {parent!r} points nowhere (no entry has that id)"
        elif parent in seen:
            problem = f"parent {parent!r} closes a cycle (it is a descendant of this entry)"
        if problem:
            if strict:
                raise TranscriptError(file, leaf[0], problem + ".", field="parentId", hint="Fix the line, or load "
                                      "with strict=False to read the branch from this entry on.")
            notes.append(f"line {leaf[0]}: {problem}; the branch starts here")
            break
        leaf = by_id.get(parent) if parent is not None else None
    path.reverse()
    if len(path) < len(rows):
        notes.append(f"tree layout: read the branch ending at the last entry ({len(path)} of {len(rows)} "
                     f"entries); {len(rows) - len(path)} entries on other branches left out")
    return path


class _Branched(Exception):
    """A tree-layout file read on the fly turned out not to be one chain (or to hold a bad entry): read it whole."""


class _Entries:
    """What :func:`read` has made of the entries so far, in path order: the items, and the state an entry
    depends on (the model in use, the messages kept, where each entry id sits on the path)."""

    def __init__(self, file: str, conv_id: str, tree: bool, model: str | None, provider: str | None) -> None:
        self.file, self.conv_id, self.tree, self.model, self.provider = file, conv_id, tree, model, provider
        self.items: list[Item] = []
        self.kept_keys: list[int] = []  # entry index or path position of each message kept, in order
        self.kept_ids: list[str] = []  # and its id
        self.position: dict[str, int] = {}  # entry id -> path position (tree layout only)
        self.left_out = LeftOut()  # entries never sent, by kind, with the first line of each
        self.notes: list[str] = []

    def add(self, pos: int, line: int, index: int, obj: dict[str, Any]) -> None:
        """Turn one entry into an item (or count it as left out); raises TranscriptError for a bad one."""
        file, tree, notes = self.file, self.tree, self.notes
        kind, key = obj.get("type"), (pos if tree else index)
        if not isinstance(kind, str):
            raise bad(file, line, f"every pi entry names its type (a string), got {kind!r}", field="type")
        if kind not in _KINDS and isinstance(obj.get("message"), dict):  # a message under a type pi never wrote
            raise bad(file, line, f"unknown entry type {kind!r} on an entry that holds a message "
                                  f"(pi writes {', '.join(sorted(_KINDS))})", field="type")
        base = check(_Line, obj, file=file, line=line)
        item_id = base.id if tree and base.id else f"{self.conv_id}:{index}"
        if tree:
            self.position[item_id] = key
        src = SourceRef(file, line)
        meta: dict[str, Any] = dict(id=item_id, timestamp=base.timestamp, source=src)
        model, provider = self.model, self.provider
        item: Item
        if kind == "message":
            entry = check(_MessageLine, obj, file=file, line=line)
            item = to_message(entry.message, meta, file=file, line=line, model=model, provider=provider, notes=notes)
        elif kind == "model_change":
            change = check(_ModelChange, obj, file=file, line=line)
            self.model, self.provider = model, provider = interned(change.modelId), interned(change.provider) or provider
            item = Entry("model_change", item_id, {"provider": provider, "model": model}, base.timestamp, source=src)
        elif kind == "thinking_level_change":
            level = check(_ThinkingChange, obj, file=file, line=line).thinkingLevel
            item = Entry("thinking_level_change", item_id, {"level": interned(level)}, base.timestamp, source=src)
        elif kind == "compaction":
            comp = check(_Compaction, obj, file=file, line=line)
            target = self.position.get(comp.firstKeptEntryId) if tree else comp.firstKeptEntryIndex
            at = bisect.bisect_left(self.kept_keys, target) if target is not None else len(self.kept_keys)
            first_kept = self.kept_ids[at] if at < len(self.kept_ids) else None
            if first_kept is None:
                notes.append(f"line {line}: compaction keeps no earlier message (first kept entry "
                             f"{comp.firstKeptEntryId or comp.firstKeptEntryIndex!r} not found before it)")
            data = {"summary": comp.summary, "first_kept_id": first_kept, "tokens_before": comp.tokensBefore,
                    "origin": "recorded"}
            if comp.details is not None:
                data["details"] = comp.details  # pi's own bookkeeping (files read and changed), never sent
            if comp.fromHook:
                notes.append(f"line {line}: compaction made by an extension (fromHook)")
            item = Entry("compaction", item_id, data, base.timestamp, source=src)
        elif kind == "branch_summary":
            summary = check(SummaryLine, obj, file=file, line=line).summary
            if not summary:  # buildSessionContext sends a branch summary only when it has text
                self.left_out["branch_summary (empty)"] += 1
                return
            item = Message(role="user", parts=(TextPart(BRANCH_SUMMARY_PREFIX + summary + BRANCH_SUMMARY_SUFFIX),),
                           origin="compact_summary", model=model, provider=provider, **meta)
        elif kind == "custom_message":
            content = check(ContentPayload, obj, file=file, line=line).content
            item = Message(role="user", parts=tuple(content_parts(content, file=file, line=line, at="content", notes=notes)),
                           origin="system", model=model, provider=provider, **meta)
        elif kind == "session_info":
            item = Entry("title", item_id, {"title": check(_SessionInfo, obj, file=file, line=line).name},
                         base.timestamp, source=src)
        else:
            self.left_out.add(str(kind), line)
            return
        self.items.append(item)
        if isinstance(item, Message):
            self.kept_keys.append(key)
            self.kept_ids.append(item.id)


def read(path: Path, *, strict: bool = True) -> Transcript:
    """Read a pi session file (v1 linear, v2/v3 tree) into one Conversation (see the module docstring).

    Memory: the file is read a line at a time, and each entry becomes its item as it is read — a linear
    file, and a tree file whose every entry hangs under the one before it (a session that never
    branched), hold their items only, never every parsed line (a 200 MB file: about 1.5x its size, not
    4x). A tree file that branches, or holds a bad entry, is read again whole: its branch is known
    only at its last entry. Either way the result, the notes and the first error raised are the same.
    """
    try:
        return _read(path, strict=strict, on_the_fly=True)
    except _Branched:
        pass  # read again outside the except clause: what the first pass made is freed first
    return _read(path, strict=strict, on_the_fly=False)


def _read(path: Path, *, strict: bool, on_the_fly: bool) -> Transcript:
    file, parsed, skipped = path.name, [], []  # parsed: iter_jsonl's notes; skipped: entries this reader refused
    lines = iter_jsonl(path, strict=strict, notes=parsed)
    first = next(lines, None)
    header, waiting = _Header(), [first] if first is not None else []
    if first is not None and first[2].get("type") == "session":
        waiting = []
        try:
            header = check(_Header, first[2], file=file, line=first[0])
        except TranscriptError:
            for _ in lines:  # every line is parsed first, as a damaged line later in the file is named first
                pass
            raise
    body = (row for row in itertools.chain(waiting, lines) if row[2].get("type") != "session")
    ahead = list(itertools.islice(body, 5))
    conv_id = header.id or path.stem
    tree = (header.version or 1) >= 2 or any("parentId" in o for _, _, o in ahead)
    rows: Iterable[_Row] = itertools.chain(ahead, body)
    notes: list[str] = []
    if not on_the_fly:
        rows = list(rows)
        if tree:
            rows = _branch(rows, file=file, strict=strict, skipped=skipped, notes=notes)
    entries = _Entries(file, conv_id, tree, header.modelId, header.provider)
    ids: set[str] = set()  # on the fly, tree layout: the ids so far (each entry's parent is the one before it)
    previous: str | None = None
    for pos, (line, index, obj) in enumerate(rows):
        if on_the_fly and tree:
            entry_id = obj.get("id")
            if not isinstance(entry_id, str) or not entry_id or entry_id in ids or obj.get("parentId") != previous:
                raise _Branched  # not one chain (or a bad id): only the whole file says which branch is read
            ids.add(entry_id)
            previous = entry_id
        try:
            entries.add(pos, line, index, obj)
        except TranscriptError as err:
            if strict and on_the_fly and tree:
                raise _Branched from None  # the entry may sit on a branch that is not read
            if strict:
                for _ in rows:  # a line that is not JSON, later in the file, is named first
                    pass
                raise
            skipped.append(skip_note(err))
    items, notes, left_out = entries.items, notes + entries.notes, entries.left_out
    skipped = parsed + skipped
    seen: set[str] = set()  # a pi message entry is one call: a responseId used again identifies nothing
    repeated: list[str] = []
    for k, m in enumerate(items):
        if isinstance(m, Message) and m.response_id:
            if m.response_id in seen:
                items[k] = replace(m, response_id=None)
                repeated.append(m.id)
            seen.add(m.response_id)
    if repeated:
        notes.append(f"{len(repeated)} assistant message(s) repeat an earlier responseId ({', '.join(repeated[:5])}): "
                     "kept without it, each pi message entry being its own call")
    notes += left_out.notes("not part of the model's context")
    errored = sum(1 for m in items if isinstance(m, Message) and m.stop_reason in ("error", "aborted"))
    if errored:
        notes.append(f"{errored} errored or aborted assistant turn(s) kept as recorded; pi-ai's transformMessages "
                     "leaves them out of the later requests")
    if header.parentSession:
        notes.append(f"forked from another session ({header.parentSession}): its entries are not in this file")
    titles = [e.data["title"] for e in items if isinstance(e, Entry) and e.kind == "title" and e.data["title"]]
    conv = Conversation(id=conv_id, items=tuple(items), title=titles[-1] if titles else None,
                        model=header.modelId or next((m.model for m in items if isinstance(m, Message) and m.model), None),
                        provider=header.provider or next((m.provider for m in items if isinstance(m, Message) and m.provider), None),
                        notes=tuple(skipped + notes))
    return Transcript(format=NAME, file=file, conversations=(conv,), notes=tuple(skipped))
