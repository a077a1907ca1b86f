"""``replay --model NAME``: a likely typo stops with a did-you-mean (exit 2); a plausible unknown model runs,
unpriced, with one line; a routed id (Bedrock, Vertex AI) is priced and says from where (issue 13).

Bedrock ids: "The inference profile ID is the base model ID with a prefix ..., for example
us.anthropic.claude-sonnet-4-5-20250929-v1:0." (Claude on Amazon Bedrock,
https://platform.claude.com/docs/en/build-with-claude/claude-on-amazon-bedrock-legacy, read 2026-12-02).
Vertex AI ids: "| Claude Sonnet 4.5 | claude-sonnet-4-5@20250929 |" (Claude on Vertex AI,
https://platform.claude.com/docs/en/build-with-claude/claude-on-vertex-ai, read 2026-12-02).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxlab.base.errors import CtxlabError
from ctxlab.cli import main as cli
from ctxlab.cli.models import check_model_option, price_note
from ctxlab.io.session import Session
from ctxlab.messages import Message, TextPart, Usage


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def session(tmp_path: Path) -> str:
    path = tmp_path / "s.jsonl"
    s = Session.create(path, system=("Be brief.",), model="claude-sonnet-4-6", provider="anthropic", id="s")
    usage = Usage(uncached_input_tokens=30, cache_read_tokens=0, cache_write_tokens=0, output_tokens=4)
    s.append(Message("user", (TextPart("hello"),), "u0", timestamp="2026-12-01T10:00:00Z"))
    s.append(Message("assistant", (TextPart("hi"),), "a0", timestamp="2026-12-01T10:00:03Z",
                     model="claude-sonnet-4-6", provider="anthropic", usage=usage))
    return str(path)


def test_a_mistyped_model_exits_2_with_a_did_you_mean(session, capsys):
    code, out, err = run(capsys, "replay", session, "--model", "claude-sonet-4-5")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    # since issue 13's tester pass: active models first, the retired one it most resembles last, marked
    assert "claude-sonet-4-5" in err and "did you mean claude-" in err and "claude-sonnet-4-5 (retired)?" in err


@pytest.mark.parametrize("typo, meant", [("gpt-4o-mni", "gpt-4o-mini"), ("gemini-2.5-pr", "gemini-2.5-pro"),
                                         ("claude-opsu-4-5", "claude-opus-4-5")])
def test_typos_of_each_provider(typo, meant):
    with pytest.raises(CtxlabError, match=f"did you mean {meant}"):
        check_model_option(typo)


def test_the_typo_check_covers_compare(session, capsys):
    code, _, err = run(capsys, "replay", session, "--compare", "--model", "claude-sonet-4-5")
    assert code == 2 and "did you mean" in err


@pytest.mark.parametrize("model", ["llama-3-local", "qwen2.5-coder:7b", "my-azure-deployment"])
def test_a_plausible_unknown_model_runs_unpriced_with_one_line(session, capsys, model):
    code, out, err = run(capsys, "replay", session, "--model", model)
    assert code == 0, err
    assert err.count("note: ") == 1 and "unpriced" in err and model in err
    assert "cost unpriced" in out


def test_known_models_say_nothing(session, capsys):
    for model in ("claude-sonnet-4-6", "claude-sonnet-4-6-20260101", "gpt-4o", "anthropic/claude-opus-4-5"):
        assert check_model_option(model) is None, model
    code, _, err = run(capsys, "replay", session, "--model", "claude-opus-4-5")  # the transcript's provider
    assert code == 0 and err == ""
    code, _, err = run(capsys, "replay", session, "--model", "gpt-4o")  # another provider's: one line says so
    assert code == 0 and err == "note: --model gpt-4o is an OpenAI model: replayed under OpenAI's rules; " \
        "pass --provider to choose\n"


def test_a_bedrock_id_is_priced_at_bedrocks_price_and_says_so(session, capsys):
    """genai-prices lists AWS Bedrock's own rows: the regional Sonnet 4.5 at $3.30 / M input."""
    model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    code, out, err = run(capsys, "replay", session, "--model", model, "--json")
    assert code == 0, err
    rep = json.loads(out)
    assert rep["totals"]["cost_usd"] is not None
    assert any("AWS Bedrock row regional.anthropic.claude-sonnet-4-5-20250929-v1:0" in n for n in rep["model_notes"])
    assert any("retired on 2026-11-30 on Anthropic's own platforms" in n for n in rep["model_notes"])


def test_a_vertex_id_without_its_provider_is_anthropics_list_price(session, capsys):
    note = price_note("claude-sonnet-4-5@20250929")
    assert note and "Anthropic's list price" in note and "Bedrock and Vertex AI prices may differ" in note
    code, out, err = run(capsys, "replay", session, "--model", "claude-sonnet-4-5@20250929")
    assert code == 0, err
    assert f"note: {note}" in out


def test_a_priced_model_the_facts_table_lacks_says_its_rules_are_a_fallback():
    """A newer Claude the price table lists but ctxlab's dated table does not (a fresh tester: claude-sonnet-5-5 got
    the old 346-token tool prompt and the pre-Opus-4.7 factor in silence): one line says so; a model in the table
    says nothing."""
    note = check_model_option("claude-sonnet-5-5")
    assert note and "not in ctxlab's model table" in note and "fallback rules" in note and "346" in note
    assert check_model_option("claude-sonnet-4-6") is None and check_model_option("gpt-5.6") is None
