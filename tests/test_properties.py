"""Property tests: every strategy, replayed over generated sessions, keeps the invariants at every call.

Each example draws one session (``tests/session_gen.py``) and one window — from below the smallest
workable one, through the edge, to far above it — and replays the session under every strategy of
the registry (plus the usage-metered compaction and pipeline, whose trigger meters with a chars/4
estimator), each with its own options drawn too. A replay either

* sends at every call a context that breaks no rule of :func:`ctxlab.checks.check_context` — the
  rules ``replay --check`` uses: no orphan, what the provider would accept, within the strategy's
  budget under its own counter, system prompt and tools first and unchanged, only history messages
  in order (plus stubs and summaries), the newest user message, never empty, a user message first
  where the provider needs one — with the strategy's own budget and an overflow flag that says
  whether it exceeds the window; or
* stops with a BudgetError that names its numbers, at a call where even the smallest context the
  strategy may send (fixed part + newest user message + newest unit, its tool results cut as far as
  the strategy cuts them, plus compaction's summary room) is over the budget.

Two fresh strategy instances — one replaying the generated conversation, one replaying it read back
from a ctxlab session file — send byte-identical request bodies (provider JSON), and afterwards the
conversation and the file's sha256 are unchanged. The usage-metered strategies may overshoot their
budget (their estimate is what they meter); how far is recorded, not asserted.

The wire (issue 12): a second property replays each session once under every strategy and renders
every context it sends (side calls too) as all three request bodies — the Messages API with a Claude
model, chat completions and the Responses API with an OpenAI model, whatever model the session was
on — and asserts that the independent oracle (``ctxlab/wire/``) finds nothing in any. Its sessions
force each of ``session_gen.SHAPES`` in turn (aborted turns, blank text, another provider's
thinking, odd call ids and arguments, late results...). A failure names the strategy, the call, the
violation and the offending message of the body, and lists the context sent.

Profiles: the default run is derandomized and small (about 20 s); the thorough one replays every
strategy over 10,000 sessions (each half of the strategies over 10,000 of its own), for the
invariants and, apart, for the wire (every context as the three bodies): ``python run.py test -m
thorough --dist load tests/test_properties.py`` (``--dist load`` lets its halves run on the two workers). At the end a table — calls checked,
refusals, repeated compactions, the largest overshoot under the profile's counter and under exact
tiktoken; then the sessions, contexts and bodies the oracle checked — is printed and written to
``report.md`` in the run's pytest temp folder (figures: ``bench/PROPERTIES.md``); the thorough wire
test asserts its count of sessions. The bugs these properties found are plain tests at the end.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field, replace
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxlab.checks import check_context
from ctxlab.io.codec import item_to_dict
from ctxlab.compaction import CompactionPolicy, CompactionStrategy
from ctxlab.context import BudgetPolicy, build_context
from ctxlab.base.errors import BudgetError, CtxlabError, OrphanError
from ctxlab.interactions import find_orphans, group_units
from ctxlab.messages import Conversation, Entry, Usage, assistant, tool_result, user
from ctxlab.paging import READ_PAGE_TOOL, PagingPolicy
from ctxlab.tables.profiles import profile_for, with_window
from ctxlab.pruning import DEFAULT_MARKER, ArrivalCap, text_tokens
from ctxlab.bodies import to_anthropic_body, to_openai_body, to_responses_body
from ctxlab.replay import STRATEGY_NAMES, get_strategy, replay
from ctxlab.io.session import Session
from ctxlab.strategies import model_calls, whole_context
from ctxlab.summary import Summary
from ctxlab.summary_strategy import PLACEMENTS
from ctxlab.tokens import MessageMeter, infer_static_head
from ctxlab.views import SUMMARY_PREFIX, compacted_view
from ctxlab.wire import check_anthropic, check_openai_chat, check_openai_responses

from session_gen import LOG_LINES, SHAPES, TOOLS, outline, sessions, shapes_of, write_session

SHARED = dict(deadline=None, database=None, print_blob=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FAST = settings(max_examples=40, derandomize=True, **SHARED)  # the default run: about 10 s on one core
THOROUGH = settings(max_examples=10_000, **SHARED)  # pytest -m thorough: 10,000 sessions, each under every strategy
SMALL = dict(max_turns=3, max_rounds=2)  # the thorough run's sessions: many small ones, not a few long ones

USAGE = CompactionPolicy(metering="usage")  # meters from the previous request + chars/4: an estimator
CASES = [(name, name, {}) for name in STRATEGY_NAMES] + [
    ("compaction[usage]", "compaction", {"policy": USAGE}), ("pipeline[usage]", "pipeline", {"policy": USAGE})]
SHRINKS = {"pruned", "paged", "compaction", "pipeline"}  # strategies that cut the newest unit's tool results
WITH_READ_PAGE = {"paged", "pipeline"}


_POLICIES = st.builds(BudgetPolicy, granularity=st.sampled_from(["round", "turn"]),
                      unanswered=st.sampled_from(["stub", "drop"]), pin_first_task=st.booleans())
_CAPS = st.builds(ArrivalCap, default_tokens=st.sampled_from([4_000, 300, 60]))
OPTIONS: dict[str, st.SearchStrategy[dict]] = {  # each strategy's own settings, drawn too: not only the defaults
    "budgeted": st.fixed_dictionaries({"policy": _POLICIES}),
    "sliding": st.fixed_dictionaries({"input_ratio": st.sampled_from([0.9, 0.7])}),
    "budgeted+summary": st.fixed_dictionaries({
        "policy": _POLICIES, "placement": st.sampled_from(PLACEMENTS),
        "regenerate": st.sampled_from(["every_call", "on_change"]), "on_cached_prefix": st.booleans()}),
    "pruned": st.fixed_dictionaries({"cap": _CAPS}),
    "paged": st.fixed_dictionaries({"cap": _CAPS, "paging": st.sampled_from(
        [PagingPolicy(), PagingPolicy(head_tokens=80, tail_tokens=40)])}),
    "pipeline": st.fixed_dictionaries({"per_result_tokens": st.sampled_from([2_000, 200]),
                                       "reduce": st.sampled_from(["new", "all"])}),
}


# ---- the report: what each case covered, and how far the estimators overshoot -------------------

@dataclass
class CaseStats:
    examples: int = 0
    calls: int = 0
    refusals: int = 0  # replays stopped by a BudgetError where nothing could fit
    most_compactions: int = 0  # ctxlab compactions in one replay
    repeated_compactions: int = 0  # replays with two or more
    over_counted: int | None = None  # max(total - budget) as the profile's meter counts (tokens)
    over_exact: int | None = None  # the same under the exact tiktoken count (no calibration)
    over_share: float | None = None  # max((total - budget) / budget), counted

    def note_overshoot(self, counted: int, exact: int, budget: int) -> None:
        self.over_counted = counted if self.over_counted is None else max(self.over_counted, counted)
        self.over_exact = exact if self.over_exact is None else max(self.over_exact, exact)
        share = counted / max(1, budget)
        self.over_share = share if self.over_share is None else max(self.over_share, share)


@dataclass
class Report:
    cases: dict[str, CaseStats] = field(default_factory=dict)
    meters: dict[str, MessageMeter] = field(default_factory=dict)  # exact profile name -> meter (one example's)

    def case(self, name: str) -> CaseStats:
        return self.cases.setdefault(name, CaseStats())

    def exact_meter(self, profile) -> MessageMeter:
        return self.meters.setdefault(profile.name, MessageMeter(profile))

    def table(self) -> str:
        def signed(n):
            return "-" if n is None else f"{n:+,}"
        lines = ["| strategy | replays | calls checked | refused (BudgetError) | replays with 2+ compactions "
                 "(most) | max over budget, counted | the same, % of the budget | max over budget, exact tiktoken |",
                 "|---" * 8 + "|"]
        lines += [f"| {k} | {s.examples:,} | {s.calls:,} | {s.refusals:,} | {s.repeated_compactions:,} "
                  f"({s.most_compactions}) | {signed(s.over_counted)} | "
                  f"{'-' if s.over_share is None else f'{s.over_share:+.1%}'} | {signed(s.over_exact)} |"
                  for k, s in sorted(self.cases.items())]
        return "\n".join(lines)


REPORT = Report()


@pytest.fixture(scope="module")
def property_tmp(tmp_path_factory, request):
    """A folder for the session files; afterwards, the report is printed and written beside it."""
    folder = tmp_path_factory.mktemp("properties")
    yield folder
    if not REPORT.cases and not WIRE:
        return
    table = "\n\n".join(t for t in (REPORT.cases and REPORT.table(), WIRE and wire_table()) if t)
    out = folder / "report.md"  # under this run's pytest temp folder: concurrent runs never share it
    out.write_text(table + "\n", encoding="utf-8")
    capture = request.config.pluginmanager.get_plugin("capturemanager")  # print past pytest's capture
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        print(f"\nproperty report (also in {out}):\n{table}")


# ---- what a strategy promises ------------------------------------------------------------------

def budget_of(strategy, profile) -> int:
    """The budget ``strategy`` promises to stay within (tokens); the window for full and recorded."""
    if not strategy.budgeted:
        return profile.context_window
    policy = getattr(strategy, "policy", None)
    if isinstance(policy, BudgetPolicy):
        return policy.budget_for(profile)
    return profile.budget_tokens(getattr(policy, "input_ratio", None) or getattr(strategy, "input_ratio", 0.9))


def smallest_context(history: Conversation, profile, meter: MessageMeter, strategy) -> int:
    """A lower bound on what ``strategy`` must send at this call (tokens): tools (with read_page where
    it adds it), system prompt, inferred head and request overhead; the newest user message; the newest
    unit — its tool results cut to the strategy's floor (the omission marker + 1 token for pruning, 64
    for compaction), or whole — and the summary room compaction reserves."""
    name = strategy.name
    adds_read_page = name in WITH_READ_PAGE and READ_PAGE_TOOL not in history.tools
    tools = history.tools + ((READ_PAGE_TOOL,) if adds_read_page else ())
    head = history.inferred_head_tokens
    if head is None:
        inferred = infer_static_head(history, meter)
        head = inferred.tokens if inferred else 0
    tools_t = meter.tools(tools) - (profile.tool_system_tokens if head and tools else 0)
    fixed = tools_t + meter.system(history.system) + head + profile.per_request_tokens
    policy = getattr(strategy, "policy", None)
    policy = policy if isinstance(policy, BudgetPolicy) else BudgetPolicy()
    units = group_units([m for m in history.messages if m.origin != "meta"], policy.granularity, policy.unanswered)
    users = [u for u in units if u.kind in ("user", "turn") and u.first.is_real_user]
    must = {units[-1].index: units[-1], **({users[-1].index: users[-1]} if users else {})}
    thinking = profile.thinking != "none"  # the newest unit and user message are in the current turn

    def cost(m, newest: bool) -> int:
        if not (newest and m.role == "tool" and m.origin != "synthetic" and name in SHRINKS):  # stubs stay whole
            return meter.message(m, thinking)
        text = text_tokens(m, meter.counter)
        floor = 64 if name in ("compaction", "pipeline") else \
            meter.counter.count(DEFAULT_MARKER.format(omitted=text)) + 1
        return meter.message(m, thinking) - text + min(text, floor)

    kept = sum(cost(m, i == units[-1].index) for i, u in must.items() for m in u.messages)
    reserve = 0
    if name in ("compaction", "pipeline"):  # its summary room, at least the summary message's opening
        reserve = max(int(strategy.policy.summary_share * strategy.policy.target_ratio * profile.context_window),
                      meter.message(user(SUMMARY_PREFIX, "summary:empty")))
    return fixed + kept + reserve


class Watched:
    """The strategy under test, remembering what it was asked at each call (and what it answered)."""

    def __init__(self, inner) -> None:
        self.inner, self.name, self.calls = inner, inner.name, []
        self.budgeted, self.added_tools = inner.budgeted, inner.added_tools  # what the checks hold it to

    def decide(self, history, call, profile, meter):
        self.calls.append([history, call, profile, meter, None])
        self.calls[-1][4] = decision = self.inner.decide(history, call, profile, meter)
        return decision


def body_bytes(context, provider: str) -> bytes:
    body = to_anthropic_body(context) if provider == "anthropic" else to_openai_body(context)
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


def run(conversation: Conversation, factory, window: int) -> tuple[Watched, object, BudgetError | None]:
    watched = Watched(factory())
    try:
        return watched, replay(conversation, watched, window=window, check=True), None
    except BudgetError as err:
        return watched, None, err


def sent_bytes(watched: Watched) -> list[bytes]:
    out = []
    for _, call, profile, _, decision in watched.calls:
        if decision is not None:
            provider = profile.provider if profile.provider in ("anthropic", "openai") else "openai"
            out += [body_bytes(s.context, provider) for s in decision.side_calls]
            out.append(body_bytes(decision.context, provider))
    return out


# ---- windows ------------------------------------------------------------------------------------

def measure(conversation: Conversation) -> tuple[int, int, int]:
    """Windows (tokens, at 90% input) under which ``budgeted`` just fits every call — without and with the
    read_page tool — and one that holds the whole history at the last call."""
    need, need_paged, whole, meters = 1, 1, 1, {}
    for position, call in model_calls(conversation):
        profile = profile_for(call.model, conversation.provider)
        meter = meters.setdefault(profile.name, MessageMeter(profile))  # counts each message once
        head = infer_static_head(conversation, meter)
        history = Conversation("w", conversation.items[:position], conversation.system, conversation.tools,
                               inferred_head_tokens=head.tokens if head else None)
        if not history.messages:
            continue
        least = build_context(history, BudgetPolicy(budget_tokens=10**12, max_units=1), profile=profile, meter=meter)
        need = max(need, least.total_tokens)
        # what read_page adds; an inferred head already holds the provider's tool-use prompt (as build_context)
        paging = meter.tools((*conversation.tools, READ_PAGE_TOOL)) - meter.tools(conversation.tools) - \
            (profile.tool_system_tokens if least.head_tokens else 0)
        need_paged = max(need_paged, least.total_tokens + paging)
        whole = build_context(history, BudgetPolicy(budget_tokens=10**12), profile=profile, meter=meter).total_tokens
    return math.ceil(need / 0.9), math.ceil(need_paged / 0.9), math.ceil(whole / 0.9)


def windows_for(conversation: Conversation) -> st.SearchStrategy[int]:
    """:func:`windows` around the session's own sizes; a few fixed ones when its history cannot be grouped
    (a result recorded after the user's interrupting message): the replays then say what they make of it."""
    try:
        return windows(*measure(conversation))
    except OrphanError:
        return st.sampled_from([64, 2_000, 200_000])


def windows(need: int, need_paged: int, whole: int) -> st.SearchStrategy[int]:
    return st.one_of(
        st.integers(-40, 40).map(lambda d: max(64, need + d)),  # at the edge, on both sides
        st.integers(-40, 40).map(lambda d: max(64, need_paged + d)),  # the same with read_page among the tools
        st.sampled_from([1.2, 2, 4]).map(lambda f: int(need_paged * f)),  # room for a few units
        # a fraction of the whole history: compaction triggers again and again
        st.sampled_from([0.25, 0.4, 0.6]).map(lambda f: max(int(whole * f), int(need_paged * 1.3))),
        st.just(200_000),  # everything fits
        st.integers(64, 2_000),  # tiny: the fixed part alone may not fit
    )


# ---- the property ---------------------------------------------------------------------------------

def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check_example(group: list[tuple[str, str, dict]], data: st.DataObject, path, **size) -> None:
    """One generated session and window, replayed under every strategy of ``group``."""
    REPORT.meters.clear()  # a meter holds every message it counted: keep one example's only
    conversation = data.draw(sessions(**size), label="session")
    window = data.draw(windows_for(conversation), label="window")
    snapshot = [item_to_dict(i) for i in conversation.items]
    if path.exists():
        path.unlink()
    with mock.patch.object(os, "fsync", lambda fd: None):  # durability is not under test, the bytes are
        write_session(conversation, path)
    before = sha256(path)
    from_file = Session.open(path).conversation()
    chosen = {case: {**fixed, **data.draw(OPTIONS.get(name, st.just({})), label=f"{case} options")}
              for case, name, fixed in group}  # all drawn first: an example hypothesis abandons runs none
    for case, name, _ in group:
        try:
            check_strategy(REPORT.case(case), conversation, from_file, lambda: get_strategy(name, **chosen[case]),
                           window)
        except AssertionError as err:
            where = f"{case} {chosen[case]} at window {window:,}"
            raise AssertionError(f"{where}: {err}\n{outline(conversation)}") from None
    assert [item_to_dict(i) for i in conversation.items] == snapshot, "a replay changed its input"
    assert sha256(path) == before, "a replay changed the session file it was read from"


def check_strategy(stats: CaseStats, conversation: Conversation, from_file: Conversation, factory, window: int) -> None:
    watched, result, err = run(conversation, factory, window)
    again, result_again, err_again = run(from_file, factory, window)
    assert sent_bytes(again) == sent_bytes(watched), "two fresh strategies sent different bytes"
    assert str(err_again) == str(err)
    if result is not None:
        assert result_again.new_entries == result.new_entries
    for (history, call, profile, meter, decision), record in zip(watched.calls, result.records if result else []):
        check_call(stats, watched.inner, history, call, profile, meter, decision, record, window)
    if err is not None:
        check_refusal(stats, watched, err)
    stats.examples += 1
    made = sum(1 for e in (result.new_entries if result else ()) if e.kind == "compaction")
    stats.most_compactions = max(stats.most_compactions, made)
    stats.repeated_compactions += made >= 2


def check_call(stats: CaseStats, strategy, history, call, profile, meter, decision, record, window: int) -> None:
    ctx = decision.context
    estimating = getattr(getattr(strategy, "policy", None), "metering", "count") == "usage"
    violations = [v for v in record.violations if not (estimating and v.rule == "budget")]
    assert not violations, f"call {call.index}: {'; '.join(map(str, violations))}"
    budget = budget_of(strategy, profile)
    if strategy.budgeted:
        assert ctx.budget_tokens == budget, "the context states another budget than the strategy's"
    assert decision.overflow == (ctx.total_tokens > window), "the overflow flag must say whether it exceeds the window"
    stats.calls += 1
    stats.note_overshoot(ctx.total_tokens - ctx.budget_tokens, exact_total(ctx, profile) - ctx.budget_tokens,
                         ctx.budget_tokens)


def exact_total(ctx, profile) -> int:
    """The context's size under the exact tiktoken counter (no calibration): the same rules, recounted."""
    if profile.calibration == 1.0:
        return ctx.total_tokens
    exact = replace(profile, calibration=1.0)
    view = Conversation("exact", ctx.messages, ctx.system, ctx.tools, inferred_head_tokens=ctx.head_tokens)
    return build_context(view, BudgetPolicy(budget_tokens=10**12), profile=exact,
                         meter=REPORT.exact_meter(exact)).total_tokens


def check_refusal(stats: CaseStats, watched: Watched, err: BudgetError) -> None:
    strategy = watched.inner
    history, call, profile, meter, _ = watched.calls[-1]
    assert strategy.budgeted, f"{strategy.name} promises no budget, yet raised: {err}"
    text = str(err)
    assert err.needed > err.budget, f"a BudgetError must need more than the budget: {text}"
    assert f"{err.budget:,}" in text and f"{err.needed:,}" in text, f"the message must name its numbers: {text}"
    smallest, budget = smallest_context(history, profile, meter, strategy), budget_of(strategy, profile)
    assert smallest > budget, (f"{strategy.name} refused call {call.index} although a context of {smallest:,} "
                               f"tokens fits its budget of {budget:,}: {text}")
    stats.refusals += 1


# two halves of about equal cost, so two workers (pytest -n 2 --dist load) share a run
_FIRST = ("full", "sliding", "budgeted", "recorded", "budgeted+summary", "compaction[usage]", "pipeline[usage]")
GROUPS = {"first-half": [c for c in CASES if c[0] in _FIRST], "second-half": [c for c in CASES if c[0] not in _FIRST]}


@pytest.mark.parametrize("group", GROUPS)
@FAST
@given(data=st.data())
def test_every_call_of_every_replay_keeps_the_invariants(group, data, property_tmp):
    check_example(GROUPS[group], data, property_tmp / f"{group}.jsonl")


@pytest.mark.thorough
@pytest.mark.parametrize("group", GROUPS)
@THOROUGH
@given(data=st.data())
def test_thorough_every_call_of_every_replay_keeps_the_invariants(group, data, property_tmp):
    check_example(GROUPS[group], data, property_tmp / f"thorough-{group}.jsonl", **SMALL)


# ---- the wire: every body a replay sends, for both providers, passes the independent oracle ----------

CLAUDE_MODEL, OPENAI_MODEL = "claude-sonnet-4-5", "gpt-5"  # the models the bodies are rendered for
WIRE_KINDS = ("anthropic", "openai-chat", "openai-responses")


def wire_renderers() -> list[tuple[str, object, str, object]]:
    """``(kind, renderer, model, oracle)`` for the three request bodies."""
    return [("anthropic", to_anthropic_body, CLAUDE_MODEL, check_anthropic),
            ("openai-chat", to_openai_body, OPENAI_MODEL, check_openai_chat),
            ("openai-responses", to_responses_body, OPENAI_MODEL, check_openai_responses)]


@dataclass
class WireStats:
    sessions: int = 0  # replays whose every body was checked
    calls: int = 0  # contexts checked (the model calls and their side calls)
    bodies: dict[str, int] = field(default_factory=lambda: dict.fromkeys(WIRE_KINDS, 0))


WIRE: dict[str, WireStats] = {}  # case -> what the wire properties checked


def wire_table() -> str:
    """What the wire properties checked: per strategy, the sessions replayed, the contexts rendered and the bodies
    the oracle passed (each context as all three)."""
    head = "| strategy | sessions | contexts | " + " | ".join(f"{k} bodies" for k in WIRE_KINDS) + " |"
    lines = ["wire oracle:", "", head, "|---" * (3 + len(WIRE_KINDS)) + "|"]
    lines += [f"| {k} | {s.sessions:,} | {s.calls:,} | " + " | ".join(f"{s.bodies[b]:,}" for b in WIRE_KINDS) + " |"
              for k, s in sorted(WIRE.items())]
    total = sum(sum(s.bodies.values()) for s in WIRE.values())
    lines.append(f"| all | {max((s.sessions for s in WIRE.values()), default=0):,} each | "
                 f"{sum(s.calls for s in WIRE.values()):,} | {total:,} oracle checks in all |" + " |" * 2)
    return "\n".join(lines)


def _walk(body, path: str):
    """The element of ``body`` at an oracle's ``path`` (``messages[3].content[0]``), and the top-level list item
    on the way (the message), as far as the path leads."""
    node, message = body, None
    for key, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path):
        try:
            node = node[int(index)] if index else node[key]
        except (KeyError, IndexError, TypeError, ValueError):
            break
        if index and message is None:
            message = node
    return node, message


def _short(value, most: int = 400) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= most else f"{text[:most]}... ({len(text):,} chars)"


def wire_failure(where: str, kind: str, model: str, body: dict, found: list, context) -> str:
    lines = [f"{where}: the {kind} body (model {model}) breaks {len(found)} wire rule(s):"]
    for v in found[:6]:
        node, message = _walk(body, getattr(v, "path", "") or "")
        lines.append(f"  {v}")
        if message is not None:
            lines.append(f"    offending message: {_short(message)}")
        if node is not message and node is not body:
            lines.append(f"    at {v.path}: {_short(node, 200)}")
    lines += ["context sent:", outline(Conversation("context", context.messages, context.system, context.tools,
                                                    model=context.profile.name, provider=context.profile.provider))]
    return "\n".join(lines)


def check_bodies(stats: WireStats, where: str, context, renderers, sized: bool) -> None:
    """Render ``context`` as all three bodies and assert the oracle finds nothing in any; ``sized``: the size rules
    too (input + the reply's cap within the context's window), for a strategy that promises a budget."""
    limits = {"input_tokens": context.total_tokens, "context_window": context.window_tokens} if sized else {}
    for kind, to_body, model, oracle in renderers:
        body = to_body(context, model=model)
        found = oracle(body, **limits)
        assert not found, wire_failure(where, kind, model, body, found, context)
        stats.bodies[kind] += 1
    stats.calls += 1


FORCED = [frozenset(), *(frozenset({shape}) for shape in SHAPES)]  # none, or one of the odd shapes forced


def wire_windows(conversation: Conversation) -> st.SearchStrategy[int]:
    """Windows for the wire property, cheaper than :func:`windows` (one build, not two per call): fractions of
    the whole history's size at its last call — strategies cut at every call under the small ones — plus
    tiny windows and one that holds everything."""
    calls = model_calls(conversation)
    try:
        position, call = calls[-1]
        history = replace(conversation, items=conversation.items[:position])
        whole = build_context(history, BudgetPolicy(budget_tokens=10**12),
                              profile=profile_for(call.model, call.provider)).total_tokens
    except (IndexError, CtxlabError):  # no call, or nothing to send before it
        whole = 2_000
    return st.one_of(st.sampled_from([0.1, 0.25, 0.5, 0.8, 1.5]).map(lambda f: max(64, int(whole * f))),
                     st.integers(64, 1_500), st.just(200_000))


def check_wire_example(group: list[tuple[str, str, dict]], data: st.DataObject, **size) -> None:
    """One generated session and window, replayed once under every strategy of ``group``: each context
    it sends (side calls too) rendered for Anthropic with a Claude model and for chat completions and the
    Responses API with an OpenAI model, whatever the session's model."""
    renderers = wire_renderers()
    forced = data.draw(st.sampled_from(FORCED), label="forced shape")  # each of the odd shapes, in turn
    conversation = data.draw(sessions(force=forced, **{**SMALL, **size}), label="session")
    held = ", ".join(sorted(shapes_of(conversation))) or "none"
    window = data.draw(wire_windows(conversation), label="window")
    chosen = {case: {**fixed, **data.draw(OPTIONS.get(name, st.just({})), label=f"{case} options")}
              for case, name, fixed in group}
    for case, name, _ in group:
        stats = WIRE.setdefault(case, WireStats())
        watched = Watched(get_strategy(name, **chosen[case]))
        try:
            replay(conversation, watched, window=window)
        except BudgetError:
            pass  # a refusal: the calls before it were sent, and are checked
        except OrphanError as err:
            raise AssertionError(f"{case} {chosen[case]} at window {window:,} refused the session: {err}\n"
                                 f"{outline(conversation)}") from None
        for _, call, _, _, decision in watched.calls:
            if decision is None:
                continue
            where = (f"{case} {chosen[case]} at window {window:,}, call {call.index} ({call.message.where()}) of a "
                     f"session with the shapes {held}")
            for side in decision.side_calls:
                check_bodies(stats, f"{where}, its {side.kind} call", side.context, renderers, watched.budgeted)
            check_bodies(stats, where, decision.context, renderers, watched.budgeted)
        stats.sessions += 1


WIRE_FAST = settings(FAST, max_examples=80)  # small sessions, one replay per strategy: about 4 s on one core


@pytest.mark.parametrize("group", GROUPS)
@WIRE_FAST
@given(data=st.data())
def test_every_body_of_every_replay_passes_the_wire_oracle(group, data, property_tmp):
    check_wire_example(GROUPS[group], data)


THOROUGH_SESSIONS = 10_000


@pytest.mark.thorough
@pytest.mark.parametrize("group", GROUPS)
def test_thorough_every_body_of_every_replay_passes_the_wire_oracle(group, property_tmp):
    """10,000 sessions (small ones), each replayed under every strategy of the group, each context rendered as
    the three bodies: the counts are asserted here and printed in the run's report."""
    before = {case: WIRE.get(case, WireStats()).sessions for case, _, _ in GROUPS[group]}

    @THOROUGH
    @given(data=st.data())
    def run(data):
        check_wire_example(GROUPS[group], data, **SMALL)

    run()
    for case, _, _ in GROUPS[group]:
        stats = WIRE[case]
        assert stats.sessions - before[case] >= THOROUGH_SESSIONS, \
            f"{case}: {stats.sessions - before[case]:,} sessions checked, not {THOROUGH_SESSIONS:,}"


# ---- regressions: the bugs these properties found, each as a plain test ---------------------------

def _logs(lines: int) -> str:
    return "\n".join(f"{n} {LOG_LINES[n % len(LOG_LINES)]}" for n in range(lines))


def _conversation(*items, model="gpt-4o", system=("Fix the failing test in tests/test_api.py.",),
                  tools=(TOOLS["bash"],)):
    return Conversation("r", items, system=system, tools=tools, model=model,
                        provider="anthropic" if model.startswith("claude") else "openai")


def test_preamble_calls_pair_like_a_round():
    """group_units put a call made before the first user message in a preamble that never paired it: an open
    call got no stub (build_context then failed its own orphan assertion), a result with no call was not
    reported, and a system reminder inside such a round split the call from its result (OrphanError)."""
    reminder = user("<system-reminder>x</system-reminder>", "R", origin="system")
    call = assistant("", "A", calls=(("c1", "bash", {}),))
    units = group_units([call, user("hi", "U")])
    assert [[m.id for m in u.messages] for u in units] == [["A", "stub:c1"], ["U"]]
    assert [[m.id for m in u.messages] for u in group_units([call, reminder, tool_result("c1", "x", "T"),
                                                             user("hi", "U")])] == [["A", "R", "T"], ["U"]]
    # a result with no call is reported; since issue 12 it is set aside (sent in no unit), not an OrphanError
    stray = [tool_result("c9", "x", "T"), user("hi", "U")]
    assert [[m.id for m in u.messages] for u in group_units(stray)] == [["U"]]
    assert [(o.kind, o.message_id) for o in find_orphans(stray)] == [("result_without_call", "T")]


def test_a_summary_call_from_a_history_that_starts_with_an_assistant_message():
    """Compaction's fresh summary request (the dropped messages + the instruction) started with an assistant
    message whose round held a system reminder: grouping it raised OrphanError (found by pipeline)."""
    conv = _conversation(
        user("Fix the failing test in tests/test_api.py.", "u2"),
        assistant("", "a6", calls=(("c4", "bash", {"cmd": "ls"}), ("c5", "bash", {"cmd": "ls"}))),
        user("<system-reminder>Files changed: src/app.py</system-reminder>", "r7", origin="system"),
        tool_result("c4", _logs(25), "t8", name="bash", is_error=True), tool_result("c5", "", "t9", name="bash"),
        assistant("", "a11", calls=(("c10", "bash", {"cmd": "ls"}),)),
        user("<system-reminder>Files changed: src/app.py</system-reminder>", "r12", origin="system"),
        assistant("Fix the failing test in tests/test_api.py.", "a13"))
    stats = CaseStats()
    check_strategy(stats, conv, conv, lambda: get_strategy("pipeline"), 470)
    assert stats.calls == 3 and stats.most_compactions == 1


class _Verbose:
    """A summarizer that ignores any cap: 400 lines, whatever it is given."""

    def summarize(self, messages, previous=None):
        text = "\n".join(f"- step {k}: 修复 src/app.py, ran pytest 🧪" for k in range(400))
        return Summary(text, tuple(m.id for m in messages))


@pytest.mark.parametrize("summarizer", [None, _Verbose()], ids=["rule-based", "uncapped"])
def test_compaction_stays_within_budget_when_the_summary_outgrows_its_room(summarizer):
    """The summary was not held to the room the budget left it (5% of the window, or what the kept units
    leave): at small windows the context after a compaction was over the budget."""
    items = [user("Port the CLI to the new config format. Never touch prod.yaml.", "u0")]
    for r in range(12):
        items += [assistant(f"step {r}: reading src/m{r}.py", f"a{r}", calls=((f"c{r}", "bash", {"cmd": "cat"}),)),
                  tool_result(f"c{r}", _logs(30), f"t{r}", name="bash")]
    conv = _conversation(*items, assistant("done", "final"))
    for window in (1_500, 2_500, 4_000):
        result = replay(conv, CompactionStrategy(summarizer=summarizer), window=window, check=True)
        assert any(e.kind == "compaction" for e in result.new_entries)
        assert [str(v) for rec in result.records for v in rec.violations] == []


def test_compaction_prunes_the_newest_results_by_the_whole_excess():
    """A proportional cut, once, also charged results too small to cut: compaction refused calls whose
    floor was a few tokens over although the large result could give up far more."""
    profile = profile_for("gpt-4o")
    meter = MessageMeter(profile)
    units = group_units([user("go", "u"), assistant("", "a", calls=(("c1", "bash", {}), ("c2", "bash", {}))),
                         tool_result("c1", _logs(120), "t1", name="bash"), tool_result("c2", "ok", "t2", name="bash")])
    tokens = [sum(meter.message(m) for m in u.messages) for u in units]
    big = meter.message(units[-1].messages[1]) - meter.overhead(units[-1].messages[1])
    for excess in range(20, big - 80, 37):
        _, new_tokens, saved, _ = get_strategy("compaction")._shrink_newest(units, tokens, excess, meter)
        assert saved >= excess and new_tokens[-1] == tokens[-1] - saved


def test_compaction_summarises_an_overflowing_summary_again():
    """Over the budget with nothing new to summarise (only the newest unit after a compaction), the context
    was sent as it was, its old summary pushing it over the budget."""
    old = "\n".join(f"## Decisions\n- decision {k}: keep the parser, ruled out the lexer rewrite" for k in range(40))
    history = _conversation(
        user("task", "u0"), Entry("compaction", "compaction:main:2", {"summary": old, "first_kept_id": None,
                                                                      "origin": "ctxlab"}),
        assistant("", "a3", calls=(("c3", "bash", {"cmd": "pytest"}),)),
        tool_result("c3", _logs(30), "t3", name="bash"))
    profile = with_window(profile_for("gpt-4o"), 1_000)
    call = model_calls(replace(history, items=(*history.items, assistant("next", "a4"))))[-1][1]
    meter = MessageMeter(profile)
    assert whole_context(compacted_view(history)[0], profile, meter).total_tokens > profile.budget_tokens()
    decision = get_strategy("compaction").decide(history, call, profile, meter)
    assert decision.context.total_tokens <= profile.budget_tokens()
    assert any("summarised again" in n for n in decision.notes)
    assert check_context(decision.context, history, get_strategy("compaction")) == []


def test_budgeted_summary_without_room_for_its_opening_line_sends_no_summary():
    """When the newest units took the whole budget, the summary's opening line alone pushed the context over it."""
    history = _conversation(user("use sqlite, never redis " * 30, "u0"), assistant("noted " * 40, "a1"),
                            user("now write the migration, 必须先跑测试 " * 20, "u2"), model="claude-sonnet-4-5")
    profile = profile_for("claude-sonnet-4-5")
    meter = MessageMeter(profile)
    least = build_context(history, BudgetPolicy(budget_tokens=10**6, max_units=1), profile=profile, meter=meter)
    call = model_calls(replace(history, items=(*history.items, assistant("ok", "a3"))))[-1][1]
    for spare in range(0, 12, 2):
        strategy = get_strategy("budgeted+summary", policy=BudgetPolicy(budget_tokens=least.total_tokens + spare))
        decision = strategy.decide(history, call, profile, meter)
        assert decision.context.total_tokens <= least.total_tokens + spare
        assert check_context(decision.context, history, strategy) == []


def test_a_budget_error_names_what_it_needs_in_all():
    conv = _conversation(user("hi", "U"), assistant("", "A", calls=(("c1", "bash", {}),)),
                         tool_result("c1", _logs(300), "T"))
    with pytest.raises(BudgetError) as err:
        build_context(conv, BudgetPolicy(budget_tokens=500), profile=profile_for("gpt-4o"))
    assert f"{err.value.needed:,} tokens" in str(err.value) and "budget of 500" in str(err.value)


def test_paged_prunes_the_newest_result_when_the_head_was_inferred():
    """With no recorded system prompt or tools, the head is inferred from usage and already holds the tool-use
    prompt; the rescue counted that prompt again for the read_page tool, took the fixed part for over the budget,
    and refused calls that pruning the newest result would have fitted."""
    conv = _conversation(
        user("Fix the failing test in tests/test_api.py.", "u1"),
        assistant("Looking.", "a3", usage=Usage(uncached_input_tokens=900, output_tokens=40)),
        assistant("", "a6", calls=(("c4", "bash", {"cmd": "pytest -q"}),)),
        tool_result("c4", _logs(8), "t8", name="bash", is_error=True),
        assistant("The health check returns 503.", "a10"), model="claude-sonnet-4-5", system=(), tools=())
    stats = CaseStats()
    _, need_paged, _ = measure(conv)  # below it the newest result must be pruned to fit
    below = range(need_paged - 150, need_paged, 10)
    for window in below:
        check_strategy(stats, conv, conv, lambda: get_strategy("paged"), window)
    assert stats.refusals < len(below), "pruning the result was meant to rescue some of these windows"
