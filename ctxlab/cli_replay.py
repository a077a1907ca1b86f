"""``python -m ctxlab replay``: a transcript replayed under a strategy, as a ledger.

    python -m ctxlab replay FILE [--strategy NAME] [--provider NAME] [--model NAME] [--window N]
                                 [--conversation N] [--warm] [--json] [--check] [--recorded]

Without ``--conversation``, every conversation of the file is replayed on its own (a tau-bench
file holds 200). ``--recorded`` prints what really happened instead (the recorded usage, priced)
with the two fidelity figures. ``--check`` validates every context built and exits 1 naming the
first call and rule that failed. API keys in what is printed are masked (:func:`ctxlab.redact.redact`), then
control, bidi and invisible characters from the file are shown as escapes (:func:`ctxlab.safe_text.shown`;
``--json`` writes them as ``\\uNNNN`` and keeps the exact text).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from .errors import CtxlabError
from .safe_text import safe_json, shown


def add_parser(sub: Any) -> None:
    from .strategies import STRATEGY_NAMES

    rep = sub.add_parser("replay", help="replay a transcript under a strategy and print the ledger")
    rep.add_argument("file", help="a transcript (any format `inspect` reads)")
    rep.add_argument("--strategy", "-s", default="budgeted", choices=STRATEGY_NAMES, help="default: budgeted")
    rep.add_argument("--provider", choices=("anthropic", "openai"), help="cache rules to use (default: each call's)")
    rep.add_argument("--model", help="price and count as this model (default: each call's)")
    rep.add_argument("--window", type=_positive, metavar="TOKENS", help="context window (default: the model's)")
    rep.add_argument("--conversation", "-c", metavar="N", help="replay conversation N only (0-based index, or its id)")
    rep.add_argument("--warm", action="store_true", help="start with the static head already cached")
    rep.add_argument("--json", action="store_true", help="print one JSON object")
    rep.add_argument("--check", action="store_true",
                     help="validate every context; exit 1 on the first violation or a conversation not replayed")
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


def _combined(per_conv: list[tuple[Any, list[Any]]]) -> tuple[list[Any], list[str]]:
    """One leaderboard row per strategy summed over the conversations where it built every context
    (costs, tokens, compactions, summary calls and overflows add up; the hit rate is weighted by
    input tokens), and the notes that say what the sums leave out: in how many conversations a
    strategy could not build a context (the first, by index and id, with the whole reason), and how
    many conversations are unpriced (no known model). A strategy that failed everywhere keeps its error."""
    from .compare import CompareRow

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
            out.append(CompareRow(name, None, None, 0, 0, 0, 0, error=f"in every conversation ({failed[0][2].error})"))
            continue
        tokens = sum(r.total_input_tokens for r in ok)
        priced = [r.cost_usd for r in ok if r.cost_usd is not None]
        out.append(CompareRow(
            name=name, cost_usd=sum(priced) if priced else None,
            hit_rate=sum((r.hit_rate or 0.0) * r.total_input_tokens for r in ok) / tokens if tokens else 0.0,
            compactions=sum(r.compactions for r in ok), summary_calls=sum(r.summary_calls for r in ok),
            overflows=sum(r.overflows for r in ok), total_input_tokens=tokens,
            violations=sum(r.violations for r in column)))
    unpriced = sum(1 for _, rows in per_conv if all(r.cost_usd is None for r in rows))
    if unpriced and unpriced < len(per_conv):
        notes.append(f"{unpriced} of {len(per_conv)} conversations are unpriced (no model ctxlab can price): "
                     "each cost sums the priced ones (--model NAME prices them all as one model)")
    return out, notes


def _grouped(notes: list[str], ids: list[str]) -> list[str]:
    """Notes as printed: one that several conversations share (``"<id>: <text>"`` with the same
    text) is printed once with their count. ``["a: x", "b: x", "a: y"]`` → ``["(2 conversations) x", "a: y"]``."""
    by_text: dict[str, list[str]] = {}
    order: list[str] = []
    for note in notes:
        cid = next((c for c in ids if note.startswith(f"{c}: ")), None)
        text = note[len(cid) + 2:] if cid is not None else note
        if text not in by_text:
            order.append(text)
        by_text.setdefault(text, []).append(note)
    return [by_text[t][0] if len(by_text[t]) == 1 else f"({len(by_text[t])} conversations) {t}" for t in order]


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
    picked = conversation_index(transcript, args.conversation)
    indices = [picked] if picked is not None else range(len(transcript.conversations))
    chosen = [transcript.conversation(i) for i in indices]
    if args.facts and len(chosen) > 1:
        raise CtxlabError(f"{transcript.file} holds {len(chosen)} conversations; a fact checklist belongs to one: "
                          "pick it with --conversation N.")
    facts = load_facts(args.facts) if args.facts else None  # a bad checklist: CtxlabError naming the file
    per_conv = [(conv, compare(conv, window=args.window, provider=args.provider, model=args.model, facts=facts,
                               check=args.check)) for conv in chosen]
    rows, sum_notes = (per_conv[0][1], []) if len(per_conv) == 1 else _combined(per_conv)
    reader_notes = list(dict.fromkeys([*transcript.notes, *(n for c in chosen for n in c.notes
                                                           if n.startswith("skipped"))]))
    failed = [(conv.id, r) for conv, conv_rows in per_conv for r in conv_rows
              if r.violations or (args.check and r.error)]
    if args.json:
        body: dict[str, Any] = {"file": transcript.file, "window": args.window}
        if len(per_conv) == 1:
            body.update(conversation=chosen[0].id, strategies=[r.as_dict() for r in rows])
        else:
            body.update(conversations=[{"conversation": c.id, "strategies": [r.as_dict() for r in rs]}
                                       for c, rs in per_conv], strategies=[r.as_dict() for r in rows])
        body["notes"] = reader_notes + sum_notes
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
        cid, r = failed[0]
        why = f"broke {r.violations} rules" if r.violations else f"could not build a context: {r.error}"
        print(shown(f"ctxlab replay --compare --check: {len(failed)} failure(s); first: conversation {cid}, "
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
    picked = conversation_index(transcript, args.conversation)
    indices = [picked] if picked is not None else range(len(transcript.conversations))
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
            # what was recorded is reported whatever the pairing: only ctxlab's own rendering (end to end)
            # needs contexts it can build, and a conversation whose contexts cannot be built says why
            ledger, fit = recorded_ledger(conv), structural(conv)
            try:
                e2e = end_to_end(conv)
            except CtxlabError as err:
                e2e = None
                out["notes"].append(f"{conv.id}: end-to-end fidelity not measured: {' '.join(str(err).split())}")
            for key, report in (("structural", fit), ("end_to_end", e2e)):
                calls = 0 if report is None else (len(report.calls) if key == "structural" else report.calls)
                fidelity[key]["calls"] += calls
                fidelity[key]["within_calls"] += round(report.within * calls) if calls else 0
            if len(fit.calls) or (e2e and e2e.calls) or len(chosen) == 1:  # 984 empty reports say nothing
                texts.append(f"{shown(conv.id)}:\n{fit}\n{e2e if e2e is not None else 'end to end: not measured'}")
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
        texts.append(f"== {shown(conv.id)} ({len(ledger.rows)} calls)\n{ledger.to_text(max_rows=args.rows)}")
    if skipped:
        out["skipped_conversations"] = skipped
        said = f"{skipped[0]}: not replayed: "
        why = next(n for n in out["notes"] if n.startswith(said)).removeprefix(said)
        print(shown(f"ctxlab replay{' --check' if args.check else ''}: {len(skipped)} of {len(chosen)} conversations "
                    f"could not be replayed ({', '.join(skipped[:5])}{' ...' if len(skipped) > 5 else ''}); "
                    f"first: {skipped[0]}: {why}"), file=sys.stderr)
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
        out["check"] = {"ok": not failures and not skipped, "skipped_conversations": len(skipped),
                        "violations": [{"conversation": cid, "thread": call.thread, "call": call.index,
                                        "rule": v.rule, "detail": v.detail} for cid, call, v in failures]}
    if args.json:
        print(safe_json(out))  # keys masked in what is shown, not counted; control characters as \uNNNN
    else:
        print(shown("\n\n".join(texts), multiline=True))  # each field is escaped already: a second net
        t = overall.totals()
        cost = f"${t.cost_usd:,.4f}" if t.cost_usd is not None else "unpriced"
        print(f"\nall: {t.calls} calls, {t.total_input_tokens:,} prompt tokens, hit rate {t.hit_rate:.1%}, "
              f"cost {cost}, overflows {t.overflow_calls}"
              + (f", {len(skipped)} of {len(chosen)} conversations skipped" if skipped else "")
              + f" ({out['strategy']}; "
              f"prices: {shown(out['prices']['package'])} {shown(out['prices']['version'])})")
        for n in _grouped(out["notes"], out["conversations"]):  # --json keeps every note as it is
            print(shown(f"note: {n}"))
        if args.check:
            print("check: OK, every context passed" if not failures and not skipped else
                  f"check: {len(failures)} violations, {len(skipped)} of {len(chosen)} conversations not replayed")
            if args.strategy in ("full", "recorded") and t.overflow_calls:
                print(f"check: {args.strategy} promises no budget: its {t.overflow_calls} calls over the window are "
                      "reported as overflows in the ledger, not as check failures")
    if failures:
        cid, call, v = failures[0]
        print(shown(f"ctxlab replay --check: {cid} thread {call.thread!r} call {call.index}: {v}"), file=sys.stderr)
        return 1
    return 1 if args.check and skipped else 0  # --check: a conversation not replayed is a failure (named above)
