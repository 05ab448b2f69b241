"""One process pool shared by the local sweeps of a block (:func:`shared_pool`), so that a
command running several sweeps (``figures all``, ``report``) pays the workers' start once.
:func:`simulate.execution.sweep.run_sweep` asks :func:`open_block` for it."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager

from theory.errors import check_range
from theory.limits import MAX_JOBS

__all__ = ["default_jobs", "open_block", "shared_pool"]

_shared = None  # the _SharedPool of the outermost open shared_pool block, or None


def default_jobs() -> int:
    """The number of cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no sched_getaffinity (macOS, Windows)
        return max(1, os.cpu_count() or 1)


def open_block() -> _SharedPool | None:
    """The pool of the open :func:`shared_pool` block, or ``None`` outside one."""
    return _shared


class _SharedPool:
    """The process pool of a :func:`shared_pool` block, started by its first sweep."""

    def __init__(self, jobs: int):
        self.jobs = jobs
        self._pool: ProcessPoolExecutor | None = None

    def pool(self, start: Callable[[int], ProcessPoolExecutor]) -> ProcessPoolExecutor:
        """The block's pool (started now by ``start(jobs)`` if no sweep has started it, or the
        last one broke)."""
        if self._pool is None:
            self._pool = start(self.jobs)
        return self._pool

    def discard(self) -> None:
        """Forget the pool (stopped or broken); the next sweep starts a new one."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        """Shut the pool down and wait for its workers to exit."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


@contextmanager
def shared_pool(jobs: int | None = None) -> Iterator[None]:
    """Let the local sweeps of this block share one process pool of ``jobs`` workers.

    Without it, every :func:`run_sweep` on local processes starts its own pool, and each of its
    workers pays again what a first point costs in a fresh process: importing what the point
    function needs (scikit-learn for the digits data, scipy), loading the compiled numba kernels,
    building its data sets (the augmented digits) and compiling the registry's closed forms
    (:func:`theory.compiled.compile_expr`). A command that runs several sweeps (``figures all``,
    ``report``) opens this block around them: the first sweep that needs processes starts
    ``jobs`` workers (default :func:`default_jobs`), and every later sweep with the same ``jobs``
    hands its points to those warm workers. The results are the same (a point's result is a
    deterministic function of the point); only their cost changes.

    Sweeps with another ``jobs``, with ``jobs=1`` or with a scheduler, and sweeps outside the
    block, keep their own executor. After Ctrl-C or a worker's death the block's pool is stopped
    and the next sweep starts a new one; the block's end shuts the pool down. Nested blocks use
    the outermost one. The workers are forked when the first sweep needs them: module state that
    the process changes later (e.g. a test's monkeypatch) is not seen by them, so the block
    belongs around code that does not change it between its sweeps (a command's body).
    """
    global _shared
    jobs = default_jobs() if jobs is None else check_range("jobs", jobs, 1, MAX_JOBS,
                                                           integer=True)
    if _shared is not None:  # nested: the outer block's pool
        yield
        return
    _shared = block = _SharedPool(jobs)
    try:
        yield
    finally:
        _shared = None
        block.close()
