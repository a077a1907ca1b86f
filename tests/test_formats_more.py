"""The sharegpt (LLaMA-Factory) and OpenHands readers: hand-written fixtures, then the shared files."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from helpers import kinds
from ctxlab.io import formats
from ctxlab.base.errors import TranscriptError
from ctxlab.io.formats import openhands, sharegpt
from ctxlab.interactions import find_orphans
from ctxlab.messages import Entry, TextPart, ToolCallPart, ToolSpec

FIX = Path(__file__).resolve().parent / "fixtures" / "formats"
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def orphan_tags(messages):
    return [(o.kind, o.call_id, o.message_id) for o in find_orphans(messages)]


# ---------------------------------------------------------------- sharegpt

@pytest.fixture(scope="module")
def sg():
    return formats.load(FIX / "sharegpt_toolcall.json")


def test_sharegpt_detected_one_conversation_per_element(sg):
    assert formats.detect(FIX / "sharegpt_toolcall.json") == "sharegpt"
    assert sg.format == "sharegpt" and [c.id for c in sg.conversations] == ["conv0", "conv1"]
    assert sg.notes == ()


def test_sharegpt_system_and_tools(sg):
    conv = sg.conversations[0]
    assert conv.system == ("你是一个乐于助人的助手。",)
    assert conv.tools == (
        ToolSpec("查询天气", "查询城市的天气", {"type": "object", "properties": {"城市": {"type": "string"}},
                                           "required": ["城市"]}),
        ToolSpec("convert_units", "Convert a value"),  # OpenAI-shaped entry unwrapped; no parameters → empty object
    )
    assert conv.model is None and conv.provider is None


def test_sharegpt_roles_parts_and_ids(sg):
    conv = sg.conversations[0]
    assert kinds(conv) == [("user", None), ("assistant", None), ("assistant", None), ("tool", None), ("tool", None),
                           ("assistant", None), ("user", None), ("assistant", None), ("tool", None), ("assistant", None)]
    m = conv.messages
    assert [x.id for x in m] == [f"conv0:{i}" for i in range(10)]
    assert [x.source.line for x in m] == list(range(6, 16)) and m[0].source.file == "sharegpt_toolcall.json"
    # a gpt text turn then a function_call turn: two assistant messages, as recorded
    assert m[1].parts == (TextPart("我来查一下。"),)
    assert m[2].parts == (ToolCallPart("conv0:call0", "查询天气", '{"城市":"北京"}'),
                          ToolCallPart("conv0:call1", "查询天气", '{"城市":"上海"}'))
    # each observation answers the oldest call not answered yet
    assert [(x.tool_call_id, x.tool_name, x.text) for x in (m[3], m[4])] == [
        ("conv0:call0", "查询天气", '{"天气": "晴", "温度": 25}'),
        ("conv0:call1", "查询天气", '{"天气": "小雨", "温度": 21}')]
    # arguments the data set stored as a string stay verbatim
    assert m[7].parts == (ToolCallPart("conv0:call2", "convert_units", '{"value": 25, "to": "F"}'),)
    assert (m[8].tool_call_id, m[8].tool_name) == ("conv0:call2", "convert_units")
    assert m[0].text == "北京和上海今天天气怎么样？" and m[9].text == "25°C = 77°F。"
    assert all(x.usage is None and x.stop_reason is None and x.timestamp is None for x in m)
    assert find_orphans(m) == [] and conv.notes == ()


def test_sharegpt_leading_system_turn_orphans_and_late_system(sg):
    conv = sg.conversations[1]
    assert conv.system == ("Answer in English.",) and conv.tools == ()  # the leading turn beats the field
    assert kinds(conv) == [("user", None), ("assistant", None), ("user", "system"), ("assistant", None),
                           ("user", "system"), ("user", None), ("assistant", None)]
    stray = conv.messages[2]  # an observation no call asked for: a tool result without its call is not sendable
    assert (stray.id, stray.role, stray.tool_call_id, stray.text) == ("conv1:3", "user", None, '{"sum": 4}')
    assert conv.messages[4].text == "Be brief from now on."
    assert conv.messages[6].parts == (ToolCallPart("conv1:call0", "add", '{"a":3,"b":3}'),)
    assert orphan_tags(conv.messages) == [("call_without_result", "conv1:call0", "conv1:7")]
    assert len(conv.notes) == 3 and "turn 3: an observation with no function_call" in conv.notes[0]
    assert "origin 'system'" in conv.notes[1] and conv.notes[2].endswith("conv1:call0")


def test_sharegpt_minimal_fixture_with_empty_tools():
    conv = formats.load(FIX / "sharegpt.json").conversation()
    assert conv.tools == () and conv.system == () and kinds(conv) == [("user", None), ("assistant", None)]


def test_sharegpt_bad_tools_strict_names_conversation_and_field():
    with pytest.raises(TranscriptError) as err:
        formats.load(FIX / "sharegpt_bad.json")
    e = err.value
    assert (e.file, e.line, e.field) == ("sharegpt_bad.json", 3, "[1].tools")
    assert str(e).startswith("sharegpt_bad.json:3: field '[1].tools': conversation conv1: tools is not valid JSON")
    assert "strict=False" in str(e) and e.__suppress_context__


def test_sharegpt_bad_lenient_keeps_what_it_can():
    transcript = formats.load(FIX / "sharegpt_bad.json", strict=False)
    assert [c.id for c in transcript.conversations] == ["conv0", "conv1", "conv2"]
    assert [n.split(":")[0] for n in transcript.notes] == ["skipped line 3", "skipped line 10"]
    assert "'[2].conversations[1].from': unknown role tag 'robot'" in transcript.notes[1]
    conv1, conv2 = transcript.conversations[1:]
    assert conv1.tools == () and [m.text for m in conv1.messages] == ["weather?", "sunny"]
    assert conv1.notes == (transcript.notes[0],)
    assert [m.text for m in conv2.messages] == ["who are you?", "an assistant"]


def test_sharegpt_tool_specs_helper():
    assert sharegpt.tool_specs("", file="f", line=1, at="tools") == ()
    assert sharegpt.tool_specs([{"name": "f"}], file="f", line=1, at="tools") == (ToolSpec("f"),)
    with pytest.raises(TranscriptError, match="must be a JSON list"):
        sharegpt.tool_specs('{"name": "f"}', file="f", line=1, at="tools")
    with pytest.raises(TranscriptError) as err:
        sharegpt.tool_specs('[{"description": "no name"}]', file="f", line=4, at="[0].tools")
    assert err.value.field == "[0].tools[0].name"


def test_sharegpt_function_call_must_be_json(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('[{"conversations": [{"from": "human", "value": "hi"},\n'
                    ' {"from": "function_call", "value": "not json"}]}]', encoding="utf-8")
    with pytest.raises(TranscriptError) as err:
        formats.load(path)
    assert (err.value.line, err.value.field) == (2, "[0].conversations[1].value")
    assert [m.text for m in formats.load(path, strict=False).conversation().messages] == ["hi"]


# ---------------------------------------------------------------- OpenHands

@pytest.fixture(scope="module")
def oh():
    return formats.load(FIX / "openhands.jsonl")


def test_openhands_detected_one_conversation_per_line(oh):
    assert formats.detect(FIX / "openhands.jsonl") == "openhands"
    assert oh.format == "openhands" and [c.id for c in oh.conversations] == ["demo__app-1", "demo__app-2"]
    assert oh.notes == ()


def test_openhands_system_tools_model_and_items(oh):
    conv = oh.conversations[0]
    assert conv.system == ("You are a careful coding agent.",) and conv.model == "anthropic/claude-sonnet-4"
    assert [t.name for t in conv.tools] == ["execute_bash", "str_replace_editor", "think", "finish"]
    assert conv.tools[0].parameters["required"] == ["command"]
    assert kinds(conv) == [("user", None), ("user", "system"), ("assistant", None), ("tool", None),
                           ("assistant", None), ("tool", None), ("tool", None), ("user", "system"),
                           ("entry", "compaction"), ("assistant", None), ("tool", None), ("assistant", None),
                           ("assistant", None)]
    assert all(i.source.file == "openhands.jsonl" and i.source.line == 1 for i in conv.items)
    assert any("action recall" in n for n in conv.notes) and any("agent_state_changed" in n for n in conv.notes)


def test_openhands_one_assistant_message_per_model_response(oh):
    m = oh.conversations[0].messages
    first, grouped = m[2], m[4]
    assert (first.id, first.response_id, first.stop_reason) == ("demo__app-1:4", "resp-1", "tool_use")
    assert first.parts == (TextPart("Let me look around."), ToolCallPart("call_ls", "execute_bash", '{"command": "ls /repo"}'))
    assert first.timestamp == "2025-05-01T10:00:05" and first.model == "anthropic/claude-sonnet-4"
    # two actions from one response (events 6 and 8): one message, blank text left out, arguments verbatim
    assert (grouped.id, grouped.response_id) == ("demo__app-1:6", "resp-2")
    assert grouped.parts == (ToolCallPart("call_r", "str_replace_editor", '{"command": "view", "path": "/repo/app.py"}'),
                             ToolCallPart("call_b", "execute_bash", '{"command":"pytest -q"}'))
    assert [(t.id, t.tool_call_id, t.tool_name, t.text) for t in m[5:7]] == [
        ("demo__app-1:7", "call_r", "str_replace_editor", "def add(a, b):\n    return a - b"),
        ("demo__app-1:9", "call_b", "execute_bash", "1 failed")]
    think = m[8]
    assert think.parts == (TextPart("The bug is in add()."), ToolCallPart("call_t", "think", '{"thought": "use +"}'))
    assert find_orphans(m) == []


def test_openhands_finish_message_error_and_recall(oh):
    m = oh.conversations[0].messages
    error, said, finish = m[7], m[10], m[11]
    assert error.text == "Parameter 'command' is expected to be one of ['view', 'create'].\n" \
                         "[Error occurred in processing last action]" and error.origin == "system"
    assert said.text == "I fixed add(); the test passes now." and said.response_id is None and said.usage is None
    # finish: its thought plus the response text; the finish tool call is not kept (OpenHands drops it)
    assert finish.parts == (TextPart("Wrapping up.\nAll done."),) and finish.tool_calls == ()
    assert (finish.response_id, finish.stop_reason) == ("resp-4", "stop")
    recall = m[1]
    assert recall.id == "demo__app-1:3" and recall.text.startswith(
        "<REPOSITORY_INFO>\nAt the user's request, repository demo/app has been cloned")
    assert "Today's date is 2025-05-01 (UTC)." in recall.text
    assert 'keyword match for "test"' in recall.text and recall.text.endswith("Run tests with pytest -q.\n</EXTRA_INFO>")


def test_openhands_usage_matched_by_response_id(oh):
    conv = oh.conversations[0]
    got = {m.response_id: (m.usage.uncached_input_tokens, m.usage.cache_read_tokens, m.usage.cache_write_tokens,
                           m.usage.output_tokens, m.usage.total_input_tokens)
           for m in conv.messages if m.usage is not None}
    assert got == {"resp-1": (200, 0, 1800, 40, 2000), "resp-2": (100, 1800, 400, 60, 2300),
                   "resp-3": (400, 1700, 100, 30, 2200), "resp-4": (1000, 1500, 0, 30, 2500)}
    assert conv.messages[4].usage.raw["response_id"] == "resp-2"
    assert "1 of 5 token_usages entries match no assistant message" in conv.notes  # the condenser's own call
    assert openhands.usage({"prompt_tokens": 1000, "cache_read_tokens": 800, "completion_tokens": 5}) \
        .uncached_input_tokens == 200
    assert openhands.usage({"prompt_tokens": 10, "cache_read_tokens": 8, "cache_write_tokens": 5}).uncached_input_tokens == 0


def test_openhands_condensation_is_a_recorded_compaction(oh):
    (entry,) = oh.conversations[0].entries
    assert isinstance(entry, Entry) and entry.id == "demo__app-1:11"
    assert entry.data == {"summary": "Listed /repo: app.py and test_app.py.", "first_kept_id": "demo__app-1:6",
                          "tokens_before": None, "origin": "recorded"}


def test_openhands_recall_is_meta_when_prompt_extensions_are_off_and_user_commands(oh):
    conv = oh.conversations[1]
    assert conv.model == "gpt-4o" and conv.tools == () and conv.system == ("You are OpenHands.",)
    assert kinds(conv) == [("user", None), ("user", "meta"), ("user", "shell"), ("user", "shell"), ("assistant", None)]
    assert "* http://localhost:50001 (port 50001)" in conv.messages[1].text
    assert any("kept with origin 'meta'" in n for n in conv.notes)
    assert [m.text for m in conv.messages[2:]] == ["User executed the command:\nwhoami",
                                                   "\nObserved result of command executed by user:\nroot", "Hi!"]


def test_openhands_bad_event_strict_and_lenient():
    with pytest.raises(TranscriptError) as err:
        formats.load(FIX / "openhands_bad.jsonl")
    assert (err.value.line, err.value.field) == (2, "history[1].tool_call_metadata.tool_call_id")
    assert str(err.value).startswith("openhands_bad.jsonl:2: field 'history[1].tool_call_metadata.tool_call_id'")
    transcript = formats.load(FIX / "openhands_bad.jsonl", strict=False)
    assert [n.split(":")[0] for n in transcript.notes] == ["skipped line 2", "skipped line 3"]
    assert "not valid JSON" in transcript.notes[1]
    ok, bad = transcript.conversations
    assert [m.text for m in bad.messages] == ["hi", "hello"] and transcript.notes[0] in bad.notes
    assert any("no system action" in n for n in ok.notes)


# ---------------------------------------------------------------- the shared files

def _cjk_in(conv) -> int:
    """CJK characters in everything the reader kept: system, tool specs, texts, tool calls."""
    text = "".join(conv.system)
    text += "".join(t.name + t.description + json.dumps(t.parameters, ensure_ascii=False) for t in conv.tools)
    for m in conv.messages:
        text += m.text + "".join(c.name + c.arguments for c in m.tool_calls)
    return len(CJK.findall(text))


@pytest.mark.shared
def test_shared_sharegpt_counts_orphans_and_chinese(shared_transcripts):
    path = shared_transcripts / "llama-factory-toolcall" / "glaive_toolcall_zh_demo.json"
    raw_text = path.read_text(encoding="utf-8")
    data = json.loads(raw_text)
    transcript = formats.load(path)
    assert transcript.format == "sharegpt" and transcript.notes == ()
    assert len(transcript.conversations) == len(data) == 300
    roles = Counter(m.role for c in transcript.conversations for m in c.messages)
    turns = Counter(t["from"] for d in data for t in d["conversations"])
    strays = 2  # observations with no call to answer (counted below): user messages, origin 'system'
    assert roles == {"user": turns["human"] + strays, "assistant": turns["gpt"] + turns["function_call"],
                     "tool": turns["observation"] - strays}
    calls = sum(len(v) if isinstance(v, list) else 1 for d in data for t in d["conversations"]
                if t["from"] == "function_call" for v in [json.loads(t["value"])])
    assert sum(len(m.tool_calls) for c in transcript.conversations for m in c.messages) == calls == 216
    # orphans, computed from the raw turns: observations with no open call, calls never answered
    expected = []
    for i, d in enumerate(data):
        open_calls = 0
        for k, t in enumerate(d["conversations"]):
            if t["from"] == "function_call":
                open_calls += 1
            elif t["from"] == "observation":
                if open_calls:
                    open_calls -= 1
                else:
                    expected.append(f"conv{i}:{k}")
        assert open_calls == 0
    assert expected == ["conv197:2", "conv293:2"] and len(expected) == strays
    by_id = {m.id: m for c in transcript.conversations for m in c.messages}
    assert all((by_id[i].role, by_id[i].origin) == ("user", "system") for i in expected)
    assert [o for c in transcript.conversations for o in orphan_tags(c.messages)] == []
    # Chinese kept exactly: every text turn round-trips, and no CJK character is lost or added
    for conv, d in zip(transcript.conversations, data):
        texts = [t["value"] for t in d["conversations"] if t["from"] != "function_call"]
        assert [m.text for m in conv.messages if not m.tool_calls] == texts
    assert sum(_cjk_in(c) for c in transcript.conversations) == len(CJK.findall(raw_text)) > 100_000


@pytest.mark.shared
def test_shared_openhands_counts_usage_and_pairing(shared_transcripts):
    path = shared_transcripts / "openhands" / "multi_swe_bench_output.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    transcript = formats.load(path)
    assert transcript.format == "openhands" and transcript.notes == ()
    assert [c.id for c in transcript.conversations] == [r["instance_id"] for r in rows]
    for conv, row in zip(transcript.conversations, rows):
        history = row["history"]
        acts = [e for e in history if "action" in e and e["source"] == "agent"]
        with_call = [e for e in acts if e.get("tool_call_metadata") and e["action"] != "finish"]
        responses = {e["tool_call_metadata"]["model_response"]["id"] for e in with_call}
        finishes = [e for e in acts if e["action"] == "finish"]
        messages = [e for e in acts if e["action"] == "message"]
        observations = [e for e in history if "observation" in e]
        results = [e for e in observations if e.get("tool_call_metadata")]
        recalls = [e for e in observations if e["observation"] == "recall"]
        others = [e for e in observations if not e.get("tool_call_metadata") and e["observation"] != "recall"]
        user_says = [e for e in history if e.get("action") == "message" and e["source"] == "user"]
        by = Counter((m.role, m.origin) for m in conv.messages)
        assert by == Counter({("assistant", None): len(responses) + len(finishes) + len(messages),
                              ("tool", None): len(results), ("user", None): len(user_says),
                              ("user", "meta"): len(recalls), ("user", "system"): len(others)})
        assert sum(len(m.tool_calls) for m in conv.messages) == len(with_call)
        assert conv.system == (history[0]["args"]["content"],) and len(conv.tools) == len(history[0]["args"]["tools"])
        assert conv.model == row["metadata"]["llm_config"]["model"]
        # every token_usages entry lands on the assistant message of its response, converted
        usages = row["metrics"]["token_usages"]
        got = {m.response_id: m.usage for m in conv.messages if m.usage is not None}
        assert len(got) == len(usages)
        for u in usages:
            mine = got[u["response_id"]]
            assert mine.total_input_tokens == u["prompt_tokens"] and mine.output_tokens == u["completion_tokens"]
        # pairing, from the raw events: every call other than finish has its observation
        answered = {e["tool_call_metadata"]["tool_call_id"] for e in results}
        assert {e["tool_call_metadata"]["tool_call_id"] for e in with_call} <= answered
        assert find_orphans(conv.messages) == []
    assert sum(len(c.messages) for c in transcript.conversations) == 216


# -m thorough: the default run holds this twice over, without a process per file: test_reader_contract.py's
# test_inspect_reads_it runs ``inspect --json`` on every shared file (exit 0, the reader's format, its message count),
# and test_cli.py's test_python_dash_m_ctxlab_runs_as_a_subprocess runs ``python -m ctxlab inspect --json``.
@pytest.mark.shared
@pytest.mark.thorough
@pytest.mark.parametrize("name, fmt", [("llama-factory-toolcall/glaive_toolcall_zh_demo.json", "sharegpt"),
                                       ("openhands/multi_swe_bench_output.jsonl", "openhands")])
def test_shared_inspect_cli_exits_0(shared_transcripts, name, fmt):
    done = subprocess.run([sys.executable, "-m", "ctxlab", "inspect", "--json", str(shared_transcripts / name)],
                          capture_output=True, text=True, encoding="utf-8", timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["format"] == fmt and report["messages"] > 0
