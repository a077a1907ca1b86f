"""The shared part of the model-facts data: the pages read (:data:`PAGES`), the read date and :func:`entry`.

Plain literals only (no ctxlab imports). :mod:`ctxlab.tables.model_rows_anthropic` and
:mod:`ctxlab.tables.model_rows_others` build their entries with :func:`entry` and quote pages by their key in
:data:`PAGES`; :mod:`ctxlab.tables.model_rows` puts them together.

* :data:`PAGES` — key -> (title, url, page date or mirror snapshot). Anthropic pages show no date,
  so their "page date" is the snapshot of the public mirror ``gpambrozio/ClaudeDocs`` they were
  read from; ``search:`` marks a stored excerpt of the live page whose date is not shown.
* :func:`entry` — one entry: the families it holds for, the field, the value,
  ``since`` / ``until`` (ISO dates; ``since`` inclusive, ``until`` exclusive; ``None`` = open),
  the page key, the section, the verbatim quote, the status and a note.
"""

from __future__ import annotations

READ = "2026-12-02"  # the day every page below was read
MIRROR = "gpambrozio/ClaudeDocs snapshot"
_A = "https://platform.claude.com/docs/en/"
_SDK = "https://github.com/openai/openai-python/blob/e43b422/src/openai/types/"

PAGES: dict[str, tuple[str, str, str]] = {
    "a_cache": ("Prompt caching", _A + "build-with-claude/prompt-caching", MIRROR + " ff5b8ed (2026-08-22)"),
    "a_cache_0113": ("Prompt caching", _A + "build-with-claude/prompt-caching", MIRROR + " e57bffd8 (2026-01-13)"),
    "a_cache_0218": ("Prompt caching", _A + "build-with-claude/prompt-caching", MIRROR + " 756487e8 (2026-02-18)"),
    "a_cache_0227": ("Prompt caching", _A + "build-with-claude/prompt-caching", MIRROR + " 683440d5 (2026-02-27)"),
    "a_cache_0609": ("Prompt caching", _A + "build-with-claude/prompt-caching", MIRROR + " 28085629 (2026-06-09)"),
    "a_pricing": ("Pricing", _A + "about-claude/pricing", MIRROR + " ff5b8ed (2026-08-22)"),
    "a_thinking": ("Thinking", _A + "build-with-claude/thinking", MIRROR + " ff5b8ed (2026-08-22)"),
    "a_ext_0529": ("Building with extended thinking", _A + "build-with-claude/extended-thinking",
                   MIRROR + " 879fe70d (2026-05-29)"),
    "a_windows": ("Context windows", _A + "build-with-claude/context-windows", MIRROR + " ff5b8ed (2026-08-22)"),
    "a_tools": ("Tool use with Claude", _A + "agents-and-tools/tool-use/overview", MIRROR + " ff5b8ed (2026-08-22)"),
    "a_tools_0520": ("Tool use with Claude", _A + "agents-and-tools/tool-use/overview",
                     MIRROR + " 5e2bafa1 (2026-05-20)"),
    "a_tools_0417": ("Tool use with Claude", _A + "agents-and-tools/tool-use/overview",
                     MIRROR + " 2792971e (2026-04-17)"),
    "a_deprec": ("Model deprecations", _A + "about-claude/model-deprecations", MIRROR + " ff5b8ed (2026-08-22)"),
    "a_sonnet45": ("Claude Sonnet 4.5 (model overview; English status text in the pt-BR copy)",
                   "https://platform.claude.com/docs/pt-BR/models/sonnet-4-5/overview.md", "search: no date shown"),
    "a_new47": ("What's new in Claude Opus 4.7", _A + "about-claude/models/whats-new-claude-4-7",
                MIRROR + " ff5b8ed (2026-08-22)"),
    "a_migrate": ("Migration guide", _A + "about-claude/models/migration-guide", MIRROR + " ff5b8ed (2026-08-22)"),
    "a_newsonnet5": ("What's new in Claude Sonnet 5", _A + "about-claude/models/whats-new-sonnet-5",
                     MIRROR + " ff5b8ed (2026-08-22)"),
    "a_opus55": ("Claude Opus 5.5 (model overview; zh-CN copy, English spec block)",
                 "https://platform.claude.com/docs/zh-CN/models/opus-5-5/overview", "search: no date shown"),
    "a_lineup": ("What's new in Claude Opus 5 (current-lineup table)",
                 "https://platform.claude.com/docs/about-claude/models/whats-new-opus-5", "search: no date shown"),
    "o_guide_old": ("Prompt caching (OpenAI API docs, older version)",
                    "https://developers.openai.com/api/docs/guides/prompt-caching.md", "search: no date shown"),
    "o_guide_56": ("Prompt caching (OpenAI API docs, GPT-5.6-era version)",
                   "https://developers.openai.com/api/docs/guides/prompt-caching?prompt-cache-api=chat-completions",
                   "search: no date shown"),
    "o_cookbook": ("Prompt Caching 201 (OpenAI Cookbook)",
                   "https://raw.githubusercontent.com/openai/openai-cookbook/main/examples/Prompt_Caching_201.ipynb",
                   "search: no date shown"),
    "o_sdk": ("openai-python: response_create_params.py (generated from OpenAI's OpenAPI spec)",
              _SDK + "responses/response_create_params.py", "commit e43b422 (2026-08-21)"),
    "o_azure": ("Prompt caching (Microsoft Foundry / Azure OpenAI)",
                "https://learn.microsoft.com/azure/foundry/openai/how-to/prompt-caching", "search: no date shown"),
    "o_forum_gpt5": ("Huge GPT-5 documentation gap ... 272,000 tokens (OpenAI Developer Community)",
                     ("https://community.openai.com/t/huge-gpt-5-documentation-gap-flaw-causing-bugs-input-tokens-"
                      "exceed-the-configured-limit-of-272-000-tokens/1344734"), "search: no date shown"),
    "x_vercel41": ("GPT-4.1 (Fast) - Vercel AI Gateway (third party)",
                   "https://vercel.com/ai-gateway/models/gpt-4.1-fast.md", "search: no date shown"),
    "x_uipath": ("Supported models and limits (UiPath, third party)",
                 "https://docs.uipath.com/autopilot/other/latest/user-guide/supported-models-and-limits.md",
                 "search: no date shown"),
    "x_oxen55": ("GPT 5.5 (Oxen.ai, third party)",
                 "https://docs.oxen.ai/inference-api/reference/models/gpt-5-5-2026-04-23.md", "search: no date shown"),
    "g_cache_0507": ("Context caching (Gemini API)",
                     "https://ai.google.dev/gemini-api/docs/interactions/caching.md.txt",
                     "Last updated 2026-05-07 UTC"),
    "g_cache_new": ("Context caching (Gemini API)", "https://ai.google.dev/gemini-api/docs/caching?authuser=48",
                    "copies dated 'Last updated 2026-07-07 UTC' and '2026-10-13 UTC' show the same values"),
    "g_cache": ("Context caching (Gemini API)", "https://ai.google.dev/gemini-api/docs/caching.md",
                "search: no date shown"),
    "g_cache_old": ("Context caching (Gemini API, older version)",
                    "https://ai.google.dev/gemini-api/docs/caching?authuser=1", "search: no date shown"),
    "g_vertex_cache": ("Context cache overview (Google Cloud)",
                       ("https://docs.cloud.google.com/gemini-enterprise-agent-platform/models/context-cache/"
                        "context-cache-overview?hl=en"), "search: no date shown"),
    "g_vertex_25pro": ("Gemini 2.5 Pro (Google Cloud)",
                       "https://docs.cloud.google.com/gemini-enterprise-agent-platform/models/gemini/2-5-pro",
                       "search: no date shown"),
    "ctxlab_cal": ("ctxlab calibration (ctxlab/lab/calibration.py on the shared transcripts; assumed where none "
                   "exists)", "ctxlab/tables/model_rows_anthropic.py", "ctxlab, 2026-12-02"),
    "ctxlab_nf": ("ctxlab research notes for issue 13 ('Not found')", "docs/provider_facts.md#not-found", READ),
}


def entry(families: str | tuple[str, ...], field: str, value: object, page: str, quote: str,
          status: str = "documented", since: str | None = None, until: str | None = None,
          section: str = "", note: str = "") -> dict:
    """One entry of ``FACTS`` as a plain dict; ``families`` is one family or a tuple of them."""
    fams = (families,) if isinstance(families, str) else tuple(families)
    return {"families": fams, "field": field, "value": value, "page": page, "quote": quote, "status": status,
            "since": since, "until": until, "section": section, "note": note}
