"""Readers for OpenAI chat-completions message lists: plain lists, SWE-agent ``.traj``, tau-bench runs, mini-swe-agent.

Four formats share one message shape (``role``, ``content``, ``tool_calls``, ``tool_call_id``), read by
:func:`.chat_messages.conversation`:

* ``openai-chat`` — a JSON list of messages, ``{"messages": [...], "tools": [...]}``, or a JSON list
  of such ``{"messages"}`` samples (one conversation each, ids ``conv0``, ``conv1``, ...; LLaMA-Factory
  v1 data sets, whose ``tools`` is a JSON *string*). mini-swe-agent's older trajectories (a bare list
  of messages, text-ReAct style) are read here as they are;
* ``swe-agent`` — one ``.traj`` object whose ``history`` is the list sent to the model. Tool
  messages name their call in ``tool_call_ids`` (a list). Text-ReAct runs have no tool calls:
  observations come back as ``user`` messages, and stay so. Function-calling runs record no
  tool schemas, only ``replay_config.agent.tools.command_docs``: the specs are rebuilt from it;
* ``tau-bench`` — a JSON list of runs; each run's ``traj`` is one conversation
  (``task{task_id}-trial{trial}``). No tool specs are recorded, so ``tools=()``;
* ``mini-swe-agent`` — ``{"info", "messages", "trajectory_format": "mini-swe-agent-1" | "-1.1"}``
  (SWE-agent/mini-swe-agent ``src/minisweagent/agents/default.py`` ``serialize``, v1
  ``src/minisweagent/run/utils/save.py`` ``save_traj``, ``docs/usage/output_files.md``; commit
  a83fcae8, read 2026-12-01). The model is ``info.config.model.model_name``; ``info.model_stats``
  (``instance_cost``, ``api_calls``), the exit status and the submission are noted. Each message's
  ``extra`` (v1: top-level ``timestamp``) gives timestamps, and an assistant message's
  ``extra.response`` (litellm's ModelResponse) its usage, model, id and finish reason. The ``exit``
  role (the run's end marker) becomes a ``user`` message with ``origin="meta"`` (never sent). Runs
  with the Responses API store whole response objects among the input items: read as Responses items.

**Tool messages without ``tool_call_id``** (many chat dumps, and LLaMA-Factory v1 data, whose calls
have no ids) are paired by position: a call is *open* from the assistant message that makes it until
a tool message answers it; a tool message with no id answers the ONE call open before it. When
several are open, it answers the oldest only if none of them has an id of its own (ids we made up:
``{conversation}:{index}:call{k}``, as LLaMA-Factory renders results in call order); otherwise the
pairing is ambiguous: strict mode raises (file, line, ``messages[i].tool_call_id``, the open ids),
``strict=False`` pairs it with the oldest and notes the guess. No open call at all raises (strict) or
skips the message (noted). Every positional pairing is counted in the notes.

What it simplifies: system/developer messages before the first other message become
``Conversation.system`` blocks (one per message, or per text part); a later one becomes a
``user`` message with ``origin="system"`` and a note. Tool-call ``arguments`` stay the string
the model emitted. Ids are ``f"{conversation_id}:{index}"``. Plain chat files record no per-call
usage, so ``usage`` stays ``None``. Legacy ``function_call`` / ``role: function`` pairs get
made-up call ids (``…:fc``). Plumbing for chapter 02.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from ctxlab.base.errors import TranscriptError
from ctxlab.messages import Conversation, ToolSpec, Transcript
from ctxlab.io.formats import bad, load_json, skip_note
from ctxlab.io.formats import sharegpt
from ctxlab.io.formats.chat_messages import conversation
from ctxlab.io.formats.mini_swe_responses import mini_swe_conversation

NAME = "openai-chat"
EXPECTS = 'a JSON list of {"role", "content"} chat messages, or {"messages": [...]}'
_ROLES = re.compile(r'"role"\s*:\s*"(system|developer|user|assistant|tool|function)"')


def tool_specs(raw: Any, *, file: str = "", line: int | None = None, at: str = "tools") -> tuple[ToolSpec, ...]:
    """OpenAI ``tools`` (``[{"type": "function", "function": {...}}]``, or that list as a JSON string,
    as LLaMA-Factory writes it) → ToolSpecs.

    ``[{"type": "function", "function": {"name": "ls"}}]`` → ``(ToolSpec("ls", "", {"type": "object",
    "properties": {}}),)``; entries without a name are skipped. A JSON string is read by
    :func:`.sharegpt.tool_specs`, whose TranscriptError names file, line and ``at``. Plumbing for chapter 02.
    """
    if isinstance(raw, str):
        return sharegpt.tool_specs(raw, file=file, line=line, at=at)  # the JSON-string form, with its errors
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


def _is_sample(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("messages"), list) and "role" not in obj


def read(path: Path, *, strict: bool = True) -> Transcript:
    data, line_of = load_json(path)
    notes: list[str] = []
    if isinstance(data, list) and data and all(_is_sample(x) for x in data):  # a data set of {"messages"} samples
        convs = []
        for k, sample in enumerate(data):
            try:
                convs.append(_sample(sample, f"conv{k}", path.name, line_of, strict, notes, at=f"[{k}].messages"))
            except TranscriptError as err:
                if strict:
                    raise
                notes.append(skip_note(err))
        return Transcript(format=NAME, file=path.name, conversations=tuple(convs), notes=tuple(notes))
    if not isinstance(data, list) and not _is_sample(data):
        raise TranscriptError(path.name, 1, "expected a JSON list of chat messages or {\"messages\": [...]}.",
                              hint="Each message is {\"role\": ..., \"content\": ...}.")
    conv = (_sample(data, path.stem, path.name, line_of, strict, notes, at="messages") if isinstance(data, dict) else
            conversation(path.stem, data, file=path.name, line_of=line_of, strict=strict, notes=notes, at="messages"))
    return Transcript(format=NAME, file=path.name, conversations=(conv,), notes=tuple(notes))


def _sample(obj: dict[str, Any], conv_id: str, file: str, line_of: Callable[[Any], int | None], strict: bool,
            notes: list[str], *, at: str) -> Conversation:
    """``{"messages": [...], "tools": ..., "model": ...}`` → one conversation."""
    line = line_of(obj)
    tools = tool_specs(obj.get("tools"), file=file, line=line, at=at.replace("messages", "tools"))
    model = obj.get("model") if isinstance(obj.get("model"), str) else None
    return conversation(conv_id, obj["messages"], file=file, line_of=line_of, strict=strict, notes=notes, at=at,
                        fallback_line=line, tools=tools, model=model)


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


# ---------------------------------------------------------------- mini-swe-agent

_MINI = re.compile(r'"trajectory_format"\s*:\s*"mini-swe-agent')


def _mini_sniff(path: Path, head: str) -> bool:
    text = head.lstrip()
    return text.startswith("{") and (_MINI.search(text) is not None or (
        re.match(r'\{\s*"info"\s*:', text) is not None and re.search(r'"mini_version"\s*:', text) is not None))


def _mini_sniff_value(path: Path, value: Any) -> bool:
    return isinstance(value, dict) and str(value.get("trajectory_format") or "").startswith("mini-swe-agent")


def _mini_notes(info: dict[str, Any], data: dict[str, Any]) -> list[str]:
    stats = info.get("model_stats") if isinstance(info.get("model_stats"), dict) else {}
    out = [f"trajectory_format {data.get('trajectory_format')!r}, mini_version {info.get('mini_version')!r}, "
           f"exit status {info.get('exit_status')!r}"]
    if stats:
        out.append(f"info.model_stats: instance_cost {stats.get('instance_cost')!r} USD over "
                   f"{stats.get('api_calls')!r} API calls (the run's own totals, kept here only)")
    if isinstance(info.get("submission"), str) and info["submission"]:
        out.append(f"info.submission: {len(info['submission']):,} characters (the final output), not a message")
    return out


def _mini_read(path: Path, *, strict: bool = True) -> Transcript:
    data, line_of = load_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise TranscriptError(path.name, 1, "a mini-swe-agent trajectory needs a 'messages' list.", field="messages",
                              hint="Pass the .traj.json file mini-swe-agent saved.")
    info = data.get("info") if isinstance(data.get("info"), dict) else {}
    model_cfg = (info.get("config") or {}).get("model") if isinstance(info.get("config"), dict) else None
    model = model_cfg.get("model_name") if isinstance(model_cfg, dict) else None
    model = model if isinstance(model, str) else None
    vendor = model.split("/", 1)[0] if model and "/" in model else None
    notes: list[str] = []
    if any(isinstance(m, dict) and m.get("object") == "response" for m in data["messages"]):
        conv = mini_swe_conversation(path.stem, data["messages"], file=path.name, line_of=line_of, strict=strict,
                                      notes=notes, model=model)
    else:
        conv = conversation(path.stem, data["messages"], file=path.name, line_of=line_of, strict=strict, notes=notes,
                            at="messages", model=model, provider=vendor if vendor in ("anthropic", "openai") else None,
                            mini=True)
    head = _mini_notes(info, data)
    if any(m.tool_calls for m in conv.messages):
        head.append("a tool-calling run: the 'bash' tool definition mini-swe-agent sends is not in the file (no tools)")
    conv = replace(conv, notes=tuple(head) + conv.notes)
    return Transcript(format="mini-swe-agent", file=path.name, conversations=(conv,), notes=tuple(notes))


@dataclass(frozen=True)
class _SubReader:
    """A reader that lives inside this module (same shape as a reader module)."""

    NAME: str
    sniff: Callable[[Path, str], bool]
    read: Callable[..., Transcript]
    EXPECTS: str = ""


@dataclass(frozen=True)
class _ValueSubReader(_SubReader):
    """A sub-reader that also recognises a parsed whole document (``sniff_value``, see :func:`ctxlab.io.formats.detect`)."""

    sniff_value: Callable[[Path, Any], bool] = lambda path, value: False


SWE_AGENT = _SubReader("swe-agent", _swe_sniff, _swe_read)
TAU_BENCH = _SubReader("tau-bench", _tau_sniff, _tau_read)
MINI_SWE_AGENT = _ValueSubReader("mini-swe-agent", _mini_sniff, _mini_read,
                                 'a mini-swe-agent {"info", "messages", "trajectory_format"} trajectory',
                                 _mini_sniff_value)
SUB_READERS = (SWE_AGENT, TAU_BENCH)  # detected before the plain openai-chat reader
# MINI_SWE_AGENT is registered by messages_jsonl, earlier in the order: anthropic-messages' and
# openai-responses' sniffs would claim a trajectory holding thinking blocks or response objects
