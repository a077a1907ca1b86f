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
     (``claude-sonet-4-5`` → ``claude-sonnet-4-5``; it used to run, silently unpriced);
  3. any other unknown name (a local model, a fine-tune, a deployment name) runs, with one line: unpriced,
     counted with the generic profile.

Plumbing of the command line (the chapters' default model is taught in chapter 00).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from functools import lru_cache

from ctxlab.base.errors import CtxlabError
from ctxlab.tables import prices
from ctxlab.tables.default_model import DEFAULT_MODEL
from ctxlab.tables.model_facts import UnknownModelError, families, model_facts
from ctxlab.tables.model_ids import canonical_model_id

PROVIDER_NAMES = {"anthropic": "Anthropic", "openai": "OpenAI", "google": "Google"}
RULED = re.compile(r"^(claude-|gpt-|gemini-|o\d)")  # ids of the providers ctxlab has rules for
CUTOFF = 0.8  # difflib ratio above which an unknown id is read as a typo of a known one


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


def price_note(model: str | None) -> str | None:
    """The price table's note on a routed id (``"claude-sonnet-4-5@20250929"`` → priced at Anthropic's list price;
    Bedrock and Vertex AI prices may differ), or where a Bedrock id's price came from; None otherwise."""
    p = prices.price_for(model) if model else None
    if p is None:
        return None
    if p.note:
        return p.note
    if p.provider_id == "aws":
        return f"{model} priced from genai-prices' AWS Bedrock row {p.model_id} (Bedrock's price, not Anthropic's)"
    return None


def model_notes(models: Iterable[str | None]) -> list[str]:
    """Every lifecycle and price note for these models, each model once, in order. Chapter 00 / 04."""
    out: list[str] = []
    for model in dict.fromkeys(m for m in models if m):
        out += [n for n in (lifecycle_note(model), price_note(model)) if n]
    return out


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


def check_model_option(model: str | None) -> str | None:
    """Apply the ``--model`` rule of the module docstring: None (a known model, or none given), or the one-line
    note for a plausible unknown model. Raises :class:`CtxlabError` (the CLI exits 2) for a likely typo:
    ``--model 'claude-sonet-4-5' is not a model ctxlab or genai-prices 0.2.3 knows; did you mean
    claude-sonnet-4-5? ...``."""
    if not model or _known(model):
        return None
    bare = canonical_model_id(model)
    close = difflib.get_close_matches(bare, known_ids(), n=3, cutoff=CUTOFF)
    if RULED.match(bare) and close:
        raise CtxlabError(f"--model {model!r} is not a model ctxlab or {prices.PACKAGE} {prices.package_version()} "
                          f"knows; did you mean {' or '.join(close)}? (a model of another kind, e.g. a local one, "
                          "runs unpriced)")
    return (f"--model {model!r} is not in {prices.PACKAGE} {prices.package_version()} nor in ctxlab's model table: "
            "its costs are unpriced and it is counted with the generic profile")
