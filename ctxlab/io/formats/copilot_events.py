"""The GitHub Copilot CLI session events the ``copilot-cli`` reader validates, and small helpers.

Field names from the session-event schema as generated into github/copilot-sdk
``nodejs/src/generated/session-events.ts`` (commit cc0438d, 2026-08-21; read 2026-12-01): only the
fields ctxlab reads, every one optional unless the schema requires it. Plumbing for chapter 02.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel

from ctxlab.messages import ImagePart, Part, Usage
from ctxlab.io.formats import TokenCount

PREFIXES = ("session.", "user.", "assistant.", "tool.", "system.", "subagent.", "hook.", "abort")
# events that are the session's bookkeeping, not what the model saw (the schema's other persisted types)
BOOKKEEPING = {"session.info", "session.warning", "session.error", "session.mode_changed", "session.plan_changed",
               "session.task_complete", "session.title_changed", "session.resume", "session.truncation",
               "session.compaction_start", "session.usage_checkpoint", "session.context_changed",
               "session.workspace_file_changed", "session.handoff", "assistant.turn_start", "assistant.turn_end",
               "abort", "hook.start", "hook.end", "skill.invoked", "subagent.started", "subagent.completed",
               "subagent.failed", "subagent.selected", "subagent.deselected", "system.notification",
               "permission.requested", "permission.completed", "tool_search.activated", "session.binary_asset",
               "external_tool.requested", "external_tool.completed", "session.permissions_changed",
               "session.session_limits_changed", "session.remote_steerable_changed"}


class Event(BaseModel):
    type: str
    data: dict[str, Any]
    id: str | None = None
    timestamp: str | None = None
    agentId: str | None = None
    ephemeral: bool | None = None


class ModelChange(BaseModel):
    newModel: str
    reasoningEffort: str | None = None


class Request(BaseModel):
    toolCallId: str
    name: str
    arguments: Any = None


class Assistant(BaseModel):
    content: str = ""
    toolRequests: list[Request] | None = None
    reasoningText: str | None = None
    reasoningOpaque: str | None = None
    encryptedContent: str | None = None
    outputTokens: TokenCount | None = None
    model: str | None = None
    apiCallId: str | None = None
    requestId: str | None = None


class User(BaseModel):
    content: str = ""
    transformedContent: str | None = None
    attachments: list[dict[str, Any]] | None = None
    source: str | None = None
    isAutopilotContinuation: bool | None = None


class Start(BaseModel):
    toolCallId: str
    toolName: str
    arguments: Any = None


class Complete(BaseModel):
    toolCallId: str
    success: bool
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    isUserRequested: bool | None = None


class CallUsage(BaseModel):
    model: str | None = None
    inputTokens: TokenCount = 0
    outputTokens: TokenCount = 0
    cacheReadTokens: TokenCount = 0
    cacheWriteTokens: TokenCount = 0
    apiCallId: str | None = None
    finishReason: str | None = None


class Totals(BaseModel):
    inputTokens: TokenCount = 0
    outputTokens: TokenCount = 0
    cacheReadTokens: TokenCount = 0
    cacheWriteTokens: TokenCount = 0
    reasoningTokens: TokenCount = 0


class Compaction(BaseModel):
    success: bool
    summaryContent: str | None = None
    preCompactionTokens: TokenCount | None = None


MODELS: dict[str, type[BaseModel]] = {
    "session.model_change": ModelChange, "user.message": User, "assistant.message": Assistant,
    "tool.execution_start": Start, "tool.user_requested": Start, "tool.execution_complete": Complete,
    "assistant.usage": CallUsage, "session.compaction_complete": Compaction}
STOP = {"stop": "stop", "tool_calls": "tool_use", "length": "length", "content_filter": "error"}


def call_usage(u: CallUsage, raw: dict[str, Any]) -> Usage:
    """An ``assistant.usage`` event → neutral fields: ``inputTokens`` is the whole prompt, cache reads and
    writes inside it. ``{"inputTokens": 1000, "cacheReadTokens": 800}`` → uncached 200, cache read 800."""
    cached = u.cacheReadTokens + u.cacheWriteTokens
    return Usage(uncached_input_tokens=max(0, u.inputTokens - cached), cache_read_tokens=u.cacheReadTokens,
                 cache_write_tokens=u.cacheWriteTokens, output_tokens=u.outputTokens, raw=raw)


def images(blobs: list[Any] | None, left_out: Counter[str], what: str) -> list[Part]:
    """Inline base64 images (``{"type", "data", "mimeType"}``) → ImageParts by size; the others are counted."""
    out: list[Part] = []
    for b in blobs or []:
        if isinstance(b, dict) and isinstance(b.get("data"), str) and str(b.get("mimeType", "")).startswith("image/"):
            out.append(ImagePart(str(b.get("mimeType") or "image/png"), data_chars=len(b["data"])))
        else:
            left_out[f"{what}(s) without inline image data: size unknown, left out"] += 1
    return out
