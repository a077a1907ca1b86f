"""The book's plain replay against the same replay with ``speedup=FAST``: how much ``ctxlab/fast/`` buys.

    python bench/fast_vs_plain.py [--quick]      (--quick: the bundled sample only, three strategies)

* **plain** — ``replay(conversation, strategy)``: the book's own path. Its ``MessageMeter`` remembers
  each message's count, but ``build_context`` groups the whole history into units and walks it at every
  call, and ``render_blocks`` serialises, hashes and counts every block of every request again;
* **fast** — ``replay(conversation, strategy, speedup=FAST)``: an incremental meter per thread and
  profile (``fast/incremental.py``) and one render cache a replay (``fast/render_cache.py``).

On the bundled sample (``data/sample_session.jsonl``, what the chapters replay), on the largest shared
file (aider's chat history: 984 short conversations, each replayed on its own) and on the largest shared
single session (pi-mono's ``before-compaction.jsonl``, 484 model calls). Each figure is the best of a few
runs, in CPU seconds; ``same`` says whether the two ledgers are equal row for row (``tests/test_fast.py``
requires it). The ratio is plain / fast.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import SHARED, Section, best_of, main_for, ms  # noqa: E402

from ctxlab.fast import FAST  # noqa: E402
from ctxlab.io.formats import load  # noqa: E402
from ctxlab.lab.data import SAMPLE_SESSION  # noqa: E402
from ctxlab.replay import replay  # noqa: E402

COMMAND = "python bench/fast_vs_plain.py"
STRATEGIES = ("full", "sliding", "budgeted", "pruned", "paged", "budgeted+summary", "compaction", "pipeline")
QUICK = ("full", "budgeted", "compaction")
SOURCES = (  # (label, path, window): the sample at the chapters' window, where every strategy cuts
    ("bundled sample", SAMPLE_SESSION, 30_000),
    ("aider (largest shared file)", SHARED / "aider" / "aider-chat-history.md", None),
    ("pi-mono (largest shared session)", SHARED / "pi-mono" / "before-compaction.jsonl", None),  # 30k: too small
)


def replay_all(conversations, strategy: str, window: int | None, speedup=None) -> list:
    """The ledger rows of every conversation replayed under ``strategy`` (a conversation that cannot be
    replayed under it, e.g. a budget error, adds its error's name instead)."""
    rows: list = []
    for conv in conversations:
        try:
            rows += replay(conv, strategy, window=window, speedup=speedup).ledger.rows
        except ValueError as err:  # CtxlabError is a ValueError
            rows.append(type(err).__name__)
    return rows


def run(quick: bool = False) -> Section:
    section = Section("The plain replay against speedup=FAST", COMMAND + (" --quick" if quick else ""),
                      intro=__doc__.split("\n\n", 2)[2].strip())
    section.columns = ["transcript", "strategy", "calls", "plain", "fast", "ratio (plain / fast)", "same"]
    repeat = 2 if quick else 3
    for label, path, window in SOURCES[:1] if quick else SOURCES:
        if not path.exists():
            section.notes.append(f"{label}: not found at {path}, skipped.")
            continue
        conversations = load(path).conversations
        replay_all(conversations[:1], "full", window, FAST)  # encodings and tables loaded outside every timing
        plain_total = fast_total = 0.0
        for name in QUICK if quick else STRATEGIES:
            plain, plain_rows = best_of(lambda: replay_all(conversations, name, window), repeat)
            fast, fast_rows = best_of(lambda: replay_all(conversations, name, window, FAST), repeat)
            plain_total, fast_total = plain_total + plain.cpu_s, fast_total + fast.cpu_s
            section.rows.append([label, name, sum(not isinstance(r, str) for r in fast_rows), ms(plain.cpu_s),
                                 ms(fast.cpu_s), f"{plain.cpu_s / fast.cpu_s:.1f}x",
                                 "yes" if plain_rows == fast_rows else "**no**"])
        section.rows.append([label, "all", "", ms(plain_total), ms(fast_total), f"{plain_total / fast_total:.1f}x", ""])
    return section


if __name__ == "__main__":
    main_for(run)
