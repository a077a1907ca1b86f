"""Rendering: a Context becomes what a provider receives.

Two outputs:

* **request bodies** an engineer can send — :func:`to_openai_body` (chat completions) and
  :func:`to_anthropic_body` (Messages API: consecutive tool results share one user message,
  ``cache_control`` breakpoints placed as an agent would);
* a **block list** for the cache simulators — :func:`render_blocks`: every tool definition,
  system block and message content block in the provider's order (tools → system →
  messages), each with a digest of its wire form, a chained prefix digest and a token count.
  Two requests share a prefix exactly as far as their prefix digests agree, so comparing
  prefixes is cheap; :func:`prefix_diff` names the first block that differs.

Simplified on purpose: images are stood in for by their size (their bytes are not kept); a
block's tokens come from the profile's counter (an estimate for Claude, see ``tokens.py``).
Taught in chapter 04.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from typing import Any, Sequence

from ctxlab.tables.cache_rules import model_key  # dated suffixes name one model: claude-opus-4-5-20251101
from ctxlab.io.codec import loads
from ctxlab.context import Context
from ctxlab.messages import ImagePart, Message, TextPart, ThinkingPart, ToolCallPart
from ctxlab.fast.render_cache import RenderCache, Rendered  # RenderCache is imported from here too (replay.py)
from ctxlab.tokens import MessageMeter, tools_tokens


def _canon(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


# ---- wire forms ----

def _anthropic_part(part: Any) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ThinkingPart):
        if part.redacted:
            return {"type": "redacted_thinking", "data": part.signature or ""}
        return {"type": "thinking", "thinking": part.text, "signature": part.signature or ""}
    if isinstance(part, ToolCallPart):
        try:
            args = loads(part.arguments) if part.arguments else {}  # codec.loads: hostile nesting is a JSONDecodeError
        except json.JSONDecodeError:
            args = {"_raw": part.arguments}  # the model emitted invalid JSON; keep it visible
        return {"type": "tool_use", "id": part.id, "name": part.name, "input": args}
    if isinstance(part, ImagePart):
        return {"type": "image", "source": {"type": "base64", "media_type": part.media_type,
                                            "data": f"<{part.data_chars} base64 chars>"}}
    raise TypeError(f"unknown part {part!r}")


def _anthropic_result(msg: Message) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": msg.tool_call_id,
                             "content": [_anthropic_part(p) for p in msg.parts]}
    if msg.is_error:
        block["is_error"] = True
    return block


def to_anthropic_body(context: Context, model: str | None = None, breakpoints: bool = True,
                      max_tokens: int = 4096) -> dict[str, Any]:
    """The Messages API request for ``context``. Consecutive tool results become one user message.

    With ``breakpoints``, ``cache_control: {"type": "ephemeral"}`` goes on the last tool, the last
    system block and the last content block of the last message, as most agents place them.
    """
    messages: list[dict[str, Any]] = []
    for msg in context.messages:
        if msg.role == "tool":
            if messages and messages[-1]["role"] == "user" and messages[-1]["content"] and \
                    messages[-1]["content"][-1].get("type") == "tool_result":
                messages[-1]["content"].append(_anthropic_result(msg))
            else:
                messages.append({"role": "user", "content": [_anthropic_result(msg)]})
            continue
        # Thinking goes back as recorded (signatures intact), as agents send it: the API needs it in
        # the current tool loop and ignores earlier turns' thinking when it sizes the context.
        content = [_anthropic_part(p) for p in msg.parts]
        messages.append({"role": msg.role, "content": content or [{"type": "text", "text": ""}]})
    tools = [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in context.tools]
    system = [{"type": "text", "text": s} for s in context.system]
    if breakpoints:
        for section in (tools, system):
            if section:
                section[-1]["cache_control"] = {"type": "ephemeral"}
        if messages:
            messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    body: dict[str, Any] = {"model": model or context.profile.name, "max_tokens": max_tokens, "messages": messages}
    if system:
        body["system"] = system
    if tools:
        body["tools"] = tools
    return body


def _openai_message(msg: Message) -> dict[str, Any]:
    text = "\n".join(p.text for p in msg.parts if isinstance(p, TextPart))
    if msg.role == "tool":
        return {"role": "tool", "tool_call_id": msg.tool_call_id, "content": text}
    out: dict[str, Any] = {"role": msg.role, "content": text or None}
    if msg.role == "user" and any(isinstance(p, ImagePart) for p in msg.parts):
        out["content"] = [{"type": "text", "text": text}] + [
            {"type": "image_url", "image_url": {"url": f"data:{p.media_type};base64,<{p.data_chars} chars>"}}
            for p in msg.parts if isinstance(p, ImagePart)]
    if msg.tool_calls:
        out["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                             for c in msg.tool_calls]
    if msg.name:
        out["name"] = msg.name
    return out


def to_openai_body(context: Context, model: str | None = None) -> dict[str, Any]:
    """The chat-completions request for ``context`` (system prompt as one system message; thinking is not sent)."""
    messages: list[dict[str, Any]] = []
    if context.system:
        messages.append({"role": "system", "content": "\n\n".join(context.system)})
    messages += [_openai_message(m) for m in context.messages]
    body: dict[str, Any] = {"model": model or context.profile.name, "messages": messages}
    if context.tools:
        body["tools"] = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                           "parameters": t.parameters}} for t in context.tools]
    return body


# ---- blocks for prefix comparison ----

@dataclass(frozen=True)
class Block:
    """One cacheable piece of a request, in provider order.

    ``kind``: ``tools``, ``system`` or ``message``; ``message_id`` for message blocks. ``digest`` is
    the sha256 of this block's wire form; ``prefix_digest`` chains every block up to this one, so
    two requests agree up to block i exactly when their ``prefix_digest[i]`` agree. ``tokens``
    under the profile's counter (message overhead on a message's first block). ``text`` is the
    wire form, for a token-level comparison inside the first differing block.
    """

    kind: str
    label: str
    digest: str
    prefix_digest: str
    tokens: int
    text: str
    message_id: str | None = None
    breakpoint: bool = False


@dataclass(frozen=True)
class RenderedRequest:
    """A request as blocks. ``cum_tokens[i]`` = tokens of blocks 0..i (a prefix sum)."""

    provider: str
    model: str
    blocks: tuple[Block, ...]
    cum_tokens: tuple[int, ...]
    thinking: str | None = None
    overhead_tokens: int = 0  # per-request tokens that belong to no block (OpenAI's reply priming)

    @property
    def total_tokens(self) -> int:
        """The whole prompt: every block plus the per-request overhead."""
        return (self.cum_tokens[-1] if self.cum_tokens else 0) + self.overhead_tokens

    @property
    def breakpoints(self) -> tuple[int, ...]:
        return tuple(i for i, b in enumerate(self.blocks) if b.breakpoint)


def _message_blocks(msg: Message, provider: str) -> list[tuple[str, Any]]:
    """(label, wire form) per content block of one message (thinking included, as sent)."""
    if provider == "openai":
        return [(f"{msg.role} {msg.id}", _openai_message(msg))]
    if msg.role == "tool":
        return [(f"tool_result {msg.tool_call_id}", _anthropic_result(msg))]
    parts = msg.parts
    return [(f"{msg.role} {msg.id}[{k}] {p.type}", _anthropic_part(p)) for k, p in enumerate(parts)] or \
        [(f"{msg.role} {msg.id}[0] text", {"type": "text", "text": ""})]


def default_breakpoints(kinds: Sequence[str], message_ids: Sequence[str | None], user_ids: set[str],
                        second_message_breakpoint: bool = True) -> set[int]:
    """Where an agent puts ``cache_control``: last tool, last system block, last block; and the last
    block of the previous user turn, so the next request finds the entry within the 20-block lookback."""
    kinds, message_ids = list(kinds), list(message_ids)
    marks: set[int] = set()
    for kind in ("tools", "system"):
        if kind in kinds:
            marks.add(len(kinds) - 1 - kinds[::-1].index(kind))  # its last block
    if kinds and kinds[-1] == "message":
        marks.add(len(kinds) - 1)
        if second_message_breakpoint:
            starts: list[int] = []  # first blocks of user (and tool result) messages, newest first: two are enough
            for i in range(len(message_ids) - 1, -1, -1):
                mid = message_ids[i]
                if mid in user_ids and (i == 0 or message_ids[i - 1] != mid):
                    starts.append(i)
                    if len(starts) == 2:
                        marks.add(starts[0] - 1)
                        break
    return set(sorted(marks)[-4:])  # at most four breakpoints per request


def _render_message(msg: Message, provider: str, keep: bool, meter: MessageMeter) -> list[tuple[str, str, str, int]]:
    """(label, wire text, digest, tokens) per block of one message; the overhead rides on the first block.

    Earlier turns' thinking is sent (so the prefix stays byte-stable) but counts 0 tokens when the
    profile says the provider ignores it (``keep=False``): Anthropic's documented context rule.
    """
    wires = _message_blocks(msg, provider)
    if len(wires) == 1:
        label, wire = wires[0]
        text = _canon(wire)
        return [(label, text, _digest(text), meter.message(msg, include_thinking=keep))]
    out = []
    for k, ((label, wire), part) in enumerate(zip(wires, msg.parts)):
        text = _canon(wire)
        tokens = 0 if isinstance(part, ThinkingPart) and not keep else meter.part(part)
        out.append((label, text, _digest(text), tokens + (meter.overhead(msg) if k == 0 else 0)))
    return out


def _head_pieces(context: Context, provider: str, meter: MessageMeter) -> list[tuple[str, str, str, str, int]]:
    """(kind, label, wire text, digest, tokens) of the tool definitions and system blocks, in provider order."""
    counter = meter.counter
    head: list[tuple[str, str, Any, int]] = []  # (kind, label, wire, tokens) of tools and system blocks
    tool_wire = ([{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in context.tools]
                 if provider == "anthropic" else
                 [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                    "parameters": t.parameters}} for t in context.tools])
    for k, (spec, wire) in enumerate(zip(context.tools, tool_wire)):
        t = tools_tokens([spec], counter) - 12 + (12 if k == len(context.tools) - 1 else 0)
        t += context.profile.tool_system_tokens if k == 0 and not context.head_tokens else 0  # see build_context
        head.append(("tools", f"tool {spec.name}", wire, t))
    if provider == "openai" and context.system:
        head.append(("system", "system", {"role": "system", "content": "\n\n".join(context.system)},
                     meter.system(context.system)))
    else:
        for k, text in enumerate(context.system):
            head.append(("system", f"system[{k}]", {"type": "text", "text": text}, counter.count(text)))
    if context.head_tokens:  # a system prompt + tools the transcript did not record, sized from usage
        head.append(("system", "inferred static head", {"inferred_head_tokens": context.head_tokens},
                     context.head_tokens))
    return [(kind, label, text, _digest(text), tokens) for kind, label, wire, tokens in head
            for text in (_canon(wire),)]


def render_blocks(context: Context, provider: str | None = None, model: str | None = None,
                  meter: MessageMeter | None = None, thinking: str | None = None,
                  breakpoints: set[int] | None = None, cache: RenderCache | None = None) -> RenderedRequest:
    """The request as blocks in provider order with digests and token counts.

    ``thinking`` (e.g. ``"off"``, ``"high"``) enters the Anthropic digest chain at the first message
    block: Anthropic documents that changing thinking parameters invalidates cached messages but not
    the cached tools and system prompt (OpenAI documents no such rule). ``cache`` (a replay's
    :class:`RenderCache`) renders each message once and lets a request that starts like an earlier
    one continue from its blocks, chained digests and token prefix sums (``render_cache.py``).
    """
    provider = provider or ("anthropic" if context.profile.provider == "anthropic" else "openai")
    meter = meter or MessageMeter(context.profile)
    cache = cache or RenderCache()
    msgs, rule = context.messages, context.profile.thinking
    last_user = next((i for i in range(len(msgs) - 1, -1, -1) if msgs[i].is_real_user), -1)
    refs = (context.tools, context.system, meter)  # what the head is made of, compared by identity
    head_key = (provider, *map(id, refs), context.head_tokens, context.profile.tool_system_tokens)
    key = (*head_key, thinking, rule)

    earlier, done = cache.continue_from(key, refs, msgs, last_user if rule == "current_turn" else None)
    if earlier is not None:  # copy what the earlier request shares with this one
        shared = earlier.starts[done]
        blocks, cum = earlier.blocks[:shared], earlier.cum[:shared]
        kinds, mids, starts = earlier.kinds[:shared], earlier.message_ids[:shared], earlier.starts[:done + 1]
        old_marks = {i for i in earlier.marks if i < shared}
    else:
        blocks, cum, kinds, mids, old_marks, chain, total = [], [], [], [], set(), "", 0
        for kind, label, text, digest, tokens in cache.head(head_key, refs, lambda: _head_pieces(context, provider, meter)):
            chain, total = _digest(chain + digest), total + tokens
            blocks.append(Block(kind, label, digest, chain, tokens, text))
            cum.append(total)
            kinds.append(kind)
            mids.append(None)
        starts = [len(blocks)]
    chain, total = (blocks[-1].prefix_digest, cum[-1]) if blocks else ("", 0)
    salted = len(blocks) > starts[0]  # a message block is in: the thinking setting is in the chain already
    for i in range(done, len(msgs)):
        msg = msgs[i]
        keep = rule == "all" or (rule == "current_turn" and i > last_user)
        for label, text, digest, tokens in cache.get(msg, provider, keep, meter):
            if not salted and provider == "anthropic":
                chain, salted = _digest(chain + f"thinking={thinking}"), True
            chain, total = _digest(chain + digest), total + tokens
            blocks.append(Block("message", label, digest, chain, tokens, text, msg.id))
            cum.append(total)
            kinds.append("message")
            mids.append(msg.id)
        starts.append(len(blocks))

    user_ids = {m.id for m in msgs if m.role in ("user", "tool")}
    marks = breakpoints if breakpoints is not None else (
        default_breakpoints(kinds, mids, user_ids) if provider == "anthropic" else set())
    for i in marks ^ old_marks:  # blocks are made without a breakpoint; copied ones carry the earlier marks
        if i < len(blocks):
            blocks[i] = replace(blocks[i], breakpoint=i in marks)
    cache.remember(Rendered(key, refs, msgs, last_user, starts, blocks, cum, kinds, mids, set(marks)))
    return RenderedRequest(provider, model or context.profile.name, tuple(blocks), tuple(cum), thinking,
                           context.overhead_tokens)


@dataclass(frozen=True)
class PrefixDiff:
    """Where two requests part: ``index`` of the first differing block (None when one is a prefix of
    the other), ``shared_tokens`` before it, and a one-line ``reason``."""

    index: int | None
    shared_tokens: int
    reason: str
    old: Block | None = None
    new: Block | None = None


def shared_blocks(old: RenderedRequest, new: RenderedRequest) -> int:
    """How many leading blocks ``new`` repeats from ``old`` (0 … the shorter length). Chapter 04.

    A prefix digest chains every block up to its own: two requests agree on it up to some block and
    differ from there on, so the first difference is found by bisection — O(log n), not a scan.
    """
    lo, hi = 0, min(len(old.blocks), len(new.blocks))
    while lo < hi:
        mid = (lo + hi) // 2
        if old.blocks[mid].prefix_digest == new.blocks[mid].prefix_digest:
            lo = mid + 1
        else:
            hi = mid
    return lo


def prefix_diff(old: RenderedRequest, new: RenderedRequest) -> PrefixDiff:
    """The first block where ``new`` stops repeating ``old``. ``[t, s, m1]`` vs ``[t, s, m1, m2]`` → appended only."""
    n = min(len(old.blocks), len(new.blocks))
    lo = shared_blocks(old, new)
    i = lo if lo < n else None
    if model_key(old.model) != model_key(new.model):
        return PrefixDiff(0, 0, f"model changed ({old.model} → {new.model}): caches are per model")
    if i is None:
        shared = old.cum_tokens[n - 1] if n else 0
        grew = len(new.blocks) - len(old.blocks)
        why = f"prefix kept; {grew} blocks appended" if grew >= 0 else f"new request is shorter by {-grew} blocks"
        return PrefixDiff(None, shared, why)
    shared = old.cum_tokens[i - 1] if i else 0
    a, b = old.blocks[i], new.blocks[i]
    if a.digest == b.digest and a.kind == "message" and old.thinking != new.thinking:
        why = f"thinking setting changed ({old.thinking} → {new.thinking}): message caches invalidated"
    elif a.kind != b.kind:
        why = f"{a.label} replaced by {b.label}"
    elif a.message_id and a.message_id != b.message_id:
        why = f"history changed at block {i}: {a.label} dropped or replaced by {b.label}"
    else:
        why = f"{a.kind} block {b.label} changed"
    return PrefixDiff(i, shared, why, a, b)
