"""Chapter 09 runs top to bottom on real transcripts: every format of the shared set, unpriced ones included.

Each case executes the chapter in a fresh kernel with ``TRANSCRIPT`` set (``tests/notebook_runner.py``), with
``HOME`` pointed at an empty folder so the home scan finds nothing of the machine's own. The takeaway must
print and the rubric must grade the workbook's pick. The default run takes the Codex rollout; the others carry
the ``thorough`` marker (``python run.py test -m thorough``), 4–12 s each.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from notebook_runner import cell_output, matrix, run_on, shared_file  # tests/notebook_runner.py

TRANSCRIPTS = {"codex": "codex-cli/rollout-*.jsonl", "pi": "pi-mono/before-compaction.jsonl",
               "claude-code": "claude-code-viewer/*.jsonl", "claude-code-2x": "claude-code-2x/fa812bfe-*.jsonl",
               "gemini": "gemini-cli/*.jsonl", "copilot": "copilot-cli/*.jsonl", "aider": "aider/aider-chat-history.md",
               "openhands": "openhands/*.jsonl", "openhands-events": "openhands-events/*.json",
               "tau-bench": "tau-bench/*.json", "swe-agent": "swe-agent/ctf_web_*.traj",
               "mini-swe-agent": "mini-swe-agent/*.json", "llama-factory": "llama-factory-toolcall/*.json",
               "pi-v3": "pi-v3/*.jsonl", "claude-trace": "claude-trace/*.jsonl"}
CASES = [(which,) for which in TRANSCRIPTS]
DEFAULT = {("codex",)}


@pytest.mark.shared
@pytest.mark.parametrize(("which",), matrix(CASES, DEFAULT))
def test_chapter_09_runs_on_a_real_transcript(shared_transcripts: Path, which: str, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    transcript = shared_file(shared_transcripts, TRANSCRIPTS[which])
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("USERPROFILE", str(tmp_path))
    nb = run_on("09_your_agent.ipynb", transcript, timeout=300)
    assert cell_output(nb, "find_transcripts()").rstrip().endswith(
        "none found: set TRANSCRIPT to a transcript of yours (the table above says where they live)")
    assert cell_output(nb, "pick = recommend(own)").count("\n") >= 2
    assert cell_output(nb, "Takeaway: ").startswith("Takeaway: ")
