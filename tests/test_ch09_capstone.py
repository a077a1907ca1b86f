"""Chapter 09 (your agent): the dated locations table, the home-folder scan per OS layout, the rubric, the glossary.

The scan is run against a temporary home laid out as Linux, macOS and Windows lay it out (``HOME``,
``USERPROFILE``, ``LOCALAPPDATA`` and the agents' own variables pointed at it), with a planted file per
agent; the rubric grades a good choice (every applicable criterion passes) and bad ones (an overflowing
strategy, a made-up cost, a policy that does not compact, a strategy not on the board).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ctxlab.lab.ch09_locations import (LOCATIONS, READ, find_transcripts, found_summary, root_folder, shown_path,
                                       this_system)

REPO = Path(__file__).resolve().parents[1]

# ---- the locations table ---------------------------------------------------------------------------------------


def test_every_location_has_a_source_and_a_date() -> None:
    assert len(LOCATIONS) >= 8
    for loc in LOCATIONS:
        assert loc.source.strip() and ("http" in loc.source or "/" in loc.source), loc.agent
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", loc.read), loc.agent
        assert set(loc.roots) == {"linux", "macos", "windows"}, loc.agent
    assert READ == "2026-12-02"
    assert {"Claude Code", "Codex CLI", "pi", "Gemini CLI", "Copilot CLI", "aider", "OpenHands CLI"} <= \
        {loc.agent for loc in LOCATIONS}


def test_every_location_names_a_format_ctxlab_reads() -> None:
    from ctxlab.io.formats import names

    for loc in LOCATIONS:
        assert loc.format in names(), (loc.agent, loc.format)


@pytest.mark.parametrize(("name", "system"), [("Linux", "linux"), ("Darwin", "macos"), ("Windows", "windows"),
                                              ("FreeBSD", "linux")])
def test_this_system(name: str, system: str) -> None:
    assert this_system(name) == system


# ---- the home scan ------------------------------------------------------------------------------------------

PLANTED = {  # system -> agent -> a file under the temporary home, as that OS lays it out
    "linux": {"Claude Code": ".claude/projects/-home-me-app/s1.jsonl",
              "Codex CLI": ".codex/sessions/2026/12/01/rollout-2026-12-01T10-00-00-x.jsonl",
              "pi": ".pi/agent/sessions/--home-me-app--/2026-12-01_x.jsonl",
              "Gemini CLI": ".gemini/tmp/app/chats/session-2026-12-01T10-00-abc.jsonl",
              "Copilot CLI": ".copilot/session-state/abc/events.jsonl",
              "aider": "code/app/.aider.chat.history.md",
              "mini-swe-agent": ".config/mini-swe-agent/last_mini_run.traj.json"},
    "macos": {"Claude Code": ".claude/projects/-Users-me-app/s1.jsonl",
              "mini-swe-agent": "Library/Application Support/mini-swe-agent/last_mini_run.traj.json"},
    "windows": {"Claude Code": ".claude/projects/C--Users-me-app/s1.jsonl",
                "Copilot CLI": ".copilot/session-state/abc/events.jsonl",
                "mini-swe-agent": "AppData/Local/mini-swe-agent/mini-swe-agent/last_mini_run.traj.json"},
}
MOVED = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "PI_CODING_AGENT_DIR", "GEMINI_CLI_HOME", "COPILOT_HOME",
         "MSWEA_GLOBAL_CONFIG_DIR", "LOCALAPPDATA")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("USERPROFILE", str(tmp_path))
    monkeypatch.setenv("APPDATA", str(tmp_path / "AppData" / "Roaming"))
    for name in MOVED:
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def _plant(home: Path, files: dict[str, str]) -> None:
    for rel in files.values():
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}\n", encoding="utf-8")


@pytest.mark.parametrize("system", sorted(PLANTED))
def test_the_scan_finds_planted_files_per_os_layout(home: Path, system: str) -> None:
    _plant(home, PLANTED[system])
    found = find_transcripts(system=system)  # Path.home() follows HOME / USERPROFILE
    by_agent = {f.agent: f for f in found}
    assert set(by_agent) == set(PLANTED[system])
    for agent, rel in PLANTED[system].items():
        assert by_agent[agent].path == home / rel
        assert shown_path(by_agent[agent].path) == "~/" + rel
    assert found_summary(found).startswith(f"found {len(found)} transcript(s)")


def test_windows_reads_localappdata_when_set(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    local = home / "Local"
    monkeypatch.setenv("LOCALAPPDATA", str(local))
    _plant(local, {"m": "mini-swe-agent/mini-swe-agent/last_mini_run.traj.json"})
    assert [f.agent for f in find_transcripts(system="windows")] == ["mini-swe-agent"]


def test_an_agents_variable_moves_its_folder(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    moved = home / "elsewhere"
    monkeypatch.setenv("CODEX_HOME", str(moved))
    _plant(moved, {"c": "sessions/2026/12/01/rollout-a.jsonl"})
    _plant(home, {"c": ".codex/sessions/2026/12/01/rollout-b.jsonl"})  # not looked at: the variable wins
    found = find_transcripts(system="linux")
    assert [f.path.name for f in found] == ["rollout-a.jsonl"]
    codex = next(loc for loc in LOCATIONS if loc.agent == "Codex CLI")
    assert root_folder(codex, "linux", home, {"CODEX_HOME": str(moved)}) == moved


def test_an_empty_home_says_none_found(home: Path) -> None:
    assert find_transcripts(system="linux") == ()
    assert found_summary(()).startswith("none found: set TRANSCRIPT")


def test_newest_first_and_a_few_per_agent(home: Path) -> None:
    import os

    for k in range(5):
        path = home / ".claude" / "projects" / "p" / f"s{k}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}\n", encoding="utf-8")
        os.utime(path, (1_000_000 + k, 1_000_000 + k))
    found = find_transcripts(system="linux", per_agent=3)
    assert [f.path.name for f in found] == ["s4.jsonl", "s3.jsonl", "s2.jsonl"]


# ---- the rubric ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def own():
    from ctxlab.lab.ch08_leaderboard import own_leaderboard
    from ctxlab.lab.data import SAMPLE_SESSION
    from ctxlab.lab.workbook import load_workbook_conversation

    if not SAMPLE_SESSION.exists():
        pytest.skip("data/sample_session.jsonl not generated")
    return own_leaderboard(load_workbook_conversation())


def test_the_workbooks_pick_passes_its_own_rubric(own) -> None:
    from ctxlab.lab.ch09_rubric import grade, recommend

    pick = recommend(own)
    assert pick is not None and pick.strategy != "recorded"
    g = grade(pick, own)
    assert g.ok and g.passed == g.applicable >= 6, g.rows()


def test_a_good_choice_passes(own) -> None:
    from ctxlab.lab.ch09_rubric import Choice, grade

    row = own.board.row("pipeline")
    g = grade(Choice("pipeline", f"0 overflows, keeps {row.facts_kept} facts", trigger=0.8, target=0.5,
                     cost_usd=round(row.cost_usd, 2), facts_kept=row.facts_kept), own)
    assert g.ok and g.applicable == 7, g.rows()


@pytest.mark.parametrize(("kwargs", "fails"), [
    ({"strategy": "full", "why": "sends everything"}, {"0 overflows", "ledger numbers", "justification"}),
    ({"strategy": "budgeted", "why": "cheapest, 0 overflows", "cost_usd": 0.01}, {"ledger numbers",
                                                                                  "fact retention"}),
    ({"strategy": "budgeted", "why": "1 reason", "trigger": 0.8, "target": 0.5}, {"policy"}),
    ({"strategy": "compaction", "why": "2", "trigger": 0.5, "target": 0.8}, {"policy"}),
    ({"strategy": "compaction", "why": "2", "trigger": 0.95, "target": 0.5}, {"policy"}),
    ({"strategy": "no-such", "why": "3"}, {"on the board"}),
])
def test_bad_choices_fail_the_criteria_they_break(own, kwargs: dict, fails: set[str]) -> None:
    from ctxlab.lab.ch09_rubric import Choice, grade

    g = grade(Choice(**kwargs), own)
    failed = {v.criterion for v in g.verdicts if v.passed is False}
    assert fails <= failed, g.rows()
    assert not g.ok


def test_recorded_is_never_a_choice(own) -> None:
    from dataclasses import replace

    from ctxlab.lab.ch09_rubric import Choice, grade
    from ctxlab.lab.compare import CompareRow

    board = replace(own.board, rows=own.board.rows + (CompareRow("recorded", 0.1, 0.9, 1, 1, 0, 10),))
    g = grade(Choice("recorded", "cheapest at 0.1"), replace(own, board=board))
    assert g.verdicts[0].passed is False and "what your agent did" in g.verdicts[0].detail


# ---- the glossary -------------------------------------------------------------------------------------------

GLOSSARY_TERMS = ("floor", "unit", "static head", "on arrival", "calibration", "stub", "page store", "leaderboard",
                  "pinned", "sticky start", "round", "turn", "interaction")


def test_the_glossary_has_the_rows_and_no_wrong_chinese() -> None:
    text = (REPO / "docs" / "glossary.md").read_text(encoding="utf-8")
    assert "令牌" not in text and "地板" not in text
    assert "词元" in text and "下限" in text
    rows = [line for line in text.splitlines() if line.startswith("|")]
    firsts = {line.split("|")[1].strip().strip("*`").lower() for line in rows}
    for term in GLOSSARY_TERMS:
        assert term in firsts, f"docs/glossary.md has no row for {term!r}"
    for line in (r for r in rows if not r.startswith("| English") and not r.startswith("|---")):
        assert re.search(r"\b0\d\b|chapter", line, re.I), f"a glossary row names no chapter: {line[:60]}"
