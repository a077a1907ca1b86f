#!/usr/bin/env python3
"""Write docs/providers.md from the per-model facts table (ctxlab/tables/model_facts.py).

    python tools/make_providers_doc.py           # write docs/providers.md
    python tools/make_providers_doc.py --check   # write nothing; exit 1 if the file differs from the table

Run it after any change to ctxlab/tables/model_rows*.py; tests/test_providers_doc.py fails until you do.
The text itself is made by ctxlab.tables.providers_doc.render (offline, deterministic).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ctxlab.tables.providers_doc import DOC_PATH, render


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/providers.md is out of date")
    args = parser.parse_args(argv)
    path = REPO / DOC_PATH
    text = render()
    if args.check:
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != text:
            print(f"{DOC_PATH} is out of date: run python tools/make_providers_doc.py", file=sys.stderr)
            return 1
        print(f"{DOC_PATH} is up to date")
        return 0
    path.write_text(text, encoding="utf-8")
    print(f"wrote {DOC_PATH} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
