"""Model ids as people write them, read back to the provider's bare id: one key for profiles, rules and prices.

A transcript or a proxy log names its model the way the route it went through spells it. The same Claude
Sonnet 4.5 arrives as ``claude-sonnet-4-5-20250929`` (Anthropic's dated snapshot), ``claude-sonnet-4-5@20250929``
(Vertex AI), ``us.anthropic.claude-sonnet-4-5-20250929-v1:0`` (an Amazon Bedrock cross-region inference
profile), ``bedrock/converse/…`` or ``litellm_proxy/…`` (LiteLLM routes), ``anthropic/claude-sonnet-4.5``
(OpenRouter). :func:`canonical_model_id` reads each back to ``claude-sonnet-4-5``.

Where each form comes from (pages read 2026-12-02; ``docs/provider_facts.md`` lists them):

* Bedrock: "The inference profile ID is the base model ID with a prefix from a column marked "Yes" in the
  following table, for example us.anthropic.claude-sonnet-4-5-20250929-v1:0." (Claude on Amazon Bedrock,
  platform.claude.com/docs/en/build-with-claude/claude-on-amazon-bedrock-legacy; prefixes global, us, eu, jp,
  apac) and "Model IDs in Claude in Amazon Bedrock carry an `anthropic.` provider prefix." (…/claude-in-amazon-
  bedrock: ``anthropic.claude-opus-4-7``, undated).
* Vertex AI: ``| Claude Sonnet 4.5 | claude-sonnet-4-5@20250929 |`` (…/build-with-claude/claude-on-vertex-ai;
  undated ids from Claude 4.6 on).
* LiteLLM: "Bedrock (`bedrock/`, `bedrock/invoke/`, `bedrock/converse`)" and ``openai/``, ``anthropic/``,
  ``gemini/``, ``vertex_ai/`` (docs.litellm.ai/docs/completion/prompt_caching, last updated 2026-10-07);
  "Simply use the `litellm_proxy/` prefix before the model name" (docs.litellm.ai/docs/providers/litellm_proxy,
  2026-10-20); "Provider Route on LiteLLM | `azure/`, `azure/o_series/`, `azure/gpt5_series/`"
  (docs.litellm.ai/docs/providers/azure, 2026-10-08) — Azure routes carry a *deployment* name, which is the
  model id only when the deployment was named after it.
* OpenRouter: ``openrouter/anthropic/claude-3.5-sonnet`` (LiteLLM's OpenRouter page, mintlify mirror): dots
  where Anthropic writes hyphens.

The rules, in order (each applies only when its shape is there):

1. strip surrounding whitespace and lowercase;
2. keep the last ``/``-separated segment (every gateway prefix, a Vertex resource path or a Bedrock ARN goes);
3. Bedrock: drop a region prefix (``global.``, ``us.``, ``eu.``, ``apac.``, ``jp.``, ``au.``, ``ca.``,
   ``us-gov.``) before ``anthropic.``, then ``anthropic.``, then a ``-v1:0`` / ``-v1`` version suffix;
4. Vertex: drop ``@…`` (``@20250929``, ``@latest``, ``@default``);
5. a dated snapshot: drop ``-YYYYMMDD``, ``-YYYY-MM-DD`` or ``-latest`` at the end;
6. Claude ids written with dots (OpenRouter): ``claude-sonnet-4.5`` → ``claude-sonnet-4-5``.

An id it cannot read is returned after these steps and nothing else: ``"My-Deployment "`` → ``"my-deployment"``;
it never raises on a string (a non-string raises TypeError). Whether the result is a *known* model is
:func:`ctxlab.tables.model_facts.model_facts`' question. Taught in chapter 01 (whose model counts), used by
chapter 04 (caches are per model).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_BEDROCK = re.compile(r"^(?:(?:global|us|eu|apac|jp|au|ca|us-gov)\.)?anthropic\.(?P<id>.+?)(?:-v\d+(?::\d+)?)?$")
_SNAPSHOT = re.compile(r"(?:-\d{8}|-\d{4}-\d{2}-\d{2}|-latest)$")
_CLAUDE_DOTS = re.compile(r"(?<=\d)\.(?=\d)")


def canonical_model_id(raw: str) -> str:
    """The bare provider id of a model id as written. Chapter 01.

    Example: ``"bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0"`` -> ``"claude-sonnet-4-5"``.
    Example: ``"claude-sonnet-4-5@20250929"`` -> ``"claude-sonnet-4-5"``;
    ``"openrouter/anthropic/claude-3.5-sonnet"`` -> ``"claude-3-5-sonnet"``; ``"gpt-4o-2024-08-06"`` -> ``"gpt-4o"``.
    An id of no known shape comes back stripped and lowercased (``"azure/My-GPT"`` -> ``"my-gpt"``).
    Raises TypeError when ``raw`` is not a string.
    """
    if not isinstance(raw, str):
        raise TypeError(f"canonical_model_id takes a model id string (got {type(raw).__name__})")
    model = raw
    for _ in range(8):  # repeat to a fixed point, so reading an id twice gives the same id (a nested prefix goes too)
        model, before = _read_once(model), model
        if model == before:
            break
    return model


def _read_once(model: str) -> str:
    """Rules 1-6 of the module docstring, applied once."""
    model = model.strip().lower()
    model = next((part for part in reversed(model.split("/")) if part.strip()), model).strip()
    match = _BEDROCK.match(model)
    if match:
        model = match.group("id")
    model = model.split("@", 1)[0] if "@" in model and not model.startswith("@") else model
    model = _SNAPSHOT.sub("", model) or model
    if model.startswith("claude-"):
        model = _CLAUDE_DOTS.sub("-", model)
    return model


def same_letters(model: str, ids: Iterable[str]) -> list[str]:
    """The ``ids`` with the letters and digits of ``model``, whatever the punctuation and case: a typo's shape.
    ``same_letters("gpt4o", ["gpt-4o", "gpt-4.1"])`` → ``["gpt-4o"]``. Used by the CLI's ``--model`` rule and the
    chapters' ``MODEL`` (issue 16)."""
    squashed = re.sub(r"[^0-9a-z]", "", canonical_model_id(model).lower())
    return [i for i in ids if re.sub(r"[^0-9a-z]", "", i.lower()) == squashed]
