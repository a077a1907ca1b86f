"""Reader for OpenAI Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Each line is a ``RolloutLine``: ``{"timestamp", "type", "payload"}``, ``type`` one of the
``RolloutItem`` variants. Field names from openai/codex ``codex-rs/protocol/src/protocol.rs``
(``RolloutLine``, ``RolloutItem``, ``SessionMeta``, ``CompactedItem``, ``TurnContextItem``,
``TokenCountEvent``, ``TokenUsageInfo``, ``TokenUsage``, ``InputMessageKind``) and
``codex-rs/protocol/src/models.rs`` (``ResponseItem``):

* ``session_meta`` — ``id`` (the conversation id), ``model_provider``, and in newer releases
  ``base_instructions.text`` (the system prompt; older rollouts do not record it: ``system=()``);
* ``response_item`` — a Responses API item, read by :class:`.responses_items.ItemReader`: the
  model-output items of one model call become one ``assistant`` message, each
  ``function_call_output`` / ``custom_tool_call_output`` a ``tool`` message. User messages wholly
  wrapped in ``<environment_context>`` or ``<user_instructions>`` are made by Codex (its
  ``InputMessageKind``), so they get ``origin="system"``; Codex's tool specs are not recorded
  (``tools=()``);
* ``turn_context`` — ``model`` for the following assistant messages; a change of model is a
  ``model_change`` entry;
* ``event_msg`` with ``payload.type == "token_count"`` — ``info.last_token_usage`` is the usage of
  one model call (``input_tokens`` includes ``cached_input_tokens``; ``output_tokens`` includes
  ``reasoning_output_tokens``). A call's model-output items are those between two token counts
  (tool outputs may sit among them): they become one assistant message carrying that usage.
  Releases differ in where the count falls — after the call's items (recent ones) or before them
  (e.g. 0.46, which wrote a call's items once its stream had ended: function calls and their
  outputs in pairs; see the 0.46.0 rollout quoted in jnarowski/agentcmd
  ``.agent/research/codex/format-comparison.md``) — so the first count with usage tells which (no usage exists before the first
  call ends). A count whose cumulative ``total_token_usage`` (``TokenUsageInfo.append_last_usage``) equals the previous one (Codex repeats
  it when only rate limits change), and one with ``info: null``, are not attached: counted in the
  notes, like the other events (``user_message``, ``agent_message``, ... copies for the UI);
* ``compacted`` — a recorded compaction: a ``compaction`` entry (``summary`` = ``message``,
  ``origin: "recorded"``, ``tokens_before`` = ``total_tokens`` of the last token count). Codex keeps
  no contiguous tail (``first_kept_id=None``, as for Claude Code); the earlier user messages its
  ``replacement_history`` sends again are named in ``pinned_ids`` (matched by text).

Simplified on purpose: Codex puts the re-sent user messages before the summary, ctxlab's compacted
view after it; encrypted ``compaction`` items and ghost snapshots are left out (noted). The old
pre-``payload`` rollout layout (bare items per line) is not read. Plumbing for chapter 02.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..errors import TranscriptError
from ..messages import Entry, Message, SourceRef, TextPart, Transcript
from . import TokenCount, check, head_objects, iter_jsonl, skip_note
from .responses_items import ItemReader, content_parts, usage

NAME = "codex"
LINE_TYPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
_CONTEXT_TAGS = (("<environment_context>", "</environment_context>"), ("<user_instructions>", "</user_instructions>"))


class _Line(BaseModel):
    timestamp: str | None = None
    type: str
    payload: dict[str, Any]


class _Meta(BaseModel):
    id: str | None = None
    model_provider: str | None = None
    base_instructions: dict[str, Any] | str | None = None


class _TurnContext(BaseModel):
    model: str


class _TokenUsage(BaseModel):
    input_tokens: TokenCount
    cached_input_tokens: TokenCount = 0
    output_tokens: TokenCount
    reasoning_output_tokens: TokenCount = 0
    total_tokens: TokenCount = 0


class _TokenInfo(BaseModel):
    last_token_usage: _TokenUsage
    total_token_usage: dict[str, Any] | None = None


class _Compacted(BaseModel):
    message: str
    replacement_history: list[Any] | None = None


def sniff(path: Path, head: str) -> bool:
    objs = head_objects(head, 3)
    if objs:
        first = objs[0]
        return first.get("type") in LINE_TYPES and isinstance(first.get("payload"), dict) and "timestamp" in first
    # the first line (session_meta with its base instructions) may be longer than the head
    return re.match(r'\{\s*"timestamp"\s*:\s*"[^"]*"\s*,\s*"type"\s*:\s*"(' + "|".join(LINE_TYPES) + ')"',
                    head.lstrip()) is not None


def _origin(text: str) -> str | None:
    """Codex's own context messages (``InputMessageKind`` other than ``Plain``) → ``"system"``."""
    stripped = text.strip().lower()
    return "system" if any(stripped.startswith(a) and stripped.endswith(b) for a, b in _CONTEXT_TAGS) else None


def _pinned(reader: ItemReader, history: list[Any] | None, notes: list[str], line: int) -> list[str]:
    """Ids of earlier user messages the replacement history sends again (newest match by text)."""
    if not history:
        return []
    texts = ["\n".join(p.text for p in content_parts(h.get("content"), notes, f"line {line}") if isinstance(p, TextPart))
             for h in history if isinstance(h, dict) and h.get("role") == "user"]
    users = [m for m in reader.items if isinstance(m, Message) and m.role == "user"]
    pinned: list[str] = []
    for text in texts:
        match = next((m.id for m in reversed(users) if m.text == text and m.id not in pinned), None)
        if match:
            pinned.append(match)
    pinned.sort(key=[m.id for m in users].index)
    notes.append(f"line {line}: compaction re-sends {len(pinned)} earlier user message(s) "
                 f"({len(texts) - len(pinned)} user item(s) of its replacement history match none)")
    return pinned


def _usage_order(rows: list[tuple[int, int, dict[str, Any]]]) -> str | None:
    """``"after"`` when a model call's token count follows its items (recent Codex releases),
    ``"before"`` when it precedes them (releases that recorded a call's items once its stream had
    ended, e.g. 0.46), ``None`` when the file has no token count. Told by the first token count that
    carries usage: no usage exists before the first call ends."""
    for _, _, obj in rows:
        payload = obj.get("payload") if isinstance(obj.get("payload"), dict) else {}
        kind = str(payload.get("type", ""))
        if obj.get("type") == "response_item" and (payload.get("role") == "assistant" or kind == "reasoning"
                                                    or kind.endswith("_call")):
            break
        if obj.get("type") == "event_msg" and payload.get("type") == "token_count" and payload.get("info"):
            return "before"
    return "after" if any(o.get("type") == "event_msg" and isinstance(o.get("payload"), dict)
                          and o["payload"].get("type") == "token_count" and o["payload"].get("info")
                          for _, _, o in rows) else None


def read(path: Path, *, strict: bool = True) -> Transcript:
    file, skipped, notes = path.name, [], []
    rows = list(iter_jsonl(path, strict=strict, notes=skipped))
    order = _usage_order(rows)
    # with token counts, a call's items are those between two counts (tool outputs may sit among them)
    reader = ItemReader(path.stem, file, provider="openai", user_origin=_origin, end_on_output=order is None)
    system: tuple[str, ...] = ()
    left_out: Counter[str] = Counter()
    last_total: dict[str, Any] | None = None  # the newest cumulative total_token_usage
    tokens_before: int | None = None  # total_tokens of the newest call: the context size then
    for line, index, obj in rows:
        try:
            rec = check(_Line, obj, file=file, line=line)
            payload, kind, src = rec.payload, rec.type, SourceRef(file, line)
            if kind == "session_meta":
                meta = check(_Meta, payload, file=file, line=line, at="payload")
                reader.conv_id = meta.id or reader.conv_id
                reader.provider = meta.model_provider or reader.provider
                base = meta.base_instructions
                text = base.get("text") if isinstance(base, dict) else base
                system = (text,) if isinstance(text, str) and text else system
            elif kind == "turn_context":
                model = check(_TurnContext, payload, file=file, line=line, at="payload").model
                if reader.model is not None and model != reader.model:
                    reader.add_entry(Entry("model_change", f"{reader.conv_id}:{index}",
                                           {"provider": reader.provider, "model": model}, rec.timestamp, source=src))
                reader.model = model
            elif kind == "response_item":
                if payload.get("role") == "user" and reader.pending_usage is not None:
                    left_out["event_msg/token_count of a call whose items were not recorded"] += 1
                    reader.pending_usage = None
                reader.add(payload, index=index, line=line, at="payload", timestamp=rec.timestamp)
            elif kind == "event_msg" and payload.get("type") == "token_count":
                if payload.get("info") is None:  # rate limits only
                    left_out["event_msg/token_count without usage"] += 1
                    continue
                info = check(_TokenInfo, payload["info"], file=file, line=line, at="payload.info")
                if info.total_token_usage is not None and info.total_token_usage == last_total:
                    left_out["event_msg/token_count repeated (same totals)"] += 1
                    continue
                last_total = info.total_token_usage
                last = info.last_token_usage
                u = usage(payload["info"]["last_token_usage"], file=file, line=line, at="payload.info.last_token_usage")
                tokens_before = last.total_tokens or last.input_tokens + last.output_tokens
                if order == "after" and not reader.set_usage(u):
                    left_out["event_msg/token_count with no model output before it"] += 1
                elif order == "before":
                    reader.close()
                    if reader.pending_usage is not None:
                        left_out["event_msg/token_count of a call whose items were not recorded"] += 1
                    reader.pending_usage = u
            elif kind == "compacted":
                comp = check(_Compacted, payload, file=file, line=line, at="payload")
                data = {"summary": comp.message, "first_kept_id": None, "tokens_before": tokens_before,
                        "origin": "recorded", "pinned_ids": _pinned(reader, comp.replacement_history, notes, line)}
                reader.add_entry(Entry("compaction", f"{reader.conv_id}:{index}", data, rec.timestamp, source=src))
            else:
                left_out[f"event_msg/{payload.get('type')}" if kind == "event_msg" else str(kind)] += 1
        except TranscriptError as err:
            if strict:
                raise
            skipped.append(skip_note(err))
    if reader.pending_usage is not None:
        left_out["event_msg/token_count of a call whose items were not recorded"] += 1
    if order == "before":
        notes.append("token counts precede their call's items in this rollout: each is paired with the items after it")
    notes += [f"left out {n} '{k}' line(s): not part of the model's context" for k, n in left_out.items()]
    conv = reader.conversation(instructions=system, extra_notes=skipped + notes)
    return Transcript(format=NAME, file=file, conversations=(conv,), notes=tuple(skipped))
