"""The JSON form of messages, entries, tool specs and usage: ``*_to_dict`` and ``*_from_dict``.

What it holds: one pair of functions per type of :mod:`ctxlab.messages`, so that
``message_from_dict(message_to_dict(m)) == m`` for every message (and likewise for entries,
tool specs, usage and parts); :func:`dumps`, the one way ctxlab turns such a dict into a line
of JSON (UTF-8 text kept as is: ``ensure_ascii=False``; no spaces; no NaN); and :func:`loads`, the
one way ctxlab parses a JSON text it did not write (nesting too deep for Python's parser becomes
a ``json.JSONDecodeError`` like any other bad JSON, not a ``RecursionError``; a lone surrogate
escape such as ``"\\ud800"``, legal JSON that no UTF-8 text can hold, comes back as U+FFFD and is
reported: :func:`repair_surrogates`).

Simplified on purpose: fields that hold their default value are left out of the dict (a short
line is easier to read in a session file) and restored by ``*_from_dict``; a dict with an unknown
key or a missing required key is refused with a ``ValueError`` naming the key, so a typo in a
hand-edited file is found instead of silently dropped; so is a value of the wrong type (a
number where text belongs) and a token count that is negative or above :data:`MAX_TOKEN_COUNT`.
Tuples inside ``Entry.data`` or
``Usage.raw`` come back as lists (JSON has no tuples). Used by :mod:`ctxlab.session`; chapter 02.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import math
import re
import sys
from typing import Any, Iterator

from ctxlab.messages import (
    Entry,
    ImagePart,
    Item,
    Message,
    Part,
    SourceRef,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolSpec,
    Usage,
)

__all__ = [
    "dumps",
    "part_to_dict", "part_from_dict",
    "usage_to_dict", "usage_from_dict",
    "message_to_dict", "message_from_dict",
    "entry_to_dict", "entry_from_dict",
    "toolspec_to_dict", "toolspec_from_dict",
    "item_to_dict", "item_from_dict",
    "loads", "nonfinite", "too_deep", "MAX_TOKEN_COUNT",
    "repair_surrogates", "might_hold_surrogates", "repair_note", "collect_repairs", "Repair",
]

MAX_TOKEN_COUNT = 2**53 - 1
"""The largest token count ctxlab accepts: JavaScript's ``Number.MAX_SAFE_INTEGER`` (ECMA-262,
"Number.MAX_SAFE_INTEGER"), the largest integer a JSON number written by a JavaScript agent (pi,
Claude Code) holds exactly. A bigger or a negative count is a damaged file, not a recorded usage."""


def dumps(obj: Any) -> str:
    """One compact JSON line: ``dumps({"a": "中"})`` → ``'{"a":"中"}'`` (no NaN or Infinity)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


_BRACKETS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')  # a JSON string (skipped whole) or a bracket


def _deepest(text: str) -> tuple[int, int]:
    """``(depth, offset)`` of the deepest bracket of a JSON text: ``_deepest('{"a": [[1]]}')`` → ``(3, 7)``."""
    depth, best, at = 0, 0, 0
    for m in _BRACKETS.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > best:
                best, at = depth, m.start()
        elif c in "]}":
            depth -= 1
    return best, at


def _no_nan(token: str) -> float:
    raise ValueError(f"{token} is not a number JSON allows")


def _finite(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise ValueError(f"{token} is too large for a number (it reads as infinity)")
    return value


def loads(text: str | bytes, *, allow_nan: bool = True, repaired: list[Repair] | None = None) -> Any:
    """``json.loads``, made safe for hostile input: ``loads("[" * 100_000 + "]" * 100_000)`` raises a
    ``json.JSONDecodeError`` ("nested 100,000 levels deep ...") at the deepest bracket instead of
    Python's ``RecursionError`` (its parser recurses once per level, up to ``sys.getrecursionlimit()``).

    ``allow_nan=False`` also refuses ``NaN``, ``Infinity`` and numbers that overflow to infinity
    (``1e400``) with a ``ValueError``: :func:`dumps` never writes them, so a session file holding one
    was not written by ctxlab.

    A lone surrogate (``loads('{"a": "x\\ud800"}')`` → ``{"a": "x\\ufffd"}``) is replaced with
    U+FFFD, never raised: each replacement is appended to ``repaired`` as a :data:`Repair`, or,
    with ``repaired=None``, to the list of the enclosing :func:`collect_repairs` block (if any).
    Bytes are decoded as UTF-8, strictly (a ``UnicodeDecodeError`` for bytes that are not). Chapter 02.
    """
    decoded = isinstance(text, (bytes, bytearray))
    if decoded:
        text = bytes(text).decode("utf-8")
    try:
        if allow_nan:
            value = json.loads(text)
        else:
            value = json.loads(text, parse_constant=_no_nan, parse_float=_finite)
    except RecursionError:
        raise too_deep(text) from None
    if might_hold_surrogates(text, decoded=decoded):  # type: ignore[arg-type]
        found: list[Repair] = []
        value = repair_surrogates(value, found)
        into = repaired if repaired is not None else _COLLECTED.get()
        if found and into is not None:
            into.extend(found)
    return value


# ---- lone surrogates ------------------------------------------------------------------------------

Repair = tuple[str, Any, str]
"""One lone surrogate replaced: ``(field, owner, char)`` — the field's path (``"message.content[0].text"``,
``""`` for the value itself), the innermost dict holding it (``None`` if none) and the first
surrogate replaced there, spelled ``"\\ud800"``."""

_LONE = re.compile("[\ud800-\udfff]")
_ESCAPE = re.compile(r"\\u[dD]([89a-fA-F])")  # the start of a \\uD800-\\uDFFF escape (or of letters after "\\\\")
_COLLECTED: contextvars.ContextVar[list[Repair] | None] = contextvars.ContextVar("ctxlab_repairs", default=None)


def might_hold_surrogates(text: str, *, decoded: bool = False) -> bool:
    """Whether a JSON text decodes to a lone surrogate: it holds one, or a ``\\uD800``-``\\uDFFF``
    escape that is not half of a pair (``\\ud83d\\ude00`` is one character, U+1F600; ``"\\\\ud800"``
    is an escaped backslash and letters). One regular-expression scan; a Python step per surrogate
    escape found. ``decoded=True``: the text was decoded from UTF-8 strictly, so holds none itself."""
    if not decoded and not text.isascii() and _LONE.search(text):
        return True
    low_at = -1  # where the low half of the last pair starts
    for m in _ESCAPE.finditer(text):
        at = back = m.start()
        while back and text[back - 1] == "\\":
            back -= 1
        if (at - back) % 2 or at == low_at:  # an escaped backslash and letters; a pair's low half
            continue
        low = text[at + 6:at + 10]
        if m.group(1) in "89abAB" and low[:3] in ("\\ud", "\\uD") and low[3:] in tuple("cdefCDEF"):
            low_at = at + 6
            continue
        return True
    return False


def repair_surrogates(value: Any, found: list[Repair], at: str = "") -> Any:
    """Replace every lone surrogate (U+D800..U+DFFF alone: a JSON ``\\ud800`` escape with no partner,
    which ``str.encode("utf-8")`` refuses) in the strings of a parsed JSON value, keys included, with
    U+FFFD; lists and dicts are changed in place (the same objects), a str is returned anew. Each
    field changed is appended to ``found``. ``repair_surrogates(["ok", "a\\ud800"], found)`` →
    ``["ok", "a\\ufffd"]``, ``found == [("[1]", None, "\\ud800")]``. Chapter 02."""
    def fix(text: str, field: str, owner: Any) -> str:
        found.append((field, owner, f"\\u{ord(_LONE.search(text).group()):04x}"))  # type: ignore[union-attr]
        return _LONE.sub("\ufffd", text)

    if isinstance(value, str):
        return fix(value, at, None) if _LONE.search(value) else value
    stack: list[tuple[Any, str, Any]] = [(value, at, None)]
    while stack:  # a loop, not recursion: a value nested 900 levels deep is legal JSON
        node, path, owner = stack.pop()
        if isinstance(node, dict):
            owner = node
            if any(_LONE.search(k) for k in node if isinstance(k, str)):  # a key: rebuilt in order, same dict
                items = list(node.items())
                node.clear()
                for k, v in items:
                    if isinstance(k, str) and _LONE.search(k):
                        clean = _LONE.sub("\ufffd", k)
                        fix(k, f"{path}.{clean}" if path else clean, node)
                        k = clean
                    node[k] = v
            children: Any = node.items()
        elif isinstance(node, list):
            children = enumerate(node)
        else:
            continue
        later = []
        for k, v in children:
            field = f"{path}[{k}]" if isinstance(node, list) else (f"{path}.{k}" if path else str(k))
            if isinstance(v, str):
                if _LONE.search(v):
                    node[k] = fix(v, field, owner)
            elif isinstance(v, (dict, list)):
                later.append((v, field, owner))
        stack.extend(reversed(later))
    return value


def repair_note(field: str, char: str) -> str:
    """What a note says of one :data:`Repair`: ``repair_note("title", "\\ud800")`` → ``"field 'title': a lone
    surrogate \\ud800 (half of a UTF-16 pair; no UTF-8 text can hold it) replaced with U+FFFD"``."""
    where = f"field {field!r}: " if field else ""
    return f"{where}a lone surrogate {char} (half of a UTF-16 pair; no UTF-8 text can hold it) replaced with U+FFFD"


@contextlib.contextmanager
def collect_repairs() -> Iterator[list[Repair]]:
    """Within the block, :func:`loads` calls given no ``repaired`` list report to the list yielded
    (``ctxlab.formats.load`` turns them into notes). Blocks nest; the innermost collects."""
    found: list[Repair] = []
    token = _COLLECTED.set(found)
    try:
        yield found
    finally:
        _COLLECTED.reset(token)


# a token Python's parser reads as NaN or an infinity: NaN, Infinity, or an exponent of 3+ digits (1e999)
_MAYBE_NONFINITE = re.compile(r"NaN|Infinity|[eE][+-]?\d{3}")
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|-?Infinity|NaN|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?')


def nonfinite(value: Any, text: str | None = None) -> tuple[str, float, int | None] | None:
    """The first NaN or infinity in a parsed JSON value: ``(field, number, offset)``, or None.

    Python's parser reads ``NaN``, ``Infinity`` and a number too large for a float (``1e999``)
    without a word; JSON allows none of them. ``nonfinite(loads('{"a": {"b": [1, NaN]}}'))`` →
    ``("a.b[1]", nan, None)``. Given the ``text`` the value was parsed from, the offset of that
    token in it too (for its line), and a text holding no such token is not walked. Chapter 02.
    """
    if text is not None and not _MAYBE_NONFINITE.search(text):
        return None
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:  # depth first in document order, a loop (nesting may be deep)
        path, v = stack.pop()
        if isinstance(v, float) and not math.isfinite(v):
            at = None if text is None else next(  # the first such token outside a string: this one
                (m.start() for m in _TOKEN.finditer(text) if m.group()[0] != '"' and not math.isfinite(float(m.group()))),
                None)
            return path, v, at
        if isinstance(v, dict):
            stack.extend(reversed([(f"{path}.{k}" if path else str(k), x) for k, x in v.items()]))
        elif isinstance(v, list):
            stack.extend(reversed([(f"{path}[{i}]", x) for i, x in enumerate(v)]))
    return None


def too_deep(text: str) -> json.JSONDecodeError:
    """The error for a JSON text whose parse ran out of recursion, located at its deepest bracket."""
    depth, at = _deepest(text)
    return json.JSONDecodeError(f"nested {depth:,} levels deep, more than Python's JSON parser follows "
                                f"(about {sys.getrecursionlimit():,})", text, at)


_KINDS: dict[str, tuple[type, ...]] = {  # what a key must hold, as said in errors -> the Python types allowed
    "a string": (str,), "a string or null": (str, type(None)), "an integer": (int,),
    "an integer or null": (int, type(None)), "true or false": (bool,), "a list": (list,), "an object": (dict,),
    "an object or null": (dict, type(None)),
}


def _check_types(d: dict[str, Any], what: str, types: dict[str, str]) -> None:
    """Each key of ``d`` named in ``types`` holds that kind of JSON value (``true`` is not an integer)."""
    for key, kind in types.items():
        if key in d:
            value, allowed = d[key], _KINDS[kind]
            if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
                got = "null" if value is None else type(value).__name__
                raise ValueError(f"{what}: {key!r} must be {kind}, got {got}")


def _check_keys(d: dict[str, Any], what: str, required: set[str], optional: set[str],
                types: dict[str, str] | None = None) -> None:
    if not isinstance(d, dict):
        raise ValueError(f"{what}: expected a JSON object, got {type(d).__name__}")
    missing = required - d.keys()
    if missing:
        raise ValueError(f"{what}: missing key {sorted(missing)[0]!r}")
    unknown = d.keys() - required - optional
    if unknown:
        raise ValueError(f"{what}: unknown key {sorted(unknown)[0]!r}")
    if types:
        _check_types(d, what, types)


def _token_count(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{what}: a token count must be an integer, got {type(value).__name__} {value!r:.40}")
    if not 0 <= value <= MAX_TOKEN_COUNT:
        raise ValueError(f"{what}: token count {value:.3g} is outside 0 .. 2**53 - 1 (a damaged file?)")
    return value


# ---- parts -------------------------------------------------------------------------------------

def part_to_dict(part: Part) -> dict[str, Any]:
    """``TextPart("hi")`` → ``{"type": "text", "text": "hi"}``; defaults are left out."""
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ThinkingPart):
        d: dict[str, Any] = {"type": "thinking", "text": part.text}
        if part.signature is not None:
            d["signature"] = part.signature
        if part.redacted:
            d["redacted"] = True
        return d
    if isinstance(part, ToolCallPart):
        return {"type": "tool_call", "id": part.id, "name": part.name, "arguments": part.arguments}
    if isinstance(part, ImagePart):
        d = {"type": "image", "media_type": part.media_type}
        if part.width is not None:
            d["width"] = part.width
        if part.height is not None:
            d["height"] = part.height
        if part.data_chars:
            d["data_chars"] = part.data_chars
        return d
    raise ValueError(f"not a message part: {part!r}")


def part_from_dict(d: dict[str, Any]) -> Part:
    """The inverse of :func:`part_to_dict`."""
    kind = d.get("type") if isinstance(d, dict) else None
    if kind == "text":
        _check_keys(d, "text part", {"type", "text"}, set(), {"text": "a string"})
        return TextPart(d["text"])
    if kind == "thinking":
        _check_keys(d, "thinking part", {"type", "text"}, {"signature", "redacted"},
                    {"text": "a string", "signature": "a string or null", "redacted": "true or false"})
        return ThinkingPart(d["text"], signature=d.get("signature"), redacted=bool(d.get("redacted", False)))
    if kind == "tool_call":
        _check_keys(d, "tool_call part", {"type", "id", "name", "arguments"}, set(),
                    {"id": "a string", "name": "a string", "arguments": "a string"})
        return ToolCallPart(d["id"], d["name"], d["arguments"])
    if kind == "image":
        _check_keys(d, "image part", {"type"}, {"media_type", "width", "height", "data_chars"},
                    {"media_type": "a string", "width": "an integer or null", "height": "an integer or null",
                     "data_chars": "an integer"})
        return ImagePart(media_type=d.get("media_type", "image/png"), width=d.get("width"),
                         height=d.get("height"), data_chars=d.get("data_chars", 0))
    raise ValueError(f"part: unknown type {kind!r} (expected text, thinking, tool_call or image)")


# ---- usage ---------------------------------------------------------------------------------------

_USAGE_INTS = ("uncached_input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens",
               "cache_write_1h_tokens")


def usage_to_dict(usage: Usage) -> dict[str, Any]:
    """``Usage(cache_read_tokens=900, output_tokens=12)`` → ``{"cache_read_tokens": 900, "output_tokens": 12}``."""
    d: dict[str, Any] = {k: getattr(usage, k) for k in _USAGE_INTS if getattr(usage, k)}
    if usage.cost_usd is not None:
        d["cost_usd"] = dict(usage.cost_usd)
    if usage.raw:
        d["raw"] = dict(usage.raw)
    return d


def usage_from_dict(d: dict[str, Any]) -> Usage:
    """The inverse of :func:`usage_to_dict` (``raw`` included, although it takes no part in ``==``)."""
    _check_keys(d, "usage", set(), set(_USAGE_INTS) | {"cost_usd", "raw"},
                {"cost_usd": "an object or null", "raw": "an object"})
    return Usage(**{k: _token_count(d.get(k, 0), f"usage: {k!r}") for k in _USAGE_INTS},
                 cost_usd=dict(d["cost_usd"]) if d.get("cost_usd") is not None else None,
                 raw=dict(d.get("raw", {})))


# ---- messages and entries -----------------------------------------------------------------------

def _source_to_dict(source: SourceRef) -> dict[str, Any]:
    return {"file": source.file, "line": source.line}


def _source_from_dict(d: dict[str, Any]) -> SourceRef:
    _check_keys(d, "source", {"file", "line"}, set(), {"file": "a string", "line": "an integer"})
    return SourceRef(d["file"], d["line"])


# Optional scalar fields of Message with their defaults, in the order they are written.
_MESSAGE_OPTIONAL: dict[str, Any] = {
    "tool_call_id": None, "tool_name": None, "is_error": False, "name": None, "response_id": None,
    "timestamp": None, "model": None, "provider": None, "stop_reason": None, "thread": "main",
    "origin": None,
}
_MESSAGE_TYPES = {"id": "a string", "parts": "a list", "is_error": "true or false", "thread": "a string",
                  **{k: "a string or null" for k, v in _MESSAGE_OPTIONAL.items() if v is None}}


def message_to_dict(message: Message) -> dict[str, Any]:
    """``user("hi", "u1")`` → ``{"role": "user", "id": "u1", "parts": [{"type": "text", "text": "hi"}]}``."""
    d: dict[str, Any] = {"role": message.role, "id": message.id,
                         "parts": [part_to_dict(p) for p in message.parts]}
    for key, default in _MESSAGE_OPTIONAL.items():
        value = getattr(message, key)
        if value != default:
            d[key] = value
    if message.source is not None:
        d["source"] = _source_to_dict(message.source)
    if message.usage is not None:
        d["usage"] = usage_to_dict(message.usage)
    return d


def message_from_dict(d: dict[str, Any]) -> Message:
    """The inverse of :func:`message_to_dict`."""
    _check_keys(d, "message", {"role", "id", "parts"}, set(_MESSAGE_OPTIONAL) | {"source", "usage"}, _MESSAGE_TYPES)
    if d["role"] not in ("user", "assistant", "tool"):
        raise ValueError(f"message: unknown role {d['role']!r} (expected user, assistant or tool)")
    if not isinstance(d["parts"], list):
        raise ValueError("message: 'parts' must be a list")
    return Message(
        role=d["role"],
        parts=tuple(part_from_dict(p) for p in d["parts"]),
        id=d["id"],
        **{k: d.get(k, default) for k, default in _MESSAGE_OPTIONAL.items()},
        source=_source_from_dict(d["source"]) if d.get("source") is not None else None,
        usage=usage_from_dict(d["usage"]) if d.get("usage") is not None else None,
    )


_ENTRY_KINDS = ("compaction", "model_change", "thinking_level_change", "title", "paged_result", "pruned_result",
                "note")


def entry_to_dict(entry: Entry) -> dict[str, Any]:
    """``Entry("title", "e1", {"title": "TLS"})`` → ``{"kind": "title", "id": "e1", "data": {"title": "TLS"}}``."""
    d: dict[str, Any] = {"kind": entry.kind, "id": entry.id, "data": dict(entry.data)}
    if entry.timestamp is not None:
        d["timestamp"] = entry.timestamp
    if entry.thread != "main":
        d["thread"] = entry.thread
    if entry.source is not None:
        d["source"] = _source_to_dict(entry.source)
    return d


def entry_from_dict(d: dict[str, Any]) -> Entry:
    """The inverse of :func:`entry_to_dict`."""
    _check_keys(d, "entry", {"kind", "id"}, {"data", "timestamp", "thread", "source"},
                {"id": "a string", "data": "an object", "timestamp": "a string or null", "thread": "a string"})
    if d["kind"] not in _ENTRY_KINDS:
        raise ValueError(f"entry: unknown kind {d['kind']!r} (expected one of {', '.join(_ENTRY_KINDS)})")
    if not isinstance(d.get("data", {}), dict):
        raise ValueError("entry: 'data' must be an object")
    return Entry(kind=d["kind"], id=d["id"], data=dict(d.get("data", {})),
                 timestamp=d.get("timestamp"), thread=d.get("thread", "main"),
                 source=_source_from_dict(d["source"]) if d.get("source") is not None else None)


def item_to_dict(item: Item) -> dict[str, Any]:
    """A message or an entry with its ``type`` first: ``{"type": "message", "role": ..., ...}``."""
    if isinstance(item, Message):
        return {"type": "message", **message_to_dict(item)}
    if isinstance(item, Entry):
        return {"type": "entry", **entry_to_dict(item)}
    raise ValueError(f"not a Message or Entry: {item!r}")


def item_from_dict(d: dict[str, Any]) -> Item:
    """The inverse of :func:`item_to_dict`."""
    rest = {k: v for k, v in d.items() if k != "type"}
    if d.get("type") == "message":
        return message_from_dict(rest)
    if d.get("type") == "entry":
        return entry_from_dict(rest)
    raise ValueError(f"record: unknown type {d.get('type')!r} (expected message or entry)")


# ---- tool specs ----------------------------------------------------------------------------------

def toolspec_to_dict(spec: ToolSpec) -> dict[str, Any]:
    """``ToolSpec("bash", "Run a command")`` → ``{"name": "bash", "description": ..., "parameters": {...}}``."""
    return {"name": spec.name, "description": spec.description, "parameters": spec.parameters}


def toolspec_from_dict(d: dict[str, Any]) -> ToolSpec:
    """The inverse of :func:`toolspec_to_dict`."""
    _check_keys(d, "tool", {"name"}, {"description", "parameters"},
                {"name": "a string", "description": "a string", "parameters": "an object"})
    if "parameters" in d:
        return ToolSpec(d["name"], d.get("description", ""), d["parameters"])
    return ToolSpec(d["name"], d.get("description", ""))
