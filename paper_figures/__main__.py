"""``python -m paper_figures all|list|NAME [--quick] [--out DIR]``: the ``figures`` command."""

import sys

from .commands.figures import main

if __name__ == "__main__":
    sys.exit(main())
