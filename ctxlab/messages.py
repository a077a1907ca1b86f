"""Messages, the parts they are made of, tool specs and session entries.

Everything a session holds is one of two things:

* a :class:`Message` — what a model saw or said: role ``user``, ``assistant`` or ``tool`` (one tool message per
  tool result), its parts in their original order, and where it came from (identity, model, timestamp, source
  file and line, recorded provider usage);
* an :class:`Entry` — what happened *to* the session rather than in it: a compaction, a model or thinking-setting
  change, a title, a paged tool result.

The system prompt and the tool definitions are not messages: they belong to the request (:class:`Conversation`
holds them beside the messages). A system or developer message in the middle of a conversation becomes a ``user``
message with ``origin="system"``.

Simplified on purpose: images keep only their size (what token accounting needs), not their bytes; all types are
frozen, so a message can be shared between contexts without copying. Taught in chapter 02.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from functools import cached_property
from typing import Any, Literal, Union

from ctxlab.base.once import once, spare_slots

Role = Literal["user", "assistant", "tool"]


@dataclass(frozen=True, slots=True)  # slots: no __dict__ per part, source or usage (~250,000 in a 200 MB file)
class TextPart:
    """Plain text. ``TextPart("hello")``. Chapter 02."""

    text: str
    type: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class ThinkingPart:
    """Model reasoning kept in the transcript; ``redacted`` when only an opaque blob was stored. Chapter 02."""

    text: str
    signature: str | None = None
    redacted: bool = False
    type: Literal["thinking"] = "thinking"


@dataclass(frozen=True, slots=True)
class ToolCallPart:
    """One tool call inside an assistant message. Chapter 02.

    ``arguments`` is a JSON string: the canonical form ``canonical_arguments`` produces (``ensure_ascii=False``, no
    extra spaces) when the transcript stored an object, or the string verbatim when the model emitted one (it may
    not even be valid JSON — the provider saw it so)."""

    id: str
    name: str
    arguments: str
    type: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image, kept by size only: ``width`` x ``height`` pixels when known, ``data_chars`` of base64. Chapter 01."""

    media_type: str = "image/png"
    width: int | None = None
    height: int | None = None
    data_chars: int = 0
    type: Literal["image"] = "image"


Part = Union[TextPart, ThinkingPart, ToolCallPart, ImagePart]


def canonical_arguments(arguments: Any) -> str:
    """The one JSON form of tool-call arguments. ``{"a": "中"}`` → ``'{"a":"中"}'``; a str stays verbatim.
    Chapter 01 (the bytes a tool call costs)."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class SourceRef:
    """Where a message or entry was read from: a file name (no directories) and a 1-based line. Chapter 02."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True, slots=True)
class Usage:
    """Provider usage recorded with a model call, in neutral fields (tokens; USD). Chapter 04.

    ``uncached_input_tokens`` + ``cache_read_tokens`` + ``cache_write_tokens`` is the whole prompt. Anthropic's
    ``input_tokens`` is the uncached part only; OpenAI's ``prompt_tokens`` is the whole prompt with ``cached_tokens``
    inside it — readers convert to these fields, ``raw`` keeps the original. ``cost_usd``: the cost the transcript
    itself recorded per bucket (pi does), else ``None``."""

    uncached_input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    cache_write_1h_tokens: int = 0  # part of cache_write_tokens written with the 1 h TTL
    cost_usd: dict[str, float] | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def total_input_tokens(self) -> int:
        """All prompt tokens of the call: uncached + cache read + cache write."""
        return self.uncached_input_tokens + self.cache_read_tokens + self.cache_write_tokens


@dataclass(frozen=True, slots=True)  # slots: no __dict__ per message (85,000 of them in a 200 MB file)
class Message(spare_slots("_tool_calls", "_call_ids", "_where")):  # values found once: ctxlab/base/once.py
    """One message of a session. Chapter 02.

    ``tool_call_id`` / ``tool_name`` / ``is_error`` are set on ``role="tool"`` only. ``origin`` says where a
    non-ordinary message came from: ``"system"`` (a system or developer message moved into the conversation),
    ``"meta"`` (never sent to a model, e.g. Claude Code ``isMeta`` lines), ``"shell"`` (a command the user ran
    themselves), ``"compact_summary"`` (a recorded summary), ``"synthetic"`` (made by ctxlab, e.g. a stub result for
    an unanswered call). ``stop_reason`` is normalised: ``stop``, ``tool_use``, ``length``, ``aborted``, ``error``."""

    role: Role
    parts: tuple[Part, ...]
    id: str
    tool_call_id: str | None = None
    tool_name: str | None = None
    is_error: bool = False
    name: str | None = None  # OpenAI's optional participant name (+1 token when present)
    response_id: str | None = None
    timestamp: str | None = None  # ISO 8601, as the transcript stamped it
    model: str | None = None
    provider: str | None = None
    stop_reason: str | None = None
    thread: str = "main"
    origin: str | None = None
    source: SourceRef | None = None
    usage: Usage | None = None

    @property
    def text(self) -> str:
        """The text parts joined by newlines (thinking and tool calls left out)."""
        return "\n".join(p.text for p in self.parts if isinstance(p, TextPart))

    @once  # the tool-call parts, in order; found once per message (a replay asks millions of times)
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolCallPart))

    @once
    def call_ids(self) -> tuple[str, ...]:
        """Ids of the tool calls this message makes (assistant) or answers (tool); found once per message."""
        if self.role == "tool":
            return (self.tool_call_id,) if self.tool_call_id else ()
        return tuple(c.id for c in self.tool_calls)

    @property
    def is_real_user(self) -> bool:
        """A message a person typed: role user and no special origin."""
        return self.role == "user" and self.origin is None

    def where(self) -> str:
        """A short label for error messages: ``message 'm12' (pi.jsonl:40)``. Made once per message (a replay's
        pairing notes name the same messages at every call), kept in a spare slot."""
        try:
            return self._where
        except AttributeError:
            text = f"{self.role} message {self.id!r}" + (f" ({self.source})" if self.source else "")
            object.__setattr__(self, "_where", text)
            return text


def parse_time(stamp: str | None) -> float | None:
    """An ISO 8601 stamp (``Message.timestamp``) as seconds since the epoch, naive = UTC; None when absent or not a
    time. ``"2025-12-08T22:41:05.306Z"`` → 1765233665.306. The one time parser (replay, ledger prices). Chapter 04."""
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00")) if stamp else None
    except ValueError:
        return None
    return None if when is None else (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp()


@dataclass(frozen=True)
class ToolSpec:
    """A tool definition as the model sees it: name, description, JSON-schema ``parameters``. Chapter 01."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


EntryKind = Literal["compaction", "model_change", "thinking_level_change", "title", "paged_result", "pruned_result",
                    "note", "tool_choice_change"]


@dataclass(frozen=True)
class Entry:
    """Something a session records besides messages. Chapters 02, 05 and 07.

    ``data`` shapes by kind: compaction ``{"summary": str, "first_kept_id": str | None, "tokens_before": int | None,
    "origin": "recorded" | "ctxlab"}`` (ctxlab's own adds ``"target"``, the effective target in tokens, and
    ``"tokens_after"``); model_change ``{"provider", "model"}``; thinking_level_change ``{"level"}``; title
    ``{"title"}``; paged_result / pruned_result ``{"message_id", "replacement": Message, ...}`` — the message the
    context shows from then on in place of the original (which the session keeps unchanged; a file holds the
    replacement as its codec dict)."""

    kind: EntryKind
    id: str
    data: dict[str, Any] = field(default_factory=dict)
    timestamp: str | None = None
    thread: str = "main"
    source: SourceRef | None = None


Item = Union[Message, Entry]


@dataclass(frozen=True)
class Conversation:
    """One conversation of a transcript: what a context is built from. Chapter 02.

    ``items`` are messages and entries in recorded order. ``system`` is the system prompt as a list of blocks;
    ``tools`` the tool definitions. When the transcript recorded neither, ``inferred_head_tokens`` may hold the size
    of the static head inferred from the first recorded usage (see :func:`ctxlab.tokens.infer_static_head`).
    ``notes`` say what the reader changed or guessed (a mid-conversation system message moved, a title skipped, ...)."""

    id: str
    items: tuple[Item, ...]
    system: tuple[str, ...] = ()
    tools: tuple[ToolSpec, ...] = ()
    title: str | None = None
    model: str | None = None
    provider: str | None = None
    notes: tuple[str, ...] = ()
    inferred_head_tokens: int | None = None

    @cached_property  # items never change: worked out once per conversation (a replay reads them at every call)
    def messages(self) -> tuple[Message, ...]:
        return tuple(i for i in self.items if isinstance(i, Message))

    @cached_property
    def entries(self) -> tuple[Entry, ...]:  # the items that are not messages, in order
        return tuple(i for i in self.items if isinstance(i, Entry))

    def threads(self) -> tuple[str, ...]:
        """Thread names in order of first appearance (``main`` first when present)."""
        return tuple(dict.fromkeys(item.thread for item in self.items))

    def thread(self, name: str) -> "Conversation":
        """The same conversation restricted to one thread."""
        return replace(self, id=f"{self.id}/{name}" if name != "main" else self.id,
                       items=tuple(i for i in self.items if i.thread == name))


@dataclass(frozen=True)
class Transcript:
    """What a reader returns: the detected ``format``, the file name and its conversations. Chapter 02."""

    format: str
    file: str
    conversations: tuple[Conversation, ...]
    notes: tuple[str, ...] = ()

    def conversation(self, index: int | None = None) -> Conversation:
        """The conversation at ``index``; with ``None`` the only one, else a ValueError listing them."""
        if index is None and len(self.conversations) == 1:
            return self.conversations[0]
        if index is None:
            listing = ", ".join(f"{i}: {c.id}" for i, c in enumerate(self.conversations[:10]))
            raise ValueError(f"{self.file} holds {len(self.conversations)} conversations ({listing}"
                             f"{' ...' if len(self.conversations) > 10 else ''}); "
                             "pick one with conversation=N (CLI: --conversation N).")
        if not 0 <= index < len(self.conversations):
            raise ValueError(f"{self.file} has conversations 0..{len(self.conversations) - 1}; got {index}.")
        return self.conversations[index]


# ---- helpers to write messages quickly (tests, the sample generator, chapters) ----

def user(text: str, id: str, **kw: Any) -> Message:
    """``user("hi", "u1")`` → a user message with one text part. Chapter 02."""
    return Message(role="user", parts=(TextPart(text),), id=id, **kw)


def assistant(text: str = "", id: str = "", calls: tuple[tuple[str, str, Any], ...] = (), **kw: Any) -> Message:
    """``assistant("ok", "a1", calls=(("c1", "read", {"path": "x"}),))`` → text then tool calls. Chapter 02."""
    parts: list[Part] = [TextPart(text)] if text else []
    parts += [ToolCallPart(cid, name, canonical_arguments(args)) for cid, name, args in calls]
    return Message(role="assistant", parts=tuple(parts), id=id, **kw)


def tool_result(call_id: str, text: str, id: str, name: str | None = None, is_error: bool = False,
                **kw: Any) -> Message:
    """``tool_result("c1", "file contents", "t1")`` → the tool message answering call ``c1``. Chapter 02."""
    return Message(role="tool", parts=(TextPart(text),), id=id, tool_call_id=call_id,
                   tool_name=name, is_error=is_error, **kw)
