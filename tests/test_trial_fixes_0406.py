"""Reader-trial fixes for chapters 00, 04 and 06: one definition of a cache miss (its gap and cause) shared by
chapters 00 and 04; chapter 04's pause error in one line; chapter 06's "known" labelled apart from the checklist size.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from ctxlab.lab.ch00_bill import miss_table, misses_by_cause
from ctxlab.lab.ch04_ledger import MISS_COLUMNS, bill_ledger, miss_rows, with_pause
from ctxlab.lab.data import PI_BILL
from ctxlab.ledger import Ledger, make_row

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
needs_bill = pytest.mark.skipif(not PI_BILL.exists(), reason="data/pi_bill.csv not generated yet")


def _row(call: int, at: str, read: int, write: int, note: str = "") -> object:
    return make_row(thread="main", call=call, model="claude-opus-4-5", provider="anthropic", at=at,
                    uncached_input_tokens=0, cache_read_tokens=read, cache_write_tokens=write, output_tokens=10,
                    note=note)


def test_an_empty_call_is_not_the_previous_call_and_its_note_carries_over():
    ledger = Ledger([_row(1, "2025-01-01T00:00:00Z", 0, 5_000),
                     _row(2, "2025-01-01T00:04:00Z", 0, 0, note="compaction"),  # aborted: no prompt sent
                     _row(3, "2025-01-01T00:06:00Z", 0, 5_000)])
    misses = miss_rows(ledger)
    assert [m[0] for m in misses] == [1, 3]  # the empty call is no miss
    third = misses[1]
    assert third[MISS_COLUMNS.index("gap")] == "360 s"  # since call 1, the last call that sent a prompt
    assert "gap over the 5-min TTL" in third[-1] and "call 2, no usage: compaction" in third[-1]


def _printed(nb_name: str, marker: str) -> str:
    nb = nbformat.read(NOTEBOOKS / nb_name, as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code" and marker in c.source]
    assert cells, f"{nb_name}: no cell with {marker!r}"
    return "".join(o.get("text", "") for o in cells[0].get("outputs", []) if o.get("output_type") == "stream")


def _table(text: str, header: str) -> list[list[str]]:
    """The rows of the text table whose header line starts with ``header``, cut at the header's column starts."""
    lines = text.splitlines()
    at = next(k for k, line in enumerate(lines) if line.startswith(header))
    rule = lines[at + 1]
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", rule)]
    rows = []
    for line in lines[at + 2:]:
        if not line.strip() or line.startswith("  call "):
            break
        cells = [line[a:(spans[k + 1][0] if k + 1 < len(spans) else None)].strip() for k, (a, _) in enumerate(spans)]
        rows.append(cells)
    return rows


@needs_bill
def test_chapter_00s_miss_table_is_chapter_04s():
    expected = [(m[0], m[1], m[-1]) for m in miss_rows(bill_ledger(PI_BILL))]
    assert miss_table(PI_BILL) == expected


def _chapter_00_misses(text: str) -> list[tuple[int, str, str]]:
    """(call, gap, cause) from chapter 00's by-cause lines: ``  calls 293 (67 s), 342 (148 s): no cause recorded``."""
    out = []
    for line in text.splitlines():
        m = re.match(r"^  calls? ((?:\d+(?: \([\d,]+ s\))?(?:, )?)+): (.+)$", line)
        if m:
            cause = "" if m.group(2) == "no cause recorded" else m.group(2)
            pairs = re.findall(r"(\d+)(?: \(([\d,]+) s\))?", m.group(1))
            out += [(int(k), f"{g} s" if g else "", cause) for k, g in pairs]
    return sorted(out)


@needs_bill
def test_the_miss_lists_chapters_00_and_04_print_agree():
    ch00_rows = _chapter_00_misses(_printed("00_start_here.ipynb", "misses_by_cause(misses)"))
    text04 = _printed("04_prefix_cache_ledger_further.ipynb", "misses = miss_rows(pi)")
    causes = dict(re.findall(r"^  call (\d+): (.*)$", text04, re.M))
    ch04_rows = [(int(r[0]), r[1], causes.get(r[0], "")) for r in _table(text04, "call  gap")]
    assert len(ch00_rows) == 14 and ch00_rows == ch04_rows  # same calls, gaps and causes
    assert ch00_rows == [(m[0], m[1], m[-1]) for m in miss_rows(bill_ledger(PI_BILL))]  # and today's definition


def test_misses_by_cause_groups_in_order_and_puts_no_cause_last():
    rows = [(1, "", "first call"), (5, "9 s", ""), (7, "400 s", "gap over the 5-min TTL"), (9, "3 s", "")]
    assert misses_by_cause(rows) == [("first call", [(1, "")]), ("gap over the 5-min TTL", [(7, "400 s")]),
                                     ("no cause recorded", [(5, "9 s"), (9, "3 s")])]


def test_the_pause_error_fits_the_widgets_line():
    import dataclasses

    from ctxlab.base.errors import CtxlabError
    from ctxlab.lab.data import SAMPLE_SESSION
    from ctxlab.lab.workbook import load_workbook_conversation

    if not SAMPLE_SESSION.exists():
        pytest.skip("the bundled sample is not there")
    sample = load_workbook_conversation(None)
    bare = dataclasses.replace(sample, items=tuple(dataclasses.replace(i, timestamp=None) for i in sample.items))
    with pytest.raises(CtxlabError, match="no timestamp") as err:
        with_pause(bare, 20, 10)
    assert len(str(err.value)) <= 60 and str(err.value) == "call 19 has no timestamp: no pause can follow it"


def test_chapter_06_labels_known_apart_from_the_checklist_size():
    from ctxlab.lab.ch06_summaries import RETENTION_COLUMNS

    assert RETENTION_COLUMNS[1] == "known (last)"
    text = _printed("06_summaries.ipynb", "scored = retention(")
    m = re.search(r"known \(last\): the checklist facts recorded before the last call, (\d+) of its (\d+)", text)
    assert m and int(m.group(1)) <= int(m.group(2))
    choices = _printed("06_summaries.ipynb", "print(text_table([r.as_row() for r in rows], CHOICE_COLUMNS))")
    assert "summary call is one request to the summarizer" in choices
    assert not re.search(r"\b(\d[\d,]*) summary calls instead of \1\b", choices)  # equal numbers said plainly
