"""How long ctxlab takes to refuse hostile files: each must come back in under a second.

    python bench/hostile_times.py                          prints the table
    python bench/hostile_times.py --write bench/HOSTILE.md also writes it there

Every file is made in a temporary folder outside the repository (nothing is written into it unless
``--write`` is given). ``inspect`` and ``replay`` run twice per file: in this process
(``ctxlab.cli.main.main``, its output captured) and as ``python -m ctxlab`` in a child process (the
child's time includes starting Python and importing ctxlab: the first row measures that alone).
The planted page goes through the PageStore API instead (``get`` and the ``read_page`` tool), on a
sparse 2 GB file: no disk used, and the store must refuse it by its size, unread. Times are wall
seconds (``time.perf_counter``) of one run each; the limit is 1 s per call (the child's start-up
subtracted). Before issue 17 a FIFO hung until killed and the planted page took 36 s and 1.6 GB.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import ROOT, Section, machine, ms  # noqa: E402

COMMAND = "python bench/hostile_times.py"
LIMIT_S = 1.0
CHILD_TIMEOUT_S = 30  # a hang shows as a timeout, not a stuck benchmark


def _in_process(argv: list[str]) -> tuple[float, int, str]:
    """Wall seconds, exit code and the first stderr line of ``ctxlab.cli.main.main(argv)``."""
    from ctxlab.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return time.perf_counter() - start, code, (err.getvalue().splitlines() or [""])[0]


def _child(argv: list[str]) -> tuple[float, int | str, str]:
    """The same in a child process; ``"timeout"`` if it did not finish in :data:`CHILD_TIMEOUT_S`."""
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "ctxlab", *argv], capture_output=True, text=True,
                              encoding="utf-8", errors="replace", timeout=CHILD_TIMEOUT_S, cwd=ROOT,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - start, "timeout", ""
    return time.perf_counter() - start, done.returncode, (done.stderr.splitlines() or [""])[0]


def _timed_call(fn: Callable[[], Any]) -> tuple[float, str]:
    start = time.perf_counter()
    try:
        said = str(fn())
    except Exception as err:  # the refusal is the result being timed
        said = f"{type(err).__name__}: {err}"
    return time.perf_counter() - start, said


def _files(folder: Path) -> list[tuple[str, Path]]:
    """(what, path) of each hostile file the CLI is run on."""
    out: list[tuple[str, Path]] = []
    if hasattr(os, "mkfifo"):
        os.mkfifo(folder / "pipe.jsonl")
        out.append(("a FIFO (named pipe)", folder / "pipe.jsonl"))
    if Path("/dev/zero").exists():
        out.append(("/dev/zero (endless NULs)", Path("/dev/zero")))
    (folder / "runs").mkdir()
    out.append(("a directory", folder / "runs"))
    controls = bytes(b for b in range(1, 32) if b != 10) + b"\x7f"
    raw = folder / "controls.jsonl"  # 1 MiB of control bytes, a newline every 80
    raw.write_bytes(b"\n".join((controls * 3)[:80] for _ in range(1024 * 1024 // 81)))
    out.append(("1 MiB of control bytes", raw))
    text = "".join(chr(b) for b in controls) * 64  # JSON-escaped control characters in message texts
    lines = [{"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00Z", "cwd": "/w"}]
    for i in range(40):
        lines.append({"type": "message", "id": f"m{i}", "parentId": f"m{i - 1}" if i else None,
                      "message": {"role": "user" if i % 2 == 0 else "assistant",
                                  "content": text if i % 2 == 0 else [{"type": "text", "text": text}]}})
    escaped = folder / "controls_in_json.jsonl"
    escaped.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    out.append((f"pi session, 40 messages of control characters ({escaped.stat().st_size // 1024:,} KiB)", escaped))
    return out


def run() -> Section:
    from ctxlab.io.page_store import PageStore, execute_read_page

    section = Section("Hostile files: time to refuse (or read)", COMMAND, intro=__doc__.split("\n\n", 2)[2].strip())
    section.columns = ["file", "command", "in process", "exit", "child process", "child exit", "what it says",
                       "< 1 s"]
    startup, code, _ = _child(["--version"])
    section.rows.append(["(none)", "--version", "—", "—", ms(startup), code, "Python start-up and import", "—"])
    ok = True
    with tempfile.TemporaryDirectory(prefix="ctxlab-hostile-") as tmp:
        folder = Path(tmp)
        for what, path in _files(folder):
            for command in ("inspect", "replay"):
                argv = [command, str(path)]
                t_in, code_in, said = _in_process(argv)
                t_child, code_child, said_child = _child(argv)
                fast = t_in < LIMIT_S and code_child != "timeout" and t_child - startup < LIMIT_S
                ok &= fast
                said = (said or said_child or "(read)").replace(str(folder), "<tmp>")  # no machine's paths
                section.rows.append([what, command, ms(t_in), code_in, ms(t_child), code_child,
                                     said[:110].replace("|", "\\|"),
                                     "yes" if fast else "**no**"])
        if os.name == "posix":  # a sparse 2 GB file planted under a page's name, and over a page put
            store = PageStore(folder / "pages")
            handle = store.put("a small page")
            for name in (f"{handle}.txt", "0123456789abcdef.txt"):
                with open(folder / "pages" / name, "ab") as f:
                    f.truncate(2 * 1024**3)
            cases = [("planted 2 GB page, no record", "PageStore.get", lambda: store.get("0123456789abcdef")),
                     ("2 GB file over a page put here", "PageStore.get", lambda: store.get(handle)),
                     ("2 GB file over a page put here", "read_page tool",
                      lambda: execute_read_page(store, {"handle": handle, "start_line": 1}))]
            for what, call, fn in cases:
                took, said = _timed_call(fn)
                ok &= took < LIMIT_S
                section.rows.append([what, call, ms(took), "—", "—", "—", said[:110],
                                     "yes" if took < LIMIT_S else "**no**"])
    section.notes.append("every call within 1 s: " + ("yes" if ok else "**no**"))
    section.notes += [f"{k}: {v}" for k, v in machine()]
    return section


def main(argv: list[str]) -> int:
    section = run()
    text = section.markdown()
    print(text)
    if "--write" in argv:
        target = Path(argv[argv.index("--write") + 1])
        target.write_text("# Hostile files\n\n" + text, encoding="utf-8")
        print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
