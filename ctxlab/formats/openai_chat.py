"""Readers for OpenAI chat-completions message lists: plain lists, SWE-agent ``.traj``, tau-bench runs.

Three formats share one message shape (``role``, ``content``, ``tool_calls``, ``tool_call_id``):

* ``openai-chat`` — a JSON list of messages, or ``{"messages": [...], "tools": [...]}``;
* ``swe-agent`` — one ``.traj`` object whose ``history`` is the list sent to the model. Tool
  messages name their call in ``tool_call_ids`` (a list). Text-ReAct runs have no tool calls:
  observations come back as ``user`` messages, and stay so. Function-calling runs record no
  tool schemas, only ``replay_config.agent.tools.command_docs``: the specs are rebuilt from it;
* ``tau-bench`` — a JSON list of runs; each run's ``traj`` is one conversation
  (``task{task_id}-trial{trial}``). No tool specs are recorded, so ``tools=()``.

What it simplifies: system/developer messages before the first other message become
``Conversation.system`` blocks (one per message, or per text part); a later one becomes a
``user`` message with ``origin="system"`` and a note. Tool-call ``arguments`` stay the string
the model emitted. Ids are ``f"{conversation_id}:{index}"``. No per-call usage is recorded in
these files, so ``usage`` stays ``None``. Legacy ``function_call`` / ``role: function`` pairs get
made-up call ids (``…:fc``). Plumbing for chapter 02.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Literal

from pydantic import BaseModel

from ..errors import TranscriptError
from ..messages import (Conversation, ImagePart, Message, Part, SourceRef, TextPart, ToolCallPart,
                        ToolSpec, Transcript, canonical_arguments)
from . import bad, check, load_json, skip_note, unknown_block_text

NAME = "openai-chat"
_ROLES = re.compile(r'"role"\s*:\s*"(system|developer|user|assistant|tool|function)"')


class _Function(BaseModel):
    name: str
    arguments: str | dict[str, Any] | list[Any] | None = None


class _ToolCall(BaseModel):
    id: str
    type: str = "function"
    function: _Function


class _ChatMessage(BaseModel):
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[Any] | None = None
    name: str | None = None
    tool_calls: list[_ToolCall] | None = None
    function_call: _Function | None = None
    tool_call_id: str | None = None
    tool_call_ids: list[str] | None = None  # SWE-agent


def _parts(content: str | list[Any] | None) -> tuple[list[Part], list[str]]:
    """Content (a string or a list of parts) → our parts, plus notes on anything unmodelled."""
    if content is None or content == "":
        return [], []
    if isinstance(content, str):
        return [TextPart(content)], []
    parts: list[Part] = []
    notes: list[str] = []
    for item in content:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind in ("text", "input_text", "output_text") and isinstance(item.get("text"), str):
            parts.append(TextPart(item["text"]))
        elif kind == "refusal" and isinstance(item.get("refusal"), str):
            parts.append(TextPart(item["refusal"]))
        elif kind == "image_url":
            url = str((item.get("image_url") or {}).get("url", ""))
            media = re.match(r"data:([^;,]+);base64,", url)
            parts.append(ImagePart(media_type=media.group(1) if media else "image/png",
                                   data_chars=len(url) - media.end() if media else 0))
        elif isinstance(item, str):
            parts.append(TextPart(item))
        else:
            parts.append(TextPart(unknown_block_text(item)))
            notes.append(f"content part of type {kind!r} kept as its JSON text")
    return parts, notes


def _arguments(arguments: str | dict[str, Any] | list[Any] | None) -> str:
    """The string the model emitted stays verbatim (even ``"{ }"`` or broken JSON); an object is canonicalised."""
    return "" if arguments is None else canonical_arguments(arguments)


def _system_blocks(content: str | list[Any] | None) -> list[str]:
    parts, _ = _parts(content)
    return [p.text for p in parts if isinstance(p, TextPart)]


def conversation(conv_id: str, raw: list[Any], *, file: str, line_of: Callable[[Any], int | None],
                 strict: bool, notes: list[str], at: str, fallback_line: int | None = None,
                 tools: tuple[ToolSpec, ...] = (), model: str | None = None,
                 provider: str | None = None) -> Conversation:
    """One chat-message list → a :class:`Conversation`. ``notes`` collects skip notes for the transcript."""
    items: list[Message] = []
    system: list[str] = []
    conv_notes: list[str] = []
    names: dict[str, str] = {}  # call id -> tool name
    calls_seen: dict[str, int] = {}  # call id -> times used
    legacy_call: str | None = None
    started = False
    for index, obj in enumerate(raw):
        line = line_of(obj) or fallback_line
        where = f"{at}[{index}]"
        try:
            if not isinstance(obj, dict):
                raise bad(file, line, f"expected a message object, got {type(obj).__name__}", field=where)
            msg = check(_ChatMessage, obj, file=file, line=line, at=where)
            tool_id = msg.tool_call_id or (msg.tool_call_ids[0] if msg.tool_call_ids else None)
            if msg.role == "function":
                tool_id = legacy_call
            if msg.role in ("tool", "function") and not tool_id:
                raise bad(file, line, "a tool message must name the call it answers", field=f"{where}.tool_call_id")
        except TranscriptError as err:
            if strict:
                raise
            notes.append(skip_note(err))
            conv_notes.append(skip_note(err))
            continue
        common = dict(id=f"{conv_id}:{index}", source=SourceRef(file, line or 0), name=msg.name)
        if msg.role in ("system", "developer") and not started:
            system += _system_blocks(msg.content)
            continue
        started = True
        parts, part_notes = _parts(msg.content)
        conv_notes += [f"message {index}: {n}" for n in part_notes]
        if msg.role in ("system", "developer"):
            items.append(Message(role="user", parts=tuple(parts), origin="system", **common))
            conv_notes.append(f"message {index} (line {line}): a {msg.role} message after the conversation "
                              "started is kept as a user message with origin 'system'")
        elif msg.role == "user":
            items.append(Message(role="user", parts=tuple(parts), **common))
        elif msg.role == "assistant":
            for call in msg.tool_calls or []:
                parts.append(ToolCallPart(call.id, call.function.name, _arguments(call.function.arguments)))
                names[call.id] = call.function.name
                calls_seen[call.id] = calls_seen.get(call.id, 0) + 1
            if msg.function_call is not None:
                legacy_call = f"{conv_id}:{index}:fc"
                parts.append(ToolCallPart(legacy_call, msg.function_call.name,
                                          _arguments(msg.function_call.arguments)))
                names[legacy_call] = msg.function_call.name
            items.append(Message(role="assistant", parts=tuple(parts), model=model, provider=provider, **common))
        else:  # tool / function
            if msg.tool_call_ids and len(msg.tool_call_ids) > 1:
                conv_notes.append(f"message {index}: answers {len(msg.tool_call_ids)} calls; paired with the first")
            common["name"] = None
            items.append(Message(role="tool", parts=tuple(parts), tool_call_id=tool_id,
                                 tool_name=msg.name or names.get(tool_id or ""), **common))
    reused = {cid: n for cid, n in calls_seen.items() if n > 1}
    if reused:
        listing = ", ".join(f"{cid!r} x{n}" for cid, n in reused.items())
        conv_notes.append(f"tool call ids reused by several calls, kept as recorded: {listing}")
    return Conversation(id=conv_id, items=tuple(items), system=tuple(system), tools=tools, model=model,
                        provider=provider, notes=tuple(conv_notes))


def _tools_from(raw: Any) -> tuple[ToolSpec, ...]:
    """OpenAI ``tools`` (``[{"type": "function", "function": {...}}]``) → ToolSpecs."""
    specs = []
    for item in raw if isinstance(raw, list) else []:
        fn = item.get("function", item) if isinstance(item, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            specs.append(ToolSpec(fn["name"], fn.get("description") or "",
                                  fn.get("parameters") or {"type": "object", "properties": {}}))
    return tuple(specs)


# ---------------------------------------------------------------- openai-chat

def sniff(path: Path, head: str) -> bool:
    text = head.lstrip()
    if text.startswith("["):
        return re.match(r'\[\s*\{\s*"(role|content)"', text) is not None or (
            _ROLES.search(text[:2000]) is not None and '"task_id"' not in text[:2000])
    return text.startswith("{") and re.search(r'"messages"\s*:\s*\[', text) is not None and _ROLES.search(text) is not None


def read(path: Path, *, strict: bool = True) -> Transcript:
    data, line_of = load_json(path)
    notes: list[str] = []
    tools: tuple[ToolSpec, ...] = ()
    model = None
    if isinstance(data, dict):
        tools, model = _tools_from(data.get("tools")), data.get("model")
        data = data.get("messages")
    if not isinstance(data, list):
        raise TranscriptError(path.name, 1, "expected a JSON list of chat messages or {\"messages\": [...]}.",
                              hint="Each message is {\"role\": ..., \"content\": ...}.")
    conv = conversation(path.stem, data, file=path.name, line_of=line_of, strict=strict, notes=notes,
                        at="messages", tools=tools, model=model if isinstance(model, str) else None)
    return Transcript(format=NAME, file=path.name, conversations=(conv,), notes=tuple(notes))


# ---------------------------------------------------------------- swe-agent

_ARG = re.compile(r"^\s+- (\w+) \((\w+)\) \[(required|optional)\]: ?(.*)$")


def swe_agent_tools(command_docs: str) -> tuple[ToolSpec, ...]:
    """SWE-agent ``command_docs`` text → ToolSpecs as SWE-agent builds them for function calling.

    ``"bash:\\n  docstring: runs ...\\n  arguments:\\n    - command (string) [required]: ..."`` →
    ``ToolSpec("bash", "runs ...", {"type": "object", "properties": {"command": ...}, "required": ["command"]})``.
    """
    specs: list[ToolSpec] = []
    name, doc, props, required, section = None, "", {}, [], ""

    def flush() -> None:
        if name:
            specs.append(ToolSpec(name, doc.strip(), {"type": "object", "properties": props, "required": required}))

    for line in command_docs.split("\n"):
        if re.match(r"^\w+:$", line):
            flush()
            name, doc, props, required, section = line[:-1], "", {}, [], ""
        elif line.startswith("  docstring:"):
            doc, section = line[len("  docstring:"):].strip(), "doc"
        elif line.startswith(("  signature:", "  arguments:")):
            section = line.split(":")[0].strip()
        elif section == "arguments" and (arg := _ARG.match(line)):
            props[arg.group(1)] = {"type": arg.group(2), "description": arg.group(4)}
            if arg.group(3) == "required":
                required.append(arg.group(1))
        elif section == "doc" and line.strip():
            doc += "\n" + line.strip()
    flush()
    return tuple(specs)


def _swe_sniff(path: Path, head: str) -> bool:
    text = head.lstrip()
    if not text.startswith("{"):
        return False
    return path.suffix == ".traj" or (re.search(r'"(trajectory|history)"\s*:\s*\[', text) is not None
                                      and '"environment"' in text[:2000])


def _swe_read(path: Path, *, strict: bool = True) -> Transcript:
    data, line_of = load_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("history"), list):
        raise TranscriptError(path.name, 1, "a SWE-agent .traj needs a 'history' list.", field="history",
                              hint="Older .traj files without 'history' cannot be replayed.")
    notes: list[str] = []
    replay = data.get("replay_config") if isinstance(data.get("replay_config"), dict) else {}
    agent = replay.get("agent") or {}
    tool_cfg = agent.get("tools") or {}
    tools: tuple[ToolSpec, ...] = ()
    conv_notes: list[str] = []
    if (tool_cfg.get("parse_function") or {}).get("type") == "function_calling" and tool_cfg.get("command_docs"):
        tools = swe_agent_tools(tool_cfg["command_docs"])
        conv_notes.append(f"{len(tools)} tool specs rebuilt from replay_config.agent.tools.command_docs")
    model = (agent.get("model") or {}).get("name")
    conv = conversation(path.stem, data["history"], file=path.name, line_of=line_of, strict=strict,
                        notes=notes, at="history", tools=tools, model=model)
    if not any(m.tool_calls for m in conv.messages):
        conv_notes.append("text ReAct style: no tool calls; observations arrive as user messages")
    conv = replace(conv, notes=tuple(conv_notes) + conv.notes)
    return Transcript(format="swe-agent", file=path.name, conversations=(conv,), notes=tuple(notes))


# ---------------------------------------------------------------- tau-bench

def _tau_sniff(path: Path, head: str) -> bool:
    text = head.lstrip()
    return (text.startswith("[") and re.match(r'\[\s*\{', text) is not None
            and '"task_id"' in text[:2000] and ('"traj"' in text or '"trial"' in text))


def _tau_read(path: Path, *, strict: bool = True) -> Transcript:
    data, line_of = load_json(path)
    if not isinstance(data, list):
        raise TranscriptError(path.name, 1, "a tau-bench file is a JSON list of runs.")
    notes: list[str] = []
    convs = []
    for number, run in enumerate(data):
        line = line_of(run)
        if not isinstance(run, dict) or not isinstance(run.get("traj"), list):
            err = bad(path.name, line, "a run needs a 'traj' list of messages", field=f"[{number}].traj")
            if strict:
                raise err
            notes.append(skip_note(err))
            continue
        conv_id = f"task{run.get('task_id', number)}-trial{run.get('trial', 0)}"
        convs.append(conversation(conv_id, run["traj"], file=path.name, line_of=line_of, strict=strict,
                                  notes=notes, at=f"[{number}].traj", fallback_line=line))
    return Transcript(format="tau-bench", file=path.name, conversations=tuple(convs), notes=tuple(notes))


@dataclass(frozen=True)
class _SubReader:
    """A reader that lives inside this module (same shape as a reader module)."""

    NAME: str
    sniff: Callable[[Path, str], bool]
    read: Callable[..., Transcript]


SWE_AGENT = _SubReader("swe-agent", _swe_sniff, _swe_read)
TAU_BENCH = _SubReader("tau-bench", _tau_sniff, _tau_read)
SUB_READERS = (SWE_AGENT, TAU_BENCH)  # detected before the plain openai-chat reader
