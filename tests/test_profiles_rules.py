"""Model profiles read the dated per-model table (issue 13): windows, limits, tool prompts, ids, calibration.

Every rule test quotes its doc sentence (research notes /tmp/lead/research13/facts.md, pages read 2026-12-02).
"""

from __future__ import annotations

import pytest

from ctxlab.base.errors import CtxlabError
from ctxlab.tables.model_facts import families, model_facts
from ctxlab.tables.model_rows_anthropic import (CAL_CC, CAL_NEW_TOKENIZER, CAL_PI, CAL_POOLED, NEW_TOKENIZER,
                                                NEW_TOKENIZER_POINT)
from ctxlab.tables.profiles import CLAUDE_CALIBRATION, profile_for, with_window


def test_gemini_2_5_pro_window_is_the_documented_input_limit():
    """"Maximum input tokens: 1,048,576" (Gemini 2.5 Pro, Google Cloud,
    https://docs.cloud.google.com/gemini-enterprise-agent-platform/models/gemini/2-5-pro, read 2026-12-02)."""
    p = profile_for("gemini-2.5-pro")
    assert p.context_window == 1_048_576 and p.max_input_tokens == 1_048_576
    assert p.max_output_tokens == 65_535  # same page: "Maximum output tokens: 65,535 (default)"
    assert "docs.cloud.google.com" in p.window_source and "read 2026-12-02" in p.window_source


def test_gpt_5_input_limit_is_272k_of_a_400k_window():
    """"Input tokens exceed the configured limit of 272,000 tokens. Your messages resulted in 297,006 tokens."
    (OpenAI Developer Community, quoting the API error, read 2026-12-02; status 'assumed' in the table, so the
    window, 400,000, still comes from genai-prices)."""
    p = profile_for("gpt-5")
    assert p.context_window == 400_000 and p.max_input_tokens == 272_000
    assert p.window_source.startswith("genai-prices")
    assert p.input_limit() == 272_000 and p.input_limit(128_000) == 272_000
    assert p.input_limit(200_000) == 200_000  # input + output within the 400,000 window


def test_the_default_budget_stays_under_the_input_limit():
    """The texts' 90% of the window would be 360,000 on GPT-5, over its 272,000 input limit ("Input tokens exceed
    the configured limit of 272,000 tokens.", as above): the budget is capped there. With the reply's
    ``max_tokens`` the budget leaves room for it: "On Claude 4.5 models and newer, if input tokens plus `max_tokens`
    exceeds the context window size, the API accepts the request. [...] On earlier models, the API returns a
    validation error instead." (Anthropic, 'Thinking', mirror snapshot ff5b8ed 2026-08-22, read 2026-12-02)."""
    assert profile_for("gpt-5").budget_tokens() == 272_000
    assert profile_for("gpt-5").budget_tokens(0.5) == 200_000
    assert profile_for("claude-sonnet-4-5").budget_tokens() == 180_000  # 90% of 200,000: below its limits
    assert profile_for("claude-sonnet-4-6").budget_tokens(max_tokens=128_000) == 872_000  # 1,000,000 - 128,000
    assert profile_for("claude-sonnet-4").budget_tokens(max_tokens=64_000) == 136_000


def test_claude_4_6_and_later_have_a_1m_window():
    """"Claude Opus 5, Claude Opus 4.8, Claude Opus 4.7, Claude Opus 4.6, Claude Sonnet 5, and Claude Sonnet 4.6
    have a 1M-token context window on the Claude API, Amazon Bedrock, Google Cloud, and Microsoft Foundry."
    (Context windows, https://platform.claude.com/docs/en/build-with-claude/context-windows, mirror snapshot
    ff5b8ed 2026-08-22, read 2026-12-02)."""
    for model in ("claude-opus-5", "claude-opus-4-8", "claude-opus-4-7", "claude-opus-4-6", "claude-sonnet-5",
                  "claude-sonnet-4-6"):
        p = profile_for(model)
        assert p.context_window == 1_000_000 and "Context windows" in p.window_source, model
    assert profile_for("claude-sonnet-4-5").context_window == 200_000


def test_anthropic_input_plus_max_tokens_within_the_window():
    """"On Claude 4.5 models and newer, if input tokens plus `max_tokens` exceeds the context window size, the API
    accepts the request. If generation then reaches the context window limit, it stops with `stop_reason:
    "model_context_window_exceeded"` instead of returning an error. On earlier models, the API returns a
    validation error instead." (Thinking, build-with-claude/thinking, mirror snapshot ff5b8ed 2026-08-22)."""
    p = profile_for("claude-sonnet-4-6")
    assert p.max_output_tokens == 128_000
    assert p.input_limit(64_000) == 936_000 and p.input_limit() == 1_000_000
    with pytest.raises(CtxlabError, match="max_output_tokens"):
        p.input_limit(128_001)
    with pytest.raises(CtxlabError):
        p.input_limit(-1)
    assert profile_for("claude-sonnet-4").max_output_tokens is None  # not read: not checked
    assert profile_for("claude-sonnet-4").input_limit(300_000) == 0


def test_tool_prompt_per_model_and_tool_choice():
    """"| Claude Sonnet 4.6 | `auto`, `none`  ---  `any`, `tool` | 497 tokens  ---  589 tokens |", "| Claude Opus 4.7
    | `auto`, `none`  ---  `any`, `tool` | 675 tokens  ---  804 tokens |", "| Claude Sonnet 4.5 | ... | 496 tokens  ---
    588 tokens |", "| Claude Opus 5 | ... | 286 tokens  ---  406 tokens |" (Tool use with Claude, Pricing,
    https://platform.claude.com/docs/en/agents-and-tools/tool-use/overview, mirror snapshot ff5b8ed 2026-08-22)."""
    cases = {"claude-sonnet-4-6": (497, 589), "claude-opus-4-7": (675, 804), "claude-sonnet-4-5": (496, 588),
             "claude-opus-5": (286, 406), "claude-opus-4-1": (313, 315)}
    for model, (auto, any_) in cases.items():
        p = profile_for(model)
        assert p.tool_system_tokens == auto == p.tool_prompt_tokens() == p.tool_prompt_tokens("none"), model
        assert p.tool_prompt_tokens("any") == p.tool_prompt_tokens("tool") == any_, model
    assert "Tool use with Claude" in profile_for("claude-sonnet-4-6").source
    with pytest.raises(CtxlabError, match="tool_choice"):
        profile_for("claude-sonnet-4-6").tool_prompt_tokens("required")
    gpt = profile_for("gpt-4o")
    assert gpt.tool_prompt_tokens("any") == gpt.tool_system_tokens == 0


def test_tool_prompt_before_the_2026_05_29_revision():
    """"| Claude Sonnet 4.6 | `auto`, `none`  ---  `any`, `tool` | 346 tokens  ---  313 tokens |" (Tool use with
    Claude, mirror snapshot 5e2bafa1, 2026-05-20): the table's older row, in force before 2026-05-29."""
    old = profile_for("claude-sonnet-4-6", on="2026-05-28")
    assert (old.tool_prompt_tokens("auto"), old.tool_prompt_tokens("any")) == (346, 313)


def test_a_claude_model_not_in_the_table_keeps_the_old_rules():
    """Not in ctxlab.tables.model_facts (no quote: the fallback is ctxlab's): 346 tokens, earlier thinking
    stripped, the pooled calibration; window from genai-prices."""
    p = profile_for("claude-3-5-sonnet")
    assert p.provider == "anthropic" and p.tool_system_tokens == 346 and p.thinking == "current_turn"
    assert p.calibration == CAL_POOLED and p.tool_prompt is None and p.max_output_tokens is None


GATEWAY_IDS = ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0",
               "openrouter/anthropic/claude-sonnet-4.5", "litellm_proxy/claude-sonnet-4-5",
               "vertex_ai/claude-sonnet-4-5@20250929", "claude-sonnet-4-5-20250929", "anthropic/claude-sonnet-4-5")


@pytest.mark.parametrize("model", GATEWAY_IDS)
def test_bedrock_vertex_and_gateway_ids_get_the_bare_ids_profile(model):
    """"The inference profile ID is the base model ID with a prefix from a column marked "Yes" in the following
    table, for example us.anthropic.claude-sonnet-4-5-20250929-v1:0." (Claude on Amazon Bedrock, read 2026-12-02);
    "| Claude Sonnet 4.5 | claude-sonnet-4-5@20250929 |" (Claude on Vertex AI); "Simply use the `litellm_proxy/`
    prefix before the model name" (LiteLLM, 2026-10-20); OpenRouter writes dots (``anthropic/claude-3.5-sonnet``)."""
    assert profile_for(model) == profile_for("claude-sonnet-4-5")
    assert profile_for(model).name == "claude-sonnet-4-5"


def test_profiles_read_the_tables_calibration_one_place():
    """The factor each Claude profile applies is the table's o200k_calibration (no copy in profiles.py)."""
    for family in families():
        row = model_facts(family)
        p = profile_for(family)
        if p.provider == "anthropic":
            assert p.calibration == row.o200k_calibration.value, family
            assert row.o200k_calibration.source.quote in p.calibration_source
    assert profile_for("claude-opus-4-5").calibration == CAL_PI
    assert dict(CLAUDE_CALIBRATION) == {f: model_facts(f).o200k_calibration.value for f in families()
                                        if model_facts(f).provider == "anthropic"}
    assert profile_for("claude-sonnet-4-20250514").calibration == CAL_CC
    assert with_window(profile_for("gpt-5"), 100_000).max_input_tokens == 100_000


def test_the_new_tokenizer_generation_has_its_own_factor():
    """"This new tokenizer may use roughly 1x to 1.35x as many tokens when processing text compared to previous
    models (up to ~35% more, varying by content)" (What's new in Claude Opus 4.7); "Claude Opus 4.7 introduced a new
    tokenizer, which later Opus models, including Claude Opus 5, also use." (Migration guide); "roughly 30 percent
    more tokens than models before Claude Opus 4.7" (Token counting); all mirror snapshot ff5b8ed 2026-08-22."""
    assert NEW_TOKENIZER_POINT == 1.3 and CAL_NEW_TOKENIZER == round(CAL_POOLED * 1.3, 3)
    assert CAL_POOLED * 1.0 <= CAL_NEW_TOKENIZER <= CAL_POOLED * 1.35
    for family in NEW_TOKENIZER:
        fact = model_facts(family).o200k_calibration
        assert fact.value == CAL_NEW_TOKENIZER and fact.source.status == "assumed", family
        assert "not measured" in fact.source.quote and "1x to 1.35x" in fact.source.note
    assert profile_for("claude-opus-4-6").calibration == CAL_POOLED  # the last Opus on the old tokenizer


def test_tokenizer_note_says_estimate_and_names_count_tokens():
    """"Token counting is **free to use** but subject to requests per minute rate limits" (Token counting,
    build-with-claude/token-counting, mirror snapshot ff5b8ed 2026-08-22): the exact path, not called offline."""
    note = profile_for("claude-opus-4-7").tokenizer_note
    assert "estimates" in note and "POST /v1/messages/count_tokens" in note and "1.634" in note
    assert profile_for("gpt-4o").tokenizer_note == ""
    assert "count_tokens" not in profile_for("my-local-llama").tokenizer_note
