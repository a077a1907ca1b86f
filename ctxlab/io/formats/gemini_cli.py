"""Reader for Gemini CLI chat recordings (``~/.gemini/tmp/<project>/chats/session-*.jsonl``; older ``.json``).

Read from the writer's source, google-gemini/gemini-cli at 5411f113 (2026-08-21), on 2026-12-01:
``packages/core/src/services/chatRecordingTypes.ts`` (record types), ``chatRecordingService.ts`` (the
writer, and ``loadConversationRecord``, Gemini CLI's own reader), ``packages/core/src/utils/sessionUtils.ts``
(``convertSessionToClientHistory``: the history a resumed session sends), ``packages/core/src/core/geminiChat.ts``;
the single-JSON writer at f7449135^ (before "migrate chat recording to JSONL streaming", 2026-04-09). Forms:

* **JSON Lines** (from 2026-04-09): a header ``{sessionId, projectHash, startTime, lastUpdated, kind, ...}``
  (a migrated session may carry ``messages`` on it), then lines appended as records change. A **record
  written again with the same id is an update**: the last version is read, in the place of the first
  (``pushMessage``; the loader's ``Map``). ``{"$set": {...}}`` patches header fields (``summary`` →
  ``Conversation.title``); ``{"$set": {"messages": [...]}}`` (from 2026-05-18, ``updateMessagesFromHistory``)
  replaces the whole list; ``{"$rewindTo": id}`` (``/rewind``) removes that record and all after it.
* **single JSON** (2025-08 .. 2026-04, ``JSON.stringify(record, null, 2)``): ``{sessionId, projectHash,
  startTime, lastUpdated, messages: [...], summary?}``.

A record: ``id``, ``timestamp``, ``type``, ``content`` (a string; Gemini parts from 2025-09), ``displayContent``
(what the UI showed, e.g. ``/init``: not sent, ignored). Mapped (:mod:`.gemini_cli_records`) as
``convertSessionToClientHistory`` rebuilds the history:

* ``user`` → ``user``; Gemini CLI's own turns (``<session_context>``, ``<hook_context>``, ``System: Please
  continue.``) get ``origin="system"``. A user record of ``functionResponse`` parts (tool responses, recorded
  so from 2026-05-18) → ``tool`` messages, unless the call's record already gave that result (then counted);
* ``gemini`` → ``assistant``: a ThinkingPart per ``thoughts`` entry (``**subject** description``, as Gemini
  CLI renders these thought *summaries*), the text, a ToolCallPart per ``toolCalls`` entry — or, when
  ``content`` holds ``functionCall`` / ``thought`` parts (records a checkpoint rewrote), those parts in order.
  Each call's ``result`` (``functionResponse`` parts) → one ``tool`` message after it (text: the response's
  ``output`` / ``error`` string, else its JSON); ``is_error`` for status ``error`` / ``cancelled``;
* ``info`` / ``warning`` / ``error`` are UI messages (``useHistoryManager``), never sent: left out, counted.
  An ``info`` record of parts is the exception: binary data a tool returned, which ``GeminiChat`` sends as a
  user turn (``extractBinaryInjections``) → ``user`` with ``origin="system"``.

Usage: ``tokens`` copies the call's ``usageMetadata`` (``recordMessageTokens``): ``input`` = ``promptTokenCount``,
which INCLUDES ``cached`` = ``cachedContentTokenCount``; ``thoughts`` = ``thoughtsTokenCount``, outside ``output``
= ``candidatesTokenCount`` and billed as output (ai.google.dev API reference, ``UsageMetadata``; pricing page,
"output price (including thinking tokens)"). So ``uncached_input = input - cached``, ``cache_read = cached``,
``output = output + thoughts``; ``tool`` (``toolUsePromptTokenCount``, counted beside the prompt) stays in
``raw``. ``model`` per message (a change → ``model_change`` entry); provider ``"google"``.

Simplified on purpose: the system prompt and tool declarations are not recorded (``system=()``, ``tools=()``,
said in the notes). A checkpoint that adds or updates records is applied in place; one dropping the newest
records (an aborted turn rolled back) removes them, like ``$rewindTo``; one dropping older records
(``/compress``, truncation) becomes a ``compaction`` entry after them — summary: the new user record with a
``<state_snapshot>`` (else empty); the records it keeps or adds follow. Images keep their size; other inline
data, ``fileData`` and unknown parts become a placeholder line (noted). Plumbing for chapter 02.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ctxlab.base.errors import TranscriptError
from ctxlab.messages import Conversation, Entry, Message, SourceRef, Transcript
from ctxlab.io.formats import bad, check, head_objects, iter_jsonl, load_json, read_bytes, skip_note
from ctxlab.io.formats.gemini_cli_records import PROVIDER, Record, Tokens, text_of, to_items, usage

__all__ = ["NAME", "read", "sniff", "usage"]

NAME = "gemini-cli"
_PRETTY = re.compile(r'\{\s*"sessionId"\s*:\s*"[^"]*"\s*,\s*"projectHash"\s*:\s*"')


class _Header(BaseModel):
    sessionId: str
    projectHash: str
    summary: str | None = None
    messages: list[Any] | None = None


def sniff(path: Path, head: str) -> bool:
    """True for a Gemini CLI session: its first object holds ``sessionId`` and ``projectHash`` (the JSONL
    header, or the single-JSON record, pretty-printed with those two keys first)."""
    objs = head_objects(head, 1)
    if objs and isinstance(objs[0].get("sessionId"), str) and isinstance(objs[0].get("projectHash"), str):
        return True
    # the single-JSON form is pretty-printed; a one-line header with messages may be longer than the head
    return _PRETTY.match(head.lstrip()) is not None


class _Fold:
    """The records in order, folded as Gemini CLI's ``loadConversationRecord`` folds them: ``live`` is its
    message list; ``slots`` (record ids and compaction entries) also keep the records a compaction retired."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.slots: list[str | Entry] = []
        self.live: dict[str, None] = {}  # an ordered set
        self.recs: dict[str, tuple[Record, int]] = {}  # id -> (newest version, its line)
        self.events: Counter[str] = Counter()

    def put(self, rec: Record, line: int) -> None:
        if rec.id in self.recs:
            self.events["record(s) written again with the same id (an update: the last version is read)"] += 1
        else:
            self.slots.append(rec.id)
        self.live.setdefault(rec.id)
        self.recs[rec.id] = (rec, line)

    def drop(self, ids: list[str]) -> None:
        gone = set(ids)
        self.slots = [s for s in self.slots if not isinstance(s, str) or s not in gone]
        self.live = {i: None for i in self.live if i not in gone}
        for i in gone:
            self.recs.pop(i, None)

    def rewind(self, target: str) -> None:
        """``$rewindTo``: that record and all after it go (all of them when the id is unknown)."""
        live = list(self.live)
        ids = live[live.index(target):] if target in self.live else live
        self.events["record(s) removed by $rewindTo (/rewind): the session went on without them"] += len(ids)
        self.drop(ids)

    def checkpoint(self, recs: list[Record], line: int) -> None:
        """``$set.messages``: the list is replaced. Updates and additions are applied in place; dropping the
        newest records is a roll-back; dropping older ones a compaction (see the module docstring)."""
        ids = [r.id for r in recs]
        keep, live = set(ids), list(self.live)
        dropped = [i for i in live if i not in keep]
        kept = [i for i in live if i in keep]
        new = [r for r in recs if r.id not in self.recs]
        if dropped and live[-len(dropped):] == dropped and (kept or not ids) and ids[:len(kept)] == kept:
            self.events["record(s) a checkpoint rolled back (an aborted turn): left out"] += len(dropped)
            self.drop(dropped)
            self._place(ids, {r.id for r in new})
        elif dropped:
            gone = set(dropped)
            at = max(k for k, s in enumerate(self.slots) if isinstance(s, str) and s in gone) + 1
            summary = next((r for r in recs if r.type == "user" and "<state_snapshot>" in text_of(r.content)), None)
            if summary is not None and summary.id in self.recs and summary.id in self.slots:
                at -= self.slots.index(summary.id) < at
                self.slots.remove(summary.id)
            before = {s for s in self.slots[:at] if isinstance(s, str)}
            data = {"summary": text_of(summary.content) if summary else "", "tokens_before": None,
                    "first_kept_id": next((i for i in ids if i in before), None), "origin": "recorded"}
            self.slots.insert(at, Entry("compaction", f"checkpoint:{line}", data, source=SourceRef(self.file, line)))
            self.events["checkpoint(s) dropping older records: compaction entries"
                        + ("" if summary else " WITHOUT a <state_snapshot> summary (summary left empty)")] += 1
            self.slots += [r.id for r in new if r is not summary]
        else:
            self._place(ids, {r.id for r in new})
        for r in recs:
            if r.id not in self.recs or self.recs[r.id][0] != r:  # an unchanged record keeps its line
                self.recs[r.id] = (r, line)
        self.live = dict.fromkeys(ids)

    def _place(self, ids: list[str], new: set[str]) -> None:
        """Put the ``new`` ids into ``slots``, each after the record before it in ``ids``."""
        follow: dict[str | None, list[str]] = {}
        prev: str | None = None
        for i in ids:
            if i in new:
                follow.setdefault(prev, []).append(i)
            else:
                prev = i
        out: list[str | Entry] = []
        for s in self.slots:
            if None in follow and isinstance(s, str) and s in self.live:  # new ones at the head of the list
                out += follow.pop(None)
            out.append(s)
            out += follow.pop(s, []) if isinstance(s, str) else []
        self.slots = out + [i for group in follow.values() for i in group]


_RECORD_TYPES = ("user", "gemini", "info", "warning", "error")  # chatRecordingTypes.ts MessageRecord.type


def _record(obj: Any, fold: _Fold, *, line: int, at: str = "") -> Record:
    if not isinstance(obj, dict):
        raise bad(fold.file, line, f"expected a message record object, got {type(obj).__name__}", field=at or None)
    rec = check(Record, obj, file=fold.file, line=line, at=at)
    if rec.type not in _RECORD_TYPES and {"toolCalls", "tokens", "thoughts", "model"} & obj.keys():
        raise bad(fold.file, line, f"unknown record type {rec.type!r} on a record that holds a model reply "
                                   f"(Gemini CLI writes {', '.join(_RECORD_TYPES)})", field=f"{at}.type" if at else "type")
    if rec.tokens is not None:
        check(Tokens, rec.tokens, file=fold.file, line=line, at=f"{at}.tokens" if at else "tokens")
    return rec


def _read_json(path: Path, fold: _Fold, *, strict: bool, skipped: list[str]) -> dict[str, Any]:
    """The single-JSON form: one ``ConversationRecord``; each message's line is where its object begins."""
    data, line_of = load_json(path)
    if not isinstance(data, dict):
        raise bad(fold.file, 1, f"expected a Gemini CLI conversation object, got {type(data).__name__}")
    head = check(_Header, data, file=fold.file, line=1)
    if head.messages is None:
        raise bad(fold.file, 1, "a single-JSON session needs a 'messages' list", field="messages")
    for k, raw in enumerate(head.messages):
        try:
            line = line_of(raw) or 1
            fold.put(_record(raw, fold, line=line, at=f"messages[{k}]"), line)
        except TranscriptError as err:
            if strict:
                raise
            skipped.append(skip_note(err))
    return data


def _read_jsonl(path: Path, fold: _Fold, left: Counter[str], *, strict: bool, skipped: list[str]) -> dict[str, Any]:
    """The JSON Lines form: header, records (same id = update), ``$set`` patches and checkpoints, ``$rewindTo``."""
    meta: dict[str, Any] = {}
    file = fold.file
    for line, _, obj in iter_jsonl(path, strict=strict, notes=skipped):
        try:
            if isinstance(obj.get("$rewindTo"), str):
                fold.rewind(obj["$rewindTo"])
            elif "$set" in obj:
                upd = obj["$set"]
                if not isinstance(upd, dict):
                    raise bad(file, line, f"expected an object, got {type(upd).__name__}", field="$set")
                if "messages" in upd:
                    if not isinstance(upd["messages"], list):
                        raise bad(file, line, "expected a list of message records", field="$set.messages")
                    fold.checkpoint([_record(m, fold, line=line, at=f"$set.messages[{k}]")
                                     for k, m in enumerate(upd["messages"])], line)
                meta.update((k, v) for k, v in upd.items() if k != "messages")
            elif "sessionId" in obj and "projectHash" in obj:
                head = check(_Header, obj, file=file, line=line)
                meta.update((k, v) for k, v in obj.items() if k != "messages")
                recs = [_record(m, fold, line=line, at=f"messages[{k}]") for k, m in enumerate(head.messages or [])]
                for rec in recs:  # all checked first: a bad one skips the whole line
                    fold.put(rec, line)
            elif "id" in obj or "type" in obj:
                fold.put(_record(obj, fold, line=line), line)
            else:
                left["line(s) of no known shape (not a header, record, $set or $rewindTo): left out"] += 1
        except TranscriptError as err:
            if strict:
                raise
            skipped.append(skip_note(err))
    return meta


def read(path: Path, *, strict: bool = True) -> Transcript:
    """Read a Gemini CLI session (either form) into one conversation. Chapter 02."""
    file, skipped = path.name, []
    fold, left = _Fold(file), Counter()
    first = next((raw.strip() for raw in read_bytes(path).split(b"\n") if raw.strip()), b"")
    if first == b"{":  # the single-JSON form is pretty-printed: its first line is a lone brace
        meta = _read_json(path, fold, strict=strict, skipped=skipped)
    else:
        meta = _read_jsonl(path, fold, left, strict=strict, skipped=skipped)
    items = to_items(fold.slots, fold.recs, file, left)
    notes = ["Gemini CLI records neither the system prompt nor the tool declarations: system=() and tools=()"]
    notes += [f"{n} {what}" for what, n in (fold.events + left).items()]
    first_model = next((i.model for i in items if isinstance(i, Message) and i.model), None)
    conv = Conversation(id=str(meta.get("sessionId") or path.stem), items=tuple(items),
                        title=meta.get("summary") if isinstance(meta.get("summary"), str) else None,
                        model=first_model, provider=PROVIDER, notes=tuple(skipped + notes))
    return Transcript(format=NAME, file=file, conversations=(conv,), notes=tuple(skipped))
