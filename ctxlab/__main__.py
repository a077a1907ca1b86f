"""``python -m ctxlab ...``: the command line (see :mod:`ctxlab.cli`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
