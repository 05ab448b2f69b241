"""``python -m paper_figures all|list|NAME [--quick] [--out DIR]``: the ``figures`` command."""

import sys

from .cli import run_command

sys.exit(run_command("figures", sys.argv[1:]))
