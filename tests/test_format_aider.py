"""The aider chat-log reader (``ctxlab/io/formats/aider.py``) on ``.aider.chat.history.md`` files.

Fixtures are invented, written the way aider's ``InputOutput`` writes its log (two-space line ends,
``#### `` prompts, ``> `` terminal lines, multi-line ``tool_output`` quoting only its first line): a
recent session (reasoning tags, lint reflection, command output, ``/model``, rounded usage with cache
figures), a 2024 one (comma figures, a cache hit larger than ``sent``, an edit-format error, ``<think>``),
an empty one with the same start time, a log whose start was cut, and a bad header.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from helpers import run
from conftest import SHARED_TRANSCRIPTS, shared_transcript_files
from ctxlab.io import formats
from ctxlab.base.errors import TranscriptError
from ctxlab.io.formats import aider
from ctxlab.messages import Message, ThinkingPart

FIX = Path(__file__).resolve().parent / "fixtures" / "formats"
MINE = ("aider_chat_history.md", "aider_cut.md", "aider_bad.md")
SHARED = SHARED_TRANSCRIPTS / "aider" / "aider-chat-history.md"


def usage(m):
    u = m.usage
    return (u.uncached_input_tokens, u.cache_read_tokens, u.cache_write_tokens, u.output_tokens)


@pytest.fixture(scope="module")
def log():
    return formats.load(FIX / "aider_chat_history.md")


# ---------------------------------------------------------------- detection

@pytest.mark.parametrize("name", MINE)
def test_fixtures_detected_as_aider(name):
    assert "aider" in formats.names() and "aider" not in formats.UNAVAILABLE
    assert formats.detect(FIX / name) == "aider"


@pytest.mark.parametrize("path", sorted(p for p in FIX.iterdir() if not p.name.startswith("aider_")),
                         ids=lambda p: p.name)
def test_sniff_claims_no_other_fixture(path):
    assert not aider.sniff(path, formats._head(path))


@pytest.mark.shared
@pytest.mark.parametrize("path", [p for p in shared_transcript_files() if p.parent.name != "aider"],
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_sniff_claims_no_other_shared_file(path):
    assert not aider.sniff(path, formats._head(path))


def test_a_markdown_file_is_not_enough(tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("# Meeting notes\n\n#### agenda  \n\n> quoted  \n\naider chat started at 2024-01-01\n",
                     encoding="utf-8")
    assert not aider.sniff(notes, formats._head(notes))
    quoted = tmp_path / "quoted.json"  # the header inside a JSON string is not a line of its own
    quoted.write_text(json.dumps({"text": "\n# aider chat started at 2024-01-01 10:00:00\n\n#### hi  \n"}),
                      encoding="utf-8")
    assert not aider.sniff(quoted, formats._head(quoted))


# ---------------------------------------------------------------- one section per session

def test_each_header_is_a_conversation(log):
    assert [c.id for c in log.conversations] == ["2025-03-04 09:15:02", "2024-08-10 14:02:11", "2024-08-10 14:02:11#2"]
    assert log.conversations[0].title == "aider chat started at 2025-03-04 09:15:02"
    assert [c.model for c in log.conversations] == ["anthropic/claude-3-7-sonnet-20250219",
                                                    "claude-3-5-sonnet-20240620", "claude-3-5-sonnet-20240620"]
    assert all(c.system == () and c.tools == () for c in log.conversations)
    assert all(c.notes[0] == aider._UNKNOWN for c in log.conversations)
    empty = log.conversations[2]
    assert [(m.role, m.origin) for m in empty.messages] == [("user", "meta")]


def test_prompts_commands_and_terminal_lines(log):
    conv = log.conversations[0]
    prompts = [m for m in conv.messages if m.role == "user" and m.origin is None]
    assert [m.text for m in prompts] == ["make greet() take a name\nand print a greeting for it",
                                         "explain the change in two lines"]
    commands = [m.text for m in conv.messages if m.text.startswith(("/", "<blank>")) and m.origin == "meta"]
    assert commands == ["/home/dev/.local/bin/aider --model sonnet\nAider v0.75.1\nMain model: "
                        "anthropic/claude-3-7-sonnet-20250219 with diff edit format, infinite output\nWeak model: "
                        "anthropic/claude-3-5-haiku-20241022\nGit repo: .git with 12 files\nRepo-map: using 4096 "
                        "tokens, auto refresh", "/add greet.py", "/run python -c 'import greet; greet.greet(\"Ada\")'",
                        "/model gpt-4o", "<blank>", "/clear"]
    assert prompts[0].source.line == 14 and prompts[0].id == "2025-03-04 09:15:02:14"
    for note in ("1 file(s) added to the chat: their content went to the model, not in the log",
                 "1 /clear or /reset: aider dropped the messages before it; kept here"):
        assert note in conv.notes


def test_replies_thinking_search_replace_and_model_change(log):
    conv = log.conversations[0]
    replies = [m for m in conv.messages if m.role == "assistant"]
    assert len(replies) == 3 and all(m.origin is None for m in replies)
    first = replies[0]
    assert first.parts[0] == ThinkingPart("greet() has no parameter yet; one SEARCH/REPLACE block is enough.")
    assert first.text.startswith("I'll add a `name` parameter.") and "<<<<<<< SEARCH" in first.text
    assert first.text.endswith(">>>>>>> REPLACE\n```")
    last = replies[2]
    assert "> `greet(name)` prints" in last.text and "#### Why" in last.text  # a quote and a heading of the reply
    assert [(e.kind, e.data["model"]) for e in conv.entries] == [("model_change", "gpt-4o")]
    assert [m.model for m in replies] == ["anthropic/claude-3-7-sonnet-20250219"] * 2 + ["gpt-4o"]
    old = log.conversations[1].messages[2]
    assert old.parts[0] == ThinkingPart("The user wants a rename.") and old.text.startswith("helpers.py")


def test_what_aider_sent_back_is_origin_system(log):
    conv, old = log.conversations[0], log.conversations[1]
    sent = [m.text for m in conv.messages + old.messages if m.origin == "system"]
    assert sent == ["# Fix any errors below, if possible.\n\n## Running: flake8 greet.py\n\ngreet.py:4:1: W391 blank "
                    "line at end of file",
                    "hello Ada\n\n    \nexit status 0",  # multi-line tool_output: only its first line was quoted
                    "# 1 SEARCH/REPLACE block failed to match!\n\n## SearchReplaceNoExactMatch: This SEARCH block "
                    "failed to exactly match lines in helpers.py"]
    shown = [m for m in conv.messages if m.origin == "meta" and m.text.startswith("Tokens: 2.9k")][0]
    assert "Attempt to fix lint errors? (Y)es/(N)o [Yes]: y" in shown.text and "# Fix any" not in shown.text


def test_usage_reports_rounded_and_cache_variants(log):
    conv, old = log.conversations[0], log.conversations[1]
    replies = [m for m in conv.messages if m.role == "assistant"]
    assert [usage(m) for m in replies] == [(200, 2700, 0, 118), (1000, 1200, 9800, 310), (1650, 0, 0, 51)]
    assert replies[1].usage.raw["report"].startswith("Tokens: 12k sent, 9.8k cache write")
    assert replies[0].usage.raw["rounded"] and not replies[2].usage.raw["rounded"]
    assert "usage from aider's rounded 'Tokens:' reports (0.1k / 1k steps)" in conv.notes
    # 2024: a cache hit larger than 'sent' cannot be inside it
    assert [usage(m) for m in old.messages if m.role == "assistant"] == [(194, 9474, 0, 40), (1321, 0, 0, 47)]
    assert aider.report_usage("Tokens: 529 sent, 90 received, cache costs not included.").output_tokens == 90
    assert aider.report_usage("Applied edit to greet.py") is None


def test_cut_log_keeps_the_text_before_the_first_header():
    t = formats.load(FIX / "aider_cut.md")
    assert [c.id for c in t.conversations] == ["preamble", "2025-01-02 08:00:00"]
    pre = t.conversations[0]
    assert [(m.role, m.origin) for m in pre.messages] == [("user", "synthetic"), ("assistant", None), ("user", "meta")]
    assert pre.messages[0].text == aider.NO_PROMPT and usage(pre.messages[1]) == (880, 0, 0, 75)
    assert any(n.startswith("1 reply(ies) with no prompt before them in the log") for n in pre.notes)
    assert t.conversations[1].model == "gpt-4o-mini" and usage(t.conversations[1].messages[2]) == (900, 0, 0, 8)


# ---------------------------------------------------------------- damaged files

def test_bad_header_strict_and_lenient():
    with pytest.raises(TranscriptError) as err:
        formats.load(FIX / "aider_bad.md")
    assert (err.value.file, err.value.line, err.value.field) == ("aider_bad.md", 9, "header")
    assert "'2025-02-30 25:61:00' is not a date" in err.value.problem
    t = formats.load(FIX / "aider_bad.md", strict=False)
    note = "skipped line 9: field 'header': the session start '2025-02-30 25:61:00' is not a date and time."
    assert t.notes == (note,) and note in t.conversations[1].notes
    assert [m.text for m in t.conversations[1].messages] == ["still there?", "Yes."]


def test_bytes_that_are_not_utf8(tmp_path):
    bad = tmp_path / ".aider.chat.history.md"
    data = (FIX / "aider_chat_history.md").read_bytes().replace(b"explain the change", b"explain the \xff change")
    bad.write_bytes(data)
    with pytest.raises(TranscriptError) as err:
        formats.load(bad)
    assert err.value.line == 76 and "not UTF-8" in err.value.problem
    t = formats.load(bad, strict=False)
    assert t.notes[0].startswith("skipped line 76: not UTF-8") and "U+FFFD" in t.notes[0]
    assert "explain the \ufffd change in two lines" in [m.text for m in t.conversations[0].messages]
    assert t.notes[0] in t.conversations[0].notes and t.notes[0] not in t.conversations[1].notes
    assert bad.read_bytes() == data  # never written


# ---------------------------------------------------------------- the shared log, counted independently

def raw_counts(path: Path) -> dict:
    lines = path.read_text(encoding="utf-8").split("\n")
    at = [k for k, x in enumerate(lines) if re.fullmatch(r"# aider chat started at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d", x)]
    empty = sum(not any(x.strip() for x in lines[a + 1:b]) for a, b in zip(at, at[1:] + [len(lines)]))
    prompts, commands, previous, blanks = 0, 0, "", 0
    for x in lines:
        is_user = x.startswith("####") and (x.endswith("  ") or (x.startswith("#### ") and blanks >= 2))
        if is_user and not previous:
            body = x[5:].strip()
            commands += body.startswith(("/", "!")) or body == "<blank>"
            prompts += 1
        previous = "user" if is_user else ""
        blanks = blanks + 1 if not x.strip() else 0
    reports = [x for x in lines if x.startswith("> Tokens: ") and " sent" in x]
    received = [int(float(n.replace(",", "").rstrip("k")) * (1000 if n.endswith("k") else 1))
                for n in (re.search(r"([\d.,]+k?) received", x).group(1) for x in reports)]
    return {"headers": len(at), "empty": empty, "prompts": prompts, "commands": commands, "reports": len(reports),
            "received": received}


@pytest.fixture(scope="module")
def shared():
    if not SHARED.is_file():
        pytest.skip(f"shared transcript absent: {SHARED}")
    return formats.load(SHARED)


@pytest.mark.shared
def test_shared_log_counts_match_the_raw_file(shared):
    t = shared
    raw = raw_counts(SHARED)
    # the file starts before its first header; sessions with nothing after their header are left out
    assert len(t.conversations) == raw["headers"] + 1 - raw["empty"] == 984
    assert t.notes == ()
    said = [int(n.split()[2]) for c in t.conversations for n in c.notes if n.startswith("left out ")]
    assert sum(said) == raw["empty"] == 150
    msgs = [m for c in t.conversations for m in c.messages]
    typed = [m for m in msgs if m.role == "user" and m.text and m.origin in (None, "meta")
             and not m.id.endswith(":sent")]
    by = Counter((m.role, m.origin) for m in msgs)
    assert by[("user", None)] == raw["prompts"] - raw["commands"]
    with_usage = [m for m in msgs if m.usage is not None]
    unattached = sum(int(n.split()[0]) for c in t.conversations for n in c.notes if "usage report(s)" in n)
    assert len(with_usage) + unattached == raw["reports"]
    assert all(m.role == "assistant" and m.origin is None for m in with_usage)
    assert by[("assistant", None)] >= len(with_usage) and by[("assistant", "meta")] == 0
    assert sum(m.usage.output_tokens for m in with_usage) <= sum(raw["received"])
    assert len(typed) > 0 and by[("user", "system")] > 0
    assert sum(isinstance(i, Message) and i.role == "tool" for c in t.conversations for i in c.items) == 0


@pytest.mark.shared
def test_shared_log_through_the_cli(capsys, shared):
    code, out, err = run(capsys, "inspect", str(SHARED), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["format"] == "aider" and len(doc["conversations"]) == 984 and doc["orphans"] == []
    code, out, err = run(capsys, "replay", str(SHARED), "--compare", "--check", "--conversation", "8")
    assert code == 0, err
    assert "every strategy replayed" in out
    code, out, err = run(capsys, "replay", str(SHARED), "--recorded", "--conversation", "8", "--json")
    assert code == 0, err
    assert json.loads(out)["totals"]["calls"] == 10


def test_reader_never_writes_the_file(tmp_path):
    copy = tmp_path / ".aider.chat.history.md"
    shutil.copy(FIX / "aider_chat_history.md", copy)
    before = copy.read_bytes()
    formats.load(copy)
    assert copy.read_bytes() == before


def test_a_usage_report_cut_short_is_noted(tmp_path):
    # a log that ends inside aider's "> Tokens:" line: the reply keeps no usage, and the notes say where
    path = tmp_path / "cut.md"
    path.write_text("# aider chat started at 2025-01-02 10:00:00\n\n#### fix it  \n\nDone.\n\n> Tokens: 6,75",
                    encoding="utf-8")
    conv = formats.load(path).conversation()
    reply = [m for m in conv.messages if m.role == "assistant"]
    assert len(reply) == 1 and reply[0].usage is None
    assert any("'Tokens:' report(s) that could not be read (cut short?), first at cut.md:7" in n for n in conv.notes)
