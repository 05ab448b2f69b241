"""Flag groups that several commands share, written once: sweep execution and output.

- :func:`add_sweep_arguments` / :func:`sweep_options`: ``--jobs``, ``--scheduler``,
  ``--cache-dir``, ``--no-cache`` and the keywords of :func:`simulate.execution.sweep.run_sweep`
  they give;
- :func:`add_output_arguments`: ``--out DIR`` and ``--json`` (a command checks ``DIR`` with
  :func:`theory.fileio.check_writable_dir` first, so that a bad path costs no compute).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from theory.errors import check_range
from theory.fileio import check_writable_dir
from theory.limits import MAX_JOBS

from ..execution import ResultCache, check_scheduler_address, default_cache_dir, default_jobs

__all__ = ["add_output_arguments", "add_sweep_arguments", "sweep_options"]


def add_sweep_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add ``--jobs``, ``--scheduler``, ``--cache-dir`` and ``--no-cache`` to a command's parser.

    Pass the parsed namespace to :func:`sweep_options` to get
    :func:`~simulate.execution.sweep.run_sweep`'s keywords.
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

    Checked before any point runs (also when every point is cached): ``--jobs`` must be in
    ``[1, MAX_JOBS]`` (:data:`theory.limits.MAX_JOBS`), ``--scheduler`` an address of the
    form ``SCHEME://HOST:PORT`` (e.g. ``tcp://127.0.0.1:8786``,
    :func:`~simulate.execution.sweep.check_scheduler_address`; whether it answers is checked when
    the sweep opens it, before its first point) and the cache directory (``--cache-dir`` or the
    default) a writable directory (:func:`~theory.fileio.check_writable_dir`; it is created if
    missing).
    """
    if args.jobs is not None:
        check_range("--jobs", args.jobs, 1, MAX_JOBS, integer=True)
    if args.scheduler is not None:
        check_scheduler_address(args.scheduler, "--scheduler")
    if args.no_cache:
        cache = False
    elif args.cache_dir is not None:
        cache = ResultCache(check_writable_dir(args.cache_dir, "--cache-dir"))
    else:
        check_writable_dir(default_cache_dir(), "--cache-dir")
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
