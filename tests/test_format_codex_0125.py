"""Codex CLI / Codex Desktop rollouts as 0.125 writes them (``ctxlab/io/formats/codex.py``).

The fixtures are invented, shaped after openai/codex ``codex-rs/protocol`` (``RolloutItem``,
``SessionMeta.dynamic_tools``, ``CompactedItem``, ``ResponseItem::Compaction``, ``TokenUsage``) and
``codex-rs/core/src/rollout/replay.rs`` (how a compaction replaces the history): a Desktop rollout
whose first prompt is only an ``event_msg/user_message``, dynamic tools (one deferred), encrypted
reasoning, ``exec_command`` / ``apply_patch`` / hosted web search, a recorded ``cache_write_tokens``,
a remote compaction (its replacement history, an encrypted summary item, Codex's estimate of the new
history), a rollback; an older local compaction without a replacement history; a damaged copy.
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
from ctxlab.interactions import find_orphans
from ctxlab.messages import ImagePart, TextPart, ThinkingPart, ToolCallPart, ToolSpec
from ctxlab.views import compacted_view

FIX = Path(__file__).resolve().parent / "fixtures" / "formats"
DESKTOP, OLD, BAD = (FIX / f"codex_0125_{n}.jsonl" for n in ("desktop", "old_compaction", "bad"))
SHARED_DIR = SHARED_TRANSCRIPTS / "codex-cli"
SHARED = next(iter(sorted(SHARED_DIR.glob("rollout-*.jsonl"))), SHARED_DIR / "missing.jsonl")
shared = pytest.mark.skipif(not SHARED.is_file(), reason=f"shared Codex rollout not found in {SHARED_DIR}")
SID = "019f0000-1111-7222-8333-0000000c0125"


@pytest.fixture(scope="module")
def conv():
    return formats.load(DESKTOP).conversation()


# ---------------------------------------------------------------- the invented 0.125 rollout

def test_detected_and_read_in_line_order(conv):
    assert all(formats.detect(p) == "codex" for p in (DESKTOP, OLD, BAD))
    assert conv.id == SID and conv.model == "gpt-5.5" and conv.provider == "openai"
    assert kinds(conv) == [
        ("user", "system"), ("user", None), ("assistant", None), ("tool", None), ("assistant", None), ("tool", None),
        ("assistant", None), ("user", None), ("assistant", None),
        ("entry", "compaction"), ("user", "compact_summary"), ("user", "compact_summary"),
        ("user", None), ("assistant", None), ("tool", None), ("assistant", None)]
    assert find_orphans(conv.messages) == []


def test_system_prompt_and_dynamic_tools(conv):
    assert conv.system[0] == "You are Codex, a coding agent. Work in small, checked steps."
    assert conv.system[1].startswith("<permissions instructions>")  # the developer message before the first item
    assert conv.tools == (ToolSpec("open_ticket", "Open the ticket with the given id.",
                                   {"type": "object", "properties": {"id": {"type": "string", "description": "Ticket id"}},
                                    "required": ["id"]}),)
    assert "1 dynamic tool(s) loaded on demand, not in the tool list sent: search_wiki" in conv.notes
    assert any(n.startswith("Codex's built-in tool definitions") for n in conv.notes)


def test_prompt_kept_only_as_an_event_is_read_once(conv):
    users = [m for m in conv.messages if m.role == "user" and m.origin is None]
    assert [m.text for m in users] == ["Why does the oven timer test fail?", "Now add a test for 90 seconds.",
                                       "Run the whole suite."]
    assert users[0].source.line == 6 and isinstance(users[0].parts[1], ImagePart)  # the pasted image, by size
    assert "1 user prompt(s) read from event_msg/user_message lines: no response item holds them" in conv.notes
    assert ("left out 2 'event_msg/user_message (a copy of the prompt's response item)' line(s): "
            "not part of the model's context") in conv.notes


def test_calls_of_three_kinds_and_encrypted_reasoning(conv):
    first, second = [m for m in conv.messages if m.role == "assistant"][:2]
    assert first.parts[0] == ThinkingPart("", "gAAAAB-opaque-reasoning-1", redacted=True)
    assert first.parts[1] == ToolCallPart("call_pytest", "exec_command", '{"cmd":"pytest tests/test_timer.py -q"}')
    hosted, patch = second.parts
    assert isinstance(hosted, TextPart) and json.loads(hosted.text)["type"] == "web_search_call"
    assert patch.name == "apply_patch" and patch.arguments.startswith("*** Begin Patch\n")
    assert [m.tool_name for m in conv.messages if m.role == "tool"] == ["exec_command", "apply_patch", "open_ticket"]
    assert "1 reasoning item(s) hold only encrypted_content: kept as redacted thinking, counted as 0 tokens" in conv.notes
    assert any(n.startswith("1 hosted 'web_search_call' item(s): OpenAI ran them") for n in conv.notes)


def test_token_counts_with_a_recorded_cache_write(conv):
    rows = [(m.usage.uncached_input_tokens, m.usage.cache_read_tokens, m.usage.cache_write_tokens, m.usage.output_tokens)
            for m in conv.messages if m.role == "assistant"]
    assert rows == [(40, 0, 8960, 120), (440, 8960, 0, 80), (256, 9344, 0, 30), (328, 9472, 0, 25),
                    (3300, 0, 0, 20), (72, 3328, 0, 18)]
    first = next(m for m in conv.messages if m.role == "assistant")
    assert first.usage.total_input_tokens == 9000 and first.usage.raw["cache_write_tokens"] == 8960


def test_remote_compaction_replacement_history_is_the_history(conv):
    (comp,) = conv.entries
    assert comp.data["summary"] == "" and comp.data["tokens_before"] == 9825 and comp.data["tokens_after"] == 3100
    pinned = [next(m for m in conv.messages if m.id == i) for i in comp.data["pinned_ids"]]
    assert [p.text.split("\n")[0] for p in pinned] == ["<environment_context>", "Now add a test for 90 seconds."]
    view, entry, _ = compacted_view(conv)
    assert entry is comp
    assert [(m.role, m.origin) for m in view.messages][:5] == [
        ("user", "compact_summary"), ("user", "system"), ("user", None), ("user", "compact_summary"),
        ("user", "compact_summary")]
    opaque = view.messages[4]
    assert opaque.parts == (ThinkingPart("", "gAAAAB-opaque-summary-of-the-first-turns", redacted=True),)
    assert view.messages[3].text == "Why does the oven timer test fail? [image]"  # re-written: matches nothing earlier
    note = next(n for n in conv.notes if n.startswith("line 25: compaction: its replacement history"))
    assert note.endswith("2 pinned, 1 system prompt, 1 new, 1 encrypted, 1 ghost snapshot")
    assert any("encrypted 'compaction' item (40 chars of encrypted_content)" in n for n in conv.notes)
    assert "left out 1 'event_msg/token_count estimating the history (no model call)' line(s): " \
           "not part of the model's context" in conv.notes


def test_rollback_is_noted(conv):
    assert any(n.startswith("line 35: the user rolled back 1 turn(s)") for n in conv.notes)


def test_old_local_compaction_without_replacement_history():
    conv = formats.load(OLD).conversation()
    (comp,) = conv.entries
    texts = [next(m for m in conv.messages if m.id == i).text[:12] for i in comp.data["pinned_ids"]]
    assert texts == ["<environment", "Third task."]  # the second prompt alone is over Codex's 20,000-token budget
    assert any("1 of 3 earlier prompt(s) and 1 context message(s) sent again" in n for n in conv.notes)
    view, _, _ = compacted_view(conv)
    assert [m.text[:12] for m in view.messages][1:] == ["<environment", "Third task.", "Fourth task.", "Done with th"]


# ---------------------------------------------------------------- damaged files

def test_bad_lines_strict_names_file_line_and_field():
    with pytest.raises(TranscriptError) as err:
        formats.load(BAD)
    assert str(err.value) == ("codex_0125_bad.jsonl:1: field 'payload.dynamic_tools[0].name': field required. "
                              "Fix the line or load with strict=False to skip it.")


def test_bad_lines_lenient_are_noted():
    t = formats.load(BAD, strict=False)
    assert [n.split(":")[0] for n in t.notes] == ["skipped line 1", "skipped line 4", "skipped line 8", "skipped line 9"]
    assert "field 'payload.message': a user_message event needs the prompt text" in t.notes[1]
    assert "2000 cache-write tokens exceed the 1000 input tokens not read from the cache" in t.notes[2]
    assert "field 'payload.replacement_history[0]'" in t.notes[3]
    assert [m.role for m in t.conversation().messages] == ["user", "user", "assistant"]


def test_damaged_copy_of_the_shared_file(tmp_path):
    if not SHARED.is_file():
        pytest.skip("shared Codex rollout not found")
    lines = SHARED.read_text(encoding="utf-8").splitlines()
    lines[9] = lines[9][:40]  # cut a token count in half
    path = tmp_path / "damaged.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(TranscriptError) as err:
        formats.load(path)
    assert err.value.line == 10 and "not valid JSON" in str(err.value)
    t = formats.load(path, strict=False)
    assert t.notes[0].startswith("skipped line 10: not valid JSON")
    assert sum(1 for m in t.conversation().messages if m.role == "assistant") > 0


# ---------------------------------------------------------------- the real rollout

@pytest.mark.shared
@shared
def test_shared_rollout_counts_match_the_raw_file():
    rows = [json.loads(line) for line in SHARED.read_text(encoding="utf-8").splitlines() if line.strip()]
    items = [r["payload"] for r in rows if r["type"] == "response_item"]
    prompts = [p for p in items if p.get("role") == "user"]
    prompt_texts = {c["text"] for p in prompts for c in p["content"] if c.get("type") == "input_text"}
    only_events = [r for r in rows if r["type"] == "event_msg" and r["payload"]["type"] == "user_message"
                   and r["payload"]["message"] not in prompt_texts]
    counts, previous = [], None  # token counts of model calls: with usage, changed totals, not an estimate
    for r in rows:
        p = r["payload"]
        if r["type"] == "event_msg" and p["type"] == "token_count" and p["info"]:
            last = p["info"]["last_token_usage"]
            if p["info"]["total_token_usage"] != previous and (last["input_tokens"] or last["output_tokens"]):
                counts.append(last)
            previous = p["info"]["total_token_usage"]
    conv = formats.load(SHARED).conversation()
    msgs = conv.messages
    assert sum(1 for m in msgs if m.role == "user") == len(prompts) + len(only_events)
    assistants = [m for m in msgs if m.role == "assistant"]
    assert len(assistants) == len(counts) and all(m.usage for m in assistants)
    assert sum(m.usage.total_input_tokens for m in assistants) == sum(c["input_tokens"] for c in counts)
    assert sum(m.usage.cache_read_tokens for m in assistants) == sum(c["cached_input_tokens"] for c in counts)
    assert sum(m.usage.output_tokens for m in assistants) == sum(c["output_tokens"] for c in counts)
    calls = [p for p in items if p.get("type") in ("function_call", "custom_tool_call")]
    outputs = [p for p in items if p.get("type") in ("function_call_output", "custom_tool_call_output")]
    assert sum(len(m.tool_calls) for m in msgs) == len(calls)
    assert sum(1 for m in msgs if m.role == "tool") == len(outputs) and find_orphans(msgs) == []
    encrypted = sum(1 for p in items if p.get("type") == "reasoning" and not p.get("summary"))
    hosted = sum(1 for p in items if p.get("type") == "web_search_call")
    assert f"{encrypted} reasoning item(s) hold only encrypted_content: kept as redacted thinking, counted as 0 " \
           "tokens" in conv.notes
    assert any(n.startswith(f"{hosted} hosted 'web_search_call' item(s)") for n in conv.notes)
    base = rows[0]["payload"]["base_instructions"]["text"]
    assert conv.system[0] == base and conv.model == next(r["payload"]["model"] for r in rows if r["type"] == "turn_context")


@pytest.mark.shared
@shared
def test_shared_rollout_through_the_cli(capsys):
    """``inspect`` reads the shared rollout with no orphan; ``replay --compare --check`` on it is
    test_shared_compare_check.py's (every shared file)."""
    code, out, err = run(capsys, "inspect", str(SHARED), "--json")
    assert code == 0, err
    rep = json.loads(out)
    assert rep["format"] == "codex" and rep["orphans"] == []


@pytest.mark.parametrize("path", [DESKTOP, OLD], ids=lambda p: p.name)
def test_fixtures_through_the_cli(path, capsys):
    code, out, err = run(capsys, "inspect", str(path), "--json")
    assert code == 0, err
    code, out, err = run(capsys, "replay", str(path), "--compare", "--check")
    assert code == 0, err


def test_reader_never_writes_the_file(tmp_path):
    path = tmp_path / DESKTOP.name
    shutil.copy(DESKTOP, path)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    formats.load(path)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
