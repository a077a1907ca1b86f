"""Estimators against the exact o200k_base count: chars/3, chars/4 and ctxlab's script-aware estimator.

    python bench/estimator_table.py

The same table as ``data/estimators.csv`` (``python data/make_estimators_table.py`` writes that one,
and chapter 01 prints it), measured again in this run: errors on the reporting half of the shared
transcripts — the half ``bench/fit_estimator.py`` did not fit the weights on — and speed relative to
tiktoken. Errors are (estimate − exact) / exact per message.

Speed is measured here, not taken from ``make_estimators_table.py`` (which times tiktoken first, then
each counter after it: a change of load in between moved the same code's ratio from 4.8x to 8.8x). The
texts are cut into slices; every counter (and tiktoken) counts a slice, in an order that rotates, before
the next slice starts, so both sides of a ratio share the machine's load slice by slice. CPU time, the
garbage collector off; a round is one pass over every text, and the figure is the median round's ratio.
"tiktoken" is ``Encoding.encode`` with the encoding looked up once — tiktoken's own entry point, as each
estimator is timed through its own ``count``; ctxlab's ``TiktokenCounter.count`` (row o200k_base) adds
a wrapper around it.
"""

from __future__ import annotations

import csv
import gc
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data"))

from timing import ROOT, SHARED, Goal, Section, main_for  # noqa: E402

COMMAND = "python bench/estimator_table.py"
ROUNDS, BATCHES = 9, 40  # rounds (--quick: 3); slices of the texts, each timed for every counter in turn


def interleaved(counters: dict[str, Callable[[str], object]], texts: Sequence[str], rounds: int,
                batches: int = BATCHES) -> list[dict[str, float]]:
    """CPU seconds of one pass over ``texts`` per counter, in each of ``rounds`` rounds. Within a round the
    texts are cut into ``batches`` slices and every counter counts a slice before the next slice starts
    (in an order that rotates), so each counter's pass spans the same stretch of time as the others'."""
    names, size, per_round = list(counters), max(1, -(-len(texts) // batches)), []
    enabled = gc.isenabled()
    gc.disable()
    try:
        for r in range(rounds):
            seconds = dict.fromkeys(names, 0.0)
            for k, lo in enumerate(range(0, len(texts), size)):
                chunk, turn = texts[lo:lo + size], (r + k) % len(names)
                for name in names[turn:] + names[:turn]:
                    count, start = counters[name], time.process_time()
                    for t in chunk:
                        count(t)
                    seconds[name] += time.process_time() - start
            per_round.append(seconds)
    finally:
        if enabled:
            gc.enable()
    return per_round


def median(values: Sequence[float]) -> float:
    s = sorted(values)
    return (s[(len(s) - 1) // 2] + s[len(s) // 2]) / 2


def run(quick: bool = False) -> Section:
    section = Section("Token estimators on the shared transcripts", COMMAND, intro=__doc__.split("\n\n", 2)[2].strip())
    from make_estimators_table import COLUMNS, SOURCES, corpus, table

    if not all((SHARED / name).exists() for name, _, _ in SOURCES):
        section.skipped = f"the shared transcripts are not at {SHARED} (they sit beside the repository)."
        return section
    from ctxlab.estimators import get_counter
    from ctxlab.tables.offline_encodings import get_encoding

    rows = table(SHARED)
    texts = [t for m in corpus(SHARED)[1] for t in m]
    encoding = get_encoding("o200k_base")
    counters = {"tiktoken": lambda t: len(encoding.encode(t, disallowed_special=())),
                **{str(r["counter"]): get_counter(str(r["counter"])).count for r in rows}}
    per_round = interleaved(counters, texts, 3 if quick else ROUNDS)
    speeds = {n: [s["tiktoken"] / max(s[n], 1e-9) for s in per_round] for n in counters}
    for r in rows:  # this run's interleaved figure (the median round) replaces the table's sequential one
        r["speed_vs_tiktoken"] = f"{median(speeds[str(r['counter'])]):.1f}"
    section.columns = list(COLUMNS)
    section.rows = [[r[c] for c in COLUMNS] for r in rows]
    ours = next(r for r in rows if r["counter"] == "script-aware")
    ms = {n: 1e3 * median([s[n] for s in per_round]) for n in counters}
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
    section.notes.append(f"Speed: {len(texts):,} texts ({sum(map(len, texts)):,} characters) in {BATCHES} slices, "
                         f"{len(per_round)} rounds; median pass: tiktoken {ms['tiktoken']:,.1f} ms, script-aware "
                         f"{ms['script-aware']:,.1f} ms, TiktokenCounter.count {ms['o200k_base']:,.1f} ms CPU. "
                         f"script-aware was {min(speeds['script-aware']):.1f}x to {max(speeds['script-aware']):.1f}x "
                         "tiktoken across the rounds. chars/N only measures len(), which is why it is so fast and "
                         "so wrong on Chinese and base64.")
    return section


if __name__ == "__main__":
    main_for(run)
