"""Chapter 00's storyline: what happens in a session, found in its data — not typed in by hand.

What it holds:

* :func:`storyline` — the events a reader meets in the later chapters, each at the model call where
  it happens: the task (the first real user message), the largest tool result, pauses longer than
  a cache lifetime, runs of calls on another model, calls interrupted before their result came back
  (and the stub a context adds for them), and the forks of a session file;
* :func:`story_rows` — those events as narrow rows for :func:`ctxlab.lab.workbook.text_table`;
* :func:`stub_count` — how many messages the context holds once every interrupted call got its stub
  result (:func:`ctxlab.interactions.group_units`: the sample's 167 messages become 168).

Simplified on purpose: "call" numbers count the model calls of the conversation's main thread
(:func:`ctxlab.strategies.model_calls`, as chapter 04's ledger numbers them); a pause is the time between
two calls' start, against a fixed 5 minutes (Anthropic's default cache lifetime; chapter 04 reads each
model's own). The fork is read from a ctxlab session file (other formats hold one line of history).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from ctxlab.interactions import find_orphans, group_units
from ctxlab.io.formats import detect
from ctxlab.io.session import Session
from ctxlab.messages import Conversation, Message, ToolCallPart
from ctxlab.strategies import model_calls

__all__ = ["PAUSE_S", "KIND_ORDER", "StoryEvent", "storyline", "story_rows", "STORY_COLUMNS", "stub_count",
           "fork_events"]

PAUSE_S = 300  # Chapter 00: a pause longer than this (seconds) outlives Anthropic's default 5-minute cache
STORY_COLUMNS = ("call", "time", "what happens")  # Chapter 00: the columns of story_rows
KIND_ORDER = ("task", "pause", "model switch", "largest result", "interrupted", "fork", "end")  # Chapter 00


@dataclass(frozen=True)
class StoryEvent:
    """One event of chapter 00's timeline: the model ``call`` it happens at (1-based; 0 = before the first
    call), the clock time ``at`` (``"09:02"``, ``""`` when unrecorded), its ``kind`` and a short ``text``."""

    call: int
    at: str
    kind: str
    text: str


def _clock(seconds: float | None) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%H:%M") if seconds else ""


def _short(text: str, width: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def stub_count(conversation: Conversation) -> tuple[int, int, int]:
    """(messages recorded, stubs added, messages in the units) for chapter 00: an interrupted call gets one
    synthetic error result (:data:`ctxlab.interactions.STUB_TEXT`), so the sample's 167 messages become 168."""
    units = group_units(conversation.messages)
    stubs = sum(len(u.unanswered) for u in units)
    return len(conversation.messages), stubs, sum(len(u.messages) for u in units)


def fork_events(path: str | Path, calls_by_id: dict[str, int] | None = None) -> list[StoryEvent]:
    """One event per abandoned branch of a ctxlab session file (none for other formats). Chapter 00.

    The main line is the path to the session's head; every other leaf left it at the last item they share,
    and ``calls_by_id`` (message id -> call number on the main line) places that item. The event's time is the
    abandoned branch's first item (on the sample 10:54, while call 54 was at 09:31: the branch came later, and
    the rewind after it), so the text says "after call N".
    """
    if detect(path) != "ctxlab-session":
        return []
    session = Session.open(path)
    main = [item.id for item in session.path()]
    out = []
    for leaf in session.leaves():
        if leaf == session.head:
            continue
        branch = [item.id for item in session.path(leaf)]
        shared = next((k for k, (a, b) in enumerate(zip(main, branch)) if a != b), min(len(main), len(branch)))
        at = main[shared - 1] if shared else None
        call = max([n for i, n in (calls_by_id or {}).items() if i in main[:shared]], default=0)
        stamp = getattr(session[branch[shared]], "timestamp", None) if shared < len(branch) else None
        left = len(branch) - shared
        text = f"after call {call}: a fork — {left} items from {at!r} on, then back to {at!r}"
        out.append(StoryEvent(call, _clock(_seconds(stamp)), "fork", text))
    return out


def storyline(conversation: Conversation, path: str | Path | None = None, *, pause_s: float = PAUSE_S,
              width: int = 80) -> list[StoryEvent]:
    """The events of ``conversation`` in call order, for chapter 00's timeline (see the module docstring).

    ``path``: the file it was read from, for its forks (a ctxlab session file). ``width`` cuts the texts.
    An empty conversation gives ``[]``; nothing is raised for a transcript without calls, results or times.
    """
    calls = [c for _, c in model_calls(conversation)]
    call_of = {c.message.id: k for k, c in enumerate(calls, start=1)}
    events: list[StoryEvent] = []
    task = next((m for m in conversation.messages if m.is_real_user and m.text.strip()), None)
    if task is not None:
        events.append(StoryEvent(0, _clock(_seconds(task.timestamp)), "task", _short(task.text, 64)))
    results = [m for m in conversation.messages if m.role == "tool"]
    if results:
        big = max(results, key=lambda m: len(m.text))
        caller = next((c for c in calls if big.tool_call_id in c.message.call_ids), None)
        if caller is not None:
            k = call_of[caller.message.id]
            seen = calls[k] if k < len(calls) else caller  # the next call is the first to carry it
            events.append(StoryEvent(k + 1 if k < len(calls) else k, _clock(seen.at_s), "largest result",
                                     f"the largest tool result enters the prompt: {len(big.text):,} chars "
                                     f"(call {k}'s {_tool_name(caller.message, big.tool_call_id)})"))
    for k in range(1, len(calls)):
        a, b = calls[k - 1].at_s, calls[k].at_s
        if a and b and b - a > pause_s:
            events.append(StoryEvent(k + 1, _clock(b), "pause", f"a pause of {(b - a) / 60:.0f} min (longer than a "
                                                                 f"{pause_s / 60:g}-min cache lifetime)"))
    events += _model_runs(calls)
    open_calls: dict[str, int] = {}  # calling message -> tool calls left without a result
    for o in find_orphans(conversation.messages):
        if o.kind == "call_without_result":
            open_calls[o.message_id] = open_calls.get(o.message_id, 0) + 1
    for mid, n in open_calls.items():
        k = call_of.get(mid, 0)
        what = "its tool call got no result" if n == 1 else f"{n} of its tool calls got no result"
        events.append(StoryEvent(k, _clock(calls[k - 1].at_s) if k else "", "interrupted",
                                 f"interrupted: {what}; the context adds a stub" + ("s" if n > 1 else "")))
    if path is not None:
        events += fork_events(path, call_of)
    if calls:
        events.append(StoryEvent(len(calls), _clock(calls[-1].at_s), "end", f"the last of {len(calls)} model calls"))
    events = [StoryEvent(e.call, e.at, e.kind, _short(e.text, width)) for e in events]
    return sorted(events, key=lambda e: (e.call, KIND_ORDER.index(e.kind)))


def _seconds(stamp: str | None) -> float | None:
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _tool_name(msg: Message, call_id: str | None) -> str:
    return next((p.name for p in msg.parts if isinstance(p, ToolCallPart) and p.id == call_id), "tool")


def _model_runs(calls: Sequence[Any]) -> list[StoryEvent]:
    """A run of consecutive calls on a model other than the first call's: one event, ``calls 42–47 on …``."""
    if not calls:
        return []
    first, out, start = calls[0].model, [], None
    for k, c in enumerate(list(calls) + [None], start=1):
        other = c is not None and c.model and c.model != first
        if other and start is None:
            start = k
        elif not other and start is not None:
            run = calls[start - 1: k - 1]
            out.append(StoryEvent(start, _clock(run[0].at_s), "model switch",
                                  f"calls {start}–{k - 1} on {run[0].model}, then back to {first}"))
            start = None
    return out


def story_rows(events: Sequence[StoryEvent]) -> list[tuple[Any, ...]]:
    """Chapter 00: (call, time, what happens) rows under :data:`STORY_COLUMNS`; call 0 shows as ``start``."""
    return [("start" if e.call == 0 else e.call, e.at, e.text) for e in events]
