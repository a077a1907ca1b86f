"""Interactive latency: the chapters' widgets on a tiled sample and on a real transcript (chapters 03–08).

    python bench/widget_latency.py [--quick] [--only=ch04,ch06]
    (--quick: 1,000 sample messages, fewer changes on pi; --only: these chapters' pi parts, no sample)

Each change is made the way a person makes it — setting the control's value, which runs the widget's
observer: compute, then redraw — and timed in Python around that assignment (CPU seconds of the process,
and wall seconds, what a person waits; the machine may be shared). The goals are judged on wall time.

**The tiled sample** (``sessions.py``: the bundled sample tiled to 2,000 messages, each copy a day later,
as Claude Sonnet 4.5 recorded it): ``BudgetWidget``'s slider at 10 budgets (its meter is incremental:
after the first build a move only walks the units again), and ``LedgerWidget(..., precompute=True)``,
which replays every strategy under both providers' cache rules when it opens, so that a strategy or
provider change shows numbers already computed (without it, a change replays the whole session).

**pi** (the shared ``pi-mono/before-compaction.jsonl``: 990 messages, 484 model calls, Claude Opus 4.5),
each chapter as its notebook builds it with ``TRANSCRIPT`` set to that file, in a fresh replay cache
(chapters run in separate kernels): the setup cell, then the widget. Replays come from the cache the
chapters share (``ctxlab.lab.replays.REPLAYS``), so a widget opens on the replays its chapter's earlier
cells ran; on a transcript this long (more than 150 model calls) the widgets of chapters 04, 06, 07 and 08
replay the settings one click away in a background thread after opening and after each change (chapter 06's
widget opens at once: its first window's replay and checklist score are the background's first job, and the
row "open → its numbers drawn" times them). Two kinds of click are timed: **right after opening** (the
background still running: the click waits for its own replays; the background's replay pauses at its next
model call meanwhile, so the click has the CPU to itself), and **after the background settled** (a person who read the widget for the time given in the "settled" rows). Every change below is
a first visit to its setting unless it says otherwise.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sessions import conversation, tiled  # noqa: E402
from timing import SHARED, Goal, Section, Timing, main_for, median, ms, timed  # noqa: E402

COMMAND = "python bench/widget_latency.py"
SOURCE = SHARED / "pi-mono" / "before-compaction.jsonl"
# --only ch04,ch06: run only these chapters' pi parts (and skip the tiled sample); default: everything
ONLY = next((a.split("=", 1)[1].split(",") for a in sys.argv[1:] if a.startswith("--only=")), None)
SETTLE_S = 900  # the longest a wait for the background may take (seconds) before the benchmark gives up


def run(quick: bool = False) -> Section:
    n = 1_000 if quick else 2_000
    section = Section("Interactive latency: the chapters' widgets on a tiled sample and on pi",
                      COMMAND + (" --quick" if quick else ""), intro=__doc__.split("\n\n", 2)[2].strip())
    section.columns = ["session", "widget", "what", "changes", "median (CPU)", "worst (CPU)", "median (wall)",
                       "worst (wall)"]
    if not ONLY:
        _sample(section, n)
    if not SOURCE.exists():
        reason = f"the shared transcripts are not at {SOURCE.parent.parent} (they sit beside the repository)"
        section.notes.append(f"**pi skipped:** {reason}.")
        for goal in GOALS:
            section.goals.append(Goal(goal, "skipped: no shared transcripts", None))
        return section
    _pi(section, quick)
    return section


# ---- the tiled sample (the figures of the first version of this benchmark) ----------------------------

def _sample(section: Section, n: int) -> None:
    from ctxlab.lab.ch04_replays import PROVIDERS, STRATEGIES
    from ctxlab.tables.default_model import DEFAULT_MODEL, DEFAULT_PROVIDER
    from ctxlab.widgets.ch03_budget import BudgetWidget
    from ctxlab.widgets.ch04_ledger import LedgerWidget

    where = f"sample x{n:,} msgs"
    conv = conversation(tiled(n), DEFAULT_MODEL, DEFAULT_PROVIDER)
    load, budget = timed(lambda: BudgetWidget(conv))
    section.rows.append(_one(where, "BudgetWidget", "open (first build, every message counted)", load))
    moves = [timed(lambda v=v: setattr(budget.budget, "value", v))[0]
             for v in budget.spread(tuple(k / 10 + 0.05 for k in range(10)))]
    section.rows.append(_row(where, "BudgetWidget", "move the budget slider", moves))

    load, ledger = timed(lambda: LedgerWidget(conv, precompute=True, background=False))
    section.rows.append(_one(where, "LedgerWidget", f"open with precompute ({len(STRATEGIES)} strategies x "
                             f"{len(PROVIDERS)} providers replayed)", load))
    strategy_changes, provider_changes = [], []
    for provider in PROVIDERS:
        provider_changes.append(timed(lambda p=provider: setattr(ledger.provider, "value", p))[0])
        for strategy in (*STRATEGIES[1:], STRATEGIES[0]):
            strategy_changes.append(timed(lambda s=strategy: setattr(ledger.strategy, "value", s))[0])
    section.rows.append(_row(where, "LedgerWidget", "change the strategy", strategy_changes))
    section.rows.append(_row(where, "LedgerWidget", "change the provider", provider_changes))
    fresh = LedgerWidget(conv, window=195_000, background=False)  # a window precompute did not replay
    cold = timed(lambda: setattr(fresh.strategy, "value", "budgeted"))[0]
    section.rows.append(_one(where, "LedgerWidget", "change the strategy, no precompute (replays the session)", cold))

    slider = max(t.cpu_s for t in moves)
    switch = max(t.cpu_s for t in strategy_changes + provider_changes)
    section.goals.append(Goal("budget-slider update ≤ 50 ms (sample)", f"worst {ms(slider)} CPU "
                              f"({ms(max(t.wall_s for t in moves))} wall)", slider <= 0.05))
    section.goals.append(Goal("strategy or provider change in the ledger widget ≤ 300 ms (sample)",
                              f"worst {ms(switch)} CPU ({ms(max(t.wall_s for t in strategy_changes + provider_changes))}"
                              " wall), with precompute at load", switch <= 0.3))


# ---- pi, chapter by chapter ------------------------------------------------------------------------------

GOALS = ("ch08 on pi: open ≤ 3 s (the chapter's cell + the widget)",
         "ch08 on pi: window change ≤ 1 s, after the background settled",
         "ch08 on pi: window change ≤ 1 s, right after opening (its board drawn)",
         "ch06 on pi: open ≤ 1 s (its numbers drawn)",
         "ch04 on pi: first visits ≤ 300 ms, after the background settled",
         "ch04 on pi: first visit ≤ 300 ms, right after opening")


def _pi(section: Section, quick: bool) -> None:
    from ctxlab import load
    from ctxlab.fast import FAST
    from ctxlab.replay import replay

    conv = load(SOURCE).conversations[0]
    replay(conv, "full", speedup=FAST)  # the encodings and price tables loaded once, outside every timing (uncached)
    found: dict[str, list[Timing]] = {}
    for chapter in (_ch03, _ch04, _ch05, _ch06, _ch07, _ch08):
        if ONLY and chapter.__name__[1:] not in ONLY:
            continue
        _fresh()
        chapter(section, conv, quick, found)
    _fresh()
    wall = {k: max(t.wall_s for t in v) for k, v in found.items()}
    cpu = {k: max(t.cpu_s for t in v) for k, v in found.items()}
    limits = {"ch08 open": 3.0, "ch08 settled": 1.0, "ch08 at once": 1.0, "ch06 open": 1.0, "ch04 settled": 0.3,
              "ch04 at once": 0.3}
    for goal, key in zip(GOALS, limits):
        if key in wall:
            section.goals.append(Goal(goal, f"worst {ms(wall[key])} wall ({ms(cpu[key])} CPU)",
                                      wall[key] <= limits[key]))
    section.notes.append(
        "pi's open rows reuse what the chapter's earlier cells replayed (timed in their own rows): chapter 08's "
        "leaderboard cell, chapter 07's window search, chapter 06's window search (`budgeted` only: the widget "
        "replays `budgeted+summary` itself). The CPU column counts every thread of the process: during a click "
        "right after opening it includes the background replay running beside it.")
    section.notes.append(
        "A click the background had not reached waits for its own replays: a chapter 04 window four steps away, "
        "any change right after opening. The settled rows say how long a person must read before every click one "
        "step away is instant.")
    if "ch04 at once" in found:
        section.notes.append(
            "Chapter 04 right after opening: the background's replay waits while the click's runs, so the click "
            "costs its own replay of pi and its drawing (about 40 ms: the figure, the 484-row table, the state), "
            "and nothing more: `recorded`, the other cache rules and gpt-4.1 about 0.2 s, `budgeted` 0.3 s, "
            "`sliding` 0.7 s; a window step of `full` or `recorded` replays nothing (their requests do not depend "
            "on the window: the held replay is moved, `ctxlab/lab/replay_windows.py`); under 300 ms only where that "
            "replay is, or where the background has already run it.")
    if "ch08 at once" in found:
        section.notes.append(
            "Chapter 08 at a new window: `full` and `recorded` are moved from the board's own replays (the same "
            "requests at any window, only the overflow verdict differs) and scored as those; `compaction` and "
            "`pipeline` share the rule-based summarizer's findings per message with every replay before them; the "
            "checklist scans of block texts are kept from one replay's score to the next. What remains is the "
            "replays of `budgeted`, `compaction` and `pipeline` at that window.")


def _fresh() -> None:
    """A new kernel's state: no replay held, no background job left from the chapter before."""
    from ctxlab.lab.replays import REPLAYS
    from ctxlab.widgets._progress import WORKER

    WORKER.wait(timeout=SETTLE_S)
    REPLAYS.forget()


def _settle(widget) -> Timing:
    """Wait until the widget's background finished what it planned: how long a person must wait (wall)."""
    c, w = time.process_time(), time.perf_counter()
    if not widget.wait(timeout=SETTLE_S):
        raise RuntimeError(f"the background did not settle within {SETTLE_S} s")
    return Timing(time.process_time() - c, time.perf_counter() - w)


def _ch03(section: Section, conv, quick: bool, found: dict) -> None:
    from ctxlab.widgets.ch03_budget import BudgetWidget

    load, w = timed(lambda: BudgetWidget(conv))
    section.rows.append(_one("pi", "ch03 BudgetWidget", "open (first build, every message counted)", load))
    moves = [timed(lambda v=v: setattr(w.budget, "value", v))[0]
             for v in w.spread(tuple(k / 10 + 0.05 for k in range(5 if quick else 10)))]
    section.rows.append(_row("pi", "ch03 BudgetWidget", "move the budget slider", moves))


def _ch04(section: Section, conv, quick: bool, found: dict) -> None:
    from ctxlab.tables.default_model import DEFAULT_MODEL
    from ctxlab.widgets.ch04_ledger import LedgerWidget

    where, name = "pi", "ch04 LedgerWidget"
    load, w = timed(lambda: LedgerWidget(conv))
    section.rows.append(_one(where, name, "open (replays `full` at the model's window)", load))
    at_once = timed(lambda: setattr(w.strategy, "value", "budgeted"))[0]
    section.rows.append(_one(where, name, "change the strategy right after opening", at_once))
    found["ch04 at once"] = [at_once]
    section.rows.append(_one(where, name, "background settled after (the settings one click away)", _settle(w)))
    # every change a first visit to its setting: (kind, control, value; None: the window one step down)
    plan = [("strategy", "strategy", "sliding"), ("cache rules", "provider", "openai"),
            ("strategy", "strategy", "recorded"), ("cache rules", "provider", "anthropic"),
            ("model", "model", DEFAULT_MODEL), ("model", "model", "gpt-4.1"), ("window, one step", "window", None),
            ("window, one step", "window", None), ("strategy", "strategy", "full")]
    plan = plan[:5] + plan[6:7] if quick else plan
    times: dict[str, list[Timing]] = {}
    waits = []
    for kind, control, value in plan:
        value = w.window.value - w.window.step if value is None else value
        times.setdefault(kind, []).append(timed(lambda c=control, v=value: setattr(getattr(w, c), "value", v))[0])
        waits.append(_settle(w))
    for kind, got in times.items():
        section.rows.append(_row(where, name, f"change the {kind} (after the background settled)", got))
    settled_all = [t for got in times.values() for t in got]
    section.rows.append(_row(where, name, "background settled after each of those changes", waits))
    far = timed(lambda: setattr(w.window, "value", w.window.value - 4 * w.window.step))[0]
    section.rows.append(_one(where, name, "move the window four steps (not precomputed: replays)", far))
    found["ch04 settled"] = settled_all
    w.wait(timeout=SETTLE_S)


def _ch05(section: Section, conv, quick: bool, found: dict) -> None:
    from ctxlab.lab.ch05_pruning import checklist_for, evidence_line, largest_tool_result, prune_view
    from ctxlab.tokens import TiktokenCounter
    from ctxlab.widgets.ch05_pruning import PruneWidget

    counter = TiktokenCounter("o200k_base")
    big = largest_tool_result(conv, counter)
    facts, _ = checklist_for(conv)
    line = evidence_line(big.text, prune_view(big.text, 1_000, 500, counter), [f.text for f in facts])
    load, w = timed(lambda: PruneWidget(big, head=1_000, tail=500, line=line, counter=counter))
    section.rows.append(_one("pi", "ch05 PruneWidget", "open (the largest tool result)", load))
    moves = [timed(lambda h=h, t=t: (setattr(w.head, "value", h), setattr(w.tail, "value", t)))[0]
             for h, t in ((200, 500), (2_000, 500), (2_000, 2_000), (0, 300))]
    section.rows.append(_row("pi", "ch05 PruneWidget", "move head and tail", moves))


def _ch06(section: Section, conv, quick: bool, found: dict) -> None:
    from ctxlab.lab.ch05_pruning import checklist_for
    from ctxlab.lab.ch06_summaries import default_windows, summary_window
    from ctxlab.widgets.ch06_summaries import SummaryWidget

    where, name = "pi", "ch06 SummaryWidget"
    facts, _ = checklist_for(conv)
    setup, window = timed(lambda: summary_window(conv))
    stops = default_windows(conv, window)
    section.rows.append(_one(where, name, f"the setup cell: summary_window → {window:,} (slider stops: "
                             f"{', '.join(f'{s:,}' for s in stops)})", setup))
    c, t = time.process_time(), time.perf_counter()
    load, w = timed(lambda: SummaryWidget(conv, facts, windows=stops))
    section.rows.append(_one(where, name, f"open (on screen; the background replays `budgeted+summary` at "
                             f"{window:,} and scores {len(facts)} facts)", load))
    w.state  # noqa: B018 - waits until the first window's numbers are drawn
    drawn = Timing(time.process_time() - c, time.perf_counter() - t)
    section.rows.append(_one(where, name, "open → its numbers drawn (the first replay and score done)", drawn))
    found["ch06 open"] = [drawn]  # judged on the numbers a learner reads, not the frame with a progress bar
    if len(stops) > 1:
        section.rows.append(_one(where, name, "background settled after", _settle(w)))
        moves = [timed(lambda v=v: setattr(w.window, "value", v))[0] for v in stops[1:]]
        section.rows.append(_row(where, name, "move the window (after the background settled)", moves))
    w.wait(timeout=SETTLE_S)


def _ch07(section: Section, conv, quick: bool, found: dict) -> None:
    from ctxlab.lab.ch07_compaction import compaction_window
    from ctxlab.widgets.ch07_compaction import SawtoothWidget

    where, name = "pi", "ch07 SawtoothWidget"
    setup, window = timed(lambda: compaction_window(conv))
    section.rows.append(_one(where, name, f"the setup cell: compaction_window → {window:,}", setup))
    load, w = timed(lambda: SawtoothWidget(conv, window))
    section.rows.append(_one(where, name, "open (80% → 50%: the window search's replay)", load))
    at_once = timed(lambda: setattr(w.trigger, "value", 0.75))[0]
    section.rows.append(_one(where, name, "move the trigger one step right after opening", at_once))
    section.rows.append(_one(where, name, "background settled after", _settle(w)))
    moves = []
    for slider, value in ((w.target, 0.45), (w.trigger, 0.8), (w.target, 0.4))[:2 if quick else 3]:
        moves.append(timed(lambda s=slider, v=value: setattr(s, "value", v))[0])
        _settle(w)
    section.rows.append(_row(where, name, "move a slider one step (after the background settled)", moves))


def _ch08(section: Section, conv, quick: bool, found: dict) -> None:
    from ctxlab.lab.ch08_leaderboard import own_leaderboard
    from ctxlab.widgets.ch08_leaderboard import LeaderboardWidget

    where, name = "pi", "ch08 LeaderboardWidget"
    cell, own = timed(lambda: own_leaderboard(conv))  # the chapter's "your transcript" cell, as the notebook runs it
    names, window, windows = own.names, own.window, own.windows
    section.rows.append(_one(where, name, f"the chapter's cell: own_leaderboard → window {window:,}, "
                             f"{len(names)} strategies ({', '.join(names)}), "
                             f"{len(own.facts or ())} facts scored, checks {'on' if own.checked else 'off'}", cell))
    load, w = timed(lambda: LeaderboardWidget.for_board(own))
    section.rows.append(_one(where, name, f"open at {window:,} (windows {', '.join(f'{v:,}' for v in windows)})",
                             load))
    found["ch08 open"] = [Timing(cell.cpu_s + load.cpu_s, cell.wall_s + load.wall_s)]  # the cell, then the widget
    strategies = [timed(lambda s=s: setattr(w.strategy, "value", s))[0] for s in names if s != w.strategy.value]
    section.rows.append(_row(where, name, "change the strategy (a board already computed)", strategies))
    c, t = time.process_time(), time.perf_counter()
    at_once = timed(lambda: setattr(w.window, "value", windows[1]))[0]
    section.rows.append(_one(where, name, f"change the window right after opening (on screen: the label says the "
                             f"background replays its {len(names)} strategies first)", at_once))
    w.state  # noqa: B018 - waits until that window's board is computed (the background draws it)
    drawn = Timing(time.process_time() - c, time.perf_counter() - t)
    section.rows.append(_one(where, name, "change the window right after opening → its board drawn", drawn))
    found["ch08 at once"] = [drawn]  # judged on the board drawn, not on the label that says it is coming
    section.rows.append(_one(where, name, f"background settled after ({len(windows) - 2} more windows x "
                             f"{len(names)} strategies)", _settle(w)))
    moves = [timed(lambda v=v: setattr(w.window, "value", v))[0] for v in (*windows[2:], windows[0])]
    section.rows.append(_row(where, name, "change the window (after the background settled)", moves))
    found["ch08 settled"] = moves
    section.notes.append(
        "Chapter 08 on pi: the chapter's cell replays its five strategies without the invariant checks (a long "
        "transcript; `leaderboard(..., check=True)` adds them) and scores pi's 22-fact checklist; the widget opens "
        "on that board. A window whose board is not computed yet answers at once — the label says which strategies "
        "the background replays first — but the goal \"window change right after opening\" is judged on the "
        "row \"→ its board drawn\", when its numbers appear; likewise chapter 06's open on its numbers drawn.")


def _one(session: str, widget: str, what: str, t: Timing) -> list:
    return [session, widget, what, 1, ms(t.cpu_s), "", ms(t.wall_s), ""]


def _row(session: str, widget: str, what: str, times) -> list:
    cpu, wall = [t.cpu_s for t in times], [t.wall_s for t in times]
    return [session, widget, what, len(times), ms(median(cpu)), ms(max(cpu)), ms(median(wall)), ms(max(wall))]


if __name__ == "__main__":
    main_for(run)
