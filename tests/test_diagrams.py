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


def test_request_breakpoints_equal_renders(diagrams):
    from ctxlab.lab.replays import REPLAYS
    result = REPLAYS.replay(load_workbook_conversation(None), "full", provider="anthropic")
    by_call = {r.call.index: r.request for r in result.records}
    for call in diagrams["request"].data["calls"]:
        assert call["breakpoints"] == list(by_call[call["call"]].breakpoints)
    root = ET.fromstring(diagrams["request"].svg)
    drawn = [e for e in root.iter(NS + "polygon") if e.get("class") == "breakpoint"]
    assert len(drawn) == sum(len(c["breakpoints"]) for c in diagrams["request"].data["calls"])
