"""The backward walk of :func:`ctxlab.context.build_context`, drawn from its report. Taught in chapter 03.

:func:`backward_walk` builds a context under a token budget and draws what the report says, in the order the walk
went: the fixed part (tools + system + head + overhead), the units kept first (the newest unit and the pinned
newest user message), then the units the walk tried, newest first, each kept one filled with a width proportional
to its tokens, up to the budget line; units that fitted but were dropped again (a history must open with a user
message, so rounds older than the oldest kept user message go) in grey; the first unit that does not fit (the cut) in
red, past the line; then one grey band for every older unit, "not counted" (the walk never counts them, so they have
no width of their own).
"""

from __future__ import annotations

from ctxlab.context import BudgetPolicy, Context, UnitReport, build_context
from ctxlab.diagrams.svg import COLORS, Canvas, Diagram
from ctxlab.lab.workbook import load_workbook_conversation, text_table
from ctxlab.messages import Conversation
from ctxlab.tables.profiles import profile_for

WIDTH, LEFT, BAND = 800, 24, 120


def walk_order(context: Context) -> list[UnitReport]:
    """The report's units in the order the walk met them: the pinned ones (newest unit first), then the others
    newest first. ``walk_order(build_context(conv))[0].reason`` → ``"newest unit"``. Chapter 03."""
    first = [r for r in reversed(context.report) if r.reason == "newest unit"]
    pinned = [r for r in reversed(context.report) if r.decision == "pinned" and r not in first]
    rest = [r for r in reversed(context.report) if r not in first and r not in pinned]
    return first + pinned + rest


def first_not_fitting(context: Context) -> UnitReport | None:
    """The unit where the walk stopped: dropped although counted, reason ``"needs N, M left"``; None when
    everything fitted. Chapter 03."""
    return next((r for r in walk_order(context) if r.decision == "dropped" and r.tokens is not None
                 and r.reason.startswith("needs ")), None)


def backward_walk(conversation: Conversation | None = None, budget_tokens: int = 8_000) -> Diagram:
    """Draw ``build_context(conversation, BudgetPolicy(budget_tokens=...))``'s walk (tokens; default the bundled
    sample at 8,000, where the walk stops at a 1,270-token unit). ``data``: ``{"budget", "fixed", "cut"
    (the first unit that did not fit, its index, or None), "kept": [unit indexes], "dropped_after": [unit indexes
    that fitted and were dropped again], "not_counted": n}``. Raises
    what ``build_context`` raises (BudgetError when even the newest unit does not fit). Chapter 03."""
    conv = conversation if conversation is not None else load_workbook_conversation(None)
    profile = profile_for(conv.model, conv.provider)
    ctx = build_context(conv, BudgetPolicy(budget_tokens=budget_tokens), profile=profile)
    order, cut = walk_order(ctx), first_not_fitting(ctx)
    fixed = ctx.total_tokens - ctx.message_tokens
    counted = [r for r in order if r.decision != "dropped"]
    uncounted = [r for r in order if r.decision == "dropped" and r.tokens is None]  # past the cut, never counted
    undone = [r for r in order if r.decision == "dropped" and r.tokens is not None and r is not cut]  # fitted, dropped
    span = ctx.budget_tokens + (cut.tokens if cut else 0)
    scale = (WIDTH - 2 * LEFT - BAND - 16) / max(span, 1)
    canvas = Canvas(WIDTH, 250, "The backward walk of build_context")
    canvas.text(LEFT, 26, f"build_context walks back from the newest unit (budget {ctx.budget_tokens:,} tokens)",
                size=15, weight="bold")
    canvas.text(LEFT, 46, "kept units filled, newest first → the first that does not fit is the cut; older ones "
                "are never counted", size=12, fill=COLORS["muted"])
    y, x = 80, float(LEFT)
    canvas.rect(x, y, fixed * scale, 40, COLORS["tools"], cls="fixed", label=f"fixed part: {fixed:,} tokens")
    canvas.text(x + 2, y + 56, f"fixed {fixed:,}", size=11, fill=COLORS["muted"])
    x += fixed * scale
    for r in counted:
        fill = COLORS["pinned"] if r.decision == "pinned" or r.reason == "newest unit" else COLORS["kept"]
        canvas.rect(x, y, r.tokens * scale, 40, fill, stroke="#ffffff", stroke_width=0.6, cls=f"unit {r.decision}",
                    label=f"unit {r.unit} ({r.kind}, {r.first_id}): {r.tokens:,} tokens, {r.reason}")
        x += (r.tokens or 0) * scale
    for r in undone:
        canvas.rect(x, y, r.tokens * scale, 40, COLORS["entry"], stroke="#ffffff", stroke_width=0.6,
                    cls="unit dropped", label=f"unit {r.unit} ({r.kind}, {r.first_id}): {r.tokens:,} tokens, "
                                              f"fitted, then dropped: {r.reason}")
        x += r.tokens * scale
    if cut is not None:
        canvas.rect(x, y, cut.tokens * scale, 40, COLORS["cut"], stroke=COLORS["ink"], stroke_width=1.5,
                    cls="unit cut", label=f"unit {cut.unit} ({cut.first_id}): {cut.reason}")
        canvas.text(x + cut.tokens * scale / 2, y - 8, f"unit {cut.unit}: {cut.reason}", anchor="middle", size=12,
                    fill=COLORS["cut"], weight="bold", cls="cut-label")
        x += cut.tokens * scale
    budget_x = LEFT + ctx.budget_tokens * scale
    canvas.line(budget_x, y - 22, budget_x, y + 64, COLORS["ink"], width=2, dash="6 4", cls="budget")
    canvas.text(budget_x, y + 78, f"budget {ctx.budget_tokens:,}", anchor="middle", size=12)
    band_x = WIDTH - LEFT - BAND
    canvas.rect(band_x, y, BAND, 40, COLORS["uncounted"], stroke=COLORS["muted"], cls="not-counted",
                label=f"{len(uncounted)} older units, not counted")
    canvas.text(band_x + BAND / 2, y + 25, f"{len(uncounted)} not counted", anchor="middle", size=12)
    canvas.line(x + 4, y + 20, band_x - 4, y + 20, COLORS["muted"], dash="2 3")
    legend = (("fixed part", COLORS["tools"]), ("pinned / newest", COLORS["pinned"]), ("kept", COLORS["kept"]),
              ("fitted, dropped", COLORS["entry"]), ("the cut", COLORS["cut"]), ("not counted", COLORS["uncounted"]))
    for i, (name, color) in enumerate(legend):
        canvas.rect(LEFT + i * 128, 190, 14, 14, color, stroke=COLORS["muted"], stroke_width=0.5)
        canvas.text(LEFT + i * 128 + 20, 202, name, size=12)
    canvas.text(LEFT, 232, "← newest (walked first)" + " " * 8 + "direction of the walk" + " " * 8 + "oldest →",
                size=12, fill=COLORS["muted"])
    rows = [("fixed part", "tools + system + head + overhead", fixed)]
    rows += [(f"unit {r.unit}", r.reason, r.tokens) for r in counted[:2]]
    if len(counted) > 2:
        rows.append((f"{len(counted) - 2} units", "fits", sum(r.tokens or 0 for r in counted[2:])))
    for reason in dict.fromkeys(r.reason for r in undone):  # e.g. "the provider needs a user message first"
        alike = [r for r in undone if r.reason == reason]
        rows.append((f"{len(alike)} units", f"fitted, then dropped: {reason}", sum(r.tokens for r in alike)))
    if cut is not None:
        rows.append((f"unit {cut.unit}", f"the cut: {cut.reason}", cut.tokens))
    rows.append((f"{len(uncounted)} units", "not counted (older than the cut)", "—"))
    text = (f"budget {ctx.budget_tokens:,} tokens: {len(counted)} units kept, {ctx.total_tokens:,} tokens sent\n"
            + text_table(rows, ["units", "what the walk did", "tokens"]))
    return Diagram("backward_walk", canvas.svg(), text,
                   {"budget": ctx.budget_tokens, "fixed": fixed, "cut": cut.unit if cut else None,
                    "kept": [r.unit for r in counted], "dropped_after": [r.unit for r in undone],
                    "not_counted": len(uncounted), "context": ctx})
