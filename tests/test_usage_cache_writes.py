"""Recorded usage read without losing a cache write: OpenAI (Chat Completions, Responses), Codex rollouts, LiteLLM.

The neutral fields add up to the whole prompt: ``uncached + cache_read + cache_write`` (ctxlab/messages.py Usage).
Every expected number below comes from the page, issue or source line quoted in the test's docstring (read
2026-12-02), not from the reader's own output. Issue 13.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxlab.base.errors import TranscriptError
from ctxlab.io import formats
from ctxlab.io.formats.chat_messages import chat_usage
from ctxlab.io.formats.proxy_bodies import litellm_usage
from ctxlab.io.formats.responses_items import usage as responses_usage

FIX = Path(__file__).parent / "fixtures" / "formats"


def four(u):
    return (u.uncached_input_tokens, u.cache_read_tokens, u.cache_write_tokens, u.output_tokens)


# --------------------------------------------------------------------------- OpenAI Chat Completions

def test_chat_completions_cache_write_is_part_of_the_prompt():
    """OpenAI prompt-caching guide (https://developers.openai.com/api/docs/guides/prompt-caching, GPT-5.6-era
    version, as quoted in mindroom-ai/mindroom#2134; read 2026-12-02): "In this example, 2,000 tokens were read from
    the cache and 400 additional tokens were written. The remaining 200 input tokens were neither read nor
    written." and "Cache-write pricing is not an additive fee: input tokens use the uncached-input, cached-input,
    or cache-write rate." Field: openai-python src/openai/types/completion_usage.py @ e43b422 (2026-08-21),
    ``PromptTokensDetails.cache_write_tokens``: "The unadjusted number of prompt tokens written to cache." """
    raw = {"prompt_tokens": 2600, "completion_tokens": 30, "total_tokens": 2630,
           "prompt_tokens_details": {"cached_tokens": 2000, "cache_write_tokens": 400}}
    u = chat_usage(raw, file="chat.json", line=1, at="usage")
    assert four(u) == (200, 2000, 400, 30)
    assert u.total_input_tokens == raw["prompt_tokens"]


def test_chat_completions_before_gpt_5_6_reads_as_before():
    """The same guide: "The following Chat Completions usage example shows a request that reused 1,920 of its 2,006
    prompt tokens" with ``{"prompt_tokens": 2006, "completion_tokens": 300, ..., "cached_tokens": 1920}``."""
    raw = {"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
           "prompt_tokens_details": {"cached_tokens": 1920}}
    assert four(chat_usage(raw, file="chat.json", line=1, at="usage")) == (86, 1920, 0, 300)


# --------------------------------------------------------------------------- OpenAI Responses

def test_responses_cache_write_is_part_of_the_input():
    """openai-python src/openai/types/responses/response_usage.py @ e43b422 (2026-08-21): ``InputTokensDetails``
    ``cache_write_tokens: int`` "The number of input tokens that were written to the cache." and ``cached_tokens``
    "The number of tokens that were retrieved from the cache." The guide's example (2,000 read, 400 written,
    "The remaining 200 input tokens were neither read nor written.") in the Responses shape."""
    raw = {"input_tokens": 2600, "output_tokens": 50, "total_tokens": 2650,
           "input_tokens_details": {"cached_tokens": 2000, "cache_write_tokens": 400},
           "output_tokens_details": {"reasoning_tokens": 20}}
    u = responses_usage(raw, file="r.json", line=1)
    assert four(u) == (200, 2000, 400, 50) and u.total_input_tokens == 2600


def test_a_recorded_response_object_keeps_its_cache_write(tmp_path):
    """The ``openai-responses`` reader on a response object whose usage records a write (same doc numbers)."""
    obj = json.loads((FIX / "openai_response.json").read_text(encoding="utf-8"))
    obj["usage"] = {"input_tokens": 2600, "output_tokens": 50, "total_tokens": 2650,
                    "input_tokens_details": {"cached_tokens": 2000, "cache_write_tokens": 400},
                    "output_tokens_details": {"reasoning_tokens": 0}}
    path = tmp_path / "response.json"
    path.write_text(json.dumps(obj), encoding="utf-8")
    (reply,) = [m for m in formats.load(path).conversation().messages if m.usage]
    assert four(reply.usage) == (200, 2000, 400, 50)


# --------------------------------------------------------------------------- Codex rollouts

def test_codex_token_count_cache_write_input_tokens():
    """A Codex rollout token_count as quoted in ccusage/ccusage#1617 (2026-08-20, @openai/codex-sdk 0.148.0):
    ``"total_token_usage":{"input_tokens":935040,"cached_input_tokens":875306,"cache_write_input_tokens":57610,
    "output_tokens":11150,...}``. agentclientprotocol/codex-acp#509: "Codex app-server reports `inputTokens`
    inclusive of both cache reads and cache writes." So uncached = 935,040 - 875,306 - 57,610 = 2,124."""
    total = {"input_tokens": 935040, "cached_input_tokens": 875306, "cache_write_input_tokens": 57610,
             "output_tokens": 11150, "reasoning_output_tokens": 1141, "total_tokens": 946190}
    last = {"input_tokens": 58697, "cached_input_tokens": 57817, "cache_write_input_tokens": 0,
            "output_tokens": 227, "reasoning_output_tokens": 9, "total_tokens": 58924}
    assert four(responses_usage(total, file="r.jsonl", line=1)) == (2124, 875306, 57610, 11150)
    assert four(responses_usage(last, file="r.jsonl", line=1)) == (880, 57817, 0, 227)


def test_codex_reader_reads_cache_write_input_tokens(tmp_path):
    """The codex reader on a rollout whose first call writes 8,960 tokens, recorded under Codex's own name
    ``cache_write_input_tokens`` (the fixture's first call: input 9,000, none read, 8,960 written → 40 uncached)."""
    text = (FIX / "codex_0125_desktop.jsonl").read_text(encoding="utf-8")
    assert text.count('"cache_write_tokens"') == 1
    path = tmp_path / "rollout-2026-06-01.jsonl"
    path.write_text(text.replace('"cache_write_tokens"', '"cache_write_input_tokens"'), encoding="utf-8")
    first = next(m for m in formats.load(path).conversation().messages if m.role == "assistant")
    assert four(first.usage) == (40, 0, 8960, 120)
    assert first.usage.raw["cache_write_input_tokens"] == 8960


# --------------------------------------------------------------------------- LiteLLM relaying Anthropic

def test_litellm_prompt_tokens_with_the_write_inside():
    """LiteLLM v1.80.11 usage quoted in BerriAI/litellm#11364 (2026-01-19): ``"prompt_tokens": 98805``,
    ``"prompt_tokens_details": {"cached_tokens": 66360, "cache_creation_tokens": 32435}``,
    ``"cache_read_input_tokens": 66360``, ``"cache_creation_input_tokens": 32435``. Source: LiteLLM's Anthropic
    ``calculate_usage`` (litellm/llms/anthropic/chat/transformation.py, the version with cache_creation_token_details)
    does ``prompt_tokens += cache_creation_input_tokens`` and ``prompt_tokens += cache_read_input_tokens``;
    docs.litellm.ai/docs/completion/prompt_caching (last_updated 2026-10-07): "prompt_tokens: These are all prompt
    tokens including cache-miss and cache-hit input tokens." So uncached = 98,805 - 66,360 - 32,435 = 10."""
    raw = {"total_tokens": 103925, "prompt_tokens": 98805, "completion_tokens": 5120,
           "prompt_tokens_details": {"text_tokens": None, "audio_tokens": None, "image_tokens": None,
                                     "cached_tokens": 66360, "cache_creation_tokens": 32435},
           "cache_read_input_tokens": 66360, "cache_creation_input_tokens": 32435}
    for read in (chat_usage, litellm_usage):
        u = read(raw, file="log.jsonl", line=1, at="response.usage")
        assert four(u) == (10, 66360, 32435, 5120) and u.total_input_tokens == 98805


def test_litellm_prompt_tokens_without_the_write():
    """LiteLLM v1.74.9 in BerriAI/litellm#13207 (2025-08-01): "total usage: input: 88, output: 4156, cache
    creation: 21002, cache read: 120269" while LiteLLM reported 124,513 total tokens ("it doesn't count the cache
    create input tokens"): prompt_tokens = 124,513 - 4,156 = 120,357 = 88 + 120,269. The Anthropic transformation
    of those releases (BerriAI/litellm transformation.py at 600fadce / 005e5efa) adds only the read:
    ``prompt_tokens += cache_read_input_tokens``. The write is kept, and the whole prompt is 88 + 120,269 + 21,002."""
    raw = {"prompt_tokens": 120357, "completion_tokens": 4156, "total_tokens": 124513,
           "prompt_tokens_details": {"cached_tokens": 120269},
           "cache_creation_input_tokens": 21002, "cache_read_input_tokens": 120269}
    u = litellm_usage(raw, file="log.jsonl", line=1, at="response.usage")
    assert four(u) == (88, 120269, 21002, 4156) and u.total_input_tokens == 141359


def test_litellm_docs_example():
    """docs.litellm.ai/docs/completion/prompt_caching: "LiteLLM follows the OpenAI prompt caching usage object
    format" with ``"prompt_tokens": 2006, "completion_tokens": 300, "cached_tokens": 1920`` and
    ``# ANTHROPIC_ONLY # "cache_creation_input_tokens": 0``."""
    raw = {"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
           "prompt_tokens_details": {"cached_tokens": 1920}, "completion_tokens_details": {"reasoning_tokens": 0},
           "cache_creation_input_tokens": 0}
    assert four(litellm_usage(raw, file="log.jsonl", line=1, at="response.usage")) == (86, 1920, 0, 300)


def test_an_openhands_log_from_an_older_litellm_keeps_its_write(tmp_path):
    """The proxy-log reader on a LiteLLM / OpenHands call log whose usage has the #13207 shape."""
    obj = json.loads((FIX / "proxy_openhands.json").read_text(encoding="utf-8"))
    obj["response"]["usage"] = {"prompt_tokens": 120357, "completion_tokens": 4156, "total_tokens": 124513,
                                "prompt_tokens_details": {"cached_tokens": 120269},
                                "cache_creation_input_tokens": 21002, "cache_read_input_tokens": 120269}
    path = tmp_path / "call.json"
    path.write_text(json.dumps(obj), encoding="utf-8")
    (reply,) = [m for c in formats.load(path).conversations for m in c.messages if m.usage]
    assert four(reply.usage) == (88, 120269, 21002, 4156)


# --------------------------------------------------------------------------- unknown fields, damaged counts

def test_unknown_extra_fields_are_kept_in_raw():
    """A field no reader knows (a future detail) changes no number and stays in ``raw``."""
    chat = {"prompt_tokens": 2600, "completion_tokens": 30, "service_tier_tokens": 7,
            "prompt_tokens_details": {"cached_tokens": 2000, "cache_write_tokens": 400, "future_tokens": 5}}
    u = chat_usage(chat, file="c.json", line=1, at="usage")
    assert four(u) == (200, 2000, 400, 30)
    assert u.raw["service_tier_tokens"] == 7 and u.raw["prompt_tokens_details"]["future_tokens"] == 5
    resp = {"input_tokens": 2600, "output_tokens": 50, "cache_ttl_tokens": 9,
            "input_tokens_details": {"cached_tokens": 2000, "cache_write_tokens": 400, "future_tokens": 5}}
    u = responses_usage(resp, file="r.json", line=1)
    assert four(u) == (200, 2000, 400, 50) and u.raw["cache_ttl_tokens"] == 9


@pytest.mark.parametrize("read, raw, field", [
    (chat_usage, {"prompt_tokens": 10, "prompt_tokens_details": {"cache_write_tokens": -5}},
     "usage.prompt_tokens_details.cache_write_tokens"),
    (chat_usage, {"prompt_tokens": 10, "cache_creation_input_tokens": "3"}, "usage.cache_creation_input_tokens"),
    (responses_usage, {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 1, "cache_write_tokens": 2.5}},
     "usage.input_tokens_details.cache_write_tokens"),
    (responses_usage, {"input_tokens": 10, "cache_write_input_tokens": -1}, "usage.cache_write_input_tokens"),
    (responses_usage, {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 8, "cache_write_tokens": 5}},
     "usage.input_tokens_details.cache_write_tokens"),
    (chat_usage, {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 8, "cache_write_tokens": 5}},
     "usage"),
])
def test_a_damaged_count_is_one_line_naming_its_field(read, raw, field):
    with pytest.raises(TranscriptError) as err:
        read(raw, file="x.json", line=3, at="usage")
    text = str(err.value)
    assert err.value.field == field and "\n" not in text
    assert text.startswith(f"x.json:3: field '{field}': ") and text.endswith("load with strict=False to skip it.")


def test_a_codex_write_over_the_uncached_input_names_codex_s_field(tmp_path):
    text = (FIX / "codex_0125_desktop.jsonl").read_text(encoding="utf-8")
    path = tmp_path / "rollout-2026-06-01.jsonl"
    path.write_text(text.replace('"cache_write_tokens": 8960', '"cache_write_input_tokens": 9500'), encoding="utf-8")
    with pytest.raises(TranscriptError) as err:
        formats.load(path)
    assert err.value.field == "payload.info.last_token_usage.cache_write_input_tokens"
    assert "9500 cache-write tokens exceed the 9000 input tokens not read from the cache" in str(err.value)
