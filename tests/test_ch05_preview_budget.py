"""Chapter 05: the paged preview is head + page notice + tail, so it passes the pruning budget by the notice.

The notice carries the page handle and the ``read_page`` call needed to get the hidden lines back; it is not
part of the head/tail budget and cannot shrink, so the chapter must say so beside the numbers."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

from ctxlab.io.page_store import PageStore
from ctxlab.lab.ch05_paging import paged_preview, prune_state
from ctxlab.messages import tool_result
from ctxlab.tokens import TiktokenCounter

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "05_pruning_and_paging.ipynb"


def _log(n: int = 600) -> str:
    return "".join(f"2025-10-14T10:{i % 60:02d}:00 step {i} ran job-{i * 7 % 101} status ok\n" for i in range(n))


def test_excess_over_budget_is_the_page_notice():
    counter = TiktokenCounter("o200k_base")
    msg = tool_result("c1", _log(), "t1", name="bash")
    s = prune_state(msg, 1_000, 500, 10, PageStore.in_memory(), counter=counter)
    assert s.page_tokens > s.view.budget  # the preview is larger than the pruning budget ...
    store = PageStore.in_memory()
    shown, _ = paged_preview(msg, store, 1_000, 500, counter)
    notice = re.search(r"\n\[\.\.\. page .*?\.\.\.\]\n", shown.text)
    assert notice is not None
    without = shown.text[:notice.start()] + shown.text[notice.end():]
    # ... and without the notice it is head + tail within a few tokens of the requested 1,500
    assert abs(counter.count(without) - 1_500) <= 15
    assert s.page_tokens - s.view.budget <= counter.count(notice.group(0))


def test_chapter_says_why_the_preview_passes_the_budget():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    cell = next(c for c in nb.cells if c.get("id") == "a3f7b93b")
    text = "".join(o.get("text", "") for o in cell.outputs)
    row = re.search(r"^1,000\s+500\s+([\d,]+)\s.*?([\d,]+)\s*$", text, re.M)
    assert row is not None
    budget, preview = (int(g.replace(",", "")) for g in row.groups())
    said = re.search(r"paged preview ([\d,]+) > budget ([\d,]+) by ([\d,]+): page notice", text)
    assert said is not None, "the chapter prints the preview over its budget without saying why"
    p, b, over = (int(g.replace(",", "")) for g in said.groups())
    assert (p, b, over) == (preview, budget, preview - budget)
