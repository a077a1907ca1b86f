"""Reader for OpenAI Responses API transcripts: a list of items, a request body, or a response object.

Shapes (Responses API reference, https://platform.openai.com/docs/api-reference/responses): a JSON
list of items; a request body ``{"model", "instructions", "tools", "input": str | [items]}``; a
response object ``{"object": "response", "id", "model", "status", "output": [items], "usage"}``.
Items are read by :class:`.responses_items.ItemReader` (the mapping is described there).
``instructions`` (a string, or input messages) come first in ``Conversation.system``; tools are the
flat ``{"type": "function", "name", "description", "parameters"}`` entries (built-in tools have no
definition in the file: noted). A response object is ONE assistant message with ``response_id``,
``usage`` and a stop reason (``tool_use`` when it calls a tool, ``length`` when
``incomplete_details.reason`` is ``max_output_tokens``). Plumbing for chapter 02.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import TranscriptError
from ..messages import Message, TextPart, Transcript
from . import load_json, skip_note
from .openai_chat import SWE_AGENT, TAU_BENCH
from .responses_items import ItemReader, content_parts, tool_specs, usage

NAME = "openai-responses"
ITEM_TYPES = re.compile(r'"type"\s*:\s*"(function_call|function_call_output|reasoning|input_text|output_text|'
                        r'input_image|custom_tool_call|custom_tool_call_output|local_shell_call)"')


def sniff(path: Path, head: str) -> bool:
    text = head.lstrip()
    if SWE_AGENT.sniff(path, head) or TAU_BENCH.sniff(path, head):  # read by openai_chat, detected after us
        return False
    if text.startswith("["):
        return re.match(r'\[\s*\{', text) is not None and ITEM_TYPES.search(text) is not None
    if not text.startswith("{"):
        return False
    return (re.search(r'"object"\s*:\s*"response"', text) is not None
            or (re.search(r'"input"\s*:\s*[\["]', text) is not None
                and re.search(r'"(instructions|model)"\s*:', text) is not None)
            or (re.search(r'"output"\s*:\s*\[', text) is not None and ITEM_TYPES.search(text) is not None))


def _stop(response: dict[str, Any], msg: Message) -> str | None:
    if response.get("status") == "incomplete":
        reason = (response.get("incomplete_details") or {}).get("reason")
        return "length" if reason == "max_output_tokens" else "aborted"
    return "tool_use" if msg.tool_calls else ("stop" if response.get("status") == "completed" else None)


def read(path: Path, *, strict: bool = True) -> Transcript:
    data, line_of = load_json(path)
    file, skipped, head_notes = path.name, [], []
    response = data if isinstance(data, dict) and isinstance(data.get("output"), list) else None
    body: dict[str, Any] = data if isinstance(data, dict) else {}
    model = body.get("model") if isinstance(body.get("model"), str) else None
    items = response["output"] if response else (body.get("input") if body else data)
    at = "output" if response else ("input" if body else "")
    if isinstance(items, str):  # "input": "just a question"
        items = [{"role": "user", "content": items}]
    if not isinstance(items, list):
        raise TranscriptError(file, line_of(data) or 1, "expected a JSON list of Responses items, a request body "
                              "{\"input\": [...]} or a response object {\"output\": [...]}.", field=at or None,
                              hint="Each item has a 'type': message, function_call, function_call_output, reasoning, ...")
    reader = ItemReader(path.stem, file, model=model)
    instructions = body.get("instructions")
    system = (instructions,) if isinstance(instructions, str) and instructions else ()
    if isinstance(instructions, list):  # instructions given as input messages: their texts
        system = tuple(p.text for m in instructions if isinstance(m, dict) for p in
                       content_parts(m.get("content"), head_notes, "instructions") if isinstance(p, TextPart))
    tools = tool_specs(body.get("tools"), head_notes)
    for index, item in enumerate(items):
        try:
            reader.add(item, index=index, line=line_of(item) or line_of(data), at=f"{at}[{index}]" if at else f"[{index}]")
        except TranscriptError as err:
            if strict:
                raise
            skipped.append(skip_note(err))
    if response is not None and reader.items:
        msg = reader.items[-1]
        assert isinstance(msg, Message)
        fields: dict[str, Any] = dict(response_id=response.get("id"), stop_reason=_stop(response, msg))
        try:
            recorded = usage(response["usage"], file=file, line=line_of(response["usage"])) \
                if response.get("usage") is not None else None
        except TranscriptError as err:
            if strict:
                raise
            skipped.append(skip_note(err))
            recorded = None
        if recorded is not None:
            reader.set_usage(recorded, **fields)
        else:
            reader.items[-1] = replace(msg, **fields)
    conv = reader.conversation(tools=tools, instructions=system, extra_notes=skipped + head_notes)
    return Transcript(format=NAME, file=file, conversations=(conv,), notes=tuple(skipped))
