"""Exercise 06 (chapter 06): find the constraints in what was dropped — tool results included.

``RuleBasedSummarizer`` takes constraints ("must", "never", "不要", "必须" ...) only from user
messages, so a rule that reaches the agent inside a tool result — the sample's Chinese README says
``生产环境只允许 TLS 1.3`` — never reaches the summary (fact ``f06`` of chapter 06). The learner
writes the wider rule: every line of a user message *or a tool result* that matches the summarizer's
own keyword pattern (:data:`CONSTRAINT`), stripped, in order, each distinct line once. The agent's
own messages stay out: what the agent says is not a rule it was given.

``extract_constraints([user("Use port 8443.\\nNever 8080.", "u1")])`` → ``["Never 8080."]``.

Cases are lists of ctxlab messages generated from a seeded ``random.Random``: English and Chinese
rules, neutral lines (``commonly`` is not ``only``), indentation, repeats, assistant messages.
"""

from __future__ import annotations

import random
from typing import Sequence

from ctxlab.messages import Message, assistant, tool_result, user
from ctxlab.summary import CONSTRAINT  # the summarizer's rule: must, never, don't, do not, always, only, 不要, 必须 ...
from ctxlab.exercises._grader import Exercise, by_size


def extract_constraints(messages: Sequence[Message]) -> list[str]:
    found: list[str] = []
    for m in messages:
        if m.role not in ("user", "tool"):
            continue  # the agent's own words are not rules it was given
        for line in m.text.splitlines():
            line = line.strip()
            if CONSTRAINT.search(line) and line not in found:
                found.append(line)
    return found


_RULES = ("Never push to main.", "You must run the tests first.", "Use port 8443, never 8080.",
          "ALWAYS ask before deleting files.", "Only edit files under src/.", "Don't touch config/prod.yaml.",
          "Do not log card numbers.", "不要修改 config/prod.yaml。", "必须保留 API 兼容。", "生产环境只允许 TLS 1.3。",
          "禁止提交证书。", "务必先备份。", "24\t- 生产环境只允许 TLS 1.3，不接受更低版本的协议。")
_PLAIN = ("The tests pass.", "Reading src/app/server.py.", "This is commonly used.", "exit code 0", "",
          "上下文窗口很大。", "Port 8443 is open.", "onlyfans.example is not a domain we use", "OK",
          "23\tAmounts are integer cents.")


def _line(rng: random.Random) -> str:
    line = rng.choice(_RULES) if rng.random() < 0.45 else rng.choice(_PLAIN)
    if rng.random() < 0.2:
        line = rng.choice(("  ", "\t", "- ", " ")) + line + rng.choice(("", "  ", " "))
    return line


def cases() -> list[tuple[list[Message]]]:
    """About 120 lists of 0-6 messages, fewest messages and characters first."""
    rng = random.Random(6)
    out: list[tuple[list[Message]]] = [([],), ([user("Never push to main.", "m1")],),
                                       ([assistant("I must be careful.", "m1")],),
                                       ([tool_result("c1", "必须保留 API 兼容。", "m1", name="read_file")],)]
    for _ in range(120):
        msgs: list[Message] = []
        for k in range(rng.randint(1, 6)):
            text = "\n".join(_line(rng) for _ in range(rng.randint(1, 4)))
            role = rng.choice(("user", "tool", "tool", "assistant"))
            mid = f"m{k + 1}"
            msgs.append(user(text, mid) if role == "user" else assistant(text, mid) if role == "assistant"
                        else tool_result(f"c{k + 1}", text, mid, name="read_file"))
        out.append((msgs,))
    return by_size(out, lambda c: (len(c[0]), sum(len(m.text) for m in c[0])))


def show_messages(args: tuple) -> str:
    """The input as Python you can paste to rerun it: ``[user('Never push.', 'm1'), ...]``."""
    shown = []
    for m in args[0]:
        if m.role == "tool":
            shown.append(f"tool_result({m.tool_call_id!r}, {m.text!r}, {m.id!r}, name={m.tool_name!r})")
        else:
            shown.append(f"{m.role}({m.text!r}, {m.id!r})")
    return "[" + ", ".join(shown) + "]"


EXERCISE = Exercise(
    number=6,
    title="constraints from user messages and tool results",
    function="extract_constraints",
    signature="extract_constraints(messages: list[Message]) -> list[str]",
    cases=cases,
    reference=extract_constraints,
    show_input=show_messages,
    hints=(
        "Look at each message's role (m.role) and text (m.text). Skip the assistant's messages; split the "
        "others into lines with m.text.splitlines().",
        "Strip each line (line.strip()), keep it when CONSTRAINT.search(line) finds a keyword, and keep a "
        "line only the first time you see it — across all messages, in order.",
        "A list `found` and `if CONSTRAINT.search(line) and line not in found: found.append(line)` is enough; "
        "a set alone would lose the order.",
    ),
)
