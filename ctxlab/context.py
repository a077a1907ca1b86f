"""Budgeted context building: what the model sees at one call, chosen from the whole session.

The algorithm (the texts' "history stays, context is rebuilt under a budget"):

1. Count the fixed part first — tool definitions, system prompt, any inferred static head and the
   per-request overhead. It is always kept; if it alone exceeds the budget, stop with an error.
2. Group the messages into units (``interactions.py``) so a cut never splits a tool call from its result.
3. Keep the newest unit and the pinned ones (the newest real user message; optionally the first
   task message). If they do not fit, stop with an error naming the numbers.
4. Walk backwards from the newest unit, counting each unit it tries to fit and keeping whole units while
   they fit; the first that does not fit is the cut: everything older is dropped uncounted (no holes).
5. If the provider needs a user message first, drop leading units until one starts with a user.

The budget defaults to 90% of the profile's context window (the rest is room for the reply). ``build_context`` is
pure: it reads a conversation and returns a :class:`Context`; it writes nothing. A meter that remembers earlier calls
(a :class:`ContextMemory`, as in ``ctxlab/fast/``) may answer first, with the same Context. Chapter 03.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Literal, Protocol, Sequence, runtime_checkable

from ctxlab.base import validate
from ctxlab.base.errors import BudgetError, CtxlabError
from ctxlab.base.safe_text import shown
from ctxlab.interactions import Granularity, Unanswered, find_orphans, group_units, pairing_notes
from ctxlab.messages import Conversation, Message, ToolSpec
from ctxlab.tables.profiles import ModelProfile, profile_for
from ctxlab.tokens import MessageMeter, infer_static_head, thinking_counts


@dataclass(frozen=True)
class BudgetPolicy:
    """How to build a context, in tokens. ``budget_tokens`` overrides ``input_ratio`` x the window. ``max_units`` caps
    the whole units kept (pinned ones included). ``unanswered`` is the declared treatment of tool calls that never got
    a result (``interactions.py``). Raises CtxlabError (a ValueError) naming the field for a budget or ``max_units``
    not a positive whole number (None: the default) or an ``input_ratio`` outside (0, 1]. Chapter 03."""

    budget_tokens: int | None = None
    input_ratio: float = 0.9
    granularity: Granularity = "round"
    max_units: int | None = None
    pin_newest_user: bool = True
    pin_first_task: bool = False
    unanswered: Unanswered = "stub"

    def __post_init__(self) -> None:
        validate.settle(self, budget_tokens=validate.tokens("budget_tokens", self.budget_tokens),
                        input_ratio=validate.ratio("input_ratio", self.input_ratio),
                        max_units=validate.whole("max_units", self.max_units, unit="units"))

    def budget_for(self, profile: ModelProfile) -> int:
        """The budget in tokens under ``profile``: ``budget_tokens``, else ``input_ratio`` x its window."""
        return self.budget_tokens if self.budget_tokens is not None else profile.budget_tokens(self.input_ratio)


UnitDecision = Literal["kept", "pinned", "dropped"]  # what build_context did with one unit (chapter 03)
OLDER, NOT_COUNTED = "older than a unit that did not fit", "not counted (older than the cut)"  # past the cut


@dataclass(frozen=True)
class UnitReport:
    """What happened to one unit: ``decision`` and a one-line ``reason``; ``tokens`` under the meter, or None for
    a unit never counted: one past the cut (reason :data:`NOT_COUNTED`) or where ``max_units`` stopped the walk.
    ``build_context(..., full_report=True)`` counts every unit. Chapter 03."""

    unit: int
    kind: str
    first_id: str
    messages: int
    tokens: int | None
    decision: UnitDecision
    reason: str

    @property
    def tokens_text(self) -> str:  # as the tables show it: "1,234", or "—" for a unit not counted
        return "—" if self.tokens is None else f"{self.tokens:,}"


@dataclass(frozen=True)
class Context:
    """A request's contents and the account of how they were chosen. Token fields (under ``counter``): ``tools_tokens``,
    ``system_tokens``, ``head_tokens`` (an inferred static head, 0 unless the transcript lacked system and tools),
    ``overhead_tokens`` (per request), ``message_tokens`` (the kept units); ``total_tokens``, their sum, never exceeds
    ``budget_tokens`` when built by :func:`build_context`. ``report``: a :class:`UnitReport` per unit. Chapter 03."""

    system: tuple[str, ...]
    tools: tuple[ToolSpec, ...]
    messages: tuple[Message, ...]
    profile: ModelProfile
    counter: str
    budget_tokens: int
    tools_tokens: int
    system_tokens: int
    head_tokens: int
    overhead_tokens: int
    message_tokens: int
    report: tuple[UnitReport, ...] = ()
    notes: tuple[str, ...] = field(default=())

    @property
    def window_tokens(self) -> int:
        return self.profile.context_window

    @property
    def total_tokens(self) -> int:
        return self.tools_tokens + self.system_tokens + self.head_tokens + self.overhead_tokens + self.message_tokens

    @property
    def free_tokens(self) -> int:
        return self.budget_tokens - self.total_tokens

    def kept(self) -> list[UnitReport]:
        return [r for r in self.report if r.decision != "dropped"]

    def dropped(self) -> list[UnitReport]:
        return [r for r in self.report if r.decision == "dropped"]

    def breakdown(self) -> dict[str, int]:
        """The token bar: ``{"tools", "system", "head", "kept", "free"}`` in tokens, summing to the budget."""
        return {"tools": self.tools_tokens, "system": self.system_tokens + self.overhead_tokens,
                "head": self.head_tokens, "kept": self.message_tokens, "free": max(0, self.free_tokens)}

    def summary_line(self) -> str:
        return (f"{len(self.messages)} messages in {len(self.kept())} units kept, {len(self.dropped())} units "
                f"dropped; {self.total_tokens:,} / {self.budget_tokens:,} tokens ({self.counter})")

    def __str__(self) -> str:  # notes and reasons quote ids from the file: shown escaped, one line each
        lines = [shown(self.summary_line()), "  " + "  ".join(f"{k}={v:,}" for k, v in self.breakdown().items())]
        lines += [f"  note: {shown(n)}" for n in self.notes]
        lines.append(f"  {'unit':>5} {'kind':<9} {'msgs':>4} {'tokens':>8}  decision  reason")
        lines += [f"  {r.unit:>5} {r.kind:<9} {r.messages:>4} {r.tokens_text:>8}  {r.decision:<8}  {shown(r.reason)}"
                  for r in self.report]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        colour = {"kept": "#2e7d32", "pinned": "#1565c0", "dropped": "#9e9e9e"}
        rows = "".join(
            f"<tr style='color:{colour[r.decision]}'><td>{r.unit}</td><td>{html.escape(r.kind)}</td>"
            f"<td>{r.messages}</td><td style='text-align:right'>{r.tokens_text}</td><td>{r.decision}</td>"
            f"<td>{shown(r.reason, html=True)}</td></tr>" for r in self.report)
        notes = "".join(f"<li>{shown(n, html=True)}</li>" for n in self.notes)
        return (f"<div><b>{shown(self.summary_line(), html=True)}</b><ul>{notes}</ul>"
                "<table><tr><th>unit</th><th>kind</th><th>msgs</th><th>tokens</th><th>decision</th><th>reason</th></tr>"
                f"{rows}</table></div>")


def pins_for(users: Sequence[int], policy: BudgetPolicy) -> dict[int, str]:
    """Unit index -> why it is pinned, from the units a person's message opens. Chapter 03.
    ``[0, 4, 9]``, both pins on → ``{0: "pinned: first task message", 9: "pinned: newest user message"}``."""
    pins = {users[0]: "pinned: first task message"} if policy.pin_first_task and users else {}
    if policy.pin_newest_user and users:
        pins[users[-1]] = "pinned: newest user message"
    return pins


@dataclass(frozen=True)
class FixedPart:
    """What every request sends before its messages, in tokens: the tool definitions, the system prompt, an
    inferred static head and the profile's per-request overhead; ``total_tokens`` is their sum. Chapter 03."""

    tools_tokens: int
    system_tokens: int
    head_tokens: int
    overhead_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.tools_tokens + self.system_tokens + self.head_tokens + self.overhead_tokens


def fixed_part(conversation: Conversation, profile: ModelProfile, meter: MessageMeter, head_tokens: int) -> FixedPart:
    """The fixed part of ``conversation``'s requests as build_context counts it (``head_tokens``: an inferred static
    head, 0 for none, which holds the tool-use prompt already: a tool a strategy adds does not pay it). Chapter 03."""
    tools_t = meter.tools(conversation.tools)
    if head_tokens and conversation.tools:
        tools_t -= profile.tool_system_tokens
    return FixedPart(tools_t, meter.system(conversation.system), head_tokens, profile.per_request_tokens)


def check_fixed_part(tools_t: int, system_t: int, head_t: int, profile: ModelProfile, budget: int) -> int:
    """The fixed part's tokens (tools + system + inferred head + request overhead). Raises BudgetError naming
    each piece when it alone is over ``budget`` (no choice of messages can help then). Chapter 03."""
    fixed = FixedPart(tools_t, system_t, head_t, profile.per_request_tokens).total_tokens
    if fixed > budget:
        raise BudgetError(
            f"The fixed part alone needs {fixed:,} tokens (tools {tools_t:,} + system {system_t:,} + head {head_t:,} "
            f"+ request overhead {profile.per_request_tokens}) but the budget is {budget:,}. Raise the budget "
            "or the window, or shorten the system prompt or the tool definitions.", needed=fixed, budget=budget)
    return fixed


@runtime_checkable
class ContextMemory(Protocol):
    """The slot for a faster build: a meter that remembers the histories it built contexts from (``fast/``); ``recall``
    returns the Context build_context would build (as ``full_report`` asks), or None to let it build. Chapter 03."""

    def recall(self, conversation: Conversation, policy: BudgetPolicy, profile: ModelProfile,
               full_report: bool = False) -> Context | None: ...


def build_context(conversation: Conversation, policy: BudgetPolicy | None = None, *,
                  profile: ModelProfile | None = None, meter: MessageMeter | None = None,
                  full_report: bool = False) -> Context:
    """Build the context for the next model call of ``conversation`` under a token budget.

    ``[S, U, A(c1), T(c1), A, U2]`` with a budget that holds only the newest two units → ``[A, U2]`` (``[U2]`` for
    a profile that needs a user message first). Only pinned units and those the walk tries to fit are counted; older
    ones are reported "not counted (older than the cut)", ``tokens`` None, unless ``full_report=True``. The kept
    messages and all token fields are the same either way.

    Raises BudgetError when the fixed part (tools + system + head + overhead) or the newest unit with the pinned
    messages exceeds the budget, naming the numbers; CtxlabError for a conversation with no messages. Never returns
    an empty or system-only context. Chapter 03.
    """
    policy = policy or BudgetPolicy()
    profile = profile or profile_for(conversation.model, conversation.provider)
    meter = meter or MessageMeter(profile)
    recalled = meter.recall(conversation, policy, profile, full_report) if isinstance(meter, ContextMemory) else None
    if recalled is not None:  # a meter that remembers earlier calls knew the answer (the same Context)
        return recalled
    budget = policy.budget_for(profile)
    notes = [n for n in (profile.tokenizer_note,) if n]
    messages = [m for m in conversation.messages if m.origin != "meta"]
    if len(messages) < len(conversation.messages):
        notes.append(f"{len(conversation.messages) - len(messages)} meta messages are never sent and were left out")
    if not messages:
        raise CtxlabError(f"Conversation {conversation.id!r} has no messages to send; a context needs at least one.")
    head_t = conversation.inferred_head_tokens
    if head_t is None:  # no system prompt or tools recorded: size them from the first recorded usage
        inferred = infer_static_head(conversation, meter)
        head_t = inferred.tokens if inferred else 0
    if head_t:
        notes.append(f"static head of {head_t:,} tokens inferred from recorded usage (not in the transcript)")
    part = fixed_part(conversation, profile, meter, head_t)
    fixed = check_fixed_part(part.tools_tokens, part.system_tokens, head_t, profile, budget)

    units = group_units(messages, policy.granularity, policy.unanswered)
    paired = pairing_notes(find_orphans(messages), policy.unanswered)
    if not units:
        raise CtxlabError(f"Conversation {conversation.id!r} has nothing to send: {'; '.join(paired)}.")
    notes += paired
    last_user = max((u.start for u in units if u.first.is_real_user), default=-1)
    tokens: dict[int, int] = {}  # unit index -> tokens: each unit is counted when the build first needs it
    def count(i: int) -> int:  # a unit's tokens, thinking counted by position (chapter 01)
        if i not in tokens:
            tokens[i] = sum(meter.message(m, thinking_counts(profile, units[i].start + k, last_user))
                            for k, m in enumerate(units[i].messages))
        return tokens[i]
    for i in range(len(units) if full_report else 0):  # a full report counts every unit first
        count(i)

    pins = pins_for([u.index for u in units if u.kind in ("user", "turn") and u.first.is_real_user], policy)
    newest = units[-1].index
    must = {newest: "newest unit", **pins}
    if pins.get(units[0].index) == "pinned: first task message" and fixed + sum(count(i) for i in must) > budget:
        del must[units[0].index], pins[units[0].index]
        notes.append("the first task message is pinned but does not fit; it was dropped")
    must_t = sum(count(i) for i in must)
    if fixed + must_t > budget:
        what = " + ".join(f"{units[i].label()} {tokens[i]:,}" for i in sorted(must))
        raise BudgetError(
            f"The newest unit and the pinned messages need {fixed + must_t:,} tokens, over the budget of {budget:,}: "
            f"{must_t:,} tokens ({what}) on top of the fixed {fixed:,}. Prune or page the largest message of the "
            f"newest unit, {max(units[newest].messages, key=meter.message).where()} (chapter 05), or raise the budget.",
            needed=fixed + must_t, budget=budget)

    decision: dict[int, tuple[UnitDecision, str]] = {i: ("pinned" if i in pins else "kept", w) for i, w in must.items()}
    room, kept_count = budget - fixed - must_t, len(must)
    for u in (u for u in reversed(units) if u.index not in must):  # the walk, newest first, to the cut
        if policy.max_units is not None and kept_count >= policy.max_units:
            decision[u.index] = ("dropped", f"max_units={policy.max_units} reached")
            break
        if count(u.index) > room:
            decision[u.index] = ("dropped", f"needs {tokens[u.index]:,}, {room:,} left")
            break
        decision[u.index], room, kept_count = ("kept", "fits"), room - tokens[u.index], kept_count + 1
    for u in units:  # past the cut: counted only for a full report (or as a first task that did not fit)
        decision.setdefault(u.index, ("dropped", OLDER if u.index in tokens else NOT_COUNTED))

    for u in units if profile.requires_user_first else ():  # a provider that needs a user message first
        if decision[u.index][0] == "dropped":
            continue
        if u.first.role == "user" or u.index == newest:
            break  # a user message comes first now, or nothing but the newest unit is left (it stays)
        decision[u.index] = ("dropped", "the provider needs a user message first")

    kept = [u for u in units if decision[u.index][0] != "dropped"]
    out = tuple(m for u in kept for m in u.messages)
    orphans = [o for o in find_orphans(out) if not o.kind.startswith("duplicate")]  # a repeat is as recorded
    if orphans:  # an invariant of the algorithm: reaching this is a ctxlab bug, not bad input
        raise AssertionError(f"build_context produced orphans: {orphans}")
    report = tuple(UnitReport(u.index, u.kind, u.first.id, len(u.messages), tokens.get(u.index), *decision[u.index])
                   for u in units)
    return Context(system=conversation.system, tools=conversation.tools, messages=out, profile=profile,
                   counter=meter.counter.name, budget_tokens=budget, tools_tokens=part.tools_tokens,
                   system_tokens=part.system_tokens, head_tokens=head_t, overhead_tokens=part.overhead_tokens,
                   message_tokens=sum(tokens[u.index] for u in kept), report=report, notes=tuple(notes))
