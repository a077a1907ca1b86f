"""``replay --model``: one price path, the provider that follows the model, and the notes that say so (issue 13,
a fresh tester's pass).

* A Bedrock id is billed by Bedrock: "The inference profile ID is the base model ID with a prefix ..., for example
  us.anthropic.claude-sonnet-4-5-20250929-v1:0." (Claude on Amazon Bedrock,
  https://platform.claude.com/docs/en/build-with-claude/claude-on-amazon-bedrock-legacy, read 2026-12-02).
  genai-prices 0.2.3 lists AWS Bedrock's own rows (provider ``aws``; the regional Sonnet 4.5 at $3.30 / M input).
  The ledger priced it at Anthropic's $3.00 because the replay passes ``provider="anthropic"`` (the cache rules).
* ``--model`` of another provider without ``--provider`` is replayed under that provider's rules, one note says so.
* A retired model: "Claude Sonnet 4.5 is deprecated: it is still functional but no longer recommended, and retires
  on November 30, 2026." (https://platform.claude.com/docs/pt-BR/models/sonnet-4-5/overview.md, read 2026-12-02).
"""

from __future__ import annotations

import json

import pytest

from ctxlab.base.errors import CtxlabError
from ctxlab.cli import main as cli
from ctxlab.cli.models import check_model_option, follow_model, suggestions
from ctxlab.tables import prices
from ctxlab.tables.model_ids import canonical_model_id

SAMPLE = "data/sample_session.jsonl"  # an Anthropic transcript (claude-opus-4-5, provider "anthropic")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _by_rates(p: prices.ModelPrices, r: dict) -> float:
    """One row's cost from the price row's rates, by hand (a bucket with no price: the input price, as documented)."""
    t = p.rates(r["total_input_tokens"])
    read = t.cache_read_per_mtok if t.cache_read_per_mtok is not None else t.input_per_mtok
    write = t.cache_write_per_mtok if t.cache_write_per_mtok is not None else t.input_per_mtok
    write_1h = t.cache_write_1h_per_mtok if t.cache_write_1h_per_mtok is not None else write
    return (r["uncached_input_tokens"] * t.input_per_mtok + r["cache_read_tokens"] * read
            + (r["cache_write_tokens"] - r["cache_write_1h_tokens"]) * write
            + r["cache_write_1h_tokens"] * write_1h + r["output_tokens"] * t.output_per_mtok) / 1e6


@pytest.mark.parametrize("model", ["us.anthropic.claude-sonnet-4-5-20250929-v1:0", "bedrock/anthropic.claude-opus-4-5"])
def test_a_bedrock_replay_is_priced_with_the_bedrock_row_and_the_notes_agree(capsys, model):
    p = prices.price_for(model)
    assert p is not None and p.provider_id == "aws"
    assert prices.price_for(model, "anthropic") == p  # one path: the ledger's provider no longer changes the price
    code, out, err = run(capsys, "replay", SAMPLE, "--model", model, "--json")
    assert code == 0, err
    rep = json.loads(out)
    assert {r["price_source"] for r in rep["rows"]} == {p.source}
    assert rep["totals"]["cost_usd"] == pytest.approx(sum(_by_rates(p, r) for r in rep["rows"]), rel=1e-9)
    bare = prices.price_for(canonical_model_id(model))
    assert rep["totals"]["cost_usd"] > sum(_by_rates(bare, r) for r in rep["rows"])  # Bedrock's premium, not $3.00
    assert not any("Anthropic's list price" in r["note"] for r in rep["rows"])
    assert any(f"AWS Bedrock row {p.model_id}" in n for n in rep["model_notes"])
    code, out, _ = run(capsys, "replay", SAMPLE, "--model", model)
    assert code == 0 and "Anthropic's list price" not in out and f"AWS Bedrock row {p.model_id}" in out


def test_another_providers_model_is_replayed_under_its_rules_with_one_note(capsys):
    code, out, err = run(capsys, "replay", SAMPLE, "--model", "gpt-5.6", "--json")
    assert code == 0
    assert err == "note: --model gpt-5.6 is an OpenAI model: replayed under OpenAI's rules; pass --provider to choose\n"
    rows = json.loads(out)["rows"]
    assert {r["provider"] for r in rows} == {"openai"} and not any("lists no price" in r["note"] for r in rows)
    code, out, err = run(capsys, "replay", SAMPLE, "--model", "gpt-5.6", "--provider", "anthropic", "--json")
    assert code == 0 and err == ""  # --provider chooses: no note
    assert {r["provider"] for r in json.loads(out)["rows"]} == {"anthropic"}


def test_a_repeated_price_note_is_printed_once_not_on_every_row(capsys):
    code, out, _ = run(capsys, "replay", SAMPLE, "--model", "gpt-5.6", "--provider", "anthropic")
    assert code == 0
    note = "provider 'anthropic' lists no price for 'gpt-5.6'; priced at openai's list price"
    assert out.count(note) == 1 and f"note: {note}" in out
    code, out, _ = run(capsys, "replay", SAMPLE, "--model", "gpt-5.6", "--provider", "anthropic", "--json")
    rows = json.loads(out)["rows"]
    assert rows and all(note in r["note"] for r in rows)  # --json keeps each row as the ledger made it


def test_an_unknown_model_keeps_the_transcripts_provider(capsys):
    code, out, err = run(capsys, "replay", SAMPLE, "--model", "llama-3-local", "--json")
    assert code == 0 and err.count("note: ") == 1 and "unpriced" in err and "transcript's provider" in err
    assert {r["provider"] for r in json.loads(out)["rows"]} == {"anthropic"}


def test_follow_model_rule():
    replayable = ("anthropic", "openai")
    assert follow_model("gpt-5.6", None, ["anthropic"], replayable)[0] == "openai"
    assert follow_model("o3", None, ["anthropic"], replayable)[0] == "openai"  # the vendor guessed from the shape
    assert follow_model("claude-sonnet-4-6", None, ["anthropic"], replayable) == ("anthropic", None)
    assert follow_model("gpt-5.6", "anthropic", ["anthropic"], replayable) == ("anthropic", None)
    assert follow_model("llama-3-local", None, ["anthropic"], replayable) == (None, None)
    provider, note = follow_model("gemini-2.5-pro", None, ["anthropic"], replayable)
    assert provider is None and "does not simulate" in note and "Anthropic's rules" in note


def test_the_compare_path_follows_the_model_too(capsys):
    code, _, err = run(capsys, "replay", SAMPLE, "--compare", "--model", "gpt-5.6", "--conversation", "0")
    assert code == 0 and "is an OpenAI model: replayed under OpenAI's rules" in err


def test_an_empty_model_exits_2_in_one_line(capsys):
    code, out, err = run(capsys, "replay", SAMPLE, "--model", "")
    assert code == 2 and out == ""
    assert err == "ctxlab replay: error: --model needs a model id, e.g. claude-sonnet-4-6\n"


def test_did_you_mean_names_each_model_once_active_first():
    with pytest.raises(CtxlabError) as info:
        check_model_option("claude-sonet-4-6")
    named = str(info.value).split("did you mean ")[1].split("?")[0].split(" or ")
    assert named[0] == "claude-sonnet-4-6" and "claude-sonnet-4.6" not in named
    assert len({canonical_model_id(n.removesuffix(" (retired)")) for n in named}) == len(named)
    assert named[-1] == "claude-sonnet-4-5 (retired)" and sum("(retired)" in n for n in named) == 1


@pytest.mark.parametrize("model, meant", [("mygpt5", "gpt-5"), ("sonnet", "claude-sonnet-4-6")])
def test_a_name_of_another_shape_runs_with_a_hint(capsys, model, meant):
    assert meant in suggestions(model, 0.6, ("claude-sonnet-4-6", "gpt-5", "gpt-4o"))
    code, _, err = run(capsys, "replay", SAMPLE, "--model", model)
    assert code == 0 and err.count("note: ") == 1
    assert "unpriced" in err and "did you mean" in err and meant in err.split("did you mean")[1]


def test_check_says_the_model_is_retired(capsys):
    code, out, _ = run(capsys, "replay", SAMPLE, "--model", "claude-sonnet-4-5", "--check")
    assert code == 0
    assert ("check: OK, every context passed (note: the model is retired: the provider refuses these requests "
            "today)") in out
    code, out, _ = run(capsys, "replay", SAMPLE, "--model", "claude-sonnet-4-6", "--check")
    assert code == 0 and "check: OK, every context passed\n" in out


@pytest.mark.parametrize("model, meant", [("gpt4o", "gpt-4o"), ("gpt5", "gpt-5"), ("Claude-Sonnet-4.6", "claude-sonnet-4-6")])
def test_a_known_id_with_other_punctuation_is_a_typo(capsys, model, meant):
    # Issue 16's reader trial: `replay --model gpt4o` ran unpriced with exit 0; it is gpt-4o without its dash.
    code, out, err = run(capsys, "replay", SAMPLE, "--model", model)
    if code == 0:  # a name canonical_model_id reads as the known id runs as it
        assert "unpriced" not in err
        return
    assert code == 2 and out == "" and err.count("\n") == 1 and f"did you mean {meant}?" in err
