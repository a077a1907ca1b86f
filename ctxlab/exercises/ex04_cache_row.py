"""Exercise 4 (chapter 04): one ledger row — what a request reads from the prefix cache, writes, and pays.

A request is a list of blocks ``(label, tokens)``: tools, system prompt, messages, in order. Two
blocks are the same when label and tokens are equal (as in ``ctxlab.cache.request_from_sizes``).
The cache held nothing before ``previous`` was sent; ``current`` follows it a moment later (no
expiry, same model). Both rules use a minimum cacheable prompt of 1,024 tokens (Claude Sonnet 4.6,
gpt-4o):

* ``"anthropic"`` — one breakpoint, on each request's last block. ``previous`` wrote one entry
  holding all its tokens (if it had at least 1,024). ``current`` reads that entry only if all of
  ``previous`` is the start of ``current``; everything after the read is written. (Requests here
  add fewer than 20 blocks, so the 20-block lookback never matters.)
* ``"openai"`` — no breakpoints: ``current`` reads the tokens of the blocks it shares with
  ``previous`` from the start, rounded down to a multiple of 128, if that is at least 1,024.
  gpt-4o bills no cache write: the rest is uncached.

A request under 1,024 tokens reads and writes nothing. The row is ``(cache_read, cache_write,
uncached, cost_usd)`` with ``prices = (input, cache_read, cache_write)`` in USD per million tokens.
The reference agrees with ``ctxlab.cache_anthropic.AnthropicCache`` / ``ctxlab.cache_openai.OpenAICache`` on every case
(``tests/test_exercises.py``). Sources: ``ctxlab/tables/cache_rules.py``.
"""

from __future__ import annotations

import math
import random

from ctxlab.exercises._grader import Exercise, by_size, short

Block = tuple[str, int]  # (label, tokens)

# USD per million tokens (input, cache read, cache write) from genai-prices 0.2.3:
# claude-sonnet-4-6 and gpt-4o (which bills no cache write).
PRICES = {"anthropic": (3.0, 0.3, 3.75), "openai": (2.5, 1.25, 0.0)}


def cache_row(previous: list[tuple[str, int]], current: list[tuple[str, int]], provider: str,
              prices: tuple[float, float, float]) -> tuple[int, int, int, float]:
    minimum = 1024  # tokens: the smallest prompt either provider caches
    total = sum(tokens for _, tokens in current)
    same_blocks, shared = 0, 0  # leading blocks equal in both requests, and their tokens
    for old, new in zip(previous, current):
        if old != new:
            break
        same_blocks, shared = same_blocks + 1, shared + new[1]
    read = write = 0
    if total >= minimum and provider == "anthropic":
        whole_entry = same_blocks == len(previous) and shared >= minimum  # previous wrote it, all of it is here
        read = shared if whole_entry else 0
        write = total - read  # the breakpoint on the last block stores the rest
    elif total >= minimum:  # openai
        steps = shared // 128 * 128
        read = steps if steps >= minimum else 0
    uncached = total - read - write
    input_price, read_price, write_price = prices
    cost = (uncached * input_price + read * read_price + write * write_price) / 1_000_000
    return read, write, uncached, cost


def same_row(expected: tuple, actual: tuple) -> bool:
    """Token counts exactly equal; the cost within floating-point rounding."""
    return (len(actual) == 4 and tuple(expected[:3]) == tuple(actual[:3])
            and math.isclose(expected[3], actual[3], rel_tol=1e-9, abs_tol=1e-12))


def _grow(rng: random.Random, blocks: list[Block], k: int, turn: int) -> list[Block]:
    """``blocks`` plus ``k`` new message blocks of random size."""
    kinds = ("assistant", "tool", "user")
    return blocks + [(f"{kinds[j % 3]} {turn + j}", rng.choice((12, 40, 90, 130, 260, 380, 700))) for j in range(k)]


def _pair(rng: random.Random) -> tuple[list[Block], list[Block]]:
    head = [("tools", rng.choice((300, 640, 1024, 1500))), ("system", rng.choice((0, 128, 333, 896, 2600)))]
    previous = _grow(rng, head, rng.randint(0, 4), 1)
    scenario = rng.choice(("append", "append", "edit", "drop", "rewind", "new tools"))
    if scenario == "append":  # the next call of an agent loop: only new blocks at the end
        current = _grow(rng, previous, rng.randint(0, 3), 10)
    elif scenario == "edit":  # one block changed (an edited system prompt, a pruned result)
        j = rng.randrange(len(previous))
        label, tokens = previous[j]
        current = _grow(rng, previous[:j] + [(label, tokens + rng.choice((5, 64, 128)))] + previous[j + 1:],
                        rng.randint(0, 2), 10)
    elif scenario == "drop":  # a sliding window dropped the oldest message
        current = _grow(rng, head + previous[3:], rng.randint(1, 2), 10)
    elif scenario == "rewind":  # a fork back to an earlier point, then a different message
        current = _grow(rng, previous[: rng.randint(1, len(previous))], 1, 20)
    else:
        current = _grow(rng, [("tools v2", head[0][1] + 50)] + previous[1:], 1, 10)
    return previous, current


def _cases() -> list[tuple]:
    rng = random.Random(4)  # fixed seed: the same requests on every run
    edges = [  # the boundaries: exactly the minimum, one below, one 128-step above
        ([("system", 1024)], [("system", 1024), ("user 1", 100)]),
        ([("system", 1023)], [("system", 1023), ("user 1", 100)]),
        ([("system", 1000)], [("system", 1000), ("user 1", 24)]),
        ([("system", 1000)], [("system", 1000), ("user 1", 23)]),
        ([("system", 1151)], [("system", 1151), ("user 1", 1)]),
        ([("system", 1152)], [("system", 1152), ("user 1", 1)]),
    ]
    cases: list[tuple] = [(p, c, provider, PRICES[provider]) for p, c in edges for provider in PRICES]
    for _ in range(120):
        previous, current = _pair(rng)
        provider = rng.choice(("anthropic", "openai"))
        cases.append((previous, current, provider, PRICES[provider]))
    # fewest blocks first, then the smaller prompt
    return by_size(cases, lambda c: (len(c[0]) + len(c[1]), sum(t for _, t in c[1])))


def _show(args: tuple) -> str:
    previous, current, provider, prices = args
    return f"previous={previous!r}, current={current!r}, provider={provider!r}, prices={prices!r}"


EXERCISE = Exercise(
    number=4,
    title="one ledger row: cache read, write, uncached, cost",
    function="cache_row",
    signature=("cache_row(previous: list[tuple[str, int]], current: list[tuple[str, int]], provider: str, "
               "prices: tuple[float, float, float]) -> tuple[int, int, int, float]"),
    cases=_cases,
    reference=cache_row,
    same=same_row,
    show_input=_show,
    show_output=short,
    hints=(
        "Start with what both rules need: the total of current, and how many leading blocks (and "
        "tokens) current shares with previous. Under 1,024 tokens in all, nothing is read or written.",
        "Anthropic: the read is all of previous or nothing — all of previous must be the start of "
        "current, and previous must have reached 1,024 tokens to be written. The write is the rest. "
        "OpenAI: round the shared tokens down to a multiple of 128 and keep them only if >= 1,024; no write.",
        "uncached = total - read - write; cost = (uncached * input + read * cache_read + write * "
        "cache_write) / 1,000,000. 'At least 1,024' means >= 1024: a prompt of exactly 1,024 is cached.",
    ),
)
