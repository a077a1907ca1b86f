"""Reader for OpenAI Codex CLI / Codex Desktop rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Each line is a ``RolloutLine``: ``{"timestamp", "type", "payload"}``, ``type`` one of the
``RolloutItem`` variants. Sources (openai/codex, read through the code index 2026-12-01; the index
holds several versions of each file): ``codex-rs/protocol/src/protocol.rs`` (``RolloutLine``,
``RolloutItem``, ``SessionMeta`` with ``dynamic_tools``, ``CompactedItem``, ``TurnContextItem``,
``TokenCountEvent``, ``TokenUsageInfo``, ``TokenUsage``, ``UserMessageEvent``, ``InputMessageKind``),
``codex-rs/protocol/src/models.rs`` (``ResponseItem``, incl. ``Compaction``), ``dynamic_tools.rs``
(``DynamicToolSpec``: ``name``, ``description``, ``inputSchema``, ``deferLoading`` /
``exposeToContext``), ``codex-rs/core/src/rollout/replay.rs`` (6b04272: how a rollout is replayed into
a history), ``core/src/compact.rs`` / ``compact_remote.rs`` (what a compaction writes, and the
token-count estimate ``recompute_token_usage`` emits after it):

* ``session_meta`` — ``id``, ``model_provider``, ``base_instructions.text`` (the system prompt; older
  rollouts do not record it: ``system=()``), ``dynamic_tools`` (the tools a client declared: the
  ``tools``; Codex's built-in tool definitions are never recorded — noted);
* ``response_item`` — a Responses API item, read by :class:`.responses_items.ItemReader`: the
  model-output items of one model call (messages, reasoning — ``encrypted_content`` alone becomes a
  redacted ThinkingPart —, ``function_call``, ``custom_tool_call`` such as apply_patch, hosted
  ``web_search_call`` kept as JSON text: its result is not in the file) become one ``assistant``
  message; each ``*_output`` a ``tool`` message. User messages wholly wrapped in
  ``<environment_context>`` or ``<user_instructions>`` are Codex's own (``origin="system"``);
* ``event_msg/user_message`` — the UI copy of a prompt, left out when a ``response_item`` of the same
  turn holds it; read as the prompt when none does (some Codex Desktop releases wrote only the event);
* ``turn_context`` — ``model`` for the following assistant messages; a change is a ``model_change`` entry;
* ``event_msg/token_count`` — ``info.last_token_usage`` is one model call's usage (``input_tokens``
  includes ``cached_input_tokens`` and, in GPT-5.6-era builds, ``cache_write_input_tokens``: the
  ``TokenUsage`` of ``protocol.rs`` at 001cb8e2 has no write field and openai/codex#32479 (2026-07-11,
  codex-cli 0.144.1) reported the write dropped; the rollout line quoted in ccusage/ccusage#1617
  (@openai/codex-sdk 0.148.0, 2026-08-20) records ``cache_write_input_tokens`` beside
  ``cached_input_tokens``, and agentclientprotocol/codex-acp#509 says Codex "reports inputTokens inclusive of both cache
  reads and cache writes"; ``cache_write_tokens`` is read as the same; ``output_tokens`` includes
  ``reasoning_output_tokens``). A call's model-output items are those
  between two token counts (tool outputs may sit among them). Releases differ in where the count
  falls — after the call's items (recent ones) or before them (e.g. 0.46; see the 0.46.0 rollout
  quoted in jnarowski/agentcmd ``.agent/research/codex/format-comparison.md``) — so the first count
  with usage tells which. A count repeating the previous cumulative ``total_token_usage``, one with
  ``info: null``, and Codex's estimate of the history (input and output 0, ``total_tokens`` set) are
  not attached to a call: counted in the notes (the estimate after a compaction is its ``tokens_after``);
* ``compacted`` — a ``compaction`` entry (``summary`` = ``message``, empty for a remote compaction;
  ``tokens_before`` = the last call's ``total_tokens``; ``first_kept_id=None``): its
  ``replacement_history`` IS the history from then on (:mod:`.codex_history`): earlier messages it
  sends again are ``pinned_ids``, the rest follow the entry with ``origin="compact_summary"``;
  without one, Codex's rebuild is followed (initial context + newest prompts + summary).

Simplified on purpose: Codex puts the re-sent messages before the summary, ctxlab's compacted view
after it; an encrypted compaction summary counts 0 tokens; a rollback (``thread_rolled_back``) is
noted, the dropped turns kept. The pre-``payload`` rollout layout (bare items per line) is not read.
Plumbing for chapter 02.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ctxlab.base.errors import TranscriptError
from ctxlab.messages import Entry, Message, SourceRef, ToolSpec, Transcript, Usage
from ctxlab.io.formats import LeftOut, TokenCount, bad, check, head_objects, iter_jsonl, skip_note
from ctxlab.io.formats.codex_history import DynamicTool, echoed, item_notes, prompt_item, rebuilt, replacement, tool_specs
from ctxlab.io.formats.responses_items import ItemReader, usage

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
    dynamic_tools: list[dict[str, Any]] | None = None


class _TurnContext(BaseModel):
    model: str


class _TokenUsage(BaseModel):
    input_tokens: TokenCount
    cached_input_tokens: TokenCount = 0
    cache_write_input_tokens: TokenCount | None = None  # recorded from ~0.148: part of input_tokens
    cache_write_tokens: TokenCount | None = None  # the same, as some builds write it
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


def _call_usage(payload: dict[str, Any], last: _TokenUsage, *, file: str, line: int) -> Usage:
    """``last_token_usage`` → Usage: :func:`.responses_items.usage` reads the cache read and write, both part of
    ``input_tokens``."""
    return usage(payload["info"]["last_token_usage"], file=file, line=line, at="payload.info.last_token_usage")


# the rollout line types of codex-rs/protocol/src/protocol.rs (RolloutItem); others are counted in the notes
_LINE_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})


def read(path: Path, *, strict: bool = True) -> Transcript:
    """Read a Codex rollout into one Conversation (see the module docstring)."""
    file, skipped, notes = path.name, [], []
    rows = list(iter_jsonl(path, strict=strict, notes=skipped, once=True))
    order = _usage_order(rows)
    # with token counts, a call's items are those between two counts (tool outputs may sit among them)
    reader = ItemReader(path.stem, file, provider="openai", user_origin=_origin, end_on_output=order is None)
    system: tuple[str, ...] = ()
    tools: tuple[ToolSpec, ...] = ()
    left_out = LeftOut()  # lines never sent, by kind, with the first line of those left out by their type
    last_total: dict[str, Any] | None = None  # the newest cumulative total_token_usage
    tokens_before: int | None = None  # total_tokens of the newest call: the context size then
    compaction: int | None = None  # index in reader.items of the newest compaction entry
    prompts = 0  # user prompts read from event_msg/user_message alone
    for k, (line, index, obj) in enumerate(rows):
        try:
            rec = check(_Line, obj, file=file, line=line)
            payload, kind, src = rec.payload, rec.type, SourceRef(file, line)
            if kind not in _LINE_TYPES and isinstance(payload, dict) and ("role" in payload or "call_id" in payload):
                raise bad(file, line, f"unknown line type {kind!r} on a line that holds a model item (Codex writes "
                                      f"{', '.join(sorted(_LINE_TYPES))})", field="type")
            if kind == "session_meta":
                meta = check(_Meta, payload, file=file, line=line, at="payload")
                reader.conv_id = meta.id or reader.conv_id
                reader.provider = meta.model_provider or reader.provider
                base = meta.base_instructions
                text = base.get("text") if isinstance(base, dict) else base
                system = (text,) if isinstance(text, str) and text else system
                for j, raw in enumerate(meta.dynamic_tools or []):
                    check(DynamicTool, raw, file=file, line=line, at=f"payload.dynamic_tools[{j}]")
                tools = tool_specs(meta.dynamic_tools, notes) if meta.dynamic_tools else tools
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
            elif kind == "event_msg" and payload.get("type") == "user_message":
                if not isinstance(payload.get("message"), str):
                    raise bad(file, line, "a user_message event needs the prompt text", field="payload.message")
                if echoed(rows, k):
                    left_out["event_msg/user_message (a copy of the prompt's response item)"] += 1
                    continue
                reader.add(prompt_item(payload), index=index, line=line, at="payload", timestamp=rec.timestamp)
                prompts += 1
            elif kind == "event_msg" and payload.get("type") == "token_count":
                if payload.get("info") is None:  # rate limits only
                    left_out["event_msg/token_count without usage"] += 1
                    continue
                info = check(_TokenInfo, payload["info"], file=file, line=line, at="payload.info")
                last = info.last_token_usage
                if last.input_tokens == last.output_tokens == 0 and last.total_tokens > 0:  # Codex's own estimate
                    if compaction is not None and "tokens_after" not in reader.items[compaction].data:
                        entry = reader.items[compaction]
                        reader.items[compaction] = replace(entry, data={**entry.data, "tokens_after": last.total_tokens})
                    left_out["event_msg/token_count estimating the history (no model call)"] += 1
                    continue
                if info.total_token_usage is not None and info.total_token_usage == last_total:
                    left_out["event_msg/token_count repeated (same totals)"] += 1
                    continue
                last_total = info.total_token_usage
                u = _call_usage(payload, last, file=file, line=line)
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
                compaction = _compacted(reader, comp, index=index, line=line, timestamp=rec.timestamp,
                                        tokens_before=tokens_before, system=system, notes=notes)
            else:
                sub = payload.get("type") if kind == "event_msg" else None
                if sub == "thread_rolled_back":
                    notes.append(f"line {line}: the user rolled back {payload.get('num_turns')} turn(s): Codex drops "
                                 "them from the history from here on; ctxlab keeps every message in line order")
                left_out.add(f"event_msg/{sub}" if kind == "event_msg" else str(kind), line)
        except TranscriptError as err:
            if strict:
                raise
            skipped.append(skip_note(err))
    if reader.pending_usage is not None:
        left_out["event_msg/token_count of a call whose items were not recorded"] += 1
    if order == "before":
        notes.append("token counts precede their call's items in this rollout: each is paired with the items after it")
    if not tools:
        notes.append("Codex's tool definitions are not in the rollout (tools=())")
    if prompts:
        notes.append(f"{prompts} user prompt(s) read from event_msg/user_message lines: no response item holds them")
    notes += item_notes(rows)
    notes += left_out.notes("not part of the model's context")
    conv = reader.conversation(tools=tools, instructions=system, extra_notes=skipped + notes)
    return Transcript(format=NAME, file=file, conversations=(conv,), notes=tuple(skipped))


def _compacted(reader: ItemReader, comp: _Compacted, *, index: int, line: int, timestamp: str | None,
               tokens_before: int | None, system: tuple[str, ...], notes: list[str]) -> int:
    """A ``compacted`` line → its entry (and the replacement items found nowhere earlier, after it);
    returns the entry's index in ``reader.items``."""
    data: dict[str, Any] = {"summary": comp.message, "first_kept_id": None, "tokens_before": tokens_before,
                            "origin": "recorded"}
    extra: list[Message] = []
    if comp.replacement_history is None:
        data["pinned_ids"], how = rebuilt(reader)
        notes.append(f"line {line}: compaction without a replacement history: {how}")
    else:
        data["pinned_ids"], extra, counts = replacement(reader, comp.replacement_history, summary=comp.message,
                                                        system=system, index=index, line=line, timestamp=timestamp,
                                                        notes=notes)
        said = ", ".join(f"{n} {what}" for what, n in counts.items() if n)
        notes.append(f"line {line}: compaction: its replacement history ({len(comp.replacement_history)} item(s)) is "
                     f"the history from here on: {said or 'empty'}")
    reader.add_entry(Entry("compaction", f"{reader.conv_id}:{index}", data, timestamp, source=SourceRef(reader.file, line)))
    at = len(reader.items) - 1
    reader.items.extend(extra)
    return at
