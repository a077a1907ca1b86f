"""Each chapter's measurements and the workbook's data: plain functions returning frozen rows.

No ipywidgets, no plotly here (those are in :mod:`ctxlab.widgets`, which draws these rows); the
notebooks and the CLI call these. May import the book, ``io`` and ``fast``; never ``widgets``.
"""
