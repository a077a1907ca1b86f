"""OpenAI's prompt cache before GPT-5.6: automatic prefix matching, a 1,024-token minimum, reads in 128-token steps.

Unlike :class:`~ctxlab.cache_anthropic.AnthropicCache`: no breakpoints — the request marks nothing.
Every prompt of 1,024 tokens or more is stored whole; a later request reads the longest common
*token* prefix it shares with any stored prompt (not only whole blocks: inside the first block that
differs, the tokens still agree up to the first changed one), rounded down to a multiple of 128
tokens (:func:`floor_to`). There is no lookback limit and no per-breakpoint write. A thinking change
shows in the digests (the salt), so it is not a reason of its own. ``cached_tokens`` is reported
*inside* ``prompt_tokens``, and writes are free (where the price table lists no cache-write price: see
``tables/cache_rules.bills_cache_writes``). From the GPT-5.6 family on OpenAI caches at breakpoints
instead, with billed writes: :class:`~ctxlab.cache_openai_breakpoints.OpenAIBreakpointCache`
(``openai_simulator(model)`` picks the simulator by the model's rule row).

What OpenAI documents (prompt caching, https://developers.openai.com/api/docs/guides/prompt-caching;
the OpenAI Cookbook's Prompt Caching 201: "works automatically for prompts containing 1024 tokens or more,
with cache hits occurring in increments of 128 tokens" and "This guide applies only to models before
GPT-5.6."; the rows and their dates are in ``tables/model_rows_others.py``, read 2026-12-02): prompts of
1,024+ tokens, hits in 128-token steps. Retention (``prompt_cache_retention``, openai-python SDK e43b422,
``types/responses/response_create_params.py``): "For older models that support both ``in_memory`` and
``24h``, the default depends on your organization's data retention policy: Organizations without ZDR
enabled default to ``24h``." and "For ``gpt-5.5``, ``gpt-5.5-pro``, and future models, only ``24h`` is
supported." So the default TTL is the row's (24 h on gpt-4o / gpt-4.1 / gpt-5 / gpt-5.5);
``retention="in_memory"`` simulates a zero-data-retention organisation or an explicit in-memory policy:
"The system typically clears caches within 5 to 10 minutes of inactivity and always removes them within one
hour" (https://learn.microsoft.com/azure/foundry/openai/how-to/prompt-caching), 300 s here, the floor.
The same rules, with another minimum and step, run the Gemini and DeepSeek rows:
``OpenAICache(rules=rule_for("gemini-2.5-pro"))``.

What it shares with the other simulators lives in ``cache.py``. Simplified on purpose: inside the
first differing block the shared tokens are the o200k token prefix of the two blocks' wire text,
scaled to the block's token count. Taught in chapter 04.
"""

from __future__ import annotations

import bisect
from dataclasses import replace
from functools import lru_cache

from ctxlab.base.errors import CtxlabError
from ctxlab.cache import CacheEntry, CacheOutcome, CacheStore, plain_chain, shared_blocks, too_short
from ctxlab.render import Block, RenderedRequest
from ctxlab.tables.offline_encodings import get_encoding
from ctxlab.tables.cache_rules import IN_MEMORY_TTL_S, CacheRule, bills_cache_writes, model_key

RETENTIONS = ("in_memory", "24h")  # prompt_cache_retention (SDK e43b422); None: the row's default


@lru_cache(maxsize=512)
def _ids(text: str) -> tuple[int, ...]:
    """o200k token ids of a block's wire text (cached: the same blocks are compared call after call)."""
    return tuple(get_encoding("o200k_base").encode(text, disallowed_special=()))


def _shared_in_block(old: Block, new: Block) -> int:
    """Tokens two differing blocks share at their start: the o200k token prefix of their wire text,
    scaled to the block's own token count (so the sum stays consistent with ``cum_tokens``).
    Example: 400 tokens ``" x" * 400`` vs ``" x" * 200 + " y" * 200`` → 200."""
    if old.digest == new.digest or not old.text or not new.text:
        return 0  # same text but a different chain before it (e.g. thinking salt): nothing in it is shared
    a, b = _ids(old.text), _ids(new.text)
    k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return min(old.tokens, new.tokens, k * new.tokens // max(1, len(b)))


def shared_prefix_tokens(old: RenderedRequest, new: RenderedRequest) -> int:
    """Tokens at the start of ``new`` identical to ``old``: whole blocks by prefix digest, then tokens.

    Example: system 1,000 + a 400-token user block whose second half changed → 1,000 + 200 = 1,200.
    Chapter 04.
    """
    n = min(len(old.blocks), len(new.blocks))
    lo = shared_blocks(old, new)
    shared = new.cum_tokens[lo - 1] if lo else 0
    return shared + (_shared_in_block(old.blocks[lo], new.blocks[lo]) if lo < n else 0)


def floor_to(tokens: int, step: int) -> int:
    """Round down to a multiple of ``step`` (OpenAI's 128-token steps): ``floor_to(4_860, 128)`` → 4,736,
    ``floor_to(1_279, 128)`` → 1,152. Chapter 04."""
    return tokens // step * step


class OpenAICache:
    """Automatic prefix caching: prompts of ``min_tokens``+ are stored; reads in ``increment_tokens`` steps.

    Cache writes are billed only where :func:`~ctxlab.tables.cache_rules.bills_cache_writes` says so (the
    GPT-5.6 family on, simulated by :class:`~ctxlab.cache_openai_breakpoints.OpenAIBreakpointCache`);
    elsewhere newly cached tokens count as uncached input. Also runs the Gemini and DeepSeek
    rows: ``OpenAICache(rules=rule_for("gemini-2.5-pro"))``. ``retention``: ``prompt_cache_retention``,
    None (the row's default TTL: 24 h on gpt-4.1, so a 6-minute pause still hits), ``"in_memory"``
    (300 s, the floor of "5 to 10 minutes"; a model that offers only 24 h, e.g. gpt-5.5, raises
    CtxlabError at its first request) or ``"24h"`` (86,400 s); ``ttl_s`` overrides it. Other arguments as for
    :class:`~ctxlab.cache_anthropic.AnthropicCache` (a bad one raises CtxlabError naming it). Chapter 04.
    """

    mode = "automatic"

    def __init__(self, rules: CacheRule | None = None, min_tokens: int | None = None,
                 ttl_s: float | None = None, retention: str | None = None) -> None:
        if retention is not None and retention not in RETENTIONS:
            raise CtxlabError(f"retention must be None, 'in_memory' or '24h' (prompt_cache_retention; "
                              f"got {retention!r})")
        self._s = CacheStore(rules, min_tokens, ttl_s)
        self.retention = retention

    def _ttl(self, rule: CacheRule, model: str) -> float:
        """The TTL ``retention`` asks for on this rule row (None: the row's default)."""
        if self.retention is None:
            return rule.ttl_s
        if self.retention == "in_memory" and rule.ttl_options_s and min(rule.ttl_options_s) >= 3600:
            raise CtxlabError(f"retention='in_memory' is not offered for {model} (only "
                              f"{', '.join(f'{t:g} s' for t in rule.ttl_options_s)}); leave retention=None")
        return IN_MEMORY_TTL_S if self.retention == "in_memory" else 86400.0

    def request(self, req: RenderedRequest, at_s: float | None, *, ttl_s: float | None = None,
                response_started_s: float | None = None) -> CacheOutcome:
        """Read, write and uncached tokens of ``req`` sent at ``at_s``. The texts' call 3: a 4,990-token
        prompt after a 4,860 one reads 4,736 and sends 254 uncached. Chapter 04."""
        s = self._s
        s.calls += 1
        rule, minimum = s.rule(req, self.mode)
        ttl, step, model = ttl_s or s.ttl_s or self._ttl(rule, req.model), rule.increment_tokens, model_key(req.model)
        if req.total_tokens < minimum:
            return CacheOutcome.of(req, 0, 0, 0, None, too_short(rule, minimum))
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
            s.put(CacheEntry(model, req.blocks[-1].prefix_digest, plain_chain(req, s.chains)[-1], blocks_total,
                             s.calls, req.thinking, ttl, born, born, req))
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
        return CacheOutcome.of(req, read, write, write if ttl >= 3600 else 0, until if until != -1 else None, reason)

    def warm_head(self, req: RenderedRequest, at_s: float | None) -> None:
        """Store the static head (tools + system) as if an earlier session had sent it. Chapter 04."""
        h = sum(1 for b in req.blocks if b.kind in ("tools", "system"))
        rule, minimum = self._s.rule(req, self.mode)
        if h and req.cum_tokens[h - 1] >= minimum:
            head = replace(req, blocks=req.blocks[:h], cum_tokens=req.cum_tokens[:h], overhead_tokens=0)
            self._s.put(CacheEntry(model_key(req.model), head.blocks[-1].prefix_digest,
                                   plain_chain(head, self._s.chains)[-1], head.cum_tokens[-1], 0, req.thinking,
                                   self._s.ttl_s or self._ttl(rule, req.model), at_s, at_s, head))
