"""Sessions for the benchmarks: the bundled sample tiled to any length, and its LangChain twin.

* :func:`sample_messages` — the bundled sample's messages (``data/sample_session.jsonl``: a synthetic
  coding-agent session with tool calls, parallel calls, a 51k-char log, Chinese, base64);
* :func:`tiled` — ``n`` messages made of copies of them, each copy with its own message ids and
  tool-call ids (so tool calls pair with their own results), as one growing agent session;
* :func:`to_langchain` / :func:`langchain_counter` — the same messages as ``langchain_core``
  messages and a LangChain ``token_counter`` that gives each message exactly the tokens ctxlab's
  :class:`~ctxlab.tokens.MessageMeter` gives it (o200k_base, same per-message overhead), so both
  libraries decide on the same numbers.

Tiling repeats texts. Neither side caches counts by text (ctxlab caches by message identity,
tiktoken not at all), so repetition flatters neither; each copy is a new object.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any, Sequence

from ctxlab.messages import Conversation, Message, TextPart, ToolCallPart
from ctxlab.tables.profiles import ModelProfile, profile_for
from ctxlab.tokens import TiktokenCounter
from ctxlab.lab.workbook import load_workbook_conversation

MODEL = "gpt-4o"  # exact o200k counts (calibration 1.0); earlier reasoning is never sent back


def profile() -> ModelProfile:
    return profile_for(MODEL, "openai")


@lru_cache(maxsize=1)
def sample() -> Conversation:
    return load_workbook_conversation()


def sample_messages() -> tuple[Message, ...]:
    return tuple(m for m in sample().messages if m.origin != "meta")


def _later(stamp: str | None, days: int) -> str | None:
    if not stamp:
        return stamp
    when = datetime.fromisoformat(stamp.replace("Z", "+00:00")) + timedelta(days=days)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _copy(msg: Message, k: int) -> Message:
    """A copy of ``msg`` for tile ``k``: its own id, its own tool-call ids, and ``k`` days later."""
    parts = tuple(dataclasses.replace(p, id=f"{p.id}~{k}") if isinstance(p, ToolCallPart) else p for p in msg.parts)
    return dataclasses.replace(msg, id=f"{msg.id}~{k}", parts=parts, timestamp=_later(msg.timestamp, k),
                               tool_call_id=f"{msg.tool_call_id}~{k}" if msg.tool_call_id else None)


def tiled(n: int) -> list[Message]:
    """``n`` messages: copies of the sample's messages, one copy after another (the last copy cut short,
    after a whole round so no tool call waits for its result)."""
    base = sample_messages()
    out: list[Message] = []
    k = 0
    while len(out) < n:
        out += [_copy(m, k) for m in base]
        k += 1
    cut = n
    while out[cut - 1].role == "assistant" and out[cut - 1].tool_calls:
        cut -= 1  # never end on a call whose result was cut off
    return out[:cut]


def conversation(messages: Sequence[Message], model: str = MODEL, provider: str = "openai") -> Conversation:
    """The messages as one conversation (gpt-4o by default) with the sample's system prompt and tools."""
    base = sample()
    return Conversation("bench", tuple(messages), base.system, base.tools, model=model, provider=provider)


# ---- the LangChain twin -----------------------------------------------------------------------------

def to_langchain(conv: Conversation) -> list[Any]:
    """System prompt + messages as langchain_core messages (thinking left out: gpt-4o never gets it back)."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    out: list[Any] = [SystemMessage(content=list(conv.system))] if conv.system else []
    for m in conv.messages:
        texts = [p.text for p in m.parts if isinstance(p, TextPart)]
        if m.role == "user":
            out.append(HumanMessage(content=texts, id=m.id))
        elif m.role == "tool":
            out.append(ToolMessage(content=texts, tool_call_id=m.tool_call_id or "", id=m.id))
        else:
            calls = [{"id": c.id, "name": c.name, "args": json.loads(c.arguments) if c.arguments else {}}
                     for c in m.tool_calls]
            out.append(AIMessage(content=texts, tool_calls=calls, id=m.id))
    return out


def langchain_counter(prof: ModelProfile):
    """A LangChain per-message ``token_counter`` with ctxlab's rule: overhead + role + text + tool calls.

    Same encoder, same per-message overhead, role tokens counted once up front (as ctxlab does); tool
    arguments counted in the canonical JSON form ctxlab stores. LangChain calls it once per message
    per prefix it tries.
    """
    from langchain_core.messages import BaseMessage

    enc = TiktokenCounter("o200k_base")
    role_tokens = {"human": enc.count("user"), "ai": enc.count("assistant"), "tool": enc.count("tool")}

    def count(message: BaseMessage) -> int:
        if message.type == "system":  # ctxlab's system prompt: blocks counted one by one, one message overhead
            return sum(enc.count(b) for b in message.content) + prof.per_message_tokens
        n = prof.per_message_tokens + role_tokens[message.type]
        content = message.content
        n += sum(enc.count(t) for t in content) if isinstance(content, list) else enc.count(content)
        for call in getattr(message, "tool_calls", ()):
            n += enc.count(call["name"]) + enc.count(json.dumps(call["args"], ensure_ascii=False,
                                                                 separators=(",", ":")))
        return n

    # LangChain sums a per-message counter itself when the parameter is annotated BaseMessage; the
    # string annotations of ``from __future__ import annotations`` would hide that, so set it here.
    count.__annotations__ = {"message": BaseMessage, "return": int}
    return count


# ---- a real session tiled to any number of model calls (the growth benchmark) --------------------------------

def _shift(stamp: str | None, seconds: float) -> str | None:
    if not stamp:
        return stamp
    when = datetime.fromisoformat(stamp.replace("Z", "+00:00")) + timedelta(seconds=seconds)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _copy_item(item: Any, k: int, seconds: float) -> Any:
    """``item`` for tile ``k``: its own ids (message, tool calls, results, entry) and ``seconds`` later."""
    if k == 0:
        return item
    if isinstance(item, Message):
        parts = tuple(dataclasses.replace(p, id=f"{p.id}~{k}") if isinstance(p, ToolCallPart) else p
                      for p in item.parts)
        return dataclasses.replace(item, id=f"{item.id}~{k}", parts=parts, timestamp=_shift(item.timestamp, seconds),
                                   tool_call_id=f"{item.tool_call_id}~{k}" if item.tool_call_id else None)
    data = {key: (f"{v}~{k}" if key.endswith("_id") and isinstance(v, str) else
                  [f"{x}~{k}" for x in v] if key.endswith("_ids") and isinstance(v, (list, tuple)) else v)
            for key, v in item.data.items()}  # the messages an entry names (a compaction's first kept) are the copy's
    return dataclasses.replace(item, id=f"{item.id}~{k}", timestamp=_shift(item.timestamp, seconds), data=data)


def tiled_calls(conv: Conversation, calls: int) -> Conversation:
    """``conv`` repeated end to end until it holds ``calls`` model calls, cut after the last one's round.

    Each copy has its own ids and comes after the one before it in time (its span plus ten minutes, so the
    cache of one copy has expired when the next starts, as in a new working day). The copies share their
    texts (one object per text), as a real session that repeats itself would not: counting and hashing are
    still done per message, so this flatters no memo keyed by identity.
    """
    from ctxlab.strategies import model_calls
    from ctxlab.messages import parse_time

    stamps = [parse_time(i.timestamp) for i in conv.items if parse_time(i.timestamp) is not None]
    span = (max(stamps) - min(stamps) + 600.0) if stamps else 0.0
    per_copy = len(model_calls(conv))
    if per_copy == 0:
        raise ValueError(f"{conv.id}: no model calls to tile")
    items: list[Any] = []
    k = 0
    while k * per_copy < calls:
        items += [_copy_item(i, k, k * span) for i in conv.items]
        k += 1
    out = dataclasses.replace(conv, items=tuple(items))
    positions = [p for p, _ in model_calls(out)]
    end = positions[calls] if calls < len(positions) else len(items)  # up to the next call: its round is whole
    return dataclasses.replace(conv, items=tuple(items[:end]))
