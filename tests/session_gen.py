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

Every session is valid input: ids are unique, and a tool result always follows its call within
the round (a real user message closes a round). ``write_session`` stores one as a ctxlab session
file (``ctxlab.io.session``), the form the replay reads from disk.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from hypothesis import strategies as st

from ctxlab.messages import (
    Conversation, Entry, ImagePart, Item, Message, TextPart, ThinkingPart, ToolCallPart, ToolSpec, Usage,
    canonical_arguments, tool_result, user,
)
from ctxlab.io.session import Session

# model -> provider; one per tokenizer and provider rule (Claude needs a user message first, counts
# thinking of the current turn; gpt-4o is o200k; gpt-4 is cl100k with an 8k window)
MODELS = {"claude-sonnet-4-5": "anthropic", "gpt-4o": "openai", "gpt-4": "openai"}
SAME_FAMILY = {"claude-sonnet-4-5": "claude-opus-4-5", "claude-opus-4-5": "claude-sonnet-4-5",
               "gpt-4o": "gpt-4.1", "gpt-4.1": "gpt-4o", "gpt-4": "gpt-4"}  # a model_change stays in the family

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
def sessions(draw, max_turns: int = 4, max_rounds: int = 3, huge: bool = True) -> Conversation:
    """One agent session (see the module docstring for its shapes)."""
    first_model = model = draw(st.sampled_from(sorted(MODELS)))
    provider = MODELS[model]
    ids, items = _Ids(), []  # items: list[Item]
    with_usage = draw(st.booleans())
    bare = draw(st.integers(0, 4)) == 0  # no system prompt, no tools: the head is inferred from usage
    system = () if bare else tuple(words(draw, most=2) for _ in range(draw(st.integers(1, 2))))
    tools = () if bare else tuple(TOOLS[n] for n in draw(st.lists(st.sampled_from(sorted(TOOLS)), min_size=1,
                                                                     max_size=3, unique=True)))
    tool_names = [t.name for t in tools] or sorted(TOOLS)
    timed = draw(st.booleans())
    thread = "main"

    def add(item: Item) -> None:
        if timed:
            item = replace(item, timestamp=stamp(len(items)))
        if thread != "main":
            item = replace(item, thread=thread)
        items.append(item)

    def assistant_message(calls: list[ToolCallPart]) -> Message:
        parts: list = []
        if provider == "anthropic" and draw(st.integers(0, 2)) == 0:
            parts.append(ThinkingPart(words(draw), SIGNATURE, redacted=draw(st.integers(0, 5)) == 0))
        if draw(st.booleans()) or not calls:
            parts.append(TextPart(words(draw)))
        parts += calls
        # odd numbers as well as ordinary ones: a call that recorded 0 tokens, a huge prompt (an inferred head
        # no window holds), 0 output (an aborted reply)
        prompt = draw(st.one_of(st.integers(0, 3_000), st.sampled_from([0, 1, 250_000, 2**31 - 1])))
        output = draw(st.one_of(st.integers(1, 400), st.just(0)))
        usage = Usage(uncached_input_tokens=prompt, output_tokens=output) if with_usage else None
        return Message("assistant", tuple(parts), ids("a"), usage=usage,
                       stop_reason="tool_use" if calls else "stop")

    for turn in range(draw(st.integers(1, max_turns))):
        if turn and draw(st.integers(0, 3)) == 0:
            add(_compaction(draw, ids, items))
        if draw(st.integers(0, 5)) == 0:
            add(Entry("thinking_level_change", ids("e"), {"level": draw(st.sampled_from(["low", "high"]))}))
        if turn and draw(st.integers(0, 7)) == 0:
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
                calls = [ToolCallPart(ids("c"), name, canonical_arguments(ARGUMENTS[name]))
                         for name in draw(st.lists(st.sampled_from(tool_names), max_size=3))]
                add(assistant_message(calls))
                pending += calls
            if pending and draw(st.integers(0, 4)) == 0:
                add(user("<system-reminder>Files changed: src/app.py</system-reminder>", ids("r"), origin="system"))
            # 1 in 8 calls aborted: its result was never recorded
            answered = [c for c in draw(st.permutations(pending)) if draw(st.integers(0, 7))]
            for call in answered:
                add(tool_result(call.id, result_text(draw, huge), ids("t"), name=call.name,
                                is_error=draw(st.integers(0, 5)) == 0))
            if draw(st.integers(0, 3)) == 0 and len(items) > 2:
                add(_compaction(draw, ids, items))
        if thread != "main":
            add(assistant_message([]))  # the subagent's report
            thread = "main"
        if draw(st.booleans()) or not any(isinstance(i, Message) and i.role == "assistant" for i in items):
            add(assistant_message([]))  # the turn's answer (and a model call to replay)
    return Conversation("generated", tuple(items), system=system, tools=tools, model=first_model, provider=provider)


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


def outline(conversation: Conversation) -> str:
    """One line per item — ``a5 assistant [thinking, text, call c6 bash]`` — to read a shrunk example."""
    lines = [f"model {conversation.model} ({conversation.provider}); system {[len(b) for b in conversation.system]} "
             f"chars; tools {[t.name for t in conversation.tools]}"]
    for item in conversation.items:
        if isinstance(item, Entry):
            lines.append(f"{item.id} entry {item.kind} {item.data}")
            continue
        parts = ", ".join(f"call {p.id} {p.name}" if isinstance(p, ToolCallPart) else
                          f"{p.type} {len(getattr(p, 'text', ''))} chars" for p in item.parts)
        extra = f" -> {item.tool_call_id}{' error' if item.is_error else ''}" if item.role == "tool" else ""
        lines.append(f"{item.id} {item.role}{f' ({item.origin})' if item.origin else ''}{extra} [{parts}]")
    return "\n".join(lines)
