"""The ``paper_figures`` commands ``figures`` and ``report`` (argparse lives only here).

:func:`add_figure_arguments` is the flag group both share: ``--quick``, ``--out DIR`` and the sweep
options (:func:`simulate.commands.options.add_sweep_arguments`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from simulate.commands.options import add_sweep_arguments

__all__ = ["add_figure_arguments"]


def add_figure_arguments(parser: argparse.ArgumentParser, *, out: str, quick_help: str,
                         out_help: str) -> None:
    """Add ``--quick``, ``--out DIR`` (default ``out``) and the sweep options to ``parser``."""
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--out", type=Path, default=Path(out), metavar="DIR", help=out_help)
    add_sweep_arguments(parser)
