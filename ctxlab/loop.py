"""Plug ctxlab into an agent loop: build each request from the session, record each response.

An agent loop alternates two steps. :class:`AgentLoop` sits between them::

    loop = AgentLoop(Session.create("run.jsonl", system=[...], tools=[...]),
                     strategy="compaction", model="claude-sonnet-4-6")
    loop.add_user("Fix the failing test.")
    while True:
        request = loop.next_request()                    # the context, as provider request bodies
        reply = call_your_model(request.anthropic_body)  # your HTTP client, not ctxlab's
        message = loop.record_response(text=..., tool_calls=[...], usage={...})
        if not message.tool_calls:
            break
        for call in message.tool_calls:
            loop.add_tool_result(call.id, run_tool(call))

Before each call the strategy decides what to send (and may append entries: a compaction, a
pruned or paged result); after it, the response and its usage are appended to the session. The
session is the record — append-only, so a crash loses at most the line being written (the loop
needs only a :class:`RunRecord`: ``ctxlab.io.session.Session`` is one). Nothing here talks to a
network: the model call is yours. ``speedup=ctxlab.fast.FAST`` builds the same requests faster
(each call then groups and counts only the new messages). Taught in chapter 08.

Because the record is append-only, what would break every later request is refused *before* it is
written (:class:`~ctxlab.base.errors.OrphanError`, the session unchanged): a tool result for no open
call (unknown, already answered, or interrupted by a user message), and a response whose call id is
still open or appears twice. An id whose earlier call was answered may be used again.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ctxlab.base import validate
from ctxlab.base.errors import CtxlabError, OrphanError
from ctxlab.bodies import reply_cap, to_anthropic_body, to_openai_body, to_responses_body
from ctxlab.context import Context
from ctxlab.interactions import Pairing
from ctxlab.messages import (
    Conversation,
    Item,
    Message,
    TextPart,
    ToolCallPart,
    Usage,
    canonical_arguments,
    tool_result,
    user,
)
from ctxlab.replay import Speedup, get_strategy
from ctxlab.strategies import Call, Decision, Strategy
from ctxlab.tables.default_model import DEFAULT_MODEL
from ctxlab.tables.profiles import ModelProfile, profile_for, with_window
from ctxlab.tables.usage_rules import uncached_part
from ctxlab.tokens import MessageMeter


class RunRecord(Protocol):
    """What an agent loop keeps its run in: an append-only record it reads the history back from.
    :class:`ctxlab.io.session.Session` is one (a JSONL file, or ``Session.in_memory()``). Chapter 08."""

    def conversation(self) -> Conversation: ...

    def append(self, item: Item) -> str: ...

    def __len__(self) -> int: ...


@dataclass(frozen=True)
class Request:
    """What to send for the next call: the context, both providers' request bodies, the strategy's notes.
    Chapter 08."""

    context: Context
    openai_body: dict[str, Any]
    anthropic_body: dict[str, Any]
    notes: tuple[str, ...]
    responses_body: dict[str, Any] = field(default_factory=dict)  # the OpenAI Responses API form


class AgentLoop:
    """Owns the session and the strategy for one agent run (one thread): builds each request, records each reply.

    ``AgentLoop(session, "compaction", model="claude-sonnet-4-6")``; ``speedup`` (``ctxlab.fast.FAST``) gives
    the same requests faster. ``max_tokens``: the reply room (tokens) every request asks for; the strategy then
    decides under the input limit ``window - max_tokens`` (Anthropic: input + ``max_tokens`` within the window, as
    ``ModelProfile.input_limit`` cites https://platform.claude.com/docs/en/build-with-claude/context-windows) and
    each body asks for all of it. Raises ValueError for an unknown strategy name, CtxlabError for a
    ``max_tokens`` above the model's ``max_output_tokens``. Chapter 08.
    """

    def __init__(self, session: RunRecord, strategy: Strategy | str = "budgeted", *, model: str | None = None,
                 provider: str | None = None, profile: ModelProfile | None = None,
                 speedup: Speedup | None = None, max_tokens: int | None = None) -> None:
        self.session = session
        self.strategy = get_strategy(strategy) if isinstance(strategy, str) else strategy
        self.model = model or session.conversation().model or DEFAULT_MODEL
        self.profile = profile or profile_for(self.model, provider)
        self.provider = provider or self.profile.provider
        limit = self.profile.input_limit(max_tokens) if max_tokens else None  # the window the strategy may fill
        self.decides_under = with_window(self.profile, limit) if limit is not None else self.profile
        self.max_tokens = max_tokens
        self.meter = speedup.meter(self.profile) if speedup else MessageMeter(self.profile)
        self.calls = 0
        self._ids = 0

    def _id(self, kind: str) -> str:
        self._ids += 1
        return f"{kind}{len(self.session) + self._ids}"

    def add_user(self, text: str) -> Message:
        """Append a user message (what the person typed). CtxlabError before anything is written when ``text`` is
        not a str."""
        _text("add_user", text)
        msg = user(text, self._id("u"))
        self.session.append(msg)
        return msg

    def add_tool_result(self, call_id: str, text: str, *, name: str | None = None, is_error: bool = False) -> Message:
        """Append the result of one tool call: ``add_tool_result("c1", "file contents")`` → the tool message.

        ``call_id`` must name an *open* call: one an assistant message made (``record_response(tool_calls=
        [("c1", ...)])``) that has no result yet and that no real user message has interrupted since. Anything
        else is refused before it is written (the session keeps its length; the next request still builds),
        with OrphanError naming the id: no call has that id; its call was already answered (a duplicate
        result); or a user message came after the call — its result would land after that message, where no
        provider accepts it, so ctxlab stubs the call instead (see ``group_units``). Chapter 08.
        """
        _text("add_tool_result", text)
        state = _call_state(self.session)
        if call_id not in state.open:
            raise OrphanError(_not_open(call_id, state))
        msg = tool_result(call_id, text, self._id("t"), name=name, is_error=is_error)
        self.session.append(msg)
        return msg

    def next_request(self) -> Request:
        """Ask the strategy what to send now; append any entries it made; return the request bodies."""
        history = self.session.conversation()
        self.calls += 1
        pending = Message(role="assistant", parts=(), id=f"pending-{self.calls}")  # the call about to be made
        call = Call("main", self.calls, pending, None, self.model, self.provider)
        decision: Decision = self.strategy.decide(history, call, self.decides_under, self.meter)
        for entry in decision.new_entries:
            self.session.append(entry)
        ctx, anthropic = decision.context, to_anthropic_body(decision.context, self.model)
        if self.max_tokens:  # the reply room left in the real window, all of max_tokens once the input fits
            anthropic["max_tokens"] = reply_cap(ctx, self.max_tokens, self.profile.context_window)
        return Request(ctx, to_openai_body(ctx, self.model), anthropic, decision.notes,
                       to_responses_body(ctx, self.model))

    def record_response(self, text: str = "", tool_calls: Sequence[tuple[str, str, Any]] = (), *,
                        usage: dict[str, int] | None = None, stop_reason: str | None = None) -> Message:
        """Append the model's reply: text, tool calls ``(id, name, arguments)``, and its usage.

        ``record_response("Reading.", [("c1", "read_file", {"path": "a.py"})], usage={...})`` → the
        assistant message; ``arguments`` is kept as the model gave it (a dict, or its JSON text — even one
        that is not an object). ``usage`` takes the provider's own fields (Anthropic ``input_tokens`` /
        ``cache_read_input_tokens`` / ``cache_creation_input_tokens`` / ``output_tokens``, or OpenAI
        ``prompt_tokens`` / ``completion_tokens`` / ``prompt_tokens_details.cached_tokens``).

        Refused before anything is written (the session keeps its length): a call id that is still open (its
        earlier call has no result yet) or that appears twice in the response — OrphanError naming it; a call
        that is not ``(id, name, arguments)`` with a non-empty str id and a str name, arguments no JSON can
        hold, or bad usage — CtxlabError. An id whose earlier call was answered, or interrupted by a user
        message, may be used again (tau-bench and SWE-agent runs do). Chapter 08.
        """
        _text("record_response", text)
        state = _call_state(self.session)
        calls: list[ToolCallPart] = []
        for k, call in enumerate(tool_calls):
            calls.append(_call_part(k, call))
            cid = calls[-1].id
            if cid in (c.id for c in calls[:-1]):
                raise OrphanError(f"record_response: tool call id {cid!r} appears twice in this response; "
                                  "each call of a response needs an id of its own")
            if cid in state.open:
                raise OrphanError(f"record_response: tool call id {cid!r} is still open ({state.open[cid].where()} "
                                  f"made it and it has no result yet); add its result first with "
                                  f"add_tool_result({cid!r}, ...), or give the new call another id")
        recorded = neutral_usage(usage) if usage else None
        parts = ([TextPart(text)] if text else []) + calls
        msg = Message(role="assistant", parts=tuple(parts), id=self._id("a"), model=self.model,
                      provider=self.provider, stop_reason=stop_reason or ("tool_use" if calls else "stop"),
                      usage=recorded)
        self.session.append(msg)
        return msg


@dataclass(frozen=True)
class _CallState:
    open: dict[str, Message]  # call id -> the assistant message waiting for its result
    answered: dict[str, Message]  # call id -> the tool message that answered its latest call
    interrupted: dict[str, Message]  # call id -> the user message that came while it was still open


def _call_state(record: RunRecord) -> _CallState:
    """The tool calls of the record's history paired as every request pairs them (``interactions.Pairing``).

    ``[U, A(c1, c2), T(c1)]`` → open ``c2``, answered ``c1``; ``[U, A(c1), U2]`` → ``c1`` interrupted by
    ``U2`` (a real user message closes the round; a system reminder rides along; meta lines are never sent).
    A stand-in that cannot read its history back (exercise 08's sink only appends) has no calls.
    """
    pairing = Pairing()
    read = getattr(record, "conversation", None)
    for msg in read().messages if read is not None else ():
        if msg.origin != "meta":
            pairing.feed(msg)
    still = {cid: m for cid, m in pairing.open_calls.items() if cid not in pairing.interrupted}
    return _CallState(still, pairing.answered, pairing.interrupted)


def _not_open(call_id: str, state: _CallState) -> str:
    """Why ``add_tool_result(call_id, ...)`` is refused, and what to do, in one line."""
    still = ", ".join(map(repr, state.open)) or "none"
    if call_id in state.interrupted:
        return (f"add_tool_result: tool call {call_id!r} was interrupted by {state.interrupted[call_id].where()}, "
                f"so its result can no longer follow it (ctxlab stubs that call as an error result; open: {still}); "
                f"record a new call with record_response(tool_calls=...) if the work is still needed")
    if call_id in state.answered:
        return (f"add_tool_result: tool call {call_id!r} was already answered by {state.answered[call_id].where()} "
                f"(open: {still}); a call takes one result — answer an open call, or record a new call with "
                f"record_response(tool_calls=...) first")
    return (f"add_tool_result: no open tool call has id {call_id!r} (open: {still}); record the assistant's call "
            f"first with record_response(tool_calls=...)")


def _text(method: str, text: Any) -> None:
    """CtxlabError naming ``method`` when ``text`` is not a str (an append-only record cannot take it back)."""
    if not isinstance(text, str):
        raise CtxlabError(f"{method}: text must be a str, got {type(text).__name__}; nothing was written")


def _call_part(k: int, call: Any) -> ToolCallPart:
    """``tool_calls[k]`` of a response as its part; CtxlabError naming it when it is not ``(id, name, arguments)``."""
    if isinstance(call, (str, bytes)) or not isinstance(call, Sequence) or len(call) != 3 \
            or not isinstance(call[0], str) or not call[0] or not isinstance(call[1], str):
        raise CtxlabError(f"record_response: tool_calls[{k}] must be (id, name, arguments) with a non-empty str id "
                          f"and a str name (got {call!r:.80})")
    try:
        return ToolCallPart(call[0], call[1], canonical_arguments(call[2]))
    except (TypeError, ValueError) as exc:
        raise CtxlabError(f"record_response: the arguments of tool call {call[0]!r} cannot be written as JSON "
                          f"({exc}); pass a dict, a list or the model's own JSON text") from None


class ContextManager(AgentLoop):
    """Deprecated: the old name of :class:`AgentLoop` (which is not a Python context manager), kept for one
    release; making one warns (DeprecationWarning). Chapter 08."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        warnings.warn("ctxlab.ContextManager is now ctxlab.AgentLoop (it is not a Python context manager); "
                      "the old name goes in the next release", DeprecationWarning, stacklevel=2)
        super().__init__(*args, **kwargs)


def neutral_usage(raw: dict[str, Any]) -> Usage:
    """A provider's usage object in neutral fields (tokens).

    ``{"input_tokens": 0, "cache_creation_input_tokens": 380, "cache_read_input_tokens": 4480}`` →
    a 4,860-token prompt (Anthropic's ``input_tokens`` excludes cached tokens); ``{"prompt_tokens":
    4990, "prompt_tokens_details": {"cached_tokens": 4736}}`` → 4,736 read + 254 uncached (OpenAI's
    ``prompt_tokens`` includes them, and from GPT-5.6 on ``cache_write_tokens`` too: "Cache-write pricing is not an
    additive fee", OpenAI prompt-caching guide, read 2026-12-02). Each count read is a whole number of tokens, 0 or
    more (None or missing: 0), reads plus writes at most ``prompt_tokens``; else CtxlabError naming the field.
    LiteLLM's ``cache_read_input_tokens`` / ``cache_creation_input_tokens`` beside ``prompt_tokens`` are read too,
    by the readers' rule (:func:`ctxlab.tables.usage_rules.uncached_part`); so is the Responses API's
    ``input_tokens_details`` (``cached_tokens``, ``cache_write_tokens``, both inside ``input_tokens``).
    Chapter 08.
    """
    if not isinstance(raw, dict):
        raise CtxlabError(f"usage must be a dict of the provider's token fields (got {type(raw).__name__})")

    def count(key: str, within: dict[str, Any] = raw, at: str = "usage") -> int:
        return validate.tokens(f"{at}[{key!r}]", within.get(key), allow_zero=True) or 0

    chat, responses = "prompt_tokens" in raw, isinstance(raw.get("input_tokens_details"), dict)
    if chat or responses:  # OpenAI's shapes (Chat Completions, Responses), or LiteLLM's Anthropic counts beside them
        whole, part, out = ("prompt_tokens", "prompt_tokens_details", "completion_tokens") if chat else \
            ("input_tokens", "input_tokens_details", "output_tokens")
        details = raw.get(part) if isinstance(raw.get(part), dict) else {}
        at, litellm = f"usage[{part!r}]", raw.get("cache_creation_input_tokens") is not None
        cached = count("cache_read_input_tokens") if raw.get("cache_read_input_tokens") is not None else \
            count("cached_tokens", details, at)
        written = count("cache_creation_input_tokens") if litellm else count("cache_write_tokens", details, at)
        prompt = count(whole)
        uncached = uncached_part(prompt, cached, written,
                                 write_may_be_outside=litellm and details.get("cache_creation_tokens") is None)
        if uncached is None:
            raise CtxlabError(f"{at} cached_tokens + cache_write_tokens ({cached + written:,}) must be at most "
                              f"usage[{whole!r}] ({prompt:,}): OpenAI counts both inside it")
        return Usage(uncached_input_tokens=uncached, cache_read_tokens=cached, cache_write_tokens=written,
                     output_tokens=count(out), raw=dict(raw))
    return Usage(uncached_input_tokens=count("input_tokens"), cache_read_tokens=count("cache_read_input_tokens"),
                 cache_write_tokens=count("cache_creation_input_tokens"), output_tokens=count("output_tokens"),
                 raw=json.loads(json.dumps(raw)))
