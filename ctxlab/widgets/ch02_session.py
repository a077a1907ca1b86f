"""Chapter 02: the session (an append-only JSONL tree) against the context (what one call sends).

What it holds:

* :func:`working_copy` — a session file to experiment on, in a fresh temporary directory: a copy of
  the bundled sample, or a learner's transcript imported into a new session file. ``data/`` and
  the learner's own files are never touched; :func:`remove_working_copies` deletes them again (the
  chapter's last cell calls it; it also runs when Python exits normally);
* :func:`sha256_of`, :func:`first_lines`, :func:`fork_points` — small tools the chapter uses to show
  that reading changes no byte, that an append only adds bytes at the end, and where to fork;
* :func:`compare_contexts` — two contexts side by side (messages, tokens, shared prefix);
* :class:`BranchWidget` — one choice: which leaf (branch) of the session; it shows that branch's
  path and the context built from it.

Simplified on purpose: contexts here are built with the default policy (90 % of the profile's
window), so the comparison is about *which* messages each branch holds, not about budgets (that
is chapter 03).
"""

from __future__ import annotations

import atexit
import hashlib
import html
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxlab.context import BudgetPolicy, Context, build_context
from ctxlab.messages import Entry, Message, Transcript
from ctxlab.tables.profiles import ModelProfile, profile_for
from ctxlab.base.redact import redact
from ctxlab.base.safe_text import safe_text, shown
from ctxlab.io.session import Session
from ctxlab.tokens import MessageMeter


def working_copy(path: str | Path | None = None) -> Path:
    """A session file to experiment on, in a new temporary directory; returns its path.

    ``None`` copies the bundled sample (``data/sample_session.jsonl``). A ctxlab session file is
    copied as is; any other transcript is read (:func:`ctxlab.lab.workbook.load_workbook_conversation`)
    and imported into a new session file, one straight line root → newest. The temporary directory
    goes with :func:`remove_working_copies`, or when the interpreter (the notebook's kernel) exits.
    """
    from ctxlab.io.formats import detect
    from ctxlab.lab.workbook import SAMPLE_SESSION, load_workbook_conversation

    source = Path(path) if path is not None else SAMPLE_SESSION
    folder = Path(tempfile.mkdtemp(prefix="ctxlab-ch02-"))
    _WORKING_FOLDERS.append(folder)
    if detect(source) == "ctxlab-session":
        target = folder / source.name
        shutil.copyfile(source, target)
        return target
    conversation = load_workbook_conversation(source)
    target = folder / (source.stem + ".session.jsonl")
    Session.import_transcript(Transcript(format="imported", file=source.name, conversations=(conversation,)), target)
    return target


_WORKING_FOLDERS: list[Path] = []  # the temporary folders working_copy made in this process, oldest first


def remove_working_copies() -> int:
    """Delete every working copy :func:`working_copy` made in this process; returns how many folders went.

    A chapter calls it in its last cell; it also runs at a normal exit (a killed kernel skips that).
    """
    removed = 0
    while _WORKING_FOLDERS:
        folder = _WORKING_FOLDERS.pop()
        if folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
    return removed


atexit.register(remove_working_copies)


def sha256_of(path: str | Path, n_bytes: int | None = None) -> str:
    """The sha256 of a file (or of its first ``n_bytes``), hex. Used to show a read changes nothing."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read() if n_bytes is None else f.read(n_bytes))
    return h.hexdigest()


def first_lines(path: str | Path, n: int = 3, width: int = 150) -> list[str]:
    """The first ``n`` lines of a text file, each cut to ``width`` characters (``…`` marks a cut)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for _ in range(n):
            line = f.readline().rstrip("\n")
            if not line:
                break
            out.append(line if len(line) <= width else line[: width - 1] + "…")
    return out


def fork_points(session: Session, leaf_id: str | None = None) -> list[str]:
    """Ids where a new branch can start a different user turn: the item just before each real user message.

    On the path to ``leaf_id`` (default: head), oldest first. Forking at one and appending a user
    message gives a branch that asks something else from that point on.
    """
    path = session.path(leaf_id)
    return [path[k - 1].id for k in range(1, len(path))
            if isinstance(path[k], Message) and path[k].is_real_user]


def _label(item: Any, width: int = 60) -> str:
    if isinstance(item, Entry):
        return f"[{safe_text(item.kind)}]"
    text = item.text.replace("\n", " ").strip()
    if not text and item.tool_calls:
        text = "calls " + ", ".join(c.name for c in item.tool_calls)
    text = redact(text)  # a preview: keys masked (ctxlab.base.redact), cut, then control characters escaped
    return safe_text(text if len(text) <= width else text[: width - 1] + "…")


@dataclass(frozen=True)
class ContextComparison:
    """Two contexts side by side. ``shared_prefix`` counts leading messages that are the same message (same id)."""

    a_messages: int
    b_messages: int
    a_tokens: int
    b_tokens: int
    shared_prefix: int
    a_last: str
    b_last: str

    def rows(self) -> list[tuple[str, Any, Any]]:
        return [("messages", self.a_messages, self.b_messages), ("tokens", self.a_tokens, self.b_tokens),
                ("shared leading messages", self.shared_prefix, self.shared_prefix),
                ("last message", self.a_last, self.b_last)]


def compare_contexts(a: Context, b: Context) -> ContextComparison:
    """Compare two contexts; e.g. the contexts of two leaves of one session after a fork."""
    shared = 0
    for x, y in zip(a.messages, b.messages):
        if x.id != y.id:
            break
        shared += 1
    return ContextComparison(len(a.messages), len(b.messages), a.total_tokens, b.total_tokens, shared,
                             _label(a.messages[-1], 40), _label(b.messages[-1], 40))


@dataclass(frozen=True)
class BranchView:
    """One branch of the session: the path to ``leaf`` and the context built from it (tokens under the profile)."""

    leaf: str
    path_items: int
    path_messages: int
    shared: int  # leading items shared with the base branch (the whole path when this is it)
    context_messages: int
    context_tokens: int
    dropped_units: int


class BranchWidget:
    """Pick a leaf of a session; see its path and the context one call would send from it.

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
        return [(f"{shown(leaf)}: {_label(self.session[leaf], 40)}", leaf) for leaf in self.session.leaves()]

    def refresh(self) -> None:
        """Re-read the leaves after an append or a fork (the dropdown lists them again)."""
        current = self.leaf.value
        self.leaf.options = self._options()
        self.leaf.value = current if current in self.session else self.session.head

    def context(self, leaf: str) -> Context:
        return build_context(self.session.conversation(leaf), self.policy, profile=self.profile, meter=self.meter)

    def compute(self, leaf: str) -> BranchView:
        """The branch ending at ``leaf``: its path and its context."""
        path = self.session.path(leaf)
        base = self.session.path(self.base)
        shared = 0
        for x, y in zip(path, base):
            if x.id != y.id:
                break
            shared += 1
        ctx = self.context(leaf)
        return BranchView(leaf, len(path), sum(isinstance(i, Message) for i in path), shared,
                          len(ctx.messages), ctx.total_tokens, len(ctx.dropped()))

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
                        f"<td>{html.escape(_label(item))}</td></tr>")
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


def leaf_rows(session: Session) -> list[dict[str, Any]]:
    """One row per leaf: id, path length, and the last message's text (cut)."""
    return [{"leaf": leaf, "path items": len(session.path(leaf)), "last": _label(session[leaf], 50)}
            for leaf in session.leaves()]

