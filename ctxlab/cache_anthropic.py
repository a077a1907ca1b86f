"""Anthropic's prompt cache: explicit breakpoints, a 20-block lookback, a minimum length, TTLs refreshed by reads.

What Anthropic documents (prompt caching, https://platform.claude.com/docs/en/build-with-claude/prompt-caching;
the rows and their dates are in ``tables/cache_rules.py``):

* nothing is cached unless the request marks it: ``cache_control`` on a content block is a
  *breakpoint* (断点), and the cache covers the prompt up to it, in the order tools → system →
  messages; at most 4 breakpoints per request;
* a request *writes* an entry at each breakpoint whose prefix reaches the model's minimum
  (1,024 tokens for Sonnet 4.5, 4,096 for Opus 4.5, ...); a shorter prompt is not cached at all;
* a later request *reads* the longest entry it finds at one of its breakpoints or up to 20 blocks
  before one; an entry further back is lost (a ``lookback`` miss);
* the TTL is 5 minutes by default (1 hour as an option) and every read refreshes it; writes cost
  1.25x the input price (2x for 1 h), reads 0.1x (0.05x on Opus 5.5: each row's ``read_multiplier``);
* caches are per model; a change of the thinking setting, of ``tool_choice`` or of whether images are
  present invalidates the messages (tools and system still read: ``tables/cache_invalidation.py``, salted
  into the chain by ``render.py``); on models that keep only the last turn's thinking, a new user turn
  strips the earlier thinking and the messages after it leave the cache (``render.is_stripped``);
* for concurrent requests an entry is usable only once the first response has begun.

What it shares with the other simulator lives in ``cache.py``: the outcome, the store of entries and
why an entry cannot be read. Simplified on purpose: one TTL per request (Anthropic lets 1 h and
5 min entries mix). Taught in chapter 04.
"""

from __future__ import annotations

from typing import Sequence

from ctxlab.cache import CacheEntry, CacheOutcome, CacheStore, plain_chain, too_short
from ctxlab.render import RenderedRequest
from ctxlab.tables.cache_rules import CacheRule, model_key


class AnthropicCache:
    """Anthropic's rules: entries at breakpoints, 20-block lookback, minimum length, TTL refreshed by reads.

    ``rules`` fixes one rule row for every model (default: looked up per request model);
    ``min_tokens`` / ``ttl_s`` override the row's minimum and default TTL (a positive whole number
    of tokens, positive seconds; None: the row's). A bad one raises CtxlabError naming it. Chapter 04.
    """

    mode = "breakpoints"

    def __init__(self, rules: CacheRule | None = None, min_tokens: int | None = None,
                 ttl_s: float | None = None) -> None:
        self._s = CacheStore(rules, min_tokens, ttl_s)

    def request(self, req: RenderedRequest, at_s: float | None, *, ttl_s: float | None = None,
                response_started_s: float | None = None) -> CacheOutcome:
        """Read, write and uncached tokens of ``req`` sent at ``at_s``; entries it writes become
        usable at ``response_started_s`` (default ``at_s``). The texts' call 2: 4,480 read + 380 write.
        Raises ValueError for more breakpoints than the API accepts. Chapter 04."""
        s = self._s
        s.calls += 1
        rule, minimum = s.rule(req, self.mode)
        ttl = ttl_s or s.ttl_s or rule.ttl_s
        model, bps = model_key(req.model), req.breakpoints
        if rule.max_breakpoints and len(bps) > rule.max_breakpoints:
            raise ValueError(f"{len(bps)} cache breakpoints; the API accepts at most {rule.max_breakpoints}")
        if req.total_tokens < minimum:  # nothing this short can have been written, and nothing is written
            return CacheOutcome.of(req, 0, 0, 0, None, too_short(rule, minimum))
        if not bps:
            return CacheOutcome.of(req, 0, 0, 0, None, "miss: no breakpoint (nothing marked for caching)")
        plain, cold = plain_chain(req, s.chains), not s.has_model(model)

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
                s.put(CacheEntry(model, req.blocks[bp].prefix_digest, plain[bp], req.cum_tokens[bp], s.calls,
                                 req.thinking, ttl, born, born, tool_choice=req.tool_choice, images=req.images))
            if until is None or bp > until:
                last = bp
        write = req.cum_tokens[last] - read if last is not None else 0

        if hit is not None:
            reason = f"hit: entry from call {hit.call} at block {until}"
            reason += f"; longer prefix missed: {lost}" if lost else ""
        else:
            reason = f"miss: {lost}" if lost else "cold" if cold else "miss: no cached prefix matches"
        return CacheOutcome.of(req, read, write, write if ttl >= 3600 else 0, until, reason)

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
            if e.prefix != req.blocks[j].prefix_digest:  # same bytes, same settings: the chain was stripped
                return (f"earlier thinking stripped by a new user turn ({rule.thinking_rule or 'last-turn-only'} "
                        f"model): the entry at block {j} holds it")
            later = [bp for bp in bps if bp >= j]
            if not later:
                return f"lookback: no breakpoint at or after block {j}, where an entry ends"
            return (f"lookback: entry at block {j} is {min(later) - j} blocks before the nearest breakpoint "
                    f"(limit {rule.lookback_blocks})")
        return None

    def warm_head(self, req: RenderedRequest, at_s: float | None) -> None:
        """Pre-write the static head (tools + system) as if an earlier session had: a warm start. Chapter 04."""
        head = [i for i, b in enumerate(req.blocks) if b.kind in ("tools", "system")]
        if not head:
            return
        s = self._s
        plain = plain_chain(req, s.chains)
        rule, minimum = s.rule(req, self.mode)
        marks = [i for i in req.breakpoints if i <= head[-1]] or [head[-1]]
        for i in marks:
            if req.cum_tokens[i] >= minimum:
                s.put(CacheEntry(model_key(req.model), req.blocks[i].prefix_digest, plain[i], req.cum_tokens[i], 0,
                                 req.thinking, s.ttl_s or rule.ttl_s, at_s, at_s, tool_choice=req.tool_choice,
                                 images=req.images))
