"""The same answers, faster: bonus reading after chapter 08.

Unlike the book's :func:`ctxlab.context.build_context` and :func:`ctxlab.render.render_blocks`, which
start from scratch on every model call, these remember the previous call of a replay and redo only
what changed: ``incremental.py`` (prefix sums and a memo over a history that only grows) and
``render_cache.py`` (each message rendered once; a request that starts like an earlier one continues
from its blocks). The book never imports this package; a replay or an agent loop is handed it through
the slots the book defines, and one test suite runs plain and fast and requires identical results.
"""
