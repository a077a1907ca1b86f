"""Prefix caches: what every simulator shares — the outcome of one request, the store of entries, test requests.

A provider keeps the work it did on a prompt's beginning (the *prefix cache*, 前缀缓存) for minutes to hours; the
next request starting with the same bytes pays a fraction (per model: docs/providers.md) for that part. For one request
a simulator says what the provider reads from its cache, writes, and sends uncached (:class:`CacheOutcome`:
``read + write + uncached == total``). Three rule sets share one interface, :class:`PrefixCache`, one file each:

* ``cache_anthropic.py`` — :class:`~ctxlab.cache_anthropic.AnthropicCache`: breakpoints, a 20-block lookback;
* ``cache_openai.py`` — :class:`~ctxlab.cache_openai.OpenAICache`: the longest common prefix in 128-token steps;
* ``cache_openai_breakpoints.py`` — :class:`~ctxlab.cache_openai_breakpoints.OpenAIBreakpointCache`: OpenAI from
  GPT-5.6 on, exact reads at breakpoints (``prompt_cache_options``), billed writes, a 30-minute minimum TTL.

All keep their entries in a :class:`CacheStore` (by model and prefix digest; a read refreshes an entry, a write
makes it usable once its response has started) and explain a miss in one line. Times are seconds passed in by the
caller (``None``: no timestamps, nothing expires); nothing here reads a clock or a file. The rules come from
``tables/cache_rules.py``. :func:`request_from_sizes` builds a request from block sizes (the chapter's examples);
:func:`to_provider_fields` gives the usage a provider would report; :func:`prefix_diff` where two requests part.

Simplified on purpose: one TTL per request (Anthropic lets 1 h and 5 min entries mix); entries live
until they expire (no eviction under load). Taught in chapter 04.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Protocol, Sequence

from ctxlab.base import validate
from ctxlab.base.errors import CtxlabError
from ctxlab.render import Block, RenderedRequest, digest, level_salts
from ctxlab.tables.cache_rules import NO_CACHE, CacheRule, model_key, rule_for


@dataclass(frozen=True)
class CacheOutcome:
    """One request through a cache. ``read + write + uncached == total`` (tokens). Chapter 04.

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
        """Read / total input (0.0 for an empty prompt): 4,480 read of 4,860 → 0.92."""
        return self.cache_read_tokens / self.total_input_tokens if self.total_input_tokens else 0.0

    @classmethod
    def of(cls, req: RenderedRequest, read: int, write: int, write_1h: int, until: int | None,
           reason: str) -> CacheOutcome:
        """The outcome for ``req`` given what was read and written; the rest of its tokens are uncached.
        A 4,860-token prompt reading 4,480 and writing 380 → uncached 0. Chapter 04."""
        total = req.total_tokens
        return cls(read, write, write_1h, total - read - write, total, until, reason)


class PrefixCache(Protocol):
    """What the replay needs from a simulator: ``request`` one prompt at a time, and ``warm_head``
    to pre-store the static head (tools + system) as an earlier session would have. Chapter 04."""

    def request(self, req: RenderedRequest, at_s: float | None, *, ttl_s: float | None = None,
                response_started_s: float | None = None) -> CacheOutcome: ...

    def warm_head(self, req: RenderedRequest, at_s: float | None) -> None: ...


@dataclass(eq=False)
class CacheEntry:
    """One cached prefix. Mutable on purpose: a read moves ``used_s`` (the TTL restarts). Chapter 04."""

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
    tool_choice: str = "auto"  # the writing request's tool_choice and images flag, for the reasons
    images: bool = False

    def expired(self, at_s: float | None) -> bool:
        """More than ``ttl_s`` since the last write or read (never, without times)."""
        return at_s is not None and self.used_s is not None and at_s - self.used_s > self.ttl_s

    def pending(self, at_s: float | None) -> bool:
        """Written by a response that had not started yet at ``at_s`` (a parallel request)."""
        return at_s is not None and self.available_s is not None and at_s < self.available_s


class PlainChain:
    """Each block's prefix digest without the salts (thinking, tool_choice, images, stripped thinking), by block
    index (negative counts from the end): equal here but not in ``prefix_digest`` means only a salt changed.
    ``known`` (prefix digest → plain digest) is the store's memory: a replay hashes each block once. Chapter 04."""

    def __init__(self, req: RenderedRequest, known: dict[str, str]) -> None:
        self.blocks, self.known = req.blocks, known

    def __len__(self) -> int:
        return len(self.blocks)

    def __getitem__(self, j: int) -> str:
        j = j + len(self.blocks) if j < 0 else j
        k = j  # walk back to the newest block already chained
        while k >= 0 and self.blocks[k].prefix_digest not in self.known:
            k -= 1
        chain = self.known[self.blocks[k].prefix_digest] if k >= 0 else ""
        for b in self.blocks[k + 1:j + 1]:
            chain = self.known[b.prefix_digest] = digest(chain + b.digest)
        return chain


CHAINS_KEPT = 50_000  # prefix digests a store's memory holds before it starts again (about 10 MB)


def plain_chain(req: RenderedRequest, known: dict[str, str] | None = None) -> PlainChain:
    """:class:`PlainChain` of ``req`` (``known``: a store's memory, else a fresh one). Chapter 04. Past
    :data:`CHAINS_KEPT` digests the memory is emptied and later requests chain their blocks again (only slower)."""
    if known is not None and len(known) > CHAINS_KEPT:
        known.clear()
    return PlainChain(req, {} if known is None else known)


def too_short(rule: CacheRule, minimum: int) -> str:
    """Why a prompt under the minimum is not cached: ``too_short(rule, 1_024)`` → ``"miss: below minimum 1,024"``
    (or, for :data:`~ctxlab.tables.cache_rules.NO_CACHE`, that the model documents none). Chapter 04."""
    return ("miss: no documented prompt caching for this model" if rule is NO_CACHE
            else f"miss: below minimum {minimum:,}")


class CacheStore:
    """A simulator's entries by (model, prefix digest), and by the prefix without thinking salt (for the
    reasons). ``rules`` fixes one rule row for every model (None: looked up per request); ``min_tokens``
    and ``ttl_s`` override the row's (a positive whole number of tokens, positive seconds; None: the
    row's). A bad argument raises CtxlabError naming it. Chapter 04."""

    def __init__(self, rules: CacheRule | None, min_tokens: int | None, ttl_s: float | None) -> None:
        if rules is not None and not isinstance(rules, CacheRule):  # the simulators' arguments, checked once here
            raise CtxlabError(f"rules must be a CacheRule (e.g. rule_for('gemini-2.5-pro')) or None "
                              f"(got {type(rules).__name__})")
        self.rules = rules
        self.min_tokens = validate.tokens("min_tokens", min_tokens)
        self.ttl_s = validate.seconds("ttl_s", ttl_s)
        self.entries: dict[tuple[str, str], CacheEntry] = {}  # (model, prefix) -> entry
        self.plain: dict[str, list[CacheEntry]] = {}  # prefix without thinking salt -> entries
        self.chains: dict[str, str] = {}  # prefix digest -> the same prefix without thinking salt (PlainChain)
        self.models: dict[str, int] = {}  # model -> entries written for it
        self.calls = 0

    def rule(self, req: RenderedRequest, mode: str) -> tuple[CacheRule, int]:
        """The rule row for this request's model (``mode`` picks a row of that kind), and its minimum."""
        rule = self.rules or rule_for(req.model, "anthropic" if mode == "breakpoints" else None)
        if rule.mode != mode or (rule is NO_CACHE and req.provider == "openai"):
            rule = rule_for(req.model, "openai")  # e.g. a Claude transcript replayed under OpenAI's rules
        return rule, self.min_tokens or rule.min_tokens

    def put(self, e: CacheEntry) -> None:
        """Store ``e``, replacing an entry with the same model and prefix."""
        self.drop(self.entries.get((e.model, e.prefix)))
        self.entries[(e.model, e.prefix)] = e
        self.plain.setdefault(e.plain, []).append(e)
        self.models[e.model] = self.models.get(e.model, 0) + 1

    def drop(self, e: CacheEntry | None) -> None:
        """Forget ``e`` (nothing for None)."""
        if e is not None:
            self.plain[e.plain].remove(e)
            del self.entries[(e.model, e.prefix)]
            self.models[e.model] -= 1

    def has_model(self, model: str) -> bool:
        """Whether any entry was written for ``model`` (else a miss is a cold start)."""
        return self.models.get(model, 0) > 0

    def why_not(self, e: CacheEntry, req: RenderedRequest, at_s: float | None, thinking: bool = True) -> str | None:
        """Why an entry with the same bytes cannot be read (None: it can); thinking=False skips Anthropic's salts."""
        if e.model != model_key(req.model):
            return f"model changed (entry written for {e.model})"
        if thinking and e.thinking != req.thinking:
            return f"thinking changed ({e.thinking} → {req.thinking})"
        for what, old, new in (("tool_choice", e.tool_choice, req.tool_choice), ("images", e.images, req.images)):
            if thinking and old != new:  # tables/cache_invalidation.py: both invalidate the messages
                return f"{what} changed ({old} → {new}): message caches invalidated"
        if e.pending(at_s):
            return (f"parallel: entry from call {e.call} is usable only once its response has started "
                    f"({e.available_s - at_s:.1f} s later)")
        if e.expired(at_s):
            return f"expired after {at_s - e.used_s:.0f} s (ttl {e.ttl_s:.0f})"
        return None


# ---------------------------------------------------------------- helpers for chapters and tests

def request_from_sizes(pieces: Sequence[tuple[str, int] | tuple[str, int, str]], *, model: str = "claude-sonnet-4-6",
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

    for i, piece in enumerate(pieces):
        label, tokens, text = piece[0], piece[1], (piece[2] if len(piece) > 2 else "")
        kind = next((k for k in ("tools", "system") if label.startswith(k)), "message")
        block_digest = digest(f"{label}\x00{tokens}\x00{text}")
        if kind == "message" and not salted:
            chain, salted = digest(chain + level_salts(thinking)["messages"]), True  # as render_blocks salts it
        chain = digest(chain + block_digest)
        total += tokens
        blocks.append(Block(kind, label, block_digest, chain, tokens, text, label if kind == "message" else None,
                            i in marks))
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


# ---- where two requests part (chapter 04: what a miss is) ----

@dataclass(frozen=True)
class PrefixDiff:
    """Where two requests part: ``index`` of the first differing block (None when one is a prefix of
    the other), ``shared_tokens`` before it, and a one-line ``reason``. Chapter 04."""

    index: int | None
    shared_tokens: int
    reason: str
    old: Block | None = None
    new: Block | None = None


def shared_blocks(old: RenderedRequest, new: RenderedRequest) -> int:
    """How many leading blocks ``new`` repeats from ``old`` (0 … the shorter length). Chapter 04. A prefix digest
    chains every block up to its own, so the first difference is found by bisection — O(log n), not a scan."""
    lo, hi = 0, min(len(old.blocks), len(new.blocks))
    while lo < hi:
        mid = (lo + hi) // 2
        if old.blocks[mid].prefix_digest == new.blocks[mid].prefix_digest:
            lo = mid + 1
        else:
            hi = mid
    return lo


def prefix_diff(old: RenderedRequest, new: RenderedRequest) -> PrefixDiff:
    """The first block where ``new`` stops repeating ``old``. ``[t, s, m1]`` vs ``[t, s, m1, m2]`` → appended only;
    equal bytes under a new chain → the salt that changed, or earlier thinking stripped. Chapter 04."""
    n = min(len(old.blocks), len(new.blocks))
    lo = shared_blocks(old, new)
    i = lo if lo < n else None
    if model_key(old.model) != model_key(new.model):
        return PrefixDiff(0, 0, f"model changed ({old.model} → {new.model}): caches are per model")
    if i is None:
        shared = old.cum_tokens[n - 1] if n else 0
        grew = len(new.blocks) - len(old.blocks)
        why = f"prefix kept; {grew} blocks appended" if grew >= 0 else f"new request is shorter by {-grew} blocks"
        return PrefixDiff(None, shared, why)
    shared = old.cum_tokens[i - 1] if i else 0
    a, b = old.blocks[i], new.blocks[i]
    changed = [(name, x, y) for name, x, y in (("thinking setting", old.thinking, new.thinking), ("tool_choice",
               old.tool_choice, new.tool_choice), ("images", old.images, new.images)) if x != y]
    if a.digest == b.digest and a.kind == "message":
        why = (f"{changed[0][0]} changed ({changed[0][1]} → {changed[0][2]}): message caches invalidated" if changed
               else f"earlier thinking stripped at block {i}: a new user turn on a last-turn-only model")
    elif a.kind != b.kind:
        why = f"{a.label} replaced by {b.label}"
    elif a.message_id and a.message_id != b.message_id:
        why = f"history changed at block {i}: {a.label} dropped or replaced by {b.label}"
    else:
        why = f"{a.kind} block {b.label} changed"
    return PrefixDiff(i, shared, why, a, b)
