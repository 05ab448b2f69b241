r"""Runs pinned at the device bounds: :class:`PinnedMonitor` and its :class:`PinnedWarning`.

**Pinned at the device bounds** (analog runs). At a logging point, a weight is *pinned* when it
lies within one pulse of a bound of its range, :math:`\min(w - w_{\min}, w_{\max} - w) \le
\Delta w_{\min}` (per element, with its device-to-device spread of the range and of
``dw_min`` where the run has one); the logging point is pinned when more than
``PINNED_FRACTION`` = 1/2 of the weights of the ensemble are. A run is pinned when more than half
of its logging points after the start (``k > 0``) are: :class:`PinnedMonitor` then issues one
:class:`PinnedWarning` (not an error: the run finished, but the device range, not the problem,
decided where its weights went; e.g. ``simulate --lr 1e6``).
"""

from __future__ import annotations

import warnings

import numpy as np

#: a logging point is pinned when more than this share of the weights is within one pulse of a
#: bound
PINNED_FRACTION = 0.5
#: an ensemble of at most this many weights is counted in one pass (an oracle run, logged at
#: every iterate: 48 members of 16 weights); a larger one member by member
WHOLE_ARRAY_ELEMENTS = 1 << 16

__all__ = [
    "PINNED_FRACTION",
    "PinnedMonitor",
    "PinnedWarning",
]

class PinnedWarning(UserWarning):
    """An analog run spent most of its logging points pinned at the device bounds (see the
    module docstring); the message is one line naming the learning rate."""


class PinnedMonitor:
    """Counts the logging points at which an analog run is pinned at its device's bounds.

    Parameters
    ----------
    lo, hi : float or ndarray
        The bounds of each weight (arrays broadcast to the weights: a device-to-device spread).
    dw_min : float or ndarray
        One pulse of each weight.
    lr : float
        The run's learning rate (named in the warning).
    """

    def __init__(self, lo, hi, dw_min, lr: float):
        self.lo, self.hi, self.dw_min, self.lr = lo, hi, dw_min, lr
        self.points = 0
        self.pinned = 0

    def observe(self, step: int, w: np.ndarray) -> None:
        """Record the weights ``w`` of logging point ``step`` (the start, ``step = 0``, is not
        counted)."""
        self.observe_all((step,), np.asarray(w)[None])

    def observe_all(self, steps, ws: np.ndarray) -> None:
        """:meth:`observe` of the logging points ``steps`` (in order) with their weights
        ``ws[j]``: a small ensemble's points (at most :data:`WHOLE_ARRAY_ELEMENTS` weights) in
        one pass, a large one's point by point, member by member."""
        ws = ws[np.asarray(steps) != 0]
        if not len(ws):
            return
        size = ws[0].size
        if size <= WHOLE_ARRAY_ELEMENTS:  # small (an oracle ensemble): one pass, no loop
            counts = np.count_nonzero(np.minimum(ws - self.lo, self.hi - ws) <= self.dw_min,
                                      axis=tuple(range(1, ws.ndim)))
        else:
            counts = np.array([self._count_by_member(w) for w in ws])
        self.points += len(ws)
        # (the mean of the booleans, without np.mean's overhead: the same integer over the size)
        self.pinned += int(np.count_nonzero(counts / size > PINNED_FRACTION))

    def _count_by_member(self, w: np.ndarray) -> int:
        """The pinned weights of a large ensemble, member by member: the whole array's
        temporaries would cost a page fault per page at every point (16 network members: 20x
        the members' rows one at a time); the count is the same integer (a scalar bound stays
        the scalar it was: the same promotion as on the whole array)."""
        lo, hi, dw_min = (x if np.ndim(x) == 0 else np.broadcast_to(x, w.shape)
                          for x in (self.lo, self.hi, self.dw_min))
        count = 0
        for r in range(w.shape[0]):
            row = [x if np.ndim(x) == 0 else x[r] for x in (lo, hi, dw_min)]
            gap = np.minimum(w[r] - row[0], row[1] - w[r])
            count += np.count_nonzero(gap <= row[2])
        return count

    def warn(self) -> None:
        """Issue a :class:`PinnedWarning` if more than half of the observed points were pinned."""
        if self.points and 2 * self.pinned > self.points:
            warnings.warn(
                f"lr={self.lr:g}: the run was pinned at the device bounds on {self.pinned} of "
                f"{self.points} logging points (more than half of the weights within dw_min of "
                "w_min or w_max); the device range, not the problem, decided the weights; lower "
                "lr", PinnedWarning, stacklevel=3,
            )
