"""OpenHands V1 (software-agent-sdk) event logs → messages, as the SDK sends them to the model.

A V1 conversation persists each event as one JSON object (``Event.model_dump_json``), discriminated
by ``kind``; the SDK's file store writes each to ``<persistence_dir>/<conversation id hex>/events/
event-NNNNN-<event id>.json`` (``conversation/event_store.py``, ``persistence_const.py``), and a JSON
Lines file holds those objects one per line (as the SDK's own tests keep them). The mapping follows
``LLMConvertibleEvent.events_to_messages`` (``event/base.py``) over the ``View`` the agent builds
(``context/view/``); :mod:`.openhands_v1_content` says how each piece becomes parts:

* ``SystemPromptEvent`` → ``Conversation.system`` (``system_prompt``, then ``dynamic_context`` as a
  second block); ``tools`` → ``Conversation.tools``. A later one → ``user``, ``origin="system"``;
* ``ActionEvent`` s in a row with one ``llm_response_id`` → **one** ``assistant`` message
  (``_combine_action_events``): thinking, the ``thought`` text, one ToolCallPart per ``tool_call``;
* ``MessageEvent`` → its ``llm_message`` plus ``extended_content`` (``to_llm_message``): ``user``,
  ``assistant`` (``response_id`` = ``llm_response_id``), ``system`` → ``user`` with
  ``origin="system"``; plain user messages in a row are merged into one, as the SDK sends them;
* ``ObservationEvent`` → a ``tool`` message answering ``tool_call_id`` (``is_error`` from the
  observation); ``UserRejectObservation`` → ``Action rejected: {reason}``; ``AgentErrorEvent`` → its
  ``error`` (``is_error``). A result whose call is not in the file, or a second result for one call,
  gets ``origin="meta"``: the view's ``ToolCallMatchingProperty`` / ``ObservationUniquenessProperty``
  leave them out;
* ``Condensation`` → a ``compaction`` entry (``origin: "recorded"``): ``first_kept_id`` = the first
  message after the last forgotten one, ``pinned_ids`` = the earlier messages not forgotten (the
  condenser keeps the head); ``CondensationSummaryEvent`` (not normally persisted) → ``user`` with
  ``origin="compact_summary"``;
* everything else (``ConversationStateUpdateEvent``, ``PauseEvent``, ``CondensationRequest``, hooks,
  token ids, completion logs, ACP tool calls, ...) is never sent: counted in the notes; so are events
  off the active branch of the ``parent_id`` tree (``EventLog.path_to_root`` from the last event that
  is not a state update or a conversation error, ``ConversationState._resolve_active_leaf``).

Message ids are the event ids (a merged message keeps its first event's). Usage and the model:
:mod:`.openhands_v1_usage`. The conversation id is the file's name without its extension (an
export's ``conversation_id`` when it has one). A log whose first message is not a user's starts
mid-conversation: said in the notes.

Source: OpenHands/software-agent-sdk at 611629e6999ad398dc49c761721eefe18d5e6bd9 (2026-08-22), read
2026-12-01: ``openhands-sdk/openhands/sdk/event/`` (``base.py``, ``llm_convertible/``,
``condenser.py``, ``conversation_state.py``, ``types.py``), ``context/view/``,
``conversation/{event_store,state}.py``.

Simplified on purpose: a condensation's summary goes first in ctxlab's compacted view, not at its
``summary_offset``; a tool call never answered in the file stays (the SDK's view would leave it
out; ctxlab's contexts stub it). Plumbing for chapter 02.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator, Literal

from pydantic import BaseModel

from ctxlab.base.errors import TranscriptError
from ctxlab.messages import Conversation, Entry, Item, Message, SourceRef, TextPart, ToolSpec, Transcript
from ctxlab.io.formats import check, head_objects, iter_jsonl, skip_note
from ctxlab.io.formats.openhands_v1_content import Call, Thinking, call, observation, parts, thinking, tool_specs
from ctxlab.io.formats.openhands_v1_usage import Calls

KINDS = {"SystemPromptEvent", "MessageEvent", "ActionEvent", "ObservationEvent", "UserRejectObservation",
         "AgentErrorEvent", "Condensation", "CondensationRequest", "CondensationSummaryEvent",
         "ConversationStateUpdateEvent", "PauseEvent", "InterruptEvent", "HookExecutionEvent", "TokenEvent",
         "LLMCompletionLogEvent", "ConversationErrorEvent", "ACPToolCallEvent", "StreamingDeltaEvent"}
_ARTIFACTS = {"ConversationStateUpdateEvent", "ConversationErrorEvent"}  # not nodes of the event tree
_LIST = re.compile(r'\s*(\{\s*"items"\s*:\s*)?\[\s*')  # a JSON list of events, or EventPage
_HEAD = re.compile(r'\{\s*"id"\s*:\s*"[^"]+"\s*,\s*"timestamp"\s*:\s*"[^"]*"\s*,\s*"source"\s*:\s*'
                   r'"(?:agent|user|environment|hook)"')


class _Event(BaseModel):
    id: str
    kind: str
    timestamp: str | None = None


class _Action(Thinking):
    tool_call: Call
    llm_response_id: str


class _LLMMessage(Thinking):
    role: Literal["user", "system", "assistant", "tool"]
    content: list[dict[str, Any]] | str | None = None
    tool_calls: list[Call] | None = None
    tool_call_id: str | None = None
    name: str | None = None


class _MessageEvent(BaseModel):
    llm_message: _LLMMessage
    llm_response_id: str | None = None
    extended_content: list[dict[str, Any]] = []


class _Result(BaseModel):  # ObservationEvent, UserRejectObservation, AgentErrorEvent
    tool_name: str
    tool_call_id: str
    observation: dict[str, Any] | None = None
    extended_content: list[dict[str, Any]] = []
    rejection_reason: str = "User rejected the action"
    error: str = ""


class _Text(BaseModel):
    text: str


class _System(BaseModel):
    system_prompt: _Text
    tools: list[Any] = []
    dynamic_context: _Text | None = None


class _Condensation(BaseModel):
    forgotten_event_ids: list[str] = []
    summary: str | None = None


def sniff(head: str) -> bool:
    """V1 events: a ``kind`` the SDK defines, or (a first line longer than the head) the SDK's key
    order, also at the start of a JSON list or of the agent server's ``{"items": [...]}`` page."""
    if any(o.get("kind") in KINDS and "id" in o for o in head_objects(head, 5)):
        return True
    listed = _LIST.match(head)
    return _HEAD.match(head, listed.end() if listed else len(head) - len(head.lstrip())) is not None \
        and re.search(r'"(kind|llm_message|system_prompt)"\s*:', head) is not None


Rows = Callable[[bool, list[str]], Iterator[tuple[int, int, dict[str, Any]]]]  # (strict, notes) -> (line, index, event)


def read(path: Path, *, strict: bool = True, name: str = "openhands-events", rows: Rows | None = None,
         conv_id: str | None = None, title: str | None = None) -> Transcript:
    """Read a V1 event log as one conversation: the JSON Lines file at ``path``, or the events
    ``rows(strict, notes)`` yields (a JSON list of them). The id is ``conv_id``, else the file's stem."""
    file, skipped = path.name, []
    rows = rows or (lambda strict_, notes: iter_jsonl(path, strict=strict_, notes=notes, once=True))
    # the active branch needs every event first; the second pass reads (and raises) in file order
    first = {k: obj for _, k, obj in rows(False, [])}
    reader = _Reader(file, _active([first.get(k, {}) for k in range(max(first, default=-1) + 1)]))
    for line, k, obj in rows(strict, skipped):
        try:
            reader.event(k, line, obj)
        except TranscriptError as err:
            if strict:
                raise
            skipped.append(skip_note(err))
            reader.notes.append(skip_note(err))
    conv = replace(reader.conversation(conv_id or path.stem), title=title)
    return Transcript(format=name, file=file, conversations=(conv,), notes=tuple(skipped))


def _active(objs: list[dict[str, Any]]) -> set[int] | None:
    """Indices on the active branch (``EventLog.path_to_root`` from the last tree event); None: all.
    An event without ``parent_id`` (older SDKs) hangs on the one before it."""
    if not any(o.get("parent_id") for o in objs):
        return None
    index: dict[Any, int] = {}
    for k, o in enumerate(objs):
        index.setdefault(o.get("id"), k)
    at = next((k for k in range(len(objs) - 1, -1, -1) if objs[k].get("kind") not in _ARTIFACTS), None)
    on: set[int] = set()
    while at is not None and at not in on:
        on.add(at)
        parent = objs[at].get("parent_id")
        at = None if parent == "__root__" else index.get(parent) if parent else (at - 1 if at > 0 else None)
    return on


class _Reader:
    """The events of one log, in order → items (module docstring)."""

    def __init__(self, file: str, active: set[int] | None) -> None:
        self.file, self.active = file, active
        self.items: list[Item] = []
        self.system: list[str] = []
        self.tools: tuple[ToolSpec, ...] = ()
        self.notes: list[str] = []
        self.counts: Counter[str] = Counter()  # what was simplified, by kind
        self.left_out: Counter[str] = Counter()  # events never sent, by kind
        self.first_unknown: dict[str, int] = {}  # a kind ctxlab does not know -> its first line
        self.events_of: dict[str, set[str]] = {}  # message id -> the event ids it was made from
        self.calls: set[str] = set()
        self.answered: set[str] = set()
        self.gone: set[str] = set()  # event ids forgotten by the condensations so far
        self.usage = Calls(file, self.counts)
        self.model: str | None = None

    def check(self, model: type[Any], obj: Any, line: int) -> Any:
        return check(model, obj, file=self.file, line=line)

    def add(self, msg: Message, event_id: str, *, merge: bool = False) -> None:
        prev = self.items[-1] if self.items else None
        if merge and isinstance(prev, Message) and prev.role == "user" and prev.origin is None:
            self.items[-1] = replace(prev, parts=prev.parts + msg.parts)
            self.events_of[prev.id].add(event_id)
            self.counts["consecutive user message(s) merged into the one before, as the SDK sends them"] += 1
            return
        self.items.append(msg)
        self.events_of[msg.id] = {event_id}
        if msg.role == "assistant":
            self.usage.made(msg.id)

    def event(self, k: int, line: int, obj: dict[str, Any]) -> None:
        e = self.check(_Event, obj, line)
        kind = e.kind
        meta: dict[str, Any] = dict(id=e.id, timestamp=e.timestamp, source=SourceRef(self.file, line))
        if self.active is not None and k not in self.active and kind not in _ARTIFACTS:
            self.left_out[f"{kind} (on another branch of the conversation tree)"] += 1
        elif kind == "ActionEvent":
            a = self.check(_Action, obj, line)
            made, text = call(a.tool_call), parts(a.thought, self.counts)
            self.calls.add(made.id)
            prev = self.items[-1] if self.items else None
            if isinstance(prev, Message) and prev.role == "assistant" and prev.tool_calls \
                    and prev.response_id == a.llm_response_id:  # another call of the same response
                self.items[-1] = replace(prev, parts=prev.parts + tuple(text) + (made,))
                self.events_of[prev.id].add(e.id)
                return
            said = "".join(p.text for p in text if isinstance(p, TextPart))
            self.add(Message(role="assistant", parts=tuple(thinking(a, said, self.counts) + text) + (made,),
                             response_id=a.llm_response_id, **meta), e.id)
        elif kind == "MessageEvent":
            m = self.check(_MessageEvent, obj, line)
            llm = m.llm_message
            body = parts(llm.content, self.counts) + parts(m.extended_content, self.counts)
            if llm.role == "assistant":
                said = "".join(p.text for p in body if isinstance(p, TextPart))
                made = tuple(call(c) for c in llm.tool_calls or ())
                self.calls.update(c.id for c in made)
                self.add(Message(role="assistant", parts=tuple(thinking(llm, said, self.counts) + body) + made,
                                 response_id=m.llm_response_id, **meta), e.id)
            elif llm.role == "tool":
                self.result(Message(role="tool", parts=tuple(body), tool_call_id=llm.tool_call_id,
                                    tool_name=llm.name, **meta), e.id)
            else:
                self.add(Message(role="user", parts=tuple(body), origin="system" if llm.role == "system" else None,
                                 **meta), e.id, merge=llm.role == "user")
        elif kind in ("ObservationEvent", "UserRejectObservation", "AgentErrorEvent"):
            r = self.check(_Result, obj, line)
            obs = r.observation or {}
            said = f"Action rejected: {r.rejection_reason}" if kind == "UserRejectObservation" else r.error
            body = observation(obs, self.counts) if kind == "ObservationEvent" else [TextPart(said)]
            error = kind == "AgentErrorEvent" or bool(obs.get("is_error")) or obs.get("error") is True
            self.result(Message(role="tool", parts=tuple(body + parts(r.extended_content, self.counts)),
                                tool_call_id=r.tool_call_id, tool_name=r.tool_name, is_error=error, **meta), e.id)
        elif kind == "SystemPromptEvent":
            s = self.check(_System, obj, line)
            if self.system or self.items:
                self.add(Message(role="user", parts=(TextPart(s.system_prompt.text),), origin="system", **meta), e.id)
                self.notes.append(f"event {e.id}: a later system prompt is kept as a user message with origin 'system'")
            else:
                self.system = [s.system_prompt.text] + ([s.dynamic_context.text] if s.dynamic_context else [])
                self.tools = tool_specs(s.tools, file=self.file, line=line, notes=self.counts)
        elif kind == "Condensation":
            self.condensation(self.check(_Condensation, obj, line), e.id, meta)
        elif kind == "CondensationSummaryEvent":
            self.add(Message(role="user", parts=(TextPart(str(obj.get("summary") or "")),), origin="compact_summary",
                             **meta), e.id)
        elif kind == "ConversationStateUpdateEvent" and obj.get("key") in ("stats", "full_state"):
            value = obj.get("value") if isinstance(obj.get("value"), dict) else {}
            full = obj["key"] == "full_state"
            stats = value.get("stats") if full else value
            llm = (value.get("agent") or {}).get("llm") if full and isinstance(value.get("agent"), dict) else None
            self.model = self.model or (llm.get("model") if isinstance(llm, dict) else None)
            self.usage.snapshot(stats if isinstance(stats, dict) else {}, line=line,
                                at="value.stats" if full else "value")
            self.left_out[f"ConversationStateUpdateEvent ({obj['key']}, read for usage)"] += 1
        else:
            if kind == "LLMCompletionLogEvent":
                self.usage.completion_log(obj, line=line)
            key = f" ({obj.get('key')})" if kind == "ConversationStateUpdateEvent" else ""
            unknown = "" if kind in KINDS else \
                f" (a kind ctxlab does not know, first at line {self.first_unknown.setdefault(kind, line)})"
            self.left_out[kind + key + unknown] += 1

    def result(self, msg: Message, event_id: str) -> None:
        cid = msg.tool_call_id or ""
        if cid not in self.calls or cid in self.answered:
            why = "answers no earlier action" if cid not in self.calls else "is a second result for its call"
            self.notes.append(f"event {event_id}: the result of call {cid!r} {why}: kept with origin 'meta' "
                              "(the SDK's view leaves it out)")
            msg = replace(msg, origin="meta")
        self.answered.add(cid)
        self.add(msg, event_id)

    def condensation(self, c: _Condensation, event_id: str, meta: dict[str, Any]) -> None:
        self.gone |= set(c.forgotten_event_ids)
        msgs = [i for i in self.items if isinstance(i, Message)]
        gone = [bool(self.events_of[m.id] & self.gone) for m in msgs]
        last = max((k for k, g in enumerate(gone) if g), default=-1)
        first_kept = msgs[last + 1].id if last + 1 < len(msgs) else None
        pinned = [m.id for m, g in zip(msgs[:last + 1], gone) if not g]
        self.items.append(Entry("compaction", event_id, {"summary": c.summary or "", "first_kept_id": first_kept,
                                                       "tokens_before": None, "origin": "recorded",
                                                       "pinned_ids": pinned}, meta["timestamp"], source=meta["source"]))
        self.usage.consumed()  # the condenser's own call

    def conversation(self, conv_id: str) -> Conversation:
        """The conversation read, usage attached."""
        items, model, said = self.usage.attach(self.items, self.model)
        notes = self.notes + said
        if not self.system:
            notes.append("no SystemPromptEvent in the log: system prompt and tools unknown")
        sent = [m for m in items if isinstance(m, Message) and m.origin != "meta"]
        if sent and sent[0].role != "user":
            notes.append(f"the log starts mid-conversation: its first message is {sent[0].role!r}, "
                         "what came before it is not in the file")
        if self.calls - self.answered:
            notes.append(f"{len(self.calls - self.answered)} tool call(s) never answered in the file")
        notes += [f"{n} {what}" for what, n in self.counts.items() if n]
        notes += [f"left out {n} {what} event(s): not sent to the model" for what, n in self.left_out.items()]
        return Conversation(id=conv_id, items=tuple(items), system=tuple(self.system), tools=self.tools, model=model,
                            notes=tuple(notes))
