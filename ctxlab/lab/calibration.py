"""Calibration: how far o200k counts are from a provider's own tokenizer, measured from usage.

Anthropic does not publish Claude's tokenizer, but a transcript with recorded usage tells us
how many tokens Claude counted. Between two consecutive calls of a thread that hit the cache
fully (the second call read everything the first call read or wrote), the growth of the prompt
is exactly what was added in between: the first call's reply and the tool results or user
messages that followed. Counting those same messages with o200k gives a pair

    (Claude tokens added, o200k tokens counted)

and the calibration factor is their token-weighted ratio. The first call's reply is counted with
its thinking where the profile says the model sends it back (``thinking`` ``"all"``: Anthropic's
"keep all prior turns" models, and ``"current_turn"``: the thinking of the current tool-use loop).
Pairs are skipped where the count cannot be compared: a real user message in between on a model
that strips earlier turns' thinking then (``"current_turn"``), a model or thinking change, or a
compaction. (Before issue 13 every reply with thinking was skipped and thinking never counted:
pi's factor was 1.248 over 384 pairs then, 1.241 over 454 now.)

Simplified on purpose: one factor for all content; the per-message overheads are o200k's; a
thinking block's signature is not in the transcript and is not counted.
Taught in chapter 01 (measured) and used by the Claude profiles.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from ctxlab.messages import Conversation, Entry, Message
from ctxlab.tables.profiles import ModelProfile, profile_for
from ctxlab.tables.default_model import DEFAULT_MODEL
from ctxlab.tables.model_facts import UnknownModelError, model_facts
from ctxlab.tokens import MessageMeter, TiktokenCounter


@dataclass(frozen=True)
class CalibrationReport:
    """``factor`` = Σ added (provider tokens) / Σ counted (o200k) over ``pairs`` clean call pairs;
    ``median`` of the per-pair ratios. Chapter 01 (measured; chapter 04 checks the prompts it sizes)."""

    factor: float
    median: float
    pairs: int
    added_tokens: int
    counted_tokens: int
    skipped: dict[str, int]

    def __str__(self) -> str:
        skipped = ", ".join(f"{k} {v}" for k, v in sorted(self.skipped.items()))
        return (f"provider/o200k = {self.factor:.3f} (median {self.median:.3f}) over {self.pairs} call pairs: "
                f"{self.added_tokens:,} added vs {self.counted_tokens:,} counted; skipped: {skipped}")


def measure_calibration(conversation: Conversation, profile: ModelProfile | None = None) -> CalibrationReport | None:
    """Measure the provider/o200k token ratio from recorded usage; None when no clean pair exists.

    Example: a reply of 100 o200k tokens plus a tool result of 900 that grew Claude's prompt by 1,150
    tokens gives a pair with ratio 1.15 (added 1,150 / counted 1,000). The reply's thinking counts unless the
    profile's ``thinking`` is ``"none"``; a user message in between skips the pair only under ``"current_turn"``
    (the API strips earlier turns' thinking then, Anthropic 'Thinking', mirror snapshot 2026-08-22). Chapter 01.
    """
    profile = profile or profile_for(conversation.model or DEFAULT_MODEL, conversation.provider)
    meter = MessageMeter(profile, TiktokenCounter("o200k_base"))  # raw o200k: the thing being calibrated
    skipped: dict[str, int] = {}
    added = counted = 0
    ratios: list[float] = []
    sends_thinking = profile.thinking != "none"

    def skip(why: str) -> None:
        skipped[why] = skipped.get(why, 0) + 1

    for thread in conversation.threads():
        prev: Message | None = None
        between: list[Message] = []
        disturbed = False
        for item in conversation.thread(thread).items:
            if isinstance(item, Entry):
                disturbed = disturbed or item.kind in ("compaction", "model_change", "thinking_level_change")
                continue
            if item.role == "assistant" and item.usage and item.usage.total_input_tokens > 0:
                if prev is not None:
                    usage, before = item.usage, prev.usage
                    if disturbed:
                        skip("model, thinking or compaction in between")
                    elif profile.thinking != "all" and any(m.is_real_user for m in between):
                        skip("a user message in between")
                    elif usage.cache_read_tokens != before.cache_read_tokens + before.cache_write_tokens:
                        skip("not a full cache hit")
                    else:
                        mine = meter.message(prev, sends_thinking) + sum(
                            meter.message(m, sends_thinking) for m in between if m.origin != "meta")
                        theirs = usage.total_input_tokens - before.total_input_tokens  # what was added, in their tokens
                        if mine > 0 and theirs > 0:
                            added, counted = added + theirs, counted + mine
                            ratios.append(theirs / mine)
                prev, between, disturbed = item, [], False
            elif prev is not None:
                between.append(item)
    if not ratios:
        return None
    return CalibrationReport(added / counted, statistics.median(ratios), len(ratios), added, counted, skipped)


def factor_source(profile: ModelProfile) -> str:
    """Where ``profile``'s calibration factor (Claude tokens per o200k token) comes from, in one sentence: the
    model table row's status and its quote (the measurement, or the pooled figure it assumes), else the family
    fallback for a Claude model the table does not list. Example: ``claude-sonnet-4-6`` → "claude-sonnet-4-6's
    factor (assumed), Claude tokens / o200k tokens: both files together: 561,994 / 447,101 = 1.257. Both measured
    files pooled …". Never raises for a model the table lacks. Chapter 01."""
    try:
        source = model_facts(profile.name).o200k_calibration.source
    except UnknownModelError:
        return (f"{profile.name} has no row in the model table: its factor {profile.calibration:g} is "
                f"{profile.calibration_source or 'the Claude family fallback'}.")
    return (f"{profile.name}'s factor ({source.status}), Claude tokens / o200k tokens: {source.quote}. "
            f"{source.note.split('. ')[0].rstrip('.')}.")
