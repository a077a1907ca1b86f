"""Reader for LLaMA-Factory "sharegpt" data sets with tool calls (a JSON list of conversations).

Each element of the list is one conversation (id ``conv{i}``, ``i`` its 0-based index; message ids
are ``conv{i}:{turn}``, the turn's 0-based index):
``conversations`` is a list of turns ``{"from": ..., "value": ...}``; ``system`` (optional) is
the system prompt; ``tools`` (optional) is a JSON *string* holding a list of function schemas
(``{"name", "description", "parameters"}``, or OpenAI's ``{"type": "function", "function": {...}}``).
The role tags are LLaMA-Factory's defaults (``data/README.md``: ``human``, ``gpt``,
``function_call``, ``observation``, ``system``); data sets that rename them in
``dataset_info.json`` must be renamed back first. ``tools`` that are not a JSON list raise a
TranscriptError naming the conversation and field; with ``strict=False`` the conversation is kept
without tools and the problem noted.

Mapping:

* ``human`` → ``user``; ``gpt`` → ``assistant`` text;
* ``function_call`` → an ``assistant`` message of tool calls. Its value is JSON
  ``{"name", "arguments"}`` or a list of them (parallel calls, as ``FunctionFormatter`` reads it). Ids are made up,
  numbered per conversation in order: ``conv3:call0``, ``conv3:call1``, ...; ``arguments`` stored
  as an object are canonicalised (:func:`~ctxlab.messages.canonical_arguments`);
* ``observation`` → a ``tool`` message answering the oldest call not yet answered. An
  observation with no call left to answer (the data set's model wrote its call as plain text) has
  no call to answer, and a tool result without its call is refused by every provider: it is kept,
  text unchanged, as a ``user`` message with ``origin="system"`` (the turn the model saw it in),
  and noted with its turn;
* a leading ``system`` turn replaces the ``system`` field (as ``SharegptDatasetConverter`` does); a later one
  becomes a ``user`` message with ``origin="system"`` (noted).

Simplified on purpose: a ``gpt`` text turn followed by a ``function_call`` turn stays two
assistant messages, as recorded (the data set never says whether one response made both). No
model, usage or timestamps are recorded. ``thought_words`` wrapped around a function call (a
LLaMA-Factory template option) are not recognised: such a value is not JSON and is reported.
Text is kept verbatim, Chinese included. LLaMA-Factory's newer v1 samples (``{"messages": [{"role",
"content": [{"type", "value"}]}], "tools"}``) are read by ``messages-jsonl`` (JSON Lines) and
``openai-chat`` (a JSON list); see :mod:`.chat_messages`. Plumbing for chapter 02.
"""

from __future__ import annotations

import json
import re
from collections import deque
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field

from ctxlab.io.codec import loads
from ctxlab.base.errors import TranscriptError
from ctxlab.messages import (Conversation, Message, SourceRef, TextPart, ToolCallPart, ToolSpec, Transcript,
                        canonical_arguments)
from ctxlab.io.formats import bad, check, load_json, skip_note

NAME = "sharegpt"
_TAG = re.compile(r'"from"\s*:\s*"(human|gpt|function_call|observation|system)"')


class _Turn(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    role: str = Field(alias="from")
    value: str


class _Example(BaseModel):
    conversations: list[Any]
    system: str | None = None
    tools: str | list[Any] | None = None


class _FunctionCall(BaseModel):
    name: str
    arguments: Any


class _Tool(BaseModel):
    name: str
    description: str | None = ""
    parameters: dict[str, Any] | None = None


def sniff(path: Path, head: str) -> bool:
    text = head.lstrip()
    return text.startswith("[") and _TAG.search(text) is not None and '"value"' in text


def tool_specs(raw: str | list[Any] | None, *, file: str, line: int | None, at: str) -> tuple[ToolSpec, ...]:
    """The ``tools`` field → ToolSpecs. ``'[{"name": "f", "description": "查询"}]'`` →
    ``(ToolSpec("f", "查询"),)``; text that is not a JSON list raises a TranscriptError at ``at``."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return ()
    if isinstance(raw, str):
        try:
            raw = loads(raw)  # nesting too deep to parse is a JSONDecodeError too
        except json.JSONDecodeError as err:
            raise bad(file, line, f"tools is not valid JSON ({err.msg} at column {err.colno})", field=at) from None
    if not isinstance(raw, list):
        raise bad(file, line, f"tools must be a JSON list of function schemas, got {type(raw).__name__}", field=at)
    specs = []
    for k, item in enumerate(raw):
        if isinstance(item, dict) and item.get("type") == "function" and isinstance(item.get("function"), dict):
            item = item["function"]
        tool = check(_Tool, item, file=file, line=line, at=f"{at}[{k}]")
        specs.append(ToolSpec(tool.name, tool.description or "",
                              tool.parameters or {"type": "object", "properties": {}}))
    return tuple(specs)


def _calls(value: str, *, file: str, line: int | None, at: str) -> list[_FunctionCall]:
    try:
        data = loads(value)
    except json.JSONDecodeError as err:
        raise bad(file, line, f"a function_call value must be JSON {{\"name\", \"arguments\"}} "
                              f"({err.msg} at column {err.colno})", field=at) from None
    items = data if isinstance(data, list) else [data]
    return [check(_FunctionCall, item, file=file, line=line, at=f"{at}[{k}]" if isinstance(data, list) else at)
            for k, item in enumerate(items)]


def conversation(index: int, raw: Any, *, file: str, line_of: Callable[[Any], int | None], strict: bool,
                 notes: list[str]) -> Conversation:
    """One data-set element → a Conversation; ``notes`` collects skip notes for the transcript."""
    conv_id, where, line = f"conv{index}", f"[{index}]", line_of(raw)
    if not isinstance(raw, dict):
        raise bad(file, line, f"expected a conversation object, got {type(raw).__name__}", field=where)
    example = check(_Example, raw, file=file, line=line, at=where)
    conv_notes: list[str] = []
    try:
        tools = tool_specs(example.tools, file=file, line=line, at=f"{where}.tools")
    except TranscriptError as err:
        if strict:
            raise TranscriptError(err.file, err.line, f"conversation {conv_id}: {err.problem}", field=err.field,
                                  hint=err.hint) from None
        tools = ()
        notes.append(skip_note(err))
        conv_notes.append(skip_note(err))
    system = [example.system] if example.system else []
    items: list[Message] = []
    pending: deque[tuple[str, str]] = deque()  # (call id, tool name) not answered yet, oldest first
    n_calls = 0
    for turn, obj in enumerate(example.conversations):
        at, tline = f"{where}.conversations[{turn}]", line_of(obj) or line
        common = dict(id=f"{conv_id}:{turn}", source=SourceRef(file, tline or 0))
        try:
            t = check(_Turn, obj, file=file, line=tline, at=at)
            if t.role == "function_call":
                calls = _calls(t.value, file=file, line=tline, at=f"{at}.value")
            elif t.role not in ("human", "gpt", "observation", "system"):
                raise bad(file, tline, f"unknown role tag {t.role!r} (expected human, gpt, function_call, "
                                       "observation or system)", field=f"{at}.from")
        except TranscriptError as err:
            if strict:
                raise
            notes.append(skip_note(err))
            conv_notes.append(skip_note(err))
            continue
        if t.role == "system" and not items:
            system = [t.value]  # LLaMA-Factory: a leading system turn overrides the system column
        elif t.role == "system":
            items.append(Message(role="user", parts=(TextPart(t.value),), origin="system", **common))
            conv_notes.append(f"turn {turn}: a system turn after the conversation started is kept as a user "
                              "message with origin 'system'")
        elif t.role == "human":
            items.append(Message(role="user", parts=(TextPart(t.value),), **common))
        elif t.role == "gpt":
            items.append(Message(role="assistant", parts=(TextPart(t.value),), **common))
        elif t.role == "function_call":
            parts = []
            for call in calls:
                call_id = f"{conv_id}:call{n_calls}"
                n_calls += 1
                parts.append(ToolCallPart(call_id, call.name, canonical_arguments(call.arguments)))
                pending.append((call_id, call.name))
            items.append(Message(role="assistant", parts=tuple(parts), **common))
        else:  # observation
            if not pending:  # no call to answer: the text the model saw, as a turn of its own
                conv_notes.append(f"turn {turn}: an observation with no function_call before it (no call to "
                                  "answer) is kept as a user message with origin 'system'")
                items.append(Message(role="user", parts=(TextPart(t.value),), origin="system", **common))
                continue
            call_id, name = pending.popleft()
            items.append(Message(role="tool", parts=(TextPart(t.value),), tool_call_id=call_id, tool_name=name,
                                 **common))
    if pending:
        conv_notes.append(f"{len(pending)} function call(s) never answered by an observation: "
                          + ", ".join(cid for cid, _ in pending))
    return Conversation(id=conv_id, items=tuple(items), system=tuple(system), tools=tools, notes=tuple(conv_notes))


def read(path: Path, *, strict: bool = True) -> Transcript:
    data, line_of = load_json(path)
    if not isinstance(data, list):
        raise TranscriptError(path.name, 1, "a sharegpt data set is a JSON list of {\"conversations\": [...]} objects.",
                              hint="JSON Lines data sets: wrap the lines in [ ... ] with commas between them.")
    notes: list[str] = []
    convs = []
    for index, raw in enumerate(data):
        try:
            convs.append(conversation(index, raw, file=path.name, line_of=line_of, strict=strict, notes=notes))
        except TranscriptError as err:
            if strict:
                raise
            notes.append(skip_note(err))
    return Transcript(format=NAME, file=path.name, conversations=tuple(convs), notes=tuple(notes))
