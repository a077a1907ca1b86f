"""Summaries: what to keep of the history a budgeted context had to drop.

When the budget truncates, the texts add one step: summarise the dropped interactions and append
the summary to the end of the system prompt (摘要注入 system prompt 末尾), within 20% of the budget.
A summary must keep what the next step needs — the task goals, the confirmed facts, the wrong
paths already ruled out — and may drop the play-by-play. Here:

* :class:`RuleBasedSummarizer` — deterministic rules, no model: the task and later requests,
  constraints ("must", "never", "不要", "必须" ...), decisions, files, commands, errors and codes,
  open steps and live page handles, under headings, deduplicated, within a token cap;
* :class:`LLMSummarizer` — the same sections asked of any function ``str -> str`` you pass;
* :func:`summary_call` — a summary is a model call: the :class:`~ctxlab.strategies.SideCall` the
  replay turns into its own ledger row, fresh or on the cached prefix;
* :class:`BudgetedSummaryStrategy` (``budgeted+summary``) — the texts' strategy as written, the
  summary regenerated at every call that truncates, in one of three placements;
* :func:`placement_experiment` — the three placements under Anthropic's and OpenAI's cache rules.

Simplified on purpose: rules are regular expressions over text (English and Chinese keywords), so
they keep a rule stated in other words only when it sits in a user's request. Taught in chapter 06.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Any, Callable, Literal, Protocol, Sequence

from ctxlab.base import validate
from ctxlab.io.codec import loads
from ctxlab.context import BudgetPolicy, Context, build_context
from ctxlab.base.errors import BudgetError
from ctxlab.interactions import group_units
from ctxlab.messages import Conversation, Message, TextPart, ToolCallPart
from ctxlab.strategies import whole_context
from ctxlab.tokens import TiktokenCounter, TokenCounter

SECTIONS = ("Task", "Constraints", "Decisions", "Files", "Commands", "Errors", "Open steps", "Pages")
DROP_ORDER = ("Commands", "Seen", "Files", "Errors", "Decisions", "Open steps", "Pages")  # least important first
# ("Seen": paths only seen in tool output, shown under Files)
SUMMARY_MARKER = "[Earlier context summary"  # opens every summary a strategy places (facts.py looks for it)

_CONSTRAINT = re.compile(r"(?i)\b(must|never|don[’']t|do not|always|only)\b|不要|必须|禁止|只|务必")
_DECISION = re.compile(r"(?i)\b(decision|decided|decide to|going with|settled on|chose|ruled out|not the cause|"
                       r"not relevant)\b|决定|采用|改用|排除")
_EXT = (r"(?:py|pyi|ipynb|ts|tsx|js|jsx|mjs|cjs|json|jsonl|ya?ml|toml|md|rst|txt|sh|ini|cfg|conf|lock|sql|go|rs|"
        r"java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|html|css|scss|vue|xml|csv|log|pem|key|crt|env|proto)")
_PATH = re.compile(rf"(?<![\w@/.~-])(?:~|\.{{1,2}})?/?(?:[\w@.+-]+/)*[\w@+-][\w@.+-]*\.{_EXT}\b"
                   r"(?::\d+(?:-\d+)?)?(?:::[\w\[\].-]+)?")
_CODE = re.compile(r"\bE\d{3,5}\b|\bTS\d{4}\b|\bERR_[A-Z_]{3,}\b|\bE(?:NOENT|ACCES|PERM|ADDRINUSE|CONNREFUSED|"
                   r"CONNRESET|EXIST|ISDIR|NOTDIR|NOTEMPTY|TIMEDOUT|PIPE|AGAIN|NOSPC|MFILE|INVAL|BUSY)\b")
_EXCEPTION = re.compile(r"^\s*(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception)\b|^\s*(?:FAILED|ERROR|fatal:|panic:)\s")
_EXIT = re.compile(r"(?i)exit(?:ed with)? (?:status|code)[:= ]*([1-9]\d*)|\"exitCode\":\s*([1-9]\d*)")
_STEPS_HEAD = re.compile(r"(?i)^\s*(?:#+\s*)?\**(next steps?|next|remaining(?: steps)?|open steps|todo|plan|"
                         r"still to do|follow[- ]ups?|下一步|待办|后续)\b[^:：\n]{0,20}[:：]\**\s*(.*)$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(?:\[ \]\s*)?(.+)$")
# a live page handle, as paging.py's notice names it: "[... page 3f2a...: ..." or read_page(handle="3f2a...")
PAGE_HANDLE = re.compile(r'\bpage ([0-9a-f]{16})\b|\bhandle=\\?"?([0-9a-f]{16})\b')
_MODIFY = ("edit", "write", "create", "patch", "replace", "delete", "move", "rename")
_PATH_KEYS = ("path", "file_path", "filePath", "file", "filename", "notebook_path")


@dataclass(frozen=True)
class Summary:
    """A summary: its ``text``, the ids of the messages it covers (``sources``), how many items it
    kept and omitted per section (``kept``/``omitted``: ``(("Task", 2), ...)``) and ``tokens``."""

    text: str
    sources: tuple[str, ...]
    kept: tuple[tuple[str, int], ...] = ()
    omitted: tuple[tuple[str, int], ...] = ()
    tokens: int = 0


class Summarizer(Protocol):
    def summarize(self, dropped: Sequence[Message], previous: str | None = None) -> Summary: ...


def _sentences(text: str) -> list[str]:
    """Lines split into sentences, list markers removed. ``"1. 不要改。必须测。"`` → ``["不要改。", "必须测。"]``."""
    out = []
    for line in text.splitlines():
        line = re.sub(r"^\s*(?:[-*•>]|\d+[.)])\s+", "", line).strip()
        out += [s.strip() for s in re.split(r"(?<=[.!?])\s+(?=[A-Z`\"'(\[])|(?<=[。！？])", line) if s.strip()]
    return out


def _clip(text: str, chars: int) -> str:
    text = text.strip()
    return text if len(text) <= chars else text[: chars - 1].rstrip() + "…"


def _args(call: ToolCallPart) -> dict[str, Any]:
    try:
        args = loads(call.arguments) if call.arguments else {}
    except json.JSONDecodeError:
        return {}
    return args if isinstance(args, dict) else {}


def _cut_to_tokens(text: str, cap: int, counter: TokenCounter, marker: str = "\n…[summary cut to fit]") -> str:
    """The longest prefix of ``text`` (+ marker) within ``cap`` tokens, cut on a character boundary."""
    if counter.count(text) <= cap:
        return text
    if counter.count(marker) >= cap:
        marker = ""
    lo, hi = 0, len(text)
    while lo < hi:  # the longest n with count(text[:n] + marker) <= cap
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if counter.count(text[:mid] + marker) <= cap else (lo, mid - 1)
    return text[:lo].rstrip() + marker if lo else ""


@dataclass(frozen=True)
class RuleBasedSummarizer:
    """Deterministic rules, a token cap. ``summarize([user("use port 8443, never 8080", "u1")])`` →
    ``"## Task\\n- use port 8443, never 8080\\n## Constraints\\n- use port 8443, never 8080"``.

    Over the cap, whole items go, oldest first, from the least important section (``DROP_ORDER``;
    paths only seen in tool output before any other file). The task and the constraints go never —
    if they alone overflow, later requests are shortened and at last the text is cut. ``previous``
    (a summary in this format) is merged in first. ``max_tokens`` is a whole number of tokens (0 or
    more), ``request_chars`` and ``per_result`` positive whole numbers, else CtxlabError naming the
    field. Chapter 06.
    """

    max_tokens: int = 1_000
    counter: TokenCounter = field(default_factory=TiktokenCounter)
    request_chars: int = 600  # a longer user message is kept as its first 600 characters
    per_result: int = 6  # at most this many paths and error lines taken from one tool result
    memo: dict = field(default_factory=dict, compare=False, repr=False)  # (id(msg), ...) -> (msg, findings)

    def __post_init__(self) -> None:
        validate.settle(self, max_tokens=validate.tokens("max_tokens", self.max_tokens, allow_zero=True,
                                                         allow_none=False),
                        request_chars=validate.whole("request_chars", self.request_chars, unit="characters",
                                                     allow_none=False),
                        per_result=validate.whole("per_result", self.per_result, unit="items", allow_none=False))

    def summarize(self, dropped: Sequence[Message], previous: str | None = None) -> Summary:
        items: dict[str, dict[str, None]] = {s: {} for s in (*SECTIONS, "Seen")}  # section -> items, in order
        files: dict[str, list[str]] = {}  # path -> uses ("read", "modified"); [] = only mentioned
        said: set[str] = set()  # paths a person or the agent wrote, not only seen in tool output
        todos: list[str] = []  # the newest todo list's open items
        commands: dict[str, str] = {}  # call id -> command, to name the command an exit code belongs to
        codes: set[str] = set()  # error codes already kept: one line per code
        section, earlier = None, []  # the previous summary's items: [section, text]
        for line in (previous or "").splitlines():
            if line.startswith("## ") and line[3:] in items:
                section = line[3:]
            elif section and line.startswith("- "):
                earlier.append([section, line[2:]])
            elif section and line.startswith("  ") and earlier:  # an item's next line
                earlier[-1][1] += "\n" + line[2:]
        for section, item in earlier:
            items[section][item] = None
        for m in dropped:
            key = (id(m), self.per_result, self.request_chars)
            hit = self.memo.get(key)
            if hit is None or hit[0] is not m:  # the stored message keeps its id from being reused
                hit = self.memo[key] = (m, _findings(m, self.per_result, self.request_chars))
            for kind, a, b in hit[1]:
                if kind == "path":
                    files.setdefault(a, [])
                    if b:
                        said.add(a)
                elif kind == "use" and b not in files.setdefault(a, []):
                    files[a].append(b)
                elif kind == "error" and (not b or not b <= codes):
                    items["Errors"].setdefault(a, None)
                    codes |= b
                elif kind == "command":
                    commands[a] = b
                    items["Commands"].setdefault(b, None)
                elif kind == "exit" and a in commands:
                    items["Errors"].setdefault(f"exit {b} from `{commands[a]}`", None)
                elif kind == "todos":
                    todos = list(a)
                elif kind in items:
                    items[kind].setdefault(a, None)
        for path, uses in files.items():
            items["Files" if uses or path in said else "Seen"].setdefault(
                f"{path} ({', '.join(uses)})" if uses else path, None)
        for step in todos:
            items["Open steps"].setdefault(step, None)
        return self._fit({s: list(v) for s, v in items.items()}, tuple(m.id for m in dropped))

    def _fit(self, items: dict[str, list[str]], sources: tuple[str, ...]) -> Summary:
        omitted = {s: 0 for s in items}

        def render() -> str:
            body = {**items, "Files": items["Files"] + items["Seen"]}
            out = [f"## {s}\n" + "\n".join("- " + i.replace("\n", "\n  ") for i in body[s])
                   for s in SECTIONS if body[s]]
            gone = ", ".join(f"{n} {s.lower()}" for s, n in _merged(omitted) if n)
            return "\n".join(out) + (f"\n(omitted to fit {self.max_tokens} tokens: {gone})" if gone else "")

        text, cap = render(), self.max_tokens
        while self.counter.count(text) > cap and any(items[s] for s in DROP_ORDER):
            excess, freed = self.counter.count(text) - cap, 0
            for s in DROP_ORDER:  # drop about as many tokens as are over, oldest items of the least important first
                while items[s] and freed < excess:
                    freed += self.counter.count(items[s].pop(0)) + 2
                    omitted[s] += 1
            text = render()
        if self.counter.count(text) > cap:  # task and constraints alone overflow: shorten later requests
            items["Task"][1:] = [_clip(t, 160) for t in items["Task"][1:]]
            text = _cut_to_tokens(render(), cap, self.counter)
        kept = tuple((s, n) for s, n in _merged({s: len(v) for s, v in items.items()}) if n)
        return Summary(text, sources, kept, tuple((s, n) for s, n in _merged(omitted) if n), self.counter.count(text))


def _merged(counts: dict[str, int]) -> list[tuple[str, int]]:
    """Per-section counts with the paths seen in tool output counted under Files."""
    return [(s, counts.get(s, 0) + (counts.get("Seen", 0) if s == "Files" else 0)) for s in SECTIONS]


def _findings(m: Message, per_result: int, request_chars: int) -> list[tuple[str, Any, Any]]:
    """What the rules find in one message, in order: ``(section, item, None)``, ``("path", path, said)``,
    ``("use", path, "read"|"modified")``, ``("error", line, codes)``, ``("command", call id, command)``,
    ``("exit", call id, code)``, ``("todos", open items, None)``. Pure, so it is computed once per message."""
    text, out = m.text, []  # type: ignore[var-annotated]
    if m.origin == "meta":
        return out
    if m.role == "user" and m.origin == "shell":  # a command the user ran themselves
        ran = re.search(r"Ran `([^`]+)`", text)
        return [("Commands", _clip(ran.group(1) if ran else (text.splitlines() or [""])[0], 200), None)]
    if m.is_real_user:
        out.append(("Task", _clip(text, request_chars), None))
    if m.role != "tool":
        for s in (re.sub(r"</?[\w-]+>", "", s).strip() for s in _sentences(text)):
            if m.role == "user" and _CONSTRAINT.search(s):  # the person, a system reminder, an earlier summary
                out.append(("Constraints", _clip(s, 300), None))
            if _DECISION.search(s):
                out.append(("Decisions", _clip(s, 300), None))
        out += [("Open steps", step, None) for step in _steps(text)]
    for path in list(dict.fromkeys(_PATH.findall(text)))[:per_result if m.role == "tool" else 50]:
        out.append(("path", path, m.role != "tool"))
    errors = [line for line in text.splitlines()
              if _CODE.search(line) or (m.role != "assistant" and _EXCEPTION.search(line))]
    if m.role == "tool" and m.is_error and text.strip() and not errors:
        errors = [text.strip().splitlines()[0]]
    out += [("error", _clip(line, 240), frozenset(_CODE.findall(line))) for line in errors[:per_result]]
    code = _EXIT.search(text) if m.role == "tool" else None
    if code:
        out.append(("exit", m.tool_call_id, code.group(1) or code.group(2)))
    out += [("Pages", f'read_page(handle="{a or b}")', None) for a, b in PAGE_HANDLE.findall(text)]
    for call in m.tool_calls:
        args, name = _args(call), call.name.lower()
        path = next((args[k] for k in _PATH_KEYS if isinstance(args.get(k), str)), None)
        if path and ("read" in name or "view" in name or any(w in name for w in _MODIFY)):
            out.append(("use", path, "modified" if any(w in name for w in _MODIFY) else "read"))
        command = args.get("command") or args.get("cmd")
        if command and ("bash" in name or "shell" in name or "command" in name or name in ("run", "exec")):
            command = " ".join(map(str, command)) if isinstance(command, list) else str(command)
            out.append(("command", call.id, _clip((command.strip().splitlines() or [""])[0], 200)))
        if "todo" in name and isinstance(args.get("todos"), list):
            out.append(("todos", [f"{t.get('content', '')} ({t.get('status', 'open')})" for t in args["todos"]
                                  if isinstance(t, dict) and t.get("status") not in ("done", "completed", "cancelled")],
                        None))
        if "read_page" in name and isinstance(args.get("handle"), str):
            out.append(("Pages", f'read_page(handle="{args["handle"]}")', None))
    return [f for f in out if not (f[0] in SECTIONS and not str(f[1]).strip())]


def _steps(text: str) -> list[str]:
    """Open steps: the list under a "Next steps:" / "Plan:" / "下一步：" heading, "- [ ]" items, TODO lines."""
    out, steps = [], False
    for line in text.splitlines():
        head = _STEPS_HEAD.match(line) or (line.rstrip().endswith((":", "：")) and
                                            _STEPS_HEAD.match((_sentences(line) or [""])[-1]))
        item = _LIST_ITEM.match(line)
        if head:
            steps = True
            if head.group(2).strip():  # "Next: the flaky test." - the whole line is the step
                out.append(_clip(line.strip(" #*"), 300))
        elif steps and item:
            out.append(_clip(item.group(1), 300))
        elif re.match(r"\s*[-*] \[ \]", line) or re.search(r"\bTODO\b", line):
            out.append(_clip(re.sub(r"^\s*[-*] \[ \]\s*", "", line), 300))
        elif line.strip():
            steps = False
    return out


DEFAULT_PROMPT = """Summarise the conversation below for the agent that continues it; it will not see these
messages again. Keep what the next step needs, drop the play-by-play. Use these headings, in this order, each
with a list of short items, and leave out an empty one:
## Task - the user's task and later requests, in their words
## Constraints - every rule the user set (must, never, only, 不要, 必须 ...), verbatim
## Decisions - what was decided and why, and the wrong paths already ruled out
## Files - files read and modified, with line numbers as path:line
## Commands - commands run and how they ended
## Errors - error messages and codes, verbatim
## Open steps - what remains to be done
## Pages - page handles still needed, as read_page(handle="...")
Keep paths, identifiers, error codes and non-English text exactly as written. At most {max_tokens} tokens."""


def render_transcript(messages: Sequence[Message]) -> str:
    """Messages as plain text for a prompt. ``[user("hi", "u1")]`` → ``"[user] hi"``."""
    out = []
    for m in messages:
        if m.origin == "meta":
            continue
        who = f"tool {m.tool_name or ''}".strip() if m.role == "tool" else m.role
        calls = "".join(f"\n  -> {c.name}({c.arguments})" for c in m.tool_calls)
        out.append(f"[{who}] {m.text}{calls}")
    return "\n\n".join(out)


@dataclass(frozen=True)
class LLMSummarizer:
    """Any function ``prompt -> summary`` as a summarizer; its answer is used verbatim. Chapter 06.

    ``LLMSummarizer(lambda p: my_client.complete(p))``. ``prompt`` holds ``{max_tokens}`` (a whole
    number of tokens, 0 or more, else CtxlabError).
    """

    fn: Callable[[str], str]
    prompt: str = DEFAULT_PROMPT
    max_tokens: int = 1_000
    counter: TokenCounter = field(default_factory=TiktokenCounter)

    def __post_init__(self) -> None:
        validate.settle(self, max_tokens=validate.tokens("max_tokens", self.max_tokens, allow_zero=True,
                                                         allow_none=False))

    def instruction(self, previous: str | None = None) -> str:
        text = self.prompt.format(max_tokens=self.max_tokens)
        return text + (f"\n\nThe summary so far, to update:\n<summary>\n{previous}\n</summary>" if previous else "")

    def build_prompt(self, dropped: Sequence[Message], previous: str | None = None) -> str:
        return f"{self.instruction(previous)}\n\n<conversation>\n{render_transcript(dropped)}\n</conversation>"

    def summarize(self, dropped: Sequence[Message], previous: str | None = None) -> Summary:
        text = self.fn(self.build_prompt(dropped, previous))
        return Summary(text, tuple(m.id for m in dropped), tokens=self.counter.count(text))  # kept: unknown


def summary_call(history: Conversation, dropped: Sequence[Message], summary: Summary, profile: Any, meter: Any, *,
                 prompt: str | None = None, on_cached_prefix: bool = False, prefix: Context | None = None) -> Any:
    """The summary as a model call: a :class:`~ctxlab.strategies.SideCall`, which the replay gives its
    own ledger row (input: what is sent; output: the summary's tokens).

    Fresh (default): one user message, ``prompt`` plus the dropped messages as text. On the cached
    prefix: the request sent last (``prefix``; without one, the system prompt, the tools and the dropped
    messages) with ``prompt`` as a last user message, so the provider reads that request from its cache.
    """
    from ctxlab.strategies import SideCall

    prompt = prompt or DEFAULT_PROMPT.format(max_tokens=summary.tokens or 1_000)
    thread = dropped[0].thread if dropped else "main"
    if on_cached_prefix:
        ask = Message("user", (TextPart(prompt),), id="summary-request", thread=thread)
        view = replace(history, items=(*(prefix.messages if prefix else dropped), ask),
                       system=prefix.system if prefix else history.system)
    else:
        text = f"{prompt}\n\n<conversation>\n{render_transcript(dropped)}\n</conversation>"
        view = Conversation(history.id, (Message("user", (TextPart(text),), id="summary-request", thread=thread),),
                            inferred_head_tokens=0)
    how = "on the cached prefix" if on_cached_prefix else "fresh"
    return SideCall("summary", whole_context(view, profile, meter), meter.text(summary.text),
                    f"{len(dropped)} dropped messages, {how}")


Placement = Literal["system_end", "system_block", "first_user"]
PLACEMENTS: tuple[Placement, ...] = ("system_end", "system_block", "first_user")


def place_summary(context: Context, wrapped: str, placement: Placement, meter: Any) -> Context:
    """``context`` with ``wrapped`` appended to its last system block (``system_end``), as a system block
    of its own (``system_block``) or as the first message (``first_user``); token fields updated. Chapter 06."""
    system, messages, extra = context.system, context.messages, 0
    if placement == "first_user":
        note = Message("user", (TextPart(wrapped),), id="summary:budgeted", origin="compact_summary",
                       thread=messages[0].thread if messages else "main")
        messages, extra = (note, *messages), meter.message(note)
    elif placement == "system_end" and system:
        system = (*system[:-1], f"{system[-1]}\n\n{wrapped}")
    else:
        system = (*system, wrapped)
    return replace(context, system=system, messages=messages, system_tokens=meter.system(system),
                   message_tokens=context.message_tokens + extra)


@dataclass
class BudgetedSummaryStrategy:
    """``budgeted+summary``, the texts' strategy as written: build the context under (1 - ``summary_share``)
    of the budget; when units were dropped, summarise them and place the summary, regenerated at every
    call that truncates (``regenerate="on_change"``: only when what is dropped changes). Each summary
    is a side call (a ledger row). The total stays within the budget: when the newest units need part of
    the share, the summary gets what is left. State per thread: the context sent last and its summary.
    ``summary_share`` is a ratio in [0, 1) (else CtxlabError naming it).
    ``replay(conv, BudgetedSummaryStrategy(placement="system_block"), window=30_000)``. Chapter 06.
    """

    policy: BudgetPolicy = field(default_factory=BudgetPolicy)
    summarizer: Any = field(default_factory=RuleBasedSummarizer)
    placement: Placement = "system_end"
    summary_share: float = 0.2
    on_cached_prefix: bool = False
    regenerate: Literal["every_call", "on_change"] = "every_call"
    name: str = "budgeted+summary"
    last: dict[str, tuple[Context, Summary | None, Any]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.summary_share = validate.ratio("summary_share", self.summary_share, lo_open=False, hi_open=True)

    def decide(self, history: Conversation, call: Any, profile: Any, meter: Any) -> Any:
        from ctxlab.strategies import Decision

        if self.placement not in PLACEMENTS:
            raise ValueError(f"placement {self.placement!r}: choose one of {', '.join(PLACEMENTS)}")
        budget = self.policy.budget_for(profile)
        reserve, notes = int(budget * self.summary_share), []
        try:
            ctx = build_context(history, replace(self.policy, budget_tokens=budget - reserve), profile=profile,
                                meter=meter)
        except BudgetError:  # the newest units need part of the share: the summary gets what is left
            ctx = build_context(history, replace(self.policy, budget_tokens=budget), profile=profile, meter=meter)
            notes.append(f"the newest units need more than {1 - self.summary_share:.0%} of the budget")
        ctx = replace(ctx, budget_tokens=budget)
        prefix, before, side = self.last.get(call.thread, (None, None, None))
        gone = {r.unit for r in ctx.dropped()}
        if not gone:
            self.last[call.thread] = (ctx, None, None)
            return Decision(ctx, notes=tuple(notes))
        units = group_units([m for m in history.messages if m.origin != "meta"], self.policy.granularity,
                            self.policy.unanswered)
        dropped = [m for u in units if u.index in gone for m in u.messages]
        cap = max(0, min(reserve, budget - ctx.total_tokens) - 16)  # 16: the wrapper line, the placement's overhead
        summarizer = self.summarizer
        if is_dataclass(summarizer) and {"max_tokens", "counter"} <= {f.name for f in fields(summarizer)}:
            summarizer = replace(summarizer, max_tokens=cap, counter=meter.counter)
        same = before is not None and before.sources == tuple(m.id for m in dropped)
        reuse = same and self.regenerate == "on_change"
        summary = before if reuse else summarizer.summarize(dropped)
        body = _cut_to_tokens(summary.text, cap, meter.counter)
        while True:
            wrapped = f"{SUMMARY_MARKER} of {len(dropped)} dropped messages]\n{body}"
            placed = place_summary(ctx, wrapped, self.placement, meter)
            if placed.total_tokens <= budget or not body:
                break  # else a token boundary merged differently: trim a little
            body = _cut_to_tokens(body, meter.counter.count(body) - (placed.total_tokens - budget), meter.counter)
        if placed.total_tokens > budget:  # the newest units leave no room even for the summary's opening line
            self.last[call.thread] = (ctx, None, None)
            notes.insert(0, f"no room for a summary of {len(dropped)} dropped messages: its opening line alone would "
                            f"make {placed.total_tokens:,} tokens, over the budget of {budget:,}")
            return Decision(ctx, notes=tuple(notes))
        if not reuse and not (same and not self.on_cached_prefix and side and before.text == summary.text):
            prompt = (summarizer.instruction() if hasattr(summarizer, "instruction")
                      else DEFAULT_PROMPT.format(max_tokens=cap))
            side = summary_call(history, dropped, summary, profile, meter, prompt=prompt,
                                on_cached_prefix=self.on_cached_prefix, prefix=prefix)
        self.last[call.thread] = (placed, summary, side)  # an identical fresh request is reused as it is
        notes.insert(0, f"summary of {len(dropped)} dropped messages: {meter.counter.count(wrapped):,} tokens "
                        f"({self.placement}){', unchanged' if same else ''}")
        return Decision(placed, notes=tuple(notes), side_calls=() if reuse else (side,))


@dataclass(frozen=True)
class PlacementRow:
    """One main call of the placement experiment. ``summary``: ``none``, ``new``, ``changed`` or
    ``same`` (as at the call before). ``head_tokens``: tools + the base system prompt. ``shared_tokens``:
    the prefix this request shares with the one before it (whole blocks, then tokens inside the first
    differing block); ``diverged_at``: that block's label, or why ('' when the request only appended)."""

    placement: str
    provider: str
    call: int
    summary: str
    total_input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    uncached_input_tokens: int
    head_tokens: int
    shared_tokens: int
    diverged_at: str
    reason: str


def placement_experiment(conversation: Conversation, *, window: int = 30_000,
                         providers: Sequence[str] = ("anthropic", "openai"),
                         placements: Sequence[str] = (*PLACEMENTS, "system_block+breakpoint"),
                         summarizer: Any = None) -> list[PlacementRow]:
    """The placements replayed under each provider's cache rules: one row per main call. Chapter 06.

    ``system_block+breakpoint`` (Anthropic only) is ``system_block`` with the system breakpoint at the end
    of the base prompt instead of on the summary block, as an agent that knows about the summary would
    place it. Each replay's main requests go through a fresh simulator, without the summary calls
    (a fresh summary request shares no prefix with them), in the replay's order and times.
    ``window`` is a positive whole number of tokens (else CtxlabError naming it).
    """
    window = validate.tokens("window", window, allow_none=False)
    from ctxlab.cache import AnthropicCache, OpenAICache, shared_prefix_tokens
    from ctxlab.tables.profiles import profile_for
    from ctxlab.render import prefix_diff
    from ctxlab.replay import parse_time, replay
    from ctxlab.tokens import MessageMeter

    marker, rows = json.dumps(SUMMARY_MARKER)[1:-1], []
    for provider in providers:
        for placement in placements:
            moved = placement.endswith("+breakpoint")
            if moved and provider != "anthropic":
                continue  # OpenAI has no breakpoints: the same as system_block
            strategy = BudgetedSummaryStrategy(placement=placement.split("+")[0],  # type: ignore[arg-type]
                                               summarizer=summarizer or RuleBasedSummarizer())
            result = replay(conversation, strategy, provider=provider, window=window)
            sim: Any = AnthropicCache() if provider == "anthropic" else OpenAICache()
            prev, had_summary = None, False
            for rec in result.records:
                req = rec.request
                base = [i for i, b in enumerate(req.blocks) if b.kind in ("tools", "system") and marker not in b.text]
                if moved and base:  # the system breakpoint moves from the summary block to the base prompt's end
                    marks = (set(req.breakpoints) - {i for i, b in enumerate(req.blocks) if b.kind == "system"}
                             ) | {base[-1]}
                    req = replace(req, blocks=tuple(replace(b, breakpoint=i in marks)
                                                    for i, b in enumerate(req.blocks)))
                out = sim.request(req, rec.call.at_s, response_started_s=parse_time(rec.call.message.timestamp))
                note = " ".join(n for n in rec.notes if n.startswith("summary of"))
                state = "none" if not note else "same" if "unchanged" in note else "changed" if had_summary else "new"
                diff = prefix_diff(prev, req) if prev is not None else None
                head = sum(b.tokens for b in req.blocks if b.kind == "tools" or b.label == "inferred static head")
                head += MessageMeter(profile_for(req.model, provider)).system(conversation.system)
                rows.append(PlacementRow(
                    placement, provider, rec.call.index, state, out.total_input_tokens, out.cache_read_tokens,
                    out.cache_write_tokens, out.uncached_input_tokens, head,
                    shared_prefix_tokens(prev, req) if prev is not None else 0,
                    "" if diff is None or diff.index is None else diff.new.label if diff.new else diff.reason,
                    out.reason))
                prev, had_summary = req, had_summary or bool(note)
    return rows
