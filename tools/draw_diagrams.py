#!/usr/bin/env python3
"""Write every workbook diagram to docs/figures/<name>.svg and docs/diagrams.md (an index GitHub renders).

    python tools/draw_diagrams.py          # rewrite the files
    python tools/draw_diagrams.py --check  # exit 1 when a committed file differs from a fresh render

The diagrams are drawn from the bundled sample session only (data/), so the files are the same on every machine.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ctxlab.diagrams import ALL  # noqa: E402

FIGURES = REPO / "docs" / "figures"
INDEX = REPO / "docs" / "diagrams.md"


def rendered() -> dict[Path, str]:
    """Every file this tool writes, path -> text."""
    files, sections = {}, ["# The workbook's diagrams", "",
                           "Drawn by code in `ctxlab/diagrams/` from the bundled sample session; "
                           "`python tools/draw_diagrams.py` redraws them. Each chapter shows its own with "
                           "`display(d)` and prints `d.text` under it.", ""]
    for name, (draw, chapter) in ALL.items():
        d = draw()
        files[FIGURES / f"{name}.svg"] = d.svg
        sections += [f"## {name.replace('_', ' ')} (chapter {chapter})", "",
                     f"![{name.replace('_', ' ')}](figures/{name}.svg)", "", "```", d.text, "```", ""]
    files[INDEX] = "\n".join(sections)
    return files


def main(argv: list[str]) -> int:
    files = rendered()
    if "--check" in argv:
        stale = [p for p, text in files.items() if not p.exists() or p.read_text(encoding="utf-8") != text]
        for p in stale:
            print(f"{p.relative_to(REPO)} differs from a fresh render: run python tools/draw_diagrams.py")
        return 1 if stale else 0
    FIGURES.mkdir(parents=True, exist_ok=True)
    for p, text in files.items():
        p.write_text(text, encoding="utf-8", newline="\n")
        print(f"wrote {p.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
