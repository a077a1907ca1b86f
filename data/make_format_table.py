"""Write data/formats.csv: every shared real transcript, what ctxlab reads from it, and how close
ctxlab's replay comes to the usage the file recorded.

Sources: the files under ../shared/data/transcripts/ (or SOURCE_DIR); each folder's README.md
names the repository it came from and its licence, and that line is copied into the row. Only
figures ctxlab computes from each file are written (counts and shares), no text of any session.
One row per file; a file with several conversations is summed over them:

    folder, file, source             where the figures come from (the folder README's source line)
    format                           what ctxlab.io.formats.detect names it
    conversations, messages          as read
    tool_calls, tool_results         tool calls the assistant messages make; tool messages
    usage_calls                      model calls whose recorded usage gives the prompt (input tokens > 0)
    recorded_input_tokens            the sum of those calls' recorded prompts (every cache bucket)
    model                            the first conversation's model ("" when not recorded)
    structural_share                 calls whose simulated cache read and write are both within 1% of
                                     the recorded prompt (ctxlab.lab.fidelity.structural)
    e2e_share, e2e_median_error      ctxlab's own prompt under the `recorded` strategy within 10% of the
                                     recorded prompt, and the median signed error
                                     (ctxlab.lab.fidelity_end_to_end.end_to_end)

The shares are empty where nothing was recorded. The figures depend on the readers, the simulator
and the counters: regenerate after changing them (``tests/test_format_table.py`` compares a fresh
run with this file, and the README's format table with it, when the transcripts are there).
Run ``python data/make_format_table.py [SOURCE_DIR] [OUTDIR]``; ``--markdown`` prints the README's table
from the committed CSV.
"""

from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

from csv_text import csv_text  # data/csv_text.py, beside this script

HERE = Path(__file__).resolve().parent
DEFAULT_SOURCE_DIR = HERE.parent.parent / "shared" / "data" / "transcripts"
FILENAME = "formats.csv"
COLUMNS = ["folder", "file", "source", "format", "conversations", "messages", "tool_calls", "tool_results",
           "usage_calls", "recorded_input_tokens", "model", "structural_share", "e2e_share", "e2e_median_error"]


def transcript_files(source_dir: Path) -> list[Path]:
    """The data files of the shared folder (README, SOURCE-README and LICENSE files left out)."""
    return sorted(p for p in source_dir.glob("*/*") if p.is_file() and not p.name.startswith(".")
                  and "README" not in p.name.upper() and not p.name.upper().startswith("LICENSE"))


def source_line(folder: Path) -> str:
    """``repository (licence)`` from the folder README's ``Source repository: …`` line:
    ``"github.com/marot/spotter (MIT)"``; the licence is "see LICENSE" where the line names none."""
    readme = folder / "README.md"
    text = readme.read_text(encoding="utf-8") if readme.exists() else ""
    match = re.search(r"Source repository:\s*(\S+)\s*(\(([^),]+))?", text)
    if not match:
        return ""
    repo = re.sub(r"^https?://", "", match.group(1)).strip("`,.")
    licence = (match.group(3) or "").strip()
    if not licence and (folder / "LICENSE").exists():  # the licence file's title line: "MIT License"
        title = next((ln.strip() for ln in (folder / "LICENSE").read_text(encoding="utf-8").splitlines()
                      if ln.strip()), "")
        licence = title if len(title) <= 40 else "see LICENSE"
    return f"{repo} ({licence or 'see README'})"


def table_row(path: Path) -> dict[str, object]:
    """The figures of one file, summed over its conversations (each with all its threads)."""
    from ctxlab.lab.fidelity import structural
    from ctxlab.lab.fidelity_end_to_end import end_to_end
    from ctxlab.io.formats import load

    transcript = load(path)
    convs = transcript.conversations
    messages = [m for c in convs for m in c.messages]
    with_usage = [m for m in messages if m.role == "assistant" and m.usage is not None
                  and m.usage.total_input_tokens > 0]  # a recorded prompt (Copilot records output tokens only)
    within = calls = e2e_calls = e2e_within = 0
    errors: list[float] = []
    for conv in convs:
        if not any(m.usage is not None for m in conv.messages):
            continue
        fit = structural(conv)
        calls += len(fit.calls)
        within += sum(c.within for c in fit.calls)
        e2e = end_to_end(conv)
        e2e_calls += e2e.calls
        e2e_within += round(e2e.within * e2e.calls)
        errors += e2e.errors
    return {
        "folder": path.parent.name, "file": path.name, "source": source_line(path.parent),
        "format": transcript.format, "conversations": len(convs), "messages": len(messages),
        "tool_calls": sum(len(m.tool_calls) for m in messages),
        "tool_results": sum(m.role == "tool" for m in messages),
        "usage_calls": len(with_usage),
        "recorded_input_tokens": sum(m.usage.total_input_tokens for m in with_usage),
        "model": convs[0].model or "",
        "structural_share": f"{within / calls:.4f}" if calls else "",
        "e2e_share": f"{e2e_within / e2e_calls:.4f}" if e2e_calls else "",
        "e2e_median_error": f"{statistics.median(errors):.4f}" if errors else "",
    }


def to_csv(rows: list[dict[str, object]]) -> str:
    """The file's text (one shared writer: data/csv_text.py)."""
    return csv_text(rows, COLUMNS)


def _share(text: str) -> str:
    return f"{float(text):.1%}" if text else "—"


def markdown_table(csv_path: Path = HERE / FILENAME) -> str:
    """The README's table of the shared transcripts, made from the committed CSV (so the README
    cannot state a figure the CSV does not hold): ``python data/make_format_table.py --markdown``."""
    import csv

    with csv_path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    out = ["| file | read as | conversations | messages | tool calls | calls with a recorded prompt | cache simulated "
           "within 1% | ctxlab's prompt within 10% (median error) |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        e2e = "—" if not r["e2e_share"] else f"{_share(r['e2e_share'])} ({float(r['e2e_median_error']):+.1%})"
        name = r["file"] if len(r["file"]) <= 40 else r["file"][:24] + "…" + Path(r["file"]).suffix
        out.append(f"| {r['folder']}/{name} | {r['format']} | {int(r['conversations']):,} | "
                   f"{int(r['messages']):,} | {int(r['tool_calls']):,} | {int(r['usage_calls']):,} | "
                   f"{_share(r['structural_share'])} | {e2e} |")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    if argv[:1] == ["--markdown"]:
        print(markdown_table(), end="")
        return 0
    source_dir = Path(argv[0]) if argv else DEFAULT_SOURCE_DIR
    outdir = Path(argv[1]) if len(argv) > 1 else HERE
    if not source_dir.is_dir():
        print(f"make_format_table: {source_dir} not found; nothing written (the shared transcripts are not here).")
        return 0
    rows = [table_row(path) for path in transcript_files(source_dir)]
    target = outdir / FILENAME
    target.write_bytes(to_csv(rows).encode("utf-8"))
    print(f"make_format_table: wrote {target} ({len(rows)} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
