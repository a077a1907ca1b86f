"""The README's first screen is for learners (issue 16): what you will learn, the two commands, and the chapters
with their minutes; maintainer material (test timings, property runs, benchmarks) lives in docs/maintainers.md.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
FIRST_SCREEN = README[:README.index("## Workshop")]
ROW = re.compile(r"^\| (\d\d) \| \[([^\]]+)\]\((notebooks/[^)]+\.ipynb)\) \| ([^|]+) \| (\d+) \|([^|]*)\|$", re.M)


def core_notebooks() -> list[str]:
    return sorted(p.name for p in (REPO / "notebooks").glob("[0-9][0-9]_*.ipynb") if not p.stem.endswith("_further"))


def test_the_first_screen_is_for_learners() -> None:
    assert "**What you will learn:**" in FIRST_SCREEN
    assert len(FIRST_SCREEN.splitlines()) <= 60, "the learners' first screen is longer than about one screen"
    for word in ("pytest", "thorough", "bench/", "nbval", "property run", "xdist"):
        assert word not in FIRST_SCREEN, f"maintainer talk on the README's first screen: {word!r}"


def test_every_core_chapter_has_a_row_with_its_minutes() -> None:
    rows = {Path(link).name: int(minutes) for _, _, link, _, minutes, _ in ROW.findall(FIRST_SCREEN)}
    assert sorted(rows) == core_notebooks(), "the chapter table and notebooks/ list different chapters"
    assert all(10 <= m <= 30 for m in rows.values()), rows


def test_every_going_further_notebook_is_linked_from_its_chapters_row() -> None:
    further = sorted(p.name for p in (REPO / "notebooks").glob("*_further.ipynb"))
    linked = re.findall(r"\((notebooks/[^)]+_further\.ipynb)\)", FIRST_SCREEN)
    assert sorted(Path(x).name for x in linked) == further
    for link in linked:
        assert (REPO / link).exists(), link


def test_the_maintainer_material_moved_to_docs() -> None:
    moved = (REPO / "docs" / "maintainers.md").read_text(encoding="utf-8")
    for heading in ("## Set-up and the test run", "## Tests in a real browser", "## Benchmarks", "## Layout"):
        assert heading in moved and heading not in README, heading


def leaderboard() -> dict[str, dict[str, str]]:
    lines = [x for x in (REPO / "data" / "leaderboard_pi.csv").read_text(encoding="utf-8").splitlines()
             if x and not x.startswith("#")]
    head = lines[0].split(",")
    rows = [dict(zip(head, x.split(","))) for x in lines[1:]]
    return {r["name"]: r for r in rows if r["section"] == "leaderboard"}


def test_the_readmes_leaderboard_is_the_committed_one() -> None:
    """Every row of "Every strategy side by side" and every number its prose states come from
    data/leaderboard_pi.csv (issue 16: the README said "rewrites the prefix at every call" and "three times")."""
    section = README[README.index("### Every strategy side by side"):README.index("## Offline tokens")]
    board = leaderboard()
    for name, r in board.items():
        label = "recorded (pi's own 2 compactions)" if name == "recorded" else name
        row = (f"| {label} | ${float(r['cost_usd']):.2f} | {100 * float(r['hit_rate']):.1f}% | "
               f"{r['compactions'] if name != 'recorded' else '—'} | {r['summary_calls'] if name != 'recorded' else '—'} | "
               f"{r['overflows']} | 0 | {int(r['total_input_tokens']):,} | {r['facts_kept']} ({r['facts_kept_min']}) |")
        assert row in section, f"README leaderboard row for {name} differs from data/leaderboard_pi.csv: {row}"
    b, s, c = board["budgeted"], board["budgeted+summary"], board["compaction"]
    full = board["full"]
    stated = [f"{full['overflows']} of its 484 calls", f"({b['prefix_rewrites']} of 484 calls",
              f"costs {float(s['cost_usd']) / float(b['cost_usd']):.1f} times as much",
              f"for {s['summary_calls']} summary calls",
              f"costs {100 * (1 - float(c['cost_usd']) / float(b['cost_usd'])):.0f}% less than `budgeted`",
              f"({c['facts_kept_min']} against {b['facts_kept_min']})"]
    missing = [x for x in stated if x not in " ".join(section.split())]
    assert missing == [], f"README's leaderboard prose no longer matches data/leaderboard_pi.csv: {missing}"
