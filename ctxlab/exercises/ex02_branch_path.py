"""Exercise 2 (chapter 02): the path from the root to a leaf of a session tree.

A session file is a list of records in the order they were appended, each naming its parent; a
fork appends a record whose parent is an earlier one. The context of a branch is built from the
path root → leaf (``ctxlab.io.session.Session.path``), not from the file's order. The cases are
trees of 1 to 10 records grown with a seeded random generator (about one record in four forks
from an earlier record), one case per leaf, smallest trees first.
"""

from __future__ import annotations

import random

from ctxlab.exercises._grader import Exercise, by_size, short


def branch_path(records: list[tuple[str, str | None]], leaf: str) -> list[str]:
    parent = dict(records)  # id -> parent id (None for the root)
    path = []
    at = leaf
    while at is not None:  # climb from the leaf to the root ...
        path.append(at)
        at = parent[at]
    return path[::-1]  # ... then read it root first


def _tree(rng: random.Random, size: int) -> list[tuple[str, str | None]]:
    records: list[tuple[str, str | None]] = [("m1", None)]
    for i in range(2, size + 1):
        forks = rng.random() < 0.25
        parent = f"m{rng.randint(1, i - 1)}" if forks else f"m{i - 1}"  # a fork, or append to the last one
        records.append((f"m{i}", parent))
    return records


def _cases() -> list[tuple]:
    rng = random.Random(2)  # fixed seed: the same trees on every run
    cases: list[tuple] = [([("m1", None), ("m2", "m1"), ("m3", "m1")], "m3")]  # the smallest fork
    for size in range(1, 11):
        for _ in range(4):
            records = _tree(rng, size)
            has_child = {parent for _, parent in records}
            cases += [(records, rid) for rid, _ in records if rid not in has_child]  # one case per leaf
    return by_size(cases, lambda c: (len(c[0]), int(c[1][1:])))  # records, then how late the leaf is


def _show(args: tuple) -> str:
    records, leaf = args
    return f"records={records!r}, leaf={leaf!r}"


EXERCISE = Exercise(
    number=2,
    title="the path from the root to a leaf",
    function="branch_path",
    signature="branch_path(records: list[tuple[str, str | None]], leaf: str) -> list[str]",
    cases=_cases,
    reference=branch_path,
    show_input=_show,
    show_output=short,
    hints=(
        "The file's order is not the branch's order: after a fork, the records of the other branch sit "
        "between the root and your leaf. Follow the parent pointers instead.",
        "Make a dict id -> parent from the records, start at the leaf and step to the parent until "
        "the parent is None, collecting the ids on the way.",
        "You collected them leaf first; return the list reversed, so it starts at the root. "
        "records=[('m1', None), ('m2', 'm1'), ('m3', 'm1')], leaf='m3' → ['m1', 'm3'].",
    ),
)
