"""The diagrams (ctxlab/diagrams): standalone valid SVG, deterministic, drawn from the code's own numbers."""

import xml.etree.ElementTree as ET

import pytest

from ctxlab.context import BudgetPolicy, build_context
from ctxlab.diagrams import backward_walk, request_layout
from ctxlab.diagrams.walk import first_not_fitting
from ctxlab.lab.workbook import load_workbook_conversation
from ctxlab.tables.profiles import profile_for

NS = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def diagrams():
    return {"walk": backward_walk(), "request": request_layout()}


def test_valid_standalone_svg_and_short_text(diagrams):
    for d in diagrams.values():
        root = ET.fromstring(d.svg)
        assert root.tag == NS + "svg" and d._repr_svg_() == d.svg
        assert "<script" not in d.svg and "href" not in d.svg
        assert all(len(line) <= 100 for line in d.text.splitlines())


def test_deterministic(diagrams):
    assert backward_walk().svg == diagrams["walk"].svg
    assert request_layout().svg == diagrams["request"].svg


def test_walk_cut_is_build_contexts_first_unit_not_fitting(diagrams):
    conv = load_workbook_conversation(None)
    ctx = build_context(conv, BudgetPolicy(budget_tokens=8_000), profile=profile_for(conv.model, conv.provider))
    cut = first_not_fitting(ctx)
    assert cut is not None and diagrams["walk"].data["cut"] == cut.unit
    assert cut.decision == "dropped" and cut.tokens is not None
    root = ET.fromstring(diagrams["walk"].svg)
    assert len([e for e in root.iter(NS + "rect") if e.get("class") == "unit cut"]) == 1


def test_the_walks_table_accounts_for_every_unit_and_token(diagrams):
    """The fresh reader's stumble: "231 left" did not follow from the rows, and 16 units were missing from the
    table (fitted, then dropped because the history must open with a user message). Every unit of the report is
    in one row, and the fixed part plus every counted row reach the budget less what the cut says is left."""
    walk = diagrams["walk"]
    ctx = walk.data["context"]
    rows = [line.split() for line in walk.text.splitlines()[3:]]
    units = sum(1 if r[0] == "unit" else int(r[0]) for r in rows if r[0] != "fixed")
    assert units == len(ctx.report)
    assert walk.data["dropped_after"] and all(r.decision == "dropped" for r in ctx.report
                                              if r.unit in walk.data["dropped_after"])
    cut = first_not_fitting(ctx)
    left = int(cut.reason.split(", ")[1].split()[0].replace(",", ""))
    counted = sum(r.tokens for r in ctx.report if r.tokens is not None and r is not cut)
    assert walk.data["fixed"] + counted == ctx.budget_tokens - left
    root = ET.fromstring(walk.svg)
    assert len([e for e in root.iter(NS + "rect") if e.get("class") == "unit dropped"]) == len(walk.data["dropped_after"])


def test_request_breakpoints_equal_renders(diagrams):
    from ctxlab.lab.replays import REPLAYS
    result = REPLAYS.replay(load_workbook_conversation(None), "full", provider="anthropic")
    by_call = {r.call.index: r.request for r in result.records}
    for call in diagrams["request"].data["calls"]:
        assert call["breakpoints"] == list(by_call[call["call"]].breakpoints)
    root = ET.fromstring(diagrams["request"].svg)
    drawn = [e for e in root.iter(NS + "polygon") if e.get("class") == "breakpoint"]
    assert len(drawn) == sum(len(c["breakpoints"]) for c in diagrams["request"].data["calls"])


# --- the session tree (02), the sawtooth (07), the decision pipeline (08), and the committed figures ---------

import subprocess
import sys
from pathlib import Path

from ctxlab.diagrams import ALL, decision_pipeline, sawtooth, session_tree
from ctxlab.diagrams.pipeline import ended_at, stages
from ctxlab.io.session import Session
from ctxlab.lab.ch07_compaction import compaction_call, compaction_window, policy_replay
from ctxlab.lab.data import SAMPLE_SESSION
from ctxlab.lab.replays import REPLAYS

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def more():
    return {"tree": session_tree(), "saw": sawtooth(), "pipe": decision_pipeline()}


def test_new_diagrams_are_valid_deterministic_and_short(more):
    again = {"tree": session_tree(), "saw": sawtooth(), "pipe": decision_pipeline()}
    for key, d in more.items():
        assert ET.fromstring(d.svg).tag == NS + "svg" and "<script" not in d.svg
        assert all(len(line) <= 100 for line in d.text.splitlines())
        assert again[key].svg == d.svg


def test_tree_highlights_the_path_to_head(more):
    s = Session.open(SAMPLE_SESSION)
    d = more["tree"]
    assert d.data["path"] == [item.id for item in s.path()] and d.data["head"] == s.head
    assert d.data["leaves"] == s.leaves() and len(d.data["leaves"]) >= 2
    root = ET.fromstring(d.svg)
    assert len([e for e in root.iter(NS + "rect") if e.get("class") == "branch head"]) == 1
    assert len([e for e in root.iter(NS + "line") if e.get("class") == "fork"]) == len(s.leaves()) - 1
    assert all(len(s.children(f)) > 1 for f in d.data["forks"])


def test_sawtooth_marks_the_replays_compactions(more):
    d = more["saw"]
    conv = load_workbook_conversation(None)
    window = compaction_window(conv)
    result = policy_replay(conv, window)
    calls = [compaction_call(e.id) for e in result.new_entries if e.kind == "compaction"]
    assert d.data["compactions"] == calls and d.data["window"] == window
    assert d.data["tokens"] == [r.context_tokens for r in result.records]
    assert d.data["trigger"] == int(0.8 * window) and d.data["target"] == int(0.5 * window)
    assert all(v > d.data["target"] for v in d.data["floors"].values())
    drawn = [e for e in ET.fromstring(d.svg).iter(NS + "polygon") if e.get("class") == "compaction"]
    assert len(drawn) == len(calls)


def test_pipeline_stages_come_from_the_strategy_and_counts_from_the_replay(more):
    d = more["pipe"]
    assert d.data["stages"] == stages() and stages()[0] == ("meter",) and ("compact",) in stages()
    conv = load_workbook_conversation(None)
    result = REPLAYS.replay(conv, "pipeline", window=compaction_window(conv))
    assert sum(d.data["ended"].values()) == len(result.records) == d.data["calls"]
    assert d.data["ended"]["compact"] == sum(1 for r in result.records if ended_at(r.notes) == "compact") >= 1
    assert ended_at(("compacted 1 → 2",)) == "compact" and ended_at(()) == "send"


def test_committed_figures_equal_a_fresh_render():
    done = subprocess.run([sys.executable, str(REPO / "tools" / "draw_diagrams.py"), "--check"],
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    for name in ALL:
        assert (REPO / "docs" / "figures" / f"{name}.svg").exists()
        assert f"figures/{name}.svg" in (REPO / "docs" / "diagrams.md").read_text(encoding="utf-8")
