"""Large files (issue 18): the pi reader reads a line at a time and gives what it gave before; the tiled file
``bench/large_file.py`` makes is one valid session. Speed and memory are measured in bench/, never here."""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path

import pytest

from ctxlab.interactions import find_orphans
from ctxlab.io.formats import _may_be_nonfinite, interned, interned_keys, iter_jsonl, load, pi
from ctxlab.messages import Message, parse_time

REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "tests" / "fixtures" / "formats"
sys.path.insert(0, str(REPO / "bench"))
import large_file

PI_FILES = sorted(FIX.glob("pi_*.jsonl"))


def _whole(path: Path, strict: bool):
    """The reader's other way: every line parsed first, then the branch (what read() did before issue 18)."""
    try:
        return repr(pi._read(path, strict=strict, on_the_fly=False))
    except Exception as err:  # noqa: BLE001 - the same error is the point
        return f"{type(err).__name__}: {err}"


def _read(path: Path, strict: bool):
    try:
        return repr(pi.read(path, strict=strict))
    except Exception as err:  # noqa: BLE001
        return f"{type(err).__name__}: {err}"


def _variants(src: Path, tmp_path: Path) -> list[Path]:
    """``src`` and copies of it damaged one line at a time: a line dropped, not JSON, its id removed, its parent
    pointing nowhere, a bad role — each also with a line that is not JSON further down."""
    lines = [ln for ln in src.read_text(encoding="utf-8").split("\n") if ln.strip()]
    out = [src]
    for i in range(1, len(lines)):
        obj = json.loads(lines[i])
        changed = {"drop": None, "json": "{not json", "noid": {k: v for k, v in obj.items() if k != "id"},
                   "nowhere": {**obj, "parentId": "nowhere"}, "role": {**obj, "message": {"role": "bogus"}}}
        for name, new in changed.items():
            body = lines[:i] + ([] if new is None else [new if isinstance(new, str) else json.dumps(new)]) + lines[i + 1:]
            for tail in ((), ("{later",)):
                path = tmp_path / f"{src.stem}-{i}-{name}-{len(tail)}.jsonl"
                path.write_text("\n".join(body[:-1] + list(tail) + body[-1:]) + "\n", encoding="utf-8")
                out.append(path)
    return out


@pytest.mark.parametrize("src", PI_FILES, ids=lambda p: p.name)
def test_reading_on_the_fly_gives_what_reading_whole_gives(src, tmp_path):
    """Items, notes, repairs and the first error (strict) are the same, on good and damaged files, v1 and v3."""
    for path in _variants(src, tmp_path):
        for strict in (True, False):
            assert _read(path, strict) == _whole(path, strict), (path.name, strict)


def test_a_branched_tree_is_read_whole_and_an_unbranched_one_on_the_fly(monkeypatch):
    calls: list[bool] = []
    real = pi._read

    def spy(path, *, strict, on_the_fly):
        calls.append(on_the_fly)
        return real(path, strict=strict, on_the_fly=on_the_fly)

    monkeypatch.setattr(pi, "_read", spy)
    pi.read(FIX / "pi_v3.jsonl")  # it branches: a first pass gives up, the second reads it whole
    assert calls == [True, False]
    calls.clear()
    pi.read(FIX / "pi_v1.jsonl")  # linear: one pass
    assert calls == [True]


def test_lines_are_numbered_and_stripped_as_before(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}\r\n\n  \n{"b": "\xe2\x80\xa8"}\n{"c": 3}')  # BOM, CRLF, blanks, U+2028
    assert [(n, i, o) for n, i, o in iter_jsonl(path, strict=True, notes=[])] == [
        (1, 0, {"a": 1}), (4, 1, {"b": "\u2028"}), (5, 2, {"c": 3})]


def test_the_nonfinite_first_look_agrees_with_the_regular_expression():
    pattern = re.compile(r"NaN|Infinity|[eE][+-]?\d{3}")  # ctxlab.base.json_text's first look
    rng = random.Random(18)
    alphabet = "eE+-0123456789 aN.xIfinty\"٣中"
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        if pattern.search(text):  # never a miss; on ASCII exactly the same answer
            assert _may_be_nonfinite(text.encode())
        elif text.isascii():
            assert not _may_be_nonfinite(text.encode()), text
    assert _may_be_nonfinite(b'{"x": 1e999}') and _may_be_nonfinite(b'{"x": -Infinity}')
    assert not _may_be_nonfinite(b'{"id": "toolu_01abc", "cost": 4.5e-05}')


def test_interned_names_and_keys_are_equal_to_what_was_read():
    raw = json.loads('{"input": 3, "cost": {"total": 0.1, "deep": {"x": [1]}}, "list": [{"k": 1}]}')
    again = interned_keys(raw)
    assert again == raw and again is not raw
    assert interned(None) is None and interned(3) == 3
    a, b = "claude-" + str(len("opus")), "claude-" + str(len("opus!") - 1)  # two equal strings, made apart
    assert a is not b and interned(a) is interned(b) == "claude-4"


def test_the_tiled_file_is_one_session_with_its_own_ids(tmp_path):
    src = FIX / "pi_v1.jsonl"
    target = tmp_path / "tiled.jsonl"
    copies = large_file.make_file(target, 2.5 * src.stat().st_size / large_file.MB, source=src)
    assert copies == 3 and target.stat().st_size >= 2.5 * src.stat().st_size
    one, many = load(src).conversation(), load(target).conversation()
    assert len(many.messages) == copies * len(one.messages)
    assert len(find_orphans(many.messages)) == copies * len(find_orphans(one.messages))  # each call pairs in its copy
    ids = [c for m in many.messages for c in m.call_ids if m.role == "assistant"]
    assert len(ids) == len(set(ids)) == copies * sum(len(m.call_ids) for m in one.messages if m.role == "assistant")
    stamps = [parse_time(i.timestamp) for i in many.items]
    assert stamps == sorted(stamps) and None not in stamps  # time only moves on
    kept = [e.data["first_kept_id"] for e in many.entries if e.kind == "compaction"]
    per_copy = len(one.items)
    for k, first_kept in enumerate(kept):  # each compaction keeps messages of its own copy
        at = next(j for j, i in enumerate(many.items) if isinstance(i, Message) and i.id == first_kept)
        assert at // per_copy == k
    assert [m.text for m in many.messages[:len(one.messages)]] == [m.text for m in one.messages]


def test_a_tiled_tree_hangs_each_copy_under_the_last(tmp_path):
    src = FIX / "pi_v3_session.jsonl"
    target = tmp_path / "tiled.jsonl"
    assert large_file.make_file(target, 1.5 * src.stat().st_size / large_file.MB, source=src) == 2
    one, many = load(src).conversation(), load(target).conversation()
    assert len(many.messages) == 2 * len(one.messages)
    assert [m.text for m in many.messages[len(one.messages):]] == [m.text for m in one.messages]
