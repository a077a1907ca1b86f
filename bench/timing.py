"""What every benchmark shares: CPU timing, the fitted growth exponent, and a section of RESULTS.md.

Times are **CPU seconds of this process** (``time.process_time``): the benchmarks are single-threaded,
and on a shared machine CPU time moves far less than wall time when other jobs run. Widget latency
is also reported as wall time (``time.perf_counter``), what a person waits. Absolute times belong to
this machine and this run; the goals are ratios measured in the same run.
"""

from __future__ import annotations

import math
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Sequence

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "transcripts"


@dataclass(frozen=True)
class Timing:
    cpu_s: float
    wall_s: float


def timed(fn: Callable[[], Any]) -> tuple[Timing, Any]:
    """Run ``fn`` once: its CPU and wall seconds, and what it returned."""
    c, w = time.process_time(), time.perf_counter()
    out = fn()
    return Timing(time.process_time() - c, time.perf_counter() - w), out


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[Timing, Any]:
    """The run with the least CPU time of ``repeat`` runs (the least disturbed one), and what it returned."""
    return min((timed(fn) for _ in range(max(1, repeat))), key=lambda run: run[0].cpu_s)


def median(values: Sequence[float]) -> float:
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def growth_exponent(sizes: Sequence[float], seconds: Sequence[float]) -> float:
    """The slope b of log(time) = a + b log(size), least squares: 1.0 means time grows like the size."""
    xs, ys = [math.log(s) for s in sizes], [math.log(max(t, 1e-9)) for t in seconds]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.2f} ms" if seconds < 0.1 else f"{seconds:,.2f} s"


def version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def machine() -> list[tuple[str, str]]:
    """(what, value) lines describing where and when the benchmarks ran."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "unknown"
    return [
        ("date", datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")),
        ("machine", f"{platform.system()} {platform.release()}, {cpu}, {os.cpu_count()} logical cores"),
        ("load average at start (1 / 5 / 15 min)", load),
        ("python", sys.version.split()[0]),
        ("versions", ", ".join(f"{d} {version(d)}" for d in ("ctxlab", "tiktoken", "langchain-core", "numpy"))),
    ]


@dataclass
class Goal:
    """One goal of the issue: what it asks, what was measured, whether it was met."""

    goal: str
    measured: str
    met: bool | None  # None: not measured in this run (a skipped figure)


@dataclass
class Section:
    """One benchmark's part of RESULTS.md: a table of figures, the goals, notes, and its command."""

    title: str
    command: str
    intro: str = ""
    columns: Sequence[str] = ()
    rows: list[Sequence[Any]] = field(default_factory=list)
    goals: list[Goal] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: str = ""  # why the section has no figures

    def markdown(self) -> str:
        out = [f"## {self.title}", "", f"Command: `{self.command}`", ""]
        if self.intro:
            out += [self.intro, ""]
        if self.skipped:
            return "\n".join(out + [f"**Skipped:** {self.skipped}", ""])
        if self.rows:
            out += ["| " + " | ".join(self.columns) + " |", "|" + "---|" * len(self.columns)]
            out += ["| " + " | ".join(str(c) for c in row) + " |" for row in self.rows]
            out.append("")
        if self.goals:
            out += ["| goal | measured | met |", "|---|---|---|"]
            out += [f"| {g.goal} | {g.measured} | {'—' if g.met is None else 'yes' if g.met else '**no**'} |"
                    for g in self.goals]
            out.append("")
        out += [f"- {n}" for n in self.notes]
        return "\n".join(out).rstrip() + "\n"


def main_for(run: Callable[[bool], Section]) -> None:
    """``python bench/<module>.py [--quick]``: run one benchmark and print its section."""
    print(run("--quick" in sys.argv[1:]).markdown())
