"""Strategies: what to send at each model call, given the history so far.

A strategy is an object with explicit state and one method, ``decide(history, call) -> Decision``: from the
history the agent had just before ``call`` (a :class:`~ctxlab.messages.Conversation`), it returns the context to
send, any new session entries (a compaction, a paged result — later chapters) and notes. The replay loop
(``replay.py``) calls it once per recorded model call and feeds new entries back.

Here:

* ``full`` — send everything; a call whose prompt exceeds the window is flagged, not fixed;
* ``sliding`` — a window over units whose start only moves forward: each call drops the oldest
  units, as few as needed to fit the budget (no pinning: the task can fall out);
* ``budgeted`` — :func:`~ctxlab.context.build_context` from scratch at every call (pinned task and newest user
  message, newest units backwards);
* ``recorded`` — what the real agent sent: everything, except that a recorded compaction replaces what came before
  its first kept message with its summary.

Each strategy also declares what it promises of its contexts (``budgeted``, ``added_tools``), which the checks
(``checks.py``) hold it to. Taught in chapter 04; pruning, paging, summaries and compaction add strategies in 05–07,
and ``replay.STRATEGIES`` names them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar, Protocol, runtime_checkable

from ctxlab.base import validate
from ctxlab.context import BudgetPolicy, Context, build_context, check_fixed_part
from ctxlab.base.errors import BudgetError
from ctxlab.interactions import Unit, group_units
from ctxlab.messages import Conversation, Entry, Message, ToolSpec, parse_time
from ctxlab.tables.profiles import ModelProfile
from ctxlab.tokens import MessageMeter
from ctxlab.views import compacted_view


@dataclass(frozen=True)
class Call:
    """One recorded model call: the response ``message`` and when the request went out.

    ``at_s`` is the request time in seconds (the timestamp of the last item before the call, since
    transcripts stamp completions), or None when the transcript has no timestamps.
    ``thinking`` is the thinking setting in force (from ``thinking_level_change`` entries); ``tool_choice`` the
    request's ``tool_choice`` in force in its thread (``"auto"``, ``"any"``, ``"none"``, ``"tool:<name>"``; from
    ``tool_choice_change`` entries, which readers of request bodies write when it changes). Chapter 04.
    """

    thread: str
    index: int
    message: Message
    at_s: float | None
    model: str
    provider: str
    thinking: str | None = None
    tool_choice: str = "auto"


def model_calls(conversation: Conversation) -> list[tuple[int, Call]]:
    """Every model call as ``(position in items, Call)``, in recorded order: each assistant message the
    transcript recorded (not one ctxlab made), numbered per thread from 1.

    The model and thinking setting in force come from the message or the latest ``model_change`` /
    ``thinking_level_change`` entry, the ``tool_choice`` from the thread's latest ``tool_choice_change``
    (``{"tool_choice": "any"}``; none yet: ``"auto"``); ``at_s`` is the timestamp of the thread's last item before it
    (seconds). ``[user, assistant, tool, assistant]`` → ``[(1, Call(index=1)), (3, Call(index=2))]``. Chapter 04.
    """
    model, provider, thinking = conversation.model, conversation.provider, None
    last_time: dict[str, float | None] = {}  # thread -> timestamp of its latest item
    count: dict[str, int] = {}  # thread -> calls so far
    choice: dict[str, str] = {}  # thread -> tool_choice in force
    calls = []
    for k, item in enumerate(conversation.items):
        if isinstance(item, Entry):
            if item.kind == "model_change":
                model = item.data.get("model") or model
                provider = item.data.get("provider") or provider
            elif item.kind == "thinking_level_change":
                thinking = item.data.get("level")
            elif item.kind == "tool_choice_change":
                choice[item.thread] = str(item.data.get("tool_choice") or "auto")
        elif item.role == "assistant" and item.origin is None:
            count[item.thread] = count.get(item.thread, 0) + 1
            calls.append((k, Call(item.thread, count[item.thread], item, last_time.get(item.thread),
                                  item.model or model or "unknown", item.provider or provider or "other", thinking,
                                  choice.get(item.thread, "auto"))))
        stamp = parse_time(item.timestamp)
        if stamp is not None:
            last_time[item.thread] = stamp
    return calls


def overflow_note(input_tokens: int, profile: ModelProfile, reply_tokens: int = 0) -> str:
    """Why a prompt of ``input_tokens`` with ``reply_tokens`` kept for the reply (its ``max_tokens``) would be
    refused, naming the limit; ``""`` when it fits. Both limits hold (:meth:`ModelProfile.input_limit`): input +
    reply within the window, and input within ``max_input_tokens`` (GPT-5: 272,000 of 400,000; reported, the API's
    error "Input tokens exceed the configured limit of 272,000 tokens", community.openai.com/t/1344734, read
    2026-12-02). GPT-5, 300,000 → "overflow: 300,000 > input limit 272,000 (max_input_tokens of gpt-5; window
    400,000)". Chapter 04."""
    if input_tokens + reply_tokens > profile.context_window:
        reply = f" + reply {reply_tokens:,}" if reply_tokens else ""
        return f"overflow: {input_tokens:,}{reply} > window {profile.context_window:,}"
    if profile.max_input_tokens is not None and input_tokens > profile.max_input_tokens:
        return (f"overflow: {input_tokens:,} > input limit {profile.max_input_tokens:,} (max_input_tokens of "
                f"{profile.name}; window {profile.context_window:,})")
    return ""


@dataclass(frozen=True)
class SideCall:
    """A model call a strategy makes for itself before the real one — e.g. asking a model for a
    summary. It is a model call like any other: it gets its own ledger row and obeys the same window.
    ``context`` is what it sends (render it on the cached prefix to make it cheap), ``output_tokens``
    what it returns, ``max_tokens`` the reply's cap sent with it (None: its ``output_tokens``). The
    prompt plus that cap must fit the window; the replay flags a side call that does not as an overflow
    (and, checked, as a ``side_call_window`` violation). Its ``kind`` becomes the ledger row's ``kind``.
    Chapters 06 and 07."""

    kind: str
    context: Context
    output_tokens: int
    note: str = ""
    max_tokens: int | None = None

    @property
    def reply_tokens(self) -> int:
        """What the reply may take of the window: ``max_tokens``, else the tokens it returned. Chapter 06."""
        return self.output_tokens if self.max_tokens is None else self.max_tokens


@dataclass(frozen=True)
class Decision:
    """A strategy's answer for one call: the context, new session entries, notes, side calls made
    before it (a summary call), and whether the prompt overflows the window or the input limit
    (:func:`overflow_note`; only ``full`` and ``recorded`` let that happen). Chapter 04."""

    context: Context
    new_entries: tuple[Entry, ...] = ()
    notes: tuple[str, ...] = ()
    overflow: bool = False
    side_calls: tuple[SideCall, ...] = ()


class Strategy(Protocol):
    """What the replay (chapter 04) and the agent loop (chapter 08) call: ``decide`` once per model call.

    A strategy also declares what it promises of its contexts, which :func:`ctxlab.checks.check_context`
    reads: ``budgeted`` — every context fits its budget (``full`` and ``recorded`` only report
    overflows); ``added_tools`` — the tools it may append to the conversation's (paging's ``read_page``).
    A strategy that declares neither is taken as :data:`PROMISE` (budgeted, no tools added). Chapter 04.
    """

    name: str
    budgeted: bool
    added_tools: tuple[ToolSpec, ...]

    def decide(self, history: Conversation, call: Call, profile: ModelProfile, meter: MessageMeter) -> Decision: ...


@dataclass(frozen=True)
class Promise:
    """What a strategy promises of its contexts, as :class:`Strategy` declares it: ``budgeted`` (each context
    within its budget) and ``added_tools`` (tools it may add after the conversation's). Chapter 04."""

    budgeted: bool = True
    added_tools: tuple[ToolSpec, ...] = ()


PROMISE = Promise()  # what a strategy that declares nothing promises


@runtime_checkable
class UnitMemory(Protocol):
    """The slot for grouping without regrouping: a meter that remembers the histories it saw (``fast/``) gives
    the units ``group_units`` would give the history's sent messages, from what it grouped before. Chapter 04."""

    def units_of(self, history: Conversation) -> list[Unit]: ...


def history_units(history: Conversation, meter: MessageMeter) -> list[Unit]:
    """``group_units`` of the history's sent messages (meta left out), from the meter's memory if any. Chapter 04."""
    if isinstance(meter, UnitMemory):
        return meter.units_of(history)
    return group_units([m for m in history.messages if m.origin != "meta"])


def whole_context(history: Conversation, profile: ModelProfile, meter: MessageMeter) -> Context:
    """The whole history as one context (a budget of 10**12 tokens, so nothing is dropped). Chapter 04."""
    return build_context(history, BudgetPolicy(budget_tokens=10**12), profile=profile, meter=meter)


@runtime_checkable
class WindowMemory(Protocol):
    """The slot for a window read off units grouped once (``fast/``): the Context :func:`window_context` would
    build, or None to let it build. Chapter 04."""

    def window_context(self, history: Conversation, window: list[Unit], profile: ModelProfile) -> Context | None: ...


def window_context(history: Conversation, window: list[Unit], profile: ModelProfile, meter: MessageMeter) -> Context:
    """:func:`whole_context` of the messages of ``window``, some of ``history_units(history)`` in order. Chapter 04."""
    if isinstance(meter, WindowMemory) and (known := meter.window_context(history, window, profile)) is not None:
        return known  # the meter read it off the units it grouped
    return whole_context(replace(history, items=tuple(m for u in window for m in u.messages)), profile, meter)


@dataclass
class FullStrategy:
    """``full``: send the whole history every call; flag calls over the window or input limit. Chapter 04."""

    name: str = "full"
    budgeted: ClassVar[bool] = False
    added_tools: ClassVar[tuple[ToolSpec, ...]] = ()

    def decide(self, history: Conversation, call: Call, profile: ModelProfile, meter: MessageMeter) -> Decision:
        ctx = replace(whole_context(history, profile, meter), budget_tokens=profile.context_window)
        note = overflow_note(ctx.total_tokens, profile)
        return Decision(ctx, notes=(note,) if note else (), overflow=bool(note))


@dataclass
class BudgetedStrategy:
    """``budgeted``: rebuild under the budget at every call (``build_context``). Chapter 04."""

    policy: BudgetPolicy = field(default_factory=BudgetPolicy)
    name: str = "budgeted"
    budgeted: ClassVar[bool] = True
    added_tools: ClassVar[tuple[ToolSpec, ...]] = ()

    def decide(self, history: Conversation, call: Call, profile: ModelProfile, meter: MessageMeter) -> Decision:
        return Decision(build_context(history, self.policy, profile=profile, meter=meter))


@dataclass
class SlidingStrategy:
    """A sticky window: the first kept message only moves forward, by whole units, as little as needed.

    State: ``start_id`` per thread — the id of the first kept message (``start_at``: the unit it was, where
    the next call looks first: the start never moves back). ``input_ratio`` (of the window, in (0, 1]) is the
    budget. Raises BudgetError when the fixed part (tools, system prompt, head) alone is over the budget,
    naming it, or when the newest unit cannot fit. Chapter 04.
    """

    input_ratio: float = 0.9
    name: str = "sliding"
    budgeted: ClassVar[bool] = True
    added_tools: ClassVar[tuple[ToolSpec, ...]] = ()
    start_id: dict[str, str] = field(default_factory=dict)  # thread -> first kept message id
    start_at: dict[str, int] = field(default_factory=dict)  # thread -> the unit that message started

    def __post_init__(self) -> None:
        self.input_ratio = validate.ratio("input_ratio", self.input_ratio)

    def decide(self, history: Conversation, call: Call, profile: ModelProfile, meter: MessageMeter) -> Decision:
        units = history_units(history, meter)
        budget = profile.budget_tokens(self.input_ratio)
        newest_user = next((u.index for u in reversed(units) if u.first.is_real_user), -1)
        at, start = self.start_at.get(call.thread, 0), self.start_id.get(call.thread)
        same = at < len(units) and units[at].first.id == start  # where it started at the last call: the common case
        first = at if same else next((u.index for u in units if u.first.id == start), 0)
        while True:
            # the newest user message stays even when the window has slid past it: the task must stay
            window = ([units[newest_user]] if 0 <= newest_user < first else []) + units[first:]
            ctx = window_context(history, window, profile, meter)
            # the tools and the system prompt alone over the budget: no window helps, and the error says so
            check_fixed_part(ctx.tools_tokens, ctx.system_tokens, ctx.head_tokens, profile, budget)
            starts_wrong = profile.requires_user_first and window[0].first.role != "user"
            if (ctx.total_tokens <= budget and not starts_wrong) or first >= len(units) - 1:
                break
            first += 1
        self.start_id[call.thread], self.start_at[call.thread] = units[first].first.id, first
        if ctx.total_tokens > budget:
            raise BudgetError(f"sliding: the newest unit needs {ctx.total_tokens:,} tokens with the newest user "
                              f"message, over the budget of {budget:,} (call {call.index} of thread "
                              f"{call.thread!r}). Prune or page its tool results (chapter 05).",
                              needed=ctx.total_tokens, budget=budget)
        notes = (f"window starts at unit {first} of {len(units)}",) if first else ()
        return Decision(replace(ctx, budget_tokens=budget), notes=notes)


@dataclass
class RecordedStrategy:
    """What the agent actually sent: all of it, with recorded compactions applied.

    After a compaction entry, the context is its summary (as a user message, as pi and Claude Code
    send it) followed by the messages from its first kept message on. Pairing is validated after the
    substitution; an orphan there is reported, never hidden. Chapter 04.
    """

    name: str = "recorded"
    budgeted: ClassVar[bool] = False
    added_tools: ClassVar[tuple[ToolSpec, ...]] = ()
    memo: dict = field(default_factory=dict, repr=False, compare=False)  # compacted_view's, between calls

    def decide(self, history: Conversation, call: Call, profile: ModelProfile, meter: MessageMeter) -> Decision:
        view, _, notes = compacted_view(history, self.memo)
        ctx = whole_context(view, profile, meter)
        note = overflow_note(ctx.total_tokens, profile)
        return Decision(replace(ctx, budget_tokens=profile.context_window), notes=(*notes, *([note] if note else [])),
                        overflow=bool(note))
