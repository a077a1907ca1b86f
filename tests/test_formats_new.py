"""The Anthropic Messages, OpenAI Responses, {"messages"} JSON Lines and Codex rollout readers.

Fixtures are hand-written from each format's public documentation (the module docstrings cite it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import kinds
from conftest import shared_transcript_files, skip_unless_a_reader_recognises
from ctxlab.io import formats
from ctxlab.cli.main import main
from ctxlab.base.errors import TranscriptError
from ctxlab.io.formats import anthropic_messages, codex, messages_jsonl, openai_responses, responses_items
from ctxlab.interactions import find_orphans
from ctxlab.messages import Entry, ImagePart, Message, TextPart, ThinkingPart, ToolCallPart, ToolSpec, Usage
from ctxlab.io.session import Session
from ctxlab.views import compacted_view

FIX = Path(__file__).resolve().parent / "fixtures" / "formats"
NEW = {"anthropic_messages.json": "anthropic-messages", "anthropic_list.json": "anthropic-messages",
       "openai_responses.json": "openai-responses", "openai_response.json": "openai-responses",
       "messages.jsonl": "messages-jsonl", "codex_rollout.jsonl": "codex", "codex_rollout_046.jsonl": "codex"}
BAD = {"anthropic_messages_bad.json": "anthropic-messages", "openai_responses_bad.json": "openai-responses",
       "messages_bad.jsonl": "messages-jsonl", "codex_bad.jsonl": "codex"}
# what each file was detected as before these readers existed: it must not change
OLD = {"pi_v1.jsonl": "pi", "pi_v3.jsonl": "pi", "pi_bad.jsonl": "pi", "claude_code.jsonl": "claude-code",
       "claude_code_bad.jsonl": "claude-code", "openai_chat.json": "openai-chat", "openai_chat_bad.json": "openai-chat",
       "openai_messages.json": "openai-chat", "tau_bench.json": "tau-bench", "swe_agent_fc.traj": "swe-agent",
       "swe_agent_react.traj": "swe-agent", "sharegpt.json": "sharegpt", "sharegpt_bad.json": "sharegpt",
       "sharegpt_toolcall.json": "sharegpt", "openhands.jsonl": "openhands", "openhands_bad.jsonl": "openhands"}
# the format each shared transcript is read as: {folder or folder/file: format}
SHARED_FORMAT = {"claude-code-viewer": "claude-code", "llama-factory-toolcall": "sharegpt", "openhands": "openhands",
                 "pi-mono": "pi", "swe-agent": "swe-agent", "tau-bench": "tau-bench",
                 # the folders added with issue 11 (tracker #14)
                 "aider": "aider", "claude-code-2x": "claude-code", "claude-trace": "proxy-log", "codex-cli": "codex",
                 "copilot-cli": "copilot-cli", "gemini-cli": "gemini-cli", "mini-swe-agent": "openai-chat",
                 "openhands-events": "openhands-events", "openhands-sdk/goal_events.jsonl": "openhands-events",
                 "openhands-sdk": "proxy-log", "pi-v3": "pi"}
NEW_READERS = (codex, messages_jsonl, anthropic_messages, openai_responses)


def usage_tuple(m):
    u = m.usage
    return (u.uncached_input_tokens, u.cache_read_tokens, u.cache_write_tokens, u.output_tokens)


# ---------------------------------------------------------------- detection

def test_new_readers_are_registered_before_openai_chat():
    names = formats.names()
    assert not set(formats.UNAVAILABLE) & {"codex", "messages_jsonl", "anthropic_messages", "openai_responses"}
    for name in ("codex", "messages-jsonl", "anthropic-messages", "openai-responses"):
        assert names.index(name) < names.index("openai-chat")
    assert names.index("messages-jsonl") < names.index("anthropic-messages")  # a JSONL line is an object too


@pytest.mark.parametrize("name", sorted({**NEW, **BAD}))
def test_new_fixture_detected_as_its_format(name):
    assert formats.detect(FIX / name) == {**NEW, **BAD}[name]


@pytest.mark.parametrize("name", sorted(OLD))
def test_known_fixture_detection_unchanged_and_no_new_reader_claims_it(name):
    path = FIX / name
    assert formats.detect(path) == OLD[name]
    head = formats._head(path)
    assert [r.NAME for r in NEW_READERS if r.sniff(path, head)] == []


OLD_FOLDERS = {"claude-code-viewer", "llama-factory-toolcall", "openhands", "pi-mono", "swe-agent", "tau-bench"}


def expected_format(path: Path) -> str:
    return SHARED_FORMAT.get(f"{path.parent.name}/{path.name}") or SHARED_FORMAT[path.parent.name]


@pytest.mark.shared
@pytest.mark.parametrize("path", shared_transcript_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_shared_transcripts_detected_as_their_format(path):
    assert skip_unless_a_reader_recognises(path) == expected_format(path), path.name
    if path.parent.name in OLD_FOLDERS:  # the readers added beside these never claim what was read before
        assert not any(r.sniff(path, formats._head(path)) for r in NEW_READERS), path.name


def test_single_object_files_stay_with_the_json_readers(tmp_path):
    chat = tmp_path / "one_line_chat.json"
    chat.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}), encoding="utf-8")
    body = tmp_path / "one_line_body.json"
    body.write_text(json.dumps({"system": "Be terse.", "messages": [{"role": "user", "content": "hi"}]}), encoding="utf-8")
    assert formats.detect(chat) == "openai-chat"  # one line, no second object: not JSON Lines
    assert formats.detect(body) == "anthropic-messages"
    assert formats.load(body).conversation().system == ("Be terse.",)


# ---------------------------------------------------------------- Anthropic Messages

@pytest.fixture(scope="module")
def anth():
    return formats.load(FIX / "anthropic_messages.json").conversation()


def test_anthropic_request_body_head(anth):
    assert anth.system == ("You are a careful assistant for a small weather service.", "Answer in one sentence.")
    assert anth.tools == (ToolSpec("get_weather", "Current weather for a city",
                                   {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),)
    assert anth.model == "claude-sonnet-4-5" and anth.provider == "anthropic"
    assert len(anth.notes) == 1 and "'web_search'" in anth.notes[0] and "server tool" in anth.notes[0]


def test_anthropic_messages_split_and_paired(anth):
    assert kinds(anth) == [("user", None), ("assistant", None), ("tool", None), ("tool", None), ("user", None),
                           ("assistant", None), ("tool", None), ("assistant", None), ("user", None), ("assistant", None)]
    m = anth.messages
    assert [x.id for x in m[2:5]] == ["anthropic_messages:2", "anthropic_messages:2:1", "anthropic_messages:2:2"]
    assert m[1].parts == (ThinkingPart("Two cities: two calls.", "c2lnLTE="), TextPart("Checking both cities."),
                          ToolCallPart("toolu_lyon", "get_weather", '{"city":"Lyon"}'),
                          ToolCallPart("toolu_porto", "get_weather", '{"city":"Porto"}'))
    assert [(x.tool_call_id, x.tool_name, x.is_error, x.text) for x in m[2:4]] == [
        ("toolu_lyon", "get_weather", False, "Lyon: light rain, 11 °C"),
        ("toolu_porto", "get_weather", True, "Porto: station offline")]
    assert m[4].text == "Try Porto again, please." and m[4].source.line == m[2].source.line == 21
    assert find_orphans(m) == []
    assert m[8].parts == (ImagePart("image/png", data_chars=12), TextPart("And this sky?"))


def test_anthropic_saved_response_keeps_id_model_stop_and_usage(anth):
    a = anth.messages[5]
    assert (a.response_id, a.model, a.stop_reason) == ("msg_01ab", "claude-sonnet-4-5-20250929", "tool_use")
    assert a.parts[0] == ThinkingPart("", "ZW5jcnlwdGVk", redacted=True)
    assert usage_tuple(a) == (12, 1200, 300, 40) and a.usage.total_input_tokens == 1512
    others = [x for x in anth.messages if x.role == "assistant" and x is not a]
    assert all(x.usage is None and x.model == "claude-sonnet-4-5" for x in others)


def test_anthropic_plain_list():
    conv = formats.load(FIX / "anthropic_list.json").conversation()
    assert conv.system == () and conv.tools == () and conv.model is None
    assert kinds(conv) == [("user", None), ("assistant", None), ("tool", None), ("assistant", None)]
    assert conv.messages[0].parts[1].text.startswith('{"type": "document"')
    assert conv.notes == ("line 2: content block of type 'document' kept as its JSON text",)
    assert conv.messages[2].tool_name == "calendar_lookup" and find_orphans(conv.messages) == []


def test_anthropic_bad_message_strict_and_lenient():
    with pytest.raises(TranscriptError) as err:
        formats.load(FIX / "anthropic_messages_bad.json")
    assert str(err.value) == ("anthropic_messages_bad.json:3: field '[1].content[0].id': field required. "
                              "Fix the line or load with strict=False to skip it.")
    t = formats.load(FIX / "anthropic_messages_bad.json", strict=False)
    assert t.notes == ("skipped line 3: field '[1].content[0].id': field required.",
                       "skipped line 5: field '[3].role': input should be 'user' or 'assistant', got 'system'.")
    assert [m.text for m in t.conversation().messages] == ["List the files.", "Never mind.", "OK."]


# ---------------------------------------------------------------- OpenAI Responses

@pytest.fixture(scope="module")
def resp():
    return formats.load(FIX / "openai_responses.json").conversation()


def test_responses_request_body_head(resp):
    assert resp.system == ("You are a travel helper. Use tools for live data.", "Prefer direct trains.")
    assert [t.name for t in resp.tools] == ["get_train_times"] and resp.tools[0].parameters["required"] == ["from", "to"]
    assert resp.model == "gpt-4.1" and resp.provider == "openai"


def test_responses_items_become_messages(resp):
    assert kinds(resp) == [("user", None), ("assistant", None), ("tool", None), ("assistant", None), ("user", None),
                           ("assistant", None), ("user", "system")]
    m = resp.messages
    assert m[1].parts == (ThinkingPart("Need today's timetable.", "gAAA-opaque-1"),
                          ToolCallPart("call_trains", "get_train_times", '{"from":"Gent-Sint-Pieters","to":"Brugge"}'))
    assert (m[2].tool_call_id, m[2].tool_name, m[2].text) == ("call_trains", "get_train_times", '["10:04", "10:34"]')
    assert m[3].text == "The next train leaves at 10:04."
    assert m[4].parts == (TextPart("Is this the right platform?"), ImagePart("image/jpeg", data_chars=8))
    # reasoning, a hosted web search and the answer: one response, one assistant message
    assert m[5].parts[0] == ThinkingPart("", "gAAA-opaque-2", redacted=True)
    assert json.loads(m[5].parts[1].text)["type"] == "web_search_call" and m[5].parts[2] == TextPart("Yes, platform 4.")
    assert [x.id for x in m] == [f"openai_responses:{i}" for i in (1, 2, 4, 5, 6, 7, 10)]
    assert find_orphans(m) == []
    assert resp.notes == ("built-in tool 'web_search' has no definition in the file: left out of the tools",
                          "line 25: hosted 'web_search_call' (run by the provider, no call_id) kept as its JSON text",
                          "line 28: a system message after the conversation started is kept as a user message "
                          "with origin 'system'",
                          "left out 1 'item_reference' item(s): not modelled")


def test_response_object_is_one_assistant_message_with_usage():
    conv = formats.load(FIX / "openai_response.json").conversation()
    stand_in, a = conv.messages  # the object holds its output only: a synthetic user turn stands for the input
    assert (stand_in.role, stand_in.origin) == ("user", "synthetic")
    assert any("stand-in" in n or "synthetic" in n for n in conv.notes), conv.notes
    assert [p.type for p in a.parts] == ["thinking", "text", "tool_call"]
    assert (a.response_id, a.model, a.stop_reason) == ("resp_67ccd2bed1ec8190", "gpt-4.1-2025-04-14", "tool_use")
    assert usage_tuple(a) == (1500 - 1024, 1024, 0, 120) and a.usage.total_input_tokens == 1500
    assert a.usage.raw["output_tokens_details"] == {"reasoning_tokens": 64}
    assert [t.name for t in conv.tools] == ["book"]


def test_responses_usage_shapes_agree_and_bad_counts_are_named():
    api = {"input_tokens": 1000, "input_tokens_details": {"cached_tokens": 800}, "output_tokens": 50}
    cdx = {"input_tokens": 1000, "cached_input_tokens": 800, "output_tokens": 50}
    assert responses_items.usage(api, file="f", line=1) == responses_items.usage(cdx, file="f", line=1) \
        == Usage(uncached_input_tokens=200, cache_read_tokens=800, output_tokens=50)
    with pytest.raises(TranscriptError, match="900 cached tokens exceed the 100 input tokens"):
        responses_items.usage({"input_tokens": 100, "cached_input_tokens": 900}, file="f", line=7)


def test_responses_bad_item_strict_and_lenient():
    with pytest.raises(TranscriptError) as err:
        formats.load(FIX / "openai_responses_bad.json")
    assert (err.value.file, err.value.line, err.value.field) == ("openai_responses_bad.json", 3, "[1].call_id")
    assert str(err.value).startswith("openai_responses_bad.json:3: field '[1].call_id': field required.")
    t = formats.load(FIX / "openai_responses_bad.json", strict=False)
    assert t.notes == ("skipped line 3: field '[1].call_id': field required.",)
    assert [(m.role, m.text) for m in t.conversation().messages] == [("user", "Convert 3 miles to km."),
                                                                     ("assistant", "About 4.8 km.")]


# ---------------------------------------------------------------- {"messages"} JSON Lines

def test_messages_jsonl_one_conversation_per_line():
    t = formats.load(FIX / "messages.jsonl")
    assert [c.id for c in t.conversations] == ["conv0", "greeting-fr", "conv2", "conv3"]
    chat, fr, dice, plain = t.conversations
    assert chat.provider is None and chat.system == ("You convert units.",) and [x.name for x in chat.tools] == ["convert"]
    assert fr.provider == dice.provider == "anthropic"  # a top-level system / a tool_use block
    assert fr.system == ("Réponds en français.",) and fr.model == "claude-haiku-4-5"
    assert [m.source.line for c in t.conversations for m in c.messages[:1]] == [1, 2, 4, 5]  # line 3 is blank
    for conv in (chat, dice):
        assert find_orphans(conv.messages) == [] and sum(len(m.tool_calls) for m in conv.messages) == 1
    assert dice.messages[2].tool_name == "roll" and plain.messages[1].text == "Lima."
    with pytest.raises(ValueError, match="holds 4 conversations"):
        t.conversation()


def test_messages_jsonl_bad_lines_strict_and_lenient():
    with pytest.raises(TranscriptError) as err:
        formats.load(FIX / "messages_bad.jsonl")
    assert str(err.value).startswith("messages_bad.jsonl:2: field 'messages': each line needs a 'messages' list")
    t = formats.load(FIX / "messages_bad.jsonl", strict=False)
    assert [n.split(":")[0] for n in t.notes] == ["skipped line 2", "skipped line 3", "skipped line 4"]
    assert "field 'messages[1].role'" in t.notes[1] and "not valid JSON" in t.notes[2]
    assert [c.id for c in t.conversations] == ["conv0", "conv2"]
    assert [m.text for m in t.conversations[1].messages] == ["hi"]


# ---------------------------------------------------------------- Codex rollouts

@pytest.fixture(scope="module")
def cdx():
    return formats.load(FIX / "codex_rollout.jsonl").conversation()


def test_codex_session_head_and_items(cdx):
    assert cdx.id == "0199a1b2-0000-7000-8000-00000000c0de" and cdx.provider == "openai"
    assert cdx.system == ("You are Codex, a coding agent. Keep changes small.",) and cdx.tools == ()
    assert cdx.model == "gpt-5-codex"
    assert kinds(cdx) == [("user", "system"), ("user", None), ("assistant", None), ("tool", None), ("assistant", None),
                          ("tool", None), ("assistant", None), ("entry", "model_change"), ("user", None),
                          ("entry", "compaction"), ("assistant", None)]
    m = cdx.messages
    assert m[2].parts[0] == ThinkingPart("**Reading the test first**", "gAAAAB-opaque")
    assert m[2].parts[1] == ToolCallPart("call_read", "shell", '{"command":["bash","-lc","cat test_greet.py"]}')
    assert m[4].parts[0].name == "apply_patch" and m[4].parts[0].arguments.startswith("*** Begin Patch\n")
    assert [(x.tool_call_id, x.tool_name) for x in (m[3], m[5])] == [("call_read", "shell"), ("call_patch", "apply_patch")]
    assert [x.source.line for x in m] == [3, 4, 7, 10, 11, 14, 15, 19, 22]
    assert find_orphans(m) == []


def test_codex_token_counts_become_usage(cdx):
    assistants = [x for x in cdx.messages if x.role == "assistant"]
    assert [usage_tuple(a) for a in assistants] == [(5200 - 3072, 3072, 0, 180), (5600 - 5120, 5120, 0, 95),
                                                    (5800 - 5632, 5632, 0, 30), (900, 0, 0, 40)]
    assert assistants[0].usage.raw["reasoning_output_tokens"] == 128
    assert [a.model for a in assistants] == ["gpt-5-codex"] * 3 + ["gpt-5"]
    # Codex writes some token_count events twice: byte for byte here (read once, said), or with a later
    # timestamp and the same totals (the reader's own "repeated (same totals)" rule)
    assert "line 13 repeats line 12 byte for byte: read once" in cdx.notes
    assert "left out 1 'event_msg/token_count without usage' line(s): not part of the model's context" in cdx.notes


def test_codex_model_change_and_compaction_entries(cdx):
    change, comp = cdx.entries
    assert change.data == {"provider": "openai", "model": "gpt-5"} and change.source.line == 18
    assert comp.data["summary"].startswith("The user asked to make the greeting test pass")
    assert (comp.data["first_kept_id"], comp.data["tokens_before"], comp.data["origin"]) == (None, 5800 + 30, "recorded")
    pinned = [next(m for m in cdx.messages if m.id == i) for i in comp.data["pinned_ids"]]
    assert [p.text.split("\n")[0] for p in pinned] == ["<environment_context>", "Make the greeting test pass.",
                                                       "Also add a test for an empty name."]
    view, entry, _ = compacted_view(cdx)
    assert entry is comp
    assert [x.origin for x in view.messages] == ["compact_summary", "system", None, None, None]
    assert view.messages[-1].text == "Added test_greet_empty."


def test_codex_token_count_before_its_items():
    conv = formats.load(FIX / "codex_rollout_046.jsonl").conversation()
    assert kinds(conv) == [("user", "system"), ("user", None), ("assistant", None), ("tool", None), ("tool", None),
                           ("assistant", None)]
    call, out_ls, out_wc, answer = conv.messages[2:]
    # the function calls and their outputs were written in pairs; they came from one model call
    assert [p.type for p in call.parts] == ["thinking", "tool_call", "tool_call"]
    assert [p.id for p in call.tool_calls] == [out_ls.tool_call_id, out_wc.tool_call_id] == ["call_ls", "call_wc"]
    assert usage_tuple(call) == (3000, 0, 0, 60) and usage_tuple(answer) == (3200 - 2944, 2944, 0, 25)
    assert conv.notes[0].startswith("token counts precede their call's items")


def test_codex_bad_lines_strict_and_lenient():
    with pytest.raises(TranscriptError) as err:
        formats.load(FIX / "codex_bad.jsonl")
    assert str(err.value) == ("codex_bad.jsonl:3: field 'payload.name': field required. "
                              "Fix the line or load with strict=False to skip it.")
    t = formats.load(FIX / "codex_bad.jsonl", strict=False)
    assert [n.split(":")[0] for n in t.notes] == ["skipped line 3", "skipped line 4", "skipped line 5"]
    assert "field 'payload.info.last_token_usage.input_tokens': a token count is a JSON number, not a string" in t.notes[1]
    assert "field 'payload': input should be a valid dictionary" in t.notes[2]
    assert [(m.role, m.text) for m in t.conversation().messages] == [("user", "Run the tests."), ("assistant", "All green.")]


# ---------------------------------------------------------------- CLI and round trip

@pytest.mark.parametrize("name", sorted(NEW))
def test_cli_inspect_reads_every_new_fixture(name, capsys):
    assert main(["inspect", str(FIX / name), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    transcript = formats.load(FIX / name)
    assert rep["format"] == NEW[name] and rep["file"] == name
    assert rep["messages"] == sum(len(c.messages) for c in transcript.conversations)
    assert main(["inspect", str(FIX / name)]) == 0
    assert f"format         {NEW[name]}" in capsys.readouterr().out


def test_cli_inspect_picks_one_conversation_of_a_jsonl(capsys):
    assert main(["inspect", str(FIX / "messages.jsonl"), "--conversation", "1", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["selected"] == 1 and rep["conversation"]["messages"] == 2


@pytest.mark.parametrize("name", sorted(BAD))
def test_cli_inspect_bad_fixture_one_line_and_lenient(name, capsys):
    assert main(["inspect", str(FIX / name)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ctxlab inspect: error: {name}:") and err.count("\n") == 1
    assert main(["inspect", str(FIX / name), "--lenient"]) == 0
    assert "skipped line" in capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(NEW))
def test_round_trip_through_a_ctxlab_session(name, tmp_path):
    transcript = formats.load(FIX / name)
    for index, conv in enumerate(transcript.conversations):
        path = tmp_path / f"{index}.jsonl"
        Session.import_transcript(transcript, path, conversation=index)
        back = formats.load(path)
        assert back.format == "ctxlab-session"
        got = back.conversation()
        assert got.items == conv.items and got.messages  # same messages, parts, usage, entries, sources
        assert (got.system, got.tools, got.model, got.provider) == (conv.system, conv.tools, conv.model, conv.provider)
        assert all(isinstance(i, (Message, Entry)) for i in got.items)
