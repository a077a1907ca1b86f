"""Reader for proxy request logs: every entry is ONE model call, the exact request body and its reply.

Two families (each call read by :mod:`.proxy_bodies`):

* **claude-trace** JSONL (``.claude-trace/log-YYYY-MM-DD-HH-MM-SS.jsonl`` in the directory Claude
  Code runs in): one ``RawPair`` per line, written by ``ClaudeTrafficLogger.writePairToLog`` —
  badlogic/lemmy ``apps/claude-trace/src/interceptor.ts``, ``src/types.ts`` (commit 9d46530,
  2025-08-02; the shared log was written at bb5d89d); streams rebuilt as its
  ``src/shared-conversation-processor.ts`` does. Requests other than POST ``/v1/messages`` or a
  Bedrock ``invoke`` — ``/v1/messages/count_tokens`` (logged by default), OAuth and the other
  api.anthropic.com calls (``--include-all-requests``) — are not model calls: counted in a note. An
  orphaned request (``response: null``) or an HTTP error is a call without a reply: its request is kept;
* **LiteLLM / OpenHands SDK call logs**: one JSON object per file (or JSON Lines of them) from
  ``Telemetry.log_llm_call`` / ``on_error`` (``{log_completions_folder}/{model}-{time}-{uuid}.json``,
  default ``$LOG_DIR/completions``, ``LOG_DIR`` defaulting to ``logs``) — OpenHands/software-agent-sdk
  ``openhands-sdk/openhands/sdk/llm/utils/telemetry.py``, ``llm.py``, ``logger/logger.py`` (commit
  611629e, 2026-08-22). Older logs hold OpenAI-shape ``tools`` and ``kwargs.tools``; newer ones start
  with ``context_window`` and log ToolDefinitions (no schema); with mocked function calling the prompt
  as sent is ``messages`` and the model's text ``raw_response``. LiteLLM's ``StandardLoggingPayload``
  (BerriAI/litellm ``docs/my-website/docs/proxy/logging_spec.md``) is read the same way.

Mapping: calls are grouped by head (system prompt + tools, ``cache_control`` ignored): one
:class:`~ctxlab.messages.Conversation` per head, the one with the most recorded prompt tokens first.
In it, a call whose messages extend an earlier call's messages plus that call's reply joins that
thread (``main``, ``thread-2``, ...); any other call starts one — a compaction, a ``/clear`` and an
edited history look alike in a log, so each is a new thread, said in a note. A thread's messages are
its newest request's messages plus its last reply, read by the Anthropic Messages or OpenAI chat
reader; each assistant message a logged call produced gets its usage (neutral fields, raw kept;
``cost_usd["total"]`` when logged), model, response id, time and ``source`` = its log line (earlier
replies are the versions the agent sent back). :func:`recorded_requests` gives each call's body as
recorded; :func:`ctxlab.lab.fidelity_bodies.body_fidelity` measures ctxlab's own rendering against it. A conversation whose calls
has ``inferred_head_tokens=0``: the log shows every byte of the head that was sent, so nothing is inferred.

A call whose ``tool_choice`` differs from its thread's previous call's (``"auto"`` before the first) is preceded
by a ``tool_choice_change`` entry ``{"tool_choice": "any"}`` (:func:`.proxy_bodies.choice_name`), which the replay
sends it with. Simplified on purpose: headers, ``metadata``, ``temperature``, ``max_tokens`` stay in the recorded
body only; OpenHands' Responses-API call logs are not read yet. Read 2026-12-01. Plumbing for chapter 02.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ctxlab.io.codec import loads
from ctxlab.base.errors import TranscriptError
from ctxlab.messages import Conversation, Entry, Item, Message, SourceRef, Transcript, Usage
from ctxlab.io.formats import anthropic_messages, bad, head_objects, iter_jsonl, load_json, openai_chat, read_bytes, skip_note
from ctxlab.io.formats.proxy_bodies import Call, canon, iso, litellm_call, trace_call

NAME = "proxy-log"
EXPECTS = ('claude-trace JSON Lines of {"request", "response", "logged_at"} pairs, or LiteLLM / OpenHands call logs '
           '{"messages", "response", "latency_sec"}')
EXPECT_KEYS = ("request", "response", "logged_at", "latency_sec", "kwargs", "context_window", "response_cost")
_TRACE = re.compile(r'^\{\s*"request"\s*:\s*\{\s*"timestamp"\s*:\s*[\d.eE+-]+\s*,\s*"method"\s*:\s*"\w+"\s*,\s*"url"\s*:')
_OPENHANDS = re.compile(r'^\{\s*"context_window"\s*:\s*\d+\s*,\s*"messages"\s*:\s*\[')
_LITELLM = re.compile(r'"latency_sec"\s*:\s*[\d.]|"call_type"\s*:[^{}]*"response_cost"\s*:')


def _is_trace(obj: dict[str, Any]) -> bool:
    req = obj.get("request")
    return isinstance(req, dict) and "url" in req and "method" in req and "logged_at" in obj


def sniff(path: Path, head: str) -> bool:
    """A claude-trace pair on one of the first lines, or a call log (``messages`` + LiteLLM's timing fields)."""
    text = head.lstrip()
    if _TRACE.match(text) or _OPENHANDS.match(text):
        return True
    if any(_is_trace(o) for o in head_objects(head, 3)):
        return True
    if not (text.startswith(("{", "[")) and re.search(r'"messages"\s*:\s*\[', text)):
        return False
    try:
        with path.open("rb") as fh:  # a call log's timing comes last: look at the file's tail too
            fh.seek(max(0, path.stat().st_size - len(head)))
            tail = fh.read().decode("utf-8", errors="replace")
    except OSError:
        tail = ""
    return _LITELLM.search(text) is not None or _LITELLM.search(tail) is not None


def sniff_value(path: Path, value: Any) -> bool:
    """The second look at a whole JSON document: a logged call (or a list of them)."""
    objs = (value if isinstance(value, list) else [value])[:3]
    return bool(objs) and all(isinstance(o, dict) and (_is_trace(o) or isinstance(o.get("messages"), list) and (
        "latency_sec" in o or "response_cost" in o)) for o in objs)


def _records(path: Path, strict: bool, skipped: list[str]) -> list[tuple[int, dict[str, Any]]]:
    """(line, object) per logged call: JSON Lines, or one JSON object (or a list of them) per file."""
    def an_object(raw: bytes) -> bool:
        try:
            return isinstance(loads(raw.decode("utf-8", errors="replace")), dict)
        except ValueError:
            return False

    lines = [s for s in read_bytes(path).split(b"\n", 2)[:2] if s.strip()]
    # JSON Lines when the first line is an object, or the second is (the first one damaged: iter_jsonl says so)
    if lines and (an_object(lines[0]) or len(lines) > 1 and lines[0].lstrip().startswith(b"{") and an_object(lines[1])):
        return [(n, obj) for n, _, obj in iter_jsonl(path, strict=strict, notes=skipped)]
    data, line_of = load_json(path)
    out = []
    for obj in data if isinstance(data, list) else [data]:
        if isinstance(obj, dict):
            out.append((line_of(obj) or 1, obj))
            continue
        err = bad(path.name, line_of(data) or 1, f"expected a logged call (a JSON object), got {type(obj).__name__}")
        if strict:
            raise err
        skipped.append(skip_note(err))
    return out


def _calls(path: Path, strict: bool, skipped: list[str], notes: list[str]) -> list[Call]:
    calls: list[Call] = []
    other: Counter[str] = Counter()
    for line, obj in _records(path, strict, skipped):
        try:
            found = trace_call(obj, line, path.name) if "request" in obj else litellm_call(obj, line, path.name)
        except TranscriptError as err:
            if strict:
                raise
            skipped.append(skip_note(err))
            continue
        if isinstance(found, str):
            other[found] += 1
        else:
            calls.append(found)
    if other:
        listing = ", ".join(f"{n} x {label}" for label, n in other.most_common())
        notes.append(f"left out {sum(other.values())} logged request(s) that are not model calls: {listing}")
    return calls


@dataclass
class _Thread:
    name: str
    calls: list[Call]
    keys: list[str]  # the newest call's messages, canonical (cache_control left out)
    roles: list[str]

    def extended_by(self, keys: list[str], roles: list[str]) -> int:
        """How many messages ``keys`` repeats if it extends this thread's newest call (+ its reply), else -1."""
        n = len(self.keys)
        if keys[:n] != self.keys:
            return -1
        if self.calls[-1].response is None:
            return n  # a retry of a call that got no reply
        return n + 1 if len(keys) > n and roles[n] == "assistant" else -1

    def shared(self, keys: list[str]) -> int:
        n = 0
        while n < min(len(keys), len(self.keys)) and keys[n] == self.keys[n]:
            n += 1
        return n


_WHY = {"repeat": "repeat an earlier request exactly (a retry, or a side call asked again)",
        "fork": "repeat the first messages of an earlier thread, then differ (an edited or rewound history)",
        "new": "extend no earlier request (a compaction, a /clear, a new session or a one-off side call: "
               "a log cannot tell which)"}


def _threads(calls: list[Call], notes: dict[str, list[str]]) -> dict[str, list[_Thread]]:
    """Group calls by head, then into threads: a call joins the thread whose newest call it extends most."""
    heads: dict[str, list[_Thread]] = {}
    started: dict[str, dict[str, list[str]]] = {}  # head -> why -> ["line (thread)"]
    for c in calls:
        keys = [canon(m) for m in c.messages]
        roles = [m.get("role") if isinstance(m, dict) else "" for m in c.messages]
        threads = heads.setdefault(c.head, [])
        fit, best = max(((t.extended_by(keys, roles), t) for t in threads), key=lambda f: f[0], default=(-1, None))
        if best is not None and fit >= 0:
            best.calls.append(c)
            best.keys, best.roles = keys, roles
            continue
        name = f"thread-{len(threads) + 1}" if threads else "main"
        if threads:
            near = max(threads, key=lambda t: t.shared(keys))
            same = near.shared(keys)
            why = "repeat" if same == len(keys) == len(near.keys) else ("fork" if same else "new")
            started.setdefault(c.head, {}).setdefault(why, []).append(f"{c.line} ({name})")
        threads.append(_Thread(name, [c], keys, roles))
    for head, whys in started.items():
        for why, where in whys.items():
            more = f" and {len(where) - 8} more" if len(where) > 8 else ""
            notes.setdefault(head, []).append(f"{len(where)} call(s) start a thread of their own: their requests "
                                              f"{_WHY[why]}: lines {', '.join(where[:8])}{more}")
    return heads


def _read_messages(c: Call, conv_id: str, raw: list[Any], file: str, line_of: Any, strict: bool,
                   notes: list[str]) -> Conversation:
    """A message list in the call's family → a Conversation (the Anthropic Messages or the OpenAI chat reader)."""
    kw: dict[str, Any] = dict(file=file, line_of=line_of, strict=strict, notes=notes, model=c.model, tools=c.tools)
    if c.family == "anthropic":
        return anthropic_messages.conversation(conv_id, raw, at="request.body.messages", system=c.system, **kw)
    return openai_chat.conversation(conv_id, raw, at="messages", provider=c.provider, **kw)


def _thread_items(conv_id: str, t: _Thread, file: str, strict: bool, skipped: list[str],
                  conv_notes: list[str]) -> tuple[list[Item], Conversation]:
    """The thread's messages (newest request + its reply), each stamped from the call that first sent or produced it."""
    last = t.calls[-1]
    raw = list(last.messages) + ([last.response] if last.response is not None else [])
    first_line, stamp, produced, done = [0] * len(raw), [None] * len(raw), {}, 0
    for c in t.calls:  # message i was first sent by the first call with more than i messages ...
        for i in range(done, min(len(c.messages), len(raw))):
            first_line[i], stamp[i] = c.line, iso(c.requested_at)
        done = max(done, len(c.messages))
        if c.response is not None and done == len(c.messages) < len(raw):  # ... or is the reply of a call
            produced[done], first_line[done], stamp[done] = c, c.line, iso(c.answered_at)
            done += 1
    lines = {id(obj): first_line[i] for i, obj in enumerate(raw)}
    tid = f"{conv_id}/{t.name}"
    conv = _read_messages(last, tid, raw, file, lambda obj: lines.get(id(obj)), strict, skipped)
    conv_notes += [n for n in conv.notes if n not in conv_notes]
    items: list[Item] = []
    choice = "auto"  # the tool_choice in force: a call that sends another is preceded by a tool_choice_change
    for m in conv.messages:
        i = int(m.id[len(tid) + 1:].split(":")[0])
        fields: dict[str, Any] = dict(thread=t.name, timestamp=stamp[i], source=SourceRef(file, first_line[i]))
        c = produced.get(i)
        if c is not None and m.role == "assistant" and c.tool_choice != choice:
            choice = c.tool_choice
            items.append(Entry("tool_choice_change", f"{tid}/tool_choice@{c.line}", {"tool_choice": choice},
                               iso(c.requested_at), t.name, SourceRef(file, c.line)))
        if c is not None and m.role == "assistant":
            fields.update(usage=c.usage, model=c.model, provider=c.provider, response_id=c.response_id,
                          stop_reason=c.stop_reason)
        items.append(replace(m, **fields))
    return items, conv


def _read(path: Path, strict: bool) -> tuple[Transcript, list[tuple[Call, str, str]]]:
    """The transcript, and every call (in log order) with the conversation and thread it went to."""
    skipped: list[str] = []
    file_notes: list[str] = []
    calls = _calls(path, strict, skipped, file_notes)
    if not calls:
        raise TranscriptError(path.name, None, "no logged model call found.",
                              hint="A proxy log holds request/response pairs of model calls (claude-trace, LiteLLM).")
    head_notes: dict[str, list[str]] = {}
    heads = _threads(calls, head_notes)
    weight = {h: sum(c.usage.total_input_tokens for t in ts for c in t.calls if c.usage) for h, ts in heads.items()}
    convs, placed = [], []
    for head in sorted(heads, key=lambda h: (-weight[h], heads[h][0].calls[0].line)):
        threads, first = heads[head], heads[head][0].calls[0]
        conv_id = path.stem if len(heads) == 1 else f"{path.stem}@{first.line}"
        n = sum(len(t.calls) for t in threads)
        notes = ([f"one of {len(heads)} conversations of this log (one per system prompt + tool set): {n} call(s), "
                  f"log lines {first.line}..{max(c.line for t in threads for c in t.calls)}"] if len(heads) > 1 else [])
        notes += file_notes + head_notes.get(head, [])
        items: list[Item] = []
        for t in threads:
            for c in t.calls:
                placed.append((c, conv_id, t.name))
                notes += [x for x in c.notes if x not in notes]
                if c.failure:
                    notes.append(f"line {c.line}: a call without a reply ({c.failure}): its request is kept")
            got, conv = _thread_items(conv_id, t, path.name, strict, skipped, notes)
            items += got
        earlier = sum(1 for m in items if isinstance(m, Message) and m.role == "assistant" and m.usage is None
                      and m.response_id is None)
        if earlier:
            notes.append(f"{earlier} assistant message(s) of the requests have no logged call in this conversation "
                         "(logged elsewhere: OpenHands writes a file per call; or under another system prompt or "
                         "tool set): they carry no usage")
        convs.append(Conversation(conv_id, tuple(items), system=conv.system, tools=conv.tools,
                                  model=next((c.model for t in threads for c in t.calls if c.model), None),
                                  provider=first.provider, notes=tuple(notes),
                                  inferred_head_tokens=0))  # the log holds the whole head: nothing to infer
    placed.sort(key=lambda p: p[0].line)
    return Transcript(format=NAME, file=path.name, conversations=tuple(convs), notes=tuple(skipped)), placed


def read(path: Path, *, strict: bool = True) -> Transcript:
    """A proxy log → one conversation per system prompt + tool set, its calls grouped into threads."""
    return _read(path, strict)[0]


# ---------------------------------------------------------------- the recorded bodies, and ctxlab's against them

@dataclass(frozen=True)
class RecordedRequest:
    """One logged model call: the request ``body`` exactly as recorded (``family`` gives its shape) and its reply."""

    line: int
    conversation: str
    thread: str
    family: str  # "anthropic" (Messages API) or "openai" (chat completions)
    body: dict[str, Any]
    usage: Usage | None
    model: str | None
    response_id: str | None
    failure: str | None = None  # why the call has no reply
    provider: str | None = None
    sent: Conversation | None = None  # the request read on its own: its system, tools and messages


def recorded_requests(path: str | Path, *, strict: bool = True) -> list[RecordedRequest]:
    """Every model call of a proxy log in log order with its recorded body. Chapters 02 and 04.

    ``recorded_requests("log.jsonl")[0].body["messages"]`` is the message list that call really sent;
    ``.sent`` is that request read into a Conversation (what :func:`ctxlab.lab.fidelity_bodies.body_fidelity`
    renders again and compares with ``body``).
    """
    path = Path(path)
    return [RecordedRequest(c.line, conv, thread, c.family, c.body, c.usage, c.model, c.response_id, c.failure,
                            c.provider, _read_messages(c, "request", c.messages, path.name,
                                                       lambda _, at=c.line: at, False, []))
            for c, conv, thread in _read(path, strict)[1]]
