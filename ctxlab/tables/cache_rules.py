"""Prompt-cache rules per provider and model family: dated data with the source of each fact.

The simulators (``cache_anthropic.py``, ``cache_openai.py``) read these rows; nothing here simulates
anything. A row says how a family caches: explicit ``breakpoints`` (Anthropic) or ``automatic``
prefix matching (OpenAI, Gemini, DeepSeek), the minimum cacheable prompt, the step reads are
rounded down to, the TTL, and the price multipliers. ``verified=False`` marks a row we could not
confirm in the provider's own documentation on the ``checked`` date — the simulators use it, the
chapter says so.

One rule is a *dated rule about prices*: OpenAI began billing cache writes (1.25x input) with the
GPT-5.6 family. Rather than hard-code a model list, :func:`bills_cache_writes` asks the installed
price table (``genai-prices``): writes are billed when it lists a cache-write price for the model.
Taught in chapter 04.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from ctxlab.base import validate
from ctxlab.base.errors import CtxlabError

CHECKED = "2026-11-30"

ANTHROPIC_DOCS = "https://platform.claude.com/docs/en/build-with-claude/prompt-caching"
ANTHROPIC_MINIMUMS = (ANTHROPIC_DOCS + " (minimum cacheable prompt length, as quoted in "
                      "github.com/anthropics/anthropic-sdk-python/issues/1194)")
OPENAI_DOCS = "https://developers.openai.com/api/docs/guides/prompt-caching"
OPENAI_RETENTION = "https://learn.microsoft.com/azure/foundry/openai/how-to/prompt-caching (prompt cache retention)"
GEMINI_DOCS = "https://ai.google.dev/gemini-api/docs/caching (implicit caching; page dated 2026-10-13)"
DEEPSEEK_DOCS = "https://api-docs.deepseek.com/guides/kv_cache"


@dataclass(frozen=True)
class CacheRule:
    """How one model family caches prompts. Token figures in tokens, times in seconds.

    ``increment_tokens``: reads are rounded down to a multiple of it (OpenAI: 128).
    ``write_multiplier`` / ``write_1h_multiplier`` / ``read_multiplier``: price of a cache write
    (5 min / 1 h) or read relative to the uncached input price; ``None`` = not billed separately.
    ``writes_billed``: ``None`` means "ask the price table" (:func:`bills_cache_writes`).
    Token figures are positive whole numbers, times positive seconds and multipliers numbers of 0
    or more (or None); anything else raises CtxlabError naming the field. Chapter 04.
    """

    provider: str
    family: str
    pattern: str  # regex on the bare model id (vendor prefix and date suffix removed)
    mode: Literal["breakpoints", "automatic"]
    min_tokens: int
    increment_tokens: int = 1
    ttl_s: float = 300.0
    ttl_options_s: tuple[float, ...] = (300.0,)
    refreshed_by_read: bool = True
    max_breakpoints: int | None = None
    lookback_blocks: int | None = None
    write_multiplier: float | None = None
    write_1h_multiplier: float | None = None
    read_multiplier: float | None = 0.1
    writes_billed: bool | None = False
    verified: bool = True
    source: str = ""
    note: str = ""
    checked: str = CHECKED

    def __post_init__(self) -> None:
        if not isinstance(self.ttl_options_s, (tuple, list)):
            raise CtxlabError(f"ttl_options_s must be a tuple of seconds, e.g. (300.0, 3600.0) "
                              f"(got {type(self.ttl_options_s).__name__})")
        validate.settle(
            self, min_tokens=validate.tokens("min_tokens", self.min_tokens, allow_none=False),
            increment_tokens=validate.tokens("increment_tokens", self.increment_tokens, allow_none=False),
            ttl_s=validate.seconds("ttl_s", self.ttl_s, allow_none=False),
            ttl_options_s=tuple(validate.seconds(f"ttl_options_s[{k}]", t, allow_none=False)
                                for k, t in enumerate(self.ttl_options_s)),
            max_breakpoints=validate.whole("max_breakpoints", self.max_breakpoints, unit="breakpoints"),
            lookback_blocks=validate.whole("lookback_blocks", self.lookback_blocks, unit="blocks"),
            **{name: validate.ratio(name, getattr(self, name), 0.0, None, lo_open=False, allow_none=True)
               for name in ("write_multiplier", "write_1h_multiplier", "read_multiplier")})


def _anthropic(family: str, pattern: str, min_tokens: int, verified: bool = True, note: str = "") -> CacheRule:
    return CacheRule(
        provider="anthropic", family=family, pattern=pattern, mode="breakpoints", min_tokens=min_tokens,
        ttl_s=300.0, ttl_options_s=(300.0, 3600.0), max_breakpoints=4, lookback_blocks=20,
        write_multiplier=1.25, write_1h_multiplier=2.0, read_multiplier=0.1, writes_billed=True,
        verified=verified, source=ANTHROPIC_MINIMUMS, note=note)


ANTHROPIC_FACTS = (
    "Breakpoints: cache_control on a content block caches the prefix up to it (tools -> system -> "
    "messages); at most 4 per request. A breakpoint looks for an earlier entry at itself and up to "
    "20 blocks before it. TTL 5 min by default, 1 h option; every read refreshes it. Writes cost "
    "1.25x input (5 min) or 2x (1 h), reads 0.1x. For concurrent requests a cache entry only becomes "
    "available after the first response begins. Caches are per model. Source: " + ANTHROPIC_DOCS
)

# What a change does to Anthropic's three cache levels. (change, invalidated, survives)
ANTHROPIC_INVALIDATION: tuple[tuple[str, str, str], ...] = (
    ("tool definitions", "tools, system and messages", "nothing"),
    ("web search / citations / speed setting", "system and messages", "tools"),
    ("system prompt", "system and messages", "tools"),
    ("tool_choice, images present", "messages", "tools and system"),
    ("thinking parameters (on/off, budget)", "messages", "tools and system"),
    ("model", "everything (caches are per model)", "nothing"),
)

RULES: tuple[CacheRule, ...] = (
    _anthropic("Claude Opus 4.5 / 4.6", r"^claude-opus-4-[56]", 4096),
    _anthropic("Claude Haiku 4.5", r"^claude-haiku-4-5", 4096),
    _anthropic("Claude Opus 4.7", r"^claude-opus-4-7", 4096, verified=False,
               note="secondary sources disagree (4,096 vs 2,048)"),
    _anthropic("Claude Sonnet 4.6", r"^claude-sonnet-4-6", 1024, verified=False,
               note="docs say 1,024; users and gateways report 2,048 in practice (sdk issue #1194)"),
    _anthropic("Claude Opus 5 / Fable 5 / Mythos 5", r"^claude-(opus|fable|mythos)-5", 512, verified=False,
               note="from gateway docs (LiteLLM), not seen in Anthropic's own page"),
    _anthropic("Claude Opus 4.8 / Sonnet 5", r"^claude-(opus-4-8|sonnet-5)", 1024, verified=False,
               note="from gateway docs (LiteLLM), not seen in Anthropic's own page"),
    _anthropic("Claude Sonnet 4.5 / 4, Opus 4.1 / 4, Sonnet 3.7 / 3.5, Opus 3",
               r"^claude-(sonnet-4|opus-4|3-7-sonnet|sonnet-3-7|3-5-sonnet|3-opus|3-sonnet)", 1024),
    _anthropic("Claude Haiku 3.5 / 3", r"^claude-(3-5-haiku|3-haiku|haiku-3)", 2048),
    _anthropic("Claude (family not listed)", r"^claude-", 1024, verified=False,
               note="an unlisted Claude model: the most common minimum is assumed"),
    CacheRule(
        provider="openai", family="OpenAI automatic prefix caching (gpt-4o and newer)", pattern=r".",
        mode="automatic", min_tokens=1024, increment_tokens=128, ttl_s=300.0,
        ttl_options_s=(300.0, 600.0, 3600.0, 86400.0), write_multiplier=1.25, read_multiplier=None,
        writes_billed=None, source=f"{OPENAI_DOCS}; {OPENAI_RETENTION}",
        note="prompts >= 1,024 tokens; hits in 128-token steps; cached_tokens is part of prompt_tokens. "
             "In-memory retention: usually cleared after 5-10 min idle, always within 1 h; "
             "prompt_cache_retention='24h' keeps it up to a day on some models. Writes cost 1.25x input "
             "from the GPT-5.6 family on (free before): see bills_cache_writes. ttl_s is a parameter."),
    CacheRule(
        provider="google", family="Gemini 2.5 implicit caching", pattern=r"^gemini-2\.5", mode="automatic",
        min_tokens=2048, ttl_s=300.0, read_multiplier=0.1, verified=False, source=GEMINI_DOCS,
        note="minimum 2,048 on the 2026-10-13 page (1,024 / 4,096 on earlier versions); read step and "
             "TTL are not documented: 1 token and 5 min assumed"),
    CacheRule(
        provider="google", family="Gemini 3 and newer implicit caching", pattern=r"^gemini-", mode="automatic",
        min_tokens=4096, ttl_s=300.0, read_multiplier=0.1, verified=False, source=GEMINI_DOCS,
        note="minimum 4,096 for 3.x Flash / Pro; read step and TTL not documented (1 token, 5 min assumed)"),
    CacheRule(
        provider="deepseek", family="DeepSeek context caching on disk", pattern=r"^deepseek", mode="automatic",
        min_tokens=64, increment_tokens=64, ttl_s=3600.0, read_multiplier=0.1, verified=False,
        source=DEEPSEEK_DOCS,
        note="earlier docs: 64-token storage units, entries cleared after hours to days; the current page "
             "describes whole prefix units at request boundaries instead. 1 h assumed."),
)


def bare_model(model: str) -> str:
    """Model id without vendor prefix or date: ``"anthropic/claude-opus-4-5-20251101"`` → ``"claude-opus-4-5"``.
    Chapter 04."""
    bare = re.sub(r"^[\w.-]+/", "", model or "").removeprefix("anthropic.")
    bare = re.sub(r"(-\d{8}|-\d{4}-\d{2}-\d{2}|-latest|@.*)$", "", bare)
    return bare


def model_key(model: str) -> str:
    """The key caches are kept under: one model, whatever alias or dated id a transcript used.
    ``model_key("Claude-Opus-4-5-20251101")`` → ``"claude-opus-4-5"``. Chapter 04."""
    return bare_model(model).lower()


NO_CACHE = CacheRule(
    provider="other", family="no documented prompt caching", pattern=r".", mode="automatic",
    min_tokens=1 << 62, read_multiplier=None, verified=False, source="none found",
    note="a model no row knows (e.g. an open model behind a router): nothing is assumed cached")

_VENDORS = (("anthropic", r"^claude"), ("google", r"^gemini"), ("deepseek", r"^deepseek"),
            ("openai", r"^(gpt-|o\d|chatgpt|codex|computer-use)"))


def rule_for(model: str | None, provider: str | None = None) -> CacheRule:
    """The rule row for a model. ``rule_for("claude-opus-4-5")`` → minimum 4,096, breakpoints.

    Without ``provider`` the model's name decides; a model no row knows gets :data:`NO_CACHE`.
    With ``provider`` its last row is the fallback (``rule_for("my-model", "openai")`` → OpenAI's rules).
    Chapter 04.
    """
    bare = model_key(model or "")
    provider = provider or next((v for v, pattern in _VENDORS if re.search(pattern, bare)), None)
    rows = [r for r in RULES if r.provider == provider]
    if not rows:
        return NO_CACHE
    return next((r for r in rows if re.search(r.pattern, bare)), rows[-1])


@lru_cache(maxsize=256)
def bills_cache_writes(model: str, provider: str | None = None) -> bool:
    """Whether a cache write costs extra. Anthropic: always. OpenAI (dated rule, GPT-5.6 family on):
    when the installed ``genai-prices`` table lists a cache-write price for the model. ``"gpt-4o"`` → False.
    Chapter 04."""
    rule = rule_for(model, provider)
    if rule.writes_billed is not None:
        return rule.writes_billed
    try:
        from genai_prices import data_snapshot

        _, info = data_snapshot.get_snapshot().find_provider_model(bare_model(model), None, rule.provider, None)
    except Exception:  # not in the table: no evidence of a write fee
        return False
    prices = info.prices if isinstance(info.prices, list) else [info.prices]
    return any(getattr(getattr(p, "prices", p), "cache_write_mtok", None) for p in prices)
