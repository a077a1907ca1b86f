"""The invariants every context must satisfy, whatever strategy built it.

Providers reject a request with a 400 error when a tool result has no call or a call has no
result; a context that lost the system prompt or the newest user message is valid but wrong.
:func:`check_context` states the rules once; ``replay --check``, the property tests and the
chapters use it.

Rules (each violation names its rule):

* ``pairing`` — no orphan on either side (``interactions.find_orphans``);
* ``budget`` — total tokens within the budget under the strategy's own counter (strategies that
  do not promise a budget, ``full`` and ``recorded``, report overflows in the ledger instead);
* ``head`` — the system prompt and tools are the conversation's, first and unchanged (a strategy
  may append after them: a summary to the system prompt — as its own block or at the end of the
  last one — and a ``read_page`` tool to the tools);
* ``newest_user`` — the newest real user message of the history is in the context, unless a
  recorded or ctxlab compaction summarised it;
* ``not_empty`` — at least one message;
* ``user_first`` — a profile that needs a user message first gets one.
"""

from __future__ import annotations

from dataclasses import dataclass

from .context import Context
from .interactions import find_orphans
from .messages import Conversation

UNBUDGETED = frozenset({"full", "recorded"})


@dataclass(frozen=True)
class Violation:
    """One broken rule: ``rule`` and a sentence naming the message or the numbers."""

    rule: str
    detail: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.detail}"


def check_context(context: Context, history: Conversation, strategy: str = "budgeted") -> list[Violation]:
    """Every rule ``context`` breaks for ``history`` under ``strategy``; ``[]`` when it is sound."""
    found: list[Violation] = []
    if not context.messages:
        found.append(Violation("not_empty", "the context holds no message"))
    found += [Violation("pairing", str(o)) for o in find_orphans(context.messages)]
    if strategy not in UNBUDGETED and context.total_tokens > context.budget_tokens:
        found.append(Violation("budget", f"{context.total_tokens:,} tokens over the budget of "
                                         f"{context.budget_tokens:,} ({context.counter})"))
    from .summary import SUMMARY_MARKER  # how every placed summary opens

    base = len(history.system)
    head = context.system[:base]
    # a summary appended to the end of the last system block (the texts' placement) keeps the head
    extended = bool(base) and head[:-1] == history.system[:-1] and \
        head[-1].startswith(f"{history.system[-1]}\n\n{SUMMARY_MARKER}")
    if (head != history.system and not extended) or context.tools[:len(history.tools)] != history.tools:
        found.append(Violation("head", "the system prompt or the tools differ from the conversation's"))
    users = [m for m in history.messages if m.is_real_user]
    summarised = (any(m.origin == "compact_summary" for m in context.messages) or len(context.system) > base
                  or extended or any(SUMMARY_MARKER in m.text for m in context.messages if m.role == "user"))
    if users and users[-1] not in context.messages and not summarised:
        found.append(Violation("newest_user", f"the newest user message {users[-1].where()} is missing"))
    if context.profile.requires_user_first and context.messages and context.messages[0].role != "user":
        found.append(Violation("user_first", f"{context.profile.name} needs a user message first, got "
                                             f"{context.messages[0].where()}"))
    return found
