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
              + \underbrace{\frac{c_{\mathrm{stale}}\,\alpha^2 D}{b}}_{\text{staleness (async)}} .

with :math:`S = \lVert\nabla f(W_0)\rVert^2` the start every run shares (measured by the
calibration, ``problem["start"]``): the running average of a descent method cannot exceed its
start, and :math:`c_K/(\alpha K + c_K/S)` is the theorems' :math:`c_K/(\alpha K)` once
:math:`\alpha K \gg c_K/S`, saturating at :math:`S` for small ``K`` (without a recorded start the
transient is :math:`c_K/(\alpha K)`). Term by term this is Theorem 2 / Corollary 3 (``sync``) and
Theorem 4'B (``async``) of
``docs/theory.md``: :math:`2\Delta/(\alpha q_{\min} K)`, :math:`L\alpha q_{\max}^2\sigma^2/(n
q_{\min})`, :math:`G_\infty^2\sigma^2/(\theta n q_{\min}^2)` and
:math:`8\kappa L_s^2\alpha^2 D q_{\max}^2\sigma^2/b`, with each product of constants replaced by
one free coefficient :math:`c \ge 0` per mode (three for ``sync``, four for ``async``). At the
best step of the bound this is the registry's rate form :math:`a/\sqrt K + c/K + \mathrm{floor}`
(Proposition 5); at a given step it is inverted exactly:

.. math::

    K(\epsilon) = \frac{1}{\alpha}\Bigl(\frac{c_K}{\epsilon - F} - \frac{c_K}{S}\Bigr),
    \qquad
    F = \frac{c_{\mathrm{noise}}\alpha + c_{\mathrm{floor}}}{n}
        + \frac{c_{\mathrm{stale}}\alpha^2 D}{b},

unreachable when :math:`\epsilon \le F`.

**Per-sample writes.** A calibration of runs that write every sample (``problem["write"] =
"per-sample"``, :data:`theory.vocabulary.WRITE_SEMANTICS`; a crossbar, aihwkit) fits the
per-sample form, in which the floor is not divided by the batch:

.. math::

    \hat g_{\mathrm{PS}}(K) = \frac{c_K}{\alpha K + c_K/S} + \frac{c_{\mathrm{noise}}\alpha}{n}
        + c_{\mathrm{floor}} + \frac{c_{\mathrm{stale}}\alpha^2 D}{b} .

The floor is the bias of the asymmetric part :math:`G(V)\lvert h\rvert` of each write, of the
order of one sample's noise, and it does not average over the ``n`` writes (Corollary 3PS and
its remark; Theorem 4'PS). The noise ball and the staleness are variances of independent
per-sample noise, and those do average over the writes: the ``1/n`` (``1/b``) stays.
Corollary 3PS's bound drops that ``1/n`` from its noise term, because its Step 4 bounds
:math:`\lVert\bar U\rVert^2` by convexity; measured, the form with the ``1/n`` fits simulated
per-sample runs with 4x smaller log residuals (``bench/bench_per_sample_form.py``: rms 0.036
against 0.155 on the default problem, n = 1, 4, 8). 4'PS's staleness also has a part in
:math:`D^2 G_\infty^2` that the form has no coefficient for. :func:`model_terms` takes
``write``; the forecast uses the calibration's own (:attr:`Calibration.write`), and a plan of
other writes is refused (:func:`check_write`).

**Networks.** A calibration of a digits network (``problem["problem"]`` one of
:data:`theory.networks.NETWORK_PROBLEMS`, written by ``aimc-pipeline calibrate --problem
digits-mlp``) fits the same form to another descending measure of the run: the test error
:math:`1 - \mathrm{accuracy}` (``target = "accuracy"``) or the training loss in nats
(``target = "loss"``), ``eps`` that measure's level (:func:`theory.networks.target_level`) and
:math:`S` its value at :math:`W_0`. No theorem gives this form for a network (its ``L``,
``Delta``, ``sigma2`` are unknown, not recorded): it is a curve model with the theorems'
dependence on the step, the batch and the delay, and its residuals (:attr:`ModeFit.residual_rms`)
say how well it describes the runs. Its forecast is the updates to the calibration's own target
(:attr:`Calibration.target`), which ``plan`` reports beside the guarantee (whose eps is in the
units of the placeholder constants).

Cycles come from the one timing rule,
:func:`theory.schedules.cycles_after` (``sync`` :math:`2(B+M-1)K`, ``async`` :math:`2(K+M-1)`).

**The file.** :class:`Calibration` (written by ``aimc-pipeline calibrate``, read by ``aimc-pipeline
plan --calibration``) holds per mode the fitted coefficients, their bootstrap intervals and the
bootstrap draws themselves (so a forecast's interval is that of the joint fit), the design, the
seeds, the problem's constants and their fingerprint, the package version and the configuration
that created it, and a checksum of all of it. :mod:`theory.calibration_file` writes it as strict
JSON atomically (``write_calibration``) and reads it (``read_calibration``: schema, integrity,
checksum), refusing a bad or edited file with one line naming the key. No pickle.

Units: ``eps`` and :math:`\hat g` in squared-gradient units, :math:`\alpha` in weight^2/loss,
``K`` in updates; :math:`c_K` in loss units, :math:`c_{\mathrm{noise}}` per step unit,
:math:`c_{\mathrm{floor}}` in squared-gradient units, :math:`c_{\mathrm{stale}}` per squared step.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache

import numpy as np
import sympy as sp

from .compiled import compile_expr
from .errors import ParameterError, check_range
from .fileio import content_checksum, strict_json
from .networks import NETWORK_PROBLEMS, target_level
from .schedules import cycles_after, transfer_cycles
from .symbols import B as B_sym
from .symbols import D as D_sym
from .symbols import K as K_sym
from .symbols import alpha, n
from .symbols import b as b_sym
from .theorems import get_bound
from .vocabulary import CALIBRATED_ALGORITHMS, CALIBRATED_MODES, WRITE_SEMANTICS

__all__ = [
    "CALIBRATED_ALGORITHMS", "CALIBRATED_MODES", "CALIBRATION_FORMAT", "COEFFICIENTS",
    "Calibration", "FINGERPRINT_KEYS", "FINGERPRINT_SETTINGS", "Forecast", "MODEL_TERMS",
    "ModeFit", "NETWORK_SETTINGS", "PROOF_FORMS", "check_algorithm", "check_write",
    "forecast_iterations", "model_floor", "model_terms", "predicted_cycles",
    "problem_fingerprint", "proof_label", "theory_coefficients",
]

#: version of the calibration file format (bumped when a field's meaning changes)
CALIBRATION_FORMAT = 2
#: the free coefficients of each mode, in order
COEFFICIENTS: dict[str, tuple[str, ...]] = {
    "sync": ("c_K", "c_noise", "c_floor"),
    "async": ("c_K", "c_noise", "c_floor", "c_stale"),
}
#: the names of the model's terms (:func:`model_terms`), in the order of the coefficients
MODEL_TERMS = ("transient", "noise", "floor", "staleness")
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


#: the registry entry whose form each (mode, write) model takes (its coefficients are the proved
#: ones): Corollary 3 and Theorem 4'B for batch-mean writes, Corollary 3PS and Theorem 4'PS for
#: per-sample writes
PROOF_FORMS = {("sync", "batch-mean"): "analog_sgd_sp", ("async", "batch-mean"): "analog_sgd_ap_b",
               ("sync", "per-sample"): "analog_sgd_sp_per_sample",
               ("async", "per-sample"): "analog_sgd_ap_per_sample"}


@cache
def _proved_coefficients(mode: str, write: str = "batch-mean") -> tuple[sp.Expr, ...]:
    r"""The products of constants the registry entry of ``(mode, write)`` has where the model has
    free coefficients (the ``alpha^-1 K^-1``, ``alpha`` and ``alpha^0`` parts, times the batch,
    or ``b/D`` for the staleness part). Per-sample entries are read at one sample per write
    (``B = b = 1``, and ``D = 1`` for the staleness): there the form's ``1/n`` on the noise,
    which Corollary 3PS and Theorem 4'PS do not have, is 1, and 4'PS's staleness
    :math:`4\kappa L_s^2\alpha^2(q_{\max}\sqrt{D/b} + G_\infty D)^2\sigma^2` has its
    :math:`D^2` part counted at ``D = 1``."""
    bound = get_bound(PROOF_FORMS[mode, _check_write(write)])
    if write == "per-sample":
        expr = sp.expand(bound.expr.subs({B_sym: 1, b_sym: 1}))
        transient = sp.simplify(expr.coeff(K_sym, -1) * alpha)
        rest = sp.expand(expr - transient / (alpha * K_sym))
        out = [transient, rest.coeff(alpha, 1), rest.coeff(alpha, 0)]
        if mode == "async":
            out.append(rest.coeff(alpha, 2))
        return tuple(sp.simplify(x.subs(D_sym, 1)) for x in out)
    expr = sp.expand(bound.expr.subs(B_sym * b_sym, n)) if mode == "sync" else sp.expand(
        bound.expr)
    batch = n if mode == "sync" else b_sym
    expr = expr.subs(B_sym, n / b_sym) if mode == "sync" else expr
    transient = sp.simplify(expr.coeff(K_sym, -1) * alpha)
    rest = sp.expand(expr - transient / (alpha * K_sym))
    out = [transient, sp.simplify(rest.coeff(alpha, 1) * batch),
           sp.simplify(rest.coeff(alpha, 0) * batch)]
    if mode == "async":
        out = [sp.simplify(x.subs(D_sym, 1)) for x in out]  # the floor factor for D >= 1
        out.append(sp.simplify(rest.coeff(alpha, 2) * b_sym / D_sym))
    return tuple(out)


def theory_coefficients(mode: str, values: Mapping[str, float],
                        write: str = "batch-mean") -> dict[str, float]:
    r"""What the proofs put where the model has free coefficients, for these constants.

    Read off the registry entry :data:`PROOF_FORMS` of the mode and write (batch-mean:
    Corollary 3 for ``sync``, Theorem 4'B for ``async``; per-sample: Corollary 3PS and Theorem
    4'PS at one sample per write), at ``values["theta"]``: :math:`c_K = 2\Delta/q_{\min}`,
    :math:`c_{\mathrm{noise}} = L q_{\max}^2\sigma^2/q_{\min}`,
    :math:`c_{\mathrm{floor}} = G_\infty^2\sigma^2/(	heta q_{\min}^2)` (times 4'B's factor
    :math:`1 + 	heta(1-	heta)q_{\min}^2/q_{\max}^2` for batch-mean ``async``),
    :math:`c_{\mathrm{stale}} = 8\kappa L_s^2 q_{\max}^2\sigma^2` (4'B) or
    :math:`4\kappa L_s^2 (q_{\max} + G_\infty)^2\sigma^2` (4'PS at ``b = D = 1``). The fitted
    coefficients divided by these say how much of each worst case the problem really has.
    """
    _check_mode(mode)
    return {name: float(compile_expr(expr)(values)) for name, expr in
            zip(COEFFICIENTS[mode], _proved_coefficients(mode, write), strict=True)}


def proof_label(mode: str, write: str = "batch-mean") -> str:
    """The proof whose products :func:`theory_coefficients` gives (``"Theorem 4'PS"``, ...)."""
    return get_bound(PROOF_FORMS[_check_mode(mode), _check_write(write)]).proof


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


def _check_mode(mode: str) -> str:
    if mode not in CALIBRATED_MODES:
        raise ParameterError(f"mode={mode!r} is not calibrated; valid: "
                             f"{', '.join(CALIBRATED_MODES)}")
    return mode


def _coefficient_arrays(mode: str, coefficients) -> list[np.ndarray]:
    """The coefficients of ``mode`` as arrays (a trailing axis of draws is allowed)."""
    names = COEFFICIENTS[mode]
    values = [np.asarray(coefficients[name] if isinstance(coefficients, Mapping)
                         else coefficients[i], dtype=float) for i, name in enumerate(names)]
    if len(values) != len(names):
        raise ParameterError(f"coefficients: {mode} needs {len(names)} ({', '.join(names)})")
    return values + [np.zeros(())] * (4 - len(values))


def _samples(mode: str, B, b):
    return np.asarray(b, dtype=float) * (np.asarray(B, dtype=float) if mode == "sync" else 1.0)


def _check_write(write: str) -> str:
    if write not in WRITE_SEMANTICS:
        raise ParameterError(f"write={write!r} is not valid; valid: {', '.join(WRITE_SEMANTICS)}")
    return write


def model_terms(mode: str, coefficients, K, *, lr, M, B=1, b=1, start=None,
                write: str = "batch-mean") -> dict[str, np.ndarray]:
    r"""The four terms of :math:`\hat g(K)` (module docstring) by :data:`MODEL_TERMS` name.

    ``coefficients`` is a mapping by :data:`COEFFICIENTS` name or a sequence in that order
    (arrays broadcast with ``K``, ``lr``, ``M``, ``B``, ``b``); ``staleness`` is 0 for ``sync``;
    ``start`` is :math:`S` (``None``: the unsaturated transient :math:`c_K/(\alpha K)`).
    ``write="per-sample"`` is the per-sample form (module docstring): the floor
    :math:`c_{\mathrm{floor}}` is not divided by the batch.
    """
    _check_mode(mode)
    c_k, c_noise, c_floor, c_stale = _coefficient_arrays(mode, coefficients)
    lr = np.asarray(lr, dtype=float)
    n = _samples(mode, B, b)
    delay = np.maximum(np.asarray(M, dtype=float) - 1.0, 0.0) if mode == "async" else 0.0
    return {
        "transient": c_k / (lr * np.asarray(K, dtype=float)
                            + (0.0 if start is None else c_k / float(start))),
        "noise": c_noise * lr / n,
        "floor": c_floor / (1.0 if _check_write(write) == "per-sample" else n),
        "staleness": c_stale * lr**2 * delay / np.asarray(b, dtype=float),
    }


def model_floor(mode: str, coefficients, *, lr, M, B=1, b=1, write: str = "batch-mean"
                ) -> np.ndarray:
    """:math:`F`, the model's limit ``K -> inf`` at step ``lr`` (squared-gradient units)."""
    terms = model_terms(mode, coefficients, np.inf, lr=lr, M=M, B=B, b=b, write=write)
    return terms["noise"] + terms["floor"] + terms["staleness"]


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
    """

    mode: str
    values: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    draws: tuple[tuple[float, ...], ...]
    residual_rms: float
    observations: int

    def __post_init__(self):
        _check_mode(self.mode)
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
                "residual_rms": self.residual_rms, "observations": self.observations}


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
        Central coverage of the intervals (e.g. 0.95).
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
    format: int = CALIBRATION_FORMAT
    edited: bool = field(default=False, compare=False)

    def __post_init__(self):
        if self.format != CALIBRATION_FORMAT:
            raise ParameterError(f"format={self.format!r} is not supported; valid: "
                                 f"{CALIBRATION_FORMAT}")
        if not self.fits:
            raise ParameterError("fits: a calibration needs at least one mode")
        for mode, fit in self.fits.items():
            _check_mode(mode)
            if not isinstance(fit, ModeFit) or fit.mode != mode:
                raise ParameterError(f"fits: the entry of {mode} is not its ModeFit")
        check_range("ci_level", self.ci_level, 0, 1, low_open=True, high_open=True)
        object.__setattr__(self, "design", tuple(dict(p) for p in self.design))
        if self.algorithm not in CALIBRATED_ALGORITHMS:
            raise ParameterError(f"algorithm={self.algorithm!r} is not calibrated; valid: "
                                 f"{', '.join(CALIBRATED_ALGORITHMS)}")
        if self.algorithm == "tiki-taka":
            missing = [k for k in ("transfer_every", "transfer_slice") if k not in self.problem]
            if missing:
                raise ParameterError(f"problem: a tiki-taka calibration records "
                                     f"{', '.join(missing)}")

    def fit(self, mode: str) -> ModeFit:
        """The :class:`ModeFit` of ``mode`` (a one-line error when the design had none)."""
        _check_mode(mode)
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
            "ci_level": self.ci_level,
        })
        return {"format": out["format"], "checksum": content_checksum(out), **out}


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
    _check_write(write)
    if cal.write != write:
        raise ParameterError(
            f"calibration={source!r} was made with write {cal.write!r}, the plan is for write "
            f"{write!r} (the per-sample floor does not fall with the batch); calibrate with "
            f"aimc-pipeline calibrate --write {write}"
        )
    return cal


def forecast_iterations(cal: Calibration, mode: str, eps, *, lr, M, B=1, b=1
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Calibrated iterations to ``eps`` at step ``lr``: the fit and its bootstrap interval.

    :math:`K(\epsilon) = \lceil (c_K/(\epsilon - F) - c_K/S)/\alpha\rceil` (at least 1; ``inf``
    where :math:`\epsilon \le F`; :math:`S` = :attr:`Calibration.start`) for the fitted
    coefficients, and the :attr:`Calibration.ci_level`
    percentile interval of the same over the bootstrap draws. Arrays broadcast.

    Returns
    -------
    (ndarray, ndarray, ndarray)
        Iterations (float, whole numbers or ``inf``), the interval's low and high ends.
    """
    fit = cal.fit(mode)
    start = cal.start
    eps = np.asarray(eps, dtype=float)
    shape = np.broadcast_shapes(eps.shape, *(np.shape(x) for x in (lr, M, B, b)))

    def solve(coeffs):
        coeffs = [np.asarray(c, dtype=float) for c in coeffs]
        floor = model_floor(mode, coeffs, lr=lr, M=M, B=B, b=b, write=cal.write)
        gap = eps - floor
        with np.errstate(divide="ignore", invalid="ignore"):
            k = (coeffs[0] / gap - (0.0 if start is None else coeffs[0] / start)) / np.asarray(
                lr, dtype=float)
        k = np.where(gap > 0, np.maximum(np.ceil(k), 1.0), np.inf)
        return np.broadcast_to(k, np.broadcast_shapes(shape, np.shape(k)))

    point = solve(fit.values)
    if fit.draws:
        draws = np.asarray(fit.draws, dtype=float)  # (R, c)
        expand = (slice(None),) + (None,) * len(shape)
        ks = solve([draws[:, i][expand] for i in range(draws.shape[1])])
        tail = (1.0 - cal.ci_level) / 2
        low, high = (np.quantile(ks, q, axis=0, method="inverted_cdf")
                     for q in (tail, 1.0 - tail))
    else:
        low = high = point
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
    terms = {name: float(v) for name, v in model_terms(
        mode, cal.fit(mode).values, k, lr=lr, M=M, B=B, b=b, start=cal.start,
        write=cal.write).items()}
    if mode == "sync":
        terms.pop("staleness")
    return Forecast(mode=mode, stages=M, micro_batches=B, micro_batch_size=b, eps=float(eps),
                    lr=float(lr), iterations=k, cycles=cycles, low=c_low, high=c_high,
                    terms=terms, dominant=max(terms, key=terms.get))
