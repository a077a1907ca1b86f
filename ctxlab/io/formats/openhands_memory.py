"""OpenHands (V0) event stream → messages: the mapping both OpenHands readers share.

The evaluation output (:mod:`.openhands`, each instance's ``history``) and the saved trajectory
(:mod:`.openhands_events`, a bare JSON list) hold the same events, serialised by
``openhands/events/serialization/event.py`` (``event_to_dict``: ``id``, ``timestamp``, ``source``,
``message``, ``cause``, ``action`` | ``observation``, ``tool_call_metadata``, ``llm_metrics``, then
``args`` for an action, ``content`` + ``extras`` for an observation). :func:`map_events` follows what
``ConversationMemory.process_events`` (``openhands/memory/conversation_memory.py``) sends to the model:

* the ``system`` action → ``Conversation.system``; its ``args.tools`` → ``Conversation.tools``;
* ``message`` actions: from the user → ``user``; from the agent → ``assistant`` text; their
  ``image_urls`` → ImageParts (a data URL keeps its base64 size);
* agent actions with ``tool_call_metadata`` (run, read, edit, think, ...) → **one** ``assistant``
  message per model response (``tool_call_metadata.model_response.id``, also ``response_id``):
  the response's text first (a TextPart, when not blank), then one ToolCallPart per action, in
  event order, with the arguments string the model emitted;
* ``finish`` → ``assistant`` text (its ``thought``, plus the response text when different): OpenHands
  drops the finish tool call from the history it sends, so no call is left unanswered;
* observations with ``tool_call_metadata`` → ``tool`` messages answering ``tool_call_id`` (one that
  answers no earlier call gets ``origin="meta"``: ``_filter_unmatched_tool_calls`` drops it);
* ``recall`` observations (workspace context, microagent knowledge) → a ``user`` message rendered
  close to OpenHands' ``additional_info.j2`` / ``microagent_info.j2`` templates (knowledge shown
  earlier is not repeated; an empty recall is left out), ``origin="system"`` when the caller says
  prompt extensions were on, else ``"meta"``;
* other observations (no ``tool_call_metadata``) → ``user`` with ``origin="system"`` (an ``error`` gets
  OpenHands' ``[Error occurred in processing last action]`` line, a ``user_rejected`` its
  ``OBSERVATION:`` / ``[Last action has been rejected by the user]`` wrapping, here and as a tool
  result); a command the user ran and its output → ``user`` with ``origin="shell"``; an
  openhands-aci ``edit`` carrying ``extras.formatted_output_and_error`` (releases of 2024-12-21 ..
  2025-02-12, ``FileEditObservation.__str__``) is sent as that text, not its diff;
* ``condensation`` actions → ``compaction`` entries (``origin: "recorded"``; ``first_kept_id`` = the
  first message after the forgotten events); ``recall`` actions, agent-state changes, null events,
  condensation requests and loop detections are bookkeeping never sent: left out, counted in the notes.

Source: All-Hands-AI/OpenHands at 156d0686c46aafb0fa9d291da6421fb6f64dddc0 (2025-11-28), read
2026-12-01: ``openhands/memory/conversation_memory.py``, ``openhands/events/serialization/``,
``openhands/events/observation/files.py`` (and its history), ``openhands/core/schema/{action,observation}.py``.

Simplified on purpose: tool results keep the observation's ``content``; the lines OpenHands appends
when sending a command's output (working directory, exit code — their form changed between
versions) are not added; images inside observations (``extras.image_urls``) and the reasoning a
model response carries (never sent back) are counted in the notes, not kept. A condensation's kept
head (``keep_first`` events) is not expressed in the entry. Plumbing for chapter 02.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, Callable

from pydantic import BaseModel

from ctxlab.base.errors import TranscriptError
from ctxlab.messages import Entry, ImagePart, Item, Message, SourceRef, TextPart, ToolCallPart, ToolSpec, canonical_arguments
from ctxlab.io.formats import bad, check, skip_note
from ctxlab.io.formats.sharegpt import tool_specs

_STOP = {"stop": "stop", "tool_calls": "tool_use", "function_call": "tool_use", "length": "length"}
_NEVER_SENT = {"recall", "change_agent_state", "agent_state_changed", "null", "condensation_request", "loop_detection"}
ERROR_SUFFIX = "\n[Error occurred in processing last action]"
REJECTED_SUFFIX = "\n[Last action has been rejected by the user]"


class _ToolCallMetadata(BaseModel):
    function_name: str
    tool_call_id: str
    model_response: dict[str, Any] | None = None


class _Event(BaseModel):
    id: int
    timestamp: str | None = None
    source: str | None = None
    action: str | None = None
    observation: str | None = None
    args: dict[str, Any] = {}
    content: str = ""
    extras: dict[str, Any] = {}
    tool_call_metadata: _ToolCallMetadata | None = None


class _Condensation(BaseModel):
    forgotten_event_ids: list[int] | None = None
    forgotten_events_start_id: int | None = None
    forgotten_events_end_id: int | None = None
    summary: str | None = None


def _said(role: str, text: str, **kw: Any) -> Message:  # one text part, kept even when empty
    return Message(role=role, parts=(TextPart(text),), **kw)  # type: ignore[arg-type]


def _choice(meta: _ToolCallMetadata) -> dict[str, Any]:
    choices = (meta.model_response or {}).get("choices") or [{}]
    return choices[0] if isinstance(choices[0], dict) else {}


def _finish_reason(meta: _ToolCallMetadata) -> str | None:
    """The response's ``finish_reason``, normalised: ``"tool_calls"`` → ``"tool_use"``."""
    reason = _choice(meta).get("finish_reason")
    return _STOP.get(reason, reason) if isinstance(reason, str) else None


def _recall_text(extras: dict[str, Any], shown: set[str]) -> str:
    """A recall observation as OpenHands renders it for the model (template wording approximated)."""
    blocks: list[str] = []
    if extras.get("recall_type") == "workspace_context":
        if extras.get("repo_name") or extras.get("repo_directory"):
            blocks.append(f"<REPOSITORY_INFO>\nAt the user's request, repository {extras.get('repo_name', '')} has "
                          f"been cloned to the current working directory {extras.get('repo_directory', '')}.\n"
                          "</REPOSITORY_INFO>")
        if extras.get("repo_instructions"):
            blocks.append(f"<REPOSITORY_INSTRUCTIONS>\n{extras['repo_instructions']}\n</REPOSITORY_INSTRUCTIONS>")
        runtime = []
        if extras.get("runtime_hosts"):
            runtime.append("The user has access to the following hosts for accessing a web application,\n"
                           "each of which has a corresponding port:\n"
                           + "\n".join(f"* {h} (port {p})" for h, p in extras["runtime_hosts"].items()))
        if extras.get("additional_agent_instructions"):
            runtime.append(extras["additional_agent_instructions"])
        if extras.get("date"):
            runtime.append(f"Today's date is {extras['date']} (UTC).")
        if runtime:
            blocks.append("<RUNTIME_INFORMATION>\n" + "\n".join(runtime) + "\n</RUNTIME_INFORMATION>")
    for agent in extras.get("microagent_knowledge") or []:
        if not isinstance(agent, dict) or agent.get("name") in shown:
            continue
        shown.add(str(agent.get("name")))
        blocks.append(f"<EXTRA_INFO>\nThe following information has been included based on a keyword match for "
                      f"\"{agent.get('trigger', '')}\".\nIt may or may not be relevant to the user's request.\n\n"
                      f"{agent.get('content', '')}\n</EXTRA_INFO>")
    return "\n".join(blocks)


@dataclass
class Mapped:
    """What :func:`map_events` makes of an event stream."""

    items: list[Item]
    system: list[str]
    tools: tuple[ToolSpec, ...]
    notes: list[str]  # per event, in order (skipped events included)
    tail: list[str]  # the summary notes: no system action, events left out
    meta_recalls: int = 0  # recall observations kept with origin "meta" (sent=False)
    sent_recalls: int = 0  # recall observations kept with origin "system"


def images(urls: Any) -> tuple[ImagePart, ...]:
    """``image_urls`` → ImageParts (a data URL keeps its base64 size; a web URL has none)."""
    parts = []
    for url in urls if isinstance(urls, list) else ():
        media = re.match(r"data:([^;,]+);base64,", str(url))
        parts.append(ImagePart(media_type=media.group(1) if media else "image/png",
                               data_chars=len(str(url)) - media.end() if media else 0))
    return tuple(parts)


def map_events(events: list[Any], *, ids: str, file: str, line_of: Callable[[Any], int], at: str, model: str | None,
               sent: bool, strict: bool, skipped: list[str]) -> Mapped:
    """An OpenHands event stream (evaluation ``history``, a saved trajectory) → items, as
    ``ConversationMemory.process_events`` sends it (module docstring). Message ids are ``ids`` +
    event id; ``line_of(raw_event)`` gives each item's source line; errors name ``{at}[k]``.
    ``sent``: whether recall observations reach the model (``enable_prompt_extensions``)."""
    items: list[Item] = []
    notes: list[str] = []
    system: list[str] = []
    tools: tuple[ToolSpec, ...] = ()
    slots: dict[str, int] = {}  # model response id -> index in items of its (merged) assistant message
    event_of: dict[str, int] = {}  # message id -> event id it was made from (the first, when merged)
    calls: set[str] = set()  # tool call ids made so far
    shown: set[str] = set()  # microagents already shown to the model
    left_out: Counter[str] = Counter()
    recalls = [0, 0]  # kept as meta, kept as sent
    pictured = 0  # observations whose images are not modelled
    reasoned: set[str] = set()  # model responses that carry reasoning OpenHands does not send back
    for k, raw in enumerate(events):
        where, line = f"{at}[{k}]", line_of(raw)
        try:
            if not isinstance(raw, dict):
                raise bad(file, line, f"expected an event object, got {type(raw).__name__}", field=where)
            e = check(_Event, raw, file=file, line=line, at=where)
            if e.action is None and e.observation is None:
                raise bad(file, line, "an event needs an 'action' or an 'observation'", field=where)
            if e.action == "condensation":
                cond = check(_Condensation, e.args, file=file, line=line, at=f"{where}.args")
            if e.action == "system" and not items and not system:
                tools = tool_specs(e.args.get("tools"), file=file, line=line, at=f"{where}.args.tools")
        except TranscriptError as err:
            if strict:
                raise
            skipped.append(skip_note(err))
            notes.append(skip_note(err))
            continue
        kind, tcm = e.action or e.observation, e.tool_call_metadata
        src = SourceRef(file, line)
        meta: dict[str, Any] = dict(id=f"{ids}{e.id}", timestamp=e.timestamp, source=src)
        before = len(items)
        pictured += bool(e.observation and e.extras.get("image_urls"))
        said = (_choice(tcm).get("message") or {}) if tcm and e.action else {}
        if said.get("reasoning_content") or said.get("thinking_blocks"):
            reasoned.add(str((tcm.model_response or {}).get("id")))
        if e.action == "system" and not items and not system:
            system.append(str(e.args.get("content", "")))
        elif e.action == "condensation":
            forgotten = set(cond.forgotten_event_ids or ())
            if cond.forgotten_events_start_id is not None and cond.forgotten_events_end_id is not None:
                forgotten |= set(range(cond.forgotten_events_start_id, cond.forgotten_events_end_id + 1))
            last = max(forgotten, default=-1)
            first_kept = next((i.id for i in items if isinstance(i, Message) and event_of.get(i.id, -1) > last), None)
            items.append(Entry("compaction", meta["id"], {"summary": cond.summary or "", "first_kept_id": first_kept,
                                                         "tokens_before": None, "origin": "recorded"},
                               e.timestamp, source=src))
        elif e.action in _NEVER_SENT or (e.observation in _NEVER_SENT and e.observation != "recall"):
            left_out[f"{'action' if e.action else 'observation'} {kind}"] += 1
        elif e.action == "system":
            items.append(_said("user", str(e.args.get("content", "")), origin="system", **meta))
            notes.append(f"event {e.id}: a later system message is kept as a user message with origin 'system'")
        elif e.action == "finish" and e.source != "user":
            reply = str((_choice(tcm).get("message") or {}).get("content") or "") if tcm else ""
            thought = str(e.args.get("thought") or "")
            text = thought + ("\n" + reply if thought and reply and reply != thought else "") or reply
            rid, finish = ((tcm.model_response or {}).get("id"), _finish_reason(tcm)) if tcm else (None, None)
            items.append(_said("assistant", text, response_id=rid, model=model, stop_reason=finish, **meta))
        elif e.action is not None and tcm is not None and e.source != "user":
            msg = _choice(tcm).get("message") or {}
            rid = str((tcm.model_response or {}).get("id") or meta["id"])
            emitted = next((c for c in msg.get("tool_calls") or [] if c.get("id") == tcm.tool_call_id), None)
            if emitted is not None:
                arguments = canonical_arguments((emitted.get("function") or {}).get("arguments") or "")
            else:
                arguments = canonical_arguments({a: v for a, v in e.args.items() if a != "thought"})
                notes.append(f"event {e.id}: call {tcm.tool_call_id!r} is not in its model response; "
                             "arguments rebuilt from the action's args")
            call = ToolCallPart(tcm.tool_call_id, tcm.function_name, arguments)
            calls.add(tcm.tool_call_id)
            if rid in slots:  # another action of the same response: one more call in its message
                first = items[slots[rid]]
                items[slots[rid]] = replace(first, parts=first.parts + (call,))  # type: ignore[arg-type]
            else:
                reply = msg.get("content")
                text = reply if isinstance(reply, str) and reply.strip() else ""
                slots[rid] = len(items)
                items.append(Message(role="assistant", parts=((TextPart(text),) if text else ()) + (call,),
                                     response_id=rid, model=model, stop_reason=_finish_reason(tcm), **meta))
        elif e.action == "message":
            rid = (tcm.model_response or {}).get("id") if tcm else None
            parts = (TextPart(str(e.args.get("content") or "")),) + images(e.args.get("image_urls"))
            items.append(Message(role="user", parts=parts, **meta) if e.source == "user"
                         else Message(role="assistant", parts=parts, response_id=rid, model=model, **meta))
        elif e.observation is not None and tcm is not None:
            text = _observed(e)
            orphan = tcm.tool_call_id not in calls
            items.append(_said("tool", text, tool_call_id=tcm.tool_call_id, tool_name=tcm.function_name,
                               is_error=e.observation == "error", origin="meta" if orphan else None, **meta))
            if orphan:
                notes.append(f"event {e.id}: the result of call {tcm.tool_call_id!r} answers no earlier action: "
                             "kept with origin 'meta' (OpenHands filters unmatched tool results out)")
        elif e.observation == "recall":
            text = _recall_text(e.extras, shown)
            if text:
                items.append(_said("user", text, origin="system" if sent else "meta", **meta))
                recalls[bool(sent)] += 1
            else:
                left_out["observation recall (nothing to add)"] += 1
        elif e.action == "run" and e.source == "user":
            command = e.args.get("command", "")
            items.append(_said("user", f"User executed the command:\n{command}", origin="shell", **meta))
        elif e.observation == "run":
            items.append(_said("user", f"\nObserved result of command executed by user:\n{e.content}", origin="shell",
                               **meta))
        elif e.observation is not None:
            items.append(_said("user", _observed(e), origin="system", **meta))
        else:
            left_out[f"action {kind} ({e.source})"] += 1
        if len(items) > before and isinstance(items[-1], Message):
            event_of[items[-1].id] = e.id
    tail = [] if system else ["no system action in the history: system prompt and tools unknown"]
    tail += [f"left out {n} {k} event(s): not sent to the model" for k, n in left_out.items()]
    if pictured:
        tail.append(f"{pictured} observation(s) carry images (extras.image_urls): not modelled, their text is kept")
    if reasoned:
        tail.append(f"{len(reasoned)} model response(s) carry reasoning (reasoning_content / thinking_blocks): "
                    "ConversationMemory does not send it back, so it is not kept")
    return Mapped(items, system, tools, notes, tail, *recalls)


def _observed(e: _Event) -> str:
    """An observation's text as sent: errors and rejections get OpenHands' closing line; an openhands-aci
    edit of releases 2024-12-21 .. 2025-02-12 sent ``formatted_output_and_error`` (its content was the diff)."""
    if e.observation == "error":
        return e.content + ERROR_SUFFIX
    if e.observation == "user_rejected":
        return "OBSERVATION:\n" + e.content + REJECTED_SUFFIX
    shown = e.extras.get("formatted_output_and_error")
    if e.observation == "edit" and e.extras.get("impl_source") == "oh_aci" and isinstance(shown, str) and shown:
        return shown
    return e.content
