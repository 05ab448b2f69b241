"""Flag groups that several commands share, written once: sweep execution and output.

- :func:`add_sweep_arguments` / :func:`sweep_options`: ``--jobs``, ``--scheduler``,
  ``--cache-dir``, ``--no-cache`` and the keywords of :func:`simulate.sweep.run_sweep` they give;
- :func:`add_output_arguments`: ``--out DIR`` and ``--json``; :func:`check_output_dir` checks
  ``DIR`` before any work (a command calls it first, so that a bad path costs no compute).
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

from theory.errors import ParameterError, check_range

from ..cache import ResultCache
from ..sweep import default_jobs

__all__ = ["add_output_arguments", "add_sweep_arguments", "check_output_dir", "sweep_options"]

#: pseudo file systems no output goes to (their entries are not files one can create)
_PSEUDO_ROOTS = (Path("/proc"), Path("/sys"), Path("/dev"))

#: a Dask scheduler address, SCHEME://HOST:PORT (HOST may be a bracketed IPv6 address)
_ADDRESS = re.compile(r"[a-z][a-z0-9+.-]*://(\[[0-9a-fA-F:.]+\]|[^\s:/\[\]]+):\d{1,5}")


def add_sweep_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add ``--jobs``, ``--scheduler``, ``--cache-dir`` and ``--no-cache`` to a command's parser.

    Pass the parsed namespace to :func:`sweep_options` to get
    :func:`~simulate.sweep.run_sweep`'s keywords.
    """
    group = parser.add_argument_group(
        "sweep execution", "where sweep points run; finished points are cached on disk and reused"
    )
    group.add_argument(
        "--jobs", type=int, default=None, metavar="N",
        help=f"local worker processes, one BLAS thread each (default: all cores, {default_jobs()} "
        "here); 1 runs in this process",
    )
    group.add_argument(
        "--scheduler", default=None, metavar="ADDR",
        help="run the points on a Dask distributed cluster at ADDR (tcp://HOST:PORT) instead",
    )
    where = group.add_mutually_exclusive_group()
    where.add_argument(
        "--cache-dir", type=Path, default=None, metavar="DIR",
        help="result cache directory (default: $AIMC_PIPELINE_CACHE or ./.cache/aimc-pipeline)",
    )
    where.add_argument(
        "--no-cache", action="store_true", help="neither read nor write the result cache"
    )
    return parser


def sweep_options(args: argparse.Namespace) -> dict:
    """The keywords ``jobs``, ``scheduler`` and ``cache`` of ``run_sweep`` from parsed args.

    Checked before any point runs: ``--jobs`` must be >= 1 and ``--scheduler`` an address of the
    form ``SCHEME://HOST:PORT`` (e.g. ``tcp://127.0.0.1:8786``).
    """
    if args.jobs is not None:
        check_range("--jobs", args.jobs, 1, None, integer=True)
    if args.scheduler is not None and not _ADDRESS.fullmatch(args.scheduler):
        raise ParameterError(
            f"--scheduler={args.scheduler!r} is not a scheduler address; valid: "
            "SCHEME://HOST:PORT, e.g. tcp://127.0.0.1:8786"
        )
    if args.no_cache:
        cache = False
    elif args.cache_dir is not None:
        cache = ResultCache(args.cache_dir)
    else:
        cache = True
    return {"jobs": args.jobs, "scheduler": args.scheduler, "cache": cache}


def add_output_arguments(
    parser: argparse.ArgumentParser, *, json_help: str, out_help: str | None = None,
) -> argparse._MutuallyExclusiveGroup:
    """Add ``--json`` (and, with ``out_help``, ``--out DIR``) to a command's parser.

    Parameters
    ----------
    parser : argparse.ArgumentParser
    json_help : str
        What ``--json`` prints (on stdout, instead of the human table).
    out_help : str, optional
        What ``--out DIR`` writes into the directory ``DIR`` (parsed as a :class:`~pathlib.Path`,
        default ``None``: nothing is written); no ``--out`` flag without it.

    Returns
    -------
    argparse._MutuallyExclusiveGroup
        The group holding ``--json``: a command adds its other output formats there (e.g.
        ``--markdown``), so that at most one is chosen.
    """
    if out_help is not None:
        parser.add_argument("--out", type=Path, default=None, metavar="DIR", help=out_help)
    formats = parser.add_mutually_exclusive_group()
    formats.add_argument("--json", action="store_true", help=json_help)
    return formats


def check_output_dir(path: str | os.PathLike | None, name: str = "out") -> Path | None:
    """Check that the output directory ``path`` can be created or written, before any work.

    It must not exist as anything but a directory, must not lie in a pseudo file system
    (``/proc``, ``/sys``, ``/dev``), and it (or, if it does not exist yet, its nearest existing
    ancestor, which must be a directory) must be writable.

    Parameters
    ----------
    path : path-like or None
        The directory (``None``: nothing is written, nothing to check).
    name : str
        The parameter, first in the message (the commands show it as ``--out``).

    Returns
    -------
    pathlib.Path or None

    Raises
    ------
    ParameterError
        ``"{name}='...' ..."``: one line saying what is wrong with the path.
    """
    if path is None:
        return None
    out = Path(path)
    shown = repr(str(out))
    resolved = out.resolve()
    if any(resolved == root or root in resolved.parents for root in _PSEUDO_ROOTS):
        raise ParameterError(f"{name}={shown} is in a pseudo file system; give a directory to "
                             "write trace files into")
    if out.exists() and not out.is_dir():
        raise ParameterError(f"{name}={shown} exists and is not a directory; give a directory "
                             "(it is created if missing)")
    existing = next(p for p in (resolved, *resolved.parents) if p.exists())
    if not existing.is_dir():
        raise ParameterError(f"{name}={shown} cannot be created: {str(existing)!r} is not a "
                             "directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ParameterError(f"{name}={shown} is not writable: permission denied on "
                             f"{str(existing)!r}")
    return out
