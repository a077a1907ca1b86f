"""The request layout: tools → system → messages, block widths in proportion to tokens. Taught in chapter 04.

:func:`request_layout` draws, for a few model calls, the request as the prefix cache sees it
(:func:`ctxlab.render.render_blocks`, through a ``full`` replay under Anthropic's rules): one bar per call, one
segment per block, its width proportional to the block's tokens; a red marker where ctxlab's renderer puts an
Anthropic ``cache_control`` breakpoint (:func:`ctxlab.render.default_breakpoints`); under each bar, the ticks of
OpenAI's automatic prefix — nothing below the rule's minimum (1,024 tokens), then a step every 128 tokens
(:func:`ctxlab.tables.cache_rules.rule_for` of an automatic-cache model, default ``gpt-4.1``). Simplified on
purpose: both providers are drawn on the one token axis of the replay's counter (Claude's estimate).
"""

from __future__ import annotations

from typing import Sequence

from ctxlab.cache_openai import floor_to
from ctxlab.diagrams.svg import COLORS, Canvas, Diagram
from ctxlab.lab.replays import REPLAYS
from ctxlab.lab.workbook import load_workbook_conversation, text_table
from ctxlab.messages import Conversation
from ctxlab.render import RenderedRequest
from ctxlab.tables.cache_rules import rule_for

WIDTH, LEFT, RIGHT, ROW = 800, 112, 24, 92


def block_color(kind: str, label: str) -> str:
    """The fill of one block: by kind (tools, system), messages by role (their label's first word). Chapter 04."""
    if kind != "message":
        return COLORS[kind]
    word = label.split(" ", 1)[0]
    return COLORS["tool"] if word.startswith("tool") else COLORS.get(word, COLORS["message"])


def openai_steps(total_tokens: int, min_tokens: int, step: int) -> list[int]:
    """The prefix lengths OpenAI's automatic cache can read for a prompt of ``total_tokens``: ``min_tokens``,
    then every ``step`` above it, up to the total rounded down to ``step``.
    ``openai_steps(1_474, 1_024, 128)`` → [1024, 1152, 1280, 1408]. Chapter 04."""
    if total_tokens < min_tokens:
        return []
    return list(range(min_tokens, floor_to(total_tokens, step) + 1, step))


def request_layout(conversation: Conversation | None = None, calls: Sequence[int] = (1, 2, 3), *,
                   openai_model: str = "gpt-4.1") -> Diagram:
    """The requests of ``calls`` (1-based model-call indexes; default the bundled sample's first three) as blocks.

    ``conversation``: None for the bundled sample (``load_workbook_conversation(None)``). The Diagram's ``data``:
    ``{"calls": [{"call", "blocks": [(kind, label, tokens)], "breakpoints": [block index], "openai_steps"}], ...}``
    (tokens under the replay's counter). Raises KeyError naming a call the replay does not have. Chapter 04.
    """
    conv = conversation if conversation is not None else load_workbook_conversation(None)
    result = REPLAYS.replay(conv, "full", provider="anthropic")
    by_call = {rec.call.index: rec.request for rec in result.records if rec.request is not None}
    missing = [c for c in calls if c not in by_call]
    if missing:
        raise KeyError(f"no replayed call {missing[0]} (calls 1 to {max(by_call, default=0)})")
    requests: list[tuple[int, RenderedRequest]] = [(c, by_call[c]) for c in calls]
    rule = rule_for(openai_model, "openai")
    low, step = rule.min_tokens or 0, rule.increment_tokens or 1
    most = max(r.total_tokens for _, r in requests)
    scale = (WIDTH - LEFT - RIGHT) / max(most, 1)
    canvas = Canvas(WIDTH, 70 + ROW * len(requests) + 40, "Request layout: tools, system, messages")
    canvas.text(16, 24, "The request as the cache sees it: tools → system → messages (width ∝ tokens)",
                size=15, weight="bold")
    canvas.text(16, 44, f"▼ Anthropic cache_control breakpoint (ctxlab's renderer) · | OpenAI prefix steps: from "
                f"{low:,}, every {step:,} tokens ({openai_model})", size=12, fill=COLORS["muted"])
    rows, data = [], []
    for k, (call, req) in enumerate(requests):
        y = 78 + k * ROW
        canvas.text(LEFT - 8, y + 17, f"call {call}", anchor="end", weight="bold")
        canvas.text(LEFT - 8, y + 33, f"{req.total_tokens:,} tok", anchor="end", size=11, fill=COLORS["muted"])
        x = float(LEFT)
        for i, b in enumerate(req.blocks):
            w = b.tokens * scale
            canvas.rect(x, y, w, 26, block_color(b.kind, b.label), stroke="#ffffff", stroke_width=0.5,
                        cls=f"block {b.kind}", label=f"{b.label}: {b.tokens:,} tokens")
            if b.breakpoint:
                canvas.polygon([(x + w - 5, y - 10), (x + w + 5, y - 10), (x + w, y - 1)], COLORS["accent"],
                               cls="breakpoint", label=f"cache_control after {b.label}")
            x += w
        for kind in ("tools", "system"):  # name the head's two sections inside the bar when they are wide enough
            idx = [i for i, b in enumerate(req.blocks) if b.kind == kind]
            if idx:
                x0 = LEFT + req.cum_tokens[idx[0]] * scale - req.blocks[idx[0]].tokens * scale
                w = sum(req.blocks[i].tokens for i in idx) * scale
                if w > 44:
                    canvas.text(x0 + w / 2, y + 17, kind, anchor="middle", size=11, fill="#ffffff", weight="bold")
        steps = openai_steps(req.total_tokens, low, step)
        for s in steps:
            canvas.line(LEFT + s * scale, y + 30, LEFT + s * scale, y + (42 if s == low else 37), COLORS["blue"],
                        width=1.5 if s == low else 1, cls="openai-step")
        if steps:
            canvas.text(LEFT + low * scale, y + 55, f"OpenAI reads up to {steps[-1]:,}", size=11,
                        fill=COLORS["blue"])
        else:
            canvas.text(LEFT, y + 55, f"under {low:,} tokens: OpenAI caches nothing", size=11, fill=COLORS["blue"])
        part = {kind: sum(b.tokens for b in req.blocks if b.kind == kind) for kind in ("tools", "system", "message")}
        rows.append((call, part["tools"], part["system"], part["message"], req.total_tokens, len(req.breakpoints),
                     steps[-1] if steps else 0))
        data.append({"call": call, "blocks": [(b.kind, b.label, b.tokens) for b in req.blocks],
                     "breakpoints": list(req.breakpoints), "openai_steps": steps})
    legend_y = 78 + ROW * len(requests) + 8
    for i, (name, color) in enumerate((("tools", COLORS["tools"]), ("system", COLORS["system"]),
                                       ("user", COLORS["user"]), ("assistant", COLORS["assistant"]),
                                       ("tool result", COLORS["tool"]))):
        canvas.rect(LEFT + i * 120, legend_y, 14, 14, color)
        canvas.text(LEFT + i * 120 + 20, legend_y + 12, name, size=12)
    text = (f"{conv.id[:40]}: one bar per request, Anthropic's rules, full history\n"
            f"▼ = cache_control breakpoint\n" + text_table(rows, ["call", "tools", "system", "messages", "total",
                                                         "breakpoints", "OpenAI cacheable"]))
    return Diagram("request_layout", canvas.svg(), text,
                   {"calls": data, "openai_min_tokens": low, "openai_step_tokens": step, "scale": scale})
