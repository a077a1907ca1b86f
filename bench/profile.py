"""Profile one hot path with pyinstrument (or run it bare under py-spy).

    python bench/profile.py agent-loop | cold | replay [STRATEGY] | ledger | estimator
    py-spy record -o profile.svg -- python bench/profile.py replay --bare

* ``agent-loop`` — 25 model calls at 10,000 messages with an incremental meter (``build_context``);
* ``cold`` — one ``build_context`` of 10,000 messages with a fresh meter;
* ``replay`` — pi-mono's session replayed under ``full`` and ``budgeted``, or the strategy named (needs ../shared);
* ``ledger`` — the chapter 04 widget on 2,000 messages: one strategy change with nothing precomputed;
* ``estimator`` — the script-aware estimator over the reporting half of the shared transcripts.

What the profiles showed before and after the optimisations is in bench/README.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data"))

from sessions import conversation, profile, tiled  # noqa: E402
from timing import SHARED  # noqa: E402

from ctxlab.context import BudgetPolicy, build_context  # noqa: E402
from ctxlab.fast import FAST, IncrementalMeter  # noqa: E402
from ctxlab.tokens import MessageMeter  # noqa: E402


def agent_loop() -> None:
    prof, policy, messages = profile(), BudgetPolicy(), tiled(10_000)
    meter = IncrementalMeter(prof)
    points = [k for k in range(1, len(messages)) if messages[k].role == "assistant"][-26:]
    build_context(conversation(messages[:points[0]]), policy, profile=prof, meter=meter)
    for k in points[1:]:
        build_context(conversation(messages[:k]), policy, profile=prof, meter=meter)


def cold() -> None:
    prof = profile()
    build_context(conversation(tiled(10_000)), BudgetPolicy(), profile=prof, meter=MessageMeter(prof))


def replay_pi(*strategies: str) -> None:
    from ctxlab.io.formats import load
    from ctxlab.replay import replay

    conv = load(SHARED / "pi-mono" / "before-compaction.jsonl").conversation()
    for strategy in strategies or ("full", "budgeted"):
        replay(conv, strategy, speedup=FAST)


def ledger() -> None:
    from ctxlab.tables.default_model import DEFAULT_MODEL, DEFAULT_PROVIDER
    from ctxlab.widgets.ch04_ledger import LedgerWidget

    widget = LedgerWidget(conversation(tiled(2_000), DEFAULT_MODEL, DEFAULT_PROVIDER))
    widget.strategy.value = "budgeted"


def estimator() -> None:
    from make_estimators_table import corpus

    from ctxlab.estimators import ScriptAwareCounter

    texts = [t for m in corpus(SHARED)[1] for t in m]
    counter = ScriptAwareCounter()
    for _ in range(5):
        for t in texts:
            counter.count(t)


TARGETS = {"agent-loop": agent_loop, "cold": cold, "replay": replay_pi, "ledger": ledger, "estimator": estimator}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in TARGETS:
        print(__doc__)
        return 2
    name, args = argv[0], [a for a in argv[1:] if not a.startswith("--")]

    def target() -> None:
        TARGETS[name](*args)

    if "--bare" in argv:  # for py-spy, which samples from outside
        target()
        return 0
    from pyinstrument import Profiler

    profiler = Profiler(interval=0.001)
    with profiler:
        target()
    print(profiler.output_text(unicode=False, show_all=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
