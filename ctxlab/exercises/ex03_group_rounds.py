"""Exercise 3 (chapter 03): group messages into rounds, so no cut separates a call from its result.

A message is ``(role, call_ids)``: ``("user", ())``; ``("assistant", ("c1", "c2"))`` for an
assistant message making calls c1 and c2 (``()`` when it makes none); ``("tool", ("c1",))`` for
the result answering c1. A unit is a list of message indices. The rule is ctxlab's ``round``
granularity (``ctxlab.interactions.group_units``): an assistant message starts a round; tool
results, and assistant messages that arrive while a call of the round is still waiting for its
result, join it; every user message is a unit of its own. In every case each call is answered
before the next user message, and the first message is a user message (no preamble).

The cases are conversations grown with a seeded random generator: single calls, parallel calls
answered in any order, and — as Claude Code logs them — parallel calls made in separate assistant
messages before their results arrive.
"""

from __future__ import annotations

import random

from ctxlab.exercises._grader import Exercise, by_size

Msg = tuple[str, tuple[str, ...]]  # (role, call ids made or answered)


def group_rounds(messages: list[tuple[str, tuple[str, ...]]]) -> list[list[int]]:
    units: list[list[int]] = []
    waiting: set[str] = set()  # calls of the current round still without a result
    for i, (role, call_ids) in enumerate(messages):
        if role == "tool" or (role == "assistant" and waiting):
            units[-1].append(i)  # a result, or a further call, joins the open round
        else:
            units.append([i])  # a user message, or an assistant message starting a round
        if role == "assistant":
            waiting.update(call_ids)
        elif role == "tool":
            waiting.difference_update(call_ids)
    return units


def _round(rng: random.Random, next_id: list[int]) -> list[Msg]:
    """One round: an assistant message with 0-2 calls, then results (in any order) and sometimes
    another assistant message with one more call while results are still owed."""
    def new_calls(k: int) -> tuple[str, ...]:
        ids = tuple(f"c{next_id[0] + j}" for j in range(k))
        next_id[0] += k
        return ids

    first = new_calls(rng.choice((0, 1, 1, 1, 2, 2)))
    out: list[Msg] = [("assistant", first)]
    waiting = list(first)
    while waiting:
        if rng.random() < 0.25:
            more = new_calls(1)
            out.append(("assistant", more))
            waiting += more
        answered = waiting.pop(rng.randrange(len(waiting)))
        out.append(("tool", (answered,)))
    return out


def _conversation(rng: random.Random, pieces: int) -> list[Msg]:
    next_id = [1]
    messages: list[Msg] = [("user", ())]
    for _ in range(pieces):
        messages += [("user", ())] if rng.random() < 0.2 else _round(rng, next_id)
    return messages


def _cases() -> list[tuple]:
    rng = random.Random(3)  # fixed seed: the same conversations on every run
    cases: list[tuple] = [
        ([("user", ())],),
        ([("user", ()), ("assistant", ())],),
        ([("user", ()), ("assistant", ("c1",)), ("tool", ("c1",))],),
        ([("user", ()), ("assistant", ("c1",)), ("assistant", ("c2",)), ("tool", ("c1",)), ("tool", ("c2",))],),
    ]
    for pieces in range(1, 9):
        cases += [(_conversation(rng, pieces),) for _ in range(8)]
    return by_size(cases, lambda c: len(c[0]))  # fewest messages first


def _show(args: tuple) -> str:
    """``0:user 1:assistant(c1,c2) 2:tool(c1)``: the index in front, as in the expected units."""
    def one(i: int, msg: Msg) -> str:
        role, ids = msg
        return f"{i}:{role}({','.join(ids)})" if ids else f"{i}:{role}"
    return " ".join(one(i, m) for i, m in enumerate(args[0]))


EXERCISE = Exercise(
    number=3,
    title="group messages into rounds",
    function="group_rounds",
    signature="group_rounds(messages: list[tuple[str, tuple[str, ...]]]) -> list[list[int]]",
    cases=_cases,
    reference=group_rounds,
    show_input=_show,
    hints=(
        "Walk the messages once. A user message always starts a unit of its own; a tool result never "
        "does — it joins the unit before it.",
        "An assistant message is the tricky one: it starts a new round only when no call is still "
        "waiting for its result. Keep a set of the waiting call ids.",
        "Add an assistant message's call ids to the set; remove the id a tool result answers. "
        "0:user 1:assistant(c1) 2:assistant(c2) 3:tool(c1) 4:tool(c2) → [[0], [1, 2, 3, 4]].",
    ),
)
