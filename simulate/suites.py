r"""The verification suites as case tables (PEPit style): one row per ``(bound, configuration)``.

A :class:`Case` names a checkable registry entry (:data:`simulate.verify.CHECKABLE`), the step as
a ``fraction`` of the entry's admissible step cap, and the settings of the simulated ensemble.
Its configuration (:meth:`Case.config`) has the entry's algorithm and mode, the expected analog
update, one logging point (the check reads the run's average only) and the step

.. math:: \alpha = \mathrm{round}_4\bigl(\mathrm{fraction} \times
          \sup_\theta 1/\mathrm{inv\_step\_cap}(\theta)\bigr)

with the device constants on the weight region :func:`step_region` (``[-0.5, 0.5]``, within 90 %
of the device range), rounded to :data:`STEP_DIGITS` significant digits. The tables:

- :data:`QUICK`: one row per entry (seconds; ``aimc-pipeline verify`` and the report);
- :data:`STANDARD`: ~40 rows over noise, devices, stages, micro-batches and step fractions;
- :data:`THOROUGH`: a grid of 270 rows over three root seeds.

:func:`run_suite` runs a table as one cached sweep of :func:`check_point` (each row is
:func:`simulate.verify.check_bound`; a cached row is checked by :func:`validate_check`); the
tests are parametrized over the rows of :data:`QUICK`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from theory.errors import ParameterError, check_range
from theory.theorems import get_bound

from .analog import device_from_config
from .config import SimConfig
from .sweep import SweepResult, run_sweep
from .verify import CHECKABLE, Check, check_bound, config_for, region_step_cap

__all__ = [
    "Case",
    "DEVICE_MARGIN",
    "LR_REGION",
    "QUICK",
    "STANDARD",
    "STEP_DIGITS",
    "SUITES",
    "THOROUGH",
    "VERIFY_FORMAT",
    "capped_step",
    "check_point",
    "run_suite",
    "step_region",
    "suite_points",
    "validate_check",
]

#: bumped when the meaning of a cached check changes (part of every sweep point)
VERIFY_FORMAT = 1

#: half-width of the weight region a step is drawn against (W* in [-0.3, 0.3], W_0 = 0; a margin
#: for the noise)
LR_REGION = 0.5
#: the region stays within this fraction of the device range [w_min, w_max]
DEVICE_MARGIN = 0.9
#: significant digits of a drawn step (short, reproducible steps in tables and cache keys)
STEP_DIGITS = 4

#: SimConfig's defaults, the defaults of a case's settings
_DEFAULT = SimConfig()


def step_region(config: SimConfig) -> tuple[float, float]:
    """The weight region ``[lo, hi]`` a step is drawn against: ``+-LR_REGION``, within
    ``DEVICE_MARGIN`` of the device range."""
    device = device_from_config(config)
    return (max(-LR_REGION, DEVICE_MARGIN * device.w_min),
            min(LR_REGION, DEVICE_MARGIN * device.w_max))


def capped_step(name: str, config: SimConfig, fraction: float,
                region: tuple[float, float]) -> float:
    """``fraction`` of bound ``name``'s step cap of ``config`` on ``region``
    (:func:`simulate.verify.region_step_cap`, which does not read ``config.lr``), rounded to
    :data:`STEP_DIGITS` significant digits."""
    return float(f"{fraction * region_step_cap(name, config, *region):.{STEP_DIGITS}g}")


@dataclass(frozen=True)
class Case:
    """One row of a suite: bound ``bound`` checked on an ensemble at ``fraction`` of its step cap.

    Attributes
    ----------
    bound : str
        A checkable registry entry (:data:`simulate.verify.CHECKABLE`).
    fraction : float
        The step as a fraction of the step cap on :func:`step_region`, in (0, 1).
    steps, seeds : int
        Iterations ``K`` and ensemble size ``R`` (>= 2).
    problem, stages, micro_batches, micro_batch_size, device, tau, sigma2, seed
        The :class:`~simulate.config.SimConfig` fields of the same name (the same defaults).
    """

    bound: str
    fraction: float
    steps: int
    seeds: int
    problem: str = _DEFAULT.problem
    stages: int = _DEFAULT.stages
    micro_batches: int = _DEFAULT.micro_batches
    micro_batch_size: int = _DEFAULT.micro_batch_size
    device: str = _DEFAULT.device
    tau: float | None = _DEFAULT.tau
    sigma2: float = _DEFAULT.sigma2
    seed: int = _DEFAULT.seed

    def __post_init__(self):
        if self.bound not in CHECKABLE:
            raise ParameterError(
                f"bound={self.bound!r} cannot be checked on the oracle problems; valid: "
                f"{', '.join(CHECKABLE)}"
            )
        check_range("fraction", self.fraction, 0, 1, low_open=True, high_open=True)

    @property
    def label(self) -> str:
        """A short unique description of the row (test ids)."""
        if get_bound(self.bound).algorithm == "digital":
            device = "digital"
        else:
            device = self.device if self.tau is None else f"{self.device}(tau={self.tau:g})"
        return (f"{self.bound}-{self.problem}-M{self.stages}-B{self.micro_batches}"
                f"-b{self.micro_batch_size}-{device}-sigma2={self.sigma2:g}"
                f"-frac{self.fraction:g}-K{self.steps}-R{self.seeds}-seed{self.seed}")

    def config(self) -> SimConfig:
        """The checked configuration: the entry's algorithm and mode, one logging point, and the
        step ``fraction`` of the cap (:func:`capped_step` on :func:`step_region`)."""
        base = config_for(
            self.bound, problem=self.problem, stages=self.stages,
            micro_batches=self.micro_batches, micro_batch_size=self.micro_batch_size,
            device=self.device, tau=self.tau, sigma2=self.sigma2, steps=self.steps,
            seeds=self.seeds, log_every=self.steps, seed=self.seed,
        )  # at SimConfig's default lr, which the step cap does not read
        return replace(base, lr=capped_step(self.bound, base, self.fraction, step_region(base)))


# ------------------------------------------------------------------------------------------------
# the tables

_QUICK = dict(steps=400, seeds=16)

#: one check per entry, and least squares once (seconds)
QUICK: tuple[Case, ...] = (
    Case("digital_sgd", 0.5, **_QUICK),
    Case("analog_sgd", 0.5, **_QUICK),
    Case("analog_sgd_sp", 0.5, stages=4, micro_batches=4, **_QUICK),
    Case("analog_sgd_ap", 0.5, stages=4, **_QUICK),
    Case("analog_sgd_ap_b", 0.5, stages=8, **_QUICK),
    Case("analog_sgd", 0.5, problem="least-squares", **_QUICK),
)

#: step fractions of the asynchronous rows at Theorem 4''s cap: half, most, all but 0.1 % of it
#: (a fraction is below 1: the 4-digit rounding of the step must stay admissible)
_AP_FRACTIONS = (0.5, 0.9, 0.999)

_STANDARD = dict(steps=3000, seeds=48)

#: noise levels, devices (``tau=None``: a preset keeps its own range), pipelines, step fractions
#: (a row that two groups generate is kept once, in its first place)
STANDARD: tuple[Case, ...] = tuple(dict.fromkeys((
    # Theorem 1
    *(Case("digital_sgd", 0.5, sigma2=sigma2, **_STANDARD) for sigma2 in (0.1, 1.0, 4.0)),
    Case("digital_sgd", 0.9, problem="least-squares", micro_batch_size=4, **_STANDARD),
    # Theorem 2 (larger noise: larger excursions, a smaller fraction stays inside the lr region)
    *(Case("analog_sgd", 0.3 if sigma2 > 1 else 0.5, tau=tau, sigma2=sigma2, **_STANDARD)
      for tau, sigma2 in ((0.5, 1.0), (1.0, 0.1), (1.0, 1.0), (1.0, 4.0), (2.0, 1.0), (4.0, 4.0))),
    *(Case("analog_sgd", 0.2, device=device, tau=None, **_STANDARD)
      for device in ("ecram-linearstep", "capacitor-linearstep")),
    Case("analog_sgd", 0.9, problem="least-squares", **_STANDARD),
    # Corollary 3
    *(Case("analog_sgd_sp", 0.5, stages=stages, micro_batches=mb, micro_batch_size=b,
           sigma2=sigma2, **_STANDARD)
      for stages, mb, b, sigma2 in ((1, 1, 1, 1.0), (2, 2, 1, 0.1), (4, 1, 4, 1.0),
                                    (4, 4, 2, 4.0), (8, 8, 1, 1.0), (16, 4, 1, 0.1))),
    Case("analog_sgd_sp", 0.9, stages=4, micro_batches=4, problem="least-squares", **_STANDARD),
    *(Case("analog_sgd_sp", 0.5, stages=4, micro_batches=4, tau=tau, **_STANDARD)
      for tau in (0.5, 2.0)),
    Case("analog_sgd_sp", 0.5, stages=4, micro_batches=4, device="ecram-linearstep", tau=None,
         **_STANDARD),
    # Theorem 4' (these rows were the old Theorem 4's; their steps now follow the new cap)
    *(Case("analog_sgd_ap", 0.5, stages=stages, micro_batch_size=b, sigma2=sigma2, **_STANDARD)
      for stages, b, sigma2 in ((1, 1, 1.0), (2, 1, 1.0), (2, 4, 1.0), (4, 1, 1.0), (4, 2, 0.1),
                                (8, 1, 1.0), (16, 1, 1.0))),
    Case("analog_sgd_ap", 0.5, stages=8, micro_batch_size=1, sigma2=4.0, tau=4.0, **_STANDARD),
    *(Case("analog_sgd_ap", fraction, stages=4, **_STANDARD) for fraction in (0.1, 0.9)),
    *(Case("analog_sgd_ap", 0.5, stages=4, tau=tau, **_STANDARD) for tau in (0.5, 2.0)),
    *(Case("analog_sgd_ap", 0.2, stages=4, device=device, tau=None, **_STANDARD)
      for device in ("ecram-linearstep", "capacitor-linearstep")),
    Case("analog_sgd_ap", 0.9, stages=4, problem="least-squares", **_STANDARD),
    # Theorem 4' and 4'B at their (shared) cap, up to M = 16, three devices
    *(Case(bound, fraction, stages=stages, **_STANDARD)
      for bound in ("analog_sgd_ap", "analog_sgd_ap_b") for fraction in _AP_FRACTIONS
      for stages in (2, 4, 8, 16)),
    # (linear-step presets: their steps leave the step region, where the constants that held
    # are worse, so a step near the region's cap becomes inadmissible; 0.2 as for Theorem 2)
    *(Case(bound, 0.2, stages=8, device=device, tau=None, **_STANDARD)
      for bound in ("analog_sgd_ap", "analog_sgd_ap_b")
      for device in ("ecram-linearstep", "capacitor-linearstep")),
)))

_THOROUGH = dict(steps=3000, seeds=32)

#: per root seed, step fraction and noise: every entry over tau and stage counts
THOROUGH: tuple[Case, ...] = tuple(
    case
    for seed in range(3)
    for fraction in (0.2, 0.5, 0.9)
    for sigma2 in (0.1, 1.0, 4.0)
    for case in (
        Case("digital_sgd", fraction, sigma2=sigma2, seed=seed, **_THOROUGH),
        *(Case("analog_sgd", fraction, tau=tau, sigma2=sigma2, seed=seed, **_THOROUGH)
          for tau in (0.5, 1.0, 2.0)),
        *(Case("analog_sgd_sp", fraction, stages=stages, micro_batches=stages, sigma2=sigma2,
               seed=seed, **_THOROUGH) for stages in (2, 4, 8)),
        *(Case(bound, fraction, stages=stages, sigma2=sigma2, seed=seed, **_THOROUGH)
          for bound in ("analog_sgd_ap", "analog_sgd_ap_b") for stages in (2, 4, 8, 16)),
    )
)

#: suite name -> its case table
SUITES: dict[str, tuple[Case, ...]] = {"quick": QUICK, "standard": STANDARD, "thorough": THOROUGH}


# ------------------------------------------------------------------------------------------------
# running a suite


def check_point(point: dict) -> dict:
    """Sweep function: :func:`simulate.verify.check_bound` of ``point["bound"]`` and
    ``point["config"]``.

    ``point = {"bound": str, "config": SimConfig.to_dict(), "z": float, "format":
    VERIFY_FORMAT}``; returns :meth:`Check.to_dict`.
    """
    check = check_bound(point["bound"], SimConfig(**point["config"]), z=point["z"])
    return check.to_dict()


def suite_points(suite: str, *, z: float = 4.0) -> list[dict]:
    """The sweep points of ``suite`` (see :func:`check_point`), one per row of its table."""
    if suite not in SUITES:
        raise ParameterError(f"suite={suite!r} is unknown; valid: {', '.join(SUITES)}")
    check_range("z", z, 0, None)  # before any check runs, not inside a sweep worker
    return [
        {"bound": case.bound, "config": case.config().to_dict(), "z": float(z),
         "format": VERIFY_FORMAT}
        for case in SUITES[suite]
    ]


def validate_check(result: dict) -> None:
    """The sweep's ``validate`` for :func:`check_point` results: a :meth:`Check.to_dict` whose
    empirical mean, standard error and bound are finite, ``empirical, stderr >= 0``, and whose
    ratio and verdict follow from them.

    Raises
    ------
    ValueError, TypeError, KeyError
        When the result is not one :func:`check_point` returns (e.g. a damaged cache entry).
    """
    check = Check.from_dict(result)
    for name in ("empirical", "stderr", "bound"):
        value = getattr(check, name)
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
                value):
            raise ValueError(f"{name}={value!r} is not a finite number")
    if check.empirical < 0 or check.stderr < 0:
        raise ValueError(f"empirical={check.empirical!r} and stderr={check.stderr!r} must be >= 0")
    passed = check.empirical <= check.bound + check.margin_z * check.stderr
    if check.passed != passed:
        raise ValueError(f"passed={check.passed!r} does not follow from the numbers")
    ratio = check.bound / check.empirical if check.empirical > 0 else math.inf
    if not math.isclose(check.ratio, ratio, rel_tol=1e-12):
        raise ValueError(f"ratio={check.ratio!r} is not bound/empirical")


def run_suite(
    name: str, jobs: int | None = None, scheduler=None, *, cache=True, z: float = 4.0,
    progress: bool | None = None, on_sweep: Callable[[SweepResult], object] | None = None,
) -> list[Check]:
    """Run the checks of suite ``name`` (``quick``, ``standard``, ``thorough``) as a cached sweep.

    ``jobs``, ``scheduler``, ``cache`` and ``progress`` are those of
    :func:`simulate.sweep.run_sweep` (finished checks are cached and reused; a cached check is
    validated by :func:`validate_check`, and recomputed when it does not verify).
    ``on_sweep(result)``, if given, receives the :class:`~simulate.sweep.SweepResult` (its counts
    of computed, cached and damaged entries).
    """
    points = suite_points(name, z=z)
    sweep = run_sweep(check_point, points, jobs=jobs, scheduler=scheduler, cache=cache,
                      progress=progress, desc=f"verify {name}", validate=validate_check)
    if on_sweep is not None:
        on_sweep(sweep)
    return [Check.from_dict(result) for result in sweep.results]
