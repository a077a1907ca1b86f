"""The reader contract, checked for every reader on every file it reads: the committed fixtures
and, when they sit beside the project, the shared real transcripts.

Each reader's own test file checks its format's meaning (counts against the raw file, usage
fields, pairing). This file checks what every reader promises whatever the format:

1. detection names a registered reader, and the file reads in strict mode;
2. reading never changes the file (bytes and modification time);
3. every message and entry says where it came from: this file, a line inside it;
4. every recorded usage figure is a whole number of tokens, never negative;
5. a line damaged in a copy of a JSON Lines file is an error naming the file and that line in
   strict mode, and a note naming that line in lenient mode, with every other message kept;
   a JSON document cut short is an error naming the file (never a traceback);
6. what was read survives a round trip through a ctxlab session file unchanged;
7. ``inspect --json`` reads it (exit 0) and reports the same number of messages.

Checks 1 and 7 also hold what ``test_formats.py`` and ``test_cli.py`` once checked on every shared
transcript in tests of their own (a strict read of a shared file notes nothing; ``inspect --json``
gives every key and a token count): one read and one ``inspect`` per file instead of three.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from conftest import SHARED_TRANSCRIPTS, shared_transcript_files, skip_unless_a_reader_recognises
from ctxlab.io import formats
from ctxlab.cli.main import main
from ctxlab.base.errors import TranscriptError
from ctxlab.messages import Entry, Message, Usage
from ctxlab.io.session import Session

FIX = Path(__file__).resolve().parent / "fixtures" / "formats"
DAMAGED = '{"this line": "was cut sho'  # what a crash or a bad copy leaves: not JSON
INSPECT_KEYS = {"format", "conversations", "messages", "interactions", "orphans", "tokens"}  # test_cli.JSON_KEYS

# fixtures that are broken on purpose besides the *_bad ones, or that no reader reads by design
NOT_READABLE = {"unknown.json", "chat_no_ids_ambiguous.json"}


def fixture_files() -> list[Path]:
    return sorted(p for p in FIX.iterdir() if p.is_file() and "_bad" not in p.stem and p.name not in NOT_READABLE)


def broken_fixtures() -> list[Path]:
    return sorted(p for p in FIX.iterdir() if p.is_file() and ("_bad" in p.stem or p.name in NOT_READABLE))


SAMPLE = FIX.parents[2] / "data" / "sample_session.jsonl"  # the ctxlab-session reader's file


def files() -> list[Path]:
    return fixture_files() + [SAMPLE] + shared_transcript_files()


def label(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def fingerprint(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def is_json_lines(path: Path) -> bool:
    """Two or more non-blank lines, each a JSON object: a file a reader reads line by line."""
    lines = [line for line in path.read_text(encoding="utf-8-sig").splitlines() if line.strip()]
    if len(lines) < 2:
        return False
    try:
        return all(isinstance(json.loads(line), dict) for line in lines)
    except ValueError:
        return False


def message_keys(transcript) -> list[list[tuple]]:
    """Per conversation, what each message holds (ids and lines left out: readers may derive them
    from line numbers, which a damaged line inserted above shifts)."""
    return [[(m.role, m.parts, m.tool_call_id, m.usage) for m in c.messages] for c in transcript.conversations]


@pytest.fixture(scope="module", params=files(), ids=label)
def path(request) -> Path:
    """Module-scoped, so pytest runs every test of one file together and ``read`` loads it once."""
    return request.param


@pytest.fixture(scope="module")
def read(path):
    """(format name, transcript) of a readable file; an unknown format is skipped (issue 11).

    Read once per file for the tests below, which only look at it (a transcript is immutable;
    ``test_reading_never_changes_the_file`` and ``test_inspect_reads_it`` read the file themselves)."""
    name = skip_unless_a_reader_recognises(path)
    return name, formats.load(path)


def test_detected_as_a_registered_reader_and_read_strictly(path, read):
    name, transcript = read
    assert name in formats.names() and transcript.format == name
    assert transcript.file == path.name
    assert transcript.conversations and all(c.messages for c in transcript.conversations)
    if path.is_relative_to(SHARED_TRANSCRIPTS):  # (a fixture may note a repair: codex_rollout's repeated line)
        assert transcript.notes == ()  # nothing skipped or repaired in strict mode


def test_reading_never_changes_the_file(path):
    before = fingerprint(path)
    skip_unless_a_reader_recognises(path)
    formats.load(path)
    formats.load(path, strict=False)
    assert fingerprint(path) == before


def test_every_item_names_its_file_and_line(path, read):
    _, transcript = read
    lines = path.read_bytes().count(b"\n") + 1
    for conv in transcript.conversations:
        for item in conv.items:
            if isinstance(item, Message) and transcript.format != "ctxlab-session":
                # (a session keeps each item's own provenance: where it was first read, or none when an
                # agent loop wrote it; its file and line are in the session's warnings when damaged)
                assert item.source is not None, f"{item.where()} has no source"
            if item.source is not None:
                assert item.source.file == path.name, item
                assert 1 <= item.source.line <= lines, f"{item.id}: line {item.source.line} of {lines}"


def test_usage_figures_are_whole_non_negative_tokens(path, read):
    _, transcript = read
    for conv in transcript.conversations:
        for m in conv.messages:
            if m.usage is None:
                continue
            assert isinstance(m.usage, Usage)
            for field in ("uncached_input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens",
                          "cache_write_1h_tokens"):
                value = getattr(m.usage, field)
                assert isinstance(value, int) and not isinstance(value, bool) and value >= 0, (m.id, field, value)
            assert m.usage.cache_write_1h_tokens <= m.usage.cache_write_tokens


def test_a_damaged_line_is_named_strictly_and_noted_leniently(path, read, tmp_path):
    name, original = read
    copy = tmp_path / path.name
    if not is_json_lines(path):
        data = path.read_bytes()
        copy.write_bytes(data[: len(data) // 2])  # a JSON document cut short
        try:
            formats.load(copy, format=name)
        except TranscriptError as err:
            assert err.file == path.name and str(err).startswith(path.name)
        # a reader may also read what is left of a line-oriented document (aider's markdown)
        return
    lines = path.read_text(encoding="utf-8-sig").split("\n")
    at = max(1, len(lines) // 2)  # after the first line: headers stay first
    copy.write_text("\n".join(lines[:at] + [DAMAGED] + lines[at:]), encoding="utf-8")
    with pytest.raises(TranscriptError) as err:
        formats.load(copy, format=name)
    assert err.value.file == path.name and err.value.line == at + 1, str(err.value)
    lenient = formats.load(copy, format=name, strict=False)
    notes = list(lenient.notes) + [n for c in lenient.conversations for n in c.notes]
    said = (f"skipped line {at + 1}:", f"{path.name}:{at + 1}: ")  # a session file says it as its warnings do
    assert any(n.startswith(said) for n in notes), notes
    assert message_keys(lenient) == message_keys(original)  # nothing else lost


def test_round_trip_through_a_session_file(path, read, tmp_path, monkeypatch):
    """The bytes a session file holds read back as the same items. ``Session.append`` fsyncs every item
    (one fsync per message: thousands on the larger shared files, seconds of waiting on a busy disk);
    durability is not what this checks (test_crash_safety.py's SIGKILL test does), so fsync is a no-op
    here, as in test_crash_safety.py's byte-cut tests: the same bytes are written and read back."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    _, transcript = read
    for index, conv in enumerate(transcript.conversations[:3]):
        out = tmp_path / f"{index}.jsonl"
        Session.import_transcript(transcript, out, conversation=index)
        back = formats.load(out).conversation()
        assert back.items == conv.items
        assert all(isinstance(i, (Message, Entry)) for i in back.items)
        assert (back.system, back.tools, back.model, back.provider) == (conv.system, conv.tools, conv.model,
                                                                        conv.provider)


def test_inspect_reads_it(path, read, capsys):
    _, transcript = read
    assert main(["inspect", str(path), "--json"]) == 0, capsys.readouterr().err
    report = json.loads(capsys.readouterr().out)
    assert INSPECT_KEYS <= report.keys() and report["tokens"]["o200k_base"] > 0
    assert report["format"] == transcript.format
    assert report["messages"] == sum(len(c.messages) for c in transcript.conversations) > 0


@pytest.mark.parametrize("broken", broken_fixtures(), ids=label)
def test_a_broken_file_is_one_error_naming_it(broken, capsys):
    """Strict reading of a file broken on purpose raises a TranscriptError (never another exception)
    naming the file, with a hint; the CLI prints it on one line and exits 2."""
    before = fingerprint(broken)
    with pytest.raises(TranscriptError) as err:
        formats.load(broken)
    assert err.value.file == broken.name and str(err.value).startswith(broken.name) and err.value.hint
    assert main(["inspect", str(broken)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert fingerprint(broken) == before


def test_every_reader_is_held_to_the_contract():
    """Each registered reader reads at least one file above (a fixture, the sample or a shared transcript)."""
    read = {formats.detect(p) for p in fixture_files() + [SAMPLE]}
    assert set(formats.names()) <= read, f"readers with no fixture: {set(formats.names()) - read}"
