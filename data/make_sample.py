"""Write the bundled sample session: data/sample_session.jsonl and data/sample_facts.json.

What it holds: a synthetic coding-agent session (an agent moves a small web service, ``orderly``,
to port 8443 with TLS, chases a flaky test, then the user changes the task), written through
:class:`ctxlab.io.session.Session`, plus the checklist of facts planted in it that later chapters
test for survival after truncation, pruning and summaries.

Simplified on purpose: every word, file and number is invented here (nothing is copied from
any transcript); the repository the agent works on (``data/sample_repo.py``) is a small in-memory
dict, so reads, greps and edits stay consistent with each other; usage is *simulated* (see
``UsageModel``), not recorded.
Deterministic: ``random.Random(SEED)``, a fixed start time, no clock — running it twice gives
byte-identical files.

    python data/make_sample.py [OUTDIR]                    # writes OUTDIR (default: data/)
    python data/make_sample.py --measure DIR               # prints the statistics below

Measured on the shared transcripts (the figures the sample is modelled on), with
``python data/make_sample.py --measure ../shared/data/transcripts``:

    pi before-compaction: tool results n=448 median=199 p90=3515 max=51266 chars
        assistant messages=484, with tool calls=437, parallel (>=2 calls)=2.1% (max 4 calls),
        aborted=3.7% of assistant messages, calls never answered=6, error results=12/448 (2.7%),
        thinking on 10.1% of assistant messages, call-to-call gap median 5.8 s / p90 23.0 s,
        gaps >5 min: 1 (max 374 s), gaps >1 h: 0, prompt median 132491 tokens (max 184915),
        cache_read share of prompt tokens 97.0%, output median 130 tokens, user messages=55
        (median 80 chars)
    claude-code-viewer: tool results n=167 median=160 p90=1501 max=26746 chars;
        parallel 1.8% of responses with calls (max 3), 92.7% of lines are sidechain
    swe-agent marshmallow (function calling): tool results n=11 median=352 p90=4449 max=9063;
        system prompt 1658 chars
    swe-agent ctf (ReAct): observations n=20 median=1118 p90=2150 max=2472; system prompt 6163 chars
    tau-bench airline: tool results n=1164 median=667 p90=965 max=8117 (JSON); parallel 0.0%;
        system prompt 6155 chars; 24 messages per run (max 62)
    llama-factory zh: observations n=218 median=35 p90=176 max=267 chars; 47.8% of all chars are CJK

How the sample follows them: most tool results are short (edits, small commands), file reads run
1–3k, one CI log is ~50k (the pi maximum), one binary read is ~8k of base64; thinking on ~10% of
assistant messages; call-to-call gaps of a few seconds plus one coffee break (>5 min) and one lunch
(>1 h). Parallel calls, aborts and errors are deliberately *over*-represented (7 parallel rounds in
70 calls instead of ~2%) so that each has something to show. What the script prints for the sample:

    175 items (167 messages on the main path, 2 leaves); tool results median=339 p90=1692
    max=50852 chars; parallel=7/70; aborted=1; thinking=8/77; gap median=6.4s, >5min=2, >1h=1;
    cache_read share=0.935
"""

from __future__ import annotations

import base64
import json
import os
import random
import statistics
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # run from a checkout without installing ctxlab

from ctxlab.io.codec import dumps  # noqa: E402
from ctxlab.messages import (  # noqa: E402
    Entry, Message, TextPart, ThinkingPart, ToolCallPart, ToolSpec, Usage, canonical_arguments,
)
from ctxlab.io.session import Session  # noqa: E402
from ctxlab.tables.default_model import DEFAULT_MODEL, DEFAULT_PROVIDER  # noqa: E402
from ctxlab.tables.model_facts import model_facts  # noqa: E402
from sample_repo import HEALTH_PY, TEST_HEALTH_PY, TLS_PY, Repo  # noqa: E402  data/sample_repo.py, beside this script

SEED = 20251014
START = datetime(2025, 10, 14, 9, 2, 11, tzinfo=timezone.utc)
MODEL, PROVIDER = DEFAULT_MODEL, DEFAULT_PROVIDER  # the chapters' default (claude-sonnet-4-6 since issue 13)
SESSION_FILE, FACTS_FILE = "sample_session.jsonl", "sample_facts.json"

# ==== the request head: system prompt and tools ====================================================

SYSTEM = (
    "You are a coding agent working in the user's repository through the tools below. "
    "Work in small, verifiable steps: read before you edit, run the tests after you edit, and say "
    "what you changed. Prefer editing an existing file to creating a new one. Never invent file "
    "contents: if you need to know what a file holds, read it. Keep answers short; use Markdown "
    "only for lists and code. When a command fails, read the error before retrying, and do not "
    "repeat a failing command unchanged. Ask before deleting files, rewriting history or touching "
    "anything outside the repository. Secrets (keys, tokens, certificates) never go into a commit "
    "or into your answer. When the user states a constraint, it holds for the rest of the session "
    "unless they lift it. Keep the todo list current when a task has more than three steps; mark "
    "an item done only when its tests pass. If the user writes in another language, answer in "
    "the language of the question unless code or logs are involved.",
    "Environment\n- working directory: /home/dev/orderly (a git repository, branch `tls-8443`)\n"
    "- platform: linux, Python 3.11, GNU make\n- today: 2025-10-14\n"
    "- the user reviews and pushes; you may commit locally when asked",
)


def _schema(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


TOOLS = (
    ToolSpec("read_file", "Read a text file; returns numbered lines. Binary files come back base64-encoded.",
             _schema({"path": {"type": "string", "description": "Path relative to the repository root."},
                      "offset": {"type": "integer", "minimum": 1, "description": "First line to read (1-based)."},
                      "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to read."}},
                     ["path"])),
    ToolSpec("write_file", "Create or overwrite a file with the given content.",
             _schema({"path": {"type": "string"}, "content": {"type": "string"}}, ["path", "content"])),
    ToolSpec("edit_file", "Replace an exact string in a file. Fails unless old_string occurs exactly once, "
                          "or replace_all is true.",
             _schema({"path": {"type": "string"}, "old_string": {"type": "string"},
                      "new_string": {"type": "string"},
                      "replace_all": {"type": "boolean", "default": False}},
                     ["path", "old_string", "new_string"])),
    ToolSpec("bash", "Run a shell command in the repository root and return its output (stdout and "
                     "stderr interleaved). Output longer than 60,000 characters is cut.",
             _schema({"command": {"type": "string"},
                      "timeout": {"type": "integer", "minimum": 1, "maximum": 3600,
                                  "description": "Seconds before the command is killed (default 120)."}},
                     ["command"])),
    ToolSpec("grep", "Search file contents with a regular expression; returns path:line:text matches.",
             _schema({"pattern": {"type": "string"}, "path": {"type": "string", "default": "."},
                      "glob": {"type": "string", "description": "Only files matching this glob."},
                      "ignore_case": {"type": "boolean", "default": False}}, ["pattern"])),
    ToolSpec("list_dir", "List a directory as a tree.",
             _schema({"path": {"type": "string"}, "depth": {"type": "integer", "minimum": 1, "maximum": 5}},
                     ["path"])),
    ToolSpec("web_fetch", "Fetch a URL and return its body as text (HTML converted to Markdown).",
             _schema({"url": {"type": "string", "format": "uri"},
                      "max_chars": {"type": "integer", "minimum": 100}}, ["url"])),
    ToolSpec("todo_write", "Replace the session's todo list; returns the list as JSON.",
             _schema({"todos": {"type": "array", "items": _schema(
                 {"id": {"type": "string"}, "content": {"type": "string"},
                  "status": {"type": "string", "enum": ["pending", "in_progress", "done"]}},
                 ["id", "content", "status"])}}, ["todos"])),
)

# ==== generated outputs ==============================================================================

def ci_log(rng: random.Random) -> tuple[str, int, int]:
    """A long `make ci` log (~50k chars) with two failures; returns (text, line of the E1234 error, tests)."""
    clock = datetime(2025, 10, 14, 10, 0, 27, tzinfo=timezone.utc)
    lines: list[str] = []

    def stamp(msg: str) -> None:
        nonlocal clock
        clock += timedelta(milliseconds=rng.randint(5, 400))
        lines.append(f"{clock.strftime('%H:%M:%S.%f')[:-3]} {msg}")

    stamp("[ci] step 1/5: environment")
    for pkg, ver in [("aiohttp", "3.10.10"), ("asyncpg", "0.30.0"), ("pyyaml", "6.0.2"), ("cryptography", "44.0.0"),
                     ("pytest", "8.3.3"), ("pytest-asyncio", "0.24.0"), ("ruff", "0.7.1"), ("multidict", "6.1.0"),
                     ("yarl", "1.15.2"), ("frozenlist", "1.4.1"), ("aiosignal", "1.3.1"), ("attrs", "24.2.0"),
                     ("idna", "3.10"), ("cffi", "1.17.1"), ("pycparser", "2.22"), ("iniconfig", "2.0.0"),
                     ("pluggy", "1.5.0"), ("packaging", "24.1")]:
        stamp(f"  Requirement already satisfied: {pkg}=={ver} in ./.venv/lib/python3.11/site-packages")
    stamp("[ci] step 2/5: lint")
    for mod in ["src/app/server.py", "src/app/orders.py", "src/app/config.py", "src/app/tls.py",
                "src/app/db.py", "src/app/middleware.py"]:
        stamp(f"  ruff check {mod} ... ok")
    stamp("  All checks passed!")
    stamp("[ci] step 3/5: unit tests")
    unit = [("tests/test_server.py", ["test_default_port", "test_port_flag_overrides_default", "test_config_flag",
                                       "test_default_config_is_dev", "test_debug_flag_defaults_off"]),
            ("tests/test_orders.py", ["test_full_refund_for_damaged_goods", "test_late_delivery_refunds_ten_percent",
                                       "test_unknown_reason_is_refused", "test_refund_never_exceeds_what_is_left",
                                       "test_refund_rounding", "test_changed_mind_keeps_fifteen_percent"])]
    params = [f"case-{i:03d}" for i in range(52)]
    modules = unit + [(f"tests/test_{name}.py", [f"test_{name}_{what}[{p}]" for what in ("parses", "round_trips")
                                                 for p in params])
                      for name in ("money", "db_rows", "middleware", "pagination")]
    total = sum(len(t) for _, t in modules)
    done, failed = 0, []
    for path, tests in modules:
        for t in tests:
            done += 1
            ok = t != "test_refund_rounding"
            if not ok:
                failed.append(f"{path}::{t}")
            stamp(f"{path}::{t} {'PASSED' if ok else 'FAILED'} [{100 * done // total:3d}%]")
    stamp("  DeprecationWarning: 'asyncio.get_event_loop' without a running loop is deprecated "
          "(tests/conftest.py:14)")
    stamp("[ci] step 4/5: integration tests (server on https://127.0.0.1:8443)")
    stamp("  starting orderly 1.8.2 with config/dev.yaml ... pid 48211")
    error_line = 0
    for i in range(150):
        stamp(f"  server: GET /v1/orders/{1000 + i} 200 {rng.randint(2, 19)}ms "
              f"req={rng.getrandbits(48):012x}")
        if i == 75:
            stamp("tests/integration/test_tls_client.py::test_get_order_over_tls FAILED")
            stamp("  client: E1234: TLS handshake failed (certificate verify failed: self-signed certificate)")
            error_line = len(lines)
            stamp("  client: peer 127.0.0.1:8443, protocol TLSv1.3, verify_mode=CERT_REQUIRED, cafile=None")
            failed.append("tests/integration/test_tls_client.py::test_get_order_over_tls")
    stamp("tests/integration/test_tls_client.py::test_list_orders_over_tls PASSED")
    stamp("tests/integration/test_tls_client.py::test_plain_http_is_refused PASSED")
    stamp("  stopping orderly (pid 48211)")
    stamp("[ci] step 5/5: report")
    lines.append("=" * 30 + " FAILURES " + "=" * 30)
    lines += [
        "_____________________________ test_refund_rounding _____________________________",
        "    def test_refund_rounding():",
        "        for _ in range(20):",
        "            cents = random.randint(1, 100_000)",
        "            order = make_order(cents / 100)",
        '            expected = (Decimal(cents) / 100 * Decimal("0.1")).quantize(Decimal("0.01"), ROUND_HALF_UP)',
        ">           assert compute_refund(order, \"late\") == float(expected)",
        "E           AssertionError: assert 50.06 == 50.07",
        "E            +  where 50.06 = compute_refund(Order(id=1, customer_id=7, items=[LineItem(sku='sku-0', "
        "quantity=1, unit_price=500.65)], ...), 'late')",
        "",
        "tests/test_orders.py:33: AssertionError",
        "________________________ test_get_order_over_tls ________________________",
        "aiohttp.client_exceptions.ClientConnectorCertificateError: Cannot connect to host 127.0.0.1:8443 "
        "ssl:True [SSLCertVerificationError: (1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
        "self-signed certificate (_ssl.c:1006)')]",
        "E1234: TLS handshake failed (certificate verify failed: self-signed certificate)",
        "tests/integration/test_tls_client.py:20: ClientConnectorCertificateError",
        "=" * 28 + " short test summary info " + "=" * 28,
    ]
    lines += [f"FAILED {f}" for f in failed]
    lines.append(f"{len(failed)} failed, {total + 3 - len(failed)} passed, 1 warning in 94.61s (0:01:34)")
    lines.append("make: *** [Makefile:3: ci] Error 1")
    return "\n".join(lines), error_line, total + 3


def pdf_base64(rng: random.Random) -> str:
    """A binary fixture as read_file shows it: base64, 76 chars a line (~8k chars)."""
    blob = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n" + rng.randbytes(5900)
    b64 = base64.b64encode(blob).decode()
    body = "\n".join(b64[i:i + 76] for i in range(0, len(b64), 76))
    return f"(binary file tests/fixtures/refund_receipt.pdf, {len(blob)} bytes, shown base64)\n{body}"


def order_json(order_id: int, rng: random.Random) -> str:
    items = [{"sku": f"SKU-{rng.randint(1000, 9999)}", "quantity": rng.randint(1, 3),
              "unit_price_cents": rng.randint(199, 8999)} for _ in range(3)]
    total = sum(i["quantity"] * i["unit_price_cents"] for i in items)
    return json.dumps({"id": order_id, "customer_id": 58213, "status": "shipped", "currency": "EUR",
                       "items": items, "total_cents": total, "refunded_cents": 0,
                       "created_at": "2025-10-09T16:41:02.118000+00:00"}, indent=2)


def todo_json(todos: list[tuple[str, str]]) -> tuple[dict[str, Any], str]:
    """(arguments, result) of a todo_write call; ``todos`` is [(content, status), ...]."""
    items = [{"id": str(i), "content": c, "status": s} for i, (c, s) in enumerate(todos, 1)]
    counts = {s: sum(1 for t in items if t["status"] == s) for s in ("pending", "in_progress", "done")}
    return {"todos": items}, json.dumps({"ok": True, "todos": items, "counts": counts}, indent=2, ensure_ascii=False)


# ==== simulated usage ================================================================================

def tokens(text: str) -> int:
    """A crude token estimate for the *synthetic* usage: UTF-8 bytes / 4 (CJK ≈ 0.75 per char)."""
    return max(1, (len(text.encode("utf-8")) + 3) // 4)


def message_tokens(m: Message) -> int:
    n = 4
    for p in m.parts:
        if isinstance(p, (TextPart, ThinkingPart)):
            n += tokens(p.text)
        elif isinstance(p, ToolCallPart):
            n += 12 + tokens(p.name + p.arguments)
    return n


@dataclass
class UsageModel:
    """A deterministic prefix cache, the simplest that shows the effects the chapters teach.

    Every call writes two breakpoints: the static head (system + tools) and the whole prompt. A
    later call reads the longest cached prefix of its own prompt that is still alive (used less
    than ``ttl_s`` ago) for the same model; after a thinking-level change only the head still
    matches. Everything after the read is written, except ``tail_tokens`` after the last breakpoint.
    Earlier turns' thinking is part of every later prompt, the rule of the sample's models ("Keep all prior
    turns: Claude Opus 4.5 and later Opus models, Claude Sonnet 4.6 and later Sonnet models", Anthropic,
    Thinking, read 2026-12-02; ``model_facts(m).thinking_rule == "keep_all"``): :meth:`call` refuses a model
    whose rule differs (``last_turn_only`` would strip it and reshape the cache; not simulated here).
    """

    head_tokens: int
    ttl_s: float = 300.0
    tail_tokens: int = 3
    # (message ids of the prefix, tokens, model, thinking level, last used at [s])
    entries: list[list[Any]] = field(default_factory=list)

    def call(self, ids: tuple[str, ...], prompt_tokens: int, model: str, level: str, t: float,
             output_tokens: int) -> Usage:
        rule = model_facts(model).thinking_rule.value
        if rule != "keep_all":
            raise SystemExit(f"make_sample: {model} keeps earlier thinking as {rule!r}; the usage model counts it "
                             "all (keep_all): simulate that rule before using this model")
        alive = [e for e in self.entries if t - e[4] < self.ttl_s and e[2] == model
                 and ids[: len(e[0])] == e[0] and (not e[0] or e[3] == level)]
        best = max(alive, key=lambda e: e[1], default=None)
        read = best[1] if best else 0
        for e in alive:
            e[4] = t
        write = prompt_tokens - read - self.tail_tokens
        self.entries = [e for e in self.entries if t - e[4] < self.ttl_s]
        self.entries += [[(), self.head_tokens, model, level, t], [ids, prompt_tokens - self.tail_tokens, model, level, t]]
        raw = {"input_tokens": self.tail_tokens, "cache_creation_input_tokens": write,
               "cache_read_input_tokens": read, "output_tokens": output_tokens}
        return Usage(uncached_input_tokens=self.tail_tokens, cache_read_tokens=read, cache_write_tokens=write,
                     output_tokens=output_tokens, raw=raw)


# ==== the story helper ===============================================================================

@dataclass
class Result:
    """What one tool call returned: text, error flag, and how long it ran (seconds)."""

    text: str
    secs: float = 0.2
    error: bool = False


class Story:
    """Appends messages to the session with ids, timestamps and usage; collects the facts."""

    def __init__(self, session: Session, rng: random.Random) -> None:
        self.s, self.rng = session, rng
        self.ms = 0  # milliseconds since START
        self.n = 0
        self.model, self.level = MODEL, "medium"
        head = tokens("\n\n".join(SYSTEM)) + tokens(dumps([t.parameters for t in TOOLS])) + 40 * len(TOOLS)
        self.usage = UsageModel(head_tokens=head)
        self.facts: list[dict[str, str]] = []

    # -- ids and time --
    def _id(self, prefix: str = "m") -> str:
        self.n += 1
        return f"{prefix}{self.n:03d}"

    def _rand(self, k: int) -> str:
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
        return "".join(self.rng.choice(alphabet) for _ in range(k))

    def wait(self, secs: float) -> None:
        self.ms += int(secs * 1000)

    def _stamp(self) -> str:
        t = START + timedelta(milliseconds=self.ms)
        return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"

    # -- items --
    def entry(self, kind: str, **data: Any) -> str:
        self.wait(self.rng.uniform(1, 4))
        if kind == "model_change":
            self.model = data["model"]
        if kind == "thinking_level_change":
            self.level = data["level"]
        return self.s.append(Entry(kind, self._id("e"), data, timestamp=self._stamp()))  # type: ignore[arg-type]

    def user(self, text: str, origin: str | None = None, think: tuple[float, float] = (15, 70)) -> str:
        self.wait(self.rng.uniform(*think) if origin is None else self.rng.uniform(0.05, 0.3))
        return self.s.append(Message("user", (TextPart(text),), self._id(), timestamp=self._stamp(), origin=origin))

    def turn(self, text: str = "", calls: list[tuple[str, dict[str, Any]]] = (), results: list[Result] = (),
             thinking: str | None = None, aborted: bool = False) -> str:
        """One model call: the assistant message, then its results in the order they finished."""
        parts: list[Any] = []
        if thinking:
            parts.append(ThinkingPart(thinking, signature=base64.b64encode(self.rng.randbytes(96)).decode()))
        if text:
            parts.append(TextPart(text))
        call_parts = [ToolCallPart("toolu_01" + self._rand(22), name, canonical_arguments(args))
                      for name, args in calls]
        parts += call_parts
        stop = "aborted" if aborted else ("tool_use" if calls else "stop")
        draft = Message("assistant", tuple(parts), "draft")
        path = [i for i in self.s.path() if isinstance(i, Message)]
        prompt = self.usage.head_tokens + sum(message_tokens(m) for m in path)
        out = message_tokens(draft) + (self.rng.randint(20, 120) if thinking else 0)
        start_s = self.ms / 1000
        usage = self.usage.call(tuple(m.id for m in path), prompt, self.model, self.level, start_s, out)
        self.wait(1.2 + out / 55 + self.rng.lognormvariate(0.8, 0.6))  # time to first token + streaming
        mid = self.s.append(Message("assistant", tuple(parts), self._id(), response_id="msg_01" + self._rand(22),
                                    timestamp=self._stamp(), model=self.model, provider=PROVIDER,
                                    stop_reason=stop, usage=usage))
        if aborted:
            return mid
        assert len(results) == len(calls), (text, len(results), len(calls))
        t0 = self.ms
        done = sorted(zip(call_parts, results), key=lambda cr: cr[1].secs)  # stable: ties keep call order
        for call, res in done:
            self.ms = t0 + int(res.secs * 1000)
            self.s.append(Message("tool", (TextPart(res.text),), self._id(), tool_call_id=call.id,
                                  tool_name=call.name, is_error=res.error, timestamp=self._stamp()))
        self.ms = t0 + int(max((r.secs for r in results), default=0) * 1000)
        return mid

    def fact(self, kind: str, text: str, message_id: str | None = None) -> None:
        """Record a planted fact; it must occur verbatim in the message's text (default: the newest message)."""
        mid = message_id or self.s.head
        item = self.s[mid]
        assert isinstance(item, Message) and text in item.text, (kind, text, mid)
        self.facts.append({"id": f"f{len(self.facts) + 1:02d}", "kind": kind, "text": text, "message_id": mid})


# ==== the session ====================================================================================

def read(repo: Repo, path: str, **kw: Any) -> tuple[tuple[str, dict[str, Any]], Result]:
    """A read_file call and its result."""
    args = {"path": path, **{k: v for k, v in kw.items() if k in ("offset", "limit")}}
    return ("read_file", args), Result(repo.read(path, kw.get("offset", 1), kw.get("limit")), kw.get("secs", 0.05))


def bash(command: str, output: str, secs: float = 0.4, error: bool = False,
         timeout: int | None = None) -> tuple[tuple[str, dict[str, Any]], Result]:
    args: dict[str, Any] = {"command": command}
    if timeout:
        args["timeout"] = timeout
    return ("bash", args), Result(output, secs, error)


def edit(repo: Repo, path: str, old: str, new: str) -> tuple[tuple[str, dict[str, Any]], Result]:
    return ("edit_file", {"path": path, "old_string": old, "new_string": new}), Result(repo.edit(path, old, new), 0.08)


def one(pair: tuple[tuple[str, dict[str, Any]], Result]) -> dict[str, Any]:
    """Keyword arguments of Story.turn for a single call."""
    return {"calls": [pair[0]], "results": [pair[1]]}


def many(*pairs: tuple[tuple[str, dict[str, Any]], Result]) -> dict[str, Any]:
    """Keyword arguments of Story.turn for parallel calls."""
    return {"calls": [p[0] for p in pairs], "results": [p[1] for p in pairs]}


def build(out_dir: Path) -> tuple[Path, Path]:
    rng = random.Random(SEED)
    repo = Repo()
    target = out_dir / SESSION_FILE
    tmp = out_dir / (SESSION_FILE + ".tmp")
    if tmp.exists():
        tmp.unlink()
    session = Session.create(
        tmp, system=SYSTEM, tools=TOOLS, model=MODEL, provider=PROVIDER, id="sample-orderly-tls",
        title="orderly: TLS on 8443, a flaky refund test, then /healthz (synthetic sample; usage simulated)",
        created=START.strftime("%Y-%m-%dT%H:%M:%S.000Z"))
    st = Story(session, rng)
    st.entry("note", text="Synthetic sample written by data/make_sample.py (seeded). Every message, file and "
                          "number is invented; usage is simulated by a simple prefix-cache model, not recorded.")

    # ---- phase A: the task, exploration, TLS (morning) -------------------------------------------
    st.user("Hi! I need the orderly API to serve HTTPS in staging. Hard constraint: use port 8443, never 8080 "
            "(the staging firewall drops 8080 and ops will not open it). Load the dev certificate from certs/. "
            "Also, tests/test_orders.py::test_refund_rounding has been flaky on CI for a week - please find out "
            "why. Look around the repo first and tell me your plan before changing anything.", think=(0, 1))
    st.fact("constraint", "use port 8443, never 8080")
    st.fact("path", "tests/test_orders.py::test_refund_rounding")
    st.turn("I'll start with the layout, the README and the server entry point.",
            thinking="The user wants TLS on 8443 and a flaky test investigated, plan first. Read the tree, the "
                     "README and the server module together; they are independent.",
            calls=[("list_dir", {"path": ".", "depth": 3}), read(repo, "README.md")[0],
                   read(repo, "src/app/server.py")[0]],
            results=[Result(repo.tree(), 0.41), Result(repo.read("README.md"), 0.05),
                     Result(repo.read("src/app/server.py"), 0.06)])
    port_line = repo.line_of("src/app/server.py", "PORT = int(")
    assert port_line == 42, port_line
    a = st.turn(f"The port is hard-coded at src/app/server.py:{port_line} (`PORT = int(os.environ.get(\"ORDERLY_PORT\", "
            "\"8080\"))`), and `run()` starts plain HTTP with no SSL context. Let me see where else 8080 appears.",
            calls=[("grep", {"pattern": "8080", "path": "."})], results=[Result(repo.grep("8080"), 0.12)])
    st.fact("path", "src/app/server.py:42", a)
    st.turn("8080 shows up in code, configs, scripts, the Dockerfile and both READMEs - including "
            "config/prod.yaml. Reading the settings loader and the dev config.",
            **many(read(repo, "src/app/config.py"), read(repo, "config/dev.yaml", secs=0.04)))
    st.user("补充几点要求：\n1. 不要修改 config/prod.yaml，生产配置由运维团队管理。\n"
            "2. 必须保留 API 兼容：/v1/orders 的请求和响应字段都不能变。\n"
            "3. 中文文档 docs/README.zh.md 里也写了端口，记得一起更新。\n谢谢！")
    st.fact("constraint", "不要修改 config/prod.yaml")
    st.fact("constraint", "必须保留 API 兼容")
    st.turn("明白：不改 config/prod.yaml，/v1/orders 的字段保持不变。I'll read the Chinese README too.",
            **one(read(repo, "docs/README.zh.md")))
    st.fact("constraint", "生产环境只允许 TLS 1.3")
    st.turn("docs/README.zh.md says production allows TLS 1.3 only, so the server context will set "
            "`minimum_version = TLSv1_3`. Now the tests.",
            calls=[read(repo, "tests/test_server.py")[0], read(repo, "tests/test_orders.py")[0]],
            results=[Result(repo.read("tests/test_server.py"), 0.09), Result(repo.read("tests/test_orders.py"), 0.05)])
    refund_line = repo.line_of("src/app/orders.py", "refund = round(")
    st.turn(f"Plan:\n1. Add src/app/tls.py: an SSL context (TLS 1.3 minimum) from certs/dev.pem and certs/dev.key.\n"
            f"2. Default port 8443 at src/app/server.py:42; keep reading ORDERLY_PORT.\n"
            f"3. Update config/dev.yaml, scripts/run_dev.sh and both READMEs. config/prod.yaml stays untouched.\n"
            f"4. test_refund_rounding draws random amounts and compares floats; I suspect `round()` on binary "
            f"floats at src/app/orders.py:{refund_line}.\nShall I go ahead?",
            thinking="test_refund_rounding uses random.randint without a seed, so it only fails for some amounts: "
                     "the ones where total * 0.1 lands on a half cent. Python's round() works on the binary "
                     "value, so whether 500.65 * 0.1 lands a hair above or below 50.065 decides the cent.")
    st.fact("path", f"src/app/orders.py:{refund_line}")
    st.fact("step", "Update config/dev.yaml, scripts/run_dev.sh and both READMEs")
    st.user("Sounds good, go ahead. TLS part first.")
    args, res = todo_json([("TLS context in src/app/tls.py", "in_progress"), ("port 8443 everywhere but prod.yaml",
                           "pending"), ("docs EN + 中文", "pending"), ("flaky test_refund_rounding", "pending")])
    st.turn(calls=[("todo_write", args)], results=[Result(res, 0.02)])
    st.turn("Writing the TLS helper.", **one((("write_file", {"path": "src/app/tls.py", "content": TLS_PY}),
                                              Result(repo.write("src/app/tls.py", TLS_PY), 0.03))))
    st.turn(**one(edit(repo, "src/app/server.py", 'PORT = int(os.environ.get("ORDERLY_PORT", "8080"))',
                       'PORT = int(os.environ.get("ORDERLY_PORT") or os.environ.get("ORDERLY_LEGACY_PORT") or "8443")')))
    st.turn(**one(edit(repo, "src/app/server.py", "from app.orders import routes as order_routes",
                       "from app.orders import routes as order_routes\nfrom app.tls import cert_paths, server_context")))
    st.turn("Now pass an SSL context to run_app.",
            **one(edit(repo, "src/app/server.py",
                       "    web.run_app(build_app(settings), host=HOST, port=args.port, access_log=None)",
                       "    ssl_context = server_context(*cert_paths(settings.tls_cert, settings.tls_key))\n"
                       "    web.run_app(build_app(settings), host=HOST, port=args.port, ssl_context=ssl_context,\n"
                       "                access_log=None)")))
    st.turn(**one(edit(repo, "config/dev.yaml", "  port: 8080\n",
                       "  port: 8443\ntls:\n  cert: certs/dev.pem\n  key: certs/dev.key\n")))
    st.turn(**one(edit(repo, "scripts/run_dev.sh", "ORDERLY_PORT:-8080", "ORDERLY_PORT:-8443")))
    st.turn("Checking that the certificate loads.",
            **one(bash("PYTHONPATH=src python -m app.tls --check",
                       "error E4057 certificate file not found: certs/dev.pem\n(exit status 1)", 0.6, error=True)))
    st.fact("error_code", "E4057")
    st.turn("E4057: there is no dev certificate yet. certs/ should have a helper.",
            thinking="CertificateError E4057 comes from my own check: certs/dev.pem is missing. The README "
                     "mentioned certs/make_dev_cert.sh; certificates are not committed, so generating one locally "
                     "is expected, not a workaround.",
            **one((("list_dir", {"path": "certs"}), Result(repo.tree("certs/"), 0.02))))
    st.turn(**one(read(repo, "certs/README.md")))
    st.turn(**one(bash("sh certs/make_dev_cert.sh",
                       "....+.....+++++++++++++++++++++++++++++++++++++++*..+......+.....+...+......+++++\n"
                       "-----\nwrote certs/dev.pem and certs/dev.key", 1.9)))
    st.turn(**one(bash("PYTHONPATH=src python -m app.tls --check", "ok: certs/dev.pem loads, TLS 1.3 minimum", 0.5)))
    st.turn(**one(bash("python -m pytest -q tests/test_server.py",
                       "F....                                                                    [100%]\n"
                       "=================================== FAILURES ===================================\n"
                       "______________________________ test_default_port _______________________________\n\n"
                       "    def test_default_port():\n>       assert PORT == 8080\nE       assert 8443 == 8080\n\n"
                       "tests/test_server.py:5: AssertionError\n=========================== short test summary info "
                       "============================\nFAILED tests/test_server.py::test_default_port - assert 8443 == 8080\n"
                       "1 failed, 4 passed in 0.38s", 2.4, error=True)))
    st.turn("Expected: the test pins the old port.",
            **one(edit(repo, "tests/test_server.py", "assert PORT == 8080", "assert PORT == 8443")))
    st.turn(**one(bash("python -m pytest -q tests/test_server.py", ".....  [100%]\n5 passed in 0.36s", 2.1)))
    st.turn("Starting the dev server and fetching an order over TLS to compare the response shape.",
            **one(bash("sh scripts/run_dev.sh & sleep 2; curl -sk https://localhost:8443/v1/orders/1042",
                       order_json(1042, rng), 3.2)))
    args, res = todo_json([("TLS context in src/app/tls.py", "done"), ("port 8443 everywhere but prod.yaml",
                           "in_progress"), ("docs EN + 中文", "pending"), ("flaky test_refund_rounding", "pending")])
    st.turn("Same fields as before (`id`, `status`, `items`, `total_cents`, ...), now over TLS on 8443.",
            calls=[("todo_write", args)], results=[Result(res, 0.02)])
    st.turn("Updating the Dockerfile, then the docs.",
            **one(edit(repo, "docker/Dockerfile", "EXPOSE 8080", "EXPOSE 8443")))
    st.turn(**one(edit(repo, "docker/Dockerfile", "http://localhost:8080/v1/orders?limit=1",
                       "https://localhost:8443/v1/orders?limit=1")))
    docs = [edit(repo, "README.md", "http://localhost:8080", "https://localhost:8443"),
            edit(repo, "docs/README.zh.md", "http://localhost:8080/v1/orders", "https://localhost:8443/v1/orders"),
            edit(repo, "docs/deploy.md", "containers on port 8080", "containers on port 8443")]
    for (_, res), secs in zip(docs, (0.09, 0.04, 0.06)):  # the Chinese file finishes first
        res.secs = secs
    st.turn(**many(*docs))
    st.turn(**one(edit(repo, "docs/README.zh.md", "集成测试会在本地 8080 端口", "集成测试会在本地 8443 端口")))
    st.turn(**one(bash("git diff --stat",
                       " README.md              |  2 +-\n config/dev.yaml        |  5 ++++-\n docker/Dockerfile      |  4 ++--\n"
                       " docs/README.zh.md      |  4 ++--\n docs/deploy.md         |  2 +-\n scripts/run_dev.sh     |  2 +-\n"
                       " src/app/server.py      |  8 +++++---\n tests/test_server.py   |  2 +-\n"
                       " 8 files changed, 18 insertions(+), 11 deletions(-)", 0.2)))
    st.turn("TLS part done:\n- src/app/tls.py builds a TLS 1.3-only context; the server listens on 8443 "
            "(ORDERLY_PORT still overrides; ORDERLY_LEGACY_PORT is read as a fallback for old deploy scripts).\n"
            "- config/dev.yaml, scripts/run_dev.sh, the Dockerfile and both READMEs say 8443; config/prod.yaml is "
            "untouched.\n- Decision: load the certificate from certs/dev.pem in dev and from the ORDERLY_TLS_CERT "
            "env var elsewhere.\n- /v1/orders responses are unchanged.\nNext: the flaky refund test.")
    st.fact("decision", "Decision: load the certificate from certs/dev.pem in dev and from the ORDERLY_TLS_CERT env var elsewhere")

    # ---- coffee break (> 5 min: the prompt cache expires) -----------------------------------------
    st.wait(14 * 60 + 20)
    st.user("Back from coffee. Nice work. Now the flaky test please - run the CI yourself so we see the current state.",
            think=(5, 10))

    # ---- phase B: CI, the flaky test, a model switch, an abort (late morning) ----------------------
    log_text, e_line, n_tests = ci_log(rng)
    st.turn("Running the CI target and keeping the log.",
            **one(bash("make ci 2>&1 | tee logs/ci-2025-10-14.log", log_text, 95.0, error=True, timeout=900)))
    hits = [f"{n}:{line}" for n, line in enumerate(log_text.splitlines(), 1)
            if "E1234" in line or "FAILED" in line or "Error" in line]
    st.turn(**one(bash("grep -n 'E1234\\|FAILED\\|Error' logs/ci-2025-10-14.log", "\n".join(hits), 0.1)))
    st.turn(thinking="Only two FAILED lines among ~430 tests. The TLS one is the client side: verify failed on a "
                     "self-signed certificate, so the server works and the test's trust store is the problem. The "
                     "refund one is the flaky test itself, with a concrete amount to reproduce: 500.65.",
            text=f"Two separate failures:\n1. logs/ci-2025-10-14.log:{e_line} - E1234: TLS handshake failed. The "
            "integration client uses the default trust store, which does not know our self-signed dev certificate.\n"
            "2. test_refund_rounding: expected 50.07, got 50.06 for 500.65 * 0.1 - the rounding suspicion.\n"
            "Fixing the client first.")
    st.fact("error_code", "E1234")
    st.fact("path", f"logs/ci-2025-10-14.log:{e_line}")
    st.turn(**one(read(repo, "tests/integration/test_tls_client.py")))
    st.turn(**one(edit(repo, "tests/integration/test_tls_client.py", "    return ssl.create_default_context()",
                       '    return ssl.create_default_context(cafile="certs/dev.pem")')))
    st.turn(**one(bash("python -m pytest -q tests/integration/test_tls_client.py",
                       "...                                                                      [100%]\n"
                       "3 passed in 2.14s", 6.3)))
    st.turn("Now the refund rounding.", **one(read(repo, "src/app/orders.py")))
    st.turn(**one(bash("python -c \"print(100.45 * 0.1, round(100.45 * 0.1, 2)); print(500.65 * 0.1, round(500.65 * 0.1, 2))\"",
                       "10.045000000000002 10.05\n50.065 50.06", 0.3)))
    st.turn("The first rounds up; the second prints 50.065 yet rounds down, because the float is a hair below the "
            "half cent. Let me measure how often it goes wrong.",
            thinking="Whether round() goes up or down depends on the binary error of c / 100 * 0.1. Counting "
                     "the bad amounts between 1 and 100,000 cents gives the failure rate per draw.",
            **one(bash("python - <<'EOF'\nfrom decimal import Decimal, ROUND_HALF_UP\nbad = [c for c in range(1, 100001)\n"
                       "       if round(c / 100 * 0.1, 2) != float((Decimal(c) / 100 * Decimal('0.1')).quantize(Decimal('0.01'), ROUND_HALF_UP))]\n"
                       "print(len(bad), bad[:8])\nEOF", "2115 [15, 35, 115, 125, 145, 205, 215, 305]", 1.1)))
    st.turn("2,115 of 100,000 amounts round the wrong way, so with 20 random draws per run the test fails "
            "about 35% of the time (1 - 0.979^20) - that's the flakiness. Checking who else rounds money.",
            calls=[("grep", {"pattern": "round(", "path": "src"}), ("grep", {"pattern": "refund", "path": "tests"})],
            results=[Result(repo.grep("round(", "src/"), 0.07),
                     Result(repo.grep("refund", "tests/") + "\nBinary file tests/fixtures/refund_receipt.pdf matches",
                            0.09)])
    st.turn(**one((("read_file", {"path": "tests/fixtures/refund_receipt.pdf"}), Result(pdf_base64(rng), 0.2))))
    st.turn("That's a binary PDF fixture for the receipt renderer - not relevant here.",
            **one(bash("git log --oneline -5 -- src/app/orders.py",
                       "9c41e2a orders: cap refunds at the remaining amount\n51d0b7f orders: add changed_mind reason\n"
                       "e02a9c3 orders: send amounts as integer cents\n7f3d118 orders: list endpoint with limit\n"
                       "2b6a0e5 initial import", 0.15)))
    st.user("<system-reminder>The working tree has uncommitted changes in config/prod.yaml that predate this "
            "session and belong to the user. Do not stage, commit or revert them. Never run `git push`; the user "
            "pushes after review.</system-reminder>", origin="system")
    st.fact("constraint", "Never run `git push`")
    st.entry("thinking_level_change", level="high")
    st.entry("model_change", provider=PROVIDER, model="claude-opus-4-5")
    st.user("Think hard about this one - the rounding rule must match what finance uses. I switched you to Opus for it.")
    st.turn("Finance's rules should be written down somewhere; checking docs and how the codebase rounds today.",
            thinking="Options: (a) Decimal end to end in compute_refund with ROUND_HALF_UP - exact, matches a "
                     "written rule if finance has one; (b) integer cents with (cents * rate_num + half) // rate_den - "
                     "exact too, but the rates are floats like 0.85, so they would need converting anyway; (c) add a "
                     "tiny epsilon before round() - hides the problem and breaks for other rates. The API must stay "
                     "compatible: the handler already converts to integer cents at the boundary, so the internal "
                     "type can change to Decimal without any client noticing, as long as to_json keeps ints. "
                     "Order.refunds holds floats; sum() of Decimals and floats would raise, so refunds must become "
                     "Decimal too. Look for a written rule first.",
            calls=[read(repo, "docs/finance-rules.md")[0], ("grep", {"pattern": "ROUND_", "path": "."})],
            results=[Result(repo.read("docs/finance-rules.md"), 0.06), Result(repo.grep("ROUND_"), 0.11)])
    a = st.turn("docs/finance-rules.md: refunds round half up to the cent. Decision: compute refunds with Decimal and "
            "ROUND_HALF_UP, and keep integer cents at the API boundary so /v1/orders stays compatible.",
            **one(edit(repo, "src/app/orders.py",
                       "    refund = round(order.total * rate, 2)\n    return min(refund, round(order.total - already, 2))",
                       "    total = Decimal(str(order.total))\n"
                       "    refund = (total * Decimal(str(rate))).quantize(CENT, ROUND_HALF_UP)\n"
                       "    left = (total - Decimal(str(already))).quantize(CENT, ROUND_HALF_UP)\n"
                       "    return float(min(refund, left))")))
    st.fact("decision", "Decision: compute refunds with Decimal and ROUND_HALF_UP", a)
    st.turn(**one(edit(repo, "src/app/orders.py", "from datetime import datetime, timezone\n",
                       "from datetime import datetime, timezone\nfrom decimal import ROUND_HALF_UP, Decimal\n")))
    st.turn(**one(edit(repo, "src/app/orders.py", 'log = logging.getLogger("orderly.orders")\n',
                       'log = logging.getLogger("orderly.orders")\nCENT = Decimal("0.01")\n')))
    st.turn("Running the rounding test 200 times with different seeds.",
            **one(bash("for i in $(seq 200); do python -m pytest -q -p no:cacheprovider "
                       "tests/test_orders.py::test_refund_rounding >/dev/null || echo fail $i; done; echo finished",
                       "finished", 71.0)))
    st.turn(**one(bash("python -m pytest -q tests/test_orders.py", "......  [100%]\n6 passed in 0.29s", 2.0)))
    st.entry("model_change", provider=PROVIDER, model=MODEL)
    st.entry("thinking_level_change", level="medium")
    st.user("Great, thanks. Back to Sonnet. Run the whole suite once more.")
    st.turn("Running the full suite, integration and contract tests included.",
            calls=[("bash", {"command": "make ci-full 2>&1 | tail -40", "timeout": 3600})], aborted=True)
    st.user("Stop - ci-full takes 25 minutes and hits the shared staging database. From here, never run "
            "`make ci-full`; `make ci` is enough.", think=(8, 20))
    st.fact("constraint", "never run `make ci-full`")
    st.turn("Understood, only `make ci`.",
            **one(bash("make ci 2>&1 | tail -25",
                       "\n".join([f"tests/test_pagination.py::test_pagination_round_trips[case-{i:03d}] PASSED [{80 + i // 3:3d}%]"
                                  for i in range(17, 39)] +
                                 ["tests/integration/test_tls_client.py::test_get_order_over_tls PASSED",
                                  "tests/integration/test_tls_client.py::test_list_orders_over_tls PASSED",
                                  "tests/integration/test_tls_client.py::test_plain_http_is_refused PASSED",
                                  f"{n_tests} passed, 1 warning in 93.02s (0:01:33)"]), 93.5)))
    st.turn(**one(bash("git status --short",
                       " M README.md\n M config/dev.yaml\n M config/prod.yaml\n M docker/Dockerfile\n M docs/README.zh.md\n"
                       " M docs/deploy.md\n M scripts/run_dev.sh\n M src/app/orders.py\n M src/app/server.py\n"
                       " M tests/integration/test_tls_client.py\n M tests/test_server.py\n?? src/app/tls.py", 0.1)))
    st.turn(f"All green: {n_tests} passed. Both failures are fixed:\n- the integration client trusts certs/dev.pem, so E1234 is "
            "gone;\n- refunds use Decimal with ROUND_HALF_UP (200/200 runs pass).\nconfig/prod.yaml shows as modified "
            "but those are your earlier changes; I have not touched or staged it.")
    st.user("Perfect. Can you check the staging health endpoint? https://staging.orderly.example.internal/healthz")
    st.turn(**one((("web_fetch", {"url": "https://staging.orderly.example.internal/healthz"}),
                   Result(json.dumps({"status": "degraded", "version": "1.8.1", "uptime_s": 402913,
                                      "checks": [{"name": "database", "ok": True, "latency_ms": 4},
                                                 {"name": "ratelimit", "ok": False,
                                                  "error": {"code": "E2210", "message": "rate limiter backend "
                                                            "unreachable: ratelimit.redis_url is empty"}},
                                                 {"name": "disk", "ok": True, "free_pct": 61}]}, indent=2), 0.8))))
    st.fact("error_code", "E2210")
    st.turn("Staging answers but is degraded: E2210, the rate limiter has no Redis URL (`ratelimit.redis_url` is "
            "empty). That value comes from the production-style config that ops owns, so I'll leave it to them. "
            "Note staging still runs 1.8.1, without today's changes.")
    st.user("OK, I'll ask ops. Grabbing lunch.")
    fork_at = st.turn("Enjoy! Summary: TLS on 8443 with certs/dev.pem, docs updated, flaky refund test fixed with "
                      "Decimal, staging E2210 is for ops.")

    # ---- lunch (> 1 h), then the task changes; first try abandoned (a fork) -------------------------
    st.wait(60 * 83)
    st.user("Change of plan: ops terminate TLS at the load balancer, so remove the in-app TLS again. Keep port 8443.",
            think=(3, 8))
    st.turn("OK - removing the TLS module.", **one(bash("rm -v src/app/tls.py", "removed 'src/app/tls.py'", 0.1)))
    st.wait(40)
    session.fork(fork_at)  # the user rewinds and words the change more carefully
    st.user("Change of plan after talking to ops: they terminate TLS at the load balancer. Keep port 8443 and keep "
            "src/app/tls.py, but make in-app TLS optional behind a --tls flag (default off). Then add a GET /healthz "
            "endpoint returning {\"status\": \"ok\", \"version\": ...} for the load balancer. Leave the refund code "
            "as it is now.")
    a = st.turn("Decision: in-app TLS stays in src/app/tls.py but is off unless --tls is passed; the app listens on "
            "8443 either way. Re-reading the server module first.",
            thinking="The working tree still has tls.py on this branch. Flag default off, ssl_context only when "
                     "set. /healthz must not touch the database: the load balancer calls it every few seconds.",
            **one(read(repo, "src/app/server.py")))
    st.fact("decision", "Decision: in-app TLS stays in src/app/tls.py but is off unless --tls is passed", a)
    st.turn(**one(edit(repo, "src/app/server.py", '    parser.add_argument("--port", type=int, default=PORT)\n',
                       '    parser.add_argument("--port", type=int, default=PORT)\n'
                       '    parser.add_argument("--tls", action="store_true", help="terminate TLS in the app")\n')))
    st.turn(**one(edit(repo, "src/app/server.py",
                       "    ssl_context = server_context(*cert_paths(settings.tls_cert, settings.tls_key))\n",
                       "    ssl_context = None\n    if args.tls:\n"
                       "        ssl_context = server_context(*cert_paths(settings.tls_cert, settings.tls_key))\n")))
    a = st.turn("Adding the endpoint in its own module, src/app/health.py, without a database call.",
            **one((("write_file", {"path": "src/app/health.py", "content": HEALTH_PY}),
                   Result(repo.write("src/app/health.py", HEALTH_PY), 0.03))))
    st.fact("path", "src/app/health.py", a)
    st.turn(**one(edit(repo, "src/app/server.py", "    app.add_routes(order_routes)\n",
                       "    app.add_routes(order_routes)\n    app.add_routes(health_routes)\n")))
    st.turn(**one(edit(repo, "src/app/server.py", "from app.orders import routes as order_routes\n",
                       "from app.health import routes as health_routes\nfrom app.orders import routes as order_routes\n")))
    st.turn(**one((("write_file", {"path": "tests/test_health.py", "content": TEST_HEALTH_PY}),
                   Result(repo.write("tests/test_health.py", TEST_HEALTH_PY), 0.02))))
    st.turn(**one(bash("python -m pytest -q tests/test_health.py",
                       "E                                                                        [100%]\n"
                       "==================================== ERRORS ====================================\n"
                       "____________________ ERROR collecting tests/test_health.py _____________________\n"
                       "ImportError while importing test module 'tests/test_health.py'.\n"
                       "src/app/health.py:7: in <module>\n    from app import __version__\n"
                       "E   ImportError: cannot import name '__version__' from partially initialized module 'app' "
                       "(most likely due to a circular import) (src/app/__init__.py)\n"
                       "=========================== short test summary info ============================\n"
                       "ERROR tests/test_health.py\n1 error in 0.31s", 2.2, error=True)))
    st.turn(**one(read(repo, "src/app/__init__.py")))
    st.turn(thinking="Circular import: app/__init__.py is tiny, so the cycle must run through server.py, "
                     "which imports health.py, which imports app. Importing the version at call time breaks it.",
            text="`app/__init__.py` is fine; the cycle comes from importing the package inside the module that the "
            "package imports during collection. Reading the version lazily avoids it.",
            **one(edit(repo, "src/app/health.py", "from aiohttp import web\n\nfrom app import __version__\n",
                       "import importlib\n\nfrom aiohttp import web\n")))
    st.turn(**one(edit(repo, "src/app/health.py", '"version": __version__',
                       '"version": importlib.import_module("app").__version__')))
    st.turn(**one(bash("python -m pytest -q tests/test_health.py", ".  [100%]\n1 passed in 0.22s", 2.0)))
    st.turn("Checking plain HTTP on 8443 and the flag.",
            calls=[("bash", {"command": "sh scripts/run_dev.sh & sleep 2; curl -s http://localhost:8443/healthz"}),
                   ("bash", {"command": "ORDERLY_PORT=8444 sh scripts/run_dev.sh --tls & sleep 2; "
                                        "curl -sk https://localhost:8444/healthz"})],
            results=[Result('{"status": "ok", "version": "1.8.2"}', 3.4),
                     Result('{"status": "ok", "version": "1.8.2"}', 3.1)])
    st.turn("Both work. The ops wiki should say what the load balancer expects from a health check.",
            **one((("web_fetch", {"url": "https://wiki.example.internal/ops/load-balancer-health-checks"}),
                   Result("# Load balancer health checks\n\nEvery backend pool gets an HTTP health check.\n\n"
                          "| setting | default | notes |\n|---|---|---|\n| path | /healthz | must answer 200 without "
                          "touching a database |\n| port | the pool's port | for orderly: 8443 |\n| interval | 5 s | |\n"
                          "| timeout | 2 s | a slower answer counts as a failure |\n| unhealthy after | 3 failures | |\n"
                          "| healthy after | 2 successes | |\n\nThe body is ignored; a small JSON object is customary.\n"
                          "Changes to a pool's health check go through an ops ticket (queue OPS).\n\n"
                          "## TLS\nHTTPS ends at the load balancer; it forwards plain HTTP to the pool unless the "
                          "pool is marked `backend_tls: true`. Certificates on the load balancer are renewed "
                          "automatically thirty days before they expire; backends with `backend_tls: true` manage "
                          "their own certificates and must present a chain the load balancer trusts.\n\n"
                          "## Draining\nWhen a backend fails its check it stops receiving new connections at once; "
                          "open connections get 30 s to finish. A rolling deploy should therefore make the old "
                          "container fail its health check first (answer 503 on the health path), wait for the "
                          "drain, then stop it.\n\n## Ports\nEach pool listens on one port. Opening a new port "
                          "on the staging or production firewall needs an ops ticket and takes about two working "
                          "days; ask early. Port 8080 is closed on staging since the 2025-09 network change.\n\n"
                          "## Troubleshooting\n- Pool shows `unhealthy` but the app works: check that the health "
                          "path answers within the timeout, including cold starts.\n- Flapping between healthy and "
                          "unhealthy: the check is probably hitting the database; make it cheaper.\n- 502 from the "
                          "load balancer: the backend closed the connection; look for crashes in the container "
                          "log.\n", 0.9))))
    st.turn(**one(edit(repo, "docs/deploy.md", "Rolling back:",
                       "Health check: the load balancer calls GET /healthz on port 8443 every 5 s (2 s timeout). "
                       "In-app TLS is off by default; pass --tls to terminate TLS in the container.\n\nRolling back:")))
    st.turn(**one(edit(repo, "docs/deploy.md", "TLS currently ends at the\nload balancer; the containers speak plain HTTP.",
                       "TLS ends at the load balancer; the containers speak plain HTTP unless started with --tls.")))
    args, res = todo_json([("TLS context in src/app/tls.py", "done"), ("port 8443 everywhere but prod.yaml", "done"),
                           ("docs EN + 中文", "done"), ("flaky test_refund_rounding", "done"),
                           ("--tls flag, default off", "done"), ("GET /healthz", "done"), ("make ci", "in_progress")])
    st.turn(calls=[("todo_write", args)], results=[Result(res, 0.02)])
    st.user("One more constraint from ops: pin cryptography to 43.0.3, they haven't rolled out 44 yet.")
    st.fact("constraint", "pin cryptography to 43.0.3")
    st.turn(**one(bash("grep -n cryptography pyproject.toml", '9:  "cryptography>=42",', 0.05)))
    st.turn(**one(edit(repo, "pyproject.toml", '"cryptography>=42"', '"cryptography==43.0.3"')))
    st.turn(**one(bash("pip install -e .[dev] 2>&1 | tail -12 && pip show cryptography | head -2",
                       "Obtaining file:///home/dev/orderly\n  Installing build dependencies: started\n"
                       "  Installing build dependencies: finished with status 'done'\n"
                       "  Checking if build backend supports build_editable: finished with status 'done'\n"
                       "  Getting requirements to build editable: finished with status 'done'\n"
                       "Collecting cryptography==43.0.3 (from orderly==1.8.2)\n"
                       "  Using cached cryptography-43.0.3-cp39-abi3-manylinux_2_28_x86_64.whl (4.0 MB)\n"
                       "Building wheels for collected packages: orderly\n"
                       "  Building editable for orderly (pyproject.toml): finished with status 'done'\n"
                       "Successfully built orderly\nInstalling collected packages: cryptography, orderly\n"
                       "  Attempting uninstall: cryptography\n    Found existing installation: cryptography 44.0.0\n"
                       "    Uninstalling cryptography-44.0.0:\n      Successfully uninstalled cryptography-44.0.0\n"
                       "Successfully installed cryptography-43.0.3 orderly-1.8.2\n"
                       "Name: cryptography\nVersion: 43.0.3", 14.2)))
    st.turn(**one(bash("make ci 2>&1 | tail -3",
                       "tests/integration/test_tls_client.py::test_list_orders_over_tls PASSED\n"
                       "tests/integration/test_tls_client.py::test_plain_http_is_refused PASSED\n"
                       f"{n_tests + 1} passed, 1 warning in 92.40s (0:01:32)", 92.9)))
    st.turn("Reviewing the code diff before the summary.",
            **one(bash("git diff -- src/; for f in src/app/health.py src/app/tls.py tests/test_health.py; "
                       "do git diff --no-index /dev/null $f; done",
                       repo.diff("src/app/orders.py", "src/app/server.py", "src/app/health.py", "src/app/tls.py",
                                 "tests/test_health.py"), 0.2)))
    st.turn(f"Done - {n_tests + 1} tests pass.\n\nChanged:\n- port 8443 everywhere except config/prod.yaml (untouched);\n"
            "- src/app/tls.py kept, in-app TLS only with --tls;\n- GET /healthz in src/app/health.py (no database call);\n"
            "- refunds in Decimal, ROUND_HALF_UP;\n- cryptography pinned to 43.0.3.\n\n"
            "Remaining steps:\n1. Ask ops to open 8443 on the staging firewall (ticket OPS-5521).\n"
            "2. Update the load balancer health check to GET /healthz on port 8443.\n"
            "3. Remove the ORDERLY_LEGACY_PORT fallback after the 2025-11-30 release.\n"
            "4. Fix E2210 on staging: ops must set ratelimit.redis_url.\n\nNothing is committed or pushed.")
    st.fact("step", "Ask ops to open 8443 on the staging firewall (ticket OPS-5521)")
    st.fact("step", "Update the load balancer health check to GET /healthz on port 8443")
    st.fact("step", "Remove the ORDERLY_LEGACY_PORT fallback after the 2025-11-30 release")

    os.replace(tmp, target)
    facts = out_dir / FACTS_FILE
    facts.write_bytes((json.dumps(st.facts, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    return target, facts


# ==== measuring the shared transcripts (for the figures at the top) ==================================

def _q(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * (len(xs) - 1) + 0.5))] if xs else 0


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    out = []
    for b in content or []:
        if isinstance(b, dict) and b.get("type") == "text":
            out.append(b.get("text", ""))
        elif isinstance(b, dict) and b.get("type") == "tool_result":
            out.append(_text(b.get("content")))
    return "\n".join(out)


def _sizes(name: str, sizes: list[int], **extra: Any) -> None:
    print(f"{name}: tool results n={len(sizes)} median={_q(sizes, .5)} p90={_q(sizes, .9)} max={max(sizes)} chars; "
          + "; ".join(f"{k}={v}" for k, v in extra.items()))


def measure(root: Path) -> None:
    """Print the statistics quoted at the top of this file."""
    rows = [json.loads(line) for line in open(root / "pi-mono/before-compaction.jsonl", encoding="utf-8")]
    msgs = [r["message"] for r in rows if r["type"] == "message"]
    asst = [m for m in msgs if m["role"] == "assistant"]
    results = [m for m in msgs if m["role"] == "toolResult"]
    ncalls = [sum(b["type"] == "toolCall" for b in m["content"]) for m in asst]
    with_calls = [n for n in ncalls if n]
    starts = [m["timestamp"] / 1000 for m in asst]
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    prompts = [m["usage"]["input"] + m["usage"]["cacheRead"] + m["usage"]["cacheWrite"] for m in asst]
    called = {b["id"] for m in asst for b in m["content"] if b["type"] == "toolCall"}
    users = [len(_text(m["content"])) for m in msgs if m["role"] == "user"]
    _sizes("pi", [len(_text(m["content"])) for m in results], assistant=len(asst), with_calls=len(with_calls),
           parallel=f"{sum(n >= 2 for n in with_calls) / len(with_calls):.3f}", max_calls=max(ncalls),
           aborted=f"{sum(m['stopReason'] == 'aborted' for m in asst) / len(asst):.3f}",
           unanswered=len(called - {m["toolCallId"] for m in results}),
           errors=f"{sum(m['isError'] for m in results)}/{len(results)}",
           thinking=f"{sum(any(b['type'] == 'thinking' for b in m['content']) for m in asst) / len(asst):.3f}",
           gap_median_s=round(_q(gaps, .5), 1), gap_p90_s=round(_q(gaps, .9), 1),
           gaps_over_5min=sum(g > 300 for g in gaps), gaps_over_1h=sum(g > 3600 for g in gaps),
           max_gap_s=round(max(gaps)), prompt_median=_q(prompts, .5), prompt_max=max(prompts),
           cache_read_share=f"{sum(m['usage']['cacheRead'] for m in asst) / sum(prompts):.3f}",
           output_median=_q([m["usage"]["output"] for m in asst], .5), user=len(users), user_median=_q(users, .5))

    cc = [json.loads(line) for f in sorted((root / "claude-code-viewer").glob("*.jsonl"))
          for line in open(f, encoding="utf-8")]
    cc = [r for r in cc if r.get("type") in ("user", "assistant")]
    sizes, per_response = [], {}
    for r in cc:
        content = r["message"]["content"]
        if r["type"] == "user" and isinstance(content, list):
            sizes += [len(_text(b.get("content"))) for b in content if b.get("type") == "tool_result"]
        if r["type"] == "assistant":
            per_response[r["message"]["id"]] = per_response.get(r["message"]["id"], 0) + sum(
                b["type"] == "tool_use" for b in content)
    wc = [n for n in per_response.values() if n]
    _sizes("claude-code", sizes, parallel=f"{sum(n >= 2 for n in wc) / len(wc):.3f}", max_calls=max(wc),
           sidechain=f"{sum(r.get('isSidechain', False) for r in cc) / len(cc):.3f}")

    for f in sorted((root / "swe-agent").glob("*.traj")):
        h = json.loads(f.read_text(encoding="utf-8"))["history"]
        obs = [len(_text(x["content"])) for x in h if x["role"] == "tool"] or \
              [len(_text(x["content"])) for x in h[2:] if x["role"] == "user"]
        _sizes(f"swe-agent/{f.stem}", obs, system_chars=len(_text(h[0]["content"])))

    runs = json.loads((root / "tau-bench/gpt-4o-airline.json").read_text(encoding="utf-8"))
    tool_sizes = [len(m["content"] or "") for r in runs for m in r["traj"] if m["role"] == "tool"]
    wc = [len(m["tool_calls"]) for r in runs for m in r["traj"] if m["role"] == "assistant" and m.get("tool_calls")]
    _sizes("tau-bench", tool_sizes, parallel=f"{sum(n >= 2 for n in wc) / len(wc):.3f}",
           system_chars=_q([len(r["traj"][0]["content"]) for r in runs], .5),
           msgs_median=_q([len(r["traj"]) for r in runs], .5), msgs_max=max(len(r["traj"]) for r in runs))

    zh = json.loads((root / "llama-factory-toolcall/glaive_toolcall_zh_demo.json").read_text(encoding="utf-8"))
    values = [t for c in zh for t in c["conversations"]]
    chars = "".join(t["value"] for t in values)
    cjk = sum("\u4e00" <= ch <= "\u9fff" for ch in chars)
    _sizes("llama-factory-zh", [len(t["value"]) for t in values if t["from"] == "observation"],
           conversations=len(zh), cjk_share=f"{cjk / len(chars):.3f}")


def describe(path: Path) -> str:
    """The same statistics for the sample itself (printed after writing it)."""
    s = Session.open(path)
    main = [i for i in s.path() if isinstance(i, Message)]
    asst = [m for m in main if m.role == "assistant"]
    results = [len(m.text) for m in main if m.role == "tool"]
    with_calls = [len(m.tool_calls) for m in asst if m.tool_calls]
    starts = [datetime.fromisoformat(m.timestamp.replace("Z", "+00:00")).timestamp() for m in asst]  # type: ignore
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    return (f"{len(s)} items ({len(main)} messages on the main path, {len(s.leaves())} leaves); "
            f"tool results median={_q(results, .5)} p90={_q(results, .9)} max={max(results)} chars; "
            f"parallel={sum(n >= 2 for n in with_calls)}/{len(with_calls)}; "
            f"aborted={sum(m.stop_reason == 'aborted' for m in asst)}; "
            f"thinking={sum(any(isinstance(p, ThinkingPart) for p in m.parts) for m in asst)}/{len(asst)}; "
            f"gap median={statistics.median(gaps):.1f}s, >5min={sum(g > 300 for g in gaps)}, "
            f">1h={sum(g > 3600 for g in gaps)}; "
            f"cache_read share={sum(m.usage.cache_read_tokens for m in asst) / sum(m.usage.total_input_tokens for m in asst):.3f}")  # type: ignore


def main(argv: list[str]) -> int:
    if argv[:1] == ["--measure"]:
        measure(Path(argv[1]) if len(argv) > 1 else HERE.parent.parent / "shared" / "data" / "transcripts")
        return 0
    out_dir = Path(argv[0]) if argv else HERE
    out_dir.mkdir(parents=True, exist_ok=True)
    session_path, facts_path = build(out_dir)
    print(f"wrote {session_path} ({session_path.stat().st_size} bytes) and {facts_path}")
    print(describe(session_path))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
