"""Token accounting: exact counters offline, estimators, overheads, tool definitions, inferred heads."""

from __future__ import annotations

import math
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlab.tables.offline_encodings import get_encoding
from ctxlab.messages import Conversation, ImagePart, Message, TextPart, ThinkingPart, ToolSpec, Usage, user
from ctxlab.tables.profiles import profile_for
from ctxlab.estimators import compare_estimates, get_counter
from ctxlab.tokens import CharsPerTokenCounter, MessageMeter, TiktokenCounter, image_tokens, infer_static_head, tools_tokens

GPT = profile_for("gpt-4o")
CLAUDE = profile_for("claude-sonnet-4-5")


def test_encodings_load_offline_and_leave_the_environment_as_it_was():
    before = os.environ.get("TIKTOKEN_CACHE_DIR")
    enc = get_encoding("o200k_base")
    assert enc.decode(enc.encode("上下文窗口 context window")) == "上下文窗口 context window"
    assert get_encoding("cl100k_base").n_vocab < enc.n_vocab
    assert os.environ.get("TIKTOKEN_CACHE_DIR") == before


def test_unknown_encoding_is_refused_not_downloaded():
    with pytest.raises(ValueError, match="offline data"):
        get_encoding("p50k_base")


def test_chars_estimators_round_up():
    assert CharsPerTokenCounter(4).count("abcdefgh") == 2
    assert CharsPerTokenCounter(4).count("abcdefghi") == 3
    assert CharsPerTokenCounter(3).count("") == 0
    assert get_counter("chars/3").name == "chars/3"


def test_get_counter_rejects_unknown_names():
    with pytest.raises(ValueError, match="Unknown counter"):
        get_counter("bytes/2")


def test_chars4_under_counts_300_chinese_characters():
    text = ("上下文窗口管理决定了智能体能记住什么。" * 20)[:300]
    assert len(text) == 300
    exact = get_counter("o200k_base").count(text)
    est = get_counter("chars/4").count(text)
    assert est == 75
    assert est < exact, "chars/4 under-counts Chinese under o200k"
    row = compare_estimates({"zh": text})[0]
    assert row.error("chars/4") == pytest.approx((75 - exact) / exact)


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(st.text(max_size=200))
def test_calibration_scales_and_rounds_up(text):
    base = TiktokenCounter("o200k_base").count(text)
    assert TiktokenCounter("o200k_base", 1.25).count(text) == math.ceil(base * 1.25)


def test_openai_message_overheads_follow_the_cookbook():
    counter = get_counter("o200k_base")
    meter = MessageMeter(GPT)
    m = user("Hello there, how are you?", "u")
    assert meter.message(m) == 3 + counter.count("user") + counter.count("Hello there, how are you?")
    named = Message(role="user", parts=(TextPart("hi"),), id="n", name="alice")
    assert meter.message(named) == 3 + counter.count("user") + counter.count("hi") + 1 + counter.count("alice")
    assert GPT.per_request_tokens == 3 and CLAUDE.per_request_tokens == 0


def test_each_message_is_counted_once():
    calls = []

    class Spy(CharsPerTokenCounter):
        def count(self, text):
            calls.append(text)
            return super().count(text)

    meter = MessageMeter(GPT, Spy(4))
    m = user("x" * 40, "u")
    first = meter.message(m)
    n = len(calls)
    assert meter.message(m) == first and len(calls) == n


def test_thinking_counts_only_when_asked():
    meter = MessageMeter(CLAUDE)
    m = Message(role="assistant", parts=(ThinkingPart("let me think " * 20), TextPart("ok")), id="a")
    assert meter.message(m, include_thinking=True) - meter.message(m, include_thinking=False) == \
        meter.counter.count("let me think " * 20)


def test_tool_definitions_follow_the_openai_recipe():
    counter = get_counter("o200k_base")
    spec = ToolSpec("get_weather", "Get the weather.", {"type": "object", "properties": {
        "city": {"type": "string", "description": "The city."},
        "unit": {"type": "string", "enum": ["c", "f"]}}})
    expected = (12 + 7 + counter.count("get_weather:Get the weather") + 3
                + 3 + counter.count("city:string:The city")
                + 3 - 3 + (3 + counter.count("c")) + (3 + counter.count("f")) + counter.count("unit:string:"))
    assert tools_tokens([spec], counter) == expected
    assert tools_tokens([], counter) == 0
    claude = MessageMeter(CLAUDE)
    # "| Claude Sonnet 4.5 | `auto`, `none`  ---  `any`, `tool` | 496 tokens  ---  588 tokens |" (Tool use with
    # Claude, mirror snapshot ff5b8ed 2026-08-22, read 2026-12-02); 346 before issue 13 (the 2026-05-20 table)
    assert claude.tools([spec]) == tools_tokens([spec], claude.counter) + 496


def test_image_tokens_per_provider_rule():
    assert image_tokens(ImagePart(width=1000, height=750), "anthropic") == 1000
    assert image_tokens(ImagePart(width=4000, height=4000), "anthropic") == 1600
    assert image_tokens(ImagePart(width=512, height=512), "openai") == 85 + 170
    assert image_tokens(ImagePart(width=2048, height=4096), "openai") == 85 + 170 * 2 * 3  # 768x1536 after scaling


def test_inferred_static_head_from_first_usage():
    meter = MessageMeter(CLAUDE)
    u = user("please refactor the parser", "u")
    a = Message(role="assistant", parts=(TextPart("ok"),), id="a",
                usage=Usage(uncached_input_tokens=3, cache_write_tokens=4000, cache_read_tokens=0))
    head = infer_static_head(Conversation("c", (u, a)), meter)
    assert head is not None and head.tokens == 4003 - meter.message(u) - CLAUDE.per_request_tokens
    assert "inferred" in str(head)
    # a recorded system prompt is counted; what is left is the unrecorded tools' share
    with_system = infer_static_head(Conversation("c", (u, a), system=("sys",)), meter)
    assert with_system.tokens == head.tokens - meter.system(("sys",)) > 0
    assert infer_static_head(Conversation("c", (u, a), tools=(ToolSpec("read"),)), meter) is None  # tools recorded
    assert infer_static_head(Conversation("c", (u,)), meter) is None  # no usage
