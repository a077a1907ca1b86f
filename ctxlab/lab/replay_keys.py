"""What keys a shared replay and what its replays share: the options that name a setting, and one token count per
text (chapters 04–08).

:data:`ctxlab.lab.replays.REPLAYS` keeps one replay per setting; a setting's strategy part is its name and
:func:`options_key`, the options that differ from its defaults (None: one is not a plain value, so the replay
cannot be shared). :class:`CountedOnce` is the counter every replay run there counts through, so that a text
counted once is not counted again by the next replay, and :func:`share_findings` gives every rule-based summarizer
of the replays run there one memo of what its rules find in a message (a pure function of the message:
``RuleBasedSummarizer.memo``), so that ``compaction`` at a second window, or ``pipeline`` after ``compaction``,
does not read again the messages another replay summarised. Re-exported by :mod:`ctxlab.lab.replays`.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

from ctxlab.compaction import CompactionStrategy
from ctxlab.replay import Strategy, get_strategy
from ctxlab.summary import RuleBasedSummarizer
from ctxlab.tokens import TokenCounter

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


def share_findings(strategy: Strategy, memo: dict, max_entries: int = 200_000) -> Strategy:
    """``strategy`` (just made, not run yet) with its rule-based summarizer — its own (``budgeted+summary``), its
    compaction's (``pipeline``), or the default one it would make on its first summary (``compaction``) — reading
    and filling ``memo`` (message -> what the rules find in it; emptied past ``max_entries``). The same summaries,
    sooner: the rules' findings depend on the message alone. Any other summarizer is left alone. Chapters 06–08."""
    if len(memo) > max_entries:
        memo.clear()
    for holder in (strategy, getattr(strategy, "compaction", None)):
        summarizer = getattr(holder, "summarizer", None)
        if isinstance(holder, CompactionStrategy) and summarizer is None:  # the default it makes on its first summary
            holder.summarizer = RuleBasedSummarizer(memo=memo)
        elif type(summarizer) is RuleBasedSummarizer and not summarizer.memo:
            holder.summarizer = replace(summarizer, memo=memo)  # type: ignore[union-attr]
    return strategy


__all__ = ["CountedOnce", "options_key", "share_findings"]
