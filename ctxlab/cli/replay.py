"""``python -m ctxlab replay``: a transcript replayed under a strategy, as a ledger.

    python -m ctxlab replay FILE [--strategy NAME] [--provider NAME] [--model NAME] [--window N]
                                 [--conversation N] [--warm] [--json] [--check] [--recorded]

Without ``--conversation``, every conversation of the file is replayed on its own (a tau-bench
file holds 200). ``--recorded`` prints what really happened instead (the recorded usage, priced)
with the two fidelity figures. ``--check`` validates every context built and exits 1 naming the
first call and rule that failed. A retired model (the transcript's or ``--model``'s) gets one
``note:`` line, as of the price table's date; a mistyped ``--model`` exits 2 with a did-you-mean
(:mod:`ctxlab.cli.models`); ``--model`` of another provider without ``--provider`` is replayed under that
provider's cache rules, with one note (:func:`ctxlab.cli.models.follow_model`). A price note every row of a
model repeats is printed once, after the table (``--json`` rows keep theirs). API keys in what is printed are
masked (:func:`ctxlab.base.redact.redact`), then control, bidi and invisible characters from the file are shown
as escapes (:func:`ctxlab.base.safe_text.shown`; ``--json`` writes them as ``\\uNNNN`` and keeps the exact text).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from ctxlab.base.errors import CtxlabError
from ctxlab.base.safe_text import safe_json, shown
from ctxlab.cli.compare import cmd_compare, conversation_index
from ctxlab.cli.models import check_model_option, model_notes, provider_follows_model, refused
from ctxlab.fast import FAST
from ctxlab.io.formats import load
from ctxlab.lab.fidelity import structural
from ctxlab.lab.fidelity_bodies import body_fidelity
from ctxlab.lab.fidelity_end_to_end import end_to_end
from ctxlab.ledger import Ledger, recorded_ledger
from ctxlab.replay import STRATEGY_NAMES, replay
from ctxlab.tables import prices


def add_parser(sub: Any) -> None:
    rep = sub.add_parser("replay", help="replay a transcript under a strategy and print the ledger")
    rep.add_argument("file", help="a transcript (any format `inspect` reads)")
    rep.add_argument("--strategy", "-s", default="budgeted", choices=STRATEGY_NAMES, help="default: budgeted")
    rep.add_argument("--provider", choices=("anthropic", "openai"),
                     help="cache rules to use (default: --model's provider, else each call's)")
    rep.add_argument("--model", type=str.strip, help="price and count as this model (default: each call's)")
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


def _grouped(said: list[tuple[str, str]]) -> list[str]:
    """Notes as printed, from ``(conversation id, text)`` pairs: a text several conversations share is
    printed once with their count. ``[("a", "x"), ("b", "x"), ("a", "y")]`` → ``["(2 conversations) x", "a: y"]``."""
    by_text: dict[str, list[str]] = {}
    for cid, text in said:
        by_text.setdefault(text, []).append(cid)
    return [f"{ids[0]}: {t}" if len(ids) == 1 else f"({len(ids)} conversations) {t}" for t, ids in by_text.items()]


def _price_notes(rows: Any) -> set[str]:
    """The notes every row of one model and provider repeats (where its price came from, or that it is unpriced)."""
    out: set[str] = set()
    for model, provider in {(r.model, r.provider) for r in rows}:
        p = prices.price_for(model, provider) if model else None
        out.add(p.note if p is not None else prices.unpriced_note(model, provider))
    return out - {""}


def _once(ledger: Ledger, notes: set[str]) -> Ledger:
    """The ledger as printed: a price note said once below the table, not on every row (``--json`` keeps them)."""
    def trimmed(note: str) -> str:
        for n in notes:  # a note may hold "; " itself: removed whole, then the empty parts
            note = note.replace(n, "")
        return "; ".join(p for p in note.split("; ") if p.strip())
    if not notes:
        return ledger
    return dataclasses.replace(ledger, rows=[dataclasses.replace(r, note=trimmed(r.note)) for r in ledger.rows])


def cmd_replay(args: argparse.Namespace) -> int:
    unknown = check_model_option(args.model)  # a likely typo raises (exit 2); a plausible unknown model runs
    if unknown:
        print(shown(f"note: {unknown}"), file=sys.stderr)
    if args.compare:
        return cmd_compare(args)

    if args.rows < 0:
        raise CtxlabError(f"--rows must be 0 or more (ledger rows shown); got {args.rows}.")
    transcript = load(Path(args.file), strict=args.strict)
    if not transcript.conversations:
        raise CtxlabError(f"{transcript.file}: no conversations found ({transcript.format}).")
    picked = conversation_index(transcript, args.conversation)
    indices = [picked] if picked is not None else range(len(transcript.conversations))
    chosen = [(i, transcript.conversation(i)) for i in indices]
    provider_follows_model(args, [c for _, c in chosen])  # --model of another provider: its rules, one note
    out: dict[str, Any] = {"file": transcript.file, "format": transcript.format,
                           "strategy": "recorded usage" if args.recorded else args.strategy,
                           "conversations": [c.id for _, c in chosen], "rows": [], "notes": []}
    all_rows, failures, texts = [], [], []
    fidelity: dict[str, Any] = {"structural": {"calls": 0, "within_calls": 0}, "end_to_end": {"calls": 0, "within_calls": 0}}
    skipped: list[str] = []
    said: list[tuple[str, str]] = []  # (conversation id, note); --json shows them as "id: note"
    once: dict[str, None] = {}  # price notes every row repeated: printed once, after the table
    why_skipped: dict[str, str] = {}  # conversation id -> why it was not replayed
    for _, conv in chosen:
        said += [(conv.id, n) for n in _notes(transcript, conv)]
        if args.recorded:
            # what was recorded is reported whatever the pairing: only ctxlab's own rendering (end to end)
            # needs contexts it can build, and a conversation whose contexts cannot be built says why
            ledger, fit = recorded_ledger(conv), structural(conv)
            try:
                e2e = end_to_end(conv)
            except CtxlabError as err:
                e2e = None
                said.append((conv.id, f"end-to-end fidelity not measured: {' '.join(str(err).split())}"))
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
                                warm=args.warm, check=args.check, progress=sys.stderr.isatty() and len(chosen) == 1,
                                speedup=FAST, keep_requests=False)  # only the ledger is printed: no request kept
            except CtxlabError as err:
                if len(chosen) == 1:
                    raise
                # one bad conversation of many: said and skipped, the others still replayed
                skipped.append(conv.id)
                why_skipped[conv.id] = " ".join(str(err).split())
                said.append((conv.id, f"not replayed: {why_skipped[conv.id]}"))
                continue
            ledger = result.ledger
            said += [(conv.id, n) for n in result.notes]
            failures += [(conv.id, rec.call, v) for rec in result.records for v in rec.violations]
            del result  # only the ledger and the violations are printed
        all_rows += ledger.rows
        if args.json:  # a dict per row: built only when it is printed
            out["rows"] += _rows(ledger, conv.id)
        repeated = _price_notes(ledger.rows)
        once.update(dict.fromkeys(sorted(repeated)))
        texts.append(f"== {shown(conv.id)} ({len(ledger.rows)} calls)\n"
                     f"{_once(ledger, repeated).to_text(max_rows=args.rows)}")
    out["notes"] = [f"{cid}: {n}" for cid, n in said]
    # a retired (or retiring) model, a routed price: once per model, as of the price table's date
    used = [args.model] if args.model else [m for _, c in chosen for m in (c.model, *(x.model for x in c.messages))]
    out["model_notes"] = model_notes(used, args.provider)
    if skipped:
        out["skipped_conversations"] = skipped
        why = why_skipped[skipped[0]]
        print(shown(f"ctxlab replay{' --check' if args.check else ''}: {len(skipped)} of {len(chosen)} conversations "
                    f"could not be replayed ({', '.join(skipped[:5])}{' ...' if len(skipped) > 5 else ''}); "
                    f"first: {skipped[0]}: {why}"), file=sys.stderr)
        if len(skipped) == len(chosen):
            return 2
    overall = Ledger(all_rows)
    t = overall.totals()  # once: each pass reads every row (a 200 MB replay has 41,000)
    out["totals"] = _jsonable(t)
    out["per_thread"] = {thread: _jsonable(t) for thread, t in overall.per_thread().items()}
    out["prices"] = overall.prices
    if args.recorded:
        for key in fidelity:
            calls = fidelity[key]["calls"]
            fidelity[key]["within"] = fidelity[key].pop("within_calls") / calls if calls else None
        if transcript.format == "proxy-log":  # the log holds the bytes sent: ctxlab's own bodies against them

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
        cost = f"${t.cost_usd:,.4f}" if t.cost_usd is not None else "unpriced"
        print(f"\nall: {t.calls} calls, {t.total_input_tokens:,} prompt tokens, hit rate {t.hit_rate:.1%}, "
              f"cost {cost}, overflows {t.overflow_calls}"
              + (f", {len(skipped)} of {len(chosen)} conversations skipped" if skipped else "")
              + f" ({out['strategy']}; "
              f"prices: {shown(out['prices']['package'])} {shown(out['prices']['version'])})")
        for n in dict.fromkeys([*_grouped(said), *out["model_notes"], *once]):  # --json keeps every note as it is
            print(shown(f"note: {n}"))
        if args.check:
            retired = refused(used) and " (note: the model is retired: the provider refuses these requests today)"
            print(f"check: OK, every context passed{retired or ''}" if not failures and not skipped else
                  f"check: {len(failures)} violations, {len(skipped)} of {len(chosen)} conversations not replayed")
            if args.strategy in ("full", "recorded") and t.overflow_calls:
                print(f"check: {args.strategy} promises no budget: its {t.overflow_calls} calls over the window are "
                      "reported as overflows in the ledger, not as check failures")
    if failures:
        cid, call, v = failures[0]
        print(shown(f"ctxlab replay --check: {cid} thread {call.thread!r} call {call.index}: {v}"), file=sys.stderr)
        return 1
    return 1 if args.check and skipped else 0  # --check: a conversation not replayed is a failure (named above)
