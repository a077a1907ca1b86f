"""A script-aware token estimator: tokens from counts of character kinds, without a tokenizer.

``chars/4`` prices every character alike, so it under-counts Chinese, digits and base64 and
over-counts English prose (chapter 01). A tokenizer's price per character depends on what kind of
character it is and where it stands: a common English word is one token whatever its length, a
digit run is split every three digits, a Chinese character costs about one token, random base64
about two tokens per three characters. :class:`ScriptAwareCounter` counts, in one text:

* **characters by kind** — lower- and upper-case ASCII letters, digits, ASCII punctuation, spaces,
  newlines, other whitespace, and by UTF-8 lead byte: CJK ideographs (U+4000–U+9FFF), kana and CJK
  punctuation (U+3000–U+3FFF), hangul (U+A000–U+DFFF), fullwidth forms (U+E000–U+FFFF), general
  punctuation and symbols (U+2000–U+2FFF), other scripts, two-byte letters, four-byte emoji;
* **where runs start** — a run of letters and digits (a word, a number, a piece of an identifier)
  after a space, punctuation or the start, and a change from lower case or a digit to upper case
  (``camelCase``);
* **base64-like runs** — 24 or more characters of ``[A-Za-z0-9+/=_-]`` in a row, whose characters
  cost a surcharge on top of their kind by the run's kind: ``base64`` when at least a tenth of them
  are digits and a tenth are changes to upper case (encoded data, keys), ``hex`` when at least a
  tenth are digits (digests, ids), else ``long_runs`` (long identifiers, paths, URLs);

and returns the sum of count x weight plus a constant per text, rounded up. The weights are fitted
(``bench/fit_estimator.py``) on half of the shared real transcripts to over-count slightly: an
asymmetric least squares on the error relative to o200k_base, then one scale factor so that fewer
than 1% of the fitting messages are under-counted by more than 5%. ``data/estimators.csv`` reports
it on the other half beside ``chars/3`` and ``chars/4``: under by more than 5% on 0.7% of the
messages, 15% over in total (token-weighted).

Why it is fast: every pass runs in C, and one table prices both the kinds and the run starts. One
``bytes.translate`` maps each byte to its kind's 4-bit code; read as one big number and shifted right
by a byte and a half, that map puts beside each byte the code of the byte before it, so a second
``translate`` maps each (kind, kind before) pair to its price — the kind's weight, plus the run weight
where a letter or digit follows anything else, plus the case weight where an upper-case letter follows
a lower-case one or a digit — and :func:`byte_sum` adds the prices (continuation bytes of a UTF-8
character weigh 0). ``bytes.find`` looks for base64-like runs. About 7x faster than tiktoken on the
shared transcripts (``bench/RESULTS.md``); :func:`script_counts` is the readable version.

Simplified on purpose: the transcripts hold almost no hangul, Cyrillic, Indic script or emoji, so
those weights are not fitted but set to o200k's mean tokens for each character of the block on its
own (an upper bound: running text merges), and the ``base64`` and ``hex`` surcharges so that random
base64 and hex cost what o200k charges for them; the kana block's weight comes from the Chinese
punctuation that shares it (。、「」), as the transcripts hold no kana. Every weight is 0 or more and
every count only grows as text is appended, so a longer text never gets a smaller estimate. An
estimate, never exact: ``exact`` is False.

Also here, once every counter exists: :func:`get_counter`, each counter by name (``tokens.py``'s and this
one), and :func:`compare_estimates`, how wrong the estimators are on labelled texts (chapter 01 reads the
measured table, ``data/estimators.csv``, through ``ctxlab/lab/estimator_table.py``). Taught in chapter 01.
"""

from __future__ import annotations

import re
import string
import zlib
from dataclasses import dataclass
from typing import Sequence

from ctxlab.tokens import CharsPerTokenCounter, TiktokenCounter, TokenCounter

# ---- what is counted --------------------------------------------------------------------------------

# byte ranges -> kind; a multi-byte UTF-8 character is counted once, by its lead byte
_KINDS: tuple[tuple[str, bytes], ...] = (
    ("lower", string.ascii_lowercase.encode()),
    ("upper", string.ascii_uppercase.encode()),
    ("digit", string.digits.encode()),
    ("punct", string.punctuation.encode() + bytes(range(0x00, 0x09)) + bytes(range(0x0E, 0x20)) + b"\x7f"),
    ("space", b" "),
    ("newline", b"\n"),
    ("whitespace", b"\t\r\x0b\x0c"),
    ("two_byte", bytes(range(0xC0, 0xE0))),  # U+0080–U+07FF: accented Latin, Greek, Cyrillic, Hebrew, Arabic
    ("other_script", bytes(range(0xE0, 0xE2))),  # U+0800–U+1FFF: Indic, Thai, ...
    ("symbol", b"\xe2"),  # U+2000–U+2FFF: general punctuation, arrows, box drawing
    ("kana", b"\xe3"),  # U+3000–U+3FFF: CJK punctuation, hiragana, katakana
    ("cjk", bytes(range(0xE4, 0xEA))),  # U+4000–U+9FFF: CJK ideographs
    ("hangul", bytes(range(0xEA, 0xEE))),  # U+A000–U+DFFF: hangul syllables (and Yi)
    ("fullwidth", b"\xee\xef"),  # U+E000–U+FFFF: fullwidth punctuation, CJK compatibility
    ("four_byte", bytes(range(0xF0, 0x100))),  # U+10000 and up: emoji, rare ideographs
)
KINDS = tuple(name for name, _ in _KINDS)
PATTERNS = ("runs", "case_changes")  # pattern counts: on the run map and on the case map below
RUN_KINDS = ("long_runs", "hex", "base64")  # the surcharge of a base64-like run's characters (see _run_kind)
FEATURES = KINDS + PATTERNS + RUN_KINDS + ("texts",)

BASE64_RUN = 24  # characters of [A-Za-z0-9+/=_-] in a row that count as a base64-like run


def _table(pairs: dict[int, int], default: int) -> bytes:
    return bytes(pairs.get(b, default) for b in range(256))


# the run map: letters and digits -> "a", everything else -> " "
_RUNS = _table({c: ord("a") for c in (string.ascii_letters + string.digits).encode()}, ord(" "))
# the case map: lower-case letters and digits -> "a", upper case -> "A", everything else -> " "
_CASE = _table({**{c: ord("a") for c in (string.ascii_lowercase + string.digits).encode()},
                **{c: ord("A") for c in string.ascii_uppercase.encode()}}, ord(" "))
# the base64 map: [A-Za-z0-9+/=_-] -> "b", everything else -> "."
_BASE64 = _table({c: ord("b") for c in (string.ascii_letters + string.digits + "+/=_-").encode()}, ord("."))
_RUN_NEEDLE = b"b" * BASE64_RUN
_BASE64_RUN_RE = re.compile(_RUN_NEEDLE + b"b*")  # a literal prefix: re finds it with a fast search
_RUN_END = _RUN_NEEDLE + b"."  # a run's last 24 characters and the "." after: find skips 25 at a "." ending none


_adler32 = zlib.adler32


def byte_sum(data: bytes, largest: int = 255) -> int:
    """``sum(data)``, about four times faster: Adler-32 adds the bytes in C. No byte of data is above ``largest``.

    Started from 0, the low 16 bits of ``zlib.adler32(chunk, 0)`` are the sum of the chunk's bytes modulo
    65,521; a chunk of ``65,520 // largest`` bytes (256 for any bytes) sums to at most 65,520, so it never
    wraps and the sum is exact. Chapter 01.
    """
    step = 65_520 // max(1, largest)
    if len(data) <= step:
        return _adler32(data, 0) & 0xFFFF
    return sum(_adler32(data[k:k + step], 0) & 0xFFFF for k in range(0, len(data), step))


def _run_kind(length: int, digits: int, case_changes: int) -> str:
    """``base64`` (a tenth digits, a tenth case changes), ``hex`` (a tenth digits) or ``long_runs``."""
    if 10 * digits >= length:
        return "base64" if 10 * case_changes >= length else "hex"
    return "long_runs"


def _kind_table() -> dict[int, str]:
    return {b: name for name, chars in _KINDS for b in chars}


# the fast path's kind map: each byte -> its kind's code 1-15 (KINDS order; 0 for a UTF-8 continuation byte),
# times 16, so that the code of the byte before fits in the low 4 bits beside it
_CODES = ("continuation",) + KINDS
_KIND_MAP = _table({b: 16 * _CODES.index(name) for b, name in _kind_table().items()}, 0)
_DIGIT = bytes([16 * _CODES.index("digit")])
_UPPER_AFTER = tuple(bytes([16 * _CODES.index("upper") + _CODES.index(k)]) for k in ("lower", "digit"))


def _pair_prices(w: dict[str, int]) -> list[int]:
    """Hundredths of a token for each pair code 16 x kind + kind before: the kind's weight (0 for a
    continuation byte), plus ``runs`` where a letter or digit follows anything else (a run starts there)
    and ``case_changes`` where an upper-case letter follows a lower-case letter or a digit."""
    words, lower = ("lower", "upper", "digit"), ("lower", "digit")
    out = []
    for pair in range(256):
        kind, before = _CODES[pair >> 4], _CODES[pair & 15]
        out.append((w[kind] if kind in KINDS else 0) + w["runs"] * (kind in words and before not in words)
                   + w["case_changes"] * (kind == "upper" and before in lower))
    return out


def script_counts(text: str) -> dict[str, int]:
    """The counts the estimator prices, by :data:`FEATURES` name (the readable version of the fast path).

    ``script_counts("Hello 世界 123")`` → ``upper 1, lower 4, space 2, cjk 2, digit 3, runs 2, texts 1``
    (and 0 for the rest). The characters of a base64-like run count as their kind and as its run kind. Chapter 01.
    """
    raw = text.encode("utf-8")
    kinds = _kind_table()
    out = dict.fromkeys(FEATURES, 0)
    for byte in raw:
        if byte in kinds:
            out[kinds[byte]] += 1
    run_map, case_map = b" " + raw.translate(_RUNS), b" " + raw.translate(_CASE)  # one position ahead of raw
    for k in range(1, len(run_map)):  # the pair (k - 1, k) of run_map ends at raw[k - 1]
        out["runs"] += run_map[k - 1:k + 1] == b" a"
        out["case_changes"] += case_map[k - 1:k + 1] == b"aA"
    for m in _BASE64_RUN_RE.finditer(raw.translate(_BASE64)):
        a, b = m.span()
        digits = sum(chr(c) in string.digits for c in raw[a:b])
        changes = sum(case_map[k:k + 2] == b"aA" for k in range(a, b))  # the pairs ending in the run
        out[_run_kind(b - a, digits, changes)] += b - a
    out["texts"] = 1
    return out


# ---- the fitted weights -------------------------------------------------------------------------------

# Hundredths of an o200k_base token per counted item, printed by `python bench/fit_estimator.py`:
# fitted on 3,908 messages, the fitting half of the shared transcripts (pi-mono, claude-code-viewer,
# openhands, swe-agent, tau-bench, llama-factory-toolcall; sources and licences in data/README.md).
# two_byte, other_script, hangul, four_byte, hex and base64 are priors (too few in the data), as the
# docstring says.
WEIGHTS: dict[str, int] = {
    "lower": 2, "upper": 18, "digit": 72, "punct": 59, "space": 37, "newline": 79,
    "whitespace": 0, "two_byte": 152, "other_script": 136, "symbol": 21, "kana": 92, "cjk": 91,
    "hangul": 224, "fullwidth": 129, "four_byte": 249, "runs": 72, "case_changes": 118, "long_runs": 6,
    "hex": 12, "base64": 19, "texts": 41,
}


@dataclass(frozen=True)
class ScriptAwareCounter:
    """Tokens estimated from character kinds, run starts and base64-like runs (weights in hundredths of a
    token, :data:`WEIGHTS` by default). ``ScriptAwareCounter().count("")`` → 0. Chapter 01."""

    weights: tuple[tuple[str, int], ...] = tuple(WEIGHTS.items())
    name: str = "script-aware"
    exact: bool = False

    def __post_init__(self) -> None:
        w = dict(self.weights)
        missing = set(FEATURES) - set(w)
        if missing:
            raise ValueError(f"ScriptAwareCounter needs a weight for {', '.join(sorted(missing))}.")
        if any(not 0 <= w[k] <= 255 for k in KINDS):
            raise ValueError("ScriptAwareCounter: a character kind's weight must be 0 to 255 hundredths of a token.")
        prices = _pair_prices(w)
        if any(w[k] < 0 for k in PATTERNS) or max(prices) > 0xFFFF:
            raise ValueError("ScriptAwareCounter: runs and case_changes must be 0 or more, and a kind's weight plus "
                             "either of them at most 65,535 hundredths of a token.")
        low = bytes(p & 0xFF for p in prices)  # a price above 255 (large weights) is 256 x high + low
        high = bytes(p >> 8 for p in prices) if max(prices) > 0xFF else b""
        object.__setattr__(self, "_w", w)
        # the tables, their largest bytes, the longest text one Adler-32 call adds (263 bytes with WEIGHTS)
        object.__setattr__(self, "_fast", (low, max(low), 65_520 // max(1, *low), high, max(high, default=0),
                                           w["texts"]))

    def count(self, text: str) -> int:
        """``ceil(sum of count x weight / 100)``, the same as pricing :func:`script_counts`; 0 for ``""``."""
        if not text:
            return 0
        low, low_max, one_sum, high, high_max, w_text = self._fast  # type: ignore[attr-defined]
        raw = text.encode("utf-8")
        kinds = raw.translate(_KIND_MAP)  # byte k: 16 x the code of its kind
        # As one big-endian number, byte k - 1 sits 8 bits above byte k: shifted right by 12 bits, its code lands
        # in the low 4 bits of byte k (int.from_bytes, >>, | and to_bytes all run in C)
        x = int.from_bytes(kinds, "big")
        pairs = (x | x >> 12).to_bytes(len(raw), "big")  # byte k: 16 x its kind + the kind before (0 at the start)
        priced = pairs.translate(low)
        total = w_text + (_adler32(priced, 0) & 0xFFFF if len(raw) <= one_sum else byte_sum(priced, low_max))
        if high:  # only weights far above the fitted ones price a pair above 255
            total += 256 * byte_sum(pairs.translate(high), high_max)
        if len(raw) >= BASE64_RUN:
            marks = raw.translate(_BASE64) + b"."  # the "." ends a run at the end of the text too
            b = marks.find(_RUN_END)
            while b >= 0:  # rare: the base64-like run [a, b) adds its surcharge
                b += BASE64_RUN
                a = marks.rfind(b".", 0, b) + 1
                # its case changes: the pairs in it of an upper-case letter after a lower-case one or a digit
                changes = pairs.count(_UPPER_AFTER[0], a, b) + pairs.count(_UPPER_AFTER[1], a, b)
                kind = _run_kind(b - a, kinds.count(_DIGIT, a, b), changes)
                total += self._w[kind] * (b - a)  # type: ignore[attr-defined]
                b = marks.find(_RUN_END, b + 1)
        return (total + 99) // 100  # rounded up; never negative: every weight is


# ---- every counter by name, and how wrong the estimators are -------------------------------------------

COUNTER_NAMES = ("o200k_base", "cl100k_base", "chars/3", "chars/4")


def get_counter(name: str) -> TokenCounter:
    """A counter by name: ``o200k_base``, ``cl100k_base``, ``chars/3``, ``chars/4`` (or ``chars/N``), or
    ``script-aware`` (:class:`ScriptAwareCounter`). ``get_counter("chars/4").count("abcdefgh")`` → 2.
    Raises ValueError naming the known names for any other. Chapter 01."""
    if name in ("o200k", "o200k_base", "cl100k", "cl100k_base"):
        return TiktokenCounter(name if name.endswith("_base") else f"{name}_base")
    if name == "script-aware":
        return ScriptAwareCounter()
    if name.startswith("chars/"):
        try:
            return CharsPerTokenCounter(float(name.split("/", 1)[1]))
        except ValueError:
            pass
    raise ValueError(f"Unknown counter {name!r}; use one of {', '.join(COUNTER_NAMES)} or script-aware.")


@dataclass(frozen=True)
class EstimateRow:
    """One line of an estimator comparison (tokens per counter name): ``error`` is (estimate - exact) / exact.
    Chapter 01."""

    label: str
    chars: int
    exact_tokens: int
    estimates: dict[str, int]

    def error(self, counter_name: str) -> float:
        return (self.estimates[counter_name] - self.exact_tokens) / max(1, self.exact_tokens)


def compare_estimates(samples: dict[str, str], exact: str = "o200k_base",
                      estimators: Sequence[str] = ("chars/3", "chars/4")) -> list[EstimateRow]:
    """Exact vs estimated tokens per labelled text (counters by :func:`get_counter` name; ValueError for an
    unknown one). ``{"中文": "上下文"*100}`` → chars/4 under-counts. Chapter 01."""
    ref = get_counter(exact)
    ests = [get_counter(e) for e in estimators]
    return [EstimateRow(label, len(text), ref.count(text), {e.name: e.count(text) for e in ests})
            for label, text in samples.items()]
