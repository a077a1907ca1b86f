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

from ctxlab.interactions import Pairing
from ctxlab.messages import Conversation, Entry, Message, TextPart

SUMMARY_PREFIX = "The conversation before this point was compacted into this summary:\n\n"
"""How a compaction's summary message opens (as pi and Claude Code word it). Chapter 07."""

SUMMARY_MARKER = "[Earlier context summary"
"""How every summary a strategy places opens: ``"[Earlier context summary of 4 dropped messages]\\n..."``.
The checks accept a system block that starts with it; facts.py looks for it. Chapter 06."""

REPLACING = ("paged_result", "pruned_result")  # entry kinds whose data["replacement"] (a Message) stands for a result


def _grown(memo: dict | None, name: str, items: tuple) -> tuple[object, tuple] | None:
    """What was made under ``name`` of the items seen last, and the items added since; None when ``items`` do not
    start with them (compared in C, the last one first). A history only grows between calls, so a view made of
    it can grow too: the memos below turn O(history) Python per call into O(new items)."""
    hit = memo.get(name) if memo is not None else None
    if hit is None:
        return None
    seen, k = hit[0], len(hit[0])
    if len(items) >= k and (k == 0 or items[k - 1] is seen[-1]) and items[:k] == seen:
        return hit[1], items[k:]
    return None


def _entries_of(history: Conversation, memo: dict | None = None) -> tuple[Entry, ...]:
    """``history.entries``, from the entries found at the last call when the history only grew (``memo``: a dict
    the caller keeps between calls). Chapter 05."""
    grown = _grown(memo, "entries", history.items)
    if grown is None:
        entries = history.entries
    else:
        entries = grown[0] + tuple(it for it in grown[1] if isinstance(it, Entry))  # type: ignore[operator]
    if memo is not None:
        memo["entries"] = (history.items, entries)
    return entries


def substituted(history: Conversation, memo: dict | None = None) -> Conversation:
    """The history with each pruned or paged tool result replaced by what the context shows instead.

    A ``paged_result`` / ``pruned_result`` entry carrying a ``replacement`` (a Message) names the
    message it stands in for; the original stays in the session, untouched. ``[u1 t1 E(t1 -> t1')]``
    → ``[u1 t1' E]``. ``memo``: a dict the caller keeps between calls. Chapter 05.
    """
    return _substituted(history, _entries_of(history, memo), memo)


def _substituted(history: Conversation, entries: tuple[Entry, ...], memo: dict | None) -> Conversation:
    """:func:`substituted`, given the history's entries. With a ``memo``, a history that only grew costs its new
    items: the swaps made so far are kept with where each message sits, and a new swap is put in its place."""
    grown = _grown(memo, "substituted", history.items)
    if grown is None:  # the first call, or not the history seen last: every item again
        swaps: dict = {}
        where: dict[str, list[int]] = {}
        items, new, old_entries = (), history.items, ()
    else:
        (old_entries, swaps, where, items), new = grown  # type: ignore[misc]
    added = entries[len(old_entries):]
    changed = {it.data["message_id"]: it.data["replacement"] for it in added
               if it.kind in REPLACING and "replacement" in it.data}
    if changed:
        swaps = {**swaps, **changed}
    if memo is not None:
        for k, it in enumerate(new, len(items)):
            if isinstance(it, Message):
                where.setdefault(it.id, []).append(k)
    if not swaps:
        out = history.items
    else:
        out = [*items, *(swaps[it.id] if isinstance(it, Message) and it.id in swaps else it for it in new)]
        for mid, shown in changed.items() if items else ():  # results replaced since: each where its message sits
            for k in where.get(mid, ()):
                if k < len(items):
                    out[k] = shown
        out = tuple(out)
    if memo is not None:
        memo["substituted"] = (history.items, (entries, swaps, where, out))
    return replace(history, items=out) if swaps else history


def _kept_before(items: tuple, at: int, entry: Entry, memo: dict | None) -> list[Message]:
    """The messages before the compaction at ``items[at]`` that it keeps: from its first kept message on, and
    the pinned ones. What comes before an entry never changes as the history grows, so a ``memo`` (a strategy's
    dict) keeps the answer per entry and the next call only checks the items are the same objects."""
    hit = memo.get("kept") if memo is not None else None
    if hit is not None and hit[0] is entry and hit[1] == items[:at]:
        return hit[2]
    before = items[:at]
    first_kept = entry.data.get("first_kept_id")
    start = next((k for k, it in enumerate(before) if it.id == first_kept), len(before)) if first_kept else len(before)
    pinned = set(entry.data.get("pinned_ids", ()))  # kept verbatim although older than first_kept
    kept = [it for k, it in enumerate(before) if isinstance(it, Message) and (k >= start or it.id in pinned)]
    if memo is not None:
        memo["kept"] = (entry, before, kept)  # one entry is the newest at a time
    return kept


def compacted_view(history: Conversation, memo: dict | None = None) -> tuple[Conversation, Entry | None, list[str]]:
    """The history as the model sees it after its newest compaction entry (recorded or ctxlab's).

    ``[m1 m2 m3 C(summary, first_kept=m3) m4]`` → ``[summary, m3, m4]``, the summary as a user message
    (as pi and Claude Code send it). Returns the view, the compaction entry (None if there is none)
    and notes. A kept tool result whose call was summarised away would be an orphan: it is removed
    and named in the notes (calls that never got a result are build_context's declared treatment).
    Replaced results are applied first (:func:`substituted`). ``memo``: a dict the caller keeps between calls
    (a strategy's), so the part before the compaction is worked out once per entry, and the messages after it
    are paired as they arrive. Chapter 07.
    """
    entries = _entries_of(history, memo)  # substituting swaps messages, never entries
    history = _substituted(history, entries, memo)
    entry = next((e for e in reversed(entries) if e.kind == "compaction"), None)
    if entry is None:
        return history, None, []
    items = history.items
    grown = _grown(memo, "view", items)
    if grown is not None and grown[0][0] is entry:  # type: ignore[index]
        _, summary, kept, after, pairing = grown[0]  # type: ignore[misc]
        new = [it for it in grown[1] if isinstance(it, Message)]
        after = after + tuple(new)
    else:
        at = next(k for k in range(len(items) - 1, -1, -1) if items[k] is entry)  # the newest is near the end
        kept = _kept_before(items, at, entry, memo)
        after = tuple(it for it in items[at + 1:] if isinstance(it, Message))
        summary = Message(role="user", parts=(TextPart(SUMMARY_PREFIX + entry.data.get("summary", "")),),
                          id=f"summary:{entry.id}", origin="compact_summary", thread=entry.thread)
        pairing, new = Pairing(), [summary, *kept, *after]
    for msg in new:  # find_orphans' pairing, carried on from the last call
        pairing.feed(msg)
    if memo is not None:
        memo["view"] = (items, (entry, summary, kept, after, pairing))
    messages = (summary, *kept, *after)
    origin = entry.data.get("origin", "recorded")
    notes = [f"{origin} compaction {entry.id!r}: {len(kept)} messages kept from before it"]
    bad = sorted({o.message_id for o in pairing.found if o.kind == "result_without_call"})
    if bad:
        messages = tuple(m for m in messages if m.id not in bad)
        notes.append(f"removed {len(bad)} tool results whose calls the summary replaced: {', '.join(bad)}")
    return replace(history, items=messages), entry, notes


def without_recorded(history: Conversation, memo: dict | None = None) -> Conversation:
    """The history without the compactions the transcript recorded (the real agent's): ctxlab's compaction
    decides for itself, as every other strategy does; only ``recorded`` replays the agent's own. ``memo``: a dict
    the caller keeps between calls (not the one it gives :func:`compacted_view`). Chapter 07."""
    if not any(e.kind == "compaction" and e.data.get("origin") != "ctxlab" for e in _entries_of(history, memo)):
        return history
    def keep(items: tuple) -> tuple:
        return tuple(i for i in items if not (
            isinstance(i, Entry) and i.kind == "compaction" and i.data.get("origin") != "ctxlab"))
    grown = _grown(memo, "without", history.items)
    items = keep(history.items) if grown is None else grown[0] + keep(grown[1])  # type: ignore[operator]
    if memo is not None:
        memo["without"] = (history.items, items)
    return replace(history, items=items)
