r"""The planner: pipeline mode, stages, layer partition and micro-batches for a model and hardware.

Given a :class:`~bounds.models.Model`, the hardware (:class:`PlanHardware`: accelerators, tiles,
activation buffers, device and timing), the problem constants and a target ``eps``, :func:`plan`
chooses the mode (``sync`` or ``async``), the number of stages :math:`M`, a contiguous partition of
the layers into :math:`M` stages, the micro-batches per mini-batch :math:`B` (``sync``) and the
samples per micro-batch :math:`b` that minimise the **predicted wall-clock time to eps**

.. math::

    T = C\big(K(\epsilon)\big)\; t_\mathrm{cycle}\big(b\, W_{\max}\big),

where :math:`K(\epsilon)` is the exact iteration count of the registry entry ``analog_sgd_sp``
(``sync``) or ``analog_sgd_ap`` (``async``) from :func:`theory.complexity.evaluate_complexity`
(whole iterations), :math:`C(K)` its clock cycles (``sync`` :math:`2(B+M-1)K`, ``async``
:math:`2(K+M-1)`, from :func:`theory.schedules.cycles_for_iterations`), and
:math:`t_\mathrm{cycle}` the cycle time of the slowest stage (:meth:`bounds.timing.TimingModel.
stage_time_s` of its MVMs per micro-batch, :math:`b` times the stage's MVMs per sample
:math:`W_{\max}`). Nothing here restates a formula of the theory.

Constraints, for every stage :math:`j`:

- **tiles**: the stage's tiles :math:`\le` tiles per accelerator (layers are not split);
- **memory**: :math:`b \cdot h_j \cdot a_j \cdot \mathrm{bytes} \le` activation buffer, with
  :math:`a_j` the activation values the stage stores per sample and :math:`h_j` the micro-batches it
  holds at once (:func:`bounds.partition.in_flight`, derived from the schedules);
- :math:`1 \le M \le \min(P, \ell)`, :math:`1 \le B \le B_{\max}`, :math:`1 \le b \le b_{\max}`
  (:class:`PlanLimits`); a target at or below a mode's floor for every allowed batch rules the mode
  out, with the reason.

**Exact search.** For each mode and :math:`M`, the bottleneck partition without the memory
constraint comes from the dynamic program of :func:`bounds.partition.best_partition`; it gives a
lower bound of :math:`T` on the whole :math:`(B, b)` grid (vectorised), exact wherever that
partition also fits the memory. Elsewhere the memory-constrained DP is solved lazily in increasing
order of the lower bound (branch and bound), so the returned plan is the exact integer optimum
over the grid. **Relaxation.** :mod:`bounds.relaxation` solves the continuous geometric program in
:math:`(M, B, b)`, whose optimum is a lower bound; the plan reports it and the gap.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from functools import cache

import numpy as np
import sympy as sp

from theory.compiled import compile_expr
from theory.complexity import evaluate_complexity
from theory.errors import IterationLimitError, ParameterError, UnreachableTargetError, check_range
from theory.schedules import cycles_for_iterations, in_flight_expr
from theory.symbols import B as B_SYM
from theory.symbols import K as K_SYM
from theory.symbols import M as M_SYM
from theory.theorems import get_bound

from .evaluate import theory_values
from .models import Model
from .params import HardwareParams, ProblemParams
from .partition import Partition, best_partition

__all__ = [
    "ALGORITHMS", "Candidate", "Plan", "PlanHardware", "PlanLimits", "Relaxed", "plan",
    "theory_values", "time_grid",
]

#: the registry entry whose iteration complexity each planner mode uses
ALGORITHMS = {"sync": "analog_sgd_sp", "async": "analog_sgd_ap"}
#: names of the three terms of the rate form a/sqrt(K) + c/K + floor
TERMS = ("a/sqrt(K)", "c/K", "floor")


@dataclass(frozen=True)
class PlanHardware:
    r"""The accelerators available to the planner.

    Parameters
    ----------
    hardware : HardwareParams
        Device, visited weight region, timing (MVM read time, pulse width, bit length, clock) and
        tile size (``tile_rows x tile_cols``). Its ``layers`` field is not used: the model gives the
        layers.
    accelerators : int
        :math:`P`, accelerators available (>= 1); a pipeline of :math:`M \le P` stages uses
        :math:`M` of them. Default 8.
    tiles_per_accelerator : int
        Crossbar tiles of one accelerator (>= 1). Default 1024 (16.8 M weights of 128 x 128 tiles).
    activation_buffer_bytes : float
        Bytes of activation memory per accelerator (> 0). Default 2**30 (1 GiB).
    bytes_per_activation : int
        Bytes per stored activation value (>= 1). Default 2 (16-bit).
    """

    hardware: HardwareParams
    accelerators: int = 8
    tiles_per_accelerator: int = 1024
    activation_buffer_bytes: float = float(2**30)
    bytes_per_activation: int = 2

    def __post_init__(self):
        if not isinstance(self.hardware, HardwareParams):
            raise ParameterError(f"hardware={self.hardware!r} is not a bounds.HardwareParams")
        for key in ("accelerators", "tiles_per_accelerator", "bytes_per_activation"):
            object.__setattr__(self, key, check_range(key, getattr(self, key), 1, integer=True))
        check_range("activation_buffer_bytes", self.activation_buffer_bytes, 0, low_open=True)

    @property
    def timing(self):
        """The :class:`~bounds.timing.TimingModel` of the hardware."""
        return self.hardware.timing


@dataclass(frozen=True)
class PlanLimits:
    """The bounded integer range the planner searches (and relaxes).

    Parameters
    ----------
    max_micro_batches : int
        :math:`B_{\\max}` for ``sync`` (>= 1). Default 512.
    max_micro_batch_size : int
        :math:`b_{\\max}` (>= 1). Default 512.
    modes : tuple of str
        Modes to consider, a non-empty subset of ``("sync", "async")``.
    """

    max_micro_batches: int = 512
    max_micro_batch_size: int = 512
    modes: tuple[str, ...] = ("sync", "async")

    def __post_init__(self):
        for key in ("max_micro_batches", "max_micro_batch_size"):
            object.__setattr__(self, key, check_range(key, getattr(self, key), 1, integer=True))
        modes = tuple(self.modes)
        bad = [mode for mode in modes if mode not in ALGORITHMS]
        if bad or not modes:
            raise ParameterError(f"modes={modes!r} is invalid; valid: a non-empty subset of "
                                 f"{', '.join(ALGORITHMS)}")
        object.__setattr__(self, "modes", tuple(dict.fromkeys(modes)))


@dataclass(frozen=True)
class Candidate:
    """One fully evaluated choice (mode, M, B, b, partition) and its predicted time.

    Attributes
    ----------
    mode : str
    stages : int
        ``M``.
    micro_batches : int
        ``B`` (``sync``); 1 for ``async``, which updates after every micro-batch.
    micro_batch_size : int
        ``b``.
    iterations : int
        Whole iterations (updates) to reach ``eps``, ``ceil(K(eps))``.
    cycles : int
        Pipeline clock cycles of those iterations.
    cycle_time_s : float
        Seconds per clock cycle (slowest stage).
    seconds : float
        Predicted wall-clock time, ``cycles * cycle_time_s``.
    partition : Partition
        The layer partition (stage 1 first).
    memory_bytes : tuple of int
        Peak activation memory of each stage, bytes.
    """

    mode: str
    stages: int
    micro_batches: int
    micro_batch_size: int
    iterations: int
    cycles: int
    cycle_time_s: float
    seconds: float
    partition: Partition
    memory_bytes: tuple[int, ...]

    @property
    def samples(self) -> int:
        """Training samples consumed: ``iterations * B * b`` (sync) or ``iterations * b``."""
        return self.iterations * self.micro_batches * self.micro_batch_size

    def to_dict(self) -> dict:
        """JSON-ready fields (the partition as stage sizes and per-stage loads)."""
        p = self.partition
        return {
            "mode": self.mode, "stages": self.stages, "micro_batches": self.micro_batches,
            "micro_batch_size": self.micro_batch_size, "iterations": self.iterations,
            "samples": self.samples, "cycles": self.cycles, "cycle_time_s": self.cycle_time_s,
            "seconds": self.seconds, "partition": list(p.sizes),
            "stage_mvms_per_sample": list(p.work), "stage_tiles": list(p.tiles),
            "stage_memory_bytes": list(self.memory_bytes),
        }


@dataclass(frozen=True)
class Relaxed:
    """The optimum of the continuous relaxation (a lower bound of the integer optimum).

    Attributes
    ----------
    value : float
        Relaxed optimal time, seconds (``inf`` if every mode was ruled out, ``nan`` if the
        relaxation was not solved).
    mode : str
    stages, micro_batches, micro_batch_size, iterations : float
        The relaxed optimum's ``M``, ``B`` (1 for async), ``b`` and ``K``.
    solve_time_s : float
        Seconds spent solving (all modes).
    """

    value: float
    mode: str
    stages: float
    micro_batches: float
    micro_batch_size: float
    iterations: float
    solve_time_s: float

    def to_dict(self) -> dict:
        """JSON-ready fields; a non-finite number (no relaxation solved) is ``None``."""
        return {key: _finite_or_none(value) for key, value in self.__dict__.items()}


@dataclass(frozen=True)
class Plan:
    """The planner's answer (see :func:`plan`).

    Attributes
    ----------
    model : str
        Model name.
    eps : float
        Target for the average squared gradient norm.
    best : Candidate
        The chosen plan; ``mode``, ``stages``, ``partition``, ``micro_batches``,
        ``micro_batch_size``, ``iterations``, ``cycles`` and ``seconds`` are shortcuts to it.
    terms : dict
        The three terms of the rate form at the plan, ``a/sqrt(K)``, ``c/K``, ``floor``.
    dominant : str
        The largest of :attr:`terms`.
    relaxed : Relaxed
        The continuous relaxation's optimum.
    gap : float
        Relative gap ``seconds / relaxed.value - 1`` (>= 0; ``nan`` without a relaxation).
    alternatives : tuple of Candidate
        The best plans of the three next-best (mode, M) pairs, fastest first.
    ruled_out : tuple of (str, str)
        Modes excluded, with the reason.
    solve_times : dict
        Seconds: ``relaxation``, ``exact`` (grid search and partitions), ``partition_solves``
        (number of DP solves).
    """

    model: str
    eps: float
    best: Candidate
    terms: dict
    dominant: str
    relaxed: Relaxed
    gap: float
    alternatives: tuple[Candidate, ...]
    ruled_out: tuple[tuple[str, str], ...]
    solve_times: dict = field(default_factory=dict)

    mode = property(lambda self: self.best.mode, doc="Pipeline mode of the plan.")
    stages = property(lambda self: self.best.stages, doc="Stages M.")
    partition = property(lambda self: self.best.partition, doc="The layer partition.")
    micro_batches = property(lambda self: self.best.micro_batches, doc="B (1 for async).")
    micro_batch_size = property(lambda self: self.best.micro_batch_size, doc="b.")
    iterations = property(lambda self: self.best.iterations, doc="Whole iterations to eps.")
    cycles = property(lambda self: self.best.cycles, doc="Clock cycles to eps.")
    seconds = property(lambda self: self.best.seconds, doc="Predicted seconds to eps.")

    def to_dict(self) -> dict:
        """JSON-ready fields of the plan, its alternatives and the relaxation.

        Strict JSON: the relaxation's fields and ``gap`` are ``None`` when no relaxation was
        solved (``relax=False``), never NaN.
        """
        return {
            "model": self.model, "eps": self.eps, **self.best.to_dict(),
            "terms": dict(self.terms), "dominant": self.dominant,
            "relaxed": self.relaxed.to_dict(), "gap": _finite_or_none(self.gap),
            "alternatives": [c.to_dict() for c in self.alternatives],
            "ruled_out": [{"mode": m, "reason": r} for m, r in self.ruled_out],
            "solve_times": dict(self.solve_times),
        }


def _finite_or_none(value):
    """``value``, or ``None`` if it is a non-finite float (JSON has no NaN or infinity)."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


@cache
def _cycles_fn(mode: str):
    """Cycles for ``K`` iterations, compiled from :func:`theory.schedules.cycles_for_iterations`."""
    return sp.lambdify((K_SYM, M_SYM, B_SYM), cycles_for_iterations(mode), "numpy")


@cache
def _floor_fn(name: str):
    bound = get_bound(name)
    symbols = tuple(sorted(bound.floor.free_symbols, key=lambda s: s.name))
    return symbols, sp.lambdify(symbols, bound.floor, "numpy")


def _floor(name: str, values: dict) -> np.ndarray:
    """The bound's floor at ``values`` (arrays broadcast); ``D`` from ``M`` if needed."""
    symbols, fn = _floor_fn(name)
    if "D" in [s.name for s in symbols] and "D" not in values:
        values = {**values, "D": np.asarray(values["M"]) - 1}
    return np.asarray(fn(*(values[s.name] for s in symbols)), dtype=float)


class _Search:
    """The exact search over (mode, M, B, b, partition): lower-bound grids and lazy DPs."""

    def __init__(self, model, hw: PlanHardware, problem, eps, limits: PlanLimits):
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
        self.free = {}
        for stages in self.stage_range:
            part = self._dp(stages, None)
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

    def _dp(self, stages, held, b=1):
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
    def grids(self, mode):
        """Yield ``(stages, micro_batches, iterations, seconds_lb, exact_mask)`` per M.

        Grids have shape ``(len(micro_batches), b_max)``; unreachable points are ``inf``.
        """
        name = ALGORITHMS[mode]
        b = self.b[None, :]
        if mode == "sync":
            count = np.arange(1, self.limits.max_micro_batches + 1)[:, None]
            iterations = self._iterations(name, {"B": count, "b": b, "M": 1})
        else:
            count = np.ones((1, 1), dtype=np.int64)
            stages = np.array(list(self.free))[:, None]
            iterations_all = self._iterations(name, {"b": b, "M": stages})
        for i, stages in enumerate(self.free):
            if mode == "async":
                iterations = iterations_all[i : i + 1]
            part = self.free[stages]
            cycles = _cycles_fn(mode)(iterations, stages, count)
            cycle_time = self.hw.timing.stage_time_s(b * part.bottleneck)
            seconds = np.asarray(cycles * cycle_time, dtype=float)
            held = self.held(mode, stages, count.ravel())
            need = (held * np.asarray(part.activations)[None, :]).max(axis=1)[:, None]
            exact = b * need * self.bytes <= self.buffer
            yield stages, count.ravel(), iterations, seconds, exact

    def _iterations(self, name, grid) -> np.ndarray:
        """Whole iterations on a broadcast grid; ``inf`` where ``eps <= floor``."""
        shape = np.broadcast_shapes(*(np.shape(v) for v in grid.values()))
        full = {k: np.broadcast_to(v, shape) for k, v in grid.items()}
        floor = np.broadcast_to(_floor(name, {**self.values, **full}), shape)
        reach = self.eps > floor
        out = np.full(shape, np.inf)
        if reach.any():
            out[reach] = self._whole_iterations(name, {k: v[reach] for k, v in full.items()})
        return out

    def _whole_iterations(self, name, points) -> np.ndarray:
        """Whole iterations at reachable ``points`` (1-D arrays); ``inf`` beyond int64.

        A point just above its floor can need more iterations than an int64 holds, which
        :func:`theory.complexity.evaluate_complexity` refuses for the whole call; such points are
        isolated by bisection and count as unreachable, so they cannot abort the search.
        """
        try:
            result = evaluate_complexity(name, self.eps, **self.values, **points)
            return np.asarray(result.iterations_int, dtype=float)
        except IterationLimitError:
            size = len(next(iter(points.values())))
            if size == 1:
                return np.array([np.inf])
            half = size // 2
            return np.concatenate([
                self._whole_iterations(name, {k: v[:half] for k, v in points.items()}),
                self._whole_iterations(name, {k: v[half:] for k, v in points.items()}),
            ])

    def min_floor(self, mode) -> float:
        name = ALGORITHMS[mode]
        n_max = {"B": self.limits.max_micro_batches, "b": self.limits.max_micro_batch_size}
        stages = np.array(list(self.free))
        return float(np.min(_floor(name, {**self.values, **n_max, "M": stages})))

    def candidate(self, mode, stages, count, b, iterations, partition) -> Candidate:
        cycles = int(_cycles_fn(mode)(iterations, stages, count))
        cycle_time = float(self.hw.timing.stage_time_s(b * partition.bottleneck))
        held = self.held(mode, stages, [count])[0]
        return Candidate(
            mode, int(stages), int(count), int(b), int(iterations), cycles, cycle_time,
            cycles * cycle_time, partition, self.memory(partition, held, b),
        )

    def best_for(self, mode, stages, counts, iterations, seconds, exact, threshold):
        """Exact best of one (mode, M) (branch and bound below ``threshold``), or None."""
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
            part = self._dp(stages, tuple(int(x) for x in held_rows[i]), b)
            if part is None:
                # caps only shrink with b: no larger b of this in-flight pattern is feasible
                alive[np.ix_(group == group[i], self.b >= b)] = False
                continue
            cycles = _cycles_fn(mode)(iterations[i, j], stages, count)
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

    Returns
    -------
    Plan
        The exact integer optimum over the search range (see module docstring), the three
        next-best (mode, M) pairs, the relaxed optimum and the gap.

    Raises
    ------
    ParameterError
        The model does not fit the tiles (a layer larger than an accelerator, or more tiles than
        all accelerators together), or no choice fits the activation buffers.
    UnreachableTargetError
        ``eps`` is at or below the floor of every mode for every allowed batch.
    """
    problem = ProblemParams() if problem is None else problem
    limits = PlanLimits() if limits is None else limits
    eps = check_range("eps", eps, 0, low_open=True)
    start = time.perf_counter()
    search = _Search(model, hardware, problem, eps, limits)
    pairs, ruled_out, floors = [], [], {}
    for mode in limits.modes:
        grids = list(search.grids(mode))
        if not any(np.isfinite(g[3]).any() for g in grids):
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
                f"eps={eps:g} is at or below the floor of {ALGORITHMS[mode]} for every allowed "
                f"batch (smallest floor {floor:.6g}, {largest})"
            )))
            continue
        pairs += [(mode, *g) for g in grids]
    found: list[Candidate] = []
    produced, pruned = set(), set()
    for mode, stages, counts, iterations, seconds, exact in sorted(
        pairs, key=lambda p: (float(np.min(p[4])), p[0], p[1])
    ):
        threshold = found[3].seconds if len(found) >= 4 else np.inf
        if float(np.min(seconds)) >= threshold:
            pruned.add(mode)
            continue
        cand = search.best_for(mode, stages, counts, iterations, seconds, exact, threshold)
        if cand is not None:
            produced.add(mode)
            found = sorted([*found, cand], key=lambda c: (c.seconds, c.mode, c.stages))[:4]
        elif np.isfinite(threshold):
            pruned.add(mode)  # best_for stops at the threshold: the pair may be feasible
    for mode in sorted({p[0] for p in pairs} - produced - pruned):
        ruled_out.append((mode, _memory_reason(search, mode, pairs, hardware)))
    if not found:
        if floors and len(floors) == len(limits.modes):
            mode = min(floors, key=floors.get)
            raise UnreachableTargetError(ALGORITHMS[mode], eps, floors[mode])
        raise ParameterError("; ".join(f"{m}: {r}" for m, r in ruled_out) or "no feasible plan")
    exact_time = time.perf_counter() - start
    best = found[0]
    terms = _terms(search, best)
    relaxed = _relaxed(model, hardware, problem, eps, limits, search, ruled_out, relax)
    gap = best.seconds / relaxed.value - 1 if relaxed.value > 0 and math.isfinite(relaxed.value) \
        else math.nan
    return Plan(
        model=model.name, eps=float(eps), best=best, terms=terms,
        dominant=max(terms, key=terms.get), relaxed=relaxed, gap=float(gap),
        alternatives=tuple(found[1:]), ruled_out=tuple(sorted(ruled_out)),
        solve_times={"exact": exact_time, "relaxation": relaxed.solve_time_s,
                     "partition_solves": search.dp_solves},
    )


def _memory_reason(search: _Search, mode: str, pairs, hardware: PlanHardware) -> str:
    """Why no (M, B, b) of ``mode`` is feasible although some reach eps (the memory limit).

    ``B = b = 1`` holds the fewest activations (in-flight counts grow with ``B``), so if no
    partition fits there, none fits anywhere; otherwise the batches that fit are too small to
    reach eps above the floor.
    """
    buffer = f"activation_buffer_bytes={hardware.activation_buffer_bytes:g}"
    for p in pairs:
        if p[0] == mode:
            held = tuple(int(x) for x in search.held(mode, p[1], [1])[0])
            if search._dp(p[1], held, 1) is not None:
                return (f"the batches that fit {buffer} are too small to reach eps="
                        f"{search.eps:g} above the floor of {ALGORITHMS[mode]}")
    return (f"no partition fits {buffer} even at b=1 ({hardware.bytes_per_activation} bytes per "
            "activation)")


def _terms(search: _Search, cand: Candidate) -> dict:
    """The rate-form terms a/sqrt(K), c/K and floor at the candidate's whole iteration count."""
    name = ALGORITHMS[cand.mode]
    grid = {"b": cand.micro_batch_size, "M": cand.stages}
    if cand.mode == "sync":
        grid["B"] = cand.micro_batches
    r = evaluate_complexity(name, search.eps, **search.values, **grid)
    k = float(cand.iterations)
    values = (float(r.rate_a) / math.sqrt(k), float(r.rate_c) / k, float(r.floor))
    return dict(zip(TERMS, values, strict=True))


def _relaxed(model, hardware, problem, eps, limits, search, ruled_out, relax) -> Relaxed:
    if not relax:
        return Relaxed(math.nan, "", math.nan, math.nan, math.nan, math.nan, 0.0)
    from .relaxation import solve_relaxation

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
    problem = ProblemParams() if problem is None else problem
    limits = PlanLimits() if limits is None else limits
    eps = check_range("eps", eps, 0, low_open=True)
    if mode not in ALGORITHMS:
        raise ParameterError(f"mode={mode!r} is unknown; valid: {', '.join(ALGORITHMS)}")
    search = _Search(model, hardware, problem, eps, limits)
    out = {}
    for stages, counts, iterations, seconds, exact in search.grids(mode):
        for i, count in enumerate(counts):
            row = slice(i, i + 1)
            out[int(stages), int(count)] = search.best_for(
                mode, stages, counts[row], iterations[row], seconds[row], exact[row], np.inf
            )
    return out
