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


def runs_kernels(path: Path) -> bool:
    """A file whose tests each start a Jupyter kernel and run a chapter: a notebook, or a real-input test file."""
    return path.suffix == ".ipynb" or path.name.endswith("_real_input.py")


def pytest_configure(config: pytest.Config) -> None:
    """pytest-xdist hands out the files in the order below (``--no-loadscope-reorder``, from xdist 3.8; before 3.8
    xdist always sorts them by their number of tests and this does nothing)."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Files in the order the two workers should take them: those that run chapters in kernels first, the longest
    per test, then the others by their number of tests, most first (xdist's own order). xdist's order alone sent
    those few-test, many-second files last, where one worker ran them while the other sat idle (measured: one
    worker done 44 s before the other under load). Within a file nothing moves."""
    by_file: dict[Path, list[pytest.Item]] = {}
    for item in items:
        by_file.setdefault(item.path, []).append(item)
    order = sorted(by_file, key=lambda path: (not runs_kernels(path), -len(by_file[path])))
    items[:] = [item for path in order for item in by_file[path]]


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
