"""Exercise 1 (chapter 01): the tokens of one chat message, framing included.

OpenAI's recipe (cookbook, 'How to count tokens with tiktoken'; ``ctxlab.tokens.MessageMeter``
under the ``gpt-4o`` profile): every message costs 3 tokens of framing, plus the tokens of its
role and of its text; a ``name`` adds 1 token plus the tokens of the name. The cases are short
texts of every kind chapter 01 measures — English, code, JSON, Chinese — built from a seeded
random generator, so every run grades the same inputs.
"""

from __future__ import annotations

import random

from ctxlab.tokens import TiktokenCounter
from ctxlab.exercises._grader import Exercise, by_size, show_args

count_tokens = TiktokenCounter("o200k_base").count  # text -> exact o200k_base tokens


def count_message(text: str, role: str, name: str | None) -> int:
    per_message, per_name = 3, 1  # OpenAI's framing per message, and per name
    tokens = per_message + count_tokens(role) + count_tokens(text)
    if name is not None:
        tokens += per_name + count_tokens(name)
    return tokens


_WORDS = ("the", "budget", "session", "port", "8443", "context", "window", "tokens", "staging", "README",
          "上下文", "会话", "预算", "端口", "{\"ok\": true}", "def f(x):", "return x", "\n", "  ", "ü", "🙂")
_ROLES = ("user", "assistant", "tool", "system")
_NAMES = (None, None, None, "ana", "bob_2", "reviewer", "李雷")


def _cases() -> list[tuple]:
    rng = random.Random(1)  # fixed seed: the same cases on every run
    cases: list[tuple] = [("", role, None) for role in _ROLES] + [("", "user", "ana"), ("hi", "user", None)]
    for _ in range(70):
        words = rng.choices(_WORDS, k=rng.randint(1, 12))
        text = rng.choice(("", " ", "\n")).join(words)
        cases.append((text, rng.choice(_ROLES), rng.choice(_NAMES)))
    return by_size(cases, lambda c: len(c[0]) + len(c[2] or ""))  # characters of text and name


EXERCISE = Exercise(
    number=1,
    title="count a message with its framing",
    function="count_message",
    signature="count_message(text: str, role: str, name: str | None) -> int",
    cases=_cases,
    reference=count_message,
    show_input=show_args,
    hints=(
        "A message costs more than its text: your answer is the total column of the framing table "
        "(content + framing + name); its framing column is 4 for a user message, 3 per message and 1 for the role.",
        "Add three things: 3 per message, count_tokens(role), count_tokens(text). A name is extra.",
        "With a name (name is not None): add 1 more, plus count_tokens(name). An empty text still costs "
        "its framing: ('', 'user', None) → 3 + 1 + 0 = 4.",
    ),
)
