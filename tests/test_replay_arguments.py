"""replay's arguments: a wrong one says in one line what to pass, instead of an AttributeError deep in the loop.

And ``keep_requests=False`` (what the CLI passes): the same ledger, no rendered request kept per call.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import ctxlab
from ctxlab.base.errors import CtxlabError
from ctxlab.fast import FAST
from ctxlab.replay import PROVIDERS, replay
from ctxlab.strategies import BudgetedStrategy

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample_session.jsonl"


@pytest.fixture(scope="module")
def transcript():
    return ctxlab.load(SAMPLE)


def one_line(err: pytest.ExceptionInfo) -> str:
    text = str(err.value)
    assert "\n" not in text, text
    return text


def test_load_returns_a_transcript_and_replay_says_which_method_gives_a_conversation(transcript):
    assert isinstance(transcript, ctxlab.Transcript) and not isinstance(transcript, ctxlab.Conversation)
    with pytest.raises(CtxlabError) as err:
        replay(transcript)
    text = one_line(err)
    assert "Transcript" in text and "transcript.conversation()" in text and "conversation(N)" in text
    assert replay(transcript.conversation()).ledger.rows  # what the message says to pass works


@pytest.mark.parametrize("path", [str(SAMPLE), SAMPLE, "some/file.jsonl"])
def test_a_path_says_load_it_first(path):
    with pytest.raises(CtxlabError) as err:
        replay(path)
    text = one_line(err)
    assert "not a path" in text and "load(path).conversation()" in text


@pytest.mark.parametrize("messages", [[], [ctxlab.user("hi", "u1")], (ctxlab.user("hi", "u1"),)])
def test_a_list_of_messages_says_how_to_make_a_conversation(messages):
    with pytest.raises(CtxlabError) as err:
        replay(messages)
    text = one_line(err)
    assert type(messages).__name__ in text and "Conversation(id, tuple(messages))" in text


def test_another_object_is_named(transcript):
    with pytest.raises(CtxlabError, match="replay takes a Conversation .*got dict"):
        replay({"messages": []})


@pytest.mark.parametrize("strategy", [None, 3, object()])
def test_a_strategy_that_is_neither_a_name_nor_a_strategy(transcript, strategy):
    with pytest.raises(CtxlabError) as err:
        replay(transcript.conversation(), strategy)
    text = one_line(err)
    assert "strategy must be a strategy name" in text and "budgeted" in text and "get_strategy" in text


def test_a_strategy_class_says_make_one(transcript):
    with pytest.raises(CtxlabError, match=r"not its class: pass BudgetedStrategy\(\)"):
        replay(transcript.conversation(), BudgetedStrategy)
    assert replay(transcript.conversation(), BudgetedStrategy()).ledger.rows


def test_an_unknown_strategy_name_lists_the_names(transcript):
    with pytest.raises(ValueError, match="choose one of full, sliding, budgeted"):
        replay(transcript.conversation(), "greedy")


@pytest.mark.parametrize("speedup", ["fast", "FAST", True, FAST.renderer])
def test_a_speedup_that_is_not_a_speedup_says_pass_fast(transcript, speedup):
    with pytest.raises(CtxlabError) as err:
        replay(transcript.conversation(), speedup=speedup)
    text = one_line(err)
    assert "ctxlab.fast.FAST" in text and "from ctxlab.fast import FAST" in text


@pytest.mark.parametrize("provider", ["azure", "Anthropic", "", 1])
def test_an_unknown_provider_names_the_known_ones(transcript, provider):
    with pytest.raises(CtxlabError) as err:
        replay(transcript.conversation(), provider=provider)
    text = one_line(err)
    assert "unknown provider" in text and all(p in text for p in PROVIDERS)


def test_an_unknown_provider_through_the_chapters_replay_cache(transcript):
    from ctxlab.lab.replays import ReplayCache

    with pytest.raises(CtxlabError, match="unknown provider 'azure'.*anthropic or openai"):
        ReplayCache().replay(transcript.conversation(), "budgeted", provider="azure")


def test_the_known_providers_replay(transcript):
    for provider in (None, *PROVIDERS):
        assert replay(transcript.conversation(), provider=provider).ledger.rows


def test_the_cli_refuses_an_unknown_provider(capsys):
    from ctxlab.cli.main import main

    with pytest.raises(SystemExit) as exit_:
        main(["replay", str(SAMPLE), "--provider", "azure"])
    assert exit_.value.code == 2 and "anthropic" in capsys.readouterr().err


@pytest.mark.parametrize("speedup", [None, FAST])
def test_keep_requests_false_gives_the_same_ledger_without_requests(transcript, speedup):
    conv = transcript.conversation()
    kept = replay(conv, "budgeted", speedup=speedup, check=True)
    lean = replay(conv, "budgeted", speedup=speedup, check=True, keep_requests=False)
    assert lean.ledger.rows == kept.ledger.rows and lean.notes == kept.notes
    assert all(r.request is None for r in lean.records) and all(r.request is not None for r in kept.records)
    assert [(r.call, r.notes, r.outcome, r.violations) for r in lean.records] == \
        [(r.call, r.notes, r.outcome, r.violations) for r in kept.records]
