"""What a change between two requests does to Anthropic's three cache levels: dated data with its source.

Anthropic's prompt cache follows the hierarchy tools → system → messages; a change at one level
invalidates that level and every later one. Each row of :data:`ANTHROPIC_INVALIDATION` names a change,
the request parameter it is (``param``; None for a change to the content itself, which the digest
chain already sees), the levels it invalidates and the doc's table row. :func:`first_level` says where
the renderer salts the digest chain for a parameter (``render.py``): a change of ``tool_choice``, of
whether images are present or of the thinking setting makes every message block's prefix new, so the
simulators miss from the first message on while tools and system still read. Chapter 04.

Simplified on purpose: "images present" is one flag (adding a second image to a prompt that already has one
is a new block, not a new salt); the model-specific rows (thinking parameters, effort) are taken at their
documented minimum: the messages level.
"""

from __future__ import annotations

from dataclasses import dataclass

LEVELS = ("tools", "system", "messages")
PAGE = ("https://platform.claude.com/docs/en/build-with-claude/prompt-caching (text as captured in "
        "gpambrozio/ClaudeDocs snapshot ff5b8ed, 2026-08-22; read 2026-12-02)")
HIERARCHY = ("the cache follows the hierarchy: `tools` → `system` → `messages`. Changes at each level invalidate "
             "that level and all subsequent levels.")
STRIPPING = ("On Opus 4.5+ and Sonnet 4.6+, thinking blocks are preserved by default, so the cache remains valid "
             "(✓). On earlier Opus/Sonnet models and all Haiku models, all previously-cached thinking blocks are "
             "stripped from context, and any messages that follow those thinking blocks are removed from the "
             "cache (✘).")


@dataclass(frozen=True)
class Invalidation:
    """One row: ``change`` (as the doc names it), the request ``param`` it is (None: content, or not simulated),
    the ``invalidated`` levels in :data:`LEVELS` order, and the doc's ``quote``. Chapter 04."""

    change: str
    param: str | None
    invalidated: tuple[str, ...]
    quote: str
    simulated: bool = True

    @property
    def survives(self) -> tuple[str, ...]:
        """The levels that still read: ``("tools", "system")`` for tool_choice."""
        return tuple(level for level in LEVELS if level not in self.invalidated)


ALL, SYSTEM_ON, MESSAGES = LEVELS, LEVELS[1:], LEVELS[2:]
ANTHROPIC_INVALIDATION: tuple[Invalidation, ...] = (
    Invalidation("tool definitions", None, ALL, "| **Tool definitions** | ✘ | ✘ | ✘ |"),
    Invalidation("web search toggle", "web_search", SYSTEM_ON, "| **Web search toggle** | ✓ | ✘ | ✘ |", False),
    Invalidation("citations toggle", "citations", SYSTEM_ON, "| **Citations toggle** | ✓ | ✘ | ✘ |", False),
    Invalidation("speed setting", "speed", SYSTEM_ON, "| **Speed setting** | ✓ | ✘ | ✘ |", False),
    Invalidation("system prompt", None, SYSTEM_ON, HIERARCHY),
    Invalidation("tool choice", "tool_choice", MESSAGES, "| **Tool choice** | ✓ | ✓ | ✘ | Changes to "
                 "`tool_choice` parameter only affect message blocks |"),
    Invalidation("images", "images", MESSAGES, "| **Images** | ✓ | ✓ | ✘ | Adding/removing images anywhere in the "
                 "prompt affects message blocks |"),
    Invalidation("thinking parameters", "thinking", MESSAGES,
                 "| **Thinking parameters** | Model-specific | Model-specific | ✘ |"),
    Invalidation("effort setting", "effort", MESSAGES, "| **Effort setting** | Model-specific | Model-specific | ✘ |",
                 False),
    Invalidation("non-tool-result user turn with thinking (last-turn-only models)", "stripped_thinking", MESSAGES,
                 STRIPPING),
    Invalidation("model", "model", ALL, "caches are per model (cache isolation)"),
)


def row(param: str) -> Invalidation:
    """The row for a request parameter: ``row("tool_choice").survives`` → ``("tools", "system")``. Raises KeyError
    naming the parameters the table knows. Chapter 04."""
    for r in ANTHROPIC_INVALIDATION:
        if r.param == param:
            return r
    raise KeyError(f"no invalidation row for {param!r}; known: "
                   f"{', '.join(r.param for r in ANTHROPIC_INVALIDATION if r.param)}")


def first_level(param: str) -> str:
    """The first level a change of ``param`` invalidates, where the renderer salts the chain:
    ``first_level("tool_choice")`` → ``"messages"``, ``first_level("web_search")`` → ``"system"``. Chapter 04."""
    return row(param).invalidated[0]
