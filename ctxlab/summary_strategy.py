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

The rule for a summary call's size: a summary call is a model call and obeys the same window. Its
request (the prompt, the summary so far, the dropped messages as text) plus the reply's ``max_tokens``
must fit the model's window. Dropped messages that do not fit one request are summarised in chunks,
oldest first (:func:`summarise_in_chunks`): each chunk as many whole messages as fit, each a summary call
(a ledger row) of its own that updates the summary so far (the summarizer's ``previous``), so nothing is
left out. A message too large for a call of its own is sent pruned to fit (chapter 05's ``prune_text``:
head and tail kept, a marker for the middle). The notes say how many calls a summary took and what was
pruned. A prompt that leaves no room for a single message is not sent: the summary stops there (at first:
no summary), and the note says how many dropped messages it leaves out.

The three placements under Anthropic's and OpenAI's cache rules are measured in ``ctxlab/lab/placement.py``.
Simplified on purpose: one summary per context, of everything dropped. Taught in chapter 06.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, ClassVar, Literal, Sequence

from ctxlab.base import validate
from ctxlab.base.errors import BudgetError
from ctxlab.context import BudgetPolicy, Context, build_context
from ctxlab.interactions import group_units
from ctxlab.messages import Conversation, Message, TextPart, ToolSpec
from ctxlab.pruning import cut_to_tokens, prune_text
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
    for m in (m for m in messages if m.origin != "meta"):
        who = f"tool {m.tool_name or ''}".strip() if m.role == "tool" else m.role
        calls = "".join(f"\n  -> {c.name}({c.arguments})" for c in m.tool_calls)
        out.append(f"[{who}] {m.text}{calls}")
    return "\n\n".join(out)


UPDATE = "\n\nThe summary so far, to update:\n<summary>\n{previous}\n</summary>"  # after the prompt, when there is one
Summarised = tuple[Summary | None, tuple[SideCall, ...], tuple[str, ...]]  # a summary, the calls made, notes


def fresh_request(history: Conversation, prompt: str, chunk: Sequence[Message], thread: str = "main") -> Conversation:
    """A summary asked afresh: one user message, ``prompt`` then ``chunk`` as text (nothing cached). Chapter 06."""
    text = f"{prompt}\n\n<conversation>\n{render_transcript(chunk)}\n</conversation>"
    return Conversation(history.id, (Message("user", (TextPart(text),), id="summary-request", thread=thread),),
                        inferred_head_tokens=0)


@dataclass(frozen=True)
class LLMSummarizer:
    """Any function ``prompt -> summary`` as a summarizer; its answer is used verbatim: ``LLMSummarizer(lambda p:
    my_client.complete(p))``. ``prompt`` holds ``{max_tokens}`` (a whole number of tokens, 0 or more, else
    CtxlabError). Chapter 06."""

    fn: Callable[[str], str]
    prompt: str = DEFAULT_PROMPT
    max_tokens: int = 1_000
    counter: TokenCounter = field(default_factory=TiktokenCounter)

    def __post_init__(self) -> None:
        validate.settle(self, max_tokens=validate.tokens("max_tokens", self.max_tokens, allow_zero=True,
                                                         allow_none=False))

    def instruction(self, previous: str | None = None) -> str:
        return self.prompt.format(max_tokens=self.max_tokens) + (UPDATE.format(previous=previous) if previous else "")

    def build_prompt(self, dropped: Sequence[Message], previous: str | None = None) -> str:
        return f"{self.instruction(previous)}\n\n<conversation>\n{render_transcript(dropped)}\n</conversation>"

    def summarize(self, dropped: Sequence[Message], previous: str | None = None) -> Summary:
        text = self.fn(self.build_prompt(dropped, previous))
        return Summary(text, tuple(m.id for m in dropped), tokens=self.counter.count(text))  # kept: unknown


def summary_call(history: Conversation, dropped: Sequence[Message], summary: Summary, profile: ModelProfile,
                 meter: MessageMeter, *, prompt: str | None = None, on_cached_prefix: bool = False,
                 prefix: Context | None = None, max_tokens: int | None = None) -> SideCall:
    """The summary as one model call, of any size: a :class:`~ctxlab.strategies.SideCall` (its own ledger row;
    input: what is sent, output: the summary's tokens, ``max_tokens``: the reply's cap). Fresh (default): one
    user message, ``prompt`` plus the dropped messages as text. On the cached prefix: the request sent last
    (``prefix``; without one, the system prompt, the tools and the dropped messages) with ``prompt`` as a last
    user message, so the provider reads that request from its cache. Chapter 06."""
    prompt = prompt or DEFAULT_PROMPT.format(max_tokens=summary.tokens or 1_000)
    thread = dropped[0].thread if dropped else "main"
    if on_cached_prefix:
        ask = Message("user", (TextPart(prompt),), id="summary-request", thread=thread)
        view = replace(history, items=(*(prefix.messages if prefix else dropped), ask),
                       system=prefix.system if prefix else history.system)
    else:
        view = fresh_request(history, prompt, dropped, thread)
    how = "on the cached prefix" if on_cached_prefix else "fresh"
    return SideCall("summary", whole_context(view, profile, meter), meter.text(summary.text),
                    f"{len(dropped)} dropped messages, {how}", max_tokens=max_tokens)


def ask_for(summarizer: Summarizer, cap: int, previous: str | None = None) -> str:
    """The prompt a summary call sends: the summarizer's own (``LLMSummarizer.instruction``), else
    :data:`DEFAULT_PROMPT` at ``cap`` tokens; with the summary so far when there is one. Chapter 06."""
    own = getattr(summarizer, "instruction", None)  # else the default prompt, as an LLMSummarizer asks it
    return own(previous) if own else LLMSummarizer(str, max_tokens=cap).instruction(previous)


def summarise_in_chunks(history: Conversation, dropped: Sequence[Message], summarizer: Summarizer, cap: int,
                        profile: ModelProfile, meter: MessageMeter, memo: dict | None = None) -> Summarised:
    """``dropped`` summarised in fresh calls that each fit the window with ``max_tokens`` = ``cap`` (the module's
    rule): the summary (its sources: the messages it covers, all unless a call could not fit; None if none could),
    the calls, oldest first, and notes on what was done. One call when all fits. ``memo`` keeps sizes and the last
    requests between calls (a strategy's). Chapter 06."""
    window, room = profile.context_window, profile.context_window - cap  # room: what the request may take
    thread, memo = dropped[0].thread if dropped else "main", {} if memo is None else memo
    last, made = memo.pop("requests", {}), memo.setdefault("requests", {})  # text -> context: the last call's, these

    def size(m: Message) -> int:  # a message's tokens as text in the request, its separator included
        if (hit := memo.get(id(m))) is None or hit[0] is not m:  # the stored message keeps its id from being reused
            hit = memo[id(m)] = (m, meter.text(render_transcript([m])) + 1)
        return hit[1]

    def request(prompt: str, chunk: Sequence[Message]) -> Context:  # a request sent before is not counted again
        view = fresh_request(history, prompt, chunk, thread)
        key = (id(meter), thread, view.messages[0].text)
        made[key] = made.get(key) or last.get(key) or whole_context(view, profile, meter)
        return made[key]

    sides, notes, rest, previous, summary = [], [], list(dropped), None, None
    while rest or summary is None:
        prompt = ask_for(summarizer, cap, previous)
        n, used = 0, (fixed := request(prompt, ()).total_tokens)
        while n < len(rest) and used + size(rest[n]) <= room:  # as many whole messages as fit, oldest first
            used, n = used + size(rest[n]), n + 1
        chunk = rest[:max(n, 1)]
        for _ in range(8):  # the sizes add up differently once joined: fewer messages, or the one pruned further
            sent = request(prompt, chunk)
            if (over := sent.total_tokens - room) <= 0 or not chunk:
                break
            if len(chunk) > 1:
                while len(chunk) > 1 and over > 0:
                    over, chunk = over - size(chunk[-1]), chunk[:-1]
                continue
            text = render_transcript([rest[0]]).split("] ", 1)[-1]  # its text and calls, without the "[who] "
            try:  # one message too large for a call of its own: its text pruned to what is left
                chunk = [replace(rest[0], parts=(TextPart(prune_text(text, size(chunk[0]) - over - 8,
                                                                     meter.counter).text),))]
            except ValueError:  # PruneBudgetError too: the prompt leaves no room even for the omission marker
                break
        if (sent := request(prompt, chunk)).total_tokens > room:  # counted already, unless the loop ran out
            notes.append(f"the summary prompt needs {fixed:,} tokens + max_tokens {cap:,}: no summary call fits the "
                         f"window of {window:,}, so {len(rest)} dropped messages are left out of the summary")
            break
        if chunk and chunk[0] is not rest[0]:
            notes.append(f"{rest[0].where()} needs {size(rest[0]):,} tokens as text, more than one summary call "
                         f"can hold: sent pruned to {size(chunk[0]):,}")
        summary = summarizer.summarize(chunk, previous)
        sides.append(SideCall("summary", sent, meter.text(summary.text), f"{len(chunk)} dropped messages, fresh",
                              max_tokens=cap))
        previous, rest = summary.text, rest[len(chunk):]
    if len(sides) > 1:
        sides = [replace(c, note=f"{c.note}, chunk {k} of {len(sides)}") for k, c in enumerate(sides, 1)]
        notes.insert(0, f"summarised in {len(sides)} summary calls, oldest first, each within the window of "
                        f"{window:,} with max_tokens {cap:,}")
    covered = tuple(m.id for m in dropped[:len(dropped) - len(rest)])  # all of them, unless a call could not fit
    return replace(summary, sources=covered) if summary else None, tuple(sides), tuple(notes)


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
    call that truncates (``regenerate="on_change"``: only when what is dropped changes). Each summary call
    is a side call (a ledger row) within the window: on the cached prefix when that fits, else fresh, in
    chunks when one does not fit (:func:`summarise_in_chunks`). The total stays within the budget: when the
    newest units need part of the share, the summary gets what is left. State per thread: the context sent
    last, its summary and its calls. ``summary_share`` is a ratio in [0, 1) (else CtxlabError naming it).
    ``replay(conv, BudgetedSummaryStrategy(placement="system_block"), window=30_000)``. Chapter 06."""

    policy: BudgetPolicy = field(default_factory=BudgetPolicy)
    summarizer: Summarizer = field(default_factory=RuleBasedSummarizer)
    placement: Placement = "system_end"
    summary_share: float = 0.2
    on_cached_prefix: bool = False
    regenerate: Literal["every_call", "on_change"] = "every_call"
    name: str = "budgeted+summary"
    budgeted: ClassVar[bool] = True
    added_tools: ClassVar[tuple[ToolSpec, ...]] = ()
    last: dict[str, tuple[Context, Summary | None, tuple[SideCall, ...]]] = field(default_factory=dict, repr=False)
    memo: dict = field(default_factory=dict, repr=False, compare=False)  # summarise_in_chunks' sizes and requests

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
        prefix, before, sides = self.last.get(call.thread, (None, None, ()))
        gone = {r.unit for r in ctx.dropped()}
        if not gone:
            self.last[call.thread] = (ctx, None, ())
            return Decision(ctx, notes=tuple(notes))
        units = group_units([m for m in history.messages if m.origin != "meta"], self.policy.granularity,
                            self.policy.unanswered)
        dropped = [m for u in units if u.index in gone for m in u.messages]
        cap = max(0, min(reserve, budget - ctx.total_tokens) - 16)  # 16: the wrapper line, the placement's overhead
        same = before is not None and before.sources == tuple(m.id for m in dropped)
        reuse = same and self.regenerate == "on_change"
        summary, made, how = ((before, sides, ()) if reuse
                              else self._summarise(history, dropped, cap, prefix, profile, meter))
        body = cut_to_tokens(summary.text, cap, meter.counter) if summary else ""
        while summary:
            wrapped = f"{SUMMARY_MARKER} of {len(dropped)} dropped messages]\n{body}"
            placed = place_summary(ctx, wrapped, self.placement, meter)
            if placed.total_tokens <= budget or not body:
                break  # else a token boundary merged differently: trim a little
            body = cut_to_tokens(body, meter.counter.count(body) - (placed.total_tokens - budget), meter.counter)
        if summary is None or placed.total_tokens > budget:  # no summary call fits, or no room for its opening line
            self.last[call.thread] = (ctx, None, ())
            notes[:0] = how if summary is None else [f"no room for a summary of {len(dropped)} dropped messages: its "
                                                     f"opening line alone would make {placed.total_tokens:,} tokens, "
                                                     f"over the budget of {budget:,}"]
            return Decision(ctx, notes=tuple(notes))
        self.last[call.thread] = (placed, summary, made)
        notes[:0] = [f"summary of {len(dropped)} dropped messages: {meter.counter.count(wrapped):,} tokens "
                     f"({self.placement}){', unchanged' if same else ''}", *how]
        return Decision(placed, notes=tuple(notes), side_calls=() if reuse else made)

    def _summarise(self, history: Conversation, dropped: list[Message], cap: int, prefix: Context | None,
                   profile: ModelProfile, meter: MessageMeter) -> Summarised:
        """The summary, its calls and notes: on the cached prefix when that request fits the window, else fresh."""
        summarizer, notes = held_to(self.summarizer, cap, meter.counter), ()
        if self.on_cached_prefix:  # its output tokens are known once the summary is made
            ask = summary_call(history, dropped, Summary("", ()), profile, meter, prompt=ask_for(summarizer, cap),
                               on_cached_prefix=True, prefix=prefix, max_tokens=cap)
            if ask.context.total_tokens + cap <= profile.context_window:
                summary = summarizer.summarize(dropped)
                return summary, (replace(ask, output_tokens=meter.text(summary.text)),), ()
            notes = (f"the cached prefix with the summary prompt needs {ask.context.total_tokens:,} tokens + "
                     f"max_tokens {cap:,}, over the window of {profile.context_window:,}: the summary is asked fresh",)
        summary, sides, more = summarise_in_chunks(history, dropped, summarizer, cap, profile, meter, self.memo)
        return summary, sides, notes + more
