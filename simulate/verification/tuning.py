r"""Step-size tuning and time to target: the protocol of the speedup study (issue 15).

One **arm** is a training configuration whose step is to be tuned (a mode, a stage count ``M``
and everything else of a :class:`~simulate.config.SimConfig` but ``lr``). Every arm is run at
every step of one log-spaced **grid**, with the same sample budget and the same seeds (ensemble
members ``0 .. R-1`` of root seed 0: seed ``r`` of every arm starts from the same weights and, for
equal micro-batch sizes, draws the same batches), through one cached sweep
(:func:`simulate.execution.sweep.run_sweep` of :func:`study_run`, which scales out on Dask).

**Time to target.** A :class:`Target` is a test accuracy to reach (``>=``) or a training loss to
reach (``<=``). A run's time to it is the first logging point at which the measured curve has
reached it, in updates ``K`` and in clock cycles of the arm's schedule
(:func:`simulate.pipeline.staleness.cycles_after`: ``2MBK`` none, ``2(B + M - 1)K`` sync,
``2(K + M - 1)`` async). A seed that never reaches it (or diverged) is **censored**: its time is
the budget's (the last update), and it is counted in the fraction reached; it is never dropped.

**Choice of the step** (:func:`choose_step`). For each arm and target, the step of the grid with
the smallest median time over the seeds, measured on the **validation** images (accuracy
targets, on every validation image at every logging point; the training loss for a loss target,
which has no held-out version: measured on the fixed subset of ``CURVE_SPEC.loss_rows`` = 256
training images before the last logging point, :func:`simulate.problems.digits.loss_subset`);
ties (e.g. every median censored) go to the larger fraction reached, then to the smaller step.
The reported time is that step's time on the **test** images (the same runs, measured on both).

**Speedup and interval** (:func:`speedup_interval`). The speedup of an arm over a baseline is the
ratio of their median times, :math:`\operatorname{med}_r T^{\mathrm{base}}_r /
\operatorname{med}_r T_r`, in cycles, each at its own chosen step. Its interval is a paired
percentile bootstrap over seeds (the resamples of
:func:`simulate.verification.stats.resample_counts`,
:data:`~simulate.verification.stats.BOOTSTRAP_RESAMPLES` of them, from
:func:`simulate.rng.bootstrap_generator`, so it has the same bits every time; the central
:data:`~simulate.verification.stats.CI_LEVEL` interval): resample ``j`` takes each seed's pair
of times ``counts[j, r]`` times. When more than half of either side's seeds are censored, its median
is the budget and the ratio is only a bound (:attr:`Speedup.status`: ``"upper bound"`` when the arm
is censored, ``"lower bound"`` when the baseline is, ``"censored"`` when both are).

**Sharpness.** :func:`initial_sharpness` estimates the largest eigenvalue
:math:`\lambda_{\max}` of the Hessian of the training loss with respect to the analog weights at
a run's initial weights (power iteration on central finite differences of the gradient): full-batch
gradient descent is stable near :math:`W_0` only for steps below :math:`2/\lambda_{\max}`, the
scale a grid must straddle.

**Divergence.** :func:`study_run` trains the seeds of a point as one ensemble; when it diverges
(:class:`theory.errors.DivergenceError`), the members are split in halves and retried, so only
the seeds that diverge are lost: each is marked (``diverged``, the update it diverged at) and
counts as reaching no target.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from theory.errors import DivergenceError, ParameterError, check_range

from ..config import SimConfig, device_from_config
from ..device import PinnedWarning
from ..pipeline import cycles_after
from ..problems import CURVE_SPEC, Network, NetworkSpec, load_digits_data, train_network
from ..rng import bootstrap_generator, member_generators
from ..trace import log_steps
from .stats import BOOTSTRAP_RESAMPLES, percentile_interval, resample_counts

__all__ = [
    "STUDY_FORMAT", "Speedup", "Target", "TimeToTarget", "Tuned", "choose_step",
    "initial_sharpness", "log_grid", "sharpness_run", "speedup_interval", "study_point",
    "study_run", "time_to_target", "tune",
]

#: bumped when the meaning of a cached :func:`study_run` result changes (part of every point);
#: 2: the training loss before the last logging point is measured on the loss subset
STUDY_FORMAT = 2
#: target kinds: the curve a target reads for the choice and for the report, and its direction
_KINDS = {"accuracy": ("validation_accuracy", "test_accuracy", 1.0),
          "loss": ("loss", "loss", -1.0)}


def log_grid(center: float, below: int, above: int, factor: float = 2.0) -> tuple[float, ...]:
    """The log-spaced grid ``center * factor**k`` for ``k = -below .. above``."""
    check_range("center", center, 0, None, low_open=True)
    check_range("factor", factor, 1, None, low_open=True)
    check_range("below", below, 0, None, integer=True)
    check_range("above", above, 0, None, integer=True)
    return tuple(float(center * factor ** k) for k in range(-below, above + 1))


@dataclass(frozen=True)
class Target:
    """A target of the study: a test accuracy to reach, or a training loss to get below.

    Parameters
    ----------
    kind : {"accuracy", "loss"}
    value : float
        Accuracy in (0, 1), or loss in nats (> 0).
    """

    kind: str
    value: float

    def __post_init__(self):
        if self.kind not in _KINDS:
            raise ParameterError(f"kind={self.kind!r} is unknown; valid: {', '.join(_KINDS)}")
        if self.kind == "accuracy":
            check_range("value", self.value, 0, 1, low_open=True, high_open=True)
        else:
            check_range("value", self.value, 0, None, low_open=True)

    @property
    def label(self) -> str:
        """``"85% accuracy"`` or ``"loss 0.3"``."""
        if self.kind == "accuracy":
            return f"{100 * self.value:g}% accuracy"
        return f"loss {self.value:g}"

    @property
    def select_curve(self) -> str:
        """The curve the step is chosen on (``validation_accuracy`` or ``loss``)."""
        return _KINDS[self.kind][0]

    @property
    def report_curve(self) -> str:
        """The curve the time is reported on (``test_accuracy`` or ``loss``)."""
        return _KINDS[self.kind][1]

    def reached(self, curve: np.ndarray) -> np.ndarray:
        """Where ``curve`` has reached the target (``nan`` never has)."""
        curve = np.asarray(curve, dtype=float)
        with np.errstate(invalid="ignore"):
            return curve >= self.value if self.kind == "accuracy" else curve <= self.value


@dataclass(frozen=True)
class TimeToTarget:
    """Per-seed time to a target of one run (:func:`time_to_target`).

    Attributes
    ----------
    updates : ndarray of int, shape (R,)
        Updates until the first logging point at the target; the budget where not reached.
    cycles : ndarray of int, shape (R,)
        The same in clock cycles of the run's schedule.
    reached : ndarray of bool, shape (R,)
    """

    updates: np.ndarray
    cycles: np.ndarray
    reached: np.ndarray

    @property
    def fraction(self) -> float:
        """Fraction of the seeds that reached the target."""
        return float(np.mean(self.reached))

    @property
    def median(self) -> float:
        """Median time in cycles over seeds (censored seeds at the budget)."""
        return float(np.median(self.cycles))


def time_to_target(curves: np.ndarray, steps: np.ndarray, target: Target, mode: str,
                   stages: int, micro_batches: int) -> TimeToTarget:
    """Per-seed first logging point at which ``curves`` reached ``target``, censored at the end.

    Parameters
    ----------
    curves : ndarray, shape (R, T)
        The measured curve of each seed at the logging points (``nan`` rows: diverged seeds).
    steps : ndarray of int, shape (T,)
        Update index of each logging point (the last is the budget).
    target : Target
    mode, stages, micro_batches
        The schedule the cycles are counted on (:func:`simulate.pipeline.staleness.cycles_after`); a
        ``none`` run may be counted on any number of stages.
    """
    hit = target.reached(curves)
    steps = np.asarray(steps, dtype=np.int64)
    reached = hit.any(axis=1)
    updates = np.where(reached, steps[np.argmax(hit, axis=1)], steps[-1])
    cycles = cycles_after(mode, stages, micro_batches, updates)
    return TimeToTarget(updates=updates.astype(np.int64),
                        cycles=np.asarray(cycles, dtype=np.int64), reached=reached)


@dataclass(frozen=True)
class Tuned:
    """The outcome of tuning one arm for one target (:func:`tune`).

    Attributes
    ----------
    step : float
        The chosen step (a grid value).
    time : TimeToTarget
        The per-seed times at that step on the report curve (test accuracy or training loss).
    selection : dict
        Grid step -> ``(median cycles, fraction reached)`` on the selection curve.
    """

    step: float
    time: TimeToTarget
    selection: dict


def choose_step(selection: Mapping[float, TimeToTarget]) -> float:
    """The step with the smallest median time; ties: larger fraction reached, then smaller step."""
    if not selection:
        raise ParameterError("selection={} is empty; valid: one or more grid steps")
    return min(selection, key=lambda lr: (selection[lr].median, -selection[lr].fraction, lr))


def tune(runs: Mapping[float, Mapping], target: Target, mode: str, stages: int,
         micro_batches: int) -> Tuned:
    """Choose the step of one arm for ``target`` on its selection curve, report its test time.

    Parameters
    ----------
    runs : mapping
        Grid step -> the :func:`study_run` result of the arm at that step (same seeds, same
        budget at every step).
    target : Target
    mode, stages, micro_batches
        The schedule the cycles are counted on (``micro_batches`` is ``B`` for none and sync).
    """
    def times(result, curve):
        return time_to_target(result[curve], result["step"], target, mode, stages, micro_batches)

    selection = {float(lr): times(result, target.select_curve) for lr, result in runs.items()}
    step = choose_step(selection)
    return Tuned(step=step, time=times(runs[step], target.report_curve),
                 selection={lr: (t.median, t.fraction) for lr, t in selection.items()})


@dataclass(frozen=True)
class Speedup:
    """A speedup over a baseline with its bootstrap interval (:func:`speedup_interval`).

    Attributes
    ----------
    value : float
        ``median(base cycles) / median(arm cycles)``.
    low, high : float
        The bootstrap interval.
    status : str
        ``"ok"``; ``"upper bound"`` (the arm's median is censored), ``"lower bound"`` (the
        baseline's is) or ``"censored"`` (both).
    resamples : int
    """

    value: float
    low: float
    high: float
    status: str
    resamples: int


def _weighted_medians(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Median of ``values`` repeated ``counts[j]`` times, for every row ``j`` of ``counts``
    (each row's total at least 1).

    ``numpy.median`` of the repeated values, all rows at once: in sorted order, the value at
    position ``(n - 1) // 2`` where the row's total ``n`` is odd, else the mean
    ``(a + b) / 2`` of those at ``n / 2 - 1`` and ``n / 2`` (numpy's operations, so its bits);
    ``nan`` values take numpy's median row by row.
    """
    values, counts = np.asarray(values, dtype=float), np.asarray(counts)
    if np.isnan(values).any():
        return np.array([np.median(np.repeat(values, row)) for row in counts])
    order = np.argsort(values, kind="stable")
    ranked, cum = values[order], np.cumsum(counts[:, order], axis=1)
    total = cum[:, -1:]
    low = np.sum(cum <= (total - 1) // 2, axis=1)  # the first value whose run covers the position
    high = np.sum(cum <= total // 2, axis=1)
    return np.where(low == high, ranked[low], (ranked[low] + ranked[high]) / 2.0)


def speedup_interval(base: TimeToTarget, arm: TimeToTarget, seed: int = 0) -> Speedup:
    """Ratio of median times, base over arm, with a paired percentile bootstrap over seeds.

    Seed ``r`` of ``base`` and of ``arm`` is resampled together (module docstring).
    """
    if base.cycles.shape != arm.cycles.shape:
        raise ParameterError(
            f"arm seeds={arm.cycles.size} differ from the baseline's {base.cycles.size}; valid: "
            "the same seeds for both (a paired bootstrap)"
        )
    b, a = base.cycles.astype(float), arm.cycles.astype(float)
    ratios = np.concatenate([_weighted_medians(b, counts) / _weighted_medians(a, counts)
                             for counts in resample_counts(bootstrap_generator(seed), b.size)])
    low, high = percentile_interval(ratios)
    censored_arm, censored_base = arm.fraction <= 0.5, base.fraction <= 0.5
    status = {(False, False): "ok", (True, False): "upper bound", (False, True): "lower bound",
              (True, True): "censored"}[censored_arm, censored_base]
    return Speedup(value=base.median / arm.median, low=float(low), high=float(high),
                   status=status, resamples=BOOTSTRAP_RESAMPLES)


def study_point(config: SimConfig) -> dict:
    """The sweep point of one arm at one step (all its seeds: ``config.seeds`` members)."""
    return {"config": config.to_dict(), "format": STUDY_FORMAT}


def _train(config: SimConfig, members: Sequence[int], out: dict) -> None:
    """Train ``members`` as one ensemble; on divergence, halve and retry (module docstring)."""
    try:
        run = train_network(config, members=members, spec=CURVE_SPEC)
    except DivergenceError as error:
        if len(members) == 1:
            out[members[0]] = int(error.step)
            return
        half = len(members) // 2
        _train(config, members[:half], out)
        _train(config, members[half:], out)
        return
    validation = run.validation_accuracy
    for row, member in enumerate(members):
        out[member] = {
            "test_accuracy": run.trace.test_accuracy[row], "loss": run.trace.loss[row],
            "validation_accuracy": (np.full(run.trace.step.size, np.nan) if validation is None
                                    else validation[row]),
            "step": run.trace.step, "samples": run.trace.samples,
        }


def study_run(point: Mapping) -> dict:
    """Sweep function: train every seed of one arm at one step; per-seed curves.

    ``point = {"config": SimConfig.to_dict() (a digits network; seeds = R), "format":
    STUDY_FORMAT}``. The network is the default :class:`~simulate.problems.network.NetworkSpec`
    measured as :data:`~simulate.problems.network.CURVE_SPEC` (every test and validation image
    at every point, the training loss on 256 images before the last, no gradient norm).

    Returns
    -------
    dict
        ``step`` and ``samples`` (int arrays, shape (T,)); ``test_accuracy``,
        ``validation_accuracy`` (``nan`` for data without validation images) and ``loss``
        (nats) of shape (R, T), ``nan`` rows for diverged seeds; ``diverged`` (R,): the update
        at which a seed diverged, -1 if it did not; ``pinned``: 1 if the run warned that its
        weights sat at the device bounds.
    """
    config = SimConfig(**point["config"])
    members = list(range(config.seeds))
    out: dict = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PinnedWarning)
        _train(config, members, out)
    ok = [m for m in members if isinstance(out[m], dict)]
    if ok:
        step, samples = out[ok[0]]["step"], out[ok[0]]["samples"]
    else:  # every seed diverged: the logging points the run would have had
        step = log_steps(config.steps, config.log_period)
        samples = step * config.samples_per_update
    nan = np.full(step.size, np.nan)
    result = {"step": np.asarray(step, dtype=np.int64),
              "samples": np.asarray(samples, dtype=np.int64)}
    for curve in ("test_accuracy", "validation_accuracy", "loss"):
        result[curve] = np.stack([out[m][curve] if m in ok else nan for m in members])
    result["diverged"] = np.array([-1 if m in ok else out[m] for m in members], dtype=np.int64)
    result["pinned"] = int(any(issubclass(w.category, PinnedWarning) for w in caught))
    return result


def initial_sharpness(config: SimConfig, member: int = 0, iterations: int = 30,
                      spec: NetworkSpec | None = None, h: float = 1e-4) -> float:
    r"""Largest Hessian eigenvalue of the training loss at a network run's initial weights.

    .. math:: \lambda_{\max} = \max_{\lVert v\rVert = 1} v^\top \nabla^2_W L(W_0)\, v, \qquad
              \nabla^2_W L\, v \approx \frac{\nabla_W L(W_0 + hv) - \nabla_W L(W_0 - hv)}{2h}

    by ``iterations`` steps of power iteration from a fixed random direction (biases held at
    their initial zeros; the loss over the training rows of ``config.data``). ``W_0`` is the
    initial weights of ensemble member ``member`` of ``config`` (root seed ``config.seed``),
    the same draws as :func:`simulate.problems.network_run.train_network`. Units: loss per weight
    unit squared; full-batch gradient descent is stable near ``W_0`` for ``lr < 2 / lambda_max``.
    """
    spec = NetworkSpec() if spec is None else spec
    check_range("iterations", iterations, 1, None, integer=True)
    check_range("h", h, 0, None, low_open=True)
    data = load_digits_data(config.data)
    network = Network.build(config.problem, spec, 1, data.n_features, data.n_classes)
    device = device_from_config(config)
    streams = member_generators(config.seed, [member])
    w, c = network.init(streams["data"], spec.init_fraction * device.w_min,
                        spec.init_fraction * device.w_max)

    def gradient(weights):
        gw, gc = np.empty_like(weights), np.empty_like(c)
        views = network.views(weights, c)
        network.gradient(data.x_loss, data.y_loss, views, [v.weights for v in views],
                         network.views(gw, gc))
        return gw

    v = streams["noise"][0].standard_normal(w.shape)
    v /= np.linalg.norm(v)
    value = 0.0
    for _ in range(iterations):
        hv = (gradient(w + h * v) - gradient(w - h * v)) / (2 * h)
        value = float(np.sum(hv * v))
        v = hv / np.linalg.norm(hv)
    return value


def sharpness_run(point: Mapping) -> dict:
    """Sweep function of :func:`initial_sharpness`: ``point = {"config": SimConfig.to_dict(),
    "format": STUDY_FORMAT}`` (member 0 of root seed ``config.seed``); returns ``lambda_max``."""
    return {"lambda_max": initial_sharpness(SimConfig(**point["config"]))}
