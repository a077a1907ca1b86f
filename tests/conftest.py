"""Shared test set-up: the path to the shared transcripts, and the network guard.

The guard itself is pytest-socket, switched on for every run in pyproject.toml's ``addopts``
(``--disable-socket --allow-hosts=127.0.0.1,::1,localhost``): a test may open sockets to this
machine (Jupyter kernels talk over loopback) and nothing else; a connect elsewhere raises
``SocketConnectBlockedError``. ``tests/test_setup.py`` proves it. Notebook kernels are separate
processes: ``run.py test`` gives them an IPython start-up file with the same rule.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# The workshop tree keeps real agent transcripts beside the repository (read-only, not committed).
SHARED_TRANSCRIPTS = REPO.parent / "shared" / "data" / "transcripts"


# Issue 11 of the brief (tracker issue 14) adds the readers for the transcripts the shared folder
# gained; until a reader lands, a file whose format no reader recognises is skipped with this reason.
NOT_READ_YET = ("format not read yet (issue 11 / tracker #14, readers for the new shared transcripts): "
                "no reader recognises it")


def is_transcript(path: Path) -> bool:
    """A data file of the shared folder, not its documentation: README.md, SOURCE-README.md,
    LICENSE and hidden files are left out."""
    return (path.is_file() and not path.name.startswith(".") and "README" not in path.name.upper()
            and not path.name.upper().startswith("LICENSE"))


def shared_transcript_files() -> list[Path]:
    """Every transcript under the shared folder (documentation files left out); [] when absent."""
    if not SHARED_TRANSCRIPTS.is_dir():
        return []
    return sorted(p for p in SHARED_TRANSCRIPTS.glob("*/*") if is_transcript(p))


def skip_unless_a_reader_recognises(path: Path) -> str:
    """The format ``detect`` gives ``path``; skips the test (naming issue 11) only when no reader
    recognises the file. Any other error (a reader that claims the file and then fails) raises."""
    from ctxlab.io import formats
    from ctxlab.base.errors import UnknownFormatError

    try:
        return formats.detect(path)
    except UnknownFormatError as err:
        pytest.skip(f"{path.parent.name}/{path.name}: {NOT_READ_YET} ({err.problem})")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test asking for ``shared_transcript`` runs once per shared file (its path relative to the folder)."""
    if "shared_transcript" in metafunc.fixturenames:
        names = [p.relative_to(SHARED_TRANSCRIPTS).as_posix() for p in shared_transcript_files()]
        metafunc.parametrize("shared_transcript", names or ["(none)"])


@pytest.fixture(scope="session")
def shared_transcripts() -> Path:
    """``<repo>/../shared/data/transcripts``; the test is skipped, with the reason, when it is absent."""
    if not SHARED_TRANSCRIPTS.is_dir():
        pytest.skip(f"shared transcripts not found at {SHARED_TRANSCRIPTS} (they sit beside the repository "
                    "in the workshop tree; a plain clone does not have them)")
    return SHARED_TRANSCRIPTS


@pytest.fixture(scope="session")
def sample():
    """The bundled sample session's conversation, as the chapters load it (one load per test process)."""
    from ctxlab.lab.data import SAMPLE_SESSION
    from ctxlab.lab.workbook import load_workbook_conversation

    if not SAMPLE_SESSION.exists():
        pytest.skip("data/sample_session.jsonl not generated yet (python data/make_sample.py)")
    return load_workbook_conversation()
