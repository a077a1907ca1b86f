"""Chapter 07's measurement of the trigger's meter: counting every token against usage-anchored metering.

What it holds: :func:`metering_compare` (both meters replayed at one window, and the usage-anchored
estimate's error call by call) and :func:`first_triggers` (per window, the first call each meter would
reach the trigger at). Plain rows, no UI; the sawtooth is in :mod:`ctxlab.lab.ch07_compaction`, the
policies side by side in :mod:`ctxlab.lab.ch07_policies`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from ctxlab.base.errors import CtxlabError
from ctxlab.compaction import CompactionPolicy, CompactionStrategy
from ctxlab.context import Context
from ctxlab.fast import FAST
from ctxlab.lab.ch07_compaction import compaction_call, two_decimals
from ctxlab.messages import Conversation
from ctxlab.replay import replay
from ctxlab.strategies import Call
from ctxlab.tokens import MessageMeter


@dataclass
class _Metered(CompactionStrategy):
    """``compaction`` that records, per call, what the trigger saw and what counting gives for the same context."""

    seen: list[tuple[int, int, int]] = field(default_factory=list)  # (call, metered, counted)

    def metered(self, ctx: Context, call: Call, meter: MessageMeter) -> int:
        value = super().metered(ctx, call, meter)
        self.seen.append((call.index, value, ctx.total_tokens))
        return value


@dataclass(frozen=True)
class MeteringRun:
    """One metering's replay: the compaction calls, the largest context sent (tokens), overflows, cost (USD);
    ``error`` when the replay could not build a context. Chapter 07."""

    metering: str
    compaction_calls: tuple[int, ...]
    max_context: int
    overflows: int
    cost_usd: float | None
    error: str = ""


@dataclass(frozen=True)
class MeteringComparison:
    """Counting against usage-anchored metering at one window, and the estimate's error call by call. Chapter 07.

    ``estimates``: per call of the usage-anchored replay, (call, what the meter saw, the counted size of the
    same context), tokens."""

    window: int
    trigger_ratio: float
    runs: tuple[MeteringRun, ...]
    estimates: tuple[tuple[int, int, int], ...]

    @property
    def largest_under(self) -> tuple[int, int, int] | None:
        """The call the usage-anchored meter under-counted most (call, metered, counted)."""
        under = [e for e in self.estimates if e[1] < e[2]]
        return min(under, key=lambda e: (e[1] - e[2]) / e[2]) if under else None

    @property
    def disagreements(self) -> tuple[tuple[int, int, int], ...]:
        """Calls of the usage-anchored replay at which the meter and a count of the same context fall on different
        sides of the trigger (call, metered, counted)."""
        level = self.trigger_ratio * self.window
        return tuple(e for e in self.estimates if (e[1] > level) != (e[2] > level))

    @property
    def largest_over(self) -> tuple[int, int, int] | None:
        """The call the usage-anchored meter over-counted most (call, metered, counted)."""
        over = [e for e in self.estimates if e[1] > e[2]]
        return max(over, key=lambda e: (e[1] - e[2]) / e[2]) if over else None


def _run(strategy: _Metered, conversation: Conversation, window: int, metering: str) -> MeteringRun:
    try:
        result = replay(conversation, strategy, window=window, speedup=FAST)
    except CtxlabError as err:
        return MeteringRun(metering, (), 0, 0, None, " ".join(str(err).split())[:200])
    return MeteringRun(metering, tuple(compaction_call(e.id) for e in result.new_entries if e.kind == "compaction"),
                       max((r.context_tokens for r in result.records), default=0),
                       sum(1 for r in result.records if r.overflow), result.ledger.totals().cost_usd)


def metering_compare(conversation: Conversation, window: int, trigger_ratio: float = 0.8,
                     target_ratio: float = 0.5) -> MeteringComparison:
    """Replay ``compaction`` counting every token, and anchored on the previous request's size (+ chars/4 for what
    was added since), at one window. A replay that cannot build comes back in its run's ``error``. Chapter 07.

    On the sample at 40,000: counting compacts at calls 31 and 41, usage-anchored only at 32 (it saw the
    24,000-token CI log as about 12,000)."""
    runs, usage = [], None
    for metering in ("count", "usage"):
        policy = CompactionPolicy(two_decimals(trigger_ratio), two_decimals(target_ratio),
                                  metering=metering)  # type: ignore[arg-type]
        s = _Metered(policy)
        runs.append(_run(s, conversation, window, metering))
        usage = s if metering == "usage" else usage
    return MeteringComparison(window, two_decimals(trigger_ratio), tuple(runs), tuple(usage.seen if usage else ()))


def first_triggers(conversation: Conversation, windows: Sequence[int], trigger_ratio: float = 0.8
                   ) -> list[tuple[int, int | None, int | None]]:
    """Per window, the first call at which counting and usage-anchored metering would reach the trigger:
    (window, counting, usage-anchored), None if never. One pass that never compacts, so both meters see the
    same history up to there. Raises what :func:`~ctxlab.replay.replay` raises.

    The sample → (30,000, 31, 31), (40,000, 31, 32), ... Chapter 07."""
    never = _Metered(CompactionPolicy(trigger_ratio=1.0, target_ratio=0.5, metering="usage"))
    replay(conversation, never, window=10**9, speedup=FAST)  # nothing compacts: both meters see the whole history
    out = []
    for w in windows:
        level = two_decimals(trigger_ratio) * w
        out.append((w, next((c for c, _, n in never.seen if n > level), None),
                    next((c for c, m, _ in never.seen if m > level), None)))
    return out
