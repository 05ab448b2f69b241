r"""A device: a response family plus its pulse parameters, compiled to numpy once.

The expected element-wise analog update (paper-notes section 3) is

.. math:: W^+ = W + \Delta W \odot F(W) - |\Delta W| \odot G(W),

realised as :math:`\approx |\Delta W| / \Delta w_{\min}` pulses of size
:math:`\Delta w_{\min} q_\pm(w)`. :meth:`Device.constants` gives the constants of theory-spec
assumption A3 on a weight interval: :math:`q_{\min}`, :math:`q_{\max}` and
:math:`G_\infty = \sup |G|`.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields
from functools import lru_cache
from numbers import Real
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ParameterError, check_range, show_value
from .families import FAMILIES, ResponseFamily, SoftBounds

# sympy is imported inside the functions that use it: a device is made, checked and simulated
# with numpy only (its responses are compiled on first use, theory.devices.families)
if TYPE_CHECKING:
    import sympy as sp

__all__ = [
    "Device",
    "DeviceConstants",
    "PulseMap",
    "check_family",
    "geometric_sum",
    "make_device",
    "soft_bounds_constants",
    "unknown_keys",
]


@dataclass(frozen=True)
class DeviceConstants:
    r"""The response constants of theory-spec assumption A3 on a weight interval.

    Attributes
    ----------
    q_min : float or sympy.Expr
        :math:`\min_{w \in [w_{lo}, w_{hi}]} \min(q_+(w), q_-(w))` (> 0).
    q_max : float or sympy.Expr
        :math:`\max_{w \in [w_{lo}, w_{hi}]} \max(q_+(w), q_-(w))`.
    G_inf : float or sympy.Expr
        :math:`\max_{w \in [w_{lo}, w_{hi}]} |G(w)|`.
    w_lo, w_hi : float or sympy.Expr
        The weight interval (normalised weight units).
    """

    q_min: float | sp.Expr
    q_max: float | sp.Expr
    G_inf: float | sp.Expr
    w_lo: float | sp.Expr
    w_hi: float | sp.Expr


def geometric_sum(n, rate):
    r""":math:`\sum_{j=0}^{n-1} (1 - c)^j = (1 - (1 - c)^n) / c` element-wise (:math:`n` at
    :math:`c = 0`), computed as ``-expm1(n log1p(-c)) / c`` so that it stays accurate for rates
    :math:`c` down to the smallest floats; exactly ``n`` for ``n <= 1`` (0 or 1), so one pulse is
    bit for bit the pulse itself. ``rate`` in ``[0, 1)``."""
    n = np.asarray(n, dtype=float)
    if np.ndim(rate) == 0:
        rate = float(rate)
        if rate == 0.0:
            return n.copy()
        out = -np.expm1(n * np.log1p(-rate)) / rate
        return np.where(n > 1, out, n)
    rate = np.asarray(rate, dtype=float)
    safe = np.where(rate > 0, rate, 0.5)
    out = -np.expm1(n * np.log1p(-safe)) / safe
    return np.where((rate > 0) & (n > 1), out, n)


@dataclass(frozen=True)
class PulseMap:
    r"""One pulse of a device with affine responses, as an affine map of the weight.

    Element-wise, a pulse moves the weight by :math:`\mathrm{inc}(w) = r - c\,w` with
    :math:`c \in [0, 1)`: for an up pulse :math:`\mathrm{inc} = \Delta w_{\min}\,
    q_+(w / s)`, for a down pulse :math:`-\Delta w_{\min}\, q_-(w / s)`, with
    :math:`q_\pm(v) = \alpha_\pm + \beta_\pm v` (:meth:`ResponseFamily.affine_responses`) and
    the element's range scale :math:`s`, so :math:`c = -\Delta w_{\min} \beta_+ / s` (up),
    :math:`\Delta w_{\min} \beta_- / s` (down). Then with :math:`a = 1 - c`,

    .. math:: w_n = w + \mathrm{inc}(w) \sum_{j=0}^{n-1} a^j
              = w + \mathrm{inc}(w)\, \frac{1 - a^n}{1 - a},

    the :math:`n`-fold iterate (for soft bounds, up: :math:`w_n = \tau - (\tau - w)
    (1 - \Delta w_{\min}/\tau)^n`; constant step: :math:`w + n\,\Delta w_{\min}\,
    \mathrm{up}`). With :math:`0 \le c < 1` the map is increasing and moves :math:`w` monotonely
    towards its fixed point :math:`r / c`, which lies at or beyond the element's bound in the
    pulse direction (the responses are non-negative on the range), so the pulses clipped one by
    one at ``[lo, hi]`` end at :math:`\mathrm{clip}(w_n, lo, hi)` exactly, for a start inside
    the range (:meth:`after`).

    Attributes
    ----------
    rate : float or ndarray
        :math:`c`, the contraction of one pulse (dimensionless, in ``[0, 1)``); a float when
        every element has the same (then functions of the pulse count are tabulated once per
        count, :meth:`per_count`).
    lo, hi : float or ndarray
        The element's range (weight units).
    """

    rate: float | np.ndarray
    lo: float | np.ndarray
    hi: float | np.ndarray

    def per_count(self, fn, n) -> np.ndarray:
        """``fn(n, rate)`` element-wise; for a float ``rate`` and integer counts ``n`` evaluated
        once per count ``0 .. max(n)`` and looked up (the same numbers, computed once)."""
        n = np.asarray(n)
        if isinstance(self.rate, float) and n.dtype.kind in "iu" and n.size:
            return fn(np.arange(int(n.max()) + 1), self.rate)[n]
        return fn(n, self.rate)

    def after(self, w, n, increment) -> np.ndarray:
        r"""The weight after ``n`` pulses (integers) from ``w`` whose first pulse moves it by
        ``increment`` (:math:`\mathrm{inc}(w)`, weight units), clipped to the range."""
        out = self.per_count(geometric_sum, n)
        out *= increment
        out += w
        return np.clip(out, self.lo, self.hi, out=out)


#: how cycle-to-cycle noise enters a pulse (:attr:`Device.c2c_noise`)
C2C_NOISE = ("multiplicative", "additive")


@dataclass(frozen=True)
class Device:
    r"""An analog device: response family and pulse parameters (aihwkit vocabulary).

    Parameters
    ----------
    name : str
        Human-readable name (a preset's name).
    response : ResponseFamily
        The response family (:class:`~theory.devices.SoftBounds`, ...), which fixes the range.
    dw_min : float
        Response granularity :math:`\Delta w_{\min}`: the size of one pulse at :math:`q = 1`
        (weight units), in ``(0, w_max - w_min]``.
    dw_min_dtod : float
        Device-to-device std of ``dw_min``, relative to ``dw_min`` (aihwkit ``dw_min_dtod``), >= 0.
    dw_min_std : float
        Cycle-to-cycle std :math:`\sigma_c` of one pulse, relative to ``dw_min`` (aihwkit
        ``dw_min_std``: the per-pulse step std is ``dw_min * dw_min_std``), >= 0; applied as
        ``c2c_noise`` says.
    c2c_noise : {"multiplicative", "additive"}
        How the cycle-to-cycle noise enters a pulse: ``multiplicative`` (paper-notes section 3, the
        default), :math:`\Delta w_{\min} q(w) (1 + \sigma_c \xi)`, or ``additive`` (aihwkit's
        ``mult_noise=False``, e.g. its ReRAM preset with :math:`\sigma_c = 3.75`),
        :math:`\Delta w_{\min} (q(w) + \sigma_c \xi)`.
    w_bounds_dtod : float
        Device-to-device std of the bounds ``w_min``, ``w_max`` in weight units (aihwkit's relative
        ``w_min_dtod * |w_min|``, ``w_max_dtod * w_max``), >= 0.
    desired_bl : int
        Pulses per update (bit length, aihwkit ``desired_bl``; default 31, aihwkit's
        ``UpdateParameters`` default), >= 1. The ``[timing]`` table's ``bit_length`` (10, Gokmen &
        Vlasov 2016) is the hardware timing figure used to convert updates to seconds.
    """

    name: str
    response: ResponseFamily
    dw_min: float
    dw_min_dtod: float = 0.0
    dw_min_std: float = 0.0
    w_bounds_dtod: float = 0.0
    desired_bl: int = 31
    c2c_noise: str = "multiplicative"

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ParameterError(f"name={self.name!r} must be a non-empty string")
        if not isinstance(self.response, ResponseFamily):
            raise ParameterError(
                f"response={self.response!r} is not a response family; valid: "
                f"{', '.join(cls.__name__ for cls in FAMILIES.values())}"
            )
        width = self.w_max - self.w_min
        set_ = object.__setattr__
        set_(self, "dw_min", float(check_range("dw_min", self.dw_min, 0, width, low_open=True)))
        for name in ("dw_min_dtod", "dw_min_std", "w_bounds_dtod"):
            set_(self, name, float(check_range(name, getattr(self, name), 0, None)))
        set_(self, "desired_bl", check_range("desired_bl", self.desired_bl, 1, None, integer=True))
        if self.c2c_noise not in C2C_NOISE:
            raise ParameterError(
                f"c2c_noise={self.c2c_noise!r} is unknown; valid: {', '.join(C2C_NOISE)}"
            )

    # -- range --------------------------------------------------------------------------------
    @property
    def family(self) -> str:
        """The response family's name (``"softbounds"``, ...)."""
        return self.response.family

    @property
    def w_min(self) -> float:
        """Lower end of the device range (from the response)."""
        return self.response.w_min

    @property
    def w_max(self) -> float:
        """Upper end of the device range (from the response)."""
        return self.response.w_max

    # -- compiled responses -------------------------------------------------------------------
    def q_plus(self, x):
        """:math:`q_+(x)`, element-wise (numpy, compiled once)."""
        return self.response.compiled().q_plus(x)

    def q_minus(self, x):
        """:math:`q_-(x)`, element-wise."""
        return self.response.compiled().q_minus(x)

    def F(self, x):
        """:math:`F(x) = (q_-(x) + q_+(x))/2`, element-wise."""
        return self.response.compiled().F(x)

    def G(self, x):
        """:math:`G(x) = (q_-(x) - q_+(x))/2`, element-wise."""
        return self.response.compiled().G(x)

    @property
    def F_constant(self) -> float | None:
        """The value of :math:`F` when it does not depend on the weight (soft bounds: 1), else
        ``None``; lets the simulator skip evaluating a constant array."""
        return _constant_F(self.response)

    def pulse_map(self, up, step=None, scale=None, *, overshoot: bool = False
                  ) -> PulseMap | None:
        r"""The affine map of one pulse (:class:`PulseMap`) where the family's responses are
        affine, else ``None`` (the pulses must then be applied one by one).

        Parameters
        ----------
        up : bool or ndarray of bool
            Pulse direction per element.
        step : float or ndarray, optional
            The element's pulse granularity (default ``dw_min``; weight units).
        scale : ndarray, optional
            The element's range scale :math:`s` (responses :math:`q_\pm(w / s)`, range
            :math:`s [w_{\min}, w_{\max}]`).

        ``None`` also when a rate would be :math:`\ge 1` (a pulse larger than the distance to
        its fixed point: :math:`\Delta w_{\min} |\beta| \ge s`), where the map overshoots;
        with ``overshoot`` such rates are kept (the caller fires those elements one by one).
        """
        coefficients = self.response.affine_responses()
        if coefficients is None:
            return None
        (_, beta_plus), (_, beta_minus) = coefficients
        step = self.dw_min if step is None else step
        if -beta_plus == beta_minus and scale is None and np.ndim(step) == 0:
            rate = float(step * beta_minus)  # the same for every element
            if not 0.0 <= rate < 1.0 and not overshoot:
                return None
        else:
            slope = np.where(up, -beta_plus, beta_minus)
            rate = np.asarray(step * slope if scale is None else step * slope / scale,
                              dtype=float)
            if rate.size and not (rate.min() >= 0.0 and rate.max() < 1.0) and not overshoot:
                return None
        lo, hi = self.w_min, self.w_max
        if scale is not None:
            lo, hi = lo * scale, hi * scale
        return PulseMap(rate, lo, hi)

    def n_pulse_map(self, w, n, up, step=None, scale=None) -> np.ndarray | None:
        r"""The weight after ``n`` noise-free pulses from ``w`` in one step, or ``None`` if the
        family has no closed form (:meth:`pulse_map`).

        .. math:: w_n = \mathrm{clip}\Bigl(w + \mathrm{inc}(w)\,
                  \frac{1 - (1 - c)^n}{c}\Bigr)

        e.g. soft bounds: :math:`w_n = \tau - (\tau - w)(1 - \Delta w_{\min}/\tau)^n` (up),
        :math:`-\tau + (\tau + w)(1 - \Delta w_{\min}/\tau)^n` (down). Arguments as
        :meth:`pulse_map`; ``n`` pulses per element (>= 0).
        """
        w = np.asarray(w, dtype=float)
        pulse = self.pulse_map(up, step, scale)
        if pulse is None:
            return None
        step = self.dw_min if step is None else step
        v = w if scale is None else w / scale
        increment = np.where(up, step * self.q_plus(v), -(step * self.q_minus(v)))
        return pulse.after(w, n, increment)

    def saturation(self, x):
        """:math:`S(x) = q_+(x) q_-(x)`, element-wise."""
        return self.response.compiled().saturation(x)

    def symmetric_point(self) -> float:
        """The symmetric point :math:`w^\\star` (see :meth:`ResponseFamily.symmetric_point`)."""
        return self.response.symmetric_point()

    # -- constants of assumption A3 -----------------------------------------------------------
    def constants(self, w_lo: float, w_hi: float) -> DeviceConstants:
        r""":math:`q_{\min}, q_{\max}, G_\infty` over the weight interval ``[w_lo, w_hi]``.

        Exact at the endpoints: every family is monotone (:math:`q_+` non-increasing, :math:`q_-`
        non-decreasing, hence :math:`G` non-decreasing), so

        .. math:: q_{\min} = \min(q_+(w_{hi}), q_-(w_{lo})), \quad
                  q_{\max} = \max(q_+(w_{lo}), q_-(w_{hi})), \quad
                  G_\infty = \max(|G(w_{lo})|, |G(w_{hi})|).

        Raises
        ------
        ParameterError
            When the interval is empty, leaves the device range, or has :math:`q_{\min} \le 0`
            (e.g. soft bounds with ``W_max >= tau``).
        """
        w_lo = check_range("w_lo", w_lo)
        w_hi = check_range("w_hi", w_hi, w_lo, None)
        if w_lo < self.w_min or w_hi > self.w_max:
            raise ParameterError(self.response.interval_error(w_lo, w_hi))
        ends = np.array([w_lo, w_hi], dtype=float)
        qp, qm, g = self.q_plus(ends), self.q_minus(ends), self.G(ends)
        q_min = float(min(qp[1], qm[0]))
        if q_min <= 0:
            raise ParameterError(self.response.interval_error(w_lo, w_hi))
        return DeviceConstants(
            q_min=q_min,
            q_max=float(max(qp[0], qm[1])),
            G_inf=float(np.max(np.abs(g))),
            w_lo=float(w_lo),
            w_hi=float(w_hi),
        )


@lru_cache(maxsize=256)
def _constant_F(response: ResponseFamily) -> float | None:
    from .families import w

    expr = response.F_expr
    return None if w in expr.free_symbols else float(expr)


def soft_bounds_constants(W_max=None, tau=None) -> DeviceConstants:
    r"""The theory-spec closed forms of the soft-bounds constants on :math:`[-W_{\max}, W_{\max}]`.

    .. math:: q_{\min} = 1 - \frac{W_{\max}}{\tau}, \qquad q_{\max} = 1 + \frac{W_{\max}}{\tau},
              \qquad G_\infty = \frac{W_{\max}}{\tau} \qquad (W_{\max} < \tau),

    derived from :meth:`SoftBounds.responses` at the interval ends (monotone responses), so the
    formula is not restated. Sympy-level: ``W_max`` and ``tau`` may be symbols (the defaults,
    ``None``, are :data:`theory.symbols.W_max` and :data:`theory.symbols.tau`) or numbers.
    """
    import sympy as sp

    from .. import symbols
    from .families import w

    W_max = symbols.W_max if W_max is None else W_max
    tau = symbols.tau if tau is None else tau
    for name, value in (("W_max", W_max), ("tau", tau)):
        if not isinstance(value, Real | sp.Expr) or isinstance(value, bool):
            raise ParameterError(f"{name}={value!r} must be a number or a sympy expression")
        if isinstance(value, Real):
            check_range(name, value, 0, None, low_open=True)
        elif value.is_nonpositive:
            raise ParameterError(f"{name}={value} is out of range; valid range (0, inf)")
    if (sp.sympify(W_max) - sp.sympify(tau)).is_nonnegative:
        raise ParameterError(f"W_max={W_max} must be < tau={tau}")
    W_max, tau = sp.sympify(W_max), sp.sympify(tau)
    q_plus, q_minus = SoftBounds.responses(w, tau=tau)
    return DeviceConstants(
        q_min=q_plus.subs(w, W_max),
        q_max=q_plus.subs(w, -W_max),
        G_inf=sp.simplify(((q_minus - q_plus) / 2).subs(w, W_max)),
        w_lo=-W_max,
        w_hi=W_max,
    )


#: the pulse fields of :class:`Device` that ``make_device`` and TOML tables accept
DEVICE_FIELDS = tuple(f.name for f in fields(Device) if f.name not in ("name", "response"))


#: unknown keys an error message names before it says how many more there are
_LISTED_KEYS = 5


def unknown_keys(keys, what: str = "key") -> str:
    """``"unknown key(s) 'a', 'b'"`` for an error message, naming at most a few of ``keys``.

    >>> unknown_keys([f"k{i}" for i in range(20000)])
    "20000 unknown keys: 'k0', 'k1', 'k2', 'k3', 'k4', ..."
    """
    keys = list(keys)
    shown = ", ".join(show_value(k) for k in keys[:_LISTED_KEYS])
    if len(keys) > _LISTED_KEYS:
        return f"{len(keys)} unknown {what}s: {shown}, ..."
    return f"unknown {what}{'s' if len(keys) > 1 else ''} {shown}"


def check_family(family) -> str:
    """``family`` if it names a response family, else a ParameterError listing the families."""
    if not isinstance(family, str) or family not in FAMILIES:
        kind = "" if isinstance(family, str) else f" (a {type(family).__name__}, not a string)"
        raise ParameterError(
            f"family={show_value(family)} is unknown{kind}; valid: {', '.join(FAMILIES)}"
        )
    return family


def make_device(family: str, *, name: str | None = None, **params) -> Device:
    """Build a :class:`Device` from a family name and flat parameters.

    Parameters
    ----------
    family : str
        One of ``softbounds``, ``asymmetric-softbounds``, ``linear-step``, ``power``,
        ``exponential``, ``constant-step``.
    name : str, optional
        The device's name (default: the family name).
    **params
        The family's parameters (e.g. ``tau``) and the pulse fields of :class:`Device`
        (``dw_min``, ``dw_min_dtod``, ``dw_min_std``, ``w_bounds_dtod``, ``desired_bl``).

    Raises
    ------
    ParameterError
        For an unknown family or key (the message lists the valid ones), or a bad value.
    """
    cls = FAMILIES[check_family(family)]
    family_keys = cls.parameter_names()
    unknown = sorted(set(params) - set(family_keys) - set(DEVICE_FIELDS))
    if unknown:
        valid = ", ".join(("name", *family_keys, *DEVICE_FIELDS))
        raise ParameterError(
            f"{unknown_keys(unknown)} for family {family!r}; valid keys: {valid}"
        )
    required = [f.name for f in fields(cls) if f.default is MISSING and f.name not in params]
    if required:
        raise ParameterError(f"family {family!r} needs {', '.join(required)}")
    if "dw_min" not in params:
        raise ParameterError(f"dw_min is required (the pulse granularity) for family {family!r}")
    response = cls(**{k: v for k, v in params.items() if k in family_keys})
    pulse = {k: v for k, v in params.items() if k in DEVICE_FIELDS}
    return Device(name=family if name is None else name, response=response, **pulse)
