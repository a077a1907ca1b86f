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
answered by a ``check=True`` replay when one is held (the same ledger, with the violations counted too).
Results are shared: read them, never change them. A pi replay (484 calls) holds about 12 MB, hence the bounds.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, fields
from typing import Any

from ctxlab.base.errors import CtxlabError
from ctxlab.facts import Fact, FactReport, fact_retention
from ctxlab.fast import FAST, IncrementalMeter
from ctxlab.messages import Conversation
from ctxlab.replay import ReplayResult, Speedup, Strategy, get_strategy, replay
from ctxlab.tables.profiles import ModelProfile
from ctxlab.tokens import TokenCounter, counter_for

_PLAIN = (str, int, float, bool, type(None))
_DEFAULTS: dict[str, Strategy] = {}  # strategy name -> an instance with its defaults (compared, never run)


def _plain(value: Any) -> bool:
    """A value that can key a replay: a str, number, bool, None, a tuple of them, or a frozen dataclass of them."""
    if isinstance(value, _PLAIN):
        return True
    if isinstance(value, tuple):
        return all(_plain(v) for v in value)
    params = getattr(value, "__dataclass_params__", None)
    return bool(params is not None and params.frozen and not isinstance(value, type)
                and all(_plain(getattr(value, f.name)) for f in fields(value)))


def options_key(strategy: str, options: dict[str, Any]) -> tuple[tuple[str, Any], ...] | None:
    """The options of ``strategy`` that differ from its defaults, sorted (None: one is not a plain value, so the
    replay cannot be shared). ``options_key("compaction", {"policy": CompactionPolicy(0.8, 0.5)})`` → ``()``,
    the default policy. Raises ValueError for an unknown strategy name. Chapters 04–08."""
    if not all(_plain(v) for v in options.values()):
        return None
    if strategy not in _DEFAULTS:
        _DEFAULTS[strategy] = get_strategy(strategy)
    default = _DEFAULTS[strategy]
    missing = object()
    return tuple(sorted((k, v) for k, v in options.items() if getattr(default, k, missing) != v))


class CountedOnce:
    """A token counter that counts each distinct text once and then remembers it: the same numbers as ``counter``
    (its ``name`` and ``exact`` too). The replays a cache runs share one per counter, so a second strategy's replay
    of a session counts only the texts the first did not (the summaries it writes, say). At most ``max_chars``
    characters of text are remembered (then it starts afresh). ``CountedOnce(counter_for(profile)).count("hi")``
    → what the counter gives. Chapters 04–08."""

    def __init__(self, counter: TokenCounter, max_chars: int = 50_000_000) -> None:
        self.counter, self.max_chars = counter, max_chars
        self.name, self.exact = counter.name, counter.exact
        self._counts: dict[str, int] = {}
        self._chars = 0

    def count(self, text: str) -> int:
        n = self._counts.get(text)
        if n is None:
            n = self.counter.count(text)
            if self._chars + len(text) > self.max_chars:
                self._counts, self._chars = {}, 0
            self._counts[text] = n  # one dict write: safe beside another thread's (the GIL)
            self._chars += len(text)
        return n

    def encode(self, text: str) -> list[int]:
        return self.counter.encode(text)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> Any:  # anything else a counter offers (encoding_name, calibration, ...)
        if name == "counter":
            raise AttributeError(name)
        return getattr(self.counter, name)

    def __repr__(self) -> str:
        return f"CountedOnce({self.counter!r})"


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
        self._held: OrderedDict[tuple, _Held] = OrderedDict()
        self._scores: OrderedDict[tuple, tuple[ReplayResult, Conversation, FactReport]] = OrderedDict()
        # what a replay run here is wrapped in; the widgets set it so their background thread waits meanwhile
        self.guard: Callable[[], AbstractContextManager[Any]] = nullcontext
        self._running: dict[tuple, threading.Event] = {}
        self._lock = threading.Lock()
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
            made = get_strategy(strategy, **options)
            try:
                held = _Held(conversation, made, self._replay(conversation, made, settings), None)
            except CtxlabError as err:
                held = _Held(conversation, made, None, err)
            with self._lock:
                self._held[key] = held
                self.computed += 1
                self._evict(key)
        finally:
            with self._lock:
                self._running.pop(key, None)
            done.set()
        return held.answer()

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

    def retention(self, result: ReplayResult, facts: Sequence[Fact], conversation: Conversation) -> FactReport:
        """:func:`~ctxlab.facts.fact_retention` of a replay, computed once per (replay, checklist, conversation)
        and kept beside the replays; two threads asking at once score it once. Raises what ``fact_retention``
        raises (ValueError). Chapters 06 and 08."""
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
            got = (result, conversation, fact_retention(result, facts, conversation))  # the refs keep the ids
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

__all__ = ["REPLAYS", "CountedOnce", "ReplayCache", "options_key"]
