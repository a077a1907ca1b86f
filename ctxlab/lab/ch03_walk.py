"""Chapter 03's page material: the backward walk as the module runs it, the static head, the output reserve, the stub.

What it holds:

* :func:`walk_source` — the lines of :func:`ctxlab.context.build_context` that walk back from the newest unit (the
  very code the builder runs, read from its source, so the page and the module cannot drift apart);
* :func:`head_tokens` — the static head the builder adds when a transcript records no tools or system prompt
  (the same rule :func:`~ctxlab.context.build_context` follows), and :func:`fixed_tokens`, the whole fixed part;
* :func:`reserve_rows` — the budget two ways: the texts' shortcut (90 % of the window) and window − ``max_tokens``;
* :func:`window_verdicts` — what the Anthropic oracle (:mod:`ctxlab.wire`) says of a body too long for its window,
  and of input + ``max_tokens`` over the window, on a model before Claude 4.5 and on the context's own model;
* :func:`stub_rows` — the synthetic results ctxlab adds for interrupted tool calls (``unanswered="stub"``).

Simplified on purpose: :func:`window_verdicts` gives the oracle the context's own token count as the body's input (the
oracle counts nothing) and shrinks the window to make the error; no request is sent.
"""

from __future__ import annotations

import inspect
from dataclasses import replace
from typing import Sequence

from ctxlab.bodies import to_anthropic_body
from ctxlab.context import Context, build_context, fixed_part
from ctxlab.messages import Conversation, Message
from ctxlab.tables.profiles import ModelProfile
from ctxlab.tokens import MessageMeter, infer_static_head
from ctxlab.wire import check_anthropic

__all__ = ["WALK_START", "WALK_END", "walk_source", "head_tokens", "fixed_tokens", "reserve_rows", "window_verdicts",
           "stub_rows", "context_without_stub", "OLD_CLAUDE"]

# Chapter 03: the first and the line after the last of the walk inside build_context's source
WALK_START, WALK_END = "room, kept_count = budget - fixed - must_t", "for u in units:  # past the cut"
OLD_CLAUDE = "claude-sonnet-4-20250514"  # Chapter 03: a model before Claude 4.5, where the window rule is enforced


def walk_source() -> str:
    """The backward walk of :func:`ctxlab.context.build_context`, dedented: from the room left after the fixed
    part and the pinned units, newest first, keep while it fits, stop at the first unit that does not.
    Read from the function's own source (``inspect.getsource``), ≤ 20 lines. Raises LookupError when the
    markers :data:`WALK_START` / :data:`WALK_END` are no longer in it. Chapter 03."""
    lines = inspect.getsource(build_context).splitlines()
    start = next((i for i, line in enumerate(lines) if WALK_START in line), None)
    end = next((i for i, line in enumerate(lines) if WALK_END in line), None)
    if start is None or end is None or end <= start:
        raise LookupError("the backward walk's markers are not in build_context's source")
    return _dedent(lines[start:end])


def _dedent(lines: Sequence[str]) -> str:
    pad = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
    return "\n".join(line[pad:] for line in lines)


def head_tokens(conversation: Conversation, meter: MessageMeter) -> int:
    """Tokens of the static head build_context adds: the transcript's own ``inferred_head_tokens``, else inferred
    from the first recorded usage (:func:`ctxlab.tokens.infer_static_head`), else 0. A Claude Code transcript
    records neither its tools nor its system prompt: the head is most of every request. Chapter 03."""
    if conversation.inferred_head_tokens is not None:
        return conversation.inferred_head_tokens
    inferred = infer_static_head(conversation, meter)
    return inferred.tokens if inferred else 0


def fixed_tokens(conversation: Conversation, profile: ModelProfile, meter: MessageMeter) -> int:
    """The fixed part (tools + system + static head + per-request overhead), in tokens, as build_context counts
    it (:func:`ctxlab.context.fixed_part`). Chapter 03: the budget slider starts above it."""
    return fixed_part(conversation, profile, meter, head_tokens(conversation, meter)).total_tokens


def reserve_rows(profile: ModelProfile, max_tokens_values: Sequence[int] = (8_192, 32_000, 64_000)) -> list[tuple]:
    """Rows (rule, max_tokens, budget tokens, reply room tokens) under ``profile``: the texts' shortcut (90 % of the
    window) and the rule the API states (input ≤ window − ``max_tokens``), for each ``max_tokens``. Chapter 03:
    200,000 window, 64,000 max_tokens → shortcut 180,000 (20,000 left for a 64,000 reply), rule 136,000."""
    window = profile.context_window
    short = profile.budget_tokens(0.9)
    rows: list[tuple] = [("90% shortcut", "any", short, window - short)]
    rows += [("window − max_tokens", m, profile.input_limit(m), window - profile.input_limit(m))
             for m in max_tokens_values]
    return rows


def window_verdicts(context: Context, max_tokens: int = 32_000) -> list[tuple[str, str]]:
    """(case, oracle verdict) for three bodies of ``context``: the input over a window one token smaller ("prompt is
    too long"), and input + ``max_tokens`` over the window on :data:`OLD_CLAUDE` and on the context's own model.
    Chapter 03; the rule's source is the verdict's (Anthropic, Context windows)."""
    body = to_anthropic_body(context)
    n = context.total_tokens

    def verdict(b: dict, window: int) -> str:
        found = check_anthropic(b, input_tokens=n, context_window=window)
        return "accepted" if not found else f"{found[0].rule}: {found[0].detail}"

    own = {**body, "max_tokens": max_tokens}
    return [("input over the window", verdict(body, n - 1)),
            (f"input + max_tokens on {OLD_CLAUDE} (retired)",
             verdict({**own, "model": OLD_CLAUDE}, n + max_tokens - 1)),
            (f"input + max_tokens on {body.get('model')}", verdict(own, n + max_tokens - 1))]


def stub_rows(messages: Sequence[Message]) -> list[tuple[int, str, str]]:
    """(position, call id, text) of each stub result ctxlab added for an interrupted tool call (``origin`` synthetic,
    id ``stub:<call id>``) in a built context's ``messages``. Chapter 03: the sample has one (167 → 168)."""
    return [(i, m.tool_call_id or "", m.text[:60]) for i, m in enumerate(messages)
            if m.role == "tool" and m.origin == "synthetic" and m.id.startswith("stub:")]


def context_without_stub(context: Context) -> Context:
    """``context`` with its stub results removed (what a builder that ignores interrupted calls would send).
    Chapter 03."""
    return replace(context, messages=tuple(m for m in context.messages if not m.id.startswith("stub:")))
