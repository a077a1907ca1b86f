"""The decision pipeline and the leaderboard."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from ctxlab.cli.main import main
from ctxlab.lab.compare import STRATEGIES, compare, format_rows, strategies_for
from ctxlab.io.checklist import load_facts
from ctxlab.io.formats import load
from ctxlab.messages import Entry
from ctxlab.pipeline import PipelineStrategy
from ctxlab.replay import replay

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="module")
def sample():
    return load(DATA / "sample_session.jsonl").conversation()


def test_pipeline_sends_as_is_under_the_trigger(sample):
    result = replay(sample, PipelineStrategy(), window=200_000, check=True)
    assert not result.new_entries, "nothing over the trigger: nothing shrunk, nothing compacted"
    assert all(not r.violations for r in result.records)


def test_pipeline_tries_paging_and_pruning_before_compacting(sample):
    result = replay(sample, PipelineStrategy(), window=30_000, check=True)
    kinds = [e.kind for e in result.new_entries]
    assert {"paged_result", "pruned_result"} & set(kinds), "the cheap local tools come first"
    first_shrink = min(i for i, k in enumerate(kinds) if k in ("paged_result", "pruned_result"))
    assert "compaction" not in kinds[:first_shrink]
    assert all(not r.violations for r in result.records)
    assert all(r.request.blocks[0].label == f"tool {sample.tools[0].name}" for r in result.records)
    tools = {tuple(b.digest for b in r.request.blocks if b.kind == "tools") for r in result.records}
    assert len(tools) == 1, "read_page is among the tools from the first call: the tools never change"


def test_pipeline_compacts_less_often_than_compaction_alone(sample):
    def count(strategy):
        return sum(1 for e in replay(sample, strategy, window=30_000).new_entries if e.kind == "compaction")
    assert count(PipelineStrategy()) <= count("compaction")


def test_recorded_joins_the_leaderboard_only_with_recorded_compactions(sample):
    assert strategies_for(sample) == STRATEGIES
    with_c = replace(sample, items=(*sample.items, Entry("compaction", "c", {"summary": "s"})))
    assert strategies_for(with_c)[-1] == "recorded"


def test_compare_rows_and_facts(sample):
    facts = load_facts(DATA / "sample_facts.json")
    rows = {r.name: r for r in compare(sample, ("full", "budgeted", "compaction"), window=30_000, facts=facts)}
    assert rows["full"].overflows > 0 and rows["budgeted"].overflows == 0
    assert rows["compaction"].compactions >= 1 and rows["compaction"].summary_calls == rows["compaction"].compactions
    assert rows["compaction"].facts_kept > rows["budgeted"].facts_kept, "a summary keeps what truncation loses"
    assert all(r.violations == 0 for r in rows.values())
    text = format_rows(list(rows.values()))
    assert "compaction" in text and "facts kept" in text


def test_a_strategy_that_cannot_fit_gets_a_row_that_says_why(sample):
    rows = compare(sample, ("budgeted",), window=12_000)
    assert rows[0].error and "budget" in rows[0].error and rows[0].cost_usd is None


def test_cli_compare_json(capsys):
    code = main(["replay", str(DATA / "sample_session.jsonl"), "--compare", "--window", "30000", "--json",
                 "--facts", str(DATA / "sample_facts.json"), "--check"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    names = [s["name"] for s in out["strategies"]]
    assert names == list(STRATEGIES)
    for s in out["strategies"]:
        for key in ("name", "cost_usd", "hit_rate", "compactions", "overflows", "total_input_tokens", "facts_kept"):
            assert key in s


@pytest.mark.shared
def test_compare_on_pi_with_recorded(shared_transcripts):
    conv = load(shared_transcripts / "pi-mono" / "before-compaction.jsonl").conversation()
    rows = {r.name: r for r in compare(conv, ("budgeted", "compaction", "recorded"),
                                       facts=load_facts(DATA / "pi_facts.json"))}
    assert rows["recorded"].compactions == 0  # recorded compactions are the transcript's, not new ones
    assert rows["compaction"].compactions >= 2
    assert all(r.violations == 0 for r in rows.values())
