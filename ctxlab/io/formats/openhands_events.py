"""Reader for OpenHands event streams outside evaluation output: V0 saved trajectories and V1 (SDK) event logs.

Two forms, one format name (``openhands-events``):

* **V0 trajectory** — a bare JSON list of events, as OpenHands (All-Hands-AI/OpenHands) saves and
  replays it: the GUI's "download trajectory" (``frontend/src/utils/download-trajectory.ts`` writes
  the ``trajectory`` list of ``GET /api/conversations/{id}/trajectory``, ``openhands/server/routes/
  trajectory.py``, as ``trajectory-{conversation_id}.json``), and headless runs' ``save_trajectory_path``
  (``openhands/core/main.py``: ``{sid}.json``, ``State.get_trajectory`` = the agent's history, so no
  agent-state or null events). ``replay_trajectory_path`` / ``ReplayManager.get_replay_events``
  (``openhands/controller/replay.py``) load the same list. The API answer itself,
  ``{"trajectory": [...]}``, is read too. Each event is serialised by ``event_to_trajectory``
  (``openhands/events/serialization/event.py``: ``event_to_dict`` minus browser DOM and screenshots)
  and mapped by :func:`.openhands_memory.map_events`, the mapping the evaluation-output reader
  (:mod:`.openhands`) uses. Message ids are the event ids; each item's line is its event's line.
  Recall observations count as sent (``origin="system"``): a trajectory does not record
  ``enable_prompt_extensions``, whose default is true (``openhands/core/config/agent_config.py``).
  Usage: each agent action's ``tool_call_metadata.model_response`` is litellm's whole response;
  its ``usage`` goes on the assistant message of that response id
  (:func:`.openhands.response_usage`), and its ``model`` is the message's model. The
  ``llm_metrics`` some actions carry (``AgentController._prepare_metrics_for_frontend``) are
  running totals of the conversation, not a call's usage: counted in the notes, not mapped.
* **V1 event log** — ``kind``-discriminated events (OpenHands/software-agent-sdk), as JSON Lines, a
  JSON list (the SDK's ``events/event-*.json`` files joined: ``jq -s . events/event-*.json``), the
  agent server's ``EventPage`` (``{"items": [...], "next_page_id"}``, ``GET
  /api/conversations/{id}/events/search``) or the OpenHands CLI's export (OpenHands/OpenHands-CLI
  ``openhands_cli/conversations/exporter.py``: ``{"conversation_id", "title", ..., "events": [...]}``,
  keys sorted; id and title kept): read by :mod:`.openhands_v1` (its docstring says how).

Source: All-Hands-AI/OpenHands at 156d0686c46aafb0fa9d291da6421fb6f64dddc0 (2025-11-28) and
OpenHands/software-agent-sdk at 611629e6999ad398dc49c761721eefe18d5e6bd9 (2026-08-22), both read
2026-12-01.

Simplified on purpose: a V0 conversation's file store (``~/.openhands/sessions/{sid}/events/{id}.json``,
one event per file, ``openhands/storage/locations.py``) is one file per event, not read as a whole:
join it first (``jq -s 'sort_by(.id)' events/*.json > trajectory.json``); an ``event_cache`` page
(a list of 25 events) reads as a trajectory of those events only. See :mod:`.openhands_memory` for
the mapping's own simplifications. Plumbing for chapter 02.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator

from ctxlab.base.errors import TranscriptError
from ctxlab.messages import Conversation, Item, Message, Transcript, Usage
from ctxlab.io.formats import bad, load_json, read_bytes, skip_note
from ctxlab.io.formats import openhands_v1
from ctxlab.io.formats.openhands import response_usage
from ctxlab.io.formats.openhands_memory import map_events

NAME = "openhands-events"
# event_to_dict writes id, timestamp, source first (TOP_KEYS); a list of such objects is a trajectory
_V0_HEAD = re.compile(r'\s*(\{\s*"trajectory"\s*:\s*)?\[\s*\{\s*(?:"id"\s*:\s*\d+\s*,\s*)?'
                      r'(?:"timestamp"\s*:\s*"[^"]*"\s*,\s*)?"source"\s*:\s*"(?:agent|user|environment)"\s*,')


EXPECTS = ('OpenHands events: a saved trajectory (a JSON list of {"id", "timestamp", "source", "action" | '
           '"observation"}) or V1 SDK events ({"id", "timestamp", "source", ..., "kind"} per line, or a list of them)')
EXPECT_KEYS = ("kind", "source", "action", "observation", "tool_call_metadata", "llm_response_id", "trajectory")
_WRAPPERS = ("trajectory", "items", "events")  # the API's trajectory, the agent server's page, the CLI's export
_LISTED = re.compile(r'"(?:trajectory|items|events)"\s*:\s*\[\s*')


def sniff(path: Path, head: str) -> bool:
    """A JSON list of V0 events (``[{"id": 0, "timestamp": ..., "source": ...``), a V1 event log, or
    a JSON document whose first event (parsed from the head, in any key order) is an OpenHands event."""
    if _V0_HEAD.match(head) is not None or openhands_v1.sniff(head):
        return True
    at = re.match(r"\s*\[\s*", head) or (re.match(r"\s*\{", head) and _LISTED.search(head))
    try:
        first, _ = json.JSONDecoder().raw_decode(head, at.end()) if at else (None, 0)
    except (ValueError, RecursionError):  # the first event goes on past the head
        return False
    return _is_event(first)


def sniff_value(path: Path, value: Any) -> bool:
    """The second look at a whole JSON document: a list, or a ``trajectory`` / ``items`` / ``events``
    list, whose first element is an OpenHands event."""
    if isinstance(value, dict):
        value = next((value[k] for k in _WRAPPERS if isinstance(value.get(k), list)), None)
    return isinstance(value, list) and bool(value) and _is_event(value[0])


def _is_event(obj: Any) -> bool:
    """A V0 event (an int ``id``, ``source``, ``action`` | ``observation``) or a V1 one (a str ``id``, a ``kind``)."""
    if not isinstance(obj, dict) or obj.get("source") not in ("agent", "user", "environment", "hook"):
        return False
    v0 = isinstance(obj.get("id"), int) and ("action" in obj or "observation" in obj)
    return v0 or (isinstance(obj.get("id"), str) and obj.get("kind") in openhands_v1.KINDS)


def read(path: Path, *, strict: bool = True) -> Transcript:
    """Read a V0 trajectory, a V1 event log (JSON Lines), or a JSON list (or page, or export) of V1 events."""
    start = read_bytes(path).lstrip()[:64]
    document = start.startswith(b"[") or re.match(rb'\{\s*("(trajectory|items|conversation_id)"\s*:|\n)', start)
    if not document:  # JSON Lines: one compact object per line
        return openhands_v1.read(path, strict=strict, name=NAME)
    data, line_of = load_json(path)
    at = next((k for k in _WRAPPERS if isinstance(data.get(k), list)), "") if isinstance(data, dict) else ""
    events = data.get(at) if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise bad(path.name, line_of(data) or 1, "expected a JSON list of OpenHands events (or one under "
                  "'trajectory', 'items' or 'events')", field=at or None)
    if events and isinstance(events[0], dict) and isinstance(events[0].get("id"), str):  # V1: string ids
        said = data if isinstance(data, dict) else {}
        rows = lambda strict_, notes: _rows(path, events, line_of, at, strict=strict_, notes=notes)  # noqa: E731
        transcript = openhands_v1.read(path, strict=strict, name=NAME, rows=rows,
                                       conv_id=str(said.get("conversation_id") or "") or None,
                                       title=said.get("title") if isinstance(said.get("title"), str) else None)
        if isinstance(data, dict) and data.get("next_page_id"):
            conv = transcript.conversations[0]
            more = "one page of the conversation's events (next_page_id is set): later events are not in the file"
            transcript = replace(transcript, conversations=(replace(conv, notes=conv.notes + (more,)),))
        return transcript
    return _trajectory(path, events, line_of, at, strict=strict)


def _rows(path: Path, events: list[Any], line_of: Callable[[Any], int | None], at: str, *, strict: bool,
          notes: list[str]) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(line, index, event) of each V1 event of a JSON list, as :func:`~ctxlab.io.formats.iter_jsonl` yields them."""
    line = 1
    for k, obj in enumerate(events):
        line = line_of(obj) or line  # a non-object has no line of its own: the one before it
        if isinstance(obj, dict):
            yield line, k, obj
            continue
        err = bad(path.name, line, f"expected an event object, got {type(obj).__name__}", field=f"{at}[{k}]")
        if strict:
            raise err
        notes.append(skip_note(err))


def _trajectory(path: Path, events: list[Any], line_of: Callable[[Any], int | None], at: str, *,
                strict: bool) -> Transcript:
    file, skipped = path.name, []
    last = [1]

    def event_line(raw: Any) -> int:  # a non-object event has no line of its own: the one before it
        last[0] = line_of(raw) or last[0]
        return last[0]

    got = map_events(events, ids="", file=file, line_of=event_line, at=at, model=None, sent=True, strict=strict,
                     skipped=skipped)
    notes = got.notes
    calls, totals = _responses(events, at=at, file=file, line_of=line_of, strict=strict, notes=notes)
    items, model = _attach(got.items, calls, notes)
    notes += got.tail
    if got.sent_recalls:
        notes.append(f"{got.sent_recalls} recall observation(s) kept as sent (origin 'system'): a trajectory does "
                     "not record enable_prompt_extensions, which is on by default")
    sent = [m for m in items if isinstance(m, Message) and m.origin != "meta"]
    if sent and sent[0].role != "user":
        notes.append(f"the trajectory starts mid-conversation: its first message is {sent[0].role!r}")
    if totals:
        notes.append(f"{totals} event(s) carry llm_metrics (running totals of the conversation): not mapped, "
                     "each model response's own usage is")
    conv = Conversation(id=path.stem, items=tuple(items), system=tuple(got.system), tools=got.tools, model=model,
                        notes=tuple(notes))
    return Transcript(format=NAME, file=file, conversations=(conv,), notes=tuple(skipped))


def _responses(events: list[Any], *, at: str, file: str, line_of: Callable[[Any], int | None], strict: bool,
               notes: list[str]) -> tuple[dict[str, tuple[Usage | None, str | None]], int]:
    """Response id → (its usage, its model), from the actions' ``tool_call_metadata.model_response``;
    and how many events carry ``llm_metrics``."""
    calls: dict[str, tuple[Usage | None, str | None]] = {}
    totals = 0
    for k, raw in enumerate(events):
        if not isinstance(raw, dict):
            continue
        totals += "llm_metrics" in raw
        tcm = raw.get("tool_call_metadata")
        response = tcm.get("model_response") if isinstance(tcm, dict) else None
        if not isinstance(response, dict) or not isinstance(response.get("id"), str) or response["id"] in calls:
            continue
        used = None
        if response.get("usage") is not None:
            try:
                used = response_usage(response["usage"], file=file, line=line_of(raw),
                                      at=f"{at}[{k}].tool_call_metadata.model_response.usage")
            except TranscriptError as err:
                if strict:
                    raise
                notes.append(skip_note(err))
        model = response.get("model")
        calls[response["id"]] = (used, model if isinstance(model, str) else None)
    return calls, totals


def _attach(items: list[Item], calls: dict[str, tuple[Usage | None, str | None]],
            notes: list[str]) -> tuple[list[Item], str | None]:
    """Each response's usage and model on the (first) assistant message of that response id; the
    first response's model on the other assistant messages (a trajectory names no model of its own)."""
    out, done = [], set()
    model = next((said_by for _, said_by in calls.values() if said_by), None)
    for item in items:
        if isinstance(item, Message) and item.role == "assistant":
            used, said_by = calls.get(str(item.response_id), (None, None))
            first = item.response_id not in done
            done.add(item.response_id)
            item = replace(item, model=said_by or item.model or model, usage=used if first else None)
        out.append(item)
    unused = [rid for rid, (used, _) in calls.items() if used is not None and rid not in done]
    if unused:
        notes.append(f"{len(unused)} model response(s) with usage match no assistant message")
    missing = sum(used is None for rid, (used, _) in calls.items() if rid in done)
    if missing:
        notes.append(f"{missing} model response(s) record no usage")
    return out, model
