"""The decision pipeline of :class:`ctxlab.pipeline.PipelineStrategy`, drawn with what a replay did at each stage.
Taught in chapter 08 (the strategy itself in chapter 07).

Unlike :mod:`ctxlab.diagrams.sawtooth` (tokens over time), this is a flow: the stages come from the strategy's own
docstring line (``meter → send | shrink new large results (page or prune) → compact → re-meter``), each box says
what it decides, and under each the number of model calls of a replay that ended there — sent as metered, sent
after shrinking large tool results, or compacted — read from the replay's notes.
"""

from __future__ import annotations

from ctxlab.diagrams.svg import COLORS, Canvas, Diagram
from ctxlab.lab.ch07_compaction import compaction_window
from ctxlab.lab.replays import REPLAYS
from ctxlab.lab.workbook import load_workbook_conversation, text_table
from ctxlab.messages import Conversation
from ctxlab.pipeline import PipelineStrategy

WIDTH, BOX_W, BOX_H, TOP = 800, 170, 70, 70
DECIDES = {"meter": "count the context (or anchor on the last usage)",
           "send": "under the trigger: send it as it is",
           "shrink new large results (page or prune)": "page or prune tool results new since the last call",
           "compact": "still over: one summary down to the target",
           "re-meter": "count again, record the call"}


def stages() -> list[tuple[str, ...]]:
    """The pipeline's stages in order, alternatives grouped, from :class:`~ctxlab.pipeline.PipelineStrategy`'s
    docstring: ``[("meter",), ("send", "shrink new large results (page or prune)"), ("compact",), ("re-meter",)]``.
    Chapter 08."""
    line = (PipelineStrategy.__doc__ or "").strip().splitlines()[0].rstrip(".")
    return [tuple(part.strip() for part in step.split("|")) for step in line.split("→")]


def ended_at(notes: tuple[str, ...]) -> str:
    """The stage where one call's decision ended, from its notes: ``"compact"`` when it compacted, else
    ``"shrink new large results (page or prune)"`` when results were shrunk, else ``"send"``. Chapter 08."""
    if any(n.startswith("compacted") for n in notes):
        return "compact"
    if any("paged or pruned" in n for n in notes):
        return "shrink new large results (page or prune)"
    return "send"


def decision_pipeline(conversation: Conversation | None = None, window: int | None = None) -> Diagram:
    """Draw the pipeline with how many calls of ``conversation``'s ``pipeline`` replay (default the bundled sample
    at :func:`~ctxlab.lab.ch07_compaction.compaction_window`, 30,000 tokens) ended at each stage. ``data``:
    ``{"stages": stages(), "ended": {stage: calls}, "calls", "compactions"}``. Raises what the replay raises.
    Chapter 08."""
    conv = conversation if conversation is not None else load_workbook_conversation(None)
    window = window or compaction_window(conv)
    result = REPLAYS.replay(conv, "pipeline", window=window)
    ended = {name: 0 for step in stages() for name in step}
    for rec in result.records:
        ended[ended_at(rec.notes)] += 1
    compactions = sum(1 for e in result.new_entries if e.kind == "compaction")
    steps = stages()
    canvas = Canvas(WIDTH, TOP + 2 * BOX_H + 90, "The decision pipeline")
    canvas.text(24, 26, f"the decision pipeline before each call ({len(result.records)} calls, window {window:,})",
                size=15, weight="bold")
    canvas.text(24, 46, "each stage runs only when the one before was not enough; the count is calls that ended there",
                size=12, fill=COLORS["muted"])
    gap = (WIDTH - 48 - len(steps) * BOX_W) / max(len(steps) - 1, 1)
    for i, step in enumerate(steps):
        x = 24 + i * (BOX_W + gap)
        for j, name in enumerate(step):
            y = TOP + j * (BOX_H + 20)
            ends = name in ("send", "shrink new large results (page or prune)", "compact")
            canvas.rect(x, y, BOX_W, BOX_H, "#f4f7fb", stroke=COLORS["blue"], stroke_width=1.5, cls="stage",
                        label=f"{name}: {DECIDES.get(name, '')}")
            canvas.text(x + 8, y + 20, name if len(name) <= 24 else name[:22] + "…", size=13, weight="bold")
            words, line, lines = DECIDES.get(name, "").split(), "", []
            for w in words:  # wrap the decision into the box
                if len(line) + len(w) > 26:
                    lines.append(line)
                    line = ""
                line = f"{line} {w}".strip()
            for k, text in enumerate(lines + [line]):
                canvas.text(x + 8, y + 36 + 13 * k, text, size=11, fill=COLORS["muted"])
            if ends:
                canvas.text(x + BOX_W - 8, y + BOX_H - 6, _calls(ended[name]), size=12, anchor="end",
                            fill=COLORS["accent"], weight="bold", cls="ended")
        if i < len(steps) - 1:
            ax = x + BOX_W
            canvas.line(ax + 4, TOP + BOX_H / 2, ax + gap - 8, TOP + BOX_H / 2, COLORS["ink"], width=1.5)
            canvas.polygon([(ax + gap - 8, TOP + BOX_H / 2 - 5), (ax + gap - 2, TOP + BOX_H / 2),
                            (ax + gap - 8, TOP + BOX_H / 2 + 5)], COLORS["ink"])
    rows = [(" | ".join(step), ", ".join(f"{_calls(ended[n])} at {n.split()[0]}" if len(step) > 1 else _calls(ended[n])
                                         for n in step if n in ended and n not in ("meter", "re-meter"))
             or "every call") for step in steps]
    text = (f"pipeline at {window:,} tokens: {_calls(len(result.records))}, "
            f"{compactions} {'compaction' if compactions == 1 else 'compactions'}\n"
            + text_table(rows, ["stage", "calls that ended there"]))
    return Diagram("decision_pipeline", canvas.svg(), text,
                   {"stages": steps, "ended": ended, "calls": len(result.records), "compactions": compactions})


def _calls(n: int) -> str:
    return f"{n} call" if n == 1 else f"{n} calls"
