"""Views: the history as a context sees it — results replaced, compactions applied, summaries marked.

A session is append-only: a pruned or paged tool result, a compaction, is an **entry** recorded
after the fact, and the messages stay as they were. Before a context is built, the history is read
through those entries:

* :func:`substituted` — each ``pruned_result`` / ``paged_result`` entry puts its replacement (a
  :class:`~ctxlab.messages.Message`) in place of the result it names (chapter 05);
* :func:`compacted_view` — after the newest compaction, the summary (as a user message that opens
  with :data:`SUMMARY_PREFIX`), the messages it kept and those after it (chapter 07);
* :func:`without_recorded` — the history without the compactions the real agent recorded, for a
  strategy that compacts for itself (chapter 07);
* :data:`SUMMARY_MARKER` — how every summary a strategy places opens (chapter 06), so the checks
  (``checks.py``) and the fact scorer (``facts.py``) can tell a summary from the conversation's text.

Simplified on purpose: only the newest compaction counts (a later one's summary already covers the
earlier ones). Taught in chapters 05–07; the words are used from chapter 04 on.
"""

from __future__ import annotations

from dataclasses import replace

from ctxlab.interactions import find_orphans
from ctxlab.messages import Conversation, Entry, Message, TextPart

SUMMARY_PREFIX = "The conversation before this point was compacted into this summary:\n\n"
"""How a compaction's summary message opens (as pi and Claude Code word it). Chapter 07."""

SUMMARY_MARKER = "[Earlier context summary"
"""How every summary a strategy places opens: ``"[Earlier context summary of 4 dropped messages]\\n..."``.
The checks accept a system block that starts with it; facts.py looks for it. Chapter 06."""

REPLACING = ("paged_result", "pruned_result")  # entry kinds whose data["replacement"] (a Message) stands for a result


def substituted(history: Conversation) -> Conversation:
    """The history with each pruned or paged tool result replaced by what the context shows instead.

    A ``paged_result`` / ``pruned_result`` entry carrying a ``replacement`` (a Message) names the
    message it stands in for; the original stays in the session, untouched. ``[u1 t1 E(t1 -> t1')]``
    → ``[u1 t1' E]``. Chapter 05.
    """
    swaps = {it.data["message_id"]: it.data["replacement"] for it in history.entries
             if it.kind in REPLACING and "replacement" in it.data}
    if not swaps:
        return history
    items = tuple(swaps[it.id] if isinstance(it, Message) and it.id in swaps else it for it in history.items)
    return replace(history, items=items)


def _kept_before(items: tuple, at: int, entry: Entry, memo: dict | None) -> list[Message]:
    """The messages before the compaction at ``items[at]`` that it keeps: from its first kept message on, and
    the pinned ones. What comes before an entry never changes as the history grows, so a ``memo`` (a strategy's
    dict) keeps the answer per entry and the next call only checks the items are the same objects."""
    hit = memo.get(id(entry)) if memo is not None else None
    if hit is not None and hit[0] is entry and hit[1] == items[:at]:
        return hit[2]
    before = items[:at]
    first_kept = entry.data.get("first_kept_id")
    start = next((k for k, it in enumerate(before) if it.id == first_kept), len(before)) if first_kept else len(before)
    pinned = set(entry.data.get("pinned_ids", ()))  # kept verbatim although older than first_kept
    kept = [it for k, it in enumerate(before) if isinstance(it, Message) and (k >= start or it.id in pinned)]
    if memo is not None:
        memo.clear()  # one entry is the newest at a time
        memo[id(entry)] = (entry, before, kept)
    return kept


def compacted_view(history: Conversation, memo: dict | None = None) -> tuple[Conversation, Entry | None, list[str]]:
    """The history as the model sees it after its newest compaction entry (recorded or ctxlab's).

    ``[m1 m2 m3 C(summary, first_kept=m3) m4]`` → ``[summary, m3, m4]``, the summary as a user message
    (as pi and Claude Code send it). Returns the view, the compaction entry (None if there is none)
    and notes. A kept tool result whose call was summarised away would be an orphan: it is removed
    and named in the notes (calls that never got a result are build_context's declared treatment).
    Replaced results are applied first (:func:`substituted`). ``memo``: a dict the caller keeps between calls
    (a strategy's), so the part before the compaction is worked out once per entry. Chapter 07.
    """
    history = substituted(history)
    entry = next((e for e in reversed(history.entries) if e.kind == "compaction"), None)
    if entry is None:
        return history, None, []
    items = history.items
    at = next(k for k in range(len(items) - 1, -1, -1) if items[k] is entry)  # the newest is near the end
    before, kept = items[:at], _kept_before(items, at, entry, memo)
    after = [it for it in items[at + 1:] if isinstance(it, Message)]
    summary = Message(role="user", parts=(TextPart(SUMMARY_PREFIX + entry.data.get("summary", "")),),
                      id=f"summary:{entry.id}", origin="compact_summary", thread=entry.thread)
    messages = (summary, *kept, *after)
    origin = entry.data.get("origin", "recorded")
    notes = [f"{origin} compaction {entry.id!r}: {len(kept)} messages kept from before it"]
    bad = sorted({o.message_id for o in find_orphans(messages) if o.kind == "result_without_call"})
    if bad:
        messages = tuple(m for m in messages if m.id not in bad)
        notes.append(f"removed {len(bad)} tool results whose calls the summary replaced: {', '.join(bad)}")
    return replace(history, items=messages), entry, notes


def without_recorded(history: Conversation) -> Conversation:
    """The history without the compactions the transcript recorded (the real agent's): ctxlab's compaction
    decides for itself, as every other strategy does; only ``recorded`` replays the agent's own. Chapter 07."""
    if not any(e.kind == "compaction" and e.data.get("origin") != "ctxlab" for e in history.entries):
        return history
    return replace(history, items=tuple(i for i in history.items if not (
        isinstance(i, Entry) and i.kind == "compaction" and i.data.get("origin") != "ctxlab")))
