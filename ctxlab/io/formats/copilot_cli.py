"""Reader for GitHub Copilot CLI session logs (``~/.copilot/session-state/<session id>/events.jsonl``).

Each line is one session event ``{"type", "data", "id", "timestamp", "parentId"}`` (``agentId`` on a
sub-agent's events, ``ephemeral`` on events never written to disk). The CLI is not open source; the
event shapes come from the schema it publishes, as generated into github/copilot-sdk
``nodejs/src/generated/session-events.ts`` (commit cc0438d, 2026-08-21, and the first one, 088fc1c,
2026-01-14, for older field names), checked against Mai0313/VibeCodingTracker
``src/core/src/session/copilot.rs`` (commit 7acc4bc) and empathic/toolpath
``docs/agents/formats/copilot-cli/events.md`` (commit 10992b3), all read 2026-12-01. GitHub's docs
(github/docs ``content/copilot/reference/copilot-cli-reference/cli-config-dir-reference.md``) put the
directory at ``~/.copilot`` on every OS (``%USERPROFILE%\\.copilot`` on Windows), moved by ``COPILOT_HOME``.

* ``system.message`` (role ``system`` or ``developer``) → ``Conversation.system``. Copilot writes it
  again at each interaction: an unchanged copy is counted in the notes, a changed one becomes a
  ``user`` message with ``origin="system"``;
* ``user.message`` → ``user``; its text is ``transformedContent`` (what the model got: the date and
  reminders added) when present, else ``content``. A message with no typed ``content``, one marked
  ``isAutopilotContinuation`` or one with a ``source`` (a skill, another agent) gets ``origin="system"``;
  ``blob`` image attachments become ImageParts;
* ``assistant.message`` → ``assistant``: ``reasoningText`` (ThinkingPart, ``reasoningOpaque`` as its
  signature; an encrypted blob alone is a redacted ThinkingPart), ``content``, then one ToolCallPart per
  ``toolRequests`` entry. The chunks of one model call (same ``apiCallId``) are merged;
* ``tool.execution_complete`` → ``tool`` answering ``toolCallId`` (name from its request or
  ``tool.execution_start``): ``result.content`` (the text sent to the model; ``detailedContent`` is
  the UI's fuller view), images in ``result.binaryResultsForLlm``, or ``error.message`` with
  ``is_error`` when ``success`` is false. A tool the user ran (``tool.user_requested``,
  ``isUserRequested``) is a ``user`` message with ``origin="shell"``; an execution no assistant message
  asked for is kept with ``origin="meta"``;
* ``session.model_change`` / ``session.start.selectedModel`` / ``assistant.turn_start.model`` → the
  model; a change is a ``model_change`` entry, a new ``reasoningEffort`` a ``thinking_level_change``;
* ``session.compaction_complete`` → a ``compaction`` entry (``summaryContent``, ``preCompactionTokens``;
  ``first_kept_id=None``); ``session.context_cleared`` (``/clear``) starts a new conversation;
* sub-agent events (``agentId``, or the older ``parentToolCallId``) → thread ``subagent-N``.

Usage: per-call usage is the ``assistant.usage`` event, which the schema marks ephemeral (not written
to disk); when a file holds one it goes on its call's message (``inputTokens`` is the whole prompt, the
cache reads and writes inside it, as the per-model totals show). Otherwise each ``assistant.message``
keeps its ``outputTokens`` alone (prompt tokens 0: fidelity skips such calls). ``session.shutdown``
totals per model are quoted in the notes; its ``toolDefinitionsTokens`` (Copilot's own count of the
tool definitions, which the log does not hold) becomes ``inferred_head_tokens``. The provider is not
recorded (Copilot's API fronts every vendor): left ``None``, ctxlab's rules go by the model name.

Simplified on purpose: ``parentId`` chains are read in line order; truncations, aborts, hooks,
permissions and the other bookkeeping events are counted in the notes. Plumbing for chapter 02.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from ctxlab.base.errors import TranscriptError
from ctxlab.messages import (Conversation, Entry, Item, Message, Part, SourceRef, TextPart, ThinkingPart,
                        ToolCallPart, Transcript, Usage, canonical_arguments)
from ctxlab.io.formats import bad, check, head_objects, iter_jsonl, skip_note
from ctxlab.io.formats import copilot_events as E

NAME = "copilot-cli"


def sniff(path: Path, head: str) -> bool:
    """An ``events.jsonl``: its first event has a dotted ``type``, a ``data`` object and ``parentId``."""
    objs = head_objects(head, 3)
    if objs:
        first = objs[0]
        kind = first.get("type")
        return (isinstance(kind, str) and kind.startswith(E.PREFIXES) and isinstance(first.get("data"), dict)
                and "parentId" in first and "timestamp" in first)
    return re.match(r'\{\s*"type"\s*:\s*"session\.start"\s*,\s*"data"\s*:', head.lstrip()) is not None


class _Reader:
    """The state of one file being read: conversations so far and the one being filled."""

    def __init__(self, file: str, conv_id: str) -> None:
        self.file, self.conv_id, self.done = file, conv_id, []
        self.items: list[Item] = []
        self.system: list[str] = []
        self.model: str | None = None
        self.first_model: str | None = None
        self.effort: str | None = None
        self.threads: dict[str, str] = {}
        self.calls: dict[str, str] = {}  # requested call id -> tool name
        self.starts: dict[str, E.Start] = {}
        self.by_user: set[str] = set()
        self.answered: set[str] = set()
        self.left_out: Counter[str] = Counter()
        self.first_unknown: dict[str, int] = {}  # an event type this reader does not know -> its first line
        self.head_tokens: int | None = None
        self.notes: list[str] = []

    def thread(self, ev: E.Event) -> str:
        key = ev.agentId or ev.data.get("parentToolCallId")
        if not isinstance(key, str) or not key:
            return "main"
        return self.threads.setdefault(key, f"subagent-{len(self.threads) + 1}")

    def set_model(self, model: Any, ev: E.Event, line: int) -> None:
        model = model if isinstance(model, str) and model else None
        if model and self.model and model != self.model:
            self.items.append(Entry("model_change", f"{ev.id or f'{self.conv_id}:{line}'}:model", {"provider": None,
                                    "model": model}, ev.timestamp, self.thread(ev), SourceRef(self.file, line)))
        self.model = model or self.model
        self.first_model = self.first_model or self.model

    def last_assistant(self, thread: str) -> int | None:
        return next((k for k in range(len(self.items) - 1, -1, -1) if isinstance(self.items[k], Message)
                     and self.items[k].role == "assistant" and self.items[k].thread == thread), None)

    def event(self, ev: E.Event, line: int) -> None:
        kind, d, thread = ev.type, ev.data, self.thread(ev)
        meta: dict[str, Any] = dict(id=ev.id or f"{self.conv_id}:{line}", timestamp=ev.timestamp, thread=thread,
                                    source=SourceRef(self.file, line))
        model = E.MODELS.get(kind)
        if model is None and kind not in E.BOOKKEEPING and isinstance(d, dict) and (
                {"toolRequests", "messageId"} & d.keys() or "transformedContent" in d):
            raise bad(self.file, line, f"unknown event type {kind!r} on an event that holds a message "
                                       "(Copilot writes user.message and assistant.message for those)", field="type")
        rec = check(model, d, file=self.file, line=line, at="data") if model else None
        if kind == "session.start":
            self.conv_id = str(d.get("sessionId") or self.conv_id)
            self.set_model(d.get("selectedModel"), ev, line)
        elif kind in ("session.model_change", "assistant.turn_start"):
            self.set_model(d.get("newModel") or d.get("model"), ev, line)
            effort = d.get("reasoningEffort")
            if kind == "session.model_change" and isinstance(effort, str) and effort != self.effort:
                if self.effort is not None:
                    self.items.append(Entry("thinking_level_change", f"{meta['id']}:thinking", {"level": effort},
                                            ev.timestamp, thread, meta["source"]))
                self.effort = effort
            if kind == "assistant.turn_start":
                self.left_out[f"'{kind}' event(s) left out: not part of the model's context"] += 1
        elif kind == "system.message":
            text = d.get("content")
            if not isinstance(text, str):
                raise bad(self.file, line, "expected a string", field="data.content")
            if not any(isinstance(i, Message) for i in self.items) and text not in self.system:
                self.system.append(text)
            elif text in self.system:
                self.left_out["system.message event(s) repeating the system prompt unchanged (Copilot re-sends it): "
                              "not added again"] += 1
            else:
                self.items.append(Message(role="user", parts=(TextPart(text),), origin="system", **meta))
                self.notes.append(f"line {line}: a changed system prompt is kept as a user message with origin "
                                  "'system'")
        elif kind == "user.message":
            u: E.User = rec  # type: ignore[assignment]
            parts: list[Part] = E.images([a for a in u.attachments or [] if a.get("type") == "blob"], self.left_out,
                                        "blob attachment")
            for a in u.attachments or []:
                if a.get("type") != "blob":
                    self.left_out[f"'{a.get('type')}' attachment(s): their content is in transformedContent if "
                                  "Copilot sent it"] += 1
            text = u.transformedContent if u.transformedContent is not None else u.content
            made = not u.content.strip() or bool(u.isAutopilotContinuation) or bool(u.source)
            self.items.append(Message(role="user", parts=(TextPart(text), *parts), origin="system" if made else None,
                                      **meta))
        elif kind == "assistant.message":
            self.assistant(rec, meta)  # type: ignore[arg-type]
        elif kind in ("tool.execution_start", "tool.user_requested"):
            self.starts[rec.toolCallId] = rec  # type: ignore[union-attr]
            if kind == "tool.user_requested":
                self.by_user.add(rec.toolCallId)  # type: ignore[union-attr]
        elif kind == "tool.execution_complete":
            self.result(rec, meta)  # type: ignore[arg-type]
        elif kind == "assistant.usage":
            self.call_usage(rec, d, thread)  # type: ignore[arg-type]
        elif kind == "session.compaction_complete":
            c: E.Compaction = rec  # type: ignore[assignment]
            if c.success:
                data = {"summary": c.summaryContent or "", "first_kept_id": None,
                        "tokens_before": c.preCompactionTokens, "origin": "recorded"}
                self.items.append(Entry("compaction", meta["id"], data, ev.timestamp, thread, meta["source"]))
            else:
                self.left_out["failed compaction(s) (session.compaction_complete, success false): nothing changed"] += 1
            self.head_tokens = d.get("toolDefinitionsTokens") if isinstance(d.get("toolDefinitionsTokens"), int) \
                else self.head_tokens
        elif kind == "session.context_cleared":
            self.finish()
            self.conv_id = f"{self.done[0].id}:{len(self.done)}"
        elif kind == "session.shutdown":
            self.shutdown(d, line)
        else:
            why = "ephemeral" if ev.ephemeral else ("not part of the model's context" if kind in E.BOOKKEEPING
                                                    else "a type this reader does not know")
            if why.startswith("a type"):  # say where, so a misspelt type can be found
                why += f" (first at line {self.first_unknown.setdefault(kind, line)})"
            self.left_out[f"'{kind}' event(s) left out: {why}"] += 1

    def assistant(self, a: E.Assistant, meta: dict[str, Any]) -> None:
        parts: list[Part] = []
        if a.reasoningText:
            parts.append(ThinkingPart(a.reasoningText, a.reasoningOpaque))
        elif a.reasoningOpaque or a.encryptedContent:
            parts.append(ThinkingPart("", a.reasoningOpaque or a.encryptedContent, redacted=True))
        if a.content:
            parts.append(TextPart(a.content))
        for r in a.toolRequests or []:
            args = canonical_arguments({} if r.arguments is None else r.arguments)
            parts.append(ToolCallPart(r.toolCallId, r.name, args))
            self.calls[r.toolCallId] = r.name
        usage = Usage(output_tokens=a.outputTokens, raw={"outputTokens": a.outputTokens}) \
            if a.outputTokens is not None else None
        rid = a.apiCallId or a.requestId
        last = self.items[-1] if self.items else None
        if a.apiCallId and isinstance(last, Message) and last.role == "assistant" and last.response_id == a.apiCallId:
            self.items[-1] = replace(last, parts=last.parts + tuple(parts), usage=usage or last.usage)
            return
        self.items.append(Message(role="assistant", parts=tuple(parts), response_id=rid, model=a.model or self.model,
                                  usage=usage, **meta))

    def result(self, c: E.Complete, meta: dict[str, Any]) -> None:
        res = c.result or {}
        text = str(res.get("content") or "") if c.success or not c.error else str(c.error.get("message") or "")
        if res.get("detailedContent") not in (None, "", res.get("content")):
            self.left_out["tool result(s) with a detailedContent (the UI's fuller view): the model got result.content, "
                          "kept"] += 1
        start = self.starts.get(c.toolCallId)
        name = self.calls.get(c.toolCallId) or (start.toolName if start else None)
        images = E.images(res.get("binaryResultsForLlm"), self.left_out, "binary tool result")
        if c.toolCallId in self.calls and c.toolCallId not in self.answered:
            self.answered.add(c.toolCallId)
            self.items.append(Message(role="tool", parts=(TextPart(text), *images), tool_call_id=c.toolCallId,
                                      tool_name=name, is_error=not c.success, **meta))
            return
        args = canonical_arguments(start.arguments if start and start.arguments is not None else {})
        shell = c.isUserRequested or c.toolCallId in self.by_user
        self.items.append(Message(role="user", parts=(TextPart(f"{name} {args}\n{text}"), *images),
                                  origin="shell" if shell else "meta", **meta))
        if not shell:
            self.left_out["tool execution(s) no assistant.message requested: kept with origin 'meta'"] += 1

    def call_usage(self, u: E.CallUsage, raw: dict[str, Any], thread: str) -> None:
        k = next((k for k in range(len(self.items) - 1, -1, -1) if isinstance(self.items[k], Message)
                  and self.items[k].response_id == u.apiCallId), None) if u.apiCallId else None
        k = k if k is not None else self.last_assistant(thread)
        if k is None:
            self.left_out["assistant.usage event(s) with no assistant message before them: left out"] += 1
            return
        msg = self.items[k]
        stop = E.STOP.get(u.finishReason or "", u.finishReason)
        self.items[k] = replace(msg, usage=E.call_usage(u, raw), model=u.model or msg.model,  # type: ignore[arg-type]
                                stop_reason=stop)

    def shutdown(self, d: dict[str, Any], line: int) -> None:
        metrics = d.get("modelMetrics") if isinstance(d.get("modelMetrics"), dict) else {}
        for model, metric in metrics.items():
            metric = metric if isinstance(metric, dict) else {}
            t = check(E.Totals, metric.get("usage") or {}, file=self.file, line=line,
                      at=f"data.modelMetrics.{model}.usage")
            requests = metric.get("requests")
            calls = requests.get("count") if isinstance(requests, dict) else None
            self.notes.append(f"line {line}: session.shutdown totals for {model} ({calls} requests): {t.inputTokens:,} "
                              f"input ({t.cacheReadTokens:,} cache read, {t.cacheWriteTokens:,} cache write), "
                              f"{t.outputTokens:,} output ({t.reasoningTokens:,} reasoning) tokens; not per call, "
                              "so not on any message")
        if isinstance(d.get("toolDefinitionsTokens"), int):
            self.head_tokens = d["toolDefinitionsTokens"]

    def finish(self) -> None:
        notes = list(self.notes)
        if self.head_tokens:
            notes.append(f"tool definitions not recorded; Copilot counted {self.head_tokens:,} tokens of them: kept "
                         "as the inferred static head")
        only_output = sum(1 for i in self.items
                          if isinstance(i, Message) and i.usage and "inputTokens" not in i.usage.raw)
        if only_output:
            notes.append(f"{only_output} assistant message(s) record only outputTokens: their prompt tokens are not in "
                         "the file (assistant.usage events are ephemeral)")
        unanswered = [cid for cid in self.calls if cid not in self.answered]
        if unanswered:
            notes.append(f"{len(unanswered)} tool call(s) never completed in this file")
        notes += [f"{n} {k}" for k, n in self.left_out.items()]
        self.done.append(Conversation(id=self.conv_id, items=tuple(self.items), system=tuple(self.system),
                                      model=self.first_model, notes=tuple(notes),
                                      inferred_head_tokens=self.head_tokens or None))
        self.items, self.calls, self.answered, self.left_out, self.notes = [], {}, set(), Counter(), []
        self.first_model = self.model


def read(path: Path, *, strict: bool = True) -> Transcript:
    """Read an ``events.jsonl``: one conversation, a new one after each ``/clear``. Chapter 02."""
    file, skipped = path.name, []
    conv_id = path.parent.name if path.name == "events.jsonl" else path.stem
    reader = _Reader(file, conv_id)
    seen = 0  # skip notes already copied to the conversation being read
    for line, _, obj in iter_jsonl(path, strict=strict, notes=skipped, once=True):
        try:
            reader.event(check(E.Event, obj, file=file, line=line), line)
        except TranscriptError as err:
            if strict:
                raise
            skipped.append(skip_note(err))
        reader.notes += skipped[seen:]
        seen = len(skipped)
    reader.notes += skipped[seen:]
    reader.finish()
    return Transcript(format=NAME, file=file, conversations=tuple(reader.done), notes=tuple(skipped))
