"""``shared_prefix`` (ctxlab/base/sequences.py), the memo of every incremental path, against the plain loop."""

from hypothesis import given
from hypothesis import strategies as st

from ctxlab.base.sequences import shared_prefix


def plain(a, b) -> int:
    """The definition: the first index where the two differ, or the shorter length."""
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


@given(st.lists(st.integers(0, 3), max_size=40), st.lists(st.integers(0, 3), max_size=40))
def test_shared_prefix_is_the_first_difference(a, b):
    assert shared_prefix(a, b) == plain(a, b)
    assert shared_prefix(tuple(a), tuple(b)) == plain(a, b)


@given(st.lists(st.integers(0, 3), max_size=60), st.integers(0, 60), st.integers(0, 3))
def test_one_change_is_found_where_it_is(a, at, value):
    b = list(a)
    if at < len(b):
        b[at] = value
    assert shared_prefix(a, b) == plain(a, b)


def test_the_docstring_example():
    assert shared_prefix([1, 2, 3], [1, 2, 4]) == 2
    assert shared_prefix([], [1]) == 0 and shared_prefix([1, 2], [1, 2]) == 2
