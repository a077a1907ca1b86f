"""Claude Code 2.x transcripts (``ctxlab/io/formats/claude_code.py``): today's JSONL, and the 1.x file still read.

The fixtures are invented, shaped like the 2.x lines the parsers cited in the reader's docstring
document: a response split over one line per content block (parallel tool calls chained through a
``progress`` line, each result hung under its own tool_use line), a Task whose sub-agent messages
arrive as ``agent_progress`` copies, hook / stop-hook / turn-duration / attachment / queue lines, a
local command with its ``isMeta`` caveat, a real rewind (two prompts under one parent), an automatic
compaction, an ``ai-title``; and a damaged copy.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from helpers import kinds, run
from conftest import SHARED_TRANSCRIPTS
from ctxlab.io import formats
from ctxlab.base.errors import TranscriptError
from ctxlab.io.formats import claude_code
from ctxlab.interactions import find_orphans
from ctxlab.messages import TextPart, ThinkingPart, ToolCallPart
from ctxlab.tables.profiles import profile_for
from ctxlab.views import compacted_view
from ctxlab.tokens import MessageMeter, infer_static_head

FIX = Path(__file__).resolve().parent / "fixtures" / "formats"
SESSION, BAD = FIX / "claude_code_2x_session.jsonl", FIX / "claude_code_2x_bad.jsonl"
SHARED_2X = SHARED_TRANSCRIPTS / "claude-code-2x"
SHARED_FILES = sorted(SHARED_2X.glob("*.jsonl")) + sorted((SHARED_TRANSCRIPTS / "claude-code-viewer").glob("*.jsonl"))
shared = pytest.mark.skipif(not SHARED_2X.is_dir(), reason=f"shared transcripts not found at {SHARED_2X}")


@pytest.fixture(scope="module")
def conv():
    return formats.load(SESSION).conversation()


# ---------------------------------------------------------------- the invented 2.x session

def test_detected_and_read_in_line_order(conv):
    assert formats.detect(SESSION) == formats.detect(BAD) == "claude-code"
    assert conv.id == "cc2x-0001" and conv.title == "Fix price rounding" and conv.model == "claude-opus-4-6"
    assert kinds(conv) == [
        ("user", None), ("assistant", None), ("tool", None), ("tool", None),  # parallel calls: one turn
        ("assistant", None), ("user", None), ("assistant", None), ("tool", None), ("assistant", None),  # Task
        ("tool", None), ("assistant", None),
        ("user", claude_code.META_ORIGIN), ("user", None), ("user", None),  # the local command
        ("user", None), ("assistant", None), ("user", None), ("assistant", None), ("tool", None),  # the rewind
        ("entry", "compaction"), ("assistant", None), ("entry", "title")]
    assert conv.threads() == ("main", "sidechain-1") and conv.system == () and conv.tools == ()


def test_split_response_is_one_turn_with_its_usage_once(conv):
    (a,) = [m for m in conv.messages if m.response_id == "msg_A"]
    assert [type(p) for p in a.parts] == [TextPart, ThinkingPart, ToolCallPart, ToolCallPart]
    assert a.parts[1] == ThinkingPart("Glob first, then read.", "sig-A")
    assert a.call_ids == ("toolu_glob", "toolu_read") and (a.id, a.source.line) == ("a1", 4)
    u = a.usage
    assert (u.uncached_input_tokens, u.cache_write_tokens, u.cache_read_tokens, u.output_tokens) == (3, 4000, 12000, 90)
    assert a.stop_reason is None  # 2.x records none
    glob, read = [m for m in conv.messages if m.tool_call_id in a.call_ids]
    assert (glob.tool_name, read.tool_name) == ("Glob", "Read") and find_orphans(conv.thread("main").messages) == []
    # one usage row per response: as many as distinct message ids, not lines
    assert sum(1 for m in conv.messages if m.usage) == 8


def test_parallel_calls_are_not_forks_but_the_rewind_is(conv):
    forks = [n for n in conv.notes if "forks at" in n]
    assert forks == ["the main thread forks at 1 point(s) (edits, rewinds or regenerated answers); "
                     "all branches kept in line order"]


def test_meta_lines_are_sent_and_not_folded_into_the_head(conv):
    meta = [m for m in conv.messages if m.origin == claude_code.META_ORIGIN]
    assert [m.id for m in meta] == ["m1"] and meta[0].text.startswith("<local-command-caveat>")
    assert any("1 isMeta user message(s)" in n for n in conv.notes)
    # a caveat before the first call: counted with the messages, so the inferred head does not hold it
    moved = conv.__class__(conv.id, (meta[0], *conv.items), model=conv.model, provider=conv.provider)
    meter = MessageMeter(profile_for(conv.model, conv.provider))
    head, head_moved = infer_static_head(conv, meter), infer_static_head(moved, meter)
    assert head_moved.counted_message_tokens == head.counted_message_tokens + meter.message(meta[0])
    assert head_moved.tokens == head.tokens - meter.message(meta[0])


def test_sub_agent_from_agent_progress_is_a_thread(conv):
    side = conv.thread("sidechain-1").messages
    assert [(m.role, m.id) for m in side] == [("user", "s-u1"), ("assistant", "s-a1"), ("tool", "s-u2"),
                                             ("assistant", "s-a2")]
    assert side[1].model == "claude-haiku-4-5-20251001" and side[1].usage.cache_write_tokens == 9000
    assert side[1].source.line == 14 and find_orphans(side) == []
    assert any(n.startswith("sidechain-1: sub-agent 'ag7', 4 message line(s)") for n in conv.notes)


def test_compaction_boundary_and_summary_are_one_recorded_entry(conv):
    (comp,) = [e for e in conv.entries if e.kind == "compaction"]
    assert comp.id == "k1" and comp.data["tokens_before"] == 150123 and comp.data["origin"] == "recorded"
    assert comp.data["first_kept_id"] is None and comp.data["summary"].startswith("This session is being continued")
    view, entry, _ = compacted_view(conv.thread("main"))
    assert entry is comp and [m.id for m in view.messages] == ["summary:k1", "f1"]
    assert "line 31: compaction (auto, 150123 tokens before it): nothing from before it is sent again but its summary" \
        in conv.notes


def test_ui_lines_are_left_out_and_counted(conv):
    for kind, n in (("file-history-snapshot", 1), ("progress/hook_progress", 3), ("system/stop_hook_summary", 1),
                    ("system/turn_duration", 1), ("queue-operation", 1), ("attachment/hook_success", 1)):
        assert any(note.startswith(f"left out {n} '{kind}' line(s) (first at line ") and
                   note.endswith("): UI records, not sent to the model") for note in conv.notes), kind


# ---------------------------------------------------------------- damaged files

def test_bad_lines_strict_names_file_line_and_field():
    with pytest.raises(TranscriptError) as err:
        formats.load(BAD)
    assert str(err.value) == ("claude_code_2x_bad.jsonl:2: field 'message.content[0].name': field required. "
                              "Fix the line or load with strict=False to skip it.")


def test_bad_lines_lenient_are_noted():
    t = formats.load(BAD, strict=False)
    assert t.notes == ("skipped line 2: field 'message.content[0].name': field required.",
                       "skipped line 3: field 'data.agentId': an agent_progress line needs the sub-agent's id.",
                       "skipped line 4: not valid JSON (Unterminated string starting at column 75).")
    assert [m.id for m in t.conversation().messages] == ["u1", "f1"] and set(t.notes) <= set(t.conversation().notes)


def test_damaged_progress_copy_names_the_field_inside_the_line(tmp_path):
    rows = [json.loads(line) for line in SESSION.read_text(encoding="utf-8").splitlines()]
    g2 = next(i for i, o in enumerate(rows) if o.get("uuid") == "g2")
    del rows[g2]["data"]["message"]["message"]["content"][0]["name"]
    path = tmp_path / "copy.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in rows), encoding="utf-8")
    with pytest.raises(TranscriptError) as err:
        formats.load(path)
    assert (err.value.line, err.value.field) == (g2 + 1, "data.message.message.content[0].name")
    conv = formats.load(path, strict=False).conversation()
    assert [m.id for m in conv.thread("sidechain-1").messages] == ["s-u1", "s-u2", "s-a2"]
    assert conv.notes[0].startswith(f"skipped line {g2 + 1}: field 'data.message.message.content[0].name'")


# ---------------------------------------------------------------- the real files

def raw_counts(path: Path) -> dict:
    """Counted from the raw JSON lines, without the reader: per thread (main / sidechain root / agentId)."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    side_root: dict[str, str] = {}  # uuid -> sidechain root uuid
    messages = []  # (thread, line object)
    for o in rows:
        if o.get("type") in ("user", "assistant"):
            if o.get("isSidechain"):
                root = side_root.get(o.get("parentUuid")) or o["uuid"]
                side_root[o["uuid"]] = root
                messages.append((f"side:{root}", o))
            else:
                messages.append(("main", o))
        elif o.get("type") == "progress" and o["data"].get("type") == "agent_progress":
            messages.append((f"agent:{o['data']['agentId']}", o["data"]["message"]))
    turns = {(t, o["message"]["id"]) for t, o in messages if o["type"] == "assistant"}
    blocks = [(t, o, b) for t, o in messages if isinstance(o["message"]["content"], list) for b in o["message"]["content"]]
    uses = [b["id"] for _, o, b in blocks if b.get("type") == "tool_use"]
    results = [b["tool_use_id"] for _, o, b in blocks if b.get("type") == "tool_result"]
    return {"threads": {t for t, _ in messages}, "turns": turns, "uses": uses, "results": results,
            "unanswered": set(uses) - set(results), "meta": sum(1 for _, o in messages if o.get("isMeta")),
            "compactions": sum(1 for o in rows if o.get("subtype") == "compact_boundary"),
            "usage": {(t, o["message"]["id"]) for t, o in messages if o["type"] == "assistant" and o["message"].get("usage")}}


@pytest.mark.shared
@shared
@pytest.mark.parametrize("path", SHARED_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_shared_counts_match_the_raw_file(path):
    raw = raw_counts(path)
    conv = formats.load(path).conversation()
    assert len(conv.threads()) == len(raw["threads"])
    assistants = [m for m in conv.messages if m.role == "assistant"]
    assert len(assistants) == len(raw["turns"])  # one turn per message.id per thread
    assert sum(1 for m in assistants if m.usage) == len(raw["usage"])  # usage once per response
    assert sum(len(m.tool_calls) for m in conv.messages) == len(raw["uses"])
    assert sum(1 for m in conv.messages if m.role == "tool") == len(raw["results"])
    unanswered = {o.call_id for t in conv.threads() for o in find_orphans(conv.thread(t).messages)
                  if o.kind == "call_without_result"}
    assert unanswered == raw["unanswered"]
    assert Counter(m.origin for m in conv.messages)[claude_code.META_ORIGIN] == raw["meta"]
    assert sum(1 for e in conv.entries if e.kind == "compaction") == raw["compactions"]
    assert not any("forks at" in n for n in conv.notes)  # parallel calls split over lines are one turn
    per_thread = defaultdict(int)
    for m in assistants:
        per_thread[m.thread] += 1
    assert sum(per_thread.values()) == len(raw["turns"])


@pytest.mark.shared
@shared
def test_shared_2x_compaction_and_sub_agents():
    path = SHARED_2X / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    conv = formats.load(path).conversation()
    (boundary,) = [o for o in rows if o.get("subtype") == "compact_boundary"]
    (comp,) = [e for e in conv.entries if e.kind == "compaction"]
    assert comp.data["tokens_before"] == boundary["compactMetadata"]["preTokens"]
    summary = next(o for o in rows if o.get("isCompactSummary"))["message"]["content"]
    assert comp.data["summary"] == summary and not any(m.text == summary for m in conv.messages)
    agents = {o["data"]["agentId"] for o in rows if o.get("type") == "progress" and o["data"]["type"] == "agent_progress"}
    assert len(conv.threads()) == 1 + len(agents)
    progress = Counter(o["data"]["type"] for o in rows if o.get("type") == "progress")
    for kind, n in progress.items():
        if kind != "agent_progress":
            assert any(note.startswith(f"left out {n} 'progress/{kind}' line(s) (first at line ") and
                       note.endswith("): UI records, not sent to the model") for note in conv.notes), kind


@pytest.mark.shared
@shared
@pytest.mark.parametrize("path", SHARED_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_shared_file_through_the_cli(path, capsys):
    """``inspect`` reads each shared Claude Code file with no orphan. ``replay --compare --check`` on the same
    files (exit 0, and the check's OK line) is test_shared_compare_check.py's, which runs it on every shared file."""
    code, out, err = run(capsys, "inspect", str(path), "--json")
    assert code == 0, err
    rep = json.loads(out)
    assert rep["format"] == "claude-code" and rep["orphans"] == []


def test_fixture_through_the_cli(capsys):
    code, out, err = run(capsys, "inspect", str(SESSION), "--json")
    assert code == 0, err
    assert json.loads(out)["conversations"][0]["messages"] == 20


def test_reader_never_writes_the_file(tmp_path):
    path = tmp_path / SESSION.name
    shutil.copy(SESSION, path)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    formats.load(path)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
