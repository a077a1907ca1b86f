"""The pieces of an OpenHands V1 (software-agent-sdk) event → ctxlab parts and tool specs.

What each SDK type is sent as (OpenHands/software-agent-sdk at
611629e6999ad398dc49c761721eefe18d5e6bd9, read 2026-12-01):

* ``TextContent`` / ``ImageContent`` (``llm/message.py``) → TextPart / one ImagePart per
  ``image_urls`` entry; a plain string (older events, ``Message._coerce_content``) → TextPart;
* thinking (``Message._list_serializer`` sends ``thinking_blocks``): ``ThinkingBlock`` → ThinkingPart
  with its signature, ``RedactedThinkingBlock`` → a redacted one; a ``responses_reasoning_item``
  (``ReasoningItemModel``: summary and content texts, ``encrypted_content`` as the signature);
  ``reasoning_content`` only when neither is there and the thought text does not already hold it
  (models that write ``<think>`` into the content report it twice);
* ``MessageToolCall`` (``id``, ``name``, ``arguments``) → ToolCallPart with the arguments string
  verbatim; SDKs before 2025-12 stored litellm's ``{id, function: {name, arguments}}``;
* an observation (``tool/schema.py``, ``Observation.to_llm_content``): the error header when
  ``is_error``, then ``content``; events from before 2025-11-05 (``refactor: standardize Observation``)
  have per-tool fields instead: ``output`` (terminal, file editor, browser), ``message`` (finish) or a
  ``content`` string (think, task tracker). The terminal tool's own formatting
  (``openhands-tools/openhands/tools/terminal/definition.py``) is applied: metadata prefix and
  suffix, working directory, interpreter, exit code;
* ``SystemPromptEvent.tools``: OpenAI tool dicts (before 2025-12-18) or dumped ``ToolDefinition`` s
  (``tool/tool.py``): ``name`` is a class variable, not dumped; the dump's ``title`` is the name
  unless ``annotations.title`` overrides it, in which case the name comes from ``kind`` as
  ``ToolDefinition.__init_subclass__`` derives it (``TerminalTool`` → ``terminal``). The parameter
  schema is not dumped (only ``action_type``, a kind name), except for MCP tools
  (``mcp_tool.inputSchema``).

Simplified on purpose: other tools' own result formatting and the SDK's truncation of long output
are not reproduced. Plumbing for chapter 02.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from pydantic import BaseModel

from ctxlab.messages import Part, TextPart, ThinkingPart, ToolCallPart, ToolSpec, canonical_arguments
from ctxlab.io.formats import unknown_block_text
from ctxlab.io.formats.openhands_memory import images
from ctxlab.io.formats.sharegpt import tool_specs as openai_tool_specs

ERROR_HEADER = "[An error occurred during execution.]\n"
NO_SCHEMA = "tool(s) whose parameter schema the log does not record (only the action kind)"


class Call(BaseModel):
    """A ``MessageToolCall``, or the litellm tool call older SDKs stored."""

    id: str
    name: str | None = None
    arguments: str | dict[str, Any] | None = None
    function: dict[str, Any] | None = None


class Thinking(BaseModel):
    """The model-output fields an ActionEvent and an LLM message share."""

    thought: list[dict[str, Any]] = []
    reasoning_content: str | None = None
    thinking_blocks: list[dict[str, Any]] = []
    responses_reasoning_item: dict[str, Any] | None = None


def parts(content: Any, notes: Counter[str]) -> list[Part]:
    """SDK content (TextContent / ImageContent dicts, or a plain string) → parts."""
    if isinstance(content, str):
        return [TextPart(content)] if content else []
    out: list[Part] = []
    for block in content or ():
        if isinstance(block, dict) and block.get("type", "text") == "text" and isinstance(block.get("text"), str):
            out.append(TextPart(block["text"]))
        elif isinstance(block, dict) and block.get("type") == "image":
            out += images(block.get("image_urls"))
        else:
            out.append(TextPart(unknown_block_text(block)))
            notes["content block(s) of an unknown type kept as their JSON text"] += 1
    return out


def thinking(ev: Thinking, text: str, notes: Counter[str]) -> list[Part]:
    """The thinking parts of one model output whose visible text is ``text``."""
    out: list[Part] = []
    for b in ev.thinking_blocks:
        if b.get("type") == "redacted_thinking":
            out.append(ThinkingPart("", str(b.get("data", "")), redacted=True))
        else:
            out.append(ThinkingPart(str(b.get("thinking", "")), b.get("signature")))
    item = ev.responses_reasoning_item or {}
    said = "\n".join(str(s) for key in ("summary", "content") if isinstance(item.get(key), list) for s in item[key])
    if said or item.get("encrypted_content"):
        out.append(ThinkingPart(said, item.get("encrypted_content"), redacted=not said))
    if ev.reasoning_content and not out:
        if ev.reasoning_content.strip() in text:
            notes["reasoning_content already inside the thought text: not repeated"] += 1
        else:
            out.append(ThinkingPart(ev.reasoning_content))
    return out


def call(c: Call) -> ToolCallPart:
    """One tool call, its arguments as emitted."""
    fn = c.function or {}
    arguments = c.arguments if c.arguments is not None else fn.get("arguments") or ""
    return ToolCallPart(c.id, str(c.name or fn.get("name") or ""), canonical_arguments(arguments))


def observation(obs: dict[str, Any], notes: Counter[str]) -> list[Part]:
    """An observation's ``to_llm_content``: error header, content; the terminal tool's extra lines."""
    content = obs.get("content", obs.get("output", obs.get("message")))
    if content is None:
        notes["observation(s) without content kept as their JSON text"] += 1
        content = unknown_block_text({k: v for k, v in obs.items() if k != "kind"})
    out = parts(content, notes)
    if obs.get("kind") in ("TerminalObservation", "ExecuteBashObservation"):
        meta = obs.get("metadata") if isinstance(obs.get("metadata"), dict) else {}
        text = "".join(p.text for p in out if isinstance(p, TextPart))
        text = f"{meta.get('prefix') or ''}{text}{meta.get('suffix') or ''}"
        if meta.get("working_dir"):
            text += f"\n[Current working directory: {meta['working_dir']}]"
        if meta.get("py_interpreter_path"):
            text += f"\n[Python interpreter: {meta['py_interpreter_path']}]"
        if meta.get("exit_code", -1) not in (-1, None):
            text += f"\n[Command finished with exit code {meta['exit_code']}]"
        if obs.get("error") is True:  # ExecuteBashObservation, before is_error existed
            text = f"[There was an error during command execution.]\n{text}"
        out = [TextPart(text)]
    return ([TextPart(ERROR_HEADER)] if obs.get("is_error") else []) + out


def tool_specs(raw: list[Any], *, file: str, line: int, notes: Counter[str]) -> tuple[ToolSpec, ...]:
    """``SystemPromptEvent.tools`` → ToolSpecs (module docstring)."""
    if all(isinstance(t, dict) and t.get("type") == "function" for t in raw):
        return openai_tool_specs(raw, file=file, line=line, at="tools")
    specs = []
    for t in raw:
        t = t if isinstance(t, dict) else {}
        mcp = t.get("mcp_tool") if isinstance(t.get("mcp_tool"), dict) else {}
        from_kind = re.sub(r"(?<!^)(?=[A-Z])", "_", str(t.get("kind") or "")).lower().removesuffix("_tool")
        titled = isinstance(t.get("annotations"), dict) and t["annotations"].get("title")
        name = mcp.get("name") or (from_kind if titled else t.get("title")) or from_kind
        schema = mcp.get("inputSchema") if isinstance(mcp.get("inputSchema"), dict) else None
        notes[NO_SCHEMA] += schema is None
        specs.append(ToolSpec(str(name), str(t.get("description") or mcp.get("description") or ""),
                              schema or {"type": "object", "properties": {}}))
    return tuple(specs)
