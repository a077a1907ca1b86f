"""build_context: the required behaviours of the foundation issue, and its invariants under generated sessions."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxlab.context import BudgetPolicy, build_context
from ctxlab.base.errors import BudgetError, CtxlabError
from ctxlab.interactions import find_orphans, group_units
from ctxlab.messages import Conversation, assistant, tool_result, user
from ctxlab.tables.profiles import profile_for
from ctxlab.tokens import MessageMeter

GPT = profile_for("gpt-4o")  # accepts an assistant message first
CLAUDE = profile_for("claude-sonnet-4-5")  # requires a user message first


def conv(*msgs, system=("You are a careful coding agent.",)):
    return Conversation("t", tuple(msgs), system=system)


def ids(ctx):
    return [m.id for m in ctx.messages]


def fixed_tokens(c, profile):
    meter = MessageMeter(profile)
    return meter.system(c.system) + meter.tools(c.tools) + profile.per_request_tokens


@pytest.fixture
def five():
    """[U, A(c1), T(c1), A, U2] with a large tool result."""
    return conv(
        user("Please look at the failing test in tests/test_api.py.", "U"),
        assistant("Reading the test file.", "A1", calls=(("c1", "read_file", {"path": "tests/test_api.py"}),)),
        tool_result("c1", "def test_api():\n    assert client.get('/health').status == 200\n" * 30, "T1"),
        assistant("The test expects /health to return 200.", "A2"),
        user("Good. Now fix it.", "U2"),
    )


def budget_for_last_two(c, profile):
    meter = MessageMeter(profile)
    m = {x.id: x for x in c.messages}
    return fixed_tokens(c, profile) + meter.message(m["A2"]) + meter.message(m["U2"]) + 2


def test_last_two_units_when_assistant_first_is_allowed(five):
    ctx = build_context(five, BudgetPolicy(budget_tokens=budget_for_last_two(five, GPT)), profile=GPT)
    assert ids(ctx) == ["A2", "U2"]
    assert ctx.total_tokens <= ctx.budget_tokens


def test_user_first_profile_gets_pinned_task_or_newest_user_only(five):
    budget = budget_for_last_two(five, CLAUDE)
    ctx = build_context(five, BudgetPolicy(budget_tokens=budget), profile=CLAUDE)
    assert ids(ctx) == ["U2"]
    assert any("user message first" in r.reason for r in ctx.dropped())

    meter = MessageMeter(CLAUDE)
    first = next(m for m in five.messages if m.id == "U")
    pinned_budget = budget + meter.message(first)
    ctx = build_context(five, BudgetPolicy(budget_tokens=pinned_budget, pin_first_task=True), profile=CLAUDE)
    assert ids(ctx) == ["U", "A2", "U2"]
    assert ctx.total_tokens <= pinned_budget  # the pinned task is counted in the budget
    assert ctx.messages[0].role == "user"


@pytest.mark.parametrize("max_units", [1, 2, 3, 4])
def test_max_units_never_starts_on_a_tool_result(five, max_units):
    for profile in (GPT, CLAUDE):
        ctx = build_context(five, BudgetPolicy(max_units=max_units), profile=profile)
        assert ctx.messages[0].role != "tool"
        assert len(ctx.kept()) <= max(max_units, 1)
        assert find_orphans(ctx.messages) == []


def test_system_prompt_first_and_unchanged_when_dropping():
    system = ("You are terse.", "Never push to main.")
    c = conv(user("one " * 50, "U1"), assistant("two " * 50, "A1"), user("three", "U2"), assistant("four", "A2"),
             system=system)
    fixed = fixed_tokens(c, GPT)
    ctx = build_context(c, BudgetPolicy(budget_tokens=fixed + 40), profile=GPT)
    assert ctx.system == system
    assert ctx.dropped(), "the budget was meant to force a drop"
    assert ids(ctx)[-1] == "A2"


def test_long_agentic_turn_keeps_task_and_newest_round():
    c = conv(
        user("task: migrate the database schema", "U"),
        assistant("", "A1", calls=(("c1", "bash", {"cmd": "ls migrations"}),)),
        tool_result("c1", "0001_init.sql\n" * 200, "T1"),
        assistant("", "A2", calls=(("c2", "bash", {"cmd": "cat migrations/0002.sql"}),)),
        tool_result("c2", "ALTER TABLE users ADD COLUMN email TEXT;", "T2"),
    )
    meter = MessageMeter(CLAUDE)
    m = {x.id: x for x in c.messages}
    need = fixed_tokens(c, CLAUDE) + sum(meter.message(m[i]) for i in ("U", "A2", "T2"))
    ctx = build_context(c, BudgetPolicy(budget_tokens=need + 5), profile=CLAUDE)
    assert ids(ctx) == ["U", "A2", "T2"]
    assert [r.decision for r in ctx.report] == ["pinned", "dropped", "kept"]

    with pytest.raises(BudgetError, match="newest unit"):  # the turn as one unit does not fit
        build_context(c, BudgetPolicy(budget_tokens=need + 5, granularity="turn"), profile=CLAUDE)


def test_interleaved_parallel_calls_are_one_unit_kept_or_dropped_whole():
    c = conv(
        user("check both services", "U"),
        assistant("", "A1", calls=(("c1", "http", {"url": "a"}),)),
        assistant("", "A2", calls=(("c2", "http", {"url": "b"}),)),
        tool_result("c1", "a is up " * 40, "T1"),
        tool_result("c2", "b is down " * 40, "T2"),
        user("thanks", "U2"),
    )
    units = group_units(c.messages)
    assert [[m.id for m in u.messages] for u in units] == [["U"], ["A1", "A2", "T1", "T2"], ["U2"]]
    meter = MessageMeter(GPT)
    round_t = sum(meter.message(m) for m in units[1].messages)
    base = fixed_tokens(c, GPT) + meter.message(units[0].messages[0]) + meter.message(units[2].messages[0])
    for budget in range(base - 5, base + round_t + 5, 7):
        try:
            ctx = build_context(c, BudgetPolicy(budget_tokens=budget), profile=GPT)
        except BudgetError:
            continue
        kept_round = {"A1", "A2", "T1", "T2"} & set(ids(ctx))
        assert kept_round in (set(), {"A1", "A2", "T1", "T2"})


def test_fixed_part_over_budget_names_the_numbers():
    c = conv(user("hi", "U"), system=("x " * 500,))
    with pytest.raises(BudgetError) as err:
        build_context(c, BudgetPolicy(budget_tokens=100), profile=GPT)
    assert "fixed part" in str(err.value) and "100" in str(err.value)
    assert err.value.needed > err.value.budget == 100


def test_newest_unit_over_budget_names_the_message():
    c = conv(user("hi", "U"), assistant("", "A", calls=(("c1", "cat", {}),)), tool_result("c1", "log " * 2000, "T"))
    with pytest.raises(BudgetError) as err:
        build_context(c, BudgetPolicy(budget_tokens=500), profile=GPT)
    assert "tool message 'T'" in str(err.value) and "chapter 05" in str(err.value)  # the big result, named


def test_empty_conversation_is_an_error_not_an_empty_context():
    with pytest.raises(CtxlabError, match="no messages"):
        build_context(conv(), profile=GPT)


def test_meta_messages_never_reach_the_context():
    from dataclasses import replace
    meta = replace(user("<command-name>/clear</command-name>", "M"), origin="meta")
    ctx = build_context(conv(user("hi", "U"), meta, assistant("hello", "A")), profile=GPT)
    assert "M" not in ids(ctx)
    assert any("meta" in n for n in ctx.notes)


def test_default_budget_is_ninety_percent_of_the_window(five):
    ctx = build_context(five, profile=CLAUDE)
    assert ctx.budget_tokens == int(CLAUDE.context_window * 0.9)
    assert any("not anthropic's tokenizer" in n for n in ctx.notes)


def test_build_context_is_pure(five):
    before = repr(five)
    a = build_context(five, BudgetPolicy(budget_tokens=budget_for_last_two(five, GPT)), profile=GPT)
    b = build_context(five, BudgetPolicy(budget_tokens=budget_for_last_two(five, GPT)), profile=GPT)
    assert repr(five) == before
    assert a == b


# ---- generated sessions ----

@st.composite
def sessions(draw):
    """Random agent histories: parallel and interleaved calls, aborted calls, system reminders."""
    msgs, n_call = [], 0
    for turn in range(draw(st.integers(1, 5))):
        msgs.append(user(draw(st.sampled_from(["fix it", "继续，不要修改配置", "run the tests please"])) * draw(st.integers(1, 20)),
                         f"u{turn}"))
        for r in range(draw(st.integers(0, 4))):
            width = draw(st.integers(0, 3))
            calls = tuple((f"c{n_call + i}", "bash", {"cmd": "ls"}) for i in range(width))
            n_call += width
            msgs.append(assistant("thinking about it " * draw(st.integers(0, 5)), f"a{turn}.{r}", calls=calls))
            interrupted = draw(st.integers(0, 9)) == 0  # an aborted round: some calls never answered
            answered = [c for c in calls if not (interrupted and draw(st.booleans()))]
            order = draw(st.permutations(answered))
            for c in order:
                msgs.append(tool_result(c[0], "output line\n" * draw(st.integers(0, 60)), f"t{c[0]}"))
    return msgs


@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(sessions(), st.integers(30, 3000), st.sampled_from([GPT, CLAUDE]), st.sampled_from(["round", "turn"]),
       st.sampled_from([None, 1, 2, 5]))
def test_invariants_under_generated_sessions(msgs, budget, profile, granularity, max_units):
    c = conv(*msgs)
    policy = BudgetPolicy(budget_tokens=budget, granularity=granularity, max_units=max_units)
    try:
        ctx = build_context(c, policy, profile=profile)
    except BudgetError:
        return  # a clear refusal is allowed; a wrong context is not
    assert ctx.messages, "never empty"
    assert find_orphans(ctx.messages) == [], "no orphan on either side"
    assert ctx.total_tokens <= budget
    assert ctx.system == c.system
    newest_user = [m for m in msgs if m.is_real_user][-1]
    assert newest_user in ctx.messages, "the newest user message is kept"
    if profile.requires_user_first:
        assert ctx.messages[0].role == "user"
    units = group_units(c.messages, granularity)
    assert [m for u in units for m in u.messages if m.origin != "synthetic"] == list(c.messages), "units partition the history"


def test_unanswered_calls_are_reported_under_either_treatment():
    c = conv(user("go", "U"), assistant("", "A", calls=(("c1", "bash", {}),)), user("never mind", "U2"))
    for treatment in ("stub", "drop"):
        ctx = build_context(c, BudgetPolicy(unanswered=treatment), profile=CLAUDE)
        assert find_orphans(ctx.messages) == []
        assert any("'c1'" in n and "never got a result" in n for n in ctx.notes)
    assert "A" not in ids(build_context(c, BudgetPolicy(unanswered="drop"), profile=CLAUDE))
