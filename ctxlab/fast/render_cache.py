"""render_blocks for a replay: the same blocks, with what earlier requests rendered remembered.

Unlike the book's :func:`~ctxlab.render.render_blocks`, which serialises, hashes and counts every block of
every request from scratch, a :class:`RenderCache` is called like it and remembers. A replay renders one
request per model call, and consecutive requests mostly start alike: the same tools and system prompt,
then the same messages, then a few new ones. It keeps

* each **message's blocks** (wire text, digest, tokens), memoised by the message's identity, so a
  message is serialised, hashed and counted once per provider, thinking rule and meter (a meter counts
  under one profile: after a model switch the message is counted again, as render_blocks counts it);
* the **head** (tools and system blocks) of each set of tools and system prompt;
* the last few **requests** as rendered: blocks, prefix digests and token prefix sums. A new request
  that starts with the same messages as one of them continues from it — the shared blocks, their
  chained digests and their prefix sums are copied, and only the new messages are chained and added.

The messages' thinking counts (``keep``) depend on where the newest user message is, so a request
continues an earlier one only up to the older of the two newest user messages under the
``current_turn`` rule. The pieces come from the book's own :func:`~ctxlab.render.head_pieces` and
:func:`~ctxlab.render.render_message`, so there is one wire form and one digest. ``tests/test_fast.py``
checks the blocks equal the plain ones. Chapter 04 teaches rendering; this module only makes it fast.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from ctxlab.base.sequences import shared_prefix
from ctxlab.context import Context
from ctxlab.messages import Message
from ctxlab.render import Block, RenderedRequest, default_breakpoints, digest, head_pieces, render_message
from ctxlab.fast.sendable_cache import SendableCache
from ctxlab.tokens import MessageMeter, thinking_counts

Piece = tuple[str, str, str, int]  # (label, wire text, digest, tokens) of one message block
HeadPiece = tuple[str, str, str, str, int]  # (kind, label, wire text, digest, tokens) of one tools or system block

RECENT = 4  # rendered requests kept to continue from (a replay interleaves threads and side calls)
CANON = 8  # tools and system tuples remembered by value


@dataclass
class Rendered:
    """One request as rendered, kept so a later request can continue from it.

    ``starts[i]`` is the index of message i's first block (``starts[-1]`` = every block); ``refs`` are
    the objects ``key`` names by identity (kept so no other object can take their ids). Bonus reading
    after chapter 08.
    """

    key: tuple[object, ...]
    refs: tuple[object, ...]
    messages: tuple[Message, ...]
    last_user: int
    starts: list[int]
    blocks: list[Block]
    cum: list[int]
    kinds: list[str]
    message_ids: list[str | None]
    marks: set[int]
    user_ids: set[str]  # ids of the user and tool messages (default_breakpoints asks)


class RenderCache:
    """:func:`~ctxlab.render.render_blocks` with a memory across the calls of a replay (see the module docstring):
    ``cache = RenderCache(); cache(context, "anthropic", model, meter, thinking)`` → the RenderedRequest
    render_blocks would return. One per replay. Bonus reading after chapter 08 (rendering: chapter 04).
    """

    def __init__(self) -> None:
        # (id(message), provider, thinking kept, id(meter)) -> (message, meter, its pieces): the objects are stored
        # so their ids cannot be reused by others
        self._store: dict[tuple[int, str, bool, int], tuple[Message, MessageMeter, list[Piece]]] = {}
        self._heads: dict[tuple[object, ...], tuple[tuple[object, ...], list[HeadPiece]]] = {}  # key -> (refs, pieces)
        self._recent: list[Rendered] = []  # most recent last
        self._canon: list[tuple] = []  # tools and system tuples seen, newest first (canonical)
        self._sendable = SendableCache()  # sendable() with the pieces of earlier contexts remembered

    def message(self, msg: Message, provider: str, keep: bool, meter: MessageMeter) -> list[Piece]:
        """``render_message``'s pieces for ``msg``, made once per provider, thinking rule and meter."""
        key = (id(msg), provider, keep, id(meter))
        hit = self._store.get(key)
        if hit is not None and hit[0] is msg and hit[1] is meter:
            return hit[2]
        pieces = render_message(msg, provider, keep, meter)
        self._store[key] = (msg, meter, pieces)
        return pieces

    def head(self, key: tuple[object, ...], refs: tuple[object, ...], make: Callable[[], list[HeadPiece]]
             ) -> list[HeadPiece]:
        """The head pieces for ``key`` (made by ``make`` the first time)."""
        hit = self._heads.get(key)
        if hit is None or any(a is not b for a, b in zip(hit[0], refs)):
            hit = self._heads[key] = (refs, make())
        return hit[1]

    def continue_from(self, key: tuple[object, ...], refs: tuple[object, ...], messages: tuple[Message, ...],
                      last_user: int | None) -> tuple[Rendered | None, int]:
        """The remembered request sharing the most first messages with ``messages``, and how many it shares
        (``last_user``: the newest user message's index under the ``current_turn`` rule, else None)."""
        best, done = None, -1
        for r in self._recent:
            if r.key != key or any(a is not b for a, b in zip(r.refs, refs)):
                continue
            shared = shared_prefix(r.messages, messages)
            if last_user is not None and r.last_user != last_user:
                shared = min(shared, min(r.last_user, last_user) + 1)  # thinking counts differ after that
            if shared > done:
                best, done = r, shared
        return best, max(done, 0)

    def canonical(self, seq: tuple) -> tuple:
        """The first-seen tuple equal to ``seq`` (tools or system blocks): a strategy that makes a new but equal
        tuple at every call (paging's ``read_page`` added, a summary placed) still continues the request before."""
        for known in self._canon:
            if known is seq or known == seq:
                return known
        self._canon = [seq, *self._canon[:CANON - 1]]
        return seq

    def remember(self, rendered: Rendered) -> None:
        self._recent.append(rendered)
        del self._recent[:-RECENT]

    def __call__(self, context: Context, provider: str | None = None, model: str | None = None,
                 meter: MessageMeter | None = None, thinking: str | None = None,
                 breakpoints: set[int] | None = None) -> RenderedRequest:
        """What ``render_blocks(context, provider, model, meter, thinking, breakpoints)`` returns: a request that
        starts like an earlier one continues from its blocks, chained digests and token prefix sums."""
        provider = provider or ("anthropic" if context.profile.provider == "anthropic" else "openai")
        meter = meter or MessageMeter(context.profile)
        kind = "anthropic" if provider == "anthropic" else "openai"
        msgs, rule = self._sendable.messages(context.messages, kind), context.profile.thinking
        last_user = next((i for i in range(len(msgs) - 1, -1, -1) if msgs[i].is_real_user), -1)
        refs = (self.canonical(context.tools), self.canonical(context.system), meter)  # the head, by identity
        head_key = (provider, *map(id, refs), context.head_tokens, context.profile.tool_system_tokens)
        key = (*head_key, thinking, rule)

        earlier, done = self.continue_from(key, refs, msgs, last_user if rule == "current_turn" else None)
        if earlier is not None:  # copy what the earlier request shares with this one
            shared = earlier.starts[done]
            blocks, cum = earlier.blocks[:shared], earlier.cum[:shared]
            kinds, mids, starts = earlier.kinds[:shared], earlier.message_ids[:shared], earlier.starts[:done + 1]
            old_marks = {i for i in earlier.marks if i < shared}
        else:
            blocks, cum, kinds, mids, old_marks, chain, total = [], [], [], [], set(), "", 0
            for kind, label, text, block_digest, tokens in self.head(head_key, refs,
                                                                     lambda: head_pieces(context, provider, meter)):
                chain, total = digest(chain + block_digest), total + tokens
                blocks.append(Block(kind, label, block_digest, chain, tokens, text))
                cum.append(total)
                kinds.append(kind)
                mids.append(None)
            starts = [len(blocks)]
        chain, total = (blocks[-1].prefix_digest, cum[-1]) if blocks else ("", 0)
        salted = len(blocks) > starts[0]  # a message block is in: the thinking setting is in the chain already
        for i in range(done, len(msgs)):
            msg, keep = msgs[i], thinking_counts(context.profile, i, last_user)
            for label, text, block_digest, tokens in self.message(msg, provider, keep, meter):
                if not salted and provider == "anthropic":
                    chain, salted = digest(chain + f"thinking={thinking}"), True
                chain, total = digest(chain + block_digest), total + tokens
                blocks.append(Block("message", label, block_digest, chain, tokens, text, msg.id))
                cum.append(total)
                kinds.append("message")
                mids.append(msg.id)
            starts.append(len(blocks))

        if earlier is not None and done == len(earlier.messages):  # only messages added: their ids added
            user_ids = earlier.user_ids | {m.id for m in msgs[done:] if m.role in ("user", "tool")}
        else:
            user_ids = {m.id for m in msgs if m.role in ("user", "tool")}
        marks = breakpoints if breakpoints is not None else (
            default_breakpoints(kinds, mids, user_ids) if provider == "anthropic" else set())
        for i in marks ^ old_marks:  # blocks are made without a breakpoint; copied ones carry the earlier marks
            if i < len(blocks):
                blocks[i] = replace(blocks[i], breakpoint=i in marks)
        self.remember(Rendered(key, refs, msgs, last_user, starts, blocks, cum, kinds, mids, set(marks), user_ids))
        request = RenderedRequest(provider, model or context.profile.name, tuple(blocks), tuple(cum), thinking,
                                  context.overhead_tokens)
        request.__dict__["breakpoints"] = tuple(sorted(i for i in marks if 0 <= i < len(blocks)))  # known: no scan
        return request
