"""The per-model facts table (ctxlab/tables/model_facts.py): every value sourced, dated, and as the docs say.

Each test that encodes a rule quotes the sentence it comes from, with the page and the day it was read
(2026-12-02; Anthropic pages via the gpambrozio/ClaudeDocs mirror, snapshot named in the test).
"""

from __future__ import annotations

from datetime import date
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlab.base.errors import CtxlabError
from ctxlab.tables import model_rows_anthropic
from ctxlab.tables.model_facts import (
    FIELDS,
    STATUSES,
    TABLE,
    Lifecycle,
    ToolPrompt,
    UnknownModelError,
    all_facts,
    as_date,
    families,
    family_rows,
    model_facts,
)

READ = "2026-12-02"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "provider_facts.md"


def value(model: str, field: str, on: str | None = None):
    return model_facts(model, on=on).value(field)


# --- the table's shape: sources, statuses, date ranges -------------------------------------------------------

def test_every_field_of_every_row_has_a_source():
    """Every fact carries a non-empty verbatim quote, a URL, a read date and a status in {documented, measured,
    assumed}; a documented fact points at a web page, never at ctxlab's own notes."""
    assert all_facts()
    for family, field, fact in all_facts():
        src = fact.source
        where = f"{family}.{field}"
        assert src.quote.strip(), where
        assert src.url and src.title and src.page_date, where
        assert src.read == READ, where
        assert src.status in STATUSES, where
        if src.status == "documented":
            assert src.url.startswith("https://"), where
        if src.status != "documented":
            assert src.note or src.url.startswith("docs/") or src.url.startswith("ctxlab/"), \
                f"{where}: a value not documented says how it was chosen"


def test_every_family_has_every_field_on_every_date():
    """The ranges of one family and field run from an open start to an open end with no gap, so any date finds
    one row with all fifteen fields."""
    for family in families():
        for on in ("1999-01-01", "2026-01-13", "2026-06-10", READ, "2030-01-01"):
            row = model_facts(family, on=on)
            assert set(row.facts()) == set(FIELDS)


def test_date_ranges_of_one_family_do_not_overlap():
    """Checked here from the raw facts (the module checks the same on import)."""
    for family in families():
        for field in FIELDS:
            facts = TABLE[family][field]
            assert facts[0].since is None and facts[-1].until is None, (family, field)
            for a, b in pairwise(facts):
                assert a.until is not None and a.until == b.since, (family, field)
                assert a.since is None or a.since < a.until, (family, field)


def test_row_range_brackets_its_date():
    row = model_facts("claude-opus-4-7", on="2026-06-01")
    assert row.since == date(2026, 5, 29) and row.until == date(2026, 6, 10)
    assert [r.since for r in family_rows("claude-opus-4-7")] == [None, date(2026, 5, 29), date(2026, 6, 10)]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(families()), st.dates(min_value=date(2025, 1, 1), max_value=date(2028, 12, 31)))
def test_every_fact_of_a_row_holds_on_its_date(family, on):
    row = model_facts(family, on=on)
    assert all(f.holds_on(on) for f in row.facts().values())
    assert (row.since is None or row.since <= on) and (row.until is None or on < row.until)


def test_not_found_sentences_are_in_the_docs():
    """An 'assumed' value with nothing to quote quotes a sentence of docs/provider_facts.md: it must be there."""
    text = DOCS.read_text(encoding="utf-8")
    for family, field, fact in all_facts():
        if fact.source.url.startswith("docs/provider_facts.md"):
            assert fact.source.quote in text, (family, field, fact.source.quote)


def test_unknown_model_is_one_clear_line():
    with pytest.raises(UnknownModelError) as err:
        model_facts("llama-3-70b")
    message = str(err.value)
    assert "\n" not in message and "'llama-3-70b'" in message and "claude-sonnet-4-6" in message
    assert isinstance(err.value, CtxlabError) and isinstance(err.value, ValueError)
    with pytest.raises(UnknownModelError):
        family_rows("claude-3-opus")


@pytest.mark.parametrize("bad", ["06/10/2026", "yesterday", 20260610])
def test_a_date_it_cannot_read_raises(bad):
    with pytest.raises(CtxlabError):
        model_facts("claude-opus-4-7", on=bad)


def test_default_date_is_the_read_date():
    assert as_date(None) == date(2026, 12, 2)
    assert model_facts("claude-opus-4-7").on == date(2026, 12, 2)


def test_ids_as_written_reach_the_same_row():
    """Bedrock, Vertex and gateway ids read as the bare id (see test_model_ids.py for each form)."""
    for raw in ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5@20250929",
                "bedrock/converse/anthropic.claude-sonnet-4-5-20250929-v1:0", "openrouter/anthropic/claude-sonnet-4.5"):
        assert model_facts(raw).family == "claude-sonnet-4-5"


# --- earlier-turn thinking ------------------------------------------------------------------------------------

def test_opus_4_5_keeps_all_prior_thinking():
    """"**Keep all prior turns:** Claude Opus 4.5 and later Opus models, Claude Sonnet 4.6 and later Sonnet models,
    Claude Fable 5, Claude Mythos 5, and Claude Mythos Preview." — Thinking,
    https://platform.claude.com/docs/en/build-with-claude/thinking (snapshot ff5b8ed, 2026-08-22), read 2026-12-02."""
    for model in ("claude-opus-4-5-20251101", "claude-opus-4-7", "claude-opus-5", "claude-sonnet-5"):
        assert value(model, "thinking_rule") == "keep_all"
    assert model_facts("claude-opus-4-5").thinking_rule.source.quote == model_rows_anthropic.Q_KEEP_ALL


def test_older_models_keep_only_the_last_turn():
    """"**Keep the last turn only:** earlier Opus and Sonnet models, and all Haiku models through Claude Haiku 4.5.
    When you pass older thinking blocks back, the API strips them automatically." — same page, read 2026-12-02."""
    for model in ("claude-sonnet-4-5", "claude-haiku-4-5-20251001", "claude-opus-4-1", "claude-sonnet-4-20250514"):
        assert value(model, "thinking_rule") == "last_turn_only"


def test_sonnet_4_6_thinking_rule_changes_on_2026_04_28():
    """Before the 2026-04-28 snapshot: "When non-tool results are passed in requests while extended thinking is
    enabled, all previously-cached thinking blocks are stripped from context" (Prompt caching, snapshot e57bffd8,
    2026-01-13). From 2026-04-28: "Claude Sonnet 4.6 and later Sonnet models" keep all prior turns."""
    assert value("claude-sonnet-4-6", "thinking_rule", "2026-04-27") == "last_turn_only"
    assert value("claude-sonnet-4-6", "thinking_rule", "2026-04-28") == "keep_all"


# --- windows and output limits ---------------------------------------------------------------------------------

def test_one_million_token_windows():
    """"Claude Opus 5, Claude Opus 4.8, Claude Opus 4.7, Claude Opus 4.6, Claude Sonnet 5, and Claude Sonnet 4.6 have
    a 1M-token context window ..." and "Other Claude models, including Claude Sonnet 4.5, have a 200k-token context
    window." — Context windows, https://platform.claude.com/docs/en/build-with-claude/context-windows (ff5b8ed)."""
    for model in ("claude-opus-4-6", "claude-opus-4-7", "claude-opus-4-8", "claude-opus-5", "claude-sonnet-4-6",
                  "claude-sonnet-5"):
        assert value(model, "context_window_tokens") == 1_000_000
    for model in ("claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-5"):
        assert value(model, "context_window_tokens") == 200_000
    assert value("claude-sonnet-4-6", "max_input_tokens") == 1_000_000  # no separate input limit: the window


def test_max_output_and_the_sonnet_4_6_change():
    """"Claude Haiku 4.5, Claude Sonnet 4.5, and Claude Opus 4.5 support up to 64k." (Thinking, ff5b8ed);
    "Claude Sonnet 4.6 and Claude Haiku 4.5 support up to 64k." (Building with extended thinking, 879fe70d,
    2026-05-29) until the 2026-06-23 snapshot lists Sonnet 4.6 among the 128k models."""
    assert value("claude-sonnet-4-5", "max_output_tokens") == 64_000
    assert value("claude-opus-4-7", "max_output_tokens") == 128_000
    assert value("claude-sonnet-4-6", "max_output_tokens", "2026-06-22") == 64_000
    assert value("claude-sonnet-4-6", "max_output_tokens", "2026-06-23") == 128_000
    assert "Disagreement" in model_facts("claude-sonnet-4-6").note


def test_gpt_5_input_limit_and_gemini_window():
    """"Input tokens exceed the configured limit of 272,000 tokens." (the API's error, quoted on OpenAI's forum:
    assumed, not an OpenAI page); "Maximum input tokens: 1,048,576" (Gemini 2.5 Pro, Google Cloud)."""
    gpt5 = model_facts("gpt-5")
    assert gpt5.max_input_tokens.value == 272_000 and gpt5.max_input_tokens.source.status == "assumed"
    assert gpt5.context_window_tokens.value == 400_000
    assert value("gemini-2.5-pro", "context_window_tokens") == 1_048_576
    assert model_facts("gemini-2.5-pro").context_window_tokens.source.status == "documented"
    assert value("gpt-5.6", "context_window_tokens") is None  # not found: the caller falls back


# --- cache minimums ------------------------------------------------------------------------------------------

def test_opus_4_7_minimum_changed_on_2026_06_10():
    """"- 4,096 tokens for [Claude Mythos Preview](...), Claude Opus 4.7, Claude Opus 4.6, and Claude Opus 4.5"
    (Prompt caching, snapshot 28085629, 2026-06-09) then "- 2,048 tokens for [Claude Mythos Preview](...) and Claude
    Opus 4.7" (snapshot ff5b8ed, 2026-08-22; first seen 2026-06-10)."""
    assert value("claude-opus-4-7", "min_cache_tokens", "2026-06-09") == 4096
    assert value("claude-opus-4-7", "min_cache_tokens", "2026-06-10") == 2048
    assert "Disagreement" in model_facts("claude-opus-4-7").note


def test_sonnet_4_6_minimum_history():
    """"- 1024 tokens for Claude Sonnet 4.6, ..." (2026-02-18), "- 2048 tokens for Claude Sonnet 4.6" (2026-02-27),
    "- 1,024 tokens for Claude Opus 4.8, Claude Sonnet 5, Claude Sonnet 4.6, ..." (from 2026-05-14)."""
    assert [value("claude-sonnet-4-6", "min_cache_tokens", d)
            for d in ("2026-02-26", "2026-02-27", "2026-05-13", "2026-05-14")] == [1024, 2048, 2048, 1024]


def test_other_minimums():
    """"- 512 tokens for Claude Opus 5, ...", "- 4,096 tokens for Claude Opus 4.6 and Claude Opus 4.5",
    "- 4,096 tokens for Claude Haiku 4.5" (Prompt caching, ff5b8ed); "Caching is enabled automatically for prompts
    that are 1024 tokens or longer." (OpenAI prompt caching guide, older version)."""
    assert value("claude-opus-5", "min_cache_tokens") == 512
    assert value("claude-opus-4-5", "min_cache_tokens") == 4096
    assert value("claude-haiku-4-5", "min_cache_tokens") == 4096
    assert value("claude-sonnet-4-5", "min_cache_tokens") == 1024
    assert value("gpt-4o", "min_cache_tokens") == 1024
    assert model_facts("claude-opus-5-5").min_cache_tokens.source.status == "assumed"


def test_gemini_minimum_changed():
    """"| Gemini 2.5 Pro | 4096 |" (Gemini API caching page, last updated 2026-05-07) then "| Gemini 2.5 Pro |
    2,048 |" (copies last updated 2026-07-07 and 2026-10-13)."""
    assert value("gemini-2.5-pro", "min_cache_tokens", "2026-07-06") == 4096
    assert value("gemini-2.5-pro", "min_cache_tokens", "2026-07-07") == 2048


# --- cache prices, TTLs, modes ---------------------------------------------------------------------------------

def test_anthropic_multipliers_and_the_opus_5_5_read_price():
    """"| 5-minute cache write | 1.25x base input price |", "| 1-hour cache write | 2x base input price |",
    "| Cache read (hit) | 0.1x base input price |" (Pricing, ff5b8ed). Opus 5.5: "- Cache read\\n- $0.20 / MTok" on
    "- Input\\n- $4 / MTok" (model overview, stored copy): 0.05x, a ratio of documented prices."""
    row = model_facts("claude-sonnet-4-6")
    assert (row.value("cache_write_5m_multiplier"), row.value("cache_write_1h_multiplier"),
            row.value("cache_read_multiplier")) == (1.25, 2.0, 0.1)
    assert value("claude-opus-5-5", "cache_read_multiplier") == 0.05


def test_openai_writes_billed_from_gpt_5_6():
    """"Cache writes have no additional fee on models before the GPT-5.6 family. For GPT-5.6 models and later model
    families, cache writes cost 1.25× the uncached input token rate." (OpenAI prompt caching guide, GPT-5.6 era)."""
    assert value("gpt-4.1", "cache_write_5m_multiplier") == 1.0
    assert value("gpt-5.6", "cache_write_5m_multiplier") == 1.25
    assert value("gpt-5.6-sol", "cache_write_5m_multiplier") == 1.25
    assert value("gpt-4o", "cache_read_multiplier") is None  # not found on an OpenAI page: the price table decides


def test_openai_caching_modes():
    """Before GPT-5.6: "works automatically for prompts containing 1024 tokens or more, with cache hits occurring in
    increments of 128 tokens." (Prompt Caching 201, OpenAI Cookbook). From GPT-5.6: "Supported for `gpt-5.6` and
    later models. ... Each request can write up to four breakpoints." (openai-python e43b422)."""
    for model in ("gpt-4o", "gpt-4.1", "gpt-5", "gpt-5.5"):
        assert value(model, "cache_mode") == "longest_prefix_128"
    assert value("gpt-5.6", "cache_mode") == "breakpoints_prompt_cache_options"
    assert value("claude-opus-4-7", "cache_mode") == "breakpoints"
    assert value("gemini-2.5-flash", "cache_mode") == "implicit_and_explicit"


def test_ttls():
    """"By default, the cache has a 5-minute lifetime." (Anthropic); "The `ttl` defaults to `30m`, which is currently
    the only supported value." (GPT-5.6+); "For `gpt-5.5`, `gpt-5.5-pro`, and future models, only `24h` is
    supported."; "Organizations without ZDR enabled default to `24h`." (openai-python e43b422, since 2026-06-01)."""
    assert value("claude-sonnet-4-6", "ttl_default_s") == 300.0
    assert value("claude-sonnet-4-6", "ttl_options_s") == (300.0, 3600.0)
    assert value("gpt-5.6", "ttl_default_s") == 1800.0
    assert value("gpt-5.5", "ttl_options_s") == (86400.0,)
    assert value("gpt-4.1", "ttl_default_s", "2026-05-31") == 300.0
    assert value("gpt-4.1", "ttl_default_s", "2026-06-01") == 86400.0


# --- tokenizers, tool prompt, calibration ---------------------------------------------------------------------

def test_tokenizer_generations():
    """"This new tokenizer may use roughly 1x to 1.35x as many tokens when processing text compared to previous
    models" (What's new in Claude Opus 4.7); "Claude Opus 4.7 introduced a new tokenizer, which later Opus models,
    including Claude Opus 5, also use." (Migration guide); "The same input text produces approximately 30% more
    tokens than on Claude Sonnet 4.6." (What's new in Claude Sonnet 5). All ff5b8ed."""
    new = value("claude-opus-5", "tokenizer")
    assert (new.generation, new.ratio_low, new.ratio_high) == ("claude-opus-4-7", 1.0, 1.35)
    assert value("claude-sonnet-4-6", "tokenizer").generation == "claude-pre-opus-4-7"
    assert value("claude-sonnet-5", "tokenizer").ratio_low == 1.3
    assert "Disagreement" in model_facts("claude-opus-4-7").note  # 1x-1.35x vs 'roughly 30 percent more'


def test_calibration_is_measured_only_where_measured():
    """pi before-compaction.jsonl (claude-opus-4-5): 461,878 / 372,146 = 1.241 over 454 pairs — ctxlab's own
    measurement, re-measured in issue 13 with thinking counted (1.248 over 384 pairs before)."""
    opus = model_facts("claude-opus-4-5").o200k_calibration
    assert opus.value == 1.241 and opus.source.status == "measured"
    assert model_facts("claude-opus-4-7").o200k_calibration.source.status == "assumed"


def test_tool_use_system_prompt_per_tool_choice():
    """"| Claude Opus 4.7 | `auto`, `none`  ---  `any`, `tool` | 346 tokens  ---  313 tokens |" (Tool use, snapshot
    2792971e, 2026-04-17) then "| Claude Opus 4.7 | `auto`, `none`  ---  `any`, `tool` | 675 tokens  ---  804 tokens
    |" (ff5b8ed; revised 2026-05-29)."""
    assert value("claude-opus-4-7", "tool_prompt_tokens", "2026-05-28") == ToolPrompt(346, 313)
    after = value("claude-opus-4-7", "tool_prompt_tokens", "2026-05-29")
    assert (after.for_choice("auto"), after.for_choice("none"), after.for_choice("tool")) == (675, 675, 804)
    assert value("claude-sonnet-4-6", "tool_prompt_tokens").for_choice("any") == 589
    assert value("gpt-4o", "tool_prompt_tokens") is None
    with pytest.raises(CtxlabError):
        after.for_choice("required")


# --- lifecycle ---------------------------------------------------------------------------------------------------

def test_sonnet_4_5_retires_on_2026_11_30():
    """"Claude Sonnet 4.5 is deprecated: it is still functional but no longer recommended, and retires on November
    30, 2026. Recommended replacement: Claude Sonnet 5.5." (model overview, stored copy), read 2026-12-02. The
    2026-08-22 deprecations table said Active — the newer page wins and the note says so."""
    fact = model_facts("claude-sonnet-4-5").lifecycle
    assert fact.source.status == "documented"
    assert fact.value == Lifecycle("deprecated", None, "2026-11-30", None)
    assert fact.value.published_state == "deprecated"  # what the page printed, not the model's state today
    assert not hasattr(fact.value, "state"), "one state only: Lifecycle.state_on(date)"
    assert fact.value.state_on("2026-12-02") == model_facts("claude-sonnet-4-5").lifecycle_state() == "retired"
    assert model_facts("claude-sonnet-4-5", on="2026-11-29").lifecycle_state() == "deprecated"
    assert model_facts("claude-sonnet-4-5", on="2026-11-30").lifecycle_state() == "retired"
    assert model_facts("claude-sonnet-4-5").lifecycle_state() == "retired"
    assert "Disagreement" in model_facts("claude-sonnet-4-5").note


def test_other_lifecycles():
    """"| claude-sonnet-4-20250514 | Retired | April 14, 2026 | June 15, 2026 |" and "| claude-sonnet-4-6 | Active |
    N/A | Not sooner than February 17, 2027 |" (Model deprecations, ff5b8ed)."""
    assert model_facts("claude-sonnet-4").lifecycle_state() == "retired"
    six = model_facts("claude-sonnet-4-6").lifecycle.value
    assert six.state_on("2026-12-02") == "active" and six.retires_not_before == "2027-02-17"


def test_a_current_documented_default_exists():
    """The chapters need a default whose rules are documented and which is not retired on the read date."""
    row = model_facts("claude-sonnet-4-6")
    assert row.lifecycle_state() == "active"
    assert all(row.facts()[f].source.status == "documented"
               for f in ("context_window_tokens", "min_cache_tokens", "thinking_rule", "tool_prompt_tokens"))


def test_the_table_is_wired_into_profile_for():
    """Issue 13: profile_for reads the table: "| Claude Sonnet 4.5 | `auto`, `none`  ---  `any`, `tool` | 496 tokens
    ---  588 tokens |" (Tool use with Claude, mirror snapshot ff5b8ed, 2026-08-22, read 2026-12-02)."""
    from ctxlab.tables.profiles import profile_for

    assert profile_for("claude-sonnet-4-5").tool_system_tokens == 496
    assert model_facts("claude-sonnet-4-5").value("tool_prompt_tokens") == ToolPrompt(496, 588)
