r"""Response-function families: one small frozen object per formula (paper-notes section 3).

A pulse moves a weight by :math:`\Delta w_{\min} q_+(w)` (up) or :math:`\Delta w_{\min} q_-(w)`
(down). Every family writes its pair :math:`(q_+, q_-)` once, in :meth:`ResponseFamily.responses`,
as a function of the weight symbol :data:`w` and its parameters; everything else is derived:

.. math::

    F = \frac{q_- + q_+}{2}, \qquad G = \frac{q_- - q_+}{2}, \qquad S = q_+ q_- = F^2 - G^2,

and the symmetric point :math:`w^\star` solves :math:`q_+(w^\star) = q_-(w^\star)` (:math:`G = 0`).
It is solved once per family with sympy, with the parameters as symbols carrying their assumptions
(:meth:`ResponseFamily.symmetric_point_expr`); a numeric root (scipy ``brentq`` on the device range)
is available for every family and tested against it.

All families here are monotone on their range: :math:`q_+` non-increasing and :math:`q_-`
non-decreasing in :math:`w` (so :math:`G` is non-decreasing); ``tests/test_devices.py`` proves it
with sympy derivatives. Weights are in the device's normalised units (dimensionless).

Numbers: the ``*_expr`` properties hold the parameter values as exact rationals of their decimal
form (``0.1153 -> 1153/10000``); :meth:`ResponseFamily.compiled` gives numpy functions, lambdified
once per family with the parameters as arguments and bound per object (both cached).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, fields
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import numpy as np

from ..errors import ParameterError, check_range, show_value

# sympy and scipy are imported inside the functions that use them, so that the family table
# (FAMILIES, parameter_names) is read by run configurations and --help without them
if TYPE_CHECKING:
    import sympy as sp

__all__ = [
    "AsymmetricSoftBounds", "ConstantStep", "ExponentialStep", "FAMILIES", "LinearStep",
    "PowerStep", "ResponseFamily", "Responses", "SoftBounds", "expressions",
    "w",  # noqa: F822 (the module's __getattr__ makes it, with sympy, on first use)
]

@cache
def _weight() -> sp.Symbol:
    """:data:`w`, the weight symbol, made on first use."""
    import sympy as sp

    return sp.Symbol("w", real=True)


def __getattr__(name: str):
    """``w``: the weight (one conductance), normalised units; a real sympy symbol."""
    if name == "w":
        return _weight()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _exact(value: float) -> sp.Rational:
    """The exact rational of a number's shortest decimal repr (``0.1153 -> 1153/10000``)."""
    import sympy as sp

    return sp.Rational(repr(float(value)))


class ResponseFamily(ABC):
    """Base of the response families (each a frozen, hashable dataclass of its parameters).

    Subclasses set ``family`` (the name used by :func:`theory.devices.make_device` and in TOML
    files), ``assumptions`` (the sympy assumptions of each parameter, used to solve and prove
    symbolically), implement :meth:`responses`, and provide ``w_min``, ``w_max`` (the range).
    """

    family: ClassVar[str]
    assumptions: ClassVar[dict[str, dict[str, bool]]]

    # -- the one formula of each family ---------------------------------------------------------
    @staticmethod
    @abstractmethod
    def responses(w: sp.Expr, **params: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
        """Return ``(q_plus, q_minus)`` as sympy expressions in ``w`` and the parameters."""

    # Every family has ``w_min`` and ``w_max`` (fields, or properties of its range mixin).
    w_min: float
    w_max: float

    @property
    def range(self) -> tuple[float, float]:
        """The natural device range ``(w_min, w_max)``."""
        return (self.w_min, self.w_max)

    # -- parameters --------------------------------------------------------------------------
    @classmethod
    def parameter_names(cls) -> tuple[str, ...]:
        """The family's parameter names, in declaration order."""
        return tuple(f.name for f in fields(cls))

    def params(self) -> dict[str, float]:
        """The parameter values, by name."""
        return {name: getattr(self, name) for name in self.parameter_names()}

    @classmethod
    def symbols(cls) -> dict[str, sp.Symbol]:
        """The parameters as sympy symbols with their assumptions (for solving and proofs)."""
        import sympy as sp

        return {name: sp.Symbol(name, **cls.assumptions[name]) for name in cls.parameter_names()}

    @classmethod
    def symbolic(cls) -> tuple[sp.Expr, sp.Expr]:
        """``(q_plus, q_minus)`` with symbolic parameters (see :meth:`symbols`)."""
        return cls.responses(_weight(), **cls.symbols())

    def _set_float(self, name: str, value: float) -> None:
        try:
            object.__setattr__(self, name, float(value))
        except OverflowError:  # an integer beyond the float range (e.g. from a TOML file)
            raise ParameterError(
                f"{name}={show_value(value)} is beyond the float range (about 1.8e308)"
            ) from None

    # -- expressions ---------------------------------------------------------------------------
    @property
    def q_plus_expr(self) -> sp.Expr:
        """:math:`q_+(w)`, the relative size of an up pulse, with the parameter values (exact)."""
        return expressions(self).q_plus

    @property
    def q_minus_expr(self) -> sp.Expr:
        """:math:`q_-(w)`, the relative size of a down pulse, with the parameter values (exact)."""
        return expressions(self).q_minus

    @property
    def F_expr(self) -> sp.Expr:
        r""":math:`F = (q_- + q_+)/2`, the symmetric part of the response."""
        return expressions(self).F

    @property
    def G_expr(self) -> sp.Expr:
        r""":math:`G = (q_- - q_+)/2`, the asymmetric part (the bias of analog updates)."""
        return expressions(self).G

    @property
    def saturation_expr(self) -> sp.Expr:
        r""":math:`S = q_+ q_-`, the saturation (zero where a pulse direction is dead)."""
        return expressions(self).saturation

    def affine_responses(self) -> tuple[tuple[float, float], tuple[float, float]] | None:
        r"""The coefficients of :math:`q_\pm(w) = \alpha_\pm + \beta_\pm w` when both responses
        are affine in :math:`w`, else ``None``.

        Returns ``((alpha_plus, beta_plus), (alpha_minus, beta_minus))``, read off the family's
        own sympy responses (so nothing is restated): soft bounds, asymmetric soft bounds,
        linear step, constant step and power with ``pow_gamma = 1`` have them; exponential and
        power with ``pow_gamma != 1`` have ``None``. An affine response makes one pulse an affine
        map of the weight, whose ``n``-fold iterate has a closed form
        (:meth:`theory.devices.Device.pulse_map`).
        """
        return _affine(self)

    def compiled(self) -> Responses:
        """The five responses as numpy functions of ``w`` (cached per object).

        ``lambdify`` runs once per family, with the parameters as arguments; this object binds
        its values. Each function accepts a scalar or an array and returns a float or an array of
        the same shape (also for constant responses); outside the range the result may be NaN.
        """
        return _bound_responses(self)

    # -- symmetric point -----------------------------------------------------------------------
    @classmethod
    def symmetric_point_expr(cls) -> sp.Expr | None:
        """The closed-form symmetric point (symbolic parameters), or ``None`` if sympy finds none.

        Solved once per family (cached): the unique solution of :math:`q_+(w) = q_-(w)` for ``w``.
        """
        return _symmetric_solution(cls)

    def symmetric_point(self) -> float:
        """The symmetric point :math:`w^\\star` (:math:`q_+ = q_-`) on the device range.

        The closed form of :meth:`symmetric_point_expr` with the parameter values when it exists,
        else :meth:`numeric_symmetric_point`. Where :math:`G \\equiv 0` (every point symmetric) the
        range midpoint is returned.

        Raises
        ------
        ParameterError
            When no point of the range is symmetric (e.g. constant steps with ``up != down``).
        """
        if self.G_expr == 0:
            return 0.5 * (self.w_min + self.w_max)
        closed = self.symmetric_point_expr()
        if closed is None:
            return self.numeric_symmetric_point()
        values = {sym: _exact(v) for sym, v in zip(self.symbols().values(), self.params().values(),
                                                    strict=True)}
        point = closed.subs(values)
        if not point.is_finite:
            raise self._no_symmetric_point()
        point = float(point)
        if not self.w_min <= point <= self.w_max:
            raise self._no_symmetric_point()
        return point

    def numeric_symmetric_point(self, xtol: float = 1e-14) -> float:
        """The root of :math:`G` on the device range by scipy's ``brentq`` (monotone :math:`G`).

        As :meth:`symmetric_point`, the range midpoint where :math:`G \\equiv 0`.

        Raises
        ------
        ParameterError
            When :math:`G` does not change sign on the range (no symmetric point).
        """
        if self.G_expr == 0:
            return 0.5 * (self.w_min + self.w_max)
        g = self.compiled().G
        lo, hi = self.w_min, self.w_max
        g_lo, g_hi = float(g(lo)), float(g(hi))
        if g_lo == 0.0 and g_hi == 0.0:  # monotone G vanishing at both ends: G = 0 in floats
            return 0.5 * (lo + hi)
        if g_lo == 0.0:
            return lo
        if g_hi == 0.0:
            return hi
        if np.sign(g_lo) == np.sign(g_hi):
            raise self._no_symmetric_point()
        from scipy.optimize import brentq

        return float(brentq(g, lo, hi, xtol=xtol, rtol=4 * np.finfo(float).eps))

    def _no_symmetric_point(self) -> ParameterError:
        return ParameterError(
            f"{self.family} {self.params()} has no symmetric point (q_+ = q_-) in its range "
            f"[{self.w_min:g}, {self.w_max:g}]"
        )

    # -- error message for a weight interval where the response dies -------------------------
    def interval_error(self, w_lo: float, w_hi: float) -> str:
        """The one-line message for an interval that leaves the range or where ``q_min <= 0``."""
        return (
            f"weight interval [w_lo={w_lo:g}, w_hi={w_hi:g}] must lie inside the {self.family} "
            f"range [{self.w_min:g}, {self.w_max:g}] where q_+ and q_- are both > 0"
        )


class _TauRange:
    """Mixin for the families on the symmetric range :math:`[-\\tau, \\tau]`."""

    tau: float

    @property
    def w_min(self) -> float:
        """:math:`-\\tau`."""
        return -self.tau

    @property
    def w_max(self) -> float:
        """:math:`\\tau`."""
        return self.tau

    def interval_error(self, w_lo: float, w_hi: float) -> str:
        """``W_max = max(|w_lo|, |w_hi|)`` must be below ``tau`` (theory-spec assumption A3)."""
        return f"W_max={max(abs(w_lo), abs(w_hi)):g} must be < tau={self.tau:g}"


@dataclass(frozen=True)
class SoftBounds(_TauRange, ResponseFamily):
    r"""Symmetric soft bounds (linear response) with dynamic range :math:`\tau`.

    .. math:: q_+(w) = 1 - \frac{w}{\tau}, \qquad q_-(w) = 1 + \frac{w}{\tau},

    so :math:`F = 1`, :math:`G = w/\tau`, :math:`S = 1 - w^2/\tau^2`; symmetric point 0, range
    :math:`[-\tau, \tau]` (the NeurIPS 2024 model of paper-notes section 3).

    Parameters
    ----------
    tau : float
        Dynamic range, > 0 (weight units).
    """

    tau: float
    family: ClassVar[str] = "softbounds"
    assumptions: ClassVar = {"tau": {"positive": True}}

    def __post_init__(self):
        self._set_float("tau", check_range("tau", self.tau, 0, None, low_open=True))

    @staticmethod
    def responses(w, tau):
        return 1 - w / tau, 1 + w / tau


@dataclass(frozen=True)
class AsymmetricSoftBounds(ResponseFamily):
    r"""Asymmetric soft bounds (aihwkit ``SoftBoundsDevice``), unequal bounds and step sizes.

    .. math:: q_+(w) = \mathrm{up}\,\Bigl(1 - \frac{w}{w_{\max}}\Bigr), \qquad
              q_-(w) = \mathrm{down}\,\Bigl(1 - \frac{w}{w_{\min}}\Bigr),

    symmetric point :math:`w^\star = (\mathrm{up} - \mathrm{down}) /
    (\mathrm{up}/w_{\max} - \mathrm{down}/w_{\min})`, always inside :math:`(w_{\min}, w_{\max})`.
    aihwkit's ``up_down`` bias :math:`\beta` corresponds to ``up = 1 + beta``, ``down = 1 - beta``.

    Parameters
    ----------
    w_min : float
        Lower bound, < 0 (where :math:`q_-` vanishes).
    w_max : float
        Upper bound, > 0 (where :math:`q_+` vanishes).
    up, down : float
        Relative step sizes at :math:`w = 0`, > 0.
    """

    w_min: float
    w_max: float
    up: float = 1.0
    down: float = 1.0
    family: ClassVar[str] = "asymmetric-softbounds"
    assumptions: ClassVar = {
        "w_min": {"negative": True}, "w_max": {"positive": True},
        "up": {"positive": True}, "down": {"positive": True},
    }

    def __post_init__(self):
        self._set_float("w_min", check_range("w_min", self.w_min, None, 0, high_open=True))
        self._set_float("w_max", check_range("w_max", self.w_max, 0, None, low_open=True))
        self._set_float("up", check_range("up", self.up, 0, None, low_open=True))
        self._set_float("down", check_range("down", self.down, 0, None, low_open=True))

    @staticmethod
    def responses(w, w_min, w_max, up, down):
        return up * (1 - w / w_max), down * (1 - w / w_min)


@dataclass(frozen=True)
class LinearStep(ResponseFamily):
    r"""Linear step (aihwkit ``LinearStepDevice``; mean response, so additive or multiplicative
    cycle-to-cycle noise give the same :math:`q_\pm`).

    .. math:: q_+(w) = 1 - \gamma_{\uparrow} \frac{w}{w_{\max}}, \qquad
              q_-(w) = 1 - \gamma_{\downarrow} \frac{w}{w_{\min}} \quad (w_{\min} < 0).

    Sign convention, from the aihwkit docstring of ``LinearStepDevice`` (IBM/aihwkit,
    ``src/aihwkit/simulator/configs/devices.py``): the update is
    :math:`w \leftarrow w - \Delta w^d (\gamma^d w + 1)` with slopes
    :math:`\gamma^+ = -|\gamma_\mathrm{up}|/b_{\max}` and
    :math:`\gamma^- = -|\gamma_\mathrm{down}|/b_{\min}`,
    so the up step shrinks towards :math:`w_{\max}` and the down step towards :math:`w_{\min}`
    (":math:`\gamma = 1` implements soft bounds"). Hence :math:`q_-` has a minus sign with
    :math:`w_{\min} < 0`; at :math:`\gamma_\uparrow = \gamma_\downarrow = 1` this is
    :class:`AsymmetricSoftBounds` with ``up = down = 1``. Symmetric point 0 (unless both slopes
    vanish: then every point is symmetric).

    Parameters
    ----------
    w_min : float
        Lower bound, < 0.
    w_max : float
        Upper bound, > 0.
    gamma_up, gamma_down : float
        Relative decrease of the up (down) step at the upper (lower) bound, in [0, 1] (a value
        above 1 would make the step change sign inside the range).
    """

    w_min: float
    w_max: float
    gamma_up: float
    gamma_down: float
    family: ClassVar[str] = "linear-step"
    assumptions: ClassVar = {
        "w_min": {"negative": True}, "w_max": {"positive": True},
        "gamma_up": {"nonnegative": True}, "gamma_down": {"nonnegative": True},
    }

    def __post_init__(self):
        self._set_float("w_min", check_range("w_min", self.w_min, None, 0, high_open=True))
        self._set_float("w_max", check_range("w_max", self.w_max, 0, None, low_open=True))
        self._set_float("gamma_up", check_range("gamma_up", self.gamma_up, 0, 1))
        self._set_float("gamma_down", check_range("gamma_down", self.gamma_down, 0, 1))

    @staticmethod
    def responses(w, w_min, w_max, gamma_up, gamma_down):
        return 1 - gamma_up * w / w_max, 1 - gamma_down * w / w_min


@dataclass(frozen=True)
class PowerStep(_TauRange, ResponseFamily):
    r"""Power response with dynamic range :math:`\tau` and shape :math:`\gamma` (``pow_gamma``).

    .. math:: q_+(w) = \Bigl(1 - \frac{w}{\tau}\Bigr)^{\gamma}, \qquad
              q_-(w) = \Bigl(1 + \frac{w}{\tau}\Bigr)^{\gamma},

    range :math:`[-\tau, \tau]`, symmetric point 0; :math:`\gamma = 1` is :class:`SoftBounds`.

    Parameters
    ----------
    tau : float
        Dynamic range, > 0.
    pow_gamma : float
        Shape exponent, > 0.
    """

    tau: float
    pow_gamma: float
    family: ClassVar[str] = "power"
    assumptions: ClassVar = {"tau": {"positive": True}, "pow_gamma": {"positive": True}}

    def __post_init__(self):
        self._set_float("tau", check_range("tau", self.tau, 0, None, low_open=True))
        self._set_float("pow_gamma", check_range("pow_gamma", self.pow_gamma, 0, None,
                                                 low_open=True))

    @staticmethod
    def responses(w, tau, pow_gamma):
        return (1 - w / tau) ** pow_gamma, (1 + w / tau) ** pow_gamma


@dataclass(frozen=True)
class ExponentialStep(_TauRange, ResponseFamily):
    r"""Exponential response with dynamic range :math:`\tau` and shape :math:`\gamma`.

    .. math:: q_+(w) = \frac{e^{\gamma (1 - w/\tau)} - 1}{e^{\gamma} - 1}, \qquad
              q_-(w) = \frac{e^{\gamma (1 + w/\tau)} - 1}{e^{\gamma} - 1},

    range :math:`[-\tau, \tau]`, symmetric point 0, :math:`q_\pm(0) = 1`; :math:`\gamma \to 0`
    tends to :class:`SoftBounds`.

    Parameters
    ----------
    tau : float
        Dynamic range, > 0.
    gamma : float
        Shape, in ``(0, GAMMA_MAX]`` with ``GAMMA_MAX = ln(float max)/2`` (about 354.9): above it
        :math:`e^{2\gamma}` (:math:`q_-` at :math:`w = \tau`) overflows in double precision.
    """

    tau: float
    gamma: float
    family: ClassVar[str] = "exponential"
    assumptions: ClassVar = {"tau": {"positive": True}, "gamma": {"positive": True}}
    #: the largest ``gamma`` whose responses are finite floats on the whole range
    GAMMA_MAX: ClassVar[float] = float(np.log(np.finfo(float).max) / 2)

    def __post_init__(self):
        self._set_float("tau", check_range("tau", self.tau, 0, None, low_open=True))
        self._set_float("gamma", check_range("gamma", self.gamma, 0, self.GAMMA_MAX,
                                             low_open=True))

    @staticmethod
    def responses(w, tau, gamma):
        import sympy as sp

        scale = sp.exp(gamma) - 1
        return ((sp.exp(gamma * (1 - w / tau)) - 1) / scale,
                (sp.exp(gamma * (1 + w / tau)) - 1) / scale)


@dataclass(frozen=True)
class ConstantStep(ResponseFamily):
    r"""Constant step (aihwkit ``ConstantStepDevice``): :math:`q_+ = \mathrm{up}`,
    :math:`q_- = \mathrm{down}` on :math:`[w_{\min}, w_{\max}]` (hard bounds).

    No symmetric point unless ``up == down``; then every point is symmetric and
    :meth:`symmetric_point` returns the range midpoint; otherwise it raises
    :class:`~theory.errors.ParameterError`.

    Parameters
    ----------
    w_min, w_max : float
        Hard bounds, ``w_min < w_max``.
    up, down : float
        Relative step sizes, > 0.
    """

    w_min: float
    w_max: float
    up: float = 1.0
    down: float = 1.0
    family: ClassVar[str] = "constant-step"
    assumptions: ClassVar = {
        "w_min": {"real": True}, "w_max": {"real": True},
        "up": {"positive": True}, "down": {"positive": True},
    }

    def __post_init__(self):
        self._set_float("w_min", check_range("w_min", self.w_min))
        self._set_float("w_max", check_range("w_max", self.w_max, self.w_min, None, low_open=True))
        self._set_float("up", check_range("up", self.up, 0, None, low_open=True))
        self._set_float("down", check_range("down", self.down, 0, None, low_open=True))

    @staticmethod
    def responses(w, w_min, w_max, up, down):
        import sympy as sp

        return sp.sympify(up), sp.sympify(down)


#: family name -> class
FAMILIES: dict[str, type[ResponseFamily]] = {
    cls.family: cls
    for cls in (SoftBounds, AsymmetricSoftBounds, LinearStep, PowerStep, ExponentialStep,
                ConstantStep)
}


class Responses(NamedTuple):
    """The responses of one family object: sympy expressions or their numpy compilations."""

    q_plus: Any
    q_minus: Any
    F: Any
    G: Any
    saturation: Any


#: distinct device objects whose expressions / bound responses are kept (a sweep over tau makes
#: many; an unbounded cache would keep a sympy tree alive for each)
_INSTANCE_CACHE = 256


@lru_cache(maxsize=_INSTANCE_CACHE)
def expressions(response: ResponseFamily) -> Responses:
    """The sympy responses of one family object, parameters as exact rationals (cached)."""
    values = {name: _exact(v) for name, v in response.params().items()}
    q_plus, q_minus = type(response).responses(_weight(), **values)
    return Responses(
        q_plus=q_plus,
        q_minus=q_minus,
        F=(q_minus + q_plus) / 2,
        G=(q_minus - q_plus) / 2,
        saturation=q_plus * q_minus,
    )


@cache
def _family_compiled(cls: type[ResponseFamily]) -> Responses:
    """The five responses of a family, lambdified once in ``(w, *parameters)``.

    Compiling with the parameters as arguments (not as exact rationals) keeps the float arithmetic
    exact at the bounds: ``1 - w/w_max`` is exactly 0 at ``w = w_max``, so a fractional power of it
    is 0 there, not NaN.
    """
    q_plus, q_minus = cls.symbolic()
    import sympy as sp

    w = _weight()
    args = (w, *cls.symbols().values())
    exprs = (q_plus, q_minus, (q_minus + q_plus) / 2, (q_minus - q_plus) / 2, q_plus * q_minus)
    return Responses(*(sp.lambdify(args, expr, "numpy") for expr in exprs))


def _bind(fn: Callable, params: tuple[float, ...]) -> Callable:
    """``fn(x, *params)`` as a function of ``x`` alone, with numpy semantics and ``x``'s shape."""

    def response(x):
        x = np.asarray(x)
        if x.dtype != np.float32:  # float32 stays float32 (SimConfig.dtype), the rest float64
            x = x.astype(float, copy=False)
        out = np.asarray(fn(x, *params), dtype=x.dtype)
        if out.shape != x.shape:  # a constant response
            out = np.full(x.shape, out)
        return out[()] if x.ndim == 0 else out

    return response


@lru_cache(maxsize=_INSTANCE_CACHE)
def _bound_responses(response: ResponseFamily) -> Responses:
    params = tuple(response.params().values())
    return Responses(*(_bind(fn, params) for fn in _family_compiled(type(response))))


@lru_cache(maxsize=_INSTANCE_CACHE)
def _affine(response: ResponseFamily) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """``((alpha+, beta+), (alpha-, beta-))`` of affine responses, else ``None`` (cached)."""
    import sympy as sp

    w = _weight()
    coefficients = []
    for expr in expressions(response)[:2]:
        expr = sp.expand(expr)
        if not expr.is_polynomial(w) or sp.degree(expr, w) > 1:
            return None
        coefficients.append((float(expr.subs(w, 0)), float(expr.coeff(w, 1))))
    return tuple(coefficients)


@cache
def _symmetric_solution(cls: type[ResponseFamily]) -> sp.Expr | None:
    """Solve :math:`q_+ = q_-` for ``w`` once per family, with symbolic parameters."""
    import sympy as sp

    w = _weight()
    q_plus, q_minus = cls.symbolic()
    if sp.simplify(q_minus - q_plus).free_symbols.isdisjoint({w}):
        return None  # G does not depend on w: no isolated symmetric point
    try:
        roots = sp.solve(sp.Eq(q_plus, q_minus), w)
    except NotImplementedError:
        return None
    return roots[0] if len(roots) == 1 else None
