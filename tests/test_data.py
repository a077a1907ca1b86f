"""The bundled data: the sample session is what its generator writes, its facts are where they say,
the pi bill adds up (and matches a fresh regeneration when the shared transcripts are present), and
two rows of the pi leaderboard match a fresh regeneration (all of it: tests/test_widget_ch07_08.py,
under ``-m thorough``)."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # until ctxlab is installed or a conftest puts the repo on the path
    sys.path.insert(0, str(ROOT))

from ctxlab.io.formats import ctxlab_session  # noqa: E402
from ctxlab.messages import Entry, Message, ThinkingPart  # noqa: E402
from ctxlab.io.session import Session  # noqa: E402

DATA = ROOT / "data"
SAMPLE, FACTS, BILL = DATA / "sample_session.jsonl", DATA / "sample_facts.json", DATA / "pi_bill.csv"
PI_SOURCE = ROOT.parent / "shared" / "data" / "transcripts" / "pi-mono" / "before-compaction.jsonl"


def run_script(name: str, *args: Path, hashseed: str = "0") -> None:
    env = {**os.environ, "PYTHONHASHSEED": hashseed}
    subprocess.run([sys.executable, str(DATA / name), *map(str, args)], check=True, env=env,
                   capture_output=True, cwd=ROOT)


def seconds(ts: str) -> float:
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


@pytest.fixture(scope="module")
def sample() -> Session:
    return Session.open(SAMPLE)


# ---- the sample session ----------------------------------------------------------------------------

def test_committed_sample_equals_a_fresh_regeneration(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    run_script("make_sample.py", one, hashseed="1")
    run_script("make_sample.py", two, hashseed="2")  # also independent of hash randomisation
    for name in ("sample_session.jsonl", "sample_facts.json"):
        assert (one / name).read_bytes() == (two / name).read_bytes(), f"{name} differs between two runs"
        assert (one / name).read_bytes() == (DATA / name).read_bytes(), \
            f"data/{name} is stale: run `python data/make_sample.py`"


def test_the_invented_repository_lives_beside_the_screenplay() -> None:
    """data/sample_repo.py holds orderly's files and the working copy; make_sample.py tells the story over it."""
    files = data_script("sample_repo.py")
    repo = files.Repo()
    assert repo.files == files.REPO and repo.files is not files.REPO  # a working copy of the start state
    out = repo.edit("src/app/server.py", '"8080"', '"8443"')
    assert out.startswith("Edited src/app/server.py: replaced 1 occurrence (line 42).")
    assert '+PORT = int(os.environ.get("ORDERLY_PORT", "8443"))' in repo.diff("src/app/server.py").splitlines()
    assert files.REPO["src/app/server.py"].count('"8443"') == 0  # the start state is untouched
    assert "db.py" in repo.tree("src/").split() and "src/app/db.py" not in repo.files  # listed, never read
    story = (DATA / "make_sample.py").read_text(encoding="utf-8")
    assert "from sample_repo import" in story and "SERVER_PY = " not in story  # no file text in the screenplay


def test_sample_shape(sample: Session) -> None:
    assert SAMPLE.stat().st_size < 600_000
    assert sample.model == "claude-sonnet-4-6" and sample.provider == "anthropic"
    assert "synthetic" in (sample.title or "") and len(sample.tools) == 8
    assert 1000 < sum(map(len, sample.system)) < 4000  # a few hundred tokens
    path = sample.path()
    messages = [i for i in path if isinstance(i, Message)]
    assert 150 <= len(messages) <= 250
    assert len(sample.leaves()) == 2  # one abandoned branch after lunch

    assistants = [m for m in messages if m.role == "assistant"]
    results = {m.tool_call_id: m for m in messages if m.role == "tool"}
    # every assistant call has plausible recorded usage
    for m in assistants:
        assert m.usage is not None and m.usage.total_input_tokens > 0 and m.usage.output_tokens > 0
        assert m.model in ("claude-sonnet-4-6", "claude-opus-4-5") and m.provider == "anthropic"
    # parallel rounds, one answered out of order
    parallel = [m for m in assistants if len(m.tool_calls) >= 2]
    assert len(parallel) >= 3 and max(len(m.tool_calls) for m in parallel) == 3
    order = {m.id: n for n, m in enumerate(messages)}
    assert any([order[results[c].id] for c in m.call_ids] != sorted(order[results[c].id] for c in m.call_ids)
               for m in parallel)
    # an aborted call that never got a result
    aborted = [m for m in assistants if m.stop_reason == "aborted"]
    assert aborted and all(c not in results for m in aborted for c in m.call_ids)
    # error results with codes, a huge log, a JSON result, a base64 blob
    errors = [m for m in messages if m.role == "tool" and m.is_error]
    assert any("E4057" in m.text for m in errors)
    sizes = sorted(len(m.text) for m in messages if m.role == "tool")
    assert 40_000 <= sizes[-1] <= 60_000
    assert any(m.role == "tool" and m.text.lstrip().startswith("{") and json.loads(m.text) for m in messages)
    blob = [m for m in messages if m.role == "tool" and "shown base64" in m.text]
    assert blob and 7_000 <= len(blob[0].text) <= 9_000
    # Chinese: a user message with constraints, a tool output
    assert any(m.role == "user" and "不要修改 config/prod.yaml" in m.text and "必须保留 API 兼容" in m.text
               for m in messages)
    assert any(m.role == "tool" and "生产环境" in m.text for m in messages)
    # a system reminder, thinking, setting changes
    assert any(m.role == "user" and m.origin == "system" for m in messages)
    assert sum(any(isinstance(p, ThinkingPart) for p in m.parts) for m in assistants) >= 4
    kinds = {e.kind for e in path if isinstance(e, Entry)}
    assert {"note", "thinking_level_change", "model_change"} <= kinds
    # a coffee break and a lunch; the cache is cold after each
    starts = [seconds(m.timestamp) for m in messages]
    assert starts == sorted(starts)
    gaps = [(b - a, m) for (a, b, m) in zip(starts, starts[1:], messages[1:])]
    assert any(300 < g < 3600 for g, _ in gaps) and any(g > 3600 for g, _ in gaps)
    calls = [(seconds(m.timestamp), m) for m in assistants]
    for (t0, _), (t1, m) in zip(calls, calls[1:]):
        if t1 - t0 > 3600:
            assert m.usage.cache_read_tokens <= 2000  # at most the static head (read again after a branch)
    assert any(t1 - t0 > 300 and m.usage.cache_read_tokens == 0 for (t0, _), (t1, m) in zip(calls, calls[1:]))


def test_reader_returns_the_main_path(sample: Session) -> None:
    transcript = ctxlab_session.read(SAMPLE)
    assert ctxlab_session.sniff(SAMPLE, SAMPLE.read_text(encoding="utf-8")[:2000])
    assert transcript.conversation().items == sample.path()
    assert transcript.conversation().system == sample.system


def test_facts_occur_verbatim_in_their_messages(sample: Session) -> None:
    facts = json.loads(FACTS.read_text(encoding="utf-8"))
    assert 18 <= len(facts) <= 25
    main = [i.id for i in sample.path()]
    for fact in facts:
        assert set(fact) == {"id", "kind", "text", "message_id"}
        assert fact["kind"] in {"constraint", "path", "error_code", "step", "decision"}
        item = sample[fact["message_id"]]
        assert isinstance(item, Message) and fact["text"] in item.text, fact
        assert fact["message_id"] in main, f"{fact['id']} is not on the main path"
    assert {f["kind"] for f in facts} == {"constraint", "path", "error_code", "step", "decision"}
    positions = [main.index(f["message_id"]) / len(main) for f in facts]
    assert min(positions) < 0.1 and max(positions) > 0.9  # spread from the start to the end
    assert sum(p < 1 / 3 for p in positions) >= 5 and sum(p > 2 / 3 for p in positions) >= 5


# ---- the pi bill -------------------------------------------------------------------------------------

BUCKETS = ("cost_input", "cost_output", "cost_cache_read", "cost_cache_write")


def test_pi_bill_adds_up() -> None:
    with open(BILL, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    assert reader.fieldnames == ["call", "timestamp", "model", "provider", "stop_reason", "gap_s", "input",
                                 "cache_read", "cache_write", "output", *BUCKETS, "cost_total", "event"]
    assert len(rows) > 400
    for row in rows:
        assert abs(float(row["cost_total"]) - sum(float(row[b]) for b in BUCKETS)) <= 1e-9, row["call"]
    assert [int(r["call"]) for r in rows] == list(range(1, len(rows) + 1))
    events = " ".join(r["event"] for r in rows)
    assert "thinking_level_change" in events and "model_change" in events and "compaction" in events


@pytest.mark.shared
@pytest.mark.skipif(not PI_SOURCE.exists(), reason="the shared pi transcript is not here")
def test_pi_bill_equals_a_fresh_regeneration(tmp_path: Path) -> None:
    run_script("make_pi_bill.py", PI_SOURCE, tmp_path)
    assert (tmp_path / "pi_bill.csv").read_bytes() == BILL.read_bytes(), \
        "data/pi_bill.csv is stale: run `python data/make_pi_bill.py`"


# ---- the pi leaderboard ------------------------------------------------------------------------------

LEADERBOARD = DATA / "leaderboard_pi.csv"


def data_script(name: str):
    """A generator under data/ imported as a module (its ``from csv_text import ...`` needs data/ on the path)."""
    if str(DATA) not in sys.path:
        sys.path.insert(0, str(DATA))
    spec = importlib.util.spec_from_file_location(name.removesuffix(".py"), DATA / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.shared
@pytest.mark.skipif(not PI_SOURCE.exists(), reason="the shared pi transcript is not here")
def test_two_leaderboard_rows_equal_a_fresh_regeneration() -> None:
    # All 21 rows take about a minute of CPU (the thorough run regenerates the file); two rows cost
    # about 5 s and still catch a stale file: ``recorded`` (pi's own compactions replayed, the checklist
    # scored) and one compaction policy of chapter 07's grid.
    make = data_script("make_leaderboard.py")
    todo = [t for t in make.tasks(PI_SOURCE) if t[:3] == ("leaderboard", None, "recorded") or t[3:] == (0.8, 0.5)]
    assert len(todo) == 2, todo
    make._load(str(PI_SOURCE))  # what each worker process of the generator does first
    fresh = make.to_csv(make.header_lines(PI_SOURCE), [make._row(t) for t in todo]).splitlines()
    committed = LEADERBOARD.read_text(encoding="utf-8").splitlines()
    head = len(fresh) - len(todo)  # the ``# key: value`` lines and the column row
    assert fresh[:head] == committed[:head], "data/leaderboard_pi.csv is stale: run `python data/make_leaderboard.py`"
    for line in fresh[head:]:
        assert line in committed[head:], f"data/leaderboard_pi.csv is stale (run `python data/make_leaderboard.py`): {line}"
