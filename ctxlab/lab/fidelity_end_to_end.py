"""End-to-end fidelity: ctxlab's own prompt sizes against the prompts a transcript recorded.

Unlike :mod:`ctxlab.lab.fidelity`, which feeds the recorded prompt sizes to the cache simulator and
scores only its reads and writes, this replays the conversation under the ``recorded`` strategy and
compares each call's rendered prompt (ctxlab's rendering, counts, inferred static head and
calibration) with the call's recorded total input: :func:`end_to_end` → :class:`EndToEndReport`.
A call whose recorded prompt sized the inferred head is left out (it matches by construction).
Taught in chapter 04.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from ctxlab.base.safe_text import shown
from ctxlab.fast import FAST
from ctxlab.messages import Conversation
from ctxlab.replay import replay
from ctxlab.tables.profiles import profile_for
from ctxlab.tokens import MessageMeter, infer_static_head


@dataclass(frozen=True)
class EndToEndReport:
    """ctxlab's own prompt sizes (rendering, counts, inferred head, calibration) under the ``recorded``
    strategy against the recorded prompts. ``errors`` are signed (predicted - recorded) / recorded. Chapter 04."""

    calls: int
    within: float  # share of calls whose predicted prompt is within ``tolerance`` of the recorded one
    tolerance: float
    median_error: float
    errors: tuple[float, ...]
    worst: tuple[tuple[str, int, int, str], ...]  # (message id, recorded, predicted, notes) by |error|
    fitted: int = 0  # calls left out: the static head was sized from their own recorded prompt

    def __str__(self) -> str:
        fitted = f" ({self.fitted} left out: the inferred head was sized on them)" if self.fitted else ""
        lines = [f"end to end: {self.within:.1%} of {self.calls} calls within {self.tolerance:.0%} of the recorded "
                 f"prompt; median error {self.median_error:+.1%}{fitted}"]
        lines += [f"  {shown(mid)}: recorded {rec:,}, predicted {pred:,} ({(pred - rec) / rec:+.0%}) {shown(why)}"
                  for mid, rec, pred, why in self.worst]
        return "\n".join(lines)

    def as_dict(self) -> dict:
        return {"calls": self.calls, "within": self.within, "tolerance": self.tolerance,
                "median_error": self.median_error, "fitted": self.fitted}


def end_to_end(conversation: Conversation, *, tolerance: float = 0.10, worst: int = 5) -> EndToEndReport:
    """Replay under ``recorded`` and compare each call's rendered prompt with its recorded total input.

    What limits it: the counts are o200k x a calibration factor (not Claude's tokenizer), a
    system prompt and tools the transcript did not record are one inferred size, and what the
    agent added that the transcript never shows (reminders, file snapshots) is missing. Earlier
    thinking counts by the model's documented rule (the profile's ``thinking``, from
    :func:`ctxlab.tables.model_facts.model_facts`); thinking signatures are not in transcripts. On pi
    (claude-opus-4-5, keep_all) the median error went from -0.8% to +0.4% when issue 13 counted it. Chapter 04.
    """
    result = replay(conversation, "recorded", speedup=FAST)
    fitted = _head_fitted_on(conversation)
    rows = []
    for rec in result.records:
        usage = rec.call.message.usage
        if rec.call.message.id in fitted:  # exact by construction: it would score the fit, not ctxlab
            continue
        if usage and usage.total_input_tokens > 0:
            recorded, predicted = usage.total_input_tokens, rec.request.total_tokens
            rows.append((rec.call.message.id, recorded, predicted, (predicted - recorded) / recorded,
                         "; ".join(n for n in rec.notes if n)[:120]))
    left_out = sum(1 for rec in result.records if rec.call.message.id in fitted)
    if not rows:
        return EndToEndReport(0, 0.0, tolerance, 0.0, (), (), left_out)
    errors = tuple(r[3] for r in rows)
    inside = sum(abs(e) <= tolerance for e in errors) / len(errors)
    bad = sorted(rows, key=lambda r: -abs(r[3]))[:worst]
    return EndToEndReport(len(rows), inside, tolerance, statistics.median(errors), errors,
                          tuple((m, r, p, why) for m, r, p, _, why in bad), left_out)


def _head_fitted_on(conversation: Conversation) -> set[str]:
    """Ids of the calls whose recorded prompt sized an inferred static head (one per thread, as
    ``replay`` infers it): their predicted prompt equals the recorded one by construction.
    Example: a thread whose first usage is at 'a1' and no recorded head → {'a1'}."""
    if conversation.inferred_head_tokens is not None:  # the reader knew the head: nothing was fitted
        return set()
    meter = MessageMeter(profile_for(conversation.model, conversation.provider))
    heads = (infer_static_head(conversation.thread(t), meter) for t in conversation.threads())
    return {h.call_message_id for h in heads if h is not None}
