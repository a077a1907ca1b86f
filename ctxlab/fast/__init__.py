"""The same answers, faster: bonus reading after chapter 08.

Unlike the book's :func:`ctxlab.context.build_context` and :func:`ctxlab.render.render_blocks`, which
start from scratch on every model call, these remember the previous calls of a replay and redo only
what changed: ``incremental.py`` (a meter with prefix sums and a memo over a history that only grows; it
also gives the strategies the units it grouped), ``sendable_cache.py`` (the wire rules applied to the new
piece of a context only, where no rule crosses the seam) and ``render_cache.py`` (each message rendered
once; a request that starts like an earlier one continues from its blocks) and ``wire_cache.py`` (the bodies a
checked replay shows the oracle, each message rendered once). The book never imports this package; it defines
the slots, and :data:`FAST` fills them::

    from ctxlab.fast import FAST
    result = replay(conversation, "budgeted", speedup=FAST)      # the same ledger as without it
    loop = AgentLoop(session, "compaction", speedup=FAST)         # the same requests

``tests/test_fast.py`` runs one suite plain and fast and requires identical results;
``bench/fast_vs_plain.py`` measures the difference.
"""

from __future__ import annotations

from ctxlab.fast.incremental import IncrementalMeter
from ctxlab.fast.render_cache import RenderCache
from ctxlab.fast.wire_cache import BodyCache
from ctxlab.replay import Speedup

FAST = Speedup(meter=IncrementalMeter, renderer=RenderCache, bodies=BodyCache)  # per thread and profile; per replay

__all__ = ["FAST", "BodyCache", "IncrementalMeter", "RenderCache"]
