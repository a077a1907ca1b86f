"""The checklist score of a replay, faster: :func:`ctxlab.facts.fact_retention`'s numbers, blocks read once.

:func:`ctxlab.facts.fact_retention` (chapter 06) scans each distinct block text of a replay once, then walks
every block of every call to gather what the call shows: on pi's 484 calls of a few hundred blocks each, that
walk is most of its time. Two things make the same answer cheaper:

* a call's request holds mostly the very block objects the call before it held (the render cache continues from
  them), so :func:`fact_retention_fast` finds a call's blocks that hold a fact (or a page handle) by identity, with
  set operations and no Python step per block, and counts what they hold from what changed since the call
  before (the blocks that came and went); a block object seen for the first time is scanned (or its text's scan
  looked up) once;
* the scans (a block text's facts outside and inside a summary, and its page handles) are the same in every replay
  of the same checklist, so a ``memo`` passed in (the shared replays' one: ``ctxlab.lab.replays.REPLAYS``) keeps
  them from one replay to the next: ``compaction`` at a second window reads only the texts no replay showed yet.

Everything else (which facts are known at a call, the summary and page rules, the worst call) is the book's, step
for step; ``tests/test_widget_replay_windows.py`` compares the two reports on the sample and on pi. Bonus reading
after chapter 08, like the rest of ``ctxlab/fast/``.
"""

from __future__ import annotations

from typing import Any, Sequence

from ctxlab.facts import Fact, FactReport, fact_row, occurs_in, retention_report, split_block, split_request, wire_forms
from ctxlab.messages import Conversation, Entry
from ctxlab.paging import PAGE_HANDLE
from ctxlab.strategies import model_calls


def fact_retention_fast(replay_result: Any, facts: Sequence[Fact], conversation: Conversation,
                        memo: dict | None = None) -> FactReport:
    """What :func:`ctxlab.facts.fact_retention` gives for the same arguments (the same ValueError for a fact whose
    message is not in the conversation). ``memo``: a dict kept between calls (any checklist, any replay) holding
    the scans of block texts. Bonus reading (chapter 06 teaches the score)."""
    where = {it.id: (k, it) for k, it in enumerate(conversation.items)}
    missing = [f.id for f in facts if f.message_id not in where]
    if missing:
        raise ValueError(f"facts {', '.join(missing)} name messages that are not in conversation {conversation.id!r}")
    calls = {c.message.id: k for k, c in model_calls(conversation)}
    entries = [*conversation.entries, *(e for e in replay_result.new_entries if isinstance(e, Entry))]
    pages = {e.data["handle"]: e.data.get("message_id") for e in entries
             if e.kind == "paged_result" and "handle" in e.data}
    forms = {f.id: wire_forms(f.text) for f in facts}
    by_piece = [f for f in facts if all(form and "\n" not in form for form in forms[f.id])]
    whole = [f for f in facts if f not in by_piece]
    texts = (memo if memo is not None else {}).setdefault((tuple(by_piece), bool(pages)), ({}, {}))

    def scan(message_id: str | None, text: str) -> tuple[frozenset[str], frozenset[str], tuple]:
        outside, inside = split_block(message_id, text)
        return (frozenset(f.id for f in by_piece if outside and occurs_in(forms[f.id], outside)),
                frozenset(f.id for f in by_piece if inside and occurs_in(forms[f.id], inside)),
                tuple(PAGE_HANDLE.findall(outside)) + tuple(PAGE_HANDLE.findall(inside)) if pages else ())

    seen: set[int] = set()  # ids of the block objects met so far (each kept alive in `alive`)
    alive: list[Any] = []
    holding: dict[int, tuple] = {}  # id(block) -> its scan, for the blocks that hold a fact or a handle
    held: set[int] = set()  # holding's keys, as a set (an intersection with it walks the call's ids)
    shown: set[int] = set()  # those of the call before: a call's facts are counted from what changed since it
    counts: tuple[dict, dict, dict] = ({}, {}, {})  # fact id / fact id / page handle -> blocks of the call holding it
    rows = []
    for rec in replay_result.records:
        at = calls.get(rec.call.message.id, len(conversation.items))
        known = [f for f in facts if where[f.message_id][0] < at and where[f.message_id][1].thread == rec.call.thread]
        blocks = rec.request.blocks
        ids = set(map(id, blocks))  # no Python step per block: the walk the book makes
        new = ids.difference(seen)  # the block objects this call shows first (a set op walks its left side)
        by_id = dict(zip(map(id, blocks), blocks)) if new else {}
        for k in new:
            b = by_id[k]
            seen.add(k)
            alive.append(b)
            memo_ = texts[bool(b.message_id) and b.message_id.startswith("summary:")]
            got = memo_.get(b.text)
            if got is None:
                got = memo_[b.text] = scan(b.message_id, b.text)
            if got[0] or got[1] or got[2]:
                holding[k] = got
                held.add(k)
        hits = ids.intersection(held)
        for k, step in [*((k, 1) for k in hits - shown), *((k, -1) for k in shown - hits)]:  # what changed
            for count, found in zip(counts, holding[k]):
                for x in found:
                    count[x] = count.get(x, 0) + step
        shown = hits
        in_seen = {x for x, n in counts[0].items() if n}
        in_summ = {x for x, n in counts[1].items() if n}
        handles = [x for x, n in counts[2].items() if n]
        if whole:
            seen_text, summary = split_request(rec.request)
            in_seen.update(f.id for f in whole if occurs_in(forms[f.id], seen_text))
            in_summ.update(f.id for f in whole if occurs_in(forms[f.id], summary))
        live: set[str | None] = set()
        if pages:
            live = {pages[h] for pair in handles for h in pair if h in pages}
        rows.append(fact_row(rec.call, known, where, in_seen, in_summ, live))
    return retention_report(replay_result.strategy, len(facts), rows)

__all__ = ["fact_retention_fast"]
