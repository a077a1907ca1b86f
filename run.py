#!/usr/bin/env python3
"""The two quick-start commands of ctxlab. Standard library only; Linux, macOS and Windows.

    python run.py lab [--headless] [--port N]   set up .venv, then start JupyterLab on notebooks/
    python run.py test [pytest args...]         set up .venv, then run the tests and every notebook
    python run.py test --setup-only             set up only
    python run.py browser [pytest args...]      set up .venv (and Chromium), then the real-browser tests

This file only checks the Python version, then loads run_impl.py beside it, which does the work
(its docstring describes the set-up). Python parses a whole file before running any of it, so
this one is written for every Python, 2.7 included: no f-strings, annotations or
``from __future__ import annotations`` (a SyntaxError on 3.6), so that an old Python prints the
message below instead of a SyntaxError (tests/test_setup_robust.py checks it).
"""

import os
import sys

MIN_PYTHON = (3, 10)


def too_old(version_info, version, executable, argv, os_name):
    """The one line for a Python older than MIN_PYTHON, or None."""
    if tuple(version_info[:2]) >= MIN_PYTHON:
        return None
    message = "[run.py] ctxlab needs Python %d.%d or newer; this is %s (%s). " % (
        MIN_PYTHON[0], MIN_PYTHON[1], version.split()[0], executable)
    if version_info[0] < 3:
        newer = "py -3" if os_name == "nt" else "python3"
        command = list(argv[:1] or ["run.py"]) + (list(argv[1:]) or ["lab"])
        message += "Try %s %s, or install a newer Python and run again." % (newer, " ".join(command))
    else:
        message += "Install a newer Python and run again."
    return message


def load_impl():
    """run_impl.py, the body of run.py, loaded by its path (it is no installed module)."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.realpath(__file__)), "run_impl.py")
    if not os.path.isfile(path):
        sys.exit("[run.py] %s is missing: run.py needs the whole project folder." % path)
    spec = importlib.util.spec_from_file_location("ctxlab_run_impl", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_message = too_old(sys.version_info, sys.version, sys.executable, sys.argv, os.name)
if _message:
    sys.exit(_message)
impl = load_impl()
for _name in dir(impl):  # run_impl's names are run.py's too (run_py.setup, run_py.lab_command, ...)
    if not _name.startswith("__"):
        globals()[_name] = getattr(impl, _name)

if __name__ == "__main__":
    sys.exit(impl.main())
