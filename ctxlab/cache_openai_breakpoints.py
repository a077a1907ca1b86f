"""OpenAI's prompt cache from the GPT-5.6 family on: breakpoints, exact matches, billed writes, a 30-minute minimum.

Unlike :class:`~ctxlab.cache_openai.OpenAICache` (models before GPT-5.6): an entry ends at a *breakpoint*,
not at the end of every long prompt, and a later request reads it only if it repeats that prefix exactly —
no 128-token rounding and no fallback to a shorter, unmarked prefix; writes are billed (1.25x the
uncached input rate) and reported as ``cache_write_tokens``; an entry lives at least 30 minutes; and
``prompt_cache_key`` decides which requests share entries. Unlike
:class:`~ctxlab.cache_anthropic.AnthropicCache`: OpenAI adds one breakpoint of its own (``implicit`` mode),
and a read has no lookback limit — any entry ending where this prompt repeats it counts.

What OpenAI documents (openai-python SDK e43b422, 2026-08-21, generated from OpenAI's API spec,
``src/openai/types/responses/response_create_params.py``; prompt caching guide,
https://developers.openai.com/api/docs/guides/prompt-caching?prompt-cache-api=chat-completions; both
read 2026-12-02; the rows and their dates are in ``tables/model_rows_others.py``):

* "By default, OpenAI automatically chooses one implicit cache breakpoint. You can add explicit breakpoints
  to content blocks with ``prompt_cache_breakpoint``. Each request can write up to four breakpoints. For
  cache matching, OpenAI considers up to the latest 80 breakpoints in the conversation, without a
  content-block lookback limit." (``prompt_cache_options``, SDK);
* "With ``implicit``, OpenAI creates one implicit breakpoint and writes up to the latest three explicit
  breakpoints in the request. With ``explicit``, OpenAI does not create an implicit breakpoint and writes up
  to the latest four explicit breakpoints. If there are no explicit breakpoints, the request does not use
  prompt caching." (``prompt_cache_options.mode``, SDK);
* a breakpoint "Marks the exact end of a reusable prompt prefix. [...] the boundary is not rounded to a
  token block." (``PromptCacheBreakpoint``, SDK ``types/responses/response_input_text.py``);
* ``ttl``: "The minimum lifetime applied to every implicit and explicit cache breakpoint written by the
  request. Defaults to ``30m``, which is currently the only supported value." (SDK);
* "For GPT-5.6 models and later model families, cache writes cost 1.25× the uncached input token rate.
  [...] OpenAI reports writes in cache_write_tokens and reads in cached_tokens" (guide);
* ``prompt_cache_key``: "Used by OpenAI to cache responses for similar requests to optimize your cache hit
  rates." (SDK);
* the read, in the guide's words as quoted in https://github.com/affaan-m/ECC/pull/3173 (read 2026-12-02):
  "subsequent requests look for the longest matching cached prefix available, working backward through
  eligible breakpoints until they find a match" — so a read walks back from the prompt's end.

Assumed where the documents are silent (each marked "assumed" in ``tests/test_cache_openai_breakpoints.py``):

* the implicit breakpoint sits on the prompt's last block. OpenAI's own migration notes, as quoted in
  https://github.com/openai/codex/issues/35300 (read 2026-12-02), say only "GPT-5.6 implicit caching places a
  managed breakpoint near the latest user or tool message"; an agent's prompt ends with that message;
* a read refreshes the entry's lifetime (the TTL restarts), as in the older mode;
* entries are kept per ``prompt_cache_key``: a request reads only entries written under the same key (no
  key is one key of its own). OpenAI says the key improves matching, not that other keys never match;
* a breakpoint's prefix must hold the model's minimum (1,024 tokens) to be written; "the latest 80
  breakpoints" are the 80 positions nearest the prompt's end that carry an entry or an explicit mark.

What it shares with the other simulators lives in ``cache.py``. Taught in chapter 04.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ctxlab.base.errors import CtxlabError
from ctxlab.cache import CacheEntry, CacheOutcome, CacheStore, plain_chain, shared_blocks, too_short
from ctxlab.cache_openai import OpenAICache
from ctxlab.render import RenderedRequest, digest
from ctxlab.tables.cache_rules import CacheRule, model_key, rule_for

MODES = ("implicit", "explicit")  # prompt_cache_options.mode
READ_BREAKPOINTS = 80  # "OpenAI considers up to the latest 80 breakpoints in the conversation" (SDK e43b422)
MAX_WRITES = 4  # "Each request can write up to four breakpoints." (SDK e43b422)


def openai_simulator(model: str, settings: Mapping[str, Any] | None = None) -> type:
    """The OpenAI simulator class for ``model``: :class:`OpenAIBreakpointCache` where its rule row's mode is
    ``"prompt_cache_options"`` (GPT-5.6 family on), else :class:`~ctxlab.cache_openai.OpenAICache`.
    ``settings``: the simulator's keyword arguments (a replay's ``cache_rules``); a fixed row in ``"rules"``
    decides instead of the model. ``openai_simulator("gpt-4.1")`` → OpenAICache, ``openai_simulator("gpt-5.6")``
    → OpenAIBreakpointCache. Chapter 04."""
    rules = (settings or {}).get("rules")
    rule = rules if isinstance(rules, CacheRule) else rule_for(model, "openai")
    return OpenAIBreakpointCache if rule.mode == "prompt_cache_options" else OpenAICache


class OpenAIBreakpointCache:
    """OpenAI's breakpoint rules (GPT-5.6 on): entries at breakpoints, exact reads, billed writes, 30 min minimum.

    ``options_mode``: ``prompt_cache_options.mode``, ``"implicit"`` (default: OpenAI's breakpoint on the last
    block, plus the latest three marked blocks) or ``"explicit"`` (the latest four marked blocks only; none:
    no caching). Marked blocks are those with ``Block.breakpoint`` (``request_from_sizes(..., breakpoints=)``).
    ``prompt_cache_key``: the key every request is sent with (``request`` may give another); entries are
    kept per key. ``rules`` / ``min_tokens`` / ``ttl_s`` as for :class:`~ctxlab.cache_openai.OpenAICache`
    (default TTL: the row's, 1,800 s). A bad argument raises CtxlabError naming it. Chapter 04.
    """

    mode = "prompt_cache_options"

    def __init__(self, rules: CacheRule | None = None, min_tokens: int | None = None, ttl_s: float | None = None,
                 options_mode: str = "implicit", prompt_cache_key: str | None = None) -> None:
        if options_mode not in MODES:
            raise CtxlabError(f"options_mode must be 'implicit' or 'explicit' (prompt_cache_options.mode; "
                              f"got {options_mode!r})")
        self._s = CacheStore(rules, min_tokens, ttl_s)
        self.options_mode, self.prompt_cache_key = options_mode, _key("prompt_cache_key", prompt_cache_key)
        self._keys: dict[str, str | None] = {}  # entry prefix (salted by key) -> the key it was written under
        self._last: dict[tuple[str, str | None], tuple[int, RenderedRequest]] = {}  # newest request per key

    def request(self, req: RenderedRequest, at_s: float | None, *, ttl_s: float | None = None,
                response_started_s: float | None = None, prompt_cache_key: str | None = None) -> CacheOutcome:
        """Read, write and uncached tokens of ``req`` sent at ``at_s`` (``prompt_cache_key``: this request's key,
        default the simulator's). A 1,300-token prompt, then the same 1,300 tokens + 40: the second reads
        1,300 (OpenAICache: 1,280) and writes 40. Entries become usable at ``response_started_s``. Chapter 04."""
        s = self._s
        s.calls += 1
        rule, minimum = s.rule(req, self.mode)
        ttl, model = ttl_s or s.ttl_s or rule.ttl_s, model_key(req.model)
        key = _key("prompt_cache_key", prompt_cache_key) if prompt_cache_key is not None else self.prompt_cache_key
        if req.total_tokens < minimum or not req.blocks:
            return CacheOutcome.of(req, 0, 0, 0, None, too_short(rule, minimum))
        marks, most = set(req.breakpoints), rule.max_breakpoints or MAX_WRITES
        if self.options_mode == "explicit" and not marks:
            return CacheOutcome.of(req, 0, 0, 0, None, "miss: explicit mode and no prompt_cache_breakpoint: "
                                                       "the request does not use prompt caching")
        cold = not s.has_model(model)

        # Read: the longest entry ending exactly at one of this prompt's blocks, among the latest 80 breakpoints.
        until, hit, seen = None, None, 0
        for j in range(len(req.blocks) - 1, -1, -1):
            e = s.entries.get((model, _salted(req, j, key)))
            if e is None and j not in marks:
                continue
            seen += 1
            if seen > (rule.read_breakpoints or READ_BREAKPOINTS):
                break
            if e is not None and s.why_not(e, req, at_s, thinking=False) is None:
                until, hit = j, e
                break
        read = req.cum_tokens[until] if until is not None else 0
        if hit is not None and at_s is not None:
            hit.used_s = at_s  # assumed: a read restarts the lifetime
        lost = self._lost(req, until, at_s, key, seen)

        # Write: the implicit breakpoint (the last block) and the latest explicit ones, up to four.
        k = most - 1 if self.options_mode == "implicit" else most  # explicit breakpoints this request may write
        explicit = sorted(marks)[max(0, len(marks) - k):]
        writes = sorted(set(explicit) | ({len(req.blocks) - 1} if self.options_mode == "implicit" else set()))
        born = response_started_s if response_started_s is not None else at_s
        plain, last = plain_chain(req, s.chains), None
        for j in writes:
            if req.cum_tokens[j] < minimum:
                continue  # a breakpoint below the minimum writes nothing
            prefix = _salted(req, j, key)
            old = s.entries.get((model, prefix))
            if old is None or old.expired(at_s) or (born is not None and (old.available_s or 0) > born):
                s.put(CacheEntry(model, prefix, plain[j], req.cum_tokens[j], s.calls, None, ttl, born, born))
                self._keys[prefix] = key
            if until is None or j > until:
                last = j
        write = req.cum_tokens[last] - read if last is not None else 0

        if hit is not None:
            reason = f"hit: {read:,} tokens at block {until} (exact, entry from call {hit.call})"
            reason += f"; longer prefix missed: {lost}" if lost else ""
        else:
            reason = f"miss: {lost}" if lost else "cold" if cold else self._no_match(req, model, key)
        self._last[(model, key)] = (s.calls, req)
        for e in [e for e in s.entries.values() if e.expired(at_s)]:
            s.drop(e)  # gone for good; keeps the store small
            self._keys.pop(e.prefix, None)
        return CacheOutcome.of(req, read, write, 0, until, reason)

    def _lost(self, req: RenderedRequest, until: int | None, at_s: float | None, key: str | None,
              seen: int) -> str | None:
        """Why the longest entry holding more of this prompt than was read could not be used (None: none)."""
        plain, model = plain_chain(req, self._s.chains), model_key(req.model)
        for j in range(len(req.blocks) - 1, -1 if until is None else until, -1):
            found = self._s.plain.get(plain[j])
            if not found:
                continue
            e = max(found, key=lambda x: (x.model == model, self._keys.get(x.prefix) == key, x.used_s or 0))
            why = self._s.why_not(e, req, at_s, thinking=False)
            if why:
                return why
            if self._keys.get(e.prefix) != key:
                return (f"prompt_cache_key differs (entry from call {e.call} written under "
                        f"{self._keys.get(e.prefix)!r}, this request {key!r})")
            limit = self._s.rule(req, self.mode)[0].read_breakpoints or READ_BREAKPOINTS
            return f"entry at block {j} is not among the latest {limit} breakpoints ({seen} looked at)"
        return None

    def _no_match(self, req: RenderedRequest, model: str, key: str | None) -> str:
        """The reason a warm cache matched nothing: how much the newest prompt shares with this one, unmarked."""
        call, old = self._last.get((model, key), (None, None))
        n = shared_blocks(old, req) if old is not None else 0
        if not n:
            return "miss: no cached prefix matches"
        return (f"miss: {req.cum_tokens[n - 1]:,} tokens shared with call {call}, but no entry ends there "
                "(exact match at a breakpoint; no fallback to a shorter prefix)")

    def warm_head(self, req: RenderedRequest, at_s: float | None) -> None:
        """Store the static head (tools + system) as an earlier session would have: an entry at each marked head
        block, or at the head's last block (assumed: that session marked it). Chapter 04."""
        h = sum(1 for b in req.blocks if b.kind in ("tools", "system"))
        if not h:
            return
        rule, minimum = self._s.rule(req, self.mode)
        head = replace(req, blocks=req.blocks[:h], cum_tokens=req.cum_tokens[:h], overhead_tokens=0)
        plain = plain_chain(head, self._s.chains)
        for j in [i for i in req.breakpoints if i < h] or [h - 1]:
            if head.cum_tokens[j] >= minimum:
                prefix = _salted(head, j, self.prompt_cache_key)
                self._s.put(CacheEntry(model_key(req.model), prefix, plain[j], head.cum_tokens[j], 0, None,
                                       self._s.ttl_s or rule.ttl_s, at_s, at_s))
                self._keys[prefix] = self.prompt_cache_key


def _key(name: str, key: object) -> str | None:
    """A prompt_cache_key as given (a non-empty string or None); anything else raises CtxlabError."""
    if key is None or (isinstance(key, str) and key):
        return key
    raise CtxlabError(f"{name} must be a non-empty string or None (got {key!r})")


def _salted(req: RenderedRequest, j: int, key: str | None) -> str:
    """Block ``j``'s prefix digest under ``key`` (the digest itself without a key): entries are kept per key."""
    d = req.blocks[j].prefix_digest
    return d if key is None else digest(f"prompt_cache_key={key}\x00{d}")
