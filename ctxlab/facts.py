"""Fact retention: of a checklist of facts, which can the model still see, call by call?

A checklist is a list of short facts — a constraint the user stated, a path with a line number,
an error code, a decision, a remaining step — each with the id of the message that first said it
(the bundled sample's generator planted them; ``data/pi_facts.json`` was written by hand). At each
call of a replay, a fact the history already holds is

* **visible** — its text occurs verbatim in a kept message or in the system prompt;
* **in the summary** — it occurs only inside a summary (a summary block, the summary appended to
  the system prompt, or a compaction's summary message);
* **paged** — it is in neither, but its message was paged, the page's handle is in the context and
  the page holds the text: the model could read it back with ``read_page``;
* **lost** — none of these.

``facts_kept`` counts visible + in the summary. It is given at the last call and at the worst call
(the lowest share of the facts known so far).

Simplified on purpose: a fact is kept when its exact text occurs (case and spacing included); a
paraphrase counts as lost. Taught in chapter 06.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from typing import Any, Sequence

from ctxlab.messages import Conversation, Entry, Message
from ctxlab.strategies import model_calls
from ctxlab.base.safe_text import shown
from ctxlab.paging import PAGE_HANDLE
from ctxlab.views import SUMMARY_MARKER


@dataclass(frozen=True)
class Fact:
    """One checklist item: ``text`` occurs verbatim in message ``message_id``. ``kind``: constraint,
    path, error_code, decision, step. A checklist file is read by ``ctxlab.io.checklist.load_facts``. Chapter 06."""

    id: str
    kind: str
    text: str
    message_id: str


def wire_forms(text: str) -> tuple[str, str]:
    """``text`` as it appears in a block's JSON wire form, escaped once and twice (arguments in a string).
    ``wire_forms('say "hi"')`` → ``('say \\"hi\\"', 'say \\\\\\"hi\\\\\\"')``. Chapter 06."""
    once = json.dumps(text, ensure_ascii=False)[1:-1]
    return once, json.dumps(once, ensure_ascii=False)[1:-1]


def split_request(request: Any) -> tuple[str, str]:
    """The wire text of a rendered request as (outside any summary, inside a summary).

    A block of a ``summary:...`` message is summary; in any other block, the text from the summary
    marker on is (``budgeted+summary`` appends it to the system prompt). Chapter 06.
    """
    seen, summary = [], []
    for b in request.blocks:
        outside, inside = split_block(b.message_id, b.text)
        seen.append(outside)
        summary.append(inside)
    return "\n".join(t for t in seen if t), "\n".join(t for t in summary if t)


def split_block(message_id: str | None, text: str) -> tuple[str, str]:
    """One block's wire text as (outside any summary, inside a summary): a ``summary:...`` message's block is all
    summary; in any other, the text from the summary marker on. Chapter 06."""
    if message_id and message_id.startswith("summary:"):
        return "", text
    at = text.find(_MARKER)
    return (text, "") if at < 0 else (text[:at], text[at:])


_MARKER = wire_forms(SUMMARY_MARKER)[0]  # the summary marker as it appears in a block's wire text


def occurs_in(forms: tuple[str, str], text: str) -> bool:
    """Whether either wire form of a fact (:func:`wire_forms`) is in ``text``. Chapter 06."""
    return any(form in text for form in forms)


@dataclass(frozen=True)
class FactRow:
    """One call: the facts known by then (their message is in the history), by status (fact ids). Chapter 06."""

    thread: str
    call: int
    known: int
    visible: tuple[str, ...]
    summary: tuple[str, ...]
    paged: tuple[str, ...]
    lost: tuple[str, ...]

    @property
    def kept(self) -> int:
        """Facts the model can read without a tool call: visible + in the summary."""
        return len(self.visible) + len(self.summary)


@dataclass(frozen=True)
class FactReport:
    """Per-call rows and the two headline figures.

    ``facts_kept_last`` of ``facts_known_last`` at the last call; ``facts_kept_min`` of
    ``facts_known_at_min`` at ``min_call``, the call with the lowest kept share (the earliest on a tie).
    Chapter 06.
    """

    strategy: str
    facts_total: int
    rows: tuple[FactRow, ...]
    facts_kept_last: int
    facts_known_last: int
    facts_kept_min: int
    facts_known_at_min: int
    min_call: int | None

    def summary_line(self) -> str:
        return (f"{shown(self.strategy)}: {self.facts_kept_last} of {self.facts_known_last} facts kept at the last "
                "call; "
                f"worst call {self.min_call}: {self.facts_kept_min} of {self.facts_known_at_min} "
                f"({self.facts_total} in the checklist)")

    def __str__(self) -> str:
        lines = [self.summary_line(), f"  {'call':>5} {'known':>5} {'visible':>7} {'summary':>7} {'paged':>5} "
                                      f"{'lost':>4}  lost ids"]
        for r in self.rows:
            lines.append(f"  {r.call:>5} {r.known:>5} {len(r.visible):>7} {len(r.summary):>7} {len(r.paged):>5} "
                         f"{len(r.lost):>4}  {' '.join(shown(f) for f in r.lost)}")  # fact ids: the checklist's
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td>{r.call}</td><td>{r.known}</td><td>{len(r.visible)}</td><td>{len(r.summary)}</td>"
                       f"<td>{len(r.paged)}</td><td>{len(r.lost)}</td>"
                       f"<td>{shown(' '.join(r.lost), html=True)}</td></tr>"
                       for r in self.rows)
        return (f"<div><b>{html.escape(self.summary_line())}</b><table><tr><th>call</th><th>known</th>"
                "<th>visible</th><th>summary</th><th>paged</th><th>lost</th><th>lost ids</th></tr>"
                f"{rows}</table></div>")


def fact_retention(replay_result: Any, facts: Sequence[Fact], conversation: Conversation) -> FactReport:
    """Score every call of a replay of ``conversation`` against a checklist. Chapter 06.

    ``fact_retention(replay(conv, "budgeted", window=30_000), load_facts("data/sample_facts.json"), conv)``
    → "budgeted: 10 of 19 facts kept at the last call; worst call 42: 1 of 13 (22 in the checklist)".
    Raises ValueError for a fact whose message is not in the conversation.
    """
    where = {it.id: (k, it) for k, it in enumerate(conversation.items)}  # item id -> (position, item)
    missing = [f.id for f in facts if f.message_id not in where]
    if missing:
        raise ValueError(f"facts {', '.join(missing)} name messages that are not in conversation {conversation.id!r}")
    calls = {c.message.id: k for k, c in model_calls(conversation)}  # response message id -> position
    entries = [*conversation.entries, *(e for e in replay_result.new_entries if isinstance(e, Entry))]
    pages = {e.data["handle"]: e.data.get("message_id") for e in entries
             if e.kind == "paged_result" and "handle" in e.data}  # handle -> paged message id
    forms = {f.id: wire_forms(f.text) for f in facts}  # escaped once per fact, not once per call
    # A form holds no newline (JSON escapes it), so it occurs in the blocks' texts joined by newlines exactly when
    # it occurs in one of them: each block's text is scanned once per replay (a replay renders a message the same
    # way at every call), not once per call. A form that is empty or holds a newline is looked for in the joined
    # text, as written. The scan is the slow part: a checklist of 22 facts on pi's 484 calls.
    by_piece = [f for f in facts if all(form and "\n" not in form for form in forms[f.id])]
    whole = [f for f in facts if f not in by_piece]
    scanned: tuple[dict[str, tuple], dict[str, tuple]] = ({}, {})  # (other blocks, summary messages' blocks)

    def scan(message_id: str | None, text: str) -> tuple[frozenset[str], frozenset[str], tuple[tuple[str, str], ...]]:
        """A block's facts outside and inside a summary, and its page handles (found in each part apart)."""
        outside, inside = split_block(message_id, text)
        return (frozenset(f.id for f in by_piece if outside and occurs_in(forms[f.id], outside)),
                frozenset(f.id for f in by_piece if inside and occurs_in(forms[f.id], inside)),
                tuple(PAGE_HANDLE.findall(outside)) + tuple(PAGE_HANDLE.findall(inside)) if pages else ())

    rows = []
    for rec in replay_result.records:
        at = calls.get(rec.call.message.id, len(conversation.items))
        known = [f for f in facts if where[f.message_id][0] < at and where[f.message_id][1].thread == rec.call.thread]
        in_seen: set[str] = set()
        in_summ: set[str] = set()
        handles: list[tuple[str, str]] = []
        for b in rec.request.blocks:
            memo = scanned[bool(b.message_id) and b.message_id.startswith("summary:")]
            got = memo.get(b.text)
            if got is None:
                got = memo[b.text] = scan(b.message_id, b.text)
            if got[0]:
                in_seen |= got[0]
            if got[1]:
                in_summ |= got[1]
            if got[2]:
                handles += got[2]
        if whole:
            seen, summary = split_request(rec.request)
            in_seen.update(f.id for f in whole if occurs_in(forms[f.id], seen))
            in_summ.update(f.id for f in whole if occurs_in(forms[f.id], summary))
        live: set[str | None] = set()
        if pages:  # only a paging strategy leaves handles
            live = {pages[h] for pair in handles for h in pair if h in pages}
        rows.append(fact_row(rec.call, known, where, in_seen, in_summ, live))
    return retention_report(replay_result.strategy, len(facts), rows)


def fact_row(call: Any, known: Sequence[Fact], where: dict[str, tuple[int, Any]], in_seen: set[str],
             in_summary: set[str], live: set[str | None]) -> FactRow:
    """One call's row: each fact ``known`` by then is visible (its id in ``in_seen``: found outside any summary), in
    the summary (``in_summary``), paged (its message is behind a live page handle, ``live``: message ids, and the
    fact is in that message's text) or lost, in that order of precedence. ``where``: item id -> (position, item).
    ``fact_row(call, [f01], where, {"f01"}, set(), set()).visible`` → ``("f01",)``. Chapter 06."""
    visible, summarised, paged, lost = [], [], [], []
    for f in known:
        source = where[f.message_id][1]
        if f.id in in_seen:
            visible.append(f.id)
        elif f.id in in_summary:
            summarised.append(f.id)
        elif f.message_id in live and isinstance(source, Message) and f.text in source.text:
            paged.append(f.id)
        else:
            lost.append(f.id)
    return FactRow(call.thread, call.index, len(known), tuple(visible), tuple(summarised), tuple(paged), tuple(lost))


def retention_report(strategy: str, facts: int, rows: Sequence[FactRow]) -> FactReport:
    """The report of ``rows`` (one per call, in order) for a checklist of ``facts`` facts: the last call's score and
    the worst call's (the lowest kept / known among calls that know a fact; the first such on a tie). Chapter 06."""
    scored = [r for r in rows if r.known]
    worst = min(scored, key=lambda r: r.kept / r.known) if scored else None
    last = rows[-1] if rows else None
    return FactReport(strategy, facts, tuple(rows), last.kept if last else 0, last.known if last else 0,
                      worst.kept if worst else 0, worst.known if worst else 0, worst.call if worst else None)
