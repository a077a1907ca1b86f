#!/usr/bin/env python3
"""Execute the chapters in fresh kernels and save their outputs: how the committed outputs are refreshed.

    python tools/execute_notebooks.py                      # every notebooks/NN_*.ipynb, *_further too
    python tools/execute_notebooks.py notebooks/01_*.ipynb # some of them
    python tools/execute_notebooks.py --check              # execute, but write nothing (exit 1 on error)

Each notebook runs top to bottom with nbclient in a new kernel (the ``python3`` kernel of the
interpreter running this script, working directory ``notebooks/``), with a throw-away IPYTHONDIR so
no personal start-up file changes an output. Then:

* ``metadata.widgets`` is removed (the saved widget state is large, changes every run, and no
  notebook tester reads it);
* per-cell execution timing is not recorded, and ``language_info`` keeps only the language name,
  so a re-run on another machine changes only what the cells print.

Run nbval afterwards (``pytest --nbval notebooks/``) — twice, to see the outputs are deterministic.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"


def strip(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Remove saved widget state, per-cell timing and the kernel's version details (in place); returns ``nb``."""
    nb.metadata.pop("widgets", None)
    nb.metadata["language_info"] = {"name": "python"}  # not the exact Python version of whoever ran it last
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    return nb


def execute(path: Path, timeout: int = 300) -> tuple[nbformat.NotebookNode, float]:
    """Run one notebook in a fresh kernel; returns the executed notebook and the seconds it took."""
    nb = nbformat.read(path, as_version=4)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ctxlab-ipython-") as ipython_dir:
        saved = os.environ.get("IPYTHONDIR")
        os.environ["IPYTHONDIR"] = ipython_dir  # the kernel inherits it: no personal start-up files
        try:
            client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                                    resources={"metadata": {"path": str(path.parent)}})
            client.execute()
        finally:
            if saved is None:
                os.environ.pop("IPYTHONDIR", None)
            else:
                os.environ["IPYTHONDIR"] = saved
    return strip(nb), time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path,
                        help="notebooks to run (default: every notebooks/NN_*.ipynb, NN_*_further.ipynb included)")
    parser.add_argument("--check", action="store_true", help="execute but do not write the outputs back")
    parser.add_argument("--timeout", type=int, default=300, help="seconds a cell may run (default 300)")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    failed = 0
    for path in paths:
        try:
            nb, seconds = execute(path, args.timeout)
        except CellExecutionError as err:
            failed += 1
            print(f"FAIL  {path.name}: {str(err).splitlines()[0] if str(err) else err!r}")
            print(str(err)[-2000:], file=sys.stderr)
            continue
        if not args.check:
            nbformat.write(nb, path)
        print(f"ok    {path.name}  {seconds:.1f} s" + ("" if args.check else "  (outputs saved)"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
