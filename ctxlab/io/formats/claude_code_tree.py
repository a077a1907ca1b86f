"""The uuid / parentUuid tree of a Claude Code transcript: link checks, threads and forks.

Helpers of :mod:`ctxlab.io.formats.claude_code` (the reader keeps lines in file order and never
walks this tree to choose a branch; these classes only check it and name what they find):

* :class:`Links` notes repeated uuids, parents that come after their child and parents that are
  not in the file (a resumed or trimmed session) — each noted, never raised;
* :class:`Threads` names threads: ``main``, and ``sidechain-N`` per sub-agent (a sidechain root,
  or a sub-agent whose messages come copied in ``agent_progress`` lines);
* :class:`Forks` finds the points where a thread really forks (an edited prompt, a rewind, a
  regenerated answer). Claude Code 2.x writes one line per content block of a response and hangs
  each tool result under the line of ITS tool_use block, with ``progress`` and ``system`` lines in
  the chain too. Counted line by line, every parallel tool call would look like a fork; so a
  response (its lines share ``message.id``) is ONE node, and tool-result lines and every
  non-message line are transparent (a child of them is a child of their nearest message node) —
  the "spurious-fork collapse" daaain/claude-code-log does in ``claude_code_log/dag.py`` (commit
  132f8bb, read 2026-12-01) for the same reason. A node with two or more child nodes is a fork.

Plumbing for chapter 02.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any


class Links:
    """Checks the uuid / parentUuid links of every line that has them."""

    def __init__(self) -> None:
        self.first: dict[str, int] = {}  # uuid -> line of its first appearance
        self.repeated: list[str] = []
        self.parents: list[tuple[int, str]] = []  # (line, parentUuid) not seen before that line

    def see(self, line: int, obj: dict[str, Any]) -> None:
        uuid, parent = obj.get("uuid"), obj.get("parentUuid")
        if isinstance(parent, str) and parent not in self.first:
            self.parents.append((line, parent))
        if isinstance(uuid, str):
            if uuid in self.first:
                self.repeated.append(f"line {line} repeats uuid {uuid!r} of line {self.first[uuid]}")
            else:
                self.first[uuid] = line

    def notes(self) -> list[str]:
        """One note per kind of broken link, the first five named."""
        later = [f"line {n}: parentUuid {p!r} is at line {self.first[p]}" for n, p in self.parents if p in self.first]
        nowhere = [f"line {n}: parentUuid {p!r}" for n, p in self.parents if p not in self.first]
        out = []
        for found, what in ((self.repeated, "repeated uuids"),
                            (later, "parents after their child (a cycle or a reordered file)"),
                            (nowhere, "parents not in this file (a resumed or trimmed session?)")):
            if found:
                more = f" and {len(found) - 5} more" if len(found) > 5 else ""
                out.append(f"{what}, kept in line order: {'; '.join(found[:5])}{more}")
        return out


class Threads:
    """Thread names: ``main``, or ``sidechain-N`` per sidechain root (a sidechain line whose parent is
    absent or on the main thread) and per sub-agent id, numbered in order of appearance."""

    def __init__(self) -> None:
        self.of: dict[str, str] = {}  # uuid -> thread name
        self.agents: dict[str, str] = {}  # agentId -> thread name
        self.roots = 0

    def _new(self) -> str:
        self.roots += 1
        return f"sidechain-{self.roots}"

    def name(self, uuid: Any, parent: Any, sidechain: Any) -> str:
        """The thread of a line (and remember it, so its children follow)."""
        if not sidechain:
            name = "main"
        elif parent is not None and self.of.get(parent, "main") != "main":
            name = self.of[parent]
        else:
            name = self._new()
        if isinstance(uuid, str):
            self.of[uuid] = name
        return name

    def agent(self, agent_id: str) -> str:
        """The thread of a sub-agent known by its id (``agent_progress`` copies)."""
        if agent_id not in self.agents:
            self.agents[agent_id] = self._new()
        return self.agents[agent_id]


class Forks:
    """Real forks of the conversation tree (see the module docstring for what counts)."""

    def __init__(self) -> None:
        self.parent: dict[str, str | None] = {}  # uuid -> parentUuid, every line
        self.node: dict[str, str] = {}  # uuid -> node key, message lines only
        self.edges: list[tuple[str, str | None, str]] = []  # (node key, parentUuid, thread)

    def see(self, obj: dict[str, Any], thread: str) -> None:
        """Record one line: its parent link, and whether it is a message node."""
        uuid, parent = obj.get("uuid"), obj.get("parentUuid")
        if not isinstance(uuid, str):
            return
        self.parent.setdefault(uuid, parent if isinstance(parent, str) else None)
        key = _node_key(obj)
        if key is not None:
            self.node.setdefault(uuid, key)
            self.edges.append((key, self.parent[uuid], thread))

    def _resolve(self, uuid: str | None) -> str | None:
        """The node key at or above ``uuid``, passing through transparent lines."""
        seen: set[str] = set()
        while uuid is not None and uuid not in seen:
            if uuid in self.node:
                return self.node[uuid]
            seen.add(uuid)
            uuid = self.parent.get(uuid)
        return None

    def count(self) -> dict[str, int]:
        """Thread -> the number of nodes with two or more child nodes."""
        children: dict[str, set[str]] = defaultdict(set)
        thread_of: dict[str, str] = {}
        for key, parent, thread in self.edges:
            above = self._resolve(parent)
            thread_of.setdefault(key, thread)
            if above is not None and above != key:
                children[above].add(key)
        out: dict[str, int] = defaultdict(int)
        for above, kids in children.items():
            if len(kids) > 1:
                out[thread_of.get(above, "main")] += 1
        return dict(out)


def _node_key(obj: dict[str, Any]) -> str | None:
    """A response (all lines of one ``message.id``) or a user line carrying more than tool results."""
    message = obj.get("message") if isinstance(obj.get("message"), dict) else {}
    if obj.get("type") == "assistant":
        return f"response:{message.get('id') or obj['uuid']}"
    if obj.get("type") == "user":
        content = message.get("content")
        if isinstance(content, list) and content and all(
                isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return None  # an answer: transparent
        return f"line:{obj['uuid']}"
    return None
