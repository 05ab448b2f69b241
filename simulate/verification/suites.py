r"""The verification suites as case tables (PEPit style): one row per ``(bound, configuration)``.

A :class:`Case` names a checkable registry entry (:data:`simulate.verification.checks.CHECKABLE`),
the step as a ``fraction`` of the entry's admissible step cap, and the settings of the simulated
ensemble. Its configuration (:meth:`Case.config`) has the entry's algorithm and mode, the expected
analog update, one logging point (the check reads the run's average only) and the step

.. math:: \alpha = \mathrm{round}_4\bigl(\mathrm{fraction} \times
          \sup_\theta 1/\mathrm{inv\_step\_cap}(\theta)\bigr)

with the device constants on the weight region :func:`step_region` (``[-0.5, 0.5]``, within 90 %
of the device range), rounded to :data:`STEP_DIGITS` significant digits. The tables:

- :data:`QUICK`: one row per entry (seconds; ``aimc-pipeline verify`` and the report);
- :data:`STANDARD`: 132 rows over noise, devices, stages, micro-batches and step fractions
  (write semantics: the per-sample rows of Corollary 3PS and Theorem 4'PS; every other row
  writes the batch mean);
- :data:`THOROUGH`: a grid of 270 rows over three root seeds.

:data:`QUICK` and :data:`STANDARD` end with the local-floor rows of Theorem LF
(:func:`local_cases`: each ``*_local`` entry on the run of its worst-case row, ``G2_iter``
measured along it; 21 and 128 rows).

:func:`run_suite` runs a table as one cached sweep of :func:`check_group`, one point per
distinct run (:func:`suite_runs`): the rows of one configuration, a worst-case row and its
local-floor row, are checked on one run
(:func:`simulate.verification.checks.check_bounds`; each row's check is
:func:`~simulate.verification.checks.check_bound`'s, and :func:`check_point` is that of one
row). A cached point is checked by :func:`validate_group`; the tests are parametrized over the
rows of :data:`QUICK`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from theory.errors import ParameterError, check_range
from theory.theorems import get_bound

from ..config import SimConfig, device_from_config
from ..execution import SweepResult, canonical_json, run_sweep
from ..pipeline import cycles_after
from .checks import CHECKABLE, Check, check_bound, check_bounds, config_for, region_step_cap
from .prediction import Prediction, bound_floor, first_hit, predicted_iterations, target
from .stats import one_sided_pass
from .suite_names import SUITE_NAMES

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
    "check_group",
    "check_point",
    "local_cases",
    "run_suite",
    "step_region",
    "suite_points",
    "suite_runs",
    "validate_check",
    "validate_group",
]

#: bumped when the meaning of a cached check changes (part of every sweep point)
VERIFY_FORMAT = 2  # 2: a check carries its Prediction (simulate.verification.prediction)

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
    (:func:`simulate.verification.checks.region_step_cap`, which does not read ``config.lr``),
    rounded to
    :data:`STEP_DIGITS` significant digits."""
    return float(f"{fraction * region_step_cap(name, config, *region):.{STEP_DIGITS}g}")


@dataclass(frozen=True)
class Case:
    """One row of a suite: bound ``bound`` checked on an ensemble at ``fraction`` of its step cap.

    Attributes
    ----------
    bound : str
        A checkable registry entry (:data:`simulate.verification.checks.CHECKABLE`).
    fraction : float
        The step as a fraction of the step cap on :func:`step_region`, in (0, 1).
    steps, seeds : int
        Iterations ``K`` and ensemble size ``R`` (>= 2).
    problem, stages, micro_batches, micro_batch_size, device, tau, sigma2, seed, digital_stages,
    grad_bias, transfer_every, transfer_lr
        The :class:`~simulate.config.SimConfig` fields of the same name (the same defaults;
        ``digital_stages`` for the ``mixed`` entries of Theorem 2M, ``grad_bias > 0`` for the
        biased-gradient entry ``analog_sgd_biased``, ``transfer_every`` and ``transfer_lr``
        for the Tiki-Taka entries of Corollary TT0, whose other settings are
        :data:`simulate.verification.checks.TT0_SETTINGS`).
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
    digital_stages: str = _DEFAULT.digital_stages
    grad_bias: float = _DEFAULT.grad_bias
    transfer_every: int = _DEFAULT.transfer_every
    transfer_lr: float = _DEFAULT.transfer_lr

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
        if get_bound(self.bound).algorithm == "mixed":
            device += f"-digital[{self.digital_stages}]"
        if get_bound(self.bound).algorithm == "tiki-taka":
            device += f"-T{self.transfer_every}-rho={self.transfer_lr:g}"
        return (f"{self.bound}-{self.problem}-M{self.stages}-B{self.micro_batches}"
                f"-b{self.micro_batch_size}-{device}-sigma2={self.sigma2:g}"
                f"-frac{self.fraction:g}-K{self.steps}-R{self.seeds}-seed{self.seed}"
                + (f"-beta={self.grad_bias:g}" if self.grad_bias else ""))

    def config(self) -> SimConfig:
        """The checked configuration: the entry's algorithm and mode, one logging point, and the
        step ``fraction`` of the cap (:func:`capped_step` on :func:`step_region`)."""
        base = config_for(
            self.bound, problem=self.problem, stages=self.stages,
            micro_batches=self.micro_batches, micro_batch_size=self.micro_batch_size,
            device=self.device, tau=self.tau, sigma2=self.sigma2, steps=self.steps,
            seeds=self.seeds, log_every=self.steps, seed=self.seed, grad_bias=self.grad_bias,
            transfer_every=self.transfer_every, transfer_lr=self.transfer_lr,
            **({"digital_stages": self.digital_stages} if self.digital_stages else {}),
        )  # at SimConfig's default lr, which the step cap does not read
        return replace(base, lr=capped_step(self.bound, base, self.fraction, step_region(base)))


# ------------------------------------------------------------------------------------------------
# the tables

_QUICK = dict(steps=400, seeds=16)

#: one check per entry, and least squares once (seconds); the local-floor rows follow
_QUICK_WORST_CASE: tuple[Case, ...] = (
    Case("digital_sgd", 0.5, **_QUICK),
    Case("analog_sgd", 0.5, **_QUICK),
    Case("analog_sgd_sp", 0.5, stages=4, micro_batches=4, **_QUICK),
    Case("analog_sgd_ap", 0.5, stages=4, **_QUICK),
    Case("analog_sgd_ap_b", 0.5, stages=8, **_QUICK),
    Case("analog_sgd", 0.5, problem="least-squares", **_QUICK),
    Case("analog_sgd_per_sample", 0.5, micro_batches=4, **_QUICK),
    Case("analog_sgd_sp_per_sample", 0.5, stages=4, micro_batches=4, **_QUICK),
    # Theorem 4'PS: the asynchronous pipeline, b = 4 samples written one by one per update
    Case("analog_sgd_ap_per_sample", 0.5, stages=4, micro_batch_size=4, **_QUICK),
    # Theorem 2M: half of the M = 4 stages digital
    Case("analog_sgd_mixed", 0.5, stages=4, digital_stages="1,2", **_QUICK),
    Case("analog_sgd_sp_mixed", 0.5, stages=4, micro_batches=4, digital_stages="1,2", **_QUICK),
    Case("analog_sgd_ap_mixed", 0.5, stages=4, digital_stages="1,2", **_QUICK),
    Case("analog_sgd_biased", 0.5, grad_bias=0.2, sigma2=0.1, **_QUICK),
    Case("analog_sgd_biased_sharp", 0.5, grad_bias=0.2, sigma2=0.1, **_QUICK),
    # Corollary TT0 (accumulate and transfer): T = 4 updates per write of C
    Case("tiki_taka_reset", 0.5, transfer_every=4, **_QUICK),
    Case("tiki_taka_reset_sp", 0.5, stages=4, micro_batches=4, transfer_every=4, **_QUICK),
    # Corollary TT0-AP: the asynchronous pipeline, a write per T = M = 4 micro-batches
    Case("tiki_taka_reset_ap", 0.5, stages=4, transfer_every=4, **_QUICK),
    Case("tiki_taka_reset_ap_b", 0.5, stages=8, transfer_every=2, **_QUICK),
    # Corollary TT0PS: the same four with per-sample writes of the buffer (n = 4 or b = 4)
    Case("tiki_taka_reset_per_sample", 0.5, micro_batch_size=4, transfer_every=4, **_QUICK),
    Case("tiki_taka_reset_sp_per_sample", 0.5, stages=4, micro_batches=4, micro_batch_size=2,
         transfer_every=4, **_QUICK),
    Case("tiki_taka_reset_ap_per_sample", 0.5, stages=4, micro_batch_size=4, transfer_every=4,
         **_QUICK),
    Case("tiki_taka_reset_ap_b_per_sample", 0.5, stages=8, micro_batch_size=2, transfer_every=2,
         **_QUICK),
)


def local_cases(cases: Sequence[Case]) -> tuple[Case, ...]:
    """Theorem LF's check of every case whose entry has a local-floor row (``bound + "_local"``):
    the same run (the local row's step cap is the worst-case row's), the floor's ``G_inf^2``
    replaced by the ``G2_iter`` measured along it."""
    return tuple(replace(case, bound=f"{case.bound}_local") for case in cases
                 if f"{case.bound}_local" in CHECKABLE)


#: every entry once, then the local-floor rows of the same runs (Theorem LF)
QUICK: tuple[Case, ...] = (*_QUICK_WORST_CASE, *local_cases(_QUICK_WORST_CASE))

#: step fractions of the asynchronous rows at Theorem 4''s cap: half, most, all but 0.1 % of it
#: (a fraction is below 1: the 4-digit rounding of the step must stay admissible)
_AP_FRACTIONS = (0.5, 0.9, 0.999)

_STANDARD = dict(steps=3000, seeds=48)

#: noise levels, devices (``tau=None``: a preset keeps its own range), pipelines, step fractions
#: (a row that two groups generate is kept once, in its first place)
_STANDARD_WORST_CASE: tuple[Case, ...] = tuple(dict.fromkeys((
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
    # Corollary 3PS (per-sample writes): n = 1, 4, 16 samples written one by one, devices, noise
    *(Case("analog_sgd_per_sample", 0.5, micro_batches=mb, tau=tau, sigma2=sigma2, **_STANDARD)
      for mb, tau, sigma2 in ((1, 1.0, 1.0), (4, 1.0, 1.0), (16, 1.0, 1.0), (4, 0.5, 1.0),
                              (4, 2.0, 4.0), (16, 1.0, 0.1))),
    Case("analog_sgd_per_sample", 0.2, micro_batches=4, device="ecram-linearstep", tau=None,
         **_STANDARD),
    Case("analog_sgd_per_sample", 0.9, micro_batches=4, problem="least-squares", **_STANDARD),
    *(Case("analog_sgd_sp_per_sample", 0.5, stages=stages, micro_batches=mb, micro_batch_size=b,
           tau=tau, sigma2=sigma2, **_STANDARD)
      for stages, mb, b, tau, sigma2 in ((2, 16, 1, 1.0, 1.0), (4, 4, 1, 1.0, 1.0),
                                         (4, 4, 1, 0.5, 1.0), (8, 8, 2, 1.0, 4.0))),
    # Theorem 4'PS (per-sample writes through the asynchronous pipeline): b = 1 (Theorem 4' at
    # one sample), 4, 8; M up to 16; the cap's fractions; small noise; a linear-step preset
    *(Case("analog_sgd_ap_per_sample", fraction, stages=stages, micro_batch_size=b,
           sigma2=sigma2, **_STANDARD)
      for fraction, stages, b, sigma2 in ((0.5, 2, 1, 1.0), (0.5, 4, 4, 1.0), (0.999, 8, 8, 1.0),
                                          (0.9, 16, 4, 1.0), (0.5, 4, 4, 0.1))),
    Case("analog_sgd_ap_per_sample", 0.2, stages=8, micro_batch_size=4,
         device="ecram-linearstep", tau=None, **_STANDARD),
    # Proposition IO (a fixed gradient bias of norm beta, against the descent): beta 0.2 and 0.5,
    # small noise (the bias dominates the floor), near the cap, least squares (beta = 0 is Theorem 2
    # at half its cap, checked symbolically; the Theorem 2 rows check that)
    *(Case("analog_sgd_biased", 0.5, grad_bias=beta, sigma2=1.0, **_STANDARD)
      for beta in (0.2, 0.5)),
    # (beta = 0.5 at small noise settles far from W*, where the constants that held are worse:
    # 0.2 of the region's cap, as for the linear-step presets)
    Case("analog_sgd_biased", 0.2, grad_bias=0.5, sigma2=0.01, **_STANDARD),
    Case("analog_sgd_biased", 0.9, grad_bias=0.2, sigma2=0.1, **_STANDARD),
    Case("analog_sgd_biased", 0.5, grad_bias=0.2, sigma2=0.1, problem="least-squares",
         **_STANDARD),
    # Proposition IO' on the runs of bench/biased_floors.py (an almost digital device, tau = 50,
    # where IO' is near beta^2) and least squares
    Case("analog_sgd_biased_sharp", 0.5, grad_bias=0.1, tau=3.0, sigma2=0.01, **_STANDARD),
    Case("analog_sgd_biased_sharp", 0.2, grad_bias=0.5, sigma2=0.01, **_STANDARD),
    Case("analog_sgd_biased_sharp", 0.5, grad_bias=0.3, tau=50.0, sigma2=0.01, **_STANDARD),
    Case("analog_sgd_biased_sharp", 0.5, grad_bias=0.2, sigma2=0.1, problem="least-squares",
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
    # Theorem 2M: M = 4 with 1, 2, 3 digital stages (soft bounds, G_inf > 0), and one of each
    # schedule with the early stages (largest delay) digital on a narrower device
    *(Case(bound, 0.5, stages=4, micro_batches=mb, digital_stages=digital, **_STANDARD)
      for bound, mb in (("analog_sgd_mixed", 1), ("analog_sgd_sp_mixed", 4),
                        ("analog_sgd_ap_mixed", 1))
      for digital in ("4", "3,4", "2,3,4")),
    *(Case(bound, 0.5, stages=4, micro_batches=mb, digital_stages="1,2", tau=0.5, **_STANDARD)
      for bound, mb in (("analog_sgd_mixed", 1), ("analog_sgd_sp_mixed", 4),
                        ("analog_sgd_ap_mixed", 1))),
    # Corollary TT0: T = 1 (Theorem 2 at the step rho alpha^2), windows up to T = 10, the rate
    # rho = transfer_lr, noise, range, least squares, and the synchronous pipeline up to M = 8
    # (K = 3000 is a multiple of every T)
    *(Case("tiki_taka_reset", fraction, transfer_every=t, transfer_lr=rho, sigma2=sigma2,
           tau=tau, problem=problem, **_STANDARD)
      for fraction, t, rho, sigma2, tau, problem in (
          (0.5, 1, 1.0, 1.0, 1.0, "quadratic"), (0.9, 10, 20.0, 4.0, 2.0, "quadratic"),
          (0.5, 2, 20.0, 0.1, 1.0, "quadratic"), (0.9, 4, 1.0, 1.0, 1.0, "least-squares"))),
    *(Case("tiki_taka_reset_sp", 0.5, stages=stages, micro_batches=mb, transfer_every=t,
           sigma2=sigma2, tau=tau, **_STANDARD)
      for stages, mb, t, sigma2, tau in ((4, 4, 4, 1.0, 1.0), (8, 8, 8, 0.1, 1.0),
                                         (4, 1, 2, 1.0, 0.5), (2, 2, 5, 4.0, 1.0))),
    # Corollary TT0-AP: the asynchronous pipeline with T = 1 (Theorem 4' at the step rho
    # alpha^2), T < M - 1, T = M (the synchronous floor) and T > M, at the cap's fractions
    *(Case(bound, fraction, stages=stages, transfer_every=t, sigma2=sigma2, tau=tau, **_STANDARD)
      for bound in ("tiki_taka_reset_ap", "tiki_taka_reset_ap_b")
      for fraction, stages, t, sigma2, tau in ((0.5, 4, 1, 1.0, 1.0), (0.9, 8, 2, 1.0, 1.0),
                                               (0.5, 4, 4, 0.1, 1.0), (0.9, 16, 20, 1.0, 0.5))),
    # Corollary TT0PS: per-sample writes of the buffer, n (async: b) = 2 to 8 samples per update,
    # T = 1 (one window per update), T = M and T > M, at the cap's fractions
    *(Case("tiki_taka_reset_per_sample", fraction, micro_batch_size=b, transfer_every=t,
           transfer_lr=rho, sigma2=sigma2, tau=tau, **_STANDARD)
      for fraction, b, t, rho, sigma2, tau in (
          (0.5, 4, 1, 1.0, 1.0, 1.0), (0.9, 2, 10, 20.0, 4.0, 2.0), (0.5, 8, 2, 20.0, 0.1, 1.0),
          (0.9, 4, 4, 1.0, 1.0, 0.5))),
    *(Case("tiki_taka_reset_sp_per_sample", 0.5, stages=stages, micro_batches=mb,
           micro_batch_size=b, transfer_every=t, sigma2=sigma2, tau=tau, **_STANDARD)
      for stages, mb, b, t, sigma2, tau in ((4, 4, 2, 4, 1.0, 1.0), (8, 8, 1, 8, 0.1, 1.0),
                                            (4, 1, 4, 2, 1.0, 0.5), (2, 2, 4, 5, 4.0, 1.0))),
    *(Case(bound, fraction, stages=stages, micro_batch_size=b, transfer_every=t, sigma2=sigma2,
           tau=tau, **_STANDARD)
      for bound in ("tiki_taka_reset_ap_per_sample", "tiki_taka_reset_ap_b_per_sample")
      for fraction, stages, b, t, sigma2, tau in ((0.5, 4, 4, 1, 1.0, 1.0),
                                                  (0.9, 8, 2, 2, 1.0, 1.0),
                                                  (0.5, 4, 8, 4, 0.1, 1.0),
                                                  (0.9, 16, 4, 20, 1.0, 0.5))),
)))

#: the standard rows, then Theorem LF's local rows of the same runs
STANDARD: tuple[Case, ...] = (*_STANDARD_WORST_CASE, *local_cases(_STANDARD_WORST_CASE))

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
SUITES: dict[str, tuple[Case, ...]] = dict(zip(SUITE_NAMES, (QUICK, STANDARD, THOROUGH),
                                               strict=True))


# ------------------------------------------------------------------------------------------------
# running a suite


def check_point(point: dict) -> dict:
    """Sweep function: :func:`simulate.verification.checks.check_bound` of ``point["bound"]`` and
    ``point["config"]``.

    ``point = {"bound": str, "config": SimConfig.to_dict(), "z": float, "format":
    VERIFY_FORMAT}``; returns :meth:`Check.to_dict`.
    """
    check = check_bound(point["bound"], SimConfig(**point["config"]), z=point["z"])
    return check.to_dict()


def check_group(point: dict) -> dict:
    """Sweep function of :func:`run_suite`: the checks of ``point["bounds"]`` on one run of
    ``point["config"]`` (:func:`simulate.verification.checks.check_bounds`).

    ``point = {"bounds": [str, ...], "config": SimConfig.to_dict(), "z": float, "format":
    VERIFY_FORMAT}``; returns ``{"checks": [Check.to_dict(), ...]}`` in the order of ``bounds``.
    """
    checks = check_bounds(point["bounds"], SimConfig(**point["config"]), z=point["z"])
    return {"checks": [check.to_dict() for check in checks]}


def suite_runs(suite: str, *, z: float = 4.0) -> tuple[list[dict], list[tuple[int, int]]]:
    """The sweep points of :func:`run_suite`: one :func:`check_group` point per distinct
    configuration of ``suite`` (its rows in table order), and for each row of the table
    (:func:`suite_points`) the point and the position in it that check it."""
    points: list[dict] = []
    where: list[tuple[int, int]] = []
    of_config: dict[str, int] = {}
    for row in suite_points(suite, z=z):
        key = canonical_json(row["config"])
        if key not in of_config:
            of_config[key] = len(points)
            points.append({"bounds": [], "config": row["config"], "z": row["z"],
                           "format": row["format"]})
        point = points[of_config[key]]
        where.append((of_config[key], len(point["bounds"])))
        point["bounds"].append(row["bound"])
    return points, where


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
    passed = one_sided_pass(check.empirical, check.stderr, check.bound, check.margin_z)
    if check.passed != passed:
        raise ValueError(f"passed={check.passed!r} does not follow from the numbers")
    ratio = check.bound / check.empirical if check.empirical > 0 else math.inf
    if not math.isclose(check.ratio, ratio, rel_tol=1e-12):
        raise ValueError(f"ratio={check.ratio!r} is not bound/empirical")
    _validate_prediction(check)


def validate_group(result: dict) -> None:
    """The sweep's ``validate`` for :func:`check_group` results: a non-empty list of checks,
    each one :func:`validate_check` accepts, of one run (the same empirical numbers)."""
    checks = result["checks"]
    if not isinstance(checks, list) or not checks:
        raise ValueError(f"checks={checks!r} is not a non-empty list of checks")
    for check in checks:
        validate_check(check)
    if len({(c["empirical"], c["stderr"]) for c in checks}) != 1:
        raise ValueError("the checks of one run differ in their empirical mean or error")


def _validate_prediction(check: Check) -> None:
    """A cached :class:`~simulate.verification.prediction.Prediction` agrees with its check and with
    itself
    (floor, target and predicted iterations recomputed from the check's constants)."""
    p = check.prediction
    if not isinstance(p, Prediction):
        raise ValueError("the check has no prediction (an entry of an older format)")
    c = check.config
    name = check.bound_name
    if p.floor != bound_floor(name, check.constants) or not (
            isinstance(p.start, float) and math.isfinite(p.start) and p.start >= 0):
        raise ValueError(f"prediction floor={p.floor!r} / start={p.start!r} do not follow")
    if p.eps != target(p.floor, p.start):
        raise ValueError(f"prediction eps={p.eps!r} is not sqrt(floor * start)")
    k_sim = p.simulated_iterations
    running = np.asarray(p.running, dtype=float)
    if p.eps is None:
        if k_sim is not None or p.predicted_iterations is not None or running.size:
            raise ValueError("a vacuous prediction has no iterations")
        return
    if p.predicted_iterations != predicted_iterations(name, check.constants, p.eps):
        raise ValueError(f"predicted_iterations={p.predicted_iterations!r} does not follow")
    if k_sim is not None and not 1 <= k_sim <= c.steps:
        raise ValueError(f"simulated_iterations={k_sim!r} is not in [1, K]")
    if running.size != (k_sim or 0) or not np.all(np.isfinite(running)) or (
            k_sim is not None and (int(first_hit(running, p.eps)) != k_sim
                                   or running[0] != p.start)):
        raise ValueError("the prediction's running average does not give its simulated_iterations")
    cycles = [None if k is None else int(cycles_after(c.mode, c.stages, c.micro_batches, k))
              for k in (p.predicted_iterations, k_sim)]
    if [p.predicted_cycles, p.simulated_cycles] != cycles:
        raise ValueError("the prediction's cycles do not follow from its iterations")
    ratio = None if None in cycles else cycles[0] / cycles[1]
    if p.ratio != ratio:
        raise ValueError(f"prediction ratio={p.ratio!r} is not predicted/simulated cycles")


def run_suite(
    name: str, jobs: int | None = None, scheduler=None, *, cache=True, z: float = 4.0,
    progress: bool | None = None, on_sweep: Callable[[SweepResult], object] | None = None,
) -> list[Check]:
    """Run the checks of suite ``name`` (``quick``, ``standard``, ``thorough``) as a cached sweep.

    ``jobs``, ``scheduler``, ``cache`` and ``progress`` are those of
    :func:`simulate.execution.sweep.run_sweep` (finished checks are cached and reused; a cached
    check is validated by :func:`validate_check`, and recomputed when it does not verify).
    ``on_sweep(result)``, if given, receives the :class:`~simulate.execution.sweep.SweepResult` (its
    counts
    of computed, cached and damaged entries).
    """
    points, where = suite_runs(name, z=z)
    sweep = run_sweep(check_group, points, jobs=jobs, scheduler=scheduler, cache=cache,
                      progress=progress, desc=f"verify {name}", validate=validate_group)
    if on_sweep is not None:
        on_sweep(sweep)
    return [Check.from_dict(sweep.results[point]["checks"][i]) for point, i in where]
