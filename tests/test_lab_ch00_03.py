"""Chapters 00–03's measurements (``ctxlab/lab/ch00_bill.py`` … ``ch03_budget.py``, ``lab/workbook.py``):
plain functions returning frozen rows, tested without ipywidgets or plotly. The widgets over them are
tested in ``test_widgets.py``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ctxlab.base.errors import BudgetError
from ctxlab.context import BudgetPolicy, build_context
from ctxlab.estimators import get_counter
from ctxlab.io.session import Session
from ctxlab.lab import ch00_bill, ch01_content, ch01_tokens, ch02_session, ch03_budget, workbook
from ctxlab.lab.ch00_bill import (
    PRICINGS,
    REWRITE_COLUMNS,
    bill_view,
    find_rewrites,
    prices_from_bill,
    read_bill,
    rewrite_rows,
    summarize,
)
from ctxlab.lab.ch01_content import estimator_rows, estimator_table, han_count
from ctxlab.lab.ch01_tokens import chips, counter_rows, counts
from ctxlab.lab.ch02_session import branch_view, item_label, leaf_rows, remove_working_copies, sha256_of, working_copy
from ctxlab.lab.ch03_budget import (
    STATE_COLUMNS,
    bin_labels,
    budget_bounds,
    budget_state,
    default_profiles,
    granularity_rows,
    granularity_stats,
    minimum_budget,
    spread_budgets,
    state_row,
    state_rows,
)
from ctxlab.lab.workbook import conversation_rows
from ctxlab.messages import Conversation, Entry, assistant, tool_result, user
from ctxlab.tables.profiles import profile_for
from ctxlab.tokens import MessageMeter

REPO = Path(__file__).resolve().parents[1]
MODULES = (ch00_bill, ch01_tokens, ch02_session, ch03_budget, workbook, ch01_content)  # the first four return rows

BILL_HEADER = ("call,timestamp,model,provider,stop_reason,gap_s,input,cache_read,cache_write,output,cost_input,"
               "cost_output,cost_cache_read,cost_cache_write,cost_total,event\n")


def _bill(tmp_path: Path) -> Path:
    """Three calls at $5/M input, $0.5/M read, $6.25/M write, $25/M output; a 10-minute pause before call 3."""
    rows = [(1, "", 10, 0, 2_000, 100), (2, "5", 10, 2_000, 50, 100), (3, "600", 10, 0, 2_100, 100)]
    lines = []
    for call, gap, inp, read, write, out in rows:
        ci, cr, cw, co = inp * 5e-6, read * 5e-7, write * 6.25e-6, out * 25e-6
        lines.append(f"{call},t,claude-x,anthropic,stop,{gap},{inp},{read},{write},{out},{ci},{co},{cr},{cw},"
                     f"{ci + co + cr + cw},")
    path = tmp_path / "bill.csv"
    path.write_text(BILL_HEADER + "\n".join(lines) + "\n", encoding="utf-8")
    return path


def _conversation() -> Conversation:
    msgs = [user("Which port does staging use? " * 20, "u1"),
            assistant("", "a1", calls=(("c1", "read_file", {"path": "config/staging.yaml"}),)),
            tool_result("c1", "port: 8443\n" * 200, "t1"),
            assistant("Staging uses 8443. " * 10, "a2"),
            user("And production?", "u2"),
            assistant("Production uses 443.", "a3")]
    return Conversation(id="small", items=tuple(msgs), system=("You are careful.",), model="gpt-4o",
                        provider="openai")


# ---- every module: no UI, every public name names its chapter -----------------------------------------

# (No UI library in lab/, and a chapter named by every public name: tests/test_layout.py, for every module.)


@pytest.mark.parametrize("module", MODULES[:4], ids=lambda m: m.__name__)
def test_result_rows_are_frozen(module):
    classes = [getattr(module, n) for n in module.__all__ if dataclasses.is_dataclass(getattr(module, n))]
    assert classes and all(c.__dataclass_params__.frozen for c in classes)


# ---- chapter 00 -----------------------------------------------------------------------------------------

def test_bill_view_prices_the_same_calls_two_ways(tmp_path):
    calls = read_bill(_bill(tmp_path))
    summary = summarize(calls)
    billed, uncached = (bill_view(calls, p, find_rewrites(calls, min_tokens=1_000)) for p in PRICINGS)
    assert billed.total_usd == pytest.approx(summary.cost_usd)
    assert uncached.total_usd == pytest.approx(summary.no_cache_cost_usd) and uncached.total_usd > billed.total_usd
    assert billed.cumulative_usd[-1] == billed.total_usd and len(billed.cumulative_usd) == 3
    assert billed.rewrite_calls == (3,)  # the pause: call 3 wrote again what call 2 left cached
    assert bill_view(calls, PRICINGS[0], prices=prices_from_bill(calls)) == dataclasses.replace(billed,
                                                                                                rewrite_calls=())
    with pytest.raises(ValueError, match="pricing"):
        bill_view(calls, "free")


def test_prices_and_rewrite_rows_from_a_small_bill(tmp_path):
    calls = read_bill(_bill(tmp_path))
    p = prices_from_bill(calls)["claude-x"]
    assert (p.input, p.cache_read, p.cache_write, p.output) == pytest.approx((5e-6, 5e-7, 6.25e-6, 25e-6))
    rows = rewrite_rows(find_rewrites(calls, min_tokens=1_000))
    assert [tuple(r) for r in rows] == [REWRITE_COLUMNS]
    assert rows[0]["call"] == 3 and rows[0]["gap"] == "600 s" and rows[0]["rewritten"] == 2_050
    assert "pause of 10.0 min" in rows[0]["cause"]
    s = summarize(calls)
    assert dict(s.rows())["model calls"] == "3" and 0 < s.saved_share < 1


# ---- chapter 01 -----------------------------------------------------------------------------------------

def test_counter_rows_and_counts_agree_with_the_counters():
    text = "Context windows 上下文窗口 {\"port\": 8443}"
    c = counts(text)
    assert c == {n: get_counter(n).count(text) for n in c}
    rows = {name: (n, err) for name, n, err in counter_rows(text)}
    assert rows["o200k_base"] == (c["o200k_base"], "+0.0%")
    assert set(rows) == set(c)


def test_chips_stop_at_the_limit_and_han_count():
    text = "hello world, hello again"
    assert len(chips(text, limit=2)) == 2 and "".join(p for p, _ in chips(text)) == text
    assert han_count("上下文 window") == 3 and han_count("window") == 0


def test_estimator_table_has_one_row_per_content_type():
    samples = {"English prose": "The agent read the file and changed the port. " * 10, "Chinese": "上下文窗口管理" * 30}
    rows = estimator_table(estimator_rows(samples))
    assert [r["content"] for r in rows] == list(samples)
    assert rows[1]["chars/4"].startswith("-")  # chars/4 under-counts Chinese
    assert all(set(r) == {"content", "chars", "o200k", "chars/token", "chars/3", "chars/4", "cl100k_base"}
               for r in rows)


# ---- chapter 02 -----------------------------------------------------------------------------------------

def test_item_label_previews_messages_and_entries():
    assert item_label(user("hello\nworld", "u1")) == "hello world"
    assert item_label(assistant("", "a1", calls=(("c1", "bash", {"command": "ls"}),))) == "calls bash"
    assert item_label(user("x" * 100, "u2"), width=10) == "x" * 9 + "…"
    assert item_label(Entry(kind="compaction", id="e1")) == "[compaction]"


def test_branch_view_and_leaf_rows_after_a_fork(tmp_path):
    conv = _conversation()
    session = Session.create(tmp_path / "s.jsonl", model=conv.model, provider=conv.provider)
    for m in conv.messages:
        session.append(m)
    session.fork("a2")
    session.append(user("and staging's TLS version?", "f1"))
    profile = profile_for(conv.model)
    meter = MessageMeter(profile)
    view = branch_view(session, "f1", "a3", BudgetPolicy(), profile, meter)
    assert (view.leaf, view.path_items, view.shared, view.context_messages) == ("f1", 5, 4, 5)
    same = branch_view(session, "a3", "a3", BudgetPolicy(), profile, meter)
    assert same.shared == same.path_items == len(conv.messages) and same.dropped_units == 0
    assert {r["leaf"]: r["path items"] for r in leaf_rows(session)} == {"a3": 6, "f1": 5}


def test_remove_working_copies_deletes_every_copy(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    conv = _conversation()
    source = tmp_path / "mine.jsonl"
    session = Session.create(source, model=conv.model)
    for m in conv.messages:
        session.append(m)
    remove_working_copies()  # whatever an earlier test left
    copies = [working_copy(source), working_copy(source)]
    assert all(c.exists() and sha256_of(c) == sha256_of(source) for c in copies)
    assert remove_working_copies() == 2 and not any(c.exists() for c in copies) and source.exists()
    assert remove_working_copies() == 0


# ---- chapter 03 -----------------------------------------------------------------------------------------

def test_bin_labels_and_granularity_rows():
    assert bin_labels((100, 1_000)) == ["< 100", "100–1k", "≥ 1k"]
    conv = _conversation()
    stats = granularity_stats(conv, MessageMeter(profile_for(conv.model)))
    rows = granularity_rows(stats)
    assert [r["granularity"] for r in rows] == ["round", "turn"]
    assert all(sum(r[label] for label in bin_labels()) == r["units"] for r in rows)


def test_budget_state_matches_build_context_and_reports_errors():
    conv = _conversation()
    profile = profile_for(conv.model)
    meter = MessageMeter(profile)
    lo, hi = budget_bounds(conv, profile, meter, step=100)
    needed = minimum_budget(conv, profile, meter)
    assert lo == max(100, int(needed * 0.9) // 100 * 100) and needed < hi <= profile.context_window
    state = budget_state(conv, hi, "mine", profile, meter)
    ctx = build_context(conv, BudgetPolicy(budget_tokens=hi), profile=profile)
    assert state.profile == "mine" and state.kept_messages == len(ctx.messages) and not state.error
    assert sum(state.breakdown.values()) == hi and len(state.decisions) == state.units
    bad = budget_state(conv, 10, "mine", profile, meter)
    assert bad.error and bad.needed > 10 and bad.breakdown["free"] == 10
    assert state_row(bad)[-1] == f"too small: needs {bad.needed:,}" and len(state_row(state)) == len(STATE_COLUMNS)
    assert dict(state_rows(bad))["error"] == bad.error and dict(state_rows(state))["units"] == f"{state.units:,}"
    with pytest.raises(BudgetError):
        build_context(conv, BudgetPolicy(budget_tokens=10), profile=profile)


def test_spread_budgets_and_default_profiles():
    assert spread_budgets(1_000, 61_000, 500) == [7_000, 31_000, 55_000]
    assert spread_budgets(1_000, 1_500, 500) == [1_000, 1_500]
    assert list(default_profiles(_conversation())) == ["gpt-4o", "claude-sonnet-4-6"]
    assert list(default_profiles(Conversation(id="x", items=()))) == ["claude-sonnet-4-6", "gpt-4o"]


# ---- the workbook ---------------------------------------------------------------------------------------

def test_conversation_rows_count_by_role():
    rows = dict(conversation_rows(_conversation()))
    assert (rows["messages"], rows["  user"], rows["  assistant"], rows["  tool results"]) == (6, 2, 3, 1)
    assert rows["tool calls"] == 1 and rows["model"] == "gpt-4o"
