"""Reader for Claude Code transcripts (``~/.claude/projects/<project>/<session>.jsonl``), 1.x and 2.x.

Claude Code is closed source; the line shapes here are the ones its JSONL shows and that these
open-source parsers document (read 2026-12-01): daaain/claude-code-log ``claude_code_log/models.py``
(commit 05cc97e: user/assistant/system/summary/ai-title/queue-operation/attachment entries,
``compactMetadata``, ``isMeta``, ``agentId``) and ``claude_code_log/dag.py`` (132f8bb: progress
lines in the uuid chain, the parallel-tool-call "spurious fork"); ryoppippi/ccusage
``apps/ccusage/src/data-loader.ts`` (``createUniqueHash``: one usage per ``message.id`` +
``requestId``, however many lines repeat it); d-kimuson/claude-code-viewer (the 1.x sample).

* ``user`` / ``assistant`` lines carry an Anthropic Messages API ``message``. **Split responses**:
  one API response is written one content block per line, the lines sharing ``message.id``; they
  become ONE assistant message (parts in order, ``response_id`` = ``message.id``), its usage taken
  once, from the last line (usage repeats on every line; 2.x never records ``stop_reason``, so a
  response whose lines all lack it may carry the streaming-start ``output_tokens``: noted).
* A user line holding ``tool_result`` blocks and text becomes, in order, one ``tool`` message per
  result and a ``user`` message per run of other blocks.
* ``isMeta`` user lines (the local-command caveat, an expanded slash command or skill) ARE sent to
  the model: they become user messages with ``origin=META_ORIGIN`` (``"system"``: sent, written by
  the harness, not typed by the person), so they are counted, never folded into an inferred head.
* **Threads**: ``isSidechain`` lines (a sub-agent's own file, or 1.x sidechains inline) form one
  thread per sidechain root; 2.x copies a running sub-agent's messages into ``progress`` lines
  (``data.type == "agent_progress"``, ``data.agentId``): they are read as that sub-agent's thread
  (its last answer comes back as the Task result, and may be missing there: noted). Threads are
  ``main``, ``sidechain-1``, ``sidechain-2``, ... in order of appearance.
* **Compactions**: a ``system`` line with ``subtype: "compact_boundary"`` (``compactMetadata``
  ``trigger``, ``preTokens``) plus the next ``isCompactSummary`` user line → one ``compaction`` Entry
  (``origin: "recorded"``; Claude Code keeps nothing from before the boundary: ``first_kept_id=None``).
* ``summary`` / ``custom-title`` / ``ai-title`` lines → ``title`` entries and ``Conversation.title``.
* Everything else — other ``progress`` lines, other ``system`` subtypes (stop-hook summaries, turn
  durations, local commands), file-history snapshots, queue operations, attachments — is a UI or
  harness record: left out, counted per kind in the notes.

Simplified on purpose: the whole file is one Conversation in line order; real forks (edits,
rewinds) are counted and all branches kept in line order (see :mod:`.claude_code_tree`). Tool
specs and the system prompt are not in the file: ``tools=()``, ``system=()``. Plumbing for chapter 02.
"""

from __future__ import annotations

from pathlib import Path

from ctxlab.base.errors import TranscriptError
from ctxlab.messages import Conversation, Entry, Message, SourceRef, Transcript
from ctxlab.io.formats import bad, head_objects, iter_jsonl, skip_note
from ctxlab.io.formats.claude_code_lines import META_ORIGIN, TITLES, LineReader, block_parts, usage  # block_parts, usage: used by other readers
from ctxlab.io.formats.claude_code_tree import Forks, Links, Threads

__all__ = ["META_ORIGIN", "NAME", "block_parts", "read", "sniff", "usage"]

NAME = "claude-code"
# the line types Claude Code writes (parsers: claude-code-log models.py, ccusage data-loader.ts); others are counted
_KNOWN = frozenset({"user", "assistant", "system", "progress", "summary", "custom-title", "ai-title", "attachment",
                    "file-history-snapshot", "queue-operation"})
_FOREIGN = {"session": "a session header line (pi or ctxlab)", "message": "a pi message line"}  # type -> what it is


def sniff(path: Path, head: str) -> bool:
    """A Claude Code line among the first 20: a message, system or progress line with ``uuid`` and
    ``sessionId``, a ``summary`` with ``leafUuid``, or a file-history snapshot."""
    for obj in head_objects(head, 20):
        if obj.get("type") in ("user", "assistant", "system", "progress") and "uuid" in obj and "sessionId" in obj:
            return True
        if (obj.get("type") == "summary" and "leafUuid" in obj) or (
                obj.get("type") == "file-history-snapshot" and "messageId" in obj):
            return True
    # the first line may be longer than the head (a pasted image): fall back on the key names
    return head.lstrip().startswith("{") and all(f'"{k}"' in head for k in ("parentUuid", "isSidechain", "sessionId"))


def read(path: Path, *, strict: bool = True) -> Transcript:
    """Read a Claude Code session file into one Conversation (see the module docstring)."""
    file, skipped = path.name, []
    r = LineReader(file)
    threads, links, forks, titles = Threads(), Links(), Forks(), []
    session_id: str | None = None
    uuids: set[str] = set()  # uuids of the lines read
    copied: set[str] = set()  # uuids of the sub-agent messages read from agent_progress copies
    for line, _, obj in iter_jsonl(path, strict=strict, notes=skipped, once=True):
        kind = obj.get("type")
        try:
            if not isinstance(kind, str):
                raise bad(file, line, f"every Claude Code line names its type (a string), got {kind!r}", field="type")
            if kind in _FOREIGN and "uuid" not in obj:
                raise TranscriptError(file, line, f"{_FOREIGN[kind]} in a Claude Code file: the file mixes formats.",
                                      field="type", hint="A transcript holds one agent's lines: split the file, or "
                                                         "load with strict=False to skip this line.")
            if kind not in _KNOWN and isinstance(obj.get("message"), dict):  # a message under a type never written
                raise bad(file, line, f"unknown line type {kind!r} on a line that holds a message (Claude Code "
                                      "writes 'user' and 'assistant' for those)", field="type")
            session_id = session_id or obj.get("sessionId")
            links.see(line, obj)
            if kind in ("user", "assistant") and obj.get("uuid") in copied:
                r.left_out[f"{kind} (a line already read from an agent_progress copy)"] += 1
                continue
            if isinstance(obj.get("uuid"), str):
                uuids.add(obj["uuid"])
            thread = threads.name(obj.get("uuid"), obj.get("parentUuid"), obj.get("isSidechain"))
            forks.see(obj, thread)
            if kind in TITLES:
                title = obj.get(TITLES[kind])
                if not isinstance(title, str):
                    raise bad(file, line, "a title line needs a string", field=TITLES[kind])
                titles.append(title)
                r.items.append(Entry("title", str(obj.get("uuid") or f"title:{line}"), {"title": title},
                                     source=SourceRef(file, line)))
            elif kind == "assistant":
                r.assistant(obj, thread, line)
            elif kind == "user":
                r.user(obj, thread, line)
            elif kind == "system" and obj.get("subtype") == "compact_boundary":
                r.boundary(obj, thread, line)
            elif kind == "progress":
                r.progress(obj, threads, line, seen=(uuids, copied))
            else:
                sub = obj.get("subtype") if kind == "system" else (
                    obj["attachment"].get("type") if kind == "attachment" and isinstance(obj.get("attachment"), dict)
                    else None)
                r.left_out.add(f"{kind}/{sub}" if sub else str(kind), line)
        except TranscriptError as err:
            if strict:
                raise
            skipped.append(skip_note(err))
    return Transcript(format=NAME, file=file, conversations=(_conversation(r, path, session_id, titles, links,
                                                                           forks, threads, skipped),),
                      notes=tuple(skipped))


def _conversation(r: LineReader, path: Path, session_id: str | None, titles: list[str], links: Links, forks: Forks,
                  threads: Threads, skipped: list[str]) -> Conversation:
    """The items read, with the notes that say what was left out, merged or guessed."""
    notes = list(r.notes)
    notes += r.left_out.notes("UI records, not sent to the model")
    if r.meta:
        notes.append(f"{r.meta} isMeta user message(s) (local-command caveats, expanded slash commands) read as "
                     f"sent to the model, with origin {META_ORIGIN!r}")
    for agent, thread in threads.agents.items():
        notes.append(f"{thread}: sub-agent {agent!r}, {r.agent_lines[thread]} message line(s) read from its "
                     "agent_progress copies (its last answer may be missing here: it is the Task result; the full "
                     f"transcript is the session's subagents/agent-{agent}.jsonl)")
    unstopped = sum(1 for resp in r.responses.values() if resp.stop is None)
    if unstopped:
        notes.append(f"{unstopped} of {len(r.responses)} response(s) record no stop_reason on any line (Claude Code "
                     "writes a response one content block per line, as each block ends): stop_reason unknown, "
                     "output_tokens as the last line recorded it (possibly a mid-stream count)")
    notes += links.notes()
    notes += [f"compaction at {r.items[i].source} has no summary line" for i in r.pending.values()]
    for thread, n in sorted(forks.count().items()):
        notes.append(f"the {thread} thread forks at {n} point(s) (edits, rewinds or regenerated answers); "
                     "all branches kept in line order")
    items = r.items
    first_model = next((m.model for m in items if isinstance(m, Message) and m.model and m.model != "<synthetic>"), None)
    return Conversation(id=session_id or path.stem, items=tuple(items), title=titles[-1] if titles else None,
                        model=first_model, provider="anthropic", notes=tuple(skipped + notes))
