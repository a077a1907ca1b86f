"""Chapter 07's policies side by side: strategies and trigger / target pairs on one window, and the pipeline's steps.

Unlike :mod:`ctxlab.lab.ch07_compaction`, which follows one policy call by call (its sawtooth), this
puts many on one table. What it holds:

* :func:`cached_replay` — the replay of one policy (a strategy name or a trigger / target pair), run
  once and kept;
* :func:`policy_rows` — strategies and trigger / target pairs side by side: compactions, prefix rewrites,
  hit rate, cost (summary calls included), facts kept (:class:`PolicyRow`, which chapter 08's leaderboard
  reads too); :func:`policy_grid` — the pairs of a small grid;
* :func:`pipeline_steps` — which step of the decision pipeline each call took.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ctxlab.base.errors import CtxlabError
from ctxlab.facts import Fact
from ctxlab.lab.ch07_compaction import policy_replay, prefix_rewrites, summary_rows, two_decimals
from ctxlab.lab.replays import REPLAYS
from ctxlab.lab.workbook import text_table
from ctxlab.messages import Conversation
from ctxlab.replay import ReplayResult

Policy = str | tuple[float, float]  # a strategy name, or a (trigger, target) pair for ``compaction``

# ---- strategies and policies side by side -------------------------------------------------------------------

@dataclass(frozen=True)
class PolicyRow:
    """One strategy or trigger / target pair at one window. Money in USD; ``facts_*`` None without a checklist.
    Chapter 07 (chapter 08's leaderboard reads the same rows)."""

    name: str
    window: int
    trigger_ratio: float | None
    target_ratio: float | None
    compactions: int = 0
    rewrites: int = 0
    summary_calls: int = 0
    hit_rate: float = 0.0
    cost_usd: float | None = None
    total_input_tokens: int = 0
    max_context: int = 0
    facts_kept: int | None = None
    facts_kept_min: int | None = None
    error: str = ""


def policy_name(policy: Policy) -> str:
    """``"budgeted"`` → ``"budgeted"``; ``(0.8, 0.5)`` → ``"compaction 0.80 → 0.50"``. Chapter 07."""
    if isinstance(policy, str):
        return policy
    return f"compaction {policy[0]:.2f} → {policy[1]:.2f}"


def cached_replay(conversation: Conversation, window: int, policy: Policy, cache: dict | None = None) -> ReplayResult:
    """The replay of one policy — a strategy name, or a (trigger, target) pair for ``compaction`` — kept in
    ``cache`` (keyed by window, policy and metering; the replay itself is the shared one,
    :data:`~ctxlab.lab.replays.REPLAYS`). ``"pipeline"`` runs with the default 80% → 50% policy.
    Raises what :func:`~ctxlab.replay.replay` raises (a :class:`~ctxlab.base.errors.CtxlabError`). Chapter 07."""
    cache = {} if cache is None else cache
    key = (window, policy if isinstance(policy, str) else (two_decimals(policy[0]), two_decimals(policy[1])), "count")
    if key not in cache:
        if not isinstance(policy, str):
            cache[key] = policy_replay(conversation, window, *key[1])
        elif policy == "pipeline":
            cache[key] = policy_replay(conversation, window, strategy="pipeline")
        else:
            cache[key] = REPLAYS.replay(conversation, policy, window=window)
    return cache[key]


def policy_rows(conversation: Conversation, window: int, policies: Sequence[Policy], *,
                facts: Sequence[Fact] | None = None, cache: dict | None = None) -> list[PolicyRow]:
    """One :class:`PolicyRow` per policy: a strategy name (``"budgeted"``, ``"pipeline"``) or a (trigger, target)
    pair for ``compaction``. ``cache`` (a dict) keeps replays between calls; a policy that cannot build gets a
    row with the reason in ``error`` instead of raising. Chapter 07.

    On the sample at 30,000: budgeted → 2 rewrites, $0.6216; (0.8, 0.5) → 2 compactions, $0.8822
    (``tests/test_docstring_numbers.py`` recomputes both)."""
    cache = {} if cache is None else cache
    out = []
    for policy in policies:
        trigger, target = (None, None) if isinstance(policy, str) else (two_decimals(policy[0]),
                                                                         two_decimals(policy[1]))
        try:
            result = cached_replay(conversation, window, policy, cache)
        except CtxlabError as err:
            out.append(PolicyRow(policy_name(policy), window, trigger, target, error=" ".join(str(err).split())[:160]))
            continue
        t = result.ledger.totals()
        kept = REPLAYS.retention(result, facts, conversation) if facts else None
        out.append(PolicyRow(policy_name(policy), window, trigger, target,
                             sum(1 for e in result.new_entries if e.kind == "compaction"), len(prefix_rewrites(result)),
                             len(summary_rows(result)), t.hit_rate, t.cost_usd, t.total_input_tokens,
                             max((rec.context_tokens for rec in result.records), default=0),
                             kept.facts_kept_last if kept else None, kept.facts_kept_min if kept else None))
    return out


POLICY_COLUMNS = ("strategy", "window", "compactions", "prefix rewrites", "summary calls", "hit rate", "cost",
                  "input tokens", "largest context", "facts kept")


def policy_row(r: PolicyRow) -> tuple[Any, ...]:
    """One line of :data:`POLICY_COLUMNS` (an error keeps only the name and the reason). Chapter 07."""
    if r.error:
        return (r.name, r.window, "—", "—", "—", "—", "—", "—", "—", r.error[:60])
    cost = "unpriced" if r.cost_usd is None else f"${r.cost_usd:,.4f}"
    facts = "—" if r.facts_kept is None else f"{r.facts_kept} (min {r.facts_kept_min})"
    return (r.name, r.window, r.compactions, r.rewrites, r.summary_calls, f"{100 * r.hit_rate:.1f}%", cost,
            r.total_input_tokens, r.max_context, facts)


# the columns a core chapter shows: the table stays within 100 characters
SHORT_COLUMNS = ("strategy", "compactions", "prefix rewrites", "summary calls", "hit rate", "cost", "facts kept")


def policy_table(rows: Sequence[PolicyRow], columns: Sequence[str] = SHORT_COLUMNS) -> str:
    """:func:`policy_row` of each row as a text table, only ``columns`` (names of :data:`POLICY_COLUMNS`; an unknown
    name raises ValueError naming it). Chapter 07."""
    unknown = [c for c in columns if c not in POLICY_COLUMNS]
    if unknown:
        raise ValueError(f"policy_table: no column {unknown[0]!r}; the columns are {', '.join(POLICY_COLUMNS)}")
    at = [POLICY_COLUMNS.index(c) for c in columns]
    return text_table([tuple(policy_row(r)[i] for i in at) for r in rows], columns)


GRID_TRIGGERS = (0.6, 0.7, 0.8, 0.9)
GRID_TARGETS = (0.3, 0.5, 0.7)


def policy_grid(triggers: Sequence[float] = GRID_TRIGGERS, targets: Sequence[float] = GRID_TARGETS,
                extra: Sequence[tuple[float, float]] = ((0.8, 0.75),)) -> list[tuple[float, float]]:
    """The (trigger, target) pairs of a small grid, target below trigger, plus ``extra``, sorted.
    → 11 pairs. Chapter 07."""
    pairs = [(a, b) for a in triggers for b in targets if b < a] + [p for p in extra]
    return sorted(set(pairs))


# ---- the decision pipeline ---------------------------------------------------------------------------------------

def pipeline_steps(result: ReplayResult) -> dict[str, int]:
    """Calls of a ``pipeline`` replay by the step that settled them: sent as it was, tool results shrunk (paged or
    pruned) and then under the trigger, or compacted. Chapter 07.

    On the sample at 30,000 → ``{"sent as is": 74, "results shrunk": 2, "compacted": 1}``."""
    out = {"sent as is": 0, "results shrunk": 0, "compacted": 0}
    for rec in result.records:
        if any(n.startswith("compacted") for n in rec.notes):
            out["compacted"] += 1
        elif any("paged or pruned" in n for n in rec.notes):
            out["results shrunk"] += 1
        else:
            out["sent as is"] += 1
    return out
