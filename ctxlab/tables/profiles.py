"""Model profiles: the facts about a model family that token accounting and budgets need.

A :class:`ModelProfile` says how big the context window is, which tokenizer counts it, what a
message and a request cost on top of their text, whether the first message must come from the
user, and how images and earlier thinking count. Each fact is dated data with its source.

Where a fact comes from (issue 13): :func:`profile_for` reads the model's row of the dated per-model table
:func:`ctxlab.tables.model_facts.model_facts` (every value with its page, quote and read date) for the thinking
rule, the hidden tool-use prompt per ``tool_choice``, the o200k calibration factor, the output and input limits,
and the context window where the provider documents it (status ``documented``). Other windows come from the
maintained price table ``genai-prices`` (installed, offline); the fallback numbers below are used only when
neither knows the model. A model the table does not know keeps the family rules below (the Claude fallback:
346-token tool prompt, earlier thinking stripped, the pooled calibration factor).

Simplified on purpose: Anthropic does not publish its tokenizer, so Claude profiles count with
``o200k_base`` and say so (``tokenizer_exact=False``); ``calibration`` scales those counts by the Claude/o200k
ratio measured from recorded usage (``lab/calibration.py``), per tokenizer generation. The exact count is
Anthropic's ``count_tokens`` endpoint, which ctxlab does not call (it stays offline). Taught in chapter 01.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import date
from functools import lru_cache
from typing import Literal

from ctxlab.base import validate
from ctxlab.base.errors import CtxlabError
from ctxlab.tables.model_facts import Fact, ModelFacts, ToolPrompt, UnknownModelError, families, model_facts
from ctxlab.tables.model_ids import canonical_model_id
from ctxlab.tables.model_rows_anthropic import CAL_POOLED

CHECKED = "2026-12-02"  # the date the rules below were last checked against their sources

OPENAI_COUNTING_SOURCE = (
    "OpenAI cookbook, 'How to count tokens with tiktoken' (num_tokens_from_messages and the "
    "function-definition recipe): 3 tokens per message, +1 per name, +3 priming per request."
)
ANTHROPIC_SOURCE = ("Anthropic docs: 'Vision' (image tokens ~= width*height/750), Messages API (first message "
                    "must be user)")
ANTHROPIC_FALLBACK_SOURCE = (
    "a Claude model not in ctxlab.tables.model_facts: 'Context windows' before 2026-04-28 (earlier turns' thinking "
    "stripped) and 'Tool use' pricing before 2026-05-29 (346-token tool-use system prompt with tool_choice auto)"
)
COUNT_TOKENS = "Anthropic's POST /v1/messages/count_tokens"
THINKING = {"keep_all": "all", "last_turn_only": "current_turn"}  # model_facts thinking_rule -> profile thinking


@dataclass(frozen=True)
class ModelProfile:
    """What ctxlab assumes about one model family. Token figures are in tokens.

    ``thinking``: ``"none"`` (earlier reasoning is never sent back), ``"current_turn"`` (thinking
    of the current tool-use loop is sent, earlier turns' thinking is stripped — Anthropic's "keep the
    last turn only" models), or ``"all"`` (Anthropic's "keep all prior turns": earlier thinking counts as
    input). ``images``: ``"anthropic"`` (w*h/750, at most 1,600 per image) or ``"openai"``
    (85 + 170 per 512-px tile, high detail) — see :func:`ctxlab.tokens.image_tokens`.
    ``tool_system_tokens``: the hidden tool-use prompt with ``tool_choice`` auto (``tool_prompt`` holds every
    choice: :meth:`tool_prompt_tokens`). ``max_output_tokens`` / ``max_input_tokens``: the provider's limits,
    None when not known. Chapter 01.
    """

    name: str
    provider: Literal["openai", "anthropic", "other"]
    context_window: int
    tokenizer: str = "o200k_base"
    tokenizer_exact: bool = True
    calibration: float = 1.0  # multiply o200k counts by this for a tokenizer we can only approximate
    per_message_tokens: int = 3
    per_name_tokens: int = 1
    per_request_tokens: int = 0
    tool_system_tokens: int = 0  # hidden system prompt a provider adds when tools are present (tool_choice auto)
    requires_user_first: bool = False
    thinking: Literal["none", "current_turn", "all"] = "none"
    images: Literal["anthropic", "openai"] = "openai"
    window_source: str = ""
    source: str = ""
    checked: str = CHECKED
    tool_prompt: ToolPrompt | None = None
    max_output_tokens: int | None = None
    max_input_tokens: int | None = None
    calibration_source: str = ""

    def budget_tokens(self, input_ratio: float = 0.9, max_tokens: int | None = None) -> int:
        """The default token budget: ``input_ratio`` of the window (the texts' shortcut: 200,000 → 180,000 at 0.9),
        never above the model's input limit (GPT-5: 272,000 of a 400,000 window, so 272,000 rather than 360,000)
        and, given the reply's ``max_tokens``, never above :meth:`input_limit`. Chapter 03."""
        budget = min(int(self.context_window * input_ratio), self.max_input_tokens or self.context_window)
        return budget if max_tokens is None else min(budget, self.input_limit(max_tokens))

    def tool_prompt_tokens(self, tool_choice: str = "auto") -> int:
        """Tokens of the hidden tool-use system prompt for a ``tool_choice`` (auto, none, any, tool), with at least
        one tool. ``profile_for("claude-sonnet-4-6").tool_prompt_tokens("any")`` → 589 (Anthropic 'Tool use with
        Claude', Pricing, mirror snapshot 2026-08-22). Models without a per-choice table give
        ``tool_system_tokens`` for every choice. Raises CtxlabError for another choice. Chapter 01."""
        if self.tool_prompt is not None:
            return self.tool_prompt.for_choice(tool_choice)
        if tool_choice not in ("auto", "none", "any", "tool"):
            raise CtxlabError(f"tool_choice must be auto, none, any or tool (got {tool_choice!r})")
        return self.tool_system_tokens

    def input_limit(self, max_tokens: int = 0) -> int:
        """The most input tokens a request asking for ``max_tokens`` of output can carry and still get the whole
        reply: ``min(max_input_tokens or window, window - max_tokens)``. GPT-5: 272,000 of 400,000 (input + 128,000
        output). Anthropic: input + ``max_tokens`` within the window ("On earlier models, the API returns a
        validation error instead"; Claude 4.5+ accept the request and stop at the window, 'Context windows' /
        'Thinking', mirror snapshot 2026-08-22). Raises CtxlabError when ``max_tokens`` is not a whole number
        >= 0 or is above ``max_output_tokens``. Chapter 03."""
        max_tokens = validate.tokens("max_tokens", max_tokens, allow_zero=True, allow_none=False)
        if self.max_output_tokens is not None and max_tokens > self.max_output_tokens:
            raise CtxlabError(f"max_tokens {max_tokens:,} is above {self.name}'s max_output_tokens "
                              f"{self.max_output_tokens:,}: ask for fewer")
        return max(0, min(self.max_input_tokens or self.context_window, self.context_window - max_tokens))

    @property
    def tokenizer_note(self) -> str:
        """A warning to print wherever this profile's counts are shown, or '' when they are exact."""
        if self.tokenizer_exact:
            return ""
        whose = f"{self.provider}'s tokenizer" if self.provider != "other" else "this model's own tokenizer"
        note = (f"{self.name}: counted with {self.tokenizer} × {self.calibration:g}, which is not "
                f"{whose}; counts are estimates.")
        if self.provider == "anthropic":
            note += f" The exact count is {COUNT_TOKENS} (not called: ctxlab stays offline)."
        return note


# Families: (pattern on the model id, profile template). First match wins.
_OPENAI = ModelProfile(
    name="openai-o200k", provider="openai", context_window=128_000, tokenizer="o200k_base",
    per_request_tokens=3, images="openai", thinking="none", source=OPENAI_COUNTING_SOURCE,
)
_CLAUDE = ModelProfile(
    name="claude", provider="anthropic", context_window=200_000, tokenizer="o200k_base",
    tokenizer_exact=False, calibration=CAL_POOLED, per_message_tokens=3, per_name_tokens=0, per_request_tokens=0,
    tool_system_tokens=346, requires_user_first=True, thinking="current_turn", images="anthropic",
    source=f"{ANTHROPIC_SOURCE}; {ANTHROPIC_FALLBACK_SOURCE}",
    calibration_source="ctxlab pooled calibration, CAL_POOLED (ctxlab/tables/model_rows_anthropic.py)",
)
_FAMILIES: tuple[tuple[str, ModelProfile], ...] = (
    (r"^claude-", _CLAUDE),
    (r"^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|o1|o3|o4|chatgpt-4o)", _OPENAI),
    (r"^(gpt-4|gpt-3\.5)", replace(_OPENAI, name="openai-cl100k", tokenizer="cl100k_base", context_window=8_192)),
)
_GENERIC = ModelProfile(
    name="generic", provider="other", context_window=128_000, tokenizer="o200k_base",
    tokenizer_exact=False, source="No documented rule: OpenAI's chat overheads used as a stand-in.",
)


# Claude tokens per o200k token by family, read from the table's o200k_calibration (the one place they live:
# ctxlab/tables/model_rows_anthropic.py, measured by ctxlab.lab.calibration on 2026-12-02). A view, not a copy.
CLAUDE_CALIBRATION: tuple[tuple[str, float], ...] = tuple(
    (family, float(model_facts(family).o200k_calibration.value)) for family in families()
    if model_facts(family).provider == "anthropic")


@lru_cache(maxsize=256)
def window_from_price_table(model: str, provider: str | None = None) -> tuple[int, str] | None:
    """(context window in tokens, source) from ``genai-prices``' bundled snapshot, or None. Chapter 01."""
    try:
        from genai_prices import data_snapshot
        from importlib.metadata import version

        _, info = data_snapshot.get_snapshot().find_provider_model(model, None, provider, None)
    except Exception:  # an unknown model is a normal answer here, not an error
        return None
    if not info.context_window:
        return None
    return int(info.context_window), f"genai-prices {version('genai-prices')} ({info.id})"


def cited(fact: Fact) -> str:
    """One line naming a fact's page and dates: ``"Context windows <url> (mirror ... (2026-08-22); read
    2026-12-02; documented)"``. Chapter 01."""
    s = fact.source
    return f"{s.title} {s.url} ({s.page_date}; read {s.read}; {s.status})"


def _facts(bare: str, on: date | str | None) -> ModelFacts | None:
    try:
        return model_facts(bare, on) if bare else None
    except UnknownModelError:  # not in the dated table: the family rules below hold
        return None


def _from_row(template: ModelProfile, row: ModelFacts) -> ModelProfile:
    """The template with the row's thinking rule, tool prompt, calibration and limits (None values leave it)."""
    changes: dict[str, object] = {}
    sources = []
    if row.thinking_rule.value in THINKING:
        changes["thinking"] = THINKING[row.thinking_rule.value]
        sources.append(f"thinking {row.thinking_rule.value}: {cited(row.thinking_rule)}")
    if isinstance(row.tool_prompt_tokens.value, ToolPrompt):
        changes["tool_prompt"] = row.tool_prompt_tokens.value
        changes["tool_system_tokens"] = row.tool_prompt_tokens.value.auto_none_tokens
        sources.append(f"tool prompt {row.tool_prompt_tokens.value}: {cited(row.tool_prompt_tokens)}")
    if row.o200k_calibration.value is not None and not template.tokenizer_exact:
        changes["calibration"] = float(row.o200k_calibration.value)
        changes["calibration_source"] = f"{row.o200k_calibration.source.quote} [{cited(row.o200k_calibration)}]"
    for name in ("max_output_tokens", "max_input_tokens"):
        value = row.value(name)
        changes[name] = int(value) if isinstance(value, int) else None
    if sources:
        base = template.source.replace(f"; {ANTHROPIC_FALLBACK_SOURCE}", "")
        changes["source"] = "; ".join([base, *sources])
    return replace(template, **changes)


def profile_for(model: str | None, provider: str | None = None, on: date | str | None = None) -> ModelProfile:
    """The profile for a model id. ``profile_for("claude-sonnet-4-6")`` → Claude, window 1,000,000, thinking "all",
    tool prompt 497 (auto) / 589 (any). Ids are read by :func:`ctxlab.tables.model_ids.canonical_model_id`
    (Bedrock, Vertex, LiteLLM and OpenRouter prefixes, dated snapshots): ``"bedrock/us.anthropic.claude-sonnet-4-5-
    20250929-v1:0"`` gets the profile of ``"claude-sonnet-4-5"``.

    The row of :func:`ctxlab.tables.model_facts.model_facts` in force ``on`` (an ISO date; default the read date
    2026-12-02) gives thinking, tool prompt, calibration, output and input limits, and the window where its status
    is ``documented``; other windows come from genai-prices, else the family fallback. Unknown models get the
    ``generic`` profile (o200k, OpenAI overheads, 128k), named so in ``name``. Raises CtxlabError only for an
    ``on`` it cannot read. Chapter 01.
    """
    bare = canonical_model_id(model or "")
    template = next((p for pattern, p in _FAMILIES if re.search(pattern, bare)), _GENERIC)
    if provider == "anthropic" and template is _GENERIC:
        template = _CLAUDE
    row = _facts(bare, on)
    if row is not None:
        template = _from_row(template, row)
    name = bare or template.name
    window_fact = row.context_window_tokens if row is not None else None
    if window_fact is not None and window_fact.value and window_fact.source.status == "documented":
        profile = replace(template, name=name, context_window=int(window_fact.value), window_source=cited(window_fact))
    elif window := (window_from_price_table(bare, provider) if bare else None):
        profile = replace(template, name=name, context_window=window[0], window_source=window[1])
    else:
        profile = replace(template, name=name,
                          window_source=f"ctxlab fallback for the {template.name} family (not in genai-prices)")
    if profile.max_input_tokens is not None and profile.max_input_tokens > profile.context_window:
        profile = replace(profile, max_input_tokens=profile.context_window)
    return profile


def with_window(profile: ModelProfile, context_window: int) -> ModelProfile:
    """The same profile with another window (a learner's what-if). ``with_window(p, 30_000).context_window``
    → 30000. Raises CtxlabError (a ValueError) unless ``context_window`` is a positive whole number of tokens.
    Chapter 03."""
    window = validate.tokens("context_window", context_window, allow_none=False)
    return replace(profile, context_window=window, window_source="set by the caller",
                   max_input_tokens=None if profile.max_input_tokens is None else min(profile.max_input_tokens, window))
