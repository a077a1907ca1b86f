"""Chapter 05: pruning and paging — what stays of a large tool result, and what can be read back.

What it holds:

* :func:`checklist_for` — the fact checklist that belongs to a conversation (the sample's, pi's, or none);
* :func:`largest_tool_result` / :func:`chinese_tool_result` — the results the chapter works on;
* :func:`prune_view` — a text pruned to a head and a tail budget (tokens), with the account of what
  stayed (:class:`PruneView`), and :func:`line_kept` — is line N still whole in the pruned text?
* :func:`read_line` — a line fetched back from a page through the ``read_page`` tool, as a model would;
* :func:`mechanism_rows` / :func:`policy_rows` — pruning against paging on one result, measured, and
  the paging policy per tool of a conversation;
* :func:`chinese_rows` — a Chinese text pruned to several budgets: valid UTF-8 and within each budget?
* :class:`RecomputedCapStrategy` — a cap that depends on the history: every large result is pruned to
  a share of the room the rest of the history leaves, recomputed at every call (or, with
  ``recompute=False``, fixed when the result arrives); :func:`cap_comparison` replays it beside
  ``pruned`` (:class:`~ctxlab.pruning.ArrivalCap`) and :func:`rerendered_calls` finds the calls whose
  request shows an earlier message with different bytes;
* :class:`PruneWidget` — head and tail sliders over one result, the paged preview with its handle,
  and a line number read back through ``read_page`` beside the pruned version.

Simplified on purpose: :class:`RecomputedCapStrategy` is a teaching foil, not a recommendation — the
"room left" it divides counts every message except tool results, so it is cheap to compute and
shrinks at every call, which is exactly what breaks the cache.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

from ctxlab.context import BudgetPolicy, build_context
from ctxlab.facts import Fact, load_facts
from ctxlab.messages import Conversation, Message
from ctxlab.paging import DEFAULT_ACTIONS, REASONS, PageStore, PagingPolicy, execute_read_page, page_lines, page_message
from ctxlab.base.safe_text import shown
from ctxlab.pruning import (DEFAULT_MARKER, ArrivalCap, PruneBudgetError, PrunedStrategy, PrunedText, prune_message,
                       prune_text, text_tokens)
from ctxlab.tables.profiles import ModelProfile
from ctxlab.replay import ReplayResult, replay
from ctxlab.strategies import Call, Decision
from ctxlab.tokens import MessageMeter, TiktokenCounter, TokenCounter, infer_static_head
from ctxlab.lab.workbook import DATA, SAMPLE_FACTS

from ctxlab.lab.data import PI_FACTS
_CJK = re.compile(r"[\u3400-\u9fff]")
_EVIDENCE = re.compile(r"(?i)\berror\b|\bfail(?:ed|ure)?\b|\bE\d{3,5}\b|exception|traceback")


def _o200k() -> TokenCounter:
    return TiktokenCounter("o200k_base")


# ---- the results the chapter works on ---------------------------------------------------------------

def checklist_for(conversation: Conversation, candidates: Sequence[Path] = (SAMPLE_FACTS, PI_FACTS)
                  ) -> tuple[list[Fact], Path | None]:
    """The first checklist whose every fact names a message of ``conversation``; ``([], None)`` if none fits.

    The bundled sample → ``data/sample_facts.json``; the shared pi session → ``data/pi_facts.json``.
    Chapters 05 and 06.
    """
    ids = {it.id for it in conversation.items}
    for path in candidates:
        if Path(path).exists():
            facts = load_facts(path)
            if facts and all(f.message_id in ids for f in facts):
                return facts, Path(path)
    return [], None


def largest_tool_result(conversation: Conversation, counter: TokenCounter | None = None) -> Message | None:
    """The tool result with the most text tokens (the first on a tie); None without tool results.

    The bundled sample → ``m069``, a 50,852-character CI log (19,129 o200k tokens). Chapter 05.
    """
    counter = counter or _o200k()
    results = [m for m in conversation.messages if m.role == "tool" and m.text]
    return max(results, key=lambda m: text_tokens(m, counter), default=None)


def chinese_tool_result(conversation: Conversation) -> Message | None:
    """The tool result with the most Chinese characters (the sample: its Chinese README); None if none. Chapter 05."""
    results = [(len(_CJK.findall(m.text)), k, m) for k, m in enumerate(conversation.messages) if m.role == "tool"]
    best = max(results, key=lambda t: (t[0], -t[1]), default=None)
    return best[2] if best and best[0] else None


# ---- pruning one text to a head and a tail budget ---------------------------------------------------

def _shown(text: str) -> str:
    """Tool output as HTML: anything that looks like an API key masked, then control, bidi and invisible
    characters escaped (``\\n`` and ``\\t`` kept), then HTML-escaped (display only)."""
    return shown(text, multiline=True, html=True)


@dataclass(frozen=True)
class PruneView:
    """A text pruned to ``head_budget`` + marker + ``tail_budget`` tokens. Tokens under ``counter``.

    ``budget`` = head budget + the marker's tokens + tail budget; ``total_tokens`` is the pruned
    text's own count (marker included), never above ``budget``. ``head`` / ``tail`` are the kept
    ends as strings (a prefix and a suffix of the original); ``lines_whole`` counts the original's
    lines still whole in them. ``error`` says why nothing could be pruned (budget under the marker).
    """

    head_budget: int
    tail_budget: int
    budget: int
    original_tokens: int
    head_tokens: int
    tail_tokens: int
    omitted_tokens: int
    total_tokens: int
    lines: int
    lines_whole: int
    text: str
    head: str
    tail: str
    marker: str
    error: str = ""

    @property
    def within_budget(self) -> bool:
        return self.total_tokens <= self.budget


def marker_tokens(original_tokens: int, counter: TokenCounter, marker: str = DEFAULT_MARKER) -> int:
    """Tokens of the omission marker for a text of ``original_tokens`` (``[... 17,629 tokens omitted ...]``).
    Chapter 05."""
    return counter.count(marker.format(omitted=original_tokens))


def _line_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) character offsets of each line :func:`~ctxlab.paging.page_lines` numbers from 1."""
    spans, start = [], 0
    for line in page_lines(text):
        spans.append((start, start + len(line)))
        start += len(line) + 1
    return spans


def line_kept(original: str, view: PruneView, line: int) -> bool:
    """Is line ``line`` (1-based) of ``original`` still whole in the pruned text (in its head or its tail)?
    Chapter 05."""
    spans = _line_spans(original)
    if not 1 <= line <= len(spans):
        return False
    start, end = spans[line - 1]
    return end <= len(view.head) or start >= len(original) - len(view.tail)


def _as_view(text: str, pruned: PrunedText, head_budget: int, tail_budget: int, budget: int,
             counter: TokenCounter) -> PruneView:
    """A :class:`PruneView` of ``pruned`` (what :func:`~ctxlab.pruning.prune_text` returned for ``text``)."""
    n_lines = len(page_lines(text))
    if not pruned.pruned:
        return PruneView(head_budget, tail_budget, budget, pruned.original_tokens, pruned.original_tokens, 0, 0,
                         pruned.original_tokens, n_lines, n_lines, text, text, "", "")
    marker = DEFAULT_MARKER.format(omitted=pruned.omitted_tokens)
    head, _, tail = pruned.text.partition(marker)
    view = PruneView(head_budget, tail_budget, budget, pruned.original_tokens, pruned.head_tokens, pruned.tail_tokens,
                     pruned.omitted_tokens, counter.count(pruned.text), n_lines, 0, pruned.text, head, tail, marker)
    cut = len(text) - len(tail)
    return replace(view, lines_whole=sum(1 for a, b in _line_spans(text) if b <= len(head) or a >= cut))


def prune_view(text: str, head_tokens: int, tail_tokens: int, counter: TokenCounter | None = None) -> PruneView:
    """``text`` pruned to its first ``head_tokens`` and last ``tail_tokens`` tokens, with the marker between.

    The budget given to :func:`~ctxlab.pruning.prune_text` is head + marker + tail and the head's share
    is head / (head + tail); the re-count may keep a token less at a join. A text within the budget
    comes back whole. ``prune_view(log, 1_000, 500)`` on the sample's CI log → 1,000 + 11 + 500 =
    1,511 tokens, 17,629 omitted. Chapter 05.
    """
    counter = counter or _o200k()
    original = counter.count(text)
    budget = head_tokens + tail_tokens + marker_tokens(original, counter)
    share = head_tokens / (head_tokens + tail_tokens) if head_tokens + tail_tokens else 0.5
    try:
        pruned = prune_text(text, budget, counter, head_share=share)
    except PruneBudgetError as err:
        n_lines = len(page_lines(text))
        return PruneView(head_tokens, tail_tokens, budget, original, 0, 0, original, 0, n_lines, 0, "", "", "", "",
                         str(err))
    return _as_view(text, pruned, head_tokens, tail_tokens, budget, counter)


def read_line(store: PageStore, handle: str, line: int) -> str:
    """Line ``line`` of a page, read through the ``read_page`` tool as a model would call it; the tool's
    header line removed. An error comes back as the tool's ``error: ...`` text. Chapter 05."""
    out = execute_read_page(store, {"handle": handle, "start_line": line, "end_line": line})
    return out if out.startswith("error:") else out.partition("\n")[2]


def evidence_line(text: str, view: PruneView, needles: Sequence[str] = ()) -> int:
    """A line worth reading back: the first line lost to pruning that holds one of ``needles`` (checklist
    facts), else one that looks like an error, else the middle line. The sample's CI log → 536 (``E1234``).
    Chapter 05."""
    lines = page_lines(text)
    lost = [k for k in range(1, len(lines) + 1) if not line_kept(text, view, k)]
    for pick in ([k for k in lost if any(n in lines[k - 1] for n in needles)],
                 [k for k in lost if _EVIDENCE.search(lines[k - 1])], lost):
        if pick:
            return pick[0]
    return max(1, len(lines) // 2)


# ---- pruning against paging, measured ---------------------------------------------------------------

MECHANISM_COLUMNS = ("mechanism", "stored", "middle readable", "in context (bytes)", "tokens in context",
                     "tokens saved", "lines readable")


@dataclass(frozen=True)
class MechanismRow:
    """One way of handling a result: what the context holds (UTF-8 bytes, tokens) and what can be read."""

    mechanism: str
    stored_bytes: int  # bytes written to a page store (0: nothing stored)
    recoverable: bool  # every line can still be read (in view, or through read_page when stored)
    context_bytes: int
    context_tokens: int
    original_tokens: int
    lines_readable: int  # lines a model can still read, in view or through read_page
    lines: int

    def as_row(self) -> tuple[Any, ...]:
        readable = "yes (read_page)" if self.stored_bytes else "yes, in view" if self.recoverable else "no, gone"
        return (self.mechanism, f"{self.stored_bytes:,} bytes" if self.stored_bytes else "no", readable,
                self.context_bytes, self.context_tokens,
                self.original_tokens - self.context_tokens, f"{self.lines_readable:,} of {self.lines:,}")


def mechanism_rows(msg: Message, cap: ArrivalCap | None = None, paging: PagingPolicy | None = None,
                   counter: TokenCounter | None = None) -> list[MechanismRow]:
    """The result as recorded, pruned by ``cap`` and paged under ``paging``'s head and tail: one row each.

    Measured, not declared: bytes and tokens of what the context shows, bytes the store holds, and the
    lines a model can still read (whole lines in view; every line for a page). Chapter 05.
    """
    cap, paging, counter = cap or ArrivalCap(), paging or PagingPolicy(), counter or _o200k()
    text, lines = msg.text, len(page_lines(msg.text))
    original = counter.count(text)
    limit = cap.limit_for(msg.tool_name)
    pruned = _as_view(text, prune_text(text, limit, counter, head_share=cap.head_share), 0, 0, limit, counter)
    store = PageStore.in_memory()
    shown, entry = page_message(msg, store, head_tokens=paging.head_tokens, tail_tokens=paging.tail_tokens,
                                counter=counter)
    stored = len(store.get(entry.data["handle"]).encode("utf-8", "surrogatepass"))

    def size(t: str) -> int:
        return len(t.encode("utf-8", "surrogatepass"))

    return [MechanismRow("as recorded", 0, True, size(text), original, original, lines, lines),
            MechanismRow(f"pruned (cap {limit:,} tokens)", 0, not pruned.omitted_tokens, size(pruned.text),
                         pruned.total_tokens,
                         original, pruned.lines_whole, lines),
            MechanismRow(f"paged (head {paging.head_tokens:,} + tail {paging.tail_tokens:,})", stored, True,
                         size(shown.text), counter.count(shown.text), original, lines, lines)]


POLICY_COLUMNS = ("tool", "kind", "action", "results", "over the cap", "largest (tokens)")
REASON_COLUMNS = ("kind", "action", "why")


def policy_rows(conversation: Conversation, paging: PagingPolicy | None = None, cap: ArrivalCap | None = None,
                counter: TokenCounter | None = None) -> list[tuple[Any, ...]]:
    """Per tool of the conversation: its kind and action under ``paging``, how many results it returned,
    how many are over ``cap``'s limit, and the largest (tokens). Chapter 05."""
    paging, cap, counter = paging or PagingPolicy(), cap or ArrivalCap(), counter or _o200k()
    sizes: dict[str, list[int]] = {}  # tool name -> text tokens of each of its results
    for m in conversation.messages:
        if m.role == "tool":
            sizes.setdefault(m.tool_name or "(unnamed)", []).append(text_tokens(m, counter))
    declared = [t.name for t in conversation.tools]
    rows = []
    for name in declared + [n for n in sizes if n not in declared]:
        found = sizes.get(name, [])
        rows.append((name, paging.kind_of(name), paging.action_of(name), len(found),
                     sum(n > cap.limit_for(name) for n in found), max(found, default=0)))
    return rows


def reason_rows(paging: PagingPolicy | None = None) -> list[tuple[str, str, str]]:
    """Per kind of tool: the action under ``paging`` and the reason written down for the default
    (:data:`~ctxlab.paging.REASONS`); an overridden action says so. Chapter 05."""
    paging = paging or PagingPolicy()
    rows = []
    for kind, why in REASONS.items():
        action = paging.actions.get(kind, "page")
        rows.append((kind, action, why.split(":", 1)[1].strip() if action == DEFAULT_ACTIONS[kind]
                     else "overridden: not the default"))
    return rows


def cited_line(conversation: Conversation, msg: Message, texts: Sequence[str]) -> int | None:
    """A line of ``msg`` that one of ``texts`` cites as ``path:N``, where ``path`` occurs in the arguments of
    the call that produced ``msg`` (the sample: ``logs/ci-2025-10-14.log:536``, the log the CI command
    wrote with ``tee``) → N; None when no text cites it. Chapter 05."""
    call = next((c for m in conversation.messages for c in m.tool_calls if c.id == msg.tool_call_id), None)
    if call is None:
        return None
    for text in texts:
        found = re.fullmatch(r"\s*([\w./-]+):(\d+)\s*", text)
        if found and found.group(1) in call.arguments and 1 <= int(found.group(2)) <= len(page_lines(msg.text)):
            return int(found.group(2))
    return None


# ---- Chinese ----------------------------------------------------------------------------------------

CHINESE_COLUMNS = ("budget", "tokens", "within budget", "valid UTF-8", "characters kept", "head … tail")


def valid_utf8(text: str) -> bool:
    """True when ``text`` encodes to UTF-8 and back unchanged and holds no replacement character (U+FFFD).
    Chapter 05."""
    try:
        return text.encode("utf-8").decode("utf-8") == text and "\ufffd" not in text
    except UnicodeError:
        return False


def chinese_rows(text: str, budgets: Sequence[int], counter: TokenCounter | None = None) -> list[tuple[Any, ...]]:
    """``text`` pruned to each budget: tokens, within the budget, valid UTF-8, characters kept, and the
    first and last few characters around the marker. A budget under the marker's floor says so. Chapter 05."""
    counter = counter or _o200k()
    rows = []
    for budget in budgets:
        try:
            p = prune_text(text, budget, counter)
        except PruneBudgetError as err:
            rows.append((budget, "—", "—", "—", "—", f"refused: needs at least {err.needed:,} tokens"))
            continue
        head, _, tail = p.text.partition(DEFAULT_MARKER.format(omitted=p.omitted_tokens)) if p.pruned else \
            (p.text, "", "")
        ends = f"{head[-8:]!r} … {tail[:8]!r}" if p.pruned else "(whole text)"
        rows.append((budget, counter.count(p.text), counter.count(p.text) <= budget, valid_utf8(p.text),
                     len(head) + len(tail), ends.replace("\\n", "⏎").replace("\\t", "⇥")))
    return rows


# ---- a cap recomputed at every call -----------------------------------------------------------------

@dataclass
class RecomputedCapStrategy:
    """Prune every tool result to ``share`` of the room the rest of the history leaves — recomputed each call.

    The room = the budget minus tools, system prompt, static head, per-request overhead and every
    message that is not a tool result; the cap is ``max(floor_tokens, share x room)``. As the history
    grows the room shrinks, so the same result is cut a little shorter at every call: its bytes change
    and the prefix cache breaks there. ``recompute=False`` applies the same rule once, when the result
    first appears, and keeps that cut (what :class:`~ctxlab.pruning.ArrivalCap` does with a fixed
    limit). ``replay(conv, RecomputedCapStrategy(share=0.25), window=60_000)``. Chapter 05.
    """

    share: float = 0.25
    floor_tokens: int = 500
    recompute: bool = True
    policy: BudgetPolicy = field(default_factory=BudgetPolicy)
    counter: TokenCounter = field(default_factory=_o200k)  # fixed, like ArrivalCap's
    name: str = ""
    caps: list[int] = field(default_factory=list, repr=False)  # the cap at each call, in call order
    # message id -> (recorded, shown): with recompute=False, the cut made when the result first appeared
    _fixed: dict[str, tuple[Message, Message]] = field(default_factory=dict, repr=False)
    _sizes: dict[int, tuple[Message, int]] = field(default_factory=dict, repr=False)  # id(msg) -> (msg, text tokens)
    # (id(msg), cap) -> (msg, shown): the previous call's cuts, reused when the cap did not move (at the floor)
    _cuts: dict[tuple[int, int], tuple[Message, Message]] = field(default_factory=dict, repr=False)
    _next_cuts: dict[tuple[int, int], tuple[Message, Message]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not 0 < self.share <= 1:
            raise ValueError(f"share is a fraction of the room left, in (0, 1]; got {self.share}")
        self.name = self.name or ("recomputed cap" if self.recompute else "same rule, fixed at arrival")

    def _size(self, msg: Message) -> int:
        hit = self._sizes.get(id(msg))
        if hit is None or hit[0] is not msg:
            hit = self._sizes[id(msg)] = (msg, text_tokens(msg, self.counter))
        return hit[1]

    def cap_tokens(self, history: Conversation, profile: ModelProfile, meter: MessageMeter) -> int:
        """The cap for this call: ``max(floor_tokens, share x room left)``, in tokens."""
        fixed = meter.tools(history.tools) + meter.system(history.system) + (history.inferred_head_tokens or 0) \
            + profile.per_request_tokens
        rest = sum(meter.message(m) for m in history.messages if m.role != "tool" and m.origin != "meta")
        return max(self.floor_tokens, int(self.share * (self.policy.budget_for(profile) - fixed - rest)))

    def _shown(self, msg: Message, cap: int) -> Message:
        if self.recompute:
            if self._size(msg) <= cap:
                return msg
            hit = self._cuts.get((id(msg), cap))
            if hit is None or hit[0] is not msg:
                hit = (msg, prune_message(msg, cap, self.counter))
            self._next_cuts[(id(msg), cap)] = hit
            return hit[1]
        hit = self._fixed.get(msg.id)
        if hit is None or hit[0] is not msg:
            hit = self._fixed[msg.id] = (msg, msg if self._size(msg) <= cap else prune_message(msg, cap, self.counter))
        return hit[1]

    def decide(self, history: Conversation, call: Call, profile: ModelProfile, meter: MessageMeter) -> Decision:
        if history.inferred_head_tokens is None:  # infer from the recorded messages, not the pruned ones
            head = infer_static_head(history, meter)
            history = replace(history, inferred_head_tokens=head.tokens if head else 0)
        cap = self.cap_tokens(history, profile, meter)
        self.caps.append(cap)
        # Newest first, and only as far back as the budget could reach: the backward walk of build_context
        # stops at the first unit that does not fit, so a result older than that is dropped whatever its
        # form. Counting without thinking gives a lower bound of what build_context counts (it is safe).
        # A pinned first task can be kept from beyond that point: then every result is cut.
        items, used = list(history.items), 0
        budget = self.policy.budget_for(profile) if not self.policy.pin_first_task else float("inf")
        for k in range(len(items) - 1, -1, -1):
            it = items[k]
            if not isinstance(it, Message) or it.origin == "meta":
                continue
            if used > budget:
                break
            if it.role == "tool":
                it = items[k] = self._shown(it, cap)
            used += meter.message(it, include_thinking=False)
        self._cuts, self._next_cuts = self._next_cuts, {}
        ctx = build_context(replace(history, items=tuple(items)), self.policy, profile=profile, meter=meter)
        return Decision(ctx, notes=(f"tool results capped at {cap:,} tokens",))


def rerendered_calls(result: ReplayResult) -> list[int]:
    """Calls whose request shows a message the previous call of the thread also sent, with other bytes.

    0 for a strategy whose renderings are fixed; every such call loses the cache from that message on. Chapter 05.
    """
    out, previous = [], {}  # thread -> {message id: digest of its blocks}
    for rec in result.records:
        blocks: dict[str, list[str]] = {}
        for b in rec.request.blocks:
            if b.message_id is not None:
                blocks.setdefault(b.message_id, []).append(b.digest)
        digests = {k: "".join(v) for k, v in blocks.items()}
        before = previous.get(rec.call.thread, {})
        if any(before.get(k, d) != d for k, d in digests.items()):
            out.append(rec.call.index)
        previous[rec.call.thread] = digests
    return out


CAP_COLUMNS = ("strategy", "calls", "prompt", "read", "written", "uncached", "hit rate", "cost", "re-rendered calls")


@dataclass(frozen=True)
class CapRow:
    """One replay's totals (tokens; cost in USD, None if unpriced) and how many calls re-rendered a message."""

    strategy: str
    calls: int
    total_input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    uncached_input_tokens: int
    hit_rate: float
    cost_usd: float | None
    rerendered: int
    error: str = ""

    def as_row(self) -> tuple[Any, ...]:
        cost = "—" if self.cost_usd is None else f"${self.cost_usd:,.4f}"
        return (self.strategy, self.calls, self.total_input_tokens, self.cache_read_tokens, self.cache_write_tokens,
                self.uncached_input_tokens, f"{100 * self.hit_rate:.1f}%", cost,
                self.error[:60] if self.error else self.rerendered)


def cap_strategies(share: float = 0.25, cap_tokens: int = 4_000, baseline: bool = True) -> list[Any]:
    """The caps compared: no cap at all (``budgeted``, with ``baseline``), the library's fixed per-tool cap,
    the share rule fixed at arrival, and the share rule recomputed at every call (fresh objects: strategies
    hold state). Chapter 05."""
    from ctxlab.strategies import BudgetedStrategy

    return [*([BudgetedStrategy(name="no cap (budgeted)")] if baseline else []),
            PrunedStrategy(cap=ArrivalCap(default_tokens=cap_tokens), name=f"arrival cap ({cap_tokens:,})"),
            RecomputedCapStrategy(share=share, recompute=False),
            RecomputedCapStrategy(share=share)]


def cap_comparison(conversation: Conversation, window: int = 60_000, share: float = 0.25, cap_tokens: int = 4_000,
                   provider: str | None = None, baseline: bool = True) -> tuple[list[CapRow], dict[str, ReplayResult]]:
    """Replay :func:`cap_strategies` at ``window``; one :class:`CapRow` each, and the replays by name.

    The sample at 60,000 (Anthropic's rules): the recomputed cap re-renders the CI log at every call
    after it arrives and its hit rate falls far below both fixed caps. Chapter 05.
    """
    from ctxlab.base.errors import CtxlabError

    rows, results = [], {}
    for strategy in cap_strategies(share, cap_tokens, baseline):
        try:
            result = replay(conversation, strategy, window=window, provider=provider)
        except CtxlabError as err:
            rows.append(CapRow(strategy.name, 0, 0, 0, 0, 0, 0.0, None, 0, " ".join(str(err).split())))
            continue
        t = result.ledger.totals()
        results[strategy.name] = result
        rows.append(CapRow(strategy.name, t.calls, t.total_input_tokens, t.cache_read_tokens, t.cache_write_tokens,
                           t.uncached_input_tokens, t.hit_rate, t.cost_usd, len(rerendered_calls(result))))
    return rows, results


def diff_at(result: ReplayResult, call: int, thread: str | None = None) -> tuple[Any, Any, Any]:
    """Call ``call`` of ``thread`` (default: the first call's thread) against the call before it:
    ``(PrefixDiff, its CallRecord, the previous CallRecord)``. Raises ValueError for the first call. Chapter 05."""
    from ctxlab.render import prefix_diff

    thread = thread or result.records[0].call.thread
    mine = [r for r in result.records if r.call.thread == thread]
    k = next(i for i, r in enumerate(mine) if r.call.index == call)
    if k == 0:
        raise ValueError(f"call {call} is the first of thread {thread!r}: nothing to compare with")
    return prefix_diff(mine[k - 1].request, mine[k].request), mine[k], mine[k - 1]


def cap_notes(result: ReplayResult) -> dict[int, int]:
    """call -> the cap :class:`RecomputedCapStrategy` applied at it (read from the replay's notes). Chapter 05."""
    out = {}
    for rec in result.records:
        for note in rec.notes:
            found = re.match(r"tool results capped at ([\d,]+) tokens", note)
            if found:
                out[rec.call.index] = int(found.group(1).replace(",", ""))
    return out


def cap_figure(results: dict[str, ReplayResult]):  # -> plotly Figure
    """Cache read per call, one line per replay: where a recomputed cap falls to the static head. Chapter 05."""
    import plotly.graph_objects as go

    from ctxlab.widgets._plots import figure

    fig = figure("Cache read per call", xaxis_title="call", yaxis_title="tokens read from the cache",
                 legend=dict(orientation="h", y=-0.25))
    for name, result in results.items():
        rows = [r for r in result.ledger.rows if r.message_id is not None]
        fig.add_trace(go.Scatter(x=[r.call for r in rows], y=[r.cache_read_tokens for r in rows], name=name,
                                 mode="lines"))
    return fig


# ---- the widget ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PruneState:
    """What the widget shows: the pruned view, the paged preview (its tokens and handle) and line ``line``
    as recorded, whether the pruned text still holds it whole, and what ``read_page`` returned."""

    view: PruneView
    page_tokens: int
    handle: str
    hidden_lines: str  # "37-610": the lines the page notice names as not shown
    line: int
    original_line: str
    line_in_pruned: bool
    read_back: str

    @property
    def read_back_exact(self) -> bool:
        return self.read_back == self.original_line


STATE_COLUMNS = ("head", "tail", "budget", "head kept", "tail kept", "omitted", "pruned total", "within budget",
                 "lines whole", "paged preview")


def state_row(s: PruneState) -> tuple[Any, ...]:
    """One line of :data:`STATE_COLUMNS`. Chapter 05."""
    v = s.view
    if v.error:
        return (v.head_budget, v.tail_budget, v.budget, 0, 0, 0, 0, "—", 0, s.page_tokens)
    return (v.head_budget, v.tail_budget, v.budget, v.head_tokens, v.tail_tokens, v.omitted_tokens, v.total_tokens,
            v.within_budget, f"{v.lines_whole:,} of {v.lines:,}", s.page_tokens)


class PruneWidget:
    """One large tool result, pruned and paged. Controls: ``head`` and ``tail`` (IntSliders, tokens) and
    ``line`` (a line number to read back).

    ``w = PruneWidget(msg); w.head.value = 2_000; w.state.view.head_tokens`` → 2,000. The pruned text is
    shown with its marker; the paged preview (same head and tail) with its handle; line ``line`` as
    recorded, whether the pruned text still holds it, and what ``read_page`` returns for it. Chapter 05.
    """

    def __init__(self, msg: Message, *, head: int = 1_000, tail: int = 500, line: int | None = None,
                 counter: TokenCounter | None = None, max_tokens: int = 8_000) -> None:
        import ipywidgets as W

        self.msg = msg
        self.counter = counter or _o200k()
        self.store = PageStore.in_memory()
        self.lines = page_lines(msg.text)
        top = max(100, min(max_tokens, self.counter.count(msg.text)))
        style = {"description_width": "initial"}
        self.head = W.IntSlider(value=min(head, top), min=0, max=top, step=50, description="head (tokens)",
                                continuous_update=False, readout_format=",", style=style, layout=W.Layout(width="60%"))
        self.tail = W.IntSlider(value=min(tail, top), min=0, max=top, step=50, description="tail (tokens)",
                                continuous_update=False, readout_format=",", style=style, layout=W.Layout(width="60%"))
        self.line = W.BoundedIntText(value=1, min=1, max=max(1, len(self.lines)), description="read line",
                                     style=style, layout=W.Layout(width="220px"))
        self.controls = W.VBox([self.head, self.tail, self.line])
        self.label = W.HTML()
        self.pruned_view = W.HTML(layout=W.Layout(width="50%"))
        self.paged_view = W.HTML(layout=W.Layout(width="50%"))
        self.line_view = W.HTML()
        self.widget = W.VBox([self.controls, self.label,
                              W.HBox([self.pruned_view, self.paged_view], layout=W.Layout(width="100%")),
                              self.line_view])
        if line is None:
            line = evidence_line(msg.text, prune_view(msg.text, self.head.value, self.tail.value, self.counter))
        self.line.value = min(max(1, line), self.line.max)
        self._paged: dict[tuple[int, int], tuple[Message, str]] = {}  # (head, tail) -> (shown, handle)
        self.state = self.compute(self.head.value, self.tail.value, self.line.value)
        for control in (self.head, self.tail, self.line):
            control.observe(self._on_change, names="value")
        self._render()

    def paged(self, head: int, tail: int) -> tuple[Message, str]:
        """The paged preview for this head and tail, and the page's handle (the same page every time)."""
        if (head, tail) not in self._paged:
            shown, entry = page_message(self.msg, self.store, head_tokens=head, tail_tokens=tail, counter=self.counter)
            self._paged[(head, tail)] = (shown, entry.data["handle"])
        return self._paged[(head, tail)]

    def compute(self, head: int, tail: int, line: int) -> PruneState:
        """The numbers for these settings (pure but for the page store, which only ever holds this one result)."""
        view = prune_view(self.msg.text, head, tail, self.counter)
        shown, handle = self.paged(head, tail)
        found = re.search(r"lines ([\d,]+)-([\d,]+) of", shown.text)
        hidden = f"{found.group(1)}-{found.group(2)}" if found else "none"
        line = min(max(1, line), len(self.lines))
        return PruneState(view, self.counter.count(shown.text), handle, hidden, line, self.lines[line - 1],
                          not view.error and line_kept(self.msg.text, view, line), read_line(self.store, handle, line))

    def _on_change(self, change: dict[str, Any]) -> None:
        self.state = self.compute(self.head.value, self.tail.value, self.line.value)
        self._render()

    def _render(self) -> None:
        s, v = self.state, self.state.view
        pre = "<pre style='white-space:pre-wrap;max-height:320px;overflow:auto;font-size:11px;margin:0'>"
        if v.error:
            self.label.value = f"<span style='color:#c62828'><b>cannot prune:</b> {shown(v.error, html=True)}</span>"
            self.pruned_view.value = ""
        else:
            self.label.value = (f"<b>{shown(self.msg.id, html=True)}</b> ({shown(self.msg.tool_name or 'tool', html=True)}): "
                                f"{v.original_tokens:,} tokens, {v.lines:,} lines. Pruned: head "
                                f"<b>{v.head_tokens:,}</b>"
                                f" + marker + tail <b>{v.tail_tokens:,}</b> = <b>{v.total_tokens:,}</b> tokens "
                                f"(budget {v.budget:,}); {v.omitted_tokens:,} omitted for good; "
                                f"{v.lines_whole:,} of {v.lines:,} lines still whole.")
            marker = f"<span style='background:#fde2e1;color:#c62828'>{shown(v.marker, multiline=True, html=True)}</span>"
            body = _shown(v.head) + marker + _shown(v.tail) if v.marker else _shown(v.text)
            self.pruned_view.value = f"<div style='padding-right:6px'><b>pruned</b>{pre}{body}</pre></div>"
        paged_text = self.paged(v.head_budget, v.tail_budget)[0].text
        body = _shown(paged_text).replace(f"page {s.handle}",
                                          f"<span style='background:#dbe9f6'>page {s.handle}</span>")
        self.paged_view.value = (f"<div style='padding-left:6px'><b>paged</b> ({s.page_tokens:,} tokens, "
                                 f"handle <code>{s.handle}</code>){pre}{body}</pre></div>")
        verdict = ("still whole in the pruned text" if s.line_in_pruned else
                   "<b style='color:#c62828'>not in the pruned text: gone for good</b>")
        self.line_view.value = (f"<b>line {s.line:,}</b> as recorded: <code>{_shown(s.original_line[:200])}</code>"
                                f"<br>pruned: {verdict}<br>read_page(handle=\"{s.handle}\", start_line={s.line}, "
                                f"end_line={s.line}) → <code>{_shown(s.read_back[:200])}</code> "
                                f"({'exactly the recorded line' if s.read_back_exact else 'differs'})")

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = (f"PruneWidget({self.msg.id!r}, head={self.head.value:,}, tail={self.tail.value:,}, "
                                f"line={self.line.value:,})")
        return bundle
