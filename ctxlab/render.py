"""Rendering for the cache: a request as the blocks a prefix cache sees.

Unlike ``bodies.py``, which builds the dict you send, this module cuts that request into **blocks**
for the cache simulators — :func:`render_blocks`: every tool definition, system block and message
content block in the provider's order (tools → system → messages), each with a digest of its
bytes as sent (:func:`~ctxlab.bodies.wire_text`: key order included), a chained prefix digest and a
token count. The messages are the sendable ones (``sendable.py``), so the blocks are the body's.
Two requests share a prefix exactly as far as their prefix digests agree, so comparing prefixes is
cheap (``cache.py``'s :func:`~ctxlab.cache.prefix_diff` names the first block that differs).

What Anthropic's cache invalidation table says a request parameter does is in the chain too, read from
``tables/cache_invalidation.py`` (:func:`level_salts`): the thinking setting, ``tool_choice`` and whether
images are present salt it at the first message block, so a change misses from the messages on while tools
and system still read. On models that keep only the last turn's thinking (profile ``current_turn``), a
thinking block of an earlier turn enters the chain as *stripped* (:func:`chain_step`): a new user turn
(not a tool result) strips the previous turn's thinking, and the cache misses from there on.

Simplified on purpose: images are stood in for by their size (their bytes are not kept); a
block's tokens come from the profile's counter (an estimate for Claude, see ``tokens.py``).
:func:`render_blocks` works every request out from scratch; a replay may be handed one that
remembers earlier requests (``ctxlab/fast/render_cache.py``, bonus reading): the same blocks.
Taught in chapter 04.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from functools import cached_property
from itertools import accumulate
from typing import Any, Sequence

from ctxlab.base.errors import CtxlabError
from ctxlab.bodies import anthropic_part, anthropic_result, anthropic_tool, openai_message, openai_tool, wire_text
from ctxlab.context import Context
from ctxlab.messages import ImagePart, Message, ThinkingPart
from ctxlab.sendable import sendable
from ctxlab.tables.cache_invalidation import LEVELS, first_level
from ctxlab.tokens import MessageMeter, thinking_counts, tools_tokens


def digest(text: str) -> str:
    """A block's name for its bytes: the first 32 hex digits of the sha256 of ``text`` as UTF-8. A prefix
    digest chains them: ``digest(previous prefix digest + block digest)``. Chapter 04."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


STRIPPED = "stripped\x00"  # what an earlier turn's thinking block enters the chain as on a last-turn-only model
LEVEL_OF = {"tools": "tools", "system": "system", "message": "messages"}  # block kind -> cache level


def tool_choice_name(tool_choice: Any) -> str:
    """``tool_choice`` as one string: ``"auto"``, ``"none"``, ``"any"``, ``"tool:get_weather"`` (from
    ``{"type": "tool", "name": "get_weather"}``); ``"disable_parallel_tool_use": true`` adds ``"+no_parallel"``
    (a changed option is a changed ``tool_choice``). Raises CtxlabError for anything else. Chapter 04."""
    if isinstance(tool_choice, dict):
        kind, option = tool_choice.get("type"), "+no_parallel" if tool_choice.get("disable_parallel_tool_use") else ""
        return (f"tool:{tool_choice.get('name')}" if kind == "tool" else str(kind or "auto")) + option
    if isinstance(tool_choice, str) and tool_choice:
        return tool_choice
    raise CtxlabError(f"tool_choice must be 'auto', 'none', 'any', 'tool:<name>' or the API's dict "
                      f"(got {tool_choice!r})")


def level_salts(thinking: str | None, tool_choice: str = "auto", images: bool = False) -> dict[str, str]:
    """What enters the Anthropic chain before the first block of each cache level, from the invalidation table:
    ``level_salts("high", "any")`` → ``{"messages": "thinking=high;tool_choice=any"}``. ``tool_choice`` "auto" and
    no images add nothing (the chain of a plain request is unchanged). Chapter 04."""
    salts: dict[str, str] = {}
    params = {"thinking": f"thinking={thinking}", "tool_choice": f"tool_choice={tool_choice}",
              "images": "images"}
    for param, text in params.items():
        if (param == "tool_choice" and tool_choice == "auto") or (param == "images" and not images):
            continue
        level = first_level(param)
        salts[level] = f"{salts[level]};{text}" if level in salts else text
    return salts


def salt_before(chain: str, salts: dict[str, str], done: set[str], kind: str) -> str:
    """``chain`` with the salts of every level up to a ``kind`` block's not yet applied (``done`` is updated):
    a system-level salt of a request without system blocks enters before its first message. Chapter 04."""
    upto = LEVELS.index(LEVEL_OF[kind])
    for level in LEVELS[:upto + 1]:
        if level not in done:
            done.add(level)
            chain = digest(chain + salts[level]) if level in salts else chain
    return chain


def chain_step(chain: str, block_digest: str, stripped: bool = False) -> str:
    """The next prefix digest: ``digest(chain + block_digest)``, with :data:`STRIPPED` before a thinking block the
    API strips (an earlier turn's, on a last-turn-only model). Chapter 04."""
    return digest(chain + STRIPPED + block_digest) if stripped else digest(chain + block_digest)


def is_stripped(label: str, keep: bool, provider: str, rule: str) -> bool:
    """Whether a message block is thinking the API strips: Anthropic, profile thinking ``current_turn``, a
    thinking block (label ending `` thinking``) whose thinking does not count (``keep=False``). Chapter 04.
    Source: "On earlier Opus/Sonnet models and all Haiku models, all previously-cached thinking blocks are stripped
    from context, and any messages that follow those thinking blocks are removed from the cache"
    (https://platform.claude.com/docs/en/build-with-claude/prompt-caching, snapshot 2026-08-22, read 2026-12-02)."""
    return not keep and provider == "anthropic" and rule == "current_turn" and label.endswith(" thinking")


def has_images(messages: Sequence[Message]) -> bool:
    """Whether any message holds an image part (Anthropic: adding or removing one invalidates the messages)."""
    return any(isinstance(p, ImagePart) for m in messages for p in m.parts)


# ---- blocks for prefix comparison ----

@dataclass(frozen=True)
class Block:
    """One cacheable piece of a request, in provider order.

    ``kind``: ``tools``, ``system`` or ``message``; ``message_id`` for message blocks. ``digest`` is
    the sha256 of this block's wire form; ``prefix_digest`` chains every block up to this one, so
    two requests agree up to block i exactly when their ``prefix_digest[i]`` agree. ``tokens``
    under the profile's counter (message overhead on a message's first block). ``text`` is the
    wire form, for a token-level comparison inside the first differing block. Chapter 04.
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
    """A request as blocks. ``cum_tokens[i]`` = tokens of blocks 0..i (a prefix sum). Chapter 04."""

    provider: str
    model: str
    blocks: tuple[Block, ...]
    cum_tokens: tuple[int, ...]
    thinking: str | None = None
    overhead_tokens: int = 0  # per-request tokens that belong to no block (OpenAI's reply priming)
    tool_choice: str = "auto"  # as tool_choice_name gives it
    images: bool = False  # any image in the messages

    @property
    def total_tokens(self) -> int:
        """The whole prompt: every block plus the per-request overhead."""
        return (self.cum_tokens[-1] if self.cum_tokens else 0) + self.overhead_tokens

    @cached_property  # blocks never change: found once per request
    def breakpoints(self) -> tuple[int, ...]:
        """The indexes of the blocks that carry ``cache_control``, in order."""
        return tuple(i for i, b in enumerate(self.blocks) if b.breakpoint)


def _message_blocks(msg: Message, provider: str) -> list[tuple[str, Any]]:
    """(label, wire form) per content block of one message (thinking included, as sent)."""
    if provider == "openai":
        return [(f"{msg.role} {msg.id}", openai_message(msg))]
    if msg.role == "tool":
        return [(f"tool_result {msg.tool_call_id}", anthropic_result(msg))]
    return [(f"{msg.role} {msg.id}[{k}] {p.type}", anthropic_part(p)) for k, p in enumerate(msg.parts)]


def default_breakpoints(kinds: Sequence[str], message_ids: Sequence[str | None], user_ids: set[str],
                        second_message_breakpoint: bool = True) -> set[int]:
    """Where an agent puts ``cache_control``: last tool, last system block, last block; and the last
    block of the previous user turn, so the next request finds the entry within the 20-block lookback. Chapter 04."""
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


def render_message(msg: Message, provider: str, keep: bool, meter: MessageMeter, counted: Message | None = None
                   ) -> list[tuple[str, str, str, int]]:
    """``(label, wire text, digest, tokens)`` per block of one message; the overhead rides on the first block.

    Earlier turns' thinking is sent (so the prefix stays byte-stable) but counts 0 tokens when the
    profile says the provider ignores it (``keep=False``): Anthropic's documented context rule. ``counted``: a
    message the meter counts the same, part for part, counted in ``msg``'s place (the fast path's: the recorded
    message whose ids rule 6 of ``sendable`` renamed; ids are not counted), so it is not counted again. Chapter 04.
    """
    wires, counted = _message_blocks(msg, provider), counted or msg
    if len(wires) == 1:
        label, wire = wires[0]
        text = wire_text(wire)
        return [(label, text, digest(text), meter.message(counted, include_thinking=keep))]
    out = []
    for k, ((label, wire), part, same) in enumerate(zip(wires, msg.parts, counted.parts)):
        text = wire_text(wire)
        tokens = 0 if isinstance(part, ThinkingPart) and not keep else meter.part(same)
        out.append((label, text, digest(text), tokens + (meter.overhead(counted) if k == 0 else 0)))
    return out


def tool_prompt(context: Context, provider: str, tool_choice: str = "auto") -> int:
    """The hidden tool-use system prompt a request with tools carries, in tokens: on Anthropic the profile's figure
    for its ``tool_choice`` (:meth:`~ctxlab.tables.profiles.ModelProfile.tool_prompt_tokens`: claude-sonnet-4-6 497
    auto/none, 589 any/tool, 'Tool use with Claude', mirror snapshot 2026-08-22); elsewhere, or for a choice that
    table does not name (OpenAI's ``"required"``), the auto figure ``tool_system_tokens``; an option
    (``"+no_parallel"``) does not change the size. Simplified on purpose: the figure sits on the first tool block,
    so after a change the surviving tools entry is read at the new request's size (Anthropic documents nowhere
    where the prompt goes; the invalidation table keeps tools and system). Chapter 04."""
    kind = tool_choice.split(":", 1)[0].split("+", 1)[0]
    if provider != "anthropic" or kind not in ("auto", "none", "any", "tool"):
        return context.profile.tool_system_tokens
    return context.profile.tool_prompt_tokens(kind)


def head_pieces(context: Context, provider: str, meter: MessageMeter,
                tool_choice: str = "auto") -> list[tuple[str, str, str, str, int]]:
    """``(kind, label, wire text, digest, tokens)`` of the tool definitions and system blocks, in provider
    order, then the inferred static head as one block (a stand-in sized from usage). The first tool carries the
    hidden tool-use prompt for ``tool_choice`` (:func:`tool_prompt`). Chapter 04."""
    counter = meter.counter
    head: list[tuple[str, str, Any, int]] = []  # (kind, label, wire, tokens) of tools and system blocks
    tool_wire = [anthropic_tool(t) if provider == "anthropic" else openai_tool(t) for t in context.tools]
    for k, (spec, wire) in enumerate(zip(context.tools, tool_wire)):
        t = tools_tokens([spec], counter) - 12 + (12 if k == len(context.tools) - 1 else 0)
        t += tool_prompt(context, provider, tool_choice) if k == 0 and not context.head_tokens else 0  # fixed_part
        head.append(("tools", f"tool {spec.name}", wire, t))
    if provider == "openai" and any(s.strip() for s in context.system):
        head.append(("system", "system", {"role": "system", "content": "\n\n".join(context.system)},
                     meter.system(context.system)))
    else:
        for k, text in enumerate(context.system):
            if not text.strip():
                continue  # an empty system block is not sent (bodies.to_anthropic_body)
            head.append(("system", f"system[{k}]", {"type": "text", "text": text}, counter.count(text)))
    if context.head_tokens:  # a system prompt + tools the transcript did not record, sized from usage
        head.append(("system", "inferred static head", {"inferred_head_tokens": context.head_tokens},
                     context.head_tokens))
    return [(kind, label, text, digest(text), tokens) for kind, label, wire, tokens in head
            for text in (wire_text(wire),)]


def render_blocks(context: Context, provider: str | None = None, model: str | None = None,
                  meter: MessageMeter | None = None, thinking: str | None = None,
                  breakpoints: set[int] | None = None, *, tool_choice: Any = "auto") -> RenderedRequest:
    """The request as blocks in provider order with digests and token counts. Chapter 04.

    ``thinking`` (e.g. ``"off"``, ``"high"``) enters the Anthropic digest chain at the first message
    block: Anthropic documents that changing thinking parameters invalidates cached messages but not
    the cached tools and system prompt (OpenAI documents no such rule); so do ``tool_choice`` (default
    ``"auto"``, see :func:`tool_choice_name`; it also sizes the hidden tool prompt, :func:`tool_prompt`) and whether
    images are present (:func:`level_salts`), and an earlier turn's thinking on a last-turn-only model
    (:func:`is_stripped`). ``breakpoints``: the blocks
    that carry ``cache_control`` (default: where an agent puts them, :func:`default_breakpoints`).
    ``[tool t, system s, user u]`` → three blocks whose prefix digests chain t, then s, then u.
    """
    provider = provider or ("anthropic" if context.profile.provider == "anthropic" else "openai")
    meter = meter or MessageMeter(context.profile)
    msgs = sendable(context.messages, "anthropic" if provider == "anthropic" else "openai")[0]
    last_user = next((i for i in range(len(msgs) - 1, -1, -1) if msgs[i].is_real_user), -1)
    choice, images = tool_choice_name(tool_choice), has_images(msgs)
    salts = level_salts(thinking, choice, images) if provider == "anthropic" else {}  # Anthropic's table
    blocks, chain, done, rule = [], "", set(), context.profile.thinking
    for kind, label, text, block_digest, tokens in head_pieces(context, provider, meter, choice):
        chain = chain_step(salt_before(chain, salts, done, kind), block_digest)
        blocks.append(Block(kind, label, block_digest, chain, tokens, text))
    for i, msg in enumerate(msgs):
        keep = thinking_counts(context.profile, i, last_user)  # earlier turns' thinking is sent, counted or not
        for label, text, block_digest, tokens in render_message(msg, provider, keep, meter):
            chain = salt_before(chain, salts, done, "message")  # the thinking salt is in every message's prefix
            chain = chain_step(chain, block_digest, is_stripped(label, keep, provider, rule))
            blocks.append(Block("message", label, block_digest, chain, tokens, text, msg.id))
    user_ids = {m.id for m in msgs if m.role in ("user", "tool")}
    marks = breakpoints if breakpoints is not None else (default_breakpoints(
        [b.kind for b in blocks], [b.message_id for b in blocks], user_ids) if provider == "anthropic" else set())
    blocks = [replace(b, breakpoint=True) if i in marks else b for i, b in enumerate(blocks)]
    return RenderedRequest(provider, model or context.profile.name, tuple(blocks),
                           tuple(accumulate(b.tokens for b in blocks)), thinking, context.overhead_tokens, choice,
                           images)
