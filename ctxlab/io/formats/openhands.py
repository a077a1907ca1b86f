"""Reader for OpenHands evaluation output (JSON Lines: one task instance and its event stream per line).

Each line is one conversation (id = ``instance_id``); its ``history`` is OpenHands' event stream,
mapped to messages by :func:`.openhands_memory.map_events` — the mapping OpenHands'
``ConversationMemory.process_events`` (``openhands/memory/conversation_memory.py``) applies before
each model call, shared with the saved-trajectory reader (:mod:`.openhands_events`); its module
docstring lists what each event becomes. What this reader adds:

* ``recall`` observations (workspace context, microagent knowledge) reach the model only when
  ``enable_prompt_extensions`` is on, and the evaluation harnesses (``evaluation/benchmarks/*/
  run_infer.py``) switch it off without recording so: ``origin="system"`` (sent) when
  ``metadata.agent_config.enable_prompt_extensions`` is true, else ``origin="meta"`` (never sent);
* message ids are ``{instance_id}:{event id}``; every item's source line is its instance's line;
* the model is ``metadata.llm_config.model``.

Usage: ``metrics.token_usages`` entries are matched to assistant messages by ``response_id``.
OpenHands (``openhands/llm/llm.py``, ``_post_completion``) records litellm's OpenAI-shaped usage,
whose ``prompt_tokens`` **includes** cached tokens
(``cache_read_tokens`` = ``prompt_tokens_details.cached_tokens``, ``cache_write_tokens`` =
Anthropic's cache creation), so ``uncached_input_tokens = prompt - cache_read - cache_write`` (never
below 0; some litellm releases left Anthropic cache writes out of ``prompt_tokens``, in which case
this undercounts by the writes). :func:`response_usage` reads one model response's own ``usage`` the
same way (the trajectory and V1 readers use it).

Simplified on purpose: see :mod:`.openhands_memory` (command-output suffix lines, a condensation's
kept head). Plumbing for chapter 02.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ctxlab.base.errors import TranscriptError
from ctxlab.messages import Conversation, Item, Message, Transcript, Usage
from ctxlab.io.formats import TokenCount, check, head_objects, iter_jsonl, skip_note
from ctxlab.io.formats.openhands_memory import map_events

NAME = "openhands"


class _Instance(BaseModel):
    instance_id: str | int
    history: list[Any]
    metadata: dict[str, Any] | None = None
    metrics: dict[str, Any] | None = None


class _TokenUsage(BaseModel):
    prompt_tokens: TokenCount = 0
    completion_tokens: TokenCount = 0
    cache_read_tokens: TokenCount = 0
    cache_write_tokens: TokenCount = 0
    response_id: str = ""


def sniff(path: Path, head: str) -> bool:
    if any("instance_id" in o and "history" in o for o in head_objects(head, 3)):
        return True
    # a line is often longer than the head: fall back on the first key (EvalOutput dumps instance_id first)
    return re.match(r'\{\s*"instance_id"\s*:', head.lstrip()) is not None and '"history"' in head


def usage(raw: dict[str, Any]) -> Usage:
    """One ``token_usages`` entry → neutral fields. ``{"prompt_tokens": 1000, "cache_read_tokens": 800,
    "completion_tokens": 5}`` → ``Usage(uncached_input_tokens=200, cache_read_tokens=800, output_tokens=5)``."""
    u = _TokenUsage.model_validate(raw)
    return Usage(uncached_input_tokens=max(0, u.prompt_tokens - u.cache_read_tokens - u.cache_write_tokens),
                 cache_read_tokens=u.cache_read_tokens, cache_write_tokens=u.cache_write_tokens,
                 output_tokens=u.completion_tokens, raw=raw)


def read(path: Path, *, strict: bool = True) -> Transcript:
    file, skipped = path.name, []
    convs = []
    for line, _, obj in iter_jsonl(path, strict=strict, notes=skipped):
        try:
            convs.append(_instance(obj, file=file, line=line, strict=strict, skipped=skipped))
        except TranscriptError as err:
            if strict:
                raise
            skipped.append(skip_note(err))
    return Transcript(format=NAME, file=file, conversations=tuple(convs), notes=tuple(skipped))


def _instance(obj: dict[str, Any], *, file: str, line: int, strict: bool, skipped: list[str]) -> Conversation:
    inst = check(_Instance, obj, file=file, line=line)
    conv_id = str(inst.instance_id)
    model = ((inst.metadata or {}).get("llm_config") or {}).get("model")
    sent = bool(((inst.metadata or {}).get("agent_config") or {}).get("enable_prompt_extensions", False))
    got = map_events(inst.history, ids=f"{conv_id}:", file=file, line_of=lambda raw: line, at="history",
                     model=model, sent=sent, strict=strict, skipped=skipped)
    notes = got.notes
    _attach_usage(got.items, inst.metrics, file=file, line=line, strict=strict, notes=notes)
    notes += got.tail
    if got.meta_recalls:
        notes.append(f"{got.meta_recalls} recall observation(s) kept with origin 'meta': metadata.agent_config does "
                     "not enable prompt extensions (evaluation runs switch them off), so OpenHands did not send them")
    return Conversation(id=conv_id, items=tuple(got.items), system=tuple(got.system), tools=got.tools, model=model,
                        notes=tuple(notes))


def _attach_usage(items: list[Item], metrics: dict[str, Any] | None, *, file: str, line: int, strict: bool,
                  notes: list[str]) -> None:
    """Put each ``token_usages`` entry on the assistant message with its response id (in place)."""
    entries = (metrics or {}).get("token_usages") or []
    by_id: dict[str, Usage] = {}  # response id -> usage
    for k, raw in enumerate(entries):
        try:
            u = check(_TokenUsage, raw, file=file, line=line, at=f"metrics.token_usages[{k}]")
        except TranscriptError as err:
            if strict:
                raise
            notes.append(skip_note(err))
            continue
        if u.response_id:
            by_id[u.response_id] = usage(raw)
    matched = 0
    for k, item in enumerate(items):
        if isinstance(item, Message) and item.role == "assistant" and item.response_id in by_id:
            items[k] = replace(item, usage=by_id.pop(item.response_id))  # once per call, on its first message
            matched += 1
    if len(entries) > matched:
        notes.append(f"{len(entries) - matched} of {len(entries)} token_usages entries match no assistant message")


class _ResponseUsage(BaseModel):  # litellm's usage of one response: chat (prompt/completion) or Responses shape
    prompt_tokens: TokenCount | None = None
    completion_tokens: TokenCount | None = None
    input_tokens: TokenCount | None = None
    output_tokens: TokenCount | None = None
    prompt_tokens_details: dict[str, TokenCount | None] | None = None
    input_tokens_details: dict[str, TokenCount | None] | None = None
    cache_creation_input_tokens: TokenCount | None = None
    cache_read_input_tokens: TokenCount | None = None


def response_usage(raw: Any, *, file: str, line: int | None, at: str) -> Usage:
    """A model response's ``usage`` (litellm) → neutral fields, read as OpenHands' ``_post_completion``
    does: ``prompt_tokens`` includes the cache, read = ``prompt_tokens_details.cached_tokens``,
    write = ``cache_creation_input_tokens``. ``{"prompt_tokens": 3439, "completion_tokens": 104,
    "cache_creation_input_tokens": 3435}`` → ``Usage(4, 0, 3435, 104)``."""
    u = check(_ResponseUsage, raw, file=file, line=line, at=at)
    prompt = u.prompt_tokens if u.prompt_tokens is not None else u.input_tokens or 0
    output = u.completion_tokens if u.completion_tokens is not None else u.output_tokens or 0
    read = ((u.prompt_tokens_details or u.input_tokens_details or {}).get("cached_tokens")
            or u.cache_read_input_tokens or 0)
    write = u.cache_creation_input_tokens or 0
    return Usage(uncached_input_tokens=max(0, prompt - read - write), cache_read_tokens=read,
                 cache_write_tokens=write, output_tokens=output, raw=raw)
