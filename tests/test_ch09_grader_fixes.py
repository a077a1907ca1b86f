"""Chapter 09's grader, as a fresh reader met it: numbers quoted for a chosen policy, whole details, the takeaway.

* A choice with a trigger and target is graded on the replay of that policy (chapter 07's ``policy_replay``,
  offline), not on the board's 0.8 → 0.5 row; a wrong number says "you quoted X, the ledger says Y".
* Every detail is printed whole: :func:`~ctxlab.lab.ch09_rubric.grade_table` wraps it at 100 characters.
* The takeaway grades ``CHOICE`` when the learner set one, and says which it graded.
* Question 2 no longer says ``recorded`` is on every board (it joins only with the transcript's own compactions).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import nbformat
import pytest

from ctxlab.lab.ch07_compaction import policy_replay
from ctxlab.lab.ch09_rubric import Choice, grade, grade_table, graded_row
from ctxlab.lab.compare import compare_row

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "09_your_agent.ipynb"


@pytest.fixture(scope="module")
def own():
    from ctxlab.lab.ch08_leaderboard import own_leaderboard
    from ctxlab.lab.data import SAMPLE_SESSION
    from ctxlab.lab.workbook import load_workbook_conversation

    if not SAMPLE_SESSION.exists():
        pytest.skip("data/sample_session.jsonl not generated")
    return own_leaderboard(load_workbook_conversation())


def _verdict(g, criterion: str):
    return next(v for v in g.verdicts if v.criterion == criterion)


def _truth(own, strategy: str, trigger: float, target: float):
    result = policy_replay(own.conversation, own.window, trigger, target, strategy=strategy)
    return compare_row(strategy, result, own.conversation, own.facts)


# ---- numbers quoted for a chosen policy ---------------------------------------------------------------------------


def test_a_policys_true_numbers_pass_and_the_boards_fail(own) -> None:
    truth, board = _truth(own, "pipeline", 0.6, 0.3), own.board.row("pipeline")
    assert abs(truth.cost_usd - board.cost_usd) > 0.01 * truth.cost_usd  # the case the reader met
    right = grade(Choice("pipeline", "cheaper at 0.6", trigger=0.6, target=0.3, cost_usd=round(truth.cost_usd, 4),
                         facts_kept=truth.facts_kept), own)
    assert _verdict(right, "ledger numbers").passed, right.rows()
    assert "pipeline at 0.6 → 0.3" in _verdict(right, "ledger numbers").detail
    wrong = grade(Choice("pipeline", "cheaper at 0.6", trigger=0.6, target=0.3, cost_usd=board.cost_usd,
                         facts_kept=truth.facts_kept + 1), own)
    detail = _verdict(wrong, "ledger numbers").detail
    assert _verdict(wrong, "ledger numbers").passed is False
    assert f"you quoted ${board.cost_usd:,.4f}, the ledger says ${truth.cost_usd:,.4f}" in detail
    assert f"you quoted {truth.facts_kept + 1} facts kept, the ledger says {truth.facts_kept}" in detail


def test_the_policy_row_is_the_one_graded(own) -> None:
    truth = _truth(own, "pipeline", 0.6, 0.3)
    row, label = graded_row(Choice("pipeline", "1", trigger=0.6, target=0.3), own)
    assert label == "pipeline at 0.6 → 0.3"
    assert (row.cost_usd, row.facts_kept, row.facts_kept_min, row.overflows) == \
        (truth.cost_usd, truth.facts_kept, truth.facts_kept_min, truth.overflows)
    g = grade(Choice("pipeline", "1", trigger=0.6, target=0.3, cost_usd=truth.cost_usd), own)
    assert f"worst call {truth.facts_kept_min} " in _verdict(g, "fact retention").detail


@pytest.mark.parametrize("kwargs", [{}, {"trigger": 0.8, "target": 0.5}, {"trigger": 0.5, "target": 0.8},
                                    {"trigger": 0.95, "target": 0.5}])
def test_no_policy_the_default_or_an_invalid_one_grades_the_board_row(own, kwargs: dict) -> None:
    row, label = graded_row(Choice("pipeline", "1", **kwargs), own)
    assert row == own.board.row("pipeline") and label == "pipeline"


def test_a_strategy_that_does_not_compact_keeps_its_board_row(own) -> None:
    row, label = graded_row(Choice("budgeted", "1", trigger=0.6, target=0.3), own)
    assert row == own.board.row("budgeted") and label == "budgeted"
    assert graded_row(Choice("no-such", "1"), own) == (None, "no-such")


# ---- details whole -------------------------------------------------------------------------------------------------


def test_details_are_whole_and_wrapped_at_100(own) -> None:
    g = grade(Choice("no-such-strategy", "3"), own)
    detail = _verdict(g, "on the board").detail
    assert all(r.name in detail for r in own.board.rows), detail  # not cut at 90 characters
    wrong = grade(Choice("pipeline", "1", trigger=0.6, target=0.3, cost_usd=9.99, facts_kept=99), own)
    for graded in (g, wrong):
        table = grade_table(graded)
        lines = table.splitlines()
        assert max(len(line) for line in lines) <= 100, table
        start = lines[0].index("detail")
        for criterion, _, text in graded.rows():  # each detail, read back across its lines, is whole
            first = next(i for i, line in enumerate(lines) if line.startswith(criterion + " "))
            more = []
            for line in lines[first + 1:]:
                if line[:start].strip():
                    break
                more.append(line[start:])
            assert " ".join([lines[first][start:], *more]) == " ".join(text.split()), table


def test_grade_table_wraps_to_a_narrower_width(own) -> None:
    g = grade(Choice("no-such-strategy", "3"), own)
    assert max(len(line) for line in grade_table(g, width=60).splitlines()) <= 60
    assert textwrap.dedent(grade_table(g)).startswith("criterion")


# ---- the notebook --------------------------------------------------------------------------------------------------


def _cell(nb, cell_id: str):
    return next(c for c in nb.cells if c.get("id") == cell_id)


def test_question_2_holds_on_every_transcript() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    questions = _cell(nb, "919cf5d6").source
    assert "Why is `recorded` on the board" not in questions
    assert "When does a `recorded` row appear on the board" in questions
    assert "compactions of its own" in questions


def test_the_takeaway_and_the_grader_cells_grade_choice(own) -> None:
    nbclient = pytest.importorskip("nbclient")
    truth = _truth(own, "pipeline", 0.6, 0.3)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    slot = _cell(nb, "d8fec8b5")
    assert slot.source.startswith("CHOICE = None")
    first, rest = slot.source.split("\n", 1)
    slot.source = (f"CHOICE = Choice('pipeline', 'cheaper at 0.6', trigger=0.6, target=0.3, "
                   f"cost_usd={truth.cost_usd!r}, facts_kept={truth.facts_kept!r})\n" + rest)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", record_timing=False,
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()

    def text(cell_id: str) -> str:
        return "".join(o.get("text", "") for o in _cell(nb, cell_id).outputs)

    mine = text("d8fec8b5")
    assert "ledger of pipeline at 0.6 → 0.3" in mine and "your choice: 7 of 7 criteria passed" in mine, mine
    takeaway = text("720be527")
    assert takeaway.startswith("Takeaway: ")
    assert f"Graded your CHOICE: pipeline at 0.6 → 0.3 — ${truth.cost_usd:,.4f}" in takeaway, takeaway
    assert "passes 7 of 7 rubric criteria" in takeaway, takeaway
    assert max(len(line) for line in (mine + takeaway).splitlines()) <= 100
    assert text("1b1c5695").startswith("pipeline at 0.6 → 0.3 in the loop: ")  # the loop runs the chosen policy


@pytest.mark.shared
def test_the_readers_codex_case(shared_transcripts: Path) -> None:
    """The reader's case: a Codex CLI rollout, ``pipeline`` at 0.6 → 0.3, the cost ``policy_replay`` gives quoted."""
    from ctxlab.lab.ch08_leaderboard import own_leaderboard
    from ctxlab.lab.workbook import load_workbook_conversation

    from notebook_runner import shared_file  # tests/notebook_runner.py

    board = own_leaderboard(load_workbook_conversation(shared_file(shared_transcripts, "codex-cli/rollout-*.jsonl")))
    truth = _truth(board, "pipeline", 0.6, 0.3)
    g = grade(Choice("pipeline", f"cheapest at ${truth.cost_usd:.4f}", trigger=0.6, target=0.3,
                     cost_usd=round(truth.cost_usd, 4)), board)
    assert _verdict(g, "ledger numbers").passed, g.rows()
    quoted = board.board.row("pipeline").cost_usd  # the board's 0.8 → 0.5 figure, quoted for 0.6 → 0.3
    if abs(quoted - truth.cost_usd) > 0.01 * truth.cost_usd:
        bad = grade(Choice("pipeline", "1", trigger=0.6, target=0.3, cost_usd=quoted), board)
        assert f"you quoted ${quoted:,.4f}, the ledger says ${truth.cost_usd:,.4f}" in \
            _verdict(bad, "ledger numbers").detail


def test_the_policy_replay_line_chapter_09_prints_for_the_learner_runs():
    # Chapter 09's markdown gives the learner this exact call to read a policy's cost; it must work as written.
    import re

    from ctxlab.lab.ch07_compaction import policy_replay
    from ctxlab.lab.ch08_leaderboard import own_leaderboard
    from ctxlab.lab.workbook import load_workbook_conversation

    nb = nbformat.read(REPO / "notebooks" / "09_your_agent.ipynb", as_version=4)
    line = next(m.group(1) for c in nb.cells if c.cell_type == "markdown"
                for m in [re.search(r"`(policy_replay\(own\.[^`]+)`", c.source)] if m)
    own = own_leaderboard(load_workbook_conversation())
    code = line.replace("trigger, target", "0.7, 0.35").replace("strategy=...", "strategy='pipeline'")
    cost = eval(code, {"policy_replay": policy_replay, "own": own})  # noqa: S307 - the chapter's own text
    assert cost is not None and cost > 0


def test_the_loop_runs_the_chosen_trigger_and_target(tmp_path):
    # The second trial: chapter 09's fake loop ran the chosen strategy with the default 0.8 → 0.5.
    from ctxlab.compaction import CompactionPolicy
    from ctxlab.lab.ch08_leaderboard import run_fake_loop
    from ctxlab.replay import get_strategy

    default = run_fake_loop(tmp_path / "a.jsonl", steps=12, window=6_000, strategy="compaction")
    low = run_fake_loop(tmp_path / "b.jsonl", steps=12, window=6_000,
                        strategy=get_strategy("compaction", policy=CompactionPolicy(0.5, 0.25)))
    assert max(s.request_tokens for s in low.steps) < max(s.request_tokens for s in default.steps)
    assert sum(s.compacted for s in low.steps) > sum(s.compacted for s in default.steps)


@pytest.mark.shared
def test_an_unpriced_transcript_without_a_checklist_grades_and_prices_as_the_chapter_says(shared_transcripts):
    """The fresh reader on tau-bench (no model, no checklist): the board showed "0.0%" hit rates (no provider, so
    no cache rules: no measurement), the workbook's pick failed its own rubric ("quote cost_usd or facts_kept"
    where the ledger had neither), and chapter 09 had no ``MODEL`` to price it."""
    from notebook_runner import shared_file  # tests/notebook_runner.py

    from ctxlab.lab.ch06_choices import priced
    from ctxlab.lab.ch08_leaderboard import own_leaderboard
    from ctxlab.lab.ch09_rubric import board_rows, recommend
    from ctxlab.lab.workbook import load_workbook_conversation

    bare = load_workbook_conversation(shared_file(shared_transcripts, "tau-bench/*.json"))
    own = own_leaderboard(bare)
    assert bare.provider is None and {row[2] for row in board_rows(own) if row[1] != "cannot build a context"} == {"—"}
    g = grade(recommend(own), own)
    assert _verdict(g, "ledger numbers").passed is None and "set MODEL" in _verdict(g, "ledger numbers").detail
    assert g.ok and g.applicable >= 3
    named = own_leaderboard(priced(bare, "gpt-4o"))
    hits = [row[2] for row in board_rows(named) if row[1] != "cannot build a context"]
    assert all(h.endswith("%") for h in hits) and any(h != "0.0%" for h in hits)
    priced_grade = grade(recommend(named), named)
    assert _verdict(priced_grade, "ledger numbers").passed is True and priced_grade.ok

    nb = nbformat.read(NOTEBOOK, as_version=4)
    slots = [c.source for c in nb.cells if c.cell_type == "code" and c.source.startswith(("TRANSCRIPT =", "MODEL ="))]
    assert [s.split(" =")[0] for s in slots] == ["TRANSCRIPT", "MODEL"]
    assert any("priced(load_workbook_conversation(TRANSCRIPT), MODEL)" in c.source for c in nb.cells)
