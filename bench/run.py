"""Run every benchmark and write bench/RESULTS.md: the machine, the versions, the date, every figure and
the command that produced it.

    python bench/run.py              # everything (15-30 minutes on a 2-core machine)
    python bench/run.py --quick      # smaller sizes and three replay strategies (a few minutes)
    python bench/run.py --only replay_speed [--only ...]   # some of them (RESULTS.md is not written)

Needs the ``bench`` extra (``pip install -e .[bench]``: langchain-core, pyinstrument, numpy). Figures
that read the shared transcripts (``../shared/data/transcripts``) are skipped, with the reason in
RESULTS.md, when they are absent. Nothing is asserted: absolute times belong to this machine; the
goals are ratios measured in the same run, and RESULTS.md says which were met.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import context_vs_langchain  # noqa: E402
import estimator_table  # noqa: E402
import growth  # noqa: E402
import large_file  # noqa: E402
import replay_speed  # noqa: E402
import widget_latency  # noqa: E402
from timing import Section, machine  # noqa: E402

BENCHMARKS = {  # name -> module with run(quick) -> Section, in RESULTS.md order
    "context_vs_langchain": context_vs_langchain,
    "replay_speed": replay_speed,
    "growth": growth,
    "widget_latency": widget_latency,
    "estimator_table": estimator_table,
    "large_file": large_file,
}
RESULTS = HERE / "RESULTS.md"

HEADER = """# Benchmarks

Made by `{command}`. Every figure below was measured in this one run; each section names the
command that measures it alone. Times are **CPU seconds of the benchmark's process** (Python's
`time.process_time`) unless marked wall; widget latency is given both ways.

{machine}

{shared}

How to read it: absolute times belong to this machine and this moment; the goals of the
performance issue are ratios (ctxlab against LangChain, against a replay from scratch, against
tiktoken) or bounds on latency, and every ratio compares two figures of the same run. What the
profiles showed before and after the optimisations: `bench/README.md`.
"""


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    only = [argv[k + 1] for k, a in enumerate(argv) if a == "--only" and k + 1 < len(argv)]
    unknown = set(only) - set(BENCHMARKS)
    if unknown:
        print(f"unknown benchmark {', '.join(sorted(unknown))}; choose from {', '.join(BENCHMARKS)}")
        return 2
    started = machine()  # the load average before the benchmarks add to it
    sections: list[Section] = []
    for name, module in BENCHMARKS.items():
        if only and name not in only:
            continue
        print(f"bench: {name} ...", flush=True)
        t = time.perf_counter()
        sections.append(module.run(quick))
        print(f"bench: {name} done in {time.perf_counter() - t:,.0f} s (wall)", flush=True)
    text = "\n".join(section.markdown() for section in sections)
    if only:
        print(text)
        return 0
    cores = next((v for k, v in started if k == "machine"), "")
    load = next((v for k, v in started if k.startswith("load average")), "")
    shared_note = ("**The machine was shared** while this ran (load average " + load + " at the start on "
                   + cores.rsplit(", ", 1)[-1] + "): wall times are inflated and CPU times somewhat noisy; "
                   "the ratios compare figures taken minutes apart in the same conditions.")
    header = HEADER.format(command="python bench/run.py" + (" --quick" if quick else ""),
                           machine="\n".join(f"- {k}: {v}" for k, v in started),
                           shared=shared_note if _busy(load, cores) else "")
    summary = ["## Goals", "", "| section | goal | measured | met |", "|---|---|---|---|"]
    for s in sections:
        summary += [f"| {s.title.split(':')[0]} | {g.goal} | {g.measured} | "
                    f"{'—' if g.met is None else 'yes' if g.met else '**no**'} |" for g in s.goals]
        if s.skipped:
            summary.append(f"| {s.title.split(':')[0]} | (all) | skipped: {s.skipped} | — |")
    RESULTS.write_text(header + "\n" + "\n".join(summary) + "\n\n" + text, encoding="utf-8")
    print(f"bench: wrote {RESULTS}")
    return 0


def _busy(load: str, cores: str) -> bool:
    """Whether the 1-minute load average at the start exceeded half the logical cores."""
    try:
        first = float(load.split("/")[0])
        n = int(cores.rsplit(", ", 1)[-1].split()[0])
    except (ValueError, IndexError):
        return True
    return first > n / 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
