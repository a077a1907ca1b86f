"""Fact retention (chapter 06): which checklist facts the model can see at each call — verbatim, only in
a summary, only through a page handle — on the sample, on small hand-made sessions and on pi."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ctxlab.facts import Fact, fact_retention, split_request
from ctxlab.io.checklist import load_facts
from ctxlab.io.formats import load
from ctxlab.messages import Conversation, assistant, tool_result, user
from ctxlab.replay import replay
from ctxlab.summary_strategy import BudgetedSummaryStrategy
from ctxlab.views import SUMMARY_MARKER

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"


@pytest.fixture(scope="module")
def sample() -> Conversation:
    return load(DATA / "sample_session.jsonl").conversation()


@pytest.fixture(scope="module")
def sample_facts() -> list[Fact]:
    return load_facts(DATA / "sample_facts.json")


def test_load_facts_reads_a_list_or_an_object_with_a_source(tmp_path: Path) -> None:
    facts = load_facts(DATA / "sample_facts.json")
    assert len(facts) == 22 and facts[0] == Fact("f01", "constraint", "use port 8443, never 8080", "m002")
    doc = json.loads((DATA / "pi_facts.json").read_text(encoding="utf-8"))
    assert doc["source"]["licence"] == "MIT" and doc["source"]["commit"] == "83378aad7e74a0e2bb8f37c007a9685fb4609d8a"
    assert "Mario Zechner" in doc["source"]["copyright"]
    pi = load_facts(DATA / "pi_facts.json")
    assert 18 <= len(pi) <= 25 and len({f.id for f in pi}) == len(pi)
    assert all(len(f.text) < 80 for f in pi)
    assert {f.kind for f in pi} <= {"constraint", "path", "error_code", "step", "decision"}


def test_a_budgeted_summary_keeps_more_facts_than_budgeted_alone(sample: Conversation,
                                                                   sample_facts: list[Fact]) -> None:
    plain = fact_retention(replay(sample, "budgeted", window=30_000), sample_facts, sample)
    summary = fact_retention(replay(sample, BudgetedSummaryStrategy(), window=30_000), sample_facts, sample)
    assert plain.facts_kept_last < summary.facts_kept_last  # measured: 10 < 18 of 19 known at the last call
    assert plain.facts_kept_min / plain.facts_known_at_min < summary.facts_kept_min / summary.facts_known_at_min
    assert (plain.facts_kept_last, plain.facts_known_last) == (10, 19)
    assert (plain.facts_kept_min, plain.facts_known_at_min, plain.min_call) == (1, 13, 42)
    assert (summary.facts_kept_last, summary.facts_known_last) == (18, 19)
    assert (summary.facts_kept_min, summary.facts_known_at_min, summary.min_call) == (9, 10, 31)
    last = summary.rows[-1]
    assert last.lost == ("f06",)  # 生产环境只允许 TLS 1.3: said only inside a tool result (a README read)
    assert len(last.visible) == 10 and len(last.summary) == 8
    assert not plain.rows[-1].summary and all(not r.paged for r in plain.rows)
    # the facts of the final message (f20-f22) are never known: no call comes after it
    assert summary.facts_total == 22 and "f20" not in last.visible + last.summary + last.lost


def test_without_truncation_every_known_fact_is_visible(sample: Conversation, sample_facts: list[Fact]) -> None:
    report = fact_retention(replay(sample, "full"), sample_facts, sample)
    assert all(r.kept == r.known and not r.lost for r in report.rows)
    assert report.facts_kept_min == report.facts_known_at_min and report.min_call == 1
    assert "19 of 19 facts kept at the last call" in str(report) and "<table>" in report._repr_html_()


def test_split_request_puts_an_appended_summary_on_the_summary_side(sample: Conversation) -> None:
    result = replay(sample, BudgetedSummaryStrategy(placement="system_end"), window=30_000)
    seen, summary = split_request(result.records[-1].request)
    assert SUMMARY_MARKER not in seen and summary.startswith(SUMMARY_MARKER)
    assert "Environment" in seen  # the base system prompt stays on the visible side


def _page_session() -> tuple[Conversation, list[Fact]]:
    doc = "\n".join(f"row {i}: nothing to see" for i in range(2_000))
    doc = doc.replace("row 1000: nothing to see", "row 1000: the key is KX-4471")
    items = (user("Read data.txt and keep going.", "u1"),
             assistant("", "a1", calls=(("c1", "read_file", {"path": "data.txt"}),)),
             tool_result("c1", doc, "t1", name="read_file"),
             assistant("Read it.", "a2"),
             user("Thanks. Use port 8443.", "u2"),
             assistant("Noted.", "a3"))
    return Conversation("paged", items, model="claude-sonnet-4-5", provider="anthropic"), [
        Fact("k1", "decision", "the key is KX-4471", "t1"), Fact("k2", "constraint", "Use port 8443", "u2"),
        Fact("k3", "path", "data.txt", "a1")]


def test_a_fact_inside_a_paged_result_is_reachable_through_its_handle() -> None:
    paging = pytest.importorskip("ctxlab.paging")
    conv, facts = _page_session()
    result = replay(conv, paging.PagedStrategy())
    report = fact_retention(result, facts, conv)
    assert [r.known for r in report.rows] == [0, 2, 3]  # a call knows what came before its response
    assert report.rows[1].paged == report.rows[2].paged == ("k1",)  # in the page, not in the context
    assert report.rows[1].visible == ("k3",) and report.rows[2].visible == ("k2", "k3")  # k3: a call's argument
    assert report.facts_kept_last == 2 and (report.facts_kept_min, report.facts_known_at_min) == (1, 2)
    (entry,) = result.new_entries
    seen, _ = split_request(result.records[-1].request)
    assert entry.data["handle"] in seen and "KX-4471" not in seen


def test_a_fact_not_in_the_conversation_is_an_error(sample: Conversation) -> None:
    with pytest.raises(ValueError, match="zz"):
        fact_retention(replay(sample, "full"), [Fact("zz", "path", "x", "no-such-message")], sample)


# ---- the shared pi session ---------------------------------------------------------------------

@pytest.mark.shared
def test_pi_checklist_strings_occur_verbatim_in_their_messages(shared_transcripts: Path) -> None:
    conv = load(shared_transcripts / "pi-mono" / "before-compaction.jsonl").conversation()
    messages = {m.id: m for m in conv.messages}
    facts = load_facts(DATA / "pi_facts.json")
    for f in facts:
        assert f.message_id in messages, f.id
        assert f.text in messages[f.message_id].text, f.id
    # spread over both compactions and after them
    position = {it.id: k for k, it in enumerate(conv.items)}
    cuts = [position[e.data["first_kept_id"]] for e in conv.entries if e.kind == "compaction"]
    counts = [sum(1 for f in facts if lo <= position[f.message_id] < hi)
              for lo, hi in zip([0, *cuts], [*cuts, len(conv.items)])]
    assert len(cuts) == 2 and all(n >= 4 for n in counts)


@pytest.mark.shared
def test_pi_summary_scores_equal_a_fresh_regeneration(shared_transcripts: Path, tmp_path: Path) -> None:
    source = shared_transcripts / "pi-mono" / "before-compaction.jsonl"
    subprocess.run([sys.executable, str(DATA / "make_summary_scores.py"), str(source), str(tmp_path)],
                   check=True, capture_output=True, cwd=ROOT)
    assert (tmp_path / "pi_summaries_score.csv").read_bytes() == (DATA / "pi_summaries_score.csv").read_bytes(), \
        "data/pi_summaries_score.csv is stale: run `python data/make_summary_scores.py`"


def test_pi_summary_scores_are_numbers_and_fact_ids_only() -> None:
    rows = list(csv.DictReader((DATA / "pi_summaries_score.csv").open(encoding="utf-8")))
    assert [int(r["compaction"]) for r in rows] == [1, 2]
    facts = {f.id: f.text for f in load_facts(DATA / "pi_facts.json")}
    for r in rows:
        for col in ("messages_in_scope", "messages_new", "facts_in_scope", "tokens_llm", "kept_llm",
                    "tokens_rule", "kept_rule"):
            int(r[col])
        for col in ("kept_llm_ids", "kept_rule_ids"):
            assert set(r[col].split()) <= set(facts)
        assert int(r["kept_llm"]) == len(r["kept_llm_ids"].split()) <= int(r["facts_in_scope"])
        assert int(r["tokens_rule"]) <= int(r["tokens_llm"])  # the rule-based summary at the same size or less
