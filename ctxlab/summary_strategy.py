"""Summary strategies: the summary as a model call, where it goes, and ``budgeted+summary``.

Unlike ``summary.py``, which decides what a summary keeps, this module asks a model for one and
puts it into the context:

* :class:`LLMSummarizer` — the summary's sections asked of any function ``str -> str`` you pass
  (:data:`DEFAULT_PROMPT`, the dropped messages as text by :func:`render_transcript`);
* :func:`summary_call` — a summary is a model call: the :class:`~ctxlab.strategies.SideCall` the
  replay turns into its own ledger row (``kind="summary"``), fresh or on the cached prefix;
* :func:`place_summary` — one of :data:`PLACEMENTS`: the end of the system prompt (the texts'
  placement), a system block of its own, or the first message;
* :class:`BudgetedSummaryStrategy` (``budgeted+summary``) — the texts' strategy as written, the
  summary regenerated at every call that truncates, opening with ``views.SUMMARY_MARKER``.

The three placements under Anthropic's and OpenAI's cache rules are measured in
``ctxlab/lab/placement.py``. Simplified on purpose: one summary per context, of everything dropped.
Taught in chapter 06.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, ClassVar, Literal, Sequence

from ctxlab.base import validate
from ctxlab.base.errors import BudgetError
from ctxlab.context import BudgetPolicy, Context, build_context
from ctxlab.interactions import group_units
from ctxlab.messages import Conversation, Message, TextPart, ToolSpec
from ctxlab.pruning import cut_to_tokens
from ctxlab.strategies import Call, Decision, SideCall, whole_context
from ctxlab.summary import RuleBasedSummarizer, Summarizer, Summary, held_to
from ctxlab.tables.profiles import ModelProfile
from ctxlab.tokens import MessageMeter, TiktokenCounter, TokenCounter
from ctxlab.views import SUMMARY_MARKER


DEFAULT_PROMPT = """Summarise the conversation below for the agent that continues it; it will not see these
messages again. Keep what the next step needs, drop the play-by-play. Use these headings, in this order, each
with a list of short items, and leave out an empty one:
## Task - the user's task and later requests, in their words
## Constraints - every rule the user set (must, never, only, 不要, 必须 ...), verbatim
## Decisions - what was decided and why, and the wrong paths already ruled out
## Files - files read and modified, with line numbers as path:line
## Commands - commands run and how they ended
## Errors - error messages and codes, verbatim
## Open steps - what remains to be done
## Pages - page handles still needed, as read_page(handle="...")
Keep paths, identifiers, error codes and non-English text exactly as written. At most {max_tokens} tokens."""


def render_transcript(messages: Sequence[Message]) -> str:
    """Messages as plain text for a prompt. ``[user("hi", "u1")]`` → ``"[user] hi"``. Chapter 06."""
    out = []
    for m in messages:
        if m.origin == "meta":
            continue
        who = f"tool {m.tool_name or ''}".strip() if m.role == "tool" else m.role
        calls = "".join(f"\n  -> {c.name}({c.arguments})" for c in m.tool_calls)
        out.append(f"[{who}] {m.text}{calls}")
    return "\n\n".join(out)


@dataclass(frozen=True)
class LLMSummarizer:
    """Any function ``prompt -> summary`` as a summarizer; its answer is used verbatim. Chapter 06.

    ``LLMSummarizer(lambda p: my_client.complete(p))``. ``prompt`` holds ``{max_tokens}`` (a whole
    number of tokens, 0 or more, else CtxlabError).
    """

    fn: Callable[[str], str]
    prompt: str = DEFAULT_PROMPT
    max_tokens: int = 1_000
    counter: TokenCounter = field(default_factory=TiktokenCounter)

    def __post_init__(self) -> None:
        validate.settle(self, max_tokens=validate.tokens("max_tokens", self.max_tokens, allow_zero=True,
                                                         allow_none=False))

    def instruction(self, previous: str | None = None) -> str:
        text = self.prompt.format(max_tokens=self.max_tokens)
        return text + (f"\n\nThe summary so far, to update:\n<summary>\n{previous}\n</summary>" if previous else "")

    def build_prompt(self, dropped: Sequence[Message], previous: str | None = None) -> str:
        return f"{self.instruction(previous)}\n\n<conversation>\n{render_transcript(dropped)}\n</conversation>"

    def summarize(self, dropped: Sequence[Message], previous: str | None = None) -> Summary:
        text = self.fn(self.build_prompt(dropped, previous))
        return Summary(text, tuple(m.id for m in dropped), tokens=self.counter.count(text))  # kept: unknown


def summary_call(history: Conversation, dropped: Sequence[Message], summary: Summary, profile: ModelProfile,
                 meter: MessageMeter, *, prompt: str | None = None, on_cached_prefix: bool = False,
                 prefix: Context | None = None) -> SideCall:
    """The summary as a model call: a :class:`~ctxlab.strategies.SideCall`, which the replay gives its
    own ledger row (input: what is sent; output: the summary's tokens).

    Fresh (default): one user message, ``prompt`` plus the dropped messages as text. On the cached
    prefix: the request sent last (``prefix``; without one, the system prompt, the tools and the dropped
    messages) with ``prompt`` as a last user message, so the provider reads that request from its cache.
    Output: the summary's tokens under ``meter``. Chapter 06.
    """
    prompt = prompt or DEFAULT_PROMPT.format(max_tokens=summary.tokens or 1_000)
    thread = dropped[0].thread if dropped else "main"
    if on_cached_prefix:
        ask = Message("user", (TextPart(prompt),), id="summary-request", thread=thread)
        view = replace(history, items=(*(prefix.messages if prefix else dropped), ask),
                       system=prefix.system if prefix else history.system)
    else:
        text = f"{prompt}\n\n<conversation>\n{render_transcript(dropped)}\n</conversation>"
        view = Conversation(history.id, (Message("user", (TextPart(text),), id="summary-request", thread=thread),),
                            inferred_head_tokens=0)
    how = "on the cached prefix" if on_cached_prefix else "fresh"
    return SideCall("summary", whole_context(view, profile, meter), meter.text(summary.text),
                    f"{len(dropped)} dropped messages, {how}")


# where a summary goes: the end of the last system block (the texts'), a system block of its own, the first message
Placement = Literal["system_end", "system_block", "first_user"]
PLACEMENTS: tuple[Placement, ...] = ("system_end", "system_block", "first_user")


def place_summary(context: Context, wrapped: str, placement: Placement, meter: MessageMeter) -> Context:
    """``context`` with ``wrapped`` appended to its last system block (``system_end``), as a system block
    of its own (``system_block``) or as the first message (``first_user``); token fields updated. Chapter 06."""
    system, messages, extra = context.system, context.messages, 0
    if placement == "first_user":
        note = Message("user", (TextPart(wrapped),), id="summary:budgeted", origin="compact_summary",
                       thread=messages[0].thread if messages else "main")
        messages, extra = (note, *messages), meter.message(note)
    elif placement == "system_end" and system:
        system = (*system[:-1], f"{system[-1]}\n\n{wrapped}")
    else:
        system = (*system, wrapped)
    return replace(context, system=system, messages=messages, system_tokens=meter.system(system),
                   message_tokens=context.message_tokens + extra)


@dataclass
class BudgetedSummaryStrategy:
    """``budgeted+summary``, the texts' strategy as written: build the context under (1 - ``summary_share``)
    of the budget; when units were dropped, summarise them and place the summary, regenerated at every
    call that truncates (``regenerate="on_change"``: only when what is dropped changes). Each summary
    is a side call (a ledger row). The total stays within the budget: when the newest units need part of
    the share, the summary gets what is left. State per thread: the context sent last and its summary.
    ``summary_share`` is a ratio in [0, 1) (else CtxlabError naming it).
    ``replay(conv, BudgetedSummaryStrategy(placement="system_block"), window=30_000)``. Chapter 06.
    """

    policy: BudgetPolicy = field(default_factory=BudgetPolicy)
    summarizer: Summarizer = field(default_factory=RuleBasedSummarizer)
    placement: Placement = "system_end"
    summary_share: float = 0.2
    on_cached_prefix: bool = False
    regenerate: Literal["every_call", "on_change"] = "every_call"
    name: str = "budgeted+summary"
    budgeted: ClassVar[bool] = True
    added_tools: ClassVar[tuple[ToolSpec, ...]] = ()
    # thread -> (the context sent last, its summary, its summary call)
    last: dict[str, tuple[Context, Summary | None, SideCall | None]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.summary_share = validate.ratio("summary_share", self.summary_share, lo_open=False, hi_open=True)

    def decide(self, history: Conversation, call: Call, profile: ModelProfile, meter: MessageMeter) -> Decision:
        if self.placement not in PLACEMENTS:
            raise ValueError(f"placement {self.placement!r}: choose one of {', '.join(PLACEMENTS)}")
        budget = self.policy.budget_for(profile)
        reserve, notes = int(budget * self.summary_share), []
        try:
            ctx = build_context(history, replace(self.policy, budget_tokens=budget - reserve), profile=profile,
                                meter=meter)
        except BudgetError:  # the newest units need part of the share: the summary gets what is left
            ctx = build_context(history, replace(self.policy, budget_tokens=budget), profile=profile, meter=meter)
            notes.append(f"the newest units need more than {1 - self.summary_share:.0%} of the budget")
        ctx = replace(ctx, budget_tokens=budget)
        prefix, before, side = self.last.get(call.thread, (None, None, None))
        gone = {r.unit for r in ctx.dropped()}
        if not gone:
            self.last[call.thread] = (ctx, None, None)
            return Decision(ctx, notes=tuple(notes))
        units = group_units([m for m in history.messages if m.origin != "meta"], self.policy.granularity,
                            self.policy.unanswered)
        dropped = [m for u in units if u.index in gone for m in u.messages]
        cap = max(0, min(reserve, budget - ctx.total_tokens) - 16)  # 16: the wrapper line, the placement's overhead
        summarizer = held_to(self.summarizer, cap, meter.counter)
        same = before is not None and before.sources == tuple(m.id for m in dropped)
        reuse = same and self.regenerate == "on_change"
        summary = before if reuse else summarizer.summarize(dropped)
        body = cut_to_tokens(summary.text, cap, meter.counter)
        while True:
            wrapped = f"{SUMMARY_MARKER} of {len(dropped)} dropped messages]\n{body}"
            placed = place_summary(ctx, wrapped, self.placement, meter)
            if placed.total_tokens <= budget or not body:
                break  # else a token boundary merged differently: trim a little
            body = cut_to_tokens(body, meter.counter.count(body) - (placed.total_tokens - budget), meter.counter)
        if placed.total_tokens > budget:  # the newest units leave no room even for the summary's opening line
            self.last[call.thread] = (ctx, None, None)
            notes.insert(0, f"no room for a summary of {len(dropped)} dropped messages: its opening line alone would "
                            f"make {placed.total_tokens:,} tokens, over the budget of {budget:,}")
            return Decision(ctx, notes=tuple(notes))
        if not reuse and not (same and not self.on_cached_prefix and side and before.text == summary.text):
            prompt = (summarizer.instruction() if hasattr(summarizer, "instruction")
                      else DEFAULT_PROMPT.format(max_tokens=cap))
            side = summary_call(history, dropped, summary, profile, meter, prompt=prompt,
                                on_cached_prefix=self.on_cached_prefix, prefix=prefix)
        self.last[call.thread] = (placed, summary, side)  # an identical fresh request is reused as it is
        notes.insert(0, f"summary of {len(dropped)} dropped messages: {meter.counter.count(wrapped):,} tokens "
                        f"({self.placement}){', unchanged' if same else ''}")
        return Decision(placed, notes=tuple(notes), side_calls=() if reuse else (side,))
