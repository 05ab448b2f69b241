r"""The strategies of the planner's exact search: which bounds, which iterations, which cycles.

:class:`~bounds.planning.search.GridSearch` is one grid search (partition DPs, grids, branch and
bound). The four plans it makes -- guaranteed or forecast, analog SGD or Tiki-Taka -- differ only in
two objects passed to it:

- an **objective**, the iterations to ``eps`` at every grid point: :class:`GuaranteeObjective`
  (the proved complexity), :class:`ForecastObjective` (a calibration's :math:`K(\epsilon)` at the
  step the guarantee gives) or :class:`ForecastStepObjective` (the same at the step of fewest
  calibrated iterations within the stability limit, ``plan --step forecast``);
- a **cost**, the clock cycles of those iterations for a partition: :class:`PlainCost` (the
  schedule's, :func:`theory.schedules.cycles_after`) or :class:`TransferCost` (the schedule's plus
  Tiki-Taka's transfers, :math:`\lfloor K/T\rfloor c_T`).

Each objective reads the proved bounds of the algorithm through its ``bounds``: an
:class:`AnalogBounds` (analog SGD's entries of the mode, :func:`theory.complexity.
evaluate_guarantee`) or a :class:`TikiTakaBounds` (only the ``derived`` Tiki-Taka entries whose
``setting`` conditions the plan's :class:`~bounds.params.TransferSettings` meet). Which bounds,
which objective and which cost a plan uses:

==========================  =================  ===================  ================
plan                        bounds             objective            cost
==========================  =================  ===================  ================
``plan``                    ``AnalogBounds``   ``Guarantee...``     ``PlainCost``
``plan(calibration=...)``   ``AnalogBounds``   ``Forecast...``      ``PlainCost``
``plan(..., step=...)``     ``AnalogBounds``   ``ForecastStep...``  ``PlainCost``
``plan_tiki_taka``          ``TikiTakaBounds`` ``Guarantee...``     ``TransferCost``
``plan_tiki_taka(cal...)``  ``TikiTakaBounds`` ``Forecast...``      ``TransferCost``
==========================  =================  ===================  ================
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from theory.admissible import step_cap
from theory.calibration import Calibration, forecast_iterations
from theory.complexity import (
    REACHABLE,
    ComplexityResult,
    evaluate_complexity,
    evaluate_guarantee,
    guarantee_entries,
)
from theory.errors import ParameterError
from theory.schedules import (
    CYCLES_PER_COLUMN,
    columns_moved,
    cycles_after,
    transfer_cycles,
    transfer_event_cycles,
)
from theory.step_choice import best_steps
from theory.theorems import bound_for

from ..params import PLAN_MODES, TransferSettings
from .models import Model
from .partition import Partition
from .results import Candidate
from .tiki_taka_results import TransferCandidate

__all__ = [
    "AnalogBounds", "Cost", "ForecastObjective", "ForecastStepObjective", "GuaranteeObjective",
    "NetworkForecastObjective", "Objective", "PlainCost", "ProvedBounds", "TikiTakaBounds",
    "TransferCost",
]


class ProvedBounds(Protocol):
    """The proved bounds of one algorithm, at one target and one set of constants."""

    eps: float
    values: dict

    def guarantee(self, mode: str, grid: dict, on_unreachable: str = "status") -> ComplexityResult:
        """The proved complexity of ``mode`` on ``grid`` (fewest iterations over its bounds)."""

    def bound_name(self, mode: str) -> str:
        """The entry named in the reasons of a ruled-out mode."""

    def label(self, mode: str, point: dict) -> str:
        """The entry whose iterations a candidate at ``point`` reports (``Candidate.bound``)."""

    def step(self, mode: str, grid: dict) -> np.ndarray:
        """The step a forecast point runs at (``nan`` where there is none)."""


@dataclass(frozen=True)
class AnalogBounds:
    """Analog SGD's proved bounds: ``analog_sgd_sp`` for sync, the better of ``analog_sgd_ap``
    and ``analog_sgd_ap_b`` for async (:func:`theory.complexity.evaluate_guarantee`).

    Parameters
    ----------
    eps : float
        The target, > 0.
    values : dict
        The constants of the bounds by symbol name (:func:`bounds.theory_values`).
    write : {"batch-mean", "per-sample"}
        The write semantics of the entries (``per-sample``: ``analog_sgd_sp_per_sample`` for
        sync, ``analog_sgd_ap_per_sample`` for async).
    """

    eps: float
    values: dict
    write: str = "batch-mean"

    def guarantee(self, mode: str, grid: dict, on_unreachable: str = "status") -> ComplexityResult:
        """The proved complexity of ``mode`` on ``grid``: the fewest iterations over its bounds."""
        return evaluate_guarantee(mode, self.eps, on_unreachable=on_unreachable,
                                  write=self.write, **self.values, **grid)

    def bound_name(self, mode: str) -> str:
        """The mode's registry entry (:func:`theory.theorems.bound_for`)."""
        return bound_for(mode, "analog", self.write).name

    def label(self, mode: str, point: dict) -> str:
        """The entry that gives the fewest iterations at ``point``, or ``"none"`` where no entry
        reaches ``eps`` (a choice of :class:`ForecastStepObjective` may lie below the floor)."""
        result = self.guarantee(mode, point)
        return str(result.algorithm) if result.status == REACHABLE else "none"

    def step(self, mode: str, grid: dict) -> np.ndarray:
        """The guarantee's best step for ``eps``; ``nan`` at or below its floor."""
        result = self.guarantee(mode, grid)
        return np.where(result.status == REACHABLE, np.asarray(result.step, dtype=float), np.nan)

    def step_cap(self, mode: str, grid: dict) -> np.ndarray:
        """The mode's step cap (:func:`theory.admissible.step_cap` of its entry) on ``grid``."""
        name = bound_for(mode, "analog", self.write).name
        stages = np.asarray(grid["M"])
        shape = np.broadcast_shapes(*(np.shape(v) for v in grid.values()))
        caps = {int(m): step_cap(name, {**self.values, "M": int(m), "D": int(m) - 1})
                for m in np.unique(stages)}
        return np.broadcast_to(np.vectorize(lambda m: caps[int(m)], otypes=[float])(stages),
                               shape)


@dataclass(frozen=True, eq=False)
class TikiTakaBounds:
    r"""Tiki-Taka's proved bounds: per mode only the ``derived`` entries whose ``setting``
    conditions ``transfer`` meets (:func:`theory.complexity.guarantee_entries`).

    Parameters
    ----------
    eps : float
        The target, > 0.
    values : dict
        The constants of the bounds (:func:`bounds.theory_values`); Corollary TT0's ``T``
        and ``rho`` are set from ``transfer`` (not :mod:`bounds.evaluation`'s 1 and 1).
    transfer : TransferSettings
        The plan's transfers.
    write : {"batch-mean", "per-sample"}
        The write semantics of the entries (``per-sample``: Corollary TT0PS's
        ``tiki_taka_reset*_per_sample`` rows, the same formulas).

    Attributes
    ----------
    entries : dict
        Mode -> the entries that prove it (empty: no guarantee).
    unusable : dict
        Mode -> why its entry cannot be evaluated here (it needs constants the plan does not
        have); such a mode has no entries.
    analog : AnalogBounds
        Analog SGD's bounds at the same constants: the step of a mode without an entry.
    """

    eps: float
    values: dict
    transfer: TransferSettings
    write: str = "batch-mean"
    entries: dict = field(init=False, repr=False)
    unusable: dict = field(init=False, repr=False)
    analog: AnalogBounds = field(init=False, repr=False)

    def __post_init__(self):
        values = {**self.values, "T": self.transfer.every, "rho": float(self.transfer.lr)}
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "analog", AnalogBounds(self.eps, values, self.write))
        settings = self.transfer.settings()
        entries = {mode: guarantee_entries(mode, "tiki-taka", settings, self.write)
                   for mode in PLAN_MODES}
        unusable: dict[str, str] = {}
        for mode, found in entries.items():
            for entry in found:  # an entry needing constants the plan does not have: none used
                try:
                    evaluate_complexity(entry.name, self.eps, on_unreachable="status", **values,
                                        M=1, B=1, b=1)
                except ParameterError as error:
                    unusable[mode] = f"{entry.name} cannot be evaluated here: {error}"
                    entries[mode] = ()
                    break
        object.__setattr__(self, "entries", entries)
        object.__setattr__(self, "unusable", unusable)

    def guarantee(self, mode: str, grid: dict, on_unreachable: str = "status") -> ComplexityResult:
        """The proved Tiki-Taka complexity, in schedule cycles (the cost adds the transfers of
        each partition, :meth:`TransferCost.cycles`)."""
        return evaluate_guarantee(mode, self.eps, algorithm="tiki-taka",
                                  settings=self.transfer.settings(),
                                  transfer=(self.transfer.every, 0), write=self.write,
                                  on_unreachable=on_unreachable, **self.values, **grid)

    def bound_name(self, mode: str) -> str:
        """The mode's first entry, or ``"the calibrated forecast"`` without one."""
        entries = self.entries[mode]
        return entries[0].name if entries else "the calibrated forecast"

    def label(self, mode: str, point: dict) -> str:
        """The proved entry at ``point``, or ``"none"``."""
        if self.entries[mode]:
            result = self.guarantee(mode, point)
            if result.status == REACHABLE:
                return str(result.algorithm)
        return "none"

    def step(self, mode: str, grid: dict) -> np.ndarray:
        """The step a Tiki-Taka point runs at.

        The proved entry's best step for ``eps`` where the mode has one; otherwise analog SGD's
        (A takes analog SGD's update, and a Tiki-Taka calibration's design steps are fractions of
        the analog step cap): the analog guarantee's best step for ``eps``, and where ``eps`` is
        at or below the analog floor (which Tiki-Taka need not have) the analog step cap.
        """
        if self.entries[mode]:
            result = self.guarantee(mode, grid)
            return np.where(result.status == REACHABLE, np.asarray(result.step, dtype=float),
                            np.nan)
        analog = self.analog.guarantee(mode, grid)
        step = np.asarray(analog.step, dtype=float)
        if np.all(analog.status == REACHABLE):
            return step
        return np.where(analog.status == REACHABLE, step, self.analog.step_cap(mode, grid))


class Objective(Protocol):
    """What the search counts as the iterations to ``eps``."""

    bounds: ProvedBounds

    def iterations(self, mode: str, grid: dict) -> np.ndarray:
        """Iterations to ``eps`` on a broadcast grid; ``inf`` where unreachable."""


@dataclass(frozen=True)
class GuaranteeObjective:
    """The proved whole iterations of ``bounds``.

    Unreachable (``inf``): ``eps`` at or below the floor, or more iterations than an int64 holds
    (a point just above its floor), per point, so no point can abort the search.
    """

    bounds: ProvedBounds

    def iterations(self, mode: str, grid: dict) -> np.ndarray:
        """Whole iterations on a broadcast grid; ``inf`` where unreachable."""
        result = self.bounds.guarantee(mode, grid)
        whole = np.asarray(result.iterations_int, dtype=float)
        return np.where(result.status == REACHABLE, whole, np.inf)


@dataclass(frozen=True)
class ForecastObjective:
    r"""The calibrated iterations to ``eps``.

    Every point runs at the step of ``bounds`` (:meth:`ProvedBounds.step`); its iterations are the
    calibration's :math:`K(\epsilon)` at that step (:func:`theory.calibration.
    forecast_iterations`), ``inf`` where there is no step or the calibrated floor is at or above
    ``eps``.
    """

    bounds: ProvedBounds
    calibration: Calibration

    def forecast(self, mode: str, grid: dict) -> tuple[np.ndarray, ...]:
        """``(step, iterations, low, high)`` on a broadcast grid (``inf`` where unreachable)."""
        lr = self.bounds.step(mode, grid)
        with np.errstate(invalid="ignore"):
            k, low, high = forecast_iterations(
                self.calibration, mode, self.bounds.eps,
                lr=np.where(np.isfinite(lr), lr, 1.0), M=grid["M"], B=grid.get("B", 1),
                b=grid["b"])
        bad = ~np.isfinite(lr)
        return lr, *(np.where(bad, np.inf, x) for x in (k, low, high))

    def iterations(self, mode: str, grid: dict) -> np.ndarray:
        """The forecast's iterations (:meth:`forecast`)."""
        return self.forecast(mode, grid)[1]


@dataclass(frozen=True)
class ForecastStepObjective:
    r"""The calibrated iterations to ``eps`` at the step the calibration chooses.

    Every point runs at the step of fewest calibrated iterations in :math:`(0,
    \alpha_{\mathrm{stab}}(D)]` (:func:`theory.step_choice.best_steps`, the stability limit at the
    bounds' ``L`` and ``q_max``; ``D = M - 1`` async, 0 sync), not at the guarantee's step: the
    configurations are ranked by the forecast at their own best step. That step may lie above
    the proved step cap (the plan reports whether it does, :func:`theory.step_choice.
    guarantee_at_step`). ``inf`` where no step reaches ``eps``.
    """

    bounds: ProvedBounds
    calibration: Calibration

    def _steps(self, mode: str, grid: dict) -> tuple[np.ndarray, np.ndarray]:
        lr, k, _ = best_steps(self.calibration, mode, self.bounds.eps, grid["M"],
                              grid.get("B", 1), grid["b"], L=self.bounds.values["L"],
                              q_max=self.bounds.values["q_max"])
        return lr, k

    def forecast(self, mode: str, grid: dict) -> tuple[np.ndarray, ...]:
        """``(step, iterations, low, high)`` on a broadcast grid (``inf`` where unreachable;
        the interval that of the bootstrap draws at the chosen step)."""
        lr, _ = self._steps(mode, grid)
        bad = ~np.isfinite(lr)
        with np.errstate(invalid="ignore"):
            k, low, high = forecast_iterations(
                self.calibration, mode, self.bounds.eps, lr=np.where(bad, 1.0, lr),
                M=grid["M"], B=grid.get("B", 1), b=grid["b"])
        return lr, *(np.where(bad, np.inf, x) for x in (k, low, high))

    def iterations(self, mode: str, grid: dict) -> np.ndarray:
        """The point forecast's iterations at each point's chosen step."""
        return self._steps(mode, grid)[1]


@dataclass(frozen=True)
class NetworkForecastObjective:
    r"""The calibrated iterations of a network calibration to its own target.

    A network calibration (:attr:`theory.calibration.Calibration.network`) forecasts the updates
    to its target (a test accuracy or a training loss, :attr:`~theory.calibration.Calibration.
    target`), not to the plan's ``eps`` (in the units of the placeholder constants), and its steps
    are the network's, not the guarantee's: every point runs at the step of the calibration's
    design (of its mode) with the fewest forecast iterations there, so the forecast never leaves
    the steps that were measured. ``inf`` where no design step reaches the target.
    """

    bounds: ProvedBounds
    calibration: Calibration

    def forecast(self, mode: str, grid: dict) -> tuple[np.ndarray, ...]:
        """``(step, iterations, low, high)`` on a broadcast grid (``inf`` where unreachable)."""
        steps = sorted({float(p["lr"]) for p in self.calibration.design if p["mode"] == mode})
        eps = self.calibration.target["eps"]
        shape = np.broadcast_shapes(*(np.shape(v) for v in grid.values()))
        best = [np.full(shape, np.inf) for _ in range(3)]
        chosen = np.full(shape, np.nan)
        for lr in steps:
            k, low, high = forecast_iterations(self.calibration, mode, eps, lr=lr, M=grid["M"],
                                               B=grid.get("B", 1), b=grid["b"])
            better = np.broadcast_to(k, shape) < best[0]
            chosen = np.where(better, lr, chosen)
            best = [np.where(better, x, old) for x, old in zip((k, low, high), best,
                                                                strict=True)]
        return (chosen, *best)

    def iterations(self, mode: str, grid: dict) -> np.ndarray:
        """The forecast's iterations (:meth:`forecast`)."""
        return self.forecast(mode, grid)[1]


class Cost(Protocol):
    """The clock cycles of a number of iterations."""

    def cycles(self, mode: str, iterations, stages: int, count, partition: Partition):
        """Cycles of ``iterations`` updates with ``partition``."""

    def least_cycles(self, mode: str, iterations, stages: int, count):
        """The fewest cycles of any contiguous partition into ``stages`` stages."""

    def candidate(self, fields: dict) -> Candidate:
        """The candidate of ``fields`` (those of :class:`Candidate`)."""


@dataclass(frozen=True)
class PlainCost:
    """The schedule's cycles, :func:`theory.schedules.cycles_after` (no partition enters)."""

    def cycles(self, mode: str, iterations, stages: int, count, partition: Partition):
        """Clock cycles of ``iterations`` updates."""
        return cycles_after(mode, iterations, stages, count)

    def least_cycles(self, mode: str, iterations, stages: int, count):
        """The same cycles (they do not depend on the partition)."""
        return cycles_after(mode, iterations, stages, count)

    def candidate(self, fields: dict) -> Candidate:
        """A :class:`Candidate`."""
        return Candidate(**fields)


@dataclass(frozen=True, eq=False)
class TransferCost:
    r"""The schedule's cycles plus Tiki-Taka's transfers.

    After ``K`` updates a Tiki-Taka plan spends the schedule's cycles plus
    :math:`\lfloor K/T \rfloor c_T` (:func:`theory.schedules.transfer_cycles`), with
    :math:`c_T = 2\max_m \sum_{\ell \in m} s_\ell` for the candidate's partition
    (:func:`theory.schedules.transfer_event_cycles`): each layer is one tile of ``rows`` columns
    (a column is the weights one input line feeds, as in the simulator), :math:`s_\ell = 1` for
    ``transfer_slice="column"`` and ``rows`` for ``"all"``. Transfer cycles are pipeline clock
    cycles like the schedule's (:mod:`bounds.timing`), so the seconds are ``cycles x cycle time``.
    Where the bottleneck partition does not fit the memory, the grid uses the smallest
    :math:`c_T` of any contiguous partition into ``M`` stages, :math:`2\lceil\max(\max_\ell
    s_\ell, \sum_\ell s_\ell/M)\rceil` (:meth:`least_cycles`), so the grid stays a lower bound
    and the branch and bound exact.

    Parameters
    ----------
    transfer : TransferSettings
        The plan's transfers.
    model : Model
        The network (its layers' rows are the columns moved).
    """

    transfer: TransferSettings
    model: Model
    columns: tuple[int, ...] = field(init=False, repr=False)
    moved: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        columns = tuple(int(layer.rows) for layer in self.model.layers)
        object.__setattr__(self, "columns", columns)
        object.__setattr__(self, "moved", np.array([columns_moved(c, self.transfer.slice)
                                                    for c in columns]))

    def event_cycles(self, partition: Partition) -> int:
        """:math:`c_T` of ``partition`` (stage ``j`` holds layers ``starts[j]`` onwards)."""
        ends = (*partition.starts[1:], len(self.columns))
        stage_tiles = [list(self.columns[a:e]) for a, e in zip(partition.starts, ends,
                                                                strict=True)]
        return transfer_event_cycles(stage_tiles, self.transfer.slice)

    def least_event_cycles(self, stages: int) -> int:
        """The smallest :math:`c_T` of any contiguous partition into ``stages`` stages (a lower
        bound: the slowest stage moves at least the largest layer's and the mean share)."""
        share = max(int(self.moved.max()), math.ceil(int(self.moved.sum()) / stages))
        return CYCLES_PER_COLUMN * share

    def cycles(self, mode: str, iterations, stages: int, count, partition: Partition):
        """Schedule cycles plus the transfers of ``partition``."""
        base = cycles_after(mode, iterations, stages, count)
        return base + transfer_cycles(np.asarray(iterations, dtype=float), self.transfer.every,
                                      self.event_cycles(partition))

    def least_cycles(self, mode: str, iterations, stages: int, count):
        """Schedule cycles plus the transfers of the smallest :math:`c_T` into ``stages``."""
        return cycles_after(mode, iterations, stages, count) + transfer_cycles(
            np.asarray(iterations, dtype=float), self.transfer.every,
            self.least_event_cycles(stages))

    def candidate(self, fields: dict) -> TransferCandidate:
        """A :class:`TransferCandidate`, its transfers' share of the cycles apart."""
        event = self.event_cycles(fields["partition"])
        return TransferCandidate(
            **fields,
            transfer_cycles=int(transfer_cycles(fields["iterations"], self.transfer.every,
                                                event)),
            event_cycles=event,
        )
