"""The fast paths of an agent loop and a replay give exactly what the textbook code gives.

* ctxlab/fast/incremental.py: an ``IncrementalMeter`` remembers the units of the histories
  it built from; the tests grow a history one item at a time and compare each build with a fresh,
  textbook build: the Context (messages, report, notes, token fields) or the error must be equal;
* ctxlab/fast/render_cache.py: a request continued from an earlier one's blocks equals the request
  rendered from scratch.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from session_gen import sessions

from ctxlab.base.errors import CtxlabError
from ctxlab.context import BudgetPolicy, build_context
from ctxlab.fast.incremental import IncrementalMeter
from ctxlab.fast.render_cache import RenderCache
from ctxlab.interactions import STUB_TEXT
from ctxlab.messages import Conversation
from ctxlab.render import default_breakpoints, render_blocks
from ctxlab.tables.profiles import profile_for
from ctxlab.tokens import MessageMeter

CLAUDE, GPT = profile_for("claude-sonnet-4-5"), profile_for("gpt-4o")


def outcome(conv: Conversation, policy: BudgetPolicy, profile, meter: MessageMeter | None):
    """The Context, or the error as (type, message): both paths must agree on either."""
    try:
        return build_context(conv, policy, profile=profile, meter=meter)
    except CtxlabError as err:
        return type(err).__name__, str(err)


def grow_and_compare(conv: Conversation, policy: BudgetPolicy, profile, step: int = 1) -> int:
    """Build at every prefix of ``conv.items`` with one incremental meter; return how many builds succeeded."""
    meter = IncrementalMeter(profile)
    built = 0
    for k in range(1, len(conv.items) + 1, step):
        prefix = replace(conv, items=conv.items[:k])
        fresh, fast = outcome(prefix, policy, profile, None), outcome(prefix, policy, profile, meter)
        assert fast == fresh, f"prefix of {k} items differs"
        built += not isinstance(fresh, tuple)
    return built


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(sessions(max_turns=4, max_rounds=3, huge=False), st.sampled_from(["round", "turn"]), st.booleans(),
       st.sampled_from(["stub", "drop"]), st.sampled_from([None, 2, 5]), st.integers(200, 6_000))
def test_generated_sessions_grow_alike(conv, granularity, pin_first_task, unanswered, max_units, budget):
    profile = profile_for(conv.model, conv.provider)
    policy = BudgetPolicy(budget_tokens=budget, granularity=granularity, pin_first_task=pin_first_task,
                          unanswered=unanswered, max_units=max_units)
    grow_and_compare(conv, policy, profile)


@pytest.mark.parametrize("profile", [CLAUDE, GPT], ids=["claude (current-turn thinking)", "gpt-4o"])
@pytest.mark.parametrize("budget", [8_000, 30_000])
def test_the_sample_grows_alike(sample, profile, budget):
    # budgets that cut the sample's history: most prefixes drop units, so the reused report lines are used
    built = grow_and_compare(sample, BudgetPolicy(budget_tokens=budget), profile)
    assert built > len(sample.items) // 2


def test_a_meter_shared_between_histories_that_do_not_extend_each_other(sample):
    """Prefixes in random order, another conversation in between, and two policies: never a stale answer."""
    meter = IncrementalMeter(CLAUDE)
    other = replace(sample, items=tuple(reversed([m for m in sample.items if getattr(m, "role", "") == "user"])))
    rng = random.Random(7)
    lengths = [rng.randrange(1, len(sample.items) + 1) for _ in range(25)]
    for k in lengths:
        for conv in (replace(sample, items=sample.items[:k]), other):
            for policy in (BudgetPolicy(budget_tokens=20_000), BudgetPolicy(budget_tokens=20_000, pin_first_task=True)):
                assert outcome(conv, policy, CLAUDE, meter) == outcome(conv, policy, CLAUDE, None)
    assert len(meter.memos) <= 4


def counting_meter(profile, calls: list[str], incremental: bool) -> MessageMeter:
    meter = IncrementalMeter(profile) if incremental else MessageMeter(profile)
    counter = meter.counter

    class Counting:  # the profile's counter, writing down every text it is asked to count
        name, exact = counter.name, counter.exact

        def count(self, text: str) -> int:
            calls.append(text)
            return counter.count(text)

    meter.counter = Counting()
    return meter


def test_an_incremental_meter_counts_each_message_once(sample):
    """Growing the sample item by item counts exactly what one full-report build of the whole sample counts (every
    unit: the incremental meter keeps prefix sums over all of them)."""
    grown: list[str] = []
    meter = counting_meter(GPT, grown, incremental=True)
    policy = BudgetPolicy(budget_tokens=30_000)
    for k in range(1, len(sample.items) + 1):
        try:
            build_context(replace(sample, items=sample.items[:k]), policy, profile=GPT, meter=meter)
        except CtxlabError:
            continue  # a prefix with no message yet
    once: list[str] = []
    build_context(sample, policy, profile=GPT, meter=counting_meter(GPT, once, incremental=False), full_report=True)
    # The stub result of an interrupted call is made anew each time its unit is grouped (the last unit
    # is grouped again on every call until it closes): a short synthetic text, left out here.
    real = [t for t in grown if t != STUB_TEXT]
    assert sorted(real) == sorted(t for t in once if t != STUB_TEXT)
    build_context(sample, policy, profile=GPT, meter=meter)
    assert len([t for t in grown if t != STUB_TEXT]) == len(real)  # built again: nothing is counted again


# ---- rendering: a request continued from an earlier one is the request rendered from scratch ----------

@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_rendering_continued_from_earlier_requests_equals_rendering_from_scratch(sample, provider):
    """A replay-like sequence: the history grows, the budget drops old units, the thinking setting changes."""
    cache, meter = RenderCache(), IncrementalMeter(CLAUDE)
    policies = (BudgetPolicy(budget_tokens=10**9), BudgetPolicy(budget_tokens=12_000))
    for k in range(1, len(sample.items) + 1, 3):
        for policy in policies:
            ctx = outcome(replace(sample, items=sample.items[:k]), policy, CLAUDE, meter)
            if isinstance(ctx, tuple):
                continue
            thinking = "high" if k % 4 else "off"
            fresh = render_blocks(ctx, provider, "claude-sonnet-4-5", MessageMeter(CLAUDE), thinking)
            assert cache(ctx, provider, "claude-sonnet-4-5", meter, thinking) == fresh


def test_default_breakpoints_are_where_an_agent_puts_them():
    kinds = ["tools", "tools", "system", "message", "message", "message", "message"]
    mids = [None, None, None, "u1", "a1", "t1", "a2"]
    assert default_breakpoints(kinds, mids, {"u1", "t1"}) == {1, 2, 4, 6}  # last tool, system, before t1, last
    assert default_breakpoints(kinds[:4], mids[:4], {"u1"}) == {1, 2, 3}  # one user message: no second mark
    assert default_breakpoints(["message"], ["u1"], {"u1"}) == {0}
