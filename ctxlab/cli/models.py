"""What the CLI says about a model name: a retired or deprecated model, a mistyped ``--model``, a routed price.

* :func:`lifecycle_note` — one line when a model is retired (or deprecated, with its retirement date) as of the
  price table's date (:func:`ctxlab.tables.prices.price_table_date`), from the model's lifecycle row
  (:mod:`ctxlab.tables.model_facts`, with the page and the date read). ``inspect`` and ``replay`` print it for
  the transcript's models and ``--model``; ``doctor`` checks the default model with it.
* :func:`check_model_option` — the rule for ``--model NAME`` (decided for issue 13):

  1. a name the facts table or the price table knows (as :func:`ctxlab.tables.model_ids.canonical_model_id`
     reads it: Bedrock, Vertex, gateway prefixes, dated snapshots) runs;
  2. an unknown name shaped like an id of a provider ctxlab has rules for (``claude-``, ``gpt-``, ``gemini-``,
     ``o1``..) that is close to a known id (:func:`difflib.get_close_matches`, cutoff 0.8, against the table's
     families and genai-prices' model ids) is a typo: one line with the did-you-mean, exit 2
     (``claude-sonet-4-5`` → ``claude-sonnet-4-5``; it used to run, silently unpriced); so is any unknown name
     with the letters and digits of a known id, whatever its punctuation (``gpt4o`` → ``gpt-4o``, ``gpt5`` →
     ``gpt-5``: a reader trial of issue 16 ran ``gpt4o`` unpriced with exit 0);
  3. any other unknown name (a local model, a fine-tune, a deployment name) runs, with one line: unpriced,
     counted with the generic profile, with a did-you-mean when a looser match (cutoff 0.6, or the name inside
     an id) finds ids of the facts table (``mygpt5`` → ``gpt-5``; ``sonnet`` → ``claude-sonnet-4-6``);
  4. ``--model ""`` exits 2. A did-you-mean names each model once (by ``canonical_model_id``), models active on
     the price table's date first, then at most one retired one, marked ``(retired)``.

* :func:`follow_model` — ``--model`` without ``--provider``: the replay follows the model's provider (the facts
  table's, else the vendor :func:`ctxlab.tables.cache_rules.rule_for` reads from the id's shape), with one note.

Plumbing of the command line (the chapters' default model is taught in chapter 00).
"""

from __future__ import annotations

import difflib
import re
import sys
from collections.abc import Iterable
from datetime import date
from functools import lru_cache
from typing import Any

from ctxlab.base.errors import CtxlabError
from ctxlab.base.safe_text import shown
from ctxlab.replay import PROVIDERS  # the caches a replay simulates
from ctxlab.tables import prices
from ctxlab.tables.cache_rules import NO_CACHE, rule_for
from ctxlab.tables.default_model import DEFAULT_MODEL
from ctxlab.tables.model_facts import READ, UnknownModelError, families, family_of, model_facts
from ctxlab.tables.model_ids import canonical_model_id, same_letters
from ctxlab.tables.profiles import profile_for

PROVIDER_NAMES = {"anthropic": "Anthropic", "openai": "OpenAI", "google": "Google"}
RULED = re.compile(r"^(claude-|gpt-|gemini-|o\d)")  # ids of the providers ctxlab has rules for
CUTOFF = 0.8  # difflib ratio above which an unknown id is read as a typo of a known one
LOOSE_CUTOFF = 0.6  # a looser ratio, for the hint on a name that is not a typo's shape ("gpt5")


def lifecycle_note(model: str | None) -> str | None:
    """One line when ``model`` is retired, or deprecated with a retirement date, on the price table's date; None
    for an active or unknown model. ``lifecycle_note("claude-sonnet-4-5")`` → ``"claude-sonnet-4-5 retired on
    2026-11-30 (Anthropic, Claude Sonnet 4.5 (model overview; ...), read 2026-12-02): requests to it are refused
    as of 2026-12-02 (the price table's date); costs use its last listed prices."``"""
    if not model:
        return None
    on = prices.price_table_date()
    try:
        row = model_facts(model, on=on)
    except UnknownModelError:
        return None
    life, source = row.lifecycle.value, row.lifecycle.source
    state = life.state_on(on)
    cited = f"({PROVIDER_NAMES.get(row.provider, row.provider)}, {source.title}, read {source.read})"
    if state == "retired":
        cost = "costs use its last listed prices" if prices.price_for(model) is not None else "it is unpriced"
        when = f" on {life.retires_on}" if life.retires_on else ""
        if _routed(model):  # "Bedrock and Google Cloud set their own schedules" (the lifecycle row's note)
            return (f"{model}: {canonical_model_id(model)} retired{when} on Anthropic's own platforms {cited}; "
                    f"Bedrock and Google Cloud set their own schedules; {cost}.")
        return (f"{model} retired{when} {cited}: requests to it are refused as of {on.isoformat()} (the price "
                f"table's date); {cost}. A current model: {DEFAULT_MODEL}.")
    if state == "deprecated" and life.retires_on:
        return (f"{model} is deprecated and retires on {life.retires_on} {cited}: requests still work as of "
                f"{on.isoformat()}; a current model: {DEFAULT_MODEL}.")
    return None


def _routed(model: str) -> bool:
    low = model.lower()
    return ".anthropic." in f".{low}" or any(r in low for r in ("@", "bedrock", "vertex"))


def price_note(model: str | None, provider: str | None = None) -> str | None:
    """The price table's note on a routed id (``"claude-sonnet-4-5@20250929"`` → priced at Anthropic's list price;
    Bedrock and Vertex AI prices may differ), or where a Bedrock id's price came from; None otherwise. Given the
    ``provider`` the ledger priced under, it is the note of the price the ledger used (the same ``price_for``)."""
    p = prices.price_for(model, provider) if model else None
    if p is None:
        return None
    if p.note:
        return p.note
    if p.provider_id == "aws":
        return f"{model} priced from genai-prices' AWS Bedrock row {p.model_id} (Bedrock's price, not Anthropic's)"
    return None


def model_notes(models: Iterable[str | None], provider: str | None = None) -> list[str]:
    """Every lifecycle and price note for these models, each model once, in order. Chapter 00 / 04."""
    out: list[str] = []
    for model in dict.fromkeys(m for m in models if m):
        out += [n for n in (lifecycle_note(model), price_note(model, provider)) if n]
    return list(dict.fromkeys(out))


def refused(models: Iterable[str | None]) -> bool:
    """Whether any of these models is retired on the price table's date on its provider's own platform (a routed
    id, Bedrock or Vertex AI, has its own schedule): the provider refuses requests to it today."""
    on = prices.price_table_date()
    for model in dict.fromkeys(m for m in models if m):
        try:
            state = model_facts(model, on=on).lifecycle.value.state_on(on)
        except UnknownModelError:
            continue
        if state == "retired" and not _routed(model):
            return True
    return False


def model_provider(model: str) -> str | None:
    """The provider a model id belongs to: its facts-table family's (``family_of``), else the vendor the cache rules
    read from the id's shape (``gpt-``, ``o3``, ``gemini-``, ``deepseek``); None when neither knows it."""
    try:
        return family_of(model)[1]
    except UnknownModelError:
        guess = rule_for(model).provider
        return None if guess == NO_CACHE.provider else guess


def follow_model(model: str | None, provider: str | None, recorded: Iterable[str | None],
                 replayable: Iterable[str]) -> tuple[str | None, str | None]:
    """``(provider to replay under, note or None)`` for ``--model`` without ``--provider`` (issue 13): the model's
    provider (:func:`model_provider`) when the replay simulates it; the note when that differs from a provider the
    transcript ``recorded``. An unknown model, or a given ``provider``, changes nothing."""
    own = model_provider(model) if model and not provider else None
    if own is None:
        return provider, None
    name, other = PROVIDER_NAMES.get(own, own), {p for p in recorded if p} - {own}
    if own not in set(replayable):
        kept = " and ".join(f"{PROVIDER_NAMES.get(p, p)}'s" for p in sorted(other))
        return None, (f"--model {model} is a {name} model, whose cache the replay does not simulate: replayed under "
                      f"{kept} rules; pass --provider to choose") if other else None
    article = "an" if name[0] in "AEIOU" else "a"
    return own, (f"--model {model} is {article} {name} model: replayed under {name}'s rules; pass --provider "
                 "to choose") if other else None


@lru_cache(maxsize=1)
def known_ids() -> tuple[str, ...]:
    """The ids a did-you-mean chooses from: the facts table's families, then genai-prices' model ids."""
    from genai_prices import data_snapshot  # the price table's own list, read offline from the installed package

    ids = [m.id.lower() for p in data_snapshot.get_snapshot().providers for m in p.models]
    return tuple(dict.fromkeys([*families(), *ids]))


def _known(model: str) -> bool:
    try:
        model_facts(model)
        return True
    except UnknownModelError:
        return prices.price_for(model) is not None


def _priced_only(model: str) -> str | None:
    """One line for a model the price table knows but ctxlab's dated model table does not (e.g. a Claude released
    after the pages were read): its per-model rules are a fallback, not its own. None for a model the table knows."""
    try:
        model_facts(model)
        return None
    except UnknownModelError:
        p = profile_for(model)
    return (f"--model {model!r} is priced by {prices.PACKAGE} {prices.package_version()} but not in ctxlab's model "
            f"table (pages read {READ}): counted with fallback rules (tool prompt {p.tool_system_tokens}, "
            f"calibration {p.calibration:g}, thinking '{p.thinking}'), not its own")


def suggestions(model: str, cutoff: float = CUTOFF, ids: Iterable[str] | None = None, n: int = 3) -> list[str]:
    """Up to ``n`` known ids close to ``model`` (difflib ``cutoff``; with a cutoff below :data:`CUTOFF`, ids that
    contain the name count too), each model once by ``canonical_model_id``, the ones active on the price table's
    date first, then at most one retired one, marked: ``["claude-sonnet-4-6", "claude-sonnet-4-5 (retired)"]``."""
    pool = tuple(ids if ids is not None else known_ids())
    bare = canonical_model_id(model).lower()
    close = difflib.get_close_matches(bare, pool, n=12, cutoff=cutoff)
    if cutoff < CUTOFF and len(bare) >= 3:
        close += sorted((i for i in pool if bare in i), key=lambda i: -difflib.SequenceMatcher(None, bare, i).ratio())
    known, on = set(pool), prices.price_table_date()
    ranked = list(dict.fromkeys(c if c in families() else canonical_model_id(c) if canonical_model_id(c) in known
                                else c for c in close))
    retired = [c for c in ranked if _retired(c, on)]
    active = [c for c in ranked if c not in retired]
    if not set(retired) & set(ranked[:n]):
        return ranked[:n]
    if not active:
        return [f"{c} (retired)" for c in retired[:n]]
    return active[:n - 1] + [f"{retired[0]} (retired)"]  # the retired one in the top n, after the active ones


def _retired(model: str, on: date) -> bool:
    try:
        return model_facts(model, on=on).lifecycle.value.state_on(on) == "retired"
    except UnknownModelError:
        return False


def provider_follows_model(args: Any, conversations: Iterable[Any]) -> None:
    """Set ``args.provider`` by :func:`follow_model` (``--model`` given, ``--provider`` not) for these
    conversations, and print its note, one line on stderr. ``replay`` and ``replay --compare`` call it."""
    recorded = [p for c in conversations for p in (c.provider, *(m.provider for m in c.messages))]
    args.provider, note = follow_model(args.model, args.provider, recorded, PROVIDERS)
    if note:
        print(shown(f"note: {note}"), file=sys.stderr)


def check_model_option(model: str | None) -> str | None:
    """Apply the ``--model`` rule of the module docstring: None (a known model, or none given), or the one-line
    note for a plausible unknown model. Raises :class:`CtxlabError` (the CLI exits 2) for an empty name and for
    a likely typo: ``--model 'claude-sonet-4-6' is not a model ctxlab or genai-prices 0.2.3 knows; did you mean
    claude-sonnet-4-6 or claude-sonnet-4-5 (retired)? ...``."""
    if model is not None and not model.strip():
        raise CtxlabError(f"--model needs a model id, e.g. {DEFAULT_MODEL}")
    if not model:
        return None
    if _known(model):
        return _priced_only(model)
    bare = canonical_model_id(model)
    close = suggestions(model)
    same = same_letters(bare, families())  # "gpt4o" is "gpt-4o" without its dash
    if same:
        raise CtxlabError(f"--model {model!r} is not a model ctxlab or {prices.PACKAGE} {prices.package_version()} "
                          f"knows; did you mean {same[0]}? (the same letters and digits as it)")
    if RULED.match(bare) and close:
        raise CtxlabError(f"--model {model!r} is not a model ctxlab or {prices.PACKAGE} {prices.package_version()} "
                          f"knows; did you mean {' or '.join(close)}? (a model of another kind, e.g. a local one, "
                          "runs unpriced)")
    loose = suggestions(model, LOOSE_CUTOFF, families())
    hint = f" (did you mean {' or '.join(loose)}?)" if loose else ""
    return (f"--model {model!r} is not in {prices.PACKAGE} {prices.package_version()} nor in ctxlab's model table: "
            "its costs are unpriced and it is counted with the generic profile, its cache simulated under the "
            f"transcript's provider's rules{hint}")
