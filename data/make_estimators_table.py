"""Write data/estimators.csv: token estimators against the exact o200k_base count, on real transcripts.

Sources (read from the shared copies under ../shared/data/transcripts/, or from SOURCE_DIR), every
file listed in :data:`SOURCES` with its repository, commit and licence. Only figures are written: no
text of any transcript.

The corpus: every message of every conversation, as the meter counts it — each text part, each
thinking part that is not redacted, and each tool call's name and arguments are one *text*; a
message's tokens are the sum over its texts (the per-message overhead is left out: it is the same
for every counter). Messages with no text are skipped.

The split: a message belongs to a *block* — its file, its conversation and its position // 50 (50
consecutive messages, or a whole short conversation); a block whose sha256 starts with an even byte
is for **fitting** (``bench/fit_estimator.py`` fits ctxlab's script-aware estimator on it), an odd
one for **reporting** (this table). Near-identical messages (tau-bench's repeated tool results) can
still fall on both sides.

One row per counter, on the reporting half:

    counter              o200k_base (the exact reference), chars/3, chars/4, script-aware
    messages             messages scored
    mean_error           mean of (estimate - exact) / exact over messages
    under_5pct_share     share of messages under-counted by more than 5%
    worst_under          the most negative (estimate - exact) / exact
    total_error          (sum of estimates - sum of exact) / sum of exact: the token-weighted error
    speed_vs_tiktoken    texts counted per second, relative to tiktoken's o200k_base through the same
                         ``count`` call (best of 5 passes over every text, CPU time; the only column that
                         depends on the machine, so the test leaves it out)

Run ``python data/make_estimators_table.py [SOURCE_DIR] [OUTDIR]``.
"""

from __future__ import annotations

import hashlib
import sys
import time
from pathlib import Path
from typing import Sequence

from csv_text import csv_text  # data/csv_text.py, beside this script

HERE = Path(__file__).resolve().parent
DEFAULT_SOURCE_DIR = HERE.parent.parent / "shared" / "data" / "transcripts"
SOURCES = (  # (file under SOURCE_DIR, repository @ commit, licence)
    ("claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
     "github.com/d-kimuson/claude-code-viewer @ 9367cf006be9", "MIT (c) 2025 Claude Code Viewer"),
    ("llama-factory-toolcall/glaive_toolcall_zh_demo.json", "github.com/hiyouga/LLaMA-Factory @ ff6d4d12eeb0",
     "Apache-2.0"),
    ("openhands/multi_swe_bench_output.jsonl", "github.com/All-Hands-AI/OpenHands @ 156d0686c46a", "MIT"),
    ("pi-mono/before-compaction.jsonl", "github.com/badlogic/pi-mono @ 83378aad7e74", "MIT (c) 2025 Mario Zechner"),
    ("swe-agent/ctf_web_i_got_id_demo.traj", "github.com/SWE-agent/SWE-agent @ 3ea751c087f3",
     "MIT (c) 2024 John Yang, Carlos E. Jimenez, et al."),
    ("swe-agent/marshmallow-1867__function_calling.traj", "github.com/SWE-agent/SWE-agent @ 3ea751c087f3",
     "MIT (c) 2024 John Yang, Carlos E. Jimenez, et al."),
    ("tau-bench/gpt-4o-airline.json", "github.com/sierra-research/tau-bench @ 59a200c6d575", "MIT (c) 2024 Sierra"),
)
COUNTERS = ("o200k_base", "chars/3", "chars/4", "script-aware")
COLUMNS = ["counter", "messages", "mean_error", "under_5pct_share", "worst_under", "total_error", "speed_vs_tiktoken"]
BLOCK = 50  # consecutive messages of a conversation that stay on one side of the split


def message_texts(message) -> list[str]:
    """The texts the meter counts in one message (``MessageMeter.part``), images left out."""
    from ctxlab.messages import TextPart, ThinkingPart, ToolCallPart

    texts: list[str] = []
    for part in message.parts:
        if isinstance(part, TextPart) or (isinstance(part, ThinkingPart) and not part.redacted):
            texts.append(part.text)
        elif isinstance(part, ToolCallPart):
            texts += [part.name, part.arguments]
    return [t for t in texts if t]


def corpus(source_dir: Path) -> tuple[list[list[str]], list[list[str]]]:
    """(fitting messages, reporting messages); each message is its list of texts."""
    from ctxlab.io.formats import load

    halves: tuple[list[list[str]], list[list[str]]] = ([], [])
    for name, _, _ in SOURCES:
        for c, conversation in enumerate(load(source_dir / name).conversations):
            for k, message in enumerate(conversation.messages):
                texts = message_texts(message)
                if texts:
                    block = f"{name}:{c}:{k // BLOCK}".encode()
                    halves[hashlib.sha256(block).digest()[0] % 2].append(texts)
    return halves


def scores(messages: Sequence[Sequence[str]], counter, exact) -> dict[str, float]:
    """Error figures of ``counter`` against ``exact`` (two TokenCounters) over messages of texts."""
    est = [sum(counter.count(t) for t in m) for m in messages]
    ref = [sum(exact.count(t) for t in m) for m in messages]
    pairs = [(e, r) for e, r in zip(est, ref) if r > 0]
    errors = [(e - r) / r for e, r in pairs]
    return {"messages": len(pairs), "mean_error": sum(errors) / len(errors),
            "under_5pct_share": sum(x < -0.05 for x in errors) / len(errors), "worst_under": min(errors),
            "total_error": (sum(e for e, _ in pairs) - sum(r for _, r in pairs)) / sum(r for _, r in pairs)}


def seconds_per_pass(counter, texts: Sequence[str], repeat: int = 5) -> float:
    """CPU seconds to count every text once, best of ``repeat`` (CPU time: the machine may be shared)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for t in texts:
            counter.count(t)
        best = min(best, time.process_time() - start)
    return best


def table(source_dir: Path) -> list[dict[str, object]]:
    from ctxlab.estimators import get_counter

    _, report = corpus(source_dir)
    exact = get_counter("o200k_base")
    texts = [t for m in report for t in m]
    base = seconds_per_pass(exact, texts)
    rows = []
    for name in COUNTERS:
        counter = get_counter(name)
        s = scores(report, counter, exact)
        rows.append({"counter": name, "messages": s["messages"], "mean_error": f"{s['mean_error']:.4f}",
                     "under_5pct_share": f"{s['under_5pct_share']:.4f}", "worst_under": f"{s['worst_under']:.4f}",
                     "total_error": f"{s['total_error']:.4f}",
                     "speed_vs_tiktoken": "1.0" if name == "o200k_base" else
                     f"{base / max(seconds_per_pass(counter, texts), 1e-9):.1f}"})
    return rows


def to_csv(rows: list[dict[str, object]]) -> str:
    header = [("source", "; ".join(f"{name} ({repo}, {licence})" for name, repo, licence in SOURCES)),
              ("split", f"blocks of {BLOCK} messages, sha256 of file:conversation:block, even first byte = fit, "
                        "odd = this table"),
              ("made by", "python data/make_estimators_table.py")]
    return csv_text(rows, COLUMNS, header)


def main(argv: list[str]) -> int:
    source_dir = Path(argv[0]) if argv else DEFAULT_SOURCE_DIR
    outdir = Path(argv[1]) if len(argv) > 1 else HERE
    missing = [name for name, _, _ in SOURCES if not (source_dir / name).exists()]
    if missing:
        print(f"make_estimators_table: {', '.join(missing)} not found under {source_dir}; nothing written "
              "(the shared transcripts are not here).")
        return 0
    rows = table(source_dir)
    target = outdir / "estimators.csv"
    target.write_bytes(to_csv(rows).encode("utf-8"))
    print(f"make_estimators_table: wrote {target} ({len(rows)} counters)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
