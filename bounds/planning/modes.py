r"""Cycle models of the data-parallel and hybrid modes, and the guarantee constants of mixed stages.

**Modes** (:data:`~bounds.planning.mode_limits.MODES`): ``sync`` and ``async`` are the pipelines of
:mod:`bounds.planning.planner`; ``dp`` runs ``R`` replicas of the whole model, each on as few
accelerators as its tiles need (its stages run one after the other: schedule ``none``,
:math:`2MB` cycles per step of ``B`` micro-batches), averaged every ``P`` steps; ``hybrid`` runs
``R`` replicas of an ``M``-stage synchronous pipeline (:math:`2(B + M - 1)` cycles per step),
``R x M`` accelerators, period ``P``.
Cycles per step come from :func:`theory.schedules.cycles_after`.

**Averaging** (:func:`averaging_time_s`). Every accelerator of a replica averages its stage with
the same stage of the other replicas, all stages at once; the slowest stage sets the time:

- analog stage: *read* every tile, one row per MVM with a one-hot input (tiles in parallel, as
  the timing rule assumes for MVMs): :math:`r\,t_\mathrm{read}`; *combine* digitally over the link
  by a ring all-reduce of the stage's weights, :math:`2\frac{R-1}{R} N\,\mathrm{bytes}/
  \mathrm{bandwidth}`; *program* the mean back row by row with closed-loop pulses, each row at most
  :math:`n_p = \lceil 2W_{\max}/\Delta w_{\min}\rceil` pulses (a full-range write) and one verify
  read: :math:`r\,(n_p t_\mathrm{pulse} + t_\mathrm{read})` (both phases:
  :func:`theory.local_sgd.averaging_phases`, shared with the simulator). Each phase is rounded up
  to whole periods of the kind's clock.
- digital stage: one pass over its weights (:math:`N t_\mathrm{upd}`) and the same all-reduce.

**Programming noise** (:func:`programming_noise`): closed-loop programming stops within one
pulse of the target, so the error of a weight is at most the last pulse: uniform quantisation
:math:`\Delta w_{\min}^2/12` plus that pulse's cycle-to-cycle noise
:math:`(\Delta w_{\min}\sigma_c)^2` (``dw_min_std``); :math:`\nu` sums it over the analog weights
(digital weights are averaged exactly); a kind's ``programming_error_std`` replaces the
per-weight value. It enters the ``literature`` local-SGD row of :mod:`theory.local_sgd` as
:math:`L\nu/(\alpha q_{\min} P)`; with the row's step cap :math:`\alpha P \le 1/(2L)` this is at
least :math:`2L^2\nu/q_{\min}` whatever the period: a floor that grows with the analog weights
averaged (in the problem's weight units, like ``W_max``).

**Mixed stages** (:func:`stage_guarantee`, the one hook of the guarantee of a pipeline with
stages on different kinds; the kinds planner calls nothing else for it). Stages whose constants
differ (analog and digital, or two analog kinds) get **Theorem 2M** (the registry's
``analog_sgd_sp_mixed``, ``analog_sgd_ap_mixed``, :func:`theory.complexity.evaluate_guarantee`
with ``algorithm="mixed"``) at the per-stage constants of :func:`stage_values`: each analog
stage its kind's :math:`(q_{\min,m}, q_{\max,m}, G_{\infty,m})`, each digital stage
:math:`(1, 1, 0)`, and the noise shares :math:`s_m = N_m/N`, the stage's share of the weights
(A2M under isotropic gradient noise: exact for the oracle problems, an **assumption** for
networks, stated in :data:`MIXED_NOTE`), aggregated by :func:`theory.mixed.mixed_constants`:
:math:`q = \min_m q_{\min,m}`, :math:`p = \max_m q_{\max,m}`, :math:`\overline{p^2} = \sum_m
s_m q_{\max,m}^2`, :math:`\overline{G^2} = \sum_m s_m G_{\infty,m}^2`. Stages on one kind get
Theorem 2 / Corollary 3 / Theorem 4' at that kind's constants (Theorem 2M reduces to them
exactly), and digital stages only :math:`q = 1`, :math:`G = 0`.

Without the stage weights (or for the local-SGD estimates of ``dp`` and ``hybrid``, whose row
has no block-wise form) the constants are :func:`guarantee_values`, those of A3 over *all*
coordinates: :math:`q_{\min} = \min(1, \min_\text{analog} q_{\min})`,
:math:`q_{\max} = \max(1, \max_\text{analog} q_{\max})`, :math:`G_\infty = \max G_\infty`
(:data:`CONSERVATIVE_NOTE`). That is Theorem 2M at the worst shares (:math:`\overline{p^2} \le
p^2`, :math:`\overline{G^2} \le G_\infty^2` for any shares), so Theorem 2M's iterations are never
more (a property test).
"""

from __future__ import annotations

import numpy as np

from theory.complexity import REACHABLE, ComplexityResult, evaluate_guarantee, fewest_iterations
from theory.errors import ParameterError
from theory.local_sgd import averaging_phases, full_range_pulses
from theory.mixed import Block, digital_block, mixed_constants

from ..evaluation import theory_values
from ..params import ProblemParams
from ..timing import ROUNDING_SLACK
from .hardware import AcceleratorKind

__all__ = [
    "CONSERVATIVE_NOTE",
    "MIXED_NOTE",
    "averaging_time_s",
    "guarantee_values",
    "programming_noise",
    "stage_averaging_time_s",
    "stage_guarantee",
    "stage_values",
]

#: what the dp / hybrid estimates of mixed analog/digital stages use (no block-wise local SGD)
CONSERVATIVE_NOTE = (
    "mixed analog/digital stages of an estimate: the local-SGD row at the A3 constants over all "
    "coordinates (q_min = min(1, analog q_min), q_max = max(1, analog q_max), G_inf = analog "
    "G_inf; bounds.modes.guarantee_values)"
)
#: what the guarantee of a pipeline with stages on different kinds relies on (Theorem 2M)
MIXED_NOTE = (
    "stages on different kinds: Theorem 2M (analog_sgd_sp_mixed, analog_sgd_ap_mixed) with each "
    "stage's own constants and noise shares s_m = the stage's share of the weights (A2M with "
    "isotropic gradient noise: exact for the oracle problems, an assumption for networks), or "
    "the all-coordinate guarantee where it needs fewer iterations"
)


def guarantee_values(kinds: list[AcceleratorKind], problem: ProblemParams) -> dict[str, float]:
    """The A3 constants over all coordinates of stages on ``kinds`` (share-free).

    Parameters
    ----------
    kinds : list of AcceleratorKind
        The kinds of the stages (repeats allowed).
    problem : ProblemParams

    Returns
    -------
    dict
        ``theory_values``-style constants ``L, L_s, Delta, sigma2, theta, q_min, q_max, G_inf``
        (module docstring: Theorem 2M at the worst noise shares for mixed stages; the
        dp / hybrid estimates use them, :func:`stage_values` starts from them).
    """
    analog = [k for k in kinds if k.analog]
    digital = any(not k.analog for k in kinds)
    if not kinds:
        raise ParameterError("kinds=[] is empty; valid: the kinds of at least one stage")
    if not analog:
        base = {"L": problem.L, "L_s": problem.L_s, "Delta": problem.Delta,
                "sigma2": problem.sigma2, "theta": problem.theta}
        return base | {"q_min": 1.0, "q_max": 1.0, "G_inf": 0.0}
    values = [theory_values(k.hardware, problem) for k in analog]
    out = dict(values[0])
    out["q_min"] = min(v["q_min"] for v in values)
    out["q_max"] = max(v["q_max"] for v in values)
    out["G_inf"] = max(v["G_inf"] for v in values)
    if digital:
        out["q_min"] = min(out["q_min"], 1.0)
        out["q_max"] = max(out["q_max"], 1.0)
    return out


def stage_values(kinds: list[AcceleratorKind], problem: ProblemParams,
                 weights=None) -> tuple[dict[str, float], str]:
    r"""The constants and the algorithm of the guarantee of stages on ``kinds`` (module docstring).

    Parameters
    ----------
    kinds : list of AcceleratorKind
        Kind of every stage, stage 1 first.
    problem : ProblemParams
    weights : sequence of float, optional
        Weights of every stage (the noise shares :math:`s_m = N_m/N` of Theorem 2M). None: the
        all-coordinate constants of :func:`guarantee_values`.

    Returns
    -------
    (dict, str)
        The values by symbol name and ``"mixed"`` (Theorem 2M: stages whose constants differ,
        with ``weights``; adds ``p2_bar``, ``G2_bar``) or ``"analog"`` (one kind's constants,
        digital stages only :math:`q = 1`, :math:`G = 0`, or no ``weights``).
    """
    values = guarantee_values(kinds, problem)
    if weights is None:
        return values, "analog"
    weights = [float(w) for w in weights]
    if len(weights) != len(kinds) or min(weights, default=0) < 0 or sum(weights) <= 0:
        raise ParameterError(f"weights={weights!r}: one non-negative count per stage, not all 0")
    blocks = []
    for kind, share in zip(kinds, (w / sum(weights) for w in weights), strict=True):
        if kind.analog:
            v = theory_values(kind.hardware, problem)
            blocks.append(Block(v["q_min"], v["q_max"], v["G_inf"], share))
        else:
            blocks.append(digital_block(share))
    if len({(x.q_min, x.q_max, x.G_inf) for x in blocks}) == 1:
        return values, "analog"
    mixed = mixed_constants(blocks)
    return values | mixed.values(), "mixed"


def stage_guarantee(mode: str, eps: float, kinds: list[AcceleratorKind], problem: ProblemParams,
                    on_unreachable: str = "status", weights=None, **grid) -> ComplexityResult:
    """The proved iterations of a ``mode`` pipeline whose stages run on ``kinds`` (the hook).

    :func:`theory.complexity.evaluate_guarantee` at :func:`stage_values`: Theorem 2M for stages
    on different kinds with their ``weights``, else Theorem 2 / Corollary 3 / Theorem 4' (module
    docstring). With ``weights`` on different kinds, the fewer iterations of Theorem 2M and of the
    all-coordinate guarantee (:func:`theory.complexity.fewest_iterations`): both are proved, and
    Theorem 2M (c) builds on Theorem 4', so at a small delay the all-coordinate Theorem 4'B can
    need fewer.

    Parameters
    ----------
    mode : {"sync", "async"}
    eps : float
    kinds : list of AcceleratorKind
        Kind of every stage, stage 1 first.
    problem : ProblemParams
    on_unreachable : str
        As for :func:`theory.complexity.evaluate_complexity`.
    weights : sequence of float, optional
        Weights of every stage (Theorem 2M's noise shares); None: the all-coordinate constants.
    **grid
        ``b``, ``M`` and (sync) ``B``, arrays broadcast.
    """
    values, algorithm = stage_values(kinds, problem, weights)
    if algorithm != "mixed":
        return evaluate_guarantee(mode, eps, algorithm=algorithm, on_unreachable=on_unreachable,
                                  **values, **grid)
    whole, _ = stage_values(kinds, problem)
    best = fewest_iterations([
        evaluate_guarantee(mode, eps, algorithm=a, on_unreachable="status", **v, **grid)
        for v, a in ((values, algorithm), (whole, "analog"))])
    if on_unreachable == "raise" and np.any(np.asarray(best.status) != REACHABLE):
        evaluate_guarantee(mode, eps, algorithm=algorithm, **values, **grid)  # raises
    return best


def programming_noise(kind: AcceleratorKind, weights) -> np.ndarray:
    r""":math:`\nu` of one averaging of ``weights`` weights on ``kind`` (0 for digital).

    :math:`\nu = N\,\Delta w_{\min}^2(1/12 + \sigma_c^2)` (module docstring), weight units
    squared; :math:`N s^2` when the kind gives ``programming_error_std`` :math:`s`.
    """
    if not kind.analog:
        return np.zeros_like(np.asarray(weights, dtype=float))
    device = kind.hardware.device
    per_weight = device.dw_min**2 * (1 / 12 + device.dw_min_std**2)
    if kind.programming_error_std is not None:
        per_weight = kind.programming_error_std**2
    return np.asarray(weights, dtype=float) * per_weight


def _clock(seconds, clock_hz: float):
    return np.ceil(np.asarray(seconds, dtype=float) * clock_hz * (1 - ROUNDING_SLACK)) / clock_hz


def stage_averaging_time_s(kind: AcceleratorKind, weights, replicas, link_bytes_per_s: float,
                           bytes_per_weight: int):
    """Seconds to average one stage of ``weights`` weights over ``replicas`` (module docstring).

    Vectorised over ``weights`` and ``replicas``; 0 for one replica.
    """
    weights = np.asarray(weights, dtype=float)
    replicas = np.asarray(replicas, dtype=float)
    share = np.where(replicas > 1, 2 * (replicas - 1) / np.maximum(replicas, 1), 0.0)
    reduce_s = share * weights * bytes_per_weight / link_bytes_per_s
    if kind.analog:
        h = kind.hardware
        rows = h.tile_rows
        pulses = full_range_pulses(2 * h.weight_bound, h.device.dw_min)
        clk = h.clock_hz
        read_s, program_s = averaging_phases(rows, pulses, h.read_time_s, h.pulse_width_s)
        local = _clock(read_s, clk) + _clock(program_s, clk)
        reduce_s = _clock(reduce_s, clk)
    else:
        local = _clock(weights * kind.update_time_per_weight_s, kind.clock_hz)
        reduce_s = _clock(reduce_s, kind.clock_hz)
    return np.where(replicas > 1, local + reduce_s, 0.0)


def averaging_time_s(stage_kinds: list[AcceleratorKind], stage_weights, replicas: int,
                     link_bytes_per_s: float, bytes_per_weight: int) -> float:
    """Seconds of one averaging of ``replicas`` replicas: the slowest stage's."""
    if replicas <= 1:
        return 0.0
    return max(float(stage_averaging_time_s(k, w, replicas, link_bytes_per_s, bytes_per_weight))
               for k, w in zip(stage_kinds, stage_weights, strict=True))
