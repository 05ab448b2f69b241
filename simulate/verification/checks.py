r"""Pair the registry's bounds with simulation on the oracle problems (issue 5).

For a registry entry and a :class:`~simulate.config.SimConfig` on an oracle problem (quadratic or
least squares, where A1-A4 hold exactly with :math:`L_s = L`), :func:`check_bound` runs the ``R``
seeds of the configuration with :func:`simulate.engine.run` and compares

.. math::

    \hat e = \frac1R\sum_{r=1}^R \frac1K\sum_{k=0}^{K-1}\lVert\nabla f(W_k^{(r)})\rVert^2,
    \qquad \mathrm{se} = \frac{s_R}{\sqrt R}

(the engine's exact average over **every** iterate, ``Trace.avg_grad_norm2``; :math:`s_R` the
sample standard deviation over seeds) with the bound evaluated at ``K = steps``, ``alpha = lr`` and
the constants that held in the run:

- ``L``, ``Delta``, ``sigma2`` of the problem (exact); ``L_s = L`` (oracle signal);
- ``n = B b`` (none, sync), ``b`` and ``B`` from the configuration, ``D`` the schedule's maximal
  forward delay (``M - 1`` for async);
- ``q_min``, ``q_max``, ``G_inf`` from :meth:`theory.devices.Device.constants` on the interval
  ``[min_r w_min_visited, max_r w_max_visited]`` the ensemble visited (assumption A3; with
  per-sample writes the weights between the writes of one update are visited too);
- ``mixed`` runs (Theorem 2M): those device constants on every analog stage, ``(1, 1, 0)`` on the
  stages of ``digital_stages``, noise shares :math:`d_m/d`, aggregated by
  :func:`theory.mixed.mixed_constants` into ``q_min``, ``q_max``, ``p2_bar``, ``G2_bar``;
- the local-floor rows (Theorem LF, ``*_local``): ``G2_iter``, the ensemble mean of
  :math:`\lVert G(W_k)\rVert_\infty^2` over the iterates, measured along the same run
  (:func:`simulate.verification.local_floor.run_measuring_g2`, the same bits as
  :func:`simulate.engine.run`; assumption A2S).

**Write semantics.** An analog entry is checked on runs with its own write semantics
(``Bound.write``; :func:`config_for` sets it): Theorem 2 and Corollary 3 on batch-mean writes,
Corollary 3PS (``analog_sgd_per_sample``, ``analog_sgd_sp_per_sample``) on per-sample writes.

**Tiki-Taka.** The derived Tiki-Taka entries (``tiki_taka_reset``, ``tiki_taka_reset_sp``,
Corollary TT0; their ``_per_sample`` rows, Corollary TT0PS, on per-sample runs only) are checked
on their variant only (:data:`TT0_SETTINGS`: ``tt_gamma = 0``, slice ``all``, a digital fast
buffer, reset after each transfer; :func:`config_for` sets it) with ``K`` a multiple of ``T``;
``T = transfer_every`` and ``rho = transfer_lr`` are plugged in and the device constants are
C's, on the region C visited (the effective weight is C at ``gamma = 0``).

**Gradient bias.** A run with ``grad_bias`` :math:`= \beta > 0` (the oracle signal plus a fixed
bias of norm :math:`\beta`, :func:`simulate.problems.oracle_run.gradient_bias`) is checked against
the biased-gradient entries ``analog_sgd_biased`` and ``analog_sgd_biased_sharp`` (Propositions IO
and IO', ``Bound.gradient = "biased"``) with ``beta`` the injected norm; the unbiased entries refuse
it (A2 does not hold).

**Choice of theta.** The theorems hold for every :math:`\theta \in (0, 1)` whose step cap admits
the step; the check uses the tightest admissible bound, :func:`theory.admissible.tightest_theta`
(a :class:`ParameterError` when no :math:`\theta` admits the step with the constants that held).

The one-sided check passes when :math:`\hat e \le \mathrm{bound} + z\,\mathrm{se}` (``z = 4`` by
default); ``ratio = bound / empirical`` measures tightness (>= 1: the bound holds on average).

Every check also reads the bound as a prediction (:attr:`Check.prediction`,
:mod:`simulate.verification.prediction`): clock cycles to a target ``eps`` at the run's step,
guaranteed against simulated, with a bootstrap interval over seeds. For it the run logs every
iterate; the iterates, their average and the visited region do not depend on the logging, so the
check's numbers are those of a run logged once.

Also here: :func:`empirical_floor` (asymptotic error of a long run) and :func:`cycles_to_eps`
(clock cycles until the running average of :math:`\lVert\nabla f\rVert^2` reaches ``eps``, with the
prediction of :func:`theory.admissible.predicted_guarantee`). The suites of checks are the case
tables of :mod:`simulate.verification.suites`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from theory.admissible import compiled_bound, predicted_guarantee, step_cap, tightest_theta
from theory.errors import ParameterError, check_range
from theory.mixed import digital_block, mixed_constants, shares_from_sizes
from theory.schedules import write_delay
from theory.theorems import bound_for, get_bound, names, registry

from ..config import SimConfig, device_from_config
from ..engine import run
from ..pipeline import cycles_after, forward_delays
from ..problems import ORACLE_PROBLEMS, W_STAR_SCALE, make_problem, stage_blocks
from ..trace import Trace
from .local_floor import run_measuring_g2
from .prediction import Prediction, predict
from .stats import one_sided_pass, standard_error

__all__ = [
    "CHECKABLE",
    "Check",
    "CyclesToEps",
    "FloorEstimate",
    "TT0_SETTINGS",
    "check_bound",
    "check_bounds",
    "config_for",
    "cycles_to_eps",
    "empirical_floor",
    "region_step_cap",
]

#: registry entries checkable on the oracle problems: the derived ones (their algorithm and
#: pipeline mode are the entry's own ``Bound.algorithm`` and ``Bound.mode``)
CHECKABLE: tuple[str, ...] = names("derived")

#: the SimConfig settings of Corollary TT0's Tiki-Taka variant (the derived tiki-taka entries)
TT0_SETTINGS: dict = {"tt_gamma": 0.0, "transfer_slice": "all", "fast_device": "digital",
                      "transfer_reset": True}

#: cycles_to_eps simulates this many updates first, doubling until every seed reaches eps
_FIRST_STEPS = 512


def _require_verifiable(name: str) -> None:
    get_bound(name)  # unknown names: ParameterError listing the registry
    if name not in CHECKABLE:
        raise ParameterError(
            f"bound={name!r} cannot be checked on the oracle problems; valid: "
            f"{', '.join(CHECKABLE)}"
        )


# ------------------------------------------------------------------------------------------------
# configurations and constants


def config_for(name: str, **settings) -> SimConfig:
    """A :class:`SimConfig` for bound ``name``: its algorithm and mode, ``settings`` for the rest.

    ``update`` defaults to ``"expected"`` (the analog update the theorems analyse) and ``write``
    to the entry's write semantics (``per-sample`` for Corollary 3PS); a Tiki-Taka entry gets
    :data:`TT0_SETTINGS` (Corollary TT0's variant) by default.
    """
    _require_verifiable(name)
    bound = get_bound(name)
    settings.setdefault("update", "expected")
    settings.setdefault("write", bound.write)
    if bound.algorithm == "tiki-taka":
        for key, value in TT0_SETTINGS.items():
            settings.setdefault(key, value)
    return SimConfig(algorithm=bound.algorithm, mode=bound.mode, **settings)


def _validate(name: str, config: SimConfig) -> None:
    _require_verifiable(name)
    bound = get_bound(name)
    want = (bound.algorithm, bound.mode)
    if (config.algorithm, config.mode) != want:
        raise ParameterError(
            f"{name} describes algorithm={want[0]!r}, mode={want[1]!r}; the config has "
            f"algorithm={config.algorithm!r}, mode={config.mode!r} (use config_for)"
        )
    if config.algorithm in ("analog", "tiki-taka") and config.write != bound.write:
        raise ParameterError(
            f"write={config.write!r}: {name} is proved for write={bound.write!r} (use config_for, "
            "or the entry of the config's write semantics, theory.theorems.bound_for)"
        )
    if config.grad_bias != 0 and bound.gradient == "unbiased":
        biased = [x for x, bd in registry().items() if bd.gradient != "unbiased"]
        raise ParameterError(
            f"grad_bias={config.grad_bias:g}: {name} assumes an unbiased gradient (A2); valid: "
            f"grad_bias=0, or a biased-gradient entry ({', '.join(biased)})"
        )
    if config.problem not in ORACLE_PROBLEMS:
        raise ParameterError(
            f"problem={config.problem!r}: bounds are checked on {', '.join(ORACLE_PROBLEMS)} only "
            "(where A1-A4 hold exactly)"
        )
    if config.algorithm == "tiki-taka":
        for key, value in TT0_SETTINGS.items():
            if getattr(config, key) != value:
                raise ParameterError(
                    f"{key}={getattr(config, key)!r}: {name} (Corollary TT0) is proved for "
                    f"{key}={value!r} (use config_for)")
        if config.steps % config.transfer_every:
            raise ParameterError(
                f"steps={config.steps}: {name} (Corollary TT0) counts whole transfer windows; "
                f"valid: a multiple of transfer_every={config.transfer_every}")
    if config.algorithm in ("analog", "mixed", "tiki-taka") and config.update != "expected":
        raise ParameterError(
            f"update={config.update!r}: the theorems analyse the expected analog update; "
            "valid: 'expected'"
        )
    if config.seeds < 2:
        raise ParameterError(f"seeds={config.seeds} is out of range; valid range [2, inf)")


def _base_constants(config: SimConfig, L: float, Delta: float, sigma2: float) -> dict:
    """The problem and pipeline constants (every name any checkable bound uses but q, G, theta);
    ``beta`` is the injected gradient bias ``config.grad_bias``."""
    return {
        "L": float(L), "L_s": float(L), "Delta": float(Delta), "sigma2": float(sigma2),
        "n": config.samples_per_update, "b": config.micro_batch_size, "B": config.micro_batches,
        "M": config.stages, "D": (int(write_delay(config.stages, config.transfer_every))
                                  if config.algorithm == "tiki-taka" and config.mode == "async"
                                  else max(forward_delays(config.mode, config.stages))),
        "beta": float(config.grad_bias),
        "T": config.transfer_every, "rho": float(config.transfer_lr),
    }


def _device_constants(config: SimConfig, w_lo: float, w_hi: float, *, visited: bool) -> dict:
    """``q_min``, ``q_max``, ``G_inf`` on ``[w_lo, w_hi]``; a visited region must not touch the
    device range (the update would have been clipped)."""
    device = device_from_config(config)
    if visited and (w_lo <= device.w_min or w_hi >= device.w_max):
        raise ParameterError(
            f"the weights reached the device range [{device.w_min:g}, {device.w_max:g}] (visited "
            f"[{w_lo:g}, {w_hi:g}]): the update was clipped, outside the theorems' model (A3)"
        )
    dc = device.constants(w_lo, w_hi)
    return {"q_min": dc.q_min, "q_max": dc.q_max, "G_inf": dc.G_inf}


def _block_constants(config: SimConfig, w_lo: float, w_hi: float, dim: int, *,
                     visited: bool) -> dict:
    r"""Theorem 2M's ``q_min``, ``q_max``, ``p2_bar``, ``G2_bar`` of a ``mixed`` run.

    The analog stages have the device constants on ``[w_lo, w_hi]`` (:func:`_device_constants`),
    the stages of ``digital_stages`` are digital, and stage ``m`` carries the noise share
    :math:`d_m/d` of its block (isotropic oracle noise, :func:`theory.mixed.shares_from_sizes`).
    """
    sizes = [s.stop - s.start for s in stage_blocks(dim, config.stages)]
    shares = shares_from_sizes(sizes)
    digital = set(config.digital_stage_indices)
    if len(digital) == config.stages:
        return mixed_constants([digital_block(s) for s in shares]).values()
    dc = _device_constants(config, w_lo, w_hi, visited=visited)
    rows = [digital_block(share) if stage in digital
            else (dc["q_min"], dc["q_max"], dc["G_inf"], share)
            for stage, share in enumerate(shares, start=1)]
    return mixed_constants(rows).values()


def _update_constants(config: SimConfig, w_lo: float, w_hi: float, dim: int, *,
                      visited: bool) -> dict:
    """The A3 constants the bound of ``config.algorithm`` reads (none for ``digital``; C's device
    for ``tiki-taka``, whose effective weight is C in Corollary TT0)."""
    if config.algorithm in ("analog", "tiki-taka"):
        return _device_constants(config, w_lo, w_hi, visited=visited)
    if config.algorithm == "mixed":
        return _block_constants(config, w_lo, w_hi, dim, visited=visited)
    return {}


def region_step_cap(name: str, config: SimConfig, w_lo: float, w_hi: float) -> float:
    r"""Supremum of the admissible steps of bound ``name`` if the weights stay in ``[w_lo, w_hi]``.

    :func:`theory.admissible.step_cap`,

    .. math:: \sup_{\theta \in (0,1)} 1/\mathrm{inv\_step\_cap}(\theta)
              = 1/\mathrm{inv\_step\_cap}(0^+),

    with the problem's exact ``L`` (and ``L_s = L``) and the device constants on the interval
    (ignored by ``digital_sgd``); ``config.lr`` is not read. Use a fraction of it to draw an
    admissible ``lr`` (:class:`simulate.verification.suites.Case`); the check itself uses the region
    the run visited.
    """
    _validate(name, config)
    problem = make_problem(config)
    values = _base_constants(config, problem.L, problem.Delta, problem.sigma2)
    values |= _update_constants(config, w_lo, w_hi, problem.dim, visited=False)
    return step_cap(name, values)


def _constants_of_run(name: str, config: SimConfig, trace: Trace) -> dict:
    consts = trace.constants
    values = _base_constants(config, consts.L, consts.Delta, consts.sigma2)
    w_lo, w_hi = float(np.min(trace.w_min_visited)), float(np.max(trace.w_max_visited))
    values |= {"w_lo": w_lo, "w_hi": w_hi}
    values |= _update_constants(config, w_lo, w_hi, consts.dim, visited=True)
    return values


# ------------------------------------------------------------------------------------------------
# the check


@dataclass(frozen=True)
class Check:
    """The comparison of one bound with one simulated ensemble.

    Attributes
    ----------
    bound_name : str
        Registry entry.
    config : SimConfig
        The simulated configuration (``seeds`` = R).
    empirical : float
        Mean over seeds of :math:`\\frac1K\\sum_{k<K}\\lVert\\nabla f(W_k)\\rVert^2`
        (squared-gradient units).
    stderr : float
        Standard error of ``empirical`` (sample std over seeds / sqrt(R)).
    bound : float
        The bound at ``K = steps``, ``alpha = lr``, the run's constants and the tightest
        admissible theta.
    ratio : float
        ``bound / empirical`` (>= 1: holds on average; its size is the looseness).
    margin_z : float
        ``z`` of the one-sided check.
    passed : bool
        ``empirical <= bound + margin_z * stderr``.
    constants : dict
        What was plugged in: the bound's parameters, ``theta``, ``K``, ``alpha``, and the visited
        interval ``w_lo``, ``w_hi``.
    prediction : Prediction or None
        The bound read as a prediction: cycles and samples to a target ``eps`` at the run's step,
        guaranteed versus simulated, with a bootstrap interval
        (:mod:`simulate.verification.prediction`).
    """

    bound_name: str
    config: SimConfig
    empirical: float
    stderr: float
    bound: float
    ratio: float
    margin_z: float
    passed: bool
    constants: dict = field(default_factory=dict)
    prediction: Prediction | None = None

    def __post_init__(self):
        check_range("margin_z", self.margin_z, 0, None)

    def to_dict(self) -> dict:
        """JSON-ready: the fields, with ``config`` and ``prediction`` as dicts."""
        return {
            "bound_name": self.bound_name, "config": self.config.to_dict(),
            "empirical": self.empirical, "stderr": self.stderr, "bound": self.bound,
            "ratio": self.ratio, "margin_z": self.margin_z, "passed": self.passed,
            "constants": dict(self.constants),
            "prediction": None if self.prediction is None else self.prediction.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict) -> Check:
        """Inverse of :meth:`to_dict`."""
        data = dict(data)
        data["config"] = SimConfig(**data["config"])
        data["passed"] = bool(data["passed"])
        if data.get("prediction") is not None:
            data["prediction"] = Prediction.from_dict(data["prediction"])
        return cls(**data)


def _every_iterate(config: SimConfig, why: str) -> SimConfig:
    """``config`` with every iterate logged (``log_every = 1``), or a one-line error naming
    ``steps`` when that trace would exceed the memory limit (``why`` says who needs it)."""
    try:
        return replace(config, log_every=1)
    except ParameterError as error:  # the trace of every iterate would be too large
        raise ParameterError(
            f"steps={config.steps} with seeds={config.seeds}: {why}, and that trace is too large "
            f"({error}); valid: fewer steps or seeds"
        ) from None


def _run_every_iterate(config: SimConfig, why: str) -> Trace:
    """``run(config)`` with every iterate logged (:func:`_every_iterate`)."""
    return run(_every_iterate(config, why))


def check_bound(name: str, config: SimConfig, *, z: float = 4.0) -> Check:
    """Run ``config`` and check bound ``name`` against it (see the module docstring).

    Parameters
    ----------
    name : str
        ``digital_sgd`` (algorithm digital, mode none), ``analog_sgd`` (analog, none),
        ``analog_sgd_sp`` (analog, sync) or ``analog_sgd_ap`` (analog, async).
    config : SimConfig
        An oracle problem, the entry's algorithm and mode, ``update="expected"``, ``seeds >= 2``.
    z : float
        Statistical margin of the one-sided check, in standard errors.

    Raises
    ------
    ParameterError
        Mismatched config, or an inadmissible run: the weights hit the device range, or no theta
        admits ``lr`` with the constants that held.
    """
    return check_bounds((name,), config, z=z)[0]


def check_bounds(names: Sequence[str], config: SimConfig, *, z: float = 4.0
                 ) -> tuple[Check, ...]:
    """Run ``config`` once and check every bound of ``names`` against that one run.

    A worst-case row and its local-floor row (Theorem LF, ``*_local``) are checked on the same
    run: its iterates do not depend on who reads them, and ``G2_iter`` is measured along it
    (:func:`simulate.verification.local_floor.run_measuring_g2`, the bits of
    :func:`simulate.engine.run`) when some entry needs it. Each check is that of
    :func:`check_bound` (the same numbers as one run per entry, at the cost of one).
    """
    for name in names:
        _validate(name, config)
    check_range("z", z, 0, None)
    # every iterate logged (for the prediction's running average): the iterates, their average
    # and the visited region do not depend on log_every (the check's numbers keep their bits)
    why = "the check logs every iterate for its prediction"
    g2_iter = None
    if any("G2_iter" in get_bound(name).parameters for name in names):  # Theorem LF
        measured = run_measuring_g2(_every_iterate(config, why))
        trace, g2_iter = measured.trace, measured.mean
    else:
        trace = _run_every_iterate(config, why)
    per_seed = np.asarray(trace.avg_grad_norm2, dtype=float)
    empirical = float(per_seed.mean())
    stderr = standard_error(per_seed)
    checks = []
    for name in names:
        values = _constants_of_run(name, config, trace)
        if "G2_iter" in get_bound(name).parameters:
            values["G2_iter"] = g2_iter
        theta, bound = tightest_theta(name, config.lr, config.steps, values)
        used = {p: values[p] for p in compiled_bound(name).parameters}
        constants = used | {
            "theta": theta, "K": config.steps, "alpha": config.lr,
            "w_lo": values["w_lo"], "w_hi": values["w_hi"],
        }
        prediction = predict(name, config, constants, trace.grad_norm2[:, :-1])
        checks.append(Check(
            bound_name=name, config=config, empirical=empirical, stderr=stderr, bound=bound,
            ratio=bound / empirical if empirical > 0 else math.inf, margin_z=float(z),
            passed=one_sided_pass(empirical, stderr, bound, z), constants=constants,
            prediction=prediction,
        ))
    return tuple(checks)


# ------------------------------------------------------------------------------------------------
# asymptotic error and cycles to eps


@dataclass(frozen=True)
class FloorEstimate:
    r"""Empirical asymptotic error: the mean of :math:`\lVert\nabla f(W_k)\rVert^2` over the tail.

    Attributes
    ----------
    config : SimConfig
        The run (``log_every = 1``).
    per_seed : ndarray, shape (R,)
        Tail average of each seed (independent across seeds).
    mean, stderr : float
        Mean over seeds and its standard error.
    w_lo, w_hi : float
        The weight interval the ensemble visited (where the device constants of A3 held).
    constants : dict
        The problem's exact constants (``L``, ``Delta``, ``sigma2``, ``samples_per_update``, ...).
    """

    config: SimConfig
    per_seed: np.ndarray
    mean: float
    stderr: float
    w_lo: float
    w_hi: float
    constants: dict


def empirical_floor(config: SimConfig, *, tail: float = 0.5) -> FloorEstimate:
    r"""Average of :math:`\lVert\nabla f(W_k)\rVert^2` over the last ``tail`` of the iterates.

    .. math:: \hat e_\infty = \frac1R\sum_r \frac{1}{|T|}\sum_{k \in T}
              \lVert\nabla f(W_k^{(r)})\rVert^2, \quad T = \{k \ge (1 - \mathrm{tail})K\}

    With a long run and a small step this estimates the analog asymptotic error (the floor plus
    the :math:`O(\alpha)` noise ball). Member ``r`` of two configurations that differ only in
    ``sigma2``, ``tau`` or ``micro_batches`` draws the same standard normals, so ``per_seed``
    differences of such runs are paired comparisons.
    """
    check_range("tail", tail, 0, 1, low_open=True)
    trace = _run_every_iterate(config, "the floor estimate logs every iterate of its tail")
    start = int(math.floor((1.0 - tail) * config.steps))
    per_seed = trace.grad_norm2[:, start:].mean(axis=1)
    return FloorEstimate(
        config=config, per_seed=per_seed, mean=float(per_seed.mean()),
        stderr=standard_error(per_seed),
        w_lo=float(trace.w_min_visited.min()), w_hi=float(trace.w_max_visited.max()),
        constants=trace.constants.to_dict(),
    )


@dataclass(frozen=True)
class CyclesToEps:
    """Clock cycles to reach ``eps``: simulation per seed, and the theory's prediction.

    Attributes
    ----------
    bound_name : str
        The registry entry whose prediction is used: of the proved bounds of the configuration's
        mode and algorithm, the one of fewest predicted cycles.
    config : SimConfig
        The simulated run (its ``lr`` and ``steps``).
    eps : float
        Target for the running average of the squared gradient norm.
    cycles : ndarray, shape (R,)
        Per seed, the cycles after the first ``K`` with
        :math:`\\frac1K\\sum_{k<K}\\lVert\\nabla f(W_k)\\rVert^2 \\le \\epsilon`; ``nan`` if not
        reached within ``steps``.
    reached : int
        Seeds that reached ``eps``.
    predicted : float
        :func:`theory.complexity.evaluate_complexity` cycles with the constants of ``region``.
    predicted_step : float
        The theory's best step for ``eps`` (the step the prediction assumes).
    predicted_iterations : int
        The theory's ``ceil(K(eps))``.
    theta : float or None
        The theta minimising the prediction.
    constants : dict
        The constants of the prediction.
    """

    bound_name: str
    config: SimConfig
    eps: float
    cycles: np.ndarray
    reached: int
    predicted: float
    predicted_step: float
    predicted_iterations: int
    theta: float | None
    constants: dict

    @property
    def log_mean(self) -> float:
        """Mean of ``log(cycles)`` over the seeds (``nan`` unless every seed reached eps)."""
        return float(np.mean(np.log(self.cycles)))

    @property
    def log_range(self) -> float:
        """``log(max cycles) - log(min cycles)`` over the seeds: the simulation's spread."""
        return float(np.log(np.max(self.cycles)) - np.log(np.min(self.cycles)))


def cycles_to_eps(
    config: SimConfig, eps: float, *, region: tuple[float, float] | None = None,
    lr: float | None = None,
) -> CyclesToEps:
    r"""Cycles until the running average of :math:`\lVert\nabla f\rVert^2` reaches ``eps``.

    Empirical: for each seed the smallest ``K >= 1`` with
    :math:`\frac1K\sum_{k<K}\lVert\nabla f(W_k)\rVert^2 \le \epsilon`, converted to cycles with the
    schedule's closed form (:func:`simulate.pipeline.staleness.cycles_after`). Theory: of the proved
    bounds of the configuration's mode and algorithm, the one of fewest predicted cycles
    (:func:`theory.admissible.predicted_guarantee`; for ``async`` Theorem 4' or 4'B), with the
    problem's exact constants and the device constants on ``region`` (default
    :math:`[-2 W^*_{\mathrm{scale}}, 2 W^*_{\mathrm{scale}}]`,
    inside the device range). The run must stay in ``region`` (checked) so that the constants
    hold.

    Parameters
    ----------
    config : SimConfig
        The pipeline, device and problem (``lr``/``steps`` used only when ``lr`` is a number).
    eps : float
        Target (squared-gradient units), above the bound's floor.
    region : (float, float), optional
        The weight interval the device constants are computed on.
    lr : float, optional
        ``None`` (default): simulate with the prediction's own step for ``steps =`` its
        ``ceil(K(eps))`` iterations (so simulation and prediction describe the same algorithm);
        a number: simulate ``config`` with that step for ``config.steps``.
    """
    check_range("eps", eps, 0, None, low_open=True)
    name = bound_for(config.mode, config.algorithm, config.write).name
    _validate(name, config)
    problem = make_problem(config)
    values = _base_constants(config, problem.L, problem.Delta, problem.sigma2)
    if region is None:
        region = (-2 * W_STAR_SCALE, 2 * W_STAR_SCALE)
    values |= _update_constants(config, *region, problem.dim, visited=False)
    name, result, theta = predicted_guarantee(config.mode, eps, values, config.algorithm,
                                              config.write)
    if lr is None:
        config = replace(config, lr=float(result.step), steps=int(result.iterations_int))
    else:
        config = replace(config, lr=check_range("lr", lr, 0, None, low_open=True))
    steps = min(config.steps, _FIRST_STEPS)
    while True:  # a run's iterates are a prefix of a longer run's: double until every seed hits
        trace = run(replace(config, steps=steps, log_every=1))
        gn2 = trace.grad_norm2[:, :-1]  # iterates 0..steps-1 (log_every = 1)
        running = np.cumsum(gn2, axis=1) / np.arange(1, gn2.shape[1] + 1)
        hit = running <= eps
        if hit.any(axis=1).all() or steps == config.steps:
            break
        steps = min(2 * steps, config.steps)
    w_lo, w_hi = float(trace.w_min_visited.min()), float(trace.w_max_visited.max())
    if w_lo < region[0] or w_hi > region[1]:
        raise ParameterError(
            f"the run visited [{w_lo:g}, {w_hi:g}], outside region=({region[0]:g}, {region[1]:g}) "
            "on which the predicted constants were computed; widen the region"
        )
    first = np.where(hit.any(axis=1), hit.argmax(axis=1) + 1, 0)  # K = index + 1
    cycles = cycles_after(config.mode, config.stages, config.micro_batches, first).astype(float)
    cycles[first == 0] = np.nan
    return CyclesToEps(
        bound_name=name, config=config, eps=float(eps), cycles=cycles,
        reached=int(np.count_nonzero(first)), predicted=float(result.cycles),
        predicted_step=float(result.step), predicted_iterations=int(result.iterations_int),
        theta=theta, constants=values | {"w_lo": region[0], "w_hi": region[1]},
    )
