"""What rendering remembers across the requests of a replay, so that each costs only what is new.

A replay renders one request per model call, and consecutive requests mostly start alike: the same
tools and system prompt, then the same messages, then a few new ones. :class:`RenderCache` keeps

* each **message's blocks** (wire text, digest, tokens), memoised by the message's identity, so a
  message is serialised, hashed and counted once per provider and thinking rule;
* the **head** (tools and system blocks) of each set of tools and system prompt;
* the last few **requests** as rendered: blocks, prefix digests and token prefix sums. A new request
  that starts with the same messages as one of them continues from it — the shared blocks, their
  chained digests and their prefix sums are copied, and only the new messages are chained and added.

The messages' thinking counts (``keep``) depend on where the newest user message is, so a request
continues an earlier one only up to the older of the two newest user messages under the
``current_turn`` rule. ``render.py`` builds requests; this module only remembers. Chapter 04.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

if TYPE_CHECKING:
    from ctxlab.messages import Message
    from ctxlab.tokens import MessageMeter

RECENT = 4  # rendered requests kept to continue from (a replay interleaves threads and side calls)


@dataclass
class Rendered:
    """One request as rendered, kept so a later request can continue from it.

    ``starts[i]`` is the index of message i's first block (``starts[-1]`` = every block); ``refs`` are
    the objects ``key`` names by identity (kept so no other object can take their ids).
    """

    key: tuple[Any, ...]
    refs: tuple[Any, ...]
    messages: tuple[Message, ...]
    last_user: int
    starts: list[int]
    blocks: list[Any]
    cum: list[int]
    kinds: list[str]
    message_ids: list[str | None]
    marks: set[int]


def shared_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many first items ``a`` and ``b`` share: tuple comparisons in C (identity first), bisected."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo] and a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


class RenderCache:
    """Memory for :func:`~ctxlab.render.render_blocks` across the calls of a replay (see the module docstring).

    # (id(message), provider, thinking kept) -> (message, [(label, wire text, digest, tokens)])
    The message itself is stored so its id cannot be reused by another object.
    """

    def __init__(self) -> None:
        self._store: dict[tuple[int, str, bool], tuple[Message, list[tuple[str, str, str, int]]]] = {}
        self._heads: dict[tuple[Any, ...], tuple[tuple[Any, ...], list[Any]]] = {}  # key -> (refs, head pieces)
        self._recent: list[Rendered] = []  # most recent last

    def get(self, msg: Message, provider: str, keep: bool, meter: MessageMeter) -> list[tuple[str, str, str, int]]:
        key = (id(msg), provider, keep)
        hit = self._store.get(key)
        if hit is not None and hit[0] is msg:
            return hit[1]
        from ctxlab.render import _render_message

        pieces = _render_message(msg, provider, keep, meter)
        self._store[key] = (msg, pieces)
        return pieces

    def head(self, key: tuple[Any, ...], refs: tuple[Any, ...], make: Callable[[], list[Any]]) -> list[Any]:
        """The head pieces for ``key`` (made by ``make`` the first time)."""
        hit = self._heads.get(key)
        if hit is None or any(a is not b for a, b in zip(hit[0], refs)):
            hit = self._heads[key] = (refs, make())
        return hit[1]

    def continue_from(self, key: tuple[Any, ...], refs: tuple[Any, ...], messages: tuple[Message, ...],
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

    def remember(self, rendered: Rendered) -> None:
        self._recent.append(rendered)
        del self._recent[:-RECENT]
