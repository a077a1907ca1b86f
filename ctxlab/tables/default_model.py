"""The chapters' default model: the one every example, widget, exercise and benchmark uses when none is given.

``DEFAULT_MODEL = "claude-sonnet-4-6"``, ``DEFAULT_PROVIDER = "anthropic"``. One constant, so a retirement
changes one line (``tests/test_default_model.py`` fails when the default retires on or before the price
table's date, :func:`ctxlab.tables.prices.price_table_date`).

Why this model (the rows of :mod:`ctxlab.tables.model_facts`, all read 2026-12-02):

* The previous default, ``claude-sonnet-4-5``, retired on 2026-11-30: "Claude Sonnet 4.5 is deprecated: it is
  still functional but no longer recommended, and retires on November 30, 2026." (Claude Sonnet 4.5 model
  overview, platform.claude.com/docs/pt-BR/models/sonnet-4-5/overview.md). Requests to it are refused today.
* Sonnet 4.6 is active: "| claude-sonnet-4-6 | Active | N/A | Not sooner than February 17, 2027 |" (Model
  deprecations, platform.claude.com/docs/en/about-claude/model-deprecations, snapshot 2026-08-22).
* Its rules are documented, each with its page in the table: a 1,000,000-token window (Context windows), earlier
  thinking kept in context ("Keep all prior turns: Claude Opus 4.5 and later Opus models, Claude Sonnet 4.6 and
  later Sonnet models", Thinking), a 1,024-token cache minimum (Prompt caching), a 497 / 589-token tool-use
  system prompt (Pricing). Same list prices as Sonnet 4.5 ($3 / $15 per million tokens), no long-context tier.

Chapter 00 (start here) names it; chapters 01-08 use it where a transcript names no model.
"""

from __future__ import annotations

DEFAULT_MODEL = "claude-sonnet-4-6"
DEFAULT_PROVIDER = "anthropic"
