"""Prompt-cache rules per provider and model family: dated data with the source of each fact.

The simulators (``cache_anthropic.py``, ``cache_openai.py``) read these rows; nothing here simulates
anything. A row says how a family caches: explicit ``breakpoints`` (Anthropic), ``automatic``
prefix matching (OpenAI before GPT-5.6, Gemini, DeepSeek) or ``prompt_cache_options`` breakpoints
(OpenAI from GPT-5.6), the minimum cacheable prompt, the step reads are rounded down to, the TTL, and
the price multipliers. :func:`rule_for` builds the row of a model the dated table
:mod:`ctxlab.tables.model_facts` knows from that table, on a date (each value with its
:class:`~ctxlab.tables.model_facts.Source` in ``sources``); other models get the regex rows of
:data:`RULES`, marked ``verified=False`` with the reason in ``note``.

One rule is a *dated rule about prices*: OpenAI began billing cache writes (1.25x input) with the
GPT-5.6 family. :func:`bills_cache_writes` reads it from the table row (write multiplier above 1) and, for a
model the table lacks, asks the installed price table (``genai-prices``): writes are billed when it lists a
cache-write price. Dollars always come from the price table (``tables/prices.py``); the rows' multipliers are
what the chapter states, and they agree with it for every family both know (``tests/test_cache_rules_facts.py``).
Taught in chapter 04.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import date
from functools import lru_cache
from typing import Literal

from ctxlab.base import validate
from ctxlab.base.errors import CtxlabError
from ctxlab.tables.cache_invalidation import ANTHROPIC_INVALIDATION as INVALIDATION_ROWS
from ctxlab.tables.model_facts import READ, ModelFacts, Source, UnknownModelError, as_date, model_facts

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
    ``mode``: ``"breakpoints"`` (Anthropic: cache_control marks, 20-block lookback), ``"automatic"`` (longest
    common prefix, reads in ``increment_tokens`` steps) or ``"prompt_cache_options"`` (OpenAI GPT-5.6 on: up to
    ``max_breakpoints`` writes per request, exact match at a breakpoint, no shorter-prefix fallback, no lookback
    limit, the latest ``read_breakpoints`` breakpoints considered). ``thinking_rule``: earlier turns' thinking
    (``"keep_all"`` / ``"last_turn_only"`` / None). ``family_id`` / ``on``: the model_facts family and date the
    row was built for (None: a regex row); ``sources``: (field, Source) pairs, see :meth:`source_of`.
    Token figures are positive whole numbers, times positive seconds and multipliers numbers of 0
    or more (or None); anything else raises CtxlabError naming the field. Chapter 04.
    """

    provider: str
    family: str
    pattern: str  # regex on the bare model id (vendor prefix and date suffix removed)
    mode: Literal["breakpoints", "automatic", "prompt_cache_options"]
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
    thinking_rule: str | None = None
    read_breakpoints: int | None = None
    family_id: str | None = None
    on: str | None = None
    sources: tuple[tuple[str, Source], ...] = ()

    def source_of(self, field: str) -> Source | None:
        """The Source behind one field of a table-built row (None for a regex row or a field it does not set).
        ``rule_for("claude-opus-5-5").source_of("read_multiplier").quote`` → ``"- Cache read\n- $0.20 / MTok"``."""
        return dict(self.sources).get(field)

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


def _anthropic(family: str, pattern: str, min_tokens: int, verified: bool = True, note: str = "",
               thinking_rule: str | None = "keep_all") -> CacheRule:
    return CacheRule(
        provider="anthropic", family=family, pattern=pattern, mode="breakpoints", min_tokens=min_tokens,
        ttl_s=300.0, ttl_options_s=(300.0, 3600.0), max_breakpoints=4, lookback_blocks=20,
        write_multiplier=1.25, write_1h_multiplier=2.0, read_multiplier=0.1, writes_billed=True,
        verified=verified, source=ANTHROPIC_MINIMUMS, note=note, thinking_rule=thinking_rule)


# What a change does to Anthropic's three cache levels: the table the renderer reads (tables/cache_invalidation.py).
ANTHROPIC_INVALIDATION = INVALIDATION_ROWS

LAST = "last_turn_only"  # "earlier Opus and Sonnet models, and all Haiku models through Claude Haiku 4.5"
RULES: tuple[CacheRule, ...] = (
    _anthropic("Claude Opus 4.5 / 4.6", r"^claude-opus-4-[56]", 4096),
    _anthropic("Claude Haiku 4.5", r"^claude-haiku-4-5", 4096, thinking_rule=LAST),
    _anthropic("Claude Opus 4.7", r"^claude-opus-4-7", 4096, verified=False,
               note="secondary sources disagree (4,096 vs 2,048)"),
    _anthropic("Claude Sonnet 4.6", r"^claude-sonnet-4-6", 1024, verified=False,
               note="docs say 1,024; users and gateways report 2,048 in practice (sdk issue #1194)"),
    _anthropic("Claude Opus 5 / Fable 5 / Mythos 5", r"^claude-(opus|fable|mythos)-5", 512, verified=False,
               note="from gateway docs (LiteLLM), not seen in Anthropic's own page"),
    _anthropic("Claude Opus 4.8 / Sonnet 5", r"^claude-(opus-4-8|sonnet-5)", 1024, verified=False,
               note="from gateway docs (LiteLLM), not seen in Anthropic's own page"),
    _anthropic("Claude Sonnet 4.5 / 4, Opus 4.1 / 4, Sonnet 3.7 / 3.5, Opus 3",
               r"^claude-(sonnet-4|opus-4|3-7-sonnet|sonnet-3-7|3-5-sonnet|3-opus|3-sonnet)", 1024, thinking_rule=LAST),
    _anthropic("Claude Haiku 3.5 / 3", r"^claude-(3-5-haiku|3-haiku|haiku-3)", 2048, thinking_rule=LAST),
    _anthropic("Claude (family not listed)", r"^claude-", 1024, verified=False,
               note="an unlisted Claude model: the most common minimum is assumed", thinking_rule=None),
    CacheRule(  # the SDK (openai-python e43b422): prompt_cache_options is "Supported for `gpt-5.6` and later models"
        provider="openai", family="OpenAI GPT-5.6 and later, not in the table", mode="prompt_cache_options",
        pattern=r"^gpt-(5\.([6-9]|\d\d)|[6-9])", min_tokens=1024, ttl_s=1800.0, ttl_options_s=(1800.0,),
        max_breakpoints=4, read_breakpoints=80, write_multiplier=1.25, read_multiplier=None, writes_billed=True,
        verified=False, source=OPENAI_DOCS, note="the gpt-5.6 row's rules assumed for a later model the table lacks"),
    CacheRule(  # "Organizations without ZDR enabled default to `24h`." (SDK e43b422), as for the table's gpt-4.1 / gpt-5
        provider="openai", family="OpenAI gpt-4.1 / gpt-5 variants, not in the table", pattern=r"^gpt-(4\.1|5)",
        mode="automatic", min_tokens=1024, increment_tokens=128, ttl_s=86400.0, ttl_options_s=(300.0, 86400.0),
        read_multiplier=None, writes_billed=None, verified=False, source=OPENAI_DOCS,
        note="a variant (e.g. gpt-4.1-mini) given its family's 24 h default retention; that it offers 24 h is assumed"),
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


IN_MEMORY_TTL_S = 300.0  # OpenAI in-memory retention: "typically clears caches within 5 to 10 minutes" (floor)
_MODES = {"breakpoints": ("breakpoints", 1), "longest_prefix_128": ("automatic", 128),
          "breakpoints_prompt_cache_options": ("prompt_cache_options", 1), "implicit_and_explicit": ("automatic", 1)}
_FROM = (("min_tokens", "min_cache_tokens"), ("read_multiplier", "cache_read_multiplier"),
         ("write_multiplier", "cache_write_5m_multiplier"), ("write_1h_multiplier", "cache_write_1h_multiplier"),
         ("ttl_s", "ttl_default_s"), ("ttl_options_s", "ttl_options_s"), ("mode", "cache_mode"),
         ("thinking_rule", "thinking_rule"))


def rule_from_facts(row: ModelFacts) -> CacheRule:
    """The cache rule of one :class:`~ctxlab.tables.model_facts.ModelFacts` row (a family on a date). Chapter 04.

    ``cache_mode`` decides the mode: ``breakpoints`` → Anthropic's (4 breakpoints, 20-block lookback);
    ``longest_prefix_128`` → ``automatic`` in 128-token steps; ``breakpoints_prompt_cache_options`` →
    ``prompt_cache_options`` (4 writes, latest 80 breakpoints read, no lookback limit, step 1);
    ``implicit_and_explicit`` (Gemini) → ``automatic``, step 1, TTL 5 min assumed (the table's 1 h is
    explicit caching's). Writes are billed when the table's write multiplier exceeds 1.
    """
    mode, step = _MODES[row.cache_mode.value]
    v = {mine: getattr(row, theirs).value for mine, theirs in _FROM}
    src = {mine: getattr(row, theirs).source for mine, theirs in _FROM}
    note = [f"from model_facts {row.family} on {row.on.isoformat()}"]
    if row.cache_mode.value == "implicit_and_explicit" or v["ttl_s"] is None:
        v["ttl_s"], note = 300.0, note + ["implicit-cache TTL not documented: 5 min assumed"]
        src.pop("ttl_s")
    opts = tuple(v["ttl_options_s"] or (v["ttl_s"],))
    write = v["write_multiplier"]
    kind = {"breakpoints": dict(max_breakpoints=4, lookback_blocks=20),
            "prompt_cache_options": dict(max_breakpoints=4, read_breakpoints=80)}.get(mode, {})
    return CacheRule(
        provider=row.provider, family=row.family, pattern=re.escape(row.family), mode=mode, min_tokens=v["min_tokens"],
        increment_tokens=step, ttl_s=v["ttl_s"], ttl_options_s=opts, write_multiplier=write,
        write_1h_multiplier=v["write_1h_multiplier"], read_multiplier=v["read_multiplier"],
        writes_billed=None if write is None else write > 1.0, source=src["min_tokens"].url,
        verified=all(f.status == "documented" for f in src.values()), note="; ".join(note), checked=READ,
        thinking_rule=v["thinking_rule"], family_id=row.family, on=row.on.isoformat(),
        sources=tuple((k, src[k]) for k in (m for m, _ in _FROM) if k in src), **kind)


@lru_cache(maxsize=1024)
def _rule(model: str, provider: str | None, on: date, retention: str | None) -> CacheRule:
    bare = model_key(model)
    guess = provider or next((v for v, pattern in _VENDORS if re.search(pattern, bare)), None)
    try:
        row = model_facts(model, on)
    except UnknownModelError:
        row = None
    if row is not None and (provider is None or provider == row.provider):
        rule = rule_from_facts(row)
    else:
        rows = [r for r in RULES if r.provider == guess]
        if not rows:
            return NO_CACHE
        rule = next((r for r in rows if re.search(r.pattern, bare)), rows[-1])
        why = "not in the model_facts table" if row is None else f"a model of {row.provider} under {guess}'s rules"
        rule = replace(rule, verified=False, note=f"fallback regex row ({why}); {rule.note}".rstrip("; "))
    if retention == "in_memory":
        if rule.provider != "openai" or rule.mode != "automatic":
            raise CtxlabError(f"retention='in_memory' is an OpenAI option for models before GPT-5.6 "
                              f"(got {model!r}, {rule.provider} {rule.mode}); leave retention=None")
        rule = replace(rule, ttl_s=IN_MEMORY_TTL_S, note=f"{rule.note}; in-memory retention ({IN_MEMORY_TTL_S:g} s)")
    elif retention is not None:
        raise CtxlabError(f"retention must be None or 'in_memory' (got {retention!r})")
    return rule


def rule_for(model: str | None, provider: str | None = None, on: date | str | None = None, *,
             retention: str | None = None) -> CacheRule:
    """The rule row for a model on a date (``on``: a date or ISO string; None: the table's read date, 2026-12-02).

    A model :func:`ctxlab.tables.model_facts.model_facts` knows gets :func:`rule_from_facts` of its row:
    ``rule_for("claude-opus-4-7", on="2026-06-09").min_tokens`` → 4096, on ``"2026-06-10"`` → 2048;
    ``rule_for("gpt-4.1").ttl_s`` → 86400 (24 h: OpenAI's default for organisations without zero data
    retention). ``retention="in_memory"`` simulates OpenAI's in-memory retention (TTL 300 s, the floor of
    "5 to 10 minutes"; OpenAI models before GPT-5.6 only, else CtxlabError). Other models: the regex rows of
    :data:`RULES` (``verified=False``, the reason in ``note``); with ``provider`` its last row is the fallback
    (``rule_for("my-model", "openai")`` → OpenAI's rules); a model no row knows gets :data:`NO_CACHE`.
    A ``provider`` other than the table's (a Claude transcript replayed under OpenAI's rules) takes that
    provider's regex row. Chapter 04.
    """
    return _rule(model or "", provider, as_date(on), retention)


@lru_cache(maxsize=256)
def bills_cache_writes(model: str, provider: str | None = None) -> bool:
    """Whether a cache write costs extra. Anthropic: always. OpenAI (dated rule, GPT-5.6 family on): the table
    row's write multiplier is above 1 (``"gpt-5.6"`` → True, ``"gpt-4o"`` → False); for a model the table lacks,
    when the installed ``genai-prices`` table lists a cache-write price for it. Chapter 04."""
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
