"""render_blocks for a replay: the same blocks, with what earlier requests rendered remembered.

Unlike the book's :func:`~ctxlab.render.render_blocks`, which serialises, hashes and counts every block of
every request from scratch, a :class:`RenderCache` is called like it and remembers. A replay renders one
request per model call, and consecutive requests mostly start alike: the same tools and system prompt,
then the same messages, then a few new ones. It keeps

* each **message's blocks** (wire text, digest, tokens), memoised by the message's identity, so a
  message is serialised, hashed and counted once per provider, thinking rule and meter (a meter counts
  under one profile: after a model switch the message is counted again, as render_blocks counts it);
* the **head** (tools and system blocks) of each set of tools and system prompt;
* the last few **requests** as rendered, as views of a shared **log** of blocks, prefix digests and token
  prefix sums. A new request that starts with the same messages as one of them continues from it: when that
  one is the newest in its log and only messages were added, the new blocks are appended to the same log (no
  copy of the old ones: a copy per call would make a replay O(calls x history)); otherwise the shared part is
  copied. Breakpoints are marked on each request's own tuple, never in the log.

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
from ctxlab.render import (LEVEL_OF, Block, RenderedRequest, chain_step, has_images, head_pieces, is_stripped,
                           level_salts, render_message, salt_before, tool_choice_name, tool_prompt)
from ctxlab.tables.cache_invalidation import LEVELS
from ctxlab.fast.sendable_cache import SendableCache
from ctxlab.tokens import MessageMeter, thinking_counts

Piece = tuple[str, str, str, int]  # (label, wire text, digest, tokens) of one message block
HeadPiece = tuple[str, str, str, str, int]  # (kind, label, wire text, digest, tokens) of one tools or system block

RECENT = 4  # rendered requests kept to continue from (a replay interleaves threads and side calls)
CANON = 8  # tools and system tuples remembered by value


@dataclass
class Log:
    """The blocks of a run of requests that extend one another, laid end to end and shared: a request that only adds
    messages to the newest one appends to its log in place, so continuing costs the new blocks, not a copy of the
    old ones (a copy per call is O(history)). Blocks are held without breakpoints (each request marks its own copy).
    ``starts[i]`` is the index of message i's first block (``starts[0]``: the head's length); ``users[j]``: block j
    belongs to a user or tool message; ``head_marks``: the last tools and last system block. Bonus reading after
    chapter 08."""

    blocks: list[Block]
    cum: list[int]
    message_ids: list[str | None]
    users: list[bool]
    starts: list[int]
    head_marks: set[int]

    def upto(self, messages: int) -> "Log":
        """A copy holding the first ``messages`` messages' blocks (and the head)."""
        n = self.starts[messages]
        return Log(self.blocks[:n], self.cum[:n], self.message_ids[:n], self.users[:n], self.starts[:messages + 1],
                   self.head_marks)


@dataclass
class Rendered:
    """One request as rendered, kept so a later request can continue from it: its ``messages`` and the ``log`` its
    blocks are the first ``log.starts[len(messages)]`` of. ``refs`` are the objects ``key`` names by identity (kept
    so no other object can take their ids). Bonus reading after chapter 08.
    """

    key: tuple[object, ...]
    refs: tuple[object, ...]
    messages: tuple[Message, ...]
    last_user: int
    log: Log
    first_image: int | None = None  # index of the first message holding an image (None: no image)

    @property
    def is_tip(self) -> bool:  # nothing was appended to its log after it
        return len(self.log.starts) == len(self.messages) + 1


class RenderCache:
    """:func:`~ctxlab.render.render_blocks` with a memory across the calls of a replay (see the module docstring):
    ``cache = RenderCache(); cache(context, "anthropic", model, meter, thinking)`` → the RenderedRequest
    render_blocks would return. One per replay. Bonus reading after chapter 08 (rendering: chapter 04).
    """

    def __init__(self) -> None:
        # (id(message), provider, thinking kept, id(meter)) -> (message, meter, its pieces): the objects are stored
        # so their ids cannot be reused by others
        self._store: dict[tuple[int, str, bool, int], tuple[Message, MessageMeter, list[Piece]]] = {}
        self._older: dict[tuple[int, str, bool, int], tuple[Message, MessageMeter, list[Piece]]] = {}
        self._bound = 8192  # entries before _store becomes _older (two generations: what recent requests used stays)
        self._heads: dict[tuple[object, ...], tuple[tuple[object, ...], list[HeadPiece]]] = {}  # key -> (refs, pieces)
        self._recent: list[Rendered] = []  # most recent last
        self._canon: list[tuple] = []  # tools and system tuples seen, newest first (canonical)
        self._sendable = SendableCache()  # sendable() with the pieces of earlier contexts remembered
        self._user_ids: set[str] = set()  # ids of every user and tool message rendered (default_breakpoints asks)

    def message(self, msg: Message, provider: str, keep: bool, meter: MessageMeter) -> list[Piece]:
        """``render_message``'s pieces for ``msg``, made once per provider, thinking rule and meter."""
        key = (id(msg), provider, keep, id(meter))
        hit = self._store.get(key) or self._older.get(key)
        if hit is not None and hit[0] is msg and hit[1] is meter:
            self._store[key] = hit
            return hit[2]
        pieces = render_message(msg, provider, keep, meter, self._sendable.counted_as(msg))  # ids renamed: counted
        twin = (id(msg), provider, not keep, id(meter))
        other = self._store.get(twin) or self._older.get(twin)
        if other is not None and other[0] is msg and other[1] is meter:  # the wire text is the same either way
            pieces = [(label, text, d, tokens) for (label, _, _, tokens), (_, text, d, _) in zip(pieces, other[2])]
        self._store[key] = (msg, meter, pieces)  # (only the tokens differ): held once, not once per setting
        if len(self._store) > self._bound:  # a pure memo, bounded: a 200 MB replay held every message's pieces
            self._older, self._store = self._store, {}
        return pieces

    def head(self, key: tuple[object, ...], refs: tuple[object, ...], make: Callable[[], list[HeadPiece]]
             ) -> list[HeadPiece]:
        """The head pieces for ``key`` (made by ``make`` the first time)."""
        hit = self._heads.get(key)
        if hit is None or any(a is not b for a, b in zip(hit[0], refs)):
            hit = self._heads[key] = (refs, make())
        return hit[1]

    def continue_from(self, key: tuple[object, ...], refs: tuple[object, ...], messages: tuple[Message, ...]
                      ) -> tuple[Rendered | None, int]:
        """The remembered request sharing the most first messages with ``messages``, and how many it shares. The
        longest are tried first, and one that shares all its messages ends the search (the common case: one slice
        comparison per call)."""
        best, done = None, -1
        for r in sorted(self._recent, key=lambda r: len(r.messages), reverse=True):
            if len(r.messages) <= done:
                break
            if r.key != key or any(a is not b for a, b in zip(r.refs, refs)):
                continue
            n = len(r.messages)
            if n and n <= len(messages) and messages[n - 1] is r.messages[-1] and messages[:n] == r.messages:
                return r, n
            shared = shared_prefix(r.messages, messages)
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

    def breakpoints(self, log: Log, msgs: tuple[Message, ...]) -> set[int]:
        """``default_breakpoints`` of the log's blocks (its rule, read from the end: the last tools and system
        blocks, the last block, the block before the second newest user or tool message's first block)."""
        n, mids, exact, first = len(log.blocks), log.message_ids, None, -1
        marks = set(log.head_marks)
        if n > log.starts[0]:  # the last block is a message block
            marks.add(n - 1)
            found = 0
            for i in range(n - 1, -1, -1):
                mid = mids[i]
                if log.users[i]:
                    user = True
                elif mid not in self._user_ids:
                    user = False
                else:  # an id a user or tool message also has: ask the request's own messages, as the book does
                    exact = exact if exact is not None else {m.id for m in msgs if m.role in ("user", "tool")}
                    user = mid in exact
                if user and (i == 0 or mids[i - 1] != mid):
                    found += 1
                    if found == 2:
                        marks.add(first - 1)
                        break
                    first = i
        return set(sorted(marks)[-4:])  # at most four breakpoints per request

    def remember(self, rendered: Rendered) -> None:
        self._recent.append(rendered)
        del self._recent[:-RECENT]

    def __call__(self, context: Context, provider: str | None = None, model: str | None = None,
                 meter: MessageMeter | None = None, thinking: str | None = None,
                 breakpoints: set[int] | None = None, *, tool_choice: object = "auto") -> RenderedRequest:
        """What ``render_blocks(context, provider, model, meter, thinking, breakpoints)`` returns: a request that
        starts like an earlier one continues from its blocks, chained digests and token prefix sums."""
        provider = provider or ("anthropic" if context.profile.provider == "anthropic" else "openai")
        meter = meter or MessageMeter(context.profile)
        kind = "anthropic" if provider == "anthropic" else "openai"
        msgs, rule = self._sendable.messages(context.messages, kind), context.profile.thinking
        self._bound = max(self._bound, 4 * len(msgs))  # the current context's messages always stay
        refs = (self.canonical(context.tools), self.canonical(context.system), meter)  # the head, by identity
        choice = tool_choice_name(tool_choice)  # it sizes the hidden tool prompt too (render.tool_prompt)
        head_key = (provider, *map(id, refs), context.head_tokens, tool_prompt(context, provider, choice))
        key = (*head_key, thinking, rule, choice)

        earlier, done = self.continue_from(key, refs, msgs)
        first_image = _first_image(msgs, earlier, done)  # images present salt the chain too (render.level_salts)
        images = first_image is not None
        if earlier is not None and (earlier.first_image is not None) != images:
            done = 0  # the salt at the first message differs: every message block is chained again
        salts = level_salts(thinking, choice, images) if provider == "anthropic" else {}
        last_user = _newest_user(msgs, earlier, done)
        if earlier is not None and rule == "current_turn" and earlier.last_user != last_user:
            done = min(done, min(earlier.last_user, last_user) + 1)  # thinking counts differ after that
        if earlier is not None and earlier.is_tip and done == len(earlier.messages):
            log = earlier.log  # only messages added: append to its log in place
        elif earlier is not None:
            log = earlier.log.upto(done)
        else:
            log = Log([], [], [], [], [], set())
            chain, total, done_levels = "", 0, set()
            pieces = self.head(head_key, refs, lambda: head_pieces(context, provider, meter, choice))
            for kind, label, text, block_digest, tokens in pieces:
                chain, total = chain_step(salt_before(chain, salts, done_levels, kind), block_digest), total + tokens
                log.blocks.append(Block(kind, label, block_digest, chain, tokens, text))
                log.cum.append(total)
                log.message_ids.append(None)
                log.users.append(False)
                if kind in ("tools", "system"):  # default_breakpoints: the last block of each
                    log.head_marks = {i for i in log.head_marks if log.blocks[i].kind != kind} | {len(log.blocks) - 1}
            log.starts.append(len(log.blocks))
            done = 0
        blocks, cum, mids, users, starts = log.blocks, log.cum, log.message_ids, log.users, log.starts
        chain, total = (blocks[-1].prefix_digest, cum[-1]) if blocks else ("", 0)
        # a message block is in: the salts are in the chain already; else the head's levels are done
        head_kinds = [b.kind for b in blocks[:starts[0]]]
        salted = set(LEVELS[:LEVELS.index(LEVEL_OF[head_kinds[-1]]) + 1]) if head_kinds else set()
        salted |= {"messages"} if len(blocks) > starts[0] else set()
        for i in range(done, len(msgs)):
            msg, keep = msgs[i], thinking_counts(context.profile, i, last_user)
            is_user = msg.role in ("user", "tool")
            if is_user:
                self._user_ids.add(msg.id)
            for label, text, block_digest, tokens in self.message(msg, provider, keep, meter):
                chain = chain if "messages" in salted else salt_before(chain, salts, salted, "message")
                chain, total = chain_step(chain, block_digest, is_stripped(label, keep, provider, rule)), total + tokens
                blocks.append(Block("message", label, block_digest, chain, tokens, text, msg.id))
                cum.append(total)
                mids.append(msg.id)
                users.append(is_user)
            starts.append(len(blocks))

        if breakpoints is not None:
            marks = breakpoints
        elif provider == "anthropic":
            marks = self.breakpoints(log, msgs)
        else:
            marks = set()
        self.remember(Rendered(key, refs, msgs, last_user, log, first_image))
        out = list(blocks)
        for i in marks:  # the log's blocks carry no breakpoint: this request's copy is marked
            if 0 <= i < len(out):
                out[i] = replace(out[i], breakpoint=True)
        request = RenderedRequest(provider, model or context.profile.name, tuple(out), tuple(cum), thinking,
                                  context.overhead_tokens, choice, images)
        request.__dict__["breakpoints"] = tuple(sorted(i for i in marks if 0 <= i < len(out)))  # known: no scan
        return request


def _newest_user(msgs: tuple[Message, ...], earlier: Rendered | None, shared: int) -> int:
    """The index of the newest real user message in ``msgs`` (-1: none): looked for among the messages after the
    ``shared`` ones first, which the earlier request answers for when its newest one is among them."""
    for i in range(len(msgs) - 1, shared - 1, -1):
        if msgs[i].is_real_user:
            return i
    if earlier is not None and earlier.last_user < shared:
        return earlier.last_user
    return next((i for i in range(shared - 1, -1, -1) if msgs[i].is_real_user), -1)


def _first_image(msgs: tuple[Message, ...], earlier: Rendered | None, shared: int) -> int | None:
    """The index of the first message holding an image (None: none), the ``shared`` first messages answered by the
    earlier request: only the new messages are looked at."""
    if earlier is not None and earlier.first_image is not None and earlier.first_image < shared:
        return earlier.first_image
    start = shared if earlier is not None else 0
    return next((start + k for k, m in enumerate(msgs[start:]) if has_images((m,))), None)
