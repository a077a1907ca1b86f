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


def _scored_call_by_call(result, facts, conversation: Conversation) -> list[tuple]:
    """The definition, call by call, with no memo: each fact looked for in the request's joined wire text (outside
    and inside a summary), page handles in each side's text — what fact_retention computes once per block."""
    from ctxlab.facts import wire_forms as _forms
    from ctxlab.messages import Entry, Message
    from ctxlab.paging import PAGE_HANDLE
    from ctxlab.strategies import model_calls

    where = {it.id: (k, it) for k, it in enumerate(conversation.items)}
    calls = {c.message.id: k for k, c in model_calls(conversation)}
    entries = [*conversation.entries, *(e for e in result.new_entries if isinstance(e, Entry))]
    pages = {e.data["handle"]: e.data.get("message_id") for e in entries if e.kind == "paged_result"}
    rows = []
    for rec in result.records:
        at = calls.get(rec.call.message.id, len(conversation.items))
        known = [f for f in facts if where[f.message_id][0] < at and where[f.message_id][1].thread == rec.call.thread]
        seen, summary = split_request(rec.request)
        live = {pages[h] for text in (seen, summary) for pair in PAGE_HANDLE.findall(text) for h in pair if h in pages}
        status = []
        for f in known:
            source = where[f.message_id][1]
            if any(form in seen for form in _forms(f.text)):
                status.append((f.id, "visible"))
            elif any(form in summary for form in _forms(f.text)):
                status.append((f.id, "summary"))
            elif f.message_id in live and isinstance(source, Message) and f.text in source.text:
                status.append((f.id, "paged"))
            else:
                status.append((f.id, "lost"))
        rows.append((rec.call.thread, rec.call.index, tuple(status)))
    return rows


@pytest.mark.parametrize("strategy", ["full", "budgeted", "paged", "budgeted+summary", "compaction"])
def test_scoring_each_block_once_gives_the_call_by_call_answer(sample: Conversation, sample_facts: list[Fact],
                                                                strategy: str) -> None:
    """fact_retention scans each block's text once per replay; the answer is the one scanning every call's
    joined text gives — with facts whose text holds a newline, or is empty, looked for in the joined text."""
    odd = [Fact("x1", "step", "", sample_facts[0].message_id),
           Fact("x2", "step", sample_facts[1].text + "\n", sample_facts[1].message_id)]
    facts = sample_facts + odd
    result = replay(sample, strategy, window=30_000)
    report = fact_retention(result, facts, sample)
    got = [(r.thread, r.call, tuple(sorted([(f, "visible") for f in r.visible] + [(f, "summary") for f in r.summary]
                                           + [(f, "paged") for f in r.paged] + [(f, "lost") for f in r.lost])))
           for r in report.rows]
    expected = [(t, c, tuple(sorted(s))) for t, c, s in _scored_call_by_call(result, facts, sample)]
    assert got == expected
    assert "visible" in {s for _, _, st in expected for _, s in st}
