"""``python -m bounds``: the ``aimc-pipeline bounds`` command."""

import sys

from paper_figures.cli import run_command

if __name__ == "__main__":
    sys.exit(run_command("bounds"))
