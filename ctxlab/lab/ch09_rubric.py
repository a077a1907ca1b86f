"""Chapter 09's capstone: a strategy and its policy chosen from a leaderboard, and the rubric that grades the choice.

A :class:`Choice` names a strategy on chapter 08's leaderboard (:class:`~ctxlab.lab.ch08_leaderboard.OwnBoard`),
a compaction policy when the strategy compacts (trigger and target, ratios of the window), the numbers the
learner read from the ledger (cost in USD, facts kept) and a one-line justification. :func:`grade` checks it
against the board, criterion by criterion (:data:`CRITERIA`); :func:`recommend` is the workbook's own pick by
the same rules, which the chapter shows before the learner makes theirs.

The rules, in order: the strategy built a context at every call; none of its calls (summary calls included)
went over the window — a provider refuses those, so a strategy with one is out however cheap; the numbers
quoted are the ledger's (cost within 1%, facts exact) — the ledger of the strategy replayed with the policy
chosen, when one is given (:func:`graded_row`); it keeps facts — at least 3/4 of what the best
strategy that fits keeps at its worst call — when a checklist belongs to the transcript; it costs at most
twice the cheapest strategy that fits; a policy, when given, has 0 < target < trigger ≤ 0.9 (the book's
90% input shortcut) and its replay also stays inside the window; the justification states a number.
Every verdict's detail is whole (:func:`grade_table` wraps it at 100 characters). Simplified on purpose: a
rubric of thresholds, not a judgement of taste. Taught in chapter 09.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from typing import Sequence

from ctxlab.base.errors import CtxlabError
from ctxlab.base.safe_text import shown
from ctxlab.lab.ch07_compaction import policy_replay
from ctxlab.lab.ch08_leaderboard import OwnBoard
from ctxlab.lab.compare import CompareRow, compare_row
from ctxlab.lab.workbook import text_table

COMPACTING = ("compaction", "pipeline")
FACT_SHARE = 0.75  # of the best worst-call retention among the strategies that fit
COST_FACTOR = 2.0  # times the cheapest strategy that fits
MAX_TRIGGER = 0.9  # the book's shortcut: 90% of the window for input
DEFAULT_POLICY = (0.8, 0.5)  # the leaderboard's trigger and target (CompactionPolicy's defaults)
WIDTH = 100  # the widest line grade_table prints
COST_TOLERANCE = 0.01

CRITERIA = ("on the board", "0 overflows", "ledger numbers", "fact retention", "cost", "policy", "justification")


@dataclass(frozen=True)
class Choice:
    """A learner's pick: ``strategy`` (a leaderboard name), ``trigger`` / ``target`` (ratios of the window, for
    ``compaction`` and ``pipeline``; None to keep the leaderboard's 0.8 / 0.5), ``cost_usd`` and ``facts_kept``
    (the ledger's numbers, as read; None when not quoted) and ``why`` (a sentence). Chapter 09."""

    strategy: str
    why: str = ""
    trigger: float | None = None
    target: float | None = None
    cost_usd: float | None = None
    facts_kept: int | None = None


@dataclass(frozen=True)
class Verdict:
    """One criterion of the rubric: passed (True / False, None when it does not apply) and why. Chapter 09."""

    criterion: str
    passed: bool | None
    detail: str


@dataclass(frozen=True)
class Grade:
    """Every criterion's verdict for one :class:`Choice`; ``score`` = passed / applicable. Chapter 09."""

    choice: Choice
    verdicts: tuple[Verdict, ...]

    @property
    def passed(self) -> int:
        """Criteria passed."""
        return sum(1 for v in self.verdicts if v.passed)

    @property
    def applicable(self) -> int:
        """Criteria that apply (a missing checklist or an unpriced transcript leaves some out)."""
        return sum(1 for v in self.verdicts if v.passed is not None)

    @property
    def ok(self) -> bool:
        """Every applicable criterion passed."""
        return self.passed == self.applicable

    def rows(self) -> list[tuple[str, str, str]]:
        """The verdicts as the chapter prints them: criterion, ``pass`` / ``FAIL`` / ``n/a``, detail."""
        mark = {True: "pass", False: "FAIL", None: "n/a"}
        return [(v.criterion, mark[v.passed], v.detail) for v in self.verdicts]


def fits(row: CompareRow) -> bool:
    """Whether a leaderboard row built every context inside the window (no error, no overflow). Chapter 09."""
    return not row.error and not row.overflows


def _fitting(rows: Sequence[CompareRow]) -> list[CompareRow]:
    return [r for r in rows if fits(r)]


def _cheapest(rows: Sequence[CompareRow]) -> CompareRow | None:
    priced = [r for r in _fitting(rows) if r.cost_usd is not None]
    return min(priced, key=lambda r: r.cost_usd) if priced else None


def _best_facts(rows: Sequence[CompareRow]) -> int | None:
    kept = [r.facts_kept_min for r in _fitting(rows) if r.facts_kept_min is not None]
    return max(kept) if kept else None


def recommend(own: OwnBoard) -> Choice | None:
    """The workbook's pick on ``own``: among the strategies that fit, those keeping at least :data:`FACT_SHARE`
    of the best worst-call retention (all, without a checklist) and costing at most :data:`COST_FACTOR` × the
    cheapest, the one keeping most facts at its worst call, then the cheapest. None when none fits. Chapter 09."""
    rows = [r for r in _fitting(own.board.rows) if r.name != "recorded"]
    if not rows:
        return None
    best, low = _best_facts(rows), _cheapest(rows)
    ok = [r for r in rows if (best is None or (r.facts_kept_min or 0) >= FACT_SHARE * best)
          and (low is None or r.cost_usd is None or r.cost_usd <= COST_FACTOR * low.cost_usd)] or rows
    pick = max(ok, key=lambda r: (r.facts_kept_min or 0, -(r.cost_usd or 0.0)))
    cost = f"${pick.cost_usd:,.4f}" if pick.cost_usd is not None else "unpriced"
    facts = f", {pick.facts_kept} facts kept (worst call {pick.facts_kept_min})" if pick.facts_kept is not None else ""
    why = f"0 overflows at {own.window:,} tokens, {cost}{facts}"
    return Choice(pick.name, why, cost_usd=pick.cost_usd, facts_kept=pick.facts_kept)


def chosen_policy(choice: Choice) -> tuple[float, float] | None:
    """(trigger, target) of ``choice`` (ratios of the window; a missing one is the leaderboard's 0.8 or 0.5), or
    None when it gives neither or its strategy does not compact. Chapter 09."""
    if (choice.trigger is None and choice.target is None) or choice.strategy not in COMPACTING:
        return None
    return (choice.trigger or DEFAULT_POLICY[0], choice.target or DEFAULT_POLICY[1])


def valid_policy(policy: tuple[float, float]) -> bool:
    """Whether (trigger, target) passes the rubric's rule 0 < target < trigger ≤ 0.9 (the book's 90% input
    shortcut). ``valid_policy((0.8, 0.5))`` → True; ``(0.5, 0.8)`` → False. Chapter 09."""
    trigger, target = policy
    return 0 < target < trigger <= MAX_TRIGGER


def graded_row(choice: Choice, own: OwnBoard) -> tuple[CompareRow | None, str]:
    """The ledger row the rubric grades ``choice`` on, and a label for it (``"pipeline"``, or ``"pipeline at 0.6 →
    0.3"``): the board's row of its strategy (None when it is not on the board), or — for ``compaction`` and
    ``pipeline`` with a valid policy other than the leaderboard's 0.8 → 0.5 — the row of
    :func:`~ctxlab.lab.ch07_compaction.policy_replay` (chapter 07, offline and deterministic; the replay is the
    shared one) with that trigger and target at the board's window, built by chapter 08's
    :func:`~ctxlab.lab.compare.compare_row`. A policy that cannot build a context leaves the board's row.
    Chapter 09."""
    row = next((r for r in own.board.rows if r.name == choice.strategy), None)
    policy = chosen_policy(choice)
    if row is None or row.error or policy is None or not valid_policy(policy) or policy == DEFAULT_POLICY:
        return row, choice.strategy
    try:
        result = policy_replay(own.conversation, own.window, *policy, strategy=choice.strategy)
    except (CtxlabError, ValueError):
        return row, choice.strategy
    return (compare_row(choice.strategy, result, own.conversation, own.facts),
            f"{choice.strategy} at {policy[0]:g} → {policy[1]:g}")


def _policy(choice: Choice, own: OwnBoard) -> Verdict:
    if choice.trigger is None and choice.target is None:
        return Verdict("policy", None, "no policy given: the leaderboard's 0.8 → 0.5")
    if choice.strategy not in COMPACTING:
        return Verdict("policy", False, f"{choice.strategy} does not compact: a trigger and target apply only to "
                                        f"{' and '.join(COMPACTING)}")
    trigger, target = chosen_policy(choice) or DEFAULT_POLICY
    if not valid_policy((trigger, target)):
        return Verdict("policy", False, f"need 0 < target < trigger ≤ {MAX_TRIGGER}: got {trigger} → {target}")
    try:
        result = policy_replay(own.conversation, own.window, trigger, target, strategy=choice.strategy)
    except (CtxlabError, ValueError) as err:
        return Verdict("policy", False, f"{trigger} → {target} cannot build a context: {' '.join(str(err).split())}")
    over = sum(1 for r in result.ledger.rows if r.overflow)
    compactions = sum(1 for e in result.new_entries if e.kind == "compaction")
    return Verdict("policy", over == 0, f"{trigger} → {target}: {compactions} compactions, {over} overflows")


def _money(cost: float | None) -> str:
    return f"${cost:,.4f}" if cost is not None else "unpriced"


def _ledger_numbers(choice: Choice, row: CompareRow, label: str) -> Verdict:
    """Each number quoted against ``row``; a wrong one is named: "you quoted X, the ledger says Y"."""
    facts = row.facts_kept if row.facts_kept is not None else "—"
    ledger, of = ("ledger", "") if label == choice.strategy else (f"ledger of {label}", f" ({label})")
    if row.cost_usd is None and row.facts_kept is None:  # nothing the ledger could be quoted on
        return Verdict("ledger numbers", None, f"{ledger}: unpriced and no checklist, nothing to quote "
                                               "(set MODEL to price it)")
    if choice.cost_usd is None and choice.facts_kept is None:
        return Verdict("ledger numbers", False, f"{ledger}: {_money(row.cost_usd)}, facts kept {facts} "
                                                "(quote cost_usd or facts_kept)")
    wrong = []
    if choice.cost_usd is not None and not (row.cost_usd is not None and abs(choice.cost_usd - row.cost_usd)
                                            <= COST_TOLERANCE * max(row.cost_usd, 1e-9)):
        wrong.append(f"you quoted ${choice.cost_usd:,.4f}, the ledger says {_money(row.cost_usd)}")
    if choice.facts_kept is not None and choice.facts_kept != row.facts_kept:
        wrong.append(f"you quoted {choice.facts_kept} facts kept, the ledger says "
                     + (f"{row.facts_kept}" if row.facts_kept is not None else "none: no checklist"))
    if wrong:
        return Verdict("ledger numbers", False, "; ".join(wrong) + of)
    return Verdict("ledger numbers", True, f"{ledger}: {_money(row.cost_usd)}, facts kept {facts}")


def grade(choice: Choice, own: OwnBoard) -> Grade:
    """Grade ``choice`` against ``own``'s leaderboard, one :class:`Verdict` per :data:`CRITERIA`. The overflows,
    the numbers quoted, the facts kept and the cost are those of :func:`graded_row` — the strategy replayed with
    the chosen trigger and target when the choice gives a valid policy, else its board row — and the cost is
    compared with the cheapest board row that fits. A strategy not on the board fails the first criterion and
    every other but the justification is n/a. Details are whole (:func:`grade_table` wraps them). Chapter 09."""
    board_row = next((r for r in own.board.rows if r.name == choice.strategy), None)
    says_number = bool(re.search(r"\d", choice.why))
    why = Verdict("justification", says_number, "states a number" if says_number else
                  "give a reason with a number from the ledger (cost, facts kept, overflows)")
    if board_row is None or board_row.error or board_row.name == "recorded":
        what = ("not on the board" if board_row is None else "cannot build a context" if board_row.error else
                "what your agent did, not a strategy to run")
        names = ", ".join(r.name for r in own.board.rows)
        na = [Verdict(c, None, "—") for c in CRITERIA[1:-1]]
        return Grade(choice, (Verdict("on the board", False, f"{choice.strategy}: {what} (board: {names})"),
                              *na, why))
    row, label = graded_row(choice, own)
    assert row is not None  # the board has the strategy
    out = [Verdict("on the board", True, f"{board_row.name}: {board_row.contexts} contexts built")]
    out.append(Verdict("0 overflows", row.overflows == 0,
                       f"{row.overflows} calls over the {own.window:,} window"
                       + ("" if label == choice.strategy else f" ({label})")))
    out.append(_ledger_numbers(choice, row, label))
    best = _best_facts(own.board.rows)
    if best is None or row.facts_kept_min is None:
        out.append(Verdict("fact retention", None, "no checklist for this transcript: not measured"))
    else:
        out.append(Verdict("fact retention", row.facts_kept_min >= FACT_SHARE * best,
                           f"worst call {row.facts_kept_min} of the best {best} (need {FACT_SHARE:.0%})"))
    low = _cheapest(own.board.rows)
    if low is None or row.cost_usd is None:
        out.append(Verdict("cost", None, "no model recorded: costs are unpriced"))
    else:
        ratio = row.cost_usd / low.cost_usd if low.cost_usd else 1.0
        out.append(Verdict("cost", ratio <= COST_FACTOR, f"{ratio:.2f}× the cheapest that fits ({low.name})"))
    out.append(_policy(choice, own))
    out.append(why)
    return Grade(choice, tuple(out))


GRADE_COLUMNS = ("criterion", "verdict", "detail")


def grade_table(g: Grade, width: int = WIDTH) -> str:
    """``g``'s verdicts as a text table (:data:`GRADE_COLUMNS`) whose lines are at most ``width`` characters: each
    detail whole, wrapped onto lines of its own under the detail column (words are not broken unless one is
    longer than the column; ``width`` ≥ 45 leaves the detail column 20 characters or more). Chapter 09."""
    rows = g.rows()
    left = max(len(GRADE_COLUMNS[0]), *(len(c) for c, _, _ in rows)) + 2 + len(GRADE_COLUMNS[1]) + 2
    lines = []
    for criterion, mark, detail in rows:
        wrapped = textwrap.wrap(shown(detail), max(20, width - left), break_on_hyphens=False) or [""]
        lines.append((criterion, mark, wrapped[0]))
        lines += [("", "", more) for more in wrapped[1:]]
    return text_table(lines, GRADE_COLUMNS)


BOARD_COLUMNS = ("strategy", "cost", "hit rate", "compactions", "overflows", "facts kept (worst call)")


def board_rows(own: OwnBoard) -> list[tuple]:
    """The leaderboard as chapter 09 prints it (:data:`BOARD_COLUMNS`, under 100 characters): a strategy that
    could not build a context says so in the cost column; an unpriced one says ``unpriced``; the hit rate is ``—``
    where no provider is known (no cache rules to apply: the ledger's 0 is no measurement). Chapter 09."""
    out, rules = [], own.conversation.provider not in (None, "", "other")
    for r in own.board.rows:
        if r.error:
            out.append((r.name, "cannot build a context", "—", "—", "—", "—"))
            continue
        cost = f"${r.cost_usd:,.4f}" if r.cost_usd is not None else "unpriced"
        facts = f"{r.facts_kept} ({r.facts_kept_min})" if r.facts_kept is not None else "—"
        hit = f"{100 * (r.hit_rate or 0):.1f}%" if rules else "—"
        out.append((r.name, cost, hit, r.compactions, r.overflows, facts))
    return out
