"""``python -m ctxlab ...``: the command line (see :mod:`ctxlab.cli.main`)."""

import sys

from ctxlab.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
