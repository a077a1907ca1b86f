"""The agent-loop adapter, driven by a fake model."""

from __future__ import annotations

import json

import pytest

from ctxlab.interactions import find_orphans
from ctxlab.loop import AgentLoop, neutral_usage
from ctxlab.messages import ToolSpec
from ctxlab.io.session import Session

TOOLS = (ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}}),)


def fake_model(body: dict, step: int) -> dict:
    """Reads files until step 12, then answers. Its usage follows the body's size (a stand-in)."""
    size = len(json.dumps(body)) // 4
    if step < 12:
        return {"tool_calls": [(f"call{step}", "read_file", {"path": f"src/m{step}.py"})],
                "usage": {"input_tokens": 3, "cache_read_input_tokens": size - 3, "output_tokens": 20}}
    return {"text": "All modules read.", "usage": {"input_tokens": size, "output_tokens": 5}}


def run_loop(tmp_path, strategy, model="claude-sonnet-4-5"):
    session = Session.create(tmp_path / "run.jsonl", system=["You are a coding agent."], tools=TOOLS, model=model)
    manager = AgentLoop(session, strategy, model=model)
    manager.add_user("Read every module and summarise. Never edit files.")
    requests = []
    for step in range(50):
        request = manager.next_request()
        requests.append(request)
        reply = fake_model(request.anthropic_body, step)
        message = manager.record_response(reply.get("text", ""), reply.get("tool_calls", ()), usage=reply["usage"])
        if not message.tool_calls:
            break
        for call in message.tool_calls:
            manager.add_tool_result(call.id, f"# module {call.id}\n" + "def f():\n    return 1\n" * 400)
    return session, manager, requests


def test_a_loop_under_compaction_stays_in_the_window_and_keeps_the_record(tmp_path):
    session, manager, requests = run_loop(tmp_path, "compaction")
    assert requests[-1].anthropic_body["messages"][-1]["role"] == "user"
    for r in requests:
        assert find_orphans(r.context.messages) == []
        assert r.context.total_tokens <= manager.profile.context_window
    reopened = Session.open(tmp_path / "run.jsonl")
    assert len(reopened) == len(session)
    msgs = reopened.conversation().messages
    assert sum(1 for m in msgs if m.role == "tool") == 12 and msgs[-1].text == "All modules read."


def test_small_window_compacts_and_the_session_file_only_grows(tmp_path):
    from ctxlab.compaction import CompactionStrategy
    from ctxlab.tables.profiles import profile_for, with_window

    session = Session.create(tmp_path / "run.jsonl", system=["You are a coding agent."], tools=TOOLS)
    manager = AgentLoop(session, CompactionStrategy(), model="claude-sonnet-4-5",
                        profile=with_window(profile_for("claude-sonnet-4-5"), 12_000))
    manager.add_user("Read every module. Never edit files.")
    sizes = []
    for step in range(14):
        before = (tmp_path / "run.jsonl").read_bytes()
        request = manager.next_request()
        assert request.context.total_tokens <= 12_000
        reply = fake_model(request.anthropic_body, step)
        message = manager.record_response(reply.get("text", ""), reply.get("tool_calls", ()), usage=reply["usage"])
        for call in message.tool_calls:
            manager.add_tool_result(call.id, "def f():\n    return 1\n" * 300)
        after = (tmp_path / "run.jsonl").read_bytes()
        assert after.startswith(before), "append-only: nothing written before is ever changed"
        sizes.append(request.context.total_tokens)
    kinds = [getattr(i, "kind", None) for i in Session.open(tmp_path / "run.jsonl").items()]
    assert "compaction" in kinds
    assert max(sizes) <= 12_000 and min(sizes[5:]) < 0.8 * 12_000


def test_openai_body_is_sendable_shape(tmp_path):
    _, _, requests = run_loop(tmp_path, "budgeted", model="gpt-4o")
    body = requests[3].openai_body
    assert body["model"] == "gpt-4o" and body["messages"][0]["role"] == "system"
    assert body["tools"][0]["function"]["name"] == "read_file"


def test_neutral_usage_reads_both_providers():
    a = neutral_usage({"input_tokens": 0, "cache_creation_input_tokens": 380, "cache_read_input_tokens": 4480,
                       "output_tokens": 7})
    assert a.total_input_tokens == 4860 and a.cache_write_tokens == 380
    o = neutral_usage({"prompt_tokens": 4990, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 4736}})
    assert (o.cache_read_tokens, o.uncached_input_tokens, o.total_input_tokens) == (4736, 254, 4990)


def test_neutral_usage_keeps_an_openai_cache_write():
    """GPT-5.6 on: "Cache-write pricing is not an additive fee: input tokens use the uncached-input, cached-input, or
    cache-write rate." (OpenAI prompt-caching guide, read 2026-12-02); the worked example: 2,000 tokens read, 400
    written, "The remaining 200 input tokens were neither read nor written." Field: ``prompt_tokens_details.
    cache_write_tokens`` (openai-python e43b422, completion_usage.py)."""
    o = neutral_usage({"prompt_tokens": 2600, "completion_tokens": 9,
                       "prompt_tokens_details": {"cached_tokens": 2000, "cache_write_tokens": 400}})
    assert (o.cache_read_tokens, o.cache_write_tokens, o.uncached_input_tokens) == (2000, 400, 200)
    assert o.total_input_tokens == 2600


def test_neutral_usage_keeps_litellms_cache_write():
    """LiteLLM relays Anthropic's counts beside an OpenAI-shaped usage: "cache_creation_input_tokens are the number
    of tokens that were written to cache." (docs.litellm.ai/docs/completion/prompt_caching, last updated 2026-10-07).
    The loop reads them as the file readers do (tables/usage_rules.py): here the write fits inside the prompt."""
    u = neutral_usage({"prompt_tokens": 1600, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 0},
                       "cache_creation_input_tokens": 1590, "cache_read_input_tokens": 0})
    assert (u.uncached_input_tokens, u.cache_read_tokens, u.cache_write_tokens) == (10, 0, 1590)
    old = neutral_usage({"prompt_tokens": 120357, "completion_tokens": 4156, "cache_creation_input_tokens": 21002,
                         "prompt_tokens_details": {"cached_tokens": 120269}, "cache_read_input_tokens": 120269})
    assert (old.uncached_input_tokens, old.cache_read_tokens, old.cache_write_tokens) == (88, 120269, 21002)


def test_neutral_usage_reads_the_responses_api_shape():
    """Responses usage: "input_tokens_details.cache_write_tokens: The number of input tokens that were written to
    the cache." beside ``cached_tokens`` (openai-python e43b422, responses/response_usage.py); both are part of
    ``input_tokens`` (the prompt-caching guide: "Cache-write pricing is not an additive fee"). Before, this shape was
    read as Anthropic's and lost both counts."""
    u = neutral_usage({"input_tokens": 1900, "output_tokens": 30,
                       "input_tokens_details": {"cached_tokens": 1500, "cache_write_tokens": 380}})
    assert (u.uncached_input_tokens, u.cache_read_tokens, u.cache_write_tokens, u.output_tokens) == (20, 1500, 380, 30)
    with pytest.raises(ValueError, match=r"usage\['input_tokens_details'\] cached_tokens \+ cache_write_tokens"):
        neutral_usage({"input_tokens": 10, "input_tokens_details": {"cached_tokens": 9, "cache_write_tokens": 9}})
