"""``python -m ctxlab replay``: a transcript replayed under a strategy, as a ledger.

    python -m ctxlab replay FILE [--strategy NAME] [--provider NAME] [--model NAME] [--window N]
                                 [--conversation N] [--warm] [--json] [--check] [--recorded]

Without ``--conversation``, every conversation of the file is replayed on its own (a tau-bench
file holds 200). ``--recorded`` prints what really happened instead (the recorded usage, priced)
with the two fidelity figures. ``--check`` validates every context built and exits 1 naming the
first call and rule that failed. API keys in what is printed are masked (:func:`ctxlab.redact.redact`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from .errors import CtxlabError
from .redact import redact


def add_parser(sub: Any) -> None:
    from .strategies import STRATEGY_NAMES

    rep = sub.add_parser("replay", help="replay a transcript under a strategy and print the ledger")
    rep.add_argument("file", help="a transcript (any format `inspect` reads)")
    rep.add_argument("--strategy", "-s", default="budgeted", choices=STRATEGY_NAMES, help="default: budgeted")
    rep.add_argument("--provider", choices=("anthropic", "openai"), help="cache rules to use (default: each call's)")
    rep.add_argument("--model", help="price and count as this model (default: each call's)")
    rep.add_argument("--window", type=_positive, metavar="TOKENS", help="context window (default: the model's)")
    rep.add_argument("--conversation", "-c", type=int, metavar="N", help="replay conversation N only (0-based)")
    rep.add_argument("--warm", action="store_true", help="start with the static head already cached")
    rep.add_argument("--json", action="store_true", help="print one JSON object")
    rep.add_argument("--check", action="store_true", help="validate every context; exit 1 on the first violation")
    rep.add_argument("--recorded", action="store_true", help="print the recorded ledger and fidelity instead")
    rep.add_argument("--rows", type=int, default=40, metavar="N", help="ledger rows shown in text output (default 40)")
    rep.add_argument("--compare", action="store_true", help="every strategy side by side (the leaderboard)")
    rep.add_argument("--facts", metavar="PATH", help="a fact checklist (JSON) to score with --compare")
    rep.add_argument("--lenient", dest="strict", action="store_false",
                     help="skip bad lines of the transcript and list them as notes (as inspect --lenient)")
    rep.set_defaults(run=cmd_replay)


def _positive(text: str) -> int:
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a window is a whole number of tokens (e.g. 200000), not {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"a window is a positive number of tokens, not {value}")
    return value


def _notes(transcript: Any, conv: Any) -> list[str]:
    """What the reader changed or skipped (a torn last line, ...): said, never dropped silently."""
    return list(dict.fromkeys([*transcript.notes, *conv.notes]))


def _jsonable(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj):
        return {k: _jsonable(v) for k, v in dataclasses.asdict(obj).items()}
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    return obj


def _rows(ledger: Any, conversation: str) -> list[dict[str, Any]]:
    return [{"conversation": conversation, **_jsonable(r)} for r in ledger.rows]


def _combined(rows_per_conversation: list[list[Any]]) -> list[Any]:
    """One leaderboard row per strategy summed over conversations: costs, tokens, compactions,
    summary calls and overflows add up; the hit rate is weighted by input tokens; a strategy that
    could not build a context in some conversation says in how many, and the first reason."""
    from .compare import CompareRow

    out = []
    for column in zip(*rows_per_conversation):
        ok = [r for r in column if not r.error]
        errors = [r.error for r in column if r.error]
        if not ok:
            out.append(CompareRow(column[0].name, None, None, 0, 0, 0, 0, error=errors[0]))
            continue
        tokens = sum(r.total_input_tokens for r in ok)
        costs = [r.cost_usd for r in ok]
        out.append(CompareRow(
            name=column[0].name, cost_usd=None if None in costs else sum(costs),
            hit_rate=sum((r.hit_rate or 0.0) * r.total_input_tokens for r in ok) / tokens if tokens else 0.0,
            compactions=sum(r.compactions for r in ok), summary_calls=sum(r.summary_calls for r in ok),
            overflows=sum(r.overflows for r in ok), total_input_tokens=tokens,
            violations=sum(r.violations for r in column),
            error=f"in {len(errors)} of {len(column)} conversations: {errors[0]}" if errors else None))
    return out


def _over_window(conv: Any, args: argparse.Namespace) -> str | None:
    """A note when a call the transcript recorded already sent more than the model's window: no
    strategy can then build that call's context, and the figures (or the model) are in doubt.
    ``None`` when every recorded prompt fits."""
    from .profiles import profile_for

    window = args.window or profile_for(args.model or conv.model, args.provider or conv.provider).context_window
    over = [m for m in conv.messages if m.usage and m.usage.total_input_tokens > window]
    if not over:
        return None
    worst = max(over, key=lambda m: m.usage.total_input_tokens)
    return (f"conversation {conv.id}: {len(over)} recorded call(s) sent more than the {window:,}-token window of "
            f"{args.model or conv.model or 'the default model'} (the largest {worst.usage.total_input_tokens:,} "
            f"tokens, {worst.where()}): the transcript's own figures do not fit the model's window; "
            "pass --window N (or --model) to replay it under the window it really had.")


def cmd_compare(args: argparse.Namespace) -> int:
    """``replay --compare``: the leaderboard. Without ``--conversation`` every conversation of the
    file is compared (a tau-bench run, a proxy log's threads of calls) and a file of several gets
    one table summed over them; ``--check`` fails on any violation and on any strategy that
    cannot build a context in any conversation."""
    from .compare import compare, format_rows
    from .facts import load_facts
    from .formats import load

    transcript = load(Path(args.file), strict=args.strict)
    if not transcript.conversations:
        raise CtxlabError(f"{transcript.file}: no conversations found ({transcript.format}).")
    indices = [args.conversation] if args.conversation is not None else range(len(transcript.conversations))
    chosen = [transcript.conversation(i) for i in indices]  # a bad N: ValueError naming the range
    if args.facts and len(chosen) > 1:
        raise CtxlabError(f"{transcript.file} holds {len(chosen)} conversations; a fact checklist belongs to one: "
                          "pick it with --conversation N.")
    facts = load_facts(args.facts) if args.facts else None  # a bad checklist: CtxlabError naming the file
    per_conv = [(conv, compare(conv, window=args.window, provider=args.provider, model=args.model, facts=facts,
                               check=args.check)) for conv in chosen]
    rows = per_conv[0][1] if len(per_conv) == 1 else _combined([r for _, r in per_conv])
    failed = [(conv.id, r) for conv, conv_rows in per_conv for r in conv_rows
              if r.violations or (args.check and r.error)]
    if args.json:
        body: dict[str, Any] = {"file": transcript.file, "window": args.window}
        if len(per_conv) == 1:
            body.update(conversation=chosen[0].id, strategies=[r.as_dict() for r in rows])
        else:
            body.update(conversations=[{"conversation": c.id, "strategies": [r.as_dict() for r in rs]}
                                       for c, rs in per_conv], strategies=[r.as_dict() for r in rows])
        print(redact(json.dumps(body, ensure_ascii=False, indent=1)))
    else:
        what = chosen[0].id if len(chosen) == 1 else f"{len(chosen)} conversations, summed"
        print(redact(f"{transcript.file} ({what}): every strategy replayed")
              + (f", window {args.window:,}" if args.window else ""))
        print(format_rows(rows))
    for conv, conv_rows in per_conv:  # when the file's own figures cannot fit the window, say so
        if any(r.error for r in conv_rows) and not args.json and (note := _over_window(conv, args)):
            print(redact(f"note: {note}"))
    if failed:
        cid, r = failed[0]
        why = f"broke {r.violations} rules" if r.violations else f"could not build a context: {r.error}"
        print(redact(f"ctxlab replay --compare --check: {len(failed)} failure(s); first: conversation {cid}, "
                     f"strategy {r.name} {why}"), file=sys.stderr)
        return 1
    if args.check and not args.json:
        print("check: OK, every strategy built every context and passed every rule")
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    if args.compare:
        return cmd_compare(args)
    from .fidelity import end_to_end, structural
    from .formats import load
    from .ledger import Ledger, recorded_ledger
    from .replay import replay

    transcript = load(Path(args.file), strict=args.strict)
    if not transcript.conversations:
        raise CtxlabError(f"{transcript.file}: no conversations found ({transcript.format}).")
    indices = [args.conversation] if args.conversation is not None else range(len(transcript.conversations))
    chosen = [(i, transcript.conversation(i)) for i in indices]
    out: dict[str, Any] = {"file": transcript.file, "format": transcript.format,
                           "strategy": "recorded usage" if args.recorded else args.strategy,
                           "conversations": [c.id for _, c in chosen], "rows": [], "notes": []}
    all_rows, failures, texts = [], [], []
    fidelity: dict[str, Any] = {"structural": {"calls": 0, "within_calls": 0}, "end_to_end": {"calls": 0, "within_calls": 0}}
    skipped = []
    for _, conv in chosen:
        out["notes"] += [f"{conv.id}: {n}" for n in _notes(transcript, conv)]
        if args.recorded:
            try:
                ledger = recorded_ledger(conv)
                fit, e2e = structural(conv), end_to_end(conv)
            except CtxlabError as err:
                if len(chosen) == 1:
                    raise
                skipped.append(conv.id)  # one bad conversation of many: said and skipped, as below
                out["notes"].append(f"{conv.id}: not replayed: {' '.join(str(err).split())}")
                continue
            for key, calls, share in (("structural", len(fit.calls), fit.within), ("end_to_end", e2e.calls, e2e.within)):
                fidelity[key]["calls"] += calls
                fidelity[key]["within_calls"] += round(share * calls)
            texts.append(f"{conv.id}:\n{fit}\n{e2e}")
        else:
            # a progress bar on a terminal only: piped output and notebooks stay clean
            try:
                result = replay(conv, args.strategy, provider=args.provider, model=args.model, window=args.window,
                                warm=args.warm, check=args.check, progress=sys.stderr.isatty() and len(chosen) == 1)
            except CtxlabError as err:
                if len(chosen) == 1:
                    raise
                # one bad conversation of many: said and skipped, the others still replayed
                skipped.append(conv.id)
                out["notes"].append(f"{conv.id}: not replayed: {' '.join(str(err).split())}")
                continue
            ledger = result.ledger
            out["notes"] += [f"{conv.id}: {n}" for n in result.notes]
            failures += [(conv.id, rec.call, v) for rec in result.records for v in rec.violations]
        all_rows += ledger.rows
        out["rows"] += _rows(ledger, conv.id)
        texts.append(f"== {conv.id} ({len(ledger.rows)} calls)\n{ledger.to_text(max_rows=args.rows)}")
    if skipped:
        out["skipped_conversations"] = skipped
        print(redact(f"ctxlab replay: {len(skipped)} of {len(chosen)} conversations could not be replayed "
                     f"({', '.join(skipped[:5])}{' ...' if len(skipped) > 5 else ''}); see the notes"), file=sys.stderr)
        if len(skipped) == len(chosen):
            return 2
    overall = Ledger(all_rows)
    out["totals"] = _jsonable(overall.totals())
    out["per_thread"] = {thread: _jsonable(t) for thread, t in overall.per_thread().items()}
    out["prices"] = overall.prices
    if args.recorded:
        for key in fidelity:
            calls = fidelity[key]["calls"]
            fidelity[key]["within"] = fidelity[key].pop("within_calls") / calls if calls else None
        if transcript.format == "proxy-log":  # the log holds the bytes sent: ctxlab's own bodies against them
            from .fidelity_bodies import body_fidelity

            bodies = body_fidelity(Path(args.file), strict=args.strict)
            fidelity["body"] = bodies.figures()
            texts.append(str(bodies))
        out["fidelity"] = fidelity
    if args.check:
        out["check"] = {"ok": not failures,
                        "violations": [{"conversation": cid, "thread": call.thread, "call": call.index,
                                        "rule": v.rule, "detail": v.detail} for cid, call, v in failures]}
    if args.json:
        print(redact(json.dumps(out, ensure_ascii=False, indent=1)))  # keys masked in what is shown, not counted
    else:
        print(redact("\n\n".join(texts)))
        t = overall.totals()
        cost = f"${t.cost_usd:,.4f}" if t.cost_usd is not None else "unpriced"
        print(f"\nall: {t.calls} calls, {t.total_input_tokens:,} prompt tokens, hit rate {t.hit_rate:.1%}, "
              f"cost {cost}, overflows {t.overflow_calls} ({out['strategy']}; "
              f"prices: {out['prices']['package']} {out['prices']['version']})")
        for n in out["notes"]:
            print(redact(f"note: {n}"))
        if args.check:
            print("check: OK, every context passed" if not failures else f"check: {len(failures)} violations")
            if args.strategy in ("full", "recorded") and t.overflow_calls:
                print(f"check: {args.strategy} promises no budget: its {t.overflow_calls} calls over the window are "
                      "reported as overflows in the ledger, not as check failures")
    if failures:
        cid, call, v = failures[0]
        print(redact(f"ctxlab replay --check: {cid} thread {call.thread!r} call {call.index}: {v}"), file=sys.stderr)
        return 1
    return 0
