"""The cheap counters' measured errors, read from ``data/estimators.csv``: chapter 01's table of estimators.

``data/make_estimators_table.py`` writes the file from the held-out half of the shared transcripts (the
estimator itself, and how its weights were fitted, are in :mod:`ctxlab.estimators`); this module only reads
it back as display rows. Taught in chapter 01.
"""

from __future__ import annotations

import csv
from pathlib import Path

from ctxlab.lab.data import ESTIMATOR_TABLE  # one module names every path under data/

ESTIMATOR_COLUMNS = ("counter", "messages", "mean error", "under by > 5%", "worst under-count", "total error",
                     "speed vs tiktoken")


def read_estimator_table(path: str | Path | None = None) -> list[tuple[str, int, str, str, str, str, str]]:
    """The rows of ``data/estimators.csv`` (or of ``path``) as display rows under :data:`ESTIMATOR_COLUMNS`:
    errors as signed percentages of the exact o200k count, speed as a multiple of tiktoken's.
    The exact counter's row: ``("o200k_base", 4572, "+0.0%", "0.0%", "+0.0%", "+0.0%", "1.0x")``. Raises OSError for a missing file and KeyError or
    ValueError for a file without the expected columns. Chapter 01."""
    with open(path or ESTIMATOR_TABLE, encoding="utf-8") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))

    def pct(value: str, sign: str = "+") -> str:
        return f"{100 * float(value):{sign}.1f}%"

    return [(r["counter"], int(r["messages"]), pct(r["mean_error"]), pct(r["under_5pct_share"], ""),
             pct(r["worst_under"]), pct(r["total_error"]), f"{float(r['speed_vs_tiktoken']):,.1f}x") for r in rows]
