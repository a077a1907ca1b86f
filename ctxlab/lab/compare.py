"""Every strategy side by side on one transcript: the leaderboard.

One row per strategy: total cost (USD, the summary calls included), token-weighted hit rate,
compactions, summary calls, overflows, total input tokens, and — given a fact checklist — how
many facts the model could still see at the last call and at the worst call. ``recorded`` joins
when the transcript recorded compactions of its own (what the real agent did). A strategy that
cannot build a context (a unit larger than the budget) gets a row that says why instead of numbers.
Taught in chapter 08; ``python -m ctxlab replay FILE --compare`` prints it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

from ctxlab.base.errors import CtxlabError
from ctxlab.facts import Fact, fact_retention
from ctxlab.messages import Conversation, Entry
from ctxlab.replay import replay
from ctxlab.base.safe_text import shown

STRATEGIES = ("full", "sliding", "budgeted", "pruned", "paged", "budgeted+summary", "compaction", "pipeline")


@dataclass(frozen=True)
class CompareRow:
    """One strategy's totals. ``facts_kept`` / ``facts_kept_min`` are None without a checklist."""

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

    def as_dict(self) -> dict:
        return asdict(self)


def strategies_for(conversation: Conversation) -> tuple[str, ...]:
    """The leaderboard's strategies; ``recorded`` when the transcript holds compactions of its own."""
    recorded = any(isinstance(i, Entry) and i.kind == "compaction" for i in conversation.items)
    return STRATEGIES + (("recorded",) if recorded else ())


def compare(conversation: Conversation, strategies: Sequence[str] | None = None, *, window: int | None = None,
            provider: str | None = None, model: str | None = None,
            facts: Sequence[Fact] | None = None, check: bool = True) -> list[CompareRow]:
    """Replay ``conversation`` under each strategy; one :class:`CompareRow` each, in the order given."""
    rows = []
    for name in strategies or strategies_for(conversation):
        try:
            result = replay(conversation, name, window=window, provider=provider, model=model, check=check)
        except CtxlabError as err:
            rows.append(CompareRow(name, None, None, 0, 0, 0, 0, error=" ".join(str(err).split())))
            continue
        totals = result.ledger.totals()
        kept = fact_retention(result, facts, conversation) if facts else None
        rows.append(CompareRow(
            name=name, cost_usd=totals.cost_usd, hit_rate=totals.hit_rate,
            compactions=sum(1 for e in result.new_entries if e.kind == "compaction"),
            summary_calls=sum(1 for r in result.ledger.rows if r.note.startswith("summary call")),
            overflows=sum(1 for r in result.records if r.overflow), total_input_tokens=totals.total_input_tokens,
            facts_kept=kept.facts_kept_last if kept else None, facts_kept_min=kept.facts_kept_min if kept else None,
            violations=sum(len(r.violations) for r in result.records)))
    return rows


def format_rows(rows: Sequence[CompareRow]) -> str:
    """The leaderboard as a text table (what the chapters print under their figure). Names and errors are
    shown one line each, keys masked and control characters escaped (:func:`ctxlab.base.safe_text.shown`)."""
    head = f"{'strategy':<17} {'cost':>10} {'hit rate':>8} {'compactions':>11} {'summaries':>9} " \
           f"{'overflows':>9} {'input tokens':>13} {'facts kept':>10}"
    lines = [head, "-" * len(head)]
    for r in rows:
        if r.error:
            error = r.error if len(r.error) <= 160 else r.error[:159] + "…"  # whole in as_dict() and --json
            lines.append(f"{shown(r.name):<17} cannot build a context: {shown(error)}")
            continue
        cost = f"${r.cost_usd:,.4f}" if r.cost_usd is not None else "unpriced"
        facts = f"{r.facts_kept} (min {r.facts_kept_min})" if r.facts_kept is not None else "—"
        lines.append(f"{shown(r.name):<17} {cost:>10} {r.hit_rate:>8.1%} {r.compactions:>11} {r.summary_calls:>9} "
                     f"{r.overflows:>9} {r.total_input_tokens:>13,} {facts:>10}")
    return "\n".join(lines)
