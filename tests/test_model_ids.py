"""Model ids as people write them resolve to the bare provider id (ctxlab/tables/model_ids.py).

Each form quotes the page it comes from (read 2026-12-02).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxlab.tables.model_facts import families, family_of
from ctxlab.tables.model_ids import canonical_model_id

KNOWN = ("claude-sonnet-4-5", "claude-opus-4-7", "claude-haiku-4-5", "claude-sonnet-4-6", "gpt-4o", "gpt-5.6",
         "gemini-2.5-pro")
GATEWAYS = ("bedrock/", "bedrock/invoke/", "bedrock/converse/", "openrouter/", "openrouter/anthropic/",
            "litellm_proxy/", "vertex_ai/", "vertex_ai_beta/", "anthropic/", "openai/", "gemini/", "azure/",
            "azure/o_series/")


def test_bedrock_cross_region_and_plain_ids():
    """"The inference profile ID is the base model ID with a prefix from a column marked "Yes" in the following
    table, for example us.anthropic.claude-sonnet-4-5-20250929-v1:0." — Claude on Amazon Bedrock,
    https://platform.claude.com/docs/en/build-with-claude/claude-on-amazon-bedrock-legacy (ff5b8ed), read 2026-12-02.
    """
    for raw in ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "anthropic.claude-sonnet-4-5-20250929-v1:0",
                "global.anthropic.claude-sonnet-4-5-20250929-v1:0", "eu.anthropic.claude-sonnet-4-5-20250929-v1:0",
                "apac.anthropic.claude-sonnet-4-5-20250929-v1:0", "jp.anthropic.claude-sonnet-4-5-20250929-v1:0"):
        assert canonical_model_id(raw) == "claude-sonnet-4-5", raw
    assert canonical_model_id("anthropic.claude-opus-4-6-v1") == "claude-opus-4-6"
    assert canonical_model_id("anthropic.claude-3-5-sonnet-20241022-v2:0") == "claude-3-5-sonnet"


def test_claude_in_amazon_bedrock_undated_ids():
    """"Model IDs in Claude in Amazon Bedrock carry an `anthropic.` provider prefix." — Claude in Amazon Bedrock
    (ff5b8ed): anthropic.claude-opus-4-7, anthropic.claude-haiku-4-5."""
    assert canonical_model_id("anthropic.claude-opus-4-7") == "claude-opus-4-7"
    assert canonical_model_id("anthropic.claude-haiku-4-5") == "claude-haiku-4-5"


def test_bedrock_arn():
    """An inference-profile ARN ends in the profile id (rule 2: the last '/' segment)."""
    arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    assert canonical_model_id(arn) == "claude-sonnet-4-5"


def test_vertex_ids():
    """"| Claude Sonnet 4.5 | claude-sonnet-4-5@20250929 |" — Claude on Vertex AI,
    https://platform.claude.com/docs/en/build-with-claude/claude-on-vertex-ai (ff5b8ed), read 2026-12-02."""
    assert canonical_model_id("claude-sonnet-4-5@20250929") == "claude-sonnet-4-5"
    assert canonical_model_id("claude-opus-4-5@20251101") == "claude-opus-4-5"
    assert canonical_model_id("vertex_ai/claude-haiku-4-5@20251001") == "claude-haiku-4-5"
    path = "projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929"
    assert canonical_model_id(path) == "claude-sonnet-4-5"


def test_gateway_prefixes():
    """"- Bedrock (`bedrock/`, `bedrock/invoke/`, `bedrock/converse`)" — LiteLLM prompt caching docs (last updated
    2026-10-07); "Simply use the `litellm_proxy/` prefix before the model name" — LiteLLM Proxy provider page
    (2026-10-20); "Provider Route on LiteLLM | `azure/`, `azure/o_series/`, `azure/gpt5_series/`" (2026-10-08)."""
    cases = {
        "bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0": "claude-sonnet-4-5",
        "bedrock/invoke/anthropic.claude-sonnet-4-5-20250929-v1:0": "claude-sonnet-4-5",
        "bedrock/converse/us.anthropic.claude-sonnet-4-5-20250929-v1:0": "claude-sonnet-4-5",
        "openrouter/anthropic/claude-3.5-sonnet": "claude-3-5-sonnet",
        "litellm_proxy/claude-opus-4-7": "claude-opus-4-7",
        "vertex_ai/claude-sonnet-4-5@20250929": "claude-sonnet-4-5",
        "anthropic/claude-opus-4-5-20251101": "claude-opus-4-5",
        "openai/gpt-4.1": "gpt-4.1",
        "gemini/gemini-2.5-pro": "gemini-2.5-pro",
        "azure/gpt-4o": "gpt-4o",
        "azure/o_series/o3": "o3",
    }
    for raw, bare in cases.items():
        assert canonical_model_id(raw) == bare, raw


def test_openrouter_dotted_claude_ids():
    """OpenRouter writes ``anthropic/claude-sonnet-4.5`` where Anthropic writes ``claude-sonnet-4-5``."""
    assert canonical_model_id("anthropic/claude-sonnet-4.5") == "claude-sonnet-4-5"
    assert canonical_model_id("openrouter/anthropic/claude-opus-4.1") == "claude-opus-4-1"
    assert canonical_model_id("gemini-2.5-pro") == "gemini-2.5-pro"  # dots stay outside Claude ids


def test_dated_snapshots_to_family():
    """``claude-sonnet-4-5-20250929`` (Anthropic's dated id, Model deprecations) and OpenAI's ``gpt-4o-2024-08-06``."""
    assert canonical_model_id("claude-sonnet-4-5-20250929") == "claude-sonnet-4-5"
    assert canonical_model_id("claude-haiku-4-5-20251001") == "claude-haiku-4-5"
    assert canonical_model_id("gpt-4o-2024-08-06") == "gpt-4o"
    assert canonical_model_id("claude-3-7-sonnet-latest") == "claude-3-7-sonnet"


def test_an_id_it_cannot_read_comes_back_stripped_and_lowercased():
    assert canonical_model_id("  My-Deployment ") == "my-deployment"
    assert canonical_model_id("azure/My-GPT") == "my-gpt"
    assert canonical_model_id("") == ""
    with pytest.raises(TypeError):
        canonical_model_id(None)  # type: ignore[arg-type]


def test_every_family_name_is_its_own_canonical_id():
    for family in families():
        assert canonical_model_id(family) == family
        assert family_of(family)[0] == family


@given(st.lists(st.sampled_from(GATEWAYS), max_size=2), st.sampled_from(KNOWN),
       st.sampled_from(("", "-20250929", "@20250929", "-2024-08-06")))
def test_any_gateway_prefix_and_snapshot_resolve_to_the_same_id(prefixes, bare, suffix):
    assert canonical_model_id("".join(prefixes) + bare + suffix) == bare


@given(st.sampled_from(("", "us.", "eu.", "apac.", "global.", "jp.")), st.sampled_from(KNOWN[:4]),
       st.sampled_from(("", "-20250929-v1:0", "-v1", "-v1:0")))
def test_any_bedrock_form_resolves_to_the_same_id(region, bare, suffix):
    assert canonical_model_id(f"bedrock/{region}anthropic.{bare}{suffix}") == bare


@given(st.text(max_size=60))
def test_reading_is_idempotent_and_never_raises_on_a_string(raw):
    once = canonical_model_id(raw)
    assert canonical_model_id(once) == once
