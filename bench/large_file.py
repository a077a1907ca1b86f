"""Large files: a ~200 MB transcript, read by ``inspect`` and replayed under ``budgeted``, in time and memory.

    python bench/large_file.py [--quick] [--size-mb N] [--dir DIR] [--keep] [--file PATH]

The file is pi-mono's ``before-compaction.jsonl`` (2.4 MB, 990 messages, 484 model calls) tiled at the
file level until it holds ``--size-mb`` MB (default 200; 20 with ``--quick``): one ``session`` header, then
copy after copy of its entries, as one valid pi session (v1, linear). Each copy has its own tool-call ids
(``toolCall.id`` and ``toolResult.toolCallId`` get ``~k``), so every call pairs with its own result; its
``firstKeptEntryIndex`` is moved by the entries before the copy, so each recorded compaction keeps the
messages of its own copy; its timestamps (the entries' ISO stamps and the messages' Unix milliseconds) are
moved later by the session's span plus ten minutes per copy, so time only increases. A tree-layout source
(entries with ``id``/``parentId``) would get ``~k`` ids too, each copy's root hung under the last entry of
the copy before. The file goes to a temporary directory (``--dir``, default ``/tmp``) and is deleted after
(``--keep`` leaves it; ``--file`` measures a file already made).

Each command runs in its own process, one after the other: ``python -m ctxlab inspect FILE`` and
``python -m ctxlab replay FILE --strategy budgeted``. Wall time is ``time.perf_counter`` around the child, CPU
time the child's own user + system seconds (on a shared machine the wall time depends on the load; the CPU time
much less); peak RSS is the child's own ``ru_maxrss`` (``os.wait4``, Linux: KiB), also as a ratio to the file's
size. ``python -m ctxlab --version`` gives the floor every command starts from (the interpreter and
ctxlab's imports). The goals (issue 18) are for the 200 MB file: a replay's peak RSS ≤ 4× the file and
``replay --strategy budgeted`` ≤ 2 minutes; at another size they are reported, not judged (the floor
weighs more on a small file).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import ROOT, SHARED, Goal, Section

SOURCE = SHARED / "pi-mono" / "before-compaction.jsonl"
COMMAND = "python bench/large_file.py"
MB = 1_000_000  # bytes in the sizes reported here (the "200 MB")
GOAL_MB = 200  # the size the goals are stated for
GAP_S = 600.0  # seconds between one copy's last entry and the next copy's first


# ---- the file -----------------------------------------------------------------------------------------------

def _iso_shift(stamp: Any, seconds: float) -> Any:
    if not isinstance(stamp, str) or not stamp:
        return stamp
    when = datetime.fromisoformat(stamp.replace("Z", "+00:00")) + timedelta(seconds=seconds)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _stamps(objs: list[dict[str, Any]]) -> list[float]:
    """Every time the entries record, in seconds since the epoch (ISO stamps and Unix milliseconds)."""
    out = []
    for o in objs:
        if isinstance(o.get("timestamp"), str):
            out.append(datetime.fromisoformat(o["timestamp"].replace("Z", "+00:00")).timestamp())
        ms = o.get("message", {}).get("timestamp") if isinstance(o.get("message"), dict) else None
        if isinstance(ms, (int, float)) and not isinstance(ms, bool):
            out.append(ms / 1000)
    return out


def _copy_entry(obj: dict[str, Any], k: int, *, index_shift: int, seconds: float, last_id: str | None) -> dict[str, Any]:
    """Entry ``obj`` (parsed afresh, mutated) for copy ``k``: own ids, indexes moved, ``seconds`` later."""
    tag = f"~{k}"
    obj["timestamp"] = _iso_shift(obj.get("timestamp"), seconds)
    if isinstance(obj.get("id"), str):  # tree layout
        obj["id"] += tag
        parent = obj.get("parentId")
        obj["parentId"] = parent + tag if isinstance(parent, str) else last_id
    if isinstance(obj.get("firstKeptEntryId"), str):
        obj["firstKeptEntryId"] += tag
    if isinstance(obj.get("firstKeptEntryIndex"), int):
        obj["firstKeptEntryIndex"] += index_shift
    msg = obj.get("message")
    if isinstance(msg, dict):
        if isinstance(msg.get("timestamp"), (int, float)) and not isinstance(msg["timestamp"], bool):
            msg["timestamp"] = round(msg["timestamp"] + seconds * 1000)
        if isinstance(msg.get("toolCallId"), str):
            msg["toolCallId"] += tag
        if isinstance(msg.get("responseId"), str):
            msg["responseId"] += tag
        for block in msg.get("content") if isinstance(msg.get("content"), list) else ():
            if isinstance(block, dict) and block.get("type") == "toolCall" and isinstance(block.get("id"), str):
                block["id"] += tag
    return obj


def make_file(target: Path, size_mb: float, source: Path = SOURCE) -> int:
    """Write ``source`` tiled to at least ``size_mb`` MB at ``target`` (see the module docstring); the copies made.

    Raises FileNotFoundError when ``source`` is absent, ValueError when it is not a pi session with a
    ``session`` header."""
    lines = [ln for ln in source.read_text(encoding="utf-8").split("\n") if ln.strip()]
    header, body = lines[0], lines[1:]
    if json.loads(header).get("type") != "session":
        raise ValueError(f"{source}: expected a pi session header on line 1")
    objs = [json.loads(ln) for ln in body]
    stamps = _stamps(objs)
    span = (max(stamps) - min(stamps) + GAP_S) if stamps else 0.0
    ids = [o["id"] for o in objs if isinstance(o.get("id"), str)]
    per_copy = sum(len(ln.encode()) + 1 for ln in body)  # bytes of one copy's entries (the header is written once)
    copies = max(1, -(-(int(size_mb * MB) - len(header.encode()) - 1) // per_copy))
    with target.open("w", encoding="utf-8", newline="\n") as out:
        out.write(header + "\n")
        for k in range(copies):
            if k == 0:
                out.write("\n".join(body) + "\n")
                continue
            last_id = ids[-1] + (f"~{k - 1}" if k > 1 else "") if ids else None
            for ln in body:
                obj = _copy_entry(json.loads(ln), k, index_shift=k * len(body), seconds=k * span, last_id=last_id)
                out.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")
    return copies


# ---- the measurement --------------------------------------------------------------------------------------

# A fresh, small process starts the measured one and reports its figures as JSON. Why not start it from here: on
# Linux a child's ``ru_maxrss`` starts from the memory high-water mark of the process it was forked from (the kernel
# copies it at fork and records the old image's at exec), so a command started from a benchmark process that had
# grown to 1.5 GB reported 1.5 GB, even ``--version``. The launcher is a few MB, so that floor is its own.
LAUNCHER = """
import json, os, subprocess, sys, time
start = time.perf_counter()
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if hasattr(os, "wait4"):
    _, status, usage = os.wait4(child.pid, 0)
    code = os.waitstatus_to_exitcode(status)
else:
    import resource
    code = child.wait()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps([time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, code]))
"""


def measure(args: list[str]) -> tuple[float, float, int, int]:
    """Run ``python -m ctxlab ARGS`` in a child process: (wall seconds, CPU seconds, peak RSS in bytes, exit code).

    The child is started by a fresh launcher process (:data:`LAUNCHER`: a child's peak RSS would otherwise start from
    this process's); its output is thrown away; its own ``ru_maxrss`` and CPU time come from ``os.wait4`` (KiB on
    Linux), or the launcher's ``RUSAGE_CHILDREN`` figures where ``wait4`` is missing."""
    out = subprocess.run([sys.executable, "-c", LAUNCHER, sys.executable, "-m", "ctxlab", *args], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    wall, cpu, maxrss, code = json.loads(out.stdout.strip().splitlines()[-1])
    return wall, cpu, maxrss * (1 if sys.platform == "darwin" else 1024), code


def _size_arg(argv: list[str], quick: bool) -> float:
    if "--size-mb" in argv:
        return float(argv[argv.index("--size-mb") + 1])
    return 20.0 if quick else float(GOAL_MB)


def run(quick: bool = False, argv: list[str] | None = None) -> Section:
    argv = argv or []
    size_mb = _size_arg(argv, quick)
    given = Path(argv[argv.index("--file") + 1]) if "--file" in argv else None
    command = COMMAND + (" --quick" if quick else "") + (f" --size-mb {size_mb:g}" if "--size-mb" in argv else "")
    section = Section("Large files: inspect and replay on a tiled 200 MB transcript", command,
                      intro="\n\n".join(__doc__.strip().split("\n\n")[2:4]))
    if given is None and not SOURCE.exists():
        section.skipped = f"the shared transcripts are not at {SOURCE.parent.parent} (they sit beside the repository)."
        return section
    folder = Path(argv[argv.index("--dir") + 1]) if "--dir" in argv else Path(tempfile.gettempdir())
    tmp = None if given else tempfile.TemporaryDirectory(prefix="ctxlab-large-", dir=folder)
    try:
        if given:
            path, copies = given, None
        else:
            path = Path(tmp.name) / f"pi-tiled-{size_mb:g}mb.jsonl"
            copies = make_file(path, size_mb)
        size = path.stat().st_size
        load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
        section.notes.append(f"file: {size / MB:,.1f} MB" + (f", {copies} copies of {SOURCE.name}" if copies else
                                                            f", {path}") + f"; load average before: {load}")
        section.columns = ["command", "wall", "CPU", "peak RSS", "RSS / file", "exit"]
        figures: dict[str, tuple[float, float, int, int]] = {}
        for name, args in (("--version (the floor)", ["--version"]), ("inspect", ["inspect", str(path)]),
                           ("replay --strategy budgeted", ["replay", str(path), "--strategy", "budgeted"])):
            wall, cpu, peak, code = figures[name] = measure(args)
            shown = " ".join(a if a != str(path) else "FILE" for a in args)
            section.rows.append([f"`python -m ctxlab {shown}`", f"{wall:,.1f} s", f"{cpu:,.1f} s",
                                 f"{peak / MB:,.0f} MB", f"{peak / size:.2f}x", code])
        section.notes.append("load average after: " + " / ".join(f"{x:.2f}" for x in os.getloadavg()))
        wall, cpu, peak, code = figures["replay --strategy budgeted"]
        judged = size >= 0.95 * GOAL_MB * MB
        section.goals.append(Goal(f"replay budgeted peak RSS ≤ 4x the file ({GOAL_MB} MB)", f"{peak / size:.2f}x",
                                  (peak <= 4 * size and code == 0) if judged else None))
        section.goals.append(Goal(f"replay budgeted ≤ 2 minutes wall ({GOAL_MB} MB)",
                                  f"{wall:,.0f} s ({cpu:,.0f} s CPU)", (wall <= 120 and code == 0) if judged else None))
        if not judged:
            section.notes.append(f"the goals are judged on the {GOAL_MB} MB file only (`python bench/large_file.py`)")
        if any(code for *_, code in figures.values()):
            section.notes.append("a command failed (exit code above): run it by hand to see why")
        return section
    finally:
        if tmp is not None:
            if "--keep" in argv:
                kept = folder / path.name
                os.replace(path, kept)
                print(f"kept {kept}", file=sys.stderr)
            tmp.cleanup()


if __name__ == "__main__":
    print(run("--quick" in sys.argv[1:], sys.argv[1:]).markdown())
