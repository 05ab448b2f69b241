r"""The planner: pipeline mode, stages, layer partition and micro-batches for a model and hardware.

Given a :class:`~bounds.models.Model`, the hardware (:class:`PlanHardware`: accelerators, tiles,
activation buffers, device and timing), the problem constants and a target ``eps``, :func:`plan`
chooses the mode (``sync`` or ``async``), the number of stages :math:`M`, a contiguous partition of
the layers into :math:`M` stages, the micro-batches per mini-batch :math:`B` (``sync``) and the
samples per micro-batch :math:`b` that minimise the **predicted wall-clock time to eps**

.. math::

    T = C\big(K(\epsilon)\big)\; t_\mathrm{cycle}\big(b\, W_{\max}\big),

where :math:`K(\epsilon)` is the proved iteration count of the mode (whole iterations) from
:func:`theory.complexity.evaluate_guarantee`: ``analog_sgd_sp`` (Corollary 3) for ``sync``, the
smaller of ``analog_sgd_ap`` and ``analog_sgd_ap_b`` (Theorem 4' and 4'B) for ``async``;
:math:`C(K)` its clock cycles (``sync`` :math:`2(B+M-1)K`, ``async`` :math:`2(K+M-1)`, from
:func:`theory.schedules.cycles_after`), and
:math:`t_\mathrm{cycle}` the cycle time of the slowest stage (:meth:`bounds.timing.TimingModel.
stage_time_s` of its MVMs per micro-batch, :math:`b` times the stage's MVMs per sample
:math:`W_{\max}`). Nothing here restates a formula of the theory.

Constraints, for every stage :math:`j`:

- **tiles**: the stage's tiles :math:`\le` tiles per accelerator (layers are not split);
- **memory**: :math:`b \cdot h_j \cdot a_j \cdot \mathrm{bytes} \le` activation buffer, with
  :math:`a_j` the activation values the stage stores per sample and :math:`h_j` the micro-batches it
  holds at once (:func:`theory.schedules.in_flight`, derived from the schedules);
- :math:`1 \le M \le \min(P, \ell)`, :math:`1 \le B \le B_{\max}`, :math:`1 \le b \le b_{\max}`
  (:class:`PlanLimits`); a target at or below a mode's floor for every allowed batch rules the mode
  out, with the reason.

**Exact search.** For each mode and :math:`M`, the bottleneck partition without the memory
constraint comes from the dynamic program of :func:`bounds.partition.best_partition`; it gives a
lower bound of :math:`T` on the whole :math:`(B, b)` grid (vectorised), exact wherever that
partition also fits the memory. Elsewhere the memory-constrained DP is solved lazily in increasing
order of the lower bound (branch and bound), so the returned plan is the exact integer optimum
over the grid; :func:`theory.complexity.evaluate_guarantee` gives the whole iterations on each
grid with a per-point status, so a point at or below its floor, or beyond int64 iterations, is
simply unreachable (``inf``). **Relaxation.** :mod:`bounds.relaxation` solves the continuous
geometric program in :math:`(M, B, b)`, whose optimum is a lower bound; the plan reports it and
the gap, or the relaxation's status and message when it failed.

**Tiki-Taka.** :func:`plan_tiki_taka` runs the same search for a Tiki-Taka run: its cycles are
the schedule's plus the transfers, :math:`\lfloor K/T\rfloor c_T` with :math:`c_T = 2\max_m
\sum_{\ell\in m} s_\ell` (each layer one tile of ``rows`` columns; :math:`s_\ell = 1` for the
``column`` slice, ``rows`` for ``all``; :func:`theory.schedules.transfer_event_cycles`, the
simulator's rule); its guarantee uses only the proved (``derived``) Tiki-Taka entries whose
``setting`` conditions the plan's :class:`~bounds.params.TransferSettings` meet, and a mode
without one has none; its forecast needs a calibration of Tiki-Taka runs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

import numpy as np

from theory.admissible import step_cap
from theory.calibration import (
    CALIBRATED_MODES,
    Calibration,
    check_algorithm,
    forecast_iterations,
    model_terms,
)
from theory.compiled import compile_expr
from theory.complexity import (
    REACHABLE,
    evaluate_complexity,
    evaluate_guarantee,
    guarantee_entries,
    setting_conditions,
)
from theory.errors import ParameterError, UnreachableTargetError, check_range
from theory.limits import MAX_GRID_POINTS, check_size
from theory.schedules import (
    CYCLES_PER_COLUMN,
    columns_moved,
    cycles_after,
    in_flight_expr,
    transfer_cycles,
    transfer_event_cycles,
)
from theory.theorems import REGISTRY, bound_for

from .evaluate import theory_values
from .models import Model
from .params import (
    PLAN_MODES,
    PlanHardware,
    PlanLimits,
    ProblemParams,
    TransferSettings,
    check_type,
)
from .partition import Partition, best_partition
from .plan_result import (
    FORECAST_ONLY,
    GUARANTEED,
    NO_GUARANTEE,
    OPTIMAL,
    RELAXATION_FAILED,
    Candidate,
    ForecastRow,
    Grid,
    ModeGuarantee,
    Plan,
    PlanForecast,
    RateTerms,
    SolveTimes,
    TikiTakaPlan,
    TikiTakaRow,
    TransferCandidate,
)
from .relaxation import SKIPPED, Relaxed, solve_relaxation

__all__ = ["forecast_plan", "plan", "plan_tiki_taka", "time_grid"]

class _Search:
    """The exact search over (mode, M, B, b, partition): lower-bound grids and lazy DPs."""

    def __init__(self, model: Model, hw: PlanHardware, problem: ProblemParams, eps: float,
                 limits: PlanLimits):
        self.model, self.hw, self.eps, self.limits = model, hw, eps, limits
        self.values = theory_values(hw.hardware, problem)
        h = hw.hardware
        self.work = model.work
        self.tiles = model.tiles(h.tile_rows, h.tile_cols)
        self.act = model.activations
        self.bytes = hw.bytes_per_activation
        self.buffer = hw.activation_buffer_bytes
        self.dp_solves = 0
        self._dp_cache: dict = {}
        self._check_capacity()
        self.stage_range = self._stage_range()
        b_max = limits.max_micro_batch_size
        check_size("max_micro_batch_size", b_max, need=len(self.stage_range) * b_max,
                   limit=MAX_GRID_POINTS,
                   what="planner grid points (stages x max_micro_batch_size)",
                   hint="lower accelerators or max_micro_batch_size")
        self.free = {}
        for stages in self.stage_range:
            part = self.partition(stages, None)
            if part is not None:
                self.free[stages] = part
        if not self.free:
            raise ParameterError(
                f"model {model.name!r}: no contiguous split of its layers into at most "
                f"accelerators={hw.accelerators} stages fits tiles_per_accelerator="
                f"{hw.tiles_per_accelerator} (layers are not split across accelerators)"
            )
        self.b = np.arange(1, limits.max_micro_batch_size + 1)

    def _check_capacity(self):
        hw, total, largest = self.hw, int(self.tiles.sum()), int(self.tiles.max())
        available = hw.accelerators * hw.tiles_per_accelerator
        if largest > hw.tiles_per_accelerator:
            i = int(np.argmax(self.tiles))
            raise ParameterError(
                f"tiles_per_accelerator={hw.tiles_per_accelerator} is out of range for model "
                f"{self.model.name!r}: layer {self.model.layers[i].name!r} alone needs {largest} "
                f"tiles; valid range [{largest}, inf)"
            )
        if total > available:
            raise ParameterError(
                f"model {self.model.name!r} needs {total} tiles but accelerators="
                f"{hw.accelerators} x tiles_per_accelerator={hw.tiles_per_accelerator} = "
                f"{available} are available; valid range: accelerators >= "
                f"{math.ceil(total / hw.tiles_per_accelerator)}"
            )

    def _stage_range(self) -> range:
        low = max(1, math.ceil(int(self.tiles.sum()) / self.hw.tiles_per_accelerator))
        return range(low, min(self.hw.accelerators, len(self.work)) + 1)

    def partition(self, stages, held, b=1) -> Partition | None:
        """The DP partition for ``held`` micro-batches per stage (``None``: no memory limit)."""
        key = (stages, held, b)
        if key not in self._dp_cache:
            caps = None if held is None else self.buffer / (self.bytes * b * np.asarray(held))
            self.dp_solves += 1
            self._dp_cache[key] = best_partition(
                self.work, self.tiles, self.act, stages, self.hw.tiles_per_accelerator, caps
            )
        return self._dp_cache[key]

    def held(self, mode, stages, micro_batches) -> np.ndarray:
        """Micro-batches held per stage, shape (len(micro_batches), stages)."""
        stage = np.arange(1, stages + 1)[None, :]
        count = np.asarray(micro_batches)[:, None]
        held = compile_expr(in_flight_expr(mode))({"M": stages, "B": count, "m": stage})
        return np.broadcast_to(held, (count.size, stages))

    def memory(self, partition, held, b) -> tuple[int, ...]:
        return tuple(
            int(b * h * a * self.bytes) for h, a in zip(held, partition.activations, strict=True)
        )

    # -- per-mode grids ---------------------------------------------------------------------
    def grids(self, mode: str) -> Iterator[Grid]:
        """Yield the :class:`Grid` of every memory-free feasible ``M`` of ``mode``.

        Grids have shape ``(len(counts), b_max)``; unreachable points are ``inf``.
        """
        b = self.b[None, :]
        if mode == "sync":
            count = np.arange(1, self.limits.max_micro_batches + 1)[:, None]
            iterations = self._iterations(mode, {"B": count, "b": b, "M": 1})
        else:
            count = np.ones((1, 1), dtype=np.int64)
            stages = np.array(list(self.free))[:, None]
            iterations_all = self._iterations(mode, {"b": b, "M": stages})
        for i, stages in enumerate(self.free):
            if mode == "async":
                iterations = iterations_all[i : i + 1]
            part = self.free[stages]
            cycles = self.cycles(mode, iterations, stages, count, part)
            cycle_time = self.hw.timing.stage_time_s(b * part.bottleneck)
            seconds = np.asarray(cycles * cycle_time, dtype=float)
            held = self.held(mode, stages, count.ravel())
            need = (held * np.asarray(part.activations)[None, :]).max(axis=1)[:, None]
            exact = b * need * self.bytes <= self.buffer
            seconds = self.lower_seconds(mode, iterations, stages, count, cycle_time, seconds,
                                         exact)
            yield Grid(stages=stages, counts=count.ravel(), iterations=iterations,
                       seconds=seconds, exact=exact)

    def cycles(self, mode, iterations, stages, count, partition) -> np.ndarray:
        """Clock cycles of ``iterations`` updates (:func:`theory.schedules.cycles_after`; the
        partition matters for Tiki-Taka's transfers only)."""
        return cycles_after(mode, iterations, stages, count)

    def lower_seconds(self, mode, iterations, stages, count, cycle_time, seconds, exact):
        """The grid's seconds where the memory-free partition does not fit (``~exact``): a lower
        bound of every partition's (here the same values: any other partition has a slower
        bottleneck and the same cycles)."""
        return seconds

    def bound_name(self, mode: str) -> str:
        """The entry named in the reasons of a ruled-out mode."""
        return bound_for(mode).name

    def _guarantee(self, mode: str, grid: dict, on_unreachable: str = "status"):
        """The proved complexity of ``mode`` on ``grid``: the fewest iterations over its bounds."""
        return evaluate_guarantee(mode, self.eps, on_unreachable=on_unreachable, **self.values,
                                  **grid)

    def _iterations(self, mode: str, grid: dict) -> np.ndarray:
        """Whole iterations on a broadcast grid; ``inf`` where unreachable.

        Unreachable: ``eps`` at or below the floor, or more iterations than an int64 holds (a
        point just above its floor), per point from
        :func:`theory.complexity.evaluate_guarantee`, so no point can abort the search.
        """
        result = self._guarantee(mode, grid)
        whole = np.asarray(result.iterations_int, dtype=float)
        return np.where(result.status == REACHABLE, whole, np.inf)

    def min_floor(self, mode: str) -> float:
        """The smallest floor of ``mode`` over the stages, at the largest batch."""
        n_max = {"B": self.limits.max_micro_batches, "b": self.limits.max_micro_batch_size}
        stages = np.array(list(self.free))
        result = evaluate_complexity(self.bound_name(mode), self.eps, on_unreachable="status",
                                     **self.values, **n_max, M=stages)
        return float(np.min(result.floor))

    def candidate(self, mode, stages, count, b, iterations, partition) -> Candidate:
        cycles = int(cycles_after(mode, iterations, stages, count))
        cycle_time = float(self.hw.timing.stage_time_s(b * partition.bottleneck))
        held = self.held(mode, stages, [count])[0]
        point = {"b": int(b), "M": int(stages)} | ({"B": int(count)} if mode == "sync" else {})
        return Candidate(
            mode=mode, stages=int(stages), micro_batches=int(count), micro_batch_size=int(b),
            iterations=int(iterations), cycles=cycles, cycle_time_s=cycle_time,
            seconds=cycles * cycle_time, partition=partition,
            memory_bytes=self.memory(partition, held, b),
            bound=str(self._guarantee(mode, point, "raise").algorithm),
        )

    def best_for(self, mode: str, grid: Grid, threshold: float) -> Candidate | None:
        """Exact best of one (mode, M) (branch and bound below ``threshold``), or None."""
        stages, counts, iterations, seconds, exact = grid
        exact_seconds = np.where(exact, seconds, np.inf)
        flat = int(np.argmin(exact_seconds))
        best_val = float(exact_seconds.flat[flat])
        best = None
        if np.isfinite(best_val):
            i, j = np.unravel_index(flat, seconds.shape)
            best = (best_val, counts[i], int(self.b[j]), self.free[stages])
        held_rows = self.held(mode, stages, counts)
        _, group = np.unique(held_rows, axis=0, return_inverse=True)
        group = np.asarray(group).ravel()
        alive = ~exact & np.isfinite(seconds)
        while True:
            masked = np.where(alive, seconds, np.inf)
            flat = int(np.argmin(masked))
            if not masked.flat[flat] < min(best_val, threshold):
                break
            i, j = np.unravel_index(flat, seconds.shape)
            alive[i, j] = False
            count, b = counts[i], int(self.b[j])
            part = self.partition(stages, tuple(int(x) for x in held_rows[i]), b)
            if part is None:
                # caps only shrink with b: no larger b of this in-flight pattern is feasible
                alive[np.ix_(group == group[i], self.b >= b)] = False
                continue
            cycles = self.cycles(mode, iterations[i, j], stages, count, part)
            value = float(cycles * self.hw.timing.stage_time_s(b * part.bottleneck))
            if value < best_val or (value == best_val and best is not None
                                    and (count, b) < (best[1], best[2])):
                best_val, best = value, (value, count, b, part)
        if best is None:
            return None
        _, count, b, part = best
        i = int(np.flatnonzero(counts == count)[0])
        return self.candidate(mode, stages, count, b, iterations[i, b - 1], part)


def plan(
    model: Model,
    hardware: PlanHardware,
    problem: ProblemParams | None = None,
    eps: float = 1.0,
    limits: PlanLimits | None = None,
    *,
    relax: bool = True,
    calibration: Calibration | None = None,
    calibration_source: str = "given",
) -> Plan:
    r"""Choose mode, stages, partition, micro-batches and micro-batch size minimising time to eps.

    Parameters
    ----------
    model : Model
        The network (:func:`bounds.models.load_model`).
    hardware : PlanHardware
        Accelerators, tiles, buffers, device and timing.
    problem : ProblemParams, optional
        Constants L, L_s, Delta, sigma2, theta (defaults of :class:`ProblemParams`).
    eps : float
        Target for :math:`\frac1K\sum_k \mathbb{E}\lVert\nabla f(W_k)\rVert^2` (squared-gradient
        units), > 0.
    limits : PlanLimits, optional
        Search range of ``B`` and ``b`` and the modes.
    relax : bool
        Also solve the geometric-programming relaxation (default True).
    calibration : theory.calibration.Calibration, optional
        With one, :attr:`Plan.forecast` holds the plan of fewest **predicted** seconds
        (:func:`forecast_plan`) beside the guaranteed times; :attr:`Plan.best` stays the
        guarantee's choice.
    calibration_source : str
        Where the calibration came from (shown in the report).

    Returns
    -------
    Plan
        The exact integer optimum over the search range (see module docstring), the three
        next-best (mode, M) pairs, the relaxed optimum and the gap (or the relaxation's status
        and message when it failed: :attr:`Plan.status` is then :data:`RELAXATION_FAILED`).

    Raises
    ------
    ParameterError
        The model does not fit the tiles (a layer larger than an accelerator, or more tiles than
        all accelerators together), or no choice fits the activation buffers.
    UnreachableTargetError
        ``eps`` is at or below the floor of every mode for every allowed batch.
    """
    problem, limits = _check_arguments(model, hardware, problem, limits)
    eps = check_range("eps", eps, 0, low_open=True)
    start = time.perf_counter()
    search = _Search(model, hardware, problem, eps, limits)
    found, ruled_out, floors, pairs = _exact(search, limits.modes, hardware)
    if not found:
        if floors and len(floors) == len(limits.modes):
            mode = min(floors, key=floors.get)
            raise UnreachableTargetError(bound_for(mode).name, eps, floors[mode])
        raise ParameterError("; ".join(f"{m}: {r}" for m, r in ruled_out) or "no feasible plan")
    exact_time = time.perf_counter() - start
    best = found[0]
    terms = _terms(search, best)
    relaxed = _relaxed(model, hardware, problem, eps, limits, search, ruled_out, relax)
    gap = best.seconds / relaxed.value - 1 if relaxed.value > 0 and math.isfinite(relaxed.value) \
        else math.nan
    if relaxed.success or relaxed.status == SKIPPED:
        status = OPTIMAL
        message = f"exact integer optimum over the search range; relaxation {relaxed.message}"
    else:
        status = RELAXATION_FAILED
        message = (f"exact integer optimum over the search range; the relaxation failed "
                   f"({relaxed.status}): {relaxed.message}")
    forecast = None
    if calibration is not None:
        forecast = forecast_plan(model, hardware, problem, eps, limits, calibration, best,
                                 source=calibration_source)
    return Plan(
        model=model.name, eps=float(eps), best=best, terms=terms, dominant=terms.dominant,
        relaxed=relaxed, gap=float(gap), alternatives=tuple(found[1:]),
        ruled_out=tuple(sorted(ruled_out)),
        solve_times=SolveTimes(exact_s=exact_time, relaxation_s=relaxed.solve_time_s,
                               partition_solves=search.dp_solves),
        status=status, message=message, forecast=forecast,
    )


def _exact(search: _Search, modes, hardware: PlanHardware):
    """The exact search of :func:`plan` over ``modes``: ``(found, ruled_out, floors, pairs)``,
    the four best candidates of distinct (mode, M) pairs, the modes ruled out with the reason,
    the floors of the modes below whose floor eps lies, and the searched grids."""
    eps, limits = search.eps, search.limits
    pairs: list[tuple[str, Grid]] = []
    ruled_out, floors = [], {}
    for mode in modes:
        grids = list(search.grids(mode))
        if not any(np.isfinite(g.seconds).any() for g in grids):
            floor = search.min_floor(mode)
            count = limits.max_micro_batches if mode == "sync" else 1
            largest = f"at the largest batch: B={count}, b={limits.max_micro_batch_size}"
            if eps > floor:  # reachable in principle, but beyond int64 iterations everywhere
                ruled_out.append((mode, (
                    f"eps={eps:.6g} needs more iterations than an int64 holds for every allowed "
                    f"batch (floor {floor:.6g} {largest}); choose a larger eps"
                )))
                continue
            floors[mode] = floor
            ruled_out.append((mode, (
                f"eps={eps:g} is at or below the floor of {search.bound_name(mode)} for every "
                f"allowed batch (smallest floor {floor:.6g}, {largest})"
            )))
            continue
        pairs += [(mode, g) for g in grids]
    found: list[Candidate] = []
    produced, pruned = set(), set()
    for mode, grid in sorted(pairs, key=lambda p: (float(np.min(p[1].seconds)), p[0],
                                                   p[1].stages)):
        threshold = found[3].seconds if len(found) >= 4 else np.inf
        if float(np.min(grid.seconds)) >= threshold:
            pruned.add(mode)
            continue
        cand = search.best_for(mode, grid, threshold)
        if cand is not None:
            produced.add(mode)
            found = sorted([*found, cand], key=lambda c: (c.seconds, c.mode, c.stages))[:4]
        elif np.isfinite(threshold):
            pruned.add(mode)  # best_for stops at the threshold: the pair may be feasible
    for mode in sorted({m for m, _ in pairs} - produced - pruned):
        ruled_out.append((mode, _memory_reason(search, mode, pairs, hardware)))
    return found, ruled_out, floors, pairs


def _check_arguments(model, hardware, problem, limits) -> tuple[ProblemParams, PlanLimits]:
    """The problem and limits with defaults filled in; every argument's type checked."""
    problem = ProblemParams() if problem is None else problem
    limits = PlanLimits() if limits is None else limits
    check_type("model", model, Model, "e.g. bounds.load_model(NAME)")
    check_type("hardware", hardware, PlanHardware, "e.g. bounds.PlanHardware(from_preset(NAME))")
    check_type("problem", problem, ProblemParams, "or None for the defaults")
    check_type("limits", limits, PlanLimits, "or None for the defaults")
    return problem, limits


def _memory_reason(search: _Search, mode: str, pairs: list[tuple[str, Grid]],
                   hardware: PlanHardware) -> str:
    """Why no (M, B, b) of ``mode`` is feasible although some reach eps (the memory limit).

    ``B = b = 1`` holds the fewest activations (in-flight counts grow with ``B``), so if no
    partition fits there, none fits anywhere; otherwise the batches that fit are too small to
    reach eps above the floor.
    """
    buffer = f"activation_buffer_bytes={hardware.activation_buffer_bytes:g}"
    for grid_mode, grid in pairs:
        if grid_mode == mode:
            held = tuple(int(x) for x in search.held(mode, grid.stages, [1])[0])
            if search.partition(grid.stages, held, 1) is not None:
                return (f"the batches that fit {buffer} are too small to reach eps="
                        f"{search.eps:g} above the floor of {search.bound_name(mode)}")
    return (f"no partition fits {buffer} even at b=1 ({hardware.bytes_per_activation} bytes per "
            "activation)")


def _terms(search: _Search, cand: Candidate) -> RateTerms:
    """The rate-form terms a/sqrt(K), c/K and floor at the candidate's whole iteration count."""
    grid = {"b": cand.micro_batch_size, "M": cand.stages}
    if cand.mode == "sync":
        grid["B"] = cand.micro_batches
    r = evaluate_complexity(cand.bound, search.eps, **search.values, **grid)
    k = float(cand.iterations)
    return RateTerms(a_over_sqrt_k=float(r.rate_a) / math.sqrt(k), c_over_k=float(r.rate_c) / k,
                     floor=float(r.floor))


def _relaxed(model: Model, hardware: PlanHardware, problem: ProblemParams, eps: float,
             limits: PlanLimits, search: _Search, ruled_out: list, relax: bool) -> Relaxed:
    if not relax:
        return Relaxed.empty(SKIPPED, "skipped (relax=False)", value=math.nan)
    excluded = {m for m, _ in ruled_out}
    modes = tuple(m for m in limits.modes if m not in excluded)
    return solve_relaxation(model, hardware, problem, eps, limits, modes,
                            stage_range=search.stage_range)


def time_grid(
    model: Model,
    hardware: PlanHardware,
    problem: ProblemParams | None = None,
    eps: float = 1.0,
    limits: PlanLimits | None = None,
    mode: str = "sync",
) -> dict[tuple[int, int], Candidate | None]:
    """The best choice for every feasible ``(M, B)`` of one mode (``B = 1`` only for async).

    The same exact search as :func:`plan`, restricted to one ``(M, B)`` at a time: each value is
    the fastest candidate over ``b`` and the partitions (``None`` where nothing is feasible). Used
    by the ``plan`` figure.
    """
    problem, limits = _check_arguments(model, hardware, problem, limits)
    eps = check_range("eps", eps, 0, low_open=True)
    if mode not in PLAN_MODES:
        raise ParameterError(f"mode={mode!r} is unknown; valid: {', '.join(PLAN_MODES)}")
    search = _Search(model, hardware, problem, eps, limits)
    out = {}
    for grid in search.grids(mode):
        for i, count in enumerate(grid.counts):
            row = slice(i, i + 1)
            one = Grid(stages=grid.stages, counts=grid.counts[row], iterations=grid.iterations[row],
                       seconds=grid.seconds[row], exact=grid.exact[row])
            out[int(grid.stages), int(count)] = search.best_for(mode, one, np.inf)
    return out


# ------------------------------------------------------------------------------------------------
# the calibrated forecast (issue 14): the same search, iterations from the calibration


class _ForecastSearch(_Search):
    r"""The exact search with the calibrated iterations to eps.

    Every point runs at the guarantee's best step for ``eps`` (the step of the plan, from
    :func:`theory.complexity.evaluate_guarantee`); its iterations are the calibration's
    :math:`K(\epsilon)` at that step (:func:`theory.calibration.forecast_iterations`), ``inf``
    where the guarantee has no step (``eps`` at or below its floor) or the calibrated floor is
    at or above ``eps``.
    """

    def __init__(self, *args, calibration: Calibration):
        self.calibration = calibration
        super().__init__(*args)

    def _step(self, mode: str, grid: dict) -> np.ndarray:
        result = self._guarantee(mode, grid)
        return np.where(result.status == REACHABLE, np.asarray(result.step, dtype=float), np.nan)

    def forecast(self, mode: str, grid: dict):
        """``(step, iterations, low, high)`` on a broadcast grid (``inf`` where unreachable)."""
        lr = self._step(mode, grid)
        with np.errstate(invalid="ignore"):
            k, low, high = forecast_iterations(
                self.calibration, mode, self.eps, lr=np.where(np.isfinite(lr), lr, 1.0),
                M=grid["M"], B=grid.get("B", 1), b=grid["b"])
        bad = ~np.isfinite(lr)
        return lr, *(np.where(bad, np.inf, x) for x in (k, low, high))

    def _iterations(self, mode: str, grid: dict) -> np.ndarray:
        return self.forecast(mode, grid)[1]


def _top_four(search: _Search, pairs: list[tuple[str, Grid]]) -> list[Candidate]:
    """The best candidate of each of the four fastest (mode, M) pairs (branch and bound)."""
    found: list[Candidate] = []
    for mode, grid in sorted(pairs, key=lambda p: (float(np.min(p[1].seconds)), p[0],
                                                   p[1].stages)):
        threshold = found[3].seconds if len(found) >= 4 else np.inf
        if float(np.min(grid.seconds)) >= threshold:
            continue
        cand = search.best_for(mode, grid, threshold)
        if cand is not None:
            found = sorted([*found, cand], key=lambda c: (c.seconds, c.mode, c.stages))[:4]
    return found


def _row(search: _ForecastSearch, cand: Candidate) -> ForecastRow:
    """Both times of one candidate (its partition's cycle time)."""
    grid = {"b": cand.micro_batch_size, "M": cand.stages}
    if cand.mode == "sync":
        grid["B"] = cand.micro_batches
    calibrated = cand.mode in search.calibration.fits
    if calibrated:
        lr, k, low, high = (float(np.asarray(x).ravel()[0])
                            for x in search.forecast(cand.mode, grid))
    else:  # the guarantee's choice in a mode the calibration has no fit for
        lr = float(np.asarray(search._step(cand.mode, grid)).ravel()[0])
        k = low = high = math.nan
    guaranteed = search._guarantee(cand.mode, grid, "raise")
    k_proved = int(guaranteed.iterations_int)

    def seconds(iterations: float) -> float:
        if not math.isfinite(iterations):
            return iterations
        return float(cycles_after(cand.mode, iterations, cand.stages, cand.micro_batches)
                     ) * cand.cycle_time_s

    r = evaluate_complexity(str(guaranteed.algorithm), search.eps, **search.values, **grid)
    proved = RateTerms(a_over_sqrt_k=float(r.rate_a) / math.sqrt(k_proved),
                       c_over_k=float(r.rate_c) / k_proved, floor=float(r.floor))
    terms = {}
    if calibrated:
        terms = {name: float(np.asarray(v).ravel()[0]) for name, v in model_terms(
            cand.mode, search.calibration.fit(cand.mode).values, k, lr=lr, M=cand.stages,
            B=cand.micro_batches, b=cand.micro_batch_size, start=search.calibration.start).items()}
        if cand.mode != "async":
            terms.pop("staleness")
    return ForecastRow(
        mode=cand.mode, stages=cand.stages, micro_batches=cand.micro_batches,
        micro_batch_size=cand.micro_batch_size, lr=lr, cycle_time_s=cand.cycle_time_s,
        guaranteed_iterations=k_proved, guaranteed_seconds=seconds(k_proved),
        predicted_iterations=k, predicted_seconds=seconds(k), predicted_low_s=seconds(low),
        predicted_high_s=seconds(high), guaranteed_dominant=proved.dominant,
        predicted_terms=terms,
    )


def _forecast_choices(search, limits, calibration, source, eps, what: str) -> list:
    """The four best forecast choices over the calibrated modes of ``limits`` (best first);
    a one-line :class:`~theory.errors.ParameterError` when no mode is calibrated or no choice
    reaches ``eps`` in the calibration's ``what``."""
    modes = [m for m in limits.modes if m in CALIBRATED_MODES and m in calibration.fits]
    if not modes:
        raise ParameterError(
            f"calibration={source!r} fits {', '.join(calibration.fits)}; the plan searches "
            f"{', '.join(limits.modes)}: no mode in common"
        )
    pairs = [(mode, g) for mode in modes for g in search.grids(mode)
             if np.isfinite(g.seconds).any()]
    found = _top_four(search, pairs)
    if not found:
        raise ParameterError(
            f"eps={eps:g}: no choice reaches eps in the calibration's {what}; choose a larger eps")
    return found


def forecast_plan(model: Model, hardware: PlanHardware, problem: ProblemParams, eps: float,
                  limits: PlanLimits, calibration: Calibration, guaranteed: Candidate, *,
                  source: str = "given") -> PlanForecast:
    """The plan of fewest predicted seconds under ``calibration``, beside the guarantee's.

    The same exact search as :func:`plan` (partition DPs, memory, branch and bound) with the
    iterations of :class:`_ForecastSearch`; ``guaranteed`` is the guarantee's own choice
    (:attr:`Plan.best`), reported with its forecast.

    Raises
    ------
    ParameterError
        No mode of ``limits`` is calibrated, or no choice has a forecast that reaches ``eps``, or
        the calibration is of another algorithm than analog SGD (:func:`plan_tiki_taka` plans
        with a Tiki-Taka one).
    """
    if not isinstance(calibration, Calibration):
        raise ParameterError(f"calibration={calibration!r} is not a theory.calibration."
                             "Calibration; read one with theory.calibration.read_calibration")
    check_algorithm(calibration, "analog", source)
    search = _ForecastSearch(model, hardware, problem, eps, limits, calibration=calibration)
    found = _forecast_choices(search, limits, calibration, source, eps, "forecast (its floor is "
                              "at or above eps wherever the guarantee gives a step)")
    matches = calibration.matches(search.values)
    warning = None
    if not matches:
        mine = " ".join(f"{k}={search.values[k]:.4g}" for k in ("L", "Delta", "sigma2", "q_min",
                                                                "q_max", "G_inf"))
        theirs = " ".join(f"{k}={calibration.problem.get(k, float('nan')):.4g}"
                          for k in ("L", "Delta", "sigma2", "q_min", "q_max", "G_inf"))
        warning = (f"the plan's problem constants ({mine}) are not the calibration's ({theirs}, "
                   f"fingerprint {calibration.fingerprint}): its forecast describes another "
                   "problem")
    rows = [_row(search, cand) for cand in found]
    own = next((r for r in rows if r.key == (guaranteed.mode, guaranteed.stages,
                                              guaranteed.micro_batches,
                                              guaranteed.micro_batch_size)), None)
    if own is None:
        own = _row(search, guaranteed)
    return PlanForecast(source=source, fingerprint=calibration.fingerprint, matches=matches,
                        chosen=rows[0], alternatives=tuple(rows[1:]), guaranteed_choice=own,
                        eps=float(eps), warning=warning)


# ------------------------------------------------------------------------------------------------
# Tiki-Taka (issue 16): proved rows only in the guarantee, calibrated rows in the forecast


class _Transfers:
    r"""What a Tiki-Taka search adds to :class:`_Search`: the transfers' cycles and its guarantee.

    **Cycles.** After ``K`` updates a Tiki-Taka plan spends the schedule's cycles plus
    :math:`\lfloor K/T \rfloor c_T` (:func:`theory.schedules.transfer_cycles`), with
    :math:`c_T = 2\max_m \sum_{\ell \in m} s_\ell` for the candidate's partition
    (:func:`theory.schedules.transfer_event_cycles`): each layer is one tile of ``rows``
    columns (a column is the weights one input line feeds, as in :mod:`simulate.device.tiki_taka`),
    :math:`s_\ell = 1` for ``transfer_slice="column"`` and ``rows`` for ``"all"``. Transfer
    cycles are pipeline clock cycles like the schedule's (:mod:`bounds.timing`), so the seconds
    are ``cycles x cycle time``. The partition is the bottleneck DP's, as for analog SGD; where
    it does not fit the memory the grid uses the smallest :math:`c_T` of any contiguous
    partition into ``M`` stages, :math:`2\lceil\max(\max_\ell s_\ell, \sum_\ell s_\ell/M)
    \rceil`, so the grid stays a lower bound and the branch and bound exact.

    **Guarantee.** Only the ``derived`` Tiki-Taka entries whose ``setting`` conditions the
    plan's :class:`~bounds.params.TransferSettings` meet
    (:func:`theory.complexity.guarantee_entries`), per mode.
    """

    def __init__(self, *args, transfer: TransferSettings, **kwargs):
        self.transfer = transfer
        self.settings = transfer.settings()
        super().__init__(*args, **kwargs)
        # Corollary TT0's T and rho are the plan's transfer settings, not bounds.evaluate's 1, 1
        self.values = {**self.values, "T": transfer.every, "rho": float(transfer.lr)}
        self.columns = [int(layer.rows) for layer in self.model.layers]
        self.moved = np.array([columns_moved(c, transfer.slice) for c in self.columns])
        self.entries = {mode: guarantee_entries(mode, "tiki-taka", self.settings)
                        for mode in PLAN_MODES}
        self.unusable: dict[str, str] = {}
        for mode, entries in self.entries.items():
            for entry in entries:  # an entry needing constants the plan does not have: none used
                try:
                    evaluate_complexity(entry.name, self.eps, on_unreachable="status",
                                        **self.values, M=1, B=1, b=1)
                except ParameterError as error:
                    self.unusable[mode] = f"{entry.name} cannot be evaluated here: {error}"
                    self.entries[mode] = ()
                    break

    def event_cycles(self, partition: Partition) -> int:
        """:math:`c_T` of ``partition`` (stage ``j`` holds layers ``starts[j]`` onwards)."""
        ends = (*partition.starts[1:], len(self.columns))
        stage_tiles = [self.columns[a:e] for a, e in zip(partition.starts, ends, strict=True)]
        return transfer_event_cycles(stage_tiles, self.transfer.slice)

    def least_event_cycles(self, stages: int) -> int:
        """The smallest :math:`c_T` of any contiguous partition into ``stages`` stages (a lower
        bound: the slowest stage moves at least the largest layer's and the mean share)."""
        share = max(int(self.moved.max()), math.ceil(int(self.moved.sum()) / stages))
        return CYCLES_PER_COLUMN * share

    def cycles(self, mode, iterations, stages, count, partition) -> np.ndarray:
        base = cycles_after(mode, iterations, stages, count)
        return base + transfer_cycles(np.asarray(iterations, dtype=float), self.transfer.every,
                                      self.event_cycles(partition))

    def lower_seconds(self, mode, iterations, stages, count, cycle_time, seconds, exact):
        low = cycles_after(mode, iterations, stages, count) + transfer_cycles(
            np.asarray(iterations, dtype=float), self.transfer.every,
            self.least_event_cycles(stages))
        return np.where(exact, seconds, np.asarray(low * cycle_time, dtype=float))

    def bound_name(self, mode: str) -> str:
        entries = self.entries[mode]
        return entries[0].name if entries else "the calibrated forecast"

    def _guarantee(self, mode: str, grid: dict, on_unreachable: str = "status"):
        """The proved Tiki-Taka complexity (schedule cycles; the planner adds the transfers of
        each partition itself, :meth:`cycles`)."""
        return evaluate_guarantee(mode, self.eps, algorithm="tiki-taka", settings=self.settings,
                                  transfer=(self.transfer.every, 0),
                                  on_unreachable=on_unreachable, **self.values, **grid)

    def candidate(self, mode, stages, count, b, iterations, partition) -> TransferCandidate:
        cycles = int(self.cycles(mode, iterations, stages, count, partition))
        event = self.event_cycles(partition)
        cycle_time = float(self.hw.timing.stage_time_s(b * partition.bottleneck))
        held = self.held(mode, stages, [count])[0]
        point = {"b": int(b), "M": int(stages)} | ({"B": int(count)} if mode == "sync" else {})
        bound = "none"
        if self.entries[mode]:
            result = self._guarantee(mode, point)
            if result.status == REACHABLE:
                bound = str(result.algorithm)
        return TransferCandidate(
            mode=mode, stages=int(stages), micro_batches=int(count), micro_batch_size=int(b),
            iterations=int(iterations), cycles=cycles, cycle_time_s=cycle_time,
            seconds=cycles * cycle_time, partition=partition,
            memory_bytes=self.memory(partition, held, b), bound=bound,
            transfer_cycles=int(transfer_cycles(int(iterations), self.transfer.every, event)),
            event_cycles=event,
        )


class _TransferSearch(_Transfers, _Search):
    """The exact search of a Tiki-Taka plan on the proved Tiki-Taka entries."""


class _TransferForecastSearch(_Transfers, _ForecastSearch):
    r"""The exact search of a Tiki-Taka plan with the calibrated iterations.

    **The step** a point runs at: the proved Tiki-Taka entry's best step for ``eps`` where the
    mode has one; otherwise analog SGD's (A takes analog SGD's update, and a Tiki-Taka
    calibration's design steps are fractions of the analog step cap): the analog guarantee's
    best step for ``eps`` (:func:`theory.complexity.evaluate_guarantee`), and where ``eps`` is at
    or below the analog floor (which Tiki-Taka need not have) the analog step cap
    (:func:`theory.admissible.step_cap` of the mode's analog entry).
    """

    def _step(self, mode: str, grid: dict) -> np.ndarray:
        if self.entries[mode]:
            result = self._guarantee(mode, grid)
            return np.where(result.status == REACHABLE, np.asarray(result.step, dtype=float),
                            np.nan)
        analog = _Search._guarantee(self, mode, grid)
        step = np.asarray(analog.step, dtype=float)
        if np.all(analog.status == REACHABLE):
            return step
        cap = self._analog_cap(mode, grid)
        return np.where(analog.status == REACHABLE, step, cap)

    def _analog_cap(self, mode: str, grid: dict) -> np.ndarray:
        name = bound_for(mode).name
        stages = np.asarray(grid["M"])
        shape = np.broadcast_shapes(*(np.shape(v) for v in grid.values()))
        caps = {int(m): step_cap(name, {**self.values, "M": int(m), "D": int(m) - 1})
                for m in np.unique(stages)}
        return np.broadcast_to(np.vectorize(lambda m: caps[int(m)], otypes=[float])(stages),
                               shape)


def _tt_guarantees(search: _Transfers, modes) -> tuple[ModeGuarantee, ...]:
    """Per mode, which proved Tiki-Taka entries apply and, if none, why."""
    out = []
    for mode in modes:
        used = search.entries[mode]
        if used:
            names = ", ".join(b.name for b in used)
            out.append(ModeGuarantee(mode=mode, status=GUARANTEED, entries=tuple(
                b.name for b in used), message=f"proved by {names}"))
            continue
        derived = guarantee_entries(mode, "tiki-taka")
        others = [b.name for b in REGISTRY.values()
                  if b.algorithm == "tiki-taka" and b.mode == mode and b.provenance != "derived"]
        if mode in search.unusable:
            why = search.unusable[mode]
        elif derived:
            unmet = "; ".join(
                f"{b.name} needs " + (", ".join(f"{k}={v}" for k, v in
                                                setting_conditions(b).items())
                                      or "settings it does not state") for b in derived)
            why = f"no derived tiki-taka bound meets the settings ({unmet})"
        else:
            why = f"no derived (proved) tiki-taka bound for mode {mode}"
        if others:
            why += f"; {', '.join(others)} is not proved here (not a guarantee)"
        out.append(ModeGuarantee(mode=mode, status=NO_GUARANTEE, entries=(), message=why))
    return tuple(out)


def plan_tiki_taka(
    model: Model,
    hardware: PlanHardware,
    problem: ProblemParams | None = None,
    eps: float = 1.0,
    limits: PlanLimits | None = None,
    *,
    transfer: TransferSettings | None = None,
    calibration: Calibration | None = None,
    calibration_source: str = "given",
) -> TikiTakaPlan:
    r"""The plan of a Tiki-Taka run: mode, stages, partition, micro-batches, transfers counted.

    The same exact search as :func:`plan` (partition DPs, memory, branch and bound) with the
    cycles of :class:`_Transfers` (schedule plus :math:`\lfloor K/T\rfloor c_T`).

    - **Guarantee**: per mode only the proved (``derived``) Tiki-Taka entries whose ``setting``
      conditions the plan's ``transfer`` settings meet; a mode without one has no guarantee
      (:attr:`TikiTakaPlan.guarantees` says why; nothing is invented: the ``companion`` entries
      are not proved here).
    - **Forecast** (``calibration``, which must be of Tiki-Taka runs): the calibrated
      :math:`K(\epsilon)` at the step of :class:`_TransferForecastSearch`, the choice of fewest
      predicted seconds (:attr:`TikiTakaPlan.forecast`).

    No geometric-programming relaxation (the GP is that of the analog bounds).

    Raises
    ------
    ParameterError
        No mode has a guarantee and no calibration is given (the message says to pass one made
        by ``aimc-pipeline calibrate --algorithm tiki-taka``); a calibration of another algorithm;
        no choice reaches eps; the model does not fit.
    """
    problem, limits = _check_arguments(model, hardware, problem, limits)
    eps = check_range("eps", eps, 0, low_open=True)
    transfer = TransferSettings() if transfer is None else transfer
    check_type("transfer", transfer, TransferSettings, "e.g. bounds.TransferSettings(every=4)")
    if calibration is not None:
        if not isinstance(calibration, Calibration):
            raise ParameterError(f"calibration={calibration!r} is not a theory.calibration."
                                 "Calibration; read one with theory.calibration.read_calibration")
        check_algorithm(calibration, "tiki-taka", calibration_source)
    search = _TransferSearch(model, hardware, problem, eps, limits, transfer=transfer)
    guarantees = _tt_guarantees(search, limits.modes)
    proved = [g.mode for g in guarantees if g.status == GUARANTEED]
    if not proved and calibration is None:
        raise ParameterError(
            "algorithm=tiki-taka has no proved (derived) guarantee for mode(s) "
            f"{', '.join(limits.modes)} with transfer_every={transfer.every}, transfer_slice="
            f"{transfer.slice}; pass --calibration FILE made by aimc-pipeline calibrate "
            "--algorithm tiki-taka"
        )
    found, ruled_out = [], []
    if proved:
        found, ruled_out, floors, _ = _exact(search, proved, hardware)
        if not found and calibration is None:
            if floors and len(floors) == len(proved):
                mode = min(floors, key=floors.get)
                raise UnreachableTargetError(search.bound_name(mode), eps, floors[mode])
            raise ParameterError("; ".join(f"{m}: {r}" for m, r in ruled_out)
                                 or "no feasible plan")
    rows, info = (), None
    if calibration is not None:
        rows, info = _tt_forecast(model, hardware, problem, eps, limits, transfer, calibration,
                                  calibration_source)
    best = found[0] if found else None
    if best is not None:
        status = OPTIMAL
        message = ("exact integer optimum of the guaranteed time over the guaranteed modes"
                   + ("; the forecast's choice is the plan to run" if rows else ""))
    else:
        status = FORECAST_ONLY
        why = ("no mode has a proved tiki-taka guarantee" if not proved else
               "the proved modes give no feasible plan (see ruled out)")
        message = (f"{why}: the plan is the calibrated forecast's choice alone (a prediction, "
                   "not a guarantee)")
    return TikiTakaPlan(
        model=model.name, eps=float(eps), transfer=transfer.settings(), guarantees=guarantees,
        best=best, alternatives=tuple(found[1:]), forecast=rows, calibration=info,
        ruled_out=tuple(sorted(ruled_out)), status=status, message=message,
    )


def _tt_forecast(model, hardware, problem, eps, limits, transfer, calibration, source):
    """The calibrated rows of a Tiki-Taka plan and the calibration's summary."""
    search = _TransferForecastSearch(model, hardware, problem, eps, limits, transfer=transfer,
                                     calibration=calibration)
    found = _forecast_choices(search, limits, calibration, source, eps, "tiki-taka forecast "
                              "(its floor is at or above eps at the plan's steps)")
    rows = []
    for cand in found:
        grid = {"b": cand.micro_batch_size, "M": cand.stages}
        if cand.mode == "sync":
            grid["B"] = cand.micro_batches
        lr, _, low, high = (float(np.asarray(x).ravel()[0])
                            for x in search.forecast(cand.mode, grid))

        def seconds(k: float, c=cand) -> float:
            if not math.isfinite(k):
                return k
            return float(search.cycles(c.mode, k, c.stages, c.micro_batches, c.partition)
                         ) * c.cycle_time_s

        guaranteed = None
        if cand.bound != "none":
            proved = search._guarantee(cand.mode, grid)
            guaranteed = seconds(float(proved.iterations_int))
        rows.append(TikiTakaRow(candidate=cand, lr=lr, predicted_low_s=seconds(low),
                                predicted_high_s=seconds(high), guaranteed_seconds=guaranteed))
    warning = None
    if not calibration.matches(search.values):
        warning = (f"the plan's problem constants are not the calibration's (fingerprint "
                   f"{calibration.fingerprint}): its forecast describes another problem")
    trained = calibration.transfer
    if trained and (int(trained["transfer_every"]), str(trained["transfer_slice"])) != (
            transfer.every, transfer.slice):
        warning = ((warning + "; ") if warning else "") + (
            f"the calibration's runs transferred every {trained['transfer_every']} updates, "
            f"slice {trained['transfer_slice']}; the plan's are {transfer.every}, "
            f"{transfer.slice}")
    info = {"source": source, "fingerprint": calibration.fingerprint,
            "matches": calibration.matches(search.values), "transfer": dict(trained),
            "warning": warning}
    return tuple(rows), info
