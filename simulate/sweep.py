"""One sweep runner: map a function over points on local processes or a Dask cluster, with a cache.

:func:`run_sweep` evaluates ``fn(point) -> dict`` for every point of a list, where ``fn`` is a
top-level importable function and each point a JSON-serialisable dict that holds everything the
result depends on (seeds included), so that the result is a deterministic function of the point:

- ``jobs=1``: in this process, one point after another;
- default: a :class:`concurrent.futures.ProcessPoolExecutor` with ``jobs`` workers (all usable cores
  by default), each limited to one BLAS/OpenMP thread so that ``jobs`` workers use ``jobs`` cores;
- ``scheduler="tcp://HOST:PORT"``: the same function submitted to a Dask distributed cluster (its
  workers must be able to import ``fn``; Dask's nannies already start workers with one BLAS thread).

Every finished point is written to the :class:`~simulate.cache.ResultCache` as soon as it arrives,
so a sweep that is interrupted or killed keeps what it finished, and running it again computes only
the missing points. Results are returned exactly as the cache stores them
(:func:`~simulate.cache.normalize_result`), so fresh, cached, local and Dask results are equal.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from theory.errors import ParameterError, check_range

from .cache import ResultCache, canonical_json, function_name, normalize_result

__all__ = [
    "SweepError",
    "SweepResult",
    "add_sweep_arguments",
    "default_jobs",
    "run_sweep",
    "sweep_options",
]

#: environment variables that cap the thread pools of BLAS / OpenMP libraries
BLAS_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")

_thread_limits = None  # the worker's threadpoolctl limiter, kept alive for the worker's lifetime


@dataclass(frozen=True)
class SweepResult:
    """The outcome of :func:`run_sweep`.

    Attributes
    ----------
    results : tuple of dict
        ``fn(point)`` for every point, in the order of the points.
    computed : int
        Points whose result was computed by this call (repeated points share one computation).
    cached : int
        Points whose result was read from the cache; ``computed + cached == len(results)``.
    elapsed_s : float
        Wall-clock time of the call, in seconds.
    """

    results: tuple[dict, ...]
    computed: int
    cached: int
    elapsed_s: float

    def __len__(self) -> int:
        return len(self.results)


class SweepError(RuntimeError):
    """A point of a sweep failed; raised after the workers have stopped.

    Finished points are in the cache, so fixing the cause and running the sweep again resumes it.

    Attributes
    ----------
    index : int
        Position of the (first) failing point in the list of points.
    point : dict
        The failing point.
    desc : str
        The sweep's description.

    The original exception is ``__cause__``.
    """

    def __init__(self, desc: str, index: int, point: Mapping, cause: BaseException):
        self.desc, self.index, self.point = desc, index, dict(point)
        point_text = f"point {index} {canonical_json(self.point)}"
        if isinstance(cause, BrokenProcessPool):
            message = (
                "a worker process died (killed, crashed or out of memory) before "
                f"{point_text} finished"
            )
        else:
            message = f"{type(cause).__name__}: {cause}; raised by {point_text}"
        super().__init__(f"sweep {desc!r} failed: {message}")


def default_jobs() -> int:
    """The number of cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no sched_getaffinity (macOS, Windows)
        return max(1, os.cpu_count() or 1)


def _init_worker(sys_path: list[str]) -> None:
    """Process-pool initializer: one BLAS/OpenMP thread, and the parent's import path."""
    global _thread_limits
    for var in BLAS_THREAD_VARS:
        os.environ[var] = "1"
    sys.path.extend(entry for entry in sys_path if entry not in sys.path)
    from threadpoolctl import threadpool_limits

    _thread_limits = threadpool_limits(limits=1)


# A backend gets (slot, point) pairs and calls on_result(slot, result) as each finishes; it returns
# None, or (slot, exception) for the first failure after it has stopped its workers.
Failure = tuple[int, BaseException] | None
OnResult = Callable[[int, dict], None]


def _run_inline(fn, items, on_result: OnResult) -> Failure:
    for slot, point in items:
        try:
            result = fn(point)
        except Exception as error:
            return slot, error
        on_result(slot, result)
    return None


def _run_pool(fn, items, jobs: int, on_result: OnResult) -> Failure:
    """Local processes; after a failure, pending points are cancelled and running ones kept."""
    failure: Failure = None
    pool = ProcessPoolExecutor(
        max_workers=min(jobs, len(items)), initializer=_init_worker, initargs=(list(sys.path),)
    )
    try:
        futures = {pool.submit(fn, point): slot for slot, point in items}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in sorted(done, key=futures.__getitem__):
                if future.cancelled():
                    continue
                error = future.exception()
                if error is None:
                    on_result(futures[future], future.result())
                elif failure is None:
                    failure = futures[future], error
                    for other in pending:
                        other.cancel()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return failure


def _run_dask(fn, items, scheduler, name: str, on_result: OnResult) -> Failure:
    """A Dask cluster; after a failure, every unfinished point is cancelled."""
    from distributed import Client, as_completed

    own = not isinstance(scheduler, Client)
    client = Client(scheduler) if own else scheduler
    try:
        futures = {}
        for slot, point in items:
            digest = hashlib.sha256(canonical_json(point).encode()).hexdigest()[:20]
            futures[client.submit(fn, point, key=f"{name}-{digest}")] = slot
        for future in as_completed(list(futures)):
            if future.status == "finished":
                on_result(futures[future], future.result())
            elif future.status == "error":
                unfinished = [f for f in futures if f.status == "pending"]
                client.cancel(unfinished)
                return futures[future], future.exception()
        return None
    finally:
        if own:
            client.close()


def _resolve_cache(cache) -> ResultCache | None:
    if cache is None or cache is False:
        return None
    if cache is True:
        return ResultCache()
    if isinstance(cache, ResultCache):
        return cache
    if isinstance(cache, str | os.PathLike):
        return ResultCache(Path(cache))
    raise TypeError(
        f"cache={cache!r} is not a ResultCache, a directory, True (default directory) or "
        "False/None (no cache)"
    )


def run_sweep(
    fn: Callable[[dict], dict],
    points: Iterable[Mapping],
    *,
    jobs: int | None = None,
    scheduler=None,
    cache: ResultCache | str | os.PathLike | bool | None = True,
    progress: bool | None = None,
    desc: str = "sweep",
) -> SweepResult:
    """Evaluate ``fn`` at every point, reusing cached results and caching new ones as they finish.

    Parameters
    ----------
    fn : callable
        A top-level, importable function ``fn(point: dict) -> dict``; deterministic given its
        point. The result must be JSON-serialisable apart from numpy arrays (stored as NPZ).
    points : iterable of dict
        JSON-serialisable points. Repeated points are computed once.
    jobs : int, optional
        Local worker processes (default :func:`default_jobs`); ``1`` runs in this process, without
        a pool. Ignored with ``scheduler``.
    scheduler : str or distributed.Client, optional
        A Dask scheduler address ``"tcp://HOST:PORT"`` (a client is opened and closed) or an open
        client; then the points run on that cluster instead of local processes.
    cache : ResultCache, path-like or bool
        ``True`` (default): a :class:`~simulate.cache.ResultCache` in its default directory; a path:
        a cache in that directory; a ``ResultCache``; ``False`` or ``None``: no cache.
    progress : bool, optional
        Show a tqdm progress bar on stderr; default: only when stderr is a terminal.
    desc : str
        Label of the progress bar and of errors.

    Returns
    -------
    SweepResult
        ``results`` in the order of ``points``, the ``computed`` and ``cached`` counts and the
        wall-clock time.

    Raises
    ------
    SweepError
        When a point raises (or its worker dies), after the workers have stopped; the points that
        finished are cached.
    TypeError
        When ``fn`` is not a top-level function, or a point or result is not serialisable.
    """
    start = time.perf_counter()
    name = function_name(fn)
    points = list(points)
    for index, point in enumerate(points):
        if not isinstance(point, Mapping):
            raise TypeError(f"point {index} is a {type(point).__name__}, not a dict: {point!r}")
    jobs = default_jobs() if jobs is None else check_range("jobs", jobs, 1, None, integer=True)
    store = _resolve_cache(cache)

    # one slot per distinct point; slots[i] lists the positions of that point in `points`
    slot_of: dict[str, int] = {}
    slots: list[list[int]] = []
    for index, point in enumerate(points):
        try:
            ident = canonical_json(point)
        except (TypeError, ValueError) as error:
            message = f"point {index} is not JSON-serialisable ({error}): {point!r}"
            raise TypeError(message) from None
        if ident not in slot_of:
            slot_of[ident] = len(slots)
            slots.append([])
        slots[slot_of[ident]].append(index)
    keys = [store.key(name, points[where[0]]) if store else None for where in slots]

    results: list[dict | None] = [None] * len(points)
    todo: list[tuple[int, dict]] = []
    cached = 0
    for slot, where in enumerate(slots):
        hit = store.get(keys[slot]) if store else None
        if hit is None:
            todo.append((slot, dict(points[where[0]])))
            continue
        cached += len(where)
        for index in where:
            results[index] = hit

    show = sys.stderr.isatty() if progress is None else bool(progress)
    bar = tqdm(
        total=len(points), initial=cached, desc=desc, unit="pt", disable=not show, file=sys.stderr
    )

    def on_result(slot: int, result: dict) -> None:
        where = slots[slot]
        point = points[where[0]]
        try:
            value = normalize_result(result)
        except TypeError as error:
            raise TypeError(f"{name}(point {where[0]} {canonical_json(point)}): {error}") from None
        if store:
            store.put(keys[slot], value, function=name, point=point)
        for index in where:
            results[index] = value
        bar.update(len(where))

    try:
        if not todo:
            failure = None
        elif scheduler is not None:
            failure = _run_dask(fn, todo, scheduler, name, on_result)
        elif jobs == 1:
            failure = _run_inline(fn, todo, on_result)
        else:
            failure = _run_pool(fn, todo, jobs, on_result)
    finally:
        bar.close()
    if failure is not None:
        slot, error = failure
        index = slots[slot][0]
        raise SweepError(desc, index, points[index], error) from error
    return SweepResult(
        results=tuple(results),
        computed=len(points) - cached,
        cached=cached,
        elapsed_s=time.perf_counter() - start,
    )


def add_sweep_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add ``--jobs``, ``--scheduler``, ``--cache-dir`` and ``--no-cache`` to a command's parser.

    Pass the parsed namespace to :func:`sweep_options` to get :func:`run_sweep`'s keywords.
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


#: a Dask scheduler address, SCHEME://HOST:PORT (HOST may be a bracketed IPv6 address)
_ADDRESS = re.compile(r"[a-z][a-z0-9+.-]*://(\[[0-9a-fA-F:.]+\]|[^\s:/\[\]]+):\d{1,5}")


def sweep_options(args: argparse.Namespace) -> dict:
    """The keywords ``jobs``, ``scheduler`` and ``cache`` of :func:`run_sweep` from parsed args.

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
