"""The wire oracle's size rules judged by the providers' documented per-model facts (ctxlab.tables.model_facts).

Each test quotes the sentence behind its numbers (read 2026-12-02; the Anthropic pages as captured in the
gpambrozio/ClaudeDocs snapshot ff5b8ed, 2026-08-22) and checks an old and a new model where the rule changed.
A model the table does not know, or a value it leaves None, skips the rule and the verdict says so. Issue 13.
"""

from __future__ import annotations

import ast
from pathlib import Path

from ctxlab.wire import check_body
from ctxlab.wire.model_limits import Verdict, model_limits

A, C, R = "anthropic", "openai-chat", "openai-responses"
U = {"role": "user", "content": "Fix the flaky test."}
REPO = Path(__file__).resolve().parents[1]


def ant(model: str, max_tokens: int = 4096) -> dict:
    return {"model": model, "max_tokens": max_tokens, "messages": [U]}


def rules(kind: str, body: dict, **limits) -> list[tuple[str, str]]:
    return [(v.rule, v.path) for v in check_body(kind, body, **limits)]


# --------------------------------------------------------------------------- max_tokens <= max output

def test_anthropic_max_tokens_within_the_models_documented_maximum_output():
    """Building with extended thinking (https://platform.claude.com/docs/en/build-with-claude/thinking): "Claude
    Fable 5, ..., Claude Opus 4.6, and Claude Sonnet 4.6 support up to 128k output tokens per request. Claude
    Haiku 4.5, Claude Sonnet 4.5, and Claude Opus 4.5 support up to 64k." New model 128,000, older 64,000."""
    assert rules(A, ant("claude-sonnet-4-6", 128_000)) == []
    assert rules(A, ant("claude-sonnet-4-6", 128_001)) == [("output_over_max", "max_tokens")]
    assert rules(A, ant("claude-sonnet-4-5-20250929", 64_000)) == []
    assert rules(A, ant("claude-sonnet-4-5-20250929", 64_001)) == [("output_over_max", "max_tokens")]
    (v,) = check_body(A, ant("claude-haiku-4-5", 100_000))
    assert v.detail == "max_tokens 100,000 > the 64,000 output tokens claude-haiku-4-5 supports"
    assert "support up to 64k" in v.source.quote and v.source.read == "2026-12-02"


def test_an_output_maximum_the_table_leaves_unknown_is_skipped_and_said():
    """Sonnet 4's maximum output was not read (model_facts: 'assumed', value None): no verdict, a skipped line."""
    verdict = check_body(A, ant("claude-sonnet-4-20250514", 500_000))
    assert isinstance(verdict, Verdict) and verdict == []
    assert "output_over_max skipped: the maximum output of 'claude-sonnet-4-20250514' is not known " \
           "(ctxlab.tables.model_facts)" in verdict.skipped


def test_openai_output_caps_within_the_models_maximum_output():
    """openai-python completion_create_params.py / response_create_params.py @ e43b422: "An upper bound for the
    number of tokens that can be generated for a completion, including visible output tokens and [reasoning
    tokens]"; the ceilings in model_facts are third-party ('assumed'): gpt-4o "16,384 (16K) tokens", gpt-4.1
    "Maximum output tokens: 32,768". GPT-5's is not known: skipped."""
    chat = {"model": "gpt-4o", "messages": [U]}
    assert rules(C, {**chat, "max_completion_tokens": 16_384}) == []
    assert rules(C, {**chat, "max_tokens": 16_385}) == [("output_over_max", "max_tokens")]
    resp = {"model": "gpt-4.1", "input": "Fix the flaky test."}
    assert rules(R, {**resp, "max_output_tokens": 32_769}) == [("output_over_max", "max_output_tokens")]
    verdict = check_body(R, {**resp, "model": "gpt-5", "max_output_tokens": 500_000})
    assert verdict == [] and any(s.startswith("output_over_max skipped: the maximum output of 'gpt-5'")
                                 for s in verdict.skipped)


# --------------------------------------------------------------------------- input <= max_input_tokens (OpenAI)

def test_gpt_5_input_limit_is_272_000_of_a_400_000_window():
    """The API's 400 quoted on OpenAI's forum (community.openai.com "Huge GPT-5 documentation gap ..."): "Input
    tokens exceed the configured limit of 272,000 tokens. Your messages resulted in 297,006 tokens." and "The docs
    say the context window for GPT-5 is 400k tokens" (model_facts status 'assumed': OpenAI's model page not read)."""
    body = {"model": "gpt-5", "input": "Fix the flaky test."}
    assert model_limits("gpt-5").window == 400_000 and model_limits("gpt-5").max_input == 272_000
    assert rules(R, body, input_tokens=272_000) == []
    assert rules(R, body, input_tokens=297_006) == [("input_over_max", "input")]
    assert rules(R, body, input_tokens=400_001) == [("input_over_max", "input"), ("input_over_window", "input")]
    # the caller's own limit replaces the model's
    assert rules(R, body, input_tokens=297_006, max_input_tokens=300_000) == []


def test_a_model_without_a_separate_input_limit_gets_the_window_rule_once():
    """gpt-4o: "| GPT-4o (OpenAI) | 128K tokens | 16,384 (16K) tokens |" (third party): max input = the window,
    so an input over it is one input_over_window, not also input_over_max."""
    body = {"model": "gpt-4o", "messages": [U]}
    assert rules(C, body, input_tokens=128_000) == []
    assert rules(C, body, input_tokens=128_001) == [("input_over_window", "input")]


# --------------------------------------------------------------------------- the window, from the documented facts

def test_anthropic_window_per_model():
    """Context windows (https://platform.claude.com/docs/en/build-with-claude/context-windows): "Claude Opus 5,
    ..., Claude Sonnet 5, and Claude Sonnet 4.6 have a 1M-token context window ..." and "Other Claude models,
    including Claude Sonnet 4.5, have a 200k-token context window." With "If the input alone already exceeds the
    model's context window, the API returns a 400 `invalid_request_error` ("prompt is too long") on every model.\""""
    assert rules(A, ant("claude-sonnet-4-6"), input_tokens=1_000_000) == []
    assert rules(A, ant("claude-sonnet-4-6"), input_tokens=1_000_001) == [("input_over_window", "messages")]
    assert rules(A, ant("claude-sonnet-4-5"), input_tokens=200_001) == [("input_over_window", "messages")]
    # a Bedrock cross-region id reads as the bare model
    assert rules(A, ant("us.anthropic.claude-sonnet-4-6"), input_tokens=500_000) == []


# --------------------------------------------------------------------------- input + max_tokens <= window (Anthropic)

def test_input_plus_max_tokens_over_the_window_is_refused_before_claude_4_5_only():
    """Context windows: "On Claude 4.5 models and newer, if input tokens plus `max_tokens` exceeds the context
    window size, the API accepts the request." Thinking: "If generation then reaches the context window limit, it
    stops with `stop_reason: "model_context_window_exceeded"` instead of returning an error. On earlier models, the
    API returns a validation error instead." Old: Sonnet 4, Opus 4.1 (200k); new: Sonnet 4.5, Haiku 4.5 (200k)."""
    for old in ("claude-sonnet-4-20250514", "claude-opus-4-1-20250805", "us.anthropic.claude-sonnet-4-20250514-v1:0"):
        assert rules(A, ant(old, 60_000), input_tokens=150_000) == [("output_over_window", "max_tokens")], old
        assert rules(A, ant(old, 50_000), input_tokens=150_000) == [], old
    for new in ("claude-sonnet-4-5-20250929", "claude-haiku-4-5", "claude-opus-4-5"):
        assert rules(A, ant(new, 60_000), input_tokens=150_000) == [], new


def test_a_model_id_without_a_version_skips_the_rule_and_says_so():
    verdict = check_body(A, ant("claude-sonnet-4-5"), input_tokens=10, context_window=200_000)
    assert verdict == [] and not any("output_over_window" in s for s in verdict.skipped)
    verdict = check_body(A, ant("claude-latest"), input_tokens=10, context_window=200_000)
    assert verdict == [] and "output_over_window skipped: no Claude version in the model id 'claude-latest'" \
        in verdict.skipped


# --------------------------------------------------------------------------- unknown models, unknown values

def test_an_unknown_model_skips_the_size_rules_and_the_verdict_says_which():
    verdict = check_body(A, ant("claude-3-7-sonnet-20250219", 500_000), input_tokens=900_000)
    assert verdict == []
    reason = "model 'claude-3-7-sonnet-20250219' is not in ctxlab.tables.model_facts"
    assert verdict.skipped == (f"output_over_max skipped: {reason}", f"input_over_window skipped: {reason}")
    chat = check_body(C, {"model": "my-local-model", "messages": [U], "max_tokens": 10}, input_tokens=10)
    assert chat == [] and {s.split(" skipped")[0] for s in chat.skipped} == {
        "output_over_max", "input_over_max", "input_over_window"}
    # the caller's window still applies to a model the table does not know
    assert rules(C, {"model": "my-local-model", "messages": [U]}, input_tokens=11, context_window=10) == [
        ("input_over_window", "input")]


def test_a_family_whose_values_are_unknown_is_skipped_too():
    """gpt-5.6: no first-party window or output limit was found (model_facts values None)."""
    verdict = check_body(R, {"model": "gpt-5.6", "input": "Hi", "max_output_tokens": 10}, input_tokens=10)
    assert verdict == [] and any(s.startswith("input_over_window skipped: the context window of 'gpt-5.6'")
                                 for s in verdict.skipped)


def test_no_input_count_is_said_too():
    verdict = check_body(C, {"model": "gpt-4o", "messages": [U]})
    assert verdict == [] and any("no input_tokens given" in s for s in verdict.skipped)


def test_the_oracle_reads_no_renderer_table():
    """The oracle must be independent of the renderer: no ctxlab.wire module imports ctxlab.tables.profiles."""
    for path in sorted((REPO / "ctxlab" / "wire").glob("*.py")):
        mods = {n.module for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                if isinstance(n, ast.ImportFrom) and n.module}
        assert "ctxlab.tables.profiles" not in mods, path.name
