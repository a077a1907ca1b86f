"""The sawtooth of chapter 07: context tokens per model call under ``compaction``, with the trigger, the target and
the floor drawn from the replay's own numbers. Taught in chapter 07.

Unlike :mod:`ctxlab.diagrams.walk` (one context, one call), this draws a whole replay: the line is what each call
sent (:class:`~ctxlab.lab.ch07_compaction.SawtoothState`), the dashed lines are the window, the trigger
(``trigger_ratio`` × window) and the target (``target_ratio`` × window); each compaction is a red marker, and where
the compaction could not reach the target because the floor (tools + system + newest user message + newest unit +
summary room) was higher, the target it really aimed at — the floor — is drawn as a short orange bar.
"""

from __future__ import annotations

from ctxlab.diagrams.svg import COLORS, Canvas, Diagram
from ctxlab.lab.ch07_compaction import compaction_window, landed_far_below, policy_replay, sawtooth as sawtooth_state
from ctxlab.lab.workbook import load_workbook_conversation, text_table
from ctxlab.messages import Conversation

WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 800, 300, 64, 110, 44, 40


def sawtooth(conversation: Conversation | None = None, window: int | None = None, trigger_ratio: float = 0.8,
             target_ratio: float = 0.5) -> Diagram:
    """Draw the compaction replay of ``conversation`` (default the bundled sample) at ``window`` tokens (default
    :func:`~ctxlab.lab.ch07_compaction.compaction_window`; the sample: 30,000, compactions at calls 31 and 32, the
    first aiming at 26,997 tokens because the 24,000-token CI log is in the floor). ``data``: ``{"window",
    "trigger", "target", "tokens" (per call), "compactions": [call, ...], "floors": {call: tokens aimed at, when
    above the target}}``. Raises what the replay raises (a CtxlabError when no context can be built). Chapter 07."""
    conv = conversation if conversation is not None else load_workbook_conversation(None)
    window = window or compaction_window(conv)
    state = sawtooth_state(policy_replay(conv, window, trigger_ratio, target_ratio), window, trigger_ratio,
                           target_ratio)
    trigger, target = int(state.trigger_ratio * window), int(state.target_ratio * window)
    floors = {c.call: c.target_tokens for c in state.compactions if c.target_tokens and c.target_tokens > target}
    tokens = state.context_tokens
    top = max(window, state.max_context, 1)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(call: int) -> float:  # calls are numbered from 1
        return LEFT + (call - 1) * plot_w / max(len(tokens) - 1, 1)

    def y(t: float) -> float:
        return TOP + plot_h * (1 - t / top)

    canvas = Canvas(WIDTH, HEIGHT, "The compaction sawtooth")
    canvas.text(LEFT, 24, f"compaction at {window:,} tokens: context sent per call", size=15, weight="bold")
    for name, value, color in (("window", window, COLORS["ink"]), ("trigger", trigger, COLORS["accent"]),
                               ("target", target, COLORS["blue"])):
        canvas.line(LEFT, y(value), LEFT + plot_w, y(value), color, dash="6 4", cls=f"level {name}")
        canvas.text(LEFT + plot_w + 6, y(value) + 4, f"{name} {value:,}", size=12, fill=color)
    canvas.line(LEFT, TOP + plot_h, LEFT + plot_w, TOP + plot_h, COLORS["muted"])
    canvas.polyline([(x(i + 1), y(t)) for i, t in enumerate(tokens)], COLORS["kept"], cls="context")
    for c in state.compactions:
        cx = x(c.call)
        canvas.polygon([(cx - 6, y(c.tokens_after) - 12), (cx + 6, y(c.tokens_after) - 12), (cx, y(c.tokens_after))],
                       COLORS["cut"], cls="compaction",
                       label=f"call {c.call}: compacted {c.tokens_before:,} → {c.tokens_after:,} tokens")
        if c.call in floors:
            canvas.rect(cx - 18, y(floors[c.call]) - 2, 36, 4, COLORS["highlight"], cls="floor",
                        label=f"call {c.call}: target raised to the floor, {floors[c.call]:,} tokens")
            canvas.text(cx + 22, y(floors[c.call]) + 4, f"floor {floors[c.call]:,}", size=11, fill="#a06000")
    canvas.text(LEFT, HEIGHT - 14, f"model call 1 … {len(tokens)}   ▼ compaction   ▬ target raised to the floor",
                size=12, fill=COLORS["muted"])
    rows = [(c.call, c.tokens_before, c.tokens_after, floors.get(c.call, target),
             "floor (target raised)" if c.call in floors else
             "target (next unit too big)" if landed_far_below(c) else "target") for c in state.compactions]
    text = (f"window {window:,}, trigger {trigger:,}, target {target:,}; {len(tokens)} calls, "
            f"largest context {state.max_context:,}\n"
            + text_table(rows, ["compaction at call", "before", "after", "aimed at", "which"]))
    return Diagram("sawtooth", canvas.svg(), text,
                   {"window": window, "trigger": trigger, "target": target, "tokens": list(tokens),
                    "compactions": list(state.compaction_calls), "floors": floors})
