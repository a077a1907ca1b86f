"""Chapter 06's placement experiment: where a summary goes, and what each place costs the prompt cache.

A summary placed at the end of the system prompt (the texts' placement) changes the system prompt
whenever it changes, and every cached prefix after it is lost; as a system block of its own or as
the first message it moves the break point later. :func:`placement_experiment` replays a conversation
under ``budgeted+summary`` in each placement (:data:`~ctxlab.summary_strategy.PLACEMENTS`, plus
Anthropic's ``system_block`` with the breakpoint moved before the summary) and passes each main request
through a fresh cache simulator: one :class:`PlacementRow` per call.

A measurement, not a textbook idea: it runs a replay, so it lives in ``lab/`` (the book's
``summary_strategy.py`` holds the placements themselves). Simplified on purpose: the summary calls are
left out (a fresh summary request shares no prefix with the main requests).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Sequence

from ctxlab.base import validate
from ctxlab.cache_anthropic import AnthropicCache
from ctxlab.cache_openai import shared_prefix_tokens
from ctxlab.cache_openai_breakpoints import openai_simulator
from ctxlab.fast import FAST
from ctxlab.messages import Conversation, parse_time
from ctxlab.cache import prefix_diff
from ctxlab.replay import replay
from ctxlab.summary import RuleBasedSummarizer, Summarizer
from ctxlab.summary_strategy import PLACEMENTS, BudgetedSummaryStrategy
from ctxlab.tables.profiles import profile_for
from ctxlab.tokens import MessageMeter
from ctxlab.views import SUMMARY_MARKER


@dataclass(frozen=True)
class PlacementRow:
    """One main call of the placement experiment. ``summary``: ``none``, ``new``, ``changed`` or
    ``same`` (as at the call before). ``head_tokens``: tools + the base system prompt. ``shared_tokens``:
    the prefix this request shares with the one before it (whole blocks, then tokens inside the first
    differing block); ``diverged_at``: that block's label, or why ('' when the request only appended).
    Tokens in tokens. Chapter 06."""

    placement: str
    provider: str
    call: int
    summary: str
    total_input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    uncached_input_tokens: int
    head_tokens: int
    shared_tokens: int
    diverged_at: str
    reason: str


def placement_experiment(conversation: Conversation, *, window: int = 30_000,
                         providers: Sequence[str] = ("anthropic", "openai"),
                         placements: Sequence[str] = (*PLACEMENTS, "system_block+breakpoint"),
                         summarizer: Summarizer | None = None) -> list[PlacementRow]:
    """The placements replayed under each provider's cache rules: one row per main call. Chapter 06.

    ``system_block+breakpoint`` (Anthropic only) is ``system_block`` with the system breakpoint at the end
    of the base prompt instead of on the summary block, as an agent that knows about the summary would
    place it. Each replay's main requests go through a fresh simulator, without the summary calls
    (a fresh summary request shares no prefix with them), in the replay's order and times.
    ``window`` is a positive whole number of tokens (else CtxlabError naming it).
    """
    window = validate.tokens("window", window, allow_none=False)
    marker, rows = json.dumps(SUMMARY_MARKER)[1:-1], []
    for provider in providers:
        for placement in placements:
            moved = placement.endswith("+breakpoint")
            if moved and provider != "anthropic":
                continue  # OpenAI has no breakpoints: the same as system_block
            strategy = BudgetedSummaryStrategy(placement=placement.split("+")[0],  # type: ignore[arg-type]
                                               summarizer=summarizer or RuleBasedSummarizer())
            result = replay(conversation, strategy, provider=provider, window=window, speedup=FAST)
            sim = AnthropicCache() if provider == "anthropic" else openai_simulator(conversation.model or "")()
            prev, had_summary = None, False
            for rec in result.records:
                req = rec.request
                base = [i for i, b in enumerate(req.blocks) if b.kind in ("tools", "system") and marker not in b.text]
                if moved and base:  # the system breakpoint moves from the summary block to the base prompt's end
                    marks = (set(req.breakpoints) - {i for i, b in enumerate(req.blocks) if b.kind == "system"}
                             ) | {base[-1]}
                    req = replace(req, blocks=tuple(replace(b, breakpoint=i in marks)
                                                    for i, b in enumerate(req.blocks)))
                out = sim.request(req, rec.call.at_s, response_started_s=parse_time(rec.call.message.timestamp))
                note = " ".join(n for n in rec.notes if n.startswith("summary of"))
                state = "none" if not note else "same" if "unchanged" in note else "changed" if had_summary else "new"
                diff = prefix_diff(prev, req) if prev is not None else None
                head = sum(b.tokens for b in req.blocks if b.kind == "tools" or b.label == "inferred static head")
                head += MessageMeter(profile_for(req.model, provider)).system(conversation.system)
                rows.append(PlacementRow(
                    placement, provider, rec.call.index, state, out.total_input_tokens, out.cache_read_tokens,
                    out.cache_write_tokens, out.uncached_input_tokens, head,
                    shared_prefix_tokens(prev, req) if prev is not None else 0,
                    "" if diff is None or diff.index is None else diff.new.label if diff.new else diff.reason,
                    out.reason))
                prev, had_summary = req, had_summary or bool(note)
    return rows
