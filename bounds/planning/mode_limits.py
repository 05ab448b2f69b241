"""The modes the kinds planner compares and the range it searches, without the planner.

:class:`ModeLimits` is what :func:`bounds.plan_modes` is given (and what the parser of
``aimc-pipeline plan`` shows as its defaults); reading it here loads neither sympy nor the
guarantees of :mod:`bounds.planning.kinds`.

>>> ModeLimits().modes
('sync', 'async', 'dp', 'hybrid')
"""

from __future__ import annotations

from dataclasses import dataclass

from theory.errors import ParameterError, check_range

__all__ = ["MODES", "ModeLimits"]

#: the modes the kinds planner compares (:mod:`bounds.planning.modes`)
MODES = ("sync", "async", "dp", "hybrid")
_POWERS = tuple(2**i for i in range(10))


@dataclass(frozen=True)
class ModeLimits:
    """The range the kinds planner searches.

    Parameters
    ----------
    max_micro_batches : int
        Largest ``B`` of ``sync`` (default 512).
    micro_batch_sizes : tuple of int
        Values of ``b`` (default powers of two 1..512).
    replica_micro_batches : tuple of int
        Values of ``B`` of ``dp`` and ``hybrid`` (default powers of two 1..512).
    periods : tuple of int
        Averaging periods ``P`` (default powers of two 1..65536).
    modes : tuple of str
        Modes to compare, a subset of :data:`bounds.MODES`.
    """

    max_micro_batches: int = 512
    micro_batch_sizes: tuple[int, ...] = _POWERS
    replica_micro_batches: tuple[int, ...] = _POWERS
    periods: tuple[int, ...] = tuple(2**i for i in range(17))
    modes: tuple[str, ...] = MODES

    def __post_init__(self):
        check_range("max_micro_batches", self.max_micro_batches, 1, 10**6, integer=True)
        for key in ("micro_batch_sizes", "replica_micro_batches", "periods"):
            values = tuple(check_range(key, v, 1, 10**9, integer=True) for v in getattr(self, key))
            if not values:
                raise ParameterError(f"{key}=() is empty; valid: at least one value")
            object.__setattr__(self, key, tuple(sorted(set(values))))
        modes = tuple(dict.fromkeys(self.modes))
        if not modes or any(m not in MODES for m in modes):
            raise ParameterError(f"modes={modes!r} is invalid; valid: a non-empty subset of "
                                 f"{', '.join(MODES)}")
        object.__setattr__(self, "modes", modes)
