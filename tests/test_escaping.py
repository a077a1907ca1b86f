"""Terminal escapes: nothing ctxlab prints from a file can drive the terminal or reorder the screen.

A transcript is somebody else's file. Every field a reader keeps (conversation id and title, model
name, tool names, tool call ids, message ids, thread names, message text, reader notes) is filled
here with ESC sequences (clear the screen, set the title), BEL, CR, backspace, C1, DEL, bidi
overrides and isolates and zero-width characters; then every CLI command and every ``_repr_html_``
/ ``__str__`` / widget a replay or an inspect reaches is run on it, and its output must hold none of
those characters raw (they are shown as ``\\x1b``, ``\\u202e``, ...: :mod:`ctxlab.base.safe_text`).
``--json`` stays JSON: it parses, and gives back the original text exactly. The files are built in
``tmp_path``: a ctxlab session (written with :class:`ctxlab.io.session.Session`), an OpenAI chat list
and a Claude Code JSONL (whose readers write notes quoting the file).
"""

from __future__ import annotations

import json
import sys
import unicodedata
from dataclasses import replace
from pathlib import Path

import pytest

from helpers import run
from ctxlab.lab.compare import compare, format_rows
from ctxlab.context import BudgetPolicy, build_context
from ctxlab.facts import Fact, fact_retention
from ctxlab.lab.fidelity import structural
from ctxlab.lab.fidelity_bodies import BodyFidelity
from ctxlab.lab.fidelity_end_to_end import end_to_end
from ctxlab.io.formats import load
from ctxlab.ledger import recorded_ledger
from ctxlab.widgets import ledger_figure
from ctxlab.messages import ToolSpec, Usage, assistant, tool_result, user
from ctxlab.base.redact import redact
from ctxlab.replay import replay
from ctxlab.base.safe_text import safe_html, safe_json, safe_text, shown
from ctxlab.io.session import Session
from ctxlab.replay import STRATEGY_NAMES

# Clear the screen, set the window title (OSC ... BEL), BEL, CR, backspace, RLO, LRI, LRM, ALM,
# ZWSP, ZWJ, word joiner, BOM, C1 CSI, DEL.
H = "\x1b[2J\x1b]0;pwned\x07\a\r\b\u202e\u2066\u200e\u061c\u200b\u200d\u2060\ufeff\x9b\x7f"
E = r"\x1b[2J\x1b]0;pwned\x07\x07\r\x08\u202e\u2066\u200e\u061c\u200b\u200d\u2060\ufeff\x9b\x7f"  # H as printed
EL = E.replace(r"\r", " ")  # H in an error line: the CLI joins an error's lines, so its CR is a space
CONV, TITLE, MODEL, SIDE = "conv" + H, "title" + H, "claude-sonnet-4-5" + H, "side" + H
WINDOW = "4000"  # small enough that the strategies drop, summarise and compact the session below


def raw_unsafe(text: str) -> list[str]:
    """Every character in ``text`` that must not reach a terminal raw (``\\n`` is fine), as ``U+XXXX``.

    Written from Unicode categories, not with the module under test: C0/C1/DEL (Cc), format
    characters (Cf: bidi, zero-width, BOM), line/paragraph separators and surrogates."""
    return sorted({f"U+{ord(c):04X}" for c in text
                   if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs")})


# ---- the hostile files ----------------------------------------------------------------------------

def _session(path: Path) -> Path:
    """A ctxlab session: 8 rounds of user → assistant tool call → tool result, usage recorded, and a side thread."""
    s = Session.create(path, system=["You are terse. " + H], tools=[ToolSpec("read" + H, "Read a file. " + H)],
                       model=MODEL, provider="anthropic", title=TITLE, id=CONV)
    total = 1_200
    for k in range(8):
        stamp = f"2025-01-01T00:{k:02d}:00Z"
        s.append(user(f"question {k} " + H, f"u{k}" + H, timestamp=stamp))
        call = assistant(f"reading {k} " + H, f"a{k}" + H, calls=((f"call{k}" + H, "read" + H, {"path": H}),))
        s.append(replace(call, model=MODEL, timestamp=stamp,
                         usage=Usage(uncached_input_tokens=200, cache_read_tokens=total, output_tokens=30)))
        lines = "\n".join(f"line {i}: value {k * 100 + i} " + H for i in range(40))
        s.append(tool_result(f"call{k}" + H, lines, f"t{k}" + H, name="read" + H, timestamp=stamp))
        total += 700
    s.append(replace(assistant("done " + H, "a-end" + H), model=MODEL, timestamp="2025-01-01T00:09:00Z",
                     usage=Usage(uncached_input_tokens=300, cache_read_tokens=total, output_tokens=10)))
    s.append(user("side question " + H, "s-u" + H, thread=SIDE, timestamp="2025-01-01T00:09:30Z"))
    s.append(replace(assistant("side answer " + H, "s-a" + H, thread=SIDE), model=MODEL, timestamp="2025-01-01T00:10:00Z",
                     usage=Usage(uncached_input_tokens=1_500, output_tokens=5)))
    return path


def _chat(path: Path) -> Path:
    """An OpenAI chat request body: model, tool, a name, a tool call and a message with a bad role on line 6."""
    msgs = [{"role": "system", "content": "sys " + H}, {"role": "user", "content": "hi " + H, "name": "who" + H},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "call" + H, "type": "function", "function": {
                "name": "tool" + H, "arguments": json.dumps({"q": H})}}]},
            {"role": "tool", "tool_call_id": "call" + H, "content": "res " + H},
            {"role": "robot" + H, "content": "bad " + H}, {"role": "assistant", "content": "done " + H}]
    tools = [{"type": "function", "function": {"name": "tool" + H, "description": "Run it. " + H,
                                               "parameters": {"type": "object", "properties": {}}}}]
    path.write_text(f'{{"model": {json.dumps("gpt-4o" + H)}, "tools": {json.dumps(tools)}, "messages": [\n'
                    + ",\n".join(json.dumps(m) for m in msgs) + "\n]}\n", encoding="utf-8")
    return path


def _cc(uuid: str, parent: str | None, kind: str, content: object, **message: object) -> dict:
    return {"parentUuid": parent, "isSidechain": False, "sessionId": "sess" + H, "type": kind,
            "message": {"role": kind, "content": content, **message}, "uuid": uuid,
            "timestamp": "2025-03-01T08:00:00.000Z"}


def _claude_code(path: Path) -> Path:
    """A Claude Code JSONL: hostile session id, model, tool name and id; a UI line of a hostile type (a
    note quoting it) and a torn JSON line 5 (strict: an error; lenient: a note)."""
    lines = [_cc("u1" + H, None, "user", "hello " + H),
             _cc("a1" + H, "u1" + H, "assistant", [{"type": "text", "text": "ok " + H},
                                                   {"type": "tool_use", "id": "tu" + H, "name": "Bash" + H,
                                                    "input": {"c": H}}],
                 model="claude" + H, id="msg" + H, usage={"input_tokens": 1200, "output_tokens": 10}),
             _cc("u2" + H, "a1" + H, "user", [{"type": "tool_result", "tool_use_id": "tu" + H, "content": "out " + H}]),
             {"type": "weird" + H, "uuid": "w" + H}, "{not json " + H,
             _cc("a2" + H, "u2" + H, "assistant", [{"type": "text", "text": "fin " + H}], model="claude" + H,
                 id="msg2" + H, usage={"input_tokens": 20, "cache_read_input_tokens": 1200, "output_tokens": 3})]
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("hostile")
    facts = d / "facts.json"
    facts.write_text(json.dumps([{"id": f"f{k}" + H, "kind": "path", "text": f"value {k * 100 + 3} " + H,
                                  "message_id": f"t{k}" + H} for k in range(3)]), encoding="utf-8")
    return {"session": _session(d / "session.jsonl"), "chat": _chat(d / "chat.json"),
            "cc": _claude_code(d / "cc.jsonl"), "facts": facts}


@pytest.fixture(scope="module")
def conv(files):
    return load(files["session"]).conversation()


def _clean(code: int, out: str, err: str, codes: tuple[int, ...] = (0,)) -> None:
    assert code in codes, err
    assert raw_unsafe(out) == [], out
    assert raw_unsafe(err) == [], err


# ---- the function itself --------------------------------------------------------------------------

def test_the_docstring_examples():
    assert safe_text("red\x1b[31m") == "red\\x1b[31m"
    assert safe_text("abc\u202eexe.txt") == "abc\\u202eexe.txt"
    assert safe_text("a\nb") == "a\\nb" and safe_text("a\nb", multiline=True) == "a\nb"
    assert safe_text("a\tb") == "a\\tb" and safe_text("a\tb", multiline=True) == "a\tb"
    assert safe_text("a\r\nb", multiline=True) == "a\\r\nb"  # CR moves the cursor back: escaped in both modes
    assert safe_text(None) == "" and safe_text(12) == "12"


@pytest.mark.parametrize("ch, shown_as", [
    ("\x1b", "\\x1b"), ("\x07", "\\x07"), ("\r", "\\r"), ("\b", "\\x08"), ("\x00", "\\x00"), ("\x7f", "\\x7f"),
    ("\x85", "\\x85"), ("\x9b", "\\x9b"), ("\u202a", "\\u202a"), ("\u202e", "\\u202e"), ("\u2066", "\\u2066"),
    ("\u2069", "\\u2069"), ("\u200e", "\\u200e"), ("\u200f", "\\u200f"), ("\u061c", "\\u061c"),
    ("\u200b", "\\u200b"), ("\u200c", "\\u200c"), ("\u200d", "\\u200d"), ("\u2060", "\\u2060"),
    ("\ufeff", "\\ufeff"), ("\u00ad", "\\xad"), ("\u2028", "\\u2028"), ("\U000e0041", "\\U000e0041"),
    ("\ud800", "\\ud800")])
def test_each_kind_of_character_is_shown_as_an_escape(ch, shown_as):
    assert safe_text(f"a{ch}b") == f"a{shown_as}b"
    assert safe_text(f"a{ch}b", multiline=True) == f"a{shown_as}b"


def test_every_format_and_control_character_is_escaped():
    """Against this Python's Unicode tables: every Cc, Cf, Zl, Zp and surrogate code point, between two letters."""
    missed = [f"U+{cp:04X}" for cp in range(0x110000)
              if unicodedata.category(chr(cp)) in ("Cc", "Cf", "Zl", "Zp", "Cs")
              and chr(cp) in safe_text(f"a{chr(cp)}b")]
    assert missed == []


@pytest.mark.parametrize("text", [
    "上下文管理：在预算内重建上下文", "トークン数を数える", "토큰", "café naïve Ωμέγα Ünïcödé", "e\u0301 a\u0308",
    "😀 👍🏽 🇨🇳 ✅ ❤️", "👩\u200d💻 👨\u200d👩\u200d👧 🏳️\u200d🌈",  # emoji ZWJ sequences
    "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",  # the flag of Scotland (tag characters)
    "می\u200cخواهم", "क्\u200dष",  # a joiner inside a Persian, a Devanagari word
    "C:\\Users\\me and a literal \\x1b", "tabs\tand\nlines"])
def test_cjk_emoji_and_accents_are_unchanged(text):
    assert safe_text(text, multiline=True) == text
    assert safe_text(safe_text(text)) == safe_text(text)  # idempotent


def test_joiners_outside_those_words_are_escaped():
    assert safe_text("a\u200db") == "a\\u200db" and safe_text("x\u200c😀") == "x\\u200c😀"
    assert safe_text("\U000e0041\U000e0042") == "\\U000e0041\\U000e0042"  # tag characters hiding ASCII text


def test_html_form_escapes_then_html_escapes():
    assert safe_html("<b>\u202e</b> & 'q'") == "&lt;b&gt;\\u202e&lt;/b&gt; &amp; &#x27;q&#x27;"


def test_keys_are_masked_before_escaping():
    """An escape ends in a hex digit: escaped first, a key right after it is glued to a word and kept."""
    key = "sk-proj-" + "a1" * 16
    assert shown("\x1b" + key) == "\\x1bsk-proj-…[redacted]…a1a1"
    assert key in redact(safe_text("\x1b" + key))  # the other order leaks it: why shown() redacts first
    assert shown("a\n" + key, multiline=True, html=True) == "a\nsk-proj-…[redacted]…a1a1"


def test_safe_json_round_trips_and_holds_no_raw_character():
    doc = {"id": H, "emoji": "👩\u200d💻 上下文", "astral": "\U000e0041", "lone": "\ud800", H: [H]}
    text = safe_json(doc)
    assert raw_unsafe(text.replace("\u200d", "")) == [] and json.loads(text) == doc
    key = "sk-proj-" + "a1" * 16
    assert key not in safe_json({"note": "line\n" + key})  # json.dumps writes \n: redact() after it missed this


# ---- every CLI command ----------------------------------------------------------------------------

@pytest.mark.parametrize("args", [(), ("--lenient",), ("--conversation", "0")])
def test_inspect_session(capsys, files, args):
    code, out, err = run(capsys, "inspect", files["session"], *args)
    _clean(code, out, err)
    assert f"conv{E}" in out and f"'title{E}'" in out and f"model claude-sonnet-4-5{E}" in out
    assert f"side{E}" in out  # the thread names


@pytest.mark.parametrize("name", ["chat", "cc"])
@pytest.mark.parametrize("args", [("--lenient",), ("--lenient", "--conversation", "0")])
def test_inspect_lenient_notes_quote_the_file_escaped(capsys, files, name, args):
    code, out, err = run(capsys, "inspect", files[name], *args)
    _clean(code, out, err)
    assert "notes" in out and "skipped line" in out
    if name == "cc":
        assert f"sess{E}" in out and f"left out 1 'weird{E}' line(s)" in out
    else:
        assert f"model gpt-4o{E}" in out and "skipped line 6" in out


@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
def test_replay_every_strategy(capsys, files, strategy):
    code, out, err = run(capsys, "replay", files["session"], "--strategy", strategy, "--window", WINDOW)
    _clean(code, out, err)
    assert f"== conv{E} (" in out and f"side{E}" in out


@pytest.mark.parametrize("args", [("--check",), ("--compare",), ("--compare", "--check"), ("--recorded",),
                                  ("--compare", "--facts", "FACTS", "--conversation", "0"), ("--warm", "--rows", "4")])
def test_replay_modes(capsys, files, args):
    args = tuple(str(files["facts"]) if a == "FACTS" else a for a in args)
    code, out, err = run(capsys, "replay", files["session"], "--window", WINDOW, *args)
    _clean(code, out, err, codes=(0, 1))
    assert f"conv{E}" in out


@pytest.mark.parametrize("args", [(), ("--recorded",), ("--compare",), ("--compare", "--check", "--window", "1300")])
def test_replay_claude_code(capsys, files, args):
    code, out, err = run(capsys, "replay", files["cc"], "--lenient", *args)
    _clean(code, out, err, codes=(0, 1))
    assert f"sess{E}" in out + err


def test_inspect_json_round_trips_the_text(capsys, files):
    code, out, err = run(capsys, "inspect", files["session"], "--json")
    _clean(code, out, err)
    doc = json.loads(out)
    assert doc["conversation"]["id"] == CONV and doc["conversations"][0]["title"] == TITLE
    assert doc["conversation"]["model"] == MODEL and SIDE in doc["conversation"]["threads"]
    assert doc["profile"]["note"].startswith(MODEL.lower())  # the profile names the model by its canonical (lowercased) id


def test_inspect_json_notes_round_trip(capsys, files):
    code, out, err = run(capsys, "inspect", files["cc"], "--lenient", "--json")
    _clean(code, out, err)
    doc = json.loads(out)
    assert doc["conversation"]["id"] == "sess" + H and doc["conversation"]["model"] == "claude" + H
    assert any(f"'weird{H}'" in n for n in doc["notes"])


@pytest.mark.parametrize("args", [("--strategy", "pipeline", "--check"), ("--recorded",), ("--compare",)])
def test_replay_json_round_trips_the_text(capsys, files, args):
    code, out, err = run(capsys, "replay", files["session"], "--window", WINDOW, "--json", *args)
    _clean(code, out, err, codes=(0, 1))
    doc = json.loads(out)
    if "--compare" in args:
        assert doc["conversation"] == CONV
        return
    assert doc["conversations"] == [CONV]
    assert {r["thread"] for r in doc["rows"]} == {"main", SIDE} and set(doc["per_thread"]) == {"main", SIDE}
    assert {r["message_id"] for r in doc["rows"] if r["thread"] == SIDE} <= {"s-a" + H}
    assert all(r["model"] in (MODEL, None) for r in doc["rows"])


# ---- the error lines ------------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["inspect", "replay"])
def test_a_missing_file_with_a_hostile_name(capsys, tmp_path, command):
    code, out, err = run(capsys, command, tmp_path / f"no{H}such.jsonl")
    _clean(code, out, err, codes=(2,))
    assert f"no{EL}such.jsonl" in err and err.count("\n") == 1


@pytest.mark.skipif(sys.platform == "win32", reason="Windows file names cannot hold control characters")
@pytest.mark.parametrize("command", ["inspect", "replay"])
@pytest.mark.parametrize("name, line", [("chat", "6: field 'messages[4].role'"), ("cc", "5: not valid JSON")])
def test_a_bad_line_in_a_file_with_a_hostile_name(capsys, files, tmp_path, command, name, line):
    """Strict reading stops at the bad line: one line on stderr, naming the file (escaped) and the line."""
    path = tmp_path / f"bad{H}{files[name].suffix}"
    path.write_bytes(files[name].read_bytes())
    code, out, err = run(capsys, command, path)
    _clean(code, out, err, codes=(2,))
    assert f"bad{EL}{files[name].suffix}:{line}" in err and err.count("\n") == 1


def test_an_unexpected_error_is_escaped(capsys, files, monkeypatch):
    import ctxlab.cli.main

    def boom(*_a, **_k):
        raise RuntimeError("boom " + H)

    monkeypatch.setattr(ctxlab.cli.main, "inspect_report", boom)
    code, out, err = run(capsys, "inspect", files["session"])
    _clean(code, out, err, codes=(2,))
    assert f"unexpected RuntimeError: boom {EL}" in err


def test_a_check_failure_line_is_escaped(capsys, files, monkeypatch):
    from ctxlab.checks import Violation

    replay_module = sys.modules["ctxlab.replay"]
    monkeypatch.setattr(replay_module, "check_context", lambda ctx, hist, s, **kw: [Violation("pairing", "planted " + H)])
    code, out, err = run(capsys, "replay", files["session"], "--check")
    _clean(code, out, err, codes=(1,))
    assert f"ctxlab replay --check: conv{E} thread 'main' call 1: pairing: planted {E}" in err


# ---- what a notebook shows: __str__ and _repr_html_ ------------------------------------------------

def test_context_ledger_fidelity_and_compare_reprs(files, conv):
    ctx = build_context(conv, BudgetPolicy(budget_tokens=3_000))
    result = replay(conv, "budgeted", window=4_000)
    facts = [Fact(f"f{k}" + H, "path", f"value {k * 100 + 3} " + H, f"t{k}" + H) for k in range(3)]
    kept = fact_retention(result, facts, conv)
    recorded = recorded_ledger(conv)
    bodies = BodyFidelity("log" + H + ".jsonl", (), ("line 3: no context to render (" + H + ")",))
    texts = {
        "context": (str(ctx), ctx._repr_html_()),
        "ledger": (str(result.ledger), repr(result.ledger), result.ledger._repr_html_()),
        "recorded ledger": (str(recorded), repr(recorded), recorded._repr_html_()),
        "structural": (str(structural(conv)), structural(conv)._repr_html_()),
        "end to end": (str(end_to_end(conv)),),
        "facts": (str(kept), kept._repr_html_()),
        "compare": (format_rows(compare(conv, window=4_000, facts=facts)),
                    format_rows(compare(conv, window=1_000))),  # every strategy fails: the errors are rows
        "bodies": (str(bodies),),
    }
    fig = ledger_figure(recorded)  # plotly draws its title and hover labels as text too
    texts["figure"] = (fig.layout.title.text, *fig.data[0].customdata)
    for what, outputs in texts.items():
        for text in outputs:
            assert raw_unsafe(text) == [], (what, text)
    assert f"claude-sonnet-4-5{E.lower()}" in str(ctx)  # the tokenizer note names the model (canonical id: lowercased)
    assert f"side{E}" in str(result.ledger) and f"recorded: conv{E}" in repr(recorded)
    assert all(f"f{k}{E}" in str(kept) for row in kept.rows for k in range(3) if f"f{k}{H}" in row.lost)
    assert f"log{E}.jsonl" in str(bodies) and "cannot build a context" in texts["compare"][1]


# ---- the widgets, built on the hostile conversation ------------------------------------------------

def _widget_texts(widget: object) -> list[str]:
    """Every HTML value and option label a widget tree shows, and its text/plain form."""
    import ipywidgets as W

    out, stack = [], [widget.widget]
    while stack:
        w = stack.pop()
        if isinstance(w, (W.HTML, W.Label)):
            out.append(w.value)
        if hasattr(w, "_options_labels"):
            out += list(w._options_labels)
        if isinstance(w, W.Box):
            stack += list(w.children)
    return out + [widget._repr_mimebundle_()["text/plain"]]


def test_widgets_show_no_raw_character(files, conv, monkeypatch, tmp_path):
    pytest.importorskip("ipywidgets")
    pytest.importorskip("plotly")
    import tempfile

    from ctxlab.widgets.ch00_bill import TranscriptUpload
    from ctxlab.widgets.ch01_tokens import TokenXray
    from ctxlab.widgets.ch02_session import BranchWidget
    from ctxlab.widgets.ch03_budget import BudgetWidget
    from ctxlab.widgets.ch04_ledger import LedgerWidget
    from ctxlab.widgets.ch05_pruning import PruneWidget
    from ctxlab.widgets.ch06_summaries import SummaryWidget
    from ctxlab.widgets.ch07_compaction import SawtoothWidget
    from ctxlab.widgets.ch08_leaderboard import LeaderboardWidget

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the upload's temporary copy goes here
    main = conv.thread("main")
    facts = [Fact(f"f{k}" + H, "path", f"value {k * 100 + 3} " + H, f"t{k}" + H) for k in range(3)]
    upload = TranscriptUpload()
    assert upload.load("x.jsonl", ("<img src=x onerror=alert(1)> " + H).encode()) is None
    tool = next(m for m in conv.messages if m.role == "tool")
    widgets = {"upload": upload, "xray": TokenXray("tokens " + H), "branch": BranchWidget(Session.open(files["session"])),
               "budget": BudgetWidget(main), "budget error": BudgetWidget(main, budget=500),
               "ledger": LedgerWidget(main, window=4_000), "prune": PruneWidget(tool, head=60, tail=60),
               "summary": SummaryWidget(main, facts, windows=[3_000, 4_000]), "sawtooth": SawtoothWidget(main, 4_000),
               "sawtooth error": SawtoothWidget(main, 900), "leaderboard": LeaderboardWidget(main, (4_000,), facts=facts)}
    for name, w in widgets.items():
        for text in _widget_texts(w):
            assert raw_unsafe(text) == [], (name, text)
            assert "<img" not in text, (name, text)  # and no HTML from the file
    assert f"s-a{E}" in widgets["branch"].view.value  # the ids, escaped (E holds no HTML-special character)
    assert f"t0{E}" in widgets["prune"].label.value
