"""The session tree against the one path a context is built from. Taught in chapter 02.

Unlike :mod:`ctxlab.diagrams.walk` (what one context keeps), this draws the whole session file: every line names a
parent, so the file is a tree. Each leaf gets a lane; the lane starts where its branch leaves the one above it (a
fork) and runs to the leaf, one pixel step per item, so the shared part is drawn once. The path to ``head`` — the
one ``Session.conversation()`` builds a context from — is green; every other branch, kept in the file but not
sent, is grey.
"""

from __future__ import annotations

from ctxlab.diagrams.svg import COLORS, Canvas, Diagram
from ctxlab.io.session import Session
from ctxlab.lab.data import SAMPLE_SESSION
from ctxlab.lab.workbook import text_table

WIDTH, LEFT, RIGHT, LANE, TOP = 800, 24, 190, 46, 70


def session_tree(session: Session | None = None) -> Diagram:
    """Draw ``session``'s tree (default: the bundled sample, opened read-only: two leaves, ``m127`` of an
    abandoned branch and the head ``m175``). ``data``: ``{"leaves": [leaf ids, oldest first], "head", "path":
    [the ids from the root to head, as Session.path gives them], "forks": [ids with two or more children]}``.
    Raises what :class:`~ctxlab.io.session.Session` raises on a broken file. Chapter 02."""
    s = session if session is not None else Session.open(SAMPLE_SESSION)
    leaves = s.leaves()
    paths = {leaf: [item.id for item in s.path(leaf)] for leaf in leaves}
    head_path = [item.id for item in s.path()]
    order = [s.head] + [leaf for leaf in leaves if leaf != s.head] if s.head in paths else leaves
    longest = max((len(p) for p in paths.values()), default=1)
    scale = (WIDTH - LEFT - RIGHT) / max(longest, 1)
    canvas = Canvas(WIDTH, TOP + LANE * len(order) + 40, "The session tree and the path a context is built from")
    canvas.text(LEFT, 26, f"the session file is a tree: {len(s.items())} lines, {len(leaves)} leaves", size=15,
                weight="bold")
    canvas.text(LEFT, 46, "green: the path to head, the one a context is built from · grey: kept in the file, not sent",
                size=12, fill=COLORS["muted"])
    drawn: dict[str, tuple[float, float]] = {}  # item id -> where it was drawn (x, y)
    rows = []
    for lane, leaf in enumerate(order):
        path, y = paths[leaf], TOP + lane * LANE + 12
        start = next((i for i, item in enumerate(path) if item not in drawn), len(path))
        color = COLORS["kept"] if leaf == s.head else COLORS["uncounted"]
        if start > 0:  # the branch leaves an earlier lane at its fork: a vertical joint
            fx, fy = drawn[path[start - 1]]
            canvas.line(fx, fy, fx, y, COLORS["muted"], width=2, cls="fork",
                        label=f"fork at {path[start - 1]}: {len(s.children(path[start - 1]))} children")
        x0 = LEFT + start * scale
        canvas.rect(x0, y - 8, (len(path) - start) * scale, 16, color, stroke=COLORS["muted"], stroke_width=0.5,
                    cls="branch head" if leaf == s.head else "branch other",
                    label=f"{leaf}: items {start + 1}–{len(path)} of its path")
        for i in range(start, len(path)):
            drawn[path[i]] = (LEFT + (i + 1) * scale, y)
        canvas.text(LEFT + len(path) * scale + 8, y + 5,
                    f"{leaf} ({len(path)} items){' = head' if leaf == s.head else ''}", size=12)
        rows.append((leaf, len(path), path[start - 1] if start else "(root)", "yes" if leaf == s.head else "no"))
    forks = [i for i in (item.id for item in s.items()) if len(s.children(i)) > 1]
    text = (f"{len(s.items())} lines, {len(leaves)} leaves; a context is built from the path to head "
            f"({len(head_path)} items)\n" + text_table(rows, ["leaf", "path items", "leaves the trunk after",
                                                              "sent (head)"]))
    return Diagram("session_tree", canvas.svg(), text,
                   {"leaves": leaves, "head": s.head, "path": head_path, "forks": forks})
