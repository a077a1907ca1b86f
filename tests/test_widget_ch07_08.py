"""Chapters 07 and 08: the sawtooth and leaderboard widgets driven by setting their controls, the chapter's
measurements (trims against batches, the loop trap, coverage after two compactions, metering), the committed
pi figures, and the fake agent loop. Numbers are compared, never plotly internals."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ctxlab.lab.compare import STRATEGIES, compare, format_rows
from ctxlab.messages import Conversation, Entry, ToolSpec, Usage, assistant, tool_result, user
from ctxlab.replay import replay
from ctxlab.io.session import Session

pytest.importorskip("ipywidgets")
pytest.importorskip("plotly")

from ctxlab.lab.ch07_compaction import (  # noqa: E402
    compaction_window,
    policy_replay,
    prefix_rewrites,
    sawtooth,
    sawtooth_rows,
    state_row,
)
from ctxlab.lab.ch07_floor import coverage_after, floor_case, loop_trap, naive_rounds  # noqa: E402
from ctxlab.lab.ch07_metering import first_triggers, metering_compare  # noqa: E402
from ctxlab.lab.ch07_policies import cached_replay, pipeline_steps, policy_grid, policy_rows  # noqa: E402
from ctxlab.widgets.ch07_compaction import SawtoothWidget  # noqa: E402
from ctxlab.lab.ch08_leaderboard import (  # noqa: E402
    TASK,
    best,
    body_shape,
    facts_for,
    fake_llm,
    leaderboard_state,
    leaderboard_window,
    own_leaderboard,
    quick_strategies,
    same_contexts,
    read_leaderboard_csv,
    rewrite_counts,
    run_fake_loop,
    widget_windows,
)
from ctxlab.lab.compare import compare_row, leaderboard  # noqa: E402
from ctxlab.lab.data import LEADERBOARD_PI  # noqa: E402
from ctxlab.widgets.ch08_leaderboard import LeaderboardWidget, leaderboard_figure  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
PI_SOURCE = REPO.parent / "shared" / "data" / "transcripts" / "pi-mono" / "before-compaction.jsonl"
WINDOW = 30_000


@pytest.fixture(scope="module")
def sample_facts(sample):
    return facts_for(sample)


@pytest.fixture
def saw(sample) -> SawtoothWidget:
    return SawtoothWidget(sample, WINDOW)


def stamp(k: int) -> str:
    return f"2025-01-01T10:{k // 60:02d}:{k % 60:02d}Z"  # one second apart: the cache never expires


def steady_session(rounds: int = 40) -> Conversation:
    """A session that grows by about the same amount at every call (no single huge result)."""
    items, t = [user("Port the CLI to the new config format. Never touch prod.yaml.", "u0", timestamp=stamp(0))], 0
    for r in range(rounds):
        t += 1
        items.append(assistant(f"step {r}", f"a{r}", calls=((f"c{r}", "read_file", {"path": f"src/m{r}.py"}),),
                               timestamp=stamp(t), usage=Usage(output_tokens=30)))
        items.append(tool_result(f"c{r}", "".join(f"line {i} of module {r}\n" for i in range(40)), f"t{r}",
                                 timestamp=stamp(t)))
    items.append(assistant("done", "final", timestamp=stamp(t + 1)))
    tools = (ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}}),)
    return Conversation("steady", tuple(items), system=("You are a careful coding agent. " * 60,), tools=tools,
                        model="claude-sonnet-4-5", provider="anthropic")


# ---- chapter 07: the sawtooth widget ----

def test_compaction_window_on_the_sample(sample):
    assert compaction_window(sample) == WINDOW


def test_a_lower_trigger_compacts_more_often(saw):
    high = saw.state
    assert high.compaction_calls == (31, 32) and not high.error
    saw.trigger.value = 0.6
    low = saw.state
    assert (low.trigger_ratio, low.target_ratio) == (0.6, 0.5)
    assert len(low.compactions) > len(high.compactions)
    assert set(high.compaction_calls) <= set(low.compaction_calls)
    assert low.compaction_calls[0] <= high.compaction_calls[0]


def test_a_lower_trigger_compacts_earlier_on_a_steady_session():
    w = SawtoothWidget(steady_session(), 12_000)
    first_high = w.state.compaction_calls[0]
    w.trigger.value = 0.6
    assert w.state.compaction_calls[0] < first_high
    assert len(w.state.compactions) > 0
    w.target.value = 0.3  # a lower target: each compaction frees more, so fewer are needed
    fewer = w.state
    w.target.value = 0.55
    assert len(fewer.compactions) <= len(w.state.compactions)


@pytest.mark.parametrize("trigger, target", [(0.8, 0.5), (0.6, 0.3), (0.9, 0.7), (0.8, 0.75), (0.5, 0.1)])
def test_the_sawtooth_stays_under_the_window_and_drops_at_each_compaction(saw, trigger, target):
    saw.trigger.value, saw.target.value = trigger, target
    s = saw.state
    assert not s.error and s.calls == 77
    assert s.max_context <= WINDOW and s.overflows == 0
    for c in s.compactions:
        assert c.tokens_after < c.tokens_before
        assert s.context_tokens[c.call - 1] == c.tokens_after  # what that call sent
        assert c.tokens_before > trigger * WINDOW  # it compacted because it was over the trigger


def test_summary_calls_are_in_the_total(sample, saw):
    s = saw.state
    result = saw.result(0.8, 0.5)
    summaries = [r for r in result.ledger.rows if r.kind == "summary"]
    assert s.summary_calls == len(summaries) == len(s.compactions) == 2
    assert s.summary_cost_usd == pytest.approx(sum(r.cost_usd for r in summaries)) and s.summary_cost_usd > 0
    assert s.cost_usd == pytest.approx(sum(r.cost_usd for r in result.ledger.rows))
    assert [c.summary_cost_usd for c in s.compactions] == pytest.approx([r.cost_usd for r in summaries])
    main_only = sum(r.cost_usd for r in result.ledger.rows if r.message_id is not None)
    assert s.cost_usd == pytest.approx(main_only + s.summary_cost_usd)


def test_compute_equals_a_direct_replay(sample, saw):
    s = saw.compute(0.7, 0.4)
    result = policy_replay(sample, WINDOW, 0.7, 0.4)
    direct = sawtooth(result, WINDOW, 0.7, 0.4)
    assert s == direct
    assert s.context_tokens == tuple(r.context_tokens for r in result.records)
    assert s.compaction_calls == tuple(int(e.id.rsplit(":", 1)[1]) for e in result.new_entries
                                       if e.kind == "compaction")


def test_a_target_at_or_above_the_trigger_is_reported_not_replayed(saw):
    saw.target.value = 0.85
    assert saw.state.error and not saw.state.context_tokens
    assert "no replay" in saw.label.value and saw.plot.outputs == ()
    assert state_row(saw.state)[2] == "—"
    saw.target.value = 0.5
    assert not saw.state.error and saw.plot.outputs


def test_the_floor_raises_the_target_on_the_sample(saw):
    first = saw.state.compactions[0]  # call 31: the CI log is the newest unit
    assert first.target_tokens > 0.5 * WINDOW and first.tokens_after <= first.target_tokens
    assert "target raised to the floor" in sawtooth_rows(saw.state)[0][5]


def test_the_view_shows_the_figure_and_the_table(saw):
    data = saw.plot.outputs[0]["data"]["application/vnd.plotly.v1+json"]["data"]
    sent = next(t for t in data if t["name"] == "context sent")
    assert list(sent["y"]) == list(saw.state.context_tokens)
    assert "<pre" in saw.table.value and "compactions" in saw.label.value
    assert "SawtoothWidget(window=30,000" in saw._repr_mimebundle_()["text/plain"]


def test_a_slider_back_to_a_seen_setting_replays_nothing(saw, monkeypatch):
    """Deterministic (it counts replays, not seconds; the latencies are in bench/widget_latency.py):
    each new setting replays once, a setting seen before is answered from the widget's cache and
    shows the same numbers as the first time."""
    from ctxlab.widgets import ch07_compaction

    replays = []
    real = ch07_compaction.policy_replay

    def counted(*args, **kwargs):
        replays.append(args[2:4])
        return real(*args, **kwargs)

    monkeypatch.setattr(ch07_compaction, "policy_replay", counted)
    seen = {}
    for name, control, value in (("trigger 0.6", saw.trigger, 0.6), ("target 0.3", saw.target, 0.3),
                                 ("trigger 0.9", saw.trigger, 0.9), ("back to trigger 0.6", saw.trigger, 0.6)):
        before = len(replays)
        control.value = value
        seen[name] = (len(replays) - before, saw.state.context_tokens, saw.table.value)
    assert [n for n, _, _ in seen.values()] == [1, 1, 1, 0]
    assert seen["back to trigger 0.6"][1:] == seen["target 0.3"][1:]  # (0.6, 0.3) both times


# ---- chapter 07: the measurements ----

def test_prefix_rewrites(sample):
    assert prefix_rewrites(replay(sample, "full", window=WINDOW)) == []  # only appends (model changes not counted)
    assert prefix_rewrites(replay(sample, "budgeted", window=WINDOW)) == [31, 37]
    result = policy_replay(sample, WINDOW)
    compactions = [int(e.id.rsplit(":", 1)[1]) for e in result.new_entries if e.kind == "compaction"]
    assert set(compactions) <= set(prefix_rewrites(result))


def test_trims_against_batches_on_the_sample(sample, sample_facts):
    cache: dict = {}
    rows = policy_rows(sample, WINDOW, ["budgeted", (0.8, 0.75), (0.8, 0.5)], facts=sample_facts, cache=cache)
    by = {r.name: r for r in rows}
    assert list(by) == ["budgeted", "compaction 0.80 → 0.75", "compaction 0.80 → 0.50"]
    assert by["budgeted"].compactions == 0 and by["budgeted"].summary_calls == 0
    assert by["budgeted"].facts_kept_min < by["compaction 0.80 → 0.50"].facts_kept_min  # budgeted forgot
    for r in rows:
        t = cached_replay(sample, WINDOW, "budgeted" if r.trigger_ratio is None else (r.trigger_ratio, r.target_ratio),
                          cache).ledger.totals()
        assert r.cost_usd == pytest.approx(t.cost_usd) and r.total_input_tokens == t.total_input_tokens
        assert r.max_context <= WINDOW
    assert len(cache) == 3
    again = policy_rows(sample, WINDOW, [(0.8, 0.5)], cache=cache)  # kept: no new replay
    assert len(cache) == 3 and again[0].cost_usd == by["compaction 0.80 → 0.50"].cost_usd


def test_a_strategy_that_cannot_build_gets_a_row_with_the_reason(sample):
    rows = policy_rows(sample, 20_000, ["budgeted"])
    # 24,140 tokens (24,332 before issue 13: Sonnet 4.6's calibration 1.267 -> 1.257)
    assert rows[0].error.startswith("The newest unit") and "24,140 tokens" in rows[0].error


def test_policy_grid():
    grid = policy_grid()
    assert len(grid) == 11 and all(b < a for a, b in grid)
    assert (0.8, 0.5) in grid and (0.8, 0.75) in grid and grid == sorted(grid)


def test_a_naive_loop_never_gets_under_the_budget():
    case = floor_case(system_tokens=600, result_tokens=500, window=1_000)
    budget = case.profile.budget_tokens()
    rounds = naive_rounds(case, rounds=6)
    assert len(rounds) == 7 and rounds[0][0] == 0
    assert rounds[1][1] > 0 and rounds[1][2] < rounds[0][2]  # the first round folds the older history
    assert all(folded == 0 for _, folded, _ in rounds[2:])  # then nothing is left to fold...
    assert len({size for _, _, size in rounds[1:]}) == 1 and rounds[-1][2] > budget  # ...and the size is stuck


@pytest.mark.parametrize("earlier", [0, 2])
def test_ctxlab_shrinks_the_newest_results_once_then_fits(earlier):
    trap = loop_trap(floor_case(system_tokens=600, result_tokens=500, window=1_000, earlier=earlier))
    assert not trap.error and trap.pruned_results == 1
    assert trap.sent_tokens <= trap.budget == 900
    assert any("floor was over the budget" in n for n in trap.notes)


def test_a_floor_that_still_does_not_fit_raises_the_typed_error():
    trap = loop_trap(floor_case(system_tokens=950, result_tokens=500, window=1_000))
    assert trap.sent_tokens is None and trap.needed > trap.budget == 900
    assert trap.error.startswith("Compaction cannot help") and f"{trap.needed:,}" in trap.error


def test_after_two_compactions_nothing_is_lost(sample):
    cov = coverage_after(sample, WINDOW)
    assert cov.call == 33 and cov.compactions == ("compaction:main:31", "compaction:main:32")
    assert cov.lost == () and not cov.error
    assert cov.visible + cov.covered - cov.both == cov.messages
    assert cov.earlier_sources_kept


def test_coverage_reports_a_window_where_compaction_cannot_build(sample):
    # 1,500 tokens: 90% is below the floor (system + tools 1,357 + summary room + newest unit; 1,167 before issue 13,
    # with the 346-token tool prompt instead of Sonnet 4.6's 497); at
    # 2,100 (2,000 before issue 13) a summary cut to the room left does fit, so compaction builds there
    cov = coverage_after(sample, 1_500)
    assert cov.call is None and "cannot help" in cov.error and "1,357" in cov.error
    assert coverage_after(sample, 2_100).error == ""


def test_usage_anchored_metering_triggers_later_on_the_ci_log(sample):
    first = dict((w, (c, u)) for w, c, u in first_triggers(sample, (30_000, 40_000, 50_000)))
    assert first[30_000] == (31, 31) and first[40_000] == (31, 32) and first[50_000] == (41, 41)
    m = metering_compare(sample, 40_000)
    count, usage = m.runs
    assert count.compaction_calls == (31, 41) and usage.compaction_calls == (32,)
    assert usage.max_context > count.max_context and usage.overflows == count.overflows == 0
    assert [d[0] for d in m.disagreements] == [31]
    call, seen, counted = m.disagreements[0]
    assert seen < 0.8 * 40_000 < counted  # it under-counted the CI log, and waited
    assert m.largest_under[1] < m.largest_under[2]


def test_compaction_ignores_the_compactions_the_transcript_recorded():
    """``compaction`` and ``pipeline`` decide for themselves, as every other strategy does: a compaction the real
    agent recorded is replayed by ``recorded`` only (ctxlab/compaction.py, ``without_recorded``)."""
    conv = steady_session(20)
    at = next(k for k, it in enumerate(conv.items) if it.id == "a15")
    entry = Entry("compaction", "agent-compaction", {"summary": "The agent's own summary.", "first_kept_id": "a12",
                                                     "tokens_before": 9_000, "origin": "recorded"}, thread="main")
    with_entry = dataclasses.replace(conv, items=(*conv.items[:at], entry, *conv.items[at:]))
    for name in ("compaction", "pipeline"):
        for window in (200_000, 6_000):  # nothing to compact, and several compactions of its own
            plain, mine = replay(conv, name, window=window), replay(with_entry, name, window=window)
            assert [r.context_tokens for r in mine.records] == [r.context_tokens for r in plain.records]
            assert [e.id for e in mine.new_entries] == [e.id for e in plain.new_entries]
    recorded, full = replay(with_entry, "recorded"), replay(with_entry, "full")
    assert recorded.records[-1].context_tokens < full.records[-1].context_tokens  # the agent's, replayed


def test_pipeline_steps(sample):
    result = policy_replay(sample, WINDOW, strategy="pipeline")
    steps = pipeline_steps(result)
    assert sum(steps.values()) == len(result.records)
    assert steps["compacted"] == sum(1 for e in result.new_entries if e.kind == "compaction") == 1
    assert steps["results shrunk"] == 2


# ---- chapter 08: the leaderboard ----

def test_the_leaderboard_rows_equal_compare(sample, sample_facts):
    board = leaderboard(sample, window=WINDOW, facts=sample_facts)
    assert list(board.rows) == compare(sample, window=WINDOW, facts=sample_facts)
    assert set(board.results) == set(STRATEGIES)
    assert best(board.rows).name in ("sliding", "budgeted")  # the cheapest that stayed inside the window
    assert board.row("full").overflows > 0


def test_compare_row_is_the_row_of_one_replay_and_the_state_ranks_it(sample, sample_facts):
    board = leaderboard(sample, ["budgeted", "budgeted+summary", "full"], window=WINDOW, facts=sample_facts)
    result = board.results["budgeted+summary"]
    row = compare_row("budgeted+summary", result, sample, sample_facts)
    assert row == board.row("budgeted+summary") and row.summary_calls > 0
    assert row.summary_calls == sum(1 for r in result.ledger.rows if r.kind == "summary")
    assert compare_row("budgeted", board.results["budgeted"], sample).facts_kept is None  # no checklist
    state = leaderboard_state(board, "full", WINDOW)
    assert state.selected == board.row("full") and state.rank is None  # over the window: out of the race
    assert state.calls == len(board.results["full"].records) and state.best == best(board.rows)
    assert {leaderboard_state(board, n, WINDOW).rank for n in ("budgeted", "budgeted+summary")} == {1, 2}
    missing = leaderboard_state(board, "pipeline", WINDOW)
    assert missing.selected is None and missing.rank is None and missing.calls == missing.rewrites == 0
    assert rewrite_counts(board)["budgeted"] == len(prefix_rewrites(board.results["budgeted"])) == 2
    assert set(rewrite_counts(board)) == set(board.results)


def test_facts_for_finds_the_matching_checklist(sample):
    assert len(facts_for(sample)) == 22
    assert facts_for(steady_session()) is None


def test_quick_strategies_and_window(sample):
    # sliding is merged into budgeted on the chapter's board: they send the same request at every call
    assert quick_strategies(sample) == tuple(s for s in STRATEGIES if s != "sliding")
    assert same_contexts(sample, "sliding", "budgeted", window=WINDOW) == (77, 77)
    assert same_contexts(sample, "full", "budgeted", window=WINDOW)[0] < 77  # a pair that differs is seen
    assert leaderboard_window(sample) == WINDOW  # the sample never fills its model's window


def test_the_leaderboard_widget_follows_its_controls(sample, sample_facts, monkeypatch):
    from ctxlab.widgets import ch08_leaderboard

    built = []  # windows whose whole leaderboard was replayed (counted, not timed: bench/ times it)
    real = ch08_leaderboard.leaderboard
    monkeypatch.setattr(ch08_leaderboard, "leaderboard", lambda *a, **k: built.append(k["window"]) or real(*a, **k))
    board = real(sample, quick_strategies(sample), window=WINDOW, facts=sample_facts)
    w = LeaderboardWidget(sample, (WINDOW, 50_000), facts=sample_facts, boards={WINDOW: board})
    assert w.state.strategy == "compaction" and w.state.selected == board.row("compaction")
    assert w.state.rank is not None and w.state.best == best(board.rows)
    w.strategy.value = "full"
    assert w.state.selected.overflows > 0 and w.state.rank is None  # over the window: out of the race
    w.strategy.value = "pipeline"
    assert built == []  # a strategy change reads the board it has
    w.window.value = 50_000
    assert built == [50_000]  # a new window replays every strategy once
    assert list(w.state.rows) == compare(sample, quick_strategies(sample), window=50_000, facts=sample_facts)
    assert w.state.selected.name == "pipeline" and w.state.rank == 1
    w.window.value = WINDOW
    assert built == [50_000]  # back to a seen window: nothing replayed
    assert w.state.selected == board.row("pipeline")
    assert isinstance(w.last_reaction_s, float) and w.last_reaction_s >= 0
    data = w.bars.outputs[0]["data"]["application/vnd.plotly.v1+json"]["data"][0]
    assert list(data["x"]) == [r.name for r in board.rows]
    assert data["y"][-1] == pytest.approx(board.row("pipeline").cost_usd)  # pipeline: the last row
    assert "pipeline" in w.label.value and format_rows(board.rows) in w.table.value.replace("&gt;", ">")
    assert "LeaderboardWidget(strategy='pipeline', window=30,000)" in w._repr_mimebundle_()["text/plain"]


def test_the_chapters_own_leaderboard_and_the_widget_over_it(sample):
    from ctxlab.lab.replays import REPLAYS

    own = own_leaderboard(sample)  # a short transcript: every strategy, checked, with its checklist
    assert own.names == quick_strategies(sample) and own.window == WINDOW and own.checked and not own.long
    assert len(own.facts) == 22 and own.board.row("compaction").facts_kept is not None
    assert own.windows == widget_windows(WINDOW) and own.windows[0] == WINDOW
    assert widget_windows(200_000) == (200_000, 150_000, 100_000, 50_000) and widget_windows(4_000) == (5_000,)
    before = REPLAYS.computed
    w = LeaderboardWidget.for_board(own)  # opens on the cell's board: nothing replayed
    assert REPLAYS.computed == before and w.conversation is sample and w.names == own.names
    assert w.state.rows == own.board.rows and [v for _, v in w.window.options] == list(own.windows)


@pytest.mark.parametrize("windows", [(), (0,), (-5, 30_000), (True,), ("30000",)])
def test_the_leaderboard_widget_refuses_no_window_or_a_bad_one(sample, windows):
    with pytest.raises(ValueError, match="window"):
        LeaderboardWidget(sample, windows)


def test_a_long_transcripts_window_answers_at_once_and_draws_when_replayed(sample):
    from copy import copy

    conv, names = copy(sample), ("budgeted", "compaction")
    w = LeaderboardWidget(conv, (WINDOW, 50_000), strategies=names, background=True)  # as on a long transcript
    assert "replaying 2 of 2 strategies" in w.label.value  # on screen at once, before any replay finished
    assert w.wait(timeout=600)
    assert "cost <b>" in w.label.value and w.bars.outputs  # the background drew the board it replayed
    assert w.state.rows == tuple(leaderboard(copy(sample), names, window=WINDOW).rows)
    w.window.value = 50_000  # computed in the background meanwhile: drawn at once
    assert "window 50,000: cost" in w.label.value and w.last_reaction_s < 60


PI_PROSE_CELL = "Two bills of one session"


def test_the_pi_paragraph_states_only_numbers_its_cells_print():
    """Chapter 08's reading of the pi leaderboard: every number in it is printed by a cell (or is the policy,
    80% → 50%, or a chapter's number), so the prose cannot drift from the committed figures."""
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(REPO / "notebooks" / "08_putting_it_together.ipynb", as_version=4)
    prose = next(c.source for c in nb.cells if c.cell_type == "markdown" and c.source.startswith(PI_PROSE_CELL))
    printed = " ".join(json.dumps(out.get("data", {})) + out.get("text", "") for c in nb.cells
                       if c.cell_type == "code" for out in c.get("outputs", []))
    numbers = set(re.findall(r"\d[\d,]*(?:\.\d+)?", prose)) - {"80", "50", "07", "00", "04"}
    assert numbers, prose
    missing = [n for n in sorted(numbers) if not re.search(rf"(?<![\d.,]){re.escape(n)}(?![\d]|[.,]\d)", printed)]
    assert not missing, f"numbers in the pi paragraph that no cell prints: {missing}"


def test_the_leaderboard_figure_greys_out_overflows(sample, sample_facts):
    rows = compare(sample, ["full", "compaction"], window=WINDOW)
    bars = leaderboard_figure(rows, highlight="compaction").data[0]
    assert list(bars.x) == ["full", "compaction"] and bars.marker.color[0] != bars.marker.color[1]


# ---- chapter 08: the committed pi figures ----

def test_the_committed_pi_figures_are_complete():
    pi = read_leaderboard_csv(LEADERBOARD_PI)
    assert pi.header["licence"].startswith("MIT") and "pi-mono" in pi.header["source"]
    assert pi.header["calls"] == "484" and pi.header["recorded_compactions"].startswith("2 ")
    rows = pi.compare_rows()
    assert [r.name for r in rows] == [*STRATEGIES, "recorded"]
    assert all(r.violations == 0 and not r.error for r in rows)
    by = {r.name: r for r in rows}
    assert by["full"].overflows > 0 and by["compaction"].overflows == 0
    assert by["compaction"].cost_usd < by["budgeted"].cost_usd  # the chapters' claims, from the file
    policies = pi.policy_rows()
    assert [(r.trigger_ratio, r.target_ratio) for r in policies[1:]] == policy_grid()
    named = {r.name: r for r in policies}
    assert named["compaction 0.80 → 0.50"].cost_usd < named["compaction 0.80 → 0.75"].cost_usd \
        < named["budgeted"].cost_usd
    assert named["compaction 0.80 → 0.50"].compactions < named["compaction 0.80 → 0.75"].compactions
    text = LEADERBOARD_PI.read_text(encoding="utf-8")
    assert "/work/" not in text and not re.search(r"\d{4}-\d{2}-\d{2}T", text)


@pytest.mark.shared
@pytest.mark.thorough  # about a minute of CPU; the default run regenerates two rows (tests/test_data.py)
@pytest.mark.skipif(not PI_SOURCE.exists(), reason="the shared pi transcript is not here")
def test_the_committed_pi_figures_equal_a_fresh_regeneration(tmp_path):
    done = subprocess.run([sys.executable, str(REPO / "data" / "make_leaderboard.py"), str(PI_SOURCE), str(tmp_path)],
                          check=False, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "leaderboard_pi.csv").read_bytes() == LEADERBOARD_PI.read_bytes(), \
        "data/leaderboard_pi.csv is stale: run `python data/make_leaderboard.py`"


def test_the_generator_skips_without_the_source(tmp_path):
    done = subprocess.run([sys.executable, str(REPO / "data" / "make_leaderboard.py"), str(tmp_path / "absent.jsonl"),
                           str(tmp_path)], check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "nothing written" in done.stdout
    assert not (tmp_path / "leaderboard_pi.csv").exists()


# ---- chapter 08: the agent loop ----

def test_fake_llm_reads_then_answers():
    body = {"messages": [{"role": "user", "content": "x" * 400}]}
    first = fake_llm(body, 1, steps=3)
    assert first["tool_calls"][0][1] == "read_file" and first["usage"]["cache_read_input_tokens"] > 0
    assert fake_llm(body, 3, steps=3)["tool_calls"] == []
    assert fake_llm(body, 1, steps=3) == first  # deterministic


def test_the_fake_loop_compacts_inside_the_window_and_only_appends(tmp_path):
    run = run_fake_loop(tmp_path / "run.jsonl", steps=12, window=6_000)
    assert len(run.steps) == 12 and run.file_name == "run.jsonl"
    assert all(s.request_tokens <= 6_000 for s in run.steps)
    # [7, 11] before issue 13: Claude Sonnet 4.6 now has its 497-token tool prompt (346) and calibration 1.257 (1.267)
    assert [s.step for s in run.steps if s.compacted] == [7, 10]
    assert all(s.appended_only for s in run.steps)
    sizes = [s.file_bytes for s in run.steps]
    assert sizes == sorted(sizes) and len(set(sizes)) == len(sizes)
    session = Session.open(tmp_path / "run.jsonl")
    assert sum(1 for i in session.items() if getattr(i, "kind", None) == "compaction") == 2
    assert set(run.first_anthropic_body) == {"model", "max_tokens", "messages", "system", "tools"}
    assert run.first_openai_body["messages"][0]["role"] == "system"
    shape = body_shape(run.first_anthropic_body)
    assert "messages: list[1] (first item below)" in shape
    assert not any(TASK in line for line in shape)  # the shape shows sizes, never content
    assert json.dumps(run.first_anthropic_body)  # a body you could send


# ---- the committed chapters ----

@pytest.mark.parametrize("name", ["07_compaction.ipynb", "08_putting_it_together.ipynb"])
def test_no_absolute_path_or_timestamp_in_the_committed_chapter(name):
    nbformat = pytest.importorskip("nbformat")
    path = REPO / "notebooks" / name
    assert path.stat().st_size < 300_000
    nb = nbformat.read(path, as_version=4)
    assert "widgets" not in nb.metadata
    slots = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("TRANSCRIPT = None")]
    assert len(slots) == 1
    assert "nbval-ignore-output" in nb.cells[0].metadata.get("tags", [])  # the banner: a tag, not a comment
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            assert out.get("output_type") != "error"
            text = out.get("text", "") + str(out.get("data", {}).get("text/plain", ""))
            assert str(REPO) not in text and "/tmp/" not in text
            assert not re.search(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}", text), text
