"""The proxy-log reader: claude-trace request/response pairs and LiteLLM / OpenHands SDK call logs.

Fixtures (``tests/fixtures/formats/proxy_*``) are invented, written in the shapes of the writers' source
(claude-trace ``interceptor.ts`` / ``types.ts``, OpenHands SDK ``telemetry.py``, LiteLLM's
StandardLoggingPayload spec): see the module docstrings of ``ctxlab/io/formats/proxy_log.py``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from helpers import run
import ctxlab
import ctxlab.lab.fidelity_end_to_end
from ctxlab.lab.fidelity_bodies import body_fidelity

from conftest import SHARED_TRANSCRIPTS, shared_transcript_files
from ctxlab.io import formats
from ctxlab.base.errors import TranscriptError
from ctxlab.io.formats import proxy_log
from ctxlab.interactions import find_orphans
from ctxlab.messages import ThinkingPart, ToolCallPart

FIX = Path(__file__).resolve().parent / "fixtures" / "formats"
TRACE = FIX / "proxy_claude_trace.jsonl"
OURS = sorted(FIX.glob("proxy_*"))
SHARED_TRACE = SHARED_TRANSCRIPTS / "claude-trace" / "test-traffic.jsonl"
SHARED_SDK = SHARED_TRANSCRIPTS / "openhands-sdk" / "litellm_proxy__anthropic__claude-sonnet-4-20250514-1757015046.707.json"
shared = pytest.mark.skipif(not SHARED_TRANSCRIPTS.is_dir(), reason=f"shared transcripts not found at {SHARED_TRANSCRIPTS}")


def usage4(m):
    u = m.usage
    return (u.uncached_input_tokens, u.cache_read_tokens, u.cache_write_tokens, u.output_tokens)


def raw_lines(path):
    return [(n, json.loads(s)) for n, s in enumerate(path.read_text(encoding="utf-8").split("\n"), 1) if s.strip()]


# ---------------------------------------------------------------- detection

@pytest.mark.parametrize("path", OURS, ids=lambda p: p.name)
def test_our_fixtures_are_proxy_logs_and_no_earlier_reader_claims_them(path):
    assert formats.detect(path) == "proxy-log"
    head = formats._head(path)
    earlier = formats.READERS[:[r.NAME for r in formats.READERS].index("proxy-log")]
    assert [r.NAME for r in earlier if r.sniff(path, head)] == []


def test_the_sniff_claims_no_other_fixture_or_shared_file():
    others = [p for p in FIX.iterdir() if not p.name.startswith("proxy_")]
    others += [p for p in shared_transcript_files() if p.parent.name not in ("claude-trace", "openhands-sdk")
               or p.name == "goal_events.jsonl"]
    assert [p.name for p in others if proxy_log.sniff(p, formats._head(p))] == []


def test_a_line_longer_than_the_head_is_still_recognised(tmp_path):
    obj = json.loads(TRACE.read_text(encoding="utf-8").split("\n")[1])
    obj["request"]["body"]["system"][1]["text"] += " padding" * 12000  # ~96 KB: past the 64 KiB head
    path = tmp_path / "log-2025-12-01-12-00-00.jsonl"
    path.write_text(json.dumps(obj, separators=(",", ":")) + "\n", encoding="utf-8")
    assert formats.detect(path) == "proxy-log"


def test_a_pretty_printed_call_log_past_the_head_and_a_list_of_logs(tmp_path):
    obj = json.loads((FIX / "proxy_openhands.json").read_text(encoding="utf-8"))
    obj["messages"][0]["content"][0]["text"] += " padding" * 12000  # "latency_sec" ends up past the head
    big = tmp_path / "litellm_proxy__anthropic__claude-sonnet-4-20250514-1764590505.500-ab12.json"
    big.write_text(json.dumps(obj, indent=2), encoding="utf-8")
    assert big.read_text(encoding="utf-8").index('"latency_sec"') > formats.HEAD_CHARS
    assert formats.detect(big) == "proxy-log" and formats.load(big).conversation().messages[-1].usage
    listed = tmp_path / "calls.json"
    listed.write_text(json.dumps([obj, obj]), encoding="utf-8")
    assert formats.detect(listed) == "proxy-log"
    assert formats.load(listed).conversation().notes[0].startswith("1 call(s) start a thread of their own")


# ---------------------------------------------------------------- claude-trace

def test_claude_trace_groups_calls_by_head_and_threads():
    t = formats.load(TRACE)
    assert t.format == "proxy-log" and t.notes == ()
    main_conv, title, quota = t.conversations
    assert [c.id for c in t.conversations] == ["proxy_claude_trace@2", "proxy_claude_trace@5", "proxy_claude_trace@1"]
    assert main_conv.threads() == ("main", "thread-2") and main_conv.system[0].startswith("You are Quill")
    assert [s.name for s in main_conv.tools] == ["read_file", "list_dir"] and main_conv.model == "claude-sonnet-4-5-20250929"
    assert title.tools == () and len(title.system) == 1 and title.inferred_head_tokens == 0  # the log holds the head
    assert quota.system == () and quota.tools == () and quota.inferred_head_tokens == 0  # known: nothing was sent
    assert [m.role for m in main_conv.thread("main").messages] == [
        "user", "assistant", "tool", "tool", "assistant", "user", "assistant", "tool"]
    for c in t.conversations:
        for th in c.threads():
            assert [o for o in find_orphans(c.thread(th).messages) if o.kind == "result_without_call"] == []


def test_claude_trace_streams_are_rebuilt_with_usage_thinking_and_parallel_calls():
    conv = formats.load(TRACE).conversations[0]
    first = conv.messages[1]
    assert first.response_id == "msg_M1" and first.stop_reason == "tool_use" and first.source.line == 2
    assert usage4(first) == (5, 0, 1800, 96)  # message_start's usage, message_delta's final output_tokens
    assert first.usage.raw["output_tokens"] == 96 and first.timestamp == "2025-12-01T12:00:03.500000Z"
    assert isinstance(first.parts[0], ThinkingPart) and first.parts[0].signature == "c2lnLTE="
    calls = [p for p in first.parts if isinstance(p, ToolCallPart)]
    assert [(c.id, c.name, json.loads(c.arguments)) for c in calls] == [
        ("toolu_A1", "read_file", {"path": "setup.cfg"}), ("toolu_A2", "list_dir", {"path": "src"})]
    results = conv.messages[2:4]
    assert [(r.tool_call_id, r.is_error, r.source.line) for r in results] == [("toolu_A1", False, 4), ("toolu_A2", True, 4)]
    second = conv.messages[4]
    assert usage4(second) == (3, 1800, 160, 12) and second.stop_reason == "stop" and second.source.line == 4
    retry = conv.messages[6]  # line 6 failed (HTTP 529); line 7 sent the same messages again
    assert retry.source.line == 7 and retry.response_id == "msg_M3" and usage4(retry) == (4, 1960, 30, 40)
    cut = conv.thread("thread-2").messages[-1]
    assert cut.stop_reason == "aborted" and cut.text == "Carrying on: the version is 2.4"


def test_claude_trace_notes_count_what_is_not_a_model_call():
    notes = "\n".join(formats.load(TRACE).conversations[0].notes)
    assert "left out 2 logged request(s) that are not model calls: 1 x POST /v1/messages/count_tokens, " \
           "1 x GET /api/oauth/profile" in notes
    assert "line 6: a call without a reply (HTTP 529 overloaded_error)" in notes
    assert "line 8: a call without a reply (no response was logged: ORPHANED_REQUEST" in notes
    assert "line 9: the stream has no message_stop" in notes and "line 7: 1 stream event(s)" in notes
    assert "lines 9 (thread-2)" in notes and "extend no earlier request" in notes


def test_bedrock_stream_and_model_name():
    quota = formats.load(TRACE).conversations[2]
    ping = quota.thread("thread-2").messages[-1]
    assert ping.model == "claude-3-5-haiku-20241022" and ping.text == "pong" and usage4(ping) == (12, 0, 0, 2)


def test_recorded_requests_are_the_bodies_as_logged():
    reqs = proxy_log.recorded_requests(TRACE)
    raw = {n: o for n, o in raw_lines(TRACE)}
    assert [r.line for r in reqs] == [1, 2, 4, 5, 6, 7, 8, 9, 11]  # lines 3 and 10 are not model calls
    assert all(r.body == raw[r.line]["request"]["body"] for r in reqs)
    by_line = {r.line: r for r in reqs}
    assert by_line[6].failure == "HTTP 529 overloaded_error" and by_line[6].usage is None
    assert (by_line[9].conversation, by_line[9].thread) == ("proxy_claude_trace@2", "thread-2")
    assert by_line[11].family == "anthropic" and by_line[11].model == "claude-3-5-haiku-20241022"


def test_the_reader_never_writes_the_file(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(TRACE.read_bytes())
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    formats.load(path)
    body_fidelity(path)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


# ---------------------------------------------------------------- LiteLLM / OpenHands

def test_openhands_older_log_keeps_usage_cost_model_and_tools():
    conv = formats.load(FIX / "proxy_openhands.json").conversation()
    assert conv.system == ("You are a helpful agent that works in a sandbox.",)
    assert [s.name for s in conv.tools] == ["terminal", "finish"] and conv.tools[0].parameters["required"] == ["command"]
    assert conv.model == "claude-sonnet-4-20250514" and conv.provider == "anthropic"
    reply = conv.messages[-1]
    # LiteLLM's prompt_tokens 2600 hold the 2200 read and the 380 written: 20 uncached
    assert usage4(reply) == (20, 2200, 380, 40) and reply.usage.cost_usd == {"total": 0.0023}
    assert reply.response_id == "chatcmpl-0001" and reply.stop_reason == "tool_use"
    assert reply.timestamp == "2025-12-01T12:01:45.500000Z" and conv.messages[0].timestamp == "2025-12-01T12:01:42.250000Z"
    assert [p.id for p in conv.messages[1].tool_calls] == ["toolu_O1", "toolu_O2"] and conv.messages[1].usage is None
    assert any("1 assistant message(s) of the requests have no logged call" in n for n in conv.notes)
    body = proxy_log.recorded_requests(FIX / "proxy_openhands.json")[0].body
    assert body["messages"][0]["role"] == "system" and len(body["tools"]) == 2 and "extra_body" in body


def test_openhands_newer_jsonl_threads_calls_and_keeps_the_failed_one():
    conv = formats.load(FIX / "proxy_openhands_calls.jsonl").conversation()
    assert conv.threads() == ("main",) and [m.role for m in conv.messages] == ["user", "assistant", "tool", "assistant", "user"]
    first = conv.messages[1]
    assert isinstance(first.parts[0], ThinkingPart) and first.parts[0].signature == "c2lnLTI="
    assert usage4(first) == (10, 0, 890, 30) and usage4(conv.messages[3]) == (70, 890, 0, 9)
    assert conv.messages[3].source.line == 2 and conv.messages[4].source.line == 3
    assert [t.parameters for t in conv.tools] == [{"type": "object", "properties": {}}] * 2
    notes = "\n".join(conv.notes)
    assert "ToolDefinitions (no parameter schema)" in notes and "line 3: a call without a reply (the call failed: " \
                                                                  "RateLimitError)" in notes


def test_mocked_function_calling_reads_the_prompt_as_sent_and_the_raw_reply():
    conv = formats.load(FIX / "proxy_openhands_nonfncall.json").conversation()
    assert conv.tools == () and "You can call: terminal" in conv.system[0]
    reply = conv.messages[-1]
    assert reply.tool_calls == () and "<function=terminal>" in reply.text and usage4(reply) == (44, 256, 0, 20)
    assert reply.model == "deepseek-chat" and any("mocked in the prompt" in n for n in conv.notes)


def test_litellm_standard_logging_payload():
    conv = formats.load(FIX / "proxy_litellm_payload.json").conversation()
    reply = conv.messages[-1]
    assert conv.system == ("Answer in one word.",) and [t.name for t in conv.tools] == ["finish"]
    assert reply.text == "Lima" and reply.model == "gpt-4o-mini-2024-07-18" and reply.provider == "openai"
    assert usage4(reply) == (12, 128, 0, 12) and reply.usage.cost_usd == {"total": 0.00021}
    assert conv.messages[0].timestamp == "2025-12-01T12:06:40Z" and reply.source.line == 1


# ---------------------------------------------------------------- strict and lenient

def test_strict_names_line_and_field_lenient_skips_with_notes(tmp_path):
    bad = FIX / "proxy_claude_trace_bad.jsonl"
    with pytest.raises(TranscriptError) as err:
        formats.load(bad)
    assert err.value.line == 2 and "not valid JSON" in str(err.value) and bad.name in str(err.value)
    lines = bad.read_text(encoding="utf-8").split("\n")
    usage_only = tmp_path / "usage.jsonl"
    usage_only.write_text("\n".join([lines[0], lines[2]]) + "\n", encoding="utf-8")
    with pytest.raises(TranscriptError) as err:
        formats.load(usage_only)
    assert (err.value.line, err.value.field) == (2, "response.body.usage.output_tokens")
    assert "strict=False" in str(err.value)
    t = formats.load(bad, strict=False)
    assert t.notes == ("skipped line 2: not valid JSON (Unterminated string starting at column 184).",
                       "skipped line 3: field 'response.body.usage.output_tokens': input should be greater than or "
                       "equal to 0, got -5.")
    assert sum(len(c.messages) for c in t.conversations) == 4


def test_a_torn_first_line_and_deep_nesting_are_bad_lines_not_crashes(tmp_path):
    lines = TRACE.read_text(encoding="utf-8").split("\n")
    torn = tmp_path / "torn.jsonl"
    torn.write_text("\n".join([lines[0][:300], *lines[1:]]), encoding="utf-8")
    with pytest.raises(TranscriptError) as err:
        formats.load(torn)
    assert err.value.line == 1 and "not valid JSON" in str(err.value)
    t = formats.load(torn, strict=False)
    assert t.notes[0].startswith("skipped line 1: not valid JSON") and len(proxy_log.recorded_requests(torn, strict=False)) == 8
    deep = tmp_path / "deep.jsonl"
    deep.write_text(lines[1].replace('"messages":[', '"messages":[' + "[" * 5000 + "]" * 5000 + ",", 1) + "\n"
                    + lines[0] + "\n", encoding="utf-8")
    with pytest.raises(TranscriptError) as err:
        formats.load(deep)
    assert err.value.line == 1 and "nested 5,00" in str(err.value)


def damaged(tmp_path, obj, name="log.jsonl"):
    path = tmp_path / name
    path.write_text(json.dumps(obj) + "\n" + json.dumps(obj) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("change, field", [
    (lambda o: o["request"].update(body="not json"), "request.body"),
    (lambda o: o["request"]["body"].pop("messages"), "request.body.messages"),
    (lambda o: o["response"].update(body_raw="event: message_start\ndata: {broken\n\n"), "response.body_raw"),
    (lambda o: o["response"].update(body_raw='data: {"type":"content_block_start","content_block":{}}\n'),
     "response.body_raw (event 1, content_block_start)"),
    (lambda o: o["request"]["body"].update(system=[{"type": "text"}]), "request.body.system[0].text"),
])
def test_damaged_trace_pairs_name_their_field(tmp_path, change, field):
    obj = raw_lines(TRACE)[1][1]
    change(obj)
    with pytest.raises(TranscriptError) as err:
        formats.load(damaged(tmp_path, obj))
    assert (err.value.line, err.value.field) == (1, field)


def test_damaged_litellm_logs_name_their_field(tmp_path):
    obj = json.loads((FIX / "proxy_openhands.json").read_text(encoding="utf-8"))
    obj["response"]["usage"]["cache_read_input_tokens"] = 9999
    with pytest.raises(TranscriptError) as err:
        formats.load(damaged(tmp_path, obj))
    assert (err.value.line, err.value.field) == (1, "response.usage") and "exceed the 2600 prompt tokens" in str(err.value)
    responses = {"context_window": 1, "llm_path": "responses", "input": [], "messages": [], "latency_sec": 1.0}
    with pytest.raises(TranscriptError) as err:
        formats.load(damaged(tmp_path, responses, "r.jsonl"))
    assert "Responses-API call log" in str(err.value)


# ---------------------------------------------------------------- fidelity against the recorded bytes

def test_body_fidelity_on_the_fixture():
    fit = body_fidelity(TRACE)
    assert [c.line for c in fit.calls] == [1, 2, 4, 5, 6, 7, 8, 9, 11]
    assert [c.recorded_input for c in fit.calls if c.line in (2, 6)] == [1805, None]
    f = fit.figures()
    assert f["body"]["calls"] == 9 and f["usage"]["calls"] == 7
    assert abs(f["body"]["median_error"]) < 0.3 and "body fidelity — proxy_claude_trace.jsonl" in str(fit)


def test_body_fidelity_notes_a_call_whose_context_cannot_be_built(tmp_path):
    obj = json.loads((FIX / "proxy_openhands.json").read_text(encoding="utf-8"))
    obj["messages"] = [obj["messages"][0], obj["messages"][3]]  # a tool result whose call was not sent
    path = tmp_path / "orphan.json"
    path.write_text(json.dumps(obj), encoding="utf-8")
    fit = body_fidelity(path)
    # the result is set aside (issue 12), which leaves nothing to send: said, not a crash
    assert fit.calls == () and fit.notes[0].startswith("line 1: no context to render (Conversation 'request' has "
                                                       "nothing to send: tool result in tool message")


# ---------------------------------------------------------------- the shared files

def trace_usage(obj):
    """Independent: the usage of one claude-trace pair, from the JSON body or the stream's message_start + message_delta."""
    resp = obj.get("response") or {}
    if isinstance(resp.get("body"), dict) and "usage" in resp["body"]:
        return resp["body"]["usage"]
    usage = {}
    for s in (resp.get("body_raw") or "").split("\n"):
        if s.startswith("data: "):
            ev = json.loads(s[6:])
            if ev["type"] == "message_start":
                usage.update(ev["message"]["usage"])
            elif ev["type"] == "message_delta":
                usage.update({k: v for k, v in ev.get("usage", {}).items() if v is not None})
    return usage or None


def head_key(body):
    strip = lambda o: ({k: strip(v) for k, v in o.items() if k != "cache_control"} if isinstance(o, dict)  # noqa: E731
                       else [strip(v) for v in o] if isinstance(o, list) else o)
    return json.dumps(strip([body.get("system") or None, body.get("tools") or None]), sort_keys=True)


@pytest.mark.shared
@shared
def test_shared_claude_trace_counts_match_the_raw_file():
    raw = raw_lines(SHARED_TRACE)
    model_calls = [(n, o) for n, o in raw if re.search(r"/v1/messages(\?|$)", o["request"]["url"])]
    t = formats.load(SHARED_TRACE)
    assert t.notes == () and len(raw) == 64
    heads = {head_key(o["request"]["body"]) for _, o in model_calls}
    assert len(t.conversations) == len(heads) == 7
    # every logged usage figure, once
    want = Counter((u["input_tokens"], u.get("cache_read_input_tokens") or 0, u.get("cache_creation_input_tokens") or 0,
                    u["output_tokens"]) for _, o in model_calls if (u := trace_usage(o)))
    got = Counter(usage4(m) for c in t.conversations for m in c.messages if m.usage)
    assert got == want and sum(want.values()) == 64
    assert {m.source.line for c in t.conversations for m in c.messages if m.usage} == {n for n, _ in model_calls}
    # tool calls and results: the distinct ids in each head's requests and replies
    by_head: dict[str, list] = {}
    for n, o in model_calls:
        by_head.setdefault(head_key(o["request"]["body"]), []).append((n, o))
    for conv in t.conversations:
        first = min(m.source.line for m in conv.messages)
        calls = next(v for v in by_head.values() if v[0][0] == first)
        ids, results = set(), set()
        for _, o in calls:
            blocks = [b for m in o["request"]["body"]["messages"] if isinstance(m["content"], list) for b in m["content"]]
            ids |= {b["id"] for b in blocks if b["type"] == "tool_use"}
            results |= {b["tool_use_id"] for b in blocks if b["type"] == "tool_result"}
            for s in (o["response"].get("body_raw") or "").split("\n"):
                if s.startswith("data: ") and '"content_block_start"' in s and '"tool_use"' in s:
                    ids.add(json.loads(s[6:])["content_block"]["id"])
        assert sum(len(m.tool_calls) for m in conv.messages) == len(ids), conv.id
        assert sum(1 for m in conv.messages if m.role == "tool") == len(results), conv.id
        assert sum(1 for m in conv.messages if m.usage) == len(calls), conv.id
    main_conv = t.conversations[0]
    assert main_conv.model == "claude-sonnet-4-20250514" and len(main_conv.tools) == 17
    assert main_conv.threads() == ("main", "thread-2")


@pytest.mark.shared
@shared
def test_shared_openhands_sdk_call_counts_match_the_raw_file():
    data = json.loads(SHARED_SDK.read_text(encoding="utf-8"))
    conv = formats.load(SHARED_SDK).conversation()
    msgs = data["messages"] + [data["response"]["choices"][0]["message"]]
    assert len(conv.messages) == len([m for m in msgs if m["role"] != "system"])
    assert sum(len(m.tool_calls) for m in conv.messages) == sum(len(m.get("tool_calls") or []) for m in msgs)
    assert sum(1 for m in conv.messages if m.role == "tool") == sum(1 for m in msgs if m["role"] == "tool")
    u = data["response"]["usage"]
    reply = conv.messages[-1]
    assert [m for m in conv.messages if m.usage] == [reply]
    assert usage4(reply) == (u["prompt_tokens"] - u["prompt_tokens_details"]["cached_tokens"]
                             - u["cache_creation_input_tokens"], u["cache_read_input_tokens"],
                             u["cache_creation_input_tokens"], u["completion_tokens"])
    assert reply.usage.cost_usd == {"total": data["cost"]} and reply.model == data["response"]["model"].split("/")[-1]
    assert len(conv.tools) == len(data["tools"]) and conv.system and conv.provider == "anthropic"


@pytest.mark.shared
@shared
@pytest.mark.parametrize("path", [SHARED_TRACE, SHARED_SDK], ids=["claude-trace", "openhands-sdk"])
def test_shared_body_fidelity(path):
    fit = body_fidelity(path)
    f = fit.figures()
    assert f["usage"]["calls"] == len([r for r in proxy_log.recorded_requests(path) if r.usage])
    assert abs(f["body"]["median_error"]) < 0.1 and abs(f["usage"]["median_error"]) < 0.15
    assert abs(f["usage"]["worst_error"]) < 0.25


# ---------------------------------------------------------------- the CLI

@pytest.mark.parametrize("path", [TRACE, FIX / "proxy_openhands.json"], ids=lambda p: p.name)
def test_cli_inspect_and_replay_on_fixtures(capsys, path):
    code, out, err = run(capsys, "inspect", str(path), "--json")
    assert code == 0, err
    assert json.loads(out)["format"] == "proxy-log"
    code, out, err = run(capsys, "replay", str(path), "--compare", "--check", "--conversation", "0")
    assert code == 0, err


@pytest.mark.shared
@shared
@pytest.mark.parametrize("path", [SHARED_TRACE, SHARED_SDK], ids=["claude-trace", "openhands-sdk"])
def test_cli_on_the_shared_files(capsys, path):
    code, out, err = run(capsys, "inspect", str(path), "--json")
    assert code == 0, err
    rep = json.loads(out)
    assert rep["format"] == "proxy-log" and rep["messages"] > 0
    # several conversations (one per system prompt + tool set): `replay --compare --check`, which compares
    # each and sums them, runs on both files in test_shared_compare_check.py (every shared file)
    code, out, err = run(capsys, "replay", str(path), "--recorded", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["fidelity"]["structural"]["calls"] == len([r for r in proxy_log.recorded_requests(path) if r.usage])
    assert doc["totals"]["cost_usd"] > 0
    # the heaviest conversation (the agent's own calls) within 11% at every call and 10% at most of them; the tiny
    # side calls (8-token quota probes) miss by a token, so the body's token-weighted error is the overall figure.
    # Measured 2026-12-02: claude-trace over-counts by +5% to +10.5% (claude-sonnet-4's factor 1.336 comes from a
    # Claude Code file; this file's own is 1.203 over 12 pairs). Counting nested tool schemas (issue 13) added 120
    # o200k tokens to its 17 tools and moved 3 of 16 calls from just under 10% to just over.
    main = ctxlab.lab.fidelity_end_to_end.end_to_end(formats.load(path).conversations[0])
    assert main.within >= 0.75 and max(abs(e) for e in main.errors) < 0.11
    assert abs(doc["fidelity"]["body"]["usage"]["total_error"]) < 0.10
