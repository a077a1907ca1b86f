"""Write data/fidelity.csv: how well ctxlab reproduces two real transcripts' recorded cache usage.

Sources (read from the shared copies under ../shared/data/transcripts/, or from SOURCE_DIR):

* pi-mono — https://github.com/badlogic/pi-mono,
  ``packages/coding-agent/test/fixtures/before-compaction.jsonl`` at commit
  83378aad7e74a0e2bb8f37c007a9685fb4609d8a (MIT, Copyright (c) 2025 Mario Zechner);
* claude-code-viewer — https://github.com/d-kimuson/claude-code-viewer,
  ``mock-global-claude-dir/projects/sample-project/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl`` at
  commit 9367cf006be9965c954e6cd36526f2195dce67ea (MIT, Copyright (c) 2025 Claude Code Viewer).

Only figures ctxlab computes from each file are written (counts and shares), no text of either
session. One row per transcript, every thread of the file together:

    transcript, source, licence, model     where the figures come from
    calls                                  model calls with recorded usage
    structural_within, structural_share    calls whose simulated read and write are both within 1% of
                                           the recorded prompt (ctxlab.lab.fidelity.structural)
    naive_within, naive_share              the same for the naive rule "read = previous prompt if the
                                           gap is under 5 minutes"
    misses                                 cache misses and mispredictions by kind: ``kind=calls/predicted``
    e2e_calls, e2e_within, e2e_share       ctxlab's own rendered prompt (recorded strategy, o200k x the
                                           calibration factor, inferred head) within 10% of the recorded
                                           prompt (ctxlab.lab.fidelity_end_to_end.end_to_end)
    e2e_median_error                       median of (predicted - recorded) / recorded
    calibration, calibration_median,       Claude tokens / o200k tokens measured from recorded usage
    calibration_pairs                      (ctxlab.lab.calibration.measure_calibration): ratio of sums,
                                           median of per-pair ratios, pairs used
    profile_calibration                    the factor ctxlab's profile for the model applies

The figures depend on ctxlab's simulator and counters: regenerate after changing them
(``tests/test_widget_ch04.py`` compares a fresh run with this file when the transcripts are there).
Run ``python data/make_fidelity_table.py [SOURCE_DIR] [OUTDIR]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from csv_text import csv_text  # data/csv_text.py, beside this script

HERE = Path(__file__).resolve().parent
DEFAULT_SOURCE_DIR = HERE.parent.parent / "shared" / "data" / "transcripts"
SOURCES = (  # (name, file under SOURCE_DIR, source, licence)
    ("pi-mono", "pi-mono/before-compaction.jsonl",
     "github.com/badlogic/pi-mono packages/coding-agent/test/fixtures/before-compaction.jsonl @ 83378aad7e74",
     "MIT (c) 2025 Mario Zechner"),
    ("claude-code-viewer", "claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
     ("github.com/d-kimuson/claude-code-viewer mock-global-claude-dir/projects/sample-project/"
      "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl @ 9367cf006be9"),
     "MIT (c) 2025 Claude Code Viewer"),
)
COLUMNS = ["transcript", "source", "licence", "model", "calls", "structural_within", "structural_share",
           "naive_within", "naive_share", "misses", "e2e_calls", "e2e_within", "e2e_share", "e2e_median_error",
           "calibration", "calibration_median", "calibration_pairs", "profile_calibration"]


def table_row(name: str, path: Path, source: str, licence: str) -> dict[str, object]:
    """The figures of one transcript (its only conversation, all threads)."""
    from ctxlab.lab.calibration import measure_calibration
    from ctxlab.lab.fidelity import structural
    from ctxlab.lab.fidelity_end_to_end import end_to_end
    from ctxlab.io.formats import load
    from ctxlab.tables.profiles import profile_for

    conv = load(path).conversation()
    fit, e2e, cal = structural(conv), end_to_end(conv), measure_calibration(conv)
    misses = ";".join(f"{k}={n}/{p}" for k, (n, p) in fit.misses_by_kind().items())
    return {
        "transcript": name, "source": source, "licence": licence, "model": conv.model,
        "calls": len(fit.calls),
        "structural_within": sum(c.within for c in fit.calls), "structural_share": f"{fit.within:.4f}",
        "naive_within": sum(c.naive_within for c in fit.calls), "naive_share": f"{fit.naive_within:.4f}",
        "misses": misses,
        "e2e_calls": e2e.calls, "e2e_within": round(e2e.within * e2e.calls), "e2e_share": f"{e2e.within:.4f}",
        "e2e_median_error": f"{e2e.median_error:.4f}",
        "calibration": f"{cal.factor:.3f}" if cal else "", "calibration_median": f"{cal.median:.3f}" if cal else "",
        "calibration_pairs": cal.pairs if cal else 0,
        "profile_calibration": f"{profile_for(conv.model, conv.provider).calibration:.3f}",
    }


def to_csv(rows: list[dict[str, object]]) -> str:
    """The file's text (one shared writer: data/csv_text.py)."""
    return csv_text(rows, COLUMNS)


def main(argv: list[str]) -> int:
    source_dir = Path(argv[0]) if argv else DEFAULT_SOURCE_DIR
    outdir = Path(argv[1]) if len(argv) > 1 else HERE
    missing = [f for _, f, _, _ in SOURCES if not (source_dir / f).exists()]
    if missing:
        print(f"make_fidelity_table: {', '.join(missing)} not found under {source_dir}; nothing written "
              "(the shared transcripts are not here).")
        return 0
    rows = [table_row(name, source_dir / f, source, licence) for name, f, source, licence in SOURCES]
    target = outdir / "fidelity.csv"
    target.write_bytes(to_csv(rows).encode("utf-8"))
    print(f"make_fidelity_table: wrote {target} ({len(rows)} transcripts)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
