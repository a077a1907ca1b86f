"""OpenAI's older cache mode (models before GPT-5.6): retention by model, beside the breakpoint mode (issue 13).

The 128-token steps and the 1,024-token minimum are tested in ``tests/test_cache.py``; the new mode in
``tests/test_cache_openai_breakpoints.py``. Sources, read 2026-12-02:

* SDK: openai-python @ e43b422 (2026-08-21, generated from OpenAI's API spec), ``prompt_cache_retention`` in
  https://github.com/openai/openai-python/blob/e43b422/src/openai/types/responses/response_create_params.py;
* AZURE: https://learn.microsoft.com/azure/foundry/openai/how-to/prompt-caching (in-memory retention).
"""

from __future__ import annotations

import pytest

from ctxlab.base.errors import CtxlabError
from ctxlab.cache import request_from_sizes
from ctxlab.cache_openai import OpenAICache
from ctxlab.cache_openai_breakpoints import OpenAIBreakpointCache
from ctxlab.tables.cache_rules import rule_for

CALLS = [[("tools", 1200), ("system", 2000), ("user task", 1280)],
         [("tools", 1200), ("system", 2000), ("user task", 1280), ("tool result 1", 380)]]
SIX_MINUTES = 360.0


def pair(cache, model, gap_s, **kw):
    """The second of two calls ``gap_s`` apart (the second extends the first by a 380-token tool result)."""
    r = [request_from_sizes(p, model=model, provider="openai") for p in CALLS]
    cache.request(r[0], 0.0, **kw)
    return cache.request(r[1], gap_s, **kw)


def test_a_six_minute_pause_hits_on_gpt_4_1_by_default():
    """SDK (``prompt_cache_retention``): "For older models that support both `in_memory` and `24h`, the default
    depends on your organization's data retention policy: - Organizations without ZDR enabled default to `24h`."
    So the default TTL of gpt-4.1 is 24 h, and a 6-minute pause reads the whole first prompt (4,480 = 35 x 128)."""
    assert rule_for("gpt-4.1").ttl_s == 86400.0
    o = pair(OpenAICache(), "gpt-4.1", SIX_MINUTES)
    assert (o.cache_read_tokens, o.uncached_input_tokens) == (4480, 380)


def test_in_memory_retention_makes_a_six_minute_pause_a_miss():
    """SDK: "Organizations with ZDR enabled default to `in_memory` when `prompt_cache_retention` is not specified."
    AZURE: "The system typically clears caches within 5 to 10 minutes of inactivity and always removes them within
    one hou[r]" — simulated as 300 s, the floor. The same pause on gpt-4.1 is then a miss."""
    o = pair(OpenAICache(retention="in_memory"), "gpt-4.1", SIX_MINUTES)
    assert o.cache_read_tokens == 0 and o.reason == "miss: expired after 360 s (ttl 300)"
    assert pair(OpenAICache(retention="in_memory"), "gpt-4.1", 290.0).cache_read_tokens == 4480


def test_24h_retention_is_a_maximum_a_25_hour_pause_misses():
    """SDK: "Set to `24h` to enable extended prompt caching, which keeps cached prefixes active for longer, up to a
    maximum of 24 hours." """
    assert pair(OpenAICache(retention="24h"), "gpt-4o", 23 * 3600.0).cache_read_tokens == 4480
    o = pair(OpenAICache(), "gpt-4o", 25 * 3600.0)
    assert o.cache_read_tokens == 0 and "expired" in o.reason


def test_gpt_5_5_offers_only_24h_retention():
    """SDK: "For `gpt-5.5`, `gpt-5.5-pro`, and future models, only `24h` is supported." """
    assert rule_for("gpt-5.5").ttl_options_s == (86400.0,)
    assert pair(OpenAICache(), "gpt-5.5", SIX_MINUTES).cache_read_tokens == 4480
    with pytest.raises(CtxlabError, match=r"retention='in_memory' is not offered for gpt-5\.5"):
        pair(OpenAICache(retention="in_memory"), "gpt-5.5", SIX_MINUTES)


def test_ttl_s_overrides_retention_and_bad_retention_is_refused():
    assert pair(OpenAICache(ttl_s=200, retention="24h"), "gpt-4.1", 250.0).cache_read_tokens == 0
    with pytest.raises(CtxlabError, match="retention must be None, 'in_memory' or '24h'"):
        OpenAICache(retention="1h")


def test_old_and_new_mode_side_by_side_after_a_six_minute_pause():
    """Old mode (gpt-4.1, 24 h default) and new mode (gpt-5.6, "Defaults to `30m`", SDK ``prompt_cache_options.ttl``)
    both keep a 6-minute-old entry; the new one reads it exactly (4,480 either way: 35 x 128) and bills the 380
    written tokens, the old one writes for free."""
    old = pair(OpenAICache(), "gpt-4.1", SIX_MINUTES)
    new = pair(OpenAIBreakpointCache(), "gpt-5.6", SIX_MINUTES)
    assert (old.cache_read_tokens, old.cache_write_tokens) == (4480, 0)
    assert (new.cache_read_tokens, new.cache_write_tokens) == (4480, 380)
