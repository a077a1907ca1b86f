"""Strategies: what to send at each model call, given the history so far.

A strategy is an object with explicit state and one method,
``decide(history, call) -> Decision``: from the history the agent had just before ``call``
(a :class:`~ctxlab.messages.Conversation`), it returns the context to send, any new session
entries (a compaction, a paged result — later chapters) and notes. The replay loop
(``replay.py``) calls it once per recorded model call and feeds new entries back.

Here:

* ``full`` — send everything; a call whose prompt exceeds the window is flagged, not fixed;
* ``sliding`` — a window over units whose start only moves forward: each call drops the oldest
  units, as few as needed to fit the budget (no pinning: the task can fall out);
* ``budgeted`` — :func:`~ctxlab.context.build_context` from scratch at every call (pinned task
  and newest user message, newest units backwards);
* ``recorded`` — what the real agent sent: everything, except that a recorded compaction replaces
  what came before its first kept message with its summary.

Taught in chapter 04; pruning, paging, summaries and compaction add strategies in 05–07.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from ctxlab.base import validate
from ctxlab.context import BudgetPolicy, Context, build_context, check_fixed_part
from ctxlab.base.errors import BudgetError
from ctxlab.interactions import find_orphans, group_units
from ctxlab.messages import Conversation, Entry, Message, TextPart
from ctxlab.tables.profiles import ModelProfile
from ctxlab.tokens import MessageMeter


@dataclass(frozen=True)
class Call:
    """One recorded model call: the response ``message`` and when the request went out.

    ``at_s`` is the request time in seconds (the timestamp of the last item before the call, since
    transcripts stamp completions), or None when the transcript has no timestamps.
    ``thinking`` is the thinking setting in force (from ``thinking_level_change`` entries).
    """

    thread: str
    index: int
    message: Message
    at_s: float | None
    model: str
    provider: str
    thinking: str | None = None


@dataclass(frozen=True)
class SideCall:
    """A model call a strategy makes for itself before the real one — e.g. asking a model for a
    summary. It is a model call like any other: it gets its own ledger row. ``context`` is what it
    sends (render it on the cached prefix to make it cheap), ``output_tokens`` what it returns."""

    kind: str
    context: Context
    output_tokens: int
    note: str = ""


@dataclass(frozen=True)
class Decision:
    """A strategy's answer for one call: the context, new session entries, notes, side calls made
    before it (a summary call), and whether the prompt overflows the window (only ``full`` and
    ``recorded`` let that happen)."""

    context: Context
    new_entries: tuple[Entry, ...] = ()
    notes: tuple[str, ...] = ()
    overflow: bool = False
    side_calls: tuple[SideCall, ...] = ()


class Strategy(Protocol):
    name: str

    def decide(self, history: Conversation, call: Call, profile: ModelProfile, meter: MessageMeter) -> Decision: ...


def whole_context(history: Conversation, profile: ModelProfile, meter: MessageMeter) -> Context:
    """The whole history as one context (budget = the window, so nothing is dropped unless it overflows)."""
    return build_context(history, BudgetPolicy(budget_tokens=10**12), profile=profile, meter=meter)


@dataclass
class FullStrategy:
    """Send the whole history every call; flag calls that overflow the window."""

    name: str = "full"

    def decide(self, history: Conversation, call: Call, profile: ModelProfile, meter: MessageMeter) -> Decision:
        ctx = whole_context(history, profile, meter)
        ctx = replace(ctx, budget_tokens=profile.context_window)
        over = ctx.total_tokens > profile.context_window
        notes = (f"overflow: {ctx.total_tokens:,} > window {profile.context_window:,}",) if over else ()
        return Decision(ctx, notes=notes, overflow=over)


@dataclass
class BudgetedStrategy:
    """Rebuild under the budget at every call (``build_context``)."""

    policy: BudgetPolicy = field(default_factory=BudgetPolicy)
    name: str = "budgeted"

    def decide(self, history: Conversation, call: Call, profile: ModelProfile, meter: MessageMeter) -> Decision:
        return Decision(build_context(history, self.policy, profile=profile, meter=meter))


@dataclass
class SlidingStrategy:
    """A sticky window: the first kept message only moves forward, by whole units, as little as needed.

    State: ``start_id`` per thread — the id of the first kept message. ``input_ratio`` (of the
    window, in (0, 1]) is the budget. Raises BudgetError when the fixed part (tools, system prompt,
    head) alone is over the budget, naming it, or when the newest unit cannot fit.
    """

    input_ratio: float = 0.9
    name: str = "sliding"
    start_id: dict[str, str] = field(default_factory=dict)  # thread -> first kept message id

    def __post_init__(self) -> None:
        self.input_ratio = validate.ratio("input_ratio", self.input_ratio)

    def decide(self, history: Conversation, call: Call, profile: ModelProfile, meter: MessageMeter) -> Decision:
        units = group_units([m for m in history.messages if m.origin != "meta"])
        budget = profile.budget_tokens(self.input_ratio)
        newest_user = max((u.index for u in units if u.first.is_real_user), default=-1)
        first = next((u.index for u in units if u.first.id == self.start_id.get(call.thread)), 0)
        while True:
            # the newest user message stays even when the window has slid past it: the task must stay
            window = ([units[newest_user]] if 0 <= newest_user < first else []) + units[first:]
            ctx = whole_context(replace(history, items=tuple(m for u in window for m in u.messages)), profile, meter)
            # the tools and the system prompt alone over the budget: no window helps, and the error says so
            check_fixed_part(ctx.tools_tokens, ctx.system_tokens, ctx.head_tokens, profile, budget)
            starts_wrong = profile.requires_user_first and window[0].first.role != "user"
            if (ctx.total_tokens <= budget and not starts_wrong) or first >= len(units) - 1:
                break
            first += 1
        self.start_id[call.thread] = units[first].first.id
        if ctx.total_tokens > budget:
            raise BudgetError(f"sliding: the newest unit needs {ctx.total_tokens:,} tokens with the newest user "
                              f"message, over the budget of {budget:,} (call {call.index} of thread "
                              f"{call.thread!r}). Prune or page its tool results (chapter 05).",
                              needed=ctx.total_tokens, budget=budget)
        notes = (f"window starts at unit {first} of {len(units)}",) if first else ()
        return Decision(replace(ctx, budget_tokens=budget), notes=notes)


SUMMARY_PREFIX = "The conversation before this point was compacted into this summary:\n\n"


@dataclass
class RecordedStrategy:
    """What the agent actually sent: all of it, with recorded compactions applied.

    After a compaction entry, the context is its summary (as a user message, as pi and Claude Code
    send it) followed by the messages from its first kept message on. Pairing is validated after the
    substitution; an orphan there is reported, never hidden.
    """

    name: str = "recorded"

    def decide(self, history: Conversation, call: Call, profile: ModelProfile, meter: MessageMeter) -> Decision:
        view, _, notes = compacted_view(history)
        ctx = whole_context(view, profile, meter)
        return Decision(replace(ctx, budget_tokens=profile.context_window), notes=tuple(notes),
                        overflow=ctx.total_tokens > profile.context_window)


def substituted(history: Conversation) -> Conversation:
    """The history with each pruned or paged tool result replaced by what the context shows instead.

    A ``paged_result`` / ``pruned_result`` entry carrying a ``replacement`` names the message it
    stands in for; the original stays in the session, untouched.
    """
    from ctxlab.io.codec import message_from_dict

    swaps = {it.data["message_id"]: it.data["replacement"] for it in history.items
             if isinstance(it, Entry) and it.kind in ("paged_result", "pruned_result") and "replacement" in it.data}
    if not swaps:
        return history
    items = tuple(message_from_dict(swaps[it.id]) if isinstance(it, Message) and it.id in swaps else it
                  for it in history.items)
    return replace(history, items=items)


def compacted_view(history: Conversation) -> tuple[Conversation, Entry | None, list[str]]:
    """The history as the model sees it after its newest compaction entry (recorded or ctxlab's).

    ``[m1 m2 m3 C(summary, first_kept=m3) m4]`` → ``[summary, m3, m4]``, the summary as a user message
    (as pi and Claude Code send it). Returns the view, the compaction entry (None if there is none)
    and notes. A kept tool result whose call was summarised away would be an orphan: it is removed
    and named in the notes (calls that never got a result are build_context's declared treatment).
    """
    history = substituted(history)
    at = max((k for k, it in enumerate(history.items) if isinstance(it, Entry) and it.kind == "compaction"),
             default=None)
    if at is None:
        return history, None, []
    entry = history.items[at]
    before = history.items[:at]
    first_kept = entry.data.get("first_kept_id")
    start = next((k for k, it in enumerate(before) if it.id == first_kept), len(before)) if first_kept else len(before)
    pinned = set(entry.data.get("pinned_ids", ()))  # kept verbatim although older than first_kept
    kept = [it for k, it in enumerate(before) if isinstance(it, Message) and (k >= start or it.id in pinned)]
    after = [it for it in history.items[at + 1:] if isinstance(it, Message)]
    summary = Message(role="user", parts=(TextPart(SUMMARY_PREFIX + entry.data.get("summary", "")),),
                      id=f"summary:{entry.id}", origin="compact_summary", thread=entry.thread)
    messages = (summary, *kept, *after)
    origin = entry.data.get("origin", "recorded")
    notes = [f"{origin} compaction {entry.id!r}: {len(kept)} messages kept from before it"]
    bad = sorted({o.message_id for o in find_orphans(messages) if o.kind == "result_without_call"})
    if bad:
        messages = tuple(m for m in messages if m.id not in bad)
        notes.append(f"removed {len(bad)} tool results whose calls the summary replaced: {', '.join(bad)}")
    return replace(history, items=messages), entry, notes


# name -> "module:Class" of every strategy; the later chapters' strategies live beside their ideas
STRATEGIES: dict[str, str] = {
    "full": "ctxlab.strategies:FullStrategy",
    "sliding": "ctxlab.strategies:SlidingStrategy",
    "budgeted": "ctxlab.strategies:BudgetedStrategy",
    "recorded": "ctxlab.strategies:RecordedStrategy",
    "pruned": "ctxlab.pruning:PrunedStrategy",
    "paged": "ctxlab.paging:PagedStrategy",
    "budgeted+summary": "ctxlab.summary:BudgetedSummaryStrategy",
    "compaction": "ctxlab.compaction:CompactionStrategy",
    "pipeline": "ctxlab.pipeline:PipelineStrategy",
}
STRATEGY_NAMES = tuple(STRATEGIES)


def get_strategy(name: str, **options: Any) -> Strategy:
    """A fresh strategy by name (``full``, ``sliding``, ``budgeted``, ``recorded``, ...) with options."""
    import importlib

    if name not in STRATEGIES:
        raise ValueError(f"Unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}.")
    module, cls = STRATEGIES[name].split(":")
    return getattr(importlib.import_module(module), cls)(**options)
