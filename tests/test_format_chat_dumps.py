"""Chat-style dumps: tool messages without ids, JSON Lines of bare messages, LLaMA-Factory v1 samples,
mini-swe-agent trajectories (old list and newer ``{"info", "messages", "trajectory_format"}``), and a
single OpenAI Responses response object under ``replay --recorded``.

Fixtures are invented, written from each writer's source (cited in the readers' docstrings).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import run
from conftest import SHARED_TRANSCRIPTS
from ctxlab.io import formats
from ctxlab.base.errors import TranscriptError
from ctxlab.io.formats import messages_jsonl, openai_responses
from ctxlab.io.formats.openai_chat import MINI_SWE_AGENT
from ctxlab.interactions import find_orphans
from ctxlab.messages import TextPart, ThinkingPart, ToolCallPart

FIX = Path(__file__).resolve().parent / "fixtures" / "formats"
MINI = SHARED_TRANSCRIPTS / "mini-swe-agent" / "github_issue.traj.json"


def chat(path: Path, messages: list) -> Path:
    """A JSON list, message i on line i + 2."""
    path.write_text("[\n" + ",\n".join(json.dumps(m) for m in messages) + "\n]\n", encoding="utf-8")
    return path


def usage4(m):
    u = m.usage
    return (u.uncached_input_tokens, u.cache_read_tokens, u.cache_write_tokens, u.output_tokens)


# ---------------------------------------------------------------- tool messages without tool_call_id

def test_a_tool_message_without_id_answers_the_one_open_call():
    conv = formats.load(FIX / "chat_no_ids.json").conversation()
    tools = [m for m in conv.messages if m.role == "tool"]
    assert [(m.tool_call_id, m.tool_name, m.text) for m in tools] == [("call_wc", "shell", "812 notes.txt"),
                                                                       ("call_head", "shell", "# shopping")]
    assert find_orphans(conv.messages) == []
    assert any(n.startswith("2 tool message(s) without tool_call_id paired by position") for n in conv.notes)


def test_two_open_calls_are_ambiguous_strict_and_a_noted_guess_lenient():
    path = FIX / "chat_no_ids_ambiguous.json"
    with pytest.raises(TranscriptError) as err:
        formats.load(path)
    e = err.value
    assert (e.file, e.line, e.field) == ("chat_no_ids_ambiguous.json", 4, "messages[2].tool_call_id")
    assert "2 calls are open ('call_a', 'call_b'): which one it answers is ambiguous" in str(e)
    assert "Give each tool message its tool_call_id" in e.hint
    t = formats.load(path, strict=False)
    conv = t.conversation()
    assert [m.tool_call_id for m in conv.messages if m.role == "tool"] == ["call_a", "call_b"]  # then one open
    assert len(t.notes) == 1 and t.notes[0].startswith("chat_no_ids_ambiguous.json:4: a tool message without")
    assert "paired with the oldest, 'call_a' (a guess)" in t.notes[0]
    assert any(n.startswith("message 2 (line 4): ") for n in conv.notes)


def test_a_tool_message_with_no_open_call_is_refused_or_skipped(tmp_path):
    path = chat(tmp_path / "orphan.json", [{"role": "user", "content": "hi"}, {"role": "tool", "content": "stray"},
                                           {"role": "assistant", "content": "ok"}])
    with pytest.raises(TranscriptError) as err:
        formats.load(path)
    assert (err.value.line, err.value.field) == (3, "messages[1].tool_call_id")
    assert "must name the call it answers (no tool_call_id, and no call before it is still open)" in str(err.value)
    t = formats.load(path, strict=False)
    assert t.notes[0].startswith("skipped line 3: field 'messages[1].tool_call_id'")
    assert [m.role for m in t.conversation().messages] == ["user", "assistant"]


def test_an_answered_call_is_no_longer_open(tmp_path):
    path = chat(tmp_path / "mixed.json", [
        {"role": "user", "content": "two things"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "A"},
        {"role": "tool", "content": "B"}])  # only b is still open: no ambiguity
    conv = formats.load(path).conversation()
    assert [(m.tool_call_id, m.tool_name) for m in conv.messages if m.role == "tool"] == [("a", "f"), ("b", "g")]


# ---------------------------------------------------------------- JSON Lines of bare messages

def test_json_lines_of_bare_messages_are_one_conversation():
    path = FIX / "chat_messages.jsonl"
    assert formats.detect(path) == "messages-jsonl"
    t = formats.load(path)
    (conv,) = t.conversations
    assert conv.id == "chat_messages" and conv.system == ("You are terse.",)
    assert [m.role for m in conv.messages] == ["user", "assistant", "tool", "assistant"] * 2
    assert [m.source.line for m in conv.messages] == list(range(2, 10))  # each message's own line
    assert [(m.tool_call_id, m.tool_name) for m in conv.messages if m.role == "tool"] == [("t1", "clock"),
                                                                                          ("t2", "clock")]
    assert conv.messages[4].text == "And Lima?" and t.notes == ()


def test_bare_message_lines_damaged_and_in_anthropic_shape(tmp_path):
    bad = tmp_path / "dump.jsonl"
    bad.write_text("\n".join([json.dumps({"role": "user", "content": "a"}), json.dumps({"role": "robot", "content": "b"}),
                              '{"role": "assistant", "content": "cut', json.dumps({"role": "assistant", "content": "c"})])
                   + "\n", encoding="utf-8")
    with pytest.raises(TranscriptError) as err:
        formats.load(bad)
    assert (err.value.line, err.value.field) == (2, "[1].role")
    t = formats.load(bad, strict=False)
    assert [n.split(":")[0] for n in t.notes] == ["skipped line 2", "skipped line 3"]
    assert [m.text for m in t.conversation().messages] == ["a", "c"]
    anth = tmp_path / "anthropic.jsonl"
    anth.write_text("\n".join(json.dumps(m) for m in [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "tu1", "name": "wx", "input": {"c": "Oslo"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1", "content": "-3C"}]},
        {"role": "assistant", "content": "-3C in Oslo."}]) + "\n", encoding="utf-8")
    conv = formats.load(anth).conversation()
    assert conv.provider == "anthropic" and [(m.role, m.tool_call_id) for m in conv.messages][2] == ("tool", "tu1")
    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps({"role": "user", "content": "only me"}) + "\n", encoding="utf-8")
    assert formats.detect(one) == "messages-jsonl" and formats.load(one).conversation().messages[0].text == "only me"


def test_lines_with_a_type_are_not_bare_messages(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(json.dumps({"type": "message", "role": "user", "content": f"m{i}"}) for i in range(3)),
                    encoding="utf-8")
    assert not messages_jsonl.sniff(path, formats._head(path))


# ---------------------------------------------------------------- LLaMA-Factory v1 samples

def test_llamafactory_v1_sft_parts_tools_and_positional_pairing():
    path = FIX / "llamafactory_v1_sft.jsonl"
    assert formats.detect(path) == "messages-jsonl"
    rain, parallel, plain = formats.load(path).conversations
    assert rain.system == ("You answer weather questions with the tools.",)
    assert [t.name for t in rain.tools] == ["get_forecast", "convert_temp"]  # tools: a JSON string, both shapes
    assert rain.tools[0].parameters["required"] == ["city"]
    call = rain.messages[1]
    assert call.parts == (ThinkingPart("Need the forecast for Lyon, tomorrow."),
                          ToolCallPart("conv0:2:call0", "get_forecast", '{"city":"Lyon","day":"tomorrow"}'))
    assert rain.messages[3].parts[0] == ThinkingPart("4.2 mm is light rain.") and rain.messages[3].parts[1].type == "text"
    assert [(m.tool_call_id, m.tool_name) for m in parallel.messages if m.role == "tool"] == [
        ("conv1:1:call0", "get_forecast"), ("conv1:1:call1", "get_forecast"), ("conv1:4:call0", "convert_temp")]
    assert parallel.messages[2].text == '{"high_c": 5}' and parallel.messages[-1].text.startswith("北京 5°C")
    assert any("3 tool message(s) without tool_call_id paired by position" in n for n in parallel.notes)
    assert any("loss_weight on 2 message(s) ignored" in n for n in plain.notes)
    assert all(find_orphans(c.messages) == [] for c in (rain, parallel, plain))


def test_llamafactory_v1_dpo_and_json_list():
    dpo = formats.load(FIX / "llamafactory_v1_dpo.jsonl")
    assert [c.id for c in dpo.conversations] == ["conv0:chosen", "conv0:rejected", "conv1:chosen", "conv1:rejected"]
    assert [c.messages[-1].text for c in dpo.conversations] == ["4", "5", "Lima.", "Cusco."]
    path = FIX / "llamafactory_v1_list.json"
    assert formats.detect(path) == "openai-chat"  # not a Responses item list, though it has "reasoning" parts
    assert not openai_responses.sniff(path, formats._head(path))
    listed = formats.load(path)
    assert [c.id for c in listed.conversations] == ["conv0", "conv1"]
    assert [len(c.messages) for c in listed.conversations] == [4, 7]


def test_llamafactory_v1_bad_tool_call_strict_and_lenient():
    path = FIX / "llamafactory_v1_bad.jsonl"
    with pytest.raises(TranscriptError) as err:
        formats.load(path)
    assert (err.value.line, err.value.field) == (2, "messages[1].content[0].value")
    assert 'a tool_call value must be JSON {"name", "arguments"}' in str(err.value)
    t = formats.load(path, strict=False)
    assert t.notes[0].startswith("skipped line 2: field 'messages[1].content[0].value'")
    assert [len(c.messages) for c in t.conversations] == [2, 1, 2]  # the damaged message alone is left out


# ---------------------------------------------------------------- a single Responses response object

def test_a_response_object_replays_recorded_with_its_usage_priced(capsys):
    path = FIX / "openai_response.json"
    conv = formats.load(path).conversation()
    stand_in, answer = conv.messages
    assert (stand_in.role, stand_in.origin) == ("user", "synthetic") and "not in the file" in stand_in.text
    assert answer.usage.total_input_tokens == 1500
    assert any("one synthetic user message stands in" in n for n in conv.notes)
    code, out, err = run(capsys, "replay", str(path), "--recorded", "--json")
    assert code == 0, err
    doc = json.loads(out)
    (row,) = doc["rows"]
    assert (row["total_input_tokens"], row["cache_read_tokens"], row["output_tokens"]) == (1500, 1024, 120)
    assert row["cost_usd"] is not None and row["cost_usd"] > 0
    assert doc["fidelity"]["end_to_end"]["calls"] == 1 and doc["fidelity"]["structural"]["calls"] == 1
    code, out, err = run(capsys, "replay", str(path), "--recorded")
    assert code == 0 and "end to end:" in out and "structural fidelity" in out


# ---------------------------------------------------------------- mini-swe-agent

@pytest.mark.parametrize("name", ["chat_mini_swe_agent_v1.traj.json", "chat_mini_swe_agent_v2.traj.json",
                                  "chat_mini_swe_agent_toolcall.traj.json", "chat_mini_swe_agent_responses.traj.json"])
def test_mini_swe_agent_trajectories_are_detected_and_replay(name, capsys):
    path = FIX / name
    assert formats.detect(path) == "mini-swe-agent"
    assert not openai_responses.sniff(path, formats._head(path))
    t = formats.load(path)
    assert t.format == "mini-swe-agent" and find_orphans(t.conversation().messages) == []
    assert run(capsys, "inspect", str(path), "--json")[0] == 0
    code, _, err = run(capsys, "replay", str(path), "--compare", "--check")
    assert code == 0, err
    assert run(capsys, "replay", str(path), "--recorded")[0] == 0


def test_mini_swe_agent_v2_usage_model_exit_and_info():
    conv = formats.load(FIX / "chat_mini_swe_agent_v2.traj.json").conversation()
    assert conv.model == "anthropic/claude-sonnet-4-5-20250929" and conv.provider == "anthropic"
    a1, a2 = [m for m in conv.messages if m.role == "assistant"]
    assert usage4(a1) == (60, 0, 1400, 31) and usage4(a2) == (30, 1400, 100, 52)  # prompt 1460 / 1530 in all
    assert (a1.model, a1.response_id, a1.stop_reason, a1.timestamp) == (
        "claude-sonnet-4-5-20250929", "chatcmpl-mini-1", "stop", "2025-12-01T09:06:41.250000Z")
    assert a1.usage.raw["prompt_tokens"] == 1460
    last = conv.messages[-1]
    assert (last.role, last.origin) == ("user", "meta")
    assert conv.notes[0] == "trajectory_format 'mini-swe-agent-1.1', mini_version '2.0.0', exit status 'Submitted'"
    assert "instance_cost 0.0125 USD over 2 API calls" in conv.notes[1]
    assert any("exit marker (exit status 'Submitted')" in n for n in conv.notes)


def test_mini_swe_agent_toolcall_v1_and_responses_forms():
    tc = formats.load(FIX / "chat_mini_swe_agent_toolcall.traj.json").conversation()
    call = tc.messages[1]
    assert call.parts == (ToolCallPart("call_ls1", "bash", '{"command": "ls -1"}'),) and call.stop_reason == "tool_use"
    assert usage4(call) == (176, 1024, 0, 18) and tc.messages[2].tool_call_id == "call_ls1"
    assert tc.messages[4].text.startswith("No tool calls found")  # a FormatError message, sent to the model
    v1 = formats.load(FIX / "chat_mini_swe_agent_v1.traj.json").conversation()
    assert v1.model == "gpt-4o-mini" and v1.messages[0].timestamp == "2025-06-27T04:53:20.100000Z"
    assert usage4(v1.messages[1]) == (300, 0, 0, 14)
    rs = formats.load(FIX / "chat_mini_swe_agent_responses.traj.json").conversation()
    kinds = [(m.role, m.origin) for m in rs.messages]
    assert kinds == [("user", None), ("assistant", None), ("tool", None), ("assistant", None), ("tool", None),
                     ("user", "meta")]
    first, second = rs.messages[1], rs.messages[3]
    assert [p.type for p in first.parts] == ["thinking", "tool_call"] and first.response_id == "resp_mini_1"
    assert usage4(first) == (1300, 0, 0, 60) and usage4(second) == (140, 1280, 0, 25)
    assert (first.stop_reason, rs.messages[2].tool_call_id) == ("tool_use", "call_find")


def test_mini_swe_agent_damaged_usage_strict_and_lenient(tmp_path):
    data = json.loads((FIX / "chat_mini_swe_agent_v2.traj.json").read_text(encoding="utf-8"))
    data["messages"][2]["extra"]["response"]["usage"]["prompt_tokens"] = -5
    path = tmp_path / "damaged.traj.json"
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    before = path.read_bytes()
    with pytest.raises(TranscriptError) as err:
        formats.load(path)
    assert err.value.field == "messages[2].extra.response.usage.prompt_tokens" and err.value.line is not None
    t = formats.load(path, strict=False)
    assert t.notes[0].startswith(f"skipped line {err.value.line}: field 'messages[2].extra.response.usage")
    assert len([m for m in t.conversation().messages if m.role == "assistant"]) == 1
    assert path.read_bytes() == before


def test_mini_swe_agent_with_anthropic_thinking_is_not_taken_for_anthropic_messages(tmp_path):
    data = json.loads((FIX / "chat_mini_swe_agent_v2.traj.json").read_text(encoding="utf-8"))
    data["messages"][2].update(reasoning_content="Read it first.", thinking_blocks=[
        {"type": "thinking", "thinking": "Read it first.", "signature": "c2ln"}])
    path = tmp_path / "thinking.traj.json"
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    assert formats.detect(path) == "mini-swe-agent"  # registered before anthropic-messages
    first = formats.load(path).conversation().messages[1]
    assert first.parts[0] == ThinkingPart("Read it first.", "c2ln") and first.parts[1].type == "text"


def test_mini_swe_agent_sniff_is_specific():
    for path in sorted(FIX.iterdir()):
        if not path.name.startswith("chat_mini"):
            assert not MINI_SWE_AGENT.sniff(path, formats._head(path)), path.name


@pytest.mark.shared
def test_shared_mini_swe_agent_old_list_stays_openai_chat(capsys):
    if not MINI.is_file():
        pytest.skip(f"shared mini-swe-agent transcript not found at {MINI}")
    raw = json.loads(MINI.read_text(encoding="utf-8"))  # independent count: plain json
    roles = [m["role"] for m in raw]
    leading_system = next(i for i, r in enumerate(roles) if r != "system")
    assert formats.detect(MINI) == "openai-chat"
    conv = formats.load(MINI).conversation()
    assert len(conv.messages) == len(raw) - leading_system
    assert [m.role for m in conv.messages] == roles[leading_system:]
    assert sum(len(m.tool_calls) for m in conv.messages) == sum(len(m.get("tool_calls") or []) for m in raw) == 0
    assert sum(m.role == "tool" for m in conv.messages) == roles.count("tool")
    assert sum(m.usage is not None for m in conv.messages) == 0  # the old list records no usage
    assert conv.system == tuple(m["content"] for m in raw[:leading_system])
    assert run(capsys, "inspect", str(MINI), "--json")[0] == 0
    code, _, err = run(capsys, "replay", str(MINI), "--compare", "--check")
    assert code == 0, err


def test_mid_conversation_text_part_kept():
    conv = formats.load(FIX / "chat_messages.jsonl").conversation()
    assert conv.messages[4].parts == (TextPart("And Lima?"),)
