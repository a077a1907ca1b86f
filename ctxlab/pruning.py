"""Pruning (剪枝): keep the head and the tail of a large tool result, drop the middle for good.

A pruned result reads ``head + "[... 1,234 tokens omitted ...]" + tail``. The start of a result
usually says what ran and the first error; the end says how it finished. The middle is gone —
unlike paging (``paging.py``), nothing is stored, so nothing can be read back.

Three ideas, each a function or a class:

* :func:`prune_text` — a text to a token budget under the chosen counter. It cuts on token
  boundaries, backs off to whole characters (a byte-level BPE token can end inside a Chinese
  character or an emoji) and re-counts the final string, marker included, so it never exceeds
  the budget. An estimator counter (``chars/3``) has no tokens to cut on: it cuts characters.
* :class:`ArrivalCap` — a fixed per-tool limit applied once, when a result is recorded. It
  depends only on the result and its tool's limit, never on the history's size, so the capped
  result renders to the same bytes on every later call and stays cacheable.
* :class:`PrunedStrategy` — ``budgeted`` over a history whose results were capped on arrival;
  when the newest unit alone is over the budget, its tool results are pruned until it fits.

Simplified on purpose: cuts fall on tokens, not on lines or grapheme clusters (a family emoji
may lose a member, never a byte); a message's text parts share its budget by water-filling.
Taught in chapter 05.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from ctxlab.base import validate
from ctxlab.tables._offline_encodings import get_encoding
from ctxlab.io.codec import message_from_dict, message_to_dict
from ctxlab.context import BudgetPolicy, Context, build_context
from ctxlab.base.errors import BudgetError, CtxlabError
from ctxlab.interactions import group_units
from ctxlab.messages import Conversation, Entry, Message, TextPart, ToolSpec
from ctxlab.tables.profiles import ModelProfile
from ctxlab.strategies import Call, Decision
from ctxlab.tokens import MessageMeter, TiktokenCounter, TokenCounter, infer_static_head

DEFAULT_MARKER = "\n[... {omitted:,} tokens omitted ...]\n"
_ROUNDS = 16  # re-count rounds before prune_text falls back to the marker alone (always fits)


class PruneBudgetError(BudgetError):
    """The budget cannot hold the omission marker plus one token of the text."""


@dataclass(frozen=True)
class PrunedText:
    """A pruned text and its account, in tokens under the counter used.

    ``head_tokens`` / ``tail_tokens`` count the kept ends, ``omitted_tokens`` the dropped middle,
    ``original_tokens`` the whole input. Unpruned text: head = original, the rest 0.
    """

    text: str
    head_tokens: int
    tail_tokens: int
    omitted_tokens: int
    original_tokens: int

    @property
    def pruned(self) -> bool:
        return self.omitted_tokens > 0


class _Cutter:
    """A text cut by its counter's units: tiktoken tokens, or characters for an estimator.

    ``_Cutter("上下文", o200k).head(1)`` → ``"上下"`` (one token holds two characters).
    """

    def __init__(self, text: str, counter: TokenCounter) -> None:
        self.text = text
        name = getattr(counter, "encoding_name", None)
        self.encoding = get_encoding(name) if name in ("o200k_base", "cl100k_base") else None
        self.units: Sequence[Any] = (self.encoding.encode(text, disallowed_special=())
                                     if self.encoding else text)

    def __len__(self) -> int:
        return len(self.units)

    def span(self, lo: int, hi: int) -> str:
        """Units ``lo:hi`` as a string, shrunk inward to whole characters."""
        if self.encoding is None:
            return self.text[lo:hi]
        while lo < hi:
            data = self.encoding.decode_bytes(self.units[lo:hi])
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError as bad:
                # Back off to a character boundary: a broken start drops a token in front,
                # a character cut short at the end drops the last token (a character is <= 4 bytes).
                if bad.start == 0:
                    lo += 1
                else:
                    hi -= 1
        return ""

    def head(self, n: int) -> str:
        return self.span(0, min(n, len(self))) if n > 0 else ""

    def tail(self, n: int) -> str:
        return self.span(max(0, len(self) - n), len(self)) if n > 0 else ""


def prune_text(text: str, budget_tokens: int, counter: TokenCounter, *, head_share: float = 0.5,
               marker: str = DEFAULT_MARKER) -> PrunedText:
    """Head + marker + tail of ``text`` within ``budget_tokens`` under ``counter``.

    A 150-token log at budget 40 → its first ~14 tokens, ``"[... 122 tokens omitted ...]"``,
    its last ~14. ``head_share`` is the head's part of the kept tokens (0.5 = even, 1.0 = head
    only). ``marker`` is formatted with ``omitted`` (an int). Text within budget comes back
    unchanged. Raises :class:`PruneBudgetError` when the budget is under marker + 1 token, and
    CtxlabError (a ValueError) naming the argument unless ``budget_tokens`` is a whole number of
    tokens (0 or more) and ``head_share`` a ratio in [0, 1]. Chapter 05.
    """
    budget_tokens = validate.tokens("budget_tokens", budget_tokens, allow_zero=True, allow_none=False)
    head_share = validate.ratio("head_share", head_share, lo_open=False)
    original = counter.count(text)
    if original <= budget_tokens:
        return PrunedText(text, original, 0, 0, original)
    floor = counter.count(marker.format(omitted=original)) + 1
    if budget_tokens < floor:
        raise PruneBudgetError(
            f"Cannot prune a {original:,}-token text to {budget_tokens:,} tokens: the omission marker alone "
            f"needs {floor - 1:,} tokens under {counter.name}, so the budget must be at least {floor:,}.",
            needed=floor, budget=budget_tokens)
    cut = _Cutter(text, counter)
    per_token = len(cut) / original  # units per counted token: 1 for exact tiktoken, ~N for chars/N
    keep = int((budget_tokens - floor + 1) * per_token)  # units for head + tail, before re-counting
    for attempt in range(_ROUNDS):
        if attempt == _ROUNDS - 1:
            keep = 0  # last round: the marker alone, which fits by the floor check
        n_head = round(keep * head_share)
        head, tail = cut.head(n_head), cut.tail(keep - n_head)
        omitted = counter.count(text[len(head): len(text) - len(tail)])
        out = head + marker.format(omitted=omitted) + tail
        used = counter.count(out)  # re-count: tokens can merge across the joins
        if used <= budget_tokens:
            return PrunedText(out, counter.count(head), counter.count(tail), omitted, original)
        keep = max(0, keep - max(1, math.ceil((used - budget_tokens) * per_token)))
    raise AssertionError("unreachable: the marker alone fits the budget")  # pragma: no cover


def fair_shares(sizes: Sequence[int], budget: int) -> list[int]:
    """Water-filling: parts under an even share keep their size, the big ones split the rest.

    ``fair_shares([10, 500, 800], 310)`` → ``[10, 150, 150]``. Chapter 05.
    """
    shares = [0] * len(sizes)
    left = budget
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    for k, i in enumerate(order):
        shares[i] = min(sizes[i], left // (len(order) - k))
        left -= shares[i]
    return shares


def prune_message(msg: Message, budget_tokens: int, counter: TokenCounter, *, head_share: float = 0.5,
                  marker: str = DEFAULT_MARKER) -> Message:
    """The message with its text parts pruned to ``budget_tokens`` in total (parts' text only).

    Non-text parts (images) and every field (id, tool_call_id, ...) are kept; a message already
    within budget is returned as is (the same object). Arguments are checked as by
    :func:`prune_text`. Chapter 05.
    """
    budget_tokens = validate.tokens("budget_tokens", budget_tokens, allow_zero=True, allow_none=False)
    head_share = validate.ratio("head_share", head_share, lo_open=False)
    where = [k for k, p in enumerate(msg.parts) if isinstance(p, TextPart)]
    sizes = [counter.count(msg.parts[k].text) for k in where]
    if sum(sizes) <= budget_tokens:
        return msg
    parts = list(msg.parts)
    for k, size, share in zip(where, sizes, fair_shares(sizes, budget_tokens)):
        if size > share:
            parts[k] = TextPart(prune_text(parts[k].text, share, counter, head_share=head_share,
                                           marker=marker).text)
    return replace(msg, parts=tuple(parts))


def text_tokens(msg: Message, counter: TokenCounter) -> int:
    """Tokens of a message's text parts (no per-message overhead). Chapter 05."""
    return sum(counter.count(p.text) for p in msg.parts if isinstance(p, TextPart))


@dataclass(frozen=True)
class ArrivalCap:
    """A fixed per-tool limit applied to a tool result once, when it is recorded.

    ``ArrivalCap({"bash": 2_000}, default_tokens=4_000).cap(result)`` → the result pruned to its
    tool's limit. The counter is fixed here (not taken from the model of the call), so the same
    result caps to the same bytes whatever the session, the call or the history's size. Limits are
    positive whole numbers of tokens and ``head_share`` a ratio in [0, 1], else CtxlabError (a
    ValueError) naming the field. Chapter 05.
    """

    limits: Mapping[str, int] = field(default_factory=dict)  # tool name -> tokens
    default_tokens: int = 4_000
    counter: TokenCounter = field(default_factory=lambda: TiktokenCounter("o200k_base"))
    head_share: float = 0.5

    def __post_init__(self) -> None:
        if not isinstance(self.limits, Mapping):
            raise CtxlabError(f"limits must map tool names to tokens, e.g. {{'bash': 2000}} "
                              f"(got {type(self.limits).__name__})")
        validate.settle(self, limits={name: validate.tokens(f"limits[{name!r}]", n, allow_none=False)
                                      for name, n in self.limits.items()},
                        default_tokens=validate.tokens("default_tokens", self.default_tokens, allow_none=False),
                        head_share=validate.ratio("head_share", self.head_share, lo_open=False))

    def limit_for(self, tool_name: str | None) -> int:
        return self.limits.get(tool_name or "", self.default_tokens)

    def cap(self, msg: Message) -> Message:
        """A tool result within its limit (other roles unchanged). Chapter 05."""
        if msg.role != "tool":
            return msg
        return prune_message(msg, self.limit_for(msg.tool_name), self.counter, head_share=self.head_share)


@dataclass
class _Step:
    """What one ``decide`` call reads and collects: the history's replacements, notes, new entries."""

    history: Conversation
    notes: list[str] = field(default_factory=list)
    entries: list[Entry] = field(default_factory=list)
    # message id -> the replacement (a codec dict) a pruned_result / paged_result entry recorded
    replaced: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.replaced = {e.data["message_id"]: e.data["replacement"] for e in self.history.entries
                         if e.kind in ("pruned_result", "paged_result") and "replacement" in e.data}


def replacement_entry(kind: str, entry_id: str, original: Message, shown: Message, **data: Any) -> Entry:
    """A ``pruned_result`` / ``paged_result`` entry: from now on the context shows ``shown``.

    The session keeps ``original`` unchanged; ``strategies.substituted`` applies the replacement.
    """
    return Entry(kind, entry_id, timestamp=original.timestamp, thread=original.thread,  # type: ignore[arg-type]
                 data={"message_id": original.id, **data, "replacement": message_to_dict(shown)})


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
    shown: dict[int, tuple[Message, Message]] = field(default_factory=dict, repr=False)  # id(result) -> (result, shown)
    emitted: dict[str, int] = field(default_factory=dict, repr=False)  # entry id prefix -> entries so far

    # ---- hooks (paging.PagedStrategy overrides them) ----
    def tools(self, history: Conversation) -> tuple[ToolSpec, ...]:
        return history.tools

    def arrive(self, msg: Message, step: _Step) -> Message:
        """What a new tool result becomes: capped to its tool's limit (no entry: the cap is a pure rule)."""
        capped = self.cap.cap(msg)
        if capped is not msg:
            step.notes.append(f"capped on arrival: {msg.id} ({msg.tool_name}) from "
                              f"{text_tokens(msg, self.cap.counter):,} to {text_tokens(capped, self.cap.counter):,} tokens")
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

    # ---- the decision ----
    def _shown(self, msg: Message, step: _Step) -> Message:
        hit = self.shown.get(id(msg))
        if hit is not None and hit[0] is msg:  # the stored message keeps its id from being reused
            return hit[1]
        done = step.replaced.get(msg.id)
        out = message_from_dict(done) if done is not None else self.arrive(msg, step)
        self.shown[id(msg)] = (msg, out)
        return out

    def decide(self, history: Conversation, call: Call, profile: ModelProfile, meter: MessageMeter) -> Decision:
        step = _Step(history)
        items = tuple(self._shown(it, step) if isinstance(it, Message) and it.role == "tool" else it
                      for it in history.items)
        head = history.inferred_head_tokens
        if head is None:  # infer from the recorded messages, not the capped ones
            inferred = infer_static_head(history, meter)
            head = inferred.tokens if inferred else 0
        view = replace(history, items=items, tools=self.tools(history), inferred_head_tokens=head)
        ctx = self._fit(view, history, meter, profile, step)
        notes = tuple(step.notes)
        return Decision(replace(ctx, notes=ctx.notes + notes), new_entries=tuple(step.entries), notes=notes)

    def _fit(self, view: Conversation, history: Conversation, meter: MessageMeter, profile: ModelProfile,
             step: _Step) -> Context:
        """build_context; if the newest unit alone is over the budget, shrink its tool results and retry."""
        recorded = {m.id: m for m in history.messages if m.role == "tool"}
        rescued: dict[str, tuple[Message, Entry, str]] = {}  # message id -> (shown, entry, note), kept on success
        for attempt in range(5):
            try:
                ctx = build_context(view, self.policy, profile=profile, meter=meter)
                break
            except BudgetError as err:
                swap = self._rescue(err, view, recorded, meter, profile, rescued) if attempt < 4 else None
                if not swap:
                    raise
                view = replace(view, items=tuple(swap.get(id(it), it) for it in view.items))
        for mid, (new, entry, note) in rescued.items():  # it fits: the rescue becomes state
            self.shown[id(recorded[mid])] = (recorded[mid], new)
            step.entries.append(entry)
            step.notes.append(note)
        return ctx

    def _rescue(self, err: BudgetError, view: Conversation, recorded: dict[str, Message], meter: MessageMeter,
                profile: ModelProfile, rescued: dict[str, tuple[Message, Entry, str]]) -> dict[int, Message] | None:
        """Shrink the newest unit's tool results by the overshoot, shared fairly; None if that cannot help."""
        head = view.inferred_head_tokens or 0
        # as build_context counts it: an inferred head already holds the provider's tool-use prompt
        tools = meter.tools(view.tools) - (profile.tool_system_tokens if head and view.tools else 0)
        fixed = tools + meter.system(view.system) + head + profile.per_request_tokens
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
