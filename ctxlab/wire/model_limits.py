"""The per-model limits the wire oracle judges a body against, read from the providers' documented facts.

A renderer sizes its bodies from its own profile (:mod:`ctxlab.tables.profiles`); an oracle that read the same
table would pass a wrong profile. So the size rules read :func:`ctxlab.tables.model_facts.model_facts` for the
body's ``model`` (read 2026-12-02; each value carries its page, quote and status there):

* ``output_over_max``: the output cap (``max_tokens``, ``max_completion_tokens``, ``max_output_tokens``) <=
  ``max_output_tokens`` (Claude Sonnet 4.6: 128,000; Sonnet 4.5: 64,000);
* ``input_over_max`` (OpenAI): input <= ``max_input_tokens`` where it is below the window (GPT-5: 272,000 of a
  400,000 window); Anthropic publishes no input limit below the window;
* ``input_over_window`` / ``output_over_window``: the window is ``context_window_tokens`` unless the caller
  passes one.

A model the table does not know, or a value it leaves ``None`` (Sonnet 4's maximum output was not read), skips
that rule: the :class:`Verdict` lists it in ``skipped`` with the reason. Taught in chapter 04.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from ctxlab.tables.model_facts import UnknownModelError, model_facts
from ctxlab.wire.sources import WireViolation, violation


class Verdict(list):
    """What one check found: the :class:`WireViolation` list (so ``verdict == []`` still means accepted) and
    ``skipped``, one line per size rule not judged and why (``"output_over_max skipped: the maximum output of
    'claude-sonnet-4-20250514' is not known (ctxlab.tables.model_facts)"``). Chapter 04."""

    def __init__(self, found: Iterable[WireViolation] = (), skipped: Iterable[str] = ()) -> None:
        super().__init__(found)
        self.skipped: tuple[str, ...] = tuple(skipped)


@dataclass(frozen=True)
class Limits:
    """The limits one body is judged by, tokens; None = not known (``why`` says why, per limit name)."""

    model: str | None
    window: int | None
    max_input: int | None
    max_output: int | None
    why: dict[str, str] = field(default_factory=dict)


def model_limits(model: Any, context_window: int | None = None, max_input_tokens: int | None = None) -> Limits:
    """The window, input limit and output ceiling for ``model``: the caller's ``context_window`` /
    ``max_input_tokens`` when given, else the documented values of :func:`model_facts` (read 2026-12-02).
    ``model_limits("gpt-5")`` → ``Limits("gpt-5", 400000, 272000, None, ...)``. Raises nothing: an unknown or
    missing model gives None limits with the reason in ``why``. Chapter 04."""
    name = model if isinstance(model, str) and model else None
    facts, reason = None, "the body names no model"
    if name is not None:
        try:
            facts = model_facts(name)
        except UnknownModelError:
            reason = f"model {name!r} is not in ctxlab.tables.model_facts"

    def documented(field_name: str) -> Any:
        return getattr(facts, field_name).value if facts is not None else None

    window = context_window if context_window is not None else documented("context_window_tokens")
    max_input = max_input_tokens if max_input_tokens is not None else documented("max_input_tokens")
    max_output = documented("max_output_tokens")
    why = {key: reason if facts is None else f"the {what} of {name!r} is not known (ctxlab.tables.model_facts)"
           for key, what, value in (("window", "context window", window), ("max_input", "input limit", max_input),
                                    ("max_output", "maximum output", max_output)) if value is None}
    return Limits(name, window, max_input, max_output, why)


def skip(rule: str, lim: Limits, key: str) -> str:
    """The verdict's line for a rule not judged: ``"output_over_max skipped: <why>"``."""
    return f"{rule} skipped: {lim.why.get(key, 'no limit')}"


def output_cap(provider: str, body: dict, cap_field: str | None, lim: Limits,
               skipped: list[str]) -> list[WireViolation]:
    """``output_over_max``: the body's output cap against the model's documented maximum output. A cap that is
    not a whole number is left to the field's own rule; no known maximum appends to ``skipped``."""
    cap = body.get(cap_field) if cap_field else None
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
        return []
    if lim.max_output is None:
        skipped.append(skip("output_over_max", lim, "max_output"))
        return []
    if cap <= lim.max_output:
        return []
    return [violation(provider, "output_over_max", cap_field, f"{cap_field} {cap:,} > the {lim.max_output:,} "
                      f"output tokens {lim.model} supports")]


def sized(rule: str, lim: Limits, input_tokens: int | None, skipped: list[str]) -> bool:
    """Whether a window rule can be judged: an input count and a known window (else a line in ``skipped``)."""
    if input_tokens is None:
        skipped.append(f"{rule} skipped: no input_tokens given (the oracle counts nothing)")
        return False
    if lim.window is None:
        skipped.append(skip(rule, lim, "window"))
        return False
    return True
