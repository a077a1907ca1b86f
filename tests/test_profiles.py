"""Model profiles: windows from the price table, families, what-ifs."""

from ctxlab.tables.profiles import profile_for, window_from_price_table, with_window


def test_windows_come_from_the_price_table_when_the_table_has_no_documented_window():
    """gpt-4o's window in ctxlab.tables.model_facts is 'assumed' (third-party): the price table's is used."""
    for model in ("gpt-4o", "gpt-5"):
        window, source = window_from_price_table(model)
        p = profile_for(model)
        assert p.context_window == window and source.startswith("genai-prices")
        assert p.window_source == source


def test_documented_windows_come_from_the_dated_table():
    """"Other Claude models, including Claude Sonnet 4.5, have a 200k-token context window." (Context windows,
    https://platform.claude.com/docs/en/build-with-claude/context-windows, mirror snapshot ff5b8ed 2026-08-22, read
    2026-12-02): the window source names that page, not genai-prices."""
    for model in ("claude-opus-4-5", "claude-sonnet-4-20250514"):
        p = profile_for(model)
        assert p.context_window == 200_000
        assert p.window_source.startswith("Context windows https://platform.claude.com")
        assert "2026-08-22" in p.window_source


def test_families():
    assert profile_for("claude-sonnet-4-5").requires_user_first
    assert not profile_for("claude-sonnet-4-5").tokenizer_exact
    assert profile_for("gpt-4o").tokenizer == "o200k_base" and profile_for("gpt-4o").tokenizer_exact
    assert profile_for("gpt-4-0613").tokenizer == "cl100k_base"
    assert profile_for("openai/gpt-4o").provider == "openai"


def test_unknown_model_gets_a_named_generic_profile():
    p = profile_for("my-local-llama")
    assert p.provider == "other" and not p.tokenizer_exact
    assert "fallback" in p.window_source


def test_budget_and_what_if_window():
    p = with_window(profile_for("gpt-4o"), 10_000)
    assert p.context_window == 10_000 and p.budget_tokens() == 9_000 and p.budget_tokens(0.5) == 5_000
