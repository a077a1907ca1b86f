"""Chapter 08 in a real browser: JupyterLab, Run All, move the leaderboard widget's strategy and window, read the DOM.

The same machinery as ``tests/test_browser.py`` (its fixtures and JupyterLab steps, imported from it): marked
``browser``, skipped with the reason when there is no Chromium or no Python ``playwright``. The expected numbers
are not written here: they come from :func:`ctxlab.lab.ch08_leaderboard.leaderboard_state` on the leaderboard this
process replays for the sample, as the chapter's cells build it.
"""

from __future__ import annotations

import re

import pytest

from test_browser import (REACT_MS, browser, changed, chromium, lab, open_and_run_all, page,  # noqa: F401 - fixtures
                          widget_with)

CHAPTER_08 = "08_putting_it_together.ipynb"


def expected(strategy: str, window: int):
    """The widget's numbers for one setting, computed as the chapter computes them (the sample, its facts)."""
    from ctxlab.lab.ch08_leaderboard import facts_for, leaderboard_state, quick_strategies
    from ctxlab.lab.compare import leaderboard
    from ctxlab.lab.workbook import load_workbook_conversation

    sample = load_workbook_conversation()
    board = leaderboard(sample, quick_strategies(sample), window=window, facts=facts_for(sample))
    return leaderboard_state(board, strategy, window)


def label_for(state) -> str:
    """The start of the widget's label for a state without an error (see ``LeaderboardWidget._render``)."""
    r = state.selected
    cost = "unpriced" if r.cost_usd is None else f"${r.cost_usd:,.4f}"
    return (f"{state.strategy} at window {state.window:,}: cost {cost}, hit rate {100 * (r.hit_rate or 0):.1f}%, "
            f"{r.compactions} compactions, {state.rewrites} prefix rewrites, largest context {state.max_context:,}")


@pytest.mark.browser
def test_chapter_08_strategy_and_window_change_the_leaderboard(page, lab: str) -> None:  # noqa: F811
    from ctxlab.lab.ch08_leaderboard import leaderboard_window
    from ctxlab.lab.workbook import load_workbook_conversation

    open_and_run_all(page, lab, CHAPTER_08)
    widget = widget_with(page, "strategy", "window")
    htmls = widget.locator(".widget-html")  # the progress line is one too: read the one that names a setting

    class label:  # noqa: N801 - reads like the other browser tests' label locator
        @staticmethod
        def inner_text() -> str:
            return next((t for t in htmls.all_inner_texts() if re.match(r"^\S+ at window [\d,]+", t)), "")
    strategy = widget.locator(".widget-dropdown", has=page.locator(".widget-label", has_text="strategy")).locator(
        "select")
    window = widget.locator(".widget-dropdown", has=page.locator(".widget-label", has_text="window")).locator("select")
    first = leaderboard_window(load_workbook_conversation())

    # Run All leaves the widget at budgeted and the chapter's window (its last cell puts it there).
    start = expected("budgeted", first)
    before = changed(label.inner_text, "", lambda got: got.startswith(label_for(start)))
    assert before.startswith(label_for(start)), before

    # Another strategy: the kernel reads its replay and redraws the label with the module's numbers.
    strategy.select_option(label="compaction")
    comp = expected("compaction", first)
    after = changed(label.inner_text, before, lambda got: got.startswith("compaction"), timeout_ms=REACT_MS)
    assert after.startswith(label_for(comp)), after
    assert comp.selected.compactions > 0 and label_for(comp) != label_for(start)

    # A larger window: the label names it and the numbers are that window's board.
    table = widget.locator("pre").first
    rows_before = table.inner_text()
    options = [o.strip() for o in window.locator("option").all_inner_texts()]
    larger = next(o for o in options if int(o.replace(",", "")) > first)
    window.select_option(label=larger)
    wide = expected("compaction", int(larger.replace(",", "")))
    moved = changed(label.inner_text, after, lambda got: f"at window {larger}:" in got
                    and "replaying" not in got, timeout_ms=REACT_MS * 3)
    assert moved.startswith(label_for(wide)), moved
    from ctxlab.lab.compare import format_rows
    assert " ".join(table.inner_text().split()) == " ".join(format_rows(wide.rows).split()) != " ".join(
        rows_before.split())  # the table under the bars is the new window's board
