"""The chapters' widgets (chapters 00–08): UI only, one module per chapter, each widget a small class.

Every widget has a ``compute(...)`` that calls into the chapter's measurements in :mod:`ctxlab.lab`
and returns plain numbers (what the tests assert on), ``controls`` (the ipywidgets a learner moves),
a view that re-renders when a control changes, ``state`` (the last computed result) and ``widget``
(what a notebook displays; displaying the object itself works too). Figures use ctxlab's own
plotly template (``_plots.py``) and draw offline. Re-exported here: the widget classes of chapters
00–03 (``from ctxlab.widgets import TokenXray``) and the ledger's figure
(``ledger_figure(ledger)``, chapter 04); the measurements are imported from ``ctxlab.lab.chNN_*``.
"""

from __future__ import annotations

from ctxlab.widgets._ledger_plot import ledger_figure
from ctxlab.widgets.ch00_bill import BillWidget, TranscriptUpload
from ctxlab.widgets.ch01_tokens import TokenXray
from ctxlab.widgets.ch02_session import BranchWidget
from ctxlab.widgets.ch03_budget import BudgetWidget

__all__ = ["BillWidget", "TranscriptUpload", "TokenXray", "BranchWidget", "BudgetWidget", "ledger_figure"]
