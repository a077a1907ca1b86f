"""Interactive latency: the budget slider (chapter 03) and the ledger's strategy and provider (chapter 04).

    python bench/widget_latency.py [--quick]      (--quick: 1,000 messages instead of 2,000)

The session: the bundled sample tiled to 2,000 messages (``sessions.py``, each copy a day later), as
Claude Sonnet 4.5 recorded it. Each change is made the way a person makes it — setting the control's
value, which runs the widget's observer: compute, then redraw — and timed in Python around that
assignment (CPU seconds, and wall seconds as a person waits; the machine may be shared).

* ``BudgetWidget``: the slider moves to 10 budgets spread over its range. Its meter is incremental,
  so after the first build a move only walks the units again (``incremental.py``).
* ``LedgerWidget(..., precompute=True)``: every strategy is replayed under both providers' cache
  rules when the widget opens (the load time below), so a strategy or provider change shows numbers
  already computed. Without it, a change replays the whole session (the last row).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sessions import conversation, tiled  # noqa: E402
from timing import Goal, Section, main_for, median, ms, timed  # noqa: E402

COMMAND = "python bench/widget_latency.py"


def run(quick: bool = False) -> Section:
    from ctxlab.widgets.ch03_budget import BudgetWidget
    from ctxlab.lab.ch04_replays import PROVIDERS, STRATEGIES
    from ctxlab.widgets.ch04_ledger import LedgerWidget

    n = 1_000 if quick else 2_000
    section = Section(f"Interactive latency on a {n:,}-message session", COMMAND + (" --quick" if quick else ""),
                      intro=__doc__.split("\n\n", 2)[2].strip())
    conv = conversation(tiled(n), "claude-sonnet-4-5", "anthropic")
    section.columns = ["widget", "what", "changes", "median (CPU)", "worst (CPU)", "median (wall)", "worst (wall)"]

    load, budget = timed(lambda: BudgetWidget(conv))
    section.rows.append(["BudgetWidget", "open (first build, every message counted)", 1, ms(load.cpu_s), "",
                         ms(load.wall_s), ""])
    moves = []
    for value in budget.spread(tuple(k / 10 + 0.05 for k in range(10))):
        moves.append(timed(lambda: setattr(budget.budget, "value", value))[0])
    section.rows.append(_row("BudgetWidget", "move the budget slider", moves))

    load, ledger = timed(lambda: LedgerWidget(conv, precompute=True))
    section.rows.append(["LedgerWidget", f"open with precompute ({len(STRATEGIES)} strategies x "
                         f"{len(PROVIDERS)} providers replayed)", 1, ms(load.cpu_s), "", ms(load.wall_s), ""])
    strategy_changes, provider_changes = [], []
    for provider in PROVIDERS:
        provider_changes.append(timed(lambda: setattr(ledger.provider, "value", provider))[0])
        for strategy in (*STRATEGIES[1:], STRATEGIES[0]):
            strategy_changes.append(timed(lambda: setattr(ledger.strategy, "value", strategy))[0])
    section.rows.append(_row("LedgerWidget", "change the strategy", strategy_changes))
    section.rows.append(_row("LedgerWidget", "change the provider", provider_changes))
    fresh = LedgerWidget(conv)
    cold = timed(lambda: setattr(fresh.strategy, "value", "budgeted"))[0]
    section.rows.append(["LedgerWidget", "change the strategy, no precompute (replays the session)", 1,
                         ms(cold.cpu_s), "", ms(cold.wall_s), ""])

    slider = max(t.cpu_s for t in moves)
    switch = max(t.cpu_s for t in strategy_changes + provider_changes)
    section.goals.append(Goal("budget-slider update ≤ 50 ms", f"worst {ms(slider)} CPU "
                              f"({ms(max(t.wall_s for t in moves))} wall)", slider <= 0.05))
    section.goals.append(Goal("strategy or provider change in the ledger widget ≤ 300 ms", f"worst {ms(switch)} CPU "
                              f"({ms(max(t.wall_s for t in strategy_changes + provider_changes))} wall), "
                              "with precompute at load", switch <= 0.3))
    section.notes.append("Precompute is the honest way for the ledger: one replay of this session takes seconds "
                         "(the last row), so the widget pays for all of them once, when it opens. Most of that load "
                         "is the `sliding` strategy, which groups the whole history into units at every call "
                         "(strategies.py).")
    return section


def _row(widget: str, what: str, times) -> list:
    cpu, wall = [t.cpu_s for t in times], [t.wall_s for t in times]
    return [widget, what, len(times), ms(median(cpu)), ms(max(cpu)), ms(median(wall)), ms(max(wall))]


if __name__ == "__main__":
    main_for(run)
