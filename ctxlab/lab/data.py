"""Where the workbook's bundled data lives: the one module that names a path under ``data/``.

Every chapter, widget, test and generator that reads a committed table takes its path from here, so a
moved file is one edit. Paths only: the readers of these files sit beside the chapter that reads them.
Chapters 00–08 read them.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]  # ctxlab/lab/data.py -> the repository
DATA = REPO / "data"

SAMPLE_SESSION = DATA / "sample_session.jsonl"  # a ctxlab session file (data/make_sample.py)
SAMPLE_FACTS = DATA / "sample_facts.json"  # what the sample holds, measured by its generator
PI_BILL = DATA / "pi_bill.csv"  # pi's recorded per-call usage and cost (data/make_pi_bill.py)
PI_FACTS = DATA / "pi_facts.json"  # the hand-written checklist of the shared pi session
PI_SCORES = DATA / "pi_summaries_score.csv"  # pi's LLM summaries vs the rule-based one (data/make_summary_scores.py)
LEADERBOARD_PI = DATA / "leaderboard_pi.csv"  # written by data/make_leaderboard.py
CHECKLISTS = (SAMPLE_FACTS, PI_FACTS)  # the fact checklists ch08's leaderboard scores retention against
FIDELITY_TABLE = DATA / "fidelity.csv"  # data/make_fidelity_table.py: the ledger against recorded usage
ESTIMATOR_TABLE = DATA / "estimators.csv"  # data/make_estimators_table.py: the cheap counters' errors

__all__ = ["REPO", "DATA", "SAMPLE_SESSION", "SAMPLE_FACTS", "PI_BILL", "PI_FACTS", "PI_SCORES", "LEADERBOARD_PI",
           "CHECKLISTS", "FIDELITY_TABLE", "ESTIMATOR_TABLE"]
