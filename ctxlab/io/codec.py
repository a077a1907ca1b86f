"""The JSON form of messages, entries, tool specs and usage: ``*_to_dict`` and ``*_from_dict``.

What it holds: one pair of functions per type of :mod:`ctxlab.messages`, so that
``message_from_dict(message_to_dict(m)) == m`` for every message (and likewise for entries,
tool specs, usage and parts); :func:`dumps`, the one way ctxlab turns such a dict into a line
of JSON (UTF-8 text kept as is: ``ensure_ascii=False``; no spaces; no NaN). :func:`loads`, the one
way ctxlab parses a JSON text it did not write, lives in :mod:`ctxlab.base.json_text` and is re-exported
here (too-deep nesting, lone surrogates and non-finite numbers handled there).

Simplified on purpose: fields that hold their default value are left out of the dict (a short
line is easier to read in a session file) and restored by ``*_from_dict``; a dict with an unknown
key or a missing required key is refused with a ``ValueError`` naming the key, so a typo in a
hand-edited file is found instead of silently dropped; so is a value of the wrong type (a
number where text belongs) and a token count that is negative or above :data:`MAX_TOKEN_COUNT`.
Tuples inside ``Entry.data`` or
``Usage.raw`` come back as lists (JSON has no tuples). A ``paged_result`` / ``pruned_result`` entry holds
its ``replacement`` as a :class:`~ctxlab.messages.Message` in memory and as that message's dict in a file:
the conversion happens here only, when an entry is written or read. Used by :mod:`ctxlab.io.session`;
chapter 02.
"""

from __future__ import annotations

import json
from typing import Any

from ctxlab.base.json_text import (  # parsing JSON ctxlab did not write: re-exported, callers import it from here
    Repair, collect_repairs, loads, might_hold_surrogates, nonfinite, repair_note, repair_surrogates, too_deep,
)
from ctxlab.messages import (Entry, ImagePart, Item, Message, Part, SourceRef, TextPart, ThinkingPart, ToolCallPart,
                             ToolSpec, Usage)
from ctxlab.views import REPLACING  # the entry kinds whose data["replacement"] is a Message in memory

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
                "note", "tool_choice_change")


def entry_to_dict(entry: Entry) -> dict[str, Any]:
    """``Entry("title", "e1", {"title": "TLS"})`` → ``{"kind": "title", "id": "e1", "data": {"title": "TLS"}}``.

    A ``paged_result`` / ``pruned_result`` entry's ``replacement`` (a Message) is written as its message dict.
    """
    data = dict(entry.data)
    if entry.kind in REPLACING and isinstance(data.get("replacement"), Message):
        data["replacement"] = message_to_dict(data["replacement"])
    d: dict[str, Any] = {"kind": entry.kind, "id": entry.id, "data": data}
    if entry.timestamp is not None:
        d["timestamp"] = entry.timestamp
    if entry.thread != "main":
        d["thread"] = entry.thread
    if entry.source is not None:
        d["source"] = _source_to_dict(entry.source)
    return d


def entry_from_dict(d: dict[str, Any]) -> Entry:
    """The inverse of :func:`entry_to_dict` (a replacement comes back as a Message; a bad one raises ValueError)."""
    _check_keys(d, "entry", {"kind", "id"}, {"data", "timestamp", "thread", "source"},
                {"id": "a string", "data": "an object", "timestamp": "a string or null", "thread": "a string"})
    if d["kind"] not in _ENTRY_KINDS:
        raise ValueError(f"entry: unknown kind {d['kind']!r} (expected one of {', '.join(_ENTRY_KINDS)})")
    if not isinstance(d.get("data", {}), dict):
        raise ValueError("entry: 'data' must be an object")
    data = dict(d.get("data", {}))
    if d["kind"] in REPLACING and "replacement" in data:
        if not isinstance(data["replacement"], dict):
            raise ValueError(f"entry: a {d['kind']}'s 'replacement' must be a message object")
        data["replacement"] = message_from_dict(data["replacement"])
    return Entry(kind=d["kind"], id=d["id"], data=data,
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
