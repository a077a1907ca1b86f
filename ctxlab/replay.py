"""Replay: run a recorded session again, call by call, under a strategy, and keep the ledger.

For every model call of the transcript (one provider response):

1. take the history the agent had just before the call (same thread, plus entries the strategy added earlier);
2. ask the strategy what to send (``strategy.decide``);
3. render the context as blocks and pass it through the provider's cache simulator;
4. write one ledger row: cache read, cache write, uncached input, output, cost.

Each thread (a Claude Code sidechain) and each conversation is replayed on its own, but all threads of a file share
one cache store, in order of request time. Request time is the timestamp of the last item before the call
(transcripts stamp completions); with no timestamps there is no expiry, and the result says so. The replay never
writes a file: new entries live in memory. Every call is worked out from scratch with the book's own meter and
renderer; a :class:`Speedup` (``ctxlab.fast.FAST``, bonus reading) gives the same answers faster. :data:`STRATEGIES`
names every strategy of the book, imported from the module that teaches it. Taught in chapter 04.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Callable, Iterable, Protocol

from ctxlab.base import validate
from ctxlab.base.errors import CtxlabError
from ctxlab.cache_anthropic import AnthropicCache
from ctxlab.cache_openai_breakpoints import openai_simulator
from ctxlab.cache import CacheOutcome, PrefixCache
from ctxlab.checks import Bodies, Violation, check_context
from ctxlab.context import Context
from ctxlab.interactions import find_orphans, pairing_notes
from ctxlab.ledger import Ledger, from_outcome
from ctxlab.messages import Conversation, Entry, Item, Message, Transcript, parse_time
from ctxlab.tables.profiles import ModelProfile, profile_for, with_window
from ctxlab.render import RenderedRequest, render_blocks
from ctxlab.compaction import CompactionStrategy
from ctxlab.paging import PagedStrategy
from ctxlab.pipeline import PipelineStrategy
from ctxlab.pruning_strategy import PrunedStrategy
from ctxlab.strategies import (BudgetedStrategy, Call, Decision, FullStrategy, RecordedStrategy, SlidingStrategy,
                               Strategy, model_calls, overflow_note)
from ctxlab.summary_strategy import BudgetedSummaryStrategy
from ctxlab.tokens import MessageMeter, infer_static_head


# Every strategy by name, in chapter order (04 to 07); "Go to definition" on a class reads the strategy.
STRATEGIES: dict[str, type] = {
    "full": FullStrategy,
    "sliding": SlidingStrategy,
    "budgeted": BudgetedStrategy,
    "recorded": RecordedStrategy,
    "pruned": PrunedStrategy,
    "paged": PagedStrategy,
    "budgeted+summary": BudgetedSummaryStrategy,
    "compaction": CompactionStrategy,
    "pipeline": PipelineStrategy,
}
STRATEGY_NAMES = tuple(STRATEGIES)
PROVIDERS = ("anthropic", "openai")  # the cache rules a replay simulates (one simulator each)


def get_strategy(name: str, **options: Any) -> Strategy:
    """A fresh strategy by name with options: ``get_strategy("sliding", input_ratio=0.8)``. Chapter 04.

    Names are :data:`STRATEGY_NAMES`, in chapter order. Raises ValueError naming the choices for another name, and
    what the strategy's class raises for a bad option.
    """
    if name not in STRATEGIES:
        raise ValueError(f"Unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}.")
    return STRATEGIES[name](**options)


@dataclass(frozen=True)
class CallRecord:
    """What the replay did at one call: the decision's notes, sizes, the cache outcome and the row. Chapter 04."""

    call: Call
    context_tokens: int
    messages: int
    notes: tuple[str, ...]
    overflow: bool
    outcome: CacheOutcome
    request: RenderedRequest | None  # None when the replay was asked not to keep it (keep_requests=False)
    violations: tuple[Violation, ...] = ()  # broken invariants (checks.py), when the replay was asked to check


@dataclass
class ReplayResult:
    """The ledger of a replay plus the per-call records and what the replay assumed. Chapter 04."""

    strategy: str
    ledger: Ledger | None  # None only while the replay runs
    records: list[CallRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    new_entries: list[Entry] = field(default_factory=list)

    def __repr__(self) -> str:  # the records hold every request: never print them all in a notebook
        return (f"ReplayResult(strategy={self.strategy!r}, calls={len(self.records)}, "
                f"new_entries={len(self.new_entries)}, totals={self.ledger.totals() if self.ledger else None})")


class Renderer(Protocol):
    """What a replay renders each request with: :func:`~ctxlab.render.render_blocks` itself, or anything called
    the same way that returns the same blocks (``ctxlab/fast/``'s render cache). Chapter 04."""

    def __call__(self, context: Context, provider: str | None = None, model: str | None = None,
                 meter: MessageMeter | None = None, thinking: str | None = None,
                 breakpoints: set[int] | None = None, *, tool_choice: str = "auto") -> RenderedRequest: ...


@dataclass(frozen=True)
class Speedup:
    """The slot a replay (and an agent loop) takes a faster path through: the same answers, faster.

    ``meter(profile)`` makes each meter (one per thread and profile; a :class:`~ctxlab.context.ContextMemory` lets
    build_context answer from memory), ``renderer()`` the replay's renderer. None, the default, is the book's own:
    ``MessageMeter`` and ``render_blocks``, from scratch; ``ctxlab.fast.FAST`` fills it (bonus). Chapter 04."""

    meter: Callable[[ModelProfile], MessageMeter]
    renderer: Callable[[], Renderer]
    bodies: Callable[[], Bodies] | None = None  # what renders the bodies a checked replay shows the oracle


def _checked(conversation: Any, strategy: Any, provider: Any, speedup: Any) -> Strategy:
    """The strategy to replay with, once the arguments are what :func:`replay` takes; else CtxlabError in one
    line saying what to pass: ``replay(load(path))`` → "pass one of its conversations: load(path).conversation()"."""
    if isinstance(conversation, Transcript):
        raise CtxlabError(f"replay takes one Conversation, not the Transcript load() returns ({conversation.file}, "
                          f"{len(conversation.conversations)} conversations): pass transcript.conversation() "
                          "(the only one) or transcript.conversation(N)")
    if isinstance(conversation, (str, PurePath)):
        raise CtxlabError(f"replay takes a Conversation, not a path ({conversation!s:.60}): pass "
                          "ctxlab.load(path).conversation()")
    if isinstance(conversation, (list, tuple)):
        raise CtxlabError(f"replay takes a Conversation, not a {type(conversation).__name__} of messages: pass "
                          "Conversation(id, tuple(messages)) (ctxlab.Conversation) or ctxlab.load(path).conversation()")
    if not isinstance(conversation, Conversation):
        raise CtxlabError(f"replay takes a Conversation (ctxlab.load(path).conversation()); "
                          f"got {type(conversation).__name__}")
    if isinstance(strategy, type):
        raise CtxlabError(f"strategy must be a strategy, not its class: pass {strategy.__name__}() (or its name)")
    if not isinstance(strategy, str) and not callable(getattr(strategy, "decide", None)):
        raise CtxlabError(f"strategy must be a strategy name ({', '.join(STRATEGIES)}) or a Strategy such as "
                          f"get_strategy('budgeted') (got {strategy!r:.60})")
    if provider is not None and provider not in PROVIDERS:
        raise CtxlabError(f"unknown provider {provider!r:.60}: replay simulates the cache rules of "
                          f"{' or '.join(PROVIDERS)} (None: each call's own)")
    if speedup is not None and not isinstance(speedup, Speedup):
        raise CtxlabError(f"speedup must be a Speedup such as ctxlab.fast.FAST (from ctxlab.fast import FAST; "
                          f"speedup=FAST) or None (got {speedup!r:.60})")
    return get_strategy(strategy) if isinstance(strategy, str) else strategy


def replay(conversation: Conversation, strategy: Strategy | str = "budgeted", *, provider: str | None = None,
           model: str | None = None, window: int | None = None, warm: bool = False,
           cache_rules: dict[str, Any] | None = None, progress: bool = False, check: bool = False,
           speedup: Speedup | None = None, keep_requests: bool = True) -> ReplayResult:
    """Replay ``conversation`` under ``strategy``; return its ledger (one row per model call).

    ``provider`` / ``model`` override what each call recorded; ``window`` overrides the profile's context window (a
    positive whole number of tokens; None: each model's own). ``warm`` starts with the static head already cached,
    as when an earlier session wrote it. A progress bar with ``progress=True`` (tqdm; off in notebooks). ``check``
    validates every context against :func:`ctxlab.checks.check_context`. ``speedup`` (e.g. ``ctxlab.fast.FAST``)
    gives the same result faster. ``keep_requests=False`` leaves ``CallRecord.request`` None (the ledger rows carry
    what they need), so a long transcript's rendered requests do not all stay in memory. Raises what the strategy
    raises (BudgetError) naming the call, and CtxlabError (a ValueError) in one line naming the argument for a bad
    ``window``, a ``provider`` other than ``"anthropic"`` / ``"openai"``, a strategy or ``speedup`` of another type,
    or a ``conversation`` that is not one (a Transcript, a path, a list); a bad TTL or minimum in ``cache_rules`` at
    the first call. Calls go with their ``Call.tool_choice``. A call whose rendered prompt (its row's) is over the
    window or ``max_input_tokens`` (GPT-5: 272,000 of 400,000, :func:`~ctxlab.strategies.overflow_note`) overflows;
    so does a side call (its own row,
    ``LedgerRow.kind`` "summary", ...) whose prompt plus its reply's ``max_tokens`` is over them, and, with ``check``,
    it is a ``side_call_window`` violation. Chapter 04; the strategies of chapters 05–07 replay the same way.
    """
    window = validate.tokens("window", window)
    strategy = _checked(conversation, strategy, provider, speedup)
    calls = model_calls(conversation)
    result = ReplayResult(strategy.name, None)
    if all(c.at_s is None for _, c in calls):
        result.notes.append("the transcript has no timestamps: no cache expiry was simulated")
    for thread in conversation.threads():  # results no request can carry: said once, not at every call
        sent = [m for m in conversation.messages if m.thread == thread and m.origin != "meta"]
        result.notes += [n for n in pairing_notes(find_orphans(sent), "stub") if n.endswith("set aside, not sent")]

    by_thread: dict[str, list[int]] = {}  # thread -> positions of its items
    for k, item in enumerate(conversation.items):
        by_thread.setdefault(item.thread, []).append(k)
    recorded = {t: tuple(conversation.items[k] for k in ks) for t, ks in by_thread.items()}  # sliced at every call
    added: dict[str, list[tuple[int, Entry]]] = {}  # thread -> (position, entry) the strategy created
    meters: dict[tuple[str, str], MessageMeter] = {}
    heads: dict[tuple[str, str], int | None] = {}
    simulators: dict[tuple[str, type], PrefixCache] = {}  # by provider and simulator class
    profiles: dict[tuple[str, str], ModelProfile] = {}
    new_meter = speedup.meter if speedup else MessageMeter  # plain: the book's meter and renderer
    render = speedup.renderer() if speedup else render_blocks
    bodies = speedup.bodies() if speedup and speedup.bodies else None  # None: checks.request_bodies

    order = sorted(calls, key=lambda kc: (kc[1].at_s if kc[1].at_s is not None else float("-inf"), kc[0])) \
        if any(c.at_s is not None for _, c in calls) else calls
    rows = []
    iterator: Iterable = order
    if progress:
        from tqdm import tqdm
        iterator = tqdm(order, desc=f"replay {strategy.name}", unit="call")
    for position, call in iterator:
        call_model = model or call.model
        call_provider = provider or (call.provider if call.provider in PROVIDERS else profile_for(call_model).provider)
        pk = (call_model, call_provider)
        if pk not in profiles:  # looked up once per model and provider, not at every call
            profiles[pk] = profile_for(*pk) if window is None else with_window(profile_for(*pk), window)
        profile = profiles[pk]
        key = (call.thread, profile.name)  # one meter and one inferred head per thread and profile
        meter = meters[key] if key in meters else meters.setdefault(key, new_meter(profile))
        items = _with_added(recorded[call.thread], bisect_left(by_thread[call.thread], position),
                            added.get(call.thread, []))
        if not any(isinstance(i, Message) and i.origin != "meta" for i in items):
            result.notes.append(f"call {call.index} of thread {call.thread!r} ({call.message.where()}) has nothing "
                                "before it to send (the file starts mid-conversation): not replayed")
            continue
        if key not in heads:
            heads[key] = _inferred_head(conversation, call.thread, meter)
        history = Conversation(conversation.id, items, conversation.system, conversation.tools,
                               model=call_model, provider=call_provider, inferred_head_tokens=heads[key])
        decision: Decision = strategy.decide(history, call, profile, meter)
        for j, entry in enumerate(decision.new_entries):  # appended after this call's history, in order
            added.setdefault(call.thread, []).append((len(items) + j, entry))
            result.new_entries.append(entry)
        request = render(decision.context, call_provider, call_model, meter, call.thinking,
                         tool_choice=call.tool_choice)
        simulator = AnthropicCache if call_provider == "anthropic" else openai_simulator(call_model, cache_rules)
        sim = simulators.get((call_provider, simulator))  # OpenAI: breakpoints from GPT-5.6, else longest prefix
        if sim is None:
            sim = simulators[(call_provider, simulator)] = simulator(**(cache_rules or {}))
            if warm:
                sim.warm_head(request, call.at_s)
        side_violations: tuple[Violation, ...] = ()
        for side in decision.side_calls:  # e.g. a summary call: a model call with its own row, in the same window
            side_request = render(side.context, call_provider, call_model, meter, call.thinking,
                                  tool_choice=call.tool_choice)
            side_outcome = sim.request(side_request, call.at_s, response_started_s=call.at_s)
            over = overflow_note(side_outcome.total_input_tokens, profile, side.reply_tokens)  # window or input limit
            note = f"{side.kind} call" + (f": {side.note}" if side.note else "") + (f"; {over}" if over else "")
            rows.append(from_outcome(side_outcome, thread=call.thread, call=call.index, message_id=None,
                                     model=call_model, provider=call_provider, at=call.message.timestamp,
                                     output_tokens=side.output_tokens, stop_reason=None, kind=side.kind,
                                     note=note, overflow=bool(over)))
            if check and over:  # what the provider would refuse: a broken rule, like the main call's
                cap = "its max_tokens" if side.max_tokens is not None else "its output, no max_tokens declared"
                limit = over.split(" > ", 1)[1].replace("window ", "window of ", 1).replace("limit ", "limit of ", 1)
                side_violations += (Violation("side_call_window", f"the {side.kind} call before call {call.index} "
                                              f"sends {rows[-1].total_input_tokens:,} tokens + {side.reply_tokens:,} "
                                              f"for the reply ({cap}), over the {limit} ({side.note or 'no note'})"),)
        # The entry this call writes is usable by others only once its response has started; the
        # transcript stamps the completion, a safe upper bound (parallel sidechains then cannot share).
        outcome = sim.request(request, call.at_s, response_started_s=parse_time(call.message.timestamp))
        output = (call.message.usage and call.message.usage.output_tokens) or meter.message(call.message)
        over = overflow_note(outcome.total_input_tokens, profile)  # judged on what is sent: the row's own prompt
        notes = (*(n for n in decision.notes if not n.startswith("overflow:")), *([over] * bool(over)))
        rows.append(from_outcome(outcome, thread=call.thread, call=call.index, message_id=call.message.id,
                                 model=call_model, provider=call_provider, at=call.message.timestamp,
                                 output_tokens=output, stop_reason=call.message.stop_reason,
                                 note="; ".join(notes), overflow=bool(over)))
        violations = tuple(check_context(decision.context, history, strategy, bodies=bodies)) if check else ()
        violations = side_violations + violations  # the side calls went first
        result.records.append(CallRecord(call, decision.context.total_tokens, len(decision.context.messages),
                                         notes + (outcome.reason,), bool(over), outcome,
                                         request if keep_requests else None, violations))
    result.ledger = Ledger(rows)
    return result


def _with_added(recorded: tuple[Item, ...], upto: int, added: list[tuple[int, Entry]]) -> tuple[Item, ...]:
    """The thread's first ``upto`` recorded items with the strategy's entries put back where each was added
    (``(position, entry)`` in the order added, each position counting the entries before it; past the end: last).
    ``(a, b, c)``, 3, ``[(1, E)]`` → ``(a, E, b, c)``. Nothing added: one slice (a long replay copies it per call)."""
    if not added:
        return recorded[:upto]
    if any(a >= b for (a, _), (b, _) in zip(added, added[1:])):  # calls replayed out of order (their timestamps)
        items = list(recorded[:upto])
        for at, entry in added:
            items.insert(min(at, len(items)), entry)
        return tuple(items)
    out: list[Item] = []
    taken = 0  # recorded items copied so far
    for at, entry in added:
        take = max(0, min(at - len(out), upto - taken))
        out += recorded[taken:taken + take]
        taken += take
        out.append(entry)
    return (*out, *recorded[taken:upto])


def _inferred_head(conversation: Conversation, thread: str, meter: MessageMeter) -> int | None:
    """The unrecorded static head's size: the reader's when it knows it (a proxy log shows that no
    system prompt or tools were sent: 0), else inferred from the thread's first recorded usage."""
    if conversation.inferred_head_tokens is not None:
        return conversation.inferred_head_tokens
    head = infer_static_head(conversation.thread(thread), meter)
    return head.tokens if head else None
