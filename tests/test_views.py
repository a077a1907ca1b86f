"""views.py: the history as a context sees it — replaced results, the compacted view, recorded compactions left out;
and the two small helpers the summary chapters share (pruning.cut_to_tokens, summary.held_to)."""

from __future__ import annotations

from dataclasses import replace

from ctxlab.messages import Conversation, Entry, assistant, tool_result, user
from ctxlab.pruning import cut_to_tokens
from ctxlab.summary import RuleBasedSummarizer, held_to
from ctxlab.summary_strategy import LLMSummarizer
from ctxlab.tokens import CharsPerTokenCounter, TiktokenCounter
from ctxlab.views import SUMMARY_PREFIX, compacted_view, substituted, without_recorded

CALL = assistant("", "a1", calls=(("c1", "bash", {"cmd": "pytest"}),))
RESULT = tool_result("c1", "1 failed\n" * 200, "t1", name="bash")
SHORT = tool_result("c1", "1 failed [... 190 lines omitted ...]", "t1", name="bash")


def history(*items) -> Conversation:
    return Conversation("v", (user("fix the test", "u1"), CALL, RESULT, *items))


def test_a_replacement_entry_puts_its_message_in_place_of_the_result():
    conv = history(Entry("pruned_result", "pruned:t1", {"message_id": "t1", "replacement": SHORT}))
    view = substituted(conv)
    assert [m.id for m in view.messages] == ["u1", "a1", "t1"]
    assert view.messages[2] is SHORT  # the Message the entry holds, no dict round trip
    assert conv.messages[2] is RESULT  # the session keeps the original
    assert substituted(history()) == history()  # nothing to replace: the same history


def test_the_compacted_view_opens_with_the_summary_and_keeps_from_the_first_kept_message():
    conv = history(assistant("found it", "a2"), user("go on", "u2"),
                   Entry("compaction", "k1", {"summary": "fixed the test", "first_kept_id": "u2", "origin": "ctxlab"}),
                   assistant("done", "a3"))
    view, entry, notes = compacted_view(conv)
    assert entry.id == "k1" and [m.id for m in view.messages] == ["summary:k1", "u2", "a3"]
    assert view.messages[0].text == SUMMARY_PREFIX + "fixed the test" and view.messages[0].origin == "compact_summary"
    assert notes == ["ctxlab compaction 'k1': 1 messages kept from before it"]


def test_recorded_compactions_are_left_out_for_a_strategy_that_compacts_itself():
    recorded = Entry("compaction", "r1", {"summary": "s", "first_kept_id": None, "origin": "recorded"})
    ours = Entry("compaction", "k1", {"summary": "s", "first_kept_id": None, "origin": "ctxlab"})
    conv = history(recorded, ours)
    assert [i.id for i in without_recorded(conv).entries] == ["k1"]
    assert without_recorded(history(ours)) == history(ours)


def test_cut_to_tokens_keeps_the_longest_head_within_the_cap():
    four = CharsPerTokenCounter(4)
    assert cut_to_tokens("abcdefghij", 2, four, marker="") == "abcdefgh"
    assert cut_to_tokens("short", 10, four) == "short"  # within the cap: unchanged
    text = "上下文工程 " * 50
    cut = cut_to_tokens(text, 20, TiktokenCounter())
    assert TiktokenCounter().count(cut) <= 20 and cut.endswith("…[summary cut to fit]")
    assert cut_to_tokens(text, 0, four) == ""


def test_held_to_sets_a_summarizers_cap_once():
    counter = CharsPerTokenCounter(4)
    rule = RuleBasedSummarizer(max_tokens=500)
    assert held_to(rule, 200, counter) == replace(rule, max_tokens=200, counter=counter)
    assert held_to(rule, 900, counter).max_tokens == 900  # raised: budgeted+summary gives the room it has
    assert held_to(rule, 900, counter, lower_only=True) is rule  # compaction only ever lowers it
    assert held_to(rule, -5, counter).max_tokens == 0
    assert held_to(LLMSummarizer(str), 100, counter).max_tokens == 100

    class Plain:
        def summarize(self, dropped, previous=None): ...

    plain = Plain()
    assert held_to(plain, 10, counter) is plain  # no such settings: left as it is
