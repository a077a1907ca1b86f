"""The writer process of tests/test_crash_safety.py: appends to a session until it is killed.

Not a test module (no ``test_`` prefix). :func:`write_until_killed` runs in a forked child process;
each record's id says what it holds (``r3-17-65536``: round 3, append 17, 65,536 characters of
text), so the test can check every record that survived a kill byte for byte.
"""

from __future__ import annotations

import os
import random

SIZES = (16, 16, 16, 120, 120, 2_000, 65_536)  # characters of text per record, drawn with the seed
HUGE = 4 * 1024 * 1024  # one record this big takes milliseconds to write: time for a kill to land mid-line
LIMIT = 5_000  # appends per round if nobody kills the writer first


def record_text(record_id: str) -> str:
    """The text a record with this id holds: ``"r0-1-16"`` → 16 characters."""
    size = int(record_id.rsplit("-", 1)[1])
    return (record_id + ":" + "x" * size)[:size]


def write_until_killed(path: str, tag: str, seed: int, progress_fd: int, huge_at: int | None = None) -> None:
    """Open the session at ``path`` and append user messages ``{tag}-{i}-{size}`` (seeded sizes;
    ``HUGE`` for append number ``huge_at``), writing one byte to the pipe ``progress_fd`` after
    each append returns."""
    from ctxlab.messages import user
    from ctxlab.session import Session

    rng = random.Random(seed)
    session = Session.open(path)
    for i in range(LIMIT):
        record_id = f"{tag}-{i}-{HUGE if i == huge_at else rng.choice(SIZES)}"
        session.append(user(record_text(record_id), record_id))
        os.write(progress_fd, b".")
