"""The ``openhands-events`` reader: OpenHands V0 saved trajectories and V1 (software-agent-sdk) event logs.

Fixtures are hand-written from the writers' source (the module docstrings of
``ctxlab/io/formats/openhands_events.py``, ``openhands_memory.py``, ``openhands_v1*.py`` cite it);
the shared files are counted again here with plain ``json``, independently of the reader.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from helpers import kinds
from conftest import SHARED_TRANSCRIPTS, shared_transcript_files
from ctxlab.io import formats
from ctxlab.cli.main import main
from ctxlab.base.errors import TranscriptError
from ctxlab.io.formats import openhands, openhands_events, openhands_memory, openhands_v1
from ctxlab.io.formats.openhands_v1_usage import token_usage
from ctxlab.interactions import find_orphans
from ctxlab.messages import Entry, ImagePart, TextPart, ThinkingPart, ToolCallPart, Usage
from ctxlab.views import compacted_view

FIX = Path(__file__).resolve().parent / "fixtures" / "formats"
MINE = sorted(FIX.glob("openhands_events_*")) + sorted(FIX.glob("openhands_v1_*"))
GUI, HEADLESS = FIX / "openhands_events_gui.json", FIX / "openhands_events_headless.json"
API = FIX / "openhands_events_api.json"
V1, V1_OLD, V1_TREE = FIX / "openhands_v1_events.jsonl", FIX / "openhands_v1_old.jsonl", FIX / "openhands_v1_tree.jsonl"
TRAJECTORY = SHARED_TRANSCRIPTS / "openhands-events" / "basic_gui_mode.json"
SDK_LOG = SHARED_TRANSCRIPTS / "openhands-sdk" / "goal_events.jsonl"


def nums(u: Usage):
    return (u.uncached_input_tokens, u.cache_read_tokens, u.cache_write_tokens, u.output_tokens)


def load(path, **kw):
    return formats.load(path, **kw).conversation()


# ---------------------------------------------------------------- detection

@pytest.mark.parametrize("path", MINE, ids=lambda p: p.name)
def test_every_fixture_of_mine_is_detected(path):
    assert formats.detect(path) == "openhands-events"


def test_sniff_claims_no_other_fixture_or_shared_file():
    others = [p for p in FIX.iterdir() if p.is_file() and p not in MINE]
    others += [p for p in shared_transcript_files() if p not in (TRAJECTORY, SDK_LOG)]
    claimed = [p.name for p in others if openhands_events.sniff(p, formats._head(p))]
    assert claimed == []
    # the evaluation-output reader keeps its own files, and leaves these to this one
    assert not any(openhands.sniff(p, formats._head(p)) for p in MINE)


def test_the_mapping_is_shared_with_the_evaluation_output_reader(tmp_path):
    """The same events as an evaluation instance's history give the same messages."""
    events = json.loads(GUI.read_text(encoding="utf-8"))
    row = {"instance_id": "shop-1", "metadata": {"llm_config": {"model": "claude-sonnet-4-20250514"},
                                                 "agent_config": {"enable_prompt_extensions": True}},
           "history": events, "metrics": {"token_usages": []}}
    (tmp_path / "output.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    as_eval, as_trajectory = load(tmp_path / "output.jsonl"), load(GUI)
    assert formats.detect(tmp_path / "output.jsonl") == "openhands"
    shape = lambda c: [(m.role, m.origin, m.parts, m.tool_call_id, m.response_id) for m in c.messages]  # noqa: E731
    assert shape(as_eval) == shape(as_trajectory) and len(as_eval.messages) == 11
    assert [m.id for m in as_eval.messages] == [f"shop-1:{m.id}" for m in as_trajectory.messages]
    assert (as_eval.system, as_eval.tools) == (as_trajectory.system, as_trajectory.tools)
    assert openhands_events.map_events is openhands_memory.map_events


# ---------------------------------------------------------------- V0 trajectories

def test_gui_trajectory_messages_calls_and_left_out_events():
    conv = load(GUI)
    assert conv.id == "openhands_events_gui" and conv.model == "claude-sonnet-4-20250514"
    assert conv.system == ("You are a shop assistant agent.",)
    assert [t.name for t in conv.tools] == ["execute_bash", "str_replace_editor", "finish"]
    assert kinds(conv) == [("user", None), ("user", "system"), ("assistant", None), ("tool", None),
                           ("assistant", None), ("tool", None), ("tool", None), ("assistant", None), ("tool", None),
                           ("entry", "compaction"), ("user", "system"), ("assistant", None)]
    m = conv.messages
    # the image the user attached is kept by size; the recall is rendered and counts as sent
    assert m[0].parts[0] == TextPart("The cart total is wrong, see the screenshot.")
    assert isinstance(m[0].parts[1], ImagePart) and m[0].parts[1].data_chars == 96
    assert m[1].text.startswith("<REPOSITORY_INFO>\nAt the user's request, repository acme/shop")
    # two actions of one model response (events 9 and 10): one message, blank text left out
    assert (m[4].id, m[4].response_id) == ("9", "chatcmpl-a2")
    assert m[4].parts == (ToolCallPart("toolu_cat", "str_replace_editor",
                                       '{"command": "view", "path": "/workspace/shop/cart.py"}'),
                          ToolCallPart("toolu_test", "execute_bash", '{"command": "pytest -q"}'))
    assert [(t.tool_call_id, t.text) for t in m[5:7]] == [
        ("toolu_cat", "def total(items, discount):\n    total = sum(items)\n    return total"),
        ("toolu_test", "1 failed, 3 passed")]
    assert m[8].text == ("OBSERVATION:\nAction has been rejected by the user! Reason: use a helper instead\n"
                         "[Last action has been rejected by the user]")
    assert m[9].text == "Parameter 'path' is required.\n[Error occurred in processing last action]"
    assert m[10].parts == (TextPart("Done."),) and m[10].tool_calls == ()  # finish: its call is not sent
    assert [i.source.line for i in conv.items[:3]] == [104, 130, 149]  # each event's own line
    assert find_orphans(m) == []
    notes = "\n".join(conv.notes)
    for said in ("left out 2 observation agent_state_changed", "left out 1 action change_agent_state",
                 "left out 1 observation null", "left out 1 action recall", "1 recall observation(s) kept as sent",
                 "1 event(s) carry llm_metrics", "1 model response(s) record no usage"):
        assert said in notes


def test_gui_trajectory_usage_from_each_model_response():
    conv = load(GUI)
    got = {m.response_id: nums(m.usage) for m in conv.messages if m.usage is not None}
    # prompt_tokens includes the cache: uncached = prompt - cached_tokens - cache_creation_input_tokens
    assert got == {"chatcmpl-a1": (10, 0, 2090, 40), "chatcmpl-a2": (10, 2090, 300, 75),
                   "chatcmpl-a4": (50, 2700, 250, 20)}
    assert conv.messages[2].usage.raw["cache_creation_input_tokens"] == 2090
    assert {m.model for m in conv.messages if m.role == "assistant"} == {"claude-sonnet-4-20250514"}


def test_gui_trajectory_condensation_is_a_recorded_compaction():
    conv = load(GUI)
    (entry,) = conv.entries
    assert isinstance(entry, Entry) and entry.id == "15"
    assert entry.data == {"summary": "Listed the shop project: cart.py and test_cart.py.", "first_kept_id": "9",
                          "tokens_before": None, "origin": "recorded"}
    view, _, _ = compacted_view(conv)
    assert [m.id for m in view.messages][:2] == ["summary:15", "9"]


def test_headless_trajectory_and_the_api_answer():
    conv = load(HEADLESS)
    assert conv.system == () and any("no system action" in n for n in conv.notes)
    assert [(m.role, m.id) for m in conv.messages] == [("user", "0"), ("assistant", "3"), ("tool", "4"),
                                                        ("assistant", "5")]
    assert conv.messages[3].text == "The notes say: ship on Friday."  # thought; the response had no text
    assert [nums(m.usage) for m in conv.messages if m.usage] == [(300, 1200, 0, 30), (200, 1500, 0, 12)]
    assert conv.model == "gpt-4o-2024-08-06"
    api = load(API)
    assert api.id == "openhands_events_api" and kinds(api) == [("user", None), ("assistant", None),
                                                                ("user", "shell"), ("user", "shell")]
    assert api.messages[3].text == "\nObserved result of command executed by user:\nThu Jul 10 08:00:05 UTC 2025"
    assert api.messages[1].usage is None and api.model is None


def test_bad_trajectory_strict_names_file_line_field_and_lenient_notes():
    path = FIX / "openhands_events_bad.json"
    with pytest.raises(TranscriptError) as err:
        formats.load(path)
    assert (err.value.line, err.value.field) == (71, "[2].tool_call_metadata.tool_call_id")
    assert str(err.value).startswith("openhands_events_bad.json:71: field '[2].tool_call_metadata.tool_call_id'")
    transcript = formats.load(path, strict=False)
    assert [n.split(":")[0] for n in transcript.notes] == ["skipped line 71"]
    conv = transcript.conversation()
    assert [m.role for m in conv.messages] == ["user", "assistant", "assistant"] and transcript.notes[0] in conv.notes


def test_an_aci_edit_of_early_2025_is_sent_as_its_formatted_output(tmp_path):
    events = json.loads(HEADLESS.read_text(encoding="utf-8"))
    events[2] = dict(events[2], observation="edit", content="--- a/NOTES.md\n+++ b/NOTES.md\n@@ -0,0 +1 @@\n+Ship",
                     extras={"path": "/workspace/NOTES.md", "impl_source": "oh_aci", "prev_exist": False,
                             "formatted_output_and_error": "File created successfully at: /workspace/NOTES.md"})
    (tmp_path / "edit.json").write_text(json.dumps(events, indent=4), encoding="utf-8")
    assert load(tmp_path / "edit.json").messages[2].text == "File created successfully at: /workspace/NOTES.md"


def test_a_trajectory_cut_short_is_an_error_naming_the_file(tmp_path):
    cut = tmp_path / "trajectory-abc.json"
    cut.write_bytes(GUI.read_bytes()[:3000])
    with pytest.raises(TranscriptError) as err:
        formats.load(cut, format="openhands-events")
    assert str(err.value).startswith("trajectory-abc.json:")


def test_response_usage_reads_litellm_usage_as_openhands_does():
    u = openhands.response_usage({"prompt_tokens": 3439, "completion_tokens": 104,
                                         "cache_creation_input_tokens": 3435}, file="f", line=1, at="usage")
    assert nums(u) == (4, 0, 3435, 104)
    u = openhands.response_usage({"input_tokens": 900, "output_tokens": 7,
                                         "input_tokens_details": {"cached_tokens": 800}}, file="f", line=1, at="u")
    assert nums(u) == (100, 800, 0, 7)
    with pytest.raises(TranscriptError) as err:
        openhands.response_usage({"prompt_tokens": -1}, file="f.json", line=9, at="[3].usage")
    assert err.value.field == "[3].usage.prompt_tokens"


# ---------------------------------------------------------------- V1 event logs

def test_v1_system_prompt_tools_and_messages():
    conv = load(V1)
    assert conv.system[0].startswith("You are OpenHands agent") and conv.system[1].startswith("<RUNTIME_INFORMATION>")
    assert [t.name for t in conv.tools] == ["terminal", "file_editor", "fetch", "finish"]
    assert conv.tools[2].parameters["required"] == ["url"] and conv.tools[0].parameters["properties"] == {}
    assert kinds(conv) == [("user", None), ("assistant", None), ("tool", None), ("tool", None), ("assistant", None),
                           ("user", None), ("assistant", None), ("tool", None), ("assistant", None), ("tool", None),
                           ("entry", "compaction"), ("assistant", None), ("tool", None)]
    m = conv.messages
    assert m[0].parts[1].text == "<EXTRA_INFO>\nUse argparse for flags.\n</EXTRA_INFO>"  # extended_content
    # two ActionEvents of one response: one message; thinking block first, then the thought
    assert m[1].response_id == "resp-1" and m[1].parts[:2] == (
        ThinkingPart("The user wants a flag; read the parser first.", "sig-one"),
        TextPart("Let me look at cli.py and run the tests."))
    assert [c.id for c in m[1].tool_calls] == ["toolu_1", "toolu_2"]
    assert m[1].tool_calls[1].arguments == '{"command": "pytest -q"}'
    assert m[3].text == ("2 passed in 0.10s\n[Current working directory: /work/cli]\n"
                         "[Python interpreter: /usr/bin/python]\n[Command finished with exit code 0]")
    assert m[4].parts == (ThinkingPart("Ask before adding -v."), TextPart("Shall I also add the short form -v?"))
    assert m[5].text == "Yes, add -v too.\nAnd mention it in the README."  # merged, as the SDK sends them
    assert m[7].text == "Action rejected: Do not touch cli.py before the README."
    assert (m[9].tool_call_id, m[9].is_error) == ("toolu_4", True) and m[9].text.startswith("Tool 'grep' not found")
    assert find_orphans(m) == []
    notes = "\n".join(conv.notes)
    for said in ("3 tool(s) whose parameter schema", "1 consecutive user message(s) merged",
                 "left out 1 CondensationRequest", "left out 1 HookExecutionEvent", "left out 1 PauseEvent",
                 "left out 2 ConversationStateUpdateEvent (execution_status)"):
        assert said in notes


def test_v1_condensation_keeps_the_head_and_the_tail():
    conv = load(V1)
    (entry,) = conv.entries
    ids = [m.id for m in conv.messages]
    assert entry.data["first_kept_id"] == ids[5] and entry.data["pinned_ids"] == [ids[0]]
    view, _, _ = compacted_view(conv)
    assert [m.id for m in view.messages] == [f"summary:{entry.id}", ids[0], *ids[5:]]
    assert view.messages[0].text.endswith("The user wants --verbose and -v in cli.py and a README note; tests pass.")


def test_v1_usage_is_the_difference_between_snapshots():
    conv = load(V1)
    got = [(m.response_id, nums(m.usage)) for m in conv.messages if m.usage is not None]
    assert got == [("resp-1", (200, 0, 5000, 180)), ("resp-2", (100, 5000, 600, 90)),
                   ("resp-3", (100, 5500, 400, 60)), ("resp-4", (300, 5900, 100, 50)),
                   ("resp-5", (200, 2000, 800, 40))]
    assert conv.model == "anthropic/claude-sonnet-4-5-20250929"
    assert conv.messages[1].usage.raw["usage_id"] == "default"
    assert "1 of 6 recorded model call(s) match no assistant message" in conv.notes  # the condenser's call
    assert nums(token_usage({"prompt_tokens": 100, "cache_read_tokens": 60, "completion_tokens": 5})) == (40, 60, 0, 5)


def test_v1_older_sdk_fields():
    conv = load(V1_OLD)
    assert [t.name for t in conv.tools] == ["execute_bash", "finish"] and conv.tools[0].parameters["required"]
    m = conv.messages
    assert m[1].parts == (ThinkingPart("Count lines with wc."),
                          ToolCallPart("call_a", "execute_bash", '{"command":"wc -l data.csv"}'))
    assert m[2].text == "120 data.csv\n[Current working directory: /data]\n[Command finished with exit code 0]"
    assert m[4].text == "data.csv has 120 lines."
    # whole Metrics: token_usages matched by response id
    assert [(x.response_id, nums(x.usage)) for x in m if x.usage] == [("chatcmpl-o1", (1800, 0, 0, 60)),
                                                                       ("chatcmpl-o2", (158, 1792, 0, 40))]
    assert conv.model == "openai/gpt-5-mini" and not any("match no" in n for n in conv.notes)


def test_v1_only_the_active_branch_of_the_event_tree():
    conv = load(V1_TREE)
    assert conv.system == ("You write short poems.",)
    assert [m.text for m in conv.messages] == ["A haiku about rain instead.", "Soft rain on the roof"]
    assert conv.messages[1].parts[0] == ThinkingPart("Keep it to three lines.", "gAAAAB-opaque")
    assert nums(conv.messages[1].usage) == (310, 0, 0, 38)
    assert "left out 4 MessageEvent (on another branch of the conversation tree) event(s): not sent to the model" \
        in conv.notes


def test_v1_bad_line_strict_and_lenient():
    path = FIX / "openhands_v1_bad.jsonl"
    with pytest.raises(TranscriptError) as err:
        formats.load(path)
    assert (err.value.line, err.value.field) == (2, "tool_call")
    assert str(err.value).startswith("openhands_v1_bad.jsonl:2: field 'tool_call'")
    transcript = formats.load(path, strict=False)
    assert [n.split(":")[0] for n in transcript.notes] == ["skipped line 2", "skipped line 3"]
    conv = transcript.conversation()
    assert kinds(conv) == [("user", None), ("tool", "meta"), ("assistant", None)]  # its call was the bad line
    assert any("answers no earlier action" in n for n in conv.notes)


def test_v1_json_list_agent_server_page_and_cli_export(tmp_path):
    events = [json.loads(line) for line in V1_OLD.read_text(encoding="utf-8").splitlines()]
    (tmp_path / "events.json").write_text(json.dumps(events, indent=2), encoding="utf-8")
    (tmp_path / "page.json").write_text(json.dumps({"items": events, "next_page_id": "p2"}), encoding="utf-8")
    export = {"conversation_id": "5e0f7c11", "title": "Count the lines", "created_at": "2025-10-12T14:00:00+00:00",
              "events": [dict(e, parent_id=None) for e in events], "exported_at": "2025-10-12T15:00:00+00:00",
              "last_modified": "2025-10-12T14:00:05+00:00"}  # OpenHands-CLI: model_dump(mode="json"), keys sorted
    (tmp_path / "export.json").write_text(json.dumps(export, indent=2, sort_keys=True), encoding="utf-8")
    as_lines = load(V1_OLD)
    exported = load(tmp_path / "export.json")
    assert (exported.id, exported.title) == ("5e0f7c11", "Count the lines")
    for name in ("events.json", "page.json", "export.json"):
        assert formats.detect(tmp_path / name) == "openhands-events"
        conv = load(tmp_path / name)
        assert [(m.role, m.parts, m.usage) for m in conv.messages] == \
            [(m.role, m.parts, m.usage) for m in as_lines.messages]
    assert any("next_page_id" in n for n in load(tmp_path / "page.json").notes)
    assert [m.source.line for m in load(tmp_path / "events.json").messages][:2] == [48, 124]


def test_v1_sniff_reads_the_key_order_when_the_first_line_is_longer_than_the_head():
    line = json.dumps({"id": "e1", "timestamp": "2026-01-01T00:00:00", "source": "agent",
                       "system_prompt": {"type": "text", "text": "x" * 70000}, "tools": [],
                       "kind": "SystemPromptEvent"},
                      separators=(",", ":"))
    assert openhands_v1.sniff(line[:65536])
    assert not openhands_v1.sniff('{"id":"e1","timestamp":"t","source":"agent","type":"note"}\n')


# ---------------------------------------------------------------- CLI on the fixtures

@pytest.mark.parametrize("path", [GUI, V1], ids=lambda p: p.name)
def test_cli_inspect_and_replay_check_on_fixtures(path, capsys):
    assert main(["inspect", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["format"] == "openhands-events" and report["messages"] == len(load(path).messages)
    assert main(["replay", str(path), "--compare", "--check"]) == 0, capsys.readouterr().err


# ---------------------------------------------------------------- the shared files

def _v0_counts(events):
    """Messages, calls, results and usage rows of a V0 trajectory, counted from the raw events."""
    acts = [e for e in events if "action" in e and e["source"] == "agent"]
    with_call = [e for e in acts if e.get("tool_call_metadata") and e["action"] != "finish"]
    responses = {e["tool_call_metadata"]["model_response"]["id"] for e in with_call}
    finishes = [e for e in acts if e["action"] == "finish"]
    said = [e for e in acts if e["action"] == "message"]
    results = [e for e in events if "observation" in e and e.get("tool_call_metadata")]
    users = [e for e in events if e.get("action") == "message" and e["source"] == "user"]
    with_usage = {e["tool_call_metadata"]["model_response"]["id"] for e in acts
                  if e.get("tool_call_metadata") and e["tool_call_metadata"]["model_response"].get("usage")}
    return Counter({("assistant", None): len(responses) + len(finishes) + len(said), ("tool", None): len(results),
                    ("user", None): len(users)}), len(with_call), len(with_usage)


@pytest.mark.shared
def test_shared_trajectory_counts_usage_and_pairing(shared_transcripts):
    path = shared_transcripts / "openhands-events" / "basic_gui_mode.json"
    events = json.loads(path.read_text(encoding="utf-8"))
    transcript = formats.load(path)
    assert transcript.format == "openhands-events" and transcript.notes == ()
    conv = transcript.conversation()
    by_role, calls, usage_rows = _v0_counts(events)
    assert Counter((m.role, m.origin) for m in conv.messages) == by_role
    assert sum(len(m.tool_calls) for m in conv.messages) == calls
    assert sum(m.usage is not None for m in conv.messages) == usage_rows
    assert (sum(by_role.values()), calls, usage_rows) == (10, 4, 4)
    for e in events:  # every response's usage, converted: the whole prompt is kept
        tcm = e.get("tool_call_metadata")
        if tcm and "action" in e:
            mine = next(m for m in conv.messages if m.response_id == tcm["model_response"]["id"])
            assert mine.usage.total_input_tokens == tcm["model_response"]["usage"]["prompt_tokens"]
            assert mine.usage.output_tokens == tcm["model_response"]["usage"]["completion_tokens"]
    never = Counter(e.get("observation") or e.get("action") for e in events
                    if e.get("observation") in ("agent_state_changed", "null")
                    or e.get("action") == "change_agent_state")
    for kind, n in never.items():
        assert any(note.startswith(f"left out {n} ") and kind in note for note in conv.notes)
    assert find_orphans(conv.messages) == []


def _v1_counts(events):
    """Assistant messages (ActionEvents in a row share a response), calls, results, orphan results and usage
    rows (snapshots followed by an assistant event before the next snapshot) of a V1 log, from the raw events."""
    assistants, prev_response, usage_rows, pending = 0, None, 0, False
    for e in events:
        if e["kind"] == "ActionEvent":
            if e["llm_response_id"] != prev_response:
                assistants += 1
                usage_rows += pending
                pending = False
            prev_response = e["llm_response_id"]
            continue
        prev_response = None
        if e["kind"] == "ConversationStateUpdateEvent" and e["key"] == "stats":
            pending = True
    calls = [e["tool_call_id"] for e in events if e["kind"] == "ActionEvent"]
    results = [e for e in events if e["kind"] in ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation")]
    orphans = [e for e in results if e["tool_call_id"] not in calls]
    return assistants, len(calls), len(results), len(orphans), usage_rows


@pytest.mark.shared
def test_shared_sdk_log_counts_usage_and_pairing(shared_transcripts):
    path = shared_transcripts / "openhands-sdk" / "goal_events.jsonl"
    events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    transcript = formats.load(path)
    assert transcript.format == "openhands-events" and transcript.notes == ()
    conv = transcript.conversation()
    assistants, calls, results, orphans, usage_rows = _v1_counts(events)
    assert Counter(m.role for m in conv.messages) == {"assistant": assistants, "tool": results}
    assert sum(len(m.tool_calls) for m in conv.messages) == calls
    assert sum(m.origin == "meta" for m in conv.messages) == orphans
    assert sum(m.usage is not None for m in conv.messages) == usage_rows
    assert (assistants, calls, results, orphans, usage_rows) == (2, 2, 3, 1, 2)
    # each attached usage is the difference of the accumulated totals around it
    totals = [e["value"]["usage_to_metrics"]["default"]["accumulated_token_usage"] for e in events
              if e["kind"] == "ConversationStateUpdateEvent" and e["key"] == "stats"]
    steps = [{k: b[k] - a[k] for k in ("prompt_tokens", "completion_tokens")}
             for a, b in zip([{"prompt_tokens": 0, "completion_tokens": 0}] + totals, totals)]
    mine = [(m.usage.total_input_tokens, m.usage.output_tokens) for m in conv.messages if m.usage]
    assert all({"prompt_tokens": p, "completion_tokens": c} in steps for p, c in mine)
    assert conv.model == totals[0]["model"]
    assert find_orphans([m for m in conv.messages if m.origin != "meta"]) == []
    assert any(n.startswith("the log starts mid-conversation") for n in conv.notes)
    assert main(["inspect", str(path), "--json"]) == 0


# goal_events.jsonl is a trimmed slice that opens with an assistant call (the notes say so): replay skips that
# call, which has nothing before it to send, with a note
@pytest.mark.shared
@pytest.mark.parametrize("rel", ["openhands-events/basic_gui_mode.json", "openhands-sdk/goal_events.jsonl"])
def test_shared_cli_inspect_and_replay_check(shared_transcripts, rel, capsys):
    path = shared_transcripts / rel
    assert main(["inspect", str(path), "--json"]) == 0, capsys.readouterr().err
    report = json.loads(capsys.readouterr().out)
    assert report["format"] == "openhands-events"
    assert main(["replay", str(path), "--compare", "--check"]) == 0, capsys.readouterr().err
    capsys.readouterr()


@pytest.mark.shared
def test_shared_trajectory_replays_its_recorded_usage(shared_transcripts, capsys):
    path = shared_transcripts / "openhands-events" / "basic_gui_mode.json"
    assert main(["replay", str(path), "--recorded", "--json"]) == 0, capsys.readouterr().err
    out = json.loads(capsys.readouterr().out)
    assert len(out["rows"]) == 5 and out["fidelity"]["structural"]["calls"] == 4
