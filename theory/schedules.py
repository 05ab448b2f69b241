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
:mod:`simulate.pipeline.timeline`, which never reads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
import sympy as sp

from .compiled import compile_expr
from .errors import ParameterError, check_array, check_range
from .limits import MAX_TRANSFER_PERIOD
from .symbols import B, K, M, N, m, mb
from .vocabulary import MODES, TRANSFER_SLICES

__all__ = [
    "CYCLES_PER_COLUMN",
    "MODES",
    "QUANTITIES",
    "Schedule",
    "TRANSFER_SLICES",
    "columns_moved",
    "cycles_after",
    "cycles_for_iterations",
    "evaluate_schedule",
    "in_flight",
    "in_flight_expr",
    "max_delay",
    "schedule",
    "transfer_cycles",
    "transfer_event_cycles",
    "write_delay",
]

#: the closed forms of a :class:`Schedule` by name (what :func:`evaluate_schedule` accepts)
QUANTITIES = (
    "forward_cycle", "backward_cycle", "total_cycles", "busy_cycles", "idle_cycles", "density",
    "bubble_rate", "bubble_fraction", "cycles_per_micro_batch", "speedup", "forward_delay",
    "backward_delay", "max_delay",
)


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
        """Every closed form by name (the names :func:`evaluate_schedule` accepts)."""
        return {name: sp.sympify(getattr(self, name)) for name in QUANTITIES}

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


def cycles_after(mode: str, iterations, stages, micro_batches=1) -> np.ndarray:
    """:func:`cycles_for_iterations` evaluated: cycles of ``iterations`` updates (arrays broadcast).

    ``micro_batches`` is ``B`` (unused by ``async``); the result is a float array.
    """
    f = compile_expr(cycles_for_iterations(mode), K)
    return np.asarray(f(iterations, {"M": stages, "B": micro_batches}), dtype=float)


def max_delay(stages) -> np.ndarray:
    """``D = M - 1``, the async schedule's maximal forward delay (:attr:`Schedule.max_delay`)."""
    return compile_expr(schedule("async").max_delay)({"M": stages})


def write_delay(stages, every) -> np.ndarray:
    r"""The async schedule's maximal forward delay counted in transfer windows of ``every``
    updates: :math:`D_w = \lceil (M - 1)/T \rceil` (Corollary TT0-AP).

    Update :math:`t = jT + s` (window :math:`j`, :math:`0 \le s < T`) reads a stage's weights as
    they were :math:`d \le M - 1` updates earlier; when the weights change only at the end of a
    window, that is write :math:`j + \lfloor (s - d)/T \rfloor \ge j - \lceil d/T \rceil`. At
    ``every = 1`` it is :func:`max_delay`. Integer arrays broadcast.
    """
    m = np.asarray(stages, dtype=np.int64)
    t = np.asarray(every, dtype=np.int64)
    return -((1 - m) // t)  # ceil((m - 1)/t) in exact integer arithmetic


@cache
def in_flight_expr(mode: str) -> sp.Expr:
    r"""Sympy expression of :math:`h(m)`, the micro-batches stage ``m`` holds at most.

    A stage keeps a micro-batch's activations from its forward to its backward; with a
    forward-to-backward gap :math:`g(m)` and an injection interval :math:`i` (both free of the
    micro-batch index), it holds :math:`\lfloor g/i \rfloor + 1` of them, at most ``B`` for the
    schedules that flush (``none``, ``sync``).

    Raises
    ------
    ParameterError
        If the schedule's forward-to-backward gap or injection interval depends on the micro-batch
        index (then the window argument does not apply).
    """
    s = schedule(mode)
    gap = sp.simplify(s.backward_cycle - s.forward_cycle)
    interval = sp.simplify(s.forward_cycle.subs(mb, mb + 1) - s.forward_cycle)
    if mb in gap.free_symbols or mb in interval.free_symbols:
        raise ParameterError(f"mode={mode!r}: the schedule's gap or interval depends on b")
    held = sp.floor(gap / interval) + 1
    return held if mode == "async" else sp.Min(held, B)


def in_flight(mode: str, stages: int, micro_batches=None) -> np.ndarray:
    """Micro-batches each stage holds at most, shape ``(stages,)`` (stage 1 first), int64.

    Parameters
    ----------
    mode : {"none", "sync", "async"}
    stages : int
        ``M`` >= 1.
    micro_batches : int, optional
        ``B`` (required for ``none`` and ``sync``; ignored by ``async``).
    """
    stages = check_range("stages", stages, 1, integer=True)
    if mode != "async":
        micro_batches = check_range("micro_batches", micro_batches, 1, integer=True)
    else:
        micro_batches = 1
    stage = np.arange(1, stages + 1)
    out = compile_expr(in_flight_expr(mode))({"M": stages, "B": micro_batches, "m": stage})
    return np.broadcast_to(np.asarray(out, dtype=np.int64), stage.shape).copy()


@cache
def _quantity(mode: str, quantity: str) -> sp.Expr:
    """One closed form of ``mode``, simplified on its own (not all thirteen)."""
    return sp.sympify(getattr(schedule(mode), quantity))


def evaluate_schedule(mode: str, quantity: str, *, stages, micro_batches=1, stage=1, micro_batch=1):
    """Evaluate a closed form numerically (compiled once by :func:`theory.compiled.compile_expr`).

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
    schedule(mode)  # unknown modes: ParameterError listing the valid ones
    if quantity not in QUANTITIES:
        raise ParameterError(
            f"quantity={quantity!r} is unknown; valid: {', '.join(sorted(QUANTITIES))}"
        )
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
    values = {"M": stages, "B": micro_batches, "N": micro_batches, "m": stage, "b_mb": micro_batch}
    value = np.broadcast_to(compile_expr(_quantity(mode, quantity))(values), shape)
    return value[()] if value.ndim == 0 else value.copy()


# ------------------------------------------------------------------------------------------------
# Tiki-Taka transfers: the one timing rule (simulate.device.tiki_taka and the planner both use it)

#: cycles to transfer one column: one read (an MVM with a one-hot input) + one pulse update of C
CYCLES_PER_COLUMN = 2


def columns_moved(columns: int, transfer_slice: str) -> int:
    """Columns one transfer event moves on a tile of ``columns`` columns: 1 for ``"column"``
    (round robin), ``columns`` for ``"all"``."""
    if transfer_slice not in TRANSFER_SLICES:
        raise ParameterError(f"transfer_slice={transfer_slice!r} is unknown; valid: "
                             f"{', '.join(TRANSFER_SLICES)}")
    return 1 if transfer_slice == "column" else int(columns)


def transfer_event_cycles(stage_tiles, transfer_slice: str) -> int:
    r"""Clock cycles of one transfer event, :math:`c_T`.

    Reading one column of A is one MVM (one cycle, like a forward) and writing it into C one
    pulse update (one cycle): :data:`CYCLES_PER_COLUMN` ``= 2`` per column. A stage transfers its
    tiles one after the other; the stages transfer at the same time, after the update, and the
    pipeline waits for the slowest stage:

    .. math:: c_T = 2 \max_m \sum_{\text{tiles of } m} s_{\text{tile}}, \qquad
              s = 1 \ (\texttt{column}), \quad s = \text{the tile's columns} \ (\texttt{all}).

    Parameters
    ----------
    stage_tiles : sequence of sequence of int
        Per stage, the columns of each of its tiles (a tile is one crossbar; a column is the block
        of weights fed by one input line, so a ``rows x cols`` layer is a tile of ``rows``
        columns).
    transfer_slice : {"column", "all"}

    Returns
    -------
    int
        Cycles per event (0 without tiles).
    """
    moved = [sum(columns_moved(c, transfer_slice) for c in tiles) for tiles in stage_tiles]
    return CYCLES_PER_COLUMN * max(moved, default=0)


def transfer_cycles(iterations, every, event_cycles) -> np.ndarray:
    r"""Cycles the transfers add after ``iterations`` updates: :math:`\lfloor K/T \rfloor c_T`.

    Every stage applies one update per iteration in the ``none``, ``sync`` and ``async``
    schedules, so every stage's update count is ``K`` and a transfer event follows every
    ``T``-th update; the events are added on top of the schedule's cycles
    (:func:`cycles_after`). Arrays broadcast; int64 for integer input (like the simulator's
    cycle counts), float where ``iterations`` is a float array (``inf`` stays ``inf``).

    Parameters
    ----------
    iterations : int or array
        ``K`` >= 0, updates.
    every : int
        ``T`` >= 1, updates per transfer event.
    event_cycles : int
        :math:`c_T` >= 0 (:func:`transfer_event_cycles`), cycles.
    """
    every = check_range("transfer_every", every, 1, MAX_TRANSFER_PERIOD, integer=True)
    event_cycles = check_range("event_cycles", event_cycles, 0, None, integer=True)
    k = np.asarray(iterations)
    if np.issubdtype(k.dtype, np.integer):
        return (k.astype(np.int64) // np.int64(every)) * np.int64(event_cycles)
    k = k.astype(float)
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(k), np.floor(k / every) * event_cycles, k)
