"""One replay per setting, shared by a chapter's cells and its widgets: a lazy, bounded cache (chapters 04–08).

A chapter's cells and its widget ask for the same replays: chapter 07's window search replays ``budgeted`` and
``compaction`` at the window its sawtooth widget then opens at; chapter 08's leaderboard cell replays every
strategy its widget shows first. What it holds: :class:`ReplayCache`, and :data:`REPLAYS`, the one the chapters'
lab functions and widgets share. Each (conversation, strategy and its options, provider, model, window, check,
warm) is replayed once, through :data:`ctxlab.fast.FAST` (the same ledgers as the book's plain replay, sooner), on
first demand; whoever asks next gets the same :class:`~ctxlab.replay.ReplayResult` (or the same
:class:`~ctxlab.base.errors.CtxlabError`, raised again). :meth:`ReplayCache.retention` keeps a replay's checklist
score the same way. The widgets' background thread (``ctxlab/widgets/_progress.py``) asks here too.

The replays run here share more than their results: each token count (:class:`CountedOnce`, one per counter: a
text counted by one replay, or by :func:`ctxlab.lab.ch06_summaries.peak_prompt_tokens`, is not counted again by
the next), and a pause point before each request a replay renders (``ReplayCache.pause``: the widgets hold their
background replay there while a click's replay runs, so the click does not share the CPU with it).

Simplified on purpose: a conversation is keyed by its identity, not its contents (the cache keeps a reference,
so the id is not reused while its replays are held): load a transcript once and pass the same object. A
strategy is keyed by its name and the options that differ from its defaults; an option that is not a plain
value (a summarizer, a page store) makes the replay run uncached, every time. A ``check=False`` request is
answered by a ``check=True`` replay when one is held (the same ledger, with the violations counted too). An
unchecked ``full`` or ``recorded`` at a new window is moved from the one held at another window (their requests do
not depend on the window: :mod:`ctxlab.lab.replay_windows`), in milliseconds, and scored as that one (``moved``
counts them, ``computed`` does not; :meth:`ReplayCache.ready` says whether a setting needs no replay).
Results are shared: read them, never change them. A pi replay (484 calls) holds about 12 MB, hence the bounds.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from ctxlab.base.errors import CtxlabError
from ctxlab.facts import Fact, FactReport
from ctxlab.fast import FAST, IncrementalMeter
from ctxlab.fast.retention import fact_retention_fast
from ctxlab.lab.replay_keys import CountedOnce, options_key, share_findings
from ctxlab.lab.replay_windows import at_window, can_move
from ctxlab.messages import Conversation
from ctxlab.replay import ReplayResult, Speedup, Strategy, get_strategy, replay
from ctxlab.tables.profiles import ModelProfile
from ctxlab.tokens import counter_for


def _nothing() -> None:
    return None


class _Pausing:
    """A replay's renderer that first lets ``cache.pause`` hold the thread (the render itself is ``inner``'s)."""

    def __init__(self, inner: Any, cache: ReplayCache) -> None:
        self.inner, self.cache = inner, cache

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.cache.pause()
        return self.inner(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


@dataclass
class _Held:
    conversation: Conversation  # keeps id(conversation) from being reused while the replay is held
    strategy: Strategy
    result: ReplayResult | None
    error: CtxlabError | None
    moved_from: ReplayResult | None = None  # the replay at another window it was moved from (same requests)

    @property
    def calls(self) -> int:
        return len(self.result.records) if self.result is not None else 0

    def answer(self) -> tuple[Strategy, ReplayResult]:
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.strategy, self.result


class ReplayCache:
    """Replays kept by setting, least recently used dropped first: at most ``max_replays`` replays and
    ``max_calls`` model calls in all (both whole numbers; the replay just made is always kept).

    ``cache.replay(conv, "budgeted", window=30_000) is cache.replay(conv, "budgeted", window=30_000)`` → True.
    ``computed`` counts the replays run, ``hits`` the answers given without one. Thread-safe: a thread asking for
    a replay another thread is running waits for it instead of running it again. Chapters 04–08.
    """

    def __init__(self, max_replays: int = 64, max_calls: int = 20_000) -> None:
        self.max_replays, self.max_calls = max(1, max_replays), max(1, max_calls)
        self.computed = 0
        self.hits = 0
        self.moved = 0  # replays moved from another window's (full, recorded), not run
        self._held: OrderedDict[tuple, _Held] = OrderedDict()
        self._scores: OrderedDict[tuple, tuple[ReplayResult, Conversation, FactReport]] = OrderedDict()
        # what a replay run here is wrapped in; the widgets set it so their background thread waits meanwhile
        self.guard: Callable[[], AbstractContextManager[Any]] = nullcontext
        self._running: dict[tuple, threading.Event] = {}
        self._lock = threading.Lock()
        self._origins: dict[int, tuple[ReplayResult, ReplayResult]] = {}  # id(moved) -> (moved, the replay it was)
        self._scans: dict = {}  # the block texts' checklist scans (fact_retention_fast's memo), for every replay here
        self._findings: dict = {}  # what the rules find in a message, for every rule-based summarizer run here
        self._counters: dict[Any, CountedOnce] = {}  # a profile's counter -> the one its replays here share
        # FAST's render cache and incremental meters, each meter counting through the shared counters
        self.speedup = Speedup(meter=lambda profile: IncrementalMeter(profile, self.counter(profile)),
                               renderer=lambda: _Pausing(FAST.renderer(), self))
        # called before each request a replay run here renders: the widgets set it so that their background thread
        # waits there while another thread replays (the click's replay does not share the CPU with it)
        self.pause: Callable[[], None] = _nothing

    def counter(self, profile: ModelProfile) -> CountedOnce:
        """The counter every replay run here uses under ``profile``: its own (:func:`~ctxlab.tokens.counter_for`),
        remembering what it counted, shared by every profile with the same one. Chapters 04–08."""
        base = counter_for(profile)
        with self._lock:
            got = self._counters.get(base)
            if got is None:
                got = self._counters[base] = CountedOnce(base)
            return got

    def key(self, conversation: Conversation, strategy: str = "budgeted", *, provider: str | None = None,
            model: str | None = None, window: int | None = None, check: bool = False, warm: bool = False,
            **options: Any) -> tuple | None:
        """What a replay is kept under (None: it cannot be shared, see :func:`options_key`). Chapters 04–08."""
        opts = options_key(strategy, options)
        if opts is None:
            return None
        return (id(conversation), strategy, opts, provider, model, window, bool(warm), bool(check))

    def _answers(self, key: tuple) -> list[tuple]:
        return [key] if key[-1] else [key, key[:-1] + (True,)]  # a checked replay answers an unchecked request

    def run(self, conversation: Conversation, strategy: str = "budgeted", *, provider: str | None = None,
            model: str | None = None, window: int | None = None, check: bool = False, warm: bool = False,
            **options: Any) -> tuple[Strategy, ReplayResult]:
        """The strategy object (holding what it kept, e.g. its last summary) and the replay for this setting: run
        on first demand, then kept. ``strategy`` is a name of :data:`~ctxlab.replay.STRATEGY_NAMES`, ``options``
        its constructor's keywords. Raises what :func:`~ctxlab.replay.replay` raises (a CtxlabError is kept and
        raised again on the next request). Chapters 04–08."""
        settings = {"provider": provider, "model": model, "window": window, "check": check, "warm": warm}
        key = self.key(conversation, strategy, **settings, **options)
        if key is None:
            made = get_strategy(strategy, **options)
            return made, self._replay(conversation, made, settings)
        while True:
            with self._lock:
                held = next((self._held[k] for k in self._answers(key) if k in self._held), None)
                if held is not None:
                    self._held.move_to_end(key if key in self._held else key[:-1] + (True,))
                    self.hits += 1
                    return held.answer()
                running = next((self._running[k] for k in self._answers(key) if k in self._running), None)
                if running is None:
                    done = self._running[key] = threading.Event()
                    break
            running.wait()  # another thread runs it: wait, then read what it left (or run it, if it failed)
        try:
            held = self._moved(key)  # full / recorded held at another window: the same requests, no replay
            if held is None:
                made = share_findings(get_strategy(strategy, **options), self._findings)
                try:
                    held = _Held(conversation, made, self._replay(conversation, made, settings), None)
                except CtxlabError as err:
                    held = _Held(conversation, made, None, err)
            with self._lock:
                self._held[key] = held
                if held.moved_from is not None:
                    self._origins[id(held.result)] = (held.result, self._origins.get(
                        id(held.moved_from), (held.moved_from, held.moved_from))[1])
                self.computed += held.moved_from is None
                self.moved += held.moved_from is not None
                self._evict(key)
        finally:
            with self._lock:
                self._running.pop(key, None)
            done.set()
        return held.answer()

    def _moved_base(self, key: tuple) -> _Held | None:  # under the lock
        if not can_move(key[1], key[2], key[-1]):
            return None
        return next((h for k, h in reversed(self._held.items()) if k[:5] == key[:5] and k[6:] == key[6:]
                     and h.result is not None), None)

    def _moved(self, key: tuple) -> _Held | None:
        """This setting's replay moved from one held at another window (:func:`~ctxlab.lab.replay_windows.at_window`),
        or None."""
        with self._lock:
            base = self._moved_base(key)
        moved = at_window(base.result, key[5]) if base is not None else None
        return None if moved is None else _Held(base.conversation, base.strategy, moved, None, base.result)

    def ready(self, conversation: Conversation, strategy: str = "budgeted", **settings: Any) -> bool:
        """Whether asking for this setting now runs no replay: it is held, or moved in milliseconds from a ``full`` or
        ``recorded`` replay held at another window. Chapters 04 and 08."""
        key = self.key(conversation, strategy, **settings)
        with self._lock:
            return key is not None and (any(k in self._held for k in self._answers(key))
                                        or self._moved_base(key) is not None)

    def replay(self, conversation: Conversation, strategy: str = "budgeted", **settings: Any) -> ReplayResult:
        """The replay alone (:meth:`run`'s second half): ``cache.replay(conv, "sliding", window=30_000)``.
        Chapters 04–08."""
        return self.run(conversation, strategy, **settings)[1]

    def held(self, conversation: Conversation, strategy: str = "budgeted", **settings: Any) -> bool:
        """Whether this setting's replay (or error) is kept: asking for it now runs nothing. Chapters 04–08."""
        key = self.key(conversation, strategy, **settings)
        with self._lock:
            return key is not None and any(k in self._held for k in self._answers(key))

    def forget(self, conversation: Conversation | None = None) -> None:
        """Drop the replays of ``conversation`` (None: every replay). Chapters 04–08."""
        with self._lock:
            for k in [k for k, h in self._held.items() if conversation is None or h.conversation is conversation]:
                del self._held[k]
            for k in [k for k, s in self._scores.items() if conversation is None or s[1] is conversation]:
                del self._scores[k]
            self._prune()
            self._findings.clear()  # they hold messages and texts
            self._scans.clear()

    def __len__(self) -> int:
        return len(self._held)

    @property
    def calls(self) -> int:
        """Model calls held in all (the bound ``max_calls`` applies to it). Chapters 04–08."""
        with self._lock:
            return sum(h.calls for h in self._held.values())

    def _evict(self, keep: tuple) -> None:  # under the lock
        total = sum(h.calls for h in self._held.values())
        while len(self._held) > 1 and (len(self._held) > self.max_replays or total > self.max_calls):
            oldest = next(k for k in self._held if k != keep)
            total -= self._held.pop(oldest).calls
        self._prune()

    def _prune(self) -> None:  # under the lock: forget the origins of moved replays no longer held
        live = {id(h.result) for h in self._held.values()}
        self._origins = {k: v for k, v in self._origins.items() if k in live}

    def retention(self, result: ReplayResult, facts: Sequence[Fact], conversation: Conversation) -> FactReport:
        """:func:`~ctxlab.facts.fact_retention` of a replay, computed once per (replay, checklist, conversation)
        and kept beside the replays; two threads asking at once score it once. Computed by
        :func:`~ctxlab.fast.retention.fact_retention_fast` (the same report), which keeps the block texts' scans
        for the next replay's score. Raises what ``fact_retention``
        raises (ValueError). Chapters 06 and 08."""
        with self._lock:  # a replay moved from another window's scores as that one (the same requests)
            result = self._origins.get(id(result), (result, result))[1]
        key = (id(result), id(conversation), tuple(facts))
        while True:
            with self._lock:
                got = self._scores.get(key)
                if got is not None:
                    return got[2]
                running = self._running.get(("score", key))
                if running is None:
                    done = self._running[("score", key)] = threading.Event()
                    break
            running.wait()  # another thread scores it: wait, then read it (or score it, if that failed)
        try:
            if sum(len(a) + len(b) for a, b in self._scans.values()) > 500_000:
                self._scans.clear()  # bounded: it keeps block texts (the replays hold them too)
            got = (result, conversation, fact_retention_fast(result, facts, conversation, self._scans))  # refs keep ids
            with self._lock:
                self._scores[key] = got
                while len(self._scores) > self.max_replays:
                    self._scores.popitem(last=False)
        finally:
            with self._lock:
                self._running.pop(("score", key), None)
            done.set()
        return got[2]

    def _replay(self, conversation: Conversation, strategy: Strategy, settings: dict[str, Any]) -> ReplayResult:
        with self.guard():  # the widgets' background thread starts no job meanwhile
            return replay(conversation, strategy, speedup=self.speedup, **settings)


REPLAYS = ReplayCache()  # the cache every chapter's lab functions and widgets share

__all__ = ["REPLAYS", "CountedOnce", "ReplayCache", "options_key", "share_findings"]
