"""The pruned strategy: ``budgeted`` over tool results capped on arrival; an over-budget newest unit pruned to fit.

Unlike ``budgeted`` (``strategies.py``), which only chooses whole units, it changes what a tool result
shows: every result is capped once, when it is recorded (:class:`~ctxlab.pruning.ArrivalCap`), and
when the newest unit alone is over the budget its tool results are shrunk by the overshoot, shared
fairly, until it fits — the call and its result stay together. A result shrunk that way stays shrunk:
a ``pruned_result`` entry (:func:`replacement_entry`) records what contexts show from then on, so
later calls repeat its bytes and the cache keeps hitting.

``paging.PagedStrategy`` extends it through three hooks: the tools it sends (``tools``), what a new
result becomes (``arrive``) and how an over-budget one is shrunk (``shrink``). Taught in chapter 05.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from collections.abc import Sequence
from typing import Any, ClassVar

from ctxlab.base.errors import BudgetError
from ctxlab.context import BudgetPolicy, Context, build_context, fixed_part
from ctxlab.interactions import group_units
from ctxlab.messages import Conversation, Entry, Item, Message, ToolSpec
from ctxlab.pruning import ArrivalCap, PruneBudgetError, fair_shares, prune_message, text_tokens
from ctxlab.strategies import Call, Decision
from ctxlab.tables.profiles import ModelProfile
from ctxlab.tokens import MessageMeter, TokenCounter, infer_static_head


@dataclass
class PruneStep:
    """What one ``decide`` of :class:`PrunedStrategy` (or ``paging.PagedStrategy``) reads and collects: the
    history, its recorded replacements (message id -> the Message shown instead), notes, new entries. Chapter 05."""

    history: Conversation
    notes: list[str] = field(default_factory=list)
    entries: list[Entry] = field(default_factory=list)
    # message id -> the replacement a pruned_result / paged_result entry recorded (None: read off the history)
    replaced: dict[str, Message] | None = None

    def __post_init__(self) -> None:
        if self.replaced is None:
            self.replaced = _recorded_replacements(self.history.items)


def _recorded_replacements(items: Sequence[Item], known: dict[str, Message] | None = None) -> dict[str, Message]:
    """Message id -> the replacement each ``pruned_result`` / ``paged_result`` entry among ``items`` records, the
    later entry winning, on top of ``known`` (those of the items before them). Chapter 05."""
    found = {e.data["message_id"]: e.data["replacement"] for e in items
             if isinstance(e, Entry) and e.kind in ("pruned_result", "paged_result") and "replacement" in e.data}
    return {**known, **found} if known and found else found or dict(known or {})


def replacement_entry(kind: str, entry_id: str, original: Message, shown: Message, **data: Any) -> Entry:
    """A ``pruned_result`` / ``paged_result`` entry: from now on the context shows ``shown``.

    The session keeps ``original`` unchanged; ``views.substituted`` applies the replacement (a Message
    in ``data["replacement"]``; a session file holds its codec dict form). Chapter 05.
    """
    return Entry(kind, entry_id, timestamp=original.timestamp, thread=original.thread,  # type: ignore[arg-type]
                 data={"message_id": original.id, **data, "replacement": shown})


@dataclass
class PrunedStrategy:
    """``budgeted`` with every tool result capped on arrival, and an over-budget newest unit pruned.

    State: ``shown`` — per tool result (by identity) what contexts show instead of it, decided
    once. A result pruned to rescue the newest unit stays pruned (a ``pruned_result`` entry records
    it), so later calls repeat its bytes; a session's recorded replacements are honoured.
    ``replay(conv, PrunedStrategy(cap=ArrivalCap({"bash": 2_000})))``. Chapter 05.
    """

    policy: BudgetPolicy = field(default_factory=BudgetPolicy)
    cap: ArrivalCap = field(default_factory=ArrivalCap)
    name: str = "pruned"
    budgeted: ClassVar[bool] = True  # what it promises the checks (strategies.Strategy)
    added_tools: ClassVar[tuple[ToolSpec, ...]] = ()
    shown: dict[int, tuple[Message, Message]] = field(default_factory=dict, repr=False)  # id(result) -> (result, shown)
    emitted: dict[str, int] = field(default_factory=dict, repr=False)  # entry id prefix -> entries so far
    last_view: tuple[tuple, tuple] = field(default=((), ()), repr=False)  # the last history's items, as shown
    last_replaced: tuple[tuple, dict] = field(default=((), {}), repr=False)  # the last history's items, replacements
    last_ids: dict[str, tuple[tuple, frozenset]] = field(default_factory=dict, repr=False)  # entry_ids, by kind

    # ---- hooks (paging.PagedStrategy overrides them) ----
    def tools(self, history: Conversation) -> tuple[ToolSpec, ...]:
        return history.tools

    def arrive(self, msg: Message, step: PruneStep) -> Message:
        """What a new tool result becomes: capped to its tool's limit (no entry: the cap is a pure rule)."""
        capped = self.cap.cap(msg)
        if capped is not msg:
            step.notes.append(f"capped on arrival: {msg.id} ({msg.tool_name}) from "
                              f"{text_tokens(msg, self.cap.counter):,} to "
                              f"{text_tokens(capped, self.cap.counter):,} tokens")
        return capped

    def shrink(self, msg: Message, budget_tokens: int, counter: TokenCounter) -> tuple[Message, Entry]:
        """The result ``msg`` (as recorded) in at most ``budget_tokens`` of text, and its entry."""
        pruned = prune_message(msg, budget_tokens, counter, head_share=self.cap.head_share)
        return pruned, replacement_entry("pruned_result", self.entry_id("pruned", msg.id), msg, pruned,
                                         reason="newest unit over budget")

    def entry_id(self, prefix: str, message_id: str) -> str:
        """``pruned:t1``, then ``pruned:t1:2`` ... — unique within the session."""
        key = f"{prefix}:{message_id}"
        n = self.emitted[key] = self.emitted.get(key, 0) + 1
        return key if n == 1 else f"{key}:{n}"

    def entry_ids(self, items: tuple, kind: str) -> frozenset[str]:
        """The message ids the ``kind`` entries among ``items`` name, from those of the items seen last if they grew."""
        seen, ids = self.last_ids.get(kind, ((), frozenset()))
        if not (seen and len(items) >= len(seen) and items[len(seen) - 1] is seen[-1] and items[:len(seen)] == seen):
            seen, ids = (), frozenset()
        new = {e.data.get("message_id") for e in items[len(seen):] if isinstance(e, Entry) and e.kind == kind}
        self.last_ids[kind] = (items, ids | new if new else ids)
        return self.last_ids[kind][1]

    # ---- the decision ----
    def _shown(self, msg: Message, step: PruneStep) -> Message:
        hit = self.shown.get(id(msg))
        if hit is not None and hit[0] is msg:  # the stored message keeps its id from being reused
            return hit[1]
        done = step.replaced.get(msg.id)
        out = done if done is not None else self.arrive(msg, step)
        self.shown[id(msg)] = (msg, out)
        return out

    def _view_items(self, items: tuple, step: PruneStep) -> tuple:
        """The history's items with each tool result as shown. A history only grows between calls: the items of
        the last one are mapped already (a rescue changes what is shown, and starts this over)."""
        seen, mapped = self.last_view
        if not (seen and len(items) >= len(seen) and items[:len(seen)] == seen):
            seen, mapped = (), ()
        mapped += tuple(self._shown(it, step) if isinstance(it, Message) and it.role == "tool" else it
                        for it in items[len(seen):])
        self.last_view = (items, mapped)
        return mapped

    def _replaced(self, items: tuple) -> dict[str, Message]:
        """The history's recorded replacements, from those of the last call's history when it only grew."""
        seen, known = self.last_replaced
        if not (seen and len(items) >= len(seen) and items[len(seen) - 1] is seen[-1] and items[:len(seen)] == seen):
            seen, known = (), {}
        new = items[len(seen):]
        found = known if not any(isinstance(it, Entry) for it in new) else _recorded_replacements(new, known)
        self.last_replaced = (items, found)
        return found

    def decide(self, history: Conversation, call: Call, profile: ModelProfile, meter: MessageMeter) -> Decision:
        step = PruneStep(history, replaced=self._replaced(history.items))
        items = self._view_items(history.items, step)
        head = history.inferred_head_tokens
        if head is None:  # infer from the recorded messages, not the capped ones
            inferred = infer_static_head(history, meter)
            head = inferred.tokens if inferred else 0
        view = replace(history, items=items, tools=self.tools(history), inferred_head_tokens=head)
        ctx = self._fit(view, history, meter, profile, step)
        notes = tuple(step.notes)
        return Decision(replace(ctx, notes=ctx.notes + notes), new_entries=tuple(step.entries), notes=notes)

    def _fit(self, view: Conversation, history: Conversation, meter: MessageMeter, profile: ModelProfile,
             step: PruneStep) -> Context:
        """build_context; if the newest unit alone is over the budget, shrink its tool results and retry."""
        recorded: dict[str, Message] = {}  # message id -> the result as recorded (read only when a rescue is needed)
        rescued: dict[str, tuple[Message, Entry, str]] = {}  # message id -> (shown, entry, note), kept on success
        for attempt in range(5):
            try:
                ctx = build_context(view, self.policy, profile=profile, meter=meter)
                break
            except BudgetError as err:
                recorded = recorded or {m.id: m for m in history.messages if m.role == "tool"}
                swap = self._rescue(err, view, recorded, meter, profile, rescued) if attempt < 4 else None
                if not swap:
                    raise
                view = replace(view, items=tuple(swap.get(id(it), it) for it in view.items))
        if rescued:
            self.last_view = ((), ())  # what is shown changed: the next call maps the history afresh
        for mid, (new, entry, note) in rescued.items():  # it fits: the rescue becomes state
            self.shown[id(recorded[mid])] = (recorded[mid], new)
            step.entries.append(entry)
            step.notes.append(note)
        return ctx

    def _rescue(self, err: BudgetError, view: Conversation, recorded: dict[str, Message], meter: MessageMeter,
                profile: ModelProfile, rescued: dict[str, tuple[Message, Entry, str]]) -> dict[int, Message] | None:
        """Shrink the newest unit's tool results by the overshoot, shared fairly; None if that cannot help."""
        fixed = fixed_part(view, profile, meter, view.inferred_head_tokens or 0).total_tokens  # as build_context
        if err.needed <= fixed:
            return None  # the tools and system prompt alone are over: no tool result can help
        over = err.needed - err.budget
        unit = group_units([m for m in view.messages if m.origin != "meta"], self.policy.granularity,
                           self.policy.unanswered)[-1]
        results = [m for m in unit.messages if m.role == "tool" and m.id in recorded]
        sizes = [text_tokens(m, meter.counter) for m in results]
        if not results or sum(sizes) - over <= 0:
            return None
        swap: dict[int, Message] = {}  # id(shown message) -> its smaller replacement
        for m, size, share in zip(results, sizes, fair_shares(sizes, sum(sizes) - over)):
            if share >= size:
                continue
            try:
                new, entry = self.shrink(recorded[m.id], share, meter.counter)
            except PruneBudgetError as small:
                raise BudgetError(f"{err} Pruning {m.where()} to {share:,} tokens is not possible either: {small}",
                                  needed=err.needed, budget=err.budget) from err
            swap[id(m)] = new
            done = "paged" if entry.kind == "paged_result" else "pruned"
            rescued[m.id] = (new, entry, f"newest unit ({unit.label()}) needed {err.needed:,} tokens, over the "
                             f"budget of {err.budget:,}: {m.id} ({m.tool_name}) {done} from {size:,} to "
                             f"{text_tokens(new, meter.counter):,} tokens; the call and its result stay together")
        return swap
