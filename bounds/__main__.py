"""``python -m bounds``: the ``aimc-pipeline bounds`` command."""

import sys

from .commands.bounds import main

if __name__ == "__main__":
    sys.exit(main())
