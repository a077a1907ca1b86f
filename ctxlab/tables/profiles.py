"""Model profiles: the facts about a model family that token accounting and budgets need.

A :class:`ModelProfile` says how big the context window is, which tokenizer counts it, what a
message and a request cost on top of their text, whether the first message must come from the
user, and how images and earlier thinking count. Each fact is dated data with its source.

Context windows come from the maintained price table ``genai-prices`` (installed, offline)
wherever it knows the model; the fallback numbers below are used only when it does not.

Simplified on purpose: Anthropic does not publish its tokenizer, so Claude profiles count with
``o200k_base`` and say so (``tokenizer_exact=False``); ``calibration`` scales those counts by
the Claude/o200k ratio measured from recorded usage (``lab/calibration.py``). Taught in chapter 01.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Literal

from ctxlab.base import validate

CHECKED = "2026-11-30"  # the date the rules below were last checked against their sources

OPENAI_COUNTING_SOURCE = (
    "OpenAI cookbook, 'How to count tokens with tiktoken' (num_tokens_from_messages and the "
    "function-definition recipe): 3 tokens per message, +1 per name, +3 priming per request."
)
ANTHROPIC_SOURCE = (
    "Anthropic docs: 'Context windows' (earlier turns' thinking blocks are stripped and do not "
    "count), 'Vision' (image tokens ~= width*height/750), Messages API (first message must be "
    "user), 'Tool use' pricing (346-token tool-use system prompt with tool_choice auto)."
)


@dataclass(frozen=True)
class ModelProfile:
    """What ctxlab assumes about one model family. Token figures are in tokens.

    ``thinking``: ``"none"`` (earlier reasoning is never sent back), ``"current_turn"`` (thinking
    of the current tool-use loop is sent, earlier turns' thinking is stripped — Anthropic), or
    ``"all"``. ``images``: ``"anthropic"`` (w*h/750, at most 1,600 per image) or ``"openai"``
    (85 + 170 per 512-px tile, high detail) — see :func:`ctxlab.tokens.image_tokens`. Chapter 01.
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
    tool_system_tokens: int = 0  # hidden system prompt a provider adds when tools are present
    requires_user_first: bool = False
    thinking: Literal["none", "current_turn", "all"] = "none"
    images: Literal["anthropic", "openai"] = "openai"
    window_source: str = ""
    source: str = ""
    checked: str = CHECKED

    def budget_tokens(self, input_ratio: float = 0.9) -> int:
        """The default token budget: ``input_ratio`` of the window. 200,000 → 180,000 at 0.9."""
        return int(self.context_window * input_ratio)

    @property
    def tokenizer_note(self) -> str:
        """A warning to print wherever this profile's counts are shown, or '' when they are exact."""
        if self.tokenizer_exact:
            return ""
        whose = f"{self.provider}'s tokenizer" if self.provider != "other" else "this model's own tokenizer"
        return (f"{self.name}: counted with {self.tokenizer} x {self.calibration:g}, which is not "
                f"{whose}; counts are estimates.")


# Families: (pattern on the model id, profile template). First match wins.
_OPENAI = ModelProfile(
    name="openai-o200k", provider="openai", context_window=128_000, tokenizer="o200k_base",
    per_request_tokens=3, images="openai", thinking="none", source=OPENAI_COUNTING_SOURCE,
)
_FAMILIES: tuple[tuple[str, ModelProfile], ...] = (
    (r"^claude-", ModelProfile(
        name="claude", provider="anthropic", context_window=200_000, tokenizer="o200k_base",
        tokenizer_exact=False, per_message_tokens=3, per_name_tokens=0, per_request_tokens=0,
        tool_system_tokens=346, requires_user_first=True, thinking="current_turn", images="anthropic",
        source=ANTHROPIC_SOURCE,
    )),
    (r"^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|o1|o3|o4|chatgpt-4o)", _OPENAI),
    (r"^(gpt-4|gpt-3\.5)", replace(_OPENAI, name="openai-cl100k", tokenizer="cl100k_base", context_window=8_192)),
)
_GENERIC = ModelProfile(
    name="generic", provider="other", context_window=128_000, tokenizer="o200k_base",
    tokenizer_exact=False, source="No documented rule: OpenAI's chat overheads used as a stand-in.",
)


def _strip_vendor(model: str) -> str:
    """'openai/gpt-4o' → 'gpt-4o'; 'anthropic.claude-3' → 'claude-3'."""
    return re.sub(r"^[\w.-]+/", "", model).removeprefix("anthropic.")


# Claude tokens per o200k token, measured from recorded usage by ctxlab.lab.calibration (2026-11-30):
#   pi before-compaction.jsonl (claude-opus-4-5): 346,812 / 277,828 = 1.248 over 384 call pairs
#   Claude Code fe5e1c67 (claude-sonnet-4):       100,116 /  74,955 = 1.336 over 163 call pairs
# Reproduce: python -c "from ctxlab.io.formats import load; from ctxlab.lab.calibration import
#   measure_calibration as m; print(m(load(PATH).conversation()))"
CLAUDE_CALIBRATION: tuple[tuple[str, float], ...] = (
    (r"^claude-opus-4-5", 1.248),
    (r"^claude-sonnet-4(-\d{8})?$|^claude-sonnet-4-0", 1.336),
    (r"^claude-", 1.267),  # both files together: 446,928 / 352,783
)


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


def profile_for(model: str | None, provider: str | None = None) -> ModelProfile:
    """The profile for a model id. ``profile_for("claude-sonnet-4-5")`` → Claude, window 200,000.

    Unknown models get the ``generic`` profile (o200k, OpenAI overheads, 128k), named so in
    ``name``. Windows come from genai-prices when it knows the model. Chapter 01.
    """
    bare = _strip_vendor(model or "")
    template = next((p for pattern, p in _FAMILIES if re.search(pattern, bare)), _GENERIC)
    if provider == "anthropic" and template is _GENERIC:
        template = _FAMILIES[0][1]
    if template.provider == "anthropic":
        factor = next((f for pattern, f in CLAUDE_CALIBRATION if re.search(pattern, bare)), 1.267)
        template = replace(template, calibration=factor)
    window = window_from_price_table(bare, provider) if bare else None
    if window:
        tokens, source = window
        return replace(template, name=bare or template.name, context_window=tokens, window_source=source)
    return replace(template, name=bare or template.name,
                   window_source=f"ctxlab fallback for the {template.name} family (not in genai-prices)")


def with_window(profile: ModelProfile, context_window: int) -> ModelProfile:
    """The same profile with another window (a learner's what-if). ``with_window(p, 30_000).context_window``
    → 30000. Raises CtxlabError (a ValueError) unless ``context_window`` is a positive whole number of tokens.
    Chapter 03."""
    window = validate.tokens("context_window", context_window, allow_none=False)
    return replace(profile, context_window=window, window_source="set by the caller")
