"""Fit the weights of ctxlab's script-aware estimator (``ctxlab/estimators.py``) and print them.

    python bench/fit_estimator.py [SOURCE_DIR]

Data: the fitting half of the shared transcripts, split as ``data/make_estimators_table.py`` says
(the other half is what ``data/estimators.csv`` reports). The target is o200k_base.

The fit, in four steps:

1. every text's counts (``script_counts``) and exact tokens; a message is the sum of its texts;
2. non-negative least squares on the *relative* error of each message, made asymmetric (expectile
   regression, ``TAU``): a message under-counted weighs ``TAU``, one over-counted ``1 - TAU``, so
   the fitted surface sits above most messages instead of through their middle;
3. kinds the transcripts hardly hold (fewer than ``MIN_SEEN`` characters: hangul, emoji, base64,
   ...) are not fitted: a script's weight is o200k's mean tokens for each character of its block on
   its own, an upper bound for running text; the ``base64`` and ``hex`` surcharges make 30,000
   random bytes written in base64 and in hex (seeded) cost what o200k charges for them, on top of
   the other weights (fit and surcharges are iterated three times);
4. one scale factor for all weights, the smallest that leaves at most ``TARGET_UNDER`` of the fitting
   messages under-counted by more than 5% (weights rounded to hundredths, each text rounded up, as
   the counter does).

Prints the ``WEIGHTS`` dict to paste into ``ctxlab/estimators.py`` and the figures on both halves.
Needs numpy (installed with the ``lab`` extra).
"""

from __future__ import annotations

import base64
import random
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "data"))

from make_estimators_table import DEFAULT_SOURCE_DIR, corpus  # noqa: E402

from ctxlab.estimators import FEATURES, KINDS, RUN_KINDS, ScriptAwareCounter, script_counts  # noqa: E402
from ctxlab.tokens import TiktokenCounter  # noqa: E402

TAU = 0.995  # weight of an under-counted message in the asymmetric fit
TARGET_UNDER = 0.006  # share of fitting messages allowed under by more than 5% (the goal: under 1%)
MIN_SEEN = 1_000  # characters of a kind in the fitting half below which its weight is a prior
PRIOR_BLOCKS = {  # kind -> code points whose mean isolated o200k tokens is its prior weight
    "two_byte": range(0x0400, 0x0500),  # Cyrillic
    "other_script": range(0x0900, 0x0980),  # Devanagari
    "symbol": range(0x2000, 0x2BFF),
    "kana": range(0x3041, 0x3100),
    "hangul": range(0xAC00, 0xD7A4),
    "fullwidth": range(0xFF01, 0xFF5F),
    "four_byte": range(0x1F300, 0x1FAFF),
}


def nnls(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Least squares with non-negative weights: drop the negative ones and solve again until none is left."""
    keep = list(range(a.shape[1]))
    while True:
        sol, *_ = np.linalg.lstsq(a[:, keep], b, rcond=None)
        if (sol >= 0).all():
            w = np.zeros(a.shape[1])
            w[keep] = sol
            return w
        keep = [k for k, s in zip(keep, sol) if s >= 0]


def random_text(kind: str) -> str:
    """30,000 seeded random bytes written in base64 or in hex."""
    data = random.Random(0).randbytes(30_000)
    return base64.b64encode(data).decode() if kind == "base64" else data.hex()


def prior(kind: str, exact: TiktokenCounter) -> float:
    """A script's weight with no data to fit on: the block's characters counted one by one, on average."""
    chars = [chr(c) for c in PRIOR_BLOCKS[kind] if chr(c).isprintable()]
    return sum(exact.count(c) for c in chars) / len(chars)


def surcharge(kind: str, weights: dict[str, float], exact: TiktokenCounter) -> float:
    """The ``base64`` or ``hex`` surcharge per character that makes random text of that kind cost what o200k
    charges, on top of what ``weights`` (tokens per item) already price in it."""
    text = random_text(kind)
    counts = script_counts(text)
    plain = sum(weights[f] * n for f, n in counts.items() if f != kind)
    return max(0.0, (exact.count(text) - plain) / counts[kind])


def features(messages: list[list[str]], exact: TiktokenCounter) -> tuple[list[np.ndarray], np.ndarray]:
    """Per message: its texts' counts (one row per text) and its exact tokens."""
    rows = [np.array([[script_counts(t)[f] for f in FEATURES] for t in m], float) for m in messages]
    return rows, np.array([sum(exact.count(t) for t in m) for m in messages], float)


def figures(counter: ScriptAwareCounter, messages: list[list[str]], y: np.ndarray) -> dict[str, float]:
    est = np.array([sum(counter.count(t) for t in m) for m in messages], float)
    ok = y > 0
    err = (est[ok] - y[ok]) / y[ok]
    return {"mean_error": err.mean(), "under_5pct_share": (err < -0.05).mean(), "worst_under": err.min(),
            "total_error": (est[ok].sum() - y[ok].sum()) / y[ok].sum()}


def main(argv: list[str]) -> int:
    source_dir = Path(argv[0]) if argv else DEFAULT_SOURCE_DIR
    if not source_dir.is_dir():
        print(f"fit_estimator: no transcripts at {source_dir}; nothing fitted.")
        return 0
    fit_msgs, report_msgs = corpus(source_dir)
    exact = TiktokenCounter("o200k_base")
    rows, y = features(fit_msgs, exact)
    x = np.array([r.sum(axis=0) for r in rows])
    ok = y > 0
    seen = x[ok].sum(axis=0)
    fitted = [k for k, f in enumerate(FEATURES) if not (f in KINDS + RUN_KINDS and seen[k] < MIN_SEEN)]
    priors = {f: prior(f, exact) for k, f in enumerate(FEATURES) if k not in fitted and f in KINDS}
    surcharges = {f: 0.0 for k, f in enumerate(FEATURES) if k not in fitted and f in RUN_KINDS}
    a = x[ok][:, fitted] / y[ok][:, None]  # each message's counts over its exact tokens: the relative error
    for _ in range(3):  # the surcharges depend on the fitted weights and the fit on the surcharges: iterate
        fixed = sum(x[ok][:, FEATURES.index(f)] * p for f, p in {**priors, **surcharges}.items())
        b = 1 - fixed / y[ok]  # what is left for the fitted weights to price
        sides = np.ones(len(b))
        for _ in range(15):  # iteratively reweighted: expectile regression
            root = np.sqrt(sides)
            w_fit = nnls(a * root[:, None], b * root)
            sides = np.where(a @ w_fit < b, TAU, 1 - TAU)
        raw = dict.fromkeys(FEATURES, 0.0)
        raw.update({FEATURES[k]: w for k, w in zip(fitted, w_fit)})
        raw.update(priors)
        surcharges = {f: surcharge(f, {**raw, **surcharges}, exact) for f in surcharges}
    priors.update(surcharges)

    def counter(scale: float) -> ScriptAwareCounter:
        weights = {f: round(100 * raw[f] * scale) for f in FEATURES}
        weights.update({f: min(255, round(100 * p)) for f, p in priors.items()})
        return ScriptAwareCounter(tuple(weights.items()))

    fit_y = y
    lo, hi = 0.8, 3.0
    for _ in range(20):  # the smallest scale that meets TARGET_UNDER on the fitting half
        mid = (lo + hi) / 2
        if figures(counter(mid), fit_msgs, fit_y)["under_5pct_share"] <= TARGET_UNDER:
            hi = mid
        else:
            lo = mid
    best = counter(hi)
    print(f"# fitted on {ok.sum():,} messages; scale {hi:.3f}; priors for {', '.join(priors) or 'none'}")
    print("WEIGHTS: dict[str, int] = {")
    items = list(dict(best.weights).items())
    for k in range(0, len(items), 6):
        print("    " + " ".join(f'"{f}": {w},' for f, w in items[k:k + 6]))
    print("}")
    _, report_y = features(report_msgs, exact)
    for name, msgs, ys in (("fit", fit_msgs, fit_y), ("report", report_msgs, report_y)):
        print(name, {k: round(float(v), 4) for k, v in figures(best, msgs, ys).items()})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
