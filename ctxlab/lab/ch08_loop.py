"""Chapter 08's second half: ctxlab inside an agent loop, driven by a fake model (no network).

Plain functions returning frozen rows: :func:`fake_llm` / :func:`fake_tool` — a stand-in model and tool;
:func:`run_fake_loop` — a dozen steps of an agent loop through :class:`~ctxlab.loop.AgentLoop`, the session file
in a folder you pick; :func:`body_shape` — a request body's keys and sizes, no content. The leaderboard half of
the chapter is :mod:`ctxlab.lab.ch08_leaderboard` (which re-exports these names).

Simplified on purpose: the fake model's usage is made up from the request's size (chars/4).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxlab.fast import FAST
from ctxlab.io.session import Session
from ctxlab.loop import AgentLoop
from ctxlab.messages import ToolSpec
from ctxlab.strategies import Strategy
from ctxlab.tables.default_model import DEFAULT_MODEL
from ctxlab.tables.profiles import profile_for, with_window

# ---- plug it into your loop ------------------------------------------------------------------------------------

SYSTEM = "You are a careful coding agent. Use the tools; answer briefly."
TASK = "Read every module under src/ and list the functions that return None. Never edit files."
TOOLS = (ToolSpec("read_file", "Read a file and return its text.",
                  {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),)


def fake_llm(body: dict[str, Any], step: int, steps: int = 12) -> dict[str, Any]:
    """A stand-in for a model API (no network): asks to read ``src/mod<step>.py`` until ``steps``, then answers.
    Its usage is made up in Anthropic's fields from the body's size (chars/4), as a real reply would carry it.
    Chapter 08."""
    size = len(json.dumps(body)) // 4
    if step < steps:
        return {"text": f"Reading src/mod{step}.py next.",
                "tool_calls": [(f"call{step}", "read_file", {"path": f"src/mod{step}.py"})],
                "usage": {"input_tokens": 3, "cache_read_input_tokens": max(0, size - 3), "output_tokens": 25}}
    return {"text": "Done: half of the handlers return None.", "tool_calls": [],
            "usage": {"input_tokens": 3, "cache_read_input_tokens": max(0, size - 3), "output_tokens": 12}}


def fake_tool(name: str, arguments: str) -> str:
    """A deterministic tool: ``read_file`` returns about 600 tokens of Python for any path. Chapter 08."""
    path = json.loads(arguments).get("path", "?")
    return f"# {path}\n" + "".join(f"def handler_{i}(request):\n    return {'None' if i % 2 else 'request.ok'}\n\n"
                                   for i in range(60))


@dataclass(frozen=True)
class LoopStep:
    """One step of chapter 08's fake loop: the request's size (tokens) and messages, whether the strategy
    compacted before it, and the session file afterwards (bytes, lines, and whether it only grew); ``max_tokens``:
    the reply room the Anthropic body asked for (tokens)."""

    step: int
    request_tokens: int
    messages: int
    compacted: bool
    file_bytes: int
    file_lines: int
    appended_only: bool
    max_tokens: int = 0


@dataclass(frozen=True)
class LoopRun:
    """Chapter 08's fake agent run: its steps, the first request bodies (both providers'), the session file's
    name, the window and the ``max_tokens`` asked (tokens; None: ctxlab's default, capped by the room left)."""

    steps: tuple[LoopStep, ...]
    first_anthropic_body: dict[str, Any]
    first_openai_body: dict[str, Any]
    file_name: str
    window: int
    max_tokens: int | None = None


def run_fake_loop(path: str | Path, *, steps: int = 12, window: int = 6_000, strategy: str | Strategy = "compaction",
                  model: str = DEFAULT_MODEL, max_tokens: int | None = None) -> LoopRun:
    """An agent loop driven by :func:`fake_llm` through :class:`~ctxlab.loop.AgentLoop`, the session written
    to ``path`` (a new file); ``strategy`` a name or a configured strategy (``get_strategy("pipeline",
    policy=CompactionPolicy(0.7, 0.35))``, chapter 09); ``max_tokens`` goes to the loop (the strategy decides under
    ``window - max_tokens``).
    Swap ``fake_llm`` for your HTTP client and ``fake_tool`` for your tools. Chapter 08."""
    path = Path(path)
    session = Session.create(path, system=[SYSTEM], tools=TOOLS, model=model)
    manager = AgentLoop(session, strategy, model=model, profile=with_window(profile_for(model), window), speedup=FAST,
                        max_tokens=max_tokens)
    manager.add_user(TASK)
    log, first = [], None
    for step in range(1, steps + 1):
        before = path.read_bytes()
        request = manager.next_request()  # 1. the strategy decides what to send (and may compact)
        first = first or request
        reply = fake_llm(request.anthropic_body, step, steps)  # 2. your model call
        message = manager.record_response(reply["text"], reply["tool_calls"], usage=reply["usage"])  # 3. record it
        for call in message.tool_calls:  # 4. run the tools, record their results
            manager.add_tool_result(call.id, fake_tool(call.name, call.arguments), name=call.name)
        after = path.read_bytes()
        log.append(LoopStep(step, request.context.total_tokens, len(request.context.messages),
                            any(n.startswith("compacted") for n in request.notes), len(after), after.count(b"\n"),
                            after.startswith(before), request.anthropic_body["max_tokens"]))
        if not message.tool_calls:
            break
    assert first is not None
    return LoopRun(tuple(log), first.anthropic_body, first.openai_body, path.name, window, max_tokens)


def body_shape(body: Any, depth: int = 0, max_depth: int = 3) -> list[str]:
    """A request body's shape, one line per key: ``messages: list[1]`` and, indented, the first item's keys;
    strings as ``str`` with their length. No content. Chapter 08."""
    pad = "  " * depth
    lines = []
    if isinstance(body, dict):
        for k, v in body.items():
            if isinstance(v, (dict, list)) and depth < max_depth:
                lines.append(f"{pad}{k}: {_kind(v)}")
                lines += body_shape(v if isinstance(v, dict) else (v[0] if v else {}), depth + 1, max_depth)
            else:
                lines.append(f"{pad}{k}: {_kind(v)}")
    return lines


def _kind(v: Any) -> str:
    if isinstance(v, list):
        return f"list[{len(v)}]" + (" (first item below)" if v and isinstance(v[0], dict) else "")
    if isinstance(v, dict):
        return "object"
    if isinstance(v, str):
        return f"str ({len(v)} chars)" if len(v) > 40 else repr(v)
    return type(v).__name__ if not isinstance(v, (int, float, bool)) else repr(v)
