"""The render cache counts a message whose ids the wire renamed as its source, and gets the book's blocks (issue 18).

Rule 6 of ``sendable`` gives ``tool_use`` ids the wire accepts (``toolu~1`` → ``toolu_1``): the copy it makes is
a new object the meter has never counted, so ``ctxlab/fast/render_cache.py`` counts the recorded message instead
(ids are not counted: the same tokens). This checks every block — digests, chained digests, tokens, breakpoints —
against :func:`~ctxlab.render.render_blocks` on a replay whose every call id is renamed, with windows that slide
(``sendable_cache``'s pieces joined after the front moved), and that the copies are not counted again.
"""

from __future__ import annotations

from ctxlab.context import BudgetPolicy, build_context
from ctxlab.fast import IncrementalMeter, RenderCache
from ctxlab.messages import Conversation, assistant, tool_result, user
from ctxlab.render import render_blocks
from ctxlab.tables.profiles import profile_for
from ctxlab.tokens import MessageMeter


def _history(rounds: int) -> tuple:
    items = [user("fix the tests", "u0")]
    for r in range(rounds):
        items.append(assistant(f"step {r} ", f"a{r}", calls=((f"toolu~{r}", "bash", {"cmd": f"pytest -k t{r}"}),
                                                          (f"call.{r}:0", "read", {"path": f"f{r}.py"}))))
        items.append(tool_result(f"toolu~{r}", f"{r} passed\n" * (r % 7 + 1), f"t{r}"))
        items.append(tool_result(f"call.{r}:0", "x = 1\n" * 40, f"r{r}"))
        if r % 9 == 8:
            items.append(user(f"now part {r}", f"u{r + 1}"))
    return tuple(items)


def test_renamed_calls_render_as_the_book_renders_them_and_are_counted_once():
    profile = profile_for("claude-sonnet-4-5")
    history = _history(60)
    fast_meter, cache = IncrementalMeter(profile), RenderCache()
    policy = BudgetPolicy(budget_tokens=3_000)  # the window slides: its front moves every few calls
    for end in range(2, len(history) + 1):
        conv = Conversation("c", history[:end])
        ctx = build_context(conv, policy, profile=profile, meter=fast_meter)
        want = render_blocks(build_context(conv, policy, profile=profile, meter=MessageMeter(profile)),
                             "anthropic", profile.name, MessageMeter(profile))
        got = cache(ctx, "anthropic", profile.name, fast_meter)
        assert got == want, end
        assert got.breakpoints == want.breakpoints
    recorded_ids = {c for m in history for c in m.call_ids} | {m.tool_call_id for m in history if m.tool_call_id}
    counted = [entry[0] for entry in fast_meter._cache.values()]  # every message the meter counted
    assert not [m.id for m in counted if set(m.call_ids) - recorded_ids or (m.tool_call_id or "toolu~0")
                not in recorded_ids]  # no copy with renamed ids was counted again
    assert any(set(m.call_ids) - recorded_ids for m in got_messages(cache))  # the wire did rename them


def got_messages(cache: RenderCache) -> list:
    return [m for r in cache._recent for m in r.messages]
