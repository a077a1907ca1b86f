"""Summaries: what to keep of the history a budgeted context had to drop.

When the budget truncates, the texts add one step: summarise the dropped interactions and append
the summary to the end of the system prompt (摘要注入 system prompt 末尾), within 20% of the budget.
A summary must keep what the next step needs — the task goals, the confirmed facts, the wrong
paths already ruled out — and may drop the play-by-play. Here:

* :class:`Summary` and :class:`Summarizer` — what a summary is, and what makes one;
* :class:`RuleBasedSummarizer` — deterministic rules, no model: the task and later requests,
  constraints ("must", "never", "不要", "必须" ...), decisions, files, commands, errors and codes,
  open steps and live page handles, under headings, deduplicated, within a token cap;
* :func:`held_to` — a summarizer held to the room a strategy leaves it.

Asking a model for the summary, the summary as a model call of its own, where it goes and the
``budgeted+summary`` strategy are in ``summary_strategy.py``. Simplified on purpose: rules are regular
expressions over text (English and Chinese keywords), so they keep a rule stated in other words only
when it sits in a user's request. Taught in chapter 06.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Any, Protocol, Sequence

from ctxlab.base import validate
from ctxlab.base.json_text import loads
from ctxlab.messages import Message, ToolCallPart
from ctxlab.paging import PAGE_HANDLE
from ctxlab.pruning import cut_to_tokens
from ctxlab.tokens import TiktokenCounter, TokenCounter

SECTIONS = ("Task", "Constraints", "Decisions", "Files", "Commands", "Errors", "Open steps", "Pages")
DROP_ORDER = ("Commands", "Seen", "Files", "Errors", "Decisions", "Open steps", "Pages")  # least important first
# ("Seen": paths only seen in tool output, shown under Files)

# what makes a sentence a constraint (exercise 06 widens it to tool results): must, never, only, 不要, 必须 ...
CONSTRAINT = re.compile(r"(?i)\b(must|never|don[’']t|do not|always|only)\b|不要|必须|禁止|只|务必")
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
_MODIFY = ("edit", "write", "create", "patch", "replace", "delete", "move", "rename")
_PATH_KEYS = ("path", "file_path", "filePath", "file", "filename", "notebook_path")


@dataclass(frozen=True)
class Summary:
    """A summary: its ``text``, the ids of the messages it covers (``sources``), how many items it
    kept and omitted per section (``kept``/``omitted``: ``(("Task", 2), ...)``) and ``tokens``. Chapter 06."""

    text: str
    sources: tuple[str, ...]
    kept: tuple[tuple[str, int], ...] = ()
    omitted: tuple[tuple[str, int], ...] = ()
    tokens: int = 0


class Summarizer(Protocol):
    """Anything that summarises dropped messages, merging in ``previous`` (an earlier summary's text) when
    given: :class:`RuleBasedSummarizer`, ``summary_strategy.LLMSummarizer`` or your own. Chapter 06."""

    def summarize(self, dropped: Sequence[Message], previous: str | None = None) -> Summary: ...


def held_to(summarizer: Summarizer, max_tokens: int, counter: TokenCounter, *, lower_only: bool = False
            ) -> Summarizer:
    """``summarizer`` with its cap set to ``max_tokens`` (0 at least) under ``counter``, when it has those
    settings (a dataclass with ``max_tokens`` and ``counter``: both summarizers here); else itself.

    ``lower_only``: leave it as it is when its own cap is already at most ``max_tokens``. ``held_to(
    RuleBasedSummarizer(), 200, meter.counter).max_tokens`` → 200. Chapters 06 and 07.
    """
    if not (is_dataclass(summarizer) and {"max_tokens", "counter"} <= {f.name for f in fields(summarizer)}):
        return summarizer
    if lower_only and max_tokens >= summarizer.max_tokens:  # type: ignore[attr-defined]
        return summarizer
    return replace(summarizer, max_tokens=max(0, max_tokens), counter=counter)  # type: ignore[type-var]


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
            text = cut_to_tokens(render(), cap, self.counter)
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
            if m.role == "user" and CONSTRAINT.search(s):  # the person, a system reminder, an earlier summary
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
