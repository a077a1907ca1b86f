"""Exercise 08 (chapter 08): the ``call_your_model`` adapter — a provider reply into ``record_response``.

An agent loop with ctxlab in it records every reply with
``AgentLoop.record_response(text, tool_calls, usage=..., stop_reason=...)``. The learner turns
an Anthropic Messages API response (a dict, as the HTTP client decodes it) into those keyword
arguments:

* ``text``: the ``text`` blocks joined with ``"\\n"`` (``Message.text`` joins parts the same way);
  ``thinking`` and ``redacted_thinking`` blocks are left out;
* ``tool_calls``: one ``(id, name, input)`` per ``tool_use`` block, in order;
* ``usage``: the reply's usage — all of it, ``cache_creation_input_tokens`` and
  ``cache_read_input_tokens`` included, which are missing from some replies;
* ``stop_reason``: ctxlab's normalised name — ``end_turn`` → ``stop``, ``max_tokens`` → ``length``,
  ``tool_use`` stays, any other as the reply has it (the table of ``ctxlab/io/formats/claude_code.py``).

The grade is what ``record_response`` would record: both answers are passed through its own code
(:func:`recorded`), so any answer that records the same message passes (tool calls as lists, a
usage with extra fields); a lost cache write or a wrong stop reason does not.

Cases: replies generated from a seeded ``random.Random`` — text, thinking and tool_use blocks, usage
with and without the cache fields, the nested ``cache_creation`` object and ``service_tier``.
"""

from __future__ import annotations

import json
import random
from typing import Any, Mapping

from ctxlab.loop import AgentLoop
from ctxlab.messages import Message
from ctxlab.tables.default_model import DEFAULT_MODEL, DEFAULT_PROVIDER
from ctxlab.exercises._grader import Exercise, by_size

STOP_REASONS = {"end_turn": "stop", "tool_use": "tool_use", "max_tokens": "length"}  # Anthropic -> ctxlab


def reply_to_record(reply: dict) -> dict:
    blocks = reply["content"]
    text = "\n".join(b["text"] for b in blocks if b["type"] == "text")
    tool_calls = [(b["id"], b["name"], b["input"]) for b in blocks if b["type"] == "tool_use"]
    stop = STOP_REASONS.get(reply["stop_reason"], reply["stop_reason"])
    return {"text": text, "tool_calls": tool_calls, "usage": reply["usage"], "stop_reason": stop}


class _Sink:
    """Stands in for an AgentLoop: ``record_response``'s own code runs; the message is kept, not written."""

    model, provider = DEFAULT_MODEL, DEFAULT_PROVIDER

    def __init__(self) -> None:
        self.session = self
        self.appended: list[Message] = []

    def _id(self, kind: str) -> str:
        return f"{kind}1"

    def append(self, item: Message) -> None:
        self.appended.append(item)


def recorded(kwargs: Mapping[str, Any]) -> Message:
    """The message ``AgentLoop.record_response(**kwargs)`` appends (no session file is touched)."""
    return AgentLoop.record_response(_Sink(), **kwargs)  # type: ignore[arg-type]


def same_record(expected: Mapping[str, Any], actual: Any) -> bool:
    """Agree when ``record_response`` records the same message (text, tool calls, usage, stop reason)."""
    return isinstance(actual, Mapping) and recorded(expected) == recorded(actual)


_TEXTS = ("Reading src/app/server.py next.", "Done: the tests pass.", "The port must be 8443.", "我先看一下配置。",
          "Two files changed.")
_TOOLS = (("read_file", {"path": "src/app/server.py"}), ("bash", {"command": "python -m pytest -q"}),
          ("edit_file", {"path": "config/dev.yaml", "old": "8080", "new": "8443"}), ("grep", {"pattern": "E1234"}))


def _block(rng: random.Random, kind: str, k: int) -> dict[str, Any]:
    if kind == "text":
        return {"type": "text", "text": rng.choice(_TEXTS)}
    if kind == "thinking":
        return {"type": "thinking", "thinking": "The user wants HTTPS; check the port first.", "signature": "EuYBCkQY"}
    if kind == "redacted_thinking":
        return {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}
    name, args = rng.choice(_TOOLS)
    return {"type": "tool_use", "id": f"toolu_0{k}", "name": name, "input": dict(args)}


def _usage(rng: random.Random) -> dict[str, Any]:
    usage: dict[str, Any] = {"input_tokens": rng.choice((0, 3, 12, 2_409)), "output_tokens": rng.randint(1, 400)}
    shape = rng.random()
    if shape < 0.8:  # most replies carry both cache fields; older ones neither
        usage["cache_creation_input_tokens"] = rng.choice((0, 380, 5_120))
        usage["cache_read_input_tokens"] = rng.choice((0, 4_480, 21_300))
    if shape < 0.4:  # newer replies: the write split by TTL, and the service tier
        usage["cache_creation"] = {"ephemeral_5m_input_tokens": usage["cache_creation_input_tokens"],
                                   "ephemeral_1h_input_tokens": 0}
        usage["service_tier"] = "standard"
    return usage


def _reply(content: list[dict[str, Any]], usage: dict[str, Any], stop: str, k: int) -> dict[str, Any]:
    return {"id": f"msg_01{k:04d}", "type": "message", "role": "assistant", "model": DEFAULT_MODEL,
            "content": content, "stop_reason": stop, "stop_sequence": None, "usage": usage}


def cases() -> list[tuple[dict[str, Any]]]:
    """About 130 replies, fewest blocks and shortest JSON first."""
    rng = random.Random(8)
    out = [(_reply([{"type": "text", "text": "Hi."}], {"input_tokens": 9, "output_tokens": 3}, "end_turn", 0),),
           (_reply([{"type": "text", "text": "Hi."}], {"input_tokens": 0, "cache_creation_input_tokens": 380,
                                                       "cache_read_input_tokens": 4_480, "output_tokens": 3},
                   "end_turn", 1),)]
    for k in range(2, 130):
        kinds = [rng.choice(("text", "text", "tool_use", "thinking", "redacted_thinking"))
                 for _ in range(rng.randint(0, 4))]
        content = [_block(rng, kind, i) for i, kind in enumerate(kinds)]
        calls = any(b["type"] == "tool_use" for b in content)
        stop = "tool_use" if calls else rng.choice(("end_turn", "end_turn", "max_tokens", "stop_sequence"))
        out.append((_reply(content, _usage(rng), stop, k),))
    return by_size(out, lambda c: (len(c[0]["content"]), len(json.dumps(c[0]))))


EXERCISE = Exercise(
    number=8,
    title="a recorded reply into record_response's arguments",
    function="reply_to_record",
    signature="reply_to_record(reply: dict) -> dict  # keys: text, tool_calls, usage, stop_reason",
    cases=cases,
    reference=reply_to_record,
    same=same_record,
    show_input=lambda args: json.dumps(args[0], ensure_ascii=False),
    hints=(
        "reply['content'] is a list of blocks, each with a 'type': 'text' blocks carry 'text', 'tool_use' "
        "blocks 'id', 'name' and 'input'; skip the thinking blocks. Return a dict with the keys text, "
        "tool_calls, usage and stop_reason.",
        "Pass reply['usage'] on whole: record_response reads input_tokens, cache_read_input_tokens, "
        "cache_creation_input_tokens and output_tokens itself, and a reply may lack the cache fields "
        "(a KeyError if you read them with [...]).",
        "ctxlab stores stop reasons normalised: {'end_turn': 'stop', 'tool_use': 'tool_use', 'max_tokens': "
        "'length'}; look the reply's stop_reason up there and keep it as it is when it is not in the table.",
    ),
)
