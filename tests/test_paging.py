"""Paging: the page store and its handles, read_page, the policy per tool kind, the ``paged`` strategy."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlab.context import BudgetPolicy, build_context
from ctxlab.io.formats import load
from ctxlab.messages import Conversation, Entry, ImagePart, Message, TextPart, ToolSpec, assistant, tool_result, user
from ctxlab.io.page_store import PageStore, anthropic_tool_schema, execute_read_page, openai_tool_schema, read_page
from ctxlab.paging import (DEFAULT_ACTIONS, DEFAULT_TOOL_KINDS, READ_PAGE_TOOL, REASONS, MemoryPages, PagedStrategy,
                           PageError, PagingPolicy, check_handle, page_handle, page_lines, page_message)
from ctxlab.tables.profiles import profile_for
from ctxlab.pruning import ArrivalCap, text_tokens
from ctxlab.bodies import to_anthropic_body, to_openai_body
from ctxlab.replay import replay
from ctxlab.strategies import Call
from ctxlab.views import substituted
from ctxlab.estimators import get_counter
from ctxlab.tokens import CharsPerTokenCounter, MessageMeter
from ctxlab.fast import FAST

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample_session.jsonl"
O200K = get_counter("o200k_base")
SECRET = "TOP-SECRET-7f3a9c: this must never be read through a page handle"
DOC = "\n".join([f"line {i}: def f{i}(x): return x * {i}  # 中文注释 {i}" for i in range(1, 301)]
                + ["", "\tindented", "trailing \r", "last line"]) + "\n"


def words(n: int) -> str:
    """A text of exactly ``n`` o200k tokens (" word" is one token)."""
    text = " word" * n
    assert O200K.count(text) == n
    return text


def over_budget_unit(tool: str) -> Conversation:
    """``[U·10, A(c1)·5, T(c1)·150]`` tokens of text (as in test_pruning), sizes checked with the counter."""
    meter = MessageMeter(profile_for("gpt-4o"))
    shapes = ["[0]", '{"":0}', "[0,1]"]  # JSON strings of 3, 4, 5 tokens, sent verbatim
    a = next(m for m in (assistant("", "a1", calls=(("c1", tool, args),)) for args in shapes)
             if meter.part(m.parts[0]) == 5)
    msgs = (user(words(10), "u1"), a, tool_result("c1", words(150), "t1", name=tool))
    assert [sum(meter.part(p) for p in m.parts) for m in msgs] == [10, 5, 150]
    return Conversation("over", msgs, model="gpt-4o", provider="openai")


def sha16(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# ---- handles ----

def hostile_handles(secret: Path, store_root: Path) -> list[object]:
    """Names that try to reach outside the store, or to look like a handle without being one."""
    rel = os.path.relpath(secret, store_root)
    found: list[object] = [
        "../x", "../../etc/passwd", "..", ".", "./", "../secret.txt", "..\\x", "..\\..\\windows\\win.ini",
        "/etc/passwd", "/etc/shadow", "C:\\x", "C:/Windows/win.ini", "\\\\server\\share\\x", "~/.ssh/id_rsa",
        "%2e%2e/x", "%2e%2e%2fsecret.txt", "..%2fsecret.txt", "....//secret.txt", "file:///etc/passwd",
        "0123456789abcdef\x00", "\x000123456789abcdef", "0123456789\x00abcdef", "\x00", "",
        "a" * 10_000, "0" * 17, "0" * 15, "0" * 100_000, " ", "0123456789abcdef\n", "\n0123456789abcdef",
        " 0123456789abcdef", "0123456789abcdef ", "0123456789abcdef\t", "0123456789abcdef.txt",
        "0123456789abcdef/", "0123456789abcde/", "/0123456789abcdef", "0123456789ABCDEF", "0123456789abcdeF",
        "\u2024\u2024/secret.txt", "\uff0e\uff0e/secret.txt", "０１２３４５６７８９ａｂｃｄｅｆ",
        # look-alike separators and dots: division slash, fraction slash, fullwidth (reverse) solidus,
        # big solidus, small full stop, two-dot leader; what NFKC folding or a careless OS might read as ../
        "..\u2215secret.txt", "..\u2044secret.txt", "..\uff0fsecret.txt", "..\uff3csecret.txt",
        "..\u29f8secret.txt", "\ufe52\ufe52/secret.txt", "\u2025/secret.txt", "0123456789abcdef\u2215..",
        # Windows: device and long-path prefixes, alternate data streams, a trailing dot or space
        "\\\\?\\C:\\x", "\\\\.\\NUL", "0123456789abcdef:secret", "0123456789abcdef.txt:$DATA",
        "0123456789abcdef.", "%5c..%5csecret.txt", "0123456789abcdef\r",
        # names longer than NAME_MAX (255) and PATH_MAX (4096) made of hex digits only
        "a" * 256, "f" * 4097,
        "٠١٢٣٤٥٦٧٨٩abcdef", "0123456789\u0430bcdef", "0123456789abcde\u0301", "0123456789abcdeｆ",
        "𝟎𝟏𝟐𝟑𝟒𝟓𝟔𝟕𝟖𝟗abcdef", "0123456789abcde\u200b", "*", "????????????????", "[0-9a-f]*",
        "secret", "secret.txt", "CON", "NUL", "aux.txt", "-1", "0x0123456789abcd", "0123456789abcdeg",
        sha16(SECRET), rel, str(secret), secret.as_uri(), str(secret).replace("/", "\\"), str(store_root / ".." / secret.name),
        None, 123, 0x0123456789ABCDEF, 1.5, True, b"0123456789abcdef", ["0123456789abcdef"],
        {"handle": "0123456789abcdef"},
    ]
    return found


def symlink(link: Path, target: Path) -> None:
    """Make a symbolic link, or skip: Windows allows them only in developer mode or as admin."""
    try:
        link.symlink_to(target, target_is_directory=target.is_dir())
    except (OSError, NotImplementedError) as exc:
        pytest.skip(f"cannot create symbolic links here: {exc}")


@pytest.fixture
def outside(tmp_path: Path) -> tuple[PageStore, Path]:
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET, encoding="utf-8")
    store = PageStore(tmp_path / "store")
    store.put(DOC)
    return store, secret


def _never_leaks(store: PageStore, handle: object) -> None:
    with pytest.raises(PageError):
        store.get(handle)  # type: ignore[arg-type]
    with pytest.raises(PageError):
        store.read(handle, lines=(1, 1))  # type: ignore[arg-type]
    assert handle not in store
    for args in ({"handle": handle, "start_line": 1, "end_line": 5}, {"handle": handle, "start_token": 1}):
        out = execute_read_page(store, args, counter=O200K)
        assert out.startswith("error:") and SECRET not in out and len(out) < 400
    try:
        as_json = json.dumps({"handle": handle})
    except TypeError:
        return
    out = execute_read_page(store, as_json)
    assert out.startswith("error:") and SECRET not in out


def test_at_least_fifty_hostile_handles_read_nothing_outside(outside):
    store, secret = outside
    handles = hostile_handles(secret, store.root)
    assert len(handles) >= 50
    # the list, each kind present: ../, absolute paths, NUL bytes, very long names, Windows
    # separators, Unicode look-alikes (U+2215, fullwidth dots); symlinks have their own test below
    text = [h for h in handles if isinstance(h, str)]
    for kind in ("../", "/etc/passwd", "\x00", "\\", "\u2215", "\uff0e\uff0e", "C:\\"):
        assert any(kind in h for h in text), kind
    assert any(len(h) > 4096 for h in text) and any(os.path.isabs(h) for h in text)
    for handle in handles:
        _never_leaks(store, handle)
    for handle in handles:
        _never_leaks(PageStore.in_memory(), handle)


def test_symlinks_placed_in_the_store_are_refused(outside):
    store, secret = outside
    # a link named like the secret's own page, one named like any page, and a link to a page inside the store
    for name in (sha16(SECRET), sha16("anything"), "0123456789abcdef"):
        symlink(store.root / f"{name}.txt", secret)
        _never_leaks(store, name)
        with pytest.raises(PageError, match="symbolic link"):
            store.get(name)
    inside = store.root / f"{sha16(DOC)}.txt"
    symlink(store.root / "fedcba9876543210.txt", inside)
    _never_leaks(store, "fedcba9876543210")
    # put() refuses to write through a planted link, and leaves the secret as it was
    symlink(store.root / f"{sha16('new page')}.txt", secret)
    with pytest.raises(PageError):
        store.put("new page")
    assert secret.read_text(encoding="utf-8") == SECRET


def test_hard_links_and_planted_copies_are_refused(outside):
    store, secret = outside
    # A hard link is a plain file inside the store, so no path check can see it; the content
    # hash can: a page's bytes must hash to its handle.
    planted = store.root / "0123456789abcdef.txt"
    try:
        os.link(secret, planted)
    except OSError:  # a file system without hard links: plant a copy instead, same rule
        planted.write_bytes(secret.read_bytes())
    _never_leaks(store, "0123456789abcdef")
    with pytest.raises(PageError, match="does not hash to its handle"):
        store.get("0123456789abcdef")
    # a real page damaged on disk is refused too, rather than read back wrong
    handle = store.put("a page that will be damaged")
    (store.root / f"{handle}.txt").write_text("damaged", encoding="utf-8")
    with pytest.raises(PageError, match="does not hash"):
        store.get(handle)


def test_a_symlinked_store_root_still_works(tmp_path):
    (tmp_path / "real").mkdir()
    symlink(tmp_path / "link", tmp_path / "real")
    store = PageStore(tmp_path / "link")
    handle = store.put("hello")
    assert store.get(handle) == "hello" and (tmp_path / "real" / f"{handle}.txt").is_file()


def test_non_files_under_a_page_name_are_refused(outside):
    store, _ = outside
    (store.root / "aaaaaaaaaaaaaaaa.txt").mkdir()
    _never_leaks(store, "aaaaaaaaaaaaaaaa")
    if hasattr(os, "mkfifo"):
        os.mkfifo(store.root / "bbbbbbbbbbbbbbbb.txt")  # would block a plain open() forever
        _never_leaks(store, "bbbbbbbbbbbbbbbb")


def test_check_handle():
    assert check_handle("0123456789abcdef") == "0123456789abcdef"
    with pytest.raises(PageError, match="16 lower-case hex"):
        check_handle("../etc/passwd")
    with pytest.raises(PageError) as info:
        check_handle("x" * 10_000)
    assert len(str(info.value)) < 300  # a long name is not echoed whole


# ---- the store ----

@pytest.mark.parametrize("kind", ["disk", "memory"])
def test_same_content_same_handle_and_line_n_reads_back_line_n(tmp_path, kind):
    store = PageStore(tmp_path / "pages") if kind == "disk" else PageStore.in_memory()
    handle = store.put(DOC)
    assert handle == sha16(DOC) and check_handle(handle) == handle
    assert store.put(DOC) == handle and store.put("other") != handle
    assert store.get(handle) == DOC
    lines = DOC.split("\n")[:-1]
    assert page_lines(DOC) == lines
    for n in range(1, len(lines) + 1):
        assert store.read(handle, lines=(n, n)) == lines[n - 1]
    assert store.read(handle, lines=(3, 7)) == "\n".join(lines[2:7])
    assert store.read(handle, lines=(300, 10_000)) == "\n".join(lines[299:])  # past the end stops at the end
    if kind == "disk":
        assert sorted(p.name for p in store.root.iterdir()) == sorted(f"{h}.txt" for h in (handle, sha16("other")))


def test_the_book_store_and_the_disk_store_answer_alike(tmp_path):
    """paging.MemoryPages (the book's default store) and io.page_store.PageStore (files) are both Pages:
    the same handle for the same text, the same errors, and read_page reads either."""
    memory, disk = MemoryPages(), PageStore(tmp_path / "pages")
    text = DOC + "\ud800 a lone surrogate, as a transcript's JSON may hold"
    assert memory.put(text) == disk.put(text) == page_handle(text) == \
        hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    first_tokens = read_page(memory, page_handle(text), tokens=(1, 5), counter=O200K)
    assert DOC.startswith(first_tokens) and O200K.count(first_tokens) == 5
    for store in (memory, disk, PageStore.in_memory()):
        handle = store.put(text)
        assert store.get(handle) == text
        assert read_page(store, handle, lines=(42, 42)) == page_lines(DOC)[41]
        assert read_page(store, handle, tokens=(1, 5), counter=O200K) == first_tokens
        for bad, match in (("../etc/passwd", "Not a page handle"), (5, "not int"), ("0" * 16, "No page")):
            with pytest.raises(PageError, match=match):
                store.get(bad)  # type: ignore[arg-type]
    assert repr(memory) == "<MemoryPages: 1 page(s)>" and repr(PageStore.in_memory()) == "PageStore.in_memory()"
    assert isinstance(PagedStrategy().store, MemoryPages)  # a replay writes no file unless given a PageStore
    memory.pages[sha16("a")] = "b"  # a planted collision is reported, not overwritten
    with pytest.raises(PageError, match="different content"):
        memory.put("a")


def test_writing_the_same_content_twice_is_a_no_op(tmp_path):
    store = PageStore(tmp_path)
    handle = store.put(DOC)
    path = tmp_path / f"{handle}.txt"
    before = path.stat()
    store.put(DOC)
    assert path.stat().st_mtime_ns == before.st_mtime_ns and path.stat().st_ino == before.st_ino
    assert path.read_bytes() == DOC.encode("utf-8")  # bytes as given: no newline translation


def test_a_page_with_other_content_under_its_name_is_reported(tmp_path):
    store = PageStore(tmp_path)
    (tmp_path / f"{sha16(DOC)}.txt").write_text("damaged", encoding="utf-8")
    with pytest.raises(PageError, match="different content"):
        store.put(DOC)


def test_crash_between_temp_write_and_rename_leaves_no_page(tmp_path, monkeypatch):
    store = PageStore(tmp_path / "pages")

    def crash(src, dst):
        assert Path(src).exists() and Path(src).read_bytes() == DOC.encode()  # the temp file was written
        raise OSError("simulated crash before the rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        store.put(DOC)
    handle = sha16(DOC)
    assert not (store.root / f"{handle}.txt").exists() and handle not in store
    assert list(store.root.iterdir()) == []  # the temp file was cleaned up too
    monkeypatch.undo()
    assert store.get(store.put(DOC)) == DOC


@settings(max_examples=60, derandomize=True, deadline=None)
@given(rows=st.lists(st.text(alphabet=st.characters(blacklist_characters="\n", blacklist_categories=("Cs",))),
                     min_size=1, max_size=40), pick=st.integers(0, 10_000))
def test_any_line_reads_back_exactly(rows, pick):
    store = PageStore.in_memory()
    text = "\n".join(rows)
    handle = store.put(text)
    n = pick % len(page_lines(text)) + 1
    assert store.read(handle, lines=(n, n)) == rows[n - 1]  # line n of the original, exactly
    assert "\n".join(page_lines(text)) in (text, text[:-1])  # only a final newline is not a line


def test_token_ranges():
    store = PageStore.in_memory()
    handle = store.put(DOC)
    tokens = O200K.encode(DOC)
    from ctxlab.tables.offline_encodings import get_encoding
    assert store.read(handle, tokens=(1, 50), counter=O200K) == get_encoding("o200k_base").decode(tokens[:50])
    chinese = "上下文管理" * 200
    h2 = store.put(chinese)
    for a, b in ((1, 1), (2, 3), (7, 40), (100, 10_000)):
        out = store.read(h2, tokens=(a, b), counter=O200K)
        assert out in chinese and "\ufffd" not in out
    est = CharsPerTokenCounter(4)
    assert store.read(handle, tokens=(1, 10), counter=est) == DOC[:40]
    with pytest.raises(PageError, match="counter"):
        store.read(handle, tokens=(1, 10))


@pytest.mark.parametrize("kw,match", [({"lines": (0, 3)}, ">= 1"), ({"lines": (5, 2)}, "empty"),
                                      ({"lines": (9_999, 10_000)}, "past the end"), ({"lines": (1.5, 3)}, "whole"),
                                      ({"lines": (True, 3)}, "whole"), ({}, "exactly one"), ({"lines": 5}, "pair"),
                                      ({"lines": (1, 2), "tokens": (1, 2)}, "exactly one")])
def test_bad_ranges_are_clear_errors(kw, match):
    store = PageStore.in_memory()
    with pytest.raises(PageError, match=match):
        store.read(store.put(DOC), **kw)


# ---- the read_page tool ----

def test_read_page_schemas_are_the_wire_forms_render_writes():
    ctx = build_context(Conversation("t", (user("hi", "u"),), tools=(READ_PAGE_TOOL,)), BudgetPolicy(),
                        profile=profile_for("gpt-4o"))
    assert to_openai_body(ctx)["tools"] == [openai_tool_schema()]
    assert {k: v for k, v in to_anthropic_body(ctx)["tools"][0].items() if k != "cache_control"} == \
        anthropic_tool_schema()
    schema = READ_PAGE_TOOL.parameters
    assert schema["required"] == ["handle"] and schema["additionalProperties"] is False
    assert {k: v["type"] for k, v in schema["properties"].items()} == {
        "handle": "string", "start_line": "integer", "end_line": "integer", "start_token": "integer",
        "end_token": "integer"}
    assert "read_page" == READ_PAGE_TOOL.name and "handle" in READ_PAGE_TOOL.description
    json.dumps(openai_tool_schema()), json.dumps(anthropic_tool_schema())


def test_execute_read_page_reads_and_reports():
    store = PageStore.in_memory()
    handle = store.put(DOC)
    out = execute_read_page(store, {"handle": handle, "start_line": 42, "end_line": 42})
    assert out.splitlines()[0] == f"[page {handle}, lines 42-42 of 304]"
    assert out.split("\n", 1)[1] == page_lines(DOC)[41]
    out = execute_read_page(store, json.dumps({"handle": handle, "start_line": 1}), max_tokens=200)
    first, body = out.split("\n", 1)
    assert "read on from line" in first and O200K.count(body) <= 200 and DOC.startswith(body)
    nxt = int(first.rsplit(" ", 1)[1].rstrip("]"))
    assert page_lines(DOC)[nxt - 2] == body.split("\n")[-1]  # the last line shown is whole
    out = execute_read_page(store, {"handle": handle, "start_token": 1, "end_token": 5})  # o200k by default
    assert out.startswith(f"[page {handle}, tokens 1-5 of {O200K.count(DOC):,}]")
    assert out.split("\n", 1)[1] == store.read(handle, tokens=(1, 5), counter=O200K)
    out = execute_read_page(store, {"handle": handle, "start_token": 3}, counter=CharsPerTokenCounter(4),
                            max_tokens=10**6)
    assert out.split("\n", 1)[1] == DOC[8:]  # to the end, characters x 4 per token
    out = execute_read_page(store, {"handle": handle, "start_token": 101})
    assert "read on from token" in out.splitlines()[0] and O200K.count(out.split("\n", 1)[1]) <= 3_000
    one_line = store.put("x" * 50_000)
    out = execute_read_page(store, {"handle": one_line, "start_line": 1})
    assert "alone is over" in out and O200K.count(out.split("\n", 1)[1]) <= 3_000


@pytest.mark.parametrize("args", [
    "not json", "[1, 2]", "null", {}, {"handle": 5}, {"handle": "0" * 16},
    {"handle": "HANDLE", "start_line": 1}, {"handle": "{h}", "start_line": "1"}, {"handle": "{h}", "start_line": 0},
    {"handle": "{h}", "start_line": 9, "end_line": 2}, {"handle": "{h}", "start_line": 1, "start_token": 1},
    {"handle": "{h}", "path": "/etc/passwd"}, {"handle": "{h}", "start_token": 10**9},
    {"handle": "{h}", "start_line": 10**30}, {"handle": "{h}", "end_line": -1}])
def test_execute_read_page_returns_errors_never_raises(args):
    store = PageStore.in_memory()
    h = store.put(DOC)
    if isinstance(args, dict):
        args = {k: (v.replace("{h}", h) if isinstance(v, str) else v) for k, v in args.items()}
    out = execute_read_page(store, args)
    assert out.startswith("error: ") and len(out) < 400


# ---- paging a message ----

def test_page_message_stores_whole_and_shows_head_notice_tail():
    store = PageStore.in_memory()
    msg = Message(role="tool", parts=(TextPart(DOC), ImagePart(width=4, height=4)), id="t7", tool_call_id="c7",
                  tool_name="read_file", timestamp="2025-01-01T10:00:00Z")
    shown, entry = page_message(msg, store, head_tokens=200, tail_tokens=100, counter=O200K)
    handle = entry.data["handle"]
    assert store.get(handle) == DOC  # the whole result, recoverable
    assert entry.kind == "paged_result" and entry.id == "page:t7"
    assert {k: v for k, v in entry.data.items() if k != "replacement"} == {
        "handle": handle, "message_id": "t7", "tool_call_id": "c7", "lines": 304, "tokens": O200K.count(DOC)}
    assert entry.data["replacement"] == shown  # what the context shows from now on (a Message)
    assert replace(shown, parts=msg.parts) == msg and shown.parts[1] == msg.parts[1]
    text = shown.parts[0].text
    head, rest = text.split("\n[... page ", 1)
    notice, tail = rest.split(" ...]\n", 1)
    assert DOC.startswith(head) and DOC.endswith(tail) and head and tail
    assert abs(O200K.count(head) - 200) <= 3 and abs(O200K.count(tail) - 100) <= 3
    assert f'read_page(handle="{handle}"' in notice and "of 304" in notice and f"{O200K.count(DOC):,} tokens" in notice
    first, last = (int(x) for x in notice.split("start_line=")[1].split(")")[0].split(", end_line="))
    assert DOC[len(head): len(DOC) - len(tail)] in store.read(handle, lines=(first, last))  # the hidden middle
    assert text_tokens(shown, O200K) < 400


def test_page_message_of_a_small_result_shows_it_whole():
    shown, entry = page_message(tool_result("c1", "ok\n", "t1"), PageStore.in_memory(), head_tokens=50,
                                tail_tokens=50, counter=O200K)
    assert shown.text.startswith("ok\n") and "shown whole" in shown.text and entry.data["lines"] == 1


# ---- the policy ----

def test_policy_table_and_reasons():
    policy = PagingPolicy()
    assert {policy.kind_of(n) for n in ("bash", "Bash", "shell", "run", "grep", "BashOutput")} == {"log"}
    assert {policy.kind_of(n) for n in ("read", "Read", "read_file", "cat", "web_fetch", "WebFetch",
                                        "mcp__fs__read_file")} == {"document"}
    assert {policy.kind_of(n) for n in ("query", "sql", "run_sql", "http_request", "db.query")} == {"data"}
    assert policy.kind_of("frobnicate") == policy.kind_of(None) == "other"
    assert [policy.action_of(n) for n in ("bash", "read_file", "sql", "frobnicate")] == ["prune", "page", "page", "page"]
    assert set(REASONS) == set(DEFAULT_ACTIONS) == {"log", "document", "data", "other"}
    assert all(REASONS[k].startswith(DEFAULT_ACTIONS[k] + "d:") for k in REASONS)  # "pruned: ...", "paged: ..."
    custom = PagingPolicy(kinds={**DEFAULT_TOOL_KINDS, "frobnicate": "log"}, actions={**DEFAULT_ACTIONS, "data": "prune"})
    assert custom.action_of("frobnicate") == "prune" and custom.action_of("sql") == "prune"
    assert PagingPolicy().kind_of("frobnicate") == "other"  # the default table was not changed


# ---- the paged strategy ----

@pytest.fixture
def checked():
    """The real invariants (checks.py allows a strategy to append read_page after the tools)."""
    yield


def _call(index: int = 2) -> Call:
    return Call("main", index, assistant("next", "next"), None, "gpt-4o", "openai")


def tools_blocks(record) -> list[str]:
    return [b.digest for b in record.request.blocks if b.kind == "tools"]


@pytest.mark.parametrize("window", [30_000, 60_000])
def test_replay_sample_paged(window, checked, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    conv = load(SAMPLE).conversation()
    strategy = PagedStrategy()
    result = replay(conv, strategy, window=window, check=True)
    assert [v for r in result.records for v in r.violations] == []
    assert list(tmp_path.iterdir()) == []  # a replay writes nothing
    first = result.records[0].request
    assert [b.label for b in first.blocks if b.kind == "tools"][-1] == "tool read_page"  # from the first call
    assert len({tuple(tools_blocks(r)) for r in result.records}) == 1  # byte-identical tools on every call
    paged = [e for e in result.new_entries if e.kind == "paged_result"]
    assert paged and len({e.data["message_id"] for e in paged}) == len(paged)  # one entry per result, once
    by_id = {m.id: m for m in conv.messages}
    for e in paged:
        assert strategy.store.get(e.data["handle"]) == by_id[e.data["message_id"]].text
        assert PagingPolicy().action_of(by_id[e.data["message_id"]].tool_name) == "page"
    assert "m089" in {e.data["message_id"] for e in paged}  # the 5,500-token read_file result
    assert any("capped on arrival: m069" in n for r in result.records for n in r.notes)  # the bash log is pruned


def test_paged_strategy_with_a_disk_store_writes_only_there(tmp_path, checked):
    conv = load(SAMPLE).conversation()
    store = PageStore(tmp_path / "pages")
    result = replay(conv, PagedStrategy(store=store), window=60_000, check=True)
    handles = {e.data["handle"] for e in result.new_entries}
    assert {p.name for p in (tmp_path / "pages").iterdir()} == {f"{h}.txt" for h in handles}
    assert [p.name for p in tmp_path.iterdir()] == ["pages"]


def test_paged_newest_unit_over_budget_alone_fits():
    profile, meter = profile_for("gpt-4o"), MessageMeter(profile_for("gpt-4o"))
    for tool in ("read_file", "bash"):
        conv = over_budget_unit(tool)
        # read_page's own definition takes room: give the messages the same 100 tokens as in test_pruning
        budget = 100 + meter.tools((READ_PAGE_TOOL,))
        strategy = PagedStrategy(BudgetPolicy(budget_tokens=budget))
        decision = strategy.decide(conv, _call(), profile, meter)
        ctx = decision.context
        assert ctx.total_tokens <= budget and [m.id for m in ctx.messages] == ["u1", "a1", "t1"]
        assert ctx.tools == (READ_PAGE_TOOL,)
        assert any("newest unit" in n and "t1" in n for n in decision.notes)
        text = ctx.messages[2].text
        if "read_page(" in text:  # paged to fit: the whole result is still readable
            handle = decision.new_entries[0].data["handle"]
            assert strategy.store.get(handle) == conv.messages[2].text
        else:
            assert "tokens omitted" in text
    assert PagingPolicy().action_of("bash") == "prune" and "tokens omitted" in text  # the log was pruned


def test_paged_newest_unit_with_room_for_the_notice_is_paged():
    conv = over_budget_unit("read_file")
    big = replace(conv.messages[2], parts=(TextPart(words(1_500)),))
    conv = replace(conv, items=conv.items[:2] + (big,))
    profile, meter = profile_for("gpt-4o"), MessageMeter(profile_for("gpt-4o"))
    strategy = PagedStrategy(BudgetPolicy(budget_tokens=400))
    decision = strategy.decide(conv, _call(), profile, meter)
    assert decision.context.total_tokens <= 400 and "read_page(" in decision.context.messages[2].text
    assert [e.kind for e in decision.new_entries] == ["paged_result"]
    assert strategy.store.get(decision.new_entries[0].data["handle"]) == words(1_500)
    again = strategy.decide(conv, _call(3), profile, meter)
    assert again.new_entries == () and again.context.messages[2] == decision.context.messages[2]


def test_base64_result_is_paged_on_arrival_and_readable(checked):
    blob = base64.b64encode(random.Random(7).randbytes(30_000)).decode()[:40_000]
    items = (user("decode the attachment", "u1"),
             assistant("", "a1", calls=(("c1", "read_file", {"path": "blob.b64"}),), model="gpt-4o", provider="openai"),
             tool_result("c1", blob, "t1", name="read_file"),
             assistant("it is a PNG", "a2", model="gpt-4o", provider="openai"))
    conv = Conversation("b64", items, model="gpt-4o", provider="openai")
    strategy = PagedStrategy()
    result = replay(conv, strategy, check=True)
    assert [v for r in result.records for v in r.violations] == []
    for record in result.records:
        assert blob[:5_000] not in "".join(b.text for b in record.request.blocks)
    entry, = result.new_entries
    out = execute_read_page(strategy.store, {"handle": entry.data["handle"], "start_line": 1}, max_tokens=50_000)
    assert out.split("\n", 1)[1] == blob


def test_a_resumed_session_shows_the_same_bytes_and_adds_no_entries():
    """The entries carry what the context shows: a fresh strategy on the session (or
    ``views.substituted``) shows the same message, and adds no second entry."""
    t = tool_result("c1", words(6_000), "t1", name="read_file")
    items = (user("go", "u1"), assistant("", "a1", calls=(("c1", "read_file", {"p": 1}),)), t)
    conv = Conversation("s", items, model="gpt-4o", provider="openai")
    profile, meter = profile_for("gpt-4o"), MessageMeter(profile_for("gpt-4o"))
    first = PagedStrategy().decide(conv, _call(), profile, meter)
    assert [e.kind for e in first.new_entries] == ["paged_result"]
    resumed = replace(conv, items=conv.items + first.new_entries)
    again = PagedStrategy().decide(resumed, _call(), profile, meter)
    assert again.new_entries == () and again.context.messages == first.context.messages
    assert substituted(resumed).messages[2] == first.context.messages[2]
    old_style = replace(conv, items=conv.items + (Entry("paged_result", "p", {"message_id": "t1", "handle": "0" * 16}),))
    assert PagedStrategy().decide(old_style, _call(), profile, meter).new_entries == ()  # no replacement: no repeat


def test_conflicting_read_page_tool_is_refused():
    conv = Conversation("s", (user("hi", "u1"),), tools=(ToolSpec("read_page", "something else"),),
                        model="gpt-4o", provider="openai")
    with pytest.raises(ValueError, match="read_page"):
        PagedStrategy().decide(conv, _call(), profile_for("gpt-4o"), MessageMeter(profile_for("gpt-4o")))


@pytest.mark.shared
@pytest.mark.parametrize("name,window", [pytest.param("pi-mono/before-compaction.jsonl", None,
                                                      marks=pytest.mark.thorough),
                                         ("pi-mono/before-compaction.jsonl", 60_000),
                                         ("claude-code-viewer/*.jsonl", None),
                                         ("claude-code-viewer/*.jsonl", 30_000)])
def test_replay_shared_transcripts_paged(shared_transcripts, name, window, checked):
    """Checked replays of two real sessions under ``paged``. pi at its own window runs under
    ``-m thorough`` only: its contexts grow to ~180k tokens, so checking its 484 calls costs 4-5 s of CPU
    (up to 28 s on a busy machine), and it takes no path that pi at 60,000 does not (both page the same
    ten results on arrival; 60,000 also cuts the history). Claude Code's session runs at both windows."""
    path = sorted(shared_transcripts.glob(name))[0]
    conv = load(path).conversation()
    result = replay(conv, PagedStrategy(), window=window, check=True, speedup=FAST)  # plain alike: test_fast.py
    assert result.records and [v for r in result.records for v in r.violations] == []
    for thread in conv.threads():
        records = [r for r in result.records if r.call.thread == thread]
        assert len({tuple(tools_blocks(r)) for r in records}) == 1
        assert "tool read_page" in [b.label for b in records[0].request.blocks]


def test_a_page_read_back_is_never_paged_again():
    store = PageStore.in_memory()
    handle = store.put(DOC * 40)
    read = execute_read_page(store, {"handle": handle, "start_line": 1}, max_tokens=6_000)
    items = (user("look", "u1"), assistant("", "a1", calls=(("c1", "read_page", {"handle": handle}),)),
             tool_result("c1", read, "t1", name="read_page"))
    conv = Conversation("s", items, model="gpt-4o", provider="openai")
    decision = PagedStrategy(store=store).decide(conv, _call(), profile_for("gpt-4o"), MessageMeter(profile_for("gpt-4o")))
    assert decision.new_entries == () and any(n.startswith("capped on arrival: t1") for n in decision.notes)
    assert execute_read_page(store, {"handle": handle, "start_line": 1}).count("\n") > 10  # the default fits the cap
    assert O200K.count(execute_read_page(store, {"handle": handle, "start_line": 1})) < ArrivalCap().default_tokens
