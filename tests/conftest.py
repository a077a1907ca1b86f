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


def shared_transcript_files() -> list[Path]:
    """Every transcript under the shared folder (README and LICENSE files left out); [] when absent."""
    if not SHARED_TRANSCRIPTS.is_dir():
        return []
    return sorted(p for p in SHARED_TRANSCRIPTS.glob("*/*")
                  if p.is_file() and p.name not in ("README.md", "LICENSE") and not p.name.startswith("."))


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
    from ctxlab.workbook import SAMPLE_SESSION, load_workbook_conversation

    if not SAMPLE_SESSION.exists():
        pytest.skip("data/sample_session.jsonl not generated yet (python data/make_sample.py)")
    return load_workbook_conversation()
