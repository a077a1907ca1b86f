"""Summary requests within the window: the prompt, the dropped messages as text, in chunks that each fit.

The rule for a summary call's size: a summary call is a model call and obeys the same window. Its request (the
prompt, the summary so far, the dropped messages as text by :func:`render_transcript`) plus the reply's
``max_tokens`` must fit the model's window. Dropped messages that do not fit one request are summarised in chunks,
oldest first (:func:`summarise_in_chunks`): each chunk as many whole messages as fit, each a summary call (a ledger
row) of its own that updates the summary so far (the summarizer's ``previous``), so nothing is left out. A message
too large for a call of its own is sent pruned to fit (chapter 05's ``prune_text``: head and tail kept, a marker for
the middle). The notes say how many calls a summary took and what was pruned. A prompt that leaves no room for a
single message is not sent: the summary stops there (at first: no summary), and the note says how many dropped
messages it leaves out.

A strategy asks again at every call that truncates, and between two calls the dropped messages mostly grow at the
end. So the chunking remembers its last run with the same summarizer, cap and window (the ``memo`` a strategy keeps,
:class:`ChunkRun`) and redoes only what changed:

* each message's size as text is counted once, and the sizes laid end to end make a running prefix sum: the whole
  messages that fit a chunk are found by bisection, and a chunk is an index range into the dropped messages, not a
  copy of what is left;
* a chunk whose messages and prompt are the same as in that run gets the same summary and the same request:
  only the chunk the newly dropped messages fall in is summarised again (and any after it). Its prompt is the same
  when the chunks before it are (the prompt holds their summary); its messages are the same when its fit gives the
  same index range and the messages there did not change. Everything a chunk's call holds — the messages taken
  back when the joined text is larger, a message sent pruned, the request, the summary — follows from those two.

This assumes a summarizer asked the same request answers the same (the rule-based one does). An ``LLMSummarizer``
calling a real model is then asked once per distinct request while the dropped messages only grow (asked again for
a request it answered before a rewrite), and the ledger still has a row for every call the strategy makes (the
same requests, sent again). Simplified on purpose: chunks are cut by their size alone, never by the conversation's
structure; the last few runs are kept (:data:`RUNS`), not every run. Taught in chapter 06.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field, replace
from operator import attrgetter
from typing import Sequence

from ctxlab.base.sequences import shared_prefix
from ctxlab.context import Context
from ctxlab.messages import Conversation, Message, TextPart
from ctxlab.pruning import prune_text
from ctxlab.strategies import SideCall, whole_context
from ctxlab.summary import Summarizer, Summary
from ctxlab.tables.profiles import ModelProfile
from ctxlab.tokens import MessageMeter

DEFAULT_PROMPT = """Summarise the conversation below for the agent that continues it; it will not see these
messages again. Keep what the next step needs, drop the play-by-play. Use these headings, in this order, each
with a list of short items, and leave out an empty one:
## Task - the user's task and later requests, in their words
## Constraints - every rule the user set (must, never, only, 不要, 必须 ...), verbatim
## Decisions - what was decided and why, and the wrong paths already ruled out
## Files - files read and modified, with line numbers as path:line
## Commands - commands run and how they ended
## Errors - error messages and codes, verbatim
## Open steps - what remains to be done
## Pages - page handles still needed, as read_page(handle="...")
Keep paths, identifiers, error codes and non-English text exactly as written. At most {max_tokens} tokens."""

RUNS = 4  # runs remembered per meter and thread, one per summarizer, cap and profile (a cap that dips comes back)
UPDATE = "\n\nThe summary so far, to update:\n<summary>\n{previous}\n</summary>"  # after the prompt, when there is one
Summarised = tuple[Summary | None, tuple[SideCall, ...], tuple[str, ...]]  # a summary, the calls made, notes


def render_transcript(messages: Sequence[Message]) -> str:
    """Messages as plain text for a prompt. ``[user("hi", "u1")]`` → ``"[user] hi"``. Chapter 06."""
    out = []
    for m in (m for m in messages if m.origin != "meta"):
        who = f"tool {m.tool_name or ''}".strip() if m.role == "tool" else m.role
        calls = "".join(f"\n  -> {c.name}({c.arguments})" for c in m.tool_calls)
        out.append(f"[{who}] {m.text}{calls}")
    return "\n\n".join(out)


def fresh_request(history: Conversation, prompt: str, chunk: Sequence[Message], thread: str = "main") -> Conversation:
    """A summary asked afresh: one user message, ``prompt`` then ``chunk`` as text (nothing cached). Chapter 06."""
    text = f"{prompt}\n\n<conversation>\n{render_transcript(chunk)}\n</conversation>"
    return Conversation(history.id, (Message("user", (TextPart(text),), id="summary-request", thread=thread),),
                        inferred_head_tokens=0)


def instruction(prompt: str, max_tokens: int, previous: str | None = None) -> str:
    """``prompt`` with its ``{max_tokens}`` filled in, then :data:`UPDATE` holding ``previous`` when there is one
    (an earlier summary's text). ``instruction("At most {max_tokens}.", 9)`` → ``"At most 9."``. Chapter 06."""
    return prompt.format(max_tokens=max_tokens) + (UPDATE.format(previous=previous) if previous else "")


def ask_for(summarizer: Summarizer, cap: int, previous: str | None = None) -> str:
    """The prompt a summary call sends: the summarizer's own (``LLMSummarizer.instruction``), else
    :data:`DEFAULT_PROMPT` at ``cap`` tokens; with the summary so far when there is one. Chapter 06."""
    own = getattr(summarizer, "instruction", None)  # else the default prompt, as an LLMSummarizer asks it
    return own(previous) if own else instruction(DEFAULT_PROMPT, cap, previous)


@dataclass(frozen=True)
class Chunk:
    """One summary call of a chunked summary: it covers the dropped messages ``start:stop`` (indexes; ``end``: where
    its fit ended, before any message was taken back), ``fixed`` the tokens of its prompt alone, ``side`` its call
    (before it is numbered), ``summary`` the summary so far after it, ``note`` a note when its message was sent
    pruned. Chapter 06."""

    start: int
    stop: int
    end: int
    fixed: int
    side: SideCall
    summary: Summary
    note: str = ""


@dataclass
class ChunkRun:
    """One run of :func:`summarise_in_chunks` for one meter and thread: what it was asked with (``inputs``: the
    summarizer, ``cap`` and the profile), the dropped messages, their ids, the prefix sums of their sizes (``cum[i]``:
    tokens of the first i as text) and the chunks made, ``numbered``: their calls as returned. Chapter 06."""

    meter: MessageMeter
    inputs: tuple[object, ...]
    dropped: list[Message]
    ids: list[str] = field(default_factory=list)
    cum: list[int] = field(default_factory=lambda: [0])
    chunks: list[Chunk] = field(default_factory=list)
    numbered: list[SideCall] = field(default_factory=list)


def summarise_in_chunks(history: Conversation, dropped: Sequence[Message], summarizer: Summarizer, cap: int,
                        profile: ModelProfile, meter: MessageMeter, memo: dict | None = None, *,
                        previous: Summary | None = None) -> Summarised:
    """``dropped`` summarised in fresh calls that each fit the window with ``max_tokens`` = ``cap`` tokens (the
    module's rule): the summary (its sources: the ids of the messages it covers, all unless a call could not fit;
    None if none could), the calls (``SideCall``, kind "summary"), oldest first, and notes on what was done. One call
    when all fits. ``memo`` (a strategy's dict, kept between its calls) holds the sizes, the last requests and the
    last runs per meter and thread: the chunks still the same are taken from one (the module's incremental rule); the
    result is the same with or without it. ``previous``: the summary so far of the messages before ``dropped`` (the
    ``extend`` rule of ``summary_strategy.py``): the first call updates it, and the summary returned covers its
    sources and then ``dropped``; with nothing to add it comes back unchanged, with no call. Raises nothing of its
    own. Chapter 06."""
    window, room = profile.context_window, profile.context_window - cap  # room: what the request may take
    thread, memo = dropped[0].thread if dropped else "main", {} if memo is None else memo
    last, made = memo.pop("requests", {}), memo.setdefault("requests", {})  # text -> context: the last call's, these
    sizes, runs = memo.setdefault("sizes", {}), memo.setdefault("runs", {})

    def size(m: Message) -> int:  # a message's tokens as text in the request, its separator included
        if (hit := sizes.get(id(m))) is None or hit[0] is not m:  # the stored message keeps its id from being reused
            hit = sizes[id(m)] = (m, meter.text(render_transcript([m])) + 1)
        return hit[1]

    def request(prompt: str, chunk: Sequence[Message]) -> Context:  # a request sent before is not counted again
        view = fresh_request(history, prompt, chunk, thread)
        key = (id(meter), thread, view.messages[0].text)
        made[key] = made.get(key) or last.get(key) or whole_context(view, profile, meter)
        return made[key]

    so_far, start = previous, previous.text if previous else None  # the summary the first call updates
    dropped, inputs, kept = list(dropped), (summarizer, cap, profile, start), runs.setdefault((id(meter), thread), [])
    before = next((r for r in kept if r.meter is meter and r.inputs == inputs), None) or ChunkRun(meter, inputs, [])
    same = shared_prefix(before.dropped, dropped)  # the dropped messages as at the last call
    run = ChunkRun(meter, inputs, dropped, before.ids[:same], before.cum[:same + 1])
    run.ids += map(attrgetter("id"), dropped[same:])
    run.cum += (run.cum[-1] + size(m) for m in dropped[same:])  # no empty message: the sums only grow
    olds, at, summary, stuck = before.chunks, 0, previous, ""  # at: the first message not summarised
    previous = start
    while at < len(dropped) or summary is None:
        old = olds[len(run.chunks)] if len(run.chunks) < len(olds) else None  # the chunk there: the same prompt
        prompt = None if old else ask_for(summarizer, cap, previous)
        fixed = old.fixed if old else request(prompt, ()).total_tokens
        n = max(0, bisect_right(run.cum, run.cum[at] + room - fixed, at) - 1 - at)  # as many whole messages as fit
        if old and old.end == at + max(n, 1) <= same:  # the same messages too: the same call and summary
            run.chunks.append(old)
            at, summary, previous = old.stop, old.summary, old.summary.text
            continue
        olds, prompt = [], prompt or ask_for(summarizer, cap, previous)  # the chunks after this one: other prompts
        chunk = dropped[at:at + max(n, 1)]
        for _ in range(8):  # the sizes add up differently once joined: fewer messages, or the one pruned further
            sent = request(prompt, chunk)
            if (over := sent.total_tokens - room) <= 0 or not chunk:
                break
            if len(chunk) > 1:
                k = len(chunk)
                while k > 1 and over > 0:
                    over, k = over - size(chunk[k - 1]), k - 1
                chunk = chunk[:k]
                continue
            text = render_transcript([dropped[at]]).split("] ", 1)[-1]  # its text and calls, without the "[who] "
            try:  # one message too large for a call of its own: its text pruned to what is left
                chunk = [replace(dropped[at], parts=(TextPart(prune_text(text, size(chunk[0]) - over - 8,
                                                                         meter.counter).text),))]
            except ValueError:  # PruneBudgetError too: the prompt leaves no room even for the omission marker
                break
        if (sent := request(prompt, chunk)).total_tokens > room:  # counted already, unless the loop ran out
            stuck = (f"the summary prompt needs {fixed:,} tokens + max_tokens {cap:,}: no summary call fits the "
                     f"window of {window:,}, so {len(dropped) - at} dropped messages are left out of the summary")
            break
        note = "" if not chunk or chunk[0] is dropped[at] else (
            f"{dropped[at].where()} needs {size(dropped[at]):,} tokens as text, more than one summary call can hold: "
            f"sent pruned to {size(chunk[0]):,}")
        summary = summarizer.summarize(chunk, previous)
        side = SideCall("summary", sent, meter.text(summary.text), f"{len(chunk)} dropped messages, fresh",
                        max_tokens=cap)
        run.chunks.append(Chunk(at, at + len(chunk), at + max(n, 1), fixed, side, summary, note))
        previous, at = summary.text, at + len(chunk)
    kept[:] = [r for r in kept if r is not before and r.meter is meter][1 - RUNS:] + [run]  # most recent last
    notes = [c.note for c in run.chunks if c.note] + ([stuck] if stuck else [])
    total = len(run.chunks)
    if total > 1:  # each call numbered: a call numbered at the last call is taken again when it is the same
        earlier = before.numbered if len(before.numbered) == total else []
        run.numbered = [earlier[k] if k < len(earlier) and before.chunks[k] is c else
                        replace(c.side, note=f"{c.side.note}, chunk {k + 1} of {total}")
                        for k, c in enumerate(run.chunks)]
        notes.insert(0, f"summarised in {total} summary calls, oldest first, each within the window of "
                        f"{window:,} with max_tokens {cap:,}")
    sides = tuple(run.numbered) if total > 1 else tuple(c.side for c in run.chunks)
    covered = (*(so_far.sources if so_far else ()), *run.ids[:at])  # all of them, unless a call could not fit
    return replace(summary, sources=covered) if summary else None, sides, tuple(notes)
