"""The chapters' widgets: one module per chapter, each widget a small class.

Every widget has a pure ``compute(...)`` that returns plain numbers (what the tests assert on),
``controls`` (the ipywidgets a learner moves), a view that re-renders when a control changes,
``state`` (the last computed result) and ``widget`` (what a notebook displays; displaying the
object itself works too). Figures use ctxlab's own plotly template (``_plots.py``) and draw
offline. Imported lazily by the chapters: ``from ctxlab.widgets import TokenXray``.
"""

from __future__ import annotations

from ctxlab.widgets.ch00_bill import BillWidget, TranscriptUpload, find_rewrites, read_bill, summarize
from ctxlab.widgets.ch01_tokens import TokenXray, content_samples, reveal_guess, xray
from ctxlab.widgets.ch02_session import BranchWidget, compare_contexts, working_copy
from ctxlab.widgets.ch03_budget import BudgetWidget, granularity_stats, kept_under

__all__ = [
    "BillWidget", "TranscriptUpload", "find_rewrites", "read_bill", "summarize",
    "TokenXray", "content_samples", "reveal_guess", "xray",
    "BranchWidget", "compare_contexts", "working_copy",
    "BudgetWidget", "granularity_stats", "kept_under",
]
