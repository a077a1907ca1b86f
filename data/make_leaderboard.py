"""Write data/leaderboard_pi.csv: every strategy replayed on one real pi session, and compaction policies side by side.

Source: https://github.com/badlogic/pi-mono, packages/coding-agent/test/fixtures/before-compaction.jsonl at
commit 83378aad7e74a0e2bb8f37c007a9685fb4609d8a (MIT, Copyright (c) 2025 Mario Zechner), read from the shared
copy ../shared/data/transcripts/pi-mono/ (or the path given as the first argument); facts kept are scored
against the hand-written checklist data/pi_facts.json. Only figures ctxlab computes are written — no text of
the session. The file opens with ``# key: value`` comment lines naming the source, licence and settings.

Two sections, one row per strategy or policy:

    leaderboard   every strategy of ``ctxlab.lab.compare`` (and ``recorded``: what pi sent, its own two compactions
                  applied) at the model's window, 200,000 — the rows of
                  ``python -m ctxlab replay FILE --compare --facts data/pi_facts.json`` (chapter 08)
    policies      ``budgeted`` and ``compaction`` with the trigger / target pairs of chapter 07's grid, at half
                  that window (100,000), where compaction happens often enough for the policies to differ

Columns: section, window (tokens), name, trigger_ratio and target_ratio (compaction's policy; empty for the
others), cost_usd (every ledger row, summary calls included; 6 decimals), hit_rate (token-weighted; 6
decimals), compactions (made by the strategy), summary_calls, overflows (calls over the window), prefix_rewrites
(calls whose request changed history the previous request had sent), total_input_tokens, largest_context
(tokens), facts_kept and facts_kept_min (of the checklist, at the last call and at the worst call), violations
(broken invariants, ``ctxlab.checks``), error (why a strategy could not build a context).

Run ``python data/make_leaderboard.py [SOURCE.jsonl] [OUTDIR]``; it skips, writing nothing, when the source is
absent. The replays run in parallel (one process per core): about a minute and a half on two cores.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from csv_text import csv_text  # data/csv_text.py, beside this script
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:  # run from a clone without installing ctxlab
    sys.path.insert(0, str(HERE.parent))

from ctxlab.lab.compare import compare_row, strategies_for  # noqa: E402
from ctxlab.io.checklist import load_facts  # noqa: E402
from ctxlab.messages import Entry  # noqa: E402
from ctxlab.tables.profiles import profile_for  # noqa: E402
from ctxlab.replay import replay  # noqa: E402
from ctxlab.fast import FAST  # noqa: E402  (the same rows as the plain replay, faster)
from ctxlab.strategies import model_calls  # noqa: E402
from ctxlab.lab.ch07_compaction import policy_replay, prefix_rewrites  # noqa: E402
from ctxlab.lab.ch07_policies import policy_grid  # noqa: E402
from ctxlab.lab.ch08_leaderboard import CSV_COLUMNS  # noqa: E402
from ctxlab.lab.workbook import load_workbook_conversation  # noqa: E402

DEFAULT_SOURCE = HERE.parent.parent / "shared" / "data" / "transcripts" / "pi-mono" / "before-compaction.jsonl"
FACTS = HERE / "pi_facts.json"
POLICY_WINDOW = 100_000
HEADER = (
    ("what", "every strategy replayed on one real pi session, and compaction policies side by side"),
    ("written_by", "python data/make_leaderboard.py (do not edit by hand)"),
    ("source", "https://github.com/badlogic/pi-mono packages/coding-agent/test/fixtures/before-compaction.jsonl "
               "@ 83378aad7e74a0e2bb8f37c007a9685fb4609d8a"),
    ("licence", "MIT, Copyright (c) 2025 Mario Zechner (full notice in data/README.md)"),
    ("read_from", "../shared/data/transcripts/pi-mono/before-compaction.jsonl"),
    ("numbers_only", "figures ctxlab computes; no text of the session"),
)

_STATE: dict[str, Any] = {}  # per worker process: the conversation and the checklist


def _load(source: str) -> None:
    _STATE["conv"] = load_workbook_conversation(source)
    _STATE["facts"] = load_facts(FACTS)


def _row(task: tuple[str, int | None, str, float | None, float | None]) -> dict[str, object]:
    """One CSV row: replay the task's strategy or policy (invariants checked) and score it."""
    section, window, name, trigger, target = task
    conv, facts = _STATE["conv"], _STATE["facts"]
    if trigger is None:
        result = replay(conv, name, window=window, check=True, speedup=FAST)
    else:
        result = policy_replay(conv, window or 0, trigger, target or 0.0, check=True)
    r = compare_row(name, result, conv, facts)
    shown = window or profile_for(conv.model).context_window
    return {"section": section, "window": shown, "name": name, "trigger_ratio": "" if trigger is None else trigger,
            "target_ratio": "" if target is None else target,
            "cost_usd": "" if r.cost_usd is None else f"{r.cost_usd:.6f}",
            "hit_rate": f"{r.hit_rate:.6f}", "compactions": r.compactions, "summary_calls": r.summary_calls,
            "overflows": r.overflows, "prefix_rewrites": len(prefix_rewrites(result)),
            "total_input_tokens": r.total_input_tokens,
            "largest_context": max((rec.context_tokens for rec in result.records), default=0),
            "facts_kept": "" if r.facts_kept is None else r.facts_kept,
            "facts_kept_min": "" if r.facts_kept_min is None else r.facts_kept_min,
            "violations": r.violations, "error": r.error or ""}


def tasks(source: Path) -> list[tuple[str, int | None, str, float | None, float | None]]:
    """(section, window, name, trigger, target) per row, in file order."""
    conv = load_workbook_conversation(source)
    out: list[tuple[str, int | None, str, float | None, float | None]] = [
        ("leaderboard", None, name, None, None) for name in strategies_for(conv)]
    out.append(("policies", POLICY_WINDOW, "budgeted", None, None))
    out += [("policies", POLICY_WINDOW, "compaction", a, b) for a, b in policy_grid()]
    return out


def leaderboard_rows(source: Path, workers: int | None = None) -> list[dict[str, object]]:
    """Every row, computed in parallel (each worker loads the transcript once); the order is the tasks' order."""
    todo = tasks(source)
    workers = workers or min(len(todo), os.cpu_count() or 1)
    if workers <= 1:
        _load(str(source))
        return [_row(t) for t in todo]
    with ProcessPoolExecutor(max_workers=workers, initializer=_load, initargs=(str(source),)) as pool:
        return list(pool.map(_row, todo))


def header_lines(source: Path) -> list[tuple[str, str]]:
    """The comment lines: source, licence, and what the transcript holds."""
    conv = load_workbook_conversation(source)
    recorded = sum(1 for i in conv.items if isinstance(i, Entry) and i.kind == "compaction")
    return [*HEADER,
            ("model", f"{conv.model}"),
            ("calls", f"{len(model_calls(conv))}"),
            ("leaderboard_window", f"{profile_for(conv.model).context_window} (the model's own)"),
            ("policies_window", f"{POLICY_WINDOW}"),
            ("facts", f"data/pi_facts.json ({len(load_facts(FACTS))} facts)"),
            ("recorded_compactions", f"{recorded} (the recorded row applies them; its compactions column counts "
                                     "only compactions a strategy makes)")]


def to_csv(header: list[tuple[str, str]], rows: list[dict[str, object]]) -> str:
    """The file's text: the ``# key: value`` header, then the table."""
    return csv_text(rows, CSV_COLUMNS, header)


def main(argv: list[str]) -> int:
    source = Path(argv[0]) if argv else DEFAULT_SOURCE
    outdir = Path(argv[1]) if len(argv) > 1 else HERE
    if not source.exists():
        print(f"make_leaderboard: {source} not found; nothing written (the shared transcripts are not here).")
        return 0
    rows = leaderboard_rows(source)
    target = outdir / "leaderboard_pi.csv"
    target.write_bytes(to_csv(header_lines(source), rows).encode("utf-8"))
    for r in rows:
        ratios = f" {r['trigger_ratio']} → {r['target_ratio']}" if r["trigger_ratio"] != "" else ""
        print(f"make_leaderboard: {r['section']:<11} {r['window']:>7} {r['name']}{ratios}: ${r['cost_usd']}, "
              f"{r['compactions']} compactions, facts {r['facts_kept']}")
    print(f"make_leaderboard: wrote {target.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
