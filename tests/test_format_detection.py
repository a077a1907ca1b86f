"""Detection: the whole-document second look (files whose telling keys sit beyond the first 64 KiB),
the ``sniff_value`` protocol, the size limit, and what "unknown transcript format" says.

Big files are built in ``tmp_path`` (nothing large is committed).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxlab.io import formats
from ctxlab.cli.main import main
from ctxlab.base.errors import UnknownFormatError
from ctxlab.io.formats import _detect

FIX = Path(__file__).resolve().parent / "fixtures" / "formats"


def anthropic_body(n_tools: int = 30, target: int = 69_000) -> dict:
    """An Anthropic request body whose 30 tools come first, padded so the file is about ``target`` bytes."""
    pad = max(1, (target - 2_000) // (n_tools * 30))
    tools = [{"name": f"lookup_{i:02d}", "description": "Looks one record up by key. " * pad,
              "input_schema": {"type": "object", "properties": {"key": {"type": "string", "description": "The key."},
                                                                "depth": {"type": "integer"}}, "required": ["key"]}}
             for i in range(n_tools)]
    return {"model": "claude-sonnet-4-5", "max_tokens": 1024, "tools": tools, "system": "Answer from the records.",
            "messages": [{"role": "user", "content": "Find key k-17."},
                         {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "lookup_03",
                                                            "input": {"key": "k-17"}}]},
                         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                                       "content": "k-17: blue"}]},
                         {"role": "assistant", "content": "k-17 is blue."}]}


def write(path: Path, data, indent: int | None = 2) -> Path:
    path.write_text(json.dumps(data, indent=indent, ensure_ascii=False), encoding="utf-8")
    return path


def head_claims(path: Path) -> list[str]:
    head = formats._head(path)
    return [r.NAME for r in formats.READERS if r.sniff(path, head)]


# ---------------------------------------------------------------- beyond the first 64 KiB

def test_a_69_kb_anthropic_body_with_30_tools_is_detected(tmp_path):
    path = write(tmp_path / "request.json", anthropic_body())
    assert 66_000 < path.stat().st_size < 75_000  # larger than the 64 KiB head
    raw = path.read_text(encoding="utf-8")
    assert raw.index('"messages"') > formats.HEAD_CHARS  # the telling key is past the head ...
    assert head_claims(path) == []  # ... so no sniff of the head claims it
    assert formats.detect(path) == "anthropic-messages"
    conv = formats.load(path).conversation()
    assert len(conv.tools) == 30 and conv.system == ("Answer from the records.",)
    assert [(m.role, m.tool_call_id) for m in conv.messages] == [("user", None), ("assistant", None),
                                                                  ("tool", "toolu_1"), ("assistant", None)]


def test_an_openai_chat_body_with_big_tools_first_is_detected(tmp_path):
    tools = [{"type": "function", "function": {"name": f"f{i}", "description": "x " * 1500,
                                               "parameters": {"type": "object", "properties": {}}}} for i in range(25)]
    path = write(tmp_path / "chat_body.json", {"model": "gpt-4.1", "tools": tools,
                                               "messages": [{"role": "user", "content": "hi"},
                                                            {"role": "assistant", "content": "hello"}]})
    assert path.stat().st_size > formats.HEAD_CHARS and head_claims(path) == []
    assert formats.detect(path) == "openai-chat"
    assert len(formats.load(path).conversation().tools) == 25


def test_value_head_keeps_every_key_and_fits_the_head():
    body = anthropic_body(target=400_000)
    view = _detect.value_head(body)
    assert len(view) <= formats.HEAD_CHARS
    assert '"messages": [' in view and '"system": "Answer' in view and '"tool_use_id"' in view


def test_a_first_look_claim_wins_and_detection_of_fixtures_is_unchanged():
    # every committed fixture is decided by the first look (the head), as before the second pass existed
    for path in sorted(FIX.iterdir()):
        claims = head_claims(path)
        if claims and not path.name.startswith("unknown"):
            assert formats.detect(path) == claims[0], path.name


def test_a_mini_swe_agent_file_whose_head_shows_only_info_is_recognised_by_its_value(tmp_path):
    data = json.loads((FIX / "chat_mini_swe_agent_v2.traj.json").read_text(encoding="utf-8"))
    data["info"]["config"]["agent"]["system_template"] = "Be careful. " * 7_000  # config precedes mini_version
    path = write(tmp_path / "long.traj.json", data)
    assert path.read_text(encoding="utf-8").index('"mini_version"') > formats.HEAD_CHARS
    assert head_claims(path) == []
    assert formats.detect(path) == "mini-swe-agent"  # MINI_SWE_AGENT.sniff_value saw trajectory_format


def test_sniff_value_protocol_and_old_readers(tmp_path, monkeypatch):
    class ByValue:  # a reader with the optional sniff_value
        NAME = "by-value"

        @staticmethod
        def sniff(path, head):
            return False

        @staticmethod
        def sniff_value(path, value):
            return isinstance(value, dict) and value.get("kind") == "mine"

    class ByHead:  # an old-protocol reader: sniff only, shown the compact view of a big document
        NAME = "by-head"

        @staticmethod
        def sniff(path, head):
            return '"marker": true' in head

    monkeypatch.setattr(formats, "READERS", (ByValue, ByHead))
    small = write(tmp_path / "small.json", {"kind": "mine"})
    assert formats.detect(small) == "by-value"
    big = write(tmp_path / "big.json", {"pad": ["y" * 1000] * 100, "more": "z" * 70_000, "marker": True}, indent=None)
    assert '"marker": true' not in formats._head(big)
    assert formats.detect(big) == "by-head"


def test_nesting_a_sniff_cannot_walk_is_no_claim_not_a_crash(tmp_path):
    deep = "[" * 900 + "]" * 900
    path = tmp_path / "deep.json"
    path.write_text('{"pad": "' + "p" * 70_000 + '", "x": ' + deep + "}", encoding="utf-8")
    with pytest.raises(UnknownFormatError, match="unknown transcript format"):
        formats.detect(path)


def test_over_the_size_limit_the_error_says_so(tmp_path, monkeypatch):
    path = write(tmp_path / "request.json", anthropic_body())
    monkeypatch.setattr(_detect, "DOCUMENT_LIMIT", 50_000)
    with pytest.raises(UnknownFormatError) as err:
        formats.detect(path)
    assert "more than the 50,000 bytes ctxlab parses whole to detect a format" in str(err.value)
    assert err.value.hint and "Pass format=NAME" in err.value.hint
    assert formats.load(path, format="anthropic-messages").conversation().tools  # the way out works
    assert _detect.DOCUMENT_LIMIT != 64 * 1024 * 1024  # patched here; the real limit is stated below


def test_the_real_limit_is_64_mib():
    assert _detect.DOCUMENT_LIMIT == 64 * 1024 * 1024


# ---------------------------------------------------------------- "unknown transcript format"

def test_unknown_json_object_names_the_line_and_every_reader(tmp_path):
    path = write(tmp_path / "neither.json", {"hello": "world", "n": [1, 2, 3]}, indent=None)
    with pytest.raises(UnknownFormatError) as info:
        formats.load(path)
    err = info.value
    assert str(err).startswith("neither.json: unknown transcript format: line 1 opens one JSON object with keys "
                               "'hello', 'n'")
    assert f"none of the {len(formats.READERS)} readers claims it" in err.problem
    assert "readers of one JSON document look for the keys 'conversations'" in err.problem  # what they want
    assert "'messages'" in err.problem and "'history'" in err.problem
    assert set(err.reasons) == set(formats.names())  # every reader considered has its reason
    assert "no 'messages' or 'role' key here" in err.reasons["openai-chat"]
    assert "this file is one JSON document" in err.reasons["claude-code"]
    assert err.hint.startswith("Known formats: ctxlab-session, claude-code, pi") and "format=NAME" in err.hint


def test_a_near_miss_names_the_nearest_readers(tmp_path):
    path = write(tmp_path / "near.json", {"history": [{"role": "user", "content": "hi"},
                                                      {"role": "assistant", "content": "hello"}]})
    with pytest.raises(UnknownFormatError) as info:
        formats.detect(path)
    problem = info.value.problem
    assert "(nearest: openai-chat, which reads a JSON list of" in problem and "swe-agent, which reads" in problem
    assert "the keys are here but not in that shape" in info.value.reasons["openai-chat"]


def test_unknown_json_lines_and_text_name_their_first_line(tmp_path):
    jl = tmp_path / "events.jsonl"
    jl.write_text("\n" + json.dumps({"event": "start", "at": 1}) + "\n" + json.dumps({"event": "stop"}) + "\n",
                  encoding="utf-8")
    with pytest.raises(UnknownFormatError, match=r"line 2 is a JSON object with keys 'event', 'at'.*"
                                                 r"readers of JSON Lines look for the keys"):
        formats.detect(jl)
    md = tmp_path / "notes.md"
    md.write_text("# my chat\nhello\n", encoding="utf-8")
    with pytest.raises(UnknownFormatError, match=r"line 1 is not JSON \('# my chat'\)"):
        formats.detect(md)


def test_a_truncated_big_document_says_where_it_stops_parsing(tmp_path):
    text = json.dumps({"notes": ["n" * 100] * 800, "other": 1}, indent=2)
    path = tmp_path / "cut.json"
    path.write_text(text[: len(text) - 40], encoding="utf-8")
    with pytest.raises(UnknownFormatError) as info:
        formats.detect(path)
    assert "line 1 starts JSON, but the file is not one JSON document (line " in info.value.problem


def test_cli_says_it_in_one_line_and_names_the_nearest(tmp_path, capsys):
    path = write(tmp_path / "near.json", {"history": [{"role": "user", "content": "hi"}]})
    code = main(["inspect", str(path)])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("ctxlab inspect: error: near.json: unknown transcript format: line 1 opens one JSON object")
    assert "nearest: openai-chat" in err and "Known formats:" in err and "Traceback" not in err
