"""The script-aware estimator's faster count (issue 18) gives exactly the counts of the one it replaced.

``reference_count`` below is the previous ``ScriptAwareCounter.count``, kept here verbatim (three translates
to a price map, a run map and a case map; ``bytes.count`` for the patterns; ``bytes.find`` for base64-like
runs). The new one prices each (kind, kind before) pair with one table (ctxlab/estimators.py). Both must
agree on every text, for the fitted weights and for weights large enough to need the second price byte:
the bundled sample session's texts, the shared transcripts' texts (when present), and generated text —
Chinese, kana, hangul, emoji, base64, hex, code, long runs, texts longer than one Adler-32 chunk.
"""

from __future__ import annotations

import base64
import functools
import random
import string
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlab.estimators import (_BASE64, _CASE, _RUNS, BASE64_RUN, KINDS, WEIGHTS, ScriptAwareCounter, _kind_table,
                                byte_sum)
from ctxlab.messages import TextPart, ThinkingPart, ToolCallPart

# ---- the count before issue 18, verbatim but for its tables (now built here) ------------------------------

_NOT_DIGITS = bytes(b for b in range(256) if chr(b) not in string.digits)
_RUN_NEEDLE = b"b" * BASE64_RUN


def _old_byte_sum(data: bytes) -> int:
    if len(data) <= 256:
        return (zlib.adler32(data) & 0xFFFF) - 1
    return sum((zlib.adler32(data[k:k + 256]) & 0xFFFF) - 1 for k in range(0, len(data), 256))


def _old_run_kind(length: int, digits: int, case_changes: int) -> str:
    if 10 * digits >= length:
        return "base64" if 10 * case_changes >= length else "hex"
    return "long_runs"


@functools.cache
def _old_prices(weights: tuple[tuple[str, int], ...]) -> bytes:
    w, kinds = dict(weights), _kind_table()
    return bytes(w[kinds[b]] if b in kinds else 0 for b in range(256))


def reference_count(weights: dict[str, int], text: str) -> int:
    if not text:
        return 0
    prices = _old_prices(tuple(weights.items()))
    w_runs, w_case, w_text = weights["runs"], weights["case_changes"], weights["texts"]
    raw = text.encode("utf-8")
    priced, run_map, case_map = raw.translate(prices), raw.translate(_RUNS), raw.translate(_CASE)
    total = _old_byte_sum(priced) + w_text \
        + w_runs * (run_map.count(b" a") + run_map.startswith(b"a")) + w_case * case_map.count(b"aA")
    if len(raw) >= BASE64_RUN:
        marks = raw.translate(_BASE64)
        a = marks.find(_RUN_NEEDLE)
        while a >= 0:
            b = marks.find(b".", a + BASE64_RUN)
            b = len(marks) if b < 0 else b
            changes = ((case_map[a - 1:a] if a else b" ") + case_map[a:b]).count(b"aA")
            kind = _old_run_kind(b - a, len(raw[a:b].translate(None, _NOT_DIGITS)), changes)
            total += weights[kind] * (b - a)
            a = marks.find(_RUN_NEEDLE, b)
    return (total + 99) // 100


# ---- the weights both are checked with --------------------------------------------------------------------

# the fitted ones; the fitter's largest scale (bench/fit_estimator.py tries up to 3x: pair prices above 255
# use the second table); odd ones (every weight different, zeros, a large surcharge)
SCALED = {k: min(255, 3 * v) if k in KINDS else 3 * v for k, v in WEIGHTS.items()}
ODD = {k: (7 * n + 3) % 256 for n, k in enumerate(WEIGHTS)} | {"runs": 0, "case_changes": 999, "base64": 5000}
WEIGHT_SETS = {"fitted": WEIGHTS, "scaled 3x": SCALED, "odd": ODD}
COUNTERS = {name: ScriptAwareCounter(tuple(w.items())) for name, w in WEIGHT_SETS.items()}


def same(text: str) -> None:
    for name, counter in COUNTERS.items():
        assert counter.count(text) == reference_count(WEIGHT_SETS[name], text), (name, text[:80])


def message_texts(conversation) -> list[str]:
    """The texts the meter counts: text and thinking parts, tool calls' names and arguments."""
    out = []
    for message in conversation.messages:
        for part in message.parts:
            if isinstance(part, (TextPart, ThinkingPart)):
                out.append(part.text)
            elif isinstance(part, ToolCallPart):
                out += [part.name, part.arguments]
    return out


# ---- real text --------------------------------------------------------------------------------------------

def test_the_same_counts_on_the_sample_session(sample):
    texts = message_texts(sample)
    assert len(texts) > 50
    for text in texts:
        same(text)
    joined = "\n".join(texts)  # one long text: many Adler-32 chunks, every kind of run
    same(joined)
    assert len(joined.encode()) > 100_000


@pytest.mark.shared
def test_the_same_counts_on_the_shared_transcripts(shared_transcripts):
    from ctxlab.io.formats import load

    names = ["pi-mono/before-compaction.jsonl", "openhands/multi_swe_bench_output.jsonl",
             "llama-factory-toolcall/glaive_toolcall_zh_demo.json", "tau-bench/gpt-4o-airline.json"]
    counter, checked = COUNTERS["fitted"], 0
    for name in names:
        if not (shared_transcripts / name).exists():
            continue
        for conversation in load(shared_transcripts / name).conversations:
            for text in message_texts(conversation):
                assert counter.count(text) == reference_count(WEIGHTS, text), (name, text[:80])
                checked += 1
    assert checked > 1_000


# ---- generated text ---------------------------------------------------------------------------------------

def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


PIECES = st.sampled_from([
    "the ", "Context", "window ", "camelCaseName", "HTTPServer", "snake_case_id", "0123", "9", "x1", "A",
    "{\"a\": 1}, ", "def f(x):\n    return x + 1\n", "\t", "\r\n", "\n", "  ", "/usr/local/bin/", "-", "+/=",
    "_", "=", "上下文", "窗口管理", "。", "、", "「」", "ひらがな", "カタカナ", "한국어", "😀", "👩‍💻", "🚀", "é", "ß",
    "Привет", "שלום", "مرحبا", "नमस्ते", "→", "—", "•", "ＡＢＣ", "\x00", "\x7f", "\u200b", "aGVsbG8", "QmFzZTY0",
    "f3a9", "deadbeef", "Zm9vYmFy", "AAAAAAAAAAAA", "0000000000", "toolu_01ABCdef234GHIjkl567",
])
CODE = st.lists(st.sampled_from(["if ", "x", " = ", "foo", "Bar", "(", ")", "[", "]", ":", "\n", "    ", "42", "'s'",
                                 "# note", "return ", "self.", "_private", "__init__", "0x1F", "1e-9"]),
                max_size=80).map("".join)
ENCODED = st.binary(max_size=400).flatmap(lambda b: st.sampled_from([_b64(b), b.hex(), b.hex().upper(),
                                                                     base64.urlsafe_b64encode(b).decode()]))
TEXTS = st.one_of(
    st.text(max_size=400),  # any code point: emoji, surrogate-free planes, controls
    st.text(alphabet=st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF), max_size=200),  # Chinese
    st.lists(PIECES, max_size=80).map("".join),
    CODE,
    ENCODED,
    st.tuples(st.lists(PIECES, max_size=10).map("".join), ENCODED, st.lists(PIECES, max_size=10).map("".join))
    .map("".join),  # base64 inside prose: runs that start and end mid-text
)


@settings(max_examples=600, deadline=None, derandomize=True, database=None)
@given(TEXTS)
def test_the_same_counts_on_generated_text(text):
    same(text)


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(st.lists(PIECES, min_size=1, max_size=20).map("".join), st.integers(20, 400))
def test_the_same_counts_on_long_text(piece, times):
    same(piece * times)  # past one Adler-32 chunk (263 bytes), often past many


def test_the_same_counts_on_edge_cases():
    rng = random.Random(18)
    cases = ["", "a", "A", "aA", " a", "a ", "9A", "ÀA", "世A", "b" * 23, "b" * 24, "b" * 25, "x" * 24 + ".",
             "." + "Ab1" * 8, "Ab1" * 8 + "." + "Ab1" * 8, _b64(rng.randbytes(3_000)), rng.randbytes(2_000).hex(),
             "a" * 263, "a" * 264, "😀" * 66, "😀" * 67, "\U0010ffff" * 100, "A" * 70_000, "1" * 100_000]
    cases += ["".join(rng.choice(string.printable) for _ in range(n)) for n in (10, 300, 5_000, 50_000)]
    for text in cases:
        same(text)


# ---- the pieces ---------------------------------------------------------------------------------------------

@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(st.integers(1, 255), st.binary(max_size=5_000))
def test_byte_sum_with_a_largest_byte_is_sum(top, data):
    data = bytes(x % (top + 1) for x in data)  # no byte above top
    assert byte_sum(data, top) == sum(data) == byte_sum(data)


def test_weights_that_no_byte_table_holds_are_refused():
    with pytest.raises(ValueError, match="runs and case_changes"):
        ScriptAwareCounter(tuple({**WEIGHTS, "runs": -1}.items()))
    with pytest.raises(ValueError, match="65,535"):
        ScriptAwareCounter(tuple({**WEIGHTS, "case_changes": 70_000}.items()))
