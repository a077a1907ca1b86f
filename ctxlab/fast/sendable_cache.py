"""sendable for a replay: the same messages, with the pieces earlier calls made sendable remembered.

Unlike the book's :func:`~ctxlab.sendable.sendable`, which walks the whole context at every call (each
rule looks at every message: O(context) in Python, so O(calls x context) for a replay), a
:class:`SendableCache` remembers what it made of the last few contexts. Consecutive contexts of a
replay mostly start alike, so the new context is split into a **remembered prefix** and a **new
piece**, and only the piece goes through ``sendable``. The two are laid end to end, which gives what
``sendable`` gives the whole context exactly when nothing the rules do crosses the seam:

* **no turn crosses it** (rules 3 and 4): the prefix's last message or the piece's first is not an
  assistant message;
* **no result in the piece answers a call in the prefix** (rule 5 moves results up to their call;
  rule 6 gives a result its call's wire id);
* **no wire id made in the piece was made in the prefix** (rule 6: a second use gets ``_2``; a piece
  whose ids are new everywhere gets the ids it would get after the prefix);
* **the prefix does not end with an assistant message** (rule 7 strips only the final message), and
  an opener (rule 8) the piece got for itself is dropped unless the prefix sent nothing.

When a seam breaks one of these the whole context goes through ``sendable`` (the answer is the same
either way; only the time differs). Each **piece** made is also kept by its first message, so a context
whose front moved (a budgeted window that dropped its oldest units: no remembered prefix starts it) is
laid end to end from the pieces of earlier calls, by the same seam checks, instead of going whole through
``sendable`` (a window that starts inside a piece sends only the part up to the next piece).
``tests/test_fast.py`` checks equality against the book on every shared transcript's contexts and on generated
ones. Bonus reading after chapter 08 (rules: chapter 04).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ctxlab.messages import Message
from ctxlab.sendable import OPENER, sendable

RECENT = 6  # remembered prefixes (a replay interleaves threads, side calls and views)
NOTED = 4096  # messages made by renaming ids, noted per generation (_Memo)
SCAN = 64  # messages looked through for a piece to start from, when no remembered prefix starts a context


class Ids:
    """The ids a chain of prefixes holds, each with the position it first appears at: a prefix of length ``n``
    holds ``c`` exactly when ``at[c] < n``. Prefixes that extend one another share one table, and the longest
    (the ``tip``) extends it in place, so a join costs the piece's ids, not the prefix's (a frozenset union per
    call would copy every id of the history: O(history) per call). Bonus reading after chapter 08."""

    __slots__ = ("at", "tip")

    def __init__(self, at: dict[str, int] | None = None, tip: int = 0) -> None:
        self.at: dict[str, int] = at if at is not None else {}
        self.tip = tip  # the length of the longest prefix whose ids are in the table

    def holds(self, c: str | None, n: int) -> bool:
        return self.at.get(c, n) < n  # type: ignore[arg-type]

    def extended(self, n: int, ids: Sequence[tuple[str, int]], end: int) -> "Ids":
        """The table of the prefix of length ``n`` with ``ids`` (id, position) added, the new prefix ``end`` long:
        this table itself when ``n`` is its tip, else a copy of the part up to ``n``."""
        table = self if n == self.tip else Ids({c: k for c, k in self.at.items() if k < n}, n)
        for c, k in ids:
            table.at.setdefault(c, k)
        table.tip = end
        return table


class _Memo(dict):
    """``sendable()``'s memo, which also notes each message rule 6 made (its ids renamed, nothing else changed):
    ``renamed[id(made)] = (made, source)``. The meter counts both the same (ids are not counted), so the renderer
    counts the source, already counted, instead of the copy. Only the newest are noted (two generations of
    :data:`NOTED`: a copy is rendered at the call that made it). Bonus reading after chapter 08."""

    def __init__(self) -> None:
        super().__init__()
        self.renamed: dict[int, tuple[Message, Message]] = {}
        self.older: dict[int, tuple[Message, Message]] = {}

    def __setitem__(self, key: tuple, value: tuple) -> None:
        super().__setitem__(key, value)
        extra = key[-1]  # sendable's rule 6 keys: ("ids", new call ids...) and ("id", the result's new call id)
        if isinstance(extra, tuple) and extra and extra[0] in ("ids", "id") and len(value[0]) == 1:
            self.renamed[id(value[1])] = (value[1], value[0][0])
            if len(self.renamed) > NOTED:
                self.older, self.renamed = self.renamed, {}

    def source(self, msg: Message) -> Message | None:
        hit = self.renamed.get(id(msg)) or self.older.get(id(msg))
        return hit[1] if hit is not None and hit[0] is msg else None


def _call_ids(messages: Sequence[Message], offset: int) -> list[tuple[str, int]]:
    return [(c, offset + k) for k, m in enumerate(messages) if m.role == "assistant" for c in m.call_ids]


@dataclass(frozen=True)
class Prefix:
    """A context's first messages and what ``sendable`` made of them, as a prefix of a longer context.

    ``calls``: the recorded call ids in ``inputs`` (positions in ``inputs``); ``names``: the wire ids in ``out``
    (positions in ``out``); ``ends_turn``: the last sent message is an assistant message (nothing may be laid
    after it). Bonus reading after chapter 08.
    """

    kind: str
    inputs: tuple[Message, ...]
    out: tuple[Message, ...]
    calls: Ids
    names: Ids
    ends_turn: bool

    def has_call(self, c: str | None) -> bool:
        return self.calls.holds(c, len(self.inputs))


def _piece(messages: tuple[Message, ...], kind: str, memo: dict) -> Prefix:
    """``sendable`` of one run of messages, with what a seam check needs."""
    out = sendable(messages, kind, memo)[0]
    calls, names = Ids(), Ids()
    return Prefix(kind, messages, out, calls.extended(0, _call_ids(messages, 0), len(messages)),
                  names.extended(0, _call_ids(out, 0), len(out)), bool(out) and out[-1].role == "assistant")


def _join(head: Prefix, piece: Prefix) -> Prefix | None:
    """``head`` then ``piece`` as one prefix, or None when a rule crosses the seam (the module docstring)."""
    inputs = piece.inputs
    if not head.inputs:
        return piece
    if not inputs:
        return head
    if head.ends_turn or (head.inputs[-1].role == "assistant" and inputs[0].role == "assistant"):
        return None
    if any(m is OPENER for m in inputs):  # an opener in the piece's input cannot be told from one rule 8 added
        return None
    if any(m.role == "tool" and head.has_call(m.tool_call_id) for m in inputs):
        return None
    n_out = len(head.out)
    if any(k < len(piece.out) and head.names.holds(c, n_out) for c, k in piece.names.at.items()):
        return None
    out = piece.out
    if head.out and out and out[0] is OPENER:  # rule 8 looks at the whole context's first message: the head's
        out = out[1:]
    n_in = len(head.inputs)
    calls = head.calls.extended(n_in, _call_ids(inputs, n_in), n_in + len(inputs))
    names = head.names.extended(n_out, _call_ids(out, n_out), n_out + len(out))
    return Prefix(head.kind, head.inputs + inputs, head.out + out, calls, names,
                  piece.ends_turn if out else head.ends_turn)


def _seam(messages: tuple[Message, ...], start: int) -> int:
    """Where the last whole round of ``messages[start:]`` ends: after its last message that is not an assistant
    message and is followed by one (the next call's context usually grows from there), else ``start``."""
    for c in range(len(messages) - 1, start, -1):
        if messages[c - 1].role != "assistant" and messages[c].role == "assistant":
            return c
    return start


class SendableCache:
    """``sendable(messages, kind, memo)[0]``, remembered across the calls of one replay:
    ``cache = SendableCache(); cache.messages(context.messages, "anthropic")``. Bonus reading after chapter 08."""

    def __init__(self) -> None:
        self.memo = _Memo()  # sendable()'s memo: a message a rule changed is one object at every call
        self._recent: list[Prefix] = []  # most recent last
        # (id of its first message, kind) -> a piece made for a run starting there (the piece holds the message, so
        # its id is not reused); two generations, as render_cache's messages: what recent contexts used stays
        self._pieces: dict[tuple[int, str], Prefix] = {}
        self._older: dict[tuple[int, str], Prefix] = {}
        self._bound = 1024  # pieces per generation, at least two per message of the current context

    def counted_as(self, msg: Message) -> Message | None:
        """The message ``msg`` was made from by renaming its ids (rule 6): the meter counts both the same. Else None."""
        return self.memo.source(msg)

    def _longest(self, messages: tuple[Message, ...], kind: str) -> Prefix:
        best = Prefix(kind, (), (), Ids(), Ids(), False)
        for p in sorted(self._recent, key=lambda p: len(p.inputs), reverse=True):  # the longest that matches wins
            n = len(p.inputs)
            if (p.kind == kind and 0 < n <= len(messages) and messages[n - 1] is p.inputs[-1]
                    and messages[:n] == p.inputs):  # the last message first: one that cannot match costs no slice
                return p
        return best

    def _remember(self, prefix: Prefix) -> None:
        self._recent = [p for p in self._recent if p.kind != prefix.kind or len(p.inputs) != len(prefix.inputs)
                        or p.inputs != prefix.inputs][-RECENT + 1:]
        self._recent.append(prefix)

    def _keep(self, piece: Prefix) -> Prefix:
        """Keep ``piece`` under its first message (a later context may start there, or run through it)."""
        if piece.inputs:
            self._pieces[(id(piece.inputs[0]), piece.kind)] = piece
            if len(self._pieces) > self._bound:
                self._older, self._pieces = self._pieces, {}
        return piece

    def _kept(self, msg: Message, kind: str) -> Prefix | None:
        key = (id(msg), kind)
        piece = self._pieces.get(key) or self._older.get(key)
        if piece is None or piece.inputs[0] is not msg:
            return None
        self._pieces[key] = piece
        return piece

    def _from_pieces(self, messages: tuple[Message, ...], kind: str, head: Prefix) -> Prefix:
        """``head`` followed by the kept pieces ``messages`` runs through next, joined while no rule crosses a seam.
        With no head, the run starts at the first kept piece among the first :data:`SCAN` messages (what comes
        before it is a piece of its own)."""
        n = len(head.inputs)
        if n == 0:
            for q in range(min(SCAN, len(messages))):
                if self._kept(messages[q], kind) is not None:
                    break
            else:
                return head
            if q:
                head = self._keep(_piece(messages[:q], kind, self.memo))
                n = q
        while n < len(messages):
            piece = self._kept(messages[n], kind)
            k = len(piece.inputs) if piece is not None else 0
            if piece is None or n + k > len(messages) or messages[n + k - 1] is not piece.inputs[-1] \
                    or messages[n:n + k] != piece.inputs:
                break
            joined = _join(head, piece)
            if joined is None:
                break
            head, n = joined, n + k
        return head

    def messages(self, messages: Sequence[Message], kind: str) -> tuple[Message, ...]:
        """What ``sendable(messages, kind)`` sends (equal messages, the same objects where the memo made them).
        Raises ValueError for an unknown ``kind``, as sendable does."""
        messages = tuple(messages)
        self._bound = max(self._bound, 2 * len(messages))  # the current context's pieces always stay
        head = self._from_pieces(messages, kind, self._longest(messages, kind))
        seam = _seam(messages, len(head.inputs))
        middle = _join(head, self._keep(_piece(messages[len(head.inputs):seam], kind, self.memo)))
        whole = _join(middle, self._keep(_piece(messages[seam:], kind, self.memo))) if middle is not None else None
        if whole is None:  # a rule crosses a seam: the whole context, as the book does it
            whole = _piece(messages, kind, self.memo)
        elif middle is not head:
            self._remember(middle)
        self._remember(whole)
        return whole.out
