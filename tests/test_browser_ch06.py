"""Chapter 06 in a real browser: JupyterLab, Run All, move the core widget's two choices, read the DOM.

The same machinery as ``tests/test_browser.py`` (its fixtures and JupyterLab steps, imported from it): marked
``browser``, skipped with the reason when there is no Chromium or no Python ``playwright``. Chapter 04's core
widget (the pause and the cache rules) is moved there already. The expected numbers are not written here: they come
from :func:`ctxlab.lab.ch06_choices.choice_row` run in this process at the chapter's window.
"""

from __future__ import annotations

import re

import pytest

from test_browser import (REACT_MS, browser, changed, chromium, lab, open_and_run_all, page,  # noqa: F401 - fixtures
                          widget_with)

CHAPTER_06 = "06_summaries.ipynb"


def expected(placement: str, regenerate: str):
    """The chapter's ledger row for one setting, computed here as the chapter's cells compute it (sample, no MODEL)."""
    from ctxlab.lab.ch06_choices import choice_row, priced
    from ctxlab.lab.ch06_summaries import summary_window
    from ctxlab.lab.workbook import load_workbook_conversation

    conv = priced(load_workbook_conversation(None), None)
    return choice_row(conv, summary_window(conv), placement, regenerate)


def summary_calls(label: str) -> int:
    m = re.search(r"([\d,]+) summary calls", label)
    assert m, label
    return int(m.group(1).replace(",", ""))


def cost_text(row) -> str:
    """The widget's cost words for a row (see ``SummaryChoiceWidget._render``)."""
    if row.total_cost_usd is None:
        return "unpriced (no model recorded)"
    return f"${row.total_cost_usd:,.4f}, of which summary calls ${row.summary_cost_usd or 0:,.4f}"


def button(widget, text: str):
    return widget.locator(".widget-toggle-button", has_text=re.compile(rf"^\s*{re.escape(text)}\s*$")).first


@pytest.mark.browser
def test_chapter_06_regeneration_and_placement_change_the_summary_bill(page, lab: str) -> None:  # noqa: F811
    from ctxlab.widgets.ch06_choices import LABELS

    open_and_run_all(page, lab, CHAPTER_06)
    widget = widget_with(page, "summary goes at", "regenerate it")
    label = widget.locator(".widget-html").nth(0)
    # Run All leaves the controls where the chapter's last cell put them; start from a known setting.
    button(widget, LABELS["system_end"]).click()
    button(widget, LABELS["every_call"]).click()
    every = expected("system_end", "every_call")
    before = changed(label.inner_text, "", lambda got: summary_calls(got) == every.summary_calls
                     and LABELS["system_end"] in got and LABELS["every_call"] in got)
    assert summary_calls(before) == every.summary_calls, before
    assert cost_text(every) in before, before

    # Regenerate only on a change: fewer summary calls, the bill the module computes for it.
    button(widget, LABELS["on_change"]).click()
    change = expected("system_end", "on_change")
    after = changed(label.inner_text, before, lambda got: LABELS["on_change"] in got, timeout_ms=REACT_MS)
    assert LABELS["on_change"] in after, after
    assert summary_calls(after) == change.summary_calls < every.summary_calls, after
    assert cost_text(change) in after and f"{100 * change.hit_rate:.1f}%" in after, after

    # Where the summary goes: its own system block; the label follows the module again.
    button(widget, LABELS["system_block"]).click()
    block = expected("system_block", "on_change")
    moved = changed(label.inner_text, after, lambda got: LABELS["system_block"] in got, timeout_ms=REACT_MS)
    assert LABELS["system_block"] in moved, moved
    assert summary_calls(moved) == block.summary_calls, moved
    assert cost_text(block) in moved and f"{100 * block.hit_rate:.1f}%" in moved, moved

    # Extend with what is new (ctxlab's default, issue 18): the fewest summary prompt tokens; the label follows.
    button(widget, LABELS["extend"]).click()
    grown = expected("system_block", "extend")
    extended = changed(label.inner_text, moved, lambda got: LABELS["extend"] in got, timeout_ms=REACT_MS)
    assert LABELS["extend"] in extended, extended
    assert summary_calls(extended) == grown.summary_calls <= block.summary_calls, extended
    assert cost_text(grown) in extended and f"{100 * grown.hit_rate:.1f}%" in extended, extended
