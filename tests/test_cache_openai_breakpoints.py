"""OpenAI's breakpoint cache (GPT-5.6 family on) beside the older longest-prefix one (issue 13).

Each test quotes the sentence its numbers come from. Sources, all read 2026-12-02:

* SDK: openai-python @ e43b422 (2026-08-21, generated from OpenAI's API spec),
  https://github.com/openai/openai-python/blob/e43b422/src/openai/types/responses/response_create_params.py
  (and ``response_input_text.py`` beside it);
* GUIDE: https://developers.openai.com/api/docs/guides/prompt-caching?prompt-cache-api=chat-completions;
* COOKBOOK: https://raw.githubusercontent.com/openai/openai-cookbook/main/examples/Prompt_Caching_201.ipynb;
* MIGRATION: OpenAI's GPT-5.6 migration notes as quoted in https://github.com/openai/codex/issues/35300.

Tests named ``assumed`` encode a choice the documents leave open (see the module docstring of
``ctxlab/cache_openai_breakpoints.py``).
"""

from __future__ import annotations

import pytest

from ctxlab import OpenAIBreakpointCache as Exported
from ctxlab.base.errors import CtxlabError
from ctxlab.cache import request_from_sizes, to_provider_fields
from ctxlab.cache_anthropic import AnthropicCache
from ctxlab.cache_openai import OpenAICache
from ctxlab.cache_openai_breakpoints import OpenAIBreakpointCache, openai_simulator
from ctxlab.messages import Conversation, ToolSpec, Usage, assistant, tool_result, user
from ctxlab.replay import replay
from ctxlab.tables.cache_rules import CacheRule, rule_for
from ctxlab.tables.prices import cost

NEW, OLD = "gpt-5.6", "gpt-4.1"
# The row H2's table builds for gpt-5.6, written out by hand: the simulator must follow a row it is given.
PCO = CacheRule(provider="openai", family="gpt-5.6 (by hand)", pattern=r"gpt-5\.6", mode="prompt_cache_options",
                min_tokens=1024, ttl_s=1800.0, ttl_options_s=(1800.0,), max_breakpoints=4, write_multiplier=1.25,
                read_multiplier=None, writes_billed=True, read_breakpoints=80)


def req(pieces, model=NEW, breakpoints=None):
    """An OpenAI request from (label, tokens) pieces; ``breakpoints``: the blocks marked ``prompt_cache_breakpoint``
    (none unless given: an OpenAI request marks nothing by default)."""
    return request_from_sizes(pieces, model=model, provider="openai", breakpoints=breakpoints or ())


def run(cache, requests, times=None, **kw):
    times = times or [10.0 * i for i in range(len(requests))]
    return [cache.request(r, t, **kw) for r, t in zip(requests, times)]


DOC = [("doc", 1300)]
DOC_Q = DOC + [("question", 40)]


# ---------------------------------------------------------------- dispatch: which simulator a model gets

def test_gpt_5_6_gets_the_breakpoint_simulator_and_gpt_4_1_the_longest_prefix_one():
    """SDK: "Supported for `gpt-5.6` and later models." COOKBOOK: "This guide applies only to models before
    GPT-5.6." """
    assert rule_for(NEW).mode == "prompt_cache_options" and rule_for(OLD).mode == "automatic"
    assert openai_simulator(NEW) is OpenAIBreakpointCache and openai_simulator("gpt-5.6-sol") is OpenAIBreakpointCache
    assert openai_simulator(OLD) is OpenAICache and openai_simulator("gpt-4o") is OpenAICache
    assert openai_simulator(OLD, {"rules": PCO}) is OpenAIBreakpointCache  # a fixed row decides
    assert Exported is OpenAIBreakpointCache


def _session(model):
    items, system = [user("Fix the bug.", "u0", timestamp="2026-12-01T10:00:00Z")], ("You are a coding agent. " * 300,)
    for r in range(3):
        items.append(assistant(f"step {r}", f"a{r}", calls=((f"c{r}", "read", {"path": f"m{r}.py"}),),
                               timestamp=f"2026-12-01T10:0{r + 1}:00Z", model=model, provider="openai",
                               usage=Usage(output_tokens=20)))
        items.append(tool_result(f"c{r}", "x = compute(y)\n" * 150, f"t{r}", timestamp=f"2026-12-01T10:0{r + 1}:00Z"))
    tools = (ToolSpec("read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}}),)
    return Conversation("s", tuple(items), system=system, tools=tools, model=model, provider="openai")


@pytest.mark.parametrize("model", [NEW, OLD])
def test_replay_uses_the_breakpoint_simulator_from_gpt_5_6_on(model):
    """GUIDE: "Cache writes have no additional fee on models before the GPT-5.6 family. For GPT-5.6 models and later
    model families, cache writes cost 1.25× the uncached input token rate." — so a replay on gpt-5.6 reports
    writes, one on gpt-4.1 none; and only the old mode speaks of 128-token steps."""
    result = replay(_session(model), "full", model=model, provider="openai")
    outcomes = [r.outcome for r in result.records]
    assert len(outcomes) == 3 and all(o.cache_read_tokens > 0 for o in outcomes[1:])
    if model == NEW:
        first = result.records[0].request  # every block written; the reply priming belongs to no block
        assert outcomes[0].cache_write_tokens == first.total_tokens - first.overhead_tokens > 0
        assert all("exact" in o.reason for o in outcomes[1:])
    else:
        assert all(o.cache_write_tokens == 0 and "steps of 128" in o.reason for o in outcomes[1:])


# ---------------------------------------------------------------- exact match at a breakpoint

@pytest.mark.parametrize("rules", [None, PCO], ids=["table row", "row by hand"])
def test_1300_token_prefix_reads_1300_at_a_breakpoint_where_the_old_mode_reads_1280(rules):
    """SDK (``PromptCacheBreakpoint``): "Marks the exact end of a reusable prompt prefix. [...] the boundary is not
    rounded to a token block." COOKBOOK (before GPT-5.6): "works automatically for prompts containing 1024 tokens
    or more, with cache hits occurring in increments of 128 tokens." 1,300 → 1,300 new, 1,280 = 10 x 128 old."""
    _, new = run(OpenAIBreakpointCache(rules=rules), [req(DOC), req(DOC_Q)])
    _, old = run(OpenAICache(), [req(DOC, OLD), req(DOC_Q, OLD)])
    assert (new.cache_read_tokens, new.cache_write_tokens, new.uncached_input_tokens) == (1300, 40, 0)
    assert (old.cache_read_tokens, old.cache_write_tokens, old.uncached_input_tokens) == (1280, 0, 60)
    assert new.read_until_block == 0 and new.reason == "hit: 1,300 tokens at block 0 (exact, entry from call 1)"


def test_no_fallback_to_a_shorter_unmarked_prefix_where_the_old_mode_falls_back():
    """MIGRATION: "GPT-5.6 implicit caching places a managed breakpoint near the latest user or tool message and no
    longer relies on 128-token rounding. A prompt with a large stable prefix followed by a changing suffix can
    therefore lose cache hits even when the stable prefix itself has not changed." Its remedy: "Place explicit
    breakpoints at the actual stable rendered boundary using prompt_cache_breakpoint." Old mode: 2,000 shared
    tokens → 1,920 (15 x 128)."""
    first, second = [("system", 2000), ("user a", 300)], [("system", 2000), ("user b", 300)]
    new = run(OpenAIBreakpointCache(), [req(first), req(second)])[1]
    assert (new.cache_read_tokens, new.cache_write_tokens) == (0, 2300)
    assert new.reason == ("miss: 2,000 tokens shared with call 1, but no entry ends there (exact match at a "
                          "breakpoint; no fallback to a shorter prefix)")
    assert run(OpenAICache(), [req(first, OLD), req(second, OLD)])[1].cache_read_tokens == 1920
    marked = run(OpenAIBreakpointCache(), [req(first, breakpoints=[0]), req(second, breakpoints=[0])])[1]
    assert (marked.cache_read_tokens, marked.cache_write_tokens) == (2000, 300)


def test_no_content_block_lookback_limit_unlike_anthropics_20_blocks():
    """SDK: "For cache matching, OpenAI considers up to the latest 80 breakpoints in the conversation, without a
    content-block lookback limit." (Anthropic: "The lookback window is 20 blocks.")"""
    head = [("system", 1100)] + [(f"m{i}", 10) for i in range(30)]
    first, later = head, head + [(f"n{i}", 10) for i in range(30)]
    o = run(OpenAIBreakpointCache(), [req(first), req(later, breakpoints=[len(later) - 1])])[1]
    assert o.cache_read_tokens == 1400 and o.read_until_block == 30  # 30 blocks before the only mark
    anthropic = AnthropicCache()
    a = [request_from_sizes(p, model="claude-sonnet-4-5") for p in (first, later)]
    assert run(anthropic, a)[1].cache_read_tokens == 0


def test_assumed_only_the_latest_80_breakpoints_are_looked_at():
    """SDK: "OpenAI considers up to the latest 80 breakpoints in the conversation". Assumed: the breakpoints are the
    positions nearest the end that carry an entry or a mark; an entry behind 80 marked blocks is not found."""
    first = [("system", 1100)]
    later = first + [(f"m{i}", 1) for i in range(81)]
    o = run(OpenAIBreakpointCache(), [req(first), req(later, breakpoints=range(1, 82))])[1]
    assert o.cache_read_tokens == 0 and "not among the latest 80 breakpoints" in o.reason
    ok = run(OpenAIBreakpointCache(), [req(first), req(later[:80], breakpoints=range(1, 80))])[1]
    assert ok.cache_read_tokens == 1100  # 79 marks in front of it: the entry is the 80th


# ---------------------------------------------------------------- implicit and explicit modes

def test_explicit_mode_without_breakpoints_does_not_cache():
    """SDK (``prompt_cache_options.mode``): "If there are no explicit breakpoints, the request does not use prompt
    caching." """
    o = run(OpenAIBreakpointCache(options_mode="explicit"), [req(DOC), req(DOC_Q)])
    assert all((x.cache_read_tokens, x.cache_write_tokens) == (0, 0) for x in o)
    assert "does not use prompt caching" in o[1].reason


def test_explicit_mode_writes_the_latest_four_breakpoints_and_implicit_the_latest_three_plus_its_own():
    """SDK: "With `implicit`, OpenAI creates one implicit breakpoint and writes up to the latest three explicit
    breakpoints in the request. With `explicit`, OpenAI does not create an implicit breakpoint and writes up to the
    latest four explicit breakpoints." Five blocks of a 1,100-token head then 100 each, marks on blocks 0-4."""
    pieces = [("system", 1100)] + [(f"m{i}", 100) for i in range(5)]
    probe = [("system", 1100), ("other", 100)]  # reads only if block 0 (1,100 tokens) was written

    def written(mode, marks):
        cache = OpenAIBreakpointCache(options_mode=mode)
        first = cache.request(req(pieces, breakpoints=marks), 0.0)
        return first.cache_write_tokens, cache.request(req(probe, breakpoints=[1]), 10.0).cache_read_tokens

    assert written("explicit", [0, 1, 2, 3]) == (1400, 1100)  # up to block 3; block 5 (unmarked) not written
    assert written("explicit", [0, 1, 2, 3, 4]) == (1500, 0)  # the latest four: 1-4, so block 0 is not written
    assert written("implicit", [0, 1, 2]) == (1600, 1100)  # 0-2 plus the implicit one on the last block
    assert written("implicit", [0, 1, 2, 3]) == (1600, 0)  # the latest three (1-3) plus the implicit one


def test_assumed_implicit_breakpoint_sits_on_the_last_block():
    """MIGRATION: "GPT-5.6 implicit caching places a managed breakpoint near the latest user or tool message".
    Assumed: on the prompt's last block, so a prompt that grows by one message reads all of the previous one."""
    calls = [[("system", 2000), ("user", 280)], [("system", 2000), ("user", 280), ("tool", 380)]]
    first, second = run(OpenAIBreakpointCache(), [req(c) for c in calls])
    assert (first.cache_write_tokens, second.cache_read_tokens, second.cache_write_tokens) == (2280, 2280, 380)


# ---------------------------------------------------------------- writes: reported and billed

def test_writes_are_reported_as_cache_write_tokens_and_billed_1_25x_input():
    """GUIDE: "For GPT-5.6 models and later model families, cache writes cost 1.25× the uncached input token rate.
    [...] OpenAI reports writes in cache_write_tokens and reads in cached_tokens". Before GPT-5.6: "Cache writes
    have no additional fee"."""
    first, second = run(OpenAIBreakpointCache(), [req(DOC, "gpt-5.6-sol"), req(DOC_Q, "gpt-5.6-sol")])
    assert to_provider_fields(first, "openai") == {
        "prompt_tokens": 1300, "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 1300}}
    assert to_provider_fields(second, "openai")["prompt_tokens_details"] == {"cached_tokens": 1300,
                                                                             "cache_write_tokens": 40}
    rule = rule_for(NEW)
    assert (rule.write_multiplier, rule.writes_billed) == (1.25, True)
    written = cost("gpt-5.6-sol", "openai", uncached_input_tokens=0, cache_read_tokens=0, cache_write_tokens=1_000_000,
                   output_tokens=0)
    plain = cost("gpt-5.6-sol", "openai", uncached_input_tokens=1_000_000, cache_read_tokens=0, cache_write_tokens=0,
                 output_tokens=0)
    assert written.cache_write == pytest.approx(1.25 * plain.input)
    old = run(OpenAICache(), [req(DOC, OLD)])[0]
    assert (old.cache_write_tokens, rule_for(OLD).writes_billed) == (0, False)


# ---------------------------------------------------------------- the 30-minute minimum lifetime

@pytest.mark.parametrize("rules", [None, PCO], ids=["table row", "row by hand"])
def test_30_minute_minimum_ttl_a_29_minute_gap_hits_a_31_minute_gap_misses(rules):
    """SDK (``prompt_cache_options.ttl``): "The minimum lifetime applied to every implicit and explicit cache
    breakpoint written by the request. Defaults to `30m`, which is currently the only supported value." The
    backend "may retain cache entries for longer": past 30 minutes the simulation counts a miss (the safe side)."""
    hit = run(OpenAIBreakpointCache(rules=rules), [req(DOC), req(DOC_Q)], times=[0.0, 29 * 60.0])[1]
    miss = run(OpenAIBreakpointCache(rules=rules), [req(DOC), req(DOC_Q)], times=[0.0, 31 * 60.0])[1]
    assert hit.cache_read_tokens == 1300
    assert miss.cache_read_tokens == 0 and miss.reason == "miss: expired after 1860 s (ttl 1800)"
    old = run(OpenAICache(retention="in_memory"), [req(DOC, OLD), req(DOC_Q, OLD)], times=[0.0, 29 * 60.0])[1]
    assert old.cache_read_tokens == 0  # in-memory retention (old mode) is long gone after 29 minutes


def test_assumed_a_read_restarts_the_30_minutes():
    """Not documented: a read is assumed to restart an entry's lifetime (as in the older mode), so two 25-minute
    gaps both hit."""
    o = run(OpenAIBreakpointCache(), [req(DOC), req(DOC, breakpoints=[0]), req(DOC_Q)], times=[0.0, 1500.0, 3000.0])
    assert [x.cache_read_tokens for x in o] == [0, 1300, 1300]


# ---------------------------------------------------------------- prompt_cache_key

def test_assumed_prompt_cache_key_joins_requests_and_separates_keys():
    """SDK: ``prompt_cache_key`` is "Used by OpenAI to cache responses for similar requests to optimize your cache hit
    rates." MIGRATION (as quoted): "On GPT-5.6 and later families, set `prompt_cache_key` to use the more reliable
    matching path for implicit and explicit caching." Assumed: entries are kept per key."""
    cache = OpenAIBreakpointCache(prompt_cache_key="tenant-a")
    assert cache.request(req(DOC), 0.0).cache_write_tokens == 1300
    assert cache.request(req(DOC_Q), 10.0).cache_read_tokens == 1300  # same key: joined
    other = cache.request(req(DOC_Q), 20.0, prompt_cache_key="tenant-b")
    assert other.cache_read_tokens == 0
    assert other.reason == "miss: prompt_cache_key differs (entry from call 2 written under 'tenant-a', this " \
                           "request 'tenant-b')"
    assert cache.request(req(DOC_Q), 30.0, prompt_cache_key="tenant-b").cache_read_tokens == 1340  # b's own entry


# ---------------------------------------------------------------- minimum, warm start, arguments

def test_breakpoints_below_1024_tokens_write_nothing():
    """GUIDE (older version): "Caching is enabled automatically for prompts that are 1024 tokens or longer." A
    shorter prompt is not cached; a breakpoint whose prefix is shorter writes nothing (assumed for breakpoints)."""
    short = run(OpenAIBreakpointCache(), [req([("doc", 1000)]), req([("doc", 1000), ("q", 20)])])
    assert all(o.cache_read_tokens == o.cache_write_tokens == 0 for o in short)
    assert short[0].reason == "miss: below minimum 1,024"
    o = run(OpenAIBreakpointCache(), [req([("system", 500), ("doc", 800)], breakpoints=[0])])[0]
    assert o.cache_write_tokens == 1300  # the implicit breakpoint (1,300) is written, the mark at 500 is not


def test_warm_head_lets_the_first_request_read_the_static_head():
    cache = OpenAIBreakpointCache()
    r = req([("tools", 600), ("system", 900), ("user", 100)])
    cache.warm_head(r, 0.0)
    o = cache.request(r, 5.0)
    assert (o.cache_read_tokens, o.cache_write_tokens) == (1500, 100)


def test_bad_arguments_raise_one_line_naming_them():
    with pytest.raises(CtxlabError, match="options_mode must be 'implicit' or 'explicit'"):
        OpenAIBreakpointCache(options_mode="auto")
    with pytest.raises(CtxlabError, match="prompt_cache_key must be a non-empty string or None"):
        OpenAIBreakpointCache(prompt_cache_key="")
    with pytest.raises(CtxlabError, match="ttl_s must be a positive number of seconds"):
        OpenAIBreakpointCache(ttl_s=0)


def test_module_says_how_it_differs_and_stays_short():
    import ctxlab.cache_openai_breakpoints as m

    assert "Unlike :class:`~ctxlab.cache_openai.OpenAICache`" in m.__doc__.split("\n\n")[1]
    assert "Chapter 04" in OpenAIBreakpointCache.__doc__ and "assumed" in m.__doc__.lower()
