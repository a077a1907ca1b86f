"""Issue 16's reader trial: a chapter's bad-line error said "load with strict=False", which a learner in a notebook
could not act on. The chapters' loader takes ``strict`` and says where to pass it."""

import hashlib
import shutil

import pytest

from ctxlab.base.errors import TranscriptError
from ctxlab.lab.data import SAMPLE_SESSION
from ctxlab.lab.workbook import load_workbook_conversation


@pytest.fixture
def torn(tmp_path):
    if not SAMPLE_SESSION.exists():
        pytest.skip("the bundled sample is not there")
    path = tmp_path / "torn.jsonl"
    shutil.copy(SAMPLE_SESSION, path)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[19] = '{"broken\n'  # line 20: not JSON, in the middle of the file
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_a_bad_line_names_the_file_the_line_and_what_to_edit(torn):
    before = hashlib.sha256(torn.read_bytes()).hexdigest()
    with pytest.raises(TranscriptError) as info:
        load_workbook_conversation(torn)
    line = str(info.value)
    assert "\n" not in line and line.startswith("torn.jsonl:20: not valid JSON")
    assert "load_workbook_conversation(TRANSCRIPT, strict=False)" in line and "load with strict" not in line
    assert info.value.line == 20
    assert hashlib.sha256(torn.read_bytes()).hexdigest() == before  # the file read is never changed


def test_strict_false_skips_the_line_and_keeps_the_rest(torn):
    whole = load_workbook_conversation(None)
    read = load_workbook_conversation(torn, strict=False)
    assert len(read.messages) == len(whole.messages) - 1
    assert any(n.startswith("torn.jsonl:20:") and "skipped" in n for n in read.notes)  # said, not dropped silently
