"""Calibration of o200k counts against a provider's recorded usage."""

from __future__ import annotations

import pytest

from ctxlab.lab.calibration import measure_calibration
from ctxlab.messages import Conversation, Usage, assistant, tool_result, user
from ctxlab.tables.profiles import profile_for
from ctxlab.tokens import MessageMeter

GPT = profile_for("gpt-4o")


def session(scale: float):
    """Three calls; the provider's prompt grows by `scale` x our count of what was added."""
    meter = MessageMeter(GPT)
    u = user("read the config", "u")
    a1 = assistant("", "a1", calls=(("c1", "read_file", {"path": "a.yaml"}),))
    t1 = tool_result("c1", "port: 8443\n" * 50, "t1")
    a2 = assistant("", "a2", calls=(("c2", "read_file", {"path": "b.yaml"}),))
    t2 = tool_result("c2", "tls: true\n" * 80, "t2")
    a3 = assistant("done", "a3")
    p1 = 3000
    p2 = p1 + round(scale * (meter.message(a1) + meter.message(t1)))
    p3 = p2 + round(scale * (meter.message(a2) + meter.message(t2)))
    a1 = assistant("", "a1", calls=(("c1", "read_file", {"path": "a.yaml"}),), usage=Usage(cache_write_tokens=p1))
    a2 = assistant("", "a2", calls=(("c2", "read_file", {"path": "b.yaml"}),),
                   usage=Usage(cache_read_tokens=p1, cache_write_tokens=p2 - p1))
    a3 = assistant("done", "a3", usage=Usage(cache_read_tokens=p2, cache_write_tokens=p3 - p2))
    return Conversation("c", (u, a1, t1, a2, t2, a3), model="gpt-4o")


@pytest.mark.parametrize("scale", [1.0, 1.3])
def test_factor_recovers_the_planted_ratio(scale):
    report = measure_calibration(session(scale), GPT)
    assert report.pairs == 2
    assert report.factor == pytest.approx(scale, abs=0.01)


def test_a_cache_miss_pair_is_skipped_not_counted():
    c = session(1.2)
    msgs = list(c.items)
    msgs[5] = assistant("done", "a3", usage=Usage(cache_write_tokens=msgs[5].usage.total_input_tokens))
    report = measure_calibration(Conversation("c", tuple(msgs)), GPT)
    assert report.pairs == 1 and report.skipped == {"not a full cache hit": 1}


def test_no_usage_gives_none():
    assert measure_calibration(Conversation("c", (user("hi", "u"), assistant("yo", "a"))), GPT) is None


@pytest.mark.shared
def test_shared_transcripts_match_the_profiles_factors(shared_transcripts):
    from ctxlab.io.formats import load
    pi = load(shared_transcripts / "pi-mono" / "before-compaction.jsonl").conversation()
    report = measure_calibration(pi)  # counted with raw o200k, whatever the profile
    assert report.pairs > 100
    assert report.factor == pytest.approx(profile_for("claude-opus-4-5").calibration, abs=0.002)
