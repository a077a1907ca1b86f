"""data/formats.csv (every shared transcript: how it is read, and the replay's fidelity to its
recorded usage) is what a fresh run of data/make_format_table.py writes, and the README's table
of the shared transcripts is the one made from that CSV."""

from __future__ import annotations

import csv
import importlib.util
import sys

import pytest

from conftest import REPO, SHARED_TRANSCRIPTS, shared_transcript_files

DATA = REPO / "data"
TABLE = DATA / "formats.csv"


def generator():
    sys.path.insert(0, str(DATA))  # make_format_table imports csv_text beside it
    try:
        spec = importlib.util.spec_from_file_location("make_format_table", DATA / "make_format_table.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(DATA))


def committed_rows() -> list[dict[str, str]]:
    with TABLE.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def test_the_readme_table_is_made_from_the_csv():
    table = generator().markdown_table(TABLE)
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert table in readme, "README's table of the shared transcripts is stale: python data/make_format_table.py --markdown"
    assert table.count("\n") == len(committed_rows()) + 2


def test_the_csv_holds_no_text_of_a_session():
    for row in committed_rows():
        for key in ("conversations", "messages", "tool_calls", "tool_results", "usage_calls", "recorded_input_tokens"):
            assert row[key].isdigit(), (row["file"], key)
        assert int(row["usage_calls"]) <= int(row["messages"]) and int(row["tool_results"]) <= int(row["messages"])


@pytest.mark.shared
def test_the_csv_lists_every_shared_file(shared_transcripts):
    listed = {(r["folder"], r["file"]) for r in committed_rows()}
    assert listed == {(p.parent.name, p.name) for p in shared_transcript_files()}


@pytest.mark.shared
def test_a_fresh_run_writes_the_committed_csv(shared_transcripts, tmp_path):
    assert generator().main([str(SHARED_TRANSCRIPTS), str(tmp_path)]) == 0
    fresh = (tmp_path / TABLE.name).read_text(encoding="utf-8")
    assert fresh == TABLE.read_text(encoding="utf-8"), "data/formats.csv is stale: run python data/make_format_table.py"
