"""Reader for JSON Lines of chat conversations, or of bare chat messages.

Two layouts, told apart by the first line:

* ``{"messages": [...]}`` per line: each line is its own conversation. The layout of OpenAI's chat
  fine-tuning files (``{"messages": [...], "tools": [...]}`` per line,
  https://platform.openai.com/docs/guides/fine-tuning), of many evaluation and distillation logs,
  and of LLaMA-Factory v1 data sets (hiyouga/LLaMA-Factory ``data/v1_sft_demo.jsonl``,
  ``data/reason_tool_use_demo_50.jsonl``; the types in ``src/llamafactory/v1/utils/types.py``:
  ``SFTSample`` = ``{"messages", "tools": JSON string}``, ``DPOSample`` = ``{"chosen_messages",
  "rejected_messages", "tools"}``; commit ff6d4d12, read 2026-12-01). Content parts ``{"type":
  "text" | "reasoning" | "tool_call", "value"}`` and tool messages without ids are read as
  :mod:`.openai_chat`'s docstring says; ``loss_weight`` (training only) is ignored. A DPO line gives
  two conversations, ``{id}:chosen`` and ``{id}:rejected``. A line's messages are read in OpenAI chat
  shape, or in Anthropic shape by :func:`.anthropic_messages.conversation` when the line looks
  Anthropic (a top-level ``system``, a tool with ``input_schema``, or a ``tool_use`` /
  ``tool_result`` / ``thinking`` block). ``tools`` and ``model`` on the line are kept. Conversation
  ids: the line's ``id`` when it is a string, else ``conv0``, ``conv1``, ... by line;
* a bare chat message ``{"role", "content"}`` per line (a common dump of one conversation): the
  whole file is ONE conversation (id: the file's stem), read in OpenAI chat shape, or Anthropic
  shape when a line holds an Anthropic block.

Every message's source line is its line. A single JSON object ``{"messages": [...]}`` (one
conversation, pretty-printed or not) is read by the ``openai-chat`` or ``anthropic-messages``
reader instead: this reader claims a file only when its first line is a whole ``{"messages"}`` (or
DPO) object and another object line follows, or when its first line is a whole chat message with no
``type`` (lines with a ``type`` belong to the agents' own logs). Plumbing for chapter 02.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ctxlab.io.codec import loads
from ctxlab.base.errors import TranscriptError
from ctxlab.messages import Transcript
from ctxlab.io.formats import anthropic_messages, bad, iter_jsonl, skip_note
from ctxlab.io.formats.openai_chat import MINI_SWE_AGENT
from ctxlab.io.formats.openai_chat import tool_specs as openai_tool_specs  # OpenAI chat "tools" → ToolSpecs
from ctxlab.io.formats.openai_chat import conversation as openai_conversation

NAME = "messages-jsonl"
EXPECTS = 'JSON Lines of {"messages": [...]} conversations, or of bare {"role", "content"} messages'
_ROLES = {"system", "developer", "user", "assistant", "tool", "function"}
_PAIR = ("chosen_messages", "rejected_messages")  # LLaMA-Factory v1 DPO samples
# mini-swe-agent (read in openai_chat) is registered here so that it is detected before anthropic-messages
# and openai-responses: their sniffs would claim a trajectory holding thinking blocks or response objects
SUB_READERS = (MINI_SWE_AGENT,)


def _first_lines(path: Path, head: str) -> tuple[str, str]:
    """The first line, and a little of what follows it (read from the file when the head ends first)."""
    first, newline, rest = head.lstrip().partition("\n")
    if newline and rest:
        return first, rest
    try:
        with path.open(encoding="utf-8-sig") as fh:
            first = fh.readline()
            return first, fh.read(4096)
    except (OSError, UnicodeDecodeError):
        return first, rest


def _is_conversation(obj: dict[str, Any]) -> bool:
    return isinstance(obj.get("messages"), list) or all(isinstance(obj.get(k), list) for k in _PAIR)


def _is_message(obj: dict[str, Any]) -> bool:
    """A bare chat message: a known role, content or tool calls, and no ``type`` (agents' log lines have one)."""
    return (obj.get("role") in _ROLES and ("content" in obj or "tool_calls" in obj) and "type" not in obj
            and "messages" not in obj)


def sniff(path: Path, head: str) -> bool:
    if not head.lstrip().startswith("{"):
        return False
    first, rest = _first_lines(path, head)
    try:
        obj = loads(first)
    except ValueError:  # not JSON (nesting too deep included)
        return False
    if not isinstance(obj, dict):
        return False
    if _is_message(obj):
        return not rest.strip() or rest.lstrip().startswith("{")
    return _is_conversation(obj) and rest.lstrip().startswith("{")


def _one(obj: dict[str, Any], conv_id: str, messages: list[Any], common: dict[str, Any], line: int) -> Any:
    file = common["file"]
    if anthropic_messages.looks_anthropic({**obj, "messages": messages}):
        head_notes: list[str] = []
        system = anthropic_messages.system_blocks(obj.get("system"), file=file, line=line)
        tools = anthropic_messages.tool_specs(obj.get("tools"), file=file, line=line, notes=head_notes)
        return anthropic_messages.conversation(conv_id, messages, system=system, tools=tools,
                                               conv_notes=tuple(head_notes), **common)
    return openai_conversation(conv_id, messages, tools=openai_tool_specs(obj.get("tools"), file=file, line=line),
                               **common)


def read(path: Path, *, strict: bool = True) -> Transcript:
    file, notes = path.name, []
    first = next(iter_jsonl(path, strict=False, notes=[]), None)
    if first is not None and _is_message(first[2]):
        return _read_messages(path, strict=strict)
    convs = []
    for line, index, obj in iter_jsonl(path, strict=strict, notes=notes):
        conv_id = obj["id"] if isinstance(obj.get("id"), str) else f"conv{index}"
        model = obj.get("model") if isinstance(obj.get("model"), str) else None
        common: dict[str, Any] = dict(file=file, line_of=lambda _: None, fallback_line=line, strict=strict,
                                      notes=notes, at="messages", model=model)
        try:
            if not _is_conversation(obj):
                raise bad(file, line, "each line needs a 'messages' list (one conversation per line)", field="messages")
            if isinstance(obj.get("messages"), list):
                convs.append(_one(obj, conv_id, obj["messages"], common, line))
            else:
                for key in _PAIR:
                    convs.append(_one(obj, f"{conv_id}:{key.split('_')[0]}", obj[key], {**common, "at": key}, line))
        except TranscriptError as err:
            if strict:
                raise
            notes.append(skip_note(err))
    return Transcript(format=NAME, file=file, conversations=tuple(convs), notes=tuple(notes))


_ANTHROPIC_BLOCK = re.compile(r"^(tool_use|tool_result|thinking|redacted_thinking)$")


def _read_messages(path: Path, *, strict: bool) -> Transcript:
    """A file of bare messages, one per line → one conversation. The whole file is read first (it is
    one conversation), so strict mode raises whichever bad line comes first, unparsable or not."""
    parse_notes: list[str] = []
    lines = list(iter_jsonl(path, strict=False, notes=parse_notes))
    first_bad = min((_note_line(n) for n in parse_notes), default=None)
    objs = [obj for _, _, obj in lines]
    line_at = {id(obj): line for line, _, obj in lines}
    anthropic = any(isinstance(b, dict) and _ANTHROPIC_BLOCK.match(str(b.get("type")))
                    for o in objs if isinstance(o.get("content"), list) for b in o["content"])
    notes: list[str] = []
    common: dict[str, Any] = dict(file=path.name, line_of=lambda o: line_at.get(id(o)), strict=strict, notes=notes,
                                  at="")
    try:
        conv = (anthropic_messages.conversation(path.stem, objs, **common) if anthropic
                else openai_conversation(path.stem, objs, **common))
    except TranscriptError as err:
        if first_bad is not None and first_bad < (err.line or first_bad + 1):
            list(iter_jsonl(path, strict=True, notes=[]))  # raises the earlier, unparsable line
        raise
    if strict and first_bad is not None:
        list(iter_jsonl(path, strict=True, notes=[]))  # raises it
    ordered = sorted(parse_notes + notes, key=lambda n: _note_line(n) or 0)
    return Transcript(format=NAME, file=path.name, conversations=(conv,), notes=tuple(ordered))


def _note_line(note: str) -> int | None:
    found = re.match(r"(?:skipped line |[^:]*:)(\d+)", note)
    return int(found.group(1)) if found else None
