"""The one error-handling wrapper every command-line entry point goes through.

A command module defines ``build_parser(parser)`` and ``run(args) -> int``; :func:`command_main`
builds the parser, runs it, and turns the package's user errors (bad parameter, unreachable target,
divergence) into a one-line message on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from .errors import DivergenceError, ParameterError, UnreachableTargetError

__all__ = ["command_main"]

USER_ERRORS = (
    ParameterError,
    UnreachableTargetError,
    DivergenceError,
    FileNotFoundError,
    IsADirectoryError,
    NotADirectoryError,
    PermissionError,
)


def command_main(
    prog: str,
    description: str,
    build_parser: Callable[[argparse.ArgumentParser], None],
    run: Callable[[argparse.Namespace], int | None],
    argv: Sequence[str] | None = None,
) -> int:
    """Parse ``argv`` for one command and run it; user errors exit 2 with a one-line message."""
    parser = argparse.ArgumentParser(
        prog=prog, description=description, formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    build_parser(parser)
    args = parser.parse_args(argv)
    try:
        return int(run(args) or 0)
    except Exception as error:
        # a user error, or one raised inside a worker and wrapped (e.g. a sweep naming its point)
        if not isinstance(error, USER_ERRORS) and not isinstance(error.__cause__, USER_ERRORS):
            raise
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 2
