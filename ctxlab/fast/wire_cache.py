"""The bodies a checked replay shows the oracle: the same bodies, with each message rendered once.

Unlike the book's :func:`ctxlab.checks.request_bodies`, which makes every message sendable and renders every
block of every body from scratch (a tool call's arguments parsed as JSON at every call: O(calls x context) for a
replay), a :class:`BodyCache` is called like it and remembers, for one replay:

* what ``sendable`` made of the context, through :class:`~ctxlab.fast.sendable_cache.SendableCache` (the same
  messages, the new piece only);
* each **sent message's wire form** — its Messages API content blocks, its chat-completions message, its
  Responses items — made by the book's own :mod:`ctxlab.bodies` functions, memoised by the message's identity.

The bodies are then laid out as the book lays them out (consecutive same-role messages merged, the breakpoints
put on fresh copies of the last blocks), so every body is equal (``==``) to the book's. They are the oracle's
to read, never to send or change: they share their blocks with the bodies before them. The oracle itself
(``ctxlab/wire/``) still judges each whole body, exactly as sent; only the rendering is remembered.
``tests/test_wire_fast.py`` checks the bodies and the violations equal the book's on every shared transcript's
contexts and on generated ones with refused shapes. Bonus reading after chapter 08 (bodies: chapter 04).
"""

from __future__ import annotations

from typing import Any, Callable

from ctxlab.bodies import (anthropic_part, anthropic_result, anthropic_tool, openai_message, openai_tool, reply_cap,
                           responses_head, responses_items)
from ctxlab.context import Context
from ctxlab.fast.sendable_cache import SendableCache
from ctxlab.messages import Message

Body = dict[str, Any]
EPHEMERAL = {"type": "ephemeral"}


class BodyCache:
    """``cache(context)`` → ``[(API kind, body), ...]``, equal to :func:`ctxlab.checks.request_bodies`; one per
    replay (it keeps every message it rendered). Pass it as ``check_context(..., bodies=cache)``. Bonus reading
    after chapter 08."""

    def __init__(self) -> None:
        self.sendable = SendableCache()
        self._memo: dict[tuple[str, int], tuple[Message, Any]] = {}  # (form, id(message)) -> (message, its form)

    def __call__(self, context: Context) -> list[tuple[str, Body]]:
        if context.profile.provider == "anthropic":
            return [("anthropic", self.anthropic(context))]
        return [("openai-chat", self.openai(context)), ("openai-responses", self.responses(context))]

    def _form(self, form: str, msg: Message, make: Callable[[Message], Any]) -> Any:
        key = (form, id(msg))
        hit = self._memo.get(key)
        if hit is None or hit[0] is not msg:  # the message is kept with its form: its id is not reused meanwhile
            hit = self._memo[key] = (msg, make(msg))
        return hit[1]

    def anthropic(self, context: Context) -> Body:
        """:func:`ctxlab.bodies.to_anthropic_body` with its defaults (breakpoints on, ``max_tokens`` from
        :func:`~ctxlab.bodies.reply_cap`)."""
        messages: list[Body] = []
        for msg in self.sendable.messages(context.messages, "anthropic"):
            role = "user" if msg.role == "tool" else msg.role
            content = self._form("anthropic", msg, _anthropic_content)
            if messages and messages[-1]["role"] == role:
                messages[-1]["content"] += content  # a list of this body's own
            else:
                messages.append({"role": role, "content": list(content)})
        tools = [anthropic_tool(t) for t in context.tools]
        system = [{"type": "text", "text": s} for s in context.system if s.strip()]
        for section in (tools, system):
            if section:
                section[-1]["cache_control"] = dict(EPHEMERAL)
        if messages and messages[-1]["content"]:
            last = messages[-1]["content"]
            last[-1] = {**last[-1], "cache_control": dict(EPHEMERAL)}  # a copy: the remembered block stays bare
        body: Body = {"model": context.profile.name, "max_tokens": reply_cap(context, None), "messages": messages}
        if system:
            body["system"] = system
        if tools:
            body["tools"] = tools
        return body

    def openai(self, context: Context) -> Body:
        """:func:`ctxlab.bodies.to_openai_body` with its defaults."""
        messages: list[Body] = []
        if any(s.strip() for s in context.system):
            messages.append({"role": "system", "content": "\n\n".join(context.system)})
        messages += [self._form("openai", m, openai_message) for m in self.sendable.messages(context.messages,
                                                                                              "openai")]
        body: Body = {"model": context.profile.name, "messages": messages}
        if context.tools:
            body["tools"] = [openai_tool(t) for t in context.tools]
        return body

    def responses(self, context: Context) -> Body:
        """:func:`ctxlab.bodies.to_responses_body` with its defaults."""
        items = [item for m in self.sendable.messages(context.messages, "openai-responses")
                 for item in self._form("responses", m, responses_items)]
        return {"model": context.profile.name, "input": items, "store": False, **responses_head(context)}


def _anthropic_content(msg: Message) -> list[Body]:
    """One sent message's Messages API content blocks, as :func:`ctxlab.bodies.anthropic_messages` makes them."""
    return [anthropic_result(msg)] if msg.role == "tool" else [anthropic_part(p) for p in msg.parts]


__all__ = ["BodyCache"]
