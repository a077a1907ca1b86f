"""``inspect``, ``replay`` and ``doctor`` say when a model is retired as of the price table's date (issue 13).

The rule comes from the lifecycle rows: "Claude Sonnet 4.5 is deprecated: it is still functional but no longer
recommended, and retires on November 30, 2026." (Claude Sonnet 4.5 overview,
https://platform.claude.com/docs/pt-BR/models/sonnet-4-5/overview.md, read 2026-12-02); "| claude-sonnet-4-6 |
Active | N/A | Not sooner than February 17, 2027 |" (Model deprecations,
https://platform.claude.com/docs/en/about-claude/model-deprecations, snapshot 2026-08-22, read 2026-12-02); and
"Dates apply to Anthropic-operated platforms; Bedrock and Google Cloud set their own schedules." (the same
table's note). The CLI runs in-process on a tiny ctxlab session, once as a subprocess.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ctxlab.cli import main as cli
from ctxlab.cli.doctor import check_default_model
from ctxlab.cli.models import lifecycle_note, model_notes
from ctxlab.io.session import Session
from ctxlab.messages import Message, TextPart, Usage

ROOT = Path(__file__).resolve().parents[1]
RETIRED = ("claude-sonnet-4-5 retired on 2026-11-30 (Anthropic, Claude Sonnet 4.5 (model overview; English status "
           "text in the pt-BR copy), read 2026-12-02): requests to it are refused as of 2026-12-02 (the price "
           "table's date); costs use its last listed prices.")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def tiny(tmp_path: Path, model: str) -> Path:
    """Two model calls recorded with usage, on ``model``."""
    path = tmp_path / f"{model.replace('/', '_').replace(':', '_')}.jsonl"
    if path.exists():
        return path
    s = Session.create(path, system=("You are terse.",), model=model, provider="anthropic", id="tiny")
    usage = Usage(uncached_input_tokens=20, cache_read_tokens=0, cache_write_tokens=0, output_tokens=3)
    for i in range(2):
        s.append(Message("user", (TextPart(f"question {i}"),), f"u{i}", timestamp=f"2026-12-01T10:0{i}:00Z"))
        s.append(Message("assistant", (TextPart(f"answer {i}"),), f"a{i}", timestamp=f"2026-12-01T10:0{i}:05Z",
                         model=model, provider="anthropic", usage=usage))
    return path


def test_the_note_for_a_retired_model_cites_its_row():
    assert lifecycle_note("claude-sonnet-4-5").startswith(RETIRED)
    assert lifecycle_note("claude-sonnet-4-20250514").startswith("claude-sonnet-4-20250514 retired on 2026-06-15 "
                                                                 "(Anthropic, Model deprecations, read 2026-12-02)")
    assert lifecycle_note("claude-sonnet-4-6") is None and lifecycle_note("llama-3-local") is None


def test_a_bedrock_id_is_not_told_it_is_refused():
    """Bedrock sets its own schedule: the note says Anthropic's retirement and no refusal."""
    note = lifecycle_note("us.anthropic.claude-sonnet-4-5-20250929-v1:0")
    assert "retired on 2026-11-30 on Anthropic's own platforms" in note and "own schedules" in note
    assert "refused" not in note


def test_inspect_says_so_once_for_a_retired_model(tmp_path, capsys):
    code, out, err = run(capsys, "inspect", str(tiny(tmp_path, "claude-sonnet-4-5")))
    assert code == 0, err
    notes = [line for line in out.splitlines() if line.startswith("note: ")]
    assert notes == [f"note: {lifecycle_note('claude-sonnet-4-5')}"]
    code, out, _ = run(capsys, "inspect", str(tiny(tmp_path, "claude-sonnet-4-5")), "--json")
    assert json.loads(out)["model_notes"] == [lifecycle_note("claude-sonnet-4-5")]


def test_inspect_says_nothing_for_a_current_model(tmp_path, capsys):
    code, out, err = run(capsys, "inspect", str(tiny(tmp_path, "claude-sonnet-4-6")))
    assert code == 0, err
    assert "retired" not in out and "deprecated" not in out
    code, out, _ = run(capsys, "inspect", str(tiny(tmp_path, "claude-sonnet-4-6")), "--json")
    assert json.loads(out)["model_notes"] == []


def test_replay_says_so_for_the_transcripts_model_and_for_model(tmp_path, capsys):
    path = str(tiny(tmp_path, "claude-sonnet-4-5"))
    code, out, err = run(capsys, "replay", path)
    assert code == 0, err
    assert out.count(RETIRED) == 1
    code, out, err = run(capsys, "replay", str(tiny(tmp_path, "claude-sonnet-4-6")), "--model", "claude-sonnet-4-5")
    assert code == 0, err and out.count(RETIRED) == 1
    code, out, err = run(capsys, "replay", path, "--model", "claude-sonnet-4-6")  # --model decides what is priced
    assert code == 0, err
    assert "retired" not in out
    code, out, err = run(capsys, "replay", path, "--recorded", "--json")
    assert code == 0, err
    assert json.loads(out)["model_notes"] == [lifecycle_note("claude-sonnet-4-5")]


def test_doctor_checks_the_default_model(capsys):
    check = check_default_model()
    assert check.ok is True and check.detail.startswith("claude-sonnet-4-6 active as of 2026-12-02")
    _, out, _ = run(capsys, "doctor")  # the exit code says whether the machine is ready: not this test's
    assert "default model" in out and "claude-sonnet-4-6 active" in out


def test_the_cli_says_it_by_subprocess(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "ctxlab", "inspect", str(tiny(tmp_path, "claude-sonnet-4-5"))],
                          capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert RETIRED in proc.stdout


def test_notes_are_once_per_model_in_order():
    notes = model_notes(["claude-sonnet-4-5", "claude-sonnet-4-6", "claude-sonnet-4-5", None, "claude-sonnet-4"])
    assert [n.split(" ")[0] for n in notes] == ["claude-sonnet-4-5", "claude-sonnet-4"]


def test_before_its_retirement_the_note_says_deprecated_with_the_date(monkeypatch):
    """On 2026-11-29 Sonnet 4.5 was deprecated, not yet retired: the note names the retirement date."""
    from datetime import date

    from ctxlab.tables import prices

    monkeypatch.setattr(prices, "price_table_date", lambda: date(2026, 11, 29))
    note = lifecycle_note("claude-sonnet-4-5")
    assert note.startswith("claude-sonnet-4-5 is deprecated and retires on 2026-11-30 (Anthropic, ")
    assert "requests still work as of 2026-11-29" in note
