"""The chapter lab modules split along their ideas (issue 15): each sibling stays within 300 lines, opens with its
chapter, and every public name lives in one module — defined once, never re-exported from the module it left."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

LAB = Path(__file__).resolve().parents[1] / "ctxlab" / "lab"

# Siblings: one chapter's measurements, split by idea. The first of each group is the module the others left.
SIBLINGS = (
    ("ch01_tokens", "ch01_content"),
    ("ch04_ledger", "ch04_collapse", "ch04_replays"),
    ("ch05_pruning", "ch05_paging"),
    ("ch06_summaries", "ch06_placement", "ch06_regeneration"),
    ("ch07_compaction", "ch07_policies"),
    ("fidelity", "fidelity_end_to_end"),
)
ALL = [m for group in SIBLINGS for m in group]


def defined(module: str) -> set[str]:
    """Public names a module defines at its top level (def, class, assignment), read from its source."""
    tree = ast.parse((LAB / f"{module}.py").read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not n.startswith("_")}


@pytest.mark.parametrize("module", ALL)
def test_each_module_stays_within_300_lines_and_names_its_chapter(module):
    text = (LAB / f"{module}.py").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    assert all(len(line) <= 120 for line in text.splitlines())
    assert re.search(r"[Cc]hapters? \d\d", ast.get_docstring(ast.parse(text)) or "")


@pytest.mark.parametrize("group", SIBLINGS, ids=lambda g: g[0])
def test_a_name_lives_in_one_module(group):
    seen: dict[str, str] = {}
    for module in group:
        for name in defined(module):
            assert name not in seen, f"{name} is defined in both {seen[name]} and {module}"
            seen[name] = module
    for module in group:
        m = importlib.import_module(f"ctxlab.lab.{module}")
        exported = getattr(m, "__all__", ())
        assert set(exported) <= defined(module), f"{module}.__all__ re-exports {set(exported) - defined(module)}"


def test_the_module_a_name_left_no_longer_has_it():
    """No shim: ``from ctxlab.lab.ch07_compaction import policy_rows`` fails now that it lives in ch07_policies."""
    for group in SIBLINGS:
        first = importlib.import_module(f"ctxlab.lab.{group[0]}")
        for module in group[1:]:
            lingering = {n for n in defined(module) if hasattr(first, n)}
            assert not lingering, f"ctxlab.lab.{group[0]} still has {lingering} (moved to {module})"
