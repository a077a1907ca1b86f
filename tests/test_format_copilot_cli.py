"""The GitHub Copilot CLI ``events.jsonl`` reader (``ctxlab/io/formats/copilot_cli.py``).

Fixtures are invented, shaped after the session-event schema in github/copilot-sdk
(``nodejs/src/generated/session-events.ts``): a current log (1.0.x: reasoning, parallel calls, a failed
tool, chunked replies, ``assistant.usage``, a sub-agent, a compaction, a user-run tool, an autopilot
continuation, the shutdown totals), an older one (0.0.387: no usage, ``parentToolCallId`` sub-agents,
``/clear``) and a damaged copy.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from helpers import run
from conftest import SHARED_TRANSCRIPTS, shared_transcript_files
from ctxlab.io import formats
from ctxlab.base.errors import TranscriptError
from ctxlab.io.formats import copilot_cli
from ctxlab.interactions import find_orphans
from ctxlab.messages import ImagePart, TextPart, ThinkingPart, ToolCallPart

FIX = Path(__file__).resolve().parent / "fixtures" / "formats"
MINE = ("copilot_cli_events.jsonl", "copilot_cli_old.jsonl", "copilot_cli_bad.jsonl")
SHARED = SHARED_TRANSCRIPTS / "copilot-cli" / "copilot-cli-events.jsonl"


@pytest.fixture(scope="module")
def conv():
    return formats.load(FIX / "copilot_cli_events.jsonl").conversation()


# ---------------------------------------------------------------- detection

@pytest.mark.parametrize("name", MINE)
def test_fixtures_detected_as_copilot_cli(name):
    assert "copilot-cli" in formats.names() and "copilot_cli" not in formats.UNAVAILABLE
    assert formats.detect(FIX / name) == "copilot-cli"


@pytest.mark.parametrize("path", sorted(p for p in FIX.iterdir() if not p.name.startswith("copilot_")),
                         ids=lambda p: p.name)
def test_sniff_claims_no_other_fixture(path):
    assert not copilot_cli.sniff(path, formats._head(path))


@pytest.mark.shared
@pytest.mark.parametrize("path", [p for p in shared_transcript_files() if p.parent.name != "copilot-cli"],
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_sniff_claims_no_other_shared_file(path):
    assert not copilot_cli.sniff(path, formats._head(path))


# ---------------------------------------------------------------- the current layout

def test_system_prompt_model_and_static_head(conv):
    assert conv.id == "sess-bakery-01" and conv.model == "claude-sonnet-4.6" and conv.provider is None
    assert conv.system == ("You are a terminal helper for a small bakery's inventory scripts. Be brief.",)
    assert conv.tools == () and conv.inferred_head_tokens == 3200  # shutdown's toolDefinitionsTokens
    assert any("repeating the system prompt unchanged" in n for n in conv.notes)


def test_user_message_is_what_the_model_got(conv):
    first = conv.messages[0]
    assert first.role == "user" and first.origin is None
    assert first.text.startswith("<current_datetime>") and first.text.endswith("How many croissants are left?")
    assert first.parts[1] == ImagePart("image/png", data_chars=16)
    assert "1 'file' attachment(s): their content is in transformedContent if Copilot sent it" in conv.notes
    autopilot = [m for m in conv.messages if m.role == "user" and m.origin == "system"]
    assert [m.text for m in autopilot] == ["You have not marked the task complete yet. Keep going."]


def test_parallel_calls_reasoning_and_results_paired(conv):
    a = conv.messages[1]
    assert a.parts == (ThinkingPart("Two independent reads: do them in parallel.", "c2lnLWNyb2lzc2FudA=="),
                       TextPart("Let me check the stock file and the oven log."),
                       ToolCallPart("call_a", "view", '{"path":"stock.csv"}'),
                       ToolCallPart("call_b", "bash", '{"command":"tail -3 oven.log"}'))
    failed, ok = conv.messages[2], conv.messages[3]
    assert (failed.tool_call_id, failed.tool_name, failed.is_error) == ("call_b", "bash", True)
    assert failed.text == "tail: cannot open 'oven.log': No such file"
    assert (ok.tool_call_id, ok.is_error, ok.text) == ("call_a", False, "item,count\ncroissant,14\nbaguette,30")
    assert find_orphans([m for m in conv.messages if m.origin != "meta"]) == []
    assert a.source.line == 6 and failed.source.line == 10


def test_recorded_call_usage_and_output_only_usage(conv):
    a = conv.messages[1]
    u = a.usage
    assert (u.uncached_input_tokens, u.cache_read_tokens, u.cache_write_tokens, u.output_tokens) == (50, 1200, 250, 64)
    assert u.total_input_tokens == 1500 and u.raw["apiCallId"] == "api-1" and a.stop_reason == "tool_use"
    rest = [m for m in conv.messages if m.role == "assistant" and m is not a]
    assert [m.usage.output_tokens for m in rest] == [41, 20, 12, 5, 11]
    assert all(m.usage.total_input_tokens == 0 and m.usage.raw == {"outputTokens": m.usage.output_tokens} for m in rest)
    assert any(n.startswith("5 assistant message(s) record only outputTokens") for n in conv.notes)
    shutdown = [n for n in conv.notes if "session.shutdown totals" in n]
    assert len(shutdown) == 2 and "5,200 input (3,600 cache read, 250 cache write)" in shutdown[0]


def test_chunks_of_one_call_are_merged_after_a_model_change(conv):
    entries = [(e.kind, e.data) for e in conv.entries]
    assert entries[:2] == [("model_change", {"provider": None, "model": "gpt-5.2"}),
                           ("thinking_level_change", {"level": "high"})]
    merged = conv.messages[4]
    assert merged.response_id == "api-2" and merged.model == "gpt-5.2" and merged.usage.output_tokens == 41
    assert [type(p).__name__ for p in merged.parts] == ["ThinkingPart", "TextPart", "ThinkingPart", "TextPart"]
    assert merged.parts[2] == ThinkingPart("", "ZW5jLW9wZW5haQ==", redacted=True)


def test_user_run_tool_subagent_compaction_and_left_out_events(conv):
    shell = conv.messages[5]
    assert (shell.role, shell.origin, shell.text) == ("user", "shell", 'bash {"command":"ls"}\noven.log.bak\nstock.csv')
    assert conv.threads() == ("main", "subagent-1")
    sub = conv.thread("subagent-1").messages
    assert [(m.role, m.tool_call_id) for m in sub] == [("assistant", None), ("tool", "call_s1"), ("assistant", None)]
    task = [m for m in conv.messages if m.tool_call_id == "call_task"]
    assert len(task) == 1 and task[0].thread == "main" and task[0].text == "9 muffins."
    comp = [e for e in conv.entries if e.kind == "compaction"]
    assert len(comp) == 1 and comp[0].data["tokens_before"] == 4100 and comp[0].data["first_kept_id"] is None
    assert comp[0].data["summary"].startswith("The user checks bakery stock")
    for note in ("1 'session.brand_new_event' event(s) left out: a type this reader does not know (first at line 18)",
                 "1 'abort' event(s) left out: not part of the model's context",
                 "2 'assistant.turn_start' event(s) left out: not part of the model's context",
                 "1 tool result(s) with a detailedContent (the UI's fuller view): the model got result.content, kept"):
        assert note in conv.notes


# ---------------------------------------------------------------- an older release

def test_old_layout_clear_starts_a_new_conversation_and_parent_tool_call_ids_are_threads():
    t = formats.load(FIX / "copilot_cli_old.jsonl")
    assert [c.id for c in t.conversations] == ["sess-old-7", "sess-old-7:1"]
    first, second = t.conversations
    assert first.model == "gpt-5" and second.model == "gpt-5" and first.system == ()
    assert [m.usage for m in first.messages + second.messages if m.role == "assistant"] == [None] * 6
    assert [(m.role, m.text) for m in first.messages][-1] == ("assistant", "Only the fern, on Mondays.")
    assert second.messages[0].text == "Start over: list the plants."
    assert second.threads() == ("main", "subagent-1")
    assert [m.tool_call_id for m in second.thread("subagent-1").messages] == [None, "call_ls", None]
    assert [o.call_id for o in find_orphans(second.messages)] == ["call_late"]
    assert "1 tool call(s) never completed in this file" in second.notes


# ---------------------------------------------------------------- damaged lines

def test_bad_line_strict_names_file_line_and_field():
    with pytest.raises(TranscriptError) as err:
        formats.load(FIX / "copilot_cli_bad.jsonl")
    e = err.value
    assert (e.file, e.line, e.field) == ("copilot_cli_bad.jsonl", 5, "data.success")
    assert "strict=False" in str(e)


def test_bad_lines_lenient_are_noted_not_dropped_silently():
    t = formats.load(FIX / "copilot_cli_bad.jsonl", strict=False)
    assert t.notes == ("skipped line 5: field 'data.success': field required.",
                       "skipped line 6: not valid JSON (Expecting ',' delimiter at column 85).")
    conv = t.conversation()
    assert set(t.notes) <= set(conv.notes)
    assert [(m.role, m.tool_call_id) for m in conv.messages] == [("user", None), ("assistant", None),
                                                                 ("tool", "call_a")]
    assert "1 tool call(s) never completed in this file" in conv.notes  # call_b's result was the damaged line


def test_damaged_copy_of_the_shared_file(tmp_path):
    if not SHARED.is_file():
        pytest.skip(f"shared transcript absent: {SHARED}")
    lines = SHARED.read_text(encoding="utf-8").splitlines()
    lines[8] = lines[8][: len(lines[8]) // 2]  # a torn assistant.message line
    bad = tmp_path / "events.jsonl"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(TranscriptError) as err:
        formats.load(bad)
    assert (err.value.file, err.value.line) == ("events.jsonl", 9) and "not valid JSON" in err.value.problem
    t = formats.load(bad, strict=False)
    assert t.notes[0].startswith("skipped line 9: not valid JSON")
    assert SHARED.read_text(encoding="utf-8").splitlines()[8] != lines[8]  # the original is untouched


# ---------------------------------------------------------------- the shared file, counted independently

def raw_counts(path: Path) -> dict[str, int]:
    events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    requested = {r["toolCallId"] for e in events if e["type"] == "assistant.message"
                 for r in e["data"].get("toolRequests") or []}
    done = [e["data"] for e in events if e["type"] == "tool.execution_complete"]
    system = [e["data"]["content"] for e in events if e["type"] == "system.message"]
    return {"user": sum(e["type"] == "user.message" for e in events),
            "assistant": sum(e["type"] == "assistant.message" for e in events),
            "calls": len(requested), "results": sum(d["toolCallId"] in requested for d in done),
            "unrequested": sum(d["toolCallId"] not in requested for d in done),
            "output_tokens": [e["data"]["outputTokens"] for e in events
                              if e["type"] == "assistant.message" and "outputTokens" in e["data"]],
            "system_distinct": len(set(system)),
            "reasoning": sum(bool(e["data"].get("reasoningText")) for e in events if e["type"] == "assistant.message"),
            "types": Counter(e["type"] for e in events)}


@pytest.mark.shared
def test_shared_file_counts_match_the_raw_file():
    if not SHARED.is_file():
        pytest.skip(f"shared transcript absent: {SHARED}")
    raw = raw_counts(SHARED)
    conv = formats.load(SHARED).conversation()
    by_role = Counter((m.role, m.origin) for m in conv.messages)
    assert by_role[("assistant", None)] == raw["assistant"] == 6
    assert by_role[("user", None)] + by_role[("user", "system")] == raw["user"] == 2
    assert by_role[("tool", None)] == raw["results"] == 11 and by_role[("user", "meta")] == raw["unrequested"] == 2
    assert sum(len(m.tool_calls) for m in conv.messages) == raw["calls"] == 11
    assert [m.usage.output_tokens for m in conv.messages if m.role == "assistant"] == raw["output_tokens"]
    assert len(conv.system) == raw["system_distinct"] == 1 and conv.model == "claude-sonnet-4.6"
    assert conv.inferred_head_tokens == 15204 and find_orphans([m for m in conv.messages if m.origin != "meta"]) == []
    assert sum(isinstance(p, ThinkingPart) and bool(p.text) for m in conv.messages for p in m.parts) == raw["reasoning"]
    assert f"{raw['types']['assistant.turn_start']} 'assistant.turn_start' event(s) left out: not part of the " \
           "model's context" in conv.notes


@pytest.mark.shared
def test_shared_file_through_the_cli(capsys):
    if not SHARED.is_file():
        pytest.skip(f"shared transcript absent: {SHARED}")
    code, out, err = run(capsys, "inspect", str(SHARED), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["format"] == "copilot-cli" and doc["messages"] == 21 and doc["orphans"] == []
    code, out, err = run(capsys, "replay", str(SHARED), "--compare", "--check")
    assert code == 0, err
    assert "every strategy replayed" in out
    code, out, err = run(capsys, "replay", str(SHARED), "--recorded", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["totals"]["output_tokens"] == sum(raw_counts(SHARED)["output_tokens"]) == 2848


def test_reader_never_writes_the_file(tmp_path):
    copy = tmp_path / "events.jsonl"
    shutil.copy(FIX / "copilot_cli_events.jsonl", copy)
    before = copy.read_bytes()
    formats.load(copy)
    assert copy.read_bytes() == before
    assert formats.load(copy).conversation().id == "sess-bakery-01"  # the session id, not the file name
