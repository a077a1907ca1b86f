"""Numbers that public docstrings state about the bundled sample are what the code returns today.

A docstring example is prose a learner trusts; each test reads the number from the docstring itself (so
editing the text without the code, or the code without the text, fails here) and recomputes it.
"""

from __future__ import annotations

import re

import pytest

from ctxlab.io.checklist import load_facts
from ctxlab.lab import ch07_policies, compare
from ctxlab.lab.data import SAMPLE_FACTS
from ctxlab.lab.workbook import load_workbook_conversation


@pytest.fixture(scope="module")
def sample():
    return load_workbook_conversation()


def test_leaderboard_docstring_cost_is_the_replayed_cost(sample):
    stated = re.search(r'row\("compaction"\)\.cost_usd`` → ([0-9.]+)', compare.leaderboard.__doc__)
    assert stated, "the leaderboard docstring no longer states the compaction cost"
    board = compare.leaderboard(sample, window=30_000, facts=load_facts(SAMPLE_FACTS))
    assert f"{board.row('compaction').cost_usd:.4f}" == stated.group(1)


def test_policy_rows_docstring_numbers_are_the_replayed_ones(sample):
    pattern = r"budgeted → (\d+) rewrites, \$([0-9.]+); \(0\.8, 0\.5\) → (\d+) compactions, \$([0-9]+\.[0-9]+)"
    stated = re.search(pattern, ch07_policies.policy_rows.__doc__)
    assert stated, "the policy_rows docstring no longer states its sample figures"
    budgeted, pair = ch07_policies.policy_rows(sample, 30_000, ["budgeted", (0.8, 0.5)])
    assert (str(budgeted.rewrites), f"{budgeted.cost_usd:.4f}") == stated.group(1, 2)
    assert (str(pair.compactions), f"{pair.cost_usd:.4f}") == stated.group(3, 4)
