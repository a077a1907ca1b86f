"""Reader for JSON Lines of ``{"messages": [...]}`` objects: each line is its own conversation.

The layout of OpenAI's chat fine-tuning files (``{"messages": [...], "tools": [...]}`` per line,
https://platform.openai.com/docs/guides/fine-tuning) and of many evaluation and
distillation logs. A line's messages are read in OpenAI chat shape by
:func:`.openai_chat.conversation`, or in Anthropic shape by :func:`.anthropic_messages.conversation`
when the line looks Anthropic (a top-level ``system``, a tool with ``input_schema``, or a
``tool_use`` / ``tool_result`` / ``thinking`` block: :func:`.anthropic_messages.looks_anthropic`).
``tools`` and ``model`` on the line are kept. Conversation ids: the line's ``id`` when it is a
string, else ``conv0``, ``conv1``, ... by line. Every message's source line is its line.

A single JSON object ``{"messages": [...]}`` (one conversation, pretty-printed or not) is read by
the ``openai-chat`` or ``anthropic-messages`` reader instead; this reader claims a file only when
its first line is a whole ``{"messages": [...]}`` object and another object line follows.
Plumbing for chapter 02.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..codec import loads
from ..errors import TranscriptError
from ..messages import Transcript
from . import anthropic_messages, bad, iter_jsonl, skip_note
from .openai_chat import _tools_from as openai_tool_specs  # OpenAI chat "tools" → ToolSpecs
from .openai_chat import conversation as openai_conversation

NAME = "messages-jsonl"


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


def sniff(path: Path, head: str) -> bool:
    if not head.lstrip().startswith("{"):
        return False
    first, rest = _first_lines(path, head)
    try:
        obj = loads(first)
    except ValueError:  # not JSON (nesting too deep included)
        return False
    return isinstance(obj, dict) and isinstance(obj.get("messages"), list) and rest.lstrip().startswith("{")


def read(path: Path, *, strict: bool = True) -> Transcript:
    file, notes = path.name, []
    convs = []
    for line, index, obj in iter_jsonl(path, strict=strict, notes=notes):
        conv_id = obj["id"] if isinstance(obj.get("id"), str) else f"conv{index}"
        model = obj.get("model") if isinstance(obj.get("model"), str) else None
        common: dict[str, Any] = dict(file=file, line_of=lambda _: None, fallback_line=line, strict=strict,
                                      notes=notes, at="messages", model=model)
        try:
            if not isinstance(obj.get("messages"), list):
                raise bad(file, line, "each line needs a 'messages' list (one conversation per line)", field="messages")
            if anthropic_messages.looks_anthropic(obj):
                head_notes: list[str] = []
                system = anthropic_messages.system_blocks(obj.get("system"), file=file, line=line)
                tools = anthropic_messages.tool_specs(obj.get("tools"), file=file, line=line, notes=head_notes)
                convs.append(anthropic_messages.conversation(conv_id, obj["messages"], system=system, tools=tools,
                                                             conv_notes=tuple(head_notes), **common))
            else:
                convs.append(openai_conversation(conv_id, obj["messages"], tools=openai_tool_specs(obj.get("tools")),
                                                 **common))
        except TranscriptError as err:
            if strict:
                raise
            notes.append(skip_note(err))
    return Transcript(format=NAME, file=file, conversations=tuple(convs), notes=tuple(notes))
