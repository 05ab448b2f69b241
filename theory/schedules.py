r"""Closed forms of the three pipeline schedules (paper-notes section 2), as sympy expressions.

One clock cycle is one stage doing one forward (F) or one backward (Bw) of one micro-batch;
cycles are counted from 0, stages ``m = 1..M`` (stage 1 takes the input), micro-batches
``b = 1..B`` (of a mini-batch; of the whole run for ``async``).

=========  ==============================  ============================  =====================
mode       forward of b at stage m         backward of b at stage m      cycles
=========  ==============================  ============================  =====================
``none``   :math:`2M(b-1) + m - 1`         :math:`2M(b-1) + 2M - m`      :math:`2MB`
``sync``   :math:`2(b-1) + m - 1`          :math:`2(b-1) + 2M - m`       :math:`2(B+M-1)`
``async``  :math:`2(b-1) + m - 1`          :math:`2(b-1) + 2M - m`       :math:`2(N+M-1)`
=========  ==============================  ============================  =====================

``sync`` updates every stage once, after the flush of its ``B`` micro-batches; ``async`` updates
stage m right after each backward, so the forward of micro-batch b at stage m sees the updates of
micro-batches ``<= b - 1 - (M - m)`` (delay :math:`M - m`) and its backward sees all of ``<= b - 1``
(delay 0). These closed forms are checked against the dependency-driven discrete-event simulation in
:mod:`simulate.timeline`, which never reads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
import sympy as sp

from .errors import ParameterError, check_array
from .symbols import B, K, M, N, m, mb

__all__ = [
    "MODES",
    "Schedule",
    "cycles_for_iterations",
    "evaluate",
    "schedule",
]

MODES = ("none", "sync", "async")


@dataclass(frozen=True)
class Schedule:
    """The closed forms of one pipeline schedule (all sympy expressions).

    Attributes
    ----------
    mode : str
        ``"none"``, ``"sync"`` or ``"async"``.
    count : sympy.Symbol
        The micro-batch count the totals are expressed in: ``B`` (one mini-batch of ``none`` or
        ``sync``) or ``N`` (a whole ``async`` run).
    forward_cycle, backward_cycle : sympy.Expr
        Cycle of the forward / backward of micro-batch ``b_mb`` at stage ``m``.
    total_cycles : sympy.Expr
        Cycles for ``count`` micro-batches (one mini-batch for ``none``/``sync``).
    busy_cycles, idle_cycles : sympy.Expr
        Cycles a stage computes / waits during ``total_cycles`` (the same for every stage).
    forward_delay, backward_delay : sympy.Expr
        Updates missing from the weights a stage's forward / backward reads (pipeline full).
    """

    mode: str
    count: sp.Symbol
    forward_cycle: sp.Expr
    backward_cycle: sp.Expr
    total_cycles: sp.Expr
    forward_delay: sp.Expr
    backward_delay: sp.Expr

    @property
    def busy_cycles(self) -> sp.Expr:
        """:math:`2 \\times` count: one forward and one backward per micro-batch."""
        return 2 * self.count

    @property
    def idle_cycles(self) -> sp.Expr:
        """Bubble cycles per stage: total minus busy."""
        return sp.expand(self.total_cycles - self.busy_cycles)

    @property
    def density(self) -> sp.Expr:
        """Computation density, busy / total (1 means no bubble)."""
        return sp.simplify(self.busy_cycles / self.total_cycles)

    @property
    def bubble_rate(self) -> sp.Expr:
        """Bubble rate, idle / busy."""
        return sp.simplify(self.idle_cycles / self.busy_cycles)

    @property
    def bubble_fraction(self) -> sp.Expr:
        """Bubble fraction, idle / total (equals 1 - density)."""
        return sp.simplify(self.idle_cycles / self.total_cycles)

    @property
    def cycles_per_micro_batch(self) -> sp.Expr:
        """Cycles per micro-batch, total / count (the inverse throughput)."""
        return sp.simplify(self.total_cycles / self.count)

    @property
    def speedup(self) -> sp.Expr:
        """Throughput speedup over no pipeline, :math:`2M` / cycles per micro-batch."""
        return sp.simplify(2 * M / self.cycles_per_micro_batch)

    @property
    def max_delay(self) -> sp.Expr:
        """The largest forward delay over stages (at stage 1): ``D = M - 1`` for async, else 0."""
        return self.forward_delay.subs(m, 1)

    def quantities(self) -> dict[str, sp.Expr]:
        """Every closed form by name (the names :func:`evaluate` accepts)."""
        names = (
            "forward_cycle backward_cycle total_cycles busy_cycles idle_cycles density bubble_rate "
            "bubble_fraction cycles_per_micro_batch speedup forward_delay backward_delay max_delay"
        ).split()
        return {name: sp.sympify(getattr(self, name)) for name in names}

    def latex(self) -> dict[str, str]:
        """LaTeX of every closed form, by name."""
        return {name: sp.latex(expr) for name, expr in self.quantities().items()}


_PIPELINED_F = 2 * (mb - 1) + m - 1
_PIPELINED_B = 2 * (mb - 1) + 2 * M - m

_SCHEDULES = {
    "none": Schedule(
        "none", B, 2 * M * (mb - 1) + m - 1, 2 * M * (mb - 1) + 2 * M - m, 2 * M * B,
        sp.Integer(0), sp.Integer(0),
    ),
    "sync": Schedule(
        "sync", B, _PIPELINED_F, _PIPELINED_B, 2 * (B + M - 1), sp.Integer(0), sp.Integer(0)
    ),
    "async": Schedule(
        "async", N, _PIPELINED_F, _PIPELINED_B, 2 * (N + M - 1), M - m, sp.Integer(0)
    ),
}


def schedule(mode: str) -> Schedule:
    """Return the :class:`Schedule` of ``mode`` (``"none"``, ``"sync"`` or ``"async"``)."""
    try:
        return _SCHEDULES[mode]
    except KeyError:
        raise ParameterError(f"mode={mode!r} is unknown; valid modes {', '.join(MODES)}") from None


def cycles_for_iterations(mode: str) -> sp.Expr:
    r"""Clock cycles for ``K`` iterations (updates), the theory-spec "Complexities" rule.

    ``none``: :math:`2MBK`; ``sync``: :math:`2(B+M-1)K` (one update per mini-batch of ``B``
    micro-batches); ``async``: :math:`2(K+M-1)` (one update per micro-batch, no flush).
    """
    s = schedule(mode)
    if mode == "async":
        return s.total_cycles.subs(N, K)
    return s.total_cycles * K


@cache
def _quantities(mode: str) -> dict[str, sp.Expr]:
    return schedule(mode).quantities()


@cache
def _compiled(mode: str, quantity: str):
    return sp.lambdify((M, B, N, m, mb), _quantities(mode)[quantity], "numpy")


def evaluate(mode: str, quantity: str, *, stages, micro_batches=1, stage=1, micro_batch=1):
    """Evaluate a closed form numerically (compiled once with ``lambdify`` and cached).

    Parameters
    ----------
    mode : str
        Schedule mode.
    quantity : str
        A key of :meth:`Schedule.quantities`.
    stages : int or array
        ``M``, an integer >= 1.
    micro_batches : int or array
        ``B`` for ``none``/``sync``, ``N`` for ``async``; an integer >= 1.
    stage, micro_batch : int or array
        ``m`` in ``1..M`` and ``b`` in ``1..micro_batches``, for the per-stage and
        per-micro-batch quantities.

    Returns
    -------
    numpy scalar or ndarray
        The quantity, with the broadcast shape of the four arguments (also for a quantity that
        does not depend on all of them, e.g. a delay of 0).

    Raises
    ------
    ParameterError
        For an unknown quantity or an argument out of its range (the message names it).
    """
    names = _quantities(mode)
    if quantity not in names:
        raise ParameterError(f"quantity={quantity!r} is unknown; valid: {', '.join(sorted(names))}")
    args = (stages, micro_batches, stage, micro_batch)
    for name, value in zip(("stages", "micro_batches", "stage", "micro_batch"), args, strict=True):
        check_array(name, value, 1, None, integer=True)
    for name, value, limit_name, limit in (
        ("stage", stage, "stages", stages), ("micro_batch", micro_batch, "micro_batches",
                                             micro_batches),
    ):
        value_b, limit_b = np.broadcast_arrays(value, limit)
        above = value_b > limit_b
        if above.any():
            i = np.flatnonzero(above)[0]
            raise ParameterError(
                f"{name}={value_b.flat[i].item()!r} is out of range; valid range: 1 <= {name} <= "
                f"{limit_name} = {limit_b.flat[i].item()!r}"
            )
    shape = np.broadcast_shapes(*(np.shape(a) for a in args))
    value = _compiled(mode, quantity)(stages, micro_batches, micro_batches, stage, micro_batch)
    value = np.broadcast_to(value, shape)
    return value[()] if value.ndim == 0 else value.copy()
