"""The measured o200k_calibration entries agree with a fresh measurement on the shared transcripts (issue 13).

pi (``pi-mono/before-compaction.jsonl``, claude-opus-4-5, keep_all) and Claude Code fe5e1c67 (claude-sonnet-4,
last_turn_only) under ``../shared/data/transcripts``; skipped when they are not there.
"""

from __future__ import annotations

import pytest
from conftest import SHARED_TRANSCRIPTS

from ctxlab.io.formats import load
from ctxlab.lab.calibration import measure_calibration
from ctxlab.tables.model_facts import model_facts
from ctxlab.tables.model_rows_anthropic import CAL_CC, CAL_PI, CAL_POOLED

FILES = {"claude-opus-4-5": ("pi-mono/before-compaction.jsonl", CAL_PI, 454),
         "claude-sonnet-4": ("claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl", CAL_CC, 163)}


def test_measured_factors_are_what_the_table_says():
    """Thinking counted where the model keeps it ("**Keep all prior turns:** Claude Opus 4.5 and later Opus models,
    ..." — Thinking, mirror snapshot ff5b8ed 2026-08-22); the table quotes the sums."""
    missing = [f for f, _, _ in FILES.values() if not (SHARED_TRANSCRIPTS / f).is_file()]
    if missing:
        pytest.skip(f"shared transcripts not here: {', '.join(missing)}")
    added = counted = 0
    for family, (file, factor, pairs) in FILES.items():
        report = measure_calibration(load(SHARED_TRANSCRIPTS / file).conversation())
        assert report is not None and round(report.factor, 3) == factor and report.pairs == pairs, family
        fact = model_facts(family).o200k_calibration
        assert fact.value == factor and fact.source.status == "measured"
        assert f"{report.added_tokens:,} / {report.counted_tokens:,}" in fact.source.quote
        added, counted = added + report.added_tokens, counted + report.counted_tokens
    assert round(added / counted, 3) == CAL_POOLED
