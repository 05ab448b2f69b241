"""``python -m simulate``: the ``simulate`` command."""

import sys

from paper_figures.cli import run_command

sys.exit(run_command("simulate"))
