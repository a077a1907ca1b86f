"""Reader for aider's chat log (``.aider.chat.history.md``, written in the repository's root).

The format is what aider's writer makes it (Aider-AI/aider ``aider/io.py`` and
``aider/coders/base_coder.py``, commit 5dc9490, 2026-05-22; the log has kept this shape since
v0.5.0, 2023-05, the first tag — before it, wip commits prefixed prompts with ``#### > ``; read
2026-12-01). ``InputOutput.append_chat_history`` ends every user and tool line with two spaces:

* ``# aider chat started at YYYY-MM-DD HH:MM:SS`` opens a session: one :class:`Conversation` each
  (id = that local time; text before the first header, in a file cut or edited, is a conversation
  of its own; a session with nothing after its header is left out, said in the next one's notes);
* ``#### `` lines (``user_input``) → a ``user`` message, one per prompt (its lines joined). A line
  starting ``/`` or ``!`` is an aider command and ``<blank>`` an empty prompt: neither was sent as
  such (``origin="meta"``); a command that sends a prompt (``/ask``, ``/code``, ``/lint`` ...) writes
  that prompt again as its own ``####`` lines;
* ``> `` lines (``tool_output``, ``tool_warning``, ``tool_error``, ``confirm_ask``) are what the user
  saw in the terminal: ``user`` messages with ``origin="meta"`` (never sent). The source sends three
  kinds of them to the model as a user message of its own: lint errors answered ``Attempt to fix lint
  errors? y`` and the edit-format error after ``The LLM did not conform to the edit format.``
  (``reflected_message``), and the output of ``/run``, ``/test`` or ``!`` that aider added to the chat
  (``Added 3 lines of output to the chat.``, a yes to ``Add … output to the chat?``, or ``/test``
  followed by a reply; aider wraps it in its own words) — those lines become a ``user`` message with
  ``origin="system"``. Multi-line
  ``tool_output`` text quotes only its first line: the unquoted lines up to the next line ending in
  two spaces belong to it;
* everything else is the model's reply (``ai_output``) → ``assistant`` (one with no prompt before it in
  its session gets a stand-in ``user`` message, ``origin="synthetic"``, so the call can be replayed);
  SEARCH/REPLACE blocks are its plain text (aider has no tool calls). Reasoning wrapped in aider's
  ``<thinking-content-…>`` tag or ``<think>`` (``reasoning_tags.py``) becomes a ThinkingPart: aider
  drops it before re-sending.
* ``> Main model: X with …`` (``Models:``, ``Model:``) sets the model; a change is a ``model_change``.
* ``> Tokens: 12k sent, 1.2k cache write, 9.8k cache hit, 310 received.`` (``show_usage_report``) →
  the Usage of the reply before it. The figures are rounded (``format_tokens``: 0.1k below 10k, 1k
  above), are aider's own estimate when the API returned no usage, and ``sent`` counted the cache
  tokens in some releases but not others: when write + hit exceed ``sent`` they are added to it,
  else taken as part of it. ``raw`` keeps the report line.

What the file cannot know, said in every conversation's notes: the system prompt, the repository
map, the content of files added to the chat, the command output and messages aider sent on its own
(``Added 3 lines of output to the chat.``, ``/web`` pages, "I added these files"), chat summaries,
tool definitions (none), exact usage; timestamps beyond the session start. Plumbing for chapter 02.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from ctxlab.base.errors import TranscriptError
from ctxlab.messages import Conversation, Entry, Item, Message, SourceRef, TextPart, ThinkingPart, Transcript, Usage
from ctxlab.io.formats import bad, read_bytes, read_text, skip_note

NAME = "aider"
HEADER = re.compile(r"^# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s*$")
_HEADER_IN_HEAD = re.compile(r"^# aider chat started at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\r?$", re.M)
_MARKED = re.compile(r"^(#### |> ).*  \r?$", re.M)
_MODEL = re.compile(r"^(?:Main model|Models?): (\S+?)\W* with ")
_FIGURE = re.compile(r"(\d[\d,]*(?:\.\d+)?k?) (sent|cache write|cache hit|cached|received)")
_THINKING = re.compile(r"^\s*<(thinking-content-[0-9a-f]{32}|think|thinking|reasoning)>(.*?)</\1>\s*", re.S)
_YES = r".* (?:y|yes|a|all)$"  # confirm_ask logs "question [options] answer"
_LINT_ASK = re.compile(r"^Attempt to fix (?:lint|test) errors\?" + _YES, re.I)
_EDIT_ERROR = "The LLM did not conform to the edit format."
NO_PROMPT = "(the prompt of this reply is not in aider's log)"
_RUN = re.compile(r"^(?:/run |/test|!)")
_ADDED_OUTPUT = re.compile(r"^(?:Added \d+ lines? of output to the chat\.$|Add .*output to the chat\?" + _YES
                           + r"|\(y/n/instructions\)" + _YES + ")", re.I)
_UNKNOWN = ("aider's log holds no system prompt, repository map, file contents or tool definitions, no chat "
            "summary (aider summarises old messages silently) and only the session start time; token counts are "
            "estimates")
# tool lines that say the model got something the log does not hold -> the note counting them
_LEFT = (
    (re.compile(r"^Added \d+ lines? of output to the chat\.$"),
     "command output(s) sent to the model in aider's own wording (the output is logged only if echoed)"),
    (re.compile(r"^Added .+ to the chat\.?$"), "file(s) added to the chat: their content went to the model, not in "
                                                "the log"),
    (re.compile(r"^Add (?:file|files|these files|url) to the chat\?" + _YES, re.I),
     "mention(s) accepted: aider sent its 'I added these files' message, not in the log"),
    (re.compile(r"^\.\.\. added to chat\.$"), "/web page(s) sent to the model, not in the log"),
    (re.compile(r"^All (?:files dropped and )?chat history cleared\.$"),
     "/clear or /reset: aider dropped the messages before it; kept here"),
    (re.compile(r"^Finished summarizing chat history\.$"),
     "chat summaries (--verbose): aider replaced older messages with a summary it does not log"),
)


def sniff(path: Path, head: str) -> bool:
    """An aider log: it opens with the session header, or holds one beside aider's two-space line ends."""
    first = next((line for line in head.split("\n") if line.strip()), "")
    if HEADER.match(first):
        return True
    # a log whose start was cut or edited: the header on a line of its own, and aider's two-space line ends
    return _HEADER_IN_HEAD.search(head) is not None and _MARKED.search(head) is not None


@dataclass
class _Block:
    kind: str  # "user", "tool" or "assistant"
    line: int
    lines: list[str] = field(default_factory=list)


def blocks(lines: list[str], start: int = 1) -> list[_Block]:
    """The user, tool and assistant blocks of one section's lines, the first at line ``start``.
    ``["#### hi  ", "", "Hello!"]`` → a user block ``["hi"]`` then an assistant block ``["Hello!"]``."""
    out: list[_Block] = []
    cur: _Block | None = None
    blank, open_tool = 0, False
    for n, line in enumerate(lines, start):
        if open_tool:  # the unquoted lines of a multi-line tool_output, up to its (rstripped) two-space end
            if not line.startswith("####"):
                assert cur is not None
                end = line.endswith("  ") and line[:-2].rstrip() == line[:-2] != ""
                cur.lines.append(line[:-2] if end else line)
                open_tool = not end
                continue
            open_tool = False
        body = line[:-2] if line.endswith("  ") else line  # the writer's two-space line end
        if line.startswith("####") and (line.endswith("  ") or (line.startswith("#### ") and blank >= 2)):
            kind, text = "user", body[5:] if body.startswith("#### ") else body[4:]
        elif (line.startswith("> ") or line.rstrip() == ">") and (
                line.endswith("  ") or blank or not cur or cur.kind != "assistant"):  # else a quote in a reply
            kind, text = "tool", body[2:] if body.startswith("> ") else body[1:]
            open_tool = line.startswith("> ") and not line.endswith("  ")
        elif not line.strip():
            blank += 1
            if cur is not None and cur.kind == "assistant":
                cur.lines.append("")
            else:
                cur = None
            continue
        else:
            kind, text = "assistant", line
        if cur is None or cur.kind != kind:
            cur = _Block(kind, n)
            out.append(cur)
        cur.lines.append(text)
        blank = 0
    return out


def _number(text: str) -> int:
    text = text.replace(",", "")
    return round(float(text[:-1]) * 1000) if text.endswith("k") else int(float(text))


def report_usage(line: str) -> Usage | None:
    """A ``Tokens: … sent, … received`` report → Usage. ``"Tokens: 2.9k sent, 2.7k cache hit, 18 received."``
    → uncached 200, cache read 2,700, output 18 (the hit taken as part of ``sent``)."""
    if not line.startswith("Tokens: "):
        return None
    figures = {what: _number(num) for num, what in _FIGURE.findall(line.split(" Cost:")[0])}
    if "sent" not in figures or "received" not in figures:
        return None
    sent, hit = figures["sent"], figures.get("cache hit", figures.get("cached", 0))
    write = figures.get("cache write", 0)
    total = sent if write + hit <= sent else sent + write + hit
    return Usage(uncached_input_tokens=total - write - hit, cache_read_tokens=hit, cache_write_tokens=write,
                 output_tokens=figures["received"],
                 raw={"report": line, **figures, "rounded": any(n.endswith("k") for n, _ in _FIGURE.findall(line))})


class _Section:
    """One ``# aider chat started at`` section being turned into a conversation."""

    def __init__(self, cid: str, title: str | None, file: str) -> None:
        self.cid, self.title, self.file = cid, title, file
        self.model: str | None = None
        self.first_model: str | None = None
        self.items: list[Item] = []
        self.left: Counter[str] = Counter()
        self.waiting: int | None = None  # index of the last reply that has no usage report yet
        self.command = ""  # the aider command typed last, while its output follows
        self.prompted = False  # a user message was sent to the model in this session

    def add(self, block: _Block, next_kind: str | None) -> None:
        meta = dict(id=f"{self.cid}:{block.line}", source=SourceRef(self.file, block.line))
        text = "\n".join(block.lines).strip("\n") if block.kind == "assistant" else "\n".join(block.lines)
        if block.kind == "user":
            command = text.startswith(("/", "!")) or text == "<blank>"
            self.command = text if command else ""
            self.prompted = self.prompted or not command
            self.items.append(Message(role="user", parts=(TextPart(text),), origin="meta" if command else None, **meta))
        elif block.kind == "assistant":
            parts: tuple = (TextPart(text),)
            match = _THINKING.match(text)
            if match:
                reply = text[match.end():]
                parts = (ThinkingPart(match.group(2).strip()),) + ((TextPart(reply),) if reply else ())
            if not self.prompted:  # its prompt is not in the log: a stand-in, so the call can be replayed
                self.left["reply(ies) with no prompt before them in the log (its start cut, or a prompt aider did "
                          "not log): a synthetic user message stands in"] += 1
                self.items.append(Message(role="user", parts=(TextPart(NO_PROMPT),), origin="synthetic",
                                          **{**meta, "id": f"{meta['id']}:prompt"}))
                self.prompted = True
            self.waiting = len(self.items)
            self.items.append(Message(role="assistant", parts=parts, model=self.model, **meta))
        else:
            self.tool(block, meta, next_kind)
            self.command = ""

    def tool(self, block: _Block, meta: dict, next_kind: str | None) -> None:
        lines, sent = block.lines, None
        if _RUN.match(self.command) and (any(_ADDED_OUTPUT.match(line) for line in lines) or
                                         (self.command.startswith("/test") and next_kind == "assistant")):
            sent = (0, next((k for k, line in enumerate(lines) if _ADDED_OUTPUT.match(line)), len(lines)))
        ask = next((k for k, line in enumerate(lines) if _LINT_ASK.match(line)), None)
        if sent is None and ask is not None:
            start = next((k for k in range(ask - 1, -1, -1) if lines[k].startswith("# Fix any errors below")), 0)
            sent = (start, ask)
        elif sent is None and _EDIT_ERROR in lines:
            at = lines.index(_EDIT_ERROR) + 1
            at += 1 if at < len(lines) and lines[at].startswith("http") else 0
            sent = (at, len(lines))
        for line in lines:
            self.line(line, meta)
        if sent and "\n".join(lines[sent[0]:sent[1]]).strip():
            shown = lines[:sent[0]] + lines[sent[1]:]
            if shown:
                self.items.append(Message(role="user", parts=(TextPart("\n".join(shown)),), origin="meta", **meta))
            reflected, self.prompted = "\n".join(lines[sent[0]:sent[1]]).strip("\n"), True
            self.items.append(Message(role="user", parts=(TextPart(reflected),), origin="system",
                                      **{**meta, "id": f"{meta['id']}:sent"}))
            self.left["tool block(s) aider sent to the model (command output, lint or edit errors): origin "
                      "'system'"] += 1
        else:
            self.items.append(Message(role="user", parts=(TextPart("\n".join(lines)),), origin="meta", **meta))

    def line(self, line: str, meta: dict) -> None:
        """Model announcements, usage reports and the lines that say what the log lacks."""
        model = _MODEL.match(line)
        if model:
            if self.model and model.group(1) != self.model:
                self.items.append(Entry("model_change", f"{meta['id']}:model:{len(self.items)}", {"provider": None,
                                        "model": model.group(1)}, source=meta["source"]))
            self.model = model.group(1)
            self.first_model = self.first_model or self.model
        usage = report_usage(line)
        if usage is None and line.startswith("Tokens: "):  # a report aider began but the file cut short
            self.left[f"'Tokens:' report(s) that could not be read (cut short?), first at {meta['source']}: "
                      "the reply before it keeps no usage"] += 1
        if usage is not None:
            if self.waiting is None:
                self.left["usage report(s) with no reply before them (left out)"] += 1
            else:
                self.items[self.waiting] = replace(self.items[self.waiting], usage=usage)  # type: ignore[arg-type]
                self.waiting = None
        for pattern, what in _LEFT:
            if pattern.search(line):
                self.left[what] += 1
                break

    def conversation(self, extra: list[str]) -> Conversation:
        notes = [_UNKNOWN, *extra, *(f"{n} {what}" for what, n in self.left.items())]
        if any(isinstance(i, Message) and i.usage and i.usage.raw.get("rounded") for i in self.items):
            notes.append("usage from aider's rounded 'Tokens:' reports (0.1k / 1k steps)")
        return Conversation(id=self.cid, items=tuple(self.items), title=self.title, model=self.first_model,
                            notes=tuple(notes))


def _text(path: Path, strict: bool, skipped: list[str]) -> tuple[str, int | None]:
    """The file as text, and (lenient only) the line of its first byte that is not UTF-8."""
    try:
        return read_text(path), None
    except TranscriptError as err:
        if strict or "UTF-8" not in err.problem:
            raise
        skipped.append(skip_note(err) + " (undecodable bytes replaced with U+FFFD)")
        return read_bytes(path).decode("utf-8", errors="replace"), err.line


def _empty_note(stamps: list[str], where: str) -> str:
    return (f"left out {len(stamps)} empty session(s) {where}, a header and nothing else (aider started and quit): "
            + ", ".join(stamps[:3]) + (" ..." if len(stamps) > 3 else ""))


def read(path: Path, *, strict: bool = True) -> Transcript:
    """Read an aider chat log: one conversation per ``# aider chat started at`` session. Chapter 02."""
    file, skipped = path.name, []
    text, undecodable = _text(path, strict, skipped)
    lines = text.replace("\r\n", "\n").split("\n")
    starts = [(n, m.group(1)) for n, line in enumerate(lines) if (m := HEADER.match(line))]
    if not starts or any(line.strip() for line in lines[:starts[0][0]]):
        starts.insert(0, (-1, ""))
    convs, seen, empty = [], Counter(), []
    for k, (at, stamp) in enumerate(starts):
        extra = []
        if stamp:
            try:
                datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S")
            except ValueError:
                err = bad(file, at + 1, f"the session start {stamp!r} is not a date and time", field="header")
                if strict:
                    raise err from None
                skipped.append(skip_note(err))
                extra.append(skip_note(err))
        seen[stamp or "preamble"] += 1
        cid = (stamp or "preamble") + (f"#{seen[stamp or 'preamble']}" if seen[stamp or "preamble"] > 1 else "")
        if not stamp:
            extra.append("text before the first '# aider chat started at' header: the start of the log is missing")
        end = starts[k + 1][0] if k + 1 < len(starts) else len(lines)
        if undecodable is not None and at + 1 <= undecodable <= end:
            extra.append(skipped[0])
        section = _Section(cid, f"aider chat started at {stamp}" if stamp else None, file)
        found = blocks(lines[at + 1:end], at + 2)
        for j, block in enumerate(found):
            section.add(block, found[j + 1].kind if j + 1 < len(found) else None)
        if not section.items:  # aider started and quit: said on the next conversation (or the last one)
            empty.append(stamp)
            continue
        if empty:
            extra.append(_empty_note(empty, "just before this one"))
            empty = []
        convs.append(section.conversation(extra))
    if empty and convs:
        convs[-1] = replace(convs[-1], notes=convs[-1].notes + (_empty_note(empty, "after this one"),))
    return Transcript(format=NAME, file=file, conversations=tuple(convs), notes=tuple(skipped))
