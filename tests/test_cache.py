"""Prefix-cache simulators: the required behaviours of issue 3, one test each."""

from __future__ import annotations

import pytest

from ctxlab.cache import request_from_sizes, to_provider_fields
from ctxlab.cache_anthropic import AnthropicCache
from ctxlab.cache_openai import OpenAICache, floor_to, shared_prefix_tokens
from ctxlab.cache_openai_breakpoints import OpenAIBreakpointCache, openai_simulator
from ctxlab.tables.cache_rules import NO_CACHE, RULES, bills_cache_writes, model_key, rule_for
from ctxlab.context import build_context
from ctxlab.messages import Conversation, ToolSpec, Usage, assistant, tool_result, user
from ctxlab.tables.profiles import profile_for
from ctxlab.render import render_blocks

# The texts' three-call example: a 4,480-token first prompt, then +380 (a tool result), then +130.
HEAD = [("tools", 1200), ("system", 2000), ("user task", 1280)]
CALLS = [HEAD, HEAD + [("tool result 1", 380)], HEAD + [("tool result 1", 380), ("tool result 2", 130)]]


def req(pieces, model="claude-sonnet-4-5", **kw):
    """A request from (label, tokens) pieces; breakpoint on the last block unless given."""
    provider = "anthropic" if model.startswith("claude") else "openai"
    return request_from_sizes(pieces, model=model, provider=provider, **kw)


def run(cache, requests, times=None, **kw):
    times = times or [10.0 * i for i in range(len(requests))]
    return [cache.request(r, t, **kw) for r, t in zip(requests, times)]


# ---------------------------------------------------------------- the texts' example

@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "claude-opus-4-5"])  # minimums 1,024 and 4,096 (≤ 4,480)
def test_three_call_example_under_anthropic_rules(model):
    first, second, third = run(AnthropicCache(), [req(p, model) for p in CALLS])
    assert (first.cache_read_tokens, first.cache_write_tokens, first.uncached_input_tokens) == (0, 4480, 0)
    assert (second.cache_read_tokens, second.cache_write_tokens) == (4480, 380)
    assert (third.cache_read_tokens, third.cache_write_tokens) == (4860, 130)
    assert to_provider_fields(second, "anthropic") | {"cache_creation": None} == {
        "input_tokens": 0, "cache_creation_input_tokens": 380, "cache_read_input_tokens": 4480, "cache_creation": None}
    for o in (first, second, third):
        assert o.cache_read_tokens + o.cache_write_tokens + o.uncached_input_tokens == o.total_input_tokens
    assert second.reason == "hit: entry from call 1 at block 2" and first.reason == "cold"


def test_three_call_example_under_openai_rules():
    first, second, third = run(OpenAICache(), [req(p, "gpt-4o") for p in CALLS])
    assert first.cache_read_tokens == 0
    assert second.cache_read_tokens == 4480 == 35 * 128
    assert (third.cache_read_tokens, third.uncached_input_tokens) == (4736, 254)
    assert third.cache_write_tokens == 0  # gpt-4o: no write fee, newly cached tokens are plain input
    assert to_provider_fields(third, "openai") == {
        "prompt_tokens": 4990, "prompt_tokens_details": {"cached_tokens": 4736, "cache_write_tokens": 0}}


def test_recorded_anthropic_fields_are_a_4860_token_prompt():
    recorded = Usage(uncached_input_tokens=0, cache_write_tokens=380, cache_read_tokens=4480)
    assert recorded.total_input_tokens == 4860


def test_openai_write_fee_is_a_dated_rule_read_from_the_price_table():
    """A model after GPT-5.6 that the facts table lacks (gpt-6-sol) takes the breakpoint mode: "Supported for
    `gpt-5.6` and later models" (openai-python e43b422, prompt_cache_options, read 2026-12-02). Its writes are
    billed and exact: the 380-token tool result is written whole, not 256 of it in 128-token steps."""
    assert not bills_cache_writes("gpt-4o") and not bills_cache_writes("gpt-4.1")
    assert bills_cache_writes("gpt-6-sol")  # genai-prices lists cache_write_mtok (1.25x input)
    simulator = openai_simulator("gpt-6-sol")
    assert simulator is OpenAIBreakpointCache
    first, second = run(simulator(), [req(CALLS[0], "gpt-6-sol"), req(CALLS[1], "gpt-6-sol")])
    assert (first.cache_write_tokens, first.uncached_input_tokens) == (4480, 0)
    assert (second.cache_read_tokens, second.cache_write_tokens, second.uncached_input_tokens) == (4480, 380, 0)


# ---------------------------------------------------------------- minimum length

@pytest.mark.parametrize("simulator,model", [(AnthropicCache, "claude-opus-4-5"), (OpenAICache, "gpt-4o")])
def test_request_below_the_minimum_reads_and_writes_nothing(simulator, model):
    small = [("system", 900), ("user", 100)]  # 1,000 tokens: below Opus 4.5's 4,096 and OpenAI's 1,024
    outcomes = run(simulator(), [req(small, model), req(small, model)])
    for o in outcomes:
        assert (o.cache_read_tokens, o.cache_write_tokens, o.uncached_input_tokens) == (0, 0, 1000)
        assert "below minimum" in o.reason


def test_a_breakpoint_below_the_minimum_writes_nothing_but_a_later_one_does():
    pieces = [("tools", 300), ("system", 500), ("user", 900)]  # system breakpoint at 800 < 1,024
    o = AnthropicCache().request(req(pieces, breakpoints={1, 2}), 0.0)
    assert (o.cache_write_tokens, o.uncached_input_tokens) == (1700, 0)
    again = AnthropicCache()
    again.request(req(pieces, breakpoints={1, 2}), 0.0)
    changed = again.request(req(pieces[:2] + [("user other", 900)], breakpoints={1, 2}), 1.0)
    assert changed.cache_read_tokens == 0  # no entry was written at the 800-token system breakpoint


def test_minimums_per_model_are_dated_data_with_sources():
    assert rule_for("claude-opus-4-5-20251101").min_tokens == 4096
    assert rule_for("claude-haiku-4-5").min_tokens == 4096
    assert rule_for("claude-sonnet-4-20250514").min_tokens == 1024
    assert rule_for("claude-3-haiku-20240307").min_tokens == 2048
    assert rule_for("gpt-4o").increment_tokens == 128
    assert all(r.source and r.checked == "2026-11-30" for r in RULES)
    assert not rule_for("gemini-2.5-pro").verified and not rule_for("deepseek-chat").verified
    assert model_key("anthropic/claude-opus-4-5-20251101") == model_key("claude-opus-4-5")


# ---------------------------------------------------------------- OpenAI prefix matching

def test_openai_1300_token_stable_prefix_reads_1280():
    _, second = run(OpenAICache(), [req([("doc", 1300)], "gpt-4o"), req([("doc", 1300), ("question", 40)], "gpt-4o")])
    assert second.cache_read_tokens == 1280


@pytest.mark.parametrize("k", [0, 500, 1023, 1024, 1100, 1151, 1152, 1299])
def test_openai_change_at_token_k_reads_floor128_of_k(k):
    text = " a" * 1300  # 1,300 o200k tokens, one per " a"
    changed = " a" * k + " b" + " a" * (1300 - k - 1)
    cache = OpenAICache()
    cache.request(req([("doc", 1300, text)], "gpt-4o"), 0.0)
    o = cache.request(req([("doc", 1300, changed)], "gpt-4o"), 1.0)
    expected = floor_to(k, 128) if floor_to(k, 128) >= 1024 else 0
    assert o.cache_read_tokens == expected


def test_openai_shared_prefix_counts_whole_blocks_then_tokens_inside_the_first_different_one():
    a = req([("system", 1000), ("user", 400, " x" * 400)], "gpt-4o")
    b = req([("system", 1000), ("user", 400, " x" * 200 + " y" * 200)], "gpt-4o")
    assert shared_prefix_tokens(a, b) == 1200


def test_openai_model_switch_reads_nothing():
    cache = OpenAICache()
    cache.request(req(CALLS[0], "gpt-4o"), 0.0)
    o = cache.request(req(CALLS[1], "gpt-4.1"), 1.0)
    assert o.cache_read_tokens == 0 and "model changed" in o.reason


# ---------------------------------------------------------------- Anthropic lookback

def history(n, changed=None, size=100):
    """tools, system, then n message blocks of ``size`` tokens; block ``changed`` altered."""
    return [("tools", 1000), ("system", 2000)] + [(f"m{i}{'*' if i == changed else ''}", size) for i in range(n)]


def test_changed_block_in_the_middle_reads_up_to_the_last_entry_before_it_within_lookback():
    cache = AnthropicCache()
    # call 1 writes entries at the system prompt (block 1) and after message 9 (block 11)
    cache.request(req(history(10), breakpoints={1, 11}), 0.0)
    # call 2 writes after message 14 (block 16)
    cache.request(req(history(15), breakpoints={1, 16}), 10.0)
    # call 3 changes message 12 (block 14): the read stops at the entry at block 11, not at block 13
    o = cache.request(req(history(20, changed=12), breakpoints={1, 21}), 20.0)
    assert o.read_until_block == 11 and o.cache_read_tokens == 3000 + 10 * 100
    assert o.cache_read_tokens < 3000 + 12 * 100  # not up to the changed token
    assert o.cache_write_tokens == 10 * 100


def test_entry_further_back_than_20_blocks_from_every_breakpoint_is_not_found():
    cache = AnthropicCache()
    cache.request(req(history(10), breakpoints={11}), 0.0)  # one entry, at block 11
    o = cache.request(req(history(40), breakpoints={41}), 10.0)  # breakpoint 30 blocks later
    assert o.cache_read_tokens == 0 and o.reason.startswith("miss: lookback")
    near = AnthropicCache()
    near.request(req(history(10), breakpoints={11}), 0.0)
    assert near.request(req(history(29), breakpoints={30}), 10.0).read_until_block == 11  # 19 blocks back: found


def test_sliding_window_reads_only_the_static_head_from_the_first_drop_on():
    cache = AnthropicCache()
    units = [[(f"u{k}", 600)] for k in range(12)]
    head = [("tools", 1500), ("system", 3000)]  # 4,500 tokens, above the minimum; breakpoint on the system
    outcomes = []
    for call in range(6):
        kept = [b for u in units[call:call + 5] for b in u]  # drops one unit per call from call 1 on
        pieces = head + kept
        outcomes.append(cache.request(req(pieces, breakpoints={1, len(pieces) - 1}), 30.0 * call))
    assert outcomes[0].cache_read_tokens == 0
    assert [o.cache_read_tokens for o in outcomes[1:]] == [4500] * 5
    assert all(o.cache_write_tokens == 3000 for o in outcomes[1:])


def test_sliding_window_rendered_from_a_real_context_reads_only_the_head():
    tools = (ToolSpec("bash", "Run a command. " * 200),)
    system = ("You are a careful coding agent. " * 200,)
    msgs = [user("fix it", "u0")]
    for r in range(6):
        msgs += [assistant(f"step {r}", f"a{r}", calls=((f"c{r}", "bash", {"cmd": f"run {r}"}),)),
                 tool_result(f"c{r}", f"output {r} " * 50, f"t{r}")]
    profile = profile_for("claude-sonnet-4-5")
    cache, outcomes = AnthropicCache(), []
    for call in range(3):
        keep = msgs[:1] + msgs[1 + 2 * call:]  # the task, then drop one round per call
        r = render_blocks(build_context(Conversation("c", tuple(keep), system=system, tools=tools), profile=profile))
        head_end = max(i for i, b in enumerate(r.blocks) if b.kind == "system")
        outcomes.append((cache.request(r, 10.0 * call), r.cum_tokens[head_end]))
    assert outcomes[0][0].cache_read_tokens == 0
    # from the first drop on the history after the task differs, and no entry ends on the task: only the head is read
    assert outcomes[1][0].cache_read_tokens == outcomes[1][1] > 1024
    assert outcomes[2][0].cache_read_tokens == outcomes[2][1]


# ---------------------------------------------------------------- TTL

def test_gap_longer_than_the_ttl_misses():
    cache = AnthropicCache()
    o = run(cache, [req(CALLS[0]), req(CALLS[1])], times=[0.0, 412.0])[1]
    assert o.cache_read_tokens == 0 and o.reason == "miss: expired after 412 s (ttl 300)"


def test_a_read_refreshes_the_ttl():
    cache = AnthropicCache()
    outcomes = run(cache, [req(CALLS[0]), req(CALLS[0]), req(CALLS[0])], times=[0.0, 240.0, 480.0])
    assert [o.cache_read_tokens for o in outcomes] == [0, 4480, 4480]  # 480 s after the write, 240 after the read


def test_one_hour_ttl_option():
    cache = AnthropicCache()
    first = cache.request(req(CALLS[0]), 0.0, ttl_s=3600)
    assert first.cache_write_1h_tokens == first.cache_write_tokens == 4480
    assert to_provider_fields(first, "anthropic")["cache_creation"] == {"ephemeral_5m_input_tokens": 0,
                                                                       "ephemeral_1h_input_tokens": 4480}
    assert cache.request(req(CALLS[1]), 1800.0).cache_read_tokens == 4480


def test_openai_ttl_is_a_parameter():
    """The default is 24 h now, in-memory retention a choice (changed for issue 13: a 500 s pause was a miss).

    "Organizations without ZDR enabled default to `24h`." (openai-python response_create_params.py, commit e43b422
    of 2026-08-21, read 2026-12-02); in-memory: "The system typically clears caches within 5 to 10 minutes of
    inactivity" (https://learn.microsoft.com/azure/foundry/openai/how-to/prompt-caching, read 2026-12-02)."""
    assert run(OpenAICache(ttl_s=600), [req(CALLS[0], "gpt-4o"), req(CALLS[1], "gpt-4o")],
               times=[0.0, 500.0])[1].cache_read_tokens == 4480
    assert run(OpenAICache(), [req(CALLS[0], "gpt-4o"), req(CALLS[1], "gpt-4o")],
               times=[0.0, 500.0])[1].cache_read_tokens == 4480  # 24 h default
    in_memory = OpenAICache(rules=rule_for("gpt-4o", retention="in_memory"))
    o = run(in_memory, [req(CALLS[0], "gpt-4o"), req(CALLS[1], "gpt-4o")], times=[0.0, 500.0])[1]
    assert o.cache_read_tokens == 0 and "expired" in o.reason


def test_no_timestamps_means_nothing_expires():
    assert run(AnthropicCache(), [req(CALLS[0]), req(CALLS[1])], times=[None, None])[1].cache_read_tokens == 4480


# ---------------------------------------------------------------- what invalidates what

def test_thinking_change_invalidates_message_caches_but_tools_and_system_are_still_read():
    cache = AnthropicCache()
    pieces = [("tools", 1500), ("system", 3000), ("user", 800)]
    cache.request(req(pieces, breakpoints={0, 1, 2}), 0.0)
    o = cache.request(req(pieces + [("tool result", 200)], thinking="high", breakpoints={0, 1, 3}), 10.0)
    assert o.cache_read_tokens == 4500 and o.read_until_block == 1
    assert "thinking changed" in o.reason


def test_model_change_reads_nothing():
    cache = AnthropicCache()
    cache.request(req(CALLS[0], "claude-sonnet-4-5"), 0.0)
    o = cache.request(req(CALLS[1], "claude-opus-4-1"), 10.0)
    assert o.cache_read_tokens == 0 and o.reason.startswith("miss: model changed")
    assert cache.request(req(CALLS[1], "claude-sonnet-4-5-20250929"), 20.0).cache_read_tokens == 4480  # same model


def test_tools_change_invalidates_everything():
    cache = AnthropicCache()
    cache.request(req(CALLS[0], breakpoints={0, 1, 2}), 0.0)
    o = cache.request(req([("tools v2", 1200)] + CALLS[1][1:], breakpoints={0, 1, 3}), 10.0)
    assert o.cache_read_tokens == 0


# ---------------------------------------------------------------- parallel requests and warm start

def test_parallel_request_cannot_read_an_entry_before_the_first_response_started():
    cache = AnthropicCache()
    cache.request(req(CALLS[0]), 0.0, response_started_s=2.5)
    second = cache.request(req(CALLS[1]), 0.0)
    assert second.cache_read_tokens == 0 and second.reason.startswith("miss: parallel")
    assert second.cache_write_tokens == 4860
    assert cache.request(req(CALLS[1]), 3.0).cache_read_tokens == 4860  # after the response began


@pytest.mark.parametrize("simulator,model", [(AnthropicCache, "claude-sonnet-4-5"), (OpenAICache, "gpt-4o")])
def test_warm_head_is_read_by_the_first_call(simulator, model):
    cache = simulator()
    first = req(CALLS[0], model, **({"breakpoints": {1, 2}} if model.startswith("claude") else {}))
    cache.warm_head(first, 0.0)
    o = cache.request(first, 1.0)
    expected = 3200 if model.startswith("claude") else floor_to(3200, 128)
    assert o.cache_read_tokens == expected and o.reason.startswith("hit")


# ---------------------------------------------------------------- parameter rows

def test_a_model_with_no_documented_caching_caches_nothing():
    assert rule_for("openai/openrouter-llama-4-maverick") is NO_CACHE
    r = [request_from_sizes(p, model="llama-4-maverick", provider="other") for p in CALLS[:2]]
    o = run(OpenAICache(), r)[1]
    assert o.cache_read_tokens == 0 and "no documented prompt caching" in o.reason
    # named as an OpenAI request, it gets OpenAI's rules
    r = [request_from_sizes(p, model="my-finetune", provider="openai") for p in CALLS[:2]]
    assert run(OpenAICache(), r)[1].cache_read_tokens == 4480


def test_gemini_and_deepseek_rows_run_in_the_automatic_simulator_unverified():
    gemini = rule_for("gemini-2.5-pro")
    assert gemini.mode == "automatic" and not gemini.verified
    _, second = run(OpenAICache(), [req(CALLS[0], "gemini-2.5-pro"), req(CALLS[1], "gemini-2.5-pro")])
    assert second.cache_read_tokens == 4480  # step 1: the whole shared prefix
    _, second = run(OpenAICache(), [req(CALLS[0], "deepseek-chat"), req(CALLS[1], "deepseek-chat")])
    assert second.cache_read_tokens == floor_to(4480, 64)


# ---------------------------------------------------------------- one simulator a file (issue 15)

def test_each_simulator_lives_in_its_own_module_and_cache_py_holds_what_they_share():
    import ctxlab.cache
    import ctxlab.cache_openai

    assert AnthropicCache.__module__ == "ctxlab.cache_anthropic" and OpenAICache.__module__ == "ctxlab.cache_openai"
    assert not hasattr(ctxlab.cache, "AnthropicCache") and not hasattr(ctxlab.cache, "OpenAICache")  # no shim
    assert "Unlike :class:`~ctxlab.cache_anthropic.AnthropicCache`" in ctxlab.cache_openai.__doc__
    # both keep their entries in the one store of cache.py, which checks their arguments once
    assert type(AnthropicCache()._s) is type(OpenAICache()._s) is ctxlab.cache.CacheStore


def test_the_shared_helpers_do_what_their_docstrings_say():
    from ctxlab.cache import CacheOutcome, too_short

    assert floor_to(1_279, 128) == 1_152 and floor_to(4_860, 128) == 4_736
    o = CacheOutcome.of(req(CALLS[1]), 4_480, 380, 0, 2, "hit")
    assert (o.uncached_input_tokens, o.total_input_tokens, round(o.hit_rate, 2)) == (0, 4_860, 0.92)
    assert too_short(rule_for("gpt-4o"), 1_024) == "miss: below minimum 1,024"
    assert too_short(NO_CACHE, NO_CACHE.min_tokens) == "miss: no documented prompt caching for this model"
