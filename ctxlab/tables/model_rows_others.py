"""The OpenAI and Google (Gemini) entries of the model-facts data: family groups, quotes and :data:`OTHER_FACTS`.

Every entry is made by :func:`ctxlab.tables.model_rows_common.entry` and quotes a page of
:data:`ctxlab.tables.model_rows_common.PAGES`; many are ``assumed`` (third-party pages, or a sentence of
``docs/provider_facts.md`` where nothing was found). :mod:`ctxlab.tables.model_rows` joins these with
:data:`ctxlab.tables.model_rows_anthropic.ANTHROPIC_FACTS`.
"""

from __future__ import annotations

from ctxlab.tables.model_rows_common import entry

# Sentences of docs/provider_facts.md that stand in as the "quote" where nothing was found.
NF_THINKING = "Earlier-turn reasoning rules for OpenAI and Gemini models were not looked up in the issue 13 research."
NF_TOOLS = "A hidden tool-use system prompt is documented by Anthropic only; none was found for OpenAI or Gemini."
NF_LIFECYCLE = "No deprecation or retirement dates were found for the OpenAI and Gemini models in this table."
NF_OPENAI_READ = ("OpenAI's cached-input price per model family was not found on an OpenAI page: the price table "
                  "(genai-prices) gives it per model.")
NF_WINDOW = "No first-party context window or output limit was found for this model in the issue 13 research."
NF_TOKENIZER = "OpenAI's and Google's tokenizers were not re-read for issue 13."
NF_NO_1H = "Only Anthropic sells a second, 1-hour cache write tier; OpenAI and Gemini have none to price."
NF_GEMINI_WRITE = "A Gemini cache-write price multiplier was not found; explicit caches bill storage per hour instead."
NF_GEMINI_TTL = "Gemini's implicit-cache lifetime is not documented; explicit caches take a TTL the caller sets."

OPENAI_OLD = ("gpt-4o", "gpt-4.1", "gpt-5", "gpt-5.5")
OPENAI = OPENAI_OLD + ("gpt-5.6",)
GEMINI = ("gemini-2.5-pro", "gemini-2.5-flash")
OTHER = OPENAI + GEMINI

Q_OAI_MIN = "Caching is enabled automatically for prompts that are 1024 tokens or longer."
Q_OAI_WRITE = ("Cache writes have no additional fee on models before the GPT-5.6 family. For GPT-5.6 models and later "
               "model families, cache writes cost 1.25× the uncached input token rate.")
Q_OAI_PCO = ("Supported for `gpt-5.6` and later models. By default, OpenAI automatically chooses one implicit cache "
             "breakpoint. You can add explicit breakpoints to content blocks with `prompt_cache_breakpoint`. Each "
             "request can write up to four breakpoints. For cache matching, OpenAI considers up to the latest 80 "
             "breakpoints in the conversation, without a content-block lookback limit. Set `mode` to `explicit` to "
             "disable the implicit breakpoint. The `ttl` defaults to `30m`, which is currently the only supported "
             "value.")
Q_OAI_TTL30 = ("The minimum lifetime applied to every implicit and explicit cache breakpoint written by the request. "
               "Defaults to `30m`, which is currently the only supported value. The backend may retain cache entries "
               "for longer.")
Q_OAI_INMEM = ("The system typically clears caches within 5 to 10 minutes of inactivity and always removes them "
               "within one hou")
Q_OAI_24H = "Organizations without ZDR enabled default to `24h`."
Q_GEM_ON = "Implicit caching is enabled by default for all Gemini 2.5 and newer models."
N_OAI_READ = NF_OPENAI_READ + " The newest guide says cached input is 'discounted up to 95%'."

OTHER_FACTS: tuple[dict, ...] = (
    # --- context window, max input, max output (chapter 01 budgets) -------------------------------------------
    entry("gpt-4o", "context_window_tokens", 128_000, "x_uipath",
          "| GPT-4o (OpenAI) | 128K tokens | 16,384 (16K) tokens |",
          status="assumed", note="Third-party listing; OpenAI's model page was not read."),
    entry("gpt-4o", "max_output_tokens", 16_384, "x_uipath", "| GPT-4o (OpenAI) | 128K tokens | 16,384 (16K) tokens |",
          status="assumed", note="Third-party listing; OpenAI's model page was not read."),
    entry("gpt-4.1", "context_window_tokens", 1_047_576, "x_vercel41", "- **Context window:** 1,047,576",
          status="assumed", note="Third-party gateway listing; OpenAI's model page was not read."),
    entry("gpt-4.1", "max_output_tokens", 32_768, "x_vercel41", "- **Maximum output tokens:** 32,768",
          status="assumed", note="Third-party gateway listing; OpenAI's model page was not read."),
    entry("gpt-5", "context_window_tokens", 400_000, "o_forum_gpt5",
          "The docs say the context window for GPT-5 is 400k tokens", status="assumed",
          note="A user's post on OpenAI's forum; OpenAI's model page was not read."),
    entry("gpt-5", "max_input_tokens", 272_000, "o_forum_gpt5",
          "Input tokens exceed the configured limit of 272,000 tokens. Your messages resulted in 297,006 tokens.",
          status="assumed", note="The API's own error as quoted by a user; OpenAI's model page was not read."),
    entry("gpt-5.5", "context_window_tokens", 1_050_000, "x_oxen55", "| Context Length     | 1,050,000 tokens |",
          status="assumed", note="Third-party listing. Same page: prompts over 272K input tokens are priced 2x "
                                 "input / 1.5x output."),
    entry(("gpt-5", "gpt-5.5", "gpt-5.6", "gemini-2.5-flash"), "max_output_tokens", None, "ctxlab_nf", NF_WINDOW,
          status="assumed", note="None: take the limit from the price table (genai-prices) or the caller."),
    entry(("gpt-5.6", "gemini-2.5-flash"), "context_window_tokens", None, "ctxlab_nf", NF_WINDOW, status="assumed",
          note="None: take the window from the price table (genai-prices). GPT-5.6 Sol/Terra 1M and Luna 400K "
               "appear only in a third-party release note."),
    entry(("gpt-4o", "gpt-4.1", "gpt-5.5", "gpt-5.6", "gemini-2.5-flash"), "max_input_tokens", "window",
          "ctxlab_nf", NF_WINDOW, status="assumed", note="No separate input limit found: the window bounds input."),
    entry("gemini-2.5-pro", "context_window_tokens", 1_048_576, "g_vertex_25pro", "Maximum input tokens: 1,048,576",
          note="Google gives input and output limits, not a window; the input limit is used as the window."),
    entry("gemini-2.5-pro", "max_input_tokens", 1_048_576, "g_vertex_25pro", "Maximum input tokens: 1,048,576"),
    entry("gemini-2.5-pro", "max_output_tokens", 65_535, "g_vertex_25pro", "Maximum output tokens: 65,535 (default)",
          note="Disagreement: third-party listings give 65,536; the Gemini API page was not read. Google Cloud's "
               "page is used."),
    # --- minimum cacheable prompt (chapter 04) -----------------------------------------------------------------
    entry(OPENAI, "min_cache_tokens", 1024, "o_guide_old", Q_OAI_MIN,
          note="Same page: 'Prompt Caching is enabled for all recent models, gpt-4o and newer.' A newer version "
               "keeps 'enabled automatically for prompts that are 1024 token[s...]' (excerpt cut)."),
    entry("gemini-2.5-pro", "min_cache_tokens", 4096, "g_cache_0507", "| Gemini 2.5 Pro | 4096 |", until="2026-07-07",
          note="Disagreement over time: 4096 on the page updated 2026-05-07, 2,048 on the pages updated 2026-07-07 "
               "and 2026-10-13. LiteLLM's docs say 1,024 for Gemini."),
    entry("gemini-2.5-pro", "min_cache_tokens", 2048, "g_cache_new", "| Gemini 2.5 Pro | 2,048 |", since="2026-07-07"),
    entry("gemini-2.5-flash", "min_cache_tokens", 1024, "g_cache_0507", "| Gemini 2.5 Flash | 1024 |",
          until="2026-07-07"),
    entry("gemini-2.5-flash", "min_cache_tokens", 2048, "g_cache_new", "| Gemini 2.5 Pro | 2,048 |", since="2026-07-07",
          status="assumed", note="The research copied the 2.5 Pro row of the newer table verbatim, not the Flash row; "
                                 "its summary gives 2,048 for Flash too."),
    # --- cache price multipliers (chapter 04) -------------------------------------------------------------------
    entry(OPENAI_OLD, "cache_write_5m_multiplier", 1.0, "o_guide_56", Q_OAI_WRITE,
          note="1.0: a write is billed as uncached input. Disagreement: the older guide says caching 'has no "
               "additional fees associated with it'; the newer one agrees for models before GPT-5.6."),
    entry("gpt-5.6", "cache_write_5m_multiplier", 1.25, "o_guide_56", Q_OAI_WRITE,
          note="The field holds OpenAI's one write price (its entries live at least 30 min, not 5)."),
    entry(OPENAI, "cache_read_multiplier", None, "ctxlab_nf", NF_OPENAI_READ, status="assumed", note=N_OAI_READ),
    entry(OTHER, "cache_write_1h_multiplier", None, "ctxlab_nf", NF_NO_1H, status="assumed"),
    entry(GEMINI, "cache_write_5m_multiplier", None, "ctxlab_nf", NF_GEMINI_WRITE, status="assumed"),
    entry(GEMINI, "cache_read_multiplier", 0.1, "g_vertex_cache",
          "Implicit caching provides a 90% discount on cached tokens compared to standard input tokens.",
          note="Google Cloud's page; the Gemini API's discount per model was not found."),
    # --- TTL (chapter 04) ----------------------------------------------------------------------------------------
    entry(("gpt-4o", "gpt-4.1", "gpt-5"), "ttl_options_s", (300.0, 86400.0), "o_azure", Q_OAI_INMEM,
          note="in_memory (typically 5-10 min idle, always under 1 h; 300 s is its floor here) or 24h "
               "(prompt_cache_retention). Which older models offer 24h was not found: assumed all three do."),
    entry(("gpt-4o", "gpt-4.1", "gpt-5"), "ttl_default_s", 300.0, "o_sdk", Q_OAI_24H, status="assumed",
          until="2026-06-01", note="Before the SDK text of 2026-06-01 the guide (as quoted by a third party) said "
                                   "'If you don't specify a retention policy, the default is in_memory.'"),
    entry(("gpt-4o", "gpt-4.1", "gpt-5"), "ttl_default_s", 86400.0, "o_sdk", Q_OAI_24H, status="assumed",
          since="2026-06-01", note="Documented for organisations without zero data retention, on models that offer "
                                   "both policies (ZDR organisations default to in_memory). That these models offer "
                                   "24h is assumed."),
    entry("gpt-5.5", "ttl_options_s", (86400.0,), "o_sdk",
          "For `gpt-5.5`, `gpt-5.5-pro`, and future models, only `24h` is supported."),
    entry("gpt-5.5", "ttl_default_s", 86400.0, "o_sdk",
          "For `gpt-5.5`, `gpt-5.5-pro`, and future models, only `24h` is supported."),
    entry("gpt-5.6", "ttl_options_s", (1800.0,), "o_sdk", Q_OAI_TTL30,
          note="A minimum lifetime; prompt_cache_retention (a maximum) is deprecated in its favour."),
    entry("gpt-5.6", "ttl_default_s", 1800.0, "o_sdk", Q_OAI_TTL30),
    entry(GEMINI, "ttl_options_s", None, "ctxlab_nf", NF_GEMINI_TTL, status="assumed"),
    entry(GEMINI, "ttl_default_s", 3600.0, "g_cache_old", "If not set, the TTL defaults to 1 hour.",
          note="Explicit caching only. cache_rules.py assumes 5 min for implicit caching."),
    # --- caching mode (chapter 04) ------------------------------------------------------------------------------
    entry(OPENAI_OLD, "cache_mode", "longest_prefix_128", "o_cookbook",
          "works automatically for prompts containing 1024 tokens or more, with cache hits occurring in increments "
          "of 128 tokens.", note="The cookbook: 'This guide applies only to models before GPT-5.6.' The 128-token "
                                 "step was not found in the current developers.openai.com guide."),
    entry("gpt-5.6", "cache_mode", "breakpoints_prompt_cache_options", "o_sdk", Q_OAI_PCO,
          note="Disagreement: a third-party summary of the guide says the latest 50 breakpoints; the SDK says 80. "
               "No fallback to a shorter unmarked prefix (third-party SDK doc). prompt_cache_key: 'must set' in a "
               "guide quoted 2026-07-19, 'optional' in a later one."),
    entry(GEMINI, "cache_mode", "implicit_and_explicit", "g_cache", Q_GEM_ON,
          note="Implicit caching is automatic with no saving guaranteed; explicit caches are created by the caller."),
    # --- earlier-turn thinking (chapter 01 counts, chapter 04 invalidation) -------------------------------------
    entry(OTHER, "thinking_rule", None, "ctxlab_nf", NF_THINKING, status="assumed"),
    # --- tokenizer generation (chapter 01) ----------------------------------------------------------------------
    entry(OPENAI, "tokenizer", ("o200k_base", 1.0, 1.0, "itself"), "ctxlab_nf", NF_TOKENIZER, status="assumed",
          note="tiktoken's model table maps these to o200k_base (ctxlab/tables/offline_encodings.py)."),
    entry(GEMINI, "tokenizer", ("gemini", None, None, "unknown"), "ctxlab_nf", NF_TOKENIZER, status="assumed"),
    entry(OTHER, "o200k_calibration", 1.0, "ctxlab_nf", NF_TOKENIZER, status="assumed",
          note="OpenAI: o200k_base is the model's own tokenizer (exact). Gemini: uncalibrated stand-in."),
    # --- hidden tool-use system prompt, tokens per tool_choice (chapter 01) -------------------------------------
    entry(OTHER, "tool_prompt_tokens", None, "ctxlab_nf", NF_TOOLS, status="assumed"),
    # --- lifecycle: (state, deprecated on, retires on, retires not sooner than) --------------------------------
    entry(OTHER, "lifecycle", ("active", None, None, None), "ctxlab_nf", NF_LIFECYCLE, status="assumed"),
)
