"""Plug ctxlab into an agent loop: build each request from the session, record each response.

An agent loop alternates two steps. :class:`AgentLoop` sits between them::

    loop = AgentLoop(Session.create("run.jsonl", system=[...], tools=[...]),
                     strategy="compaction", model="claude-sonnet-4-5")
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
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from typing import Any, Protocol, Sequence

from ctxlab.base import validate
from ctxlab.base.errors import CtxlabError
from ctxlab.context import Context
from ctxlab.messages import (Conversation, Item, Message, TextPart, ToolCallPart, Usage, canonical_arguments,
                             tool_result, user)
from ctxlab.render import to_anthropic_body, to_openai_body
from ctxlab.replay import Speedup, get_strategy
from ctxlab.strategies import Call, Decision, Strategy
from ctxlab.tables.profiles import ModelProfile, profile_for
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


class AgentLoop:
    """Owns the session and the strategy for one agent run (one thread): builds each request, records each reply.

    ``AgentLoop(session, "compaction", model="claude-sonnet-4-5")``; ``speedup`` (``ctxlab.fast.FAST``) gives
    the same requests faster. Raises ValueError for an unknown strategy name. Chapter 08.
    """

    def __init__(self, session: RunRecord, strategy: Strategy | str = "budgeted", *, model: str | None = None,
                 provider: str | None = None, profile: ModelProfile | None = None,
                 speedup: Speedup | None = None) -> None:
        self.session = session
        self.strategy = get_strategy(strategy) if isinstance(strategy, str) else strategy
        self.model = model or session.conversation().model or "claude-sonnet-4-5"
        self.profile = profile or profile_for(self.model, provider)
        self.provider = provider or self.profile.provider
        self.meter = speedup.meter(self.profile) if speedup else MessageMeter(self.profile)
        self.calls = 0
        self._ids = 0

    def _id(self, kind: str) -> str:
        self._ids += 1
        return f"{kind}{len(self.session) + self._ids}"

    def add_user(self, text: str) -> Message:
        """Append a user message (what the person typed)."""
        msg = user(text, self._id("u"))
        self.session.append(msg)
        return msg

    def add_tool_result(self, call_id: str, text: str, *, name: str | None = None, is_error: bool = False) -> Message:
        """Append the result of one tool call."""
        msg = tool_result(call_id, text, self._id("t"), name=name, is_error=is_error)
        self.session.append(msg)
        return msg

    def next_request(self) -> Request:
        """Ask the strategy what to send now; append any entries it made; return the request bodies."""
        history = self.session.conversation()
        self.calls += 1
        pending = Message(role="assistant", parts=(), id=f"pending-{self.calls}")  # the call about to be made
        call = Call("main", self.calls, pending, None, self.model, self.provider)
        decision: Decision = self.strategy.decide(history, call, self.profile, self.meter)
        for entry in decision.new_entries:
            self.session.append(entry)
        ctx = decision.context
        return Request(ctx, to_openai_body(ctx, self.model), to_anthropic_body(ctx, self.model), decision.notes)

    def record_response(self, text: str = "", tool_calls: Sequence[tuple[str, str, Any]] = (), *,
                        usage: dict[str, int] | None = None, stop_reason: str | None = None) -> Message:
        """Append the model's reply: text, tool calls ``(id, name, arguments)``, and its usage.

        ``usage`` takes the provider's own fields (Anthropic ``input_tokens`` /
        ``cache_read_input_tokens`` / ``cache_creation_input_tokens`` / ``output_tokens``, or OpenAI
        ``prompt_tokens`` / ``completion_tokens`` / ``prompt_tokens_details.cached_tokens``).
        """
        parts = ([TextPart(text)] if text else []) + [ToolCallPart(cid, name, canonical_arguments(args))
                                                      for cid, name, args in tool_calls]
        msg = Message(role="assistant", parts=tuple(parts), id=self._id("a"), model=self.model,
                      provider=self.provider, stop_reason=stop_reason or ("tool_use" if tool_calls else "stop"),
                      usage=neutral_usage(usage) if usage else None)
        self.session.append(msg)
        return msg


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
    ``prompt_tokens`` includes them). Each count read is a whole number of tokens, 0 or more (None or
    missing: 0), and ``cached_tokens`` at most ``prompt_tokens``; else CtxlabError naming the field.
    Chapter 08.
    """
    if not isinstance(raw, dict):
        raise CtxlabError(f"usage must be a dict of the provider's token fields (got {type(raw).__name__})")

    def count(key: str, within: dict[str, Any] = raw, at: str = "usage") -> int:
        return validate.tokens(f"{at}[{key!r}]", within.get(key), allow_zero=True) or 0

    if "prompt_tokens" in raw:
        details = raw.get("prompt_tokens_details") or {}
        cached = count("cached_tokens", details if isinstance(details, dict) else {}, "usage['prompt_tokens_details']")
        prompt = count("prompt_tokens")
        if cached > prompt:
            raise CtxlabError(f"usage['prompt_tokens_details']['cached_tokens'] ({cached:,}) must be at most "
                              f"usage['prompt_tokens'] ({prompt:,}): OpenAI counts cached tokens inside the prompt")
        return Usage(uncached_input_tokens=prompt - cached, cache_read_tokens=cached,
                     output_tokens=count("completion_tokens"), raw=dict(raw))
    return Usage(uncached_input_tokens=count("input_tokens"), cache_read_tokens=count("cache_read_input_tokens"),
                 cache_write_tokens=count("cache_creation_input_tokens"), output_tokens=count("output_tokens"),
                 raw=json.loads(json.dumps(raw)))
