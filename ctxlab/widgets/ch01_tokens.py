"""Chapter 01: token accounting — the guessing game, the token x-ray, estimator error by content type.

What it holds:

* :func:`xray` and :class:`TokenXray` — a text cut into its tokens (coloured chips) under an
  encoding, with its count under every counter (``o200k_base``, ``cl100k_base``, ``chars/3``,
  ``chars/4``); the one choice is the encoding;
* :func:`reveal_guess` — the guessing game: your guess against the exact count;
* :func:`classify` and :func:`content_samples` — real text from a conversation sorted by content type
  (English prose, code, JSON, Chinese, base64, logs), so estimators can be measured per type;
* :func:`estimator_table` / :func:`estimator_figure` — (estimate − exact) / exact per type;
* :func:`chinese_passage` — the first ``n`` characters of Chinese text in a conversation.

Simplified on purpose: the content classifier is a handful of rules (share of Han characters, a
long base64 run, parses as JSON, log-line and code-line patterns, letters-and-spaces prose) — good
enough to pick clear examples from a transcript, not a general-purpose detector. Texts that fit no
rule are left out of the comparison.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

from ctxlab.messages import Conversation, TextPart, ToolCallPart
from ctxlab.base.safe_text import safe_html
from ctxlab.tokens import COUNTER_NAMES, EstimateRow, TiktokenCounter, compare_estimates, get_counter
from ctxlab.widgets._plots import ESTIMATOR_COLOURS, figure

ENCODINGS = ("o200k_base", "cl100k_base")  # the encodings the x-ray can cut text with
CONTENT_TYPES = ("English prose", "code", "JSON", "Chinese", "base64", "logs", "tool-call arguments")
CHIP_COLOURS = ("#dbe9f6", "#fde2c8", "#d8f0d2", "#f6d5da", "#e6dcf2", "#fff2b3")
MAX_CHIPS = 1_500  # the x-ray draws at most this many tokens (counts cover the whole text)


# ---- the x-ray ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class XrayState:
    """A text under one encoding: ``chips`` = (text, tokens) pieces in order; ``counts`` under every counter.

    A chip is one token, except where a character's UTF-8 bytes are split across tokens (often in
    Chinese): those tokens are joined into one chip whose second field says how many tokens it holds.
    """

    encoding: str
    tokens: int
    chars: int
    chips: tuple[tuple[str, int], ...]
    counts: dict[str, int] = field(default_factory=dict)


def chips(text: str, encoding: str = "o200k_base", limit: int | None = None) -> list[tuple[str, int]]:
    """The tokens of ``text`` as printable pieces. ``chips("hello world")`` → ``[("hello", 1), (" world", 1)]``."""
    enc = TiktokenCounter(encoding)
    ids = enc.encode(text)
    from ctxlab.tables._offline_encodings import get_encoding

    codec = get_encoding(encoding)
    out: list[tuple[str, int]] = []
    pending, n = b"", 0
    for tok in ids[: limit if limit is not None else len(ids)]:
        pending += codec.decode_single_token_bytes(tok)
        n += 1
        try:
            out.append((pending.decode("utf-8"), n))
        except UnicodeDecodeError:
            continue  # a character split over tokens: keep collecting bytes
        pending, n = b"", 0
    if pending:
        out.append((pending.decode("utf-8", errors="replace"), n))
    return out


def counts(text: str, counters: Sequence[str] = COUNTER_NAMES) -> dict[str, int]:
    """``{"o200k_base": ..., "cl100k_base": ..., "chars/3": ..., "chars/4": ...}`` for one text."""
    return {name: get_counter(name).count(text) for name in counters}


def xray(text: str, encoding: str = "o200k_base", limit: int = MAX_CHIPS) -> XrayState:
    """The x-ray of one text. ``xray("上下文").counts["chars/4"]`` → 1."""
    if encoding not in ENCODINGS:
        raise ValueError(f"encoding must be one of {ENCODINGS}, not {encoding!r}")
    c = counts(text)
    return XrayState(encoding, c[encoding], len(text), tuple(chips(text, encoding, limit)), c)


def _chip_html(piece: str, n: int, i: int) -> str:
    # ESC, CR, U+202E ... shown as escapes (the file's text can hold them); spaces, newlines and tabs drawn
    shown = safe_html(piece, multiline=True).replace(" ", "&middot;").replace("\n", "&#8629;<br>").replace("\t", "&rarr;")
    border = "border:1px dashed #888;" if n > 1 else ""
    title = f"{n} tokens (one character split over tokens)" if n > 1 else "1 token"
    return (f"<span title='{title}' style='background:{CHIP_COLOURS[i % len(CHIP_COLOURS)]};{border}"
            f"padding:1px 0;margin:0 1px 2px 0;border-radius:3px;font-family:monospace;white-space:pre-wrap'>{shown}</span>")


def xray_html(state: XrayState) -> str:
    """The chips and a counts line as HTML."""
    body = "".join(_chip_html(p, n, i) for i, (p, n) in enumerate(state.chips))
    drawn = sum(n for _, n in state.chips)
    more = f"<div style='color:#666'>… {state.tokens - drawn:,} more tokens not drawn</div>" if drawn < state.tokens else ""
    table = "".join(f"<td style='padding:0 10px;text-align:right'><b>{v:,}</b><br><span style='font-size:11px'>{k}</span></td>"
                    for k, v in state.counts.items())
    return (f"<div style='line-height:1.9'>{body}</div>{more}"
            f"<table style='margin-top:6px'><tr><td style='padding-right:10px'>{state.chars:,} chars</td>{table}</tr></table>")


class TokenXray:
    """Type a text, pick an encoding, see its tokens. Controls: ``text`` (Textarea), ``encoding`` (Dropdown).

    ``x = TokenXray("hello world"); x.encoding.value = "cl100k_base"; x.state.tokens`` → 2.
    """

    def __init__(self, text: str = "", encoding: str = "o200k_base") -> None:
        import ipywidgets as W

        self.text = W.Textarea(value=text, description="text", layout=W.Layout(width="100%", height="90px"),
                               continuous_update=False)
        self.encoding = W.Dropdown(options=ENCODINGS, value=encoding, description="encoding")
        self.controls = W.VBox([self.text, self.encoding])
        self.view = W.HTML()
        self.widget = W.VBox([self.controls, self.view])
        self.state = self.compute(text, encoding)
        self.text.observe(self._on_change, names="value")
        self.encoding.observe(self._on_change, names="value")
        self._render()

    def compute(self, text: str, encoding: str) -> XrayState:
        return xray(text, encoding)

    def _on_change(self, _change: dict[str, Any]) -> None:
        self.state = self.compute(self.text.value, self.encoding.value)
        self._render()

    def _render(self) -> None:
        self.view.value = xray_html(self.state)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        s = self.state
        bundle["text/plain"] = f"TokenXray({s.chars:,} chars, {s.tokens:,} tokens under {s.encoding})"
        return bundle


# ---- the guessing game ----------------------------------------------------------------------------

@dataclass(frozen=True)
class GuessResult:
    """Your guess against the exact count; ``error`` = (guess − exact) / exact."""

    label: str
    chars: int
    guess: int
    exact: int

    @property
    def error(self) -> float:
        return (self.guess - self.exact) / max(1, self.exact)


def reveal_guess(label: str, text: str, guess: int, encoding: str = "o200k_base") -> GuessResult:
    """``reveal_guess("hi", "hello world", 3)`` → exact 2, error +50 %."""
    return GuessResult(label, len(text), int(guess), get_counter(encoding).count(text))


# ---- real text by content type ----------------------------------------------------------------------

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{160,}={0,2}")  # one long run (a data URL, a JSON field)
_BASE64_LINE = re.compile(r"^[A-Za-z0-9+/]{40,}={0,2}$", re.M)  # or wrapped lines (MIME style, 76 a line)
_LOG_LINE = re.compile(r"^\s*(\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}|\[?\d{2}:\d{2}:\d{2}"
                       r"|\[?(INFO|WARN|WARNING|ERROR|DEBUG|TRACE)\b"
                       r"|(PASS|FAIL|ok|FAILED|PASSED|ERROR|Traceback)\b|> \S|npm (ERR|WARN)|Checked \d+ files"
                       r"|\S+\(\d+,\d+\): error|\S+:\d+:\d+ |[✓✗×]|File \"|={5,}|_{5,})"
                       r"|\b(PASSED|FAILED|ERROR)\b.*\[\s*\d+%\]\s*$|\[\s*\d+%\]\s*$")
_CODE_LINE = re.compile(r"(^\s*(def |class |import |from \S+ import|function |const |let |var |return\b|if \(|for \(|"
                        r"export |#include|//|/\*|\*|@\w+|\}|async |await |public |private |assert |raise |try:|except\b|"
                        r"with |elif |else:|\w+(\.\w+)* = \S|\w+\[.*\] = )|[;{}(\[,]\s*$|\):\s*$|^\s{4,}\S)")
_GUTTER = re.compile(r"^ *\d+(\t|→)", re.M)


def _base64_part(text: str) -> str:
    """The base64 in a text: its wrapped base64 lines joined by newlines, else its long runs."""
    lines = _BASE64_LINE.findall(text)
    if sum(map(len, lines)) >= 160:
        return "\n".join(lines)
    return "".join(m.group() for m in _BASE64_RUN.finditer(text))


def _strip_gutter(text: str) -> str:
    """A file read shown with line numbers (``     3\tfoo``) without them: ``foo``."""
    return _GUTTER.sub("", text)


def _texts(conversation: Conversation, arguments: bool = True) -> Iterator[str]:
    """Every text a model saw in the conversation, in order: text parts (and tool-call arguments)."""
    for text, _is_arguments in _sourced_texts(conversation, arguments):
        yield text


def _sourced_texts(conversation: Conversation, arguments: bool = True) -> Iterator[tuple[str, bool]]:
    """(text, is tool-call arguments) for every text a model saw, in order."""
    for msg in conversation.messages:
        if msg.origin == "meta":
            continue
        for part in msg.parts:
            if isinstance(part, TextPart):
                yield part.text, False
            elif isinstance(part, ToolCallPart) and arguments:
                yield part.arguments, True


def classify(text: str) -> str | None:
    """The content type of a text, or None when no rule fits (or it is shorter than 40 characters).

    ``classify('{"a": [1, 2]}' * 4)`` → None (not one JSON value); ``classify("上下文窗口" * 10)`` → ``"Chinese"``.
    """
    t = text.strip()
    if len(t) < 40:
        return None
    if len(_HAN.findall(t)) / len(t) > 0.3:
        return "Chinese"
    if len(_base64_part(t)) / len(t) > 0.5:
        return "base64"
    if t[0] in "{[":
        try:
            json.loads(t)
            return "JSON"
        except ValueError:
            pass
    lines = [ln for ln in _strip_gutter(t).splitlines() if ln.strip()]
    if len(lines) >= 3:
        if sum(bool(_LOG_LINE.search(ln)) for ln in lines) / len(lines) >= 0.4:
            return "logs"
        if sum(bool(_CODE_LINE.search(ln)) for ln in lines) / len(lines) >= 0.4:
            return "code"
    letters = sum(ch.isascii() and (ch.isalpha() or ch in " .,;:'\"!?()-\n") for ch in t)
    if letters / len(t) >= 0.93 and re.search(r"[a-z]{3,}[.!?]( |\n|$)", t) and t.count(" ") / len(t) > 0.1:
        return "English prose"
    return None


def content_samples(conversation: Conversation, max_chars: int = 4_000,
                    types: Sequence[str] = CONTENT_TYPES) -> dict[str, str]:
    """type -> up to ``max_chars`` of real text of that type from the conversation, in order of appearance.

    Tool-call arguments (compact JSON the model wrote) are a type of their own, apart from the JSON
    documents in messages and tool results. Base64 keeps only its base64 (a header line is not).
    Types the conversation does not hold are absent from the result.
    """
    found: dict[str, list[str]] = {t: [] for t in types}
    size: dict[str, int] = {t: 0 for t in types}
    for text, is_arguments in _sourced_texts(conversation):
        kind = ("tool-call arguments" if len(text) >= 40 else None) if is_arguments else classify(text)
        if kind not in found or size[kind] >= max_chars:
            continue
        piece = _base64_part(text) if kind == "base64" else text.strip()
        piece = piece[: max_chars - size[kind]]
        found[kind].append(piece)
        size[kind] += len(piece) + 1
    return {t: "\n".join(found[t]) for t in types if found[t]}


def chinese_passage(conversation: Conversation, n_chars: int = 300) -> str | None:
    """``n_chars`` characters of the conversation's Chinese prose, or None when it holds fewer.

    From the Chinese texts, in order, the lines that are mostly Han characters (at least half of
    their non-space characters; line-number gutters of file reads removed) are joined and cut to
    ``n_chars``. Short ASCII inside such lines (``TLS 1.3``, a path) stays: Chinese technical prose
    looks like that. :func:`han_count` says how many of the characters are Han.
    """
    lines = []
    for text in _texts(conversation):
        if classify(text) != "Chinese":
            continue
        for line in _strip_gutter(text).splitlines():
            body = line.strip()
            dense = body and han_count(body) >= 0.5 * len(body.replace(" ", ""))
            if dense:
                lines.append(body)
    passage = "\n".join(lines)[:n_chars]
    return passage if len(passage) == n_chars else None


def han_count(text: str) -> int:
    """How many Han (Chinese) characters a text holds. ``han_count("上下文 window")`` → 3."""
    return len(_HAN.findall(text))


def guess_texts(samples: dict[str, str], n_chars: int = 160,
                types: Sequence[str] = ("English prose", "JSON", "Chinese", "code", "logs")) -> dict[str, str]:
    """Short texts for the guessing game: up to three content types present, each cut to at most
    ``n_chars`` at a line or word boundary (file-read line numbers removed)."""
    out = {}
    for t in types:
        if t not in samples or len(out) == 3:
            continue
        text = _strip_gutter(samples[t])
        if len(text) > n_chars:
            cut = text[:n_chars]
            at = cut.rfind("\n")
            if at <= n_chars // 2:
                at = cut.rfind(" ")
            text = cut[:at] if at > n_chars // 2 else cut
        out[t] = text.rstrip()
    return out


# ---- estimator error ----------------------------------------------------------------------------------

ESTIMATORS = ("chars/3", "chars/4", "cl100k_base")


def estimator_rows(samples: dict[str, str], estimators: Sequence[str] = ESTIMATORS) -> list[EstimateRow]:
    """Exact ``o200k_base`` tokens vs each estimator, per content type (see :func:`ctxlab.tokens.compare_estimates`)."""
    return compare_estimates(samples, exact="o200k_base", estimators=estimators)


def estimator_table(rows: Sequence[EstimateRow], estimators: Sequence[str] = ESTIMATORS) -> list[dict[str, Any]]:
    """Rows for a text table: type, chars, exact tokens, chars per token, then the error of each estimator."""
    out = []
    for r in rows:
        row: dict[str, Any] = {"content": r.label, "chars": r.chars, "o200k": r.exact_tokens,
                               "chars/token": f"{r.chars / max(1, r.exact_tokens):.2f}"}
        for e in estimators:
            row[e] = f"{100 * r.error(e):+.1f}%"
        out.append(row)
    return out


def estimator_figure(rows: Sequence[EstimateRow], estimators: Sequence[str] = ESTIMATORS):  # -> plotly Figure
    """Grouped bars: (estimate − exact) / exact in percent, per content type and estimator."""
    import plotly.graph_objects as go

    fig = figure("Estimate error against exact o200k_base tokens", yaxis_title="(estimate − exact) / exact, %",
                 barmode="group", legend=dict(orientation="h", y=-0.2))
    for e in estimators:
        fig.add_trace(go.Bar(x=[r.label for r in rows], y=[round(100 * r.error(e), 1) for r in rows], name=e,
                             marker_color=ESTIMATOR_COLOURS.get(e)))
    return fig



def counter_rows(text: str) -> list[tuple[str, int, str]]:
    """(counter, tokens, error against o200k_base) for one text, every counter."""
    c = counts(text)
    exact = max(1, c["o200k_base"])
    return [(name, n, f"{100 * (n - c['o200k_base']) / exact:+.1f}%") for name, n in c.items()]


def verdicts(rows: Sequence[EstimateRow], estimator: str = "chars/3") -> list[tuple[str, str, str]]:
    """(content type, error, verdict) of one estimator: over-estimates are safe, under-estimates are not."""
    out = []
    for r in rows:
        e = r.error(estimator)
        verdict = "safe: over-counts" if e > 0 else "UNSAFE: under-counts"
        out.append((r.label, f"{100 * e:+.1f}%", verdict))
    return out


@dataclass(frozen=True)
class OverheadRow:
    """One message under a profile: content tokens, framing (per-message overhead + role), name, total."""

    label: str
    content: int
    framing: int
    name: int
    total: int


def overhead_rows(messages: Sequence[Any], meter: Any) -> list[OverheadRow]:
    """What each message costs beyond its text under ``meter``'s profile (see :class:`ctxlab.tokens.MessageMeter`)."""
    out = []
    for m in messages:
        total = meter.message(m)
        framing = meter.profile.per_message_tokens + meter.counter.count(m.role)
        name = (meter.profile.per_name_tokens + meter.counter.count(m.name)) if m.name else 0
        out.append(OverheadRow(f"{m.role}: {m.text[:30]}", total - framing - name, framing, name, total))
    return out
