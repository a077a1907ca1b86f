"""Chapter 02's measurements: the session (an append-only JSONL tree) against the context (what one call sends).

What it holds:

* :func:`working_copy` — a session file to experiment on, in a fresh temporary directory: a copy of
  the bundled sample, or a learner's transcript imported into a new session file. ``data/`` and
  the learner's own files are never touched; :func:`remove_working_copies` deletes them again (the
  chapter's last cell calls it; it also runs when Python exits normally);
* :func:`sha256_of`, :func:`first_lines`, :func:`fork_points` — small tools the chapter uses to show
  that reading changes no byte, that an append only adds bytes at the end, and where to fork;
* :func:`compare_contexts` — two contexts side by side (messages, tokens, shared prefix);
* :func:`branch_view` — one branch of a session: its path, what it shares with another, and the
  context built from it (what :class:`ctxlab.widgets.ch02_session.BranchWidget` shows);
* :func:`item_label` / :func:`leaf_rows` — one-line previews of session items and leaves.

Simplified on purpose: contexts here are built with the default policy (90 % of the profile's
window), so the comparison is about *which* messages each branch holds, not about budgets (that
is chapter 03).
"""

from __future__ import annotations

import atexit
import hashlib
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxlab.base.redact import redact
from ctxlab.base.safe_text import safe_text
from ctxlab.context import BudgetPolicy, Context, build_context
from ctxlab.io.formats import detect
from ctxlab.io.session import Session
from ctxlab.lab.data import SAMPLE_SESSION
from ctxlab.lab.workbook import load_workbook_conversation
from ctxlab.messages import Entry, Message, Transcript
from ctxlab.tables.profiles import ModelProfile, profile_for
from ctxlab.tokens import MessageMeter

__all__ = ["working_copy", "remove_working_copies", "sha256_of", "first_lines", "fork_points", "item_label",
           "ContextComparison", "compare_contexts", "BranchView", "branch_context", "branch_view", "leaf_rows",
           "short_id"]


def working_copy(path: str | Path | None = None) -> Path:
    """A session file to experiment on, in a new temporary directory; returns its path. Chapter 02.

    ``None`` copies the bundled sample (``data/sample_session.jsonl``). A ctxlab session file is
    copied as is; any other transcript is read (:func:`ctxlab.lab.workbook.load_workbook_conversation`)
    and imported into a new session file, one straight line root → newest. The temporary directory
    goes with :func:`remove_working_copies`, or when the interpreter (the notebook's kernel) exits.
    Raises what those readers raise (``FileNotFoundError`` for a file that is not there, ...).
    """
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

    Chapter 02 calls it in its last cell; it also runs at a normal exit (a killed kernel skips that).
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
    """The sha256 of a file's bytes (or of its first ``n_bytes``), 64 hex digits. Chapter 02 uses it
    to show that a read changes nothing. Raises ``OSError`` when the file cannot be read."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read() if n_bytes is None else f.read(n_bytes))
    return h.hexdigest()


def first_lines(path: str | Path, n: int = 3, width: int = 150) -> list[str]:
    """The first ``n`` lines of a text file, each cut to ``width`` characters (``…`` marks a cut). Chapter 02."""
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

    Chapter 02. On the path to ``leaf_id`` (default: head), oldest first. Forking at one and appending
    a user message gives a branch that asks something else from that point on.
    """
    path = session.path(leaf_id)
    return [path[k - 1].id for k in range(1, len(path))
            if isinstance(path[k], Message) and path[k].is_real_user]


def item_label(item: Message | Entry, width: int = 60) -> str:
    """A one-line preview of a session item, at most ``width`` characters; safe to print. Chapter 02.

    An entry is ``[kind]``; a message its text (or ``calls name, ...``), keys masked
    (:func:`ctxlab.base.redact.redact`), cut with ``…``, control characters escaped.
    ``item_label(user("hello\\nworld", "u1"))`` → ``"hello world"``.
    """
    if isinstance(item, Entry):
        return f"[{safe_text(item.kind)}]"
    text = item.text.replace("\n", " ").strip()
    if not text and item.tool_calls:
        text = "calls " + ", ".join(c.name for c in item.tool_calls)
    text = redact(text)  # a preview: keys masked (ctxlab.base.redact), cut, then control characters escaped
    return safe_text(text if len(text) <= width else text[: width - 1] + "…")


@dataclass(frozen=True)
class ContextComparison:
    """Chapter 02: two contexts side by side (messages, tokens). ``shared_prefix`` counts leading messages
    that are the same message (same id)."""

    a_messages: int
    b_messages: int
    a_tokens: int
    b_tokens: int
    shared_prefix: int
    a_last: str
    b_last: str

    def rows(self) -> list[tuple[str, Any, Any]]:
        """(what, a, b) rows for a text table."""
        return [("messages", self.a_messages, self.b_messages), ("tokens", self.a_tokens, self.b_tokens),
                ("shared leading messages", self.shared_prefix, self.shared_prefix),
                ("last message", self.a_last, self.b_last)]


def compare_contexts(a: Context, b: Context) -> ContextComparison:
    """Compare two contexts; e.g. the contexts of two leaves of one session after a fork. Chapter 02."""
    shared = 0
    for x, y in zip(a.messages, b.messages):
        if x.id != y.id:
            break
        shared += 1
    return ContextComparison(len(a.messages), len(b.messages), a.total_tokens, b.total_tokens, shared,
                             item_label(a.messages[-1], 30), item_label(b.messages[-1], 30))


@dataclass(frozen=True)
class BranchView:
    """Chapter 02: one branch of the session: the path to ``leaf`` and the context built from it (tokens
    under the profile)."""

    leaf: str
    path_items: int
    path_messages: int
    shared: int  # leading items shared with the base branch (the whole path when this is it)
    context_messages: int
    context_tokens: int
    dropped_units: int


def branch_context(session: Session, leaf: str, policy: BudgetPolicy, profile: ModelProfile,
                   meter: MessageMeter) -> Context:
    """The context one call would send from ``leaf`` of ``session``. Chapter 02.

    Raises what :func:`ctxlab.context.build_context` raises (a budget too small, ...).
    """
    return build_context(session.conversation(leaf), policy, profile=profile, meter=meter)


def branch_view(session: Session, leaf: str, base: str, policy: BudgetPolicy, profile: ModelProfile,
                meter: MessageMeter) -> BranchView:
    """The branch ending at ``leaf``: its path, how many leading items it shares with the branch ending
    at ``base``, and its context (:func:`branch_context`). Chapter 02."""
    path = session.path(leaf)
    shared = 0
    for x, y in zip(path, session.path(base)):
        if x.id != y.id:
            break
        shared += 1
    ctx = branch_context(session, leaf, policy, profile, meter)
    return BranchView(leaf, len(path), sum(isinstance(i, Message) for i in path), shared,
                      len(ctx.messages), ctx.total_tokens, len(ctx.dropped()))


def short_id(item_id: str, width: int = 16) -> str:
    """An item id cut for a table: the last ``width`` characters after ``…`` when longer (a transcript's ids can
    be UUIDs). ``short_id("m175")`` → ``"m175"``; ``short_id("ffae836b-9420-4060-ac13:1002", 8)`` → ``"…13:1002"``.
    Chapter 02."""
    return item_id if len(item_id) <= width else "…" + item_id[-(width - 1):]


def leaf_rows(session: Session) -> list[dict[str, Any]]:
    """Chapter 02: one row per leaf: id (cut by :func:`short_id`), path length (items), the last message (cut)."""
    return [{"leaf": short_id(leaf), "path items": len(session.path(leaf)), "last": item_label(session[leaf], 50)}
            for leaf in session.leaves()]


def budget_line(conversation: Transcript, policy: BudgetPolicy | None = None) -> str:
    """Where the budget of ``build_context(conversation)`` comes from, in one line.

    With no ``budget_tokens`` the budget is ``input_ratio`` × the model's context window (the book's "keep 10%
    for the reply" shortcut, :class:`BudgetPolicy`'s default 0.9); chapter 03 replaces it by window − ``max_tokens``.
    Example: sample (claude-sonnet-4-6, 1,000,000 window) → "budget 900,000 tokens: 90% of the 1,000,000-token window
    of claude-sonnet-4-6 (chapter 03)". Chapter 02.
    """
    policy = policy or BudgetPolicy()
    profile = profile_for(conversation.model, conversation.provider)
    budget = policy.budget_for(profile)
    if policy.budget_tokens is not None:
        return f"budget {budget:,} tokens, set by the policy (budget_tokens)"
    model = conversation.model or f"no model recorded, so {profile.name}"
    return (f"budget {budget:,} tokens: {policy.input_ratio:.0%} of the {profile.context_window:,}-token window of "
            f"{model} (chapter 03)")
