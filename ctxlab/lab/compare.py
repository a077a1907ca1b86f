"""Every strategy side by side on one transcript: the leaderboard (chapter 08).

One row per strategy: total cost (USD, the summary calls included), token-weighted hit rate,
compactions, summary calls, overflows — every model call over the window, a summary call's included
(a summary call is a model call: its prompt plus its reply's ``max_tokens`` must fit the window), and
how many of them were summary calls — total input tokens, and — given a fact checklist — how many
facts the model could still see at the last call and at the worst call. ``recorded`` joins
when the transcript recorded compactions of its own (what the real agent did). A strategy that
cannot build a context (a unit larger than the budget) gets a row that says why instead of numbers.

:func:`compare_row` builds the one row of one replay (the only copy: :func:`leaderboard`, the CLI and
``data/make_leaderboard.py`` all use it); :func:`leaderboard` keeps each replay beside its row (so a
widget can show a ledger without replaying), and takes its replays from the cache the chapters share
(:data:`ctxlab.lab.replays.REPLAYS`: a strategy replayed by an earlier cell, at the same window, is not
replayed again); :func:`compare` is its rows. Taught in chapter 08; ``python -m ctxlab replay FILE --compare``
prints it.
"""

from __future__ import annotations

import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from ctxlab.base.errors import CtxlabError
from ctxlab.base.safe_text import shown
from ctxlab.facts import Fact
from ctxlab.lab.replays import REPLAYS
from ctxlab.messages import Conversation, Entry
from ctxlab.replay import ReplayResult

WIDTH = 100  # the widest line format_rows prints
STRATEGIES = ("full", "sliding", "budgeted", "pruned", "paged", "budgeted+summary", "compaction", "pipeline")


@dataclass(frozen=True)
class CompareRow:
    """One strategy's totals (costs in USD, tokens summed over its ledger). ``overflows``: its model calls over the
    window, main and summary calls; ``summary_overflows``: how many of them were summary calls. ``facts_kept`` /
    ``facts_kept_min`` are None without a checklist; ``error``: why the strategy could not build a context;
    ``contexts``: the contexts it built (one per main call replayed; None when not known, as in a committed
    table); ``first_violation``: the call and rule of its first violation. Chapter 08."""

    name: str
    cost_usd: float | None
    hit_rate: float | None
    compactions: int
    summary_calls: int
    overflows: int
    total_input_tokens: int
    facts_kept: int | None = None
    facts_kept_min: int | None = None
    violations: int = 0
    error: str | None = None
    summary_overflows: int = 0
    contexts: int | None = None
    first_violation: str | None = None

    def as_dict(self) -> dict:
        """The row as a plain dict (what ``--json`` prints). Chapter 08."""
        return asdict(self)


def strategies_for(conversation: Conversation) -> tuple[str, ...]:
    """The leaderboard's strategies; ``recorded`` when the transcript holds compactions of its own. Chapter 08."""
    recorded = any(isinstance(i, Entry) and i.kind == "compaction" for i in conversation.items)
    return STRATEGIES + (("recorded",) if recorded else ())


def compare_row(name: str, result: ReplayResult, conversation: Conversation,
                facts: Sequence[Fact] | None = None) -> CompareRow:
    """The leaderboard row of one replay of ``conversation``: its ledger's totals, the compactions it made, its
    summary calls (ledger rows of ``kind`` ``"summary"``), the calls over the window (the ledger's overflow rows,
    summary calls included), the invariant violations and, given ``facts``, the checklist kept
    (:func:`~ctxlab.facts.fact_retention`, scored once per replay by
    :meth:`~ctxlab.lab.replays.ReplayCache.retention`). Chapter 08."""
    totals = result.ledger.totals()
    kept = REPLAYS.retention(result, facts, conversation) if facts else None
    over = [r for r in result.ledger.rows if r.overflow]
    first = next((f"call {rec.call.index} of thread {rec.call.thread!r}: {v}" for rec in result.records
                  for v in rec.violations), None)
    return CompareRow(
        name=name, cost_usd=totals.cost_usd, hit_rate=totals.hit_rate,
        compactions=sum(1 for e in result.new_entries if e.kind == "compaction"),
        summary_calls=sum(1 for r in result.ledger.rows if r.kind == "summary"),
        overflows=len(over), total_input_tokens=totals.total_input_tokens,
        facts_kept=kept.facts_kept_last if kept else None, facts_kept_min=kept.facts_kept_min if kept else None,
        violations=sum(len(r.violations) for r in result.records),
        summary_overflows=sum(1 for r in over if r.kind == "summary"), contexts=len(result.records),
        first_violation=first)


@dataclass(frozen=True)
class Leaderboard:
    """Every strategy at one window (tokens; None: the model's own): the rows (as :func:`compare` gives them),
    each replay that built its contexts, by strategy name, and the seconds it all took. Chapter 08."""

    window: int | None
    rows: tuple[CompareRow, ...]
    results: dict[str, ReplayResult]
    seconds: float

    def row(self, name: str) -> CompareRow:
        """The row of strategy ``name`` (StopIteration when it is not on the board). Chapter 08."""
        return next(r for r in self.rows if r.name == name)


def leaderboard(conversation: Conversation, strategies: Sequence[str] | None = None, *, window: int | None = None,
                provider: str | None = None, model: str | None = None, facts: Sequence[Fact] | None = None,
                check: bool = True, progress: Callable[[str], None] | None = None) -> Leaderboard:
    """Replay ``conversation`` under each strategy (default: :func:`strategies_for`), keeping the replays.

    ``leaderboard(sample, window=30_000, facts=load_facts(SAMPLE_FACTS)).row("compaction").cost_usd`` → 0.8822
    (``tests/test_docstring_numbers.py`` checks it).
    A strategy that cannot build a context gets a row with ``error`` (the whole message, on one line) and no
    replay. The replays come from :data:`~ctxlab.lab.replays.REPLAYS` (run there on first demand);
    ``progress(name)`` is called after each strategy's row (a widget's progress bar). Chapter 08.
    """
    started = time.perf_counter()
    rows, results = [], {}
    for name in strategies or strategies_for(conversation):
        try:
            result = REPLAYS.replay(conversation, name, window=window, provider=provider, model=model, check=check)
        except CtxlabError as err:
            rows.append(CompareRow(name, None, None, 0, 0, 0, 0, error=" ".join(str(err).split()), contexts=0))
        else:
            results[name] = result
            rows.append(compare_row(name, result, conversation, facts))
        if progress is not None:
            progress(name)
    return Leaderboard(window, tuple(rows), results, time.perf_counter() - started)


def compare(conversation: Conversation, strategies: Sequence[str] | None = None, *, window: int | None = None,
            provider: str | None = None, model: str | None = None,
            facts: Sequence[Fact] | None = None, check: bool = True,
            progress: Callable[[str], None] | None = None) -> list[CompareRow]:
    """Replay ``conversation`` under each strategy; one :class:`CompareRow` each, in the order given (the rows
    of :func:`leaderboard`; ``progress(name)`` after each). Chapter 08."""
    return list(leaderboard(conversation, strategies, window=window, provider=provider, model=model, facts=facts,
                            check=check, progress=progress).rows)


def format_rows(rows: Sequence[CompareRow]) -> str:
    """The leaderboard as a text table of lines ≤ 100 characters (what the chapters print under their figure; the
    input tokens are in :meth:`CompareRow.as_dict` and ``--json``). ``overflows`` counts every call over the window,
    ``in summaries`` how many of them were summary calls. A strategy that cannot build a context gets its error,
    wrapped at 100 characters. Names and errors are shown one line each, keys masked and control characters
    escaped (:func:`ctxlab.base.safe_text.shown`). Chapter 08."""
    head = f"{'strategy':<17} {'cost':>10} {'hit rate':>8} {'compactions':>11} {'summaries':>9} " \
           f"{'overflows':>9} {'in summaries':>12} {'facts kept':>12}"
    lines = [head, "-" * len(head)]
    for r in rows:
        if r.error:
            error = r.error if len(r.error) <= 160 else r.error[:159] + "…"  # whole in as_dict() and --json
            lines += textwrap.wrap(f"{shown(r.name):<17} cannot build a context: {shown(error)}", WIDTH,
                                   subsequent_indent=" " * 18, break_on_hyphens=False)
            continue
        cost = f"${r.cost_usd:,.4f}" if r.cost_usd is not None else "unpriced"
        facts = f"{r.facts_kept} (min {r.facts_kept_min})" if r.facts_kept is not None else "—"
        lines.append(f"{shown(r.name):<17} {cost:>10} {r.hit_rate:>8.1%} {r.compactions:>11} {r.summary_calls:>9} "
                     f"{r.overflows:>9} {r.summary_overflows:>12} {facts:>12}")
    return "\n".join(lines)
