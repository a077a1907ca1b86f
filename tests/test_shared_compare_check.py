"""Every shared real transcript passes ``replay --compare --check``: every strategy builds every
context of every conversation and breaks no rule (issue 11, tracker #14: "every file ... passes
replay --compare --check"). The two files that take longest (pi's 484 calls, tau-bench's 200
conversations: ~10 s each) run under the ``thorough`` marker, and so does the larger of Claude Code's
real sessions (claude-code-2x's 3.5 MB, ~5 s): the default run keeps one or two files of every reader's
format (Claude Code's: claude-code-viewer's session and claude-code-2x/tool_heavy.jsonl). LLaMA-Factory's file
(a JSON list of 300 independent conversations, ~4 s) is checked whole under ``thorough``; the default run checks a
copy holding every tenth of them, in the same format.

One file's own figures do not fit its model: aider's log records 10,466 tokens sent to gpt-4,
whose window is 8,192. That conversation fails the check, and the failure and a note say so;
under the window the log implies it passes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers import run
from conftest import SHARED_TRANSCRIPTS, shared_transcript_files, skip_unless_a_reader_recognises

SLOW = {"pi-mono/before-compaction.jsonl", "tau-bench/gpt-4o-airline.json",
        "claude-code-2x/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"}
AIDER = "aider/aider-chat-history.md"
AIDER_OVER_WINDOW = 11  # the conversation that sent gpt-4 more than its window, by the log's own count


def rel(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


SLICED = "llama-factory-toolcall/glaive_toolcall_zh_demo.json"  # a JSON list of conversations: every tenth by default


def cases():
    sliced = [pytest.param(p, True, id=f"{rel(p)}-every-tenth") for p in shared_transcript_files() if rel(p) == SLICED]
    return sliced + [pytest.param(p, False, id=rel(p), marks=[pytest.mark.thorough] if rel(p) in SLOW | {SLICED}
                                  else []) for p in shared_transcript_files() if rel(p) != AIDER]


@pytest.mark.shared
@pytest.mark.parametrize("path, every_tenth", cases())
def test_every_strategy_passes_the_check_on_every_conversation(path, every_tenth, capsys, tmp_path):
    fmt = skip_unless_a_reader_recognises(path)
    if every_tenth:
        conversations = json.loads(path.read_text(encoding="utf-8"))
        path = tmp_path / path.name
        path.write_text(json.dumps(conversations[::10], ensure_ascii=False, indent=2), encoding="utf-8")
        assert skip_unless_a_reader_recognises(path) == fmt and len(conversations[::10]) == 30
    code, out, err = run(capsys, "replay", path, "--compare", "--check")
    assert code == 0, err
    assert "check: OK, every strategy built every context and passed every rule" in out
    assert "cannot build a context" not in out


@pytest.mark.shared
def test_aider_fails_only_where_its_own_figures_exceed_the_window(shared_transcripts, capsys):
    path = SHARED_TRANSCRIPTS / AIDER
    if not path.is_file():
        pytest.skip(f"{path} not found")
    code, out, err = run(capsys, "replay", path, "--compare", "--check")
    assert code == 1
    assert "first: conversation 2024-08-06 09:06:27," in err and err.count("\n") == 1
    notes = [line for line in out.splitlines() if line.startswith("note: ") and "-token window of" in line]
    assert len(notes) == 1 and "8,192-token window of gpt-4" in notes[0]
    left_out = [line for line in out.splitlines() if "could not build a context in 1 of" in line]
    assert len(left_out) == 7 and all(f"(first: #{AIDER_OVER_WINDOW} " in line for line in left_out)  # but `full`
    largest = int(re.search(r"the largest ([\d,]+) tokens", notes[0]).group(1).replace(",", ""))
    assert largest > 8_192
    code, out, err = run(capsys, "replay", path, "--compare", "--check", "--conversation", AIDER_OVER_WINDOW,
                         "--window", 16_384)
    assert code == 0, err
