"""The model calls an OpenHands V1 event log records, and the assistant message each belongs to.

Where the SDK (OpenHands/software-agent-sdk at 611629e6999ad398dc49c761721eefe18d5e6bd9, read
2026-12-01) puts usage in the event stream:

* ``ConversationStateUpdateEvent`` with ``key="stats"`` — the agent server emits one after every
  model call (``Telemetry.on_response`` → the stats callback of ``agent_server/event_service.py``),
  and ``key="full_state"`` holds the same under ``value.stats``: ``usage_to_metrics``, one
  ``Metrics`` per LLM usage id (``default``/``agent``, ``condenser``, ...). Since 2025-12-04 (#1308)
  these are ``MetricsSnapshot`` s: ``model_name``, ``accumulated_cost`` and
  ``accumulated_token_usage`` only, no per-call list and no response id. One call's usage is then
  the difference from the previous snapshot of its usage id, checked against the snapshot's
  ``per_turn_token`` (= the last call's prompt + completion, ``Metrics.add_token_usage``); it goes on
  the next assistant message, which the call produced. A call with no assistant message before the
  next snapshot (a condenser's, a title's, or one whose events are missing) is counted, not attached.
* Before that, the dump was the whole ``Metrics``: ``token_usages`` list each call with its
  ``response_id`` — matched to ``ActionEvent.llm_response_id`` / ``MessageEvent.llm_response_id``.
* ``LLMCompletionLogEvent.log_data`` (``log_completions`` on a remote conversation) is the
  call's logged request and ``response`` (litellm's, with ``id`` and ``usage``): matched by id too.

``TokenUsage.prompt_tokens`` includes the cache (``Telemetry._record_usage``: read =
``prompt_tokens_details.cached_tokens``, write = litellm's cache creation), so uncached = prompt
- read - write. Costs stay in ``raw``. A local conversation without the agent server records no
stats events: its usage is only in ``base_state.json``, beside the events, which is not read.
Plumbing for chapter 02.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from typing import Any

from pydantic import BaseModel

from ctxlab.messages import Item, Message, Usage
from ctxlab.io.formats import TokenCount, check
from ctxlab.io.formats.openhands import response_usage

_FIELDS = ("prompt_tokens", "completion_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")


class TokenUsage(BaseModel):
    """``TokenUsage`` (``llm/utils/metrics.py``): accumulated, or one call's in ``token_usages``."""

    model: str = ""
    prompt_tokens: TokenCount = 0
    completion_tokens: TokenCount = 0
    cache_read_tokens: TokenCount = 0
    cache_write_tokens: TokenCount = 0
    reasoning_tokens: TokenCount = 0
    per_turn_token: TokenCount = 0
    response_id: str = ""


def token_usage(raw: dict[str, Any]) -> Usage:
    """A TokenUsage dict → neutral fields. ``{"prompt_tokens": 100, "cache_read_tokens": 60,
    "completion_tokens": 5}`` → ``Usage(uncached_input_tokens=40, cache_read_tokens=60, output_tokens=5)``."""
    u = TokenUsage.model_validate(raw)
    return Usage(uncached_input_tokens=max(0, u.prompt_tokens - u.cache_read_tokens - u.cache_write_tokens),
                 cache_read_tokens=u.cache_read_tokens, cache_write_tokens=u.cache_write_tokens,
                 output_tokens=u.completion_tokens, raw=raw)


class Calls:
    """Collects the calls of one log in order; :meth:`attach` puts them on the messages."""

    def __init__(self, file: str, notes: Counter[str]) -> None:
        self.file, self.notes = file, notes
        self.by_response: dict[str, tuple[Usage, str]] = {}  # response id -> (usage, model)
        self.last: dict[str, TokenUsage] = {}  # usage id -> its previous snapshot
        self.pending: list[tuple[Usage, str]] = []  # calls waiting for the message they made
        self.by_message: dict[str, tuple[Usage, str]] = {}  # message id -> (usage, model)
        self.lost = 0  # calls from snapshots that made no assistant message

    def snapshot(self, stats: dict[str, Any], *, line: int, at: str) -> None:
        """One ``ConversationStats`` dump (see the module docstring)."""
        per_usage = stats.get("usage_to_metrics")
        for uid, m in (per_usage if isinstance(per_usage, dict) else {}).items():
            m = m if isinstance(m, dict) else {}
            where, model = f"{at}.usage_to_metrics.{uid}", str(m.get("model_name") or "")
            listed = m.get("token_usages") if isinstance(m.get("token_usages"), list) else []
            for k, raw in enumerate(listed):
                u = check(TokenUsage, raw, file=self.file, line=line, at=f"{where}.token_usages[{k}]")
                if u.response_id:
                    self.by_response[u.response_id] = (token_usage(raw), u.model or model)
            acc = check(TokenUsage, m.get("accumulated_token_usage") or {}, file=self.file, line=line,
                        at=f"{where}.accumulated_token_usage")
            prev, self.last[uid] = self.last.get(uid, TokenUsage()), acc
            delta = {f: getattr(acc, f) - getattr(prev, f) for f in _FIELDS}
            if listed or not any(delta.values()):
                continue
            if min(delta.values()) < 0 or acc.per_turn_token != delta["prompt_tokens"] + delta["completion_tokens"]:
                self.notes["usage snapshot(s) that are not one call after the previous one: not attributed"] += 1
                continue
            raw = {**delta, "usage_id": uid, "accumulated_token_usage": m["accumulated_token_usage"]}
            self.pending.append((token_usage(raw), acc.model or model))

    def completion_log(self, obj: dict[str, Any], *, line: int) -> None:
        """An ``LLMCompletionLogEvent``: its response's usage, by response id."""
        try:
            response = json.loads(str(obj.get("log_data") or "")).get("response")
        except (ValueError, AttributeError):
            response = None
        if isinstance(response, dict) and isinstance(response.get("id"), str) and response.get("usage") is not None:
            used = response_usage(response["usage"], file=self.file, line=line, at="log_data.response.usage")
            self.by_response[response["id"]] = (used, str(response.get("model") or obj.get("model_name") or ""))

    def made(self, message_id: str) -> None:
        """An assistant message begins: the newest waiting call made it."""
        if self.pending:
            self.by_message[message_id] = self.pending.pop()
            self.consumed()

    def consumed(self) -> None:
        """Calls still waiting belong to no message (a condensation: the condenser's call)."""
        self.lost += len(self.pending)
        self.pending.clear()

    def attach(self, items: list[Item], model: str | None) -> tuple[list[Item], str | None, list[str]]:
        """Items with usage and model set, the conversation's model, and the notes on what matched."""
        exact = bool(self.by_response)
        source = self.by_response if exact else self.by_message
        out, attached = [], 0
        found = [source.get(str(m.response_id if exact else m.id)) for m in items
                 if isinstance(m, Message) and m.role == "assistant"]
        model = next((said for _, said in filter(None, found) if said), model)
        for item in items:
            if isinstance(item, Message) and item.role == "assistant":
                used, said = source.pop(str(item.response_id if exact else item.id), (None, ""))
                attached += used is not None
                item = replace(item, usage=used, model=said or model)
            out.append(item)
        lost = len(source) + (0 if exact else self.lost + len(self.pending))
        notes = [f"{lost} of {attached + lost} recorded model call(s) match no assistant message"] if lost else []
        return out, model, notes + ([] if attached or lost else ["no usage recorded in the event log"])
