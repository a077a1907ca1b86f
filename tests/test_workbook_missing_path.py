"""A missing TRANSCRIPT names the full path and says what to do, in one line (issue 16, trial finding 9)."""

from pathlib import Path

import pytest

from ctxlab.lab.workbook import load_workbook_conversation


def test_a_missing_transcript_names_its_full_path_and_the_fix(tmp_path: Path) -> None:
    missing = tmp_path / "deep" / "absent.jsonl"
    with pytest.raises(FileNotFoundError) as err:
        load_workbook_conversation(missing)
    message = str(err.value)
    assert str(missing.resolve()) in message
    assert "Set TRANSCRIPT" in message and "\n" not in message
