"""Prefix-cache simulators: for one request, what the provider reads from its cache, writes, and sends uncached.

A provider keeps the work it did on a prompt's beginning (the *prefix cache*, 前缀缓存) for a few
minutes; the next request that starts with the same bytes pays a tenth for that part. Two rule
sets share one interface, :class:`PrefixCache`, so the replay can swap them:

* :class:`AnthropicCache` — explicit breakpoints (``Block.breakpoint``). A request writes an entry
  at each breakpoint; a later request reads the longest entry it finds at one of its breakpoints
  or up to 20 blocks before one. Minimum length per model, TTL refreshed by reads, caches per model.
* :class:`OpenAICache` — automatic: every prompt of 1,024+ tokens is stored; a later request reads
  the longest common token prefix with any stored prompt, rounded down to 128 tokens.

Times are seconds passed in by the caller (``None``: the transcript has no timestamps, nothing
expires); nothing here reads a clock or a file. The rules come from ``cache_rules.py``.

Simplified on purpose: one TTL per request (Anthropic lets 1 h and 5 min entries mix); inside the
first differing block OpenAI's shared tokens are the o200k token prefix of the two blocks' wire
text, scaled to the block's token count; entries live until they expire (no eviction under load).
Taught in chapter 04.
"""

from __future__ import annotations

import bisect
import hashlib
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Iterable, Protocol, Sequence

from ctxlab.tables._offline_encodings import get_encoding
from ctxlab.tables.cache_rules import NO_CACHE, CacheRule, bills_cache_writes, model_key, rule_for
from ctxlab.render import Block, RenderedRequest, shared_blocks


@dataclass(frozen=True)
class CacheOutcome:
    """One request through a cache. ``read + write + uncached == total`` (tokens).

    ``cache_write_1h_tokens`` is the part of ``cache_write_tokens`` written with the 1 h TTL.
    ``read_until_block``: index of the last block read from the cache (None: nothing read).
    ``reason``: one line, e.g. ``"hit: entry from call 3 at block 41"``, ``"miss: expired after 412 s (ttl 300)"``.
    """

    cache_read_tokens: int
    cache_write_tokens: int
    cache_write_1h_tokens: int
    uncached_input_tokens: int
    total_input_tokens: int
    read_until_block: int | None
    reason: str

    @property
    def hit_rate(self) -> float:
        return self.cache_read_tokens / self.total_input_tokens if self.total_input_tokens else 0.0


class PrefixCache(Protocol):
    """What the replay needs from a simulator."""

    def request(self, req: RenderedRequest, at_s: float | None, *, ttl_s: float | None = None,
                response_started_s: float | None = None) -> CacheOutcome: ...

    def warm_head(self, req: RenderedRequest, at_s: float | None) -> None: ...


@dataclass(eq=False)
class _Entry:
    """One cached prefix. Mutable on purpose: a read moves ``used_s`` (the TTL restarts)."""

    model: str
    prefix: str  # prefix digest at the block the entry ends on (thinking setting included)
    plain: str  # the same prefix without the thinking salt
    tokens: int
    call: int  # which request of this simulator wrote it; 0 = a warm start
    thinking: str | None
    ttl_s: float
    available_s: float | None  # when the writing response began: usable from then on
    used_s: float | None  # last write or read; the entry expires ttl_s after it
    req: RenderedRequest | None = None  # the whole prompt (OpenAI compares tokens inside a block)

    def expired(self, at_s: float | None) -> bool:
        return at_s is not None and self.used_s is not None and at_s - self.used_s > self.ttl_s

    def pending(self, at_s: float | None) -> bool:
        return at_s is not None and self.available_s is not None and at_s < self.available_s


def _plain_chain(req: RenderedRequest) -> list[str]:
    """Prefix digests without the thinking salt: equal here but not in ``prefix_digest`` = thinking changed."""
    chain, out = "", []
    for b in req.blocks:
        chain = hashlib.sha256((chain + b.digest).encode()).hexdigest()[:32]
        out.append(chain)
    return out


def _outcome(req: RenderedRequest, read: int, write: int, write_1h: int, until: int | None,
             reason: str) -> CacheOutcome:
    total = req.total_tokens
    return CacheOutcome(read, write, write_1h, total - read - write, total, until, reason)


def _too_short(rule: CacheRule, minimum: int) -> str:
    if rule is NO_CACHE:
        return "miss: no documented prompt caching for this model"
    return f"miss: below minimum {minimum:,}"


class _Store:
    """Entries by (model, prefix digest), and by the prefix without thinking salt (for the reasons)."""

    def __init__(self, rules: CacheRule | None, min_tokens: int | None, ttl_s: float | None) -> None:
        from ctxlab.base.errors import CtxlabError
        from ctxlab.base.validate import seconds, tokens

        if rules is not None and not isinstance(rules, CacheRule):  # the simulators' arguments, checked once here
            raise CtxlabError(f"rules must be a CacheRule (e.g. rule_for('gemini-2.5-pro')) or None "
                              f"(got {type(rules).__name__})")
        self.rules, self.min_tokens, self.ttl_s = rules, tokens("min_tokens", min_tokens), seconds("ttl_s", ttl_s)
        self.entries: dict[tuple[str, str], _Entry] = {}  # (model, prefix) -> entry
        self.plain: dict[str, list[_Entry]] = {}  # prefix without thinking salt -> entries
        self.calls = 0

    def rule(self, req: RenderedRequest, mode: str) -> tuple[CacheRule, int]:
        """The rule row for this request's model (``mode`` picks a row of that kind), and its minimum."""
        rule = self.rules or rule_for(req.model, "anthropic" if mode == "breakpoints" else None)
        if rule.mode != mode or (rule is NO_CACHE and req.provider == "openai"):
            rule = rule_for(req.model, "openai")  # e.g. a Claude transcript replayed under OpenAI's rules
        return rule, self.min_tokens or rule.min_tokens

    def put(self, e: _Entry) -> None:
        self.drop(self.entries.get((e.model, e.prefix)))
        self.entries[(e.model, e.prefix)] = e
        self.plain.setdefault(e.plain, []).append(e)

    def drop(self, e: _Entry | None) -> None:
        if e is not None:
            self.plain[e.plain].remove(e)
            del self.entries[(e.model, e.prefix)]

    def has_model(self, model: str) -> bool:
        return any(m == model for m, _ in self.entries)

    def why_not(self, e: _Entry, req: RenderedRequest, at_s: float | None, thinking: bool = True) -> str | None:
        """Why an entry with the same bytes as this prefix cannot be read, or None if it can."""
        if e.model != model_key(req.model):
            return f"model changed (entry written for {e.model})"
        if thinking and e.thinking != req.thinking:
            return f"thinking changed ({e.thinking} → {req.thinking})"
        if e.pending(at_s):
            return (f"parallel: entry from call {e.call} is usable only once its response has started "
                    f"({e.available_s - at_s:.1f} s later)")
        if e.expired(at_s):
            return f"expired after {at_s - e.used_s:.0f} s (ttl {e.ttl_s:.0f})"
        return None


# ---------------------------------------------------------------- Anthropic: explicit breakpoints

class AnthropicCache:
    """Anthropic's rules: entries at breakpoints, 20-block lookback, minimum length, TTL refreshed by reads.

    ``rules`` fixes one rule row for every model (default: looked up per request model);
    ``min_tokens`` / ``ttl_s`` override the row's minimum and default TTL (a positive whole number
    of tokens, positive seconds; None: the row's). A bad one raises CtxlabError naming it.
    """

    mode = "breakpoints"

    def __init__(self, rules: CacheRule | None = None, min_tokens: int | None = None,
                 ttl_s: float | None = None) -> None:
        self._s = _Store(rules, min_tokens, ttl_s)

    def request(self, req: RenderedRequest, at_s: float | None, *, ttl_s: float | None = None,
                response_started_s: float | None = None) -> CacheOutcome:
        """Read, write and uncached tokens of ``req`` sent at ``at_s``; entries it writes become
        usable at ``response_started_s`` (default ``at_s``). The texts' call 2: 4,480 read + 380 write.
        Chapter 04."""
        s = self._s
        s.calls += 1
        rule, minimum = s.rule(req, self.mode)
        ttl = ttl_s or s.ttl_s or rule.ttl_s
        model, bps = model_key(req.model), req.breakpoints
        if rule.max_breakpoints and len(bps) > rule.max_breakpoints:
            raise ValueError(f"{len(bps)} cache breakpoints; the API accepts at most {rule.max_breakpoints}")
        if req.total_tokens < minimum:  # nothing this short can have been written, and nothing is written
            return _outcome(req, 0, 0, 0, None, _too_short(rule, minimum))
        if not bps:
            return _outcome(req, 0, 0, 0, None, "miss: no breakpoint (nothing marked for caching)")
        plain, cold = _plain_chain(req), not s.has_model(model)

        # Read: each breakpoint looks at itself and up to lookback-1 blocks before it for an entry.
        # The read is the longest prefix found; every entry found is refreshed (its TTL restarts).
        until, hit = None, None
        for bp in bps:
            for j in range(bp, max(-1, bp - (rule.lookback_blocks or 20)), -1):
                e = s.entries.get((model, req.blocks[j].prefix_digest))
                if e is not None and not e.expired(at_s) and not e.pending(at_s):
                    e.used_s = at_s if at_s is not None else e.used_s
                    if until is None or j > until:
                        until, hit = j, e
                    break
        read = req.cum_tokens[until] if until is not None else 0
        lost = self._longer_prefix_lost(req, plain, until, at_s, bps, rule)  # before this request writes

        # Write: an entry at every breakpoint whose prefix reaches the minimum. Those past the read
        # point cost a write (read point -> last such breakpoint); those inside it come with the read.
        born = response_started_s if response_started_s is not None else at_s
        last = None
        for bp in bps:
            if req.cum_tokens[bp] < minimum:
                continue  # a breakpoint below the minimum writes nothing
            old = s.entries.get((model, req.blocks[bp].prefix_digest))
            # a live entry stays (a parallel twin's counts from whichever response starts first)
            if old is None or old.expired(at_s) or (born is not None and (old.available_s or 0) > born):
                s.put(_Entry(model, req.blocks[bp].prefix_digest, plain[bp], req.cum_tokens[bp], s.calls,
                             req.thinking, ttl, born, born))
            if until is None or bp > until:
                last = bp
        write = req.cum_tokens[last] - read if last is not None else 0

        if hit is not None:
            reason = f"hit: entry from call {hit.call} at block {until}"
            reason += f"; longer prefix missed: {lost}" if lost else ""
        else:
            reason = f"miss: {lost}" if lost else "cold" if cold else "miss: no cached prefix matches"
        return _outcome(req, read, write, write if ttl >= 3600 else 0, until, reason)

    def _longer_prefix_lost(self, req: RenderedRequest, plain: list[str], until: int | None, at_s: float | None,
                            bps: Sequence[int], rule: CacheRule) -> str | None:
        """The reason the longest entry holding more of this prompt than was read could not be used."""
        for j in range(len(req.blocks) - 1, -1 if until is None else until, -1):
            found = self._s.plain.get(plain[j])
            if not found:
                continue
            # explain with the entry closest to usable: same model and thinking first, then newest
            e = sorted(found, key=lambda x: (x.model == model_key(req.model), x.thinking == req.thinking,
                                             x.used_s or 0))[-1]
            why = self._s.why_not(e, req, at_s)
            if why:
                return why
            later = [bp for bp in bps if bp >= j]
            if not later:
                return f"lookback: no breakpoint at or after block {j}, where an entry ends"
            return (f"lookback: entry at block {j} is {min(later) - j} blocks before the nearest breakpoint "
                    f"(limit {rule.lookback_blocks})")
        return None

    def warm_head(self, req: RenderedRequest, at_s: float | None) -> None:
        """Pre-write the static head (tools + system) as if an earlier session had: a warm start."""
        head = [i for i, b in enumerate(req.blocks) if b.kind in ("tools", "system")]
        if not head:
            return
        s, plain = self._s, _plain_chain(req)
        rule, minimum = s.rule(req, self.mode)
        marks = [i for i in req.breakpoints if i <= head[-1]] or [head[-1]]
        for i in marks:
            if req.cum_tokens[i] >= minimum:
                s.put(_Entry(model_key(req.model), req.blocks[i].prefix_digest, plain[i], req.cum_tokens[i], 0,
                             req.thinking, s.ttl_s or rule.ttl_s, at_s, at_s))


# ---------------------------------------------------------------- OpenAI: automatic prefix matching

@lru_cache(maxsize=512)
def _ids(text: str) -> tuple[int, ...]:
    return tuple(get_encoding("o200k_base").encode(text, disallowed_special=()))


def _shared_in_block(old: Block, new: Block) -> int:
    """Tokens two differing blocks share at their start: the o200k token prefix of their wire text,
    scaled to the block's own token count (so the sum stays consistent with ``cum_tokens``)."""
    if old.digest == new.digest or not old.text or not new.text:
        return 0  # same text but a different chain before it (e.g. thinking salt): nothing in it is shared
    a, b = _ids(old.text), _ids(new.text)
    k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return min(old.tokens, new.tokens, k * new.tokens // max(1, len(b)))


def shared_prefix_tokens(old: RenderedRequest, new: RenderedRequest) -> int:
    """Tokens at the start of ``new`` identical to ``old``: whole blocks by prefix digest, then tokens. Chapter 04."""
    n = min(len(old.blocks), len(new.blocks))
    lo = shared_blocks(old, new)
    shared = new.cum_tokens[lo - 1] if lo else 0
    return shared + (_shared_in_block(old.blocks[lo], new.blocks[lo]) if lo < n else 0)


def floor_to(tokens: int, step: int) -> int:
    """``floor_to(4860, 128)`` → 4736 (OpenAI's 128-token steps, chapter 04)."""
    return tokens // step * step


class OpenAICache:
    """Automatic prefix caching: prompts of ``min_tokens``+ are stored; reads in ``increment_tokens`` steps.

    Cache writes are billed only where the price table lists a cache-write price (GPT-5.6 family
    on); elsewhere newly cached tokens count as uncached input. Also runs the Gemini and DeepSeek
    rows: ``OpenAICache(rules=rule_for("gemini-2.5-pro"))``. Arguments as for :class:`AnthropicCache`.
    """

    mode = "automatic"

    def __init__(self, rules: CacheRule | None = None, min_tokens: int | None = None,
                 ttl_s: float | None = None) -> None:
        self._s = _Store(rules, min_tokens, ttl_s)

    def request(self, req: RenderedRequest, at_s: float | None, *, ttl_s: float | None = None,
                response_started_s: float | None = None) -> CacheOutcome:
        """The texts' call 3: a 4,990-token prompt after a 4,860 one reads 4,736 and sends 254 uncached.
        Chapter 04."""
        s = self._s
        s.calls += 1
        rule, minimum = s.rule(req, self.mode)
        ttl, step, model = ttl_s or s.ttl_s or rule.ttl_s, rule.increment_tokens, model_key(req.model)
        if req.total_tokens < minimum:
            return _outcome(req, 0, 0, 0, None, _too_short(rule, minimum))
        cold, shared = not s.has_model(model), [(e, shared_prefix_tokens(e.req, req)) for e in s.entries.values()]
        best, hit, lost, lost_tokens = 0, None, None, 0
        for e, n in shared:
            why = s.why_not(e, req, at_s, thinking=False)  # a thinking change already shows in the digests
            if why is None and n > best:
                best, hit = n, e
            elif why is not None and n > max(best, lost_tokens):
                lost, lost_tokens = why, n
        read = floor_to(best, step) if floor_to(best, step) >= minimum else 0
        if read and at_s is not None:
            hit.used_s = at_s  # a hit keeps the entry alive

        # Every prompt long enough is stored. One this prompt extends is superseded: this one shares
        # at least as much with any later request, and is newer.
        for e, n in shared:
            if e.model == model and n >= e.tokens:
                s.drop(e)
        born = response_started_s if response_started_s is not None else at_s
        blocks_total = req.cum_tokens[-1] if req.cum_tokens else 0
        if req.blocks:
            s.put(_Entry(model, req.blocks[-1].prefix_digest, _plain_chain(req)[-1], blocks_total, s.calls,
                         req.thinking, ttl, born, born, req))
        # Newly cached tokens are a write where writes are billed; elsewhere they stay uncached input.
        billed = bills_cache_writes(req.model, rule.provider)
        write = max(0, floor_to(blocks_total, step) - read) if billed else 0

        if read:
            reason = f"hit: {read:,} of {best:,} shared tokens (steps of {step}) from call {hit.call}"
        elif hit is not None and best:
            reason = f"miss: shared prefix {best:,} below minimum {minimum:,}"
        else:
            reason = f"miss: {lost}" if lost else "cold" if cold else "miss: no cached prefix matches"
        for e in [e for e in s.entries.values() if e.expired(at_s)]:
            s.drop(e)  # gone for good (only a live entry is refreshed), and keeps the comparisons few
        until = bisect.bisect_right(req.cum_tokens, read) - 1 if read else None  # last block read whole
        return _outcome(req, read, write, write if ttl >= 3600 else 0, until if until != -1 else None, reason)

    def warm_head(self, req: RenderedRequest, at_s: float | None) -> None:
        """Store the static head (tools + system) as if an earlier session had sent it."""
        h = sum(1 for b in req.blocks if b.kind in ("tools", "system"))
        rule, minimum = self._s.rule(req, self.mode)
        if h and req.cum_tokens[h - 1] >= minimum:
            head = replace(req, blocks=req.blocks[:h], cum_tokens=req.cum_tokens[:h], overhead_tokens=0)
            self._s.put(_Entry(model_key(req.model), head.blocks[-1].prefix_digest, _plain_chain(head)[-1],
                               head.cum_tokens[-1], 0, req.thinking, self._s.ttl_s or rule.ttl_s, at_s, at_s, head))


# ---------------------------------------------------------------- helpers for chapters and tests

def request_from_sizes(pieces: Sequence[tuple[str, int] | tuple[str, int, str]], *, model: str = "claude-sonnet-4-5",
                       provider: str = "anthropic", thinking: str | None = None,
                       breakpoints: Iterable[int] | None = None) -> RenderedRequest:
    """A request made of labelled blocks of chosen sizes. ``[("tools", 1200), ("system", 3000), ("user 1", 280)]``.

    Equal labels and sizes make equal blocks, so two requests share a prefix exactly as far as
    their pieces agree. A label starting with ``tools`` or ``system`` is that kind of block, any
    other a message. An optional third item is the block's text (OpenAI compares it token by
    token). ``breakpoints`` default to the last block; thinking enters the chain like in ``render``.
    Chapter 04.
    """
    marks = set(breakpoints) if breakpoints is not None else {len(pieces) - 1}
    blocks, cum, chain, total, salted = [], [], "", 0, False

    def h(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]

    for i, piece in enumerate(pieces):
        label, tokens, text = piece[0], piece[1], (piece[2] if len(piece) > 2 else "")
        kind = next((k for k in ("tools", "system") if label.startswith(k)), "message")
        digest = h(f"{label}\x00{tokens}\x00{text}")
        if kind == "message" and not salted:
            chain, salted = h(chain + f"thinking={thinking}"), True
        chain = h(chain + digest)
        total += tokens
        blocks.append(Block(kind, label, digest, chain, tokens, text, label if kind == "message" else None, i in marks))
        cum.append(total)
    return RenderedRequest(provider, model, tuple(blocks), tuple(cum), thinking)


def to_provider_fields(outcome: CacheOutcome, provider: str) -> dict:
    """The usage a provider would report. Anthropic's ``input_tokens`` is the *uncached* part only;
    OpenAI's ``prompt_tokens`` is the whole prompt with ``cached_tokens`` inside it. Chapter 04."""
    if provider == "anthropic":
        return {"input_tokens": outcome.uncached_input_tokens,
                "cache_creation_input_tokens": outcome.cache_write_tokens,
                "cache_read_input_tokens": outcome.cache_read_tokens,
                "cache_creation": {
                    "ephemeral_5m_input_tokens": outcome.cache_write_tokens - outcome.cache_write_1h_tokens,
                    "ephemeral_1h_input_tokens": outcome.cache_write_1h_tokens}}
    return {"prompt_tokens": outcome.total_input_tokens,
            "prompt_tokens_details": {"cached_tokens": outcome.cache_read_tokens,
                                      "cache_write_tokens": outcome.cache_write_tokens}}
