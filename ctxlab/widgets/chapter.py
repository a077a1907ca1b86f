"""What opens every chapter: the versions line (:func:`banner`) and the offline plot set-up.

UI plumbing, not a concept: the first cell of each notebook calls ``banner("NN topic")``. Chapter 00.
"""

from __future__ import annotations

import platform
from importlib import metadata

from ctxlab.widgets._plots import register_template

__all__ = ["banner", "versions", "setup_plots"]


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def versions() -> dict[str, str]:
    """The versions a chapter depends on: ``{"python": "3.11.9", "ctxlab": "0.1.0", ...}``. Chapter 00."""
    out = {"python": platform.python_version()}
    for dist in ("ctxlab", "tiktoken", "plotly", "ipywidgets", "pandas"):
        out[dist] = _version(dist)
    return out


def setup_plots() -> None:
    """Make figures reproducible and offline: the ``plotly_mimetype`` renderer and ctxlab's template.

    The mimetype renderer stores figure JSON only (no random div ids, no plotly.js from a CDN);
    the template is ctxlab's own, so a plotly upgrade does not change the stored figures. Chapter 00.
    """
    import plotly.io as pio  # here, not at the top: a chapter with no figures never pays for plotly

    register_template()
    pio.renderers.default = "plotly_mimetype"


def banner(chapter: str = "", plots: bool = True) -> None:
    """Print the versions line that opens a chapter, and set plotting up (:func:`setup_plots`).

    ``banner("01 token accounting")`` → ``ctxlab workbook · 01 token accounting`` and a line of
    versions. The chapters mark this cell ``# NBVAL_IGNORE_OUTPUT``: versions change. A chapter with
    no figures passes ``plots=False``: plotly's renderer set-up costs about a second and a half.
    Chapters 00–08 open with it.
    """
    if plots:
        setup_plots()
    print("ctxlab workbook" + (f" · {chapter}" if chapter else ""))
    print(" · ".join(f"{k} {v}" for k, v in versions().items()))
