"""Growth: how replay time grows with the session, for every strategy, at two windows.

    python bench/growth.py [--quick] [--repeat N] [--only NAME,...]
    (--quick: 250 -> 1,000 calls; --repeat: runs per size, median; --only: these strategies)

The sessions: pi-mono's ``before-compaction.jsonl`` (484 model calls) tiled to 250, 500, 1,000, 2,000 and
4,000 calls (``sessions.tiled_calls``: each copy with its own ids, ten minutes after the one before it). Each
strategy is replayed with ``speedup=FAST`` at two windows:

* **default** — each call's model's own window (Claude Opus 4.5: 200,000 tokens);
* **full** — a window a tenth of the real session's size (its whole history at its last call, counted as
  ``full`` sends it), the same at every size, so the window is full for almost every call: the case the
  strategies exist for.

The figure is the CPU time of one whole replay (``time.process_time``; the median of ``--repeat`` runs, the
spread their range). The growth exponent is the least-squares slope of log(time) on log(calls): 1.0 is a
replay whose time per call does not grow with the session. The encoders and price tables are loaded by a small
replay first, outside every timing. The "per ledger row" exponent is the slope of log(time) on log(ledger rows):
the same as the per-call one for a strategy with one row per call; it differs for ``budgeted+summary``, whose
side calls make ~calls² rows by construction (every chunk of the dropped messages is sent again at each call that
truncates), so for it the per-row figure is the one that says whether its replay does more work per row as the
session grows.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sessions import tiled_calls  # noqa: E402
from timing import SHARED, Goal, Section, growth_exponent, main_for, median, timed  # noqa: E402

SOURCE = SHARED / "pi-mono" / "before-compaction.jsonl"
COMMAND = "python bench/growth.py"
SIZES = (250, 500, 1_000, 2_000, 4_000)
QUICK_SIZES = (250, 500, 1_000)
GOAL, GOAL_FULL = 1.2, 1.3  # every strategy; ``full``, whose prompt really grows


def session_size(conv) -> int:
    """The real session's size in tokens: what ``full`` sends at its last call."""
    from ctxlab.fast import FAST
    from ctxlab.replay import replay

    return max(r.context_tokens for r in replay(conv, "full", speedup=FAST).records)


def run(quick: bool = False, repeat: int | None = None, only: tuple[str, ...] = ()) -> Section:
    sizes = QUICK_SIZES if quick else SIZES
    repeat = repeat or 1
    section = Section("Growth: replay time against session length, every strategy",
                      COMMAND + (" --quick" if quick else ""), intro=__doc__.split("\n\n", 2)[2].strip())
    if not SOURCE.exists():
        section.skipped = f"the shared transcripts are not at {SOURCE.parent.parent} (they sit beside the repository)."
        return section
    from ctxlab.fast import FAST
    from ctxlab.io.formats import load
    from ctxlab.replay import STRATEGY_NAMES, replay

    conv = load(SOURCE).conversation()
    replay(tiled_calls(conv, 20), "full", speedup=FAST)  # load the encoders and price tables, outside the timings
    small = session_size(conv) // 10
    sessions = {n: tiled_calls(conv, n) for n in sizes}
    section.columns = ["strategy", "window", *(f"{n:,} calls" for n in sizes), "exponent", "per ledger row", "goal",
                       "met"]
    worst: list[str] = []
    for window_name, window in (("default", None), (f"full ({small:,})", small)):
        for name in only or STRATEGY_NAMES:
            times, cells, rows = [], [], []
            for n in sizes:
                runs = []
                for _ in range(repeat):
                    timing, result = timed(lambda: replay(sessions[n], name, speedup=FAST, window=window))
                    runs.append(timing.cpu_s)
                    ledger_rows = len(result.ledger.rows)
                    del result  # the records hold every request: free them before the next run
                rows.append(ledger_rows)
                times.append(median(runs))
                spread = f" ({min(runs):.2f}–{max(runs):.2f})" if repeat > 1 else ""
                cells.append(f"{times[-1]:.2f} s{spread}")
            exponent, per_row = growth_exponent(sizes, times), growth_exponent(rows, times)
            goal = GOAL_FULL if name == "full" else GOAL
            section.rows.append([name, window_name, *cells, f"{exponent:.2f}", f"{per_row:.2f}", f"≤ {goal}",
                                 "yes" if exponent <= goal else "**no**"])
            if rows != list(sizes):
                section.notes.append(f"{name} at the {window_name.split()[0]} window: ledger rows "
                                     + " → ".join(f"{r:,}" for r in rows) + f" at {' → '.join(f'{n:,}' for n in sizes)}"
                                     f" calls (rows grow with exponent {growth_exponent(sizes, rows):.2f}); "
                                     f"time per ledger row grows with exponent {per_row - 1:+.2f}.")
            if exponent > goal:
                worst.append(f"{name} at the {window_name.split()[0]} window {exponent:.2f}")
            print(f"  {name:17} {window_name:16} {' '.join(cells)}  exponent {exponent:.2f} (per row {per_row:.2f}, "
                  f"rows {rows})", file=sys.stderr)
    section.goals.append(Goal(f"every strategy's growth exponent ≤ {GOAL} over {sizes[0]:,} → {sizes[-1]:,} calls "
                              f"(full ≤ {GOAL_FULL}), at the default window and with the window full",
                              "all met" if not worst else "above: " + "; ".join(worst), not worst))
    section.notes.append(f"Times per size are the median of {repeat} run(s). The small window is a tenth of the real "
                         f"session's {small * 10:,} tokens: {small:,}.")
    return section


if __name__ == "__main__":
    args = sys.argv[1:]
    reps = int(args[args.index("--repeat") + 1]) if "--repeat" in args else None
    names = tuple(args[args.index("--only") + 1].split(",")) if "--only" in args else ()
    main_for(lambda quick: run(quick, reps, names))
