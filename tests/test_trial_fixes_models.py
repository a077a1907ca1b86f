"""Issue 16's reader trial set MODEL = "gpt4o" in a chapter: it ran silently unpriced. A model that cannot price
is now one line with the closest names."""

import dataclasses

import pytest

from ctxlab.base.errors import CtxlabError
from ctxlab.lab.ch06_choices import priced
from ctxlab.lab.workbook import load_workbook_conversation


@pytest.fixture(scope="module")
def bare():
    return dataclasses.replace(load_workbook_conversation(), model=None, provider=None)


def test_a_mistyped_model_is_one_line_with_the_nearest_names(bare):
    with pytest.raises(CtxlabError) as info:
        priced(bare, "gpt4o")
    line = str(info.value)
    assert "\n" not in line and line.startswith("MODEL = 'gpt4o' is not in ctxlab's price table")
    assert "did you mean gpt-4o" in line and "MODEL = None" in line


def test_a_model_of_the_price_table_prices_and_none_leaves_it_unpriced(bare):
    assert priced(bare, "gpt-4o").model == "gpt-4o"
    assert priced(bare, None) is bare


def test_a_mistyped_model_is_named_even_when_the_transcript_is_priced():
    # The second trial: on the sample (priced), MODEL = "gpt4o" was silently ignored.
    sample = load_workbook_conversation()
    assert priced(sample, "gpt-4o") is sample  # a real model leaves a priced transcript as it is
    with pytest.raises(CtxlabError, match="did you mean gpt-4o"):
        priced(sample, "gpt4o")
