"""Prices per model from the maintained table ``genai-prices`` (installed, read offline): dated data with a source.

What it holds:

* :func:`price_for` — a model's prices in USD per million tokens (uncached input, output, cache
  read, 5-minute cache write, 1-hour cache write), its long-context tiers, and where they came
  from (package version, the model id the table matched, the table's comment on the model);
* :func:`cost` — the USD cost of one model call, per bucket, priced the way ``genai-prices``
  prices it (``genai_prices.calc_price`` gives the same total; a test checks that);
* :func:`unpriced_note` — what to say when a model is not in the table (its cost is ``None``,
  never 0);
* :func:`price_table_date` — the date the table speaks for: the "as of" date of lifecycle notes.

Only the package's bundled snapshot is read: nothing here calls its update functions, so prices
never change under a running notebook and nothing touches the network. A cost always names its
source: ``"genai-prices 0.2.3 (claude-opus-4-5)"``.

Simplified on purpose: standard prices only — batch, priority and fast-mode variants, per-request
and per-search fees are not applied. Tiers follow genai-prices' cliff rule: the tier is chosen by
the call's *total* prompt tokens (uncached + cache read + cache write) and then applies to every
token of every bucket, output included. A bucket the table lists no price for is billed the way
genai-prices bills it: cache reads and writes at the uncached input price, 1-hour writes at the
5-minute write price. A price names the package version and the table's comment on the model
(:attr:`ModelPrices.price_comments`); the table's date is :data:`CHECKED`. A Bedrock id is priced from
genai-prices' AWS Bedrock rows where it has them (``us.anthropic.claude-sonnet-4-5-20250929-v1:0`` → $3.30 / M
input, the regional price); else it is read back to its bare id (:func:`ctxlab.tables.model_ids.canonical_model_id`)
at Anthropic's list price, noting that Bedrock / Vertex AI prices may differ. Plumbing, the ledger's (chapter 04).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timezone
from functools import lru_cache
from importlib.metadata import version
from typing import Any

from ctxlab.tables.model_ids import canonical_model_id

PACKAGE = "genai-prices"
# genai-prices ships its snapshot undated (no timestamp in the wheel; upstream's per-model `prices_checked` is not
# packaged), so ctxlab dates the version it checked: 0.2.3, read 2026-12-02 (its comments name dates to 2026-12-01).
CHECKED = ("0.2.3", "2026-12-02")
_ROUTED = ("bedrock", "vertex", "@")  # an id that went through a cloud route (Bedrock, Vertex AI) says so
_BUCKETS = ("input", "output", "cache_read", "cache_write", "cache_write_1h")
_PRICE_KEYS = {"input": "input_mtok", "output": "output_mtok", "cache_read": "cache_read_mtok",
               "cache_write": "cache_write_mtok", "cache_write_1h": "cache_write_1h_mtok"}


@lru_cache(maxsize=1)
def package_version() -> str:
    """The installed genai-prices version, e.g. ``"0.2.3"``: the source every price names. Chapter 04."""
    return version(PACKAGE)


def price_table_date() -> date:
    """The date the price table speaks for, ``date(2026, 12, 2)``: the day ctxlab checked the installed
    genai-prices (:data:`CHECKED`; the package ships no snapshot date). The "as of" date of every lifecycle
    note (a model retired on or before it is refused today). Chapter 00 (the default model), chapter 04."""
    return date.fromisoformat(CHECKED[1])


@dataclass(frozen=True)
class PriceTier:
    """Prices (USD per million tokens) for a call whose total prompt exceeds ``above_input_tokens``. Chapter 04."""

    above_input_tokens: int
    input_per_mtok: float | None
    output_per_mtok: float | None
    cache_read_per_mtok: float | None
    cache_write_per_mtok: float | None
    cache_write_1h_per_mtok: float | None


@dataclass(frozen=True)
class ModelPrices:
    """One model's prices in USD per million tokens, from genai-prices.

    ``input_per_mtok`` is the price of an *uncached* prompt token; ``cache_write_per_mtok`` is the
    5-minute write; ``None`` means the table lists no price for that bucket. ``tiers`` (ascending)
    replace these base prices for calls with a longer prompt. ``model_id`` is the table's id for the
    model asked about (``"claude-sonnet-4-20250514"`` → ``"claude-sonnet-4-0"``). Chapter 04.
    """

    model: str  # as asked
    model_id: str
    provider_id: str
    input_per_mtok: float | None
    output_per_mtok: float | None
    cache_read_per_mtok: float | None
    cache_write_per_mtok: float | None
    cache_write_1h_per_mtok: float | None
    tiers: tuple[PriceTier, ...] = ()
    context_window: int | None = None
    package_version: str = ""
    price_comments: str | None = None  # the table's comment on the model (caveats, references)
    request_fee_per_k: float | None = None  # USD per 1,000 requests (a few models); not in :func:`cost`
    note: str = ""  # how the model was matched when not directly (a provider fallback)

    @property
    def source(self) -> str:
        """``"genai-prices 0.2.3 (claude-opus-4-5)"``."""
        return f"{PACKAGE} {self.package_version} ({self.model_id})"

    def rates(self, total_input_tokens: int) -> PriceTier:
        """The prices that apply to a call with this many prompt tokens (the cliff rule).

        Sonnet 4.5: ``rates(200_000).input_per_mtok`` → 3.0; ``rates(200_001).input_per_mtok`` → 6.0.
        """
        for tier in reversed(self.tiers):
            if total_input_tokens > tier.above_input_tokens:
                return tier
        return PriceTier(0, self.input_per_mtok, self.output_per_mtok, self.cache_read_per_mtok,
                         self.cache_write_per_mtok, self.cache_write_1h_per_mtok)


@dataclass(frozen=True)
class Cost:
    """The cost of one model call in USD, per bucket. ``input`` is the *uncached* prompt tokens.

    ``total`` = ``input + cache_read + cache_write + output``. ``tier_above_tokens`` is the tier
    threshold that applied (``None`` at base prices); ``notes`` say where a bucket had no price of
    its own. Chapter 04.
    """

    input: float
    cache_read: float
    cache_write: float
    output: float
    total: float
    source: str
    model_id: str
    tier_above_tokens: int | None = None
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, float]:
        """``{"input": ..., "cache_read": ..., "cache_write": ..., "output": ..., "total": ...}``."""
        return {"input": self.input, "cache_read": self.cache_read, "cache_write": self.cache_write,
                "output": self.output, "total": self.total}


def _candidates(model: str, provider: str | None) -> list[tuple[str, str | None]]:
    """(model ref, provider) pairs to try: as given, then without a vendor prefix.

    ``("openai/gpt-4o", None)`` → ``[("openai/gpt-4o", None), ("gpt-4o", "openai"), ("gpt-4o", None)]``.
    The last candidate, the model id alone, is what decides when the provider lists no such model. A Bedrock id
    tries AWS Bedrock's rows first, even under ``provider="anthropic"`` (the ledger's: cache rules, not the bill).
    """
    out: list[tuple[str, str | None]] = [(model, provider)]
    bare, prefix = model, None
    if "/" in model:
        prefix, bare = model.rsplit("/", 1)
        prefix = prefix.split("/")[-1]
    elif model.lower().startswith("anthropic."):  # Bedrock style: anthropic.claude-...
        prefix, bare = "anthropic", model.split(".", 1)[1]
    if ".anthropic." in f".{model.rsplit('/', 1)[-1].lower()}":  # a Bedrock id names where it was billed
        out.insert(0, (model.rsplit("/", 1)[-1], "aws"))
    if bare != model:
        out += [(bare, provider or prefix), (bare, provider)]
    out += [(bare, None), (canonical_model_id(model), None)]  # last: the bare id, at its vendor's list price
    seen: list[tuple[str, str | None]] = []
    for c in out:
        if c not in seen:
            seen.append(c)
    return seen


@lru_cache(maxsize=512)
def _find(model: str, provider: str | None) -> tuple[Any, Any, str] | None:
    """(genai-prices Provider, ModelInfo, note) or None.

    A provider the table does not know is ignored (pi's ``"google-vertex"``); a provider it knows
    but that lists no price for the model falls back to the model's own vendor, and the note says so.
    """
    from genai_prices import data_snapshot

    snap = data_snapshot.get_snapshot()
    for ref, prov_id in _candidates(model, provider):
        if prov_id:
            try:
                prov = snap.find_provider(None, prov_id, None)
            except LookupError:
                continue  # an unknown provider name: the model-only candidates below decide
            info = prov.find_model(ref, all_providers=snap.providers)
            if info is not None:
                return prov, info, ""
            continue
        try:
            prov, info = snap.find_provider_model(ref, None, None, None)
        except LookupError:
            continue
        asked = f"provider {provider!r} lists no price for {model!r}; " if provider and _known(snap, provider) else ""
        return prov, info, (f"{asked}priced at {prov.id}'s list price" if asked else "")
    return None


def _known(snap: Any, provider: str) -> bool:
    try:
        snap.find_provider(None, provider, None)
        return True
    except LookupError:
        return False


def _float(x: Any) -> float | None:
    return None if x is None else float(x)


def price_for(model: str, provider: str | None = None, at: datetime | None = None) -> ModelPrices | None:
    """The prices of ``model`` (USD per million tokens) at the time ``at`` (default: now; naive = UTC).

    ``price_for("claude-opus-4-5").cache_read_per_mtok`` → 0.5. Vendor prefixes are handled
    (``"openai/gpt-4o"``, ``"anthropic.claude-..."``); a provider the table does not know is
    ignored and the model id decides. ``at`` matters where the table dates a price change or
    prices by the time of day (DeepSeek's off-peak hours). A model not in the table → ``None``. Chapter 04.
    """
    from genai_prices.types import TieredPrices

    found = _find(model, provider) if model else None
    if found is None:
        return None
    prov, info, note = found
    low = model.lower()
    if prov.id == "anthropic" and (any(r in low for r in _ROUTED) or ".anthropic." in f".{low}"):
        note = (f"{info.id} priced at Anthropic's list price (read from {model!r}); "
                "Bedrock and Vertex AI prices may differ")
    when = at or datetime.now(timezone.utc)
    mp = info.get_prices(when if when.tzinfo else when.replace(tzinfo=timezone.utc))
    raw = {b: getattr(mp, _PRICE_KEYS[b], None) for b in _BUCKETS}  # bucket -> Decimal | TieredPrices | None
    base = {b: _float(v.base if isinstance(v, TieredPrices) else v) for b, v in raw.items()}
    starts = sorted({t.start for v in raw.values() if isinstance(v, TieredPrices) for t in v.tiers})

    def at_start(value: Any, start: int) -> float | None:  # a bucket's price for prompts just above `start`
        if not isinstance(value, TieredPrices):
            return _float(value)
        price = value.base
        for t in value.tiers:  # ascending
            if t.start <= start:
                price = t.price
        return float(price)

    tiers = tuple(PriceTier(s, *(at_start(raw[b], s) for b in _BUCKETS)) for s in starts)
    return ModelPrices(
        model=model, model_id=info.id, provider_id=prov.id,
        input_per_mtok=base["input"], output_per_mtok=base["output"], cache_read_per_mtok=base["cache_read"],
        cache_write_per_mtok=base["cache_write"], cache_write_1h_per_mtok=base["cache_write_1h"],
        tiers=tiers, context_window=info.context_window, package_version=package_version(),
        price_comments=info.price_comments, note=note,
        request_fee_per_k=_float(getattr(mp, "requests_kcount", None)))


def unpriced_note(model: str | None, provider: str | None = None) -> str:
    """``"unpriced: model 'x' not in genai-prices 0.2.3"`` (or: no model recorded). Chapter 04."""
    if not model:
        return "unpriced: no model recorded"
    return f"unpriced: model {model!r} not in {PACKAGE} {package_version()}"


def cost(model: str | None, provider: str | None = None, *, uncached_input_tokens: int, cache_read_tokens: int,
         cache_write_tokens: int, cache_write_1h_tokens: int = 0, output_tokens: int,
         at: datetime | None = None) -> Cost | None:
    """The USD cost of one call, per bucket; ``None`` for a model not in the table (see :func:`unpriced_note`).

    ``cache_write_1h_tokens`` is the part of ``cache_write_tokens`` written with the 1-hour TTL.
    Opus 4.5, 1 uncached + 49,030 read + 135 written + 27 output tokens → input $0.000005,
    cache_read $0.024515, cache_write $0.00084375, output $0.000675, total $0.02603875. Chapter 04.
    """
    prices = price_for(model, provider, at) if model else None
    if prices is None:
        return None
    total_input = uncached_input_tokens + cache_read_tokens + cache_write_tokens
    r = prices.rates(total_input)
    if r.input_per_mtok is None or r.output_per_mtok is None:
        return None
    notes = [prices.note] if prices.note else []
    if prices.request_fee_per_k:
        notes.append(f"{prices.model_id}: the fee of ${prices.request_fee_per_k:g} per 1,000 requests is not included")
    read_rate, write_rate, write_1h_rate = r.cache_read_per_mtok, r.cache_write_per_mtok, r.cache_write_1h_per_mtok
    if read_rate is None:
        read_rate = r.input_per_mtok
        if cache_read_tokens:
            notes.append(f"{prices.model_id}: no cache-read price listed; reads billed at the input price")
    if write_rate is None:
        write_rate = r.input_per_mtok
        if cache_write_tokens:
            notes.append(f"{prices.model_id}: no cache-write price listed; writes billed at the input price")
    if write_1h_rate is None:
        write_1h_rate = write_rate
        if cache_write_1h_tokens:
            notes.append(f"{prices.model_id}: no 1-hour write price listed; billed as 5-minute writes")
    per_mtok = 1_000_000
    parts = {
        "input": uncached_input_tokens * r.input_per_mtok / per_mtok,
        "cache_read": cache_read_tokens * read_rate / per_mtok,
        "cache_write": ((cache_write_tokens - cache_write_1h_tokens) * write_rate
                        + cache_write_1h_tokens * write_1h_rate) / per_mtok,
        "output": output_tokens * r.output_per_mtok / per_mtok,
    }
    return Cost(**parts, total=sum(parts.values()), source=prices.source, model_id=prices.model_id,
                tier_above_tokens=r.above_input_tokens or None, notes=tuple(notes))
