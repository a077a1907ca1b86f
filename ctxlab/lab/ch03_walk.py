"""Chapter 03's page material: the backward walk as the module runs it, the static head, the output reserve, the stub.

What it holds:

* :func:`walk_source` — the lines of :func:`ctxlab.context.build_context` that walk back from the newest unit (the
  very code the builder runs, read from its source, so the page and the module cannot drift apart);
* :func:`head_tokens` — the static head the builder adds when a transcript records no tools or system prompt
  (the same rule :func:`~ctxlab.context.build_context` follows), and :func:`fixed_tokens`, the whole fixed part;
* :func:`reserve_rows` — the budget two ways: the texts' shortcut (90 % of the window) and window − ``max_tokens``;
* :func:`window_verdicts` — what the Anthropic oracle (:mod:`ctxlab.wire`) says of input + ``max_tokens`` over a
  real window, on a model before Claude 4.5 and on an active one, and of an input over the window;
* :func:`stub_rows` — the synthetic results ctxlab adds for interrupted tool calls (``unanswered="stub"``).

Simplified on purpose: :func:`window_verdicts` tells the oracle an input size (the oracle counts nothing) rather than
building a 180,000-token request; the windows and maximum outputs are the dated table's; no request is sent.
"""

from __future__ import annotations

import inspect
from dataclasses import replace
from typing import Sequence

from ctxlab.bodies import to_anthropic_body
from ctxlab.context import Context, build_context, fixed_part
from ctxlab.messages import Conversation, Message
from ctxlab.tables.profiles import ModelProfile, profile_for
from ctxlab.tokens import MessageMeter, infer_static_head
from ctxlab.wire import check_anthropic

__all__ = ["WALK_START", "WALK_END", "walk_source", "head_tokens", "fixed_tokens", "reserve_rows", "window_verdicts",
           "stub_rows", "context_without_stub", "OLD_CLAUDE", "SMALL_CLAUDE"]

# Chapter 03: the first and the line after the last of the walk inside build_context's source
WALK_START, WALK_END = "room, kept_count = budget - fixed - must_t", "for u in units:  # past the cut"
OLD_CLAUDE = "claude-sonnet-4-20250514"  # Chapter 03: a model before Claude 4.5, where the window rule is enforced
SMALL_CLAUDE = "claude-haiku-4-5"  # Chapter 03: an active model with a 200,000-token window and 64,000 max output


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
    window) and the rule the API states (input ≤ window − ``max_tokens``), for each ``max_tokens`` the model allows
    (values above its ``max_output_tokens`` are left out, and the maximum itself is added as the last row).
    Chapter 03: 200,000 window, 64,000 max_tokens → shortcut 180,000 (20,000 left for a 64,000 reply), rule 136,000;
    on gpt-4o (16,384 max output) the rows are 8,192 and 16,384."""
    window, cap = profile.context_window, profile.max_output_tokens
    short = profile.budget_tokens(0.9)
    values = sorted({m for m in max_tokens_values if cap is None or m <= cap} | ({cap} if cap else set()))
    rows: list[tuple] = [("90% shortcut", "any", short, window - short)]
    rows += [("window − max_tokens", m, profile.input_limit(m), window - profile.input_limit(m)) for m in values]
    return rows


def window_verdicts(context: Context, small: str = SMALL_CLAUDE) -> list[tuple[str, str]]:
    """(case, oracle verdict) for four requests with ``context``'s messages, judged by the Anthropic oracle
    (:func:`ctxlab.wire.check_anthropic`) against each model's real window and maximum output from the dated table:

    1. the context as built, on its own model, asking for the model's whole maximum output;
    2. an input of 90 % of ``small``'s window (the shortcut) with its maximum output, on :data:`OLD_CLAUDE`
       (same 200,000 window, before Claude 4.5: refused, "output_over_window");
    3. the same on ``small`` (Claude 4.5 or newer: accepted, the reply is cut at the window);
    4. an input one token over ``small``'s window: refused on every model ("prompt is too long").

    Cases 2–4 give the oracle an input size (the oracle counts nothing; it is told the input's tokens) instead of
    building a 180,000-token request. Raises KeyError via the table for an unknown ``small``. Chapter 03; the rule's
    source is the oracle's (Anthropic, Context windows)."""
    body = to_anthropic_body(context)
    own = profile_for(body.get("model"))
    ref = profile_for(small)
    big = ref.budget_tokens(0.9)

    def verdict(model: str, profile: ModelProfile, input_tokens: int, max_tokens: int | None) -> str:
        b = {**body, "model": model, **({"max_tokens": max_tokens} if max_tokens else {})}
        found = check_anthropic(b, input_tokens=input_tokens, context_window=profile.context_window)
        return "accepted" if not found else f"{found[0].rule}: {found[0].detail}"

    cap, ref_cap = own.max_output_tokens or 8_192, ref.max_output_tokens or 8_192
    return [(f"this context ({context.total_tokens:,}) + {cap:,} max_tokens on {body.get('model')}",
             verdict(str(body.get("model")), own, context.total_tokens, cap)),
            (f"{big:,} input + {ref_cap:,} max_tokens on {OLD_CLAUDE} (retired)",
             verdict(OLD_CLAUDE, profile_for(OLD_CLAUDE), big, ref_cap)),
            (f"{big:,} input + {ref_cap:,} max_tokens on {small}", verdict(small, ref, big, ref_cap)),
            (f"{ref.context_window + 1:,} input on {small}", verdict(small, ref, ref.context_window + 1, None))]


def stub_rows(messages: Sequence[Message]) -> list[tuple[int, str, str]]:
    """(position, call id, text) of each stub result ctxlab added for an interrupted tool call (``origin`` synthetic,
    id ``stub:<call id>``) in a built context's ``messages``. Chapter 03: the sample has one (167 → 168)."""
    return [(i, m.tool_call_id or "", m.text[:60]) for i, m in enumerate(messages)
            if m.role == "tool" and m.origin == "synthetic" and m.id.startswith("stub:")]


def context_without_stub(context: Context) -> Context:
    """``context`` with its stub results removed (what a builder that ignores interrupted calls would send).
    Chapter 03."""
    return replace(context, messages=tuple(m for m in context.messages if not m.id.startswith("stub:")))
