"""The gemini-cli reader: Gemini CLI chat recordings, JSON Lines (2026) and single JSON (2025).

Fixtures are hand-written in the shapes google-gemini/gemini-cli's ``chatRecordingService.ts`` writes
(the module docstring cites the source): ``gemini_session.jsonl`` (the April 2026 JSON Lines form:
records rewritten with the same id, parallel calls, an image and an error in results, UI records, a
model change), ``gemini_checkpoint.jsonl`` (newer records: ``$set.messages`` checkpoints, a roll-back,
``$rewindTo``, a compression, tool responses recorded as user records, a binary injection),
``gemini_legacy.json`` (the pretty-printed single-JSON form) and ``gemini_bad.jsonl``.
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
from ctxlab.io.formats import gemini_cli
from ctxlab.interactions import find_orphans
from ctxlab.messages import ImagePart, ThinkingPart, ToolCallPart
from ctxlab.views import compacted_view

FIX = Path(__file__).resolve().parent / "fixtures" / "formats"
GOOD = ("gemini_session.jsonl", "gemini_checkpoint.jsonl", "gemini_legacy.json")
SHARED = SHARED_TRANSCRIPTS / "gemini-cli" / "gemini-cli-session.jsonl"


def load(name):
    return formats.load(FIX / name).conversation()


def usage_tuple(m):
    u = m.usage
    return (u.uncached_input_tokens, u.cache_read_tokens, u.cache_write_tokens, u.output_tokens)


def note_with(conv, text):
    return next(n for n in conv.notes if text in n)


# ---------------------------------------------------------------- detection

@pytest.mark.parametrize("name", GOOD + ("gemini_bad.jsonl",))
def test_fixture_detected_and_claimed_by_no_other_reader(name):
    path = FIX / name
    assert formats.detect(path) == "gemini-cli"
    head = formats._head(path)
    assert [r.NAME for r in formats.READERS if r.sniff(path, head)] == ["gemini-cli"]


def test_sniff_claims_no_other_fixture_or_shared_file():
    others = [p for p in FIX.iterdir() if p.is_file() and not p.name.startswith("gemini_")]
    others += [p for p in shared_transcript_files() if p.parent.name != "gemini-cli"]
    assert others
    assert [p.name for p in others if gemini_cli.sniff(p, formats._head(p))] == []


def test_registered_before_the_generic_json_readers():
    names = formats.names()
    assert "gemini_cli" not in formats.UNAVAILABLE
    assert all(names.index("gemini-cli") < names.index(n) for n in ("messages-jsonl", "openai-chat"))


# ---------------------------------------------------------------- the JSON Lines form (April 2026)

def test_session_messages_pairing_and_origins():
    conv = load("gemini_session.jsonl")
    assert (conv.id, conv.title, conv.model, conv.provider, conv.system, conv.tools) == (
        "7d3e9a10-4c2b-4f8e-9b1a-2e5c6d7f8a90", "Add a unit test for parse_date", "gemini-2.5-pro", "google", (), ())
    assert kinds(conv) == [("user", None), ("assistant", None), ("tool", None), ("tool", None), ("tool", None),
                           ("entry", "model_change"), ("assistant", None), ("tool", None), ("user", "system"),
                           ("assistant", None), ("user", None), ("assistant", None)]
    first = conv.messages[1]
    assert first.id == "g-01" and first.source.line == 8  # the record written again (line 8) replaces line 6
    assert isinstance(first.parts[0], ThinkingPart)
    assert first.parts[0].text == "**Finding the parser** I will read dates.py and its tests first."
    assert [c.id for c in first.tool_calls] == ["rf-1", "rf-2", "sh-1"]  # parallel calls, then their results
    assert first.tool_calls[0].arguments == '{"file_path":"src/dates.py"}'
    results = conv.messages[2:5]
    assert [(m.tool_call_id, m.tool_name, m.is_error) for m in results] == [
        ("rf-1", "read_file", False), ("rf-2", "read_file", False), ("sh-1", "run_shell_command", True)]
    assert results[0].text.startswith("def parse_date(text):")
    assert isinstance(results[1].parts[1], ImagePart) and results[1].parts[1].media_type == "image/png"
    assert results[2].text == "Command exited with code 4: file or directory not found"
    assert conv.messages[7].text == "System: Please continue."  # Gemini CLI's own turn
    assert conv.entries[0].data == {"provider": "google", "model": "gemini-2.5-flash"}
    assert [m.model for m in conv.messages if m.role == "assistant"] == ["gemini-2.5-pro"] + ["gemini-2.5-flash"] * 3
    assert find_orphans(conv.messages)[0].kind == "call_without_result"  # sh-2 was recorded without a result


def test_session_usage_is_split_into_neutral_fields():
    conv = load("gemini_session.jsonl")
    used = [m for m in conv.messages if m.usage]
    # uncached = input - cached; output = output + thoughts
    assert [usage_tuple(m) for m in used] == [(9120, 0, 0, 274), (2288, 8192, 0, 180), (550, 10240, 0, 57)]
    assert used[2].usage.raw == {"input": 10790, "output": 22, "cached": 10240, "thoughts": 35, "tool": 12,
                                 "total": 10859}
    assert [m.id for m in conv.messages if m.role == "assistant" and not m.usage] == ["g-04"]  # tokens: null


def test_session_notes_count_what_was_left_out():
    conv = load("gemini_session.jsonl")
    assert "system prompt nor the tool declarations" in conv.notes[0]
    assert note_with(conv, "written again with the same id").startswith("2 ")
    assert note_with(conv, "'info' record(s)").startswith("2 ")
    assert note_with(conv, "'warning' record(s)").startswith("1 ")
    assert note_with(conv, "'error' record(s)").startswith("1 ")
    assert note_with(conv, "without a result").startswith("1 ")
    assert note_with(conv, "tokens.tool").startswith("1 ")


# ---------------------------------------------------------------- newer records: checkpoints and rewinds

def test_checkpoints_rewinds_and_compression():
    conv = load("gemini_checkpoint.jsonl")
    ids = [i.id for i in conv.items]
    assert ids == ["s-00", "u-01", "m-01", "m-01:gr-1", "m-02", "m-02:ed-1", "checkpoint:19", "s-10", "c-02",
                   "u-04", "m-05", "m-05:rd-1", "m-06", "i-06", "m-07"]
    # rolled back (u-02, m-03: an aborted turn) and rewound (u-03, m-04) records are gone, each counted
    assert note_with(conv, "rolled back").startswith("2 ") and note_with(conv, "$rewindTo").startswith("2 ")
    m01 = conv.messages[2]  # content rewritten by a checkpoint: its parts, in order
    assert [type(p) for p in m01.parts] == [ThinkingPart, ToolCallPart] and m01.source.line == 10
    assert m01.tool_calls[0] == ToolCallPart("gr-1", "grep_search", '{"pattern":"helper"}')
    # a tool response recorded again as a user record is read once
    assert note_with(conv, "recorded again as a user record").startswith("3 ")
    assert [m.tool_call_id for m in conv.messages if m.role == "tool"] == ["gr-1", "ed-1", "rd-1"]
    entry = conv.items[6]
    assert entry.kind == "compaction" and entry.source.line == 19
    assert entry.data["summary"].startswith("<state_snapshot>") and entry.data["first_kept_id"] is None
    assert entry.data["tokens_before"] == 7795 and entry.data["origin"] == "recorded"
    binary = conv.messages[-2]  # the image a tool returned, sent as a user turn
    assert (binary.role, binary.origin, type(binary.parts[0])) == ("user", "system", ImagePart)
    assert conv.messages[0].origin == "system"  # <session_context>
    assert find_orphans(conv.messages) == []


def test_compacted_view_starts_from_the_snapshot():
    view, entry, _ = compacted_view(load("gemini_checkpoint.jsonl"))
    assert entry.id == "checkpoint:19"
    assert [m.id for m in view.messages][:4] == ["summary:checkpoint:19", "s-10", "c-02", "u-04"]


def write_lines(path, lines):
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return path


def test_checkpoint_adding_records_puts_each_after_its_predecessor(tmp_path):
    a, b = {"id": "a", "type": "user", "content": "one"}, {"id": "b", "type": "gemini", "content": "two"}
    x, y = {"id": "x", "type": "user", "content": "zero"}, {"id": "y", "type": "user", "content": "one and a half"}
    path = write_lines(tmp_path / "added.jsonl", [{"sessionId": "s", "projectHash": "p"}, a, b,
                                                  {"$set": {"messages": [x, a, y, b]}}])
    conv = formats.load(path).conversation()
    assert [m.id for m in conv.messages] == ["x", "a", "y", "b"] and conv.entries == ()


def test_checkpoint_dropping_older_records_without_a_snapshot(tmp_path):
    """setHistory with fresh ids (e.g. truncated tool outputs): the copies follow a compaction entry."""
    a, b = {"id": "a", "type": "user", "content": "one"}, {"id": "b", "type": "gemini", "content": "two"}
    a2, b2 = dict(a, id="a2"), dict(b, id="b2", content="two (truncated)")
    path = write_lines(tmp_path / "rewritten.jsonl", [{"sessionId": "s", "projectHash": "p"}, a, b, a2, b2,
                                                      {"$set": {"messages": [a2, b2]}}])
    conv = formats.load(path).conversation()
    assert [i.id for i in conv.items] == ["a", "b", "checkpoint:6", "a2", "b2"]
    assert conv.entries[0].data["summary"] == "" and "WITHOUT a <state_snapshot>" in note_with(conv, "checkpoint")
    view, _, _ = compacted_view(conv)
    assert [m.text for m in view.messages][1:] == ["one", "two (truncated)"]


def test_rewind_to_an_unknown_id_clears_the_list(tmp_path):
    path = tmp_path / "rewound.jsonl"
    lines = [{"sessionId": "s", "projectHash": "p"},
             {"id": "a", "type": "user", "content": "one"}, {"$rewindTo": "never-written"},
             {"id": "b", "type": "user", "content": [{"text": "two"}]}]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    conv = formats.load(path).conversation()
    assert [m.id for m in conv.messages] == ["b"] and conv.messages[0].text == "two"


# ---------------------------------------------------------------- the single-JSON form

def test_legacy_single_json():
    conv = load("gemini_legacy.json")
    assert (conv.id, conv.title, conv.model) == ("0a0b0c0d-1111-4222-8333-444455556666", "What make lint runs",
                                                 "gemini-2.5-pro")
    assert kinds(conv) == [("user", None), ("assistant", None), ("tool", None), ("tool", None), ("assistant", None)]
    assert conv.messages[0].text == "What does make lint run?" and conv.messages[0].source.line == 7
    assert [m.tool_call_id for m in conv.messages[2:4]] == [c.id for c in conv.messages[1].tool_calls]
    assert [usage_tuple(m) for m in conv.messages if m.usage] == [(5200, 0, 0, 62), (1234, 4096, 0, 31)]
    assert note_with(conv, "'info' record(s)").startswith("1 ")


def test_one_line_legacy_record_reads_the_same(tmp_path):
    """A migrated or hand-copied record on one line is a JSONL header with messages (Gemini CLI reads it so)."""
    data = json.loads((FIX / "gemini_legacy.json").read_text(encoding="utf-8"))
    path = tmp_path / "session-one-line.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert formats.detect(path) == "gemini-cli"
    got, want = formats.load(path).conversation(), load("gemini_legacy.json")
    assert [(m.role, m.parts, m.tool_call_id, m.usage) for m in got.messages] == [
        (m.role, m.parts, m.tool_call_id, m.usage) for m in want.messages]


def test_cut_legacy_json_is_an_error_naming_the_file(tmp_path):
    data = (FIX / "gemini_legacy.json").read_bytes()
    cut = tmp_path / "gemini_legacy.json"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(TranscriptError) as err:
        formats.load(cut)
    assert str(err.value).startswith("gemini_legacy.json:")


# ---------------------------------------------------------------- strict and lenient

def test_bad_line_strict_names_file_line_and_field():
    with pytest.raises(TranscriptError) as err:
        formats.load(FIX / "gemini_bad.jsonl")
    e = err.value
    assert (e.file, e.line, e.field) == ("gemini_bad.jsonl", 3, "tokens.input")
    assert "greater than or equal to 0" in e.problem and "strict=False" in e.hint


def test_bad_line_lenient_is_skipped_with_a_note():
    t = formats.load(FIX / "gemini_bad.jsonl", strict=False)
    conv = t.conversation()
    assert [m.id for m in conv.messages] == ["u-01", "u-02", "g-02"]
    assert t.notes[0].startswith("skipped line 3: field 'tokens.input'") and t.notes[0] in conv.notes


def test_bad_checkpoint_element_names_its_field(tmp_path):
    path = tmp_path / "checkpoint.jsonl"
    lines = [{"sessionId": "s", "projectHash": "p"}, {"id": "a", "type": "user", "content": "hi"},
             {"$set": {"messages": [{"id": "a", "content": "hi"}]}}]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    with pytest.raises(TranscriptError) as err:
        formats.load(path)
    assert (err.value.line, err.value.field) == (3, "$set.messages[0].type")
    assert [m.id for m in formats.load(path, strict=False).conversation().messages] == ["a"]


# ---------------------------------------------------------------- CLI

@pytest.mark.parametrize("name", GOOD)
def test_cli_inspect_and_replay_on_fixtures(name, capsys):
    assert main(["inspect", str(FIX / name), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["format"] == "gemini-cli" and rep["messages"] == len(load(name).messages)
    assert main(["replay", str(FIX / name), "--compare", "--check"]) == 0, capsys.readouterr().err


# ---------------------------------------------------------------- the shared real session

def raw_counts(path: Path) -> dict[str, int]:
    """An independent count of the raw file: records folded by id (a later line with the same id
    replaces the earlier one, as Gemini CLI's loader does), with plain json parsing."""
    records: dict[str, dict] = {}
    for text in path.read_text(encoding="utf-8").splitlines():
        obj = json.loads(text)
        assert "$rewindTo" not in obj and "messages" not in obj.get("$set", {})  # this file has neither
        if isinstance(obj.get("id"), str):
            records[obj["id"]] = obj
    gemini = [r for r in records.values() if r["type"] == "gemini"]
    calls = [c for r in gemini for c in r.get("toolCalls") or []]
    return {"user": sum(r["type"] == "user" for r in records.values()), "assistant": len(gemini),
            "tool_calls": len(calls), "tool": sum(c.get("result") is not None for c in calls),
            "usage": sum(isinstance(r.get("tokens"), dict) for r in gemini),
            "ui": sum(r["type"] in ("info", "warning", "error") for r in records.values()),
            "input": sum(r["tokens"]["input"] for r in gemini if r.get("tokens")),
            "cached": sum(r["tokens"]["cached"] for r in gemini if r.get("tokens")),
            "output": sum(r["tokens"]["output"] + r["tokens"].get("thoughts", 0) for r in gemini if r.get("tokens")),
            "models": len({r.get("model") for r in gemini})}


@pytest.mark.shared
def test_shared_session_counts_match_the_raw_file(shared_transcripts):
    if not SHARED.exists():
        pytest.skip(f"{SHARED} not found")
    raw = raw_counts(SHARED)
    t = formats.load(SHARED)
    assert t.format == "gemini-cli" and t.notes == ()
    conv = t.conversation()
    roles = Counter(m.role for m in conv.messages)
    assert (roles["user"], roles["assistant"], roles["tool"]) == (raw["user"], raw["assistant"], raw["tool"])
    assert sum(len(m.tool_calls) for m in conv.messages) == raw["tool_calls"]
    used = [m for m in conv.messages if m.usage]
    assert len(used) == raw["usage"]
    assert sum(m.usage.total_input_tokens for m in used) == raw["input"]
    assert sum(m.usage.cache_read_tokens for m in used) == raw["cached"]
    assert sum(m.usage.output_tokens for m in used) == raw["output"]
    assert len([e for e in conv.entries if e.kind == "model_change"]) == raw["models"] - 1
    assert find_orphans(conv.messages) == []
    assert note_with(conv, "UI messages").startswith(f"{raw['ui']} ")
    assert all(m.provider == "google" and m.model for m in conv.messages if m.role == "assistant")


@pytest.mark.shared
def test_shared_session_cli(shared_transcripts, capsys):
    if not SHARED.exists():
        pytest.skip(f"{SHARED} not found")
    assert main(["inspect", str(SHARED), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["format"] == "gemini-cli" and rep["messages"] == len(formats.load(SHARED).conversation().messages)
    assert main(["replay", str(SHARED), "--compare", "--check"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["replay", str(SHARED), "--recorded", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["totals"]["calls"] == raw_counts(SHARED)["usage"] and doc["totals"]["unpriced_calls"] == 0
    assert doc["fidelity"]["structural"]["calls"] == doc["totals"]["calls"]
