"""pi message payloads → messages: the roles, content blocks, usage and the text pi sends for summaries.

Helpers of :mod:`ctxlab.io.formats.pi` (its docstring says what maps to what and cites the sources,
badlogic/pi-mono ``packages/coding-agent/src/core/messages.ts`` and ``packages/ai/src/types.ts``).
Plumbing for chapter 02.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from pydantic import BaseModel

from ctxlab.messages import ImagePart, Message, Part, TextPart, ThinkingPart, ToolCallPart, Usage, canonical_arguments
from ctxlab.io.formats import TokenCount, bad, check, interned, interned_keys, unknown_block_text

# the text pi wraps around summaries it sends (packages/coding-agent/src/core/messages.ts)
BRANCH_SUMMARY_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
BRANCH_SUMMARY_SUFFIX = "</summary>"
_WRAP = {"branchSummary": (BRANCH_SUMMARY_PREFIX, BRANCH_SUMMARY_SUFFIX),
         "compactionSummary": ("The conversation history before this point was compacted into the following "
                               "summary:\n\n<summary>\n", "\n</summary>")}
_STOP = {"toolUse": "tool_use", "stop": "stop", "aborted": "aborted", "error": "error", "length": "length"}


class SummaryLine(BaseModel):
    """A pi summary payload or ``branch_summary`` line: its ``summary`` text. Plumbing for chapter 02."""

    summary: str


class _Cost(BaseModel):
    input: float = 0
    output: float = 0
    cacheRead: float = 0
    cacheWrite: float = 0
    total: float = 0


class _Usage(BaseModel):
    input: TokenCount = 0
    output: TokenCount = 0
    cacheRead: TokenCount = 0
    cacheWrite: TokenCount = 0
    totalTokens: TokenCount = 0
    cost: _Cost | None = None


class ContentPayload(BaseModel):
    """A pi payload with ``content`` (a string or content blocks): user, custom and hook messages, a
    ``custom_message`` line; the assistant and tool-result payloads extend it. Plumbing for chapter 02."""

    content: str | list[Any]


class _Assistant(ContentPayload):
    content: list[Any]
    provider: str | None = None
    model: str | None = None
    usage: _Usage | None = None
    stopReason: str | None = None
    responseId: str | None = None
    errorMessage: str | None = None


class _ToolResult(ContentPayload):
    toolCallId: str
    toolName: str | None = None
    content: str | list[Any] = ""
    isError: bool = False


class _Bash(BaseModel):
    command: str
    output: str = ""
    exitCode: int | None = None
    cancelled: bool = False
    truncated: bool = False
    fullOutputPath: str | None = None
    excludeFromContext: bool = False


class _Text(BaseModel):
    text: str


class _Image(BaseModel):
    data: str = ""
    mimeType: str = "image/png"


class _Thinking(BaseModel):
    thinking: str = ""
    thinkingSignature: str | None = None
    redacted: bool = False


class _ToolCall(BaseModel):
    id: str
    name: str
    arguments: Any = None


def content_parts(content: str | list[Any], *, file: str, line: int, at: str, notes: list[str]) -> list[Part]:
    """pi content (a string, or ``text`` / ``image`` / ``thinking`` / ``toolCall`` blocks) → parts, in order.

    ``"hi"`` → ``[TextPart("hi")]``; an unknown block is kept as its JSON text and noted in ``notes``.
    A bad block raises TranscriptError naming file, line and ``at[i]``. Plumbing for chapter 02.
    """
    if isinstance(content, str):
        return [TextPart(content)] if content else []
    parts: list[Part] = []
    for i, block in enumerate(content):
        where = f"{at}[{i}]"
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            parts.append(TextPart(check(_Text, block, file=file, line=line, at=where).text))
        elif kind == "image":
            img = check(_Image, block, file=file, line=line, at=where)
            parts.append(ImagePart(media_type=interned(img.mimeType), data_chars=len(img.data)))
        elif kind == "thinking":
            th = check(_Thinking, block, file=file, line=line, at=where)
            parts.append(ThinkingPart(th.thinking, th.thinkingSignature, th.redacted))
        elif kind == "toolCall":
            call = check(_ToolCall, block, file=file, line=line, at=where)
            parts.append(ToolCallPart(call.id, interned(call.name), canonical_arguments(call.arguments or {})))
        else:
            parts.append(TextPart(unknown_block_text(block)))
            notes.append(f"line {line}: content block of type {kind!r} kept as its JSON text")
    return parts


def _bash_text(b: _Bash) -> str:
    """How pi shows a user's shell command to the model."""
    text = f"Ran `{b.command}`\n" + (f"```\n{b.output}\n```" if b.output else "(no output)")
    if b.cancelled:
        text += "\n\n(command cancelled)"
    elif b.exitCode not in (None, 0):
        text += f"\n\nCommand exited with code {b.exitCode}"
    if b.truncated and b.fullOutputPath:
        text += f"\n\n[Output truncated. Full output: {b.fullOutputPath}]"
    return text


def iso_time(ms: Any) -> str | None:
    """pi's message timestamps are Unix milliseconds: ``1735725601000`` → ``"2025-01-01T10:00:01.000Z"``.

    A string is returned as it is; anything else that is not a number → None. Plumbing for chapter 02."""
    if isinstance(ms, str):
        return ms
    if not isinstance(ms, (int, float)) or isinstance(ms, bool):
        return None
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _usage(u: _Usage, raw: dict[str, Any]) -> Usage:
    cost = None if u.cost is None else {"uncached_input": u.cost.input, "cache_read": u.cost.cacheRead,
                                         "cache_write": u.cost.cacheWrite, "output": u.cost.output,
                                         "total": u.cost.total}
    return Usage(uncached_input_tokens=u.input, cache_read_tokens=u.cacheRead, cache_write_tokens=u.cacheWrite,
                 output_tokens=u.output, cost_usd=cost, raw=interned_keys(raw))  # the keys once, not once a line


def to_message(raw: dict[str, Any], meta: dict[str, Any], *, file: str, line: int, model: str | None,
               provider: str | None, notes: list[str]) -> Message:
    """One pi ``message`` payload → a Message (raises TranscriptError on a bad shape).

    ``meta`` holds the Message fields the line gives (id, timestamp, source, ...); ``model`` and
    ``provider`` are the session's, overridden by an assistant payload's own. Plumbing for chapter 02."""
    role = raw.get("role")
    meta = {**meta, "model": model, "provider": provider, "timestamp": meta["timestamp"] or iso_time(raw.get("timestamp"))}

    def parts(content: str | list[Any]) -> tuple[Part, ...]:
        return tuple(content_parts(content, file=file, line=line, at="message.content", notes=notes))

    if role == "user":
        return Message(role="user", parts=parts(check(ContentPayload, raw, file=file, line=line, at="message").content), **meta)
    if role == "assistant":
        a = check(_Assistant, raw, file=file, line=line, at="message")
        meta.update(model=interned(a.model) or model, provider=interned(a.provider) or provider)
        return Message(role="assistant", parts=parts(a.content),
                       stop_reason=_STOP.get(a.stopReason or "", interned(a.stopReason)),
                       usage=_usage(a.usage, raw["usage"]) if a.usage is not None else None,
                       response_id=a.responseId, **meta)
    if role == "toolResult":
        t = check(_ToolResult, raw, file=file, line=line, at="message")
        return Message(role="tool", parts=parts(t.content), tool_call_id=t.toolCallId, tool_name=interned(t.toolName),
                       is_error=t.isError, **meta)
    if role == "bashExecution":
        b = check(_Bash, raw, file=file, line=line, at="message")
        return Message(role="user", parts=(TextPart(_bash_text(b)),), origin="meta" if b.excludeFromContext else "shell", **meta)
    if role in ("custom", "hookMessage"):
        return Message(role="user", parts=parts(check(ContentPayload, raw, file=file, line=line, at="message").content),
                       origin="system", **meta)
    if role in ("branchSummary", "compactionSummary"):
        s = check(SummaryLine, raw, file=file, line=line, at="message")
        prefix, suffix = _WRAP[role]
        return Message(role="user", parts=(TextPart(prefix + s.summary + suffix),), origin="compact_summary", **meta)
    raise bad(file, line, f"unknown role {role!r}; pi writes user, assistant, toolResult, bashExecution, custom",
              field="message.role")
