"""Write data/pi_bill.csv: the real per-call bill of one pi coding-agent session.

Source: https://github.com/badlogic/pi-mono, packages/coding-agent/test/fixtures/before-compaction.jsonl
at commit 83378aad7e74a0e2bb8f37c007a9685fb4609d8a (MIT, Copyright (c) 2025 Mario Zechner), read
from the shared copy ../shared/data/transcripts/pi-mono/ (or the path given as the first argument).
Only numbers, model names and stop reasons are taken; no text of the session is copied.

One row per assistant message that carries a ``usage`` object (zeros included: an aborted request
is recorded with zeros), in file order:

    call        1-based index of the row
    timestamp   the message's own ``timestamp`` (ms since the epoch: when the request started), as ISO 8601 UTC
    gap_s       seconds since the previous row's timestamp (start to start; empty on the first row)
    input .. output, cost_*   the recorded ``usage`` numbers verbatim, as written in the file
                (pi's ``input`` is the uncached part of the prompt)
    event       entries between the previous call and this one: ``thinking_level_change:minimal>low``,
                ``model_change:claude-sonnet-4-5>claude-opus-4-5``, ``compaction:tokensBefore=175000``,
                joined by ``;`` (empty when none)

Simplified on purpose: plain ``json`` and ``csv``, no dependency on ctxlab's readers, so the bill
stays a check on them. Run ``python data/make_pi_bill.py [SOURCE.jsonl] [OUTDIR]``.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path

from csv_text import csv_text  # data/csv_text.py, beside this script

HERE = Path(__file__).resolve().parent
DEFAULT_SOURCE = HERE.parent.parent / "shared" / "data" / "transcripts" / "pi-mono" / "before-compaction.jsonl"
COLUMNS = ["call", "timestamp", "model", "provider", "stop_reason", "gap_s", "input", "cache_read",
           "cache_write", "output", "cost_input", "cost_output", "cost_cache_read", "cost_cache_write",
           "cost_total", "event"]


def _iso(ms: int) -> str:
    """``1765233665294`` → ``'2025-12-08T22:41:05.294Z'``."""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _event(kind: str, values: list[str]) -> str:
    return f"{kind}:{'>'.join(values)}"


def bill_rows(lines: list[str]) -> list[dict[str, object]]:
    """The bill as a list of dicts (column -> value), from the lines of a pi session file."""
    rows: list[dict[str, object]] = []
    pending: list[tuple[str, str]] = []  # (kind, value) of entries since the previous call
    last_ms: int | None = None
    for line in lines:
        if not line.strip():
            continue
        rec = json.loads(line, parse_float=str)  # keep each recorded number exactly as written
        kind = rec.get("type")
        if kind == "thinking_level_change":
            pending.append((kind, str(rec.get("thinkingLevel"))))
        elif kind == "model_change":
            pending.append((kind, str(rec.get("modelId"))))
        elif kind == "compaction":
            pending.append((kind, f"tokensBefore={rec.get('tokensBefore')}"))
        elif kind == "message" and rec["message"].get("role") == "assistant" and "usage" in rec["message"]:
            msg, usage = rec["message"], rec["message"]["usage"]
            cost = usage.get("cost", {})
            # consecutive entries of one kind collapse into one event: a>b>c
            events: list[tuple[str, list[str]]] = []
            for k, v in pending:
                if events and events[-1][0] == k:
                    events[-1][1].append(v)
                else:
                    events.append((k, [v]))
            ms = msg["timestamp"]
            rows.append({
                "call": len(rows) + 1, "timestamp": _iso(ms), "model": msg.get("model"),
                "provider": msg.get("provider"), "stop_reason": msg.get("stopReason"),
                "gap_s": "" if last_ms is None else (ms - last_ms) / 1000,
                "input": usage.get("input"), "cache_read": usage.get("cacheRead"),
                "cache_write": usage.get("cacheWrite"), "output": usage.get("output"),
                "cost_input": cost.get("input"), "cost_output": cost.get("output"),
                "cost_cache_read": cost.get("cacheRead"), "cost_cache_write": cost.get("cacheWrite"),
                "cost_total": cost.get("total"),
                "event": ";".join(_event(k, vs) for k, vs in events),
            })
            pending, last_ms = [], ms
    return rows


def to_csv(rows: list[dict[str, object]]) -> str:
    """The file's text (one shared writer: data/csv_text.py)."""
    return csv_text(rows, COLUMNS)


def main(argv: list[str]) -> int:
    source = Path(argv[0]) if argv else DEFAULT_SOURCE
    outdir = Path(argv[1]) if len(argv) > 1 else HERE
    if not source.exists():
        print(f"make_pi_bill: {source} not found; nothing written (the shared transcripts are not here).")
        return 0
    rows = bill_rows(source.read_text(encoding="utf-8").splitlines())
    target = outdir / "pi_bill.csv"
    target.write_bytes(to_csv(rows).encode("utf-8"))
    total = sum(float(r["cost_total"] or 0) for r in rows)
    print(f"make_pi_bill: wrote {target} ({len(rows)} calls, recorded cost ${total:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
