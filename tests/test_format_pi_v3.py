"""pi sessions in the current tree format, version 3 (``ctxlab/io/formats/pi.py``).

The fixture is invented, shaped after badlogic/pi-mono ``packages/coding-agent/src/core/session-manager.ts``
(the v3 entry types: model and thinking-level changes, compactions with ``firstKeptEntryId`` and
``details``, branch summaries, ``custom`` / ``custom_message``, labels, ``session_info``; a forked
session's ``parentSession``) and ``messages.ts`` (what pi sends for each): a v3 ``custom`` message,
``!`` and ``!!`` commands, an abandoned branch and its summary, an errored turn, two compactions (one
keeping from a label entry, one made by an extension); and a damaged copy.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers import kinds, run
from conftest import SHARED_TRANSCRIPTS
from ctxlab.io import formats
from ctxlab.base.errors import TranscriptError
from ctxlab.io.formats import pi
from ctxlab.interactions import find_orphans
from ctxlab.messages import ThinkingPart, ToolCallPart
from ctxlab.views import compacted_view

FIX = Path(__file__).resolve().parent / "fixtures" / "formats"
SESSION, BAD = FIX / "pi_v3_session.jsonl", FIX / "pi_v3_bad.jsonl"
SHARED = SHARED_TRANSCRIPTS / "pi-v3" / "pi-v3-small.jsonl"
shared = pytest.mark.skipif(not SHARED.is_file(), reason=f"shared pi v3 session not found at {SHARED}")


@pytest.fixture(scope="module")
def conv():
    return formats.load(SESSION).conversation()


def test_detected_and_the_branch_of_the_last_entry_read(conv):
    assert formats.detect(SESSION) == formats.detect(BAD) == "pi"
    assert conv.id == "pi3-garden" and conv.title == "Garden watering" and conv.model == "claude-sonnet-4-5"
    assert kinds(conv) == [
        ("entry", "model_change"), ("entry", "thinking_level_change"), ("user", None), ("assistant", None),
        ("tool", None), ("assistant", None), ("user", "shell"), ("user", "meta"), ("user", "system"), ("user", "system"),
        ("user", "compact_summary"), ("user", None), ("assistant", None), ("assistant", None), ("tool", None),
        ("entry", "compaction"), ("entry", "model_change"), ("entry", "thinking_level_change"), ("user", None),
        ("assistant", None), ("entry", "compaction"), ("entry", "title"), ("user", None), ("assistant", None)]
    assert "e12" not in {m.id for m in conv.messages}  # the abandoned branch
    assert any("2 entries on other branches left out" in n for n in conv.notes)
    assert find_orphans(conv.messages) == []


def test_messages_as_pi_sends_them(conv):
    m = {x.id: x for x in conv.messages}
    assert m["e04"].parts == (ThinkingPart("Read the sensor log.", "sig-1"),
                              ToolCallPart("tc_log", "read", '{"path":"sensors.csv"}'))
    assert (m["e04"].response_id, m["e04"].stop_reason, m["e06"].response_id) == ("msg_pi_1", "tool_use", "msg_pi_2")
    assert m["e05"].tool_call_id == "tc_log" and m["e05"].tool_name == "read"
    assert m["e07"].text == "Ran `ls beds`\n```\nA\nB\n```" and m["e08"].origin == "meta"  # !! stays out
    assert m["e10"].text == "Reminder: bed B was watered yesterday." and m["e11"].text == "Forecast: rain tomorrow."
    assert m["e14"].text == (pi.BRANCH_SUMMARY_PREFIX + "The user asked to water everything, then stopped."
                             + pi.BRANCH_SUMMARY_SUFFIX)
    assert m["e16e"].stop_reason == "error" and any("1 errored or aborted assistant turn(s)" in n for n in conv.notes)
    assert m["e23"].model == "gpt-5.2" and m["e23"].provider == "openai"  # after the model_change entry


def test_usage_keeps_the_recorded_cost(conv):
    u = next(x for x in conv.messages if x.id == "e06").usage
    assert (u.uncached_input_tokens, u.cache_read_tokens, u.cache_write_tokens, u.output_tokens) == (30, 2100, 60, 12)
    assert u.cost_usd["output"] == pytest.approx(12 * 15e-6) and u.raw["totalTokens"] == 2202


def test_compactions_first_kept_details_and_extensions(conv):
    first, second = [e for e in conv.entries if e.kind == "compaction"]
    assert first.data == {"summary": "Bed A was dry and got watered; bed B is fine.", "first_kept_id": "e16",
                          "tokens_before": 5400, "origin": "recorded",
                          "details": {"readFiles": ["sensors.csv"], "modifiedFiles": []}}  # kept from the label e15
    assert second.data["first_kept_id"] == "e22" and second.data["details"] == {"plan": "v2"}
    assert "line 26: compaction made by an extension (fromHook)" in conv.notes
    view, entry, _ = compacted_view(conv)
    assert entry is second and [m.id for m in view.messages] == ["summary:e24", "e22", "e23", "e26", "e27"]
    levels = [e.data["level"] for e in conv.entries if e.kind == "thinking_level_change"]
    assert levels == ["medium", "high"]


def test_bookkeeping_entries_are_left_out_and_counted(conv):
    assert any(n.startswith("left out 1 'custom' line(s) (first at line ") and
               n.endswith("): not part of the model's context") for n in conv.notes)
    assert any(n.startswith("left out 1 'label' line(s) (first at line ") and n.endswith("): not part of the model's context") for n in conv.notes)
    assert any(n.startswith("forked from another session (") for n in conv.notes)


def test_bad_lines_strict_names_file_line_and_field():
    with pytest.raises(TranscriptError) as err:
        formats.load(BAD)
    assert str(err.value) == ("pi_v3_bad.jsonl:4: field 'summary': input should be a valid string, got None. "
                              "Fix the line or load with strict=False to skip it.")


def test_bad_lines_lenient_are_noted():
    t = formats.load(BAD, strict=False)
    assert t.notes == ("skipped line 4: field 'summary': input should be a valid string, got None.",
                       "skipped line 5: field 'message.role': unknown role 'narrator'; pi writes user, assistant, "
                       "toolResult, bashExecution, custom.",
                       "skipped line 6: field 'message.toolCallId': field required.")
    assert [m.id for m in t.conversation().messages] == ["e03", "e26"]


# ---------------------------------------------------------------- the real v3 file

@pytest.mark.shared
@shared
def test_shared_v3_counts_match_the_raw_file():
    rows = [json.loads(line) for line in SHARED.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert rows[0]["type"] == "session" and rows[0]["version"] == 3
    entries = rows[1:]
    conv = formats.load(SHARED).conversation()
    raw_messages = [o for o in entries if o["type"] == "message"]
    assert [m.id for m in conv.messages] == [o["id"] for o in raw_messages]
    assert sum(1 for m in conv.messages if m.usage) == sum(1 for o in raw_messages if "usage" in o["message"])
    for kind in ("model_change", "thinking_level_change", "compaction"):
        assert sum(1 for e in conv.entries if e.kind == kind) == sum(1 for o in entries if o["type"] == kind)
    order = [o["id"] for o in entries]
    for entry, raw in zip([e for e in conv.entries if e.kind == "compaction"], [o for o in entries if o["type"] == "compaction"]):
        assert entry.data["tokens_before"] == raw["tokensBefore"] and entry.data["details"] == raw["details"]
        start = order.index(raw["firstKeptEntryId"])  # the first message at or after the kept entry
        first = next(o["id"] for o in entries[start:] if o["type"] == "message")
        assert entry.data["first_kept_id"] == first
    calls = sum(1 for o in raw_messages if o["message"]["role"] == "assistant"
                for b in o["message"]["content"] if b["type"] == "toolCall")
    results = sum(1 for o in raw_messages if o["message"]["role"] == "toolResult")
    assert sum(len(m.tool_calls) for m in conv.messages) == calls and sum(m.role == "tool" for m in conv.messages) == results
    ids, seen = [], set()  # a responseId used again names no response: kept only the first time
    for o in raw_messages:
        if o["message"]["role"] == "assistant":
            rid = o["message"].get("responseId")
            ids.append(None if rid in seen else rid)
            seen.add(rid)
    assert [m.response_id for m in conv.messages if m.role == "assistant"] == ids


@pytest.mark.shared
@shared
def test_shared_v3_through_the_cli(capsys):
    code, out, err = run(capsys, "inspect", str(SHARED), "--json")
    assert code == 0, err
    assert json.loads(out)["format"] == "pi"
    code, out, err = run(capsys, "replay", str(SHARED), "--compare", "--check")
    assert code == 0, err


def test_fixture_through_the_cli(capsys):
    code, out, err = run(capsys, "inspect", str(SESSION), "--json")
    assert code == 0, err
    code, out, err = run(capsys, "replay", str(SESSION), "--compare", "--check")
    assert code == 0, err


def test_damaged_copy_of_the_shared_file(tmp_path):
    if not SHARED.is_file():
        pytest.skip("shared pi v3 session not found")
    lines = SHARED.read_text(encoding="utf-8").splitlines()
    broken = json.loads(lines[4])
    broken["message"]["content"] = [{"type": "toolCall", "id": "x"}]  # a call without its name
    lines[4] = json.dumps(broken)
    path = tmp_path / "damaged.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(TranscriptError) as err:
        formats.load(path)
    assert (err.value.line, err.value.field) == (5, "message.content[0].name")
    t = formats.load(path, strict=False)
    assert t.notes[0].startswith("skipped line 5: field 'message.content[0].name'")
    assert len(t.conversation().messages) == 3


def test_reader_never_writes_the_file(tmp_path):
    path = tmp_path / SESSION.name
    shutil.copy(SESSION, path)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    formats.load(path)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
