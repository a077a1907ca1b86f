"""Cache rules built from the dated model-facts table: each rule a small case whose numbers come from the doc.

Anthropic pages: https://platform.claude.com/docs/en/build-with-claude/prompt-caching and
https://platform.claude.com/docs/en/about-claude/pricing as captured in gpambrozio/ClaudeDocs snapshots (dates in
each docstring), read 2026-12-02. OpenAI: the openai-python SDK docstrings (commit e43b422, 2026-08-21) and the
prompt-caching guide, read 2026-12-02.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from ctxlab.base.errors import CtxlabError
from ctxlab.cache import request_from_sizes
from ctxlab.cache_anthropic import AnthropicCache
from ctxlab.cache_openai import OpenAICache
from ctxlab.tables.cache_rules import IN_MEMORY_TTL_S, RULES, bills_cache_writes, rule_for, rule_from_facts
from ctxlab.tables.model_facts import families, model_facts
from ctxlab.tables.prices import cost, price_for


def two_calls(cache, model, first, second, gap_s, provider="anthropic"):
    a = request_from_sizes(first, model=model, provider=provider)
    b = request_from_sizes(second, model=model, provider=provider)
    return cache.request(a, 0.0), cache.request(b, gap_s)


@pytest.mark.parametrize("on, minimum", [("2026-06-09", 4096), ("2026-06-10", 2048)])
def test_opus_4_7_minimum_changed_on_2026_06_10(on, minimum):
    """Snapshot 28085629 (2026-06-09): "- 4,096 tokens for [Claude Mythos Preview](https://anthropic.com/glasswing),
    Claude Opus 4.7, Claude Opus 4.6, and Claude Opus 4.5"; snapshot ff5b8ed (2026-08-22): "- 2,048 tokens for
    [Claude Mythos Preview](https://anthropic.com/glasswing) and Claude Opus 4.7" (prompt-caching page, section
    Cache limitations; read 2026-12-02). A 3,000-token prompt is cached from 2026-06-10 only."""
    rule = rule_for("claude-opus-4-7", on=on)
    assert rule.min_tokens == minimum and rule.on == on and rule.verified
    assert rule.source_of("min_tokens").quote.startswith(f"- {minimum:,} tokens")
    out = AnthropicCache(rules=rule).request(request_from_sizes([("system", 3000)], model="claude-opus-4-7"), 0.0)
    assert out.cache_write_tokens == (3000 if minimum <= 3000 else 0)
    assert ("below minimum 4,096" in out.reason) == (minimum == 4096)


@pytest.mark.parametrize("model, minimum", [("claude-sonnet-4-6", 1024), ("claude-sonnet-4-5", 1024),
                                            ("claude-haiku-4-5", 4096), ("claude-opus-4-5", 4096),
                                            ("claude-opus-5", 512)])
def test_minimum_per_model(model, minimum):
    """Prompt-caching page, snapshot ff5b8ed (2026-08-22), read 2026-12-02: "- 1,024 tokens for Claude Opus 4.8,
    Claude Sonnet 5, Claude Sonnet 4.6, Claude Sonnet 4.5, Claude Opus 4.1", "- 4,096 tokens for Claude Haiku 4.5",
    "- 4,096 tokens for Claude Opus 4.6 and Claude Opus 4.5", "- 512 tokens for Claude Opus 5, Claude Fable 5, and
    [Claude Mythos 5](https://anthropic.com/glasswing)". One token below the minimum writes nothing."""
    cache = AnthropicCache()
    below = cache.request(request_from_sizes([("system", minimum - 1)], model=model), 0.0)
    at = cache.request(request_from_sizes([("system", minimum)], model=model), 0.0)
    assert (below.cache_write_tokens, at.cache_write_tokens) == (0, minimum)


def test_opus_5_5_reads_cost_a_twentieth():
    """Claude Opus 5.5 overview (https://platform.claude.com/docs/zh-CN/models/opus-5-5/overview, read 2026-12-02):
    "- Input / - $4 / MTok" and "- Cache read / - $0.20 / MTok": 0.20 / 4 = 0.05x, not the 0.1x of the 2026-08-22
    pricing table. The rule row and the price table (what the ledger bills) agree."""
    rule = rule_for("claude-opus-5-5")
    assert rule.read_multiplier == 0.05 and rule.source_of("read_multiplier").quote == "- Cache read\n- $0.20 / MTok"
    billed = cost("claude-opus-5-5", uncached_input_tokens=0, cache_read_tokens=1_000_000, cache_write_tokens=0,
                  output_tokens=0)
    assert math.isclose(billed.cache_read, 0.05 * 4.0)
    assert rule_for("claude-opus-4-5").read_multiplier == 0.1


def test_one_hour_write_costs_twice_the_input():
    """Pricing page, snapshot ff5b8ed (2026-08-22), read 2026-12-02: "| 1-hour cache write | 2x base input price |
    Cache valid for 1 hour |" and "| 5-minute cache write | 1.25x base input price | Cache valid for 5 minutes |".
    A 1 h write of 10,000 tokens on Sonnet 4.6 ($3 / MTok input) is $0.06; a 5-min one $0.0375."""
    rule = rule_for("claude-sonnet-4-6")
    assert (rule.write_multiplier, rule.write_1h_multiplier, rule.ttl_options_s) == (1.25, 2.0, (300.0, 3600.0))
    first, later = two_calls(AnthropicCache(ttl_s=3600), "claude-sonnet-4-6", [("system", 10_000)],
                             [("system", 10_000), ("user", 50)], 3000.0)
    assert first.cache_write_1h_tokens == 10_000 and later.cache_read_tokens == 10_000  # 50 min later: still there
    one_hour = cost("claude-sonnet-4-6", uncached_input_tokens=0, cache_read_tokens=0, cache_write_tokens=10_000,
                    cache_write_1h_tokens=10_000, output_tokens=0)
    five_min = cost("claude-sonnet-4-6", uncached_input_tokens=0, cache_read_tokens=0, cache_write_tokens=10_000,
                    output_tokens=0)
    assert math.isclose(one_hour.cache_write, 0.06) and math.isclose(five_min.cache_write, 0.0375)


def test_rule_rows_and_price_table_agree_and_the_price_table_bills():
    """Which wins: the ledger bills dollars from the price table (genai-prices, dated, per model); the rule row's
    multipliers are what the chapter states and what the simulators report. For every family both know they
    agree, so neither has to win today; a model the price table lacks is unpriced, never priced from the row."""
    checked = 0
    for family in families():
        rule, prices = rule_for(family), price_for(family)
        if prices is None or not prices.input_per_mtok:
            continue
        for mine, theirs in (("read_multiplier", prices.cache_read_per_mtok),
                             ("write_1h_multiplier", prices.cache_write_1h_per_mtok)):
            if getattr(rule, mine) is not None and theirs is not None:
                assert math.isclose(getattr(rule, mine), theirs / prices.input_per_mtok), (family, mine)
                checked += 1
        if rule.writes_billed is not None:  # OpenAI before GPT-5.6: no write fee, none listed
            assert rule.writes_billed == (prices.cache_write_per_mtok is not None), family
    assert checked >= 20


def test_openai_24h_default_retention_and_in_memory_option():
    """openai-python response_create_params.py (commit e43b422, 2026-08-21, read 2026-12-02): "Organizations without
    ZDR enabled default to `24h`."; in-memory: "The system typically clears caches within 5 to 10 minutes of
    inactivity" (https://learn.microsoft.com/azure/foundry/openai/how-to/prompt-caching, read 2026-12-02).
    A 6-minute pause on gpt-4.1 is a hit by default and a miss with in-memory retention."""
    head = [("system", 2048), ("user", 300)]
    rule = rule_for("gpt-4.1")
    assert (rule.mode, rule.ttl_s, rule.increment_tokens) == ("automatic", 86400.0, 128)
    _, kept = two_calls(OpenAICache(), "gpt-4.1", head, head + [("tool", 200)], 360.0, provider="openai")
    assert kept.cache_read_tokens == 2304  # 2,348 shared tokens rounded down to 18 x 128
    in_memory = rule_for("gpt-4.1", retention="in_memory")
    assert in_memory.ttl_s == IN_MEMORY_TTL_S == 300.0
    _, lost = two_calls(OpenAICache(rules=in_memory), "gpt-4.1", head, head + [("tool", 200)], 360.0, "openai")
    assert lost.cache_read_tokens == 0 and "expired" in lost.reason
    with pytest.raises(CtxlabError, match="retention='in_memory' is an OpenAI option"):
        rule_for("gpt-5.6", retention="in_memory")
    with pytest.raises(CtxlabError, match="retention must be None or 'in_memory'"):
        rule_for("gpt-4.1", retention="forever")


def test_gpt_5_6_uses_prompt_cache_options():
    """openai-python SDK (commit e43b422, 2026-08-21, read 2026-12-02): "Supported for `gpt-5.6` and later models.
    ... Each request can write up to four breakpoints. For cache matching, OpenAI considers up to the latest 80
    breakpoints in the conversation, without a content-block lookback limit." and "The `ttl` defaults to `30m`,
    which is currently the only supported value."; guide: "For GPT-5.6 models and later model families, cache
    writes cost 1.25× the uncached input token rate." and gpt-4o: "cache hits occurring in increments of 128 tokens"
    (cookbook, for models before GPT-5.6)."""
    rule = rule_for("gpt-5.6")
    assert (rule.mode, rule.increment_tokens, rule.ttl_s, rule.ttl_options_s) == ("prompt_cache_options", 1, 1800.0,
                                                                                 (1800.0,))
    assert (rule.max_breakpoints, rule.read_breakpoints, rule.lookback_blocks) == (4, 80, None)
    assert rule.write_multiplier == 1.25 and rule.writes_billed and bills_cache_writes("gpt-5.6")
    assert not bills_cache_writes("gpt-4o") and rule_for("gpt-4o").increment_tokens == 128


def test_families_outside_the_table_fall_back_to_regex_rows_marked_unverified():
    """A model model_facts does not know keeps the regex rows (Claude 3.5 Haiku's 2,048: "- 2,048 tokens for Claude
    Haiku 3.5", prompt-caching page, snapshot ff5b8ed 2026-08-22), marked unverified with the reason."""
    haiku = rule_for("claude-3-5-haiku-20241022")
    assert haiku.min_tokens == 2048 and not haiku.verified and haiku.note.startswith("fallback regex row")
    assert haiku.family_id is None and haiku.sources == () and haiku.thinking_rule == "last_turn_only"
    under_openai = rule_for("claude-sonnet-4-5", "openai")  # a Claude transcript replayed under OpenAI's rules
    assert under_openai.family == [r.family for r in RULES if r.provider == "openai"][-1]  # OpenAI's catch-all row
    assert "a model of anthropic under openai's rules" in under_openai.note and under_openai.ttl_s == 300.0
    table = rule_for("bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0")
    assert table.family_id == "claude-sonnet-4-5" and table.thinking_rule == "last_turn_only"
    assert rule_from_facts(model_facts("claude-sonnet-4-5")) == table
    assert replace(table, min_tokens=2000).min_tokens == 2000
