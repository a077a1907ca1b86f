"""Chapter 04's page material: the two cache rules as the simulators run them, and the numbers each provider states.

What it holds:

* :func:`anthropic_rule_source` / :func:`openai_rule_source` — the lines of
  :meth:`ctxlab.cache_anthropic.AnthropicCache.request` and :meth:`ctxlab.cache_openai.OpenAICache.request` that
  decide the read (the very code the simulators run, read from their source);
* :func:`multiplier_rows` — per model: the read and write price as a multiple of the input price (from
  :func:`ctxlab.tables.prices.price_for`), so a chapter never says "a tenth" where a model charges a half;
* :func:`retention_rows` — per provider: minimum, step, how long an entry lives, and the doc page
  (:func:`ctxlab.tables.cache_rules.rule_for`).

Simplified on purpose: the excerpts leave out what the simulators also do (expiry bookkeeping, why a longer prefix was
lost, pending entries); the modules hold the whole rule.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

from ctxlab.cache_anthropic import AnthropicCache
from ctxlab.cache_openai import OpenAICache, floor_to
from ctxlab.tables.cache_rules import rule_for
from ctxlab.tables.prices import price_for

__all__ = ["source_between", "anthropic_rule_source", "openai_rule_source", "multiplier_rows", "retention_rows",
           "RULE_MODELS"]

RULE_MODELS = ("claude-sonnet-4-6", "gpt-4o", "gpt-4.1")  # Chapter 04: one Claude model, two OpenAI models


def source_between(fn: Callable[..., Any], start: str, end: str, *, include_end: bool = False) -> str:
    """The dedented lines of ``fn``'s source from the line holding ``start`` up to the one holding ``end`` (that line
    left out unless ``include_end``). Raises LookupError when a marker is missing. Chapter 04."""
    lines = inspect.getsource(fn).splitlines()
    a = next((i for i, line in enumerate(lines) if start in line), None)
    b = next((i for i, line in enumerate(lines) if a is not None and i > a and end in line), None)
    if a is None or b is None:
        raise LookupError(f"markers {start!r} / {end!r} not in the source of {fn.__qualname__}")
    chosen = lines[a:b + 1 if include_end else b]
    pad = min(len(line) - len(line.lstrip()) for line in chosen if line.strip())
    return "\n".join(line[pad:] for line in chosen)


def anthropic_rule_source() -> str:
    """Anthropic's read, as :class:`~ctxlab.cache_anthropic.AnthropicCache` runs it: each breakpoint looks back up
    to 20 blocks for a live entry; the read is the longest prefix found. Chapter 04."""
    return source_between(AnthropicCache.request, "# Read: each breakpoint", "lost = self._longer_prefix_lost")


def openai_rule_source() -> str:
    """OpenAI's read, as :class:`~ctxlab.cache_openai.OpenAICache` runs it: the longest prefix shared with any live
    stored prompt, rounded down to the rule's step (128 tokens) and nothing below the minimum, then
    :func:`ctxlab.cache_openai.floor_to`. Chapter 04."""
    read = source_between(OpenAICache.request, "best, hit, lost, lost_tokens = 0", "if read and at_s is not None")
    return read + "\n\n" + inspect.getsource(floor_to).split('"""')[0].rstrip() + "\n" + \
        inspect.getsource(floor_to).split('"""')[-1].strip("\n")


def multiplier_rows(models: Sequence[str] = RULE_MODELS) -> list[tuple[str, str, str, str]]:
    """(model, provider, read ×, write ×) of the input price, from the price table; "—" where it lists none.
    Chapter 04: claude-sonnet-4-6 reads at 0.1×, gpt-4o at 0.5×, gpt-4.1 at 0.25×."""
    rows = []
    for m in models:
        p = price_for(m)
        base = p.input_per_mtok

        def x(v: float | None) -> str:
            return f"{v / base:g}×" if v is not None and base else "—"
        rows.append((m, rule_for(m).provider, x(p.cache_read_per_mtok), x(p.cache_write_per_mtok)))
    return rows


def retention_rows(models: Sequence[str] = ("claude-sonnet-4-6", "gpt-4o")) -> list[tuple[str, ...]]:
    """(provider, mode, minimum tokens, step tokens, lifetime, doc) per model's cache rule
    (:func:`ctxlab.tables.cache_rules.rule_for`). Chapter 04: Anthropic 5 minutes (1 hour paid), OpenAI its own."""
    rows = []
    for m in models:
        r = rule_for(m)
        life = " or ".join(_duration(s) for s in (r.ttl_options_s or (r.ttl_s,)))
        rows.append((r.provider, r.mode, f"{r.min_tokens:,}", f"{r.increment_tokens:,}", life,
                     r.source.split(" ")[0] if r.source else "—"))
    return rows


def _duration(seconds: float) -> str:
    return f"{seconds / 3600:g} h" if seconds >= 3600 else f"{seconds / 60:g} min"
