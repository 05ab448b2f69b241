r"""A calibrated complexity model: the theorems' form with coefficients fitted to simulation.

The proved bounds (:mod:`theory.theorems`) are worst cases: their constants are the ones the proofs
need, not the ones a given problem has. A **calibration** keeps the *form* in which the theorems
say the average squared gradient norm depends on the run, and frees the coefficients. After ``K``
updates at a constant step :math:`\alpha` (the step the plan runs at), with ``n`` samples per
update (``B b`` sync, ``b`` async) and the maximal stage delay :math:`D = M - 1` (async):

.. math::

    \hat g(K) = \underbrace{\frac{c_K}{\alpha K + c_K/S}}_{\text{transient}}
              + \underbrace{\frac{c_{\mathrm{noise}}\,\alpha}{n}}_{\text{noise}}
              + \underbrace{\frac{c_{\mathrm{floor}}}{n}}_{\text{floor}}
              + \underbrace{\frac{c_{s1}\,\alpha^2 D}{b}}_{\text{staleness}}
              + \underbrace{\frac{c_{s2}\,\alpha^2 D^2}{b}}_{\text{bias}} ,

the last two async only (:mod:`theory.calibration_model` holds the form: :func:`model_terms`,
:func:`model_floor`, :func:`iterations_to`, :func:`theory_coefficients`). Term by term this is
Corollary 3 (``sync``) and Theorems 4'B / 4' (``async``) of ``docs/theory.md``:
:math:`2\Delta/(\alpha q_{\min} K)`, :math:`L\alpha q_{\max}^2\sigma^2/(n q_{\min})`,
:math:`G_\infty^2\sigma^2/(\theta n q_{\min}^2)`, the staleness
:math:`8\kappa L_s^2\alpha^2 D q_{\max}^2\sigma^2/b` and Theorem 4''s bias
:math:`8\kappa L_s^2\alpha^2 D^2 G_\infty^2\sigma^2/b` (Young's split of its
:math:`4\kappa L_s^2\alpha^2(q_{\max}\sqrt{D} + G_\infty D)^2\sigma^2/b`; 4'B charges the bias
to its floor only while :math:`L_s^2D^2\alpha^2 \le (1-\theta)/(8\kappa q_{\max}^2)`, which the
design's steps near the stability limit pass), each product of constants replaced by one free
coefficient :math:`c \ge 0` (three for ``sync``, five for ``async``).

**The saturation** :math:`c_K/S` is a modelling term, not a theorem's: :math:`S =
\lVert\nabla f(W_0)\rVert^2` is the start every run shares (``problem["start"]``), and the
running average of a descent method that starts at :math:`S` stays near or below it for small
``K``, where :math:`c_K/(\alpha K)` grows without bound. The transient equals the theorems'
:math:`c_K/(\alpha K)` once :math:`\alpha K \gg c_K/S`. Kept because it fits: on the default
design the rms log residual is 0.056 (sync) and 0.041 (async) with it, 0.106 and 0.075 without
(``docs/results/calibration-identified.md``). Without a recorded start the transient is
:math:`c_K/(\alpha K)`. At a given step the model is inverted exactly:

.. math::

    K(\epsilon) = \frac{1}{\alpha}\Bigl(\frac{c_K}{\epsilon - F} - \frac{c_K}{S}\Bigr),
    \qquad
    F = \frac{c_{\mathrm{noise}}\alpha + c_{\mathrm{floor}}}{n}
        + \frac{(c_{s1} D + c_{s2} D^2)\alpha^2}{b},

unreachable when :math:`\epsilon \le F`.

**Per-sample writes.** A calibration of runs that write every sample (``problem["write"] =
"per-sample"``, :data:`theory.vocabulary.WRITE_SEMANTICS`; a crossbar, aihwkit) fits the
per-sample form, in which the floor :math:`c_{\mathrm{floor}}` and the bias
:math:`c_{s2}\alpha^2D^2` are not divided by the batch: both are biases of one write (the
asymmetric part :math:`G(V)\lvert h\rvert` of each write, Corollary 3PS and Theorem 4'PS,
whose :math:`D^2G_\infty^2` part has no :math:`1/b`), and biases do not average over the
``n`` writes. The noise ball and the staleness are variances of independent per-sample noise,
and those do average: their ``1/n`` (``1/b``) stays. Corollary 3PS drops that ``1/n`` from its
noise term (its Step 4 bounds :math:`\lVert\bar U\rVert^2` by convexity); measured, the form
with the ``1/n`` fits simulated per-sample runs with 4x smaller log residuals
(``bench/bench_per_sample_form.py``). A plan of other writes is refused (:func:`check_write`).

**What it knows.** Each fit records per coefficient its term's largest share of
:math:`\hat g` over the design (:attr:`ModeFit.shares`) and whether the data identify it
(:attr:`ModeFit.identified`: a share of at least :data:`SHARE_MIN` and a bootstrap interval
that neither collapses nor reaches the fit's lower bound); a coefficient not identified has a
**profile upper bound** instead (:attr:`ModeFit.profile_high`: the largest value whose refit
keeps the residual sum of squares within the F threshold). A forecast's interval includes the
model's own error: the bootstrap interval of the joint fit widened by the fit's leave-one-
pipeline-out conformal factor (:attr:`ModeFit.error_factor`), at
:attr:`Calibration.prediction_level` (:mod:`simulate.verification.calibration_error`).

**Networks.** A calibration of a digits network (``problem["problem"]`` one of
:data:`theory.networks.NETWORK_PROBLEMS`, written by ``aimc-pipeline calibrate --problem
digits-mlp``) fits the same form (async with both staleness terms) to another descending
measure of the run: the test error :math:`1 - \mathrm{accuracy}` (``target = "accuracy"``) or
the training loss in nats (``target = "loss"``), ``eps`` that measure's level
(:func:`theory.networks.target_level`) and :math:`S` its value at :math:`W_0`. No theorem gives
this form for a network: it is a curve model with the theorems' dependence on the step, the
batch and the delay; its residuals and error factor say how well it describes the runs.

Cycles come from the one timing rule,
:func:`theory.schedules.cycles_after` (``sync`` :math:`2(B+M-1)K`, ``async`` :math:`2(K+M-1)`).

**The file.** :class:`Calibration` (written by ``aimc-pipeline calibrate``, read by ``aimc-pipeline
plan --calibration``) holds per mode the fitted coefficients, their bootstrap intervals and
draws, shares, identifiability, profile bounds and error factor, the design, the seeds, the
problem's constants and their fingerprint, the package version and the configuration that
created it, and a checksum of all of it. :mod:`theory.calibration_file` writes it as strict
JSON atomically and reads it (schema, integrity, checksum), refusing a bad or edited file with
one line naming the key. No pickle.

Units: ``eps`` and :math:`\hat g` in squared-gradient units, :math:`\alpha` in weight^2/loss,
``K`` in updates; :math:`c_K` in loss units, :math:`c_{\mathrm{noise}}` per step unit,
:math:`c_{\mathrm{floor}}` in squared-gradient units, :math:`c_{s1}, c_{s2}` per squared step.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from .calibration_model import (
    BIAS_FORMS,
    COEFFICIENTS,
    MODEL_TERMS,
    PROOF_FORMS,
    TERM_OF,
    iterations_to,
    model_floor,
    model_terms,
    proof_label,
    term_shares,
    theory_coefficients,
    valid_mode,
    valid_write,
)
from .errors import ParameterError, check_range
from .fileio import content_checksum, strict_json
from .networks import NETWORK_PROBLEMS, target_level
from .schedules import cycles_after, transfer_cycles
from .vocabulary import CALIBRATED_ALGORITHMS, CALIBRATED_MODES

__all__ = [
    "BIAS_FORMS", "CALIBRATED_ALGORITHMS", "CALIBRATED_MODES", "CALIBRATION_FORMAT",
    "COEFFICIENTS", "Calibration", "FINGERPRINT_KEYS", "FINGERPRINT_SETTINGS", "Forecast",
    "MODEL_TERMS", "ModeFit", "NETWORK_SETTINGS", "PROOF_FORMS", "SHARE_MIN", "TERM_OF",
    "check_algorithm", "check_write", "forecast_iterations", "interval_label", "iterations_to",
    "model_floor",
    "model_terms", "predicted_cycles", "problem_fingerprint", "proof_label", "term_shares",
    "theory_coefficients",
]

#: version of the calibration file format (bumped when a field's meaning changes); 3: five async
#: coefficients (c_s1, c_s2), shares, identifiability, profile bounds, error factors
CALIBRATION_FORMAT = 3
#: a coefficient whose term never reaches this share of the model on the design is not identified
SHARE_MIN = 0.01
#: the problem constants (symbol names of :mod:`theory.symbols`) a fingerprint covers
FINGERPRINT_KEYS = ("L", "L_s", "Delta", "sigma2", "theta", "q_min", "q_max", "G_inf")
#: the description of the runs a fingerprint covers beside the constants (the fields of
#: :class:`simulate.verification.CalibrationProblem`), with what a problem without the key means
FINGERPRINT_SETTINGS = {
    "problem": None, "dim": None, "device": None, "tau": None, "weight_bound": None,
    "seed": None, "algorithm": "analog", "transfer_every": None, "transfer_slice": None,
    "update": "expected", "pulse_type": None, "write": "batch-mean",
}
#: what a network calibration records beside those (:mod:`simulate.verification.
#: calibration_network`): the network, its data and the target; hashed only when present, so an
#: oracle calibration's fingerprint is what it always was
NETWORK_SETTINGS = ("layers", "width", "activation", "data", "target", "target_value", "budget")
#: significant digits of each constant in the fingerprint (printing and re-reading keeps it)
_FINGERPRINT_DIGITS = 6


def problem_fingerprint(values: Mapping) -> str:
    """A short hash of a calibration's problem: its constants and the description of its runs.

    It covers the constants :data:`FINGERPRINT_KEYS` (6 significant digits each: two sets that
    print the same to 6 digits have the same fingerprint; a missing constant is hashed as
    ``None``) and the settings :data:`FINGERPRINT_SETTINGS`: the problem (name, dimension,
    seed), the device (name, ``tau``, the region ``weight_bound``), the algorithm (and Tiki-Taka's
    transfers), the update kind, the pulse type and the write semantics (a missing setting is
    hashed as its :data:`FINGERPRINT_SETTINGS` value, so constants alone hash as an analog,
    expected-update, batch-mean problem). A calibration of per-sample writes and one of
    batch-mean writes of the same problem therefore differ. A network calibration's
    :data:`NETWORK_SETTINGS` (the network, its data, the target) are covered too.
    """
    def digits(value):
        if isinstance(value, float):
            return f"{value:.{_FINGERPRINT_DIGITS}g}"
        return value

    canon = {}
    for key in FINGERPRINT_KEYS:
        value = values.get(key)
        canon[key] = None if value is None else f"{float(value):.{_FINGERPRINT_DIGITS}g}"
    for key, default in FINGERPRINT_SETTINGS.items():
        canon[f"run.{key}"] = digits(values.get(key, default))
    for key in NETWORK_SETTINGS:  # a network's (absent from an oracle calibration)
        if key in values:
            canon[f"network.{key}"] = digits(values[key])
    text = json.dumps(canon, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class ModeFit:
    """The fitted coefficients of one mode.

    Attributes
    ----------
    mode : str
        ``"sync"`` or ``"async"``.
    values : tuple of float
        The least-squares coefficients, in the order of :data:`COEFFICIENTS` ``[mode]`` (finite,
        > 0: the fit's lower bound is 1e-12).
    low, high : tuple of float
        Their percentile bootstrap interval (level :attr:`Calibration.ci_level`), which holds
        ``values``.
    draws : tuple of tuple of float
        The bootstrap fits, one tuple of coefficients per resample (their joint spread gives a
        forecast's interval).
    residual_rms : float
        Root mean square of the log residuals of the fit (natural log).
    observations : int
        Hitting times the fit used.
    shares : tuple of float
        Per coefficient, its term's largest share of the fitted model over the observations
        (empty: not recorded, every coefficient counts as identified).
    identified : tuple of bool
        Per coefficient, whether the design identifies it (share at least :data:`SHARE_MIN`,
        bootstrap interval neither of zero width nor reaching the lower bound 1e-12).
    profile_high : tuple of float
        Per coefficient not identified, its profile upper bound (``inf``: none within the
        searched range); for an identified one, its interval's high end.
    error_factor : float or None
        The model's own error: the leave-one-pipeline-out conformal factor ``f >= 1`` (the
        :attr:`Calibration.prediction_level` quantile of held-out ``|log K_pred/K_sim|``, as a
        factor); ``None`` with fewer than three pipelines in the mode.
    error_scores : int
        Held-out hitting times behind ``error_factor``.
    """

    mode: str
    values: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    draws: tuple[tuple[float, ...], ...]
    residual_rms: float
    observations: int
    shares: tuple[float, ...] = ()
    identified: tuple[bool, ...] = ()
    profile_high: tuple[float, ...] = ()
    error_factor: float | None = None
    error_scores: int = 0

    def __post_init__(self):
        valid_mode(self.mode)
        width = len(COEFFICIENTS[self.mode])
        for name in ("values", "low", "high"):
            seq = tuple(float(v) for v in getattr(self, name))
            if len(seq) != width:
                raise ParameterError(f"{name}: {self.mode} has {width} coefficients "
                                     f"({', '.join(COEFFICIENTS[self.mode])}), got {len(seq)}")
            _positive(f"{self.mode}.{name}", seq)
            object.__setattr__(self, name, seq)
        for i, (value, low, high) in enumerate(zip(self.values, self.low, self.high,
                                                  strict=True)):
            if not low <= value <= high:
                raise ParameterError(f"{self.mode}.values[{i}]={value!r} lies outside its "
                                     f"interval [{low!r}, {high!r}]")
        draws = tuple(tuple(float(v) for v in row) for row in self.draws)
        if any(len(row) != width for row in draws):
            raise ParameterError(f"draws: every bootstrap draw of {self.mode} has {width} "
                                 "coefficients")
        for row in draws:
            _positive(f"{self.mode}.draws", row)
        object.__setattr__(self, "draws", draws)
        _finite(f"{self.mode}.residual_rms", (self.residual_rms,))
        for name, kind in (("shares", float), ("identified", bool), ("profile_high", float)):
            seq = tuple(kind(v) for v in getattr(self, name))
            if seq and len(seq) != width:
                raise ParameterError(f"{name}: {self.mode} has {width} coefficients, got "
                                     f"{len(seq)}")
            object.__setattr__(self, name, seq)
        if self.error_factor is not None:
            _finite(f"{self.mode}.error_factor", (self.error_factor,))
            if not self.error_factor >= 1:
                raise ParameterError(f"{self.mode}.error_factor={self.error_factor!r} is below 1")

    def is_identified(self, name: str) -> bool:
        """Whether coefficient ``name`` is identified (:attr:`identified`; unrecorded: yes)."""
        return not self.identified or self.identified[self.names.index(name)]

    @property
    def names(self) -> tuple[str, ...]:
        """The coefficient names (:data:`COEFFICIENTS`)."""
        return COEFFICIENTS[self.mode]

    def coefficients(self) -> dict[str, float]:
        """``{name: value}``."""
        return dict(zip(self.names, self.values, strict=True))

    def to_dict(self) -> dict:
        """JSON-ready fields."""
        return {"mode": self.mode, "names": list(self.names), "values": list(self.values),
                "low": list(self.low), "high": list(self.high),
                "draws": [list(row) for row in self.draws],
                "residual_rms": self.residual_rms, "observations": self.observations,
                "shares": list(self.shares), "identified": list(self.identified),
                "profile_high": [v if math.isfinite(v) else None for v in self.profile_high],
                "error_factor": self.error_factor, "error_scores": self.error_scores}


def _finite(name: str, values) -> None:
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
                value):
            raise ParameterError(f"{name}={value!r} is not a finite number")


def _positive(name: str, values) -> None:
    _finite(name, values)
    for value in values:
        if not value > 0:
            raise ParameterError(f"{name}={value!r} is not positive (a fitted coefficient is at "
                                 "least 1e-12)")


@dataclass(frozen=True)
class Calibration:
    """A fitted complexity model of one problem (see the module docstring).

    Attributes
    ----------
    fits : dict
        ``{mode: ModeFit}`` for the modes of the design.
    problem : dict
        The problem's constants (at least :data:`FINGERPRINT_KEYS` where known) and the
        description of its runs (:data:`FINGERPRINT_SETTINGS`: problem name, device, algorithm,
        update kind, pulse type, write semantics, ...).
    fingerprint : str
        :func:`problem_fingerprint` of ``problem`` (constants and settings).
    design : tuple of dict
        The design points ``{"mode", "M", "B", "b", "lr", "steps"}``.
    seeds : dict
        ``root`` seed, ensemble size ``R``, bootstrap ``resamples``.
    version : str
        Package version that fitted it.
    created_by : dict
        The configuration (command flags) that created it.
    ci_level : float
        Central coverage of the coefficients' bootstrap intervals (e.g. 0.95).
    prediction_level : float
        Central coverage of a forecast's interval (:func:`forecast_iterations`, e.g. 0.9): the
        bootstrap interval at this level widened by the mode's :attr:`ModeFit.error_factor`.
    format : int
        :data:`CALIBRATION_FORMAT`.
    edited : bool
        Read from a file whose checksum does not match its content, accepted by the caller
        (``plan --accept-edited-calibration``; :mod:`theory.calibration_file`). Not written.
    """

    fits: dict
    problem: dict
    fingerprint: str
    design: tuple
    seeds: dict
    version: str
    created_by: dict = field(default_factory=dict)
    ci_level: float = 0.95
    prediction_level: float = 0.9
    format: int = CALIBRATION_FORMAT
    edited: bool = field(default=False, compare=False)

    def __post_init__(self):
        if self.format != CALIBRATION_FORMAT:
            raise ParameterError(f"format={self.format!r} is not supported; valid: "
                                 f"{CALIBRATION_FORMAT} (re-run aimc-pipeline calibrate)")
        if not self.fits:
            raise ParameterError("fits: a calibration needs at least one mode")
        for mode, fit in self.fits.items():
            valid_mode(mode)
            if not isinstance(fit, ModeFit) or fit.mode != mode:
                raise ParameterError(f"fits: the entry of {mode} is not its ModeFit")
        check_range("ci_level", self.ci_level, 0, 1, low_open=True, high_open=True)
        check_range("prediction_level", self.prediction_level, 0, 1, low_open=True,
                    high_open=True)
        object.__setattr__(self, "design", tuple(dict(p) for p in self.design))
        if self.algorithm not in CALIBRATED_ALGORITHMS:
            raise ParameterError(f"algorithm={self.algorithm!r} is not calibrated; valid: "
                                 f"{', '.join(CALIBRATED_ALGORITHMS)}")
        if self.algorithm == "tiki-taka":
            missing = [k for k in ("transfer_every", "transfer_slice") if k not in self.problem]
            if missing:
                raise ParameterError(f"problem: a tiki-taka calibration records "
                                     f"{', '.join(missing)}")

    def interval_level(self, mode: str) -> float:
        """The coverage a forecast's interval of ``mode`` claims: :attr:`prediction_level` with
        an error factor, else :attr:`ci_level` (the bootstrap's: seed noise only)."""
        return (self.prediction_level if self.fit(mode).error_factor is not None
                else self.ci_level)

    def fit(self, mode: str) -> ModeFit:
        """The :class:`ModeFit` of ``mode`` (a one-line error when the design had none)."""
        valid_mode(mode)
        if mode not in self.fits:
            raise ParameterError(f"mode={mode!r} is not in this calibration; calibrated: "
                                 f"{', '.join(self.fits)}")
        return self.fits[mode]

    @property
    def start(self) -> float | None:
        r""":math:`S = \lVert\nabla f(W_0)\rVert^2`, the start of every calibrated run
        (``problem["start"]``; ``None`` when not recorded)."""
        value = self.problem.get("start")
        return None if value is None else float(value)

    @property
    def algorithm(self) -> str:
        """The algorithm of the calibrated runs, ``problem["algorithm"]`` (:data:`CALIBRATED_
        ALGORITHMS`; a file without it, as every analog calibration, is ``"analog"``)."""
        return str(self.problem.get("algorithm", "analog"))

    @property
    def transfer(self) -> dict:
        """The Tiki-Taka transfer settings of the runs (``transfer_every``, ``transfer_slice``;
        empty for analog)."""
        return {key: self.problem[key] for key in ("transfer_every", "transfer_slice")
                if key in self.problem}

    @property
    def update(self) -> str:
        """The update kind of the runs, ``problem["update"]`` (``"expected"`` or ``"pulsed"``)."""
        return str(self.problem.get("update", FINGERPRINT_SETTINGS["update"]))

    @property
    def pulse_type(self) -> str | None:
        """The pulse type of pulsed runs, ``problem["pulse_type"]`` (``None`` for expected)."""
        return self.problem.get("pulse_type")

    @property
    def write(self) -> str:
        """The write semantics of the runs, ``problem["write"]`` (:data:`theory.vocabulary.
        WRITE_SEMANTICS`): the form of the model (:func:`model_terms`)."""
        return str(self.problem.get("write", FINGERPRINT_SETTINGS["write"]))

    @property
    def network(self) -> bool:
        """Whether the runs trained a digits network (the form fits its test error or training
        loss, module docstring) rather than an oracle problem."""
        return self.problem.get("problem") in NETWORK_PROBLEMS

    @property
    def target(self) -> dict | None:
        """A network calibration's target: ``{"kind", "value", "eps", "label"}`` (``eps`` the
        measure's level, :func:`theory.networks.target_level`); ``None`` for an oracle problem."""
        if not self.network:
            return None
        kind, value = str(self.problem["target"]), float(self.problem["target_value"])
        label = (f"test accuracy {value:g}" if kind == "accuracy"
                 else f"training loss {value:g} nats")
        return {"kind": kind, "value": value, "eps": target_level(kind, value), "label": label}

    def matches(self, values: Mapping[str, float]) -> bool:
        """Whether the problem constants ``values`` (a plan's) are this calibration's: the
        fingerprint of its problem with these constants in place of its own is its fingerprint
        (the settings of the runs are the calibration's; :func:`check_algorithm` and
        :func:`check_write` compare those a plan has). The constants the calibration does not
        record (a network's ``L``, ``Delta``, ``sigma2``: unknown) are not compared."""
        given = {key: values[key] for key in FINGERPRINT_KEYS
                 if key in values and key in self.problem}
        return problem_fingerprint({**self.problem, **given}) == self.fingerprint

    def to_dict(self) -> dict:
        """Strict-JSON-ready fields: the file's content, with ``checksum`` the
        :func:`theory.fileio.content_checksum` of the others (:mod:`theory.calibration_file`)."""
        out = strict_json({
            "format": self.format, "problem": dict(self.problem), "fingerprint": self.fingerprint,
            "fits": {mode: fit.to_dict() for mode, fit in self.fits.items()},
            "design": [dict(p) for p in self.design], "seeds": dict(self.seeds),
            "version": self.version, "created_by": dict(self.created_by),
            "ci_level": self.ci_level, "prediction_level": self.prediction_level,
        })
        return {"format": out["format"], "checksum": content_checksum(out), **out}


def interval_label(cal: Calibration, modes) -> str:
    """The coverage of the forecast intervals of ``modes`` as printed: ``"90%"``, or
    ``"90%/95%"`` when the modes' :meth:`Calibration.interval_level` differ."""
    levels = sorted({cal.interval_level(mode) for mode in modes if mode in cal.fits})
    return "/".join(f"{100 * level:g}%" for level in levels) or f"{100 * cal.ci_level:g}%"


def check_algorithm(cal: Calibration, algorithm: str, source: str = "given") -> Calibration:
    """``cal`` if its runs used ``algorithm``, else a one-line :class:`ParameterError` naming
    both (a forecast of one algorithm says nothing about another)."""
    if cal.algorithm != algorithm:
        raise ParameterError(
            f"calibration={source!r} was made with algorithm {cal.algorithm!r}, the plan is for "
            f"algorithm {algorithm!r}; calibrate with aimc-pipeline calibrate --algorithm "
            f"{algorithm}"
        )
    return cal


def check_write(cal: Calibration, write: str, source: str = "given") -> Calibration:
    """``cal`` if its runs wrote as ``write`` (:data:`theory.vocabulary.WRITE_SEMANTICS`), else
    a one-line :class:`ParameterError` naming both: the forecast of one write semantics is off
    by up to a factor ``n`` on the floor for the other (Corollary 3PS)."""
    valid_write(write)
    if cal.write != write:
        raise ParameterError(
            f"calibration={source!r} was made with write {cal.write!r}, the plan is for write "
            f"{write!r} (the per-sample floor does not fall with the batch); calibrate with "
            f"aimc-pipeline calibrate --write {write}"
        )
    return cal


def forecast_iterations(cal: Calibration, mode: str, eps, *, lr, M, B=1, b=1
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Calibrated iterations to ``eps`` at step ``lr``: the fit and its prediction interval.

    :math:`K(\epsilon)` of :func:`iterations_to` (:math:`S` = :attr:`Calibration.start`) for the
    fitted coefficients, and the interval of level :meth:`Calibration.interval_level`: the
    central percentile interval of the same over the bootstrap draws, widened to
    :math:`[K/f, K f]` by the mode's error factor ``f`` (:attr:`ModeFit.error_factor`, the
    model's own error measured leaving each design pipeline out). Arrays broadcast.

    Returns
    -------
    (ndarray, ndarray, ndarray)
        Iterations (float, whole numbers or ``inf``), the interval's low and high ends.
    """
    fit = cal.fit(mode)
    eps = np.asarray(eps, dtype=float)
    shape = np.broadcast_shapes(eps.shape, *(np.shape(x) for x in (lr, M, B, b)))

    def solve(coeffs):
        k = iterations_to(mode, [np.asarray(c, dtype=float) for c in coeffs], eps, lr=lr, M=M,
                          B=B, b=b, start=cal.start, write=cal.write)
        return np.broadcast_to(k, np.broadcast_shapes(shape, np.shape(k)))

    point = solve(fit.values)
    low = high = point
    if fit.draws:
        draws = np.asarray(fit.draws, dtype=float)  # (R, c)
        expand = (slice(None),) + (None,) * len(shape)
        ks = solve([draws[:, i][expand] for i in range(draws.shape[1])])
        tail = (1.0 - cal.interval_level(mode)) / 2
        low, high = (np.quantile(ks, q, axis=0, method="inverted_cdf")
                     for q in (tail, 1.0 - tail))
    if fit.error_factor is not None:
        with np.errstate(invalid="ignore"):
            low = np.minimum(low, np.maximum(np.floor(point / fit.error_factor), 1.0))
            high = np.maximum(high, np.ceil(point * fit.error_factor))
    return point, np.asarray(low, dtype=float), np.asarray(high, dtype=float)


@dataclass(frozen=True)
class Forecast:
    """The calibrated forecast of one configuration (:func:`predicted_cycles`).

    Attributes
    ----------
    mode : str
    stages, micro_batches, micro_batch_size : int
        ``M``, ``B`` (1 for async), ``b``.
    eps : float
        Target (squared-gradient units).
    lr : float
        The step the forecast assumes.
    iterations : float
        Calibrated updates to ``eps`` (whole, or ``inf`` when unreachable).
    cycles, low, high : float
        Clock cycles to ``eps`` and their bootstrap interval (``inf`` when unreachable).
    terms : dict
        :func:`model_terms` at the forecast's ``K`` (``inf`` when unreachable: the floor terms).
    dominant : str
        The largest term.
    shares : dict
        Each term's share of the model at the forecast's ``K`` (:func:`term_shares`; at
        as K grows without bound, the floor terms' split, when unreachable).
    level : float
        The interval's central coverage (:meth:`Calibration.interval_level`).
    not_identified : tuple of str
        The coefficients the design does not identify (:attr:`ModeFit.identified`): their
        terms' shares are upper-bounded, not measured.
    """

    mode: str
    stages: int
    micro_batches: int
    micro_batch_size: int
    eps: float
    lr: float
    iterations: float
    cycles: float
    low: float
    high: float
    terms: dict
    dominant: str
    shares: dict = field(default_factory=dict)
    level: float = 0.95
    not_identified: tuple = ()

    @property
    def reachable(self) -> bool:
        """``eps`` lies above the calibrated floor at this step."""
        return math.isfinite(self.cycles)

    def to_dict(self) -> dict:
        """Strict-JSON-ready fields (unreachable numbers are ``None``)."""
        return strict_json({name: getattr(self, name) for name in self.__dataclass_fields__})


def _cycles(mode: str, k: np.ndarray, M, B) -> np.ndarray:
    k = np.asarray(k, dtype=float)
    finite = np.isfinite(k)
    out = cycles_after(mode, np.where(finite, k, 1.0), M, B if mode == "sync" else 1)
    return np.where(finite, out, np.inf)


def predicted_cycles(cal: Calibration, mode: str, eps: float, M: int, B: int = 1, b: int = 1,
                     *, lr: float, event_cycles: int | None = None) -> Forecast:
    r"""The calibrated forecast of clock cycles to ``eps`` for ``(mode, M, B, b)`` at step ``lr``.

    Iterations from :func:`forecast_iterations`, cycles from the one timing rule
    :func:`theory.schedules.cycles_after` (``sync`` :math:`2(B+M-1)K`, ``async``
    :math:`2(K+M-1)`), the interval the same rule applied to the ends of the iterations'. For a
    Tiki-Taka calibration the transfers are added, :math:`\lfloor K/T\rfloor c_T`
    (:func:`theory.schedules.transfer_cycles`, ``T`` from the calibration, ``c_T`` =
    ``event_cycles``, required then).
    """
    if cal.algorithm == "tiki-taka" and event_cycles is None:
        raise ParameterError("event_cycles=None: a tiki-taka forecast counts the transfers "
                             "(theory.schedules.transfer_event_cycles)")
    check_range("eps", eps, 0, None, low_open=True)
    check_range("lr", lr, 0, None, low_open=True)
    M = check_range("M", M, 1, None, integer=True)
    B = check_range("B", B, 1, None, integer=True) if mode == "sync" else 1
    b = check_range("b", b, 1, None, integer=True)
    k, low, high = (float(x) for x in forecast_iterations(cal, mode, eps, lr=lr, M=M, B=B, b=b))
    cycles, c_low, c_high = (float(_cycles(mode, x, M, B)) for x in (k, low, high))
    if cal.algorithm == "tiki-taka":
        every = int(cal.transfer["transfer_every"])
        cycles, c_low, c_high = (c + float(transfer_cycles(float(x), every, event_cycles))
                                 for c, x in ((cycles, k), (c_low, low), (c_high, high)))
    fit = cal.fit(mode)
    terms = {name: float(v) for name, v in model_terms(
        mode, fit.values, k, lr=lr, M=M, B=B, b=b, start=cal.start, write=cal.write).items()
        if mode == "async" or name not in ("staleness", "bias")}
    shares = term_shares(terms if math.isfinite(k) else {
        name: v for name, v in terms.items() if name != "transient"})
    return Forecast(mode=mode, stages=M, micro_batches=B, micro_batch_size=b, eps=float(eps),
                    lr=float(lr), iterations=k, cycles=cycles, low=c_low, high=c_high,
                    terms=terms, dominant=max(terms, key=terms.get), shares=shares,
                    level=cal.interval_level(mode),
                    not_identified=tuple(name for name in fit.names
                                         if not fit.is_identified(name)))
