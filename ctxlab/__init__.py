"""ctxlab: a workbook and a small library for context-window management of LLM agents.

Load an agent transcript, build the context a model would see under a token budget, and read
what was kept, dropped and why::

    import ctxlab
    conv = ctxlab.load("session.jsonl").conversation()
    print(ctxlab.build_context(conv, ctxlab.BudgetPolicy(budget_tokens=20_000)))

Everything listed in ``__all__`` is the public API; other names are private. The chapters in
``notebooks/`` teach each piece (a docstring names its chapter). ``python -m ctxlab`` is the CLI.
"""

from __future__ import annotations

__version__ = "0.1.0"  # the one place the version is written (pyproject.toml reads it from here)

from ctxlab.context import BudgetPolicy, Context, UnitReport, build_context
from ctxlab.base.errors import BudgetError, CtxlabError, OrphanError, SessionError, TranscriptError, UnknownFormatError
from ctxlab.interactions import STUB_TEXT, Orphan, Unit, find_orphans, group_units
from ctxlab.messages import (
    Conversation,
    Entry,
    ImagePart,
    Item,
    Message,
    Part,
    SourceRef,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolSpec,
    Transcript,
    Usage,
    assistant,
    canonical_arguments,
    tool_result,
    user,
)
from ctxlab.tables.profiles import ModelProfile, profile_for, with_window
from ctxlab.tokens import (
    CharsPerTokenCounter,
    InferredHead,
    MessageMeter,
    TiktokenCounter,
    TokenCounter,
    counter_for,
    image_tokens,
    infer_static_head,
    tools_tokens,
)
from ctxlab.estimators import COUNTER_NAMES, EstimateRow, compare_estimates, get_counter

# ---- the prefix-cache ledger (chapter 04) ----
from ctxlab.cache import CacheOutcome, PrefixDiff, prefix_diff, request_from_sizes, to_provider_fields
from ctxlab.cache_anthropic import AnthropicCache
from ctxlab.cache_openai import OpenAICache
from ctxlab.cache_openai_breakpoints import OpenAIBreakpointCache
from ctxlab.lab.calibration import CalibrationReport, measure_calibration
from ctxlab.checks import Violation, check_context
from ctxlab.lab.fidelity import structural
from ctxlab.lab.fidelity_end_to_end import end_to_end
from ctxlab.ledger import Ledger, LedgerRow, recorded_ledger
from ctxlab.bodies import to_anthropic_body, to_openai_body, to_responses_body
from ctxlab.render import Block, RenderedRequest, render_blocks
from ctxlab.replay import ReplayResult, get_strategy, replay
from ctxlab.strategies import (BudgetedStrategy, Call, Decision, FullStrategy, RecordedStrategy, SlidingStrategy, Strategy,
                               model_calls)

# ---- pruning, paging, summaries, compaction (chapters 05-08) ----
from ctxlab.compaction import CompactionError, CompactionPolicy, CompactionStrategy, compaction_cut
from ctxlab.facts import Fact, FactReport, fact_retention
from ctxlab.io.checklist import load_facts
from ctxlab.loop import AgentLoop, ContextManager, Request, neutral_usage
from ctxlab.paging import READ_PAGE_TOOL, PagedStrategy, PageError, PagingPolicy, page_message
from ctxlab.io.page_store import PageStore, execute_read_page
from ctxlab.pipeline import PipelineStrategy
from ctxlab.pruning import ArrivalCap, PruneBudgetError, PrunedText, prune_message, prune_text
from ctxlab.pruning_strategy import PrunedStrategy
from ctxlab.summary import RuleBasedSummarizer, Summarizer, Summary
from ctxlab.summary_strategy import BudgetedSummaryStrategy, LLMSummarizer, summary_call
from ctxlab.lab.placement import placement_experiment

# ---- plumbing: sessions, transcript readers, prices ----
from ctxlab.io.formats import detect, load
from ctxlab.tables.prices import cost, price_for
from ctxlab.io.session import Session

__all__ = [
    "__version__",
    # messages (chapter 02)
    "Conversation", "Entry", "ImagePart", "Item", "Message", "Part", "SourceRef", "TextPart",
    "ThinkingPart", "ToolCallPart", "ToolSpec", "Transcript", "Usage",
    "assistant", "canonical_arguments", "tool_result", "user",
    # errors
    "BudgetError", "CtxlabError", "OrphanError", "SessionError", "TranscriptError", "UnknownFormatError",
    # profiles and tokens (chapter 01)
    "ModelProfile", "profile_for", "with_window",
    "COUNTER_NAMES", "CharsPerTokenCounter", "EstimateRow", "InferredHead", "MessageMeter",
    "TiktokenCounter", "TokenCounter", "compare_estimates", "counter_for", "get_counter",
    "image_tokens", "infer_static_head", "tools_tokens",
    # interactions and budgeted contexts (chapter 03)
    "STUB_TEXT", "Orphan", "Unit", "find_orphans", "group_units",
    "BudgetPolicy", "Context", "UnitReport", "build_context",
    # sessions and transcripts (chapter 02)
    "Session", "detect", "load",
    # rendering, caches, ledgers, replay (chapter 04)
    "Block", "PrefixDiff", "RenderedRequest", "prefix_diff", "render_blocks", "to_anthropic_body", "to_openai_body",
    "to_responses_body",
    "AnthropicCache", "CacheOutcome", "OpenAICache", "OpenAIBreakpointCache", "request_from_sizes",
    "to_provider_fields",
    "Ledger", "LedgerRow", "recorded_ledger", "cost", "price_for",
    "ReplayResult", "model_calls", "replay",
    "BudgetedStrategy", "Call", "Decision", "FullStrategy", "RecordedStrategy", "SlidingStrategy", "Strategy",
    "get_strategy", "Violation", "check_context", "CalibrationReport", "measure_calibration",
    "end_to_end", "structural",
    # pruning and paging (chapter 05)
    "ArrivalCap", "PruneBudgetError", "PrunedStrategy", "PrunedText", "prune_message", "prune_text",
    "READ_PAGE_TOOL", "PagedStrategy", "PageError", "PageStore", "PagingPolicy", "execute_read_page", "page_message",
    # summaries and facts (chapter 06)
    "BudgetedSummaryStrategy", "LLMSummarizer", "RuleBasedSummarizer", "Summarizer", "Summary",
    "placement_experiment", "summary_call", "Fact", "FactReport", "fact_retention", "load_facts",
    # compaction, the pipeline, the agent loop (chapters 07-08)
    "CompactionError", "CompactionPolicy", "CompactionStrategy", "compaction_cut", "PipelineStrategy",
    "AgentLoop", "ContextManager", "Request", "neutral_usage",
]
