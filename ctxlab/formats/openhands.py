"""Reader for OpenHands evaluation output (JSON Lines: one task instance and its event stream per line).

Each line is one conversation (id = ``instance_id``); its ``history`` is OpenHands' event stream.
The mapping follows what OpenHands' ``ConversationMemory.process_events``
(``openhands/memory/conversation_memory.py``) sends to the model:

* the ``system`` action → ``Conversation.system``; its ``args.tools`` → ``Conversation.tools``;
* ``message`` actions: from the user → ``user``; from the agent → ``assistant`` text;
* agent actions with ``tool_call_metadata`` (run, read, edit, think, ...) → **one** ``assistant``
  message per model response (``tool_call_metadata.model_response.id``, also ``response_id``):
  the response's text first (a TextPart, when not blank), then one ToolCallPart per action, in
  event order, with the arguments string the model emitted;
* ``finish`` → ``assistant`` text (its ``thought``, plus the response text when different): OpenHands
  drops the finish tool call from the history it sends, so no call is left unanswered;
* observations with ``tool_call_metadata`` → ``tool`` messages answering ``tool_call_id``;
* ``recall`` observations (workspace context, microagent knowledge) → a ``user`` message rendered
  close to OpenHands' ``additional_info.j2`` / ``microagent_info.j2`` templates (knowledge shown
  earlier is not repeated; an empty recall is left out). OpenHands sends it only when
  ``enable_prompt_extensions`` is on, and the evaluation harnesses (``evaluation/benchmarks/*/
  run_infer.py``) switch it off without recording so: ``origin="system"`` (sent) when
  ``metadata.agent_config.enable_prompt_extensions`` is true, else ``origin="meta"`` (never sent);
* other observations without one → ``user`` with ``origin="system"`` (an ``error`` gets OpenHands'
  ``[Error occurred in processing last action]`` line); a command the user ran and its output →
  ``user`` with ``origin="shell"``;
* ``condensation`` actions → ``compaction`` entries (``origin: "recorded"``; ``first_kept_id`` = the
  first message after the forgotten events); ``recall`` actions, agent-state changes and null
  events are bookkeeping never sent: left out, counted in the notes.

Message ids are ``{instance_id}:{event id}``; every item's source line is its instance's line.

Usage: ``metrics.token_usages`` entries are matched to assistant messages by ``response_id``.
OpenHands (``openhands/llm/llm.py``, ``_post_completion``) records litellm's OpenAI-shaped usage,
whose ``prompt_tokens`` **includes** cached tokens
(``cache_read_tokens`` = ``prompt_tokens_details.cached_tokens``, ``cache_write_tokens`` =
Anthropic's cache creation), so ``uncached_input_tokens = prompt - cache_read - cache_write`` (never
below 0; some litellm releases left Anthropic cache writes out of ``prompt_tokens``, in which case
this undercounts by the writes). The model is ``metadata.llm_config.model``.

Simplified on purpose: tool results keep the observation's ``content``; the lines OpenHands appends
when sending a command's output (working directory, exit code — their form changed between
versions) are not added. A condensation's kept head (``keep_first`` events) cannot be expressed and
is left out of the entry. Plumbing for chapter 02.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..errors import TranscriptError
from ..messages import (Conversation, Entry, Item, Message, SourceRef, TextPart, ToolCallPart, ToolSpec, Transcript,
                        Usage, canonical_arguments)
from . import TokenCount, bad, check, head_objects, iter_jsonl, skip_note
from .sharegpt import tool_specs

NAME = "openhands"
_STOP = {"stop": "stop", "tool_calls": "tool_use", "function_call": "tool_use", "length": "length"}
_NEVER_SENT = {"recall", "change_agent_state", "agent_state_changed", "null", "condensation_request"}
ERROR_SUFFIX = "\n[Error occurred in processing last action]"


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


class _Instance(BaseModel):
    instance_id: str | int
    history: list[Any]
    metadata: dict[str, Any] | None = None
    metrics: dict[str, Any] | None = None


class _TokenUsage(BaseModel):
    prompt_tokens: TokenCount = 0
    completion_tokens: TokenCount = 0
    cache_read_tokens: TokenCount = 0
    cache_write_tokens: TokenCount = 0
    response_id: str = ""


class _Condensation(BaseModel):
    forgotten_event_ids: list[int] | None = None
    forgotten_events_start_id: int | None = None
    forgotten_events_end_id: int | None = None
    summary: str | None = None


def sniff(path: Path, head: str) -> bool:
    if any("instance_id" in o and "history" in o for o in head_objects(head, 3)):
        return True
    # a line is often longer than the head: fall back on the first key (EvalOutput dumps instance_id first)
    return re.match(r'\{\s*"instance_id"\s*:', head.lstrip()) is not None and '"history"' in head


def usage(raw: dict[str, Any]) -> Usage:
    """One ``token_usages`` entry → neutral fields. ``{"prompt_tokens": 1000, "cache_read_tokens": 800,
    "completion_tokens": 5}`` → ``Usage(uncached_input_tokens=200, cache_read_tokens=800, output_tokens=5)``."""
    u = _TokenUsage.model_validate(raw)
    return Usage(uncached_input_tokens=max(0, u.prompt_tokens - u.cache_read_tokens - u.cache_write_tokens),
                 cache_read_tokens=u.cache_read_tokens, cache_write_tokens=u.cache_write_tokens,
                 output_tokens=u.completion_tokens, raw=raw)


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


def read(path: Path, *, strict: bool = True) -> Transcript:
    file, skipped = path.name, []
    convs = []
    for line, _, obj in iter_jsonl(path, strict=strict, notes=skipped):
        try:
            convs.append(_instance(obj, file=file, line=line, strict=strict, skipped=skipped))
        except TranscriptError as err:
            if strict:
                raise
            skipped.append(skip_note(err))
    return Transcript(format=NAME, file=file, conversations=tuple(convs), notes=tuple(skipped))


def _instance(obj: dict[str, Any], *, file: str, line: int, strict: bool, skipped: list[str]) -> Conversation:
    inst = check(_Instance, obj, file=file, line=line)
    conv_id = str(inst.instance_id)
    model = ((inst.metadata or {}).get("llm_config") or {}).get("model")
    items: list[Item] = []
    notes: list[str] = []
    system: list[str] = []
    tools: tuple[ToolSpec, ...] = ()
    slots: dict[str, int] = {}  # model response id -> index in items of its (merged) assistant message
    event_of: dict[str, int] = {}  # message id -> event id it was made from (the first, when merged)
    shown: set[str] = set()  # microagents already shown to the model
    left_out: Counter[str] = Counter()
    sent = bool(((inst.metadata or {}).get("agent_config") or {}).get("enable_prompt_extensions", False))
    recalls = 0  # recall observations kept as meta
    src = SourceRef(file, line)
    for k, raw in enumerate(inst.history):
        at = f"history[{k}]"
        try:
            if not isinstance(raw, dict):
                raise bad(file, line, f"expected an event object, got {type(raw).__name__}", field=at)
            e = check(_Event, raw, file=file, line=line, at=at)
            if e.action is None and e.observation is None:
                raise bad(file, line, "an event needs an 'action' or an 'observation'", field=at)
            if e.action == "condensation":
                cond = check(_Condensation, e.args, file=file, line=line, at=f"{at}.args")
            if e.action == "system" and not items and not system:
                tools = tool_specs(e.args.get("tools"), file=file, line=line, at=f"{at}.args.tools")
        except TranscriptError as err:
            if strict:
                raise
            skipped.append(skip_note(err))
            notes.append(skip_note(err))
            continue
        kind, tcm = e.action or e.observation, e.tool_call_metadata
        meta: dict[str, Any] = dict(id=f"{conv_id}:{e.id}", timestamp=e.timestamp, source=src)
        before = len(items)
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
            text = str(e.args.get("content") or "")
            items.append(_said("user", text, **meta) if e.source == "user"
                         else _said("assistant", text, response_id=rid, model=model, **meta))
        elif e.observation is not None and tcm is not None:
            text = e.content + (ERROR_SUFFIX if e.observation == "error" else "")
            items.append(_said("tool", text, tool_call_id=tcm.tool_call_id, tool_name=tcm.function_name,
                               is_error=e.observation == "error", **meta))
        elif e.observation == "recall":
            text = _recall_text(e.extras, shown)
            if text:
                items.append(_said("user", text, origin="system" if sent else "meta", **meta))
                recalls += 0 if sent else 1
            else:
                left_out["observation recall (nothing to add)"] += 1
        elif e.action == "run" and e.source == "user":
            items.append(_said("user", f"User executed the command:\n{e.args.get('command', '')}", origin="shell", **meta))
        elif e.observation == "run":
            items.append(_said("user", f"\nObserved result of command executed by user:\n{e.content}", origin="shell",
                               **meta))
        elif e.observation is not None:
            items.append(_said("user", e.content + (ERROR_SUFFIX if e.observation == "error" else ""), origin="system",
                               **meta))
        else:
            left_out[f"action {kind} ({e.source})"] += 1
        if len(items) > before and isinstance(items[-1], Message):
            event_of[items[-1].id] = e.id
    _attach_usage(items, inst.metrics, file=file, line=line, strict=strict, notes=notes)
    if not system:
        notes.append("no system action in the history: system prompt and tools unknown")
    notes += [f"left out {n} {k} event(s): not sent to the model" for k, n in left_out.items()]
    if recalls:
        notes.append(f"{recalls} recall observation(s) kept with origin 'meta': metadata.agent_config does not "
                     "enable prompt extensions (evaluation runs switch them off), so OpenHands did not send them")
    return Conversation(id=conv_id, items=tuple(items), system=tuple(system), tools=tools, model=model,
                        notes=tuple(notes))


def _attach_usage(items: list[Item], metrics: dict[str, Any] | None, *, file: str, line: int, strict: bool,
                  notes: list[str]) -> None:
    """Put each ``token_usages`` entry on the assistant message with its response id (in place)."""
    entries = (metrics or {}).get("token_usages") or []
    by_id: dict[str, Usage] = {}  # response id -> usage
    for k, raw in enumerate(entries):
        try:
            u = check(_TokenUsage, raw, file=file, line=line, at=f"metrics.token_usages[{k}]")
        except TranscriptError as err:
            if strict:
                raise
            notes.append(skip_note(err))
            continue
        if u.response_id:
            by_id[u.response_id] = usage(raw)
    matched = 0
    for k, item in enumerate(items):
        if isinstance(item, Message) and item.role == "assistant" and item.response_id in by_id:
            items[k] = replace(item, usage=by_id.pop(item.response_id))  # once per call, on its first message
            matched += 1
    if len(entries) > matched:
        notes.append(f"{len(entries) - matched} of {len(entries)} token_usages entries match no assistant message")
