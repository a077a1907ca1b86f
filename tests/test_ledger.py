"""The ledger: neutral fields, token-weighted totals, unpriced calls, the figure, the text table, and the
end-to-end cost test against pi's own recorded per-bucket costs."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from ctxlab.tables import prices
from ctxlab.ledger import Ledger, LedgerRow, from_outcome, make_row, recorded_ledger
from ctxlab.messages import Conversation, Message, TextPart, Usage, user
from ctxlab.widgets import ledger_figure

SHARED = Path(__file__).resolve().parents[1].parent / "shared/data/transcripts"
PI_FILE = SHARED / "pi-mono/before-compaction.jsonl"
OPUS = "claude-opus-4-5"


def _anthropic_usage(raw: dict) -> Usage:
    """What the Claude Code reader does: ``input_tokens`` is the uncached part only."""
    return Usage(uncached_input_tokens=raw["input_tokens"], cache_read_tokens=raw.get("cache_read_input_tokens", 0),
                 cache_write_tokens=raw.get("cache_creation_input_tokens", 0), output_tokens=raw["output_tokens"],
                 raw=raw)


def _openai_usage(raw: dict) -> Usage:
    """The OpenAI receipt: ``prompt_tokens`` is the whole prompt, ``cached_tokens`` is inside it."""
    cached = raw.get("prompt_tokens_details", {}).get("cached_tokens", 0)
    return Usage(uncached_input_tokens=raw["prompt_tokens"] - cached, cache_read_tokens=cached,
                 output_tokens=raw["completion_tokens"], raw=raw)


def _reply(id: str, usage: Usage | None, model: str = OPUS, provider: str = "anthropic", thread: str = "main",
           stop: str = "stop", at: str = "2025-12-08T22:41:09.389Z") -> Message:
    return Message(role="assistant", parts=(TextPart("ok"),), id=id, model=model, provider=provider, thread=thread,
                   stop_reason=stop, usage=usage, timestamp=at)


def _conv(*messages: Message) -> Conversation:
    return Conversation(id="t", items=(user("hi", "u0"), *messages))


# ---------------------------------------------------------------- neutral fields


def test_anthropic_input_tokens_exclude_cached_tokens():
    """Recorded {input_tokens: 0, cache_creation 380, cache_read 4480} is a 4,860-token prompt."""
    u = _anthropic_usage({"input_tokens": 0, "cache_creation_input_tokens": 380, "cache_read_input_tokens": 4480,
                          "output_tokens": 50})
    row = recorded_ledger(_conv(_reply("a1", u))).rows[0]
    assert (row.total_input_tokens, row.cache_read_tokens, row.cache_write_tokens, row.uncached_input_tokens) == \
        (4860, 4480, 380, 0)
    assert row.hit_rate == pytest.approx(4480 / 4860)


def test_openai_prompt_tokens_include_cached_tokens():
    """The OpenAI receipt of the chapter's call 3: 4,990 prompt tokens of which 4,736 cached → 254 uncached."""
    u = _openai_usage({"prompt_tokens": 4990, "completion_tokens": 20,
                       "prompt_tokens_details": {"cached_tokens": 4736}})
    row = recorded_ledger(_conv(_reply("a1", u, model="gpt-4o", provider="openai"))).rows[0]
    assert (row.total_input_tokens, row.cache_read_tokens, row.uncached_input_tokens, row.cache_write_tokens) == \
        (4990, 4736, 254, 0)
    p = prices.price_for("gpt-4o", "openai")
    assert row.cost_input == pytest.approx(254 * p.input_per_mtok / 1e6)
    assert row.cost_cache_read == pytest.approx(4736 * p.cache_read_per_mtok / 1e6)


def test_no_field_is_called_input_alone():
    assert not {"input", "input_tokens", "cost_input_tokens"} & set(LedgerRow.__dataclass_fields__)


# ---------------------------------------------------------------- totals


def test_hit_rate_is_token_weighted_not_the_mean_of_calls():
    """A 100-token call with no hit and a 10,000-token call with 9,000 read: 9,000/10,100, not (0 + 0.9)/2."""
    rows = [make_row(thread="main", call=1, uncached_input_tokens=100, cache_read_tokens=0, cache_write_tokens=0,
                     output_tokens=1, model=OPUS),
            make_row(thread="main", call=2, uncached_input_tokens=1_000, cache_read_tokens=9_000, cache_write_tokens=0,
                     output_tokens=1, model=OPUS)]
    t = Ledger(rows).totals()
    assert t.hit_rate == pytest.approx(9_000 / 10_100)
    assert t.hit_rate != pytest.approx(sum(r.hit_rate for r in rows) / len(rows))
    assert (t.total_input_tokens, t.cache_read_tokens, t.uncached_input_tokens) == (10_100, 9_000, 1_100)
    assert t.cost_usd == pytest.approx(sum(r.cost_usd for r in rows))


def test_per_thread_totals_and_call_numbers():
    u = Usage(uncached_input_tokens=10, cache_read_tokens=990, output_tokens=5)
    cold = Usage(uncached_input_tokens=1000)
    ledger = recorded_ledger(_conv(_reply("a1", u), _reply("s1", u, thread="sidechain-1"),
                                   _reply("a2", u), _reply("s2", cold, thread="sidechain-1")))
    assert [(r.thread, r.call) for r in ledger.rows] == [("main", 1), ("sidechain-1", 1), ("main", 2),
                                                         ("sidechain-1", 2)]
    per = ledger.per_thread()
    assert list(per) == ["main", "sidechain-1"]
    assert per["main"].calls == 2 and per["main"].hit_rate == pytest.approx(0.99)
    assert per["sidechain-1"].hit_rate == pytest.approx(990 / 2000)
    assert ledger.totals().hit_rate == pytest.approx(2970 / 4000)


def test_unpriced_model_gives_none_a_note_and_is_counted():
    u = Usage(uncached_input_tokens=100, output_tokens=10)
    ledger = recorded_ledger(_conv(_reply("a1", u), _reply("a2", u, model="my-local-model", provider="ollama")))
    priced, unpriced = ledger.rows
    assert priced.cost_usd is not None and priced.cost_usd > 0
    assert unpriced.cost_usd is None and unpriced.cost_input is None and unpriced.price_source is None
    assert "unpriced" in unpriced.note and "my-local-model" in unpriced.note
    t = ledger.totals()
    assert (t.priced_calls, t.unpriced_calls) == (1, 1)
    assert t.cost_usd == pytest.approx(priced.cost_usd)  # the unpriced call is left out, not counted as 0
    assert "1 of 2 calls unpriced" in str(ledger)


def test_all_unpriced_total_is_none():
    ledger = recorded_ledger(_conv(_reply("a1", Usage(uncached_input_tokens=5), model="nope-9000", provider="x")))
    assert ledger.totals().cost_usd is None


def test_aborted_and_usage_less_calls_are_rows():
    ledger = recorded_ledger(_conv(_reply("a1", Usage(), stop="aborted"), _reply("a2", None, stop="error")))
    aborted, missing = ledger.rows
    assert aborted.note == "aborted" and aborted.cost_usd == 0.0
    assert missing.note.startswith("no usage recorded") and missing.cost_usd is None
    assert ledger.notes == ("1 of 2 calls recorded no usage",)


def test_tier_switch_in_a_row():
    """A Sonnet 4.5 call above 200,000 prompt tokens (historical 1M beta) pays the long-context price and says so."""
    at = "2026-01-05T10:00:00Z"
    low = make_row(thread="main", call=1, uncached_input_tokens=0, cache_read_tokens=200_000, cache_write_tokens=0,
                   output_tokens=0, model="claude-sonnet-4-5", provider="anthropic", at=at)
    high = make_row(thread="main", call=2, uncached_input_tokens=1, cache_read_tokens=200_000, cache_write_tokens=0,
                    output_tokens=0, model="claude-sonnet-4-5", provider="anthropic", at=at)
    assert high.cost_cache_read == pytest.approx(2 * low.cost_cache_read)
    assert "long-context" in high.note and "long-context" not in low.note


def test_recorded_cost_kept_beside_ours():
    u = Usage(uncached_input_tokens=1, cache_read_tokens=49_030, cache_write_tokens=135, output_tokens=27,
              cost_usd={"uncached_input": 5e-06, "cache_read": 0.024515, "cache_write": 0.00084375,
                        "output": 0.000675, "total": 0.02603875})
    ledger = recorded_ledger(_conv(_reply("a1", u)))
    row = ledger.rows[0]
    assert row.recorded_cost_usd == {"input": 5e-06, "cache_read": 0.024515, "cache_write": 0.00084375,
                                     "output": 0.000675, "total": 0.02603875}
    assert ledger.totals().recorded_cost_usd == pytest.approx(0.02603875)
    df = ledger.to_pandas()
    assert df.loc[0, "recorded_cost_total"] == pytest.approx(0.02603875)


# ---------------------------------------------------------------- rows from a simulator


def test_from_outcome_duck_typed_with_overflow():
    outcome = SimpleNamespace(cache_read_tokens=4480, cache_write_tokens=380, cache_write_1h_tokens=0,
                              uncached_input_tokens=0, total_input_tokens=4860, reason="prefix read up to breakpoint")
    row = from_outcome(outcome, output_tokens=10, model=OPUS, provider="anthropic", thread="main", call=2)
    assert (row.total_input_tokens, row.cache_read_tokens, row.cache_write_tokens) == (4860, 4480, 380)
    assert row.note == "prefix read up to breakpoint"
    big = SimpleNamespace(cache_read_tokens=0, cache_write_tokens=0, uncached_input_tokens=210_000, reason="")
    over = from_outcome(big, output_tokens=0, model=OPUS, provider="anthropic", window_tokens=200_000)
    assert over.overflow and "overflow: 210,000 > window 200,000" in over.note
    flagged = from_outcome(big, output_tokens=0, model=OPUS, provider="anthropic", overflow=True,
                           note="prefix read up to breakpoint; x")
    assert flagged.overflow and flagged.note.count("overflow") == 1


def test_a_row_says_its_kind_in_a_typed_field():
    """``kind`` tells a recorded call from a strategy's side call without reading the note."""
    outcome = SimpleNamespace(cache_read_tokens=0, cache_write_tokens=0, uncached_input_tokens=900, reason="")
    main = from_outcome(outcome, output_tokens=10, model=OPUS, provider="anthropic")
    side = from_outcome(outcome, output_tokens=10, model=OPUS, provider="anthropic", kind="summary",
                        note="summary call: 3 dropped messages, fresh")
    assert (main.kind, side.kind) == ("main", "summary")
    assert side.note == "summary call: 3 dropped messages, fresh"  # the note stays as people read it
    assert make_row(thread="main", call=1, uncached_input_tokens=1, cache_read_tokens=0, cache_write_tokens=0,
                    output_tokens=0, kind="summary").kind == "summary"
    assert {r.kind for r in recorded_ledger(_conv(_reply("a1", Usage()), _reply("a2", None))).rows} == {"main"}


def test_reason_not_repeated_when_already_in_the_note():
    outcome = SimpleNamespace(cache_read_tokens=0, cache_write_tokens=10, uncached_input_tokens=0, reason="ttl expired")
    row = from_outcome(outcome, output_tokens=0, model=OPUS, provider="anthropic", note="dropped 2 units; ttl expired")
    assert row.note == "dropped 2 units; ttl expired"


# ---------------------------------------------------------------- what a learner sees


def _sample() -> Ledger:
    rows = []
    for k, (read, write, uncached) in enumerate([(0, 4480, 0), (4480, 380, 0), (4860, 130, 0), (0, 0, 5000)], 1):
        rows.append(make_row(thread="main", call=k, uncached_input_tokens=uncached, cache_read_tokens=read,
                             cache_write_tokens=write, output_tokens=100, model=OPUS, provider="anthropic"))
    rows.append(make_row(thread="main", call=5, uncached_input_tokens=7, cache_read_tokens=0, cache_write_tokens=0,
                         output_tokens=1, model="unknown-model-q", provider=None))
    return Ledger(rows, title="three-call example and two more")


def test_figure_trace_data_equals_the_rows():
    ledger = _sample()
    fig = ledger_figure(ledger)
    by_name = {t.name.split(" (")[0]: t for t in fig.data}
    assert [list(by_name[n].y) for n in ("cache read", "cache write", "uncached input")] == [
        [r.cache_read_tokens for r in ledger.rows], [r.cache_write_tokens for r in ledger.rows],
        [r.uncached_input_tokens for r in ledger.rows]]
    cumulative, running = [], 0.0
    for r in ledger.rows:
        running += r.cost_usd or 0.0
        cumulative.append(running)
    assert list(by_name["cumulative cost"].y) == pytest.approx(cumulative)
    assert by_name["cumulative cost"].yaxis == "y2"
    assert "1 unpriced" in [t.name for t in fig.data if t.name.startswith("cumulative")][0]
    template = fig.layout.template.to_plotly_json()
    assert template["layout"]["font"]["family"].startswith("Helvetica")  # ours, not plotly's default
    assert fig.layout.title.text == ledger.title and ledger_figure(ledger, "t").layout.title.text == "t"


def test_the_ledger_is_data_and_its_figure_is_drawn_by_the_widgets():
    """A core data type does not know its plotly figure: text and HTML tables only (chapter 04)."""
    assert not hasattr(Ledger, "figure")
    ledger = _sample()
    assert "<table>" in ledger._repr_html_() and str(ledger).startswith(ledger.title)


def test_text_table_contains_every_call():
    ledger = _sample()
    text = str(ledger)
    lines = text.splitlines()
    for r in ledger.rows:
        assert any(line.split()[:3] == [r.thread, str(r.call), f"{r.total_input_tokens:,}"] for line in lines), r.call
    assert f"genai-prices {prices.package_version()}" in text
    assert "hit rate" in text and "1 of 5 calls unpriced" in text
    short = ledger.to_text(max_rows=2)
    assert "3 calls not shown" in short


def test_records_html_and_prices():
    ledger = _sample()
    recs = ledger.to_records()
    assert len(recs) == 5 and recs[1]["cache_read_tokens"] == 4480
    assert ledger.to_pandas()["total_input_tokens"].tolist() == [r.total_input_tokens for r in ledger.rows]
    html = ledger._repr_html_()
    assert "<table>" in html and html.count("<tr>") == 6
    assert ledger.prices == {"package": "genai-prices", "version": prices.package_version()}


def test_empty_ledger():
    ledger = Ledger([])
    assert ledger.totals().calls == 0 and ledger.totals().cost_usd is None and ledger.totals().hit_rate == 0
    assert "0 calls" in str(ledger)
    assert len(ledger.to_pandas()) == 0


# ---------------------------------------------------------------- the end-to-end cost test


@pytest.fixture(scope="module")
def pi_ledger() -> Ledger:
    if not SHARED.is_dir():
        pytest.skip(f"shared transcripts not found at {SHARED}")
    from ctxlab.io.formats import load

    return recorded_ledger(load(PI_FILE).conversation())


@pytest.mark.shared
def test_pi_recorded_cost_equals_ours_on_every_call(pi_ledger):
    """Priced through genai-prices, every pi call equals pi's own per-bucket cost to 1e-6 USD."""
    compared, worst = 0, 0.0
    for r in pi_ledger.rows:
        assert r.recorded_cost_usd is not None, r.message_id
        ours = {"input": r.cost_input, "cache_read": r.cost_cache_read, "cache_write": r.cost_cache_write,
                "output": r.cost_output, "total": r.cost_usd}
        for bucket, value in ours.items():
            assert value is not None, r.message_id
            diff = abs(value - r.recorded_cost_usd[bucket])
            assert diff <= 1e-6, (r.call, r.message_id, bucket, value, r.recorded_cost_usd[bucket])
            worst = max(worst, diff)
        compared += 1
    assert compared == len(pi_ledger.rows) == 484
    t = pi_ledger.totals()
    assert t.unpriced_calls == 0
    assert t.cost_usd == pytest.approx(t.recorded_cost_usd, abs=1e-6)
