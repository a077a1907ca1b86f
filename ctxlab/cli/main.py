"""The command line: ``python -m ctxlab inspect FILE`` and ``python -m ctxlab doctor``.

``inspect`` reads a transcript (any format :mod:`ctxlab.io.formats` knows) and reports its
conversations, messages by role, interaction units, orphaned tool calls and results (each one
named), token totals under four counters, the model profile used and the static head.
``--json`` prints the same as one JSON object. Bad input ends with one line on stderr and exit
code 2, never a traceback (set ``CTXLAB_DEBUG=1`` to see one). A retired model gets one ``note:``
line (:mod:`ctxlab.cli.models`). API keys in what is printed are masked
(:func:`ctxlab.base.redact.redact`), then control, bidi and invisible characters from the file are
shown as escapes (:mod:`ctxlab.base.safe_text`; ``--json`` writes them as ``\\uNNNN``, the exact text);
the counts are made from the text as recorded. Plumbing, not a chapter: it only calls the textbook modules.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any, NoReturn, Sequence

from ctxlab import __version__
from ctxlab.base.errors import CtxlabError
from ctxlab.base.redact import redact
from ctxlab.base.safe_text import safe_json, shown
from ctxlab.cli.compare import conversation_index
from ctxlab.cli.doctor import format_checks, run_checks
from ctxlab.cli.models import model_notes
from ctxlab.cli.replay import add_parser as add_replay
from ctxlab.estimators import COUNTER_NAMES, get_counter
from ctxlab.interactions import find_orphans, group_units
from ctxlab.io.formats import load
from ctxlab.messages import Conversation, Message, Transcript
from ctxlab.tables.profiles import ModelProfile, profile_for
from ctxlab.tokens import MessageMeter, infer_static_head

NOTES_SHOWN = 10  # the text report lists this many notes, then a count


def _orphans(conv: Conversation, index: int, messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Every orphan of every thread, as JSON-ready dicts naming kind, call, message and source line."""
    out: list[dict[str, Any]] = []
    for thread in conv.threads():
        msgs = [m for m in messages if m.thread == thread]
        by_id = {m.id: m for m in msgs}  # message id -> message (for its source line)
        for o in find_orphans(msgs):
            source = by_id[o.message_id].source if o.message_id in by_id else None
            out.append({"kind": o.kind, "call_id": o.call_id, "message_id": o.message_id, "thread": thread,
                        "conversation": index, "file": source.file if source else None,
                        "line": source.line if source else None, "where": o.where})
    return out


def _units(conv: Conversation, messages: Sequence[Message], notes: list[str]) -> int | None:
    """Units at round granularity, summed over threads (results set aside are in none: the orphans name them)."""
    return sum(len(group_units([m for m in messages if m.thread == thread])) for thread in conv.threads())


def _profile_info(profile: ModelProfile) -> dict[str, Any]:
    return {"name": profile.name, "provider": profile.provider, "context_window": profile.context_window,
            "window_source": profile.window_source, "tokenizer": profile.tokenizer,
            "tokenizer_exact": profile.tokenizer_exact, "note": profile.tokenizer_note or None}


def conversation_report(conv: Conversation, index: int) -> dict[str, Any]:
    """Everything ``inspect`` says about one conversation, as a JSON-ready dict."""
    notes = list(conv.notes)
    sent = [m for m in conv.messages if m.origin != "meta"]  # meta lines are never sent to a model
    if len(sent) < len(conv.messages):
        notes.append(f"{len(conv.messages) - len(sent)} meta messages (never sent to a model) are not counted")
    profile = profile_for(conv.model, conv.provider)
    meters = {name: MessageMeter(profile, get_counter(name)) for name in COUNTER_NAMES}
    tokens = {name: m.messages(sent) + m.system(conv.system) + m.tools(conv.tools) for name, m in meters.items()}
    head: dict[str, Any] | None = None
    if conv.system or conv.tools:
        own = meters.get(profile.tokenizer) if profile.calibration == 1.0 else None
        own = own or MessageMeter(profile)
        head = {"kind": "recorded", "system_blocks": len(conv.system), "tools": len(conv.tools),
                "tokens": own.system(conv.system) + own.tools(conv.tools), "counter": own.counter.name}
        if not conv.tools:  # the system prompt is recorded, the tools are not (Codex, Copilot): their share inferred
            inferred, by = conv.inferred_head_tokens, "as the file itself counts them"
            if inferred is None:
                found = infer_static_head(conv, MessageMeter(profile))
                inferred, by = (found.tokens if found else None), "inferred from recorded usage"
            if inferred:
                head["inferred_tools_tokens"], head["inferred_tools_by"] = inferred, by
    elif conv.inferred_head_tokens:
        head = {"kind": "inferred", "tokens": conv.inferred_head_tokens, "by": "the reader"}
    else:
        inferred = infer_static_head(conv, MessageMeter(profile))
        if inferred is not None:
            head = {"kind": "inferred", "tokens": inferred.tokens, "by": str(inferred),
                    "call_message_id": inferred.call_message_id}
    return {
        "index": index, "id": conv.id, "title": conv.title, "threads": list(conv.threads()),
        "messages": len(conv.messages), "model": conv.model, "provider": conv.provider,
        "by_role": dict(Counter(m.role for m in conv.messages)),
        "interactions": _units(conv, sent, notes), "orphans": _orphans(conv, index, sent),
        "tokens": tokens, "profile": _profile_info(profile), "static_head": head, "notes": notes,
    }


def inspect_report(transcript: Transcript, conversation: int | None = None) -> dict[str, Any]:
    """The ``inspect --json`` object. With ``conversation=None`` and several conversations: all of them."""
    if conversation is not None:
        transcript.conversation(conversation)  # raises a ValueError naming the valid range
    chosen = [conversation] if conversation is not None else range(len(transcript.conversations))
    reports = {i: conversation_report(transcript.conversations[i], i) for i in chosen}
    selected = next(iter(reports)) if len(transcript.conversations) == 1 else conversation
    parts = list(reports.values())
    return {
        "file": transcript.file, "format": transcript.format, "selected": selected,
        "conversations": [{"index": i, "id": c.id, "title": c.title, "threads": list(c.threads()),
                           "messages": len(c.messages), **({k: reports[i][k] for k in ("interactions", "tokens")}
                                                           if i in reports else {})}
                          for i, c in enumerate(transcript.conversations)],
        "messages": sum(r["messages"] for r in parts),
        "by_role": dict(sum((Counter(r["by_role"]) for r in parts), Counter())),
        "interactions": sum(r["interactions"] or 0 for r in parts),
        "orphans": [o for r in parts for o in r["orphans"]],
        "tokens": {name: sum(r["tokens"][name] for r in parts) for name in COUNTER_NAMES},
        "profile": reports[selected]["profile"] if selected is not None else None,
        "static_head": reports[selected]["static_head"] if selected is not None else None,
        # readers repeat their skip notes on the conversation: each note once
        "notes": list(dict.fromkeys([*transcript.notes, *(n for r in parts for n in r["notes"])])),
        "conversation": reports[selected] if selected is not None else None,
        "model_notes": model_notes(m for i in chosen for c in (transcript.conversations[i],)  # retired models
                                   for m in (c.model, *(x.model for x in c.messages))),
    }


def _n(count: int, noun: str) -> str:
    """``_n(1, "tool")`` → ``"1 tool"``; ``_n(2, "tool")`` → ``"2 tools"``."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _fmt_roles(by_role: dict[str, int]) -> str:
    return ", ".join(f"{shown(role)} {n:,}" for role, n in sorted(by_role.items(), key=lambda kv: -kv[1]))


def _q(value: Any) -> str:
    """A value from the file, quoted as ``repr`` does (which escapes control and format characters), keys masked first."""
    return repr(redact(str(value)))


def format_report(rep: dict[str, Any]) -> str:
    """The text form of :func:`inspect_report`. Every value from the file is shown with keys masked and
    control, bidi and invisible characters escaped, one line each (:func:`ctxlab.base.safe_text.shown`)."""
    lines = [f"file           {shown(rep['file'])}", f"format         {shown(rep['format'])}",
             f"conversations  {len(rep['conversations'])}"]
    for c in rep["conversations"][:NOTES_SHOWN] if rep["selected"] is not None else []:
        title = f"  {_q(c['title'])}" if c["title"] else ""
        lines.append(f"  #{c['index']}  {shown(c['id'])}{title}  threads: {shown(', '.join(c['threads'])) or '-'}  "
                     f"{c['messages']:,} messages")
    if rep["selected"] is not None and len(rep["conversations"]) > NOTES_SHOWN:
        lines.append(f"  ... {len(rep['conversations']) - NOTES_SHOWN} more (omit --conversation for a line each)")
    if rep["selected"] is None:
        lines.append(f"  {'#':>4}  {'messages':>8}  {'units':>6}  {'o200k_base':>10}  threads  id / title")
        for c in rep["conversations"]:
            units = "?" if c.get("interactions") is None else f"{c['interactions']:,}"
            title = f"  {_q(c['title'])}" if c["title"] else ""
            lines.append(f"  {c['index']:>4}  {c['messages']:>8,}  {units:>6}  {c['tokens']['o200k_base']:>10,}  "
                         f"{len(c['threads']):>7}  {shown(c['id'])}{title}")
        lines.append("all conversations")
    else:
        d = rep["conversation"]
        lines.append(f"conversation #{d['index']} ({shown(d['id'])})" + (f", model {shown(d['model'])}" if d["model"] else ""))
    lines.append(f"  messages       {rep['messages']:,}: {_fmt_roles(rep['by_role'])}")
    lines.append(f"  interactions   {rep['interactions']:,} units (round granularity)")
    lines.append(f"  orphans        {len(rep['orphans'])}")
    for o in rep["orphans"]:
        conv = f"#{o['conversation']} " if rep["selected"] is None else ""
        line = f"{shown(o['file'])}:{o['line']}" if o["line"] is not None else "no source line recorded"
        lines.append(f"    {conv}{o['kind']}: call {_q(o['call_id'])} in message {_q(o['message_id'])} "
                     f"(thread {shown(o['thread'])}, {line})")
    lines.append("  tokens         messages + system + tools, per counter")
    lines += [f"    {name:<12} {n:>12,}" for name, n in rep["tokens"].items()]
    if rep["selected"] is not None:
        p, head = rep["profile"], rep["static_head"]
        lines.append(f"  profile        {shown(p['name'])} ({shown(p['provider'])}): window {p['context_window']:,} tokens"
                     f" [{shown(p['window_source'])}]")
        if p["note"]:
            lines.append(f"                 note: {shown(p['note'])}")
        if head is None:
            lines.append("  static head    none recorded, and no recorded usage to infer it from")
        elif head["kind"] == "recorded":
            lines.append(f"  static head    recorded: {_n(head['system_blocks'], 'system block')}, {_n(head['tools'], 'tool')} "
                         f"= {head['tokens']:,} tokens ({shown(head['counter'])})")
            if head.get("inferred_tools_tokens"):
                lines.append(f"                 tools not recorded: {head['inferred_tools_tokens']:,} tokens, "
                             f"{shown(head['inferred_tools_by'])}")
        else:
            lines.append(f"  static head    not recorded; {shown(head['by']) if head['by'] != 'the reader' else 'inferred by the reader'}"
                         f" ({head['tokens']:,} tokens)")
    notes = rep["notes"]
    if notes:
        lines.append(f"  notes          {len(notes)}")
        lines += [f"    {shown(n)}" for n in notes[:NOTES_SHOWN]]
        if len(notes) > NOTES_SHOWN:
            lines.append(f"    ... {len(notes) - NOTES_SHOWN} more (--json lists all)")
    lines += [f"note: {shown(n)}" for n in rep.get("model_notes", ())]
    if rep["selected"] is None:
        lines.append(f"{len(rep['conversations'])} conversations: pick one for its profile and static head with "
                     f"--conversation N (0..{len(rep['conversations']) - 1}).")
    return "\n".join(lines)


def cmd_inspect(args: argparse.Namespace) -> int:
    transcript = load(Path(args.file), strict=args.strict)
    if not transcript.conversations:
        raise CtxlabError(f"{transcript.file}: no conversations found ({transcript.format}).")

    rep = inspect_report(transcript, conversation_index(transcript, args.conversation))
    if args.json:
        print(safe_json(rep))  # keys masked in what is shown, not counted; control characters as \uNNNN
    else:
        print(shown(format_report(rep), multiline=True))  # the fields are escaped already: a second net
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    checks = run_checks()
    if args.json:
        print(json.dumps({"ok": all(c.ok is not False for c in checks), "checks": [c.to_dict() for c in checks]},
                         indent=1))
    else:
        print(format_checks(checks))
    return 1 if any(c.ok is False for c in checks) else 0


class _Parser(argparse.ArgumentParser):
    """argparse, with a bad argument said in one line (as every other error of the CLI), not the usage
    block first: ``python -m ctxlab replay: error: argument --window: a window is a positive number of
    tokens, not 0 (--help lists the options)``; exit code 2."""
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (--help lists the options)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m ctxlab", description="ctxlab: context-window management for LLM agents.")
    parser.add_argument("--version", action="version", version=f"ctxlab {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{inspect,replay,doctor}",
                                parser_class=_Parser)
    ins = sub.add_parser("inspect", help="report a transcript's conversations, messages, orphans and tokens")
    ins.add_argument("file", help="a transcript: pi, Claude Code, OpenAI chat, SWE-agent, tau-bench, ctxlab session ...")
    ins.add_argument("--conversation", "-c", metavar="N", help="report conversation N only (0-based index, or its id)")
    ins.add_argument("--json", action="store_true", help="print one JSON object")
    mode = ins.add_mutually_exclusive_group()
    mode.add_argument("--strict", dest="strict", action="store_true", default=True,
                      help="stop at the first bad line (default)")
    mode.add_argument("--lenient", dest="strict", action="store_false", help="skip bad lines and list them as notes")
    ins.set_defaults(run=cmd_inspect)

    add_replay(sub)
    doc = sub.add_parser("doctor", help="check Python, packages, the offline tokenizers and Jupyter")
    doc.add_argument("--json", action="store_true", help="print one JSON object")
    doc.set_defaults(run=cmd_doctor)
    return parser


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 fine, 1 doctor found a FAIL, 2 bad input or usage)."""
    args = build_parser().parse_args(argv)
    for stream in (sys.stdout, sys.stderr):  # a Windows console or pipe in cp1252 meets Chinese titles
        if hasattr(stream, "reconfigure") and (stream.encoding or "").lower().replace("-", "") != "utf8":
            stream.reconfigure(errors="backslashreplace")
    try:
        return args.run(args)
    except BrokenPipeError:  # `... | head` closed the pipe: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (CtxlabError, ValueError, OSError) as err:
        if os.environ.get("CTXLAB_DEBUG"):
            raise
        message = _one_line(err)
        if getattr(args, "strict", None) is not None:  # the readers' hint, in this command's words
            message = message.replace("load with strict=False", "run with --lenient")
        print(shown(f"ctxlab {args.command}: error: {message}"), file=sys.stderr)  # errors quote bad values
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as err:  # a ctxlab bug: still one line, and a way to see more
        if os.environ.get("CTXLAB_DEBUG"):
            raise
        print(shown(f"ctxlab {args.command}: unexpected {type(err).__name__}: {_one_line(err)} "
                    "(a bug in ctxlab? run again with CTXLAB_DEBUG=1 for the traceback)"), file=sys.stderr)
        return 2
