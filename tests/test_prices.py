"""Prices from genai-prices: lookup, per-bucket cost, tiers, and agreement with genai_prices.calc_price."""

from __future__ import annotations

import random
from datetime import date, datetime, timezone
from importlib.metadata import version

import pytest
from genai_prices import Usage as GPUsage
from genai_prices import calc_price

from ctxlab.tables import prices

AT = datetime(2026, 11, 1, tzinfo=timezone.utc)


def test_opus_4_5_prices_per_million_tokens():
    p = prices.price_for("claude-opus-4-5", "anthropic")
    assert p is not None
    assert (p.input_per_mtok, p.output_per_mtok, p.cache_read_per_mtok, p.cache_write_per_mtok,
            p.cache_write_1h_per_mtok) == (5.0, 25.0, 0.5, 6.25, 10.0)
    assert p.tiers == ()
    assert p.model_id == "claude-opus-4-5" and p.provider_id == "anthropic"
    assert p.package_version == version("genai-prices")
    assert p.source == f"genai-prices {version('genai-prices')} (claude-opus-4-5)"


def test_dated_model_id_matches_the_table_id():
    p = prices.price_for("claude-sonnet-4-20250514", "anthropic")
    assert p is not None and p.model_id == "claude-sonnet-4-0"


@pytest.mark.parametrize("model, provider, model_id", [
    ("openai/gpt-4o", None, "gpt-4o"),
    ("anthropic/claude-opus-4-5", None, "claude-opus-4-5"),
    ("anthropic/claude-opus-4-5", "anthropic", "claude-opus-4-5"),
    ("anthropic.claude-3-5-sonnet-20240620-v1:0", None, "regional.anthropic.claude-3-5-sonnet-20240620-v1:0"),
])
def test_vendor_prefixes(model, provider, model_id):
    """A Bedrock id (``anthropic.`` prefix) is priced from genai-prices' AWS Bedrock rows since issue 13 (it was
    Anthropic's claude-3-5-sonnet row before)."""
    p = prices.price_for(model, provider)
    assert p is not None and p.model_id == model_id


def test_a_bedrock_cross_region_id_gets_bedrocks_own_price():
    """"The inference profile ID is the base model ID with a prefix ..., for example
    us.anthropic.claude-sonnet-4-5-20250929-v1:0." (Claude on Amazon Bedrock, platform.claude.com, read 2026-12-02).
    genai-prices lists AWS Bedrock prices (provider "aws"): the regional profile of Sonnet 4.5 at $3.30 / M input
    (Anthropic's list price is $3.00). It used to go unpriced."""
    p = prices.price_for("us.anthropic.claude-sonnet-4-5-20250929-v1:0")
    assert p is not None and p.provider_id == "aws" and p.input_per_mtok == 3.3 and p.note == ""
    assert prices.price_for("global.anthropic.claude-sonnet-4-5-20250929-v1:0").input_per_mtok == 3.0


@pytest.mark.parametrize("model", ["us.anthropic.claude-sonnet-4-5-20250929-v1:0", "bedrock/anthropic.claude-opus-4-5"])
def test_a_bedrock_id_has_one_price_whatever_provider_the_ledger_passes(model):
    """The replay prices each row with ``provider="anthropic"`` (the cache rules it simulated): a Bedrock id is
    still priced from Bedrock's row, as ``price_for(id)`` alone (issue 13: the ledger used Anthropic's $3.00)."""
    alone = prices.price_for(model)
    assert alone is not None and alone.provider_id == "aws"
    for provider in ("anthropic", "openai", "aws"):
        assert prices.price_for(model, provider) == alone
    row = prices.cost(model, "anthropic", uncached_input_tokens=1_000_000, cache_read_tokens=0, cache_write_tokens=0,
                      output_tokens=0)
    assert row is not None and row.input == alone.input_per_mtok and row.source == alone.source


def test_a_routed_id_bedrock_lacks_is_priced_from_its_bare_id_with_a_note():
    """An id the Bedrock rows do not list (a ``ca.`` profile) or a Vertex id without its provider: read back to the
    bare id (canonical_model_id) and priced at Anthropic's list price, and the note says so."""
    for model, bare in (("ca.anthropic.claude-sonnet-4-6", "claude-sonnet-4-6"),
                        ("claude-sonnet-4-5@20250929", "claude-sonnet-4-5")):
        p = prices.price_for(model)
        assert p is not None and (p.model_id, p.provider_id, p.input_per_mtok) == (bare, "anthropic", 3.0)
        assert "Anthropic's list price" in p.note and "Bedrock and Vertex AI prices may differ" in p.note
        c = prices.cost(model, None, uncached_input_tokens=1, cache_read_tokens=0, cache_write_tokens=0,
                        output_tokens=0)
        assert c is not None and p.note in c.notes
    assert prices.price_for("claude-sonnet-4-6").note == ""  # the bare id itself: no note


def test_the_price_table_date_is_the_checked_versions():
    """genai-prices ships no snapshot date, so ctxlab dates the version it checked; an upgrade without a new
    check fails here (bump prices.CHECKED)."""
    assert prices.price_table_date() == date(2026, 12, 2)
    assert prices.CHECKED[0] == version("genai-prices"), "genai-prices changed: re-check it and bump prices.CHECKED"


def test_unknown_provider_name_falls_back_to_the_model_id():
    p = prices.price_for("claude-opus-4-5", "some-agent-proxy")
    assert p is not None and p.model_id == "claude-opus-4-5"


def test_openai_has_no_cache_write_price_and_writes_bill_as_input():
    p = prices.price_for("gpt-4o", "openai")
    assert p is not None and p.cache_write_per_mtok is None and p.cache_write_1h_per_mtok is None
    c = prices.cost("gpt-4o", "openai", uncached_input_tokens=0, cache_read_tokens=0, cache_write_tokens=1_000_000,
                    output_tokens=0)
    assert c is not None and c.cache_write == pytest.approx(p.input_per_mtok)
    assert any("no cache-write price" in n for n in c.notes)


def test_unknown_model_is_none_with_a_note_never_zero():
    assert prices.price_for("no-such-model-xyz") is None
    assert prices.cost("no-such-model-xyz", None, uncached_input_tokens=10, cache_read_tokens=0,
                       cache_write_tokens=0, output_tokens=1) is None
    assert prices.cost(None, None, uncached_input_tokens=10, cache_read_tokens=0, cache_write_tokens=0,
                       output_tokens=1) is None
    note = prices.unpriced_note("no-such-model-xyz")
    assert "no-such-model-xyz" in note and version("genai-prices") in note and note.startswith("unpriced")


def test_cost_per_bucket_pi_example():
    """A real pi call: 1 uncached, 49,030 read, 135 written, 27 output on Opus 4.5 (pi recorded 0.02603875)."""
    c = prices.cost("claude-opus-4-5", "anthropic", uncached_input_tokens=1, cache_read_tokens=49_030,
                    cache_write_tokens=135, output_tokens=27)
    assert c is not None
    assert c.as_dict() == pytest.approx({"input": 5e-6, "cache_read": 0.024515, "cache_write": 0.00084375,
                                         "output": 0.000675, "total": 0.02603875}, abs=1e-12)
    assert c.source == f"genai-prices {version('genai-prices')} (claude-opus-4-5)"


def test_one_hour_writes_cost_twice_the_input_price():
    c = prices.cost("claude-opus-4-5", "anthropic", uncached_input_tokens=0, cache_read_tokens=0,
                    cache_write_tokens=1_000_000, cache_write_1h_tokens=400_000, output_tokens=0)
    assert c is not None and c.cache_write == pytest.approx(0.6 * 6.25 + 0.4 * 10.0)


def test_tier_switch_above_200k_total_prompt_tokens():
    """Sonnet 4.5 lists long-context tiers: above 200,000 prompt tokens every token pays the tier price."""
    p = prices.price_for("claude-sonnet-4-5", "anthropic", AT)
    assert p is not None and [t.above_input_tokens for t in p.tiers] == [200_000]
    tier = p.tiers[0]
    assert tier.input_per_mtok == 2 * p.input_per_mtok

    def call(cache_read: int):  # 1,000 uncached + reads: the read count decides the tier
        return prices.cost("claude-sonnet-4-5", "anthropic", uncached_input_tokens=1_000, cache_read_tokens=cache_read,
                           cache_write_tokens=0, output_tokens=1_000, at=AT)

    below, above = call(199_000), call(199_001)  # prompts of 200,000 and 200,001 tokens
    assert below.tier_above_tokens is None and above.tier_above_tokens == 200_000
    assert below.input == pytest.approx(1_000 * p.input_per_mtok / 1e6)
    assert above.input == pytest.approx(1_000 * tier.input_per_mtok / 1e6)
    assert above.output == pytest.approx(1_000 * tier.output_per_mtok / 1e6)  # output follows the prompt's tier
    assert above.cache_read == pytest.approx(199_001 * tier.cache_read_per_mtok / 1e6)


def test_conditional_prices_follow_the_date():
    """Sonnet 4.6 had >200k tiers until 2026-03-13, then a flat price: ``at`` picks the right one."""
    before = prices.price_for("claude-sonnet-4-6", "anthropic", datetime(2026, 1, 1, tzinfo=timezone.utc))
    after = prices.price_for("claude-sonnet-4-6", "anthropic", datetime(2026, 6, 1, tzinfo=timezone.utc))
    assert before is not None and after is not None
    assert before.tiers and not after.tiers


def _calc(model: str, provider: str, u: dict[str, int], at: datetime):
    total = u["uncached_input_tokens"] + u["cache_read_tokens"] + u["cache_write_tokens"]
    gp = GPUsage(input_tokens=total, cache_read_tokens=u["cache_read_tokens"],  # input_tokens = the WHOLE prompt
                 cache_write_tokens=u["cache_write_tokens"], cache_write_1h_tokens=u["cache_write_1h_tokens"],
                 output_tokens=u["output_tokens"])
    return calc_price(gp, model, provider_id=provider, genai_request_timestamp=at)


@pytest.mark.parametrize("model, provider", [
    ("claude-opus-4-5", "anthropic"), ("claude-sonnet-4-5", "anthropic"), ("claude-sonnet-4-6", "anthropic"),
    ("claude-haiku-4-5", "anthropic"), ("claude-3-5-haiku-latest", "anthropic"), ("gpt-4o", "openai"),
    ("gpt-5", "openai"), ("gemini-2.5-pro", "google"), ("deepseek-chat", "deepseek"),
])
def test_per_bucket_sum_equals_calc_price(model, provider):
    rng = random.Random(model)
    cases = [dict(uncached_input_tokens=10, cache_read_tokens=199_000, cache_write_tokens=990, output_tokens=5),
             dict(uncached_input_tokens=10, cache_read_tokens=199_000, cache_write_tokens=991, output_tokens=5)]
    for _ in range(20):
        cases.append(dict(uncached_input_tokens=rng.randint(0, 150_000), cache_read_tokens=rng.randint(0, 250_000),
                          cache_write_tokens=rng.randint(0, 100_000), output_tokens=rng.randint(0, 30_000)))
    for u in cases:
        u.setdefault("cache_write_1h_tokens", rng.randint(0, u["cache_write_tokens"]))
        for at in (datetime(2026, 1, 1, tzinfo=timezone.utc), AT):
            ours = prices.cost(model, provider, at=at, **u)
            ref = _calc(model, provider, u, at)
            assert ours is not None
            assert ours.total == pytest.approx(float(ref.total_price), abs=1e-9)
            assert ours.input + ours.cache_read + ours.cache_write == pytest.approx(float(ref.input_price), abs=1e-9)
            assert ours.output == pytest.approx(float(ref.output_price), abs=1e-9)
            assert ours.total == pytest.approx(ours.input + ours.cache_read + ours.cache_write + ours.output)


def test_time_of_day_prices():
    """DeepSeek prices by the hour (off-peak 16:30-00:30 UTC in this table): the time of ``at`` counts."""
    day = prices.price_for("deepseek-chat", "deepseek", datetime(2026, 11, 1, 12, 0, tzinfo=timezone.utc))
    night = prices.price_for("deepseek-chat", "deepseek", datetime(2026, 11, 1, 20, 0, tzinfo=timezone.utc))
    assert day is not None and night is not None
    assert night.input_per_mtok < day.input_per_mtok
    for at in (datetime(2026, 11, 1, 12, 0, tzinfo=timezone.utc), datetime(2026, 11, 1, 20, 0, tzinfo=timezone.utc)):
        u = dict(uncached_input_tokens=1000, cache_read_tokens=5000, cache_write_tokens=0, cache_write_1h_tokens=0,
                 output_tokens=100)
        assert prices.cost("deepseek-chat", "deepseek", at=at, **u).total == pytest.approx(
            float(_calc("deepseek-chat", "deepseek", u, at).total_price), abs=1e-12)
