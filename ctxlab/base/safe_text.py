"""Text from a file, made safe to print: control, bidi and invisible characters shown as escapes.

A transcript is somebody else's file. Its ids, model names, tool names, thread names and message
text can hold an ESC sequence that clears the terminal or sets its title (``\\x1b[2J``,
``\\x1b]0;title\\x07``), a carriage return or backspaces that overwrite what was printed before, a
right-to-left override that shows ``exe.txt`` for ``txt.exe``, or zero-width characters that hide
text. Everything ctxlab prints from a file goes through :func:`safe_text` (a terminal, a text
table, ``__str__``) or :func:`safe_html` (``_repr_html_``, the widgets), which show each such
character as a visible Python-style escape:

    >>> safe_text("red\\x1b[31m")
    'red\\\\x1b[31m'
    >>> safe_text("abc\\u202eexe.txt")
    'abc\\\\u202eexe.txt'
    >>> safe_text("上下文 😀 café")
    '上下文 😀 café'

What is escaped: C0 controls (``\\x00``–``\\x1f``: ESC, BEL, CR, backspace, ...), DEL, C1
(U+0080–U+009F), every format character (Unicode category Cf: the bidi embeddings, overrides and
isolates U+202A–U+202E and U+2066–U+2069, the marks U+200E, U+200F and U+061C, the zero-width
U+200B–U+200D, U+2060 and U+FEFF, the soft hyphen, the invisible tag characters, ...), the line and
paragraph separators U+2028 / U+2029 and lone surrogates. ``\\t``, ``\\n`` and ``\\r`` are written
as such, anything else as ``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN`` — what ``repr`` writes.

One line or several: by default (``multiline=False``) ``\\n`` and ``\\t`` are escaped too — ids,
names, notes and every one-line field, where a newline would forge a line of the report. With
``multiline=True`` (a message's text, a summary, a table already laid out in lines) ``\\n`` and
``\\t`` are kept; ``\\r`` is escaped in both (it moves the cursor back over the line).

Kept on purpose, because they are how a script is written and cannot hide or reorder text: a
zero-width joiner between two emoji (👩‍💻), the tag characters of an emoji flag (🏴 + tags +
U+E007F), and a zero-width (non-)joiner between two letters of the Arabic, Syriac or Indic
scripts (Persian ``می‌خواهم``). CJK, emoji, accents and other combining marks are never touched.
Backslashes are not doubled: a file's literal ``\\x1b`` prints as itself, so an escape is not
always told apart from text that looks like one — the file is not changed, and ``--json`` has the
exact text.

With redaction (:mod:`ctxlab.base.redact`) the order is **redact, then escape** (:func:`shown`): an
escape ends in a hex digit, so ``"\\x1bsk-ant-…"`` escaped first would read ``\\x1bsk-ant-…``, a key
glued to a word, which the key patterns leave alone. :func:`safe_json` redacts every string of an
object, then dumps it and writes the characters above as JSON ``\\uNNNN`` escapes: still valid
JSON, and ``json.loads`` gives the text back exactly. Plumbing, not a chapter.
"""

from __future__ import annotations

import html as _html
import json
import re
from typing import Any

from ctxlab.base.redact import redact

__all__ = ["UNSAFE", "safe_html", "safe_json", "safe_text", "shown"]

# Cf as of Unicode 15 (Python's unicodedata 14 lacks only U+13439-U+1343F), plus Zl, Zp and surrogates.
_FORMAT = ("\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
           "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
           "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f\u2028\u2029\ud800-\udfff")
UNSAFE = "[\x00-\x08\x0b-\x1f\x7f-\x9f" + _FORMAT + "]"  # what multiline=True escapes (\t and \n kept)
_EMOJI = "\u00a9\u00ae\u203c\u2049\u2122\u2139\u2194-\u21aa\u231a-\u23ff\u24c2\u25aa-\u27bf\u2934\u2935" \
         "\u2b05-\u2bff\u3030\u303d\u3297\u3299\ufe0f\u20e3\U0001f000-\U0001faff"
_JOINING = "\u0600-\u08ff\u0900-\u0dff\ufb50-\ufdff\ufe70-\ufefe"  # Arabic, Syriac, Thaana, NKo, Indic
_KEEP = (f"(?<=[{_EMOJI}])\u200d(?=[{_EMOJI}])"  # an emoji ZWJ sequence
         "|(?<=\U0001f3f4)[\U000e0020-\U000e007e]{1,32}\U000e007f"  # an emoji flag's tag sequence
         f"|(?<=[{_JOINING}])[\u200c\u200d](?=[{_JOINING}])")  # a joiner inside a word
_PATTERNS = {multiline: re.compile(f"(?P<keep>{_KEEP})|" + (UNSAFE if multiline else UNSAFE[:1] + "\t\n" + UNSAFE[1:]))
             for multiline in (False, True)}
_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(ch: str) -> str:
    if ch in _SHORT:
        return _SHORT[ch]
    cp = ord(ch)
    return f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}"


def _sub(match: re.Match[str]) -> str:
    return match[0] if match["keep"] else _escape(match[0])


def safe_text(text: Any, *, multiline: bool = False) -> str:
    """``text`` with every control, bidi and invisible format character shown as an escape (see above).

    ``safe_text("red\\x1b[31m")`` → ``'red\\\\x1b[31m'``; ``safe_text("a\\nb")`` → ``'a\\\\nb'``;
    ``safe_text("a\\nb", multiline=True)`` → ``'a\\nb'``; CJK, emoji and accents are unchanged.
    Not a str: ``str(text)`` first (``None`` → ``""``). Idempotent: escaping twice changes nothing more.
    """
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    pattern = _PATTERNS[multiline]
    return pattern.sub(_sub, text) if pattern.search(text) else text


def safe_html(text: Any, *, multiline: bool = False) -> str:
    """:func:`safe_text`, then :func:`html.escape` (quotes too): for HTML a notebook or a widget shows.

    ``safe_html("<b>\\u202e</b>")`` → ``'&lt;b&gt;\\\\u202e&lt;/b&gt;'``.
    """
    return _html.escape(safe_text(text, multiline=multiline))


def shown(text: Any, *, multiline: bool = False, html: bool = False) -> str:
    """Text from a file as ctxlab displays it: API keys masked (:func:`ctxlab.base.redact.redact`), *then*
    escaped (:func:`safe_text`, or :func:`safe_html` with ``html=True``). Only for display.

    ``shown("\\x1bsk-proj-" + "a1" * 16)`` → ``'\\\\x1bsk-proj-…[redacted]…a1a1'``.
    """
    text = redact("" if text is None else str(text))
    return safe_html(text, multiline=multiline) if html else safe_text(text, multiline=multiline)


def _redacted(obj: Any) -> Any:
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {_redacted(k) if isinstance(k, str) else k: _redacted(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_redacted(v) for v in obj]
    return obj


def _json_escape(match: re.Match[str]) -> str:
    if match["keep"]:
        return match[0]
    cp = ord(match[0])
    if cp < 0x10000:
        return f"\\u{cp:04x}"
    cp -= 0x10000
    return f"\\u{0xd800 + (cp >> 10):04x}\\u{0xdc00 + (cp & 0x3ff):04x}"  # a surrogate pair, as JSON writes it


def safe_json(obj: Any, *, indent: int | None = 1) -> str:
    """``obj`` as JSON for a terminal: every string's keys masked, then dumped (UTF-8 text kept, not
    ``\\u`` escaped) with the characters :func:`safe_text` escapes written as ``\\uNNNN``.

    ``json.loads(safe_json({"id": "a\\u202eb"}))`` → ``{"id": "a\\u202eb"}``: the exact text, never a raw
    override on the screen. (``json.dumps`` alone escapes C0 only, not DEL, C1 or U+202E.)
    """
    text = json.dumps(_redacted(obj), ensure_ascii=False, indent=indent)
    # outside strings JSON is ASCII, and \t and \n inside them are already escaped: only string content matches
    return _PATTERNS[True].sub(_json_escape, text)
