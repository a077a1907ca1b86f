"""The one CSV writer of the data generators: ``\\n`` line ends, so the bytes are the same on every platform."""

from __future__ import annotations

import csv
import io
from typing import Iterable, Sequence


def csv_text(rows: Iterable[dict[str, object]], columns: Sequence[str],
             header: Iterable[tuple[str, str]] = ()) -> str:
    """``# key: value`` header lines (if any), the column row, then one row per dict."""
    out = io.StringIO()
    for key, value in header:
        out.write(f"# {key}: {value}\n")
    writer = csv.DictWriter(out, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()
