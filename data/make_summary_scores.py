"""Write data/pi_summaries_score.csv: pi's two recorded LLM compaction summaries vs ctxlab's rule-based one.

Source: https://github.com/badlogic/pi-mono, packages/coding-agent/test/fixtures/before-compaction.jsonl
at commit 83378aad7e74a0e2bb8f37c007a9685fb4609d8a (MIT, Copyright (c) 2025 Mario Zechner), read
from the shared copy ../shared/data/transcripts/pi-mono/ (or the path given as the first argument),
scored against the hand-written checklist data/pi_facts.json. Only numbers and fact ids are written;
no text of the session or of its summaries.

One row per recorded compaction, in file order:

    compaction          1-based index
    messages_in_scope   messages before the compaction's first kept message (what it stands for)
    messages_new        of those, messages since the previous compaction's first kept message
    facts_in_scope      checklist facts said in those messages
    tokens_llm          tokens of pi's recorded summary (o200k_base)
    kept_llm            facts in scope whose exact text occurs in pi's summary
    tokens_rule         tokens of ctxlab's RuleBasedSummarizer summary, capped at tokens_llm (same size)
    kept_rule           facts in scope whose exact text occurs in it
    kept_llm_ids, kept_rule_ids   the fact ids, space-separated

The rule-based summary is made the way pi made its own: the first from the messages before the
first kept one; the second from the messages since then, with the first summary as ``previous``.
Run ``python data/make_summary_scores.py [SOURCE.jsonl] [OUTDIR]``; it skips, writing nothing,
when the source is absent.
"""

from __future__ import annotations

import sys
from pathlib import Path

from csv_text import csv_text  # data/csv_text.py, beside this script

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:  # run from a clone without installing ctxlab
    sys.path.insert(0, str(HERE.parent))

from ctxlab.io.checklist import load_facts  # noqa: E402
from ctxlab.io.formats import load  # noqa: E402
from ctxlab.messages import Message  # noqa: E402
from ctxlab.summary import RuleBasedSummarizer  # noqa: E402
from ctxlab.tokens import TiktokenCounter  # noqa: E402

DEFAULT_SOURCE = HERE.parent.parent / "shared" / "data" / "transcripts" / "pi-mono" / "before-compaction.jsonl"
COLUMNS = ["compaction", "messages_in_scope", "messages_new", "facts_in_scope", "tokens_llm", "kept_llm",
           "tokens_rule", "kept_rule", "kept_llm_ids", "kept_rule_ids"]


def score_rows(source: Path, facts_path: Path = HERE / "pi_facts.json") -> list[dict[str, object]]:
    """One dict per recorded compaction (see the module docstring for the columns)."""
    conv = load(source).conversation()
    facts = load_facts(facts_path)
    counter = TiktokenCounter("o200k_base")
    position = {it.id: k for k, it in enumerate(conv.items)}
    rows: list[dict[str, object]] = []
    start, previous = 0, None  # where the previous compaction's kept messages began; its rule summary
    for entry in conv.entries:
        if entry.kind != "compaction":
            continue
        first_kept = position[entry.data["first_kept_id"]]
        scope = [it for it in conv.items[:first_kept] if isinstance(it, Message)]
        new = [it for it in conv.items[start:first_kept] if isinstance(it, Message)]
        in_scope = [f for f in facts if position[f.message_id] < first_kept]
        llm = entry.data.get("summary", "")
        tokens_llm = counter.count(llm)
        rule = RuleBasedSummarizer(max_tokens=tokens_llm, counter=counter).summarize(new, previous)
        kept_llm = [f.id for f in in_scope if f.text in llm]
        kept_rule = [f.id for f in in_scope if f.text in rule.text]
        rows.append({"compaction": len(rows) + 1, "messages_in_scope": len(scope), "messages_new": len(new),
                     "facts_in_scope": len(in_scope), "tokens_llm": tokens_llm, "kept_llm": len(kept_llm),
                     "tokens_rule": rule.tokens, "kept_rule": len(kept_rule), "kept_llm_ids": " ".join(kept_llm),
                     "kept_rule_ids": " ".join(kept_rule)})
        start, previous = first_kept, rule.text
    return rows


def to_csv(rows: list[dict[str, object]]) -> str:
    """The file's text (one shared writer: data/csv_text.py)."""
    return csv_text(rows, COLUMNS)


def main(argv: list[str]) -> int:
    source = Path(argv[0]) if argv else DEFAULT_SOURCE
    outdir = Path(argv[1]) if len(argv) > 1 else HERE
    if not source.exists():
        print(f"make_summary_scores: {source} not found; nothing written (the shared transcripts are not here).")
        return 0
    rows = score_rows(source)
    target = outdir / "pi_summaries_score.csv"
    target.write_bytes(to_csv(rows).encode("utf-8"))
    for r in rows:
        print(f"make_summary_scores: compaction {r['compaction']}: {r['facts_in_scope']} facts in scope, LLM kept "
              f"{r['kept_llm']} in {r['tokens_llm']} tokens, rules kept {r['kept_rule']} in {r['tokens_rule']}")
    print(f"make_summary_scores: wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
