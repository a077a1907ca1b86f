"""The wire oracle: does the provider accept this request body, exactly as it would be sent?

A renderer can be wrong in ways its own tests share. This package judges the finished dict — the
one you would ``json.dumps`` — against the providers' documented acceptance rules, and imports
nothing from the book (only :mod:`ctxlab.base` and :mod:`ctxlab.tables`), so it can judge the
renderer that made the body. Each rule names its page, the day it was read and the sentence it
encodes (``RULES``; docs/wire-rules.md is the same table for reading)::

    >>> check_body("anthropic", {"model": "claude-sonnet-4-6", "max_tokens": 64,
    ...                          "messages": [{"role": "assistant", "content": "Hi"}]})[0].rule
    'first_message_user'

The size rules (output cap, input limit, window) read the model's documented limits from
:mod:`ctxlab.tables.model_facts` (:mod:`.model_limits`), never the renderer's profiles; a check returns a
:class:`Verdict`, a list of violations whose ``skipped`` names each size rule it could not judge and why.

Taught in chapter 04, where bodies are rendered.
"""

from __future__ import annotations

from typing import Any

from ctxlab.base.errors import CtxlabError
from ctxlab.wire.anthropic import check_anthropic
from ctxlab.wire.model_limits import Verdict, model_limits
from ctxlab.wire.openai_chat import check_openai_chat
from ctxlab.wire.openai_responses import check_openai_responses
from ctxlab.wire.says import SAYS
from ctxlab.wire.sources import RULES, Source, WireViolation

__all__ = ["RULES", "SAYS", "Source", "Verdict", "WireViolation", "check_anthropic", "check_body", "check_openai_chat",
           "check_openai_responses", "model_limits", "rules_markdown"]

CHECKS = {"anthropic": check_anthropic, "openai-chat": check_openai_chat, "openai-responses": check_openai_responses}


def check_body(kind: str, body: dict, **limits: Any) -> list[WireViolation]:
    """Every rule ``body`` breaks for the API ``kind``: ``"anthropic"``, ``"openai-chat"`` or ``"openai-responses"``.

    ``limits``: the keyword arguments of that API's check (``input_tokens``, ``context_window``,
    ``max_input_tokens``; the last is dropped for ``"anthropic"``, whose only input limit is the
    window); a limit not given is the model's documented one. Returns the violations in body order as a
    :class:`Verdict` (``[]`` for an accepted body; ``.skipped`` lists the size rules not judged and why).
    Raises CtxlabError for an unknown ``kind`` (a bad body is a violation, never an error).
    Sources: ``RULES[kind]``. Chapter 04.
    """
    if kind not in CHECKS:
        raise CtxlabError(f"kind must be one of {', '.join(CHECKS)} (got {kind!r})")
    if kind == "anthropic":
        limits.pop("max_input_tokens", None)  # Anthropic documents no input limit below the window
    return CHECKS[kind](body, **limits)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def rules_markdown() -> str:
    """docs/wire-rules.md, made from ``RULES``: one table per provider, a row per rule. Chapter 04.

    Shape: Markdown text; each row gives the rule name, what it asks (``SAYS``), the linked page,
    the date read, the quoted sentence (or "none found") and the note. Raises nothing. Source: ``RULES``.
    """
    lines = ["# Wire rules: what the providers accept", "",
             "What `ctxlab.wire` checks on a request body exactly as it would be sent (chapter 04). Each rule",
             "names the page that states it, the day the page was read and the sentence it encodes. Where no",
             "page states a rule, the quote says *none found* and the note names the evidence used instead (the",
             "API's own 400 text in a public issue). Generated from `ctxlab.wire.RULES` by",
             "`ctxlab.wire.rules_markdown()`; `tests/test_wire_oracle.py` checks the two agree.", ""]
    titles = {"anthropic": "Anthropic Messages API", "openai-chat": "OpenAI Chat Completions",
              "openai-responses": "OpenAI Responses API"}
    for provider, rules in RULES.items():
        lines += [f"## {titles[provider]} (`{provider}`)", "", "| rule | what it asks | source | read | quote | note |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for name, source in rules.items():
            quote = f"“{_cell(source.quote)}”" if source.quote else "*none found*"
            lines.append(f"| `{name}` | {_cell(SAYS[provider][name])} | [{_cell(source.page)}]({source.url}) | "
                         f"{source.read} | {quote} | {_cell(source.note)} |")
        lines.append("")
    lines += ["## Looked up, not encoded", "",
              "- OpenAI tool call ids of at most 40 characters: the 400 'string too long. Expected a string with",
              "  maximum length 40' is reported (https://github.com/microsoft/autogen/issues/6377), but no page",
              "  states a limit and a live test in July 2026 found a 51-character id accepted",
              "  (https://github.com/vercel/ai/pull/17233). Gateways (Azure, GitHub Copilot) may still enforce it.",
              ""]
    return "\n".join(lines)
