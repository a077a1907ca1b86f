"""The workbook's diagrams, drawn by code as standalone SVG: chapter 02's session tree, chapter 03's backward walk,
chapter 04's request layout, chapter 07's sawtooth and chapter 08's decision pipeline.

Each function returns a :class:`~ctxlab.diagrams.svg.Diagram` (``.svg``, ``.text``, ``_repr_svg_``);
``python tools/draw_diagrams.py`` writes them to ``docs/figures/`` and ``docs/diagrams.md``.
"""

from ctxlab.diagrams.pipeline import decision_pipeline
from ctxlab.diagrams.request import request_layout
from ctxlab.diagrams.sawtooth import sawtooth
from ctxlab.diagrams.svg import Diagram
from ctxlab.diagrams.tree import session_tree
from ctxlab.diagrams.walk import backward_walk

# in chapter order, as tools/draw_diagrams.py and docs/diagrams.md list them
ALL = {"session_tree": (session_tree, "02"), "backward_walk": (backward_walk, "03"),
       "request_layout": (request_layout, "04"), "sawtooth": (sawtooth, "07"),
       "decision_pipeline": (decision_pipeline, "08")}

__all__ = ["ALL", "Diagram", "backward_walk", "decision_pipeline", "request_layout", "sawtooth", "session_tree"]
