"""The workbook's diagrams, drawn by code as standalone SVG: chapter 03's backward walk, chapter 04's request layout.

Each function returns a :class:`~ctxlab.diagrams.svg.Diagram` (``.svg``, ``.text``, ``_repr_svg_``).
"""

from ctxlab.diagrams.request import request_layout
from ctxlab.diagrams.svg import Diagram
from ctxlab.diagrams.walk import backward_walk

__all__ = ["Diagram", "backward_walk", "request_layout"]
