"""Per-model provider facts as dated rows: every value with the page, quote and date behind it.

What it holds. For each model family (``claude-sonnet-4-6``, ``gpt-5.6``, ``gemini-2.5-pro``, ...) and each
date range, a :class:`ModelFacts` row with these fields (units in the names):

===============================  =================================================================================
``context_window_tokens``        the window, tokens (chapter 01, 03)
``max_input_tokens``             the input limit where the provider separates it, else the window (chapter 01)
``max_output_tokens``            the ``max_tokens`` ceiling (chapter 03)
``min_cache_tokens``             the shortest prompt the provider caches (chapter 04)
``cache_write_5m_multiplier``    price of a cache write / uncached input (Anthropic 5-minute write; OpenAI's one
                                 write price) (chapter 04)
``cache_write_1h_multiplier``    Anthropic's 1-hour write / uncached input (chapter 04)
``cache_read_multiplier``        price of a cache read / uncached input (chapter 04)
``ttl_options_s`` / ``ttl_default_s``   cache lifetimes offered and the default, seconds (chapter 04)
``cache_mode``                   ``"breakpoints"`` (Anthropic), ``"longest_prefix_128"`` (OpenAI before GPT-5.6),
                                 ``"breakpoints_prompt_cache_options"`` (GPT-5.6 on), ``"implicit_and_explicit"``
                                 (Gemini) (chapter 04)
``thinking_rule``                earlier turns' thinking: ``"keep_all"`` or ``"last_turn_only"`` (chapter 01, 04)
``tokenizer``                    a :class:`Tokenizer`: generation and the provider's stated ratio range (chapter 01)
``o200k_calibration``            provider tokens per o200k token, as ctxlab estimates them (chapter 01)
``tool_prompt_tokens``           a :class:`ToolPrompt`: the hidden tool-use system prompt per ``tool_choice``
``lifecycle``                    a :class:`Lifecycle`: deprecated / retired dates where published
===============================  =================================================================================

Each field is a :class:`Fact`: ``value`` and a :class:`Source` (title, url, section, the verbatim quote, the page
date or mirror snapshot, the read date, and a status: ``documented`` by the provider, ``measured`` by ctxlab, or
``assumed`` — third-party or not found, with the reason in ``note``). ``None`` as a value means "not known": the
caller falls back (the price table, or no check). Where sources disagree the newest first-party page wins and
the row's :attr:`ModelFacts.note` lists the disagreement.

Simplified on purpose: a date range is the span between documentation changes (mirror snapshots), not the day an
API changed; lifecycle states are those of the newest page read, only retirement dates are applied by date.
Read by :func:`ctxlab.tables.profiles.profile_for`, :func:`ctxlab.tables.cache_rules.rule_for` and the wire oracle.
The data sits in :mod:`ctxlab.tables.model_rows`; ``docs/provider_facts.md`` lists the sources.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime
from functools import lru_cache
from itertools import pairwise
from typing import Any, Literal

from ctxlab.base.errors import CtxlabError
from ctxlab.tables.model_ids import canonical_model_id
from ctxlab.tables.model_rows import FACTS, FAMILIES, PAGES, READ

STATUSES = ("documented", "measured", "assumed")
FIELDS = ("context_window_tokens", "max_input_tokens", "max_output_tokens", "min_cache_tokens",
          "cache_write_5m_multiplier", "cache_write_1h_multiplier", "cache_read_multiplier", "ttl_options_s",
          "ttl_default_s", "cache_mode", "thinking_rule", "tokenizer", "o200k_calibration", "tool_prompt_tokens",
          "lifecycle")


class UnknownModelError(CtxlabError):
    """A model id no family in the table matches. The message is one line naming the model and the families."""


@dataclass(frozen=True)
class Source:
    """Where one value comes from. ``read`` and ``page_date`` are ISO dates or a snapshot note. Chapter 01."""

    title: str
    url: str
    quote: str
    page_date: str
    read: str
    status: Literal["documented", "measured", "assumed"]
    section: str = ""
    note: str = ""


@dataclass(frozen=True)
class Fact:
    """One field's value for one family over ``since`` (inclusive) .. ``until`` (exclusive); None = open."""

    value: Any
    source: Source
    since: date | None = None
    until: date | None = None

    def holds_on(self, on: date) -> bool:
        """True when ``on`` falls in the range.
        ``Fact(1, s, since=date(2026, 6, 10)).holds_on(date(2026, 6, 9))`` → False."""
        return (self.since is None or self.since <= on) and (self.until is None or on < self.until)


@dataclass(frozen=True)
class Tokenizer:
    """A tokenizer generation and its tokens per token of ``relative_to``, as the provider says (``ratio_low`` ..
    ``ratio_high``; None = not stated). Claude Opus 4.7's: 1.0 .. 1.35 × earlier models. Chapter 01."""

    generation: str
    ratio_low: float | None
    ratio_high: float | None
    relative_to: str


@dataclass(frozen=True)
class ToolPrompt:
    """Tokens of the hidden system prompt Anthropic adds when tools are present, per ``tool_choice``. Chapter 01."""

    auto_none_tokens: int
    any_tool_tokens: int

    def for_choice(self, tool_choice: str) -> int:
        """``ToolPrompt(497, 589).for_choice("any")`` → 589. Raises CtxlabError for a choice not in the docs."""
        if tool_choice in ("auto", "none"):
            return self.auto_none_tokens
        if tool_choice in ("any", "tool"):
            return self.any_tool_tokens
        raise CtxlabError(f"tool_choice must be auto, none, any or tool (got {tool_choice!r})")


@dataclass(frozen=True)
class Lifecycle:
    """A model's lifecycle dates (ISO or None) and ``published_state``, the state the newest page read printed
    (Sonnet 4.5's: "deprecated"). A model's state is :meth:`state_on` a date, never the published one. Chapter 00."""

    published_state: Literal["active", "deprecated", "retired"]
    deprecated_on: str | None
    retires_on: str | None
    retires_not_before: str | None

    def state_on(self, on: date | str) -> str:
        """``"retired"`` from ``retires_on`` on, else the published state. Sonnet 4.5 on 2026-12-02 → "retired"."""
        if self.retires_on and as_date(on) >= as_date(self.retires_on):
            return "retired"
        return self.published_state


@dataclass(frozen=True)
class ModelFacts:
    """The row in force for one model on one date: a :class:`Fact` per field of :data:`FIELDS`. Chapter 01/04.
    ``since`` / ``until``: the range over which every field of this row holds (until exclusive, None = open)."""

    family: str
    provider: str
    model: str
    on: date
    since: date | None
    until: date | None
    context_window_tokens: Fact
    max_input_tokens: Fact
    max_output_tokens: Fact
    min_cache_tokens: Fact
    cache_write_5m_multiplier: Fact
    cache_write_1h_multiplier: Fact
    cache_read_multiplier: Fact
    ttl_options_s: Fact
    ttl_default_s: Fact
    cache_mode: Fact
    thinking_rule: Fact
    tokenizer: Fact
    o200k_calibration: Fact
    tool_prompt_tokens: Fact
    lifecycle: Fact

    def value(self, field: str) -> Any:
        """A field's bare value.
        ``model_facts("claude-opus-4-7", on="2026-06-10").value("min_cache_tokens")`` → 2048."""
        if field not in FIELDS:
            raise CtxlabError(f"no field {field!r}; fields: {', '.join(FIELDS)}")
        return getattr(self, field).value

    def facts(self) -> dict[str, Fact]:
        """Every field's :class:`Fact`, in :data:`FIELDS` order."""
        return {name: getattr(self, name) for name in FIELDS}

    @property
    def note(self) -> str:
        """The disagreements behind this row's fields, over the family's whole history, one per line ('' when the
        sources agree). Sonnet 4.6's lists its cache minimum (1024 → 2048 → 1,024) and max output (64k → 128k)."""
        notes = dict.fromkeys(f"{name}: {f.source.note}" for name in FIELDS for f in TABLE[self.family][name]
                              if "Disagreement" in f.source.note)
        return "\n".join(notes)

    def lifecycle_state(self) -> str:
        """``"active"``, ``"deprecated"`` or ``"retired"`` on this row's date: ``lifecycle.value.state_on(on)``."""
        return self.lifecycle.value.state_on(self.on)

    def __str__(self) -> str:
        lines = [f"{self.model} ({self.family}, {self.provider}) on {self.on.isoformat()}"]
        lines += [f"  {name}: {f.value!r} [{f.source.status}; {f.source.title}]" for name, f in self.facts().items()]
        return "\n".join(lines)


def as_date(on: date | datetime | str | None) -> date:
    """An ISO date string, a date or a datetime as a date; None → the read date (:data:`READ`).
    ``as_date("2026-06-10")`` → ``date(2026, 6, 10)``. Raises CtxlabError for anything else. Chapter 04."""
    if on is None:
        return date.fromisoformat(READ)
    if isinstance(on, date):  # a datetime is a date too
        return on.date() if isinstance(on, datetime) else on
    if isinstance(on, str):
        try:
            return date.fromisoformat(on)
        except ValueError:
            pass
    raise CtxlabError(f"on must be a date or an ISO date like '2026-12-02' (got {on!r})")


_WRAP = {"tokenizer": Tokenizer, "tool_prompt_tokens": ToolPrompt, "lifecycle": Lifecycle}  # value tuple -> type


def _build() -> dict[str, dict[str, tuple[Fact, ...]]]:
    """family -> field -> facts sorted by date, checked: known page and status, a quote, no overlap, no gap."""
    families = {name for name, _, _ in FAMILIES}
    table: dict[str, dict[str, list[Fact]]] = {name: {f: [] for f in FIELDS} for name in families}
    for entry in FACTS:
        where = f"model_rows {entry['field']} for {', '.join(entry['families'])}"
        if entry["field"] not in FIELDS or entry["page"] not in PAGES or entry["status"] not in STATUSES:
            raise CtxlabError(f"{where}: unknown field, page or status")
        if not entry["quote"]:
            raise CtxlabError(f"{where}: a source needs its quote")
        title, url, page_date = PAGES[entry["page"]]
        source = Source(title, url, entry["quote"], page_date, READ, entry["status"], entry["section"], entry["note"])
        value = entry["value"]
        value = _WRAP[entry["field"]](*value) if entry["field"] in _WRAP and value is not None else value
        since, until = (date.fromisoformat(entry[k]) if entry[k] else None for k in ("since", "until"))
        for fam in entry["families"]:
            if fam not in families:
                raise CtxlabError(f"{where}: no family {fam!r}")
            table[fam][entry["field"]].append(Fact(value, source, since, until))
    for fam, per_field in table.items():
        for name, facts in per_field.items():
            facts.sort(key=lambda f: f.since or date.min)
            if not facts or facts[0].since is not None or facts[-1].until is not None:
                raise CtxlabError(f"model_rows: {fam} {name} must run from an open start to an open end")
            for a, b in pairwise(facts):
                if a.until is None or a.until != b.since:
                    raise CtxlabError(f"model_rows: {fam} {name}: ranges overlap or leave a gap at {b.since}")
    return {fam: {name: tuple(facts) for name, facts in per_field.items()} for fam, per_field in table.items()}


TABLE = _build()
_WINDOW_DEFAULT = "window"  # max_input_tokens = the window where no separate limit is published


def families() -> tuple[str, ...]:
    """The families the table knows, in table order: ``("claude-opus-4-1", ..., "gemini-2.5-flash")``. Chapter 01."""
    return tuple(name for name, _, _ in FAMILIES)


def family_of(model_id: str) -> tuple[str, str]:
    """(family, provider) for a model id as people write it. Chapter 01.
    ``family_of("us.anthropic.claude-sonnet-4-5-20250929-v1:0")`` → ``("claude-sonnet-4-5", "anthropic")``.
    Raises :class:`UnknownModelError` (one line) for a model no family matches."""
    bare = canonical_model_id(model_id)
    for name, provider, pattern in FAMILIES:
        if re.search(pattern, bare):
            return name, provider
    raise UnknownModelError(f"model_facts: unknown model {model_id!r} (read as {bare!r}); "
                            f"known families: {', '.join(families())}")


def _row(family: str, provider: str, model: str, on: date) -> ModelFacts:
    chosen = {name: next(f for f in TABLE[family][name] if f.holds_on(on)) for name in FIELDS}
    cap = chosen["max_input_tokens"]
    if cap.value == _WINDOW_DEFAULT:
        chosen["max_input_tokens"] = Fact(chosen["context_window_tokens"].value, cap.source, cap.since, cap.until)
    starts = [f.since for f in chosen.values() if f.since is not None]
    ends = [f.until for f in chosen.values() if f.until is not None]
    return ModelFacts(family, provider, model, on, max(starts, default=None), min(ends, default=None), **chosen)


@lru_cache(maxsize=512)
def _cached(model_id: str, on: date) -> ModelFacts:
    family, provider = family_of(model_id)
    return _row(family, provider, canonical_model_id(model_id), on)


def model_facts(model_id: str, on: date | datetime | str | None = None) -> ModelFacts:
    """The row in force for ``model_id`` on ``on`` (default: the read date, 2026-12-02). Chapters 01 and 04.

    ``model_facts("claude-opus-4-7", on="2026-06-09").min_cache_tokens.value`` → 4096; on ``"2026-06-10"`` → 2048.
    Ids are read by :func:`ctxlab.tables.model_ids.canonical_model_id` (Bedrock, Vertex, gateway prefixes, dated
    snapshots). Raises :class:`UnknownModelError` for an unknown model, CtxlabError for a date it cannot read.
    """
    return _cached(model_id, as_date(on))


def family_rows(family: str) -> tuple[ModelFacts, ...]:
    """Every distinct row of one family, oldest first: one per span between documented changes. Chapter 04.
    ``[r.since for r in family_rows("claude-opus-4-7")]`` → ``[None, date(2026, 5, 29), date(2026, 6, 10)]``."""
    provider = next((p for name, p, _ in FAMILIES if name == family), None)
    if provider is None:
        raise UnknownModelError(f"model_facts: unknown family {family!r}; known families: {', '.join(families())}")
    cuts = sorted({f.since for facts in TABLE[family].values() for f in facts if f.since is not None})
    return tuple(_row(family, provider, family, on) for on in [date.min, *cuts])


def all_facts() -> tuple[tuple[str, str, Fact], ...]:
    """(family, field, fact) for every fact in the table, for ``docs/provider_facts.md`` and the tests. Chapter 04."""
    return tuple((fam, name, f) for fam in families() for name in FIELDS for f in TABLE[fam][name])

