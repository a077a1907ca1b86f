"""Body fidelity: ctxlab's own request bodies against the bytes a proxy log recorded.

Unlike :mod:`ctxlab.lab.fidelity`, which compares prompt *sizes* with recorded usage, this compares
whole *bodies*: a proxy log (claude-trace, an OpenHands / LiteLLM call log; read by
:mod:`ctxlab.io.formats.proxy_log`) holds the exact request each model call sent. Each request is
read on its own, rendered again by ctxlab, and both bodies are counted with the same counter, so
the error is ctxlab's rendering alone (wrapping, ``cache_control``, field order), not the
tokenizer. Beside it, ctxlab's prompt estimate against the recorded usage. Example: a body
that sent ``"content": "hi"`` is rendered as a text block (``[{"type": "text", "text": "hi"}]``):
a few tokens more, a positive body error. Taught in chapter 04; ``python -m ctxlab replay LOG --recorded`` prints it.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ctxlab.base.errors import CtxlabError
from ctxlab.io.formats.proxy_log import recorded_requests
from ctxlab.tables.profiles import profile_for
from ctxlab.bodies import to_anthropic_body, to_openai_body
from ctxlab.base.safe_text import shown
from ctxlab.strategies import whole_context
from ctxlab.tokens import MessageMeter

__all__ = ["BodyFit", "BodyFidelity", "body_fidelity"]


@dataclass(frozen=True)
class BodyFit:
    """One call, in tokens: the recorded body's and ctxlab's rendered body's system + tools + messages (as JSON),
    ctxlab's prompt estimate (``Context.total_tokens``) and the recorded usage's whole prompt. Chapter 04."""

    line: int
    conversation: str
    thread: str
    recorded_body: int
    rendered_body: int
    estimate: int
    recorded_input: int | None

    @property
    def body_error(self) -> float:
        return (self.rendered_body - self.recorded_body) / max(1, self.recorded_body)

    @property
    def usage_error(self) -> float | None:
        return (self.estimate - self.recorded_input) / self.recorded_input if self.recorded_input else None


@dataclass(frozen=True)
class BodyFidelity:
    """Per-call fits of one proxy log; errors are signed: (ctxlab - recorded) / recorded. Chapter 04."""

    file: str
    calls: tuple[BodyFit, ...]
    notes: tuple[str, ...] = ()  # calls whose context could not be built, and why

    def figures(self) -> dict[str, dict[str, Any]]:
        """``{"body" | "usage": {"calls", "median_error", "worst_error", "worst_line", "total_error"}}``: worst is the
        largest in size, total the token-weighted error over all those calls."""
        out = {}
        for key, (ours, theirs) in {"body": ("rendered_body", "recorded_body"),
                                    "usage": ("estimate", "recorded_input")}.items():
            rows = [(e, c) for c in self.calls if (e := getattr(c, f"{key}_error")) is not None]
            worst = max(rows, key=lambda r: abs(r[0]), default=(None, None))
            total = sum(getattr(c, theirs) for _, c in rows)
            out[key] = {"calls": len(rows), "median_error": statistics.median(e for e, _ in rows) if rows else None,
                        "worst_error": worst[0], "worst_line": worst[1].line if worst[1] else None,
                        "total_error": sum(getattr(c, ours) for _, c in rows) / total - 1 if total else None}
        return out

    def __str__(self) -> str:
        f = self.figures()
        pct = lambda v: "n/a" if v is None else f"{v:+.1%}"  # noqa: E731
        return "\n".join([f"body fidelity — {shown(self.file)}: {len(self.calls)} logged calls"] + [
            f"  {what} ({f[key]['calls']} calls): median {pct(f[key]['median_error'])}, worst "
            f"{pct(f[key]['worst_error'])} (line {f[key]['worst_line']}), all tokens {pct(f[key]['total_error'])}"
            for key, what in (("body", "rendered body vs recorded body, as JSON tokens"),
                              ("usage", "prompt estimate vs recorded usage"))]
            + [f"  note: {shown(n)}" for n in self.notes])


def body_fidelity(path: str | Path, *, strict: bool = True) -> BodyFidelity:
    """ctxlab's own body for each logged call of a proxy log (:mod:`ctxlab.io.formats.proxy_log`), against
    the recorded body and the recorded usage: the strongest check ctxlab has, the bytes really sent.

    Each request is read on its own into a context (``whole_context``: nothing dropped), rendered with
    :func:`ctxlab.render.to_anthropic_body` or :func:`~ctxlab.render.to_openai_body`, and both bodies' system,
    tools and messages are counted as compact JSON with the model profile's counter. Raises
    :class:`~ctxlab.base.errors.TranscriptError` for a file that is not a proxy log. Chapter 04.
    """
    path, meters, fits, notes = Path(path), {}, [], []

    def count(meter: MessageMeter, body: dict[str, Any]) -> int:
        part = {k: body[k] for k in ("system", "tools", "messages") if k in body}
        return meter.counter.count(json.dumps(part, ensure_ascii=False, separators=(",", ":")))

    for c in recorded_requests(path, strict=strict):
        conv = c.sent
        profile = profile_for(c.model, c.provider)
        meter = meters.setdefault(profile.name, MessageMeter(profile))
        try:
            ctx = whole_context(replace(conv, inferred_head_tokens=0), profile, meter)
        except CtxlabError as err:  # no messages, or a tool result whose call the agent did not send
            notes.append(f"line {c.line}: no context to render ({' '.join(str(err).split())[:160]})")
            continue
        body = to_anthropic_body(ctx, c.model) if c.family == "anthropic" else to_openai_body(ctx, c.model)
        fits.append(BodyFit(c.line, c.conversation, c.thread, count(meter, c.body), count(meter, body),
                            ctx.total_tokens, c.usage.total_input_tokens if c.usage else None))
    return BodyFidelity(path.name, tuple(fits), tuple(notes))
