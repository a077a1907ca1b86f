"""Tiny SVG primitives for the workbook's diagrams: plain strings, every text XML-escaped, no dependency.

What it holds: :class:`Canvas` (rectangles, lines, polylines, text, built into one standalone ``<svg>``
document) and :class:`Diagram` (what a diagram function returns: ``.svg``, ``.text`` and ``_repr_svg_``
so ``display(d)`` draws it in JupyterLab). Simplified on purpose: coordinates are rounded to one decimal
and attributes are written in a fixed order, so the same data gives the same bytes on every run.
Used by chapters 02, 03, 04, 07 and 08 (each diagram's module names its chapter).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from xml.sax.saxutils import escape, quoteattr

# A palette readable on GitHub's light and dark backgrounds (the SVG paints its own white background).
COLORS = {"tools": "#6b8fd6", "system": "#9b7fd1", "message": "#5fb38a", "user": "#e0a040", "assistant": "#5fb38a",
          "tool": "#7fb5c9", "entry": "#b0b0b0", "kept": "#5fb38a", "pinned": "#2f8a5f", "cut": "#d9534f",
          "uncounted": "#e6e6e6", "ink": "#222222", "muted": "#777777", "accent": "#d9534f", "blue": "#3a6fd0",
          "grid": "#dddddd", "highlight": "#e0a040"}
FONT = "sans-serif"


def num(x: float) -> str:
    """A coordinate as text, one decimal at most: ``num(12.0)`` → ``"12"``, ``num(3.14159)`` → ``"3.1"``.
    Chapter 04 (every diagram uses it)."""
    text = f"{round(float(x), 1):.1f}"
    return text[:-2] if text.endswith(".0") else text


@dataclass
class Canvas:
    """An SVG drawing of ``width`` × ``height`` pixels (its viewBox the same), white background, sans-serif.

    ``c = Canvas(200, 50, "a bar"); c.rect(0, 0, 10, 10, "#000"); c.svg()`` → a standalone ``<svg>`` text
    with a ``<title>`` (``title``, escaped). No scripts, no external references. Chapter 04 (every diagram)."""

    width: int
    height: int
    title: str
    parts: list[str] = field(default_factory=list)

    def rect(self, x: float, y: float, w: float, h: float, fill: str, *, stroke: str | None = None,
             stroke_width: float = 1, opacity: float | None = None, cls: str | None = None,
             label: str | None = None) -> None:
        """A rectangle; ``cls`` becomes its ``class`` (tests find shapes by it), ``label`` a ``<title>`` tooltip."""
        attrs = [("x", num(x)), ("y", num(y)), ("width", num(max(w, 0))), ("height", num(max(h, 0))), ("fill", fill)]
        if stroke:
            attrs += [("stroke", stroke), ("stroke-width", num(stroke_width))]
        if opacity is not None:
            attrs.append(("opacity", num(opacity) if opacity >= 0.1 else f"{opacity:.2f}"))
        self._element("rect", attrs, cls, label)

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str, *, width: float = 1,
             dash: str | None = None, cls: str | None = None, label: str | None = None) -> None:
        """A straight line; ``dash`` an SVG dash pattern such as ``"6 4"``."""
        attrs = [("x1", num(x1)), ("y1", num(y1)), ("x2", num(x2)), ("y2", num(y2)), ("stroke", stroke),
                 ("stroke-width", num(width))]
        if dash:
            attrs.append(("stroke-dasharray", dash))
        self._element("line", attrs, cls, label)

    def polyline(self, points: list[tuple[float, float]], stroke: str, *, width: float = 2,
                 cls: str | None = None) -> None:
        """An open line through ``points`` (pixels)."""
        text = " ".join(f"{num(x)},{num(y)}" for x, y in points)
        self._element("polyline", [("points", text), ("fill", "none"), ("stroke", stroke),
                                   ("stroke-width", num(width))], cls, None)

    def polygon(self, points: list[tuple[float, float]], fill: str, *, cls: str | None = None,
                label: str | None = None) -> None:
        """A filled polygon (a marker, an arrow head)."""
        text = " ".join(f"{num(x)},{num(y)}" for x, y in points)
        self._element("polygon", [("points", text), ("fill", fill)], cls, label)

    def text(self, x: float, y: float, text: str, *, size: int = 13, anchor: str = "start", fill: str = "#222222",
             weight: str | None = None, cls: str | None = None) -> None:
        """A line of text at baseline ``y``; ``anchor``: ``start``, ``middle`` or ``end``. Escaped."""
        attrs = [("x", num(x)), ("y", num(y)), ("font-size", str(size)), ("text-anchor", anchor), ("fill", fill)]
        if weight:
            attrs.append(("font-weight", weight))
        head = " ".join(f"{k}={quoteattr(v)}" for k, v in attrs + ([("class", cls)] if cls else []))
        self.parts.append(f"<text {head}>{escape(text)}</text>")

    def _element(self, tag: str, attrs: list[tuple[str, str]], cls: str | None, label: str | None) -> None:
        head = " ".join(f"{k}={quoteattr(v)}" for k, v in attrs + ([("class", cls)] if cls else []))
        self.parts.append(f"<{tag} {head}><title>{escape(label)}</title></{tag}>" if label else f"<{tag} {head}/>")

    def svg(self) -> str:
        """The standalone SVG document (one string, ends with a newline)."""
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
                f'viewBox="0 0 {self.width} {self.height}" font-family="{FONT}" role="img">')
        body = [head, f"<title>{escape(self.title)}</title>",
                f'<rect x="0" y="0" width="{self.width}" height="{self.height}" fill="#ffffff"/>', *self.parts,
                "</svg>"]
        return "\n".join(body) + "\n"


@dataclass(frozen=True)
class Diagram:
    """A drawn figure: ``name`` (its file under ``docs/figures/``, without ``.svg``), ``svg`` (the document),
    ``text`` (a plain-text description or table, lines ≤ 100 characters, printed under the figure) and
    ``data`` (the numbers it was drawn from, for tests and readers). ``display(d)`` shows the SVG in a
    notebook (``_repr_svg_``). Chapters 02, 03, 04, 07, 08."""

    name: str
    svg: str
    text: str
    data: dict = field(default_factory=dict, compare=False, repr=False)

    def _repr_svg_(self) -> str:
        return self.svg

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Diagram({self.name!r}, {len(self.svg):,} bytes of SVG)"
