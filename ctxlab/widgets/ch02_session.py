"""Chapter 02's widget: pick a branch (leaf) of a session; see its path and the context built from it.

What it holds (the measurements are in :mod:`ctxlab.lab.ch02_session`): :class:`BranchWidget` — one
choice, which leaf of the session; it shows that branch's path (the items only it holds highlighted)
and the context built from it (:func:`ctxlab.lab.ch02_session.branch_view`).
"""

from __future__ import annotations

import html
from typing import Any

from ctxlab.base.safe_text import shown
from ctxlab.context import BudgetPolicy, Context
from ctxlab.io.session import Session
from ctxlab.lab.ch02_session import BranchView, branch_context, branch_view, item_label
from ctxlab.messages import Message
from ctxlab.tables.profiles import ModelProfile, profile_for
from ctxlab.tokens import MessageMeter

__all__ = ["BranchWidget"]


class BranchWidget:
    """Chapter 02: pick a leaf of a session; see its path and the context one call would send from it.

    Control: ``leaf`` (Dropdown of the session's leaves). The view marks the items the chosen
    branch does not share with ``base`` (default: the leaf with the longest path). ``w = BranchWidget(session);
    w.leaf.value = session.leaves()[0]; w.state.path_items`` → the length of that branch.
    """

    def __init__(self, session: Session, profile: ModelProfile | None = None,
                 policy: BudgetPolicy | None = None, base: str | None = None, show_last: int = 8) -> None:
        import ipywidgets as W

        self.session = session
        self.profile = profile or profile_for(session.model, session.provider)
        self.policy = policy or BudgetPolicy()
        self.meter = MessageMeter(self.profile)
        self.show_last = show_last
        # the branch others are compared with: given, else the longest path (the session's main line)
        self.base = base or max(session.leaves(), key=lambda leaf: len(session.path(leaf)))
        self.leaf = W.Dropdown(options=self._options(), value=session.head, description="leaf")
        self.controls = W.HBox([self.leaf])
        self.view = W.HTML()
        self.widget = W.VBox([self.controls, self.view])
        self.state = self.compute(self.leaf.value)
        self.leaf.observe(self._on_change, names="value")
        self._render()

    def _options(self) -> list[tuple[str, str]]:
        return [(f"{shown(leaf)}: {item_label(self.session[leaf], 40)}", leaf) for leaf in self.session.leaves()]

    def refresh(self) -> None:
        """Re-read the leaves after an append or a fork (the dropdown lists them again). Chapter 02."""
        current = self.leaf.value
        self.leaf.options = self._options()
        self.leaf.value = current if current in self.session else self.session.head

    def context(self, leaf: str) -> Context:
        """The context one call would send from ``leaf`` (:func:`ctxlab.lab.ch02_session.branch_context`).
        Chapter 02."""
        return branch_context(self.session, leaf, self.policy, self.profile, self.meter)

    def compute(self, leaf: str) -> BranchView:
        """The branch ending at ``leaf``: its path and its context (:func:`ctxlab.lab.ch02_session.branch_view`).
        Chapter 02."""
        return branch_view(self.session, leaf, self.base, self.policy, self.profile, self.meter)

    def _on_change(self, change: dict[str, Any]) -> None:
        self.state = self.compute(change["new"])
        self._render()

    def _render(self) -> None:
        s = self.state
        path = self.session.path(s.leaf)
        start = max(0, len(path) - self.show_last)
        rows = []
        for k in range(start, len(path)):
            item = path[k]
            own = k >= s.shared
            role = item.role if isinstance(item, Message) else "entry"
            style = "background:#fff2b3" if own else ""
            rows.append(f"<tr style='{style}'><td>{k + 1}</td><td>{shown(item.id, html=True)}</td><td>{html.escape(role)}</td>"
                        f"<td>{html.escape(item_label(item))}</td></tr>")
        self.view.value = (
            f"<div>path: <b>{s.path_items:,}</b> items ({s.path_messages:,} messages); "
            f"shared with branch {shown(self.base, html=True)}: <b>{s.shared:,}</b>; "
            f"context: <b>{s.context_messages:,}</b> messages, "
            f"<b>{s.context_tokens:,}</b> tokens ({s.dropped_units:,} units dropped)</div>"
            f"<table style='font-size:12px'><tr><th>#</th><th>id</th><th>role</th><th>text</th></tr>{''.join(rows)}</table>"
            "<div style='font-size:11px;color:#666'>highlighted: items only this branch has</div>")

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = f"BranchWidget(leaf={self.leaf.value!r}, {len(self.session.leaves())} leaves)"
        return bundle
