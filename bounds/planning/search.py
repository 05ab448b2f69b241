r"""The planner's exact search over (mode, M, B, b, partition): lower-bound grids and lazy DPs.

For each mode and :math:`M`, the bottleneck partition without the memory constraint comes from the
dynamic program of :func:`bounds.best_partition`; it gives a lower bound of the
time on the whole :math:`(B, b)` grid (vectorised), exact wherever that partition also fits the
memory. Elsewhere the memory-constrained DP is solved lazily in increasing order of the lower
bound (branch and bound), so the result is the exact integer optimum over the grid.

:class:`GridSearch` is that search, once. What it counts as iterations and as cycles are the two
strategy objects it is given (:mod:`bounds.planning.strategies`): an objective (the guarantee or a
calibrated forecast) and a cost (the schedule's cycles, or those plus Tiki-Taka's transfers).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

from theory.compiled import compile_expr
from theory.complexity import evaluate_complexity
from theory.errors import ParameterError
from theory.limits import MAX_GRID_POINTS, check_size
from theory.schedules import in_flight_expr

from ..params import PlanHardware, PlanLimits
from .models import Model
from .partition import Partition, best_partition
from .results import Candidate
from .strategies import Cost, Objective

__all__ = ["Grid", "GridSearch", "SearchResult"]

#: how many (mode, M) pairs a plan reports: the best and three alternatives
_KEPT = 4


class Grid(NamedTuple):
    """The lower-bound grid of one (mode, M) over ``(B, b)``, shape ``(len(counts), b_max)``.

    Attributes
    ----------
    stages : int
        ``M``.
    counts : ndarray of int
        The micro-batch counts ``B`` of the rows (``[1]`` for async).
    iterations : ndarray of float
        Iterations to eps (``inf`` where unreachable).
    seconds : ndarray of float
        Seconds with the memory-free partition (a lower bound; ``inf`` where unreachable).
    exact : ndarray of bool
        Where that partition also fits the activation memory (``seconds`` is exact there).
    """

    stages: int
    counts: np.ndarray
    iterations: np.ndarray
    seconds: np.ndarray
    exact: np.ndarray


class SearchResult(NamedTuple):
    """What :meth:`GridSearch.search` found over some modes.

    Attributes
    ----------
    found : list of Candidate
        The best candidates of up to four distinct (mode, M) pairs, fastest first.
    ruled_out : list of (str, str)
        Modes without a candidate, with the reason.
    floors : dict
        Mode -> its smallest floor, for the modes whose floor ``eps`` is at or below everywhere.
    pairs : list of (str, Grid)
        The grids searched.
    """

    found: list
    ruled_out: list
    floors: dict
    pairs: list


class GridSearch:
    """The exact search of one plan.

    Parameters
    ----------
    model : Model
        The network.
    hardware : PlanHardware
        Accelerators, tiles, buffers, device and timing.
    limits : PlanLimits
        The range of ``B`` and ``b``.
    objective : Objective
        The iterations to eps (:class:`~bounds.planning.strategies.GuaranteeObjective` or
        :class:`~bounds.planning.strategies.ForecastObjective`); its ``bounds`` give ``eps``,
        the constants and the names of the entries.
    cost : Cost
        The cycles of those iterations (:class:`~bounds.planning.strategies.PlainCost` or
        :class:`~bounds.planning.strategies.TransferCost`).

    Attributes
    ----------
    stage_range : range
        The stage counts ``M`` searched.
    free : dict
        ``M`` -> the bottleneck partition without the memory limit (the ``M`` that have one).
    dp_solves : int
        Partition DPs solved so far.

    Raises
    ------
    ParameterError
        The model does not fit the tiles (a layer larger than an accelerator, more tiles than
        all accelerators together, or no contiguous split into at most ``accelerators`` stages).
    """

    def __init__(self, model: Model, hardware: PlanHardware, limits: PlanLimits,
                 objective: Objective, cost: Cost):
        self.model, self.hw, self.limits = model, hardware, limits
        self.objective, self.cost, self.bounds = objective, cost, objective.bounds
        self.eps, self.values = self.bounds.eps, self.bounds.values
        h = hardware.hardware
        self.work = model.work
        self.tiles = model.tiles(h.tile_rows, h.tile_cols)
        self.act = model.activations
        self.bytes = hardware.bytes_per_activation
        self.buffer = hardware.activation_buffer_bytes
        self.dp_solves = 0
        self._dp_cache: dict = {}
        self._check_capacity()
        low = max(1, math.ceil(int(self.tiles.sum()) / hardware.tiles_per_accelerator))
        self.stage_range = range(low, min(hardware.accelerators, len(self.work)) + 1)
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
                f"accelerators={hardware.accelerators} stages fits tiles_per_accelerator="
                f"{hardware.tiles_per_accelerator} (layers are not split across accelerators)"
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

    def partition(self, stages: int, held, b: int = 1) -> Partition | None:
        """The DP partition for ``held`` micro-batches per stage (``None``: no memory limit)."""
        key = (stages, held, b)
        if key not in self._dp_cache:
            caps = None if held is None else self.buffer / (self.bytes * b * np.asarray(held))
            self.dp_solves += 1
            self._dp_cache[key] = best_partition(
                self.work, self.tiles, self.act, stages, self.hw.tiles_per_accelerator, caps
            )
        return self._dp_cache[key]

    def held(self, mode: str, stages: int, micro_batches) -> np.ndarray:
        """Micro-batches held per stage, shape (len(micro_batches), stages)."""
        stage = np.arange(1, stages + 1)[None, :]
        count = np.asarray(micro_batches)[:, None]
        held = compile_expr(in_flight_expr(mode))({"M": stages, "B": count, "m": stage})
        return np.broadcast_to(held, (count.size, stages))

    def memory(self, partition: Partition, held, b: int) -> tuple[int, ...]:
        """Peak activation bytes of each stage."""
        return tuple(
            int(b * h * a * self.bytes) for h, a in zip(held, partition.activations, strict=True)
        )

    # -- per-mode grids ---------------------------------------------------------------------
    def grids(self, mode: str) -> Iterator[Grid]:
        """Yield the :class:`Grid` of every memory-free feasible ``M`` of ``mode``.

        Grids have shape ``(len(counts), b_max)``; unreachable points are ``inf``. Where the
        memory-free partition does not fit (``~exact``) the seconds are those of the cost's
        fewest cycles into ``M`` stages at the memory-free cycle time, a lower bound of every
        partition's (any other partition has a slower bottleneck).
        """
        b = self.b[None, :]
        iterations = self.objective.iterations
        if mode == "sync":
            count = np.arange(1, self.limits.max_micro_batches + 1)[:, None]
            k = iterations(mode, {"B": count, "b": b, "M": 1})
        else:
            count = np.ones((1, 1), dtype=np.int64)
            stages = np.array(list(self.free))[:, None]
            k_all = iterations(mode, {"b": b, "M": stages})
        for i, stages in enumerate(self.free):
            if mode == "async":
                k = k_all[i : i + 1]
            part = self.free[stages]
            cycles = self.cost.cycles(mode, k, stages, count, part)
            cycle_time = self.hw.timing.stage_time_s(b * part.bottleneck)
            seconds = np.asarray(cycles * cycle_time, dtype=float)
            held = self.held(mode, stages, count.ravel())
            need = (held * np.asarray(part.activations)[None, :]).max(axis=1)[:, None]
            exact = b * need * self.bytes <= self.buffer
            low = self.cost.least_cycles(mode, k, stages, count)
            seconds = np.where(exact, seconds, np.asarray(low * cycle_time, dtype=float))
            yield Grid(stages=stages, counts=count.ravel(), iterations=k, seconds=seconds,
                       exact=exact)

    def min_floor(self, mode: str) -> float:
        """The smallest floor of ``mode`` over the stages, at the largest batch."""
        n_max = {"B": self.limits.max_micro_batches, "b": self.limits.max_micro_batch_size}
        stages = np.array(list(self.free))
        result = evaluate_complexity(self.bounds.bound_name(mode), self.eps,
                                     on_unreachable="status", **self.values, **n_max, M=stages)
        return float(np.min(result.floor))

    def candidate(self, mode: str, stages: int, count: int, b: int, iterations,
                  partition: Partition) -> Candidate:
        """The fully evaluated choice (its type is the cost's)."""
        cycles = int(self.cost.cycles(mode, iterations, stages, count, partition))
        cycle_time = float(self.hw.timing.stage_time_s(b * partition.bottleneck))
        held = self.held(mode, stages, [count])[0]
        point = {"b": int(b), "M": int(stages)} | ({"B": int(count)} if mode == "sync" else {})
        return self.cost.candidate({
            "mode": mode, "stages": int(stages), "micro_batches": int(count),
            "micro_batch_size": int(b), "iterations": int(iterations), "cycles": cycles,
            "cycle_time_s": cycle_time, "seconds": cycles * cycle_time, "partition": partition,
            "memory_bytes": self.memory(partition, held, b),
            "bound": self.bounds.label(mode, point),
        })

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
            cycles = self.cost.cycles(mode, iterations[i, j], stages, count, part)
            value = float(cycles * self.hw.timing.stage_time_s(b * part.bottleneck))
            if value < best_val or (value == best_val and best is not None
                                    and (count, b) < (best[1], best[2])):
                best_val, best = value, (value, count, b, part)
        if best is None:
            return None
        _, count, b, part = best
        i = int(np.flatnonzero(counts == count)[0])
        return self.candidate(mode, stages, count, b, iterations[i, b - 1], part)

    # -- over modes -------------------------------------------------------------------------
    def search(self, modes) -> SearchResult:
        """The exact search over ``modes``.

        Parameters
        ----------
        modes : sequence of str
            The modes searched (of :data:`bounds.params.PLAN_MODES`).

        Returns
        -------
        SearchResult
            The four best candidates of distinct (mode, M) pairs, the modes ruled out with the
            reason, the floors of the modes whose floor ``eps`` is at or below, and the searched
            grids.
        """
        eps, limits = self.eps, self.limits
        pairs: list[tuple[str, Grid]] = []
        ruled_out, floors = [], {}
        for mode in modes:
            grids = list(self.grids(mode))
            if not any(np.isfinite(g.seconds).any() for g in grids):
                floor = self.min_floor(mode)
                count = limits.max_micro_batches if mode == "sync" else 1
                largest = f"at the largest batch: B={count}, b={limits.max_micro_batch_size}"
                if eps > floor:  # reachable in principle, but beyond int64 iterations everywhere
                    ruled_out.append((mode, (
                        f"eps={eps:.6g} needs more iterations than an int64 holds for every "
                        f"allowed batch (floor {floor:.6g} {largest}); choose a larger eps"
                    )))
                    continue
                floors[mode] = floor
                ruled_out.append((mode, (
                    f"eps={eps:g} is at or below the floor of {self.bounds.bound_name(mode)} for "
                    f"every allowed batch (smallest floor {floor:.6g}, {largest})"
                )))
                continue
            pairs += [(mode, g) for g in grids]
        found, produced, pruned = self._best_of_pairs(pairs)
        for mode in sorted({m for m, _ in pairs} - produced - pruned):
            ruled_out.append((mode, self.memory_reason(mode, pairs)))
        return SearchResult(found=found, ruled_out=ruled_out, floors=floors, pairs=pairs)

    def top_candidates(self, pairs: list[tuple[str, Grid]]) -> list[Candidate]:
        """The best candidate of each of the four fastest (mode, M) pairs (branch and bound)."""
        return self._best_of_pairs(pairs)[0]

    def _best_of_pairs(self, pairs):
        """``(found, produced, pruned)``: the four best candidates of distinct pairs, the modes
        that gave one, and the modes whose pairs the threshold cut (they may be feasible)."""
        found: list[Candidate] = []
        produced, pruned = set(), set()
        for mode, grid in sorted(pairs, key=lambda p: (float(np.min(p[1].seconds)), p[0],
                                                       p[1].stages)):
            threshold = found[_KEPT - 1].seconds if len(found) >= _KEPT else np.inf
            if float(np.min(grid.seconds)) >= threshold:
                pruned.add(mode)
                continue
            cand = self.best_for(mode, grid, threshold)
            if cand is not None:
                produced.add(mode)
                found = sorted([*found, cand], key=lambda c: (c.seconds, c.mode, c.stages))[:_KEPT]
            elif np.isfinite(threshold):
                pruned.add(mode)  # best_for stops at the threshold: the pair may be feasible
        return found, produced, pruned

    def memory_reason(self, mode: str, pairs: list[tuple[str, Grid]]) -> str:
        """Why no (M, B, b) of ``mode`` is feasible although some reach eps (the memory limit).

        ``B = b = 1`` holds the fewest activations (in-flight counts grow with ``B``), so if no
        partition fits there, none fits anywhere; otherwise the batches that fit are too small to
        reach eps above the floor.
        """
        buffer = f"activation_buffer_bytes={self.hw.activation_buffer_bytes:g}"
        for grid_mode, grid in pairs:
            if grid_mode == mode:
                held = tuple(int(x) for x in self.held(mode, grid.stages, [1])[0])
                if self.partition(grid.stages, held, 1) is not None:
                    return (f"the batches that fit {buffer} are too small to reach eps="
                            f"{self.eps:g} above the floor of {self.bounds.bound_name(mode)}")
        return (f"no partition fits {buffer} even at b=1 ({self.hw.bytes_per_activation} bytes "
                "per activation)")
