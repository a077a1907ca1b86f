"""The public API after the restructuring (issue 15): the same names, apart from the two renames, and every
public name's docstring names the chapter that teaches it (d2l: "Defined in :numref:...")."""

from __future__ import annotations

import inspect
import re
import warnings

import pytest

import ctxlab

# ctxlab.__all__ as it stood before the restructuring (commit 07d695b), less nothing: moving a name between
# modules must not drop it from the front door.
BEFORE = {
    'AnthropicCache', 'ArrivalCap', 'Block', 'BudgetError', 'BudgetPolicy', 'BudgetedStrategy',
    'BudgetedSummaryStrategy', 'COUNTER_NAMES', 'CacheOutcome', 'CalibrationReport', 'Call', 'CharsPerTokenCounter',
    'CompactionError', 'CompactionPolicy', 'CompactionStrategy', 'Context', 'ContextManager', 'Conversation',
    'CtxlabError', 'Decision', 'Entry', 'EstimateRow', 'Fact', 'FactReport', 'FullStrategy', 'ImagePart',
    'InferredHead', 'Item', 'LLMSummarizer', 'Ledger', 'LedgerRow', 'Message', 'MessageMeter', 'ModelProfile',
    'OpenAICache', 'Orphan', 'OrphanError', 'PageError', 'PageStore', 'PagedStrategy', 'PagingPolicy', 'Part',
    'PipelineStrategy', 'PrefixDiff', 'PruneBudgetError', 'PrunedStrategy', 'PrunedText', 'READ_PAGE_TOOL',
    'RecordedStrategy', 'RenderedRequest', 'ReplayResult', 'Request', 'RuleBasedSummarizer', 'STUB_TEXT', 'Session',
    'SessionError', 'SlidingStrategy', 'SourceRef', 'Strategy', 'Summarizer', 'Summary', 'TextPart', 'ThinkingPart',
    'TiktokenCounter', 'TokenCounter', 'ToolCallPart', 'ToolSpec', 'Transcript', 'TranscriptError', 'Unit',
    'UnitReport', 'UnknownFormatError', 'Usage', 'Violation', '__version__', 'assistant', 'build_context',
    'canonical_arguments', 'check_context', 'compare_estimates', 'cost', 'counter_for', 'detect', 'end_to_end',
    'execute_read_page', 'fact_retention', 'find_orphans', 'get_counter', 'get_strategy', 'group_units',
    'image_tokens', 'infer_static_head', 'load', 'load_facts', 'measure_calibration', 'model_calls', 'neutral_usage',
    'page_message', 'placement_experiment', 'prefix_diff', 'price_for', 'profile_for', 'prune_message', 'prune_text',
    'recorded_ledger', 'render_blocks', 'replay', 'request_from_sizes', 'structural', 'summary_call',
    'to_anthropic_body', 'to_openai_body', 'to_provider_fields', 'tool_result', 'tools_tokens', 'user', 'with_window',
}
# the rename of ContextManager (the old name stays, deprecated, for one release); the Responses API body (issue 12);
# OpenAI's breakpoint cache simulator for GPT-5.6 on (issue 13)
ADDED = {"AgentLoop", "OpenAIBreakpointCache", "to_responses_body", "compaction_cut"}

CHAPTER = re.compile(r"[Cc]hapters? \d\d")


def _documented(obj) -> bool:
    return inspect.isclass(obj) or inspect.isfunction(obj) or inspect.ismethod(obj)


def test_the_public_names_are_kept():
    assert set(ctxlab.__all__) == BEFORE | ADDED


def test_every_public_name_resolves():
    missing = [n for n in ctxlab.__all__ if not hasattr(ctxlab, n)]
    assert not missing


# Values (COUNTER_NAMES, READ_PAGE_TOOL, STUB_TEXT, the Item and Part unions, __version__) carry no docstring
# of their own: their modules' docstrings name the chapter (tests/test_layout.py checks every book module's).
DOCUMENTED = sorted(n for n in ctxlab.__all__ if n != "ContextManager" and _documented(getattr(ctxlab, n)))


def test_most_public_names_are_documented_objects():
    assert len(DOCUMENTED) >= len(ctxlab.__all__) - 7


@pytest.mark.parametrize("name", DOCUMENTED)
def test_every_public_name_names_its_chapter(name):
    obj = getattr(ctxlab, name)
    doc = inspect.getdoc(obj) or ""
    assert CHAPTER.search(doc), f"ctxlab.{name}'s docstring names no chapter: {doc[:80]!r}"


def test_context_manager_is_a_deprecated_alias_of_agent_loop(tmp_path):
    session = ctxlab.Session.create(tmp_path / "s.jsonl")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loop = ctxlab.ContextManager(session, model="claude-sonnet-4-5")
    assert isinstance(loop, ctxlab.AgentLoop)
    assert any(issubclass(w.category, DeprecationWarning) and "AgentLoop" in str(w.message) for w in caught)
