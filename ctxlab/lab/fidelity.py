"""Structural fidelity: does the cache simulator reproduce what a transcript's recorded usage says?

Only the recorded per-call usage is used, never the messages' text. Each model call's prompt is
its recorded total input, built as *the thread's previous prompt + what was added* (one block per
call increment, breakpoint on the last block); after a recorded compaction, or when the prompt
shrank, the thread starts a new prompt. The simulator gets these prompts in request-time order —
every thread of the file against one store — with the recorded model and thinking-level changes.
A call counts when the predicted cache read and write are both within 1% of its recorded prompt.
The naive rule, "read = the previous total if the gap is under 5 minutes", is scored on the same
calls: a simulator that cannot beat it teaches nothing.

Every call where the cache missed (recorded) or the simulator was wrong gets a kind:
``cold start``, ``below minimum``, ``TTL expiry``, ``thinking or model change``, ``compaction``,
``warm start`` (a thread's first call read what an earlier session or thread wrote), ``parallel
start``, ``lookback``, ``no caching`` (no documented prompt caching for the model), ``unexplained``
— with a one-line detail.

Simplified on purpose: the static head (tools + system prompt) is not in the usage, so it is not a
block of its own: a thinking change invalidates the whole synthetic prompt, and a head shared by
threads (Claude Code's subagents) shows up as a warm start. Request time = the timestamp of the
thread's last item before the call (transcripts stamp completions). Taught in chapter 04.

ctxlab's own prompt sizes against the recorded ones (end to end) are in :mod:`ctxlab.lab.fidelity_end_to_end`;
its request bodies against a proxy log's bytes, in :mod:`ctxlab.lab.fidelity_bodies`.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

from ctxlab.base.safe_text import shown
from ctxlab.cache import CacheOutcome, PrefixCache, request_from_sizes
from ctxlab.cache_anthropic import AnthropicCache
from ctxlab.cache_openai_breakpoints import openai_simulator
from ctxlab.messages import Conversation, Entry, Message, Usage, parse_time
from ctxlab.tables.cache_rules import rule_for

KINDS = ("cold start", "below minimum", "TTL expiry", "thinking or model change", "compaction",
         "warm start", "parallel start", "lookback", "no caching", "unexplained")


@dataclass(frozen=True)
class CallFit:
    """One model call: recorded, predicted and naive read / write (tokens); ``kind`` None = an ordinary hit.
    Chapter 04."""

    thread: str
    call: int
    message_id: str
    at_s: float | None
    model: str
    total_tokens: int
    recorded_read: int
    recorded_write: int
    predicted_read: int
    predicted_write: int
    naive_read: int
    naive_write: int
    within: bool
    naive_within: bool
    kind: str | None
    detail: str


@dataclass(frozen=True)
class FidelityReport:
    """Per-call fits of one conversation. ``skipped``: calls that recorded no usage (aborted early). Chapter 04."""

    conversation: str
    calls: tuple[CallFit, ...]
    skipped: int = 0
    tolerance: float = 0.01
    notes: tuple[str, ...] = field(default=())

    @property
    def within(self) -> float:
        return sum(c.within for c in self.calls) / len(self.calls) if self.calls else 0.0

    @property
    def naive_within(self) -> float:
        return sum(c.naive_within for c in self.calls) / len(self.calls) if self.calls else 0.0

    def misses(self) -> list[CallFit]:
        """Calls where the cache missed or the simulator was wrong — each with a kind."""
        return [c for c in self.calls if c.kind is not None]

    def mispredicted(self) -> list[CallFit]:
        return [c for c in self.calls if not c.within]

    def misses_by_kind(self) -> dict[str, tuple[int, int]]:
        """``{kind: (calls, of which predicted)}`` in the order of :data:`KINDS`."""
        out = {k: (sum(c.kind == k for c in self.misses()), sum(c.kind == k and c.within for c in self.misses()))
               for k in KINDS}
        return {k: v for k, v in out.items() if v[0]}

    def as_dict(self) -> dict:
        return {"calls": len(self.calls), "within": self.within, "naive_within": self.naive_within,
                "skipped": self.skipped, "misses_by_kind": {k: {"calls": n, "predicted": p}
                                                            for k, (n, p) in self.misses_by_kind().items()}}

    def __str__(self) -> str:  # ids, threads and details come from the file: shown escaped, one line each
        n = len(self.calls)
        lines = [f"structural fidelity — {shown(self.conversation)}: {n} calls ({self.skipped} without usage "
                 f"skipped), within {self.tolerance:.0%} of the prompt",
                 f"  simulator   {sum(c.within for c in self.calls):5d}  {self.within:6.1%}",
                 f"  naive rule  {sum(c.naive_within for c in self.calls):5d}  {self.naive_within:6.1%}",
                 f"  {'kind':26} calls  predicted"]
        lines += [f"  {k:26} {v[0]:5d}  {v[1]:9d}" for k, v in self.misses_by_kind().items()]
        lines += [f"  mispredicted: {shown(c.thread)} call {c.call}: {c.kind} — {shown(c.detail)}"
                  for c in self.mispredicted()]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(str(self))}</pre>"  # str() escaped each field already


@dataclass
class RecordedCall:
    """One model call as the transcript recorded it; ``at_s`` is its request time (seconds). Chapter 04."""

    thread: str
    index: int
    message: Message
    usage: Usage
    at_s: float | None
    model: str
    provider: str
    thinking: str | None
    compacted: bool  # a compaction entry precedes it in its thread since the previous call


def recorded_calls(conversation: Conversation) -> tuple[list[RecordedCall], int]:
    """Calls with recorded usage in request-time order (lines sharing a response id are one call), and
    the number of calls that recorded none. Chapter 04."""
    model: dict[str, str | None] = {}
    thinking: dict[str, str | None] = {}
    last: dict[str, float | None] = {}  # thread -> time of its latest item
    compacted: dict[str, bool] = {}
    calls: list[RecordedCall] = []
    count: dict[str, int] = {}  # thread -> calls so far
    skipped = 0
    for item in conversation.items:
        t = item.thread
        if isinstance(item, Entry):
            if item.kind == "model_change":
                model[t] = item.data.get("model") or model.get(t)
            elif item.kind == "thinking_level_change":
                thinking[t] = item.data.get("level")
            elif item.kind == "compaction":
                compacted[t] = True
        elif item.role == "assistant" and item.origin is None:
            u = item.usage
            prev = next((c for c in reversed(calls) if c.thread == t), None)
            if prev is not None and item.response_id and prev.message.response_id == item.response_id:
                if u is not None and u.total_input_tokens:
                    prev.usage, prev.message = u, item  # the same response: keep its last usage line
            elif u is None or not u.total_input_tokens:
                skipped += 1
            else:
                m = item.model or model.get(t) or conversation.model or "unknown"
                provider = item.provider if item.provider in ("anthropic", "openai") else rule_for(m).provider
                count[t] = count.get(t, 0) + 1
                calls.append(RecordedCall(t, count[t], item, u,
                                   last.get(t, parse_time(item.timestamp)), m, provider, thinking.get(t),
                                   compacted.pop(t, False)))
        stamp = parse_time(item.timestamp)
        if stamp is not None:
            last[t] = stamp
    order = sorted(range(len(calls)), key=lambda k: (calls[k].at_s if calls[k].at_s is not None else float("-inf"), k))
    return [calls[k] for k in order], skipped


@dataclass(frozen=True)
class _Prompt:
    """A thread's latest synthetic prompt: the pieces up to its last breakpoint and where that sits."""

    pieces: list[tuple[str, int]]  # (label, tokens) up to and including the breakpoint block
    epoch: int  # bumped when the thread starts a new prompt (compaction, shrink)
    call: RecordedCall
    cut: int  # tokens up to the last breakpoint


def structural(conversation: Conversation, simulator: PrefixCache | None = None, *, tolerance: float = 0.01,
               naive_gap_s: float = 300.0, tail_from_uncached: bool = True) -> FidelityReport:
    """Feed the recorded prompt sizes to the simulator and score it against the recorded read / write.

    ``structural(load("pi.jsonl").conversation(0))`` → 98.3% within 1% (naive rule 97.2%).
    With ``tail_from_uncached`` an Anthropic call that cached anything puts its last breakpoint
    before its recorded uncached tokens: with explicit breakpoints, uncached input is exactly the
    part after the last breakpoint — where the agent placed it, which the usage records and the
    sizes alone do not. Off, the breakpoint is on the last token. Chapter 04.
    """
    calls, skipped = recorded_calls(conversation)
    sims: dict[tuple[str, type], PrefixCache] = {}
    prompts: dict[str, _Prompt] = {}  # thread -> its latest prompt
    fits: list[CallFit] = []
    for c in calls:
        u, total = c.usage, c.usage.total_input_tokens
        cached_any = u.cache_read_tokens + u.cache_write_tokens > 0
        tail = u.uncached_input_tokens if tail_from_uncached and c.provider == "anthropic" and cached_any else 0
        cut, before = total - tail, prompts.get(c.thread)
        new_prompt = before is None or c.compacted or cut < before.cut
        if new_prompt:  # nothing of the thread's previous prompt is kept
            epoch = before.epoch + 1 if before else 0
            pieces = [(f"{c.thread}/{epoch}/0", cut)]
        else:
            epoch = before.epoch
            grew = [(f"{c.thread}/{epoch}/{len(before.pieces)}", cut - before.cut)] if cut > before.cut else []
            pieces = before.pieces + grew
        tail_piece = [(f"{c.thread}/tail/{c.index}", tail)] if tail else []
        req = request_from_sizes(pieces + tail_piece, model=c.model, provider=c.provider, thinking=c.thinking,
                                 breakpoints={len(pieces) - 1})
        kind = AnthropicCache if c.provider == "anthropic" else openai_simulator(c.model)  # GPT-5.6 on: breakpoints
        sim = simulator or sims.setdefault((c.provider, kind), kind())
        out = sim.request(req, c.at_s)

        prev = before.call if before else None
        gap = c.at_s - prev.at_s if prev and c.at_s is not None and prev.at_s is not None else 0.0
        naive_read = min(prev.usage.total_input_tokens, total) if prev and gap < naive_gap_s else 0
        close = lambda a, b: abs(a - b) <= tolerance * total  # noqa: E731
        within = (close(out.cache_read_tokens, u.cache_read_tokens)
                  and close(out.cache_write_tokens, u.cache_write_tokens))
        naive = close(naive_read, u.cache_read_tokens) and close(total - naive_read, u.cache_write_tokens)
        kind, detail = _classify(c, out, before.cut if before else None, new_prompt, within, fits, calls, tolerance)
        fits.append(CallFit(c.thread, c.index, c.message.id, c.at_s, c.model, total, u.cache_read_tokens,
                            u.cache_write_tokens, out.cache_read_tokens, out.cache_write_tokens, naive_read,
                            total - naive_read, within, naive, kind, detail))
        prompts[c.thread] = _Prompt(pieces, epoch, c, cut)
    notes = () if any(c.at_s is not None for c in calls) else ("no timestamps: nothing expired",)
    return FidelityReport(conversation.id, tuple(fits), skipped, tolerance, notes)


# the simulator's reason -> the kind of miss
_REASON_KINDS = (("no documented prompt caching", "no caching"), ("below minimum", "below minimum"),
                 ("expired", "TTL expiry"), ("thinking changed", "thinking or model change"),
                 ("model changed", "thinking or model change"), ("parallel", "parallel start"),
                 ("lookback", "lookback"))


def _classify(c: RecordedCall, out: CacheOutcome, prev: int | None, new_prompt: bool, within: bool,
              fits: list[CallFit], calls: list[RecordedCall], tolerance: float) -> tuple[str | None, str]:
    """The kind of a cache miss (recorded) or of a wrong prediction, and a one-line detail.

    ``prev``: tokens the thread's previous call left cacheable (None: the thread's first call).
    """
    u, total = c.usage, c.usage.total_input_tokens
    slack = tolerance * total
    recorded_miss = u.cache_read_tokens == 0 if prev is None else u.cache_read_tokens < min(prev, total) - slack
    if within and not recorded_miss:
        return None, out.reason
    sim_kind = next((k for key, k in _REASON_KINDS if key in out.reason), None)
    if not within and u.cache_read_tokens > out.cache_read_tokens + slack:  # the provider read more
        if sim_kind and "hit" not in out.reason:  # it kept what the rules say was gone
            return sim_kind, f"recorded a read of {u.cache_read_tokens:,} where the rules say {out.reason}"
        if new_prompt:
            return "warm start", (f"a new prompt of {c.thread} read {u.cache_read_tokens:,} tokens written by an "
                                  "earlier session or thread (the head's size is not in the transcript)")
        return "unexplained", f"recorded a read of {u.cache_read_tokens:,}; simulator: {out.reason}"
    if not within and out.cache_read_tokens > u.cache_read_tokens + slack:  # the provider read less
        return "unexplained", (f"recorded read {u.cache_read_tokens:,} of a {prev or 0:,}-token prefix the rules "
                               f"allow ({out.reason}): the prefix changed without a trace in the transcript — an "
                               "agent restart or a changed system prompt")
    if not within:
        return "unexplained", (f"read as predicted but wrote {u.cache_write_tokens:,} (predicted "
                               f"{out.cache_write_tokens:,}); {u.uncached_input_tokens:,} tokens after the last "
                               "breakpoint stayed uncached — where the agent put it is not in the transcript")
    # a recorded miss the simulator predicted
    if sim_kind:
        return sim_kind, out.reason
    if prev is None:
        running = [f for f in fits if f.thread != c.thread and f.call == 1 and f.at_s is not None
                   and c.at_s is not None and f.at_s <= c.at_s < _done(f, calls)]
        if running:
            return "parallel start", (f"{running[0].thread} started at the same time and its response was still "
                                      "running, so a head the threads share could not be read yet")
        return "cold start", out.reason
    if new_prompt:
        return "compaction", f"the prompt was rewritten ({prev:,} → {total:,} tokens): {out.reason}"
    if prev < rule_for(c.model, c.provider).min_tokens:
        return "below minimum", f"the previous prompt ({prev:,}) was below the minimum: nothing was written"
    return "unexplained", out.reason


def _done(fit: CallFit, calls: list[RecordedCall]) -> float:
    """When a call's response was recorded complete (its own timestamp)."""
    call = next(c for c in calls if c.message.id == fit.message_id)
    return parse_time(call.message.timestamp) or float("-inf")
