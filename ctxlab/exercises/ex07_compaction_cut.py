"""Exercise 07 (chapter 07): where a compaction cuts — the first unit it keeps.

The rule of ``CompactionStrategy._compact`` (``ctxlab/compaction.py``), on plain numbers:

* ``unit_tokens``: each unit's size in tokens, oldest first (a unit is never split);
  ``fixed_tokens``: what every request carries — tools, system prompt, and the room kept for the
  summary;
* at or under ``trigger_ratio`` x ``window`` there is no compaction: keep everything (index 0);
* the **floor** is ``fixed_tokens`` + the newest unit. Over the input budget, ``int(0.9 x window)``
  (``CompactionPolicy.input_ratio``), no compaction can help: return -1 (ctxlab first prunes the
  newest unit's tool results once, then raises ``CompactionError``);
* the target is ``int(target_ratio x window)``, raised to the floor when the floor is higher; walking
  back from the newest unit, keep each older unit while it still fits, and stop at the first that
  does not. The answer is the index of the oldest unit kept; everything before it is summarised.

Simplified on purpose: no pinned user message (:func:`real_cuts` counts it in the fixed part), no
shrinking, and the trigger sees fixed + units, where ctxlab meters the context as sent (an earlier
summary in, the room for the next one out). ``first_kept([10, 30, 20, 20], 5, 100, 0.8, 0.5)`` → 2
(85 tokens > 80; target 50; the newest 20 and the 20 before it fit, 30 does not).

Cases come from a seeded ``random.Random``: 1-8 units, small windows, triggers 60-90%, targets 30-75%,
plus the boundaries (a unit exactly filling the room, exactly at the trigger, a floor just over the budget).
:func:`real_cuts` replays a transcript under ``CompactionStrategy`` and, at each compaction, gives the
exercise's arguments for that history beside the unit ctxlab kept — so chapter 07 can show that the
function and the strategy cut in the same place.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Sequence

from ctxlab.compaction import CompactionPolicy, CompactionStrategy
from ctxlab.interactions import group_units
from ctxlab.messages import Conversation
from ctxlab.replay import replay
from ctxlab.strategies import whole_context
from ctxlab.views import compacted_view, without_recorded
from ctxlab.exercises._grader import Exercise, by_size


def first_kept(unit_tokens: Sequence[int], fixed_tokens: int, window: int, trigger_ratio: float,
               target_ratio: float) -> int:
    if fixed_tokens + sum(unit_tokens) <= trigger_ratio * window:
        return 0  # under the trigger: no compaction, every unit kept
    newest = len(unit_tokens) - 1
    floor = fixed_tokens + unit_tokens[newest]
    if floor > int(0.9 * window):
        return -1  # even the floor is over the input budget: compaction cannot help
    room = max(int(target_ratio * window), floor) - floor
    first = newest
    for i in range(newest - 1, -1, -1):  # newest first, backwards
        if unit_tokens[i] > room:
            break  # never skip a unit: the kept units are one unbroken stretch
        room -= unit_tokens[i]
        first = i
    return first


@dataclass(frozen=True)
class RealCut:
    """One compaction of a replay: the exercise's arguments for its history, and the unit ctxlab kept first.

    ``units`` are the positions (in the history's units) of ``unit_tokens``: the pinned newest user
    message is left out of the list and counted in ``fixed_tokens`` instead, as ``_compact`` does.
    ``kept_unit`` is the position ctxlab's compaction entry names as the first kept.
    """

    call: int
    unit_tokens: tuple[int, ...]
    fixed_tokens: int
    window: int
    trigger_ratio: float
    target_ratio: float
    units: tuple[int, ...]
    kept_unit: int

    def args(self) -> tuple[list[int], int, int, float, float]:
        return list(self.unit_tokens), self.fixed_tokens, self.window, self.trigger_ratio, self.target_ratio


@dataclass
class _CutRecorder:
    """``CompactionStrategy`` that also writes down, at each compaction, the numbers its cut was made from."""

    inner: CompactionStrategy
    name: str = "compaction"
    cuts: list[RealCut] = field(default_factory=list)

    def decide(self, history: Conversation, call: Any, profile: Any, meter: Any) -> Any:
        decision = self.inner.decide(history, call, profile, meter)
        entry = next((e for e in decision.new_entries if e.kind == "compaction"), None)
        if entry is None:
            return decision
        view = compacted_view(without_recorded(history))[0]
        ctx = whole_context(view, profile, meter)
        units = group_units([m for m in view.messages if m.origin not in ("compact_summary", "meta")])
        tokens = [sum(meter.message(m) for m in u.messages) for u in units]
        pinned = max((u.index for u in units if u.first.is_real_user), default=None)
        policy, window = self.inner.policy, profile.context_window
        fixed = ctx.total_tokens - ctx.message_tokens + int(policy.summary_share * policy.target_ratio * window)
        if pinned is not None and pinned != units[-1].index:
            fixed += tokens[pinned]
        rest = [u.index for u in units if u.index != pinned or u.index == units[-1].index]
        kept = next(u.index for u in units if u.first.id == entry.data["first_kept_id"])
        self.cuts.append(RealCut(call.index, tuple(tokens[i] for i in rest), fixed, window, policy.trigger_ratio,
                                 policy.target_ratio, tuple(rest), kept))
        return decision


def real_cuts(conversation: Conversation, window: int, policy: CompactionPolicy | None = None) -> list[RealCut]:
    """Replay ``conversation`` under ``compaction`` at ``window``; one :class:`RealCut` per compaction. Chapter 07."""
    recorder = _CutRecorder(CompactionStrategy(policy or CompactionPolicy()))
    replay(conversation, recorder, window=window)
    return recorder.cuts


# hand-picked boundaries: under / at the trigger, a floor just over the budget, a unit that fills the room
# exactly, a small unit older than one that does not fit, the worked example
_FIXED = [([10], 5, 100, 0.8, 0.5), ([90], 5, 100, 0.8, 0.5), ([80], 5, 100, 0.8, 0.5),
          ([40, 45], 0, 100, 0.8, 0.5), ([40, 40], 0, 100, 0.8, 0.5), ([30, 30, 30], 0, 100, 0.8, 0.5),
          ([25, 25, 40], 0, 100, 0.8, 0.5), ([35, 10, 40], 0, 100, 0.8, 0.5), ([5, 40, 5, 40], 0, 100, 0.8, 0.5),
          ([10, 30, 20, 20], 5, 100, 0.8, 0.5), ([20, 70], 21, 100, 0.8, 0.5), ([20, 70], 20, 100, 0.8, 0.5)]
_RATIOS = ((0.6, 0.3), (0.7, 0.5), (0.8, 0.5), (0.8, 0.75), (0.9, 0.3), (0.9, 0.7))


def cases() -> list[tuple[list[int], int, int, float, float]]:
    """About 160 cases, fewest units and tokens first."""
    rng = random.Random(7)
    out: list[tuple[list[int], int, int, float, float]] = list(_FIXED)
    for _ in range(150):
        window = rng.choice((100, 200, 1_000))
        trigger, target = rng.choice(_RATIOS)
        n = rng.randint(1, 8)
        units = [rng.randint(1, max(2, int(window * rng.choice((0.05, 0.15, 0.3, 0.5))))) for _ in range(n)]
        fixed = rng.randint(0, window // 5)
        out.append((units, fixed, window, trigger, target))
    return by_size(out, lambda c: (len(c[0]), sum(c[0]) + c[1], c[2]))


EXERCISE = Exercise(
    number=7,
    title="the first unit a compaction keeps",
    function="first_kept",
    signature=("first_kept(unit_tokens: list[int], fixed_tokens: int, window: int, trigger_ratio: float, "
               "target_ratio: float) -> int"),
    cases=cases,
    reference=first_kept,
    hints=(
        "Three steps, in this order: under the trigger (fixed + all units <= trigger_ratio * window) → 0; the "
        "floor (fixed + the newest unit) over int(0.9 * window) → -1; else walk back from the newest unit.",
        "The room for older units is max(int(target_ratio * window), floor) - floor. Walk i from the second "
        "newest down to 0: a unit that fits (unit_tokens[i] <= room) is kept and uses up room.",
        "Stop at the first unit that does not fit (break, not continue): keeping an older unit past a dropped "
        "one would leave a hole in the history. Return the last index kept — the newest when none fits.",
    ),
)
