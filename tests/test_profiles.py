"""Model profiles: windows from the price table, families, what-ifs."""

from ctxlab.tables.profiles import profile_for, window_from_price_table, with_window


def test_windows_come_from_the_price_table_when_it_knows_the_model():
    for model in ("claude-opus-4-5", "claude-sonnet-4-20250514", "gpt-4o"):
        window, source = window_from_price_table(model)
        p = profile_for(model)
        assert p.context_window == window and source.startswith("genai-prices")
        assert p.window_source == source


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
