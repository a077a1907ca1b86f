"""The invariants every context must satisfy, whatever strategy built it.

Providers reject a request with a 400 error when a tool result has no call or a call has no
result; a context that lost the system prompt or the newest user message is valid but wrong.
:func:`check_context` states the rules once; ``replay --check``, the property tests
(``tests/test_properties.py``) and the chapters use it.

Rules (each violation names its rule):

* ``pairing`` — no orphan on either side (``interactions.find_orphans``);
* ``wire:<rule>`` — the provider accepts the request bodies rendered from the context
  (``bodies.py``): judged by the independent oracle in ``ctxlab/wire/``, written from the providers'
  documentation, with no exception for a history that broke the rule — what is sent must be valid.
  A Claude profile's context is judged as a Messages API body; any other as chat-completions and
  Responses bodies. The input + ``max_tokens`` size rule applies to a strategy that promises a budget
  (the others report overflows in the ledger);
* ``budget`` — total tokens within the budget under the strategy's own counter (a strategy that
  does not promise a budget, ``budgeted = False`` as ``full`` and ``recorded``, reports overflows in
  the ledger instead), and a budget no larger than the window;
* ``head`` — the system prompt and tools are the conversation's, first and unchanged (a strategy
  may append after them: a summary to the system prompt — as its own block or at the end of the
  last one, opening with ``views.SUMMARY_MARKER`` — and the tools it declares in ``added_tools``,
  paging's ``read_page``);
* ``history`` — every message comes from the history, in its order and at most once; the only
  others are ctxlab's stubs for unanswered calls (``origin="synthetic"``) and summaries
  (``origin="compact_summary"``). A pruned or paged result keeps the id of the one it stands for;
* ``newest_user`` — the newest real user message of the history is in the context, unless the
  newest compaction in the history (recorded or ctxlab's) summarised it;
* ``not_empty`` — at least one message;
* ``user_first`` — a profile that needs a user message first gets one.

The checks name no strategy: each strategy declares what it promises (``strategies.Strategy``).
Taught in chapter 04 (the replay's ``check=True``); the rules grow with chapters 05–07.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ctxlab.context import Context
from ctxlab.bodies import to_anthropic_body, to_openai_body, to_responses_body
from ctxlab.interactions import find_orphans
from ctxlab.messages import Conversation, Message, ToolSpec
from ctxlab.strategies import PROMISE, Promise, Strategy
from ctxlab.views import SUMMARY_MARKER, compacted_view
from ctxlab.wire import check_body

MADE_BY_CTXLAB = frozenset({"synthetic", "compact_summary"})  # origins of messages a context may add
Bodies = Callable[[Context], list[tuple[str, dict[str, Any]]]]  # a context -> its (API kind, request body) pairs


@dataclass(frozen=True)
class Violation:
    """One broken rule: ``rule`` and a sentence naming the message or the numbers. Chapter 04."""

    rule: str
    detail: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.detail}"


def check_context(context: Context, history: Conversation, strategy: Strategy | Promise = PROMISE, *,
                  bodies: Bodies | None = None) -> list[Violation]:
    """Every rule ``context`` breaks for ``history`` under ``strategy``; ``[]`` when it is sound. Chapter 04.

    ``strategy`` is the strategy that built the context (or a :class:`~ctxlab.strategies.Promise`): its
    ``budgeted`` and ``added_tools`` say what it promised; one that declares neither promises a budget
    and no added tools. ``check_context(ctx, history, FullStrategy())`` → ``[]`` for an overflowing ``full``.
    ``bodies``: what renders the bodies the oracle judges (None: :func:`request_bodies`; anything else must give
    the same bodies, as ``ctxlab/fast/``'s body cache does, faster).
    Raises TypeError for a strategy's name (a string): pass the strategy itself.
    """
    if isinstance(strategy, str):
        raise TypeError(f"check_context takes the strategy itself, not its name {strategy!r}: "
                        f"check_context(context, history, get_strategy({strategy!r}))")
    budgeted = getattr(strategy, "budgeted", PROMISE.budgeted)
    added_tools = tuple(getattr(strategy, "added_tools", PROMISE.added_tools))
    found: list[Violation] = []
    if not context.messages:
        found.append(Violation("not_empty", "the context holds no message"))
    found += [Violation("pairing", str(o)) for o in find_orphans(context.messages)]
    found += wire_violations(context, budgeted, bodies=bodies)
    if budgeted and context.total_tokens > context.budget_tokens:
        found.append(Violation("budget", f"{context.total_tokens:,} tokens over the budget of "
                                         f"{context.budget_tokens:,} ({context.counter})"))
    if context.budget_tokens > context.window_tokens:
        found.append(Violation("budget", f"the budget of {context.budget_tokens:,} tokens is larger than the "
                                         f"window of {context.window_tokens:,}"))
    found += _head(context, history, added_tools)
    found += _history(context.messages, history.messages)
    users = [m for m in history.messages if m.is_real_user]
    if users and users[-1] not in context.messages and not _summarised(users[-1], history):
        found.append(Violation("newest_user", f"the newest user message {users[-1].where()} is missing"))
    if context.profile.requires_user_first and context.messages and context.messages[0].role != "user":
        found.append(Violation("user_first", f"{context.profile.name} needs a user message first, got "
                                             f"{context.messages[0].where()}"))
    return found


def request_bodies(context: Context) -> list[tuple[str, dict[str, Any]]]:
    """The bodies the oracle judges for ``context``, as ``(API kind, body)``: a Claude profile's as one Messages
    API body, any other's as a chat-completions and a Responses body. Chapter 04."""
    if context.profile.provider == "anthropic":
        return [("anthropic", to_anthropic_body(context))]
    return [("openai-chat", to_openai_body(context)), ("openai-responses", to_responses_body(context))]


def wire_violations(context: Context, sized: bool = True, *, bodies: Bodies | None = None) -> list[Violation]:
    """What the provider's oracle (``ctxlab/wire/``) finds in the bodies rendered from ``context``, as
    ``wire:<rule>`` violations naming the body, the path and the documented source; ``sized``: also judge
    input + ``max_tokens`` against the context's window (a replay's ``window`` override included), with the
    context's own token count. ``bodies``: as in :func:`check_context`. Chapter 04."""
    limits = {"input_tokens": context.total_tokens, "context_window": context.window_tokens} if sized else {}
    return [Violation(f"wire:{v.rule}", f"{v.provider} body, {v.path}: {v.detail} ({v.source.page}, read "
                                        f"{v.source.read})")
            for kind, body in (bodies or request_bodies)(context) for v in check_body(kind, body, **limits)]


def _head(context: Context, history: Conversation, may_add: tuple[ToolSpec, ...]) -> list[Violation]:
    """The system prompt and tools first and unchanged; after them only summaries and the tools ``may_add``."""
    base = len(history.system)
    head = context.system[:base]
    # a summary appended to the end of the last system block (the texts' placement) keeps the head
    extended = bool(base) and len(head) == base and head[:-1] == history.system[:-1] and \
        head[-1].startswith(f"{history.system[-1]}\n\n{SUMMARY_MARKER}")
    added_blocks = context.system[base:]
    added_tools = context.tools[len(history.tools):]
    if (head != history.system and not extended) or context.tools[:len(history.tools)] != history.tools:
        return [Violation("head", "the system prompt or the tools differ from the conversation's")]
    if any(not block.startswith(SUMMARY_MARKER) for block in added_blocks):
        return [Violation("head", "a system block was added that is not a summary")]
    if any(tool not in may_add for tool in added_tools):
        besides = f" besides {', '.join(t.name for t in may_add)}" if may_add else ""
        return [Violation("head", f"tools were added{besides}: {', '.join(t.name for t in added_tools)}")]
    return []


def _history(sent: tuple[Message, ...], recorded: tuple[Message, ...]) -> list[Violation]:
    """Messages not from the history, out of its order, or sent twice (ids a transcript repeats are not judged)."""
    counts = Counter(m.id for m in recorded)
    position = {m.id: k for k, m in enumerate(recorded)}  # message id -> index in the history
    found, last, seen = [], -1, set()
    for m in sent:
        if m.id not in position:
            if m.origin not in MADE_BY_CTXLAB:
                found.append(Violation("history", f"{m.where()} is not in the history"))
            continue
        if counts[m.id] > 1:
            continue
        if m.id in seen:
            found.append(Violation("history", f"{m.where()} is sent twice"))
        elif position[m.id] < last:
            found.append(Violation("history", f"{m.where()} is out of the history's order"))
        seen.add(m.id)
        last = max(last, position[m.id])
    return found


def _summarised(message: Message, history: Conversation) -> bool:
    """Whether the newest compaction in ``history`` left ``message`` out of the view (its summary stands for it)."""
    view, entry, _ = compacted_view(history)
    return entry is not None and message not in view.messages
