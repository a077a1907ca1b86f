"""Estimators against the exact o200k_base count: chars/3, chars/4 and ctxlab's script-aware estimator.

    python bench/estimator_table.py

The same table as ``data/estimators.csv`` (``python data/make_estimators_table.py`` writes that one,
and chapter 01 prints it), measured again in this run: errors on the reporting half of the shared
transcripts — the half ``bench/fit_estimator.py`` did not fit the weights on — and speed relative to
tiktoken through the same ``count`` call. Errors are (estimate − exact) / exact per message.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data"))

from timing import ROOT, SHARED, Goal, Section, main_for  # noqa: E402

COMMAND = "python bench/estimator_table.py"


def run(quick: bool = False) -> Section:
    section = Section("Token estimators on the shared transcripts", COMMAND, intro=__doc__.split("\n\n", 2)[2].strip())
    from make_estimators_table import COLUMNS, SOURCES, table

    if not all((SHARED / name).exists() for name, _, _ in SOURCES):
        section.skipped = f"the shared transcripts are not at {SHARED} (they sit beside the repository)."
        return section
    rows = table(SHARED)
    section.columns = list(COLUMNS)
    section.rows = [[r[c] for c in COLUMNS] for r in rows]
    ours = next(r for r in rows if r["counter"] == "script-aware")
    under, total, speed = float(ours["under_5pct_share"]), float(ours["total_error"]), float(ours["speed_vs_tiktoken"])
    section.goals += [
        Goal("script-aware: under-counts by more than 5% on fewer than 1% of messages", f"{100 * under:.2f}%", under < 0.01),
        Goal("script-aware: token-weighted total over-count ≤ 15%", f"{100 * total:+.1f}%", 0 <= total <= 0.15),
        Goal("script-aware: ≥ 5x faster than tiktoken", f"{speed:.1f}x", speed >= 5),
    ]
    committed = ROOT / "data" / "estimators.csv"
    if committed.exists():
        with committed.open(encoding="utf-8") as f:
            saved = {r["counter"]: r for r in csv.DictReader(line for line in f if not line.startswith("#"))}
        same = all(saved.get(r["counter"], {}).get(c) == str(r[c]) for r in rows for c in COLUMNS
                   if c != "speed_vs_tiktoken")
        section.notes.append("data/estimators.csv " + ("holds the same errors (speed differs by machine and run)." if same
                             else "differs from this run: regenerate it with `python data/make_estimators_table.py`."))
    section.notes.append("Speed counts every text of the reporting half once, best of 5 passes, CPU time; chars/N only "
                         "measures len(), which is why it is so fast and so wrong on Chinese and base64.")
    return section


if __name__ == "__main__":
    main_for(run)
