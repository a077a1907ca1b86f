"""The Anthropic (Claude) entries of the model-facts data: the family groups, the quotes and :data:`ANTHROPIC_FACTS`.

Every entry is made by :func:`ctxlab.tables.model_rows_common.entry` and quotes a page of
:data:`ctxlab.tables.model_rows_common.PAGES`, most of them snapshots of the ``gpambrozio/ClaudeDocs`` mirror.
:mod:`ctxlab.tables.model_rows` joins these with :data:`ctxlab.tables.model_rows_others.OTHER_FACTS`.
"""

from __future__ import annotations

from ctxlab.tables.model_rows_common import entry

# Sentences of docs/provider_facts.md that stand in as the "quote" where nothing was found.
NF_CLAUDE_NEW = ("Cache minimums, tool-use prompt sizes and lifecycle rows for Claude Opus 5.5 were not found; "
                 "ctxlab assumes Claude Opus 5's.")
NF_OLD_CLAUDE_OUTPUT = "Maximum output for Claude Opus 4.1 and Claude Sonnet 4 was not read (legacy-model table)."

OPUS_NEW = ("claude-opus-4-6", "claude-opus-4-7", "claude-opus-4-8", "claude-opus-5")
M1 = OPUS_NEW + ("claude-sonnet-4-6", "claude-sonnet-5")  # the 1M-window models of the 2026-08-22 page
K200 = ("claude-opus-4-1", "claude-opus-4-5", "claude-sonnet-4", "claude-sonnet-4-5", "claude-haiku-4-5")
CLAUDE = M1 + K200 + ("claude-opus-5-5",)
CLAUDE_824 = M1 + K200  # the models the 2026-08-22 pricing table covers
PRE47 = ("claude-opus-4-1", "claude-opus-4-5", "claude-opus-4-6", "claude-sonnet-4", "claude-sonnet-4-5",
         "claude-sonnet-4-6", "claude-haiku-4-5")

Q_1M = ("Claude Opus 5, Claude Opus 4.8, Claude Opus 4.7, Claude Opus 4.6, Claude Sonnet 5, and Claude Sonnet 4.6 "
        "have a 1M-token context window on the Claude API, Amazon Bedrock, Google Cloud, and Microsoft Foundry.")
Q_200K = "Other Claude models, including Claude Sonnet 4.5, have a 200k-token context window."
Q_TOO_LONG = ("If the input alone already exceeds the model's context window, the API returns a 400 "
              "`invalid_request_error` (\"prompt is too long\") on every model.")
Q_OUT = ("Claude Fable 5, Claude Mythos 5, Claude Mythos Preview, Claude Opus 5, Claude Opus 4.8, Claude Opus 4.7, "
         "Claude Sonnet 5, Claude Opus 4.6, and Claude Sonnet 4.6 support up to 128k output tokens per request. "
         "Claude Haiku 4.5, Claude Sonnet 4.5, and Claude Opus 4.5 support up to 64k.")
Q_KEEP_ALL = ("**Keep all prior turns:** Claude Opus 4.5 and later Opus models, Claude Sonnet 4.6 and later Sonnet "
              "models, Claude Fable 5, Claude Mythos 5, and Claude Mythos Preview.")
Q_LAST_TURN = ("**Keep the last turn only:** earlier Opus and Sonnet models, and all Haiku models through Claude "
               "Haiku 4.5. When you pass older thinking blocks back, the API strips them automatically. You don't "
               "need to remove them yourself.")
Q_OLD_STRIP = ("When non-tool results are passed in requests while extended thinking is enabled, all "
               "previously-cached thinking blocks are stripped from context")
Q_W5 = "| 5-minute cache write | 1.25x base input price | Cache valid for 5 minutes |"
Q_W1H = "| 1-hour cache write | 2x base input price | Cache valid for 1 hour |"
Q_READ = "| Cache read (hit) | 0.1x base input price | Same duration as the preceding write |"
Q_TTL = ("By default, the cache has a 5-minute lifetime. The cache is refreshed for no additional cost each time "
         "the cached content is used.")
Q_TTL_1H = ("By default, automatic caching uses a 5-minute TTL. You can specify a 1-hour TTL at 2x the base input "
            "token price:")
Q_BREAK = ("**Cache writes happen only at your breakpoint.** Marking a block with `cache_control` writes exactly one "
           "cache entry: a hash of the prefix ending at that block.")
Q_MIN_1024 = ("- 1,024 tokens for Claude Opus 4.8, Claude Sonnet 5, Claude Sonnet 4.6, Claude Sonnet 4.5, Claude Opus "
              "4.1 ([retired, except on Bedrock and Google Cloud](about-claude/model-deprecations.md)), Claude Opus 4 "
              "([retired, except on Google Cloud](about-claude/model-deprecations.md)), and Claude Sonnet 4 ([retired, "
              "except on Bedrock and Google Cloud](about-claude/model-deprecations.md))")
Q_NEW47 = ("This new tokenizer may use roughly 1x to 1.35x as many tokens when processing text compared to previous "
           "models (up to ~35% more, varying by content), and [`/v1/messages/count_tokens`](build-with-claude/"
           "token-counting.md) will return a different number of tokens for Claude Opus 4.7 than it did for Claude "
           "Opus 4.6.")
Q_LATER_OPUS = "Claude Opus 4.7 introduced a new tokenizer, which later Opus models, including Claude Opus 5, also use."
RETIRED_BG = "([retired, except on Bedrock and Google Cloud](about-claude/model-deprecations.md))"
D_TOKENIZER = ("Disagreement: the token-counting page says this tokenizer (there: Fable 5 / Mythos 5) produces 'roughly "
               "30 percent more tokens than models before Claude Opus 4.7'; the Opus 4.7 page says 'roughly 1x to "
               "1.35x'. The range kept is 1x-1.35x; ctxlab's assumed factor takes its 1.3 from the 30 percent.")
D_TOOLS = ("Disagreement over time: snapshots to 2026-05-28 list 346 / 313 tokens for this model; the table was "
           "revised on 2026-05-29 with no model change. The newest page is used from 2026-05-29.")
# o200k calibration (Claude tokens per o200k token). Measured by ctxlab.lab.calibration.measure_calibration on the
# shared transcripts (2026-12-02), thinking counted where the profile sends it back (issue 13). Reproduce:
#   python -c "from ctxlab.io.formats import load; from ctxlab.lab.calibration import measure_calibration as m;
#   print(m(load(PATH).conversation()))"
CAL_PI = 1.241  # pi before-compaction.jsonl, claude-opus-4-5 (keep_all): 461,878 / 372,146 over 454 pairs
CAL_CC = 1.336  # Claude Code fe5e1c67, claude-sonnet-4 (last_turn_only): 100,116 / 74,955 over 163 pairs
CAL_POOLED = 1.257  # both files: 561,994 / 447,101 (the pre-Opus-4.7 generation, for models not measured)
NEW_TOKENIZER_POINT = 1.3  # Anthropic's stated ratio for the Opus 4.7 tokenizer generation: see N_CAL_NEW
CAL_NEW_TOKENIZER = round(CAL_POOLED * NEW_TOKENIZER_POINT, 3)  # 1.634: not measured
NEW_TOKENIZER = ("claude-opus-4-7", "claude-opus-4-8", "claude-opus-5", "claude-opus-5-5", "claude-sonnet-5")
Q_CAL_PI = "pi before-compaction.jsonl (claude-opus-4-5): 461,878 / 372,146 = 1.241 over 454 call pairs"
Q_CAL_CC = "Claude Code fe5e1c67 (claude-sonnet-4): 100,116 / 74,955 = 1.336 over 163 call pairs"
Q_CAL_ALL = "both files together: 561,994 / 447,101 = 1.257"
Q_CAL_NEW = "1.257 (pooled, pre-Opus-4.7 tokenizer) x 1.3 (Anthropic's stated ratio, not measured) = 1.634"
N_NEW_CAL = ("Re-measured for issue 13 with thinking counted where the model sends it back (keep_all: every turn's; "
             "last_turn_only: the current tool loop's) and, on keep_all models, pairs across a user message.")
N_CAL_NEW = ("Not measured: no transcript of this tokenizer generation. The provider's range, applied to the pooled "
             "pre-4.7 factor: Anthropic says 'roughly 1x to 1.35x' (What's new in Claude Opus 4.7) -> 1.257..1.697. "
             "Point 1.3: Anthropic's Token counting page gives 'roughly 30 percent more tokens than models before "
             "Claude Opus 4.7' for the same tokenizer and the Sonnet 5 page 'approximately 30% more tokens than on "
             "Claude Sonnet 4.6'; 1.3 is inside the range and within 4% of its top. Exact counts: POST "
             "/v1/messages/count_tokens with the model.")

ANTHROPIC_FACTS: tuple[dict, ...] = (
    # --- context window, max input, max output (chapter 01 budgets) -------------------------------------------
    entry(M1, "context_window_tokens", 1_000_000, "a_windows", Q_1M, section="Context windows",
          note="Same page: 'For every model with a 1M-token context window, 1M is the default: you don't need a "
               "beta header'."),
    entry(K200, "context_window_tokens", 200_000, "a_windows", Q_200K,
          note="Until the 2026-03-31 snapshot, Sonnet 4.5 and Sonnet 4 could reach 1M with the beta header "
               "context-1m-2025-08-07 (usage tier 4); 200k is the default window throughout."),
    entry("claude-opus-5-5", "context_window_tokens", 1_000_000, "a_lineup",
          "| Claude Opus 5.5 | 1M | 128K | $4 / $20 | Adaptive (always on) | medium | Jun 2026 |",
          note="Stored excerpt of a newer page than the 2026-08-22 mirror; not machine-verified."),
    entry(CLAUDE, "max_input_tokens", "window", "a_windows", Q_TOO_LONG,
          note="Anthropic publishes no separate input limit: the input may fill the window."),
    entry(M1[:-2] + ("claude-sonnet-5",), "max_output_tokens", 128_000, "a_thinking", Q_OUT),
    entry(("claude-haiku-4-5", "claude-sonnet-4-5", "claude-opus-4-5"), "max_output_tokens", 64_000, "a_thinking",
          Q_OUT),
    entry("claude-sonnet-4-6", "max_output_tokens", 64_000, "a_ext_0529",
          "Claude Sonnet 4.6 and Claude Haiku 4.5 support up to 64k.", until="2026-06-23",
          note="Disagreement over time: 64k in the docs until 2026-06-22, 128k from the 2026-06-23 snapshot."),
    entry("claude-sonnet-4-6", "max_output_tokens", 128_000, "a_thinking", Q_OUT, since="2026-06-23"),
    entry("claude-opus-5-5", "max_output_tokens", 128_000, "a_lineup",
          "| Claude Opus 5.5 | 1M | 128K | $4 / $20 | Adaptive (always on) | medium | Jun 2026 |"),
    entry(("claude-opus-4-1", "claude-sonnet-4"), "max_output_tokens", None, "ctxlab_nf", NF_OLD_CLAUDE_OUTPUT,
          status="assumed", note="None: the caller's max_tokens is not checked against a limit."),
    # --- minimum cacheable prompt (chapter 04) -----------------------------------------------------------------
    entry(("claude-opus-5",), "min_cache_tokens", 512, "a_cache",
          "- 512 tokens for Claude Opus 5, Claude Fable 5, and [Claude Mythos 5](https://anthropic.com/glasswing)",
          section="Cache limitations", note="'These minimums apply on every platform where each model is available.'"),
    entry("claude-opus-5-5", "min_cache_tokens", 512, "ctxlab_nf", NF_CLAUDE_NEW, status="assumed"),
    entry("claude-opus-4-7", "min_cache_tokens", 4096, "a_cache_0609",
          "- 4,096 tokens for [Claude Mythos Preview](https://anthropic.com/glasswing), Claude Opus 4.7, Claude Opus "
          "4.6, and Claude Opus 4.5", until="2026-06-10", section="Cache limitations",
          note="Disagreement over time: 4,096 in snapshots 2026-04-17..2026-06-09, 2,048 from 2026-06-10. LiteLLM's "
               "docs (2026-10-07) still give 4,096 on Bedrock; Anthropic says its minimums hold on every platform."),
    entry("claude-opus-4-7", "min_cache_tokens", 2048, "a_cache",
          "- 2,048 tokens for [Claude Mythos Preview](https://anthropic.com/glasswing) and Claude Opus 4.7",
          since="2026-06-10", section="Cache limitations"),
    entry(("claude-opus-4-6", "claude-opus-4-5"), "min_cache_tokens", 4096, "a_cache",
          "- 4,096 tokens for Claude Opus 4.6 and Claude Opus 4.5", section="Cache limitations"),
    entry(("claude-opus-4-8", "claude-sonnet-5", "claude-sonnet-4-5", "claude-opus-4-1", "claude-sonnet-4"),
          "min_cache_tokens", 1024, "a_cache", Q_MIN_1024, section="Cache limitations"),
    entry("claude-sonnet-4-6", "min_cache_tokens", 1024, "a_cache_0218",
          "- 1024 tokens for Claude Sonnet 4.6, Claude Sonnet 4.5, Claude Opus 4.1, Claude Opus 4, Claude Sonnet 4, "
          "and Claude Sonnet 3.7 ([deprecated](about-claude/model-deprecations.md))", until="2026-02-27",
          section="Cache limitations"),
    entry("claude-sonnet-4-6", "min_cache_tokens", 2048, "a_cache_0227", "- 2048 tokens for Claude Sonnet 4.6",
          since="2026-02-27", until="2026-05-14", section="Cache limitations",
          note="Disagreement over time: 1024 (2026-02-18), 2048 (2026-02-27..05-13), 1,024 (2026-05-14 on). A user "
               "report (anthropic-sdk-python#1194) saw caching only from 2,048 while the docs said 1024."),
    entry("claude-sonnet-4-6", "min_cache_tokens", 1024, "a_cache", Q_MIN_1024, since="2026-05-14",
          section="Cache limitations"),
    entry("claude-haiku-4-5", "min_cache_tokens", 4096, "a_cache", "- 4,096 tokens for Claude Haiku 4.5",
          section="Cache limitations"),
    # --- cache price multipliers (chapter 04) -------------------------------------------------------------------
    entry(CLAUDE_824, "cache_write_5m_multiplier", 1.25, "a_pricing", Q_W5, section="Model pricing"),
    entry(CLAUDE_824, "cache_write_1h_multiplier", 2.0, "a_pricing", Q_W1H, section="Model pricing"),
    entry(CLAUDE_824, "cache_read_multiplier", 0.1, "a_pricing", Q_READ, section="Model pricing",
          note="Disagreement: newer prices are not 0.1x for every model (Opus 5.5 0.05x, Fable 5.1 0.025x); this "
               "page predates them and still holds for the models listed here."),
    entry("claude-opus-5-5", "cache_write_5m_multiplier", 1.25, "a_opus55", "- 5m cache write\n- $5 / MTok",
          note="Ratio computed from documented prices: $5 write / $4 input. The page gives prices, not the ratio."),
    entry("claude-opus-5-5", "cache_write_1h_multiplier", 2.0, "a_opus55", "- 1h cache write\n- $8 / MTok",
          note="Ratio computed from documented prices: $8 write / $4 input."),
    entry("claude-opus-5-5", "cache_read_multiplier", 0.05, "a_opus55", "- Cache read\n- $0.20 / MTok",
          note="Ratio computed from documented prices: $0.20 read / $4 input ('- Input\n- $4 / MTok'). "
               "Disagreement: the 2026-08-22 pricing table says 0.1x for every model; it predates Opus 5.5."),
    # --- TTL (chapter 04) ----------------------------------------------------------------------------------------
    entry(CLAUDE, "ttl_options_s", (300.0, 3600.0), "a_cache", Q_TTL_1H,
          note="The lifetime is measured from the start of the request that writes or reads the entry."),
    entry(CLAUDE, "ttl_default_s", 300.0, "a_cache", Q_TTL),
    # --- caching mode (chapter 04) ------------------------------------------------------------------------------
    entry(CLAUDE, "cache_mode", "breakpoints", "a_cache", Q_BREAK,
          note="Up to 4 breakpoints (automatic caching uses one slot); a read looks back at most 20 blocks."),
    # --- earlier-turn thinking (chapter 01 counts, chapter 04 invalidation) -------------------------------------
    entry(("claude-opus-4-5", "claude-opus-4-6", "claude-opus-4-7", "claude-opus-4-8", "claude-opus-5",
           "claude-sonnet-5"), "thinking_rule", "keep_all", "a_thinking", Q_KEEP_ALL,
          section="Thinking block preservation by model",
          note="Kept blocks count toward the window and are billed as input, also when read from cache. Opus keeps "
               "all since the mirror's first snapshot (2026-01-13)."),
    entry("claude-opus-5-5", "thinking_rule", "keep_all", "a_thinking", Q_KEEP_ALL,
          note="'later Opus models'. From Claude Fable 5.1 on, 'preserved thinking' also binds blocks to the model "
               "and an unchanged prefix."),
    entry("claude-sonnet-4-6", "thinking_rule", "last_turn_only", "a_cache_0113", Q_OLD_STRIP, until="2026-04-28",
          note="Before the 2026-04-28 snapshot the docs described preservation as Opus-only."),
    entry("claude-sonnet-4-6", "thinking_rule", "keep_all", "a_thinking", Q_KEEP_ALL, since="2026-04-28",
          section="Thinking block preservation by model"),
    entry(("claude-opus-4-1", "claude-sonnet-4", "claude-sonnet-4-5", "claude-haiku-4-5"), "thinking_rule",
          "last_turn_only", "a_thinking", Q_LAST_TURN, section="Thinking block preservation by model",
          note="On these models a new non-tool-result user turn strips earlier thinking and removes the messages "
               "after it from the cache (prompt caching, 'What invalidates the cache')."),
    # --- tokenizer generation (chapter 01) ----------------------------------------------------------------------
    entry(PRE47, "tokenizer", ("claude-pre-opus-4-7", 1.0, 1.0, "itself"), "a_new47", Q_NEW47,
          note="The generation Opus 4.7's tokenizer is compared with ('previous models')."),
    entry("claude-opus-4-7", "tokenizer", ("claude-opus-4-7", 1.0, 1.35, "claude-pre-opus-4-7"), "a_new47", Q_NEW47,
          note=D_TOKENIZER),
    entry(("claude-opus-4-8", "claude-opus-5", "claude-opus-5-5"), "tokenizer",
          ("claude-opus-4-7", 1.0, 1.35, "claude-pre-opus-4-7"), "a_migrate", Q_LATER_OPUS,
          note="The ratio range is the Opus 4.7 page's. " + D_TOKENIZER),
    entry("claude-sonnet-5", "tokenizer", ("claude-sonnet-5", 1.3, 1.3, "claude-sonnet-4-6"), "a_newsonnet5",
          "Claude Sonnet 5 uses a new tokenizer. The same input text produces approximately 30% more tokens than "
          "on Claude Sonnet 4.6.", note="'approximately 30%': no range given. Whether it is the Opus 4.7 "
                                        "tokenizer is not said."),
    entry("claude-opus-4-5", "o200k_calibration", CAL_PI, "ctxlab_cal", Q_CAL_PI, status="measured",
          note=N_NEW_CAL + " Under the old rule (thinking never counted, pairs with thinking skipped): 346,812 / "
               "277,828 = 1.248 over 384 call pairs."),
    entry("claude-sonnet-4", "o200k_calibration", CAL_CC, "ctxlab_cal", Q_CAL_CC, status="measured",
          note=N_NEW_CAL + " This file has no thinking blocks: the figure is the old rule's (1.336, 163 pairs)."),
    entry(tuple(f for f in PRE47 if f not in ("claude-opus-4-5", "claude-sonnet-4")), "o200k_calibration",
          CAL_POOLED, "ctxlab_cal", Q_CAL_ALL, status="assumed",
          note="Both measured files pooled (the same pre-Opus-4.7 tokenizer), applied to a model not measured. "
               "Old rule: 446,928 / 352,783 = 1.267."),
    entry(NEW_TOKENIZER, "o200k_calibration", CAL_NEW_TOKENIZER, "ctxlab_cal", Q_CAL_NEW, status="assumed",
          note=N_CAL_NEW),
    # --- hidden tool-use system prompt, tokens per tool_choice (chapter 01) -------------------------------------
    entry("claude-opus-5", "tool_prompt_tokens", (286, 406), "a_tools",
          "| Claude Opus 5 | `auto`, `none`  ---  `any`, `tool` | 286 tokens  ---  406 tokens |", section="Pricing",
          note="(auto or none, any or tool); with no tools, tool_choice none adds 0."),
    entry("claude-opus-5-5", "tool_prompt_tokens", (286, 406), "ctxlab_nf", NF_CLAUDE_NEW, status="assumed"),
    entry("claude-opus-4-8", "tool_prompt_tokens", (290, 410), "a_tools",
          "| Claude Opus 4.8 | `auto`, `none`  ---  `any`, `tool` | 290 tokens  ---  410 tokens |", section="Pricing"),
    entry("claude-sonnet-5", "tool_prompt_tokens", (354, 474), "a_tools",
          "| Claude Sonnet 5 | `auto`, `none`  ---  `any`, `tool` | 354 tokens  ---  474 tokens |", section="Pricing"),
    entry("claude-opus-4-7", "tool_prompt_tokens", (346, 313), "a_tools_0417",
          "| Claude Opus 4.7 | `auto`, `none`  ---  `any`, `tool` | 346 tokens  ---  313 tokens |", until="2026-05-29",
          section="Pricing", note=D_TOOLS),
    entry("claude-opus-4-7", "tool_prompt_tokens", (675, 804), "a_tools",
          "| Claude Opus 4.7 | `auto`, `none`  ---  `any`, `tool` | 675 tokens  ---  804 tokens |", since="2026-05-29",
          section="Pricing"),
    *(entry(fam, "tool_prompt_tokens", (346, 313), "a_tools_0520",
            f"| {name} | `auto`, `none`  ---  `any`, `tool` | 346 tokens  ---  313 tokens |", until="2026-05-29",
            section="Pricing", note=D_TOOLS)
      for fam, name in (("claude-opus-4-6", "Claude Opus 4.6"), ("claude-opus-4-5", "Claude Opus 4.5"),
                        ("claude-opus-4-1", "Claude Opus 4.1"), ("claude-sonnet-4-6", "Claude Sonnet 4.6"),
                        ("claude-sonnet-4-5", "Claude Sonnet 4.5"), ("claude-haiku-4-5", "Claude Haiku 4.5"),
                        ("claude-sonnet-4", "Claude Sonnet 4 ([deprecated](about-claude/model-deprecations.md))"))),
    *(entry(fam, "tool_prompt_tokens", pair, "a_tools",
            f"| {name} | `auto`, `none`  ---  `any`, `tool` | {pair[0]} tokens  ---  {pair[1]} tokens |",
            since="2026-05-29", section="Pricing")
      for fam, name, pair in (
          ("claude-opus-4-6", "Claude Opus 4.6", (497, 589)), ("claude-opus-4-5", "Claude Opus 4.5", (496, 588)),
          ("claude-sonnet-4-6", "Claude Sonnet 4.6", (497, 589)),
          ("claude-sonnet-4-5", "Claude Sonnet 4.5", (496, 588)),
          ("claude-haiku-4-5", "Claude Haiku 4.5", (496, 588)),
          ("claude-opus-4-1", "Claude Opus 4.1 " + RETIRED_BG, (313, 315)),
          ("claude-sonnet-4", "Claude Sonnet 4 " + RETIRED_BG, (313, 315)))),
    # --- lifecycle: (state, deprecated on, retires on, retires not sooner than) --------------------------------
    *(entry(fam, "lifecycle", ("active", None, None, nsb), "a_deprec", f"| {api_id} | Active | N/A | {text} |",
            note="Dates apply to Anthropic-operated platforms; Bedrock and Google Cloud set their own schedules.")
      for fam, api_id, text, nsb in (
          ("claude-opus-5", "claude-opus-5", "Not sooner than July 24, 2027", "2027-07-24"),
          ("claude-opus-4-8", "claude-opus-4-8", "Not sooner than May 28, 2027", "2027-05-28"),
          ("claude-opus-4-7", "claude-opus-4-7", "Not sooner than April 16, 2027", "2027-04-16"),
          ("claude-opus-4-6", "claude-opus-4-6", "Not sooner than February 5, 2027", "2027-02-05"),
          ("claude-opus-4-5", "claude-opus-4-5-20251101", "Not sooner than November 24, 2026", "2026-11-24"),
          ("claude-sonnet-5", "claude-sonnet-5", "Not sooner than June 30, 2027", "2027-06-30"),
          ("claude-sonnet-4-6", "claude-sonnet-4-6", "Not sooner than February 17, 2027", "2027-02-17"),
          ("claude-haiku-4-5", "claude-haiku-4-5-20251001", "Not sooner than October 15, 2026", "2026-10-15"))),
    entry("claude-opus-4-1", "lifecycle", ("retired", "2026-06-05", "2026-08-05", None), "a_deprec",
          "| claude-opus-4-1-20250805 | Retired | June 5, 2026 | August 5, 2026 |",
          note="Still served on Bedrock and Google Cloud (tool-use page)."),
    entry("claude-sonnet-4", "lifecycle", ("retired", "2026-04-14", "2026-06-15", None), "a_deprec",
          "| claude-sonnet-4-20250514 | Retired | April 14, 2026 | June 15, 2026 |",
          note="Still served on Bedrock and Google Cloud (tool-use page)."),
    entry("claude-sonnet-4-5", "lifecycle", ("deprecated", None, "2026-11-30", None), "a_sonnet45",
          "Claude Sonnet 4.5 is deprecated: it is still functional but no longer recommended, and retires on "
          "November 30, 2026. Recommended replacement: Claude Sonnet 5.5.",
          note="Disagreement: the 2026-08-22 deprecations table said '| claude-sonnet-4-5-20250929 | Active | N/A | "
               "Not sooner than September 29, 2026 |'; the newer model page is used. The deprecation date "
               "(September 30, 2026) is seen only in third-party copies, so it is left out. Past 2026-11-30 the model "
               "is retired (inferred from the date; no post-retirement page seen)."),
    entry("claude-opus-5-5", "lifecycle", ("active", None, None, None), "ctxlab_nf", NF_CLAUDE_NEW, status="assumed"),
)
