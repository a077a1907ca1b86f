"""What two sequences share at their start, compared in C: the memo of every incremental path (chapters 06, 08)."""

from __future__ import annotations

from collections.abc import Sequence


def shared_prefix(a: Sequence[object], b: Sequence[object]) -> int:
    """How many first items ``a`` and ``b`` share: slices compared in C (identity first, then ``==``), bisected.
    ``shared_prefix([1, 2, 3], [1, 2, 4])`` → 2. Used by the summary's chunks (chapter 06) and the render cache
    (bonus reading after chapter 08)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo] and a[:hi] != b[:hi]: only the stretch between is compared, so the
    while hi - lo > 1:  # halvings cost about n in all, not n per halving
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if a[lo:mid] == b[lo:mid] else (lo, mid)
    return lo
