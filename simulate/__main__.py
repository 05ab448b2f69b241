"""``python -m simulate``: the ``simulate`` command."""

import sys

from .commands.simulate import main

if __name__ == "__main__":
    sys.exit(main())
