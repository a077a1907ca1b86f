"""Hypothesis strategies for agent sessions: the inputs of the property tests (tests/test_properties.py).

``sessions()`` draws one :class:`~ctxlab.messages.Conversation` that a real agent could have
recorded, with the awkward shapes every context strategy must survive:

* several user turns, system reminders inside an open round, meta lines that are never sent;
* parallel tool calls, several assistant messages before their results, results out of order;
* aborted calls (no result: the call was interrupted) and error results;
* empty, small and huge tool results (tens of thousands of characters, built from a few
  repeated lines so drawing them stays cheap);
* Chinese and emoji text, thinking parts with signatures, images (kept by size);
* hostile text (terminal escapes, bidi overrides, zero-width characters, NUL, U+FFFD) and odd
  recorded numbers (0-token calls, prompts no window holds, 0-token replies);
* recorded compactions, repeated: Claude Code style (no message kept from before) and pi style
  (``first_kept_id`` names an earlier message, possibly a tool result whose call is summarised);
* model and thinking-setting changes, a sidechain thread (a subagent's turn), and sessions with no
  system prompt or tools whose head is inferred from recorded usage.

Besides, each with modest probability, the conditions real agents record that a provider does not
take back as recorded (issue 12; :data:`SHAPES` names them, :func:`shapes_of` finds them in a session,
``sessions(without={...})`` leaves some out):

* ``blank_result`` — a tool result of only whitespace (``""`` ones are drawn as before);
* ``blank_reply`` — an assistant reply that is one empty or whitespace-only text block;
  ``trailing_space`` — a reply whose text ends in whitespace;
* ``aborted_turn`` — an assistant message with no parts (``content: []``, as pi records an aborted or
  errored turn; ``stop_reason`` ``"aborted"`` or ``"error"``);
* ``thinking_only`` — an assistant message of signed thinking alone; ``unsigned_thinking`` — a
  thinking part whose signature is ``""`` or ``None``;
* ``cross_provider`` — a session that starts on an OpenAI reasoning model (``gpt-5``, each message
  recorded with ``provider="openai"``) and continues on Claude after a ``model_change``;
  ``openai_reasoning`` — a reasoning item on such a message (``ThinkingPart("", <encrypted blob>,
  redacted=True)``); ``reasoning_only`` — an aborted gpt-5 turn that recorded only its reasoning item
  (nothing after it);
* ``reused_call_id`` — call ids a gateway numbers per response (``call_0`` again once the first
  ``call_0`` was answered); ``foreign_call_id`` — ids from other providers and odd ones
  (``functions.write_todos:0``, ``toolu_01AbC…``, ``call_abc123…``, ids with spaces or dots, 60-character ids);
* ``non_object_arguments`` (``"[1,2,3]"``, ``"\"text\""``, ``"42"``) and ``invalid_arguments`` (not JSON);
* ``late_result`` — a tool result recorded AFTER the user's interrupting message:
  ``[A(call c), U("stop"), T(c)]``.

Every session is what an agent can record, but not every one is valid input by the old invariants
(ids unique, a tool result within its round): a reused call id and, above all, ``late_result`` —
whose round a real user message closed before the result arrived, which ``group_units`` refused
with an OrphanError — are drawn on purpose. ctxlab must handle each by a declared rule: stub the call
at the interrupt (as any unanswered call) and set the displaced result aside with a note; send what
the provider takes (``ctxlab/sendable.py``). ``write_session`` stores one as a ctxlab session
file (``ctxlab.io.session``), the form the replay reads from disk.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

from hypothesis import strategies as st

from ctxlab.messages import (
    Conversation, Entry, ImagePart, Item, Message, TextPart, ThinkingPart, ToolCallPart, ToolSpec, Usage,
    canonical_arguments, tool_result, user,
)
from ctxlab.io.session import Session

# model -> provider; one per tokenizer and provider rule (Claude needs a user message first, counts
# thinking of the current turn; gpt-4o is o200k; gpt-4 is cl100k with an 8k window; gpt-5 records reasoning items
# and its sessions may continue on Claude)
MODELS = {"claude-sonnet-4-5": "anthropic", "gpt-4o": "openai", "gpt-4": "openai", "gpt-5": "openai"}
SAME_FAMILY = {"claude-sonnet-4-5": "claude-opus-4-5", "claude-opus-4-5": "claude-sonnet-4-5",
               "gpt-4o": "gpt-4.1", "gpt-4.1": "gpt-4o", "gpt-4": "gpt-4",
               "gpt-5": "gpt-5"}  # a model_change stays in the family

PROSE = (
    "Fix the failing test in tests/test_api.py.",
    "修复 src/app.py 里失败的测试，然后运行 pytest。",
    "继续，不要修改配置文件 config.yaml。",
    "Never push to main; 必须先跑测试。",
    "🚀 ship it 🎉",
    "家庭 👨‍👩‍👧‍👦 emoji and a flag 🇨🇳 in one line",
    "Decided: use sqlite, ruled out redis.",
    "Next steps:\n1. run the tests\n2. commit",
    "plain words about the parser and the lexer",
    # hostile text a transcript can hold (issue 17): terminal escapes, a bell, bidi overrides, zero-width
    # characters, a NUL, and the U+FFFD a lone surrogate becomes when a reader repairs it
    "escape \x1b[2J\x1b]0;title\x07 and a bell",
    "bidi \u202eevil\u202c and zero\u200bwidth\u2060 joiners",
    "a NUL \x00 inside, a DEL \x7f, a C1 \x9b",
    "a repaired \ufffd surrogate",
)
LOG_LINES = (
    "ok 🟢 test_login passed",
    "FAILED tests/test_api.py::test_health - AssertionError: 503 != 200",
    "错误: 找不到文件 config.yaml (ENOENT)",
    "exit code 1",
    "E1234 timeout 💥 after 30s",
    "def handler(request):  # 处理请求",
    '{"id": 7, "name": "张三", "tags": ["a", "b"]}',
    "\x1b[31mFAILED\x1b[0m coloured output",
    "progress\r50%\r100% over carriage returns",
)
TOOLS = {
    "bash": ToolSpec("bash", "Run a shell command.", {"type": "object", "properties": {"cmd": {"type": "string"}},
                                                      "required": ["cmd"]}),
    "read_file": ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {
        "path": {"type": "string", "description": "Path to read."}}}),
    "query": ToolSpec("query", "Run a read-only SQL query.", {"type": "object", "properties": {
        "sql": {"type": "string"}, "limit": {"type": "integer", "enum": [10, 100]}}}),
    "mcp__notes__fetch": ToolSpec("mcp__notes__fetch", "Fetch a note 🗒️ by id."),
}
ARGUMENTS = {"bash": {"cmd": "pytest -q"}, "read_file": {"path": "src/应用.py"}, "query": {"sql": "select 1"},
             "mcp__notes__fetch": {"id": "n-😀"}}
SIGNATURE = "EqQBCkgIARABGAIiQL" * 4  # an opaque signature, as Anthropic returns with thinking
REASONING = "gAAAAABo3xQ1-vZkR9eE" * 6  # an OpenAI reasoning item's encrypted_content, as the Responses API returns it
REASONING_MODEL = "gpt-5"  # an OpenAI reasoning model: its sessions may switch to CLAUDE in the middle
CLAUDE = "claude-sonnet-4-5"

# the conditions real agents record that a provider does not take back as recorded (the module docstring)
SHAPES = ("blank_result", "blank_reply", "trailing_space", "aborted_turn", "thinking_only", "unsigned_thinking",
          "cross_provider", "openai_reasoning", "reasoning_only", "reused_call_id", "foreign_call_id",
          "non_object_arguments", "invalid_arguments", "late_result")
BLANKS = ("", " ", "\n", " \n\t ")
TRAILING = (" ", "\n", "\n\n  ", "\t")
NON_OBJECT_ARGUMENTS = ("[1,2,3]", '"text"', "42", "null", "true")
INVALID_ARGUMENTS = ('{"cmd": "pytest -q', "{cmd: ls}", "", "not json at all", '{"a":1}{"b":2}')
INTERRUPTS = ("stop", "wait, not that file", "停一下")


def foreign_call_id(draw, name: str, n: int, k: int) -> str:
    """A call id as other providers and agents spell them (``n`` unique in the session, ``k`` the call's index
    in its message): Kimi's ``functions.write_todos:0``, Anthropic's ``toolu_01…``, OpenAI's ``call_…``, ids with
    spaces or dots, and 60-character ones."""
    style = draw(st.integers(0, 5))
    if style == 0:
        return f"functions.{name}:{k}"  # numbered per response: reused once answered
    if style == 1:
        return f"toolu_01AbC{n}xYz9QrS"
    if style == 2:
        return f"call_abc123{n}"
    if style == 3:
        return f"call {n}"
    if style == 4:
        return f"tool.call.{n}"
    return f"call_{n}_".ljust(60, "x")


def words(draw, pool=PROSE, most: int = 4) -> str:
    return " ".join(draw(st.sampled_from(pool)) for _ in range(draw(st.integers(1, most))))


def result_text(draw, huge: bool) -> str:
    """Empty, small, medium or huge (tens of thousands of characters, from repeated log lines)."""
    roll = draw(st.integers(0, 19))  # 1 in 5 empty, 3 in 5 small, 3 in 20 medium, 1 in 20 huge
    if roll < 4:
        return ""
    if roll < 16 or (roll == 19 and not huge):
        return words(draw, LOG_LINES, 3)
    lines = draw(st.integers(10, 120)) if roll < 19 else draw(st.integers(600, 1_200))  # huge: 22k-45k characters
    first = draw(st.integers(0, len(LOG_LINES) - 1))
    return "\n".join(f"{n} {LOG_LINES[(first + n) % len(LOG_LINES)]}" for n in range(lines))


class _Ids:
    """Unique ids in the order items are made: ``u0``, ``a1``, ``c2`` ..."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"


def stamp(k: int) -> str:
    return f"2025-03-01T10:{k // 60 % 60:02d}:{k % 60:02d}Z"  # seconds apart: no cache expiry in a test


@st.composite
def sessions(draw, max_turns: int = 4, max_rounds: int = 3, huge: bool = True,
             without: frozenset[str] | set[str] = frozenset(), force: frozenset[str] | set[str] = frozenset()
             ) -> Conversation:
    """One agent session (see the module docstring for its shapes). ``without`` names :data:`SHAPES` never to draw;
    ``force`` names shapes every session has on (each still drawn at its odds at each chance, on a model that has
    it: ``force={"late_result"}`` → most sessions hold a result recorded after the user's interrupting message)."""
    unknown = (set(without) | set(force)) - set(SHAPES)
    if unknown or set(without) & set(force):
        raise ValueError(f"shapes {sorted(unknown or set(without) & set(force))} are unknown or both left out and "
                         f"forced; known: {', '.join(SHAPES)}")

    # Half the sessions draw none of the SHAPES (the old sessions, at their old odds); in the other half each
    # shape is on with 1 in 3, and then drawn at each chance with its odds (``on``).
    odd = draw(st.booleans())
    enabled = {shape for shape in SHAPES
               if shape in force or odd and shape not in without and draw(st.integers(0, 2)) == 0}

    def on(shape: str, odds: int) -> bool:
        """1 in ``odds`` where the session has ``shape`` on, else never."""
        return shape in enabled and draw(st.integers(0, odds - 1)) == 0

    reasoning = {"cross_provider", "openai_reasoning", "reasoning_only"}
    pool = sorted(m for m in MODELS if m != REASONING_MODEL or reasoning - set(without))
    if reasoning & set(force) or {"thinking_only", "unsigned_thinking"} & set(force):  # a model that has them
        pool = [REASONING_MODEL] if reasoning & set(force) else [CLAUDE]
        if pool == [REASONING_MODEL] and {"thinking_only", "unsigned_thinking"} & set(force) and \
                "cross_provider" not in without:
            enabled.add("cross_provider")  # both: OpenAI's reasoning first, then Claude's thinking
    first_model = model = draw(st.sampled_from(pool))
    provider = MODELS[model]
    stamped = model == REASONING_MODEL  # pi records each message's provider and model: the cross-provider sessions
    ids, items = _Ids(), []  # items: list[Item]
    with_usage = draw(st.booleans())
    bare = draw(st.integers(0, 4)) == 0  # no system prompt, no tools: the head is inferred from usage
    system = () if bare else tuple(words(draw, most=2) for _ in range(draw(st.integers(1, 2))))
    tools = () if bare else tuple(TOOLS[n] for n in draw(st.lists(st.sampled_from(sorted(TOOLS)), min_size=1,
                                                                     max_size=3, unique=True)))
    tool_names = [t.name for t in tools] or sorted(TOOLS)
    timed = draw(st.booleans())
    gateway = on("reused_call_id", 1)  # call ids numbered per response (call_0, call_1, ...), as gateways do
    thread = "main"
    unanswered: set[str] = set()  # call ids still waiting for a result (aborted ones for good): never reused

    def add(item: Item) -> None:
        if timed:
            item = replace(item, timestamp=stamp(len(items)))
        if thread != "main":
            item = replace(item, thread=thread)
        items.append(item)

    def call_id(name: str, k: int) -> str:
        n = ids.n + 1
        if on("foreign_call_id", 3):
            cid = foreign_call_id(draw, name, n, k if "reused_call_id" not in without else n)
        elif gateway:
            cid = f"call_{k}"
        else:
            return ids("c")
        if cid in unanswered:  # the same id while its call is open would be a duplicate call: no agent sends it
            return ids("c")
        ids.n = n
        return cid

    def arguments(name: str) -> str:
        if on("non_object_arguments", 4):
            return draw(st.sampled_from(NON_OBJECT_ARGUMENTS))
        if on("invalid_arguments", 4):
            return draw(st.sampled_from(INVALID_ARGUMENTS))
        return canonical_arguments(ARGUMENTS[name])

    def reasoning_item() -> ThinkingPart:  # an OpenAI reasoning item: no readable text, an encrypted blob
        return ThinkingPart("", REASONING, redacted=True)

    def assistant_message(calls: list[ToolCallPart]) -> Message:
        parts: list = []
        stop = "tool_use" if calls else "stop"
        if model == REASONING_MODEL and on("openai_reasoning", 2):
            parts.append(reasoning_item())
        if provider == "anthropic" and draw(st.integers(0, 2)) == 0:
            signature = draw(st.sampled_from(["", None])) if on("unsigned_thinking", 2) else SIGNATURE
            parts.append(ThinkingPart(words(draw), signature, redacted=draw(st.integers(0, 5)) == 0))
        if draw(st.booleans()) or not calls:
            text = words(draw)
            if on("trailing_space", 3):
                text += draw(st.sampled_from(TRAILING))
            parts.append(TextPart(text))
        parts += calls
        if not calls:  # the odd replies a transcript records, each instead of the reply drawn above
            if on("blank_reply", 4):
                parts = [TextPart(draw(st.sampled_from(BLANKS)))]
            elif provider == "anthropic" and on("thinking_only", 4):
                parts = [ThinkingPart(words(draw), SIGNATURE)]
            elif on("aborted_turn", 4):
                parts, stop = [], draw(st.sampled_from(["aborted", "error"]))
            elif model == REASONING_MODEL and on("reasoning_only", 2):
                parts, stop = [reasoning_item()], "aborted"
        # odd numbers as well as ordinary ones: a call that recorded 0 tokens, a huge prompt (an inferred head
        # no window holds), 0 output (an aborted reply)
        prompt = draw(st.one_of(st.integers(0, 3_000), st.sampled_from([0, 1, 250_000, 2**31 - 1])))
        output = draw(st.one_of(st.integers(1, 400), st.just(0)))
        usage = Usage(uncached_input_tokens=prompt, output_tokens=output) if with_usage else None
        return Message("assistant", tuple(parts), ids("a"), usage=usage, stop_reason=stop,
                       **({"provider": provider, "model": model} if stamped else {}))

    def result(call: ToolCallPart) -> Message:
        unanswered.discard(call.id)
        text = draw(st.sampled_from(BLANKS[1:])) if on("blank_result", 4) else result_text(draw, huge)
        return tool_result(call.id, text, ids("t"), name=call.name, is_error=draw(st.integers(0, 5)) == 0)

    for turn in range(draw(st.integers(1, max_turns))):
        if turn and draw(st.integers(0, 3)) == 0:
            add(_compaction(draw, ids, items))
        if draw(st.integers(0, 5)) == 0:
            add(Entry("thinking_level_change", ids("e"), {"level": draw(st.sampled_from(["low", "high"]))}))
        if turn and model == REASONING_MODEL and on("cross_provider", 1):  # the session continues on Claude
            model, provider = CLAUDE, MODELS[CLAUDE]
            add(Entry("model_change", ids("e"), {"provider": provider, "model": model}))
        elif turn and draw(st.integers(0, 7)) == 0:
            model = SAME_FAMILY[model]
            add(Entry("model_change", ids("e"), {"provider": provider, "model": model}))
        parts: list = [TextPart(words(draw))]
        if draw(st.integers(0, 6)) == 0:
            parts.append(ImagePart("image/png", draw(st.integers(1, 2_000)), draw(st.integers(1, 2_000)), 1_000))
        add(Message("user", tuple(parts), ids("u")))
        if draw(st.integers(0, 5)) == 0:
            add(user("<command-name>/status</command-name>", ids("m"), origin="meta"))
        if draw(st.integers(0, 5)) == 0:  # this turn's work runs in a sidechain (a Claude Code subagent)
            thread = "sidechain"
            add(user(words(draw), ids("u")))
        for _ in range(draw(st.integers(0, max_rounds))):
            # one round: one or more assistant messages, then the results, in any order, some missing
            pending: list[ToolCallPart] = []
            for _ in range(draw(st.sampled_from([1, 1, 2]))):
                calls = []
                for k, name in enumerate(draw(st.lists(st.sampled_from(tool_names), max_size=3))):
                    calls.append(ToolCallPart(call_id(name, k), name, arguments(name)))
                    unanswered.add(calls[-1].id)
                add(assistant_message(calls))
                pending += calls
            # 1 in 8 calls aborted: its result was never recorded
            answered = [c for c in draw(st.permutations(pending)) if draw(st.integers(0, 7))]
            # a system reminder before the results, or between two of them
            reminder = draw(st.integers(0, len(answered))) if pending and draw(st.integers(0, 4)) == 0 else None
            # the user interrupts before the last result arrives: it is recorded after their message
            late = answered.pop() if answered and on("late_result", 3) else None
            for k, call in enumerate(answered):
                if k == reminder:
                    add(user("<system-reminder>Files changed: src/app.py</system-reminder>", ids("r"), origin="system"))
                add(result(call))
            if reminder is not None and reminder >= len(answered):
                add(user("<system-reminder>Files changed: src/app.py</system-reminder>", ids("r"), origin="system"))
            if late is not None:
                add(user(draw(st.sampled_from(INTERRUPTS)), ids("u")))
                add(result(late))
            if draw(st.integers(0, 3)) == 0 and len(items) > 2:
                add(_compaction(draw, ids, items))
        if thread != "main":
            add(assistant_message([]))  # the subagent's report
            thread = "main"
        if draw(st.booleans()) or not any(isinstance(i, Message) and i.role == "assistant" for i in items):
            add(assistant_message([]))  # the turn's answer (and a model call to replay)
    return Conversation("generated", tuple(items), system=system, tools=tools, model=first_model,
                        provider=MODELS[first_model])


def _compaction(draw, ids: _Ids, items: list[Item]) -> Entry:
    """A recorded compaction: Claude Code keeps nothing from before it, pi names its first kept message."""
    earlier = [i.id for i in items if isinstance(i, Message)]
    first_kept = draw(st.none() | st.sampled_from(earlier)) if earlier else None
    summary = words(draw, PROSE, 3) if draw(st.integers(0, 5)) else ""  # Claude Code may lose its summary line
    return Entry("compaction", ids("k"), {"summary": summary, "first_kept_id": first_kept,
                                          "tokens_before": draw(st.integers(1_000, 150_000)), "origin": "recorded"})


def write_session(conversation: Conversation, path: Path) -> Path:
    """Store ``conversation`` as a ctxlab session file at ``path`` (which must not exist)."""
    session = Session.create(path, system=conversation.system, tools=conversation.tools,
                             model=conversation.model, provider=conversation.provider, id=conversation.id)
    for item in conversation.items:
        session.append(item)
    return path


_CTXLAB_CALL_ID = re.compile(r"^c\d+$")


def _arguments_kind(arguments: str) -> str | None:
    """``non_object_arguments`` or ``invalid_arguments`` for a call's arguments, None for a JSON object."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return "invalid_arguments"
    return None if isinstance(value, dict) else "non_object_arguments"


def shapes_of(conversation: Conversation) -> set[str]:
    """The :data:`SHAPES` ``conversation`` holds: ``{"late_result", "reused_call_id"}`` for
    ``[U, A(call_0), T(call_0), A(call_0), U("stop"), T(call_0)]``."""
    found: set[str] = set()
    calls: dict[str, int] = {}  # call id -> how many calls made it
    open_since: dict[str, bool] = {}  # call id -> whether a real user message came since its (open) call
    for item in conversation.items:
        if isinstance(item, Entry):
            if item.kind == "model_change" and item.data.get("provider") not in (None, conversation.provider):
                found.add("cross_provider")
            continue
        texts = [p.text for p in item.parts if isinstance(p, TextPart)]
        thinking = [p for p in item.parts if isinstance(p, ThinkingPart)]
        if item.role == "tool":
            found.update({"blank_result"} if texts and all(t and not t.strip() for t in texts) else ())
            found.update({"late_result"} if open_since.pop(item.tool_call_id, False) else ())
            continue
        if item.is_real_user:
            open_since = {cid: True for cid in open_since}
        if item.role != "assistant":
            continue
        if not item.parts:
            found.add("aborted_turn")
        if len(item.parts) == 1 and texts and not texts[0].strip():
            found.add("blank_reply")
        if any(t.strip() and t != t.rstrip() for t in texts):
            found.add("trailing_space")
        if thinking and item.provider == "openai":
            found.add("openai_reasoning")
            found.update({"reasoning_only"} if len(thinking) == len(item.parts) else ())
        elif thinking:
            found.update({"thinking_only"} if len(thinking) == len(item.parts) else ())
            found.update({"unsigned_thinking"} if any(not p.signature for p in thinking) else ())
        for call in item.tool_calls:
            calls[call.id] = calls.get(call.id, 0) + 1
            open_since[call.id] = False
            found.update({"foreign_call_id"} if not _CTXLAB_CALL_ID.match(call.id) and
                         not re.match(r"^call_\d+$", call.id) else ())
            kind = _arguments_kind(call.arguments)
            found.update({kind} if kind else ())
    found.update({"reused_call_id"} if any(n > 1 for n in calls.values()) else ())
    return found


def outline(conversation: Conversation) -> str:
    """One line per item — ``a5 assistant [thinking, text, call c6 bash]`` — to read a shrunk example."""
    lines = [f"model {conversation.model} ({conversation.provider}); system {[len(b) for b in conversation.system]} "
             f"chars; tools {[t.name for t in conversation.tools]}"]
    for item in conversation.items:
        if isinstance(item, Entry):
            lines.append(f"{item.id} entry {item.kind} {item.data}")
            continue
        parts = ", ".join(_part_outline(p) for p in item.parts)
        extra = f" -> {item.tool_call_id!r}{' error' if item.is_error else ''}" if item.role == "tool" else ""
        who = f" {item.provider}/{item.model}" if item.provider else ""
        stop = f" {item.stop_reason}" if item.stop_reason in ("aborted", "error") else ""
        lines.append(f"{item.id} {item.role}{f' ({item.origin})' if item.origin else ''}{who}{stop}{extra} [{parts}]")
    return "\n".join(lines)


def _part_outline(part) -> str:
    if isinstance(part, ToolCallPart):
        args = "" if _arguments_kind(part.arguments) is None else f" args {part.arguments!r}"
        return f"call {part.id!r} {part.name}{args}"
    if isinstance(part, ThinkingPart):
        signed = "signed" if part.signature else f"signature {part.signature!r}"
        return f"{'redacted ' if part.redacted else ''}thinking {len(part.text)} chars, {signed}"
    text = getattr(part, "text", None)
    if text is not None and (not text.strip() or text != text.rstrip()):
        return f"{part.type} {text!r}"
    return f"{part.type} {len(text or '')} chars"
