r"""The kinds planner: the best plan of each mode (sync, async, dp, hybrid) on equal accelerators.

Given a :class:`~bounds.Model` (its whole :attr:`~bounds.Model.chain`, digital-only
layers included), a :class:`~bounds.KindsHardware` (analog and digital kinds with their
counts), the problem constants and a target ``eps``, :func:`plan_modes` returns, for each mode of
:data:`bounds.MODES`, the choice minimising the predicted time to eps, all modes using at
most the same accelerators of each kind:

- the **layout** of a pipeline (or of one replica): contiguous stages, each on a kind, from the
  exact DP :func:`~bounds.planning.partition.kind_partitions` (tiles of analog kinds, weight
  memory of digital kinds, the layers' hosts; at most ``count`` stages per kind, ``count // R``
  per replica); its clock cycle is the slowest stage's time
  (:meth:`~bounds.AcceleratorKind.stage_time_s`);
- ``sync`` / ``async``: :math:`T = C(K)\,t_\mathrm{cycle}` with :math:`K` from
  :func:`bounds.planning.modes.stage_guarantee` (the hook of the mixed-stage guarantee: Theorem
  2M for stages on different kinds, noise shares from the stages' weights) and :math:`C` from
  :func:`theory.schedules.cycles_after`; ``b`` over :attr:`ModeLimits.micro_batch_sizes`,
  ``B`` over ``1..max_micro_batches``;
- ``dp`` (``M`` the fewest stages a replica needs, schedule ``none``) and ``hybrid`` (``R >= 2``
  replicas of an ``M``-stage sync pipeline, ``M >= 2``):
  :math:`T = K\,t_\mathrm{step} + \lfloor K/P\rfloor t_\mathrm{avg}` with :math:`K` from the
  ``literature`` local-SGD row of :mod:`theory.local_sgd` at the best step of a geometric grid
  of steps below the row's cap, :math:`t_\mathrm{avg}` and the programming noise from
  :mod:`bounds.planning.modes`; ``B`` over :attr:`ModeLimits.replica_micro_batches` and ``P``
  over :attr:`ModeLimits.periods`; both have ``R >= 2``.

**Guarantees and estimates** (:attr:`ModePlan.basis`). The ``sync`` and ``async`` times come from
``derived`` registry rows (Corollary 3, Theorem 4'; Theorem 2M for mixed stages): they are
**guarantees** under their conditions. The ``dp`` and ``hybrid`` times come from the ``local_sgd``
row, a published order with its unknown constants set to 1 and analog constants attached, not
proved for analog replicas: they are **estimates**, whatever the step of the grid. The report keeps
them apart: its own column, :attr:`ModeComparison.best_guarantee` among the proved plans only and
:attr:`ModeComparison.best_estimate` separately, and in JSON ``basis`` with ``guaranteed_seconds``
or ``estimated_seconds``.

Each plan names its **dominant cost**, the largest of four factors by which its time exceeds an
ideal run (:data:`COSTS`): ``bubbles`` (cycles per step over the busy ``2B``), ``staleness``
(async: :math:`K(D)/K(0)`), ``floor`` (:math:`K` over the :math:`K` of the same bound without
its floor term) and ``averaging`` (time with averaging over time without, times :math:`K` with
the programming noise over :math:`K` without). Activation buffers are not checked here (the
single-kind planner does).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from theory import local_sgd
from theory.compiled import compile_expr
from theory.complexity import REACHABLE, evaluate_complexity
from theory.errors import ParameterError, check_range
from theory.schedules import cycles_after
from theory.tables import text_table
from theory.vocabulary import MIXED_ENTRIES

from ..params import ProblemParams, check_type
from .hardware import KindsHardware
from .mode_limits import ModeLimits
from .models import Model, model_constants
from .modes import (
    CONSERVATIVE_NOTE,
    MIXED_NOTE,
    averaging_time_s,
    guarantee_values,
    programming_noise,
    stage_guarantee,
    stage_values,
)
from .partition import KindPartition, KindTable, kind_partitions
from .search_size import check_search, planned_model

__all__ = [
    "BASES", "COSTS", "ModeComparison", "ModePlan", "STEP_GRID", "layer_arrays", "plan_modes",
    "segment_times",
]

#: the cost factors a plan's time is split into (the largest is its dominant cost)
COSTS = ("bubbles", "staleness", "floor", "averaging")
#: what a plan's time is: a proved guarantee (a ``derived`` row) or an estimate (``local_sgd``)
BASES = ("guarantee", "estimate")
#: the steps of the local-SGD row searched, as fractions of the step cap: 2^(-j/4), 1 to 1e-6
STEP_GRID = 2.0 ** (-np.arange(0, 81) / 4)


@dataclass(frozen=True)
class ModePlan:
    """The best choice of one mode.

    Attributes
    ----------
    mode : str
    seconds : float
        Time to eps: a guarantee or an estimate, as :attr:`basis` says.
    stages : int
        ``M`` (per replica for dp and hybrid).
    replicas : int
        ``R`` (1 for the pipelines).
    period : int
        ``P`` (averaging period; 1 without averaging).
    micro_batches, micro_batch_size : int
        ``B`` (1 for async) and ``b``.
    iterations : int
        Updates (steps) to eps.
    cycle_time_s : float
        Seconds per clock cycle (slowest stage).
    averaging_s : float
        Seconds of one averaging (0 without).
    step : float or None
        The fixed step of the local-SGD row (dp, hybrid), else None.
    partition : KindPartition
        Layers and kind of each stage (of one replica).
    kind_names : tuple of str
        Kind of each stage, by name.
    bound : str
        The bound that gave the iterations.
    costs : dict
        The factors of :data:`COSTS`.
    conservative : bool
        Whether an estimate (dp, hybrid) of mixed analog/digital stages used the all-coordinate
        constants (the pipelines' guarantees of mixed stages are Theorem 2M's).
    basis : str
        ``"guarantee"`` (``sync``, ``async``: a ``derived`` row) or ``"estimate"`` (``dp``,
        ``hybrid``: the order-only ``local_sgd`` row, not proved for analog replicas).
    """

    mode: str
    seconds: float
    stages: int
    replicas: int
    period: int
    micro_batches: int
    micro_batch_size: int
    iterations: int
    cycle_time_s: float
    averaging_s: float
    step: float | None
    partition: KindPartition
    kind_names: tuple[str, ...]
    bound: str
    costs: dict = field(compare=False)
    conservative: bool = False
    basis: str = "guarantee"

    def __post_init__(self):
        if self.basis not in BASES:
            raise ParameterError(f"basis={self.basis!r} is unknown; valid: {', '.join(BASES)}")

    @property
    def guaranteed(self) -> bool:
        """Whether :attr:`seconds` is a proved guarantee (not an estimate)."""
        return self.basis == "guarantee"

    @property
    def accelerators(self) -> int:
        """Accelerators used, ``R x M``."""
        return self.replicas * self.stages

    @property
    def dominant(self) -> str:
        """The largest cost factor; ``"none"`` when every factor is 1 (an ideal run)."""
        top = max(COSTS, key=lambda k: self.costs[k])
        return top if self.costs[top] > 1 + 1e-9 else "none"

    def assignment(self) -> str:
        """Layers per stage grouped by kind, e.g. ``gpu[1] aimc[4 x 56] gpu[1]``.

        ``[4 x 56]``: 56 consecutive stages of 4 layers each.
        """
        runs: list[tuple[str, list]] = []
        for name, size in zip(self.kind_names, self.partition.sizes, strict=True):
            if not runs or runs[-1][0] != name:
                runs.append((name, []))
            sizes = runs[-1][1]
            if sizes and sizes[-1][0] == size:
                sizes[-1][1] += 1
            else:
                sizes.append([size, 1])
        return " ".join(
            f"{name}[" + " ".join(f"{s} x {c}" if c > 1 else f"{s}" for s, c in sizes) + "]"
            for name, sizes in runs
        )

    def to_dict(self) -> dict:
        """JSON-ready fields (the layout as stage sizes and kind names); the time is
        ``guaranteed_seconds`` or ``estimated_seconds`` (the other None), as ``basis`` says."""
        return {
            "mode": self.mode, "basis": self.basis,
            "guaranteed_seconds": self.seconds if self.guaranteed else None,
            "estimated_seconds": None if self.guaranteed else self.seconds,
            "stages": self.stages,
            "replicas": self.replicas, "period": self.period, "accelerators": self.accelerators,
            "micro_batches": self.micro_batches, "micro_batch_size": self.micro_batch_size,
            "iterations": self.iterations, "cycle_time_s": self.cycle_time_s,
            "averaging_s": self.averaging_s, "step": self.step, "bound": self.bound,
            "partition": list(self.partition.sizes), "stage_kinds": list(self.kind_names),
            "stage_times_s": list(self.partition.stage_times), "assignment": self.assignment(),
            "costs": dict(self.costs), "dominant": self.dominant,
            "all_coordinate_constants": self.conservative,
        }


@dataclass(frozen=True)
class ModeComparison:
    """The best plan of every mode on the same hardware (:func:`plan_modes`).

    Attributes
    ----------
    model : str
    eps : float
    hardware : KindsHardware
    plans : tuple of ModePlan
        One per mode that has a feasible plan, in the order of :data:`bounds.MODES`.
    ruled_out : tuple of (str, str)
        Modes without a plan, with the reason.
    unplanned : tuple of str
        Digital-only layers left out because the hardware has no digital kind (they run on
        digital hardware outside the plan, as for the single-kind planner).
    """

    model: str
    eps: float
    hardware: KindsHardware
    plans: tuple[ModePlan, ...]
    ruled_out: tuple[tuple[str, str], ...]
    unplanned: tuple[str, ...] = ()

    def get(self, mode: str) -> ModePlan | None:
        """The plan of ``mode``, or None."""
        return next((p for p in self.plans if p.mode == mode), None)

    def _fastest(self, basis: str) -> ModePlan | None:
        found = [p for p in self.plans if p.basis == basis]
        return min(found, key=lambda p: p.seconds) if found else None

    @property
    def best_guarantee(self) -> ModePlan | None:
        """The fastest plan whose time is proved (``basis == "guarantee"``), or None; an
        estimate is never chosen here, however much faster it is."""
        return self._fastest("guarantee")

    @property
    def best_estimate(self) -> ModePlan | None:
        """The fastest plan whose time is an estimate (dp, hybrid), or None."""
        return self._fastest("estimate")

    def best_of(self, modes) -> ModePlan | None:
        """The fastest plan among ``modes``, or None."""
        found = [p for p in self.plans if p.mode in modes]
        return min(found, key=lambda p: p.seconds) if found else None

    def ratio(self) -> float:
        """Time of the best pipeline (sync or async) over the best data-parallel plan (dp or
        hybrid); ``nan`` when either is missing. A guarantee over an estimate: below 1 the
        pipeline's proved time beats the data-parallel estimate, above 1 nothing is proved."""
        pipe, data = self.best_of(("sync", "async")), self.best_of(("dp", "hybrid"))
        return pipe.seconds / data.seconds if pipe and data else math.nan

    @property
    def notes(self) -> tuple[str, ...]:
        """What the numbers rely on."""
        notes = []
        if self.unplanned:
            notes.append(f"digital-only layers {', '.join(self.unplanned)} are not planned: the "
                         "hardware has no digital kind (they run on digital hardware outside)")
        if any(p.bound in MIXED_ENTRIES for p in self.plans):
            notes.append(MIXED_NOTE)
        if any(p.conservative for p in self.plans):
            notes.append("* " + CONSERVATIVE_NOTE)
        if any(not p.guaranteed for p in self.plans):
            notes.append("estimates (dp/hybrid): the literature local-SGD row of "
                         "theory.local_sgd (Wang and Joshi 2021, order only, unknown constants "
                         "set to 1; programming-noise term L nu/(alpha q_min P)), not proved for "
                         "analog replicas: not a guarantee, never chosen as the best guarantee")
        if any(p.mode == "async" for p in self.plans):
            notes.append("async iterations assume A4 (see the plan's note)")
        return tuple(notes)

    def table(self) -> str:
        """The human report: one row per mode, the layouts, the ratio, the notes."""
        header = ["mode", "basis", "guaranteed s", "estimated s", "R", "M", "P", "B", "b",
                  "iterations", "dominant", "bound"]
        rows = [[p.mode, p.basis, f"{p.seconds:.4g}" if p.guaranteed else "-",
                 "-" if p.guaranteed else f"{p.seconds:.4g}", p.replicas, p.stages, p.period,
                 p.micro_batches, p.micro_batch_size, f"{p.iterations:,d}", p.dominant,
                 p.bound + ("*" if p.conservative else "")]
                for p in self.plans]
        lines = [f"best plan per mode for model {self.model!r} at eps = {self.eps:g} on "
                 f"{self.hardware.describe()}", text_table(header, rows)]
        for p in self.plans:
            costs = ", ".join(f"{k} {p.costs[k]:.3g}" for k in COSTS)
            avg = f", averaging {p.averaging_s:.3g} s" if p.replicas > 1 else ""
            lines.append(f"  {p.mode:<6} layout {p.assignment()}; cycle {p.cycle_time_s:.4g} s"
                         f"{avg}; costs x: {costs}")
        for label, best in (("best guarantee", self.best_guarantee),
                            ("best estimate (unproved)", self.best_estimate)):
            if best is not None:
                lines.append(f"{label}: {best.mode}, {best.seconds:.4g} s")
        ratio = self.ratio()
        if math.isfinite(ratio):
            pipe, data = self.best_of(("sync", "async")), self.best_of(("dp", "hybrid"))
            lines.append(f"best pipeline guarantee ({pipe.mode}, {pipe.seconds:.4g} s) / best "
                         f"data-parallel estimate ({data.mode}, {data.seconds:.4g} s) = "
                         f"{ratio:.3g}")
        for mode, reason in self.ruled_out:
            lines.append(f"ruled out: {mode}: {reason}")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """JSON-ready fields."""
        ratio = self.ratio()
        guarantee, estimate = self.best_guarantee, self.best_estimate
        return {
            "model": self.model, "eps": self.eps, "hardware": self.hardware.to_dict(),
            "plans": [p.to_dict() for p in self.plans],
            "best_guarantee": None if guarantee is None else guarantee.mode,
            "best_estimate": None if estimate is None else estimate.mode,
            "ruled_out": [{"mode": m, "reason": r} for m, r in self.ruled_out],
            "pipeline_over_data_parallel": ratio if math.isfinite(ratio) else None,
            "unplanned": list(self.unplanned),
            "notes": list(self.notes),
        }


def layer_arrays(model: Model, hardware: KindsHardware) -> dict[str, np.ndarray]:
    """Per-layer arrays of the chain: mvms, ops, weights, digital_only, and tiles per kind."""
    chain = model.chain
    out = {
        "mvms": np.array([x.mvms_per_sample for x in chain], dtype=np.int64),
        "ops": np.array([x.mvms_per_sample * x.ops_per_mvm for x in chain], dtype=float),
        "weights": np.array([x.rows * x.cols for x in chain], dtype=float),
        "digital_only": np.array([not x.analog for x in chain], dtype=np.int64),
    }
    for t, kind in enumerate(hardware.kinds):
        if kind.analog:
            h = kind.hardware
            out[f"tiles{t}"] = np.array([x.tiles(h.tile_rows, h.tile_cols) for x in chain],
                                        dtype=np.int64)
    return out


def segment_times(model: Model, hardware: KindsHardware, b: int) -> tuple[np.ndarray, ...]:
    """Per kind, the ``(n+1, n+1)`` table of stage times of layers ``k..i-1`` (``inf``: infeasible).

    A segment is feasible on a kind when it fits (tiles, or weight memory) and, for an analog
    kind, holds no digital-only layer.
    """
    arrays = layer_arrays(model, hardware)

    def span(values):
        prefix = np.concatenate(([0], np.cumsum(values)))
        return prefix[None, :] - prefix[:, None]

    mvms, ops, weights = span(arrays["mvms"]), span(arrays["ops"]), span(arrays["weights"])
    digital_only = span(arrays["digital_only"])
    k_idx, i_idx = np.indices(mvms.shape)
    nonempty = k_idx < i_idx
    tables = []
    for t, kind in enumerate(hardware.kinds):
        safe = np.where(nonempty, 1, 0)
        tiles = span(arrays[f"tiles{t}"]) if kind.analog else 0
        ok = nonempty & kind.capacity_ok(tiles, weights, hardware.bytes_per_weight)
        if kind.analog:
            ok &= digital_only == 0
        times = kind.stage_time_s(b, np.maximum(mvms, safe), ops, weights)
        tables.append(np.where(ok, times, np.inf))
    return tuple(tables)


class _KindSearch:
    """The search of :func:`plan_modes`: the kinds DPs of each ``b`` and subset of kinds (cached),
    the best pipeline of a mode (:meth:`pipeline`) and the best replicated plan
    (:meth:`replicated`)."""

    def __init__(self, model, hardware, problem, eps, limits, parameter=None):
        self.model, self.hw, self.problem, self.eps, self.limits = (model, hardware, problem, eps,
                                                                     limits)
        n = len(model.chain)
        self.max_stages = min(n, hardware.accelerators)
        check_search(model, hardware, limits, parameter)
        self.arrays = layer_arrays(model, hardware)
        self.kind_tables: dict[tuple, KindTable | None] = {}
        self.segments: dict[int, tuple] = {}
        kinds = range(len(hardware.kinds))
        self.subsets = [tuple(t for t in kinds if mask >> t & 1)
                        for mask in range(1, 2 ** len(hardware.kinds))]
        self.subsets.sort(key=len)  # the last is every kind
        self.k_step = compile_expr(local_sgd.iterations_at_step())
        self.floor_fn = compile_expr(local_sgd.floor_at_step())
        self.floors: dict[str, tuple[float, float]] = {}  # mode -> smallest floor, its noise

    def kind_table(self, b: int, subset: tuple[int, ...]) -> KindTable | None:
        """The DP of the kinds in ``subset`` only (the other kinds' counts set to 0)."""
        key = (b, subset)
        if key not in self.kind_tables:
            if b not in self.segments:
                self.segments[b] = segment_times(self.model, self.hw, b)
            counts = tuple(c if t in subset else 0 for t, c in enumerate(self.hw.counts))
            top = min(self.max_stages, sum(counts))
            self.kind_tables[key] = kind_partitions(self.segments[b], counts, top) if top else None
        return self.kind_tables[key]

    def layouts(self, b, stages, available):
        """The fewest-bottleneck layout of every subset of the kinds.

        With the all-coordinate constants a layout's guarantee depends only on its kinds (and
        improves with fewer), so the best time was among these. Theorem 2M's also depends on the
        stages' weight shares: among these layouts it is exact, but a layout with a slower
        bottleneck and less analog weight could be faster (not searched; every plan's time is
        still its own proved guarantee, never above the all-coordinate one)."""
        out = []
        for subset in self.subsets:
            table = self.kind_table(b, subset)
            if table is None:
                continue
            value, state = table.best(stages, available)
            if math.isfinite(value):
                out.append(table.partition(stages, state))
        return out

    def layout(self, b, stages, available):
        """The fewest-bottleneck layout over all kinds, or None."""
        value, state = self.kind_table(b, self.subsets[-1]).best(stages, available)
        if not math.isfinite(value):
            return None
        return self.kind_table(b, self.subsets[-1]).partition(stages, state)

    def kinds_of(self, part: KindPartition):
        return [self.hw.kinds[t] for t in part.kinds]

    def stage_weights(self, part: KindPartition):
        prefix = np.concatenate(([0], np.cumsum(self.arrays["weights"])))
        ends = (*part.starts[1:], part.layers)
        return [float(prefix[e] - prefix[s]) for s, e in zip(part.starts, ends, strict=True)]

    # -- pipelines -------------------------------------------------------------------------
    def pipeline(self, mode: str) -> ModePlan | None:
        best = None
        counts = np.arange(1, self.limits.max_micro_batches + 1) if mode == "sync" \
            else np.ones(1, dtype=np.int64)
        for b in self.limits.micro_batch_sizes:
            for stages, part in ((m, p) for m in range(1, self.max_stages + 1)
                                 for p in self.layouts(b, m, self.hw.counts)):
                kinds = self.kinds_of(part)
                grid = {"b": b, "M": stages} | ({"B": counts} if mode == "sync" else {})
                r = stage_guarantee(mode, self.eps, kinds, self.problem,
                                    weights=self.stage_weights(part), **grid)
                iters = np.where(np.asarray(r.status) == REACHABLE,
                                 np.asarray(r.iterations_int, dtype=float), np.inf)
                iters = np.broadcast_to(iters, counts.shape)
                finite = np.isfinite(iters)
                if not finite.any():
                    continue
                cycles = np.where(finite, cycles_after(mode, np.where(finite, iters, 1), stages,
                                                       counts), np.inf)
                seconds = cycles * part.bottleneck
                i = int(np.argmin(seconds))
                if best is None or seconds[i] < best[0]:
                    best = (float(seconds[i]), b, stages, int(counts[i]), int(iters[i]), part)
        if best is None:
            return None
        seconds, b, stages, count, iters, part = best
        point = {"b": b, "M": stages} | ({"B": count} if mode == "sync" else {})
        weights = self.stage_weights(part)
        r = stage_guarantee(mode, self.eps, self.kinds_of(part), self.problem, "raise",
                            weights=weights, **point)
        values, _ = stage_values(self.kinds_of(part), self.problem, weights)
        bound = str(r.algorithm)
        costs = dict.fromkeys(COSTS, 1.0)
        costs["floor"] = iters / _no_floor(r)
        if mode == "sync":
            costs["bubbles"] = (count + stages - 1) / count
        else:
            costs["bubbles"] = (iters + stages - 1) / iters
            fresh = evaluate_complexity(bound, self.eps, on_unreachable="status", **values,
                                        **point, D=0)
            costs["staleness"] = iters / float(fresh.iterations_int)
        if not any(k.analog for k in self.kinds_of(part)):
            bound += " (q = 1, G = 0)"
        return ModePlan(
            mode=mode, seconds=seconds, stages=stages, replicas=1, period=1,
            micro_batches=count, micro_batch_size=b, iterations=iters,
            cycle_time_s=part.bottleneck, averaging_s=0.0, step=None, partition=part,
            kind_names=tuple(k.name for k in self.kinds_of(part)), bound=bound, costs=costs,
        )

    # -- data parallel ---------------------------------------------------------------------
    def replicated(self, mode: str) -> ModePlan | None:
        best = None
        counts = np.array(self.hw.counts)
        lim = self.limits
        bs = np.array(lim.replica_micro_batches, dtype=float)[:, None, None]
        periods = np.array(lim.periods, dtype=float)[None, :, None]
        for b in lim.micro_batch_sizes:
            for replicas in range(2, self.hw.accelerators + 1):
                available = tuple(int(c) for c in counts // replicas)
                if sum(available) == 0:
                    break
                low = 1 if mode == "dp" else 2  # hybrid: pipelined replicas (M = 1 is dp)
                stage_range = range(low, min(self.max_stages, sum(available)) + 1)
                for stages in stage_range:
                    parts = self.layouts(b, stages, available)
                    for part in parts:
                        cand = self._evaluate(mode, b, replicas, stages, part, bs, periods)
                        if cand is not None and (best is None or cand[0] < best[0]):
                            best = cand
                    if mode == "dp" and parts:
                        break  # dp: each replica on as few accelerators as it needs
        if best is None:
            return None
        return best[1]()

    def _evaluate(self, mode, b, replicas, stages, part, bs, periods):
        kinds = self.kinds_of(part)
        values = guarantee_values(kinds, self.problem)
        weights = self.stage_weights(part)
        nu = float(sum(programming_noise(k, w) for k, w in zip(kinds, weights, strict=True)))
        t_avg = averaging_time_s(kinds, weights, replicas, self.hw.link_bytes_per_s,
                                 self.hw.bytes_per_weight)
        inv_cap = np.maximum(values["L"] * values["q_max"] ** 2
                             / ((1 - values["theta"]) * values["q_min"]),
                             2 * values["L"] * periods)
        alpha = STEP_GRID[None, None, :] / inv_cap
        point = dict(values, alpha=alpha, epsilon=self.eps, R=replicas, n=bs * b, P=periods,
                     nu=nu)
        floor = np.broadcast_to(np.asarray(self.floor_fn(point), dtype=float),
                                np.broadcast_shapes(bs.shape, periods.shape, alpha.shape))
        j = int(np.argmin(floor))
        if floor.flat[j] < self.floors.get(mode, (math.inf,))[0]:
            jb, jp, ja = np.unravel_index(j, floor.shape)
            a_j, p_j = alpha[0, min(jp, alpha.shape[1] - 1), ja], periods.flat[jp]
            noise = values["L"] * nu / (a_j * values["q_min"] * p_j)
            self.floors[mode] = (float(floor.flat[j]), float(noise))
        k_real = np.asarray(self.k_step(point), dtype=float)
        k_real = np.where((k_real > 0) & np.isfinite(k_real) & (k_real < 2.0**62), k_real,
                          np.inf)
        iters = np.ceil(k_real)
        step_mode = "none" if mode == "dp" else "sync"
        per_step = cycles_after(step_mode, 1, stages, bs) * part.bottleneck
        safe = np.where(np.isfinite(iters), iters, 0)
        seconds = np.where(np.isfinite(iters),
                           safe * per_step + np.floor(safe / periods) * t_avg, np.inf)
        i = int(np.argmin(seconds))
        if not np.isfinite(seconds.flat[i]):
            return None
        ib, ip, ia = np.unravel_index(i, seconds.shape)
        value = float(seconds.flat[i])

        def build() -> ModePlan:
            count, period = int(bs.flat[ib]), int(periods.flat[ip])
            step = float(alpha[0, ip if alpha.shape[1] > 1 else 0, ia])
            one = dict(values, alpha=step, epsilon=self.eps, R=replicas, n=count * b, P=period)
            k_iter = int(iters[ib, ip, ia])
            k_quiet = float(self.k_step(one | {"nu": 0.0}))
            k_bare = float(self.k_step(one | {"nu": 0.0, "G_inf": 0.0}))
            step_s = float(per_step.flat[ib])
            total_quiet = k_iter * step_s
            costs = {
                "bubbles": (stages if mode == "dp" else (count + stages - 1)) / count,
                "staleness": 1.0,
                "floor": k_quiet / k_bare,
                "averaging": (value / total_quiet) * (k_iter / math.ceil(k_quiet)),
            }
            return ModePlan(
                mode=mode, seconds=value, stages=stages, replicas=replicas, period=period,
                micro_batches=count, micro_batch_size=b, iterations=k_iter,
                cycle_time_s=part.bottleneck, averaging_s=t_avg, step=step, partition=part,
                kind_names=tuple(k.name for k in kinds), bound="local_sgd (literature)",
                costs=costs, conservative=len({k.analog for k in kinds}) > 1, basis="estimate",
            )

        return value, build


def _no_floor(r) -> float:
    """Whole iterations of the rate form ``a/sqrt(K) + c/K`` at ``eps`` without the floor."""
    a, c, e = float(r.rate_a), float(r.rate_c), float(r.eps)
    return max(1.0, math.ceil(((a + math.sqrt(a * a + 4 * c * e)) / (2 * e)) ** 2))


def plan_modes(model: Model, hardware: KindsHardware, problem: ProblemParams | None = None,
               eps: float = 1.0, limits: ModeLimits | None = None, *,
               parameter: tuple[str, object] | None = None) -> ModeComparison:
    r"""The best plan of each mode on the same accelerators (module docstring).

    Parameters
    ----------
    model : Model
        The network; its :attr:`~bounds.Model.chain` is planned.
    hardware : KindsHardware
        Kinds and counts (:func:`bounds.load_hardware`, :func:`~bounds.planning.hardware.
        single_kind`).
    problem : ProblemParams, optional
        Default: the model's ``[problem]`` constants over the defaults (as for :func:`bounds.plan`).
    eps : float
        Target for :math:`\frac1K\sum_k\mathbb{E}\lVert\nabla f\rVert^2`, > 0.
    limits : ModeLimits, optional
    parameter : (str, object), optional
        The name and value a refusal of :func:`check_search` shows (a command passes the flag
        the user typed, e.g. ``("--accelerators", P)``); default ``("kinds", number of kinds)``.

    Returns
    -------
    ModeComparison
        Modes without a feasible or reachable plan are listed in ``ruled_out`` with the reason.
    """
    problem = ProblemParams(**model_constants(model)) if problem is None else problem
    limits = ModeLimits() if limits is None else limits
    check_type("model", model, Model, "e.g. bounds.load_model(NAME)")
    check_type("hardware", hardware, KindsHardware, "e.g. bounds.load_hardware(FILE)")
    check_type("problem", problem, ProblemParams)
    check_type("limits", limits, ModeLimits)
    eps = check_range("eps", eps, 0, low_open=True)
    model, unplanned = planned_model(model, hardware)
    search = _KindSearch(model, hardware, problem, eps, limits, parameter)
    plans, ruled_out = [], []
    for mode in limits.modes:
        plan = search.pipeline(mode) if mode in ("sync", "async") else search.replicated(mode)
        if plan is None:
            feasible = any(search.layout(b, m, hardware.counts) is not None
                           for b in limits.micro_batch_sizes[:1]
                           for m in range(1, search.max_stages + 1))
            if mode in search.floors:
                floor, noise = search.floors[mode]
                reason = (f"eps={eps:g} is at or below the floor of the local-SGD row for every "
                          f"choice searched (smallest floor {floor:.4g}, of which programming "
                          f"noise {noise:.4g})")
            elif mode in ("dp", "hybrid") and feasible:
                reason = "two replicas do not fit the accelerators"
            else:
                reason = (f"eps={eps:g} is not reached by its bound for any choice searched"
                          if feasible else "no layout of the model fits the accelerators")
            ruled_out.append((mode, reason))
        else:
            plans.append(plan)
    return ModeComparison(model=model.name, eps=float(eps), hardware=hardware,
                          plans=tuple(plans), ruled_out=tuple(ruled_out), unplanned=unplanned)
