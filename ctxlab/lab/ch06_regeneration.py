"""Chapter 06's cost of regenerating a summary: every call, on a change or extended; fresh or on the cached prefix.

Unlike :mod:`ctxlab.lab.ch06_summaries` (what a summary keeps), this measures what making it costs:
:func:`regeneration_rows` replays ``budgeted+summary`` under each option of
:class:`~ctxlab.summary_strategy.BudgetedSummaryStrategy` (:data:`REGENERATION_OPTIONS`) and sums the
ledger's summary-call rows apart from the main calls (:class:`RegenerationRow`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ctxlab.lab.replays import REPLAYS
from ctxlab.messages import Conversation
from ctxlab.replay import ReplayResult

REGENERATION_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("every call, fresh (the texts)", {"regenerate": "every_call"}),
    ("every call, on the cached prefix", {"regenerate": "every_call", "on_cached_prefix": True}),
    ("on change, fresh", {"regenerate": "on_change"}),
    ("on change, on the cached prefix", {"regenerate": "on_change", "on_cached_prefix": True}),
    ("extend, fresh (the default)", {}),
    ("extend, on the cached prefix", {"on_cached_prefix": True}),
)
REGENERATION_COLUMNS = ("summary regenerated", "summary calls", "their prompt", "read", "written", "output",
                        "summary cost", "main calls cost", "total", "hit rate")


@dataclass(frozen=True)
class RegenerationRow:
    """One option of :class:`~ctxlab.summary_strategy.BudgetedSummaryStrategy`: how many summaries it made (main calls
    that asked for one) in how many summary calls (a long one is asked in chunks), those rows summed (tokens, USD),
    what the main calls cost, the total and the token-weighted hit rate of the whole ledger. Chapter 06."""

    option: str
    summaries: int
    summary_calls: int
    summary_input_tokens: int
    summary_read_tokens: int
    summary_write_tokens: int
    summary_output_tokens: int
    summary_cost_usd: float
    main_cost_usd: float
    total_cost_usd: float
    hit_rate: float

    def as_row(self) -> tuple[Any, ...]:
        """One line of :data:`REGENERATION_COLUMNS`. Chapter 06."""
        return (self.option, self.summary_calls, self.summary_input_tokens, self.summary_read_tokens,
                self.summary_write_tokens, self.summary_output_tokens, f"${self.summary_cost_usd:,.4f}",
                f"${self.main_cost_usd:,.4f}", f"${self.total_cost_usd:,.4f}", f"{100 * self.hit_rate:.1f}%")


def regeneration_rows(conversation: Conversation, window: int, placement: str = "system_end",
                      options: Sequence[tuple[str, dict[str, Any]]] = REGENERATION_OPTIONS,
                      done: ReplayResult | None = None) -> list[RegenerationRow]:
    """Replay ``budgeted+summary`` under each option at ``window``; sum the ledger's summary-call rows
    (their ``kind`` is ``"summary"``) and the main calls apart. Unpriced rows count as 0. ``done``:
    the replay with the default options (extend, fresh), already run, used for an option without
    settings; the others are the shared replays (:data:`~ctxlab.lab.replays.REPLAYS`). Chapter 06."""
    out = []
    for label, opts in options:
        result = done if done is not None and not opts else REPLAYS.replay(conversation, "budgeted+summary",
                                                                           window=window, placement=placement, **opts)
        side = [r for r in result.ledger.rows if r.kind == "summary"]
        main = [r for r in result.ledger.rows if r.message_id is not None]
        totals = result.ledger.totals()
        made = len({(r.thread, r.call) for r in side})  # a summary's chunks share the main call they were made for
        out.append(RegenerationRow(label, made, len(side), sum(r.total_input_tokens for r in side),
                                   sum(r.cache_read_tokens for r in side), sum(r.cache_write_tokens for r in side),
                                   sum(r.output_tokens for r in side), sum(r.cost_usd or 0.0 for r in side),
                                   sum(r.cost_usd or 0.0 for r in main), totals.cost_usd or 0.0, totals.hit_rate))
    return out

