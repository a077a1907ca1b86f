"""The writer process of tests/test_crash_safety.py: appends to a session until it is killed.

Not a test module (no ``test_`` prefix). :func:`write_until_killed` runs in a forked child process;
each record's id says what it holds (``r3-17-65536``: round 3, append 17, 65,536 characters of
text), so the test can check every record that survived a kill byte for byte.

A kill that must land mid-line is not left to timing (a 4 MB ``write()`` may finish before the
signal arrives on a loaded machine): for the append numbered ``stall_at`` the writer puts a seeded
prefix of that append's bytes on disk, fsyncs, reports ``STALLED`` on the progress pipe and waits
to be killed. The file then holds exactly what a crash inside that ``write()`` leaves.
"""

from __future__ import annotations

import builtins
import os
import random
import time
from typing import Any

SIZES = (16, 16, 16, 120, 120, 2_000, 65_536)  # characters of text per record, drawn with the seed
HUGE = 256 * 1024  # the stalled append's record: big enough to span several pages
LIMIT = 5_000  # appends per round if nobody kills the writer first
APPENDED, STALLED = b".", b"!"  # progress bytes: one append returned; the stalled append is half on disk


class _StallingFile:
    """Wraps the file ``Session._write`` opens: ``write(data)`` puts the bytes before ``cut`` of
    the record line (the last line of ``data``) on disk, reports ``STALLED`` and never returns."""

    def __init__(self, real: Any, cut: int, progress_fd: int) -> None:
        self.real, self.cut, self.progress_fd = real, cut, progress_fd

    def __enter__(self) -> "_StallingFile":
        return self

    def __exit__(self, *exc: object) -> None:
        self.real.close()

    def write(self, data: bytes) -> int:
        line_start = data.rstrip(b"\n").rfind(b"\n") + 1  # after the newline and torn marker, if any
        line_length = len(data) - line_start  # the record's JSON and its newline
        keep = line_start + 1 + self.cut % (line_length - 2)  # 1 .. line_length - 2 bytes: no closing "}"
        self.real.write(data[:keep])
        self.real.flush()
        os.fsync(self.real.fileno())
        os.write(self.progress_fd, STALLED)
        while True:  # the parent kills us here
            time.sleep(60)


def write_until_killed(path: str, tag: str, seed: int, progress_fd: int, stall_at: int | None = None) -> None:
    """Open the session at ``path`` and append user messages ``{tag}-{i}-{size}`` (seeded sizes;
    ``HUGE`` for append number ``stall_at``, which stalls half-written), writing ``APPENDED`` to
    the pipe ``progress_fd`` after each append returns."""
    from ctxlab.io import session as session_module
    from ctxlab.messages import user
    from ctxlab.io.session import Session

    rng = random.Random(seed)
    session = Session.open(path)
    for i in range(LIMIT):
        record_id = f"{tag}-{i}-{HUGE if i == stall_at else rng.choice(SIZES)}"
        if i == stall_at:
            cut = rng.randrange(1 << 30)
            session_module.open = lambda file, mode="r", *a, **k: _StallingFile(  # type: ignore[attr-defined]
                builtins.open(file, mode, *a, **k), cut, progress_fd)
        session.append(user(record_text(record_id), record_id))
        os.write(progress_fd, APPENDED)


def record_text(record_id: str) -> str:
    """The text a record with this id holds: ``"r0-1-16"`` → 16 characters."""
    size = int(record_id.rsplit("-", 1)[1])
    return (record_id + ":" + "x" * size)[:size]
