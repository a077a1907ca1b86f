"""The data behind :mod:`ctxlab.tables.model_facts`: one entry per fact, each with its page and quote.

Plain literals only, so the table can be read, diffed and reviewed as data; the only imports are the other
``model_rows_*`` modules. :mod:`ctxlab.tables.model_facts` turns these entries into typed rows and checks them.

* :data:`PAGES`, :data:`READ` — the pages read and the day they were read (:mod:`ctxlab.tables.model_rows_common`,
  which also holds :func:`~ctxlab.tables.model_rows_common.entry`, the helper that makes an entry).
* :data:`FAMILIES` — (family, provider, regex on the canonical id from
  :func:`ctxlab.tables.model_ids.canonical_model_id`).
* :data:`FACTS` — every entry: the Anthropic ones (:mod:`ctxlab.tables.model_rows_anthropic`), then the OpenAI
  and Gemini ones (:mod:`ctxlab.tables.model_rows_others`). Each is a dict: the families it holds for, the
  field, the value, ``since`` / ``until`` (ISO dates; ``since`` inclusive, ``until`` exclusive; ``None`` =
  open), the page key, the section, the verbatim quote, the status and a note.

Date ranges are the dates the *documentation* changed (the first mirror snapshot showing a new
sentence), not necessarily the day the API changed. Every page was read on :data:`READ`.
Disagreements between sources are written in the note, starting ``Disagreement:``. Chapter 01
(windows, tokenizers, tool prompt) and chapter 04 (cache rules); ``docs/provider_facts.md``.
"""

from __future__ import annotations

from ctxlab.tables.model_rows_anthropic import ANTHROPIC_FACTS
from ctxlab.tables.model_rows_common import PAGES, READ
from ctxlab.tables.model_rows_others import OTHER_FACTS

__all__ = ["FACTS", "FAMILIES", "PAGES", "READ"]

# Families: (family, provider, regex on the canonical id). First match wins; test ids in tests/test_model_facts.py.
FAMILIES: tuple[tuple[str, str, str], ...] = (
    ("claude-opus-4-1", "anthropic", r"^claude-opus-4-1$"),
    ("claude-opus-4-5", "anthropic", r"^claude-opus-4-5$"),
    ("claude-opus-4-6", "anthropic", r"^claude-opus-4-6$"),
    ("claude-opus-4-7", "anthropic", r"^claude-opus-4-7$"),
    ("claude-opus-4-8", "anthropic", r"^claude-opus-4-8$"),
    ("claude-opus-5", "anthropic", r"^claude-opus-5$"),
    ("claude-opus-5-5", "anthropic", r"^claude-opus-5-5$"),
    ("claude-sonnet-4", "anthropic", r"^claude-sonnet-4(-0)?$"),
    ("claude-sonnet-4-5", "anthropic", r"^claude-sonnet-4-5$"),
    ("claude-sonnet-4-6", "anthropic", r"^claude-sonnet-4-6$"),
    ("claude-sonnet-5", "anthropic", r"^claude-sonnet-5$"),
    ("claude-haiku-4-5", "anthropic", r"^claude-haiku-4-5$"),
    ("gpt-4o", "openai", r"^gpt-4o$"),
    ("gpt-4.1", "openai", r"^gpt-4\.1$"),
    ("gpt-5", "openai", r"^gpt-5$"),
    ("gpt-5.5", "openai", r"^gpt-5\.5$"),
    ("gpt-5.6", "openai", r"^gpt-5\.6(-[a-z]+)?$"),
    ("gemini-2.5-pro", "google", r"^gemini-2\.5-pro$"),
    ("gemini-2.5-flash", "google", r"^gemini-2\.5-flash$"),
)

FACTS: tuple[dict, ...] = ANTHROPIC_FACTS + OTHER_FACTS
