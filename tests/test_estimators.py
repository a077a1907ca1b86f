"""The script-aware estimator (ctxlab/estimators.py) and its committed table (data/estimators.csv).

Correctness only: what it counts, that the fast path prices exactly what the readable one counts,
that it behaves like every other counter, and that the table regenerates. Speed is measured in
bench/ (bench/estimator_table.py), never asserted here.
"""

from __future__ import annotations

import base64
import csv
import math
import random
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlab.estimators import FEATURES, KINDS, WEIGHTS, ScriptAwareCounter, byte_sum, compare_estimates, get_counter, script_counts
from ctxlab.messages import assistant, tool_result, user
from ctxlab.tables.profiles import profile_for
from ctxlab.tokens import MessageMeter, TiktokenCounter

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "data" / "estimators.csv"
EST = ScriptAwareCounter()
# text the estimator has rules for: words, digits, punctuation, Chinese, kana, emoji, base64 alphabet
PIECES = st.sampled_from(["the ", "Context", "window ", "0123", "9", "{\"a\": 1}, ", "\n", "  ", "上下文", "。",
                          "ひらがな", "한국어", "😀", "é", "aGVsbG8", "+/=", "_-", "QmFzZTY0", "f3a9", "→"])
TEXTS = st.one_of(st.text(max_size=300), st.lists(PIECES, max_size=60).map("".join))


def priced(text: str) -> int:
    """What the readable counts cost: the sum of count x weight, in hundredths, rounded up to tokens."""
    counts = script_counts(text)
    return math.ceil(sum(WEIGHTS[f] * counts[f] for f in FEATURES) / 100) if text else 0


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(TEXTS)
def test_the_fast_count_prices_exactly_the_readable_counts(text):
    assert EST.count(text) == priced(text)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(TEXTS)
def test_counts_are_whole_and_not_negative(text):
    n = EST.count(text)
    assert isinstance(n, int) and n >= 0
    assert (n == 0) == (text == "")


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(TEXTS, st.integers(1, 6), TEXTS)
def test_a_longer_text_never_gets_a_smaller_estimate(text, k, more):
    assert EST.count(text * (k + 1)) >= EST.count(text * k)  # monotone in repeated text
    assert EST.count(text + more) >= EST.count(text)  # and in appended text


def test_chinese_weighs_more_than_ascii_letters():
    assert WEIGHTS["cjk"] > WEIGHTS["lower"] and WEIGHTS["cjk"] > WEIGHTS["upper"]
    zh = "上下文窗口管理决定了智能体能记住什么" * 10
    en = "contextwindowmanagementdecideswhatitkeeps"[:len(zh) // 10] * 10
    assert len(zh) == len(en)
    assert EST.count(zh) > 2 * EST.count(en)
    assert EST.count(zh) >= TiktokenCounter().count(zh)  # over, not under, where chars/4 under-counts by far
    assert get_counter("chars/4").count(zh) < TiktokenCounter().count(zh)


@pytest.mark.parametrize("kind", ["base64", "hex", "prose"])
def test_base64_hex_and_prose_are_close_to_o200k(kind):
    rng = random.Random(11)
    data = rng.randbytes(3_000)
    text = {"base64": base64.b64encode(data).decode(), "hex": data.hex(),
            "prose": "Keep the tool call and its result together when the budget is tight. " * 40}[kind]
    exact = TiktokenCounter().count(text)
    assert 0.95 * exact <= EST.count(text) <= 1.3 * exact


@settings(max_examples=100, deadline=None, derandomize=True, database=None)
@given(st.binary(max_size=2_000))
def test_byte_sum_is_sum(data):
    assert byte_sum(data) == sum(data)
    assert byte_sum(b"\xff" * 100_000) == 255 * 100_000


def test_same_interface_as_the_other_counters():
    est = get_counter("script-aware")
    assert est == ScriptAwareCounter() and est.name == "script-aware" and est.exact is False
    for name in ("o200k_base", "chars/4"):
        other = get_counter(name)
        assert isinstance(other.count("hello world"), int) and isinstance(est.count("hello world"), int)
    meter = MessageMeter(profile_for("gpt-4o"), est)
    msgs = [user("Fix the test.", "u1"), assistant("Reading it.", "a1", calls=(("c1", "read", {"path": "x.py"}),)),
            tool_result("c1", "def test(): assert 1 == 2", "t1")]
    assert all(meter.message(m) > meter.overhead(m) for m in msgs)
    row = compare_estimates({"zh": "上下文" * 50}, estimators=("chars/4", "script-aware"))[0]
    assert row.estimates["script-aware"] > row.estimates["chars/4"]


def test_weights_are_checked():
    with pytest.raises(ValueError, match="needs a weight for"):
        ScriptAwareCounter(weights=(("lower", 1),))
    with pytest.raises(ValueError, match="0 to 255"):
        ScriptAwareCounter(weights=tuple({**WEIGHTS, "cjk": 300}.items()))
    assert set(KINDS) < set(FEATURES) and set(WEIGHTS) == set(FEATURES)


# ---- the committed table ------------------------------------------------------------------------------

def read_table(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [ln for ln in lines if ln.startswith("#")], list(csv.DictReader(ln for ln in lines if not ln.startswith("#")))


def test_the_committed_table_names_its_sources_and_holds_the_goals():
    header, rows = read_table(TABLE)
    assert any("licence" in h.lower() or "MIT" in h for h in header) and any("made by" in h for h in header)
    by_name = {r["counter"]: r for r in rows}
    assert set(by_name) == {"o200k_base", "chars/3", "chars/4", "script-aware"}
    ours, c4 = by_name["script-aware"], by_name["chars/4"]
    assert float(ours["under_5pct_share"]) < float(c4["under_5pct_share"])  # far fewer under-counts than chars/4
    assert float(by_name["o200k_base"]["total_error"]) == 0.0


def test_the_committed_table_regenerates(shared_transcripts):
    sys.path.insert(0, str(ROOT / "data"))
    try:
        from make_estimators_table import COLUMNS, table
    finally:
        sys.path.remove(str(ROOT / "data"))
    _, committed = read_table(TABLE)
    fresh = table(shared_transcripts)
    for old, new in zip(committed, fresh, strict=True):
        for column in COLUMNS:
            if column != "speed_vs_tiktoken":  # the one figure that depends on the machine
                assert old[column] == str(new[column]), f"data/estimators.csv is stale ({old['counter']}, {column}): " \
                                                        "run `python data/make_estimators_table.py`"
