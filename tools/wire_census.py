"""How many of a transcript's requests the providers would refuse: the wire oracle over every call's context.

Usage: ``python tools/wire_census.py FILE [--conversation N]``. For each recorded model call it builds the
context ``build_context`` would (the ``budgeted`` strategy's, at the model's own window), renders the Messages
API and chat-completions bodies and counts, per rule, the calls whose body ``ctxlab.wire`` rejects. Issue 12
measured the pi session with it: 476 of 484 bodies refused before the declared rules (``sendable.py``), 0 after.
A maintainer's tool: the numbers it prints are not a chapter's.
"""

from __future__ import annotations

import argparse
import collections
from dataclasses import replace

from ctxlab.base.errors import CtxlabError
from ctxlab.bodies import to_anthropic_body, to_openai_body
from ctxlab.context import BudgetPolicy, build_context
from ctxlab.io.formats import load
from ctxlab.wire import check_anthropic, check_openai_chat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--conversation", type=int, default=0)
    args = parser.parse_args()
    conv = load(args.file).conversation(args.conversation)
    calls = [i for i, it in enumerate(conv.items) if getattr(it, "role", None) == "assistant" and it.thread == "main"]
    refused = {"anthropic": collections.Counter(), "openai-chat": collections.Counter()}
    bad = dict.fromkeys(refused, 0)
    built = 0
    for i in calls:
        try:
            ctx = build_context(replace(conv, items=conv.items[:i]), BudgetPolicy())
        except CtxlabError:
            continue
        built += 1
        for kind, found in (("anthropic", check_anthropic(to_anthropic_body(ctx))),
                            ("openai-chat", check_openai_chat(to_openai_body(ctx, "gpt-4o")))):
            bad[kind] += bool(found)
            refused[kind].update({v.rule for v in found})
    print(f"{args.file}: {built} of {len(calls)} calls built")
    for kind in refused:
        print(f"  {kind}: {bad[kind]} bodies refused; calls per rule: {dict(refused[kind]) or 'none'}")


if __name__ == "__main__":
    main()
