"""The memos that keep a long replay linear give the book's answers: views, recorded replacements, render cache.

Issue 18 (growth): a strategy's view of a history that only grows is made from what the last call made of it
(``views.py``'s memos, ``PrunedStrategy._replaced``); the render cache appends to a shared log of blocks. Each is
checked here against the same function without memory, call after call over a history that grows, with a
replacement of an old result, a second compaction and an id shared by a user and an assistant message.
"""

from __future__ import annotations

from ctxlab.fast.render_cache import RenderCache
from ctxlab.messages import Conversation, Entry, assistant, tool_result, user
from ctxlab.pruning_strategy import PrunedStrategy, PruneStep
from ctxlab.render import render_blocks
from ctxlab.strategies import whole_context
from ctxlab.tables.profiles import profile_for
from ctxlab.tokens import MessageMeter
from ctxlab.views import compacted_view, substituted, without_recorded


def growing_items() -> list:
    items: list = [user("start the task", "u0")]
    for k in range(1, 13):
        items += [assistant(f"step {k}", f"a{k}", calls=((f"c{k}", "bash", {"cmd": f"ls {k}"}),)),
                  tool_result(f"c{k}", f"output {k} " * 20, f"t{k}")]
        if k == 4:  # an old result replaced later in the session
            items.append(Entry("pruned_result", "p:t2", data={"message_id": "t2",
                                                              "replacement": tool_result("c2", "[pruned]", "t2")}))
        if k in (6, 10):  # two compactions, the second newest
            items.append(Entry("compaction", f"cmp{k}", data={"summary": f"summary {k}", "first_kept_id": f"a{k - 1}",
                                                              "origin": "recorded"}))
        if k == 8:
            items.append(Entry("paged_result", "pg:t7", data={"message_id": "t7",
                                                             "replacement": tool_result("c7", "[paged]", "t7")}))
            items.append(user("a user message sharing an assistant's id", "a8"))
        if k % 3 == 0:
            items.append(user(f"go on {k}", f"u{k}"))
    return items


def test_views_with_a_memo_give_what_they_give_without_one():
    items = growing_items()
    memos = ({}, {}, {}, {})
    for n in range(1, len(items) + 1):
        history = Conversation("g", tuple(items[:n]))
        assert substituted(history, memos[0]) == substituted(history)
        assert without_recorded(history, memos[1]) == without_recorded(history)
        got, want = compacted_view(history, memos[2]), compacted_view(history)
        assert (got[0], got[1], got[2]) == (want[0], want[1], want[2]), n
        plain = without_recorded(history)
        assert compacted_view(without_recorded(history, memos[3]), memos[2]) == compacted_view(plain)


def test_a_history_that_does_not_extend_the_last_one_is_read_afresh():
    items = growing_items()
    memo: dict = {}
    for n in (len(items), 9, len(items) - 3, len(items)):  # shorter, then longer again: no stale memo
        history = Conversation("g", tuple(items[:n]))
        assert compacted_view(history, memo) == compacted_view(history)
        assert substituted(history, memo) == substituted(history)


def test_recorded_replacements_grow_as_the_history_does():
    items = growing_items()
    strategy = PrunedStrategy()
    for n in range(1, len(items) + 1):  # PruneStep without ``replaced`` reads them off the whole history
        assert strategy._replaced(tuple(items[:n])) == PruneStep(Conversation("g", tuple(items[:n]))).replaced
    assert set(PruneStep(Conversation("g", tuple(items))).replaced) == {"t2", "t7"}


def test_the_render_cache_gives_render_blocks_call_after_call():
    profile = profile_for("claude-opus-4-5", "anthropic")
    meter, cache = MessageMeter(profile), RenderCache()
    items = growing_items()
    for n in range(1, len(items) + 1):
        history = Conversation("g", tuple(items[:n]), system=("be brief",), model=profile.name, provider="anthropic")
        view = compacted_view(history)[0]
        if not any(m.origin != "meta" for m in view.messages):
            continue
        ctx = whole_context(view, profile, meter)
        for thinking in ("off", "high"):
            assert cache(ctx, "anthropic", None, meter, thinking) == render_blocks(ctx, "anthropic", None, meter,
                                                                                   thinking), n
