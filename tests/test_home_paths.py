"""A path written the way the README writes it (``~/.pi/agent/sessions/...``) is read from the home directory.

``Path("~/x")`` is a relative path named ``~`` to Python; a shell expands it, and so must ``load`` and the
chapters' ``TRANSCRIPT`` (``load_workbook_conversation``). The trial that found it: ``FileNotFoundError`` for a
file that was there.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ctxlab.io.formats import load
from ctxlab.lab.data import SAMPLE_SESSION
from ctxlab.lab.workbook import load_workbook_conversation


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("USERPROFILE", str(tmp_path))  # what Path.expanduser reads on Windows
    shutil.copy(SAMPLE_SESSION, tmp_path / "session.jsonl")
    return tmp_path


def test_load_expands_the_home_directory(home: Path) -> None:
    by_tilde, by_path = load("~/session.jsonl"), load(home / "session.jsonl")
    assert len(by_tilde.conversation().messages) == len(by_path.conversation().messages) > 0


def test_a_chapters_transcript_expands_the_home_directory(home: Path) -> None:
    assert len(load_workbook_conversation("~/session.jsonl").messages) == \
        len(load_workbook_conversation(home / "session.jsonl").messages)


def test_a_missing_file_under_home_is_refused_naming_it(home: Path) -> None:
    with pytest.raises(FileNotFoundError, match="absent.jsonl: your transcript is not there"):
        load_workbook_conversation("~/absent.jsonl")
