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

Every finished point is written to the :class:`~simulate.execution.cache.ResultCache` as soon as it
arrives, so a sweep that is interrupted or killed keeps what it finished, and running it again
computes only the missing points. Results are returned exactly as the cache stores them
(:func:`~simulate.execution.cache.normalize_result`), so fresh, cached, local and Dask results are
equal. A cache entry that does not verify (:class:`~simulate.execution.cache.CorruptEntryError`, or
rejected by the sweep's ``validate``) is recomputed and counted (:attr:`SweepResult.corrupt`). While
a point is computed its key is locked (:meth:`~simulate.execution.cache.ResultCache.lock`), so a
second sweep into the same cache waits for that point and reads it instead of computing it again.

Before any point runs, the cache directory must be writable and a scheduler reachable (a refused
connection fails at once, a silent address after :data:`CONNECT_TIMEOUT_S`), each a one-line
:class:`~theory.errors.ParameterError`. Pool workers ignore Ctrl-C (the parent stops the sweep:
finished points stay cached, the workers are terminated) and die with their parent: on Linux the
kernel kills them (``PR_SET_PDEATHSIG``), elsewhere a watchdog thread does.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import signal
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from theory.errors import ParameterError, check_range
from theory.fileio import check_writable_dir
from theory.limits import MAX_JOBS

from .cache import CorruptEntryError, ResultCache, canonical_json, function_name, normalize_result
from .pool import default_jobs, open_block
from .progress import progress_bar

__all__ = [
    "BLAS_THREAD_VARS",
    "CONNECT_TIMEOUT_S",
    "InlineExecutor",
    "SCHEDULER_SCHEMES",
    "SweepError",
    "SweepResult",
    "check_scheduler_address",
    "run_sweep",
    "stop_shared_pool",
    "warm_shared_pool",
]

#: environment variables that cap the thread pools of BLAS / OpenMP libraries
BLAS_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
#: the Dask communication schemes a ``SCHEME://HOST:PORT`` scheduler address may use
SCHEDULER_SCHEMES = ("tcp", "tls", "ucx", "ws", "wss")
#: seconds a scheduler may take to accept a connection and to answer the client's handshake
CONNECT_TIMEOUT_S = 5.0
#: most points of a Dask sweep held (submitted, their keys locked) at once
DASK_WINDOW = 256
#: seconds between two looks at points whose keys another sweep holds
LOCK_POLL_S = 0.1

#: SCHEME://HOST:PORT (HOST may be a bracketed IPv6 address)
_ADDRESS = re.compile(r"([a-z][a-z0-9+.-]*)://(\[[0-9a-fA-F:.]+\]|[^\s:/\[\]]+):(\d{1,5})")
#: prctl(2) option: the signal a process gets when its parent dies (Linux)
_PR_SET_PDEATHSIG = 1

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
    corrupt : int
        Cache entries that were found damaged (:class:`~simulate.execution.cache.CorruptEntryError`)
        or rejected by ``validate``, and therefore recomputed (their points count as ``computed``).
    """

    results: tuple[dict, ...]
    computed: int
    cached: int
    elapsed_s: float
    corrupt: int = 0

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


def check_scheduler_address(address, parameter: str = "scheduler") -> str:
    """``address`` if it is a Dask scheduler address ``SCHEME://HOST:PORT``, else an error.

    ``SCHEME`` is one of :data:`SCHEDULER_SCHEMES` and ``PORT`` in ``[1, 65535]``.

    Raises
    ------
    ParameterError
        ``"{parameter}='...' is not a scheduler address; valid: SCHEME://HOST:PORT ..."``.
    """
    match = _ADDRESS.fullmatch(address) if isinstance(address, str) else None
    if match is None or match.group(1) not in SCHEDULER_SCHEMES or not (
            1 <= int(match.group(3)) <= 65535):
        raise ParameterError(
            f"{parameter}={address!r} is not a scheduler address; valid: SCHEME://HOST:PORT with "
            f"SCHEME in {', '.join(SCHEDULER_SCHEMES)} and PORT in [1, 65535], e.g. "
            "tcp://127.0.0.1:8786"
        )
    return address


def _open_client(address: str):
    """A :class:`distributed.Client` of the scheduler at ``address``, or a one-line error.

    A TCP-based address is probed first, so that a refused connection fails at once (Dask itself
    retries for 30 s). On ``tcp://`` a Dask scheduler speaks first (its handshake): a listener
    that stays silent for :data:`CONNECT_TIMEOUT_S` is not one (Dask's client would wait for it
    forever). The client's own connection then has :data:`CONNECT_TIMEOUT_S`.
    """
    check_scheduler_address(address)
    scheme, rest = address.split("://", 1)
    host, _, port = rest.rpartition(":")
    if scheme != "ucx":
        try:
            probe = socket.create_connection((host.strip("[]"), int(port)), CONNECT_TIMEOUT_S)
        except OSError as error:
            reason = error.strerror or str(error) or type(error).__name__
            raise ParameterError(
                f"scheduler={address!r} cannot be reached ({reason.lower()}); valid: the address "
                "of a running Dask scheduler (dask scheduler prints it)"
            ) from None
        with probe:
            if scheme == "tcp":
                try:
                    spoke = probe.recv(1) != b""
                except OSError:  # a timeout, or a reset
                    spoke = False
                if not spoke:
                    raise ParameterError(
                        f"scheduler={address!r} accepted a connection but did not answer as a "
                        f"Dask scheduler within {CONNECT_TIMEOUT_S:g} s"
                    )
    from distributed import Client

    try:
        return Client(address, timeout=CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError) as error:
        raise ParameterError(
            f"scheduler={address!r} accepted a connection but did not answer as a Dask scheduler "
            f"within {CONNECT_TIMEOUT_S:g} s ({' '.join(str(error).split())[:120]})"
        ) from None


def _die_with_parent(parent_pid: int) -> None:
    """Make this worker die when its parent does: PR_SET_PDEATHSIG on Linux, else a watchdog."""
    parent = os.getppid()
    armed = False
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
        except (OSError, AttributeError):
            armed = False
    # the parent may have died before the signal was armed
    try:
        os.kill(parent_pid, 0)
    except ProcessLookupError:
        os._exit(1)
    except PermissionError:
        pass
    if os.getppid() != parent:
        os._exit(1)
    if not armed:
        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(1.0)
            os._exit(1)

        threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()


def _init_worker(sys_path: list[str], parent_pid: int) -> None:
    """Process-pool initializer: ignore Ctrl-C (the parent handles it), die with the parent, one
    BLAS/OpenMP thread, and the parent's import path."""
    global _thread_limits
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent(parent_pid)
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
        own = isinstance(scheduler, str)
        client = _open_client(scheduler) if own else scheduler
        executor = client.get_executor()

        def dask_key(point: Mapping) -> dict:
            digest = hashlib.sha256(canonical_json(point).encode()).hexdigest()[:20]
            return {"key": f"{name}-{digest}"}

        try:
            yield _Backend(executor, DASK_WINDOW, dask_key)
        finally:
            executor.shutdown(wait=False)  # cancels whatever is left on the cluster
            if own:
                client.close()
    elif jobs == 1:
        yield _Backend(InlineExecutor(), 1, _no_options)  # one at a time: nothing after a failure
    elif (shared := open_block()) is not None and shared.jobs == jobs:
        pool = shared.pool(_new_pool)
        try:
            yield _Backend(pool, 2 * jobs, _no_options)
        except KeyboardInterrupt:
            _stop_pool(pool)
            shared.discard()
            raise
        finally:
            if getattr(pool, "_broken", False):  # a worker died: the next sweep starts anew
                shared.discard()
    else:
        workers = min(jobs, count)
        pool = _new_pool(workers)
        try:
            yield _Backend(pool, 2 * workers, _no_options)
        except KeyboardInterrupt:
            _stop_pool(pool)
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _new_pool(workers: int) -> ProcessPoolExecutor:
    """A process pool of ``workers`` sweep workers (:func:`_init_worker`)."""
    return ProcessPoolExecutor(max_workers=workers, initializer=_init_worker,
                               initargs=(list(sys.path), os.getpid()))


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel what waits and terminate the workers (Ctrl-C: the running points are abandoned).

    Python < 3.14 has no public ``ProcessPoolExecutor.terminate_workers``: the worker processes
    are then read from the pool's ``_processes`` (a stable attribute since Python 3.2).
    """
    terminate = getattr(pool, "terminate_workers", None)
    if terminate is not None:  # pragma: no cover - Python >= 3.14
        terminate()
        return
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    for process in processes:
        process.join(timeout=5)


def warm_shared_pool() -> None:
    """Start the workers of the open :func:`shared_pool` block now, if it has more than one.

    A command that computes a sweep in a second thread (``figures all``) calls this first: the
    workers are forked while the process has one thread, so none inherits a lock another thread
    holds (a fork-started pool starts all its workers at its first submission).
    """
    shared = open_block()
    if shared is not None and shared.jobs > 1:
        shared.pool(_new_pool).submit(int).result()


def stop_shared_pool() -> None:
    """Terminate the workers of the open :func:`shared_pool` block (a sweep waiting on them in
    another thread fails at once); the next sweep starts a new pool."""
    shared = open_block()
    pool = None if shared is None else shared._pool
    if pool is not None:
        _stop_pool(pool)
        shared.discard()


#: what :func:`_drain`'s ``claim(slot, block)`` says of a point
_RUN, _DONE, _BUSY = "run", "done", "busy"


def _drain(
    backend: _Backend, fn, items: Iterable[tuple[int, dict]],
    on_result: Callable[[int, dict], None], claim: Callable[[int, bool], str],
) -> tuple[int, BaseException] | None:
    """Submit ``(slot, point)`` items and call ``on_result(slot, result)`` as each finishes.

    Before a point is submitted, ``claim(slot, block)`` says ``"run"`` (submit it), ``"done"``
    (its result came from the cache meanwhile) or ``"busy"`` (another sweep is computing it: it is
    looked at again later, and waited for, ``block=True``, once nothing else is left to do).

    Returns ``None``, or ``(slot, exception)`` of the first failure (in slot order among the
    points that finished together): then no new point is submitted, the unfinished ones are
    cancelled, and those that cannot be (running in a process pool) are waited for (their results
    are kept).
    """
    queue = deque(items)
    deferred: deque[tuple[int, dict]] = deque()

    def scan(source: deque, wait: bool) -> tuple[int, dict] | None:
        """The first item of one pass over ``source`` that may run; busy ones go to deferred."""
        for _ in range(len(source)):
            item = source.popleft()
            state = claim(item[0], wait)
            if state == _RUN:
                return item
            if state == _BUSY:
                deferred.append(item)
        return None

    def take(block: bool) -> tuple[int, dict] | None:
        # new points first (never waiting on a lock), then one pass over the deferred ones
        return scan(queue, False) or scan(deferred, block)

    slot_of: dict[Future, int] = {}
    pending: set[Future] = set()
    failure = broken = None
    while True:
        while failure is None and broken is None and (
                backend.window is None or len(pending) < backend.window):
            item = take(block=not pending)
            if item is None:
                break
            slot, point = item
            try:
                future = backend.executor.submit(fn, point, **backend.options(point))
            except BrokenProcessPool as error:  # a worker died since the last point was sent
                broken = slot, error  # the point it ran reports it, or else this one
                break
            slot_of[future] = slot
            pending.add(future)
        if not pending:
            return failure if failure is not None else broken
        timeout = LOCK_POLL_S if deferred and failure is None else None
        done, pending = wait(pending, timeout=timeout, return_when=FIRST_COMPLETED)
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
    validate: Callable[[dict], object] | None = None,
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
        ``True`` (default): a :class:`~simulate.execution.cache.ResultCache` in its default
        directory; a path: a cache in that directory; a ``ResultCache``; ``False`` or ``None``: no
        cache.
    progress : bool, optional
        Show a tqdm progress bar on stderr; default: only when stderr is a terminal.
    desc : str
        Label of the progress bar and of errors.
    validate : callable, optional
        ``validate(result)`` raises ``ValueError``, ``TypeError`` or ``KeyError`` when a result
        is not one ``fn`` can return (e.g. a NaN where the result must be finite). A cached entry
        it rejects is recomputed and counted as corrupt; a fresh result it rejects is an error.

    Returns
    -------
    SweepResult
        ``results`` in the order of ``points``, the ``computed``, ``cached`` and ``corrupt``
        counts and the wall-clock time.

    Raises
    ------
    SweepError
        When a point raises (or its worker dies), after the workers have stopped; the points that
        finished are cached.
    ParameterError
        Before any point runs: the cache directory is not writable, or ``scheduler`` is not an
        address or cannot be reached.
    TypeError
        When ``fn`` is not a top-level function, or a point or result is not serialisable.
    """
    start = time.perf_counter()
    name = function_name(fn)
    points = list(points)
    for index, point in enumerate(points):
        if not isinstance(point, Mapping):
            raise TypeError(f"point {index} is a {type(point).__name__}, not a dict: {point!r}")
    jobs = default_jobs() if jobs is None else check_range("jobs", jobs, 1, MAX_JOBS,
                                                           integer=True)
    if scheduler is not None and not hasattr(scheduler, "get_executor"):  # not a Client
        check_scheduler_address(scheduler)
    store = _resolve_cache(cache)
    sweep = _Sweep(name, points, store, validate)
    todo = sweep.todo()
    if store and todo:
        check_writable_dir(store.directory)  # before the first point runs
    sweep.bar = progress_bar(
        len(points), initial=sweep.cached, desc=desc, unit="pt",
        show=None if progress is None else bool(progress),
    )
    failure = None
    try:
        if todo:
            with _backend(name, jobs, scheduler, len(todo)) as backend:
                failure = _drain(backend, fn, todo, sweep.on_result, sweep.claim)
    finally:
        sweep.close()
    if failure is not None:
        slot, error = failure
        index = sweep.slots[slot][0]
        raise SweepError(desc, index, points[index], error) from error
    return SweepResult(
        results=tuple(sweep.results),
        computed=len(points) - sweep.cached,
        cached=sweep.cached,
        elapsed_s=time.perf_counter() - start,
        corrupt=len(sweep.corrupt),
    )


class _Sweep:
    """The state of one :func:`run_sweep`: its distinct points (slots), their cache keys, the
    results so far, the keys it holds locked and its counts.

    Parameters
    ----------
    name : str
        ``fn``'s :func:`~simulate.execution.cache.function_name` (part of every key).
    points : list of dict
        The sweep's points, in order.
    store : ResultCache or None
        The cache (``None``: no cache).
    validate : callable or None
        :func:`run_sweep`'s ``validate``.

    Attributes
    ----------
    slots : list of list of int
        One slot per distinct point: the positions of that point in ``points``.
    keys : list of str or None
        The cache key of each slot.
    results : list of dict or None
        The result at every position (``None``: not yet known).
    corrupt : set of int
        Slots whose cache entry was damaged or rejected (counted once).
    cached : int
        Positions whose result came from the cache.
    locks : dict
        Slot -> the :class:`~simulate.execution.cache.EntryLock` held while its point runs.
    bar : progress bar or None
        Updated as points finish (set by :func:`run_sweep` once the cached points are known).
    """

    def __init__(self, name: str, points: list, store: ResultCache | None,
                 validate: Callable[[dict], object] | None):
        self.name, self.points, self.store, self.validate = name, points, store, validate
        slot_of: dict[str, int] = {}
        self.slots: list[list[int]] = []
        for index, point in enumerate(points):
            try:
                ident = canonical_json(point)
            except (TypeError, ValueError) as error:
                message = f"point {index} is not JSON-serialisable ({error}): {point!r}"
                raise TypeError(message) from None
            if ident not in slot_of:
                slot_of[ident] = len(self.slots)
                self.slots.append([])
            self.slots[slot_of[ident]].append(index)
        self.keys = [store.key(name, points[where[0]]) if store else None for where in self.slots]
        self.results: list[dict | None] = [None] * len(points)
        self.corrupt: set[int] = set()
        self.cached = 0
        self.locks: dict = {}
        self.bar = None

    def todo(self) -> list[tuple[int, dict]]:
        """Fill in the cached results; the ``(slot, point)`` of every slot left to compute."""
        todo = []
        for slot, where in enumerate(self.slots):
            hit = self.lookup(slot) if self.store else None
            if hit is None:
                todo.append((slot, dict(self.points[where[0]])))
            else:
                self.use_cached(slot, hit)
        return todo

    def lookup(self, slot: int) -> dict | None:
        """The verified cached result of a slot, or None (a damaged entry is counted)."""
        store, validate = self.store, self.validate
        try:
            hit = store.read(self.keys[slot])
            if hit is not None and validate is not None:
                try:
                    validate(hit)
                except (ValueError, TypeError, KeyError, IndexError) as error:
                    raise CorruptEntryError(store.paths(self.keys[slot])[0], str(error)) from None
        except CorruptEntryError:
            self.corrupt.add(slot)
            return None
        return hit

    def use_cached(self, slot: int, hit: dict) -> None:
        """Take ``hit`` as the result of every position of ``slot``."""
        self.cached += len(self.slots[slot])
        for index in self.slots[slot]:
            self.results[index] = hit

    def claim(self, slot: int, block: bool) -> str:
        """:func:`_drain`'s ``claim``: lock the slot's key and run it, or take the result another
        sweep finished meanwhile, or report it busy (locked by another sweep)."""
        if not self.store:
            return _RUN
        lock = self.store.lock(self.keys[slot], block=block)
        if lock is None:
            return _BUSY
        hit = self.lookup(slot)  # another sweep may have finished it meanwhile
        if hit is None:
            self.locks[slot] = lock
            return _RUN
        lock.release()
        self.use_cached(slot, hit)
        self.bar.update(len(self.slots[slot]))
        return _DONE

    def on_result(self, slot: int, result: dict) -> None:
        """:func:`_drain`'s ``on_result``: normalise and validate a fresh result, cache it (and
        release its lock), and take it for every position of the slot."""
        name, where = self.name, self.slots[slot]
        point = self.points[where[0]]
        try:
            value = normalize_result(result)
        except TypeError as error:
            raise TypeError(f"{name}(point {where[0]} {canonical_json(point)}): {error}") from None
        if self.validate is not None:
            try:
                self.validate(value)
            except (ValueError, TypeError, KeyError, IndexError) as error:
                raise ValueError(
                    f"{name}(point {where[0]} {canonical_json(point)}) returned an invalid "
                    f"result: {error}"
                ) from None
        if self.store:
            self.store.put(self.keys[slot], value, function=name, point=point)
            self.locks.pop(slot).release()
        for index in where:
            self.results[index] = value
        self.bar.update(len(where))

    def close(self) -> None:
        """Close the progress bar and release every lock still held."""
        if self.bar is not None:
            self.bar.close()
        for lock in self.locks.values():
            lock.release()
