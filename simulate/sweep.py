"""One sweep runner: map a function over points on local processes or a Dask cluster, with a cache.

:func:`run_sweep` evaluates ``fn(point) -> dict`` for every point of a list, where ``fn`` is a
top-level importable function and each point a JSON-serialisable dict that holds everything the
result depends on (seeds included), so that the result is a deterministic function of the point:

- ``jobs=1``: in this process, one point after another (:class:`InlineExecutor`);
- default: a :class:`concurrent.futures.ProcessPoolExecutor` with ``jobs`` workers (all usable cores
  by default), each limited to one BLAS/OpenMP thread so that ``jobs`` workers use ``jobs`` cores;
- ``scheduler="tcp://HOST:PORT"``: the same function submitted to a Dask distributed cluster through
  its :class:`concurrent.futures.Executor` (``distributed.Client.get_executor()``; its workers must
  be able to import ``fn``; Dask's nannies already start workers with one BLAS thread).

The three are one loop over an :class:`~concurrent.futures.Executor` with one failure rule: after a
point fails (or its worker dies), no new point starts and every unfinished point is cancelled where
the executor can (a process pool cannot stop a running point: it finishes and is cached); then
:class:`SweepError` names the failing point.

Every finished point is written to the :class:`~simulate.cache.ResultCache` as soon as it arrives,
so a sweep that is interrupted or killed keeps what it finished, and running it again computes only
the missing points. Results are returned exactly as the cache stores them
(:func:`~simulate.cache.normalize_result`), so fresh, cached, local and Dask results are equal.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from theory.errors import check_range

from .cache import ResultCache, canonical_json, function_name, normalize_result
from .progress import progress_bar

__all__ = [
    "InlineExecutor",
    "SweepError",
    "SweepResult",
    "default_jobs",
    "run_sweep",
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


class InlineExecutor(Executor):
    """An :class:`~concurrent.futures.Executor` that runs each call at once, in this process.

    ``submit`` returns a finished future holding the result or the exception (``Exception``
    subclasses only: an interrupt propagates).
    """

    def submit(self, fn, /, *args, **kwargs) -> Future:
        """Run ``fn(*args, **kwargs)`` now; return its finished future."""
        future: Future = Future()
        future.set_running_or_notify_cancel()
        try:
            result = fn(*args, **kwargs)
        except Exception as error:
            future.set_exception(error)
        else:
            future.set_result(result)
        return future


@dataclass(frozen=True)
class _Backend:
    """An executor, the most points it may hold at once, and per-point ``submit`` keywords."""

    executor: Executor
    window: int | None
    options: Callable[[Mapping], dict]


def _no_options(point: Mapping) -> dict:
    return {}


@contextmanager
def _backend(name: str, jobs: int, scheduler, count: int) -> Iterator[_Backend]:
    """The executor of a sweep of ``count`` points, shut down (and stopped) on exit."""
    if scheduler is not None:
        from distributed import Client

        own = not isinstance(scheduler, Client)
        client = Client(scheduler) if own else scheduler
        executor = client.get_executor()

        def dask_key(point: Mapping) -> dict:
            digest = hashlib.sha256(canonical_json(point).encode()).hexdigest()[:20]
            return {"key": f"{name}-{digest}"}

        try:
            yield _Backend(executor, None, dask_key)
        finally:
            executor.shutdown(wait=False)  # cancels whatever is left on the cluster
            if own:
                client.close()
    elif jobs == 1:
        yield _Backend(InlineExecutor(), 1, _no_options)  # one at a time: nothing after a failure
    else:
        pool = ProcessPoolExecutor(
            max_workers=min(jobs, count), initializer=_init_worker, initargs=(list(sys.path),)
        )
        try:
            yield _Backend(pool, None, _no_options)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _drain(
    backend: _Backend, fn, items: Iterable[tuple[int, dict]], on_result: Callable[[int, dict], None]
) -> tuple[int, BaseException] | None:
    """Submit ``(slot, point)`` items and call ``on_result(slot, result)`` as each finishes.

    Returns ``None``, or ``(slot, exception)`` of the first failure (in slot order among the
    points that finished together): then no new point is submitted, the unfinished ones are
    cancelled, and those that cannot be (running in a process pool) are waited for (their results
    are kept).
    """
    queue = iter(items)
    slot_of: dict[Future, int] = {}
    pending: set[Future] = set()
    failure = None
    while True:
        while failure is None and (backend.window is None or len(pending) < backend.window):
            item = next(queue, None)
            if item is None:
                break
            slot, point = item
            future = backend.executor.submit(fn, point, **backend.options(point))
            slot_of[future] = slot
            pending.add(future)
        if not pending:
            return failure
        done, pending = wait(pending, return_when=FIRST_COMPLETED)
        for future in sorted(done, key=slot_of.__getitem__):
            if future.cancelled():
                continue
            error = future.exception()
            if error is None:
                on_result(slot_of[future], future.result())
            elif failure is None:
                failure = slot_of[future], error
                for other in pending:
                    other.cancel()
                pending = {other for other in pending if not other.cancelled()}


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

    bar = progress_bar(
        len(points), initial=cached, desc=desc, unit="pt",
        show=None if progress is None else bool(progress),
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

    failure = None
    try:
        if todo:
            with _backend(name, jobs, scheduler, len(todo)) as backend:
                failure = _drain(backend, fn, todo, on_result)
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
