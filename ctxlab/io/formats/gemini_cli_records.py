"""Gemini CLI message records → ctxlab messages: the second half of the ``gemini-cli`` reader.

:mod:`ctxlab.io.formats.gemini_cli` folds the file into its records (and compaction entries); this module
maps each record to messages the way Gemini CLI's ``convertSessionToClientHistory``
(google-gemini/gemini-cli ``packages/core/src/utils/sessionUtils.ts``, read 2026-12-01 at 5411f113)
rebuilds the history it sends, and turns a record's ``tokens`` into :class:`~ctxlab.messages.Usage`.
The mapping is described in that module's docstring. Plumbing for chapter 02.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel

from ctxlab.messages import (Entry, ImagePart, Item, Message, Part, SourceRef, TextPart, ThinkingPart, ToolCallPart, Usage,
                        canonical_arguments)
from ctxlab.io.formats import TokenCount, unknown_block_text

PROVIDER = "google"
UI_TYPES = ("info", "warning", "error")
CLI_TURNS = ("<session_context>", "<hook_context>")  # environmentContext.ts, client.ts
CONTINUE = "System: Please continue."  # client.ts until 9380e13f (2026-05-01)


class Tokens(BaseModel):
    """``TokensSummary``: the call's ``usageMetadata`` as Gemini CLI copies it (``recordMessageTokens``)."""

    input: TokenCount  # promptTokenCount, cached tokens included
    output: TokenCount  # candidatesTokenCount
    cached: TokenCount = 0  # cachedContentTokenCount
    thoughts: TokenCount | None = None  # thoughtsTokenCount, billed as output
    tool: TokenCount | None = None  # toolUsePromptTokenCount
    total: TokenCount | None = None


class _Thought(BaseModel):
    subject: str = ""
    description: str = ""


class _Call(BaseModel):
    id: str
    name: str
    args: Any = None
    result: Any = None
    status: str | None = None


class Record(BaseModel):
    """One ``MessageRecord`` (``chatRecordingTypes.ts``); UI-only fields (``displayContent``, ...) ignored."""

    id: str
    type: str
    timestamp: str | None = None
    content: Any = None
    toolCalls: list[_Call] | None = None
    thoughts: list[_Thought] | None = None
    tokens: dict[str, Any] | None = None  # checked with Tokens when read; kept as written for Usage.raw
    model: str | None = None


def usage(tokens: dict[str, Any]) -> Usage:
    """A record's ``tokens`` → neutral fields. ``{"input": 1000, "cached": 800, "output": 20, "thoughts": 30}``
    → ``Usage(uncached_input_tokens=200, cache_read_tokens=800, output_tokens=50)``; ``tool`` stays in ``raw``."""
    t = Tokens.model_validate(tokens)
    return Usage(uncached_input_tokens=max(0, t.input - t.cached), cache_read_tokens=t.cached,
                 output_tokens=t.output + (t.thoughts or 0), raw=tokens)


def raw_parts(content: Any) -> list[Any]:
    """A ``PartListUnion`` as a list of parts: ``"hi"`` → ``[{"text": "hi"}]``; ``""`` and ``None`` → ``[]``."""
    if content is None or content == "":
        return []
    return [{"text": p} if isinstance(p, str) else p for p in (content if isinstance(content, list) else [content])]


def text_of(content: Any) -> str:
    """The text parts of a ``PartListUnion`` joined."""
    return "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in raw_parts(content))


def _is_response(p: Any) -> bool:
    return isinstance(p, dict) and "functionResponse" in p


def _part(p: Any, left: Counter[str]) -> Part:
    """One Gemini part (not a function call or response) → a ctxlab part."""
    if isinstance(p, dict) and isinstance(p.get("text"), str):
        return ThinkingPart(p["text"], signature=p.get("thoughtSignature")) if p.get("thought") else TextPart(p["text"])
    blob = p.get("inlineData") if isinstance(p, dict) else None
    if isinstance(blob, dict):
        mime, data = str(blob.get("mimeType") or ""), str(blob.get("data") or "")
        if mime.startswith("image/"):
            return ImagePart(media_type=mime, data_chars=len(data))
        left["inlineData part(s) that are not images: kept as a placeholder line, their token cost unknown"] += 1
        return TextPart(f"[inlineData {mime}, {len(data)} base64 characters]")
    if isinstance(p, dict) and isinstance(p.get("fileData"), dict):
        left["fileData part(s) (a file by URI): kept as a placeholder line, their token cost unknown"] += 1
        return TextPart(f"[fileData {p['fileData'].get('mimeType', '')} {p['fileData'].get('fileUri', '')}]")
    left["part(s) of an unmodelled kind: kept as their JSON text"] += 1
    return TextPart(unknown_block_text(p))


def _response(result: Any, left: Counter[str]) -> tuple[tuple[Part, ...], bool]:
    """A call's ``result`` (a string, or ``functionResponse`` parts and the parts sent beside them) → the
    tool message's parts and whether the response is an error."""
    if isinstance(result, str):
        return (TextPart(result),), False
    parts: list[Part] = []
    error = False
    for p in result if isinstance(result, list) else [result]:
        fr = p.get("functionResponse") if isinstance(p, dict) else None
        if not isinstance(fr, dict):
            parts.append(_part(p, left))
            continue
        resp = fr.get("response")
        key, value = next(iter(resp.items())) if isinstance(resp, dict) and len(resp) == 1 else (None, None)
        plain = key in ("output", "error") and isinstance(value, str)
        parts.append(TextPart(value if plain else unknown_block_text(resp)))
        error |= isinstance(resp, dict) and "error" in resp
        parts += [_part(q, left) for q in (fr.get("parts") if isinstance(fr.get("parts"), list) else [])]
    return tuple(parts) or (TextPart(""),), error


def _call(c: _Call) -> ToolCallPart:
    return ToolCallPart(c.id, c.name, canonical_arguments(c.args if c.args is not None else {}))


def _assistant_parts(rec: Record, raw: list[Any], left: Counter[str]) -> list[Part]:
    """A ``gemini`` record's parts: from ``content`` when it holds calls or thoughts (newer records), else
    rebuilt from ``thoughts``, the text and ``toolCalls`` — as ``convertSessionToClientHistory`` does."""
    calls = rec.toolCalls or []
    if not any(isinstance(p, dict) and ("functionCall" in p or p.get("thought")) for p in raw):
        return ([ThinkingPart(f"**{t.subject}** {t.description}" if t.subject else t.description)
                 for t in rec.thoughts or []] + [_part(p, left) for p in raw] + [_call(c) for c in calls])
    parts: list[Part] = []
    unused = list(calls)  # a functionCall without an id takes the next call record of its name
    for k, p in enumerate(raw):
        fc = p.get("functionCall") if isinstance(p, dict) else None
        if not isinstance(fc, dict):
            parts.append(_part(p, left))
            continue
        match = next((c for c in unused if c.id == fc.get("id") or (not fc.get("id") and c.name == fc.get("name"))),
                     None)
        unused = [c for c in unused if c is not match]
        parts.append(ToolCallPart(str(fc.get("id") or (match.id if match else f"{rec.id}:{k}")),
                                  str(fc.get("name", "")), canonical_arguments(fc.get("args") or {})))
    return parts + [_call(c) for c in unused]  # a call record the content does not show


def to_items(slots: list[str | Entry], recs: dict[str, tuple[Record, int]], file: str,
             left: Counter[str]) -> list[Item]:
    """The folded records (ids in order, compaction entries among them) → messages and entries.
    What is left out or approximated is counted in ``left``."""
    items: list[Item] = []
    answered: set[str] = set()  # call ids whose result is already a tool message
    model: str | None = None
    last_total: int | None = None  # the newest call's total tokens: a compaction's tokens_before
    first_unknown: dict[str, int] = {}  # a record type ctxlab does not know -> its first line
    for slot in slots:
        if isinstance(slot, Entry):
            items.append(Entry(slot.kind, slot.id, {**slot.data, "tokens_before": last_total}, source=slot.source))
            continue
        rec, line = recs[slot]
        meta: dict[str, Any] = dict(timestamp=rec.timestamp, source=SourceRef(file, line))
        raw = raw_parts(rec.content)
        if rec.type == "gemini":
            if rec.model and model and rec.model != model:
                items.append(Entry("model_change", f"{rec.id}:model", {"provider": PROVIDER, "model": rec.model},
                                   rec.timestamp, source=meta["source"]))
            model = rec.model or model
            parts = _assistant_parts(rec, raw, left)
            if not parts and rec.tokens is None:
                left["empty 'gemini' record(s) (nothing said, no usage): left out"] += 1
                continue
            u = usage(rec.tokens) if rec.tokens is not None else None
            if u is not None:
                t = Tokens.model_validate(rec.tokens)
                last_total = t.total or t.input + t.output
                left["call(s) with tool-use prompt tokens (tokens.tool, kept in Usage.raw only)"] += bool(t.tool)
            items.append(Message("assistant", tuple(parts) or (TextPart(""),), rec.id, model=model,
                                 provider=PROVIDER, usage=u, **meta))
            for c in rec.toolCalls or []:
                if c.result is None:
                    left["tool call(s) recorded without a result"] += 1
                    continue
                body, error = _response(c.result, left)
                answered.add(c.id)
                items.append(Message("tool", body, f"{rec.id}:{c.id}", tool_call_id=c.id, tool_name=c.name,
                                     is_error=error or c.status in ("error", "cancelled"), **meta))
        elif rec.type == "user" and any(_is_response(p) for p in raw):
            groups: list[list[Any]] = []  # a response and the parts after it; parts before the first join it
            for p in raw:
                if not groups or (_is_response(p) and any(_is_response(q) for q in groups[-1])):
                    groups.append([])
                groups[-1].append(p)
            for k, group in enumerate(groups):
                fr = next((p["functionResponse"] for p in group if _is_response(p)), {})
                fr = fr if isinstance(fr, dict) else {}
                cid = str(fr.get("id") or f"{rec.id}:{k}")
                if cid in answered:
                    left["tool response(s) recorded again as a user record (read once, from the call's result)"] += 1
                    continue
                body, error = _response(group, left)
                answered.add(cid)
                items.append(Message("tool", body, f"{rec.id}:{k}", tool_call_id=cid,
                                     tool_name=str(fr.get("name") or "") or None, is_error=error, **meta))
        elif rec.type == "user" or (rec.type == "info" and isinstance(rec.content, list)):
            if not raw:
                left["empty 'user' record(s): left out"] += 1
                continue
            text = text_of(rec.content).strip()
            made = rec.type == "info" or text.startswith(CLI_TURNS) or text == CONTINUE
            items.append(Message("user", tuple(_part(p, left) for p in raw), rec.id,
                                 origin="system" if made else None, **meta))
        else:
            what = "UI messages Gemini CLI never sends" if rec.type in UI_TYPES else \
                f"of an unknown type (first at line {first_unknown.setdefault(rec.type, line)})"
            left[f"'{rec.type}' record(s): {what}: left out"] += 1
    return items
