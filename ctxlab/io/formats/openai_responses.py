"""Reader for OpenAI Responses API transcripts: a list of items, a request body, or a response object.

Shapes (Responses API reference, https://platform.openai.com/docs/api-reference/responses): a JSON
list of items; a request body ``{"model", "instructions", "tools", "input": str | [items]}``; a
response object ``{"object": "response", "id", "model", "status", "output": [items], "usage"}``.
Items are read by :class:`.responses_items.ItemReader` (the mapping is described there).
``instructions`` (a string, or input messages) come first in ``Conversation.system``; tools are the
flat ``{"type": "function", "name", "description", "parameters"}`` entries (built-in tools have no
definition in the file: noted). A response object is ONE assistant message with ``response_id``,
``usage`` and a stop reason (``tool_use`` when it calls a tool, ``length`` when
``incomplete_details.reason`` is ``max_output_tokens``). A response object does not hold the input
it answered: ONE user message with ``origin="synthetic"`` stands in for it (its text says so), so
the call can be replayed (``replay --recorded`` prices its usage; the end-to-end fidelity then shows
how much of the recorded prompt the file does not hold) — noted.

Also here: :func:`mini_swe_conversation`, for mini-swe-agent trajectories of Responses-API runs,
whose ``messages`` mix input items with whole response objects (SWE-agent/mini-swe-agent
``src/minisweagent/models/litellm_response_model.py``, commit a83fcae8, read 2026-12-01): each
response object's ``output`` items become one assistant message with the response's ``usage``;
``extra`` is dropped (its ``timestamp`` kept); the ``exit`` marker becomes a meta user message.
Plumbing for chapter 02.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from ctxlab.base.errors import TranscriptError
from ctxlab.messages import Message, SourceRef, TextPart, Transcript
from ctxlab.io.formats import load_json, skip_note
from ctxlab.io.formats.openai_chat import MINI_SWE_AGENT, SWE_AGENT, TAU_BENCH
from ctxlab.io.formats.responses_items import ItemReader, content_parts, response_stop_reason, tool_specs, usage

NAME = "openai-responses"
EXPECTS = 'OpenAI Responses items, a request {"input", "instructions"} or a response {"object": "response", "output"}'
STAND_IN = ("[the input of this response is not in the file: a response object holds only its output; "
            "this message stands in for it]")
# LLaMA-Factory v1 content parts ({"type": "reasoning", "value": ...}) are chat messages, not Responses items
_VALUE_PARTS = re.compile(r'"type"\s*:\s*"(text|reasoning|tool_call)"\s*,\s*"value"\s*:')
ITEM_TYPES = re.compile(r'"type"\s*:\s*"(function_call|function_call_output|reasoning|input_text|output_text|'
                        r'input_image|custom_tool_call|custom_tool_call_output|local_shell_call)"')


def sniff(path: Path, head: str) -> bool:
    text = head.lstrip()
    if any(r.sniff(path, head) for r in (SWE_AGENT, TAU_BENCH, MINI_SWE_AGENT)):  # read by openai_chat, after us
        return False
    if _VALUE_PARTS.search(text[:4000]):
        return False
    if text.startswith("["):
        return re.match(r'\[\s*\{', text) is not None and ITEM_TYPES.search(text) is not None
    if not text.startswith("{"):
        return False
    return (re.search(r'"object"\s*:\s*"response"', text) is not None
            or (re.search(r'"input"\s*:\s*[\["]', text) is not None
                and re.search(r'"(instructions|model)"\s*:', text) is not None)
            or (re.search(r'"output"\s*:\s*\[', text) is not None and ITEM_TYPES.search(text) is not None))


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
        fields: dict[str, Any] = dict(response_id=response.get("id"), stop_reason=response_stop_reason(response, bool(msg.tool_calls)))
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
        reader.items.insert(0, Message(role="user", parts=(TextPart(STAND_IN),), id=f"{path.stem}:input",
                                       origin="synthetic", source=SourceRef(file, 1)))
        head_notes.append("a response object holds no input: one synthetic user message stands in for it, so the "
                          "call replays (its recorded prompt is larger than what the file shows)")
    conv = reader.conversation(tools=tools, instructions=system, extra_notes=skipped + head_notes)
    return Transcript(format=NAME, file=file, conversations=(conv,), notes=tuple(skipped))
