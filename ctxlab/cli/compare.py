"""``python -m ctxlab replay FILE --compare``: every strategy side by side, over every conversation.

Unlike a plain ``replay`` (one strategy, a ledger per conversation; :mod:`ctxlab.cli.replay`), this
prints the leaderboard of :func:`ctxlab.lab.compare.compare`: for a file of several conversations one
table summed over the conversations where each strategy built every context, with notes for what
the sums leave out. ``--check`` fails (exit 1) on any violation (a summary call over the window is one,
``side_call_window``), on any strategy that could not build a context in any conversation, and on one
that built none at all (every call of a conversation had nothing before it to send; the file records no
model call); stderr names the first failure: conversation, strategy, and call and rule. Chapter 08.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ctxlab.base.errors import CtxlabError
from ctxlab.base.safe_text import safe_json, shown
from ctxlab.cli.models import provider_follows_model
from ctxlab.io.checklist import load_facts
from ctxlab.io.formats import load
from ctxlab.lab.compare import CompareRow, compare, format_rows
from ctxlab.strategies import model_calls
from ctxlab.tables.profiles import profile_for


def _combined(per_conv: list[tuple[Any, list[Any]]]) -> tuple[list[Any], list[str]]:
    """One leaderboard row per strategy summed over the conversations where it built every context
    (costs, tokens, compactions, summary calls and overflows add up; the hit rate is weighted by
    input tokens), and the notes that say what the sums leave out: in how many conversations a
    strategy could not build a context (the first, by index and id, with the whole reason), and how
    many conversations are unpriced (no known model). A strategy that failed everywhere keeps its error."""
    out, notes = [], []
    for column in zip(*(rows for _, rows in per_conv)):
        name = column[0].name
        ok = [r for r in column if not r.error]
        failed = [(k, conv, r) for k, ((conv, _), r) in enumerate(zip(per_conv, column)) if r.error]
        if failed:
            k, conv, r = failed[0]
            notes.append(f"{name}: could not build a context in {len(failed)} of {len(column)} conversations, left "
                         f"out of its sums (first: #{k} {conv.id!r}: {r.error})")
        if not ok:
            out.append(CompareRow(name, None, None, 0, 0, 0, 0, error=f"in every conversation ({failed[0][2].error})",
                                  contexts=0))
            continue
        tokens = sum(r.total_input_tokens for r in ok)
        priced = [r.cost_usd for r in ok if r.cost_usd is not None]
        out.append(CompareRow(
            name=name, cost_usd=sum(priced) if priced else None,
            hit_rate=sum((r.hit_rate or 0.0) * r.total_input_tokens for r in ok) / tokens if tokens else 0.0,
            compactions=sum(r.compactions for r in ok), summary_calls=sum(r.summary_calls for r in ok),
            overflows=sum(r.overflows for r in ok), total_input_tokens=tokens,
            violations=sum(r.violations for r in column), summary_overflows=sum(r.summary_overflows for r in ok),
            contexts=sum(r.contexts or 0 for r in ok),
            first_violation=next((r.first_violation for r in column if r.first_violation), None)))
    unpriced = sum(1 for _, rows in per_conv if all(r.cost_usd is None for r in rows))
    if unpriced and unpriced < len(per_conv):
        notes.append(f"{unpriced} of {len(per_conv)} conversations are unpriced (no model ctxlab can price): "
                     "each cost sums the priced ones (--model NAME prices them all as one model)")
    return out, notes


def conversation_index(transcript: Any, value: str | int | None) -> int | None:
    """``--conversation`` as given: an index (``3``) or a conversation's id (``"task3-trial0"``,
    ``"2024-08-06 09:06:27"``); None stays None. A value that is neither names the choices (CtxlabError)."""
    if value is None:
        return None
    text = str(value).strip()
    if text.isdigit():
        index = int(text)
        transcript.conversation(index)  # a bad N: ValueError naming the range
        return index
    for k, conv in enumerate(transcript.conversations):
        if conv.id == text:
            return k
    some = ", ".join(f"{k}: {c.id}" for k, c in enumerate(transcript.conversations[:5]))
    raise CtxlabError(f"{transcript.file} has no conversation {text!r}: give an index 0..{len(transcript.conversations) - 1} "
                      f"or an id ({some}{' ...' if len(transcript.conversations) > 5 else ''}).")


def _over_window(conv: Any, args: argparse.Namespace) -> str | None:
    """A note when a call the transcript recorded already sent more than the model's window: no
    strategy can then build that call's context, and the figures (or the model) are in doubt.
    ``None`` when every recorded prompt fits."""
    window = args.window or profile_for(args.model or conv.model, args.provider or conv.provider).context_window
    over = [m for m in conv.messages if m.usage and m.usage.total_input_tokens > window]
    if not over:
        return None
    worst = max(over, key=lambda m: m.usage.total_input_tokens)
    return (f"conversation {conv.id}: {len(over)} recorded call(s) sent more than the {window:,}-token window of "
            f"{args.model or conv.model or 'the default model'} (the largest {worst.usage.total_input_tokens:,} "
            f"tokens, {worst.where()}): the transcript's own figures do not fit the model's window; "
            "pass --window N (or --model) to replay it under the window it really had.")


def failures(per_conv: list[tuple[Any, list[CompareRow]]], check: bool) -> list[tuple[str, str, str]]:
    """``(conversation id, strategy, why)`` for each failure of ``--compare --check``, in order: a broken rule
    (its call and rule named), a strategy that could not build a context, one that built none in a conversation
    with model calls (each had nothing before it to send), one that built none in any conversation (the file
    records no model call). Chapter 08."""
    out, built = [], {}  # built: strategy -> contexts built over every conversation
    for conv, rows in per_conv:
        calls = len(model_calls(conv))
        for r in rows:
            built[r.name] = built.get(r.name, 0) + (r.contexts or 0)
            if r.violations:
                out.append((conv.id, r.name, f"broke {r.violations} rule(s), the first at {r.first_violation}"))
            elif check and r.error:
                out.append((conv.id, r.name, f"could not build a context: {r.error}"))
            elif check and calls and r.contexts == 0:
                out.append((conv.id, r.name, f"built no context: none of its {calls} model call(s) has anything "
                                             "before it to send"))
    where = per_conv[0][0].id if len(per_conv) == 1 else f"(all {len(per_conv)})"
    return out + [(where, name, "built no context in any conversation: the file records no model call to replay")
                  for name, n in built.items() if check and not n and all(f[1] != name for f in out)]


def _progress(k: int, n: int) -> Callable[[str], None] | None:
    """On a terminal, a line on stderr rewritten after each strategy (a replay of a long transcript takes
    seconds per strategy); None when stderr is a file or a pipe, so what scripts read stays clean."""
    if not sys.stderr.isatty():
        return None
    done: list[str] = []

    def say(name: str) -> None:
        done.append(name)
        where = f"conversation {k + 1}/{n}: " if n > 1 else ""
        noun = "strategy" if len(done) == 1 else "strategies"
        print(f"\r{where}{len(done)} {noun} replayed (last: {shown(name)})", end="", file=sys.stderr, flush=True)
    return say


def cmd_compare(args: argparse.Namespace) -> int:
    """``replay --compare``: the leaderboard. Without ``--conversation`` every conversation of the
    file is compared (a tau-bench run, a proxy log's threads of calls) and a file of several gets
    one table summed over them; ``--check`` fails on any violation and on any strategy that
    cannot build a context in any conversation."""
    transcript = load(Path(args.file), strict=args.strict)
    if not transcript.conversations:
        raise CtxlabError(f"{transcript.file}: no conversations found ({transcript.format}).")
    picked = conversation_index(transcript, args.conversation)
    indices = [picked] if picked is not None else range(len(transcript.conversations))
    chosen = [transcript.conversation(i) for i in indices]
    provider_follows_model(args, chosen)  # --model of another provider, no --provider: its rules (one note)
    if args.facts and len(chosen) > 1:
        raise CtxlabError(f"{transcript.file} holds {len(chosen)} conversations; a fact checklist belongs to one: "
                          "pick it with --conversation N.")
    facts = load_facts(args.facts) if args.facts else None  # a bad checklist: CtxlabError naming the file
    per_conv = [(conv, compare(conv, window=args.window, provider=args.provider, model=args.model, facts=facts,
                               check=args.check, progress=_progress(k, len(chosen))))
                for k, conv in enumerate(chosen)]
    if sys.stderr.isatty():
        print(file=sys.stderr)  # end the progress line
    rows, sum_notes = (per_conv[0][1], []) if len(per_conv) == 1 else _combined(per_conv)
    reader_notes = list(dict.fromkeys([*transcript.notes, *(n for c in chosen for n in c.notes
                                                           if n.startswith("skipped"))]))
    failed = failures(per_conv, args.check)
    if args.json:
        body: dict[str, Any] = {"file": transcript.file, "window": args.window}
        if len(per_conv) == 1:
            body.update(conversation=chosen[0].id, strategies=[r.as_dict() for r in rows])
        else:
            body.update(conversations=[{"conversation": c.id, "strategies": [r.as_dict() for r in rs]}
                                       for c, rs in per_conv], strategies=[r.as_dict() for r in rows])
        body["notes"] = reader_notes + sum_notes
        if args.check:
            body["check"] = {"ok": not failed, "failures": [{"conversation": c, "strategy": n, "why": w}
                                                            for c, n, w in failed]}
        print(safe_json(body))
    else:
        what = chosen[0].id if len(chosen) == 1 else f"{len(chosen)} conversations, summed"
        print(shown(f"{transcript.file} ({what}): every strategy replayed")
              + (f", window {args.window:,}" if args.window else ""))
        print(format_rows(rows))  # escapes each row's error itself
        for note in reader_notes + sum_notes:  # lines skipped under --lenient; what the sums leave out
            print(shown(f"note: {note}"))
    for conv, conv_rows in per_conv:  # when the file's own figures cannot fit the window, say so
        if any(r.error for r in conv_rows) and not args.json and (note := _over_window(conv, args)):
            print(shown(f"note: {note}"))
    if failed:
        cid, name, why = failed[0]
        print(shown(f"ctxlab replay --compare --check: {len(failed)} failure(s); first: conversation {cid}, "
                    f"strategy {name} {why}"), file=sys.stderr)
        return 1
    if args.check and not args.json:
        print("check: OK, every strategy built every context and passed every rule")
    return 0
