"""Chapter 04's measurements: the prefix-cache ledger — the texts' worked example, a coffee break, and a real bill.

What it holds (plain functions returning frozen rows; the widget that draws them is
:class:`ctxlab.widgets.ch04_ledger.LedgerWidget`):

* :func:`example_calls` — the texts' three-call example built from block sizes and run through a
  cache simulator (Anthropic or OpenAI rules), with the provider's own usage fields beside ours;
* :func:`with_pause` — a "coffee break": a copy of a conversation in which everything after one
  call's response happens some minutes later (pure: the input is not changed);
* :func:`bill_ledger` — the recorded ledger of the pi session from ``data/pi_bill.csv``, and
  :func:`miss_rows` — its calls that read less than half their prompt, with the cause the record shows;
* :func:`cache_saving` — what a ledger cost against the same calls with no prompt cache;
* :func:`read_fidelity_table` — the committed fidelity and calibration figures (``data/fidelity.csv``).

Where a replay dropped history and what each call then read is in :mod:`ctxlab.lab.ch04_collapse`;
the replays behind the widget (one per setting, kept) are in :mod:`ctxlab.lab.ch04_replays`.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Sequence

from ctxlab.base.errors import CtxlabError
from ctxlab.cache import request_from_sizes, to_provider_fields
from ctxlab.cache_anthropic import AnthropicCache
from ctxlab.cache_openai_breakpoints import openai_simulator
from ctxlab.lab.data import FIDELITY_TABLE
from ctxlab.ledger import Ledger, make_row
from ctxlab.messages import Conversation, Entry
from ctxlab.strategies import model_calls
from ctxlab.tables import prices
from ctxlab.tables.cache_rules import rule_for
from ctxlab.tables.default_model import DEFAULT_MODEL

# ---- the texts' three calls ------------------------------------------------------------------------

# Chapter 04: the model each provider's example call is priced as (minimum cacheable ≤ 4,480 on both).
EXAMPLE_MODELS = {"anthropic": DEFAULT_MODEL, "openai": "gpt-4o"}


@dataclass(frozen=True)
class ExampleCall:
    """One call of the example: neutral fields (tokens), the provider's own usage fields, prompt cost (USD).
    Chapter 04."""

    call: int
    provider: str
    model: str
    total_input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    uncached_input_tokens: int
    provider_fields: dict[str, Any]
    reason: str
    cost_usd: float
    no_cache_cost_usd: float  # the same prompt with every token at the uncached price


def example_pieces(sizes: Sequence[int] = (4_480, 380, 130)) -> list[list[tuple[str, int]]]:
    """The blocks of each call: tools 1,500 + system 2,600 + the task, then per call a tool call and its result.

    ``example_pieces()[1]`` → call 1's three blocks, a tool call (60) and its result (320): 4,860 tokens. Chapter 04.
    """
    first, *added = sizes
    calls = [[("tools", 1_500), ("system", 2_600), ("user: the task", first - 4_100)]]
    for k, n in enumerate(added, start=1):
        call_tokens = 60 if n > 100 else n // 3  # the assistant's tool call; the rest is its result
        calls.append(calls[-1] + [(f"assistant: tool call {k}", call_tokens), (f"tool result {k}", n - call_tokens)])
    return calls


def example_calls(provider: str = "anthropic", sizes: Sequence[int] = (4_480, 380, 130),
                  gap_s: float = 30.0) -> list[ExampleCall]:
    """The texts' example under one provider's rules: calls ``gap_s`` apart, breakpoint on the last block.

    Anthropic: reads 0 / 4,480 / 4,860 and writes 4,480 / 380 / 130. OpenAI: reads 0 / 4,480 / 4,736
    (128-token steps) and sends 254 uncached on call 3. Chapter 04.
    """
    model = EXAMPLE_MODELS[provider]
    sim = AnthropicCache() if provider == "anthropic" else openai_simulator(model)()
    out = []
    for k, pieces in enumerate(example_pieces(sizes)):
        o = sim.request(request_from_sizes(pieces, model=model, provider=provider), k * gap_s)
        c = prices.cost(model, provider, uncached_input_tokens=o.uncached_input_tokens,
                        cache_read_tokens=o.cache_read_tokens, cache_write_tokens=o.cache_write_tokens, output_tokens=0)
        plain = prices.cost(model, provider, uncached_input_tokens=o.total_input_tokens, cache_read_tokens=0,
                            cache_write_tokens=0, output_tokens=0)
        out.append(ExampleCall(k + 1, provider, model, o.total_input_tokens, o.cache_read_tokens, o.cache_write_tokens,
                               o.uncached_input_tokens, to_provider_fields(o, provider), o.reason,
                               c.total if c else math.nan, plain.total if plain else math.nan))
    return out


# ---- a coffee break --------------------------------------------------------------------------------

def _later(stamp: str, delta: timedelta) -> str:
    """``"2025-10-14T09:02:12.634Z"`` + 10 min → ``"2025-10-14T09:12:12.634Z"`` (same style as given)."""
    when = datetime.fromisoformat(stamp.replace("Z", "+00:00")) + delta
    spec = "seconds" if "." not in stamp else ("milliseconds" if len(stamp.split(".")[1].rstrip("Z")) <= 3 else
                                               "microseconds")
    text = when.isoformat(timespec=spec)
    return text.replace("+00:00", "Z") if stamp.endswith("Z") else text


def with_pause(conversation: Conversation, before_call: int, minutes: float, thread: str | None = None) -> Conversation:
    """A copy of ``conversation`` with a pause of ``minutes`` before call ``before_call`` (1-based, in ``thread``).

    Everything recorded after the previous call's response moves ``minutes`` later, and a ``note``
    entry marks the break (so the pause shows even when the call follows that response directly).
    The input is not changed. ``with_pause(conv, 20, 10)`` → call 20 is requested 10 minutes later
    than recorded: longer than a 5-minute TTL, so it reads nothing. Raises :class:`CtxlabError` when
    ``before_call`` is out of range or the call before it has no timestamp. Chapter 04.
    """
    if minutes <= 0:
        return conversation
    calls = model_calls(conversation)
    thread = thread or (calls[0][1].thread if calls else "main")
    mine = [(k, c) for k, c in calls if c.thread == thread]
    if not 2 <= before_call <= len(mine):
        raise CtxlabError(f"a pause goes before call 2..{len(mine)} of thread {thread!r}; got {before_call}.")
    at, previous = mine[before_call - 2][0], mine[before_call - 2][1].message
    if not previous.timestamp:
        where = "" if thread == "main" else f" of thread {thread!r}"  # one line: the widget shows 60 characters
        raise CtxlabError(f"call {before_call - 1}{where} has no timestamp: no pause can follow it")
    delta = timedelta(minutes=minutes)
    items = list(conversation.items)
    moved = [replace(it, timestamp=_later(it.timestamp, delta)) if k > at and it.timestamp else it
             for k, it in enumerate(items)]
    note = Entry("note", f"pause-before-{thread}-{before_call}", {"text": f"a pause of {minutes:g} min"},
                 _later(previous.timestamp, delta), thread)
    return replace(conversation, items=tuple(moved[: at + 1] + [note] + moved[at + 1:]))


# ---- recorded ledger of the pi bill, and what the cache saved -------------------------------------

def bill_ledger(path: str | Path) -> Ledger:
    """The recorded ledger of a bill CSV (``data/pi_bill.csv``), priced by ``genai-prices`` beside pi's own cost.

    ``bill_ledger(PI_BILL).totals().cost_usd`` → 42.5959 (pi recorded the same). Chapter 04.
    """
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    out = []
    for r in rows:
        recorded = {k: float(r[f"cost_{k}"] or 0) for k in ("input", "cache_read", "cache_write", "output", "total")}
        out.append(make_row(thread="main", call=int(r["call"]), model=r["model"], provider=r["provider"] or None,
                            at=r["timestamp"], stop_reason=r["stop_reason"], uncached_input_tokens=int(r["input"]),
                            cache_read_tokens=int(r["cache_read"]), cache_write_tokens=int(r["cache_write"]),
                            output_tokens=int(r["output"]), note=r.get("event") or "", recorded_cost_usd=recorded))
    return Ledger(out, title=f"recorded: {Path(path).name}")


# Chapter 04: the columns of :func:`miss_rows`.
MISS_COLUMNS = ("call", "gap", "prompt", "read", "written", "hit", "cost", "note")


def miss_rows(ledger: Ledger, below: float = 0.5, ttl_s: float | None = None) -> list[tuple[Any, ...]]:
    """Lines of :data:`MISS_COLUMNS` for the calls that read less than ``below`` of their prompt. The one definition
    of a miss, its gap and its cause, shared by chapters 00 and 04.

    Calls with no prompt tokens (aborted or failed requests recorded with zero usage) are left out: they neither
    read nor refresh the cache, so ``gap`` is the seconds since the previous call that sent a prompt, and what
    such calls recorded counts toward the next call that did. ``note``: what the record shows as a cause — the
    first call, a previous prompt below the model's minimum, a gap over the TTL (``ttl_s``; None: each call's
    model's default from :func:`~ctxlab.tables.cache_rules.rule_for`, 5 min on Claude, 24 h on gpt-4.1), what was
    recorded on the call and on the empty calls before it ("call 174, no usage: …") — or nothing (the record holds
    no cause). Chapter 04 (also 00)."""
    out, previous, prompt = [], None, None  # previous: time of the previous call with a prompt; prompt: its tokens
    between: list[str] = []  # what the empty calls since then recorded
    for r in ledger.rows:
        if not r.total_input_tokens:
            between += [f"call {r.call}, no usage: {r.note}"] if r.note else []
            continue
        when = datetime.fromisoformat(r.at.replace("Z", "+00:00")) if r.at else None
        gap = (when - previous).total_seconds() if when and previous else None
        if r.hit_rate < below:
            rule = rule_for(r.model, r.provider)
            minimum, ttl = rule.min_tokens, ttl_s or rule.ttl_s
            causes = ["first call"] if prompt is None else []
            if prompt is not None and prompt < minimum:
                causes.append(f"previous prompt ({prompt:,}) below {r.model}'s {minimum:,} minimum")
            causes += [f"gap over the {ttl / 60:g}-min TTL"] if gap is not None and gap > ttl else []
            causes += [r.note] if r.note else []
            causes += between
            out.append((r.call, "" if gap is None else f"{gap:,.0f} s", r.total_input_tokens, r.cache_read_tokens,
                        r.cache_write_tokens, f"{100 * r.hit_rate:.0f}%",
                        "—" if r.cost_usd is None else f"${r.cost_usd:,.4f}", "; ".join(causes)[:80]))
        previous = when or previous
        prompt, between = r.total_input_tokens, []
    return out


@dataclass(frozen=True)
class Saving:
    """A ledger's cost against the same calls with every prompt token uncached. Money in USD; shares 0..1.
    Chapter 04."""

    name: str
    calls: int
    prompt_tokens: int
    read_share: float
    write_share: float
    cost_usd: float
    no_cache_cost_usd: float
    prompt_cost_usd: float  # cost_usd without the output tokens
    no_cache_prompt_cost_usd: float

    @property
    def saving(self) -> float:
        """The whole bill's saving (output included), 0..1."""
        return 1 - self.cost_usd / self.no_cache_cost_usd if self.no_cache_cost_usd else 0.0

    @property
    def prompt_saving(self) -> float:
        """The prompt's saving (output left out), 0..1."""
        return 1 - self.prompt_cost_usd / self.no_cache_prompt_cost_usd if self.no_cache_prompt_cost_usd else 0.0

    @property
    def rule_of_thumb(self) -> float:
        """0.9 x read share − 0.25 x write share: the prompt saving when reads cost 0.1x and writes 1.25x."""
        return 0.9 * self.read_share - 0.25 * self.write_share


def cache_saving(ledger: Ledger, name: str = "") -> Saving:
    """Price every priced row again as if nothing were cached. Unpriced rows are left out of both sides.

    The texts' three calls (Sonnet 4.6, the default): 50% cheaper, not 90%: the first call paid 1.25x to write.
    Chapter 04.
    """
    rows = [r for r in ledger.rows if r.cost_usd is not None]
    no_cache = no_cache_prompt = 0.0
    for r in rows:
        c = prices.cost(r.model, r.provider, uncached_input_tokens=r.total_input_tokens, cache_read_tokens=0,
                        cache_write_tokens=0, output_tokens=r.output_tokens)
        no_cache += c.total if c else r.cost_usd
        no_cache_prompt += (c.total - c.output) if c else r.cost_usd - (r.cost_output or 0)
    total = sum(r.total_input_tokens for r in rows)
    return Saving(name or ledger.title, len(rows), total,
                  sum(r.cache_read_tokens for r in rows) / total if total else 0.0,
                  sum(r.cache_write_tokens for r in rows) / total if total else 0.0,
                  sum(r.cost_usd for r in rows), no_cache, sum(r.cost_usd - (r.cost_output or 0) for r in rows),
                  no_cache_prompt)


def saving_row(s: Saving) -> tuple[Any, ...]:
    """One line of :data:`SAVING_COLUMNS`. Chapter 04."""
    return (s.name, s.calls, s.prompt_tokens, f"{100 * s.read_share:.1f}%", f"{100 * s.write_share:.1f}%",
            f"${s.cost_usd:,.4f}", f"${s.no_cache_cost_usd:,.4f}", f"{100 * s.prompt_saving:.1f}%",
            f"{100 * s.rule_of_thumb:.1f}%", f"{100 * s.saving:.1f}%")


# Chapter 04: the columns of :func:`saving_row`.
SAVING_COLUMNS = ("ledger", "calls", "prompt tokens", "read", "written", "cost", "no-cache cost", "prompt saving",
                  "0.9r−0.25w", "saving incl. output")


# ---- committed fidelity figures ------------------------------------------------------------------------

def read_fidelity_table(path: str | Path = FIDELITY_TABLE) -> list[dict[str, str]]:
    """The rows of ``data/fidelity.csv`` (written by ``data/make_fidelity_table.py``), as strings. Chapter 04."""
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


__all__ = ["EXAMPLE_MODELS", "ExampleCall", "example_pieces", "example_calls", "with_pause", "bill_ledger",
           "MISS_COLUMNS", "miss_rows", "Saving", "cache_saving", "saving_row", "SAVING_COLUMNS", "read_fidelity_table"]
