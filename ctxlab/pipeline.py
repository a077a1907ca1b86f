"""The decision pipeline: the cheap, local tools first; compaction only when they are not enough.

The texts' runtime flow, before every model call:

1. **meter** the context (counted, or anchored on the previous request's size);
2. under the trigger (80% of the window), and within the budget as counted: **send it as it is** —
   the prefix stays stable (a context counted over the budget goes on, whatever the meter said);
3. over it: check the tool results **added since the previous request** against a per-result
   budget and shrink the large ones by policy — **page** documents and data (recoverable through
   ``read_page``), **prune** logs to head + tail (not recoverable);
4. still over: **compact** (``compaction.py``), down to under 50%;
5. re-meter, and record the call (the replay writes its ledger row).

Each step changes the prefix only when the one before it was not enough, so the cache keeps
hitting between those rare moments. ``read_page`` is among the tools from the first call: adding
a tool later would invalidate every cached prefix. Taught in chapter 07; compared in chapter 08.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar, Literal

from ctxlab.base import validate
from ctxlab.compaction import CompactionPolicy, CompactionStrategy
from ctxlab.messages import Conversation, Entry, Message, ToolSpec
from ctxlab.paging import READ_PAGE_TOOL, MemoryPages, Pages, PagingPolicy, page_message
from ctxlab.tables.profiles import ModelProfile
from ctxlab.pruning import prune_message
from ctxlab.strategies import Call, Decision, whole_context
from ctxlab.summary import Summarizer
from ctxlab.tokens import MessageMeter
from ctxlab.views import compacted_view, without_recorded


@dataclass
class PipelineStrategy:
    """meter → send | shrink new large results (page or prune) → compact → re-meter.

    ``per_result_tokens``: a tool result larger than this is shrunk at step 3 (a positive whole
    number of tokens, else CtxlabError naming it). ``reduce``: ``"new"`` (results added since the
    previous request, as the texts have it) or ``"all"`` (every large result still shown). Chapter 07.
    """

    policy: CompactionPolicy = field(default_factory=CompactionPolicy)
    paging: PagingPolicy = field(default_factory=PagingPolicy)
    per_result_tokens: int = 2_000
    reduce: Literal["new", "all"] = "new"
    summarizer: Summarizer | None = None
    store: Pages = field(default_factory=MemoryPages)
    name: str = "pipeline"
    budgeted: ClassVar[bool] = True
    added_tools: ClassVar[tuple[ToolSpec, ...]] = (READ_PAGE_TOOL,)

    def __post_init__(self) -> None:
        self.per_result_tokens = validate.tokens("per_result_tokens", self.per_result_tokens, allow_none=False)
        self.compaction = CompactionStrategy(self.policy, self.summarizer)

    def decide(self, history: Conversation, call: Call, profile: ModelProfile, meter: MessageMeter) -> Decision:
        history = without_recorded(history, self.compaction.memo.setdefault("pipeline", {}))  # not its own
        if READ_PAGE_TOOL not in history.tools:
            history = replace(history, tools=history.tools + (READ_PAGE_TOOL,))
        view, _, notes = compacted_view(history, self.compaction.memo.setdefault("view", {}))
        ctx = whole_context(view, profile, meter)
        trigger = self.policy.trigger_ratio * profile.context_window
        size = self.compaction.metered(ctx, call, meter)
        if self.compaction.sends_as_is(ctx, size, profile, notes):  # under the trigger, within the budget counted
            return self.compaction.send(ctx, call, notes, profile)

        shrunk, counted = self._shrink_results(view, call, meter), ctx.total_tokens
        if shrunk:
            history = replace(history, items=(*history.items, *shrunk))
            view, _, notes = compacted_view(history, self.compaction.memo.setdefault("view", {}))
            ctx = whole_context(view, profile, meter)
            why = f"over the trigger ({size:,} tokens)" if size > trigger else f"over the budget ({counted:,} counted)"
            notes.append(f"{why}: {len(shrunk)} large tool results paged or pruned, now {ctx.total_tokens:,}")
            if self.compaction.sends_as_is(ctx, ctx.total_tokens, profile, notes):  # counted: under both
                return self.compaction.send(ctx, call, notes, profile, new_entries=shrunk)

        decision = self.compaction.decide(history, call, profile, meter)
        return replace(decision, new_entries=(*shrunk, *decision.new_entries),
                       notes=tuple(notes[-1:] if shrunk else ()) + decision.notes)

    def _shrink_results(self, view: Conversation, call: Call, meter: MessageMeter) -> tuple[Entry, ...]:
        """One ``paged_result`` or ``pruned_result`` entry per large tool result, by the paging policy."""
        seen = self.compaction.last_request.get(call.thread, (0, frozenset()))[1]
        entries: list[Entry] = []
        for msg in view.messages:
            if msg.role != "tool" or msg.tool_name == READ_PAGE_TOOL.name:
                continue  # a page read back is never paged again
            if (self.reduce == "new" and msg.id in seen) or meter.message(msg) <= self.per_result_tokens:
                continue
            entries.append(self._shrink(msg, meter))
        return tuple(entries)

    def _shrink(self, msg: Message, meter: MessageMeter) -> Entry:
        if self.paging.action_of(msg.tool_name) == "page":
            _, entry = page_message(msg, self.store, head_tokens=self.paging.head_tokens,
                                    tail_tokens=self.paging.tail_tokens, counter=meter.counter)
            return entry
        pruned = prune_message(msg, max(0, self.per_result_tokens - meter.overhead(msg)), meter.counter)
        return Entry("pruned_result", f"pruned:{msg.id}", thread=msg.thread,
                     data={"message_id": msg.id, "replacement": pruned, "reason": "pipeline"})
