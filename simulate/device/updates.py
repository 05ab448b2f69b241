r"""Weight updates: digital, expected analog, and pulse-level analog (paper-notes section 3).

All functions act element-wise on arrays of any shape; the leading axis is the ensemble when a
sequence of generators is passed. The response functions :math:`q_\pm`, :math:`F`, :math:`G` come
compiled from :class:`theory.devices.Device`; nothing here restates them.

Expected analog update (element-wise, :math:`\Delta w` the desired increment):

.. math::

    U(w, \Delta w) = w + \Delta w\, F(w) - |\Delta w|\, G(w)
    = \begin{cases} w + \Delta w\, q_+(w) & \Delta w \ge 0 \\ w + \Delta w\, q_-(w) & \Delta w < 0
      \end{cases}

Pulse-level update: :math:`x = |\Delta w| / \Delta w_{\min}` pulses, rounded stochastically
(:math:`n = \lfloor x \rfloor + \mathrm{Bernoulli}(x - \lfloor x \rfloor)`, so
:math:`E[n]\, \Delta w_{\min} = |\Delta w|`); pulse :math:`p` moves the weight by
:math:`\mathrm{sign}(\Delta w)\, \Delta w_{\min}\, q_{\mathrm{sign}}(w_p) (1 + \sigma_c \xi_p)`,
evaluated at the weight :math:`w_p` left by the previous pulse (or
:math:`\Delta w_{\min} (\mathrm{sign}(\Delta w) q_{\mathrm{sign}}(w_p) + \sigma_c \xi_p)`
for a device whose ``c2c_noise`` is ``additive``). As :math:`\Delta w_{\min} \to 0`
its mean tends to the expected update (tested).

**Device-to-device spread** (pulse level only, fixed per run): each element's ``dw_min`` is
scaled by :math:`s_d = |1 + \sigma_{d2d} \xi|` (``dw_min_dtod``), and each element's whole weight
range by :math:`s_b = |1 + \sigma_b \xi|` with :math:`\sigma_b` = ``w_bounds_dtod`` divided by the
half-width of the range: element i behaves as the device with bounds
:math:`s_b [w_{\min}, w_{\max}]`, i.e. response :math:`q_\pm(w / s_b)` (exact for every family of
:mod:`theory.devices`, whose responses depend on ``w`` only through ``w / range``).

**Clipping.** A conductance cannot leave its physical range, so both analog updates clip at the
device bounds ``[w_min, w_max]``. This is the device's physics, not a guard against bugs: it is
inactive for soft-bounds devices as long as :math:`|\Delta w| < \tau` (the response vanishes at
the bound), and the trace reports the extreme weights visited, so a run that reached a bound is
visible.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from theory.devices import Device, PulseMap, geometric_sum
from theory.errors import ParameterError, check_range
from theory.limits import MAX_PULSES_PER_UPDATE, check_size

from .config import PULSE_METHODS, PULSE_TYPES, device_from_config
from .staleness import PinnedMonitor

__all__ = [
    "DeviceSpread", "PULSE_METHODS", "PULSE_TYPES", "TrainScales", "UPDATE_KINDS", "Updater",
    "apply_pulses", "binomial_counts", "check_bit_length", "coincidence_counts",
    "digital_blocks", "digital_update", "draw_bound_scale", "draw_dw_min_scale",
    "expected_update", "pulse_counts", "pulsed_update", "stochastic_write", "train_scale",
    "train_scales",
]

UPDATE_KINDS = ("digital", "expected", "pulsed")

Rng = np.random.Generator | Sequence[np.random.Generator]


def digital_update(w: np.ndarray, dw: np.ndarray) -> np.ndarray:
    r"""Digital SGD: :math:`w + \Delta w`."""
    return w + dw


def digital_blocks(new: np.ndarray, w: np.ndarray, dw: np.ndarray, blocks) -> np.ndarray:
    r"""``new`` (an update of ``w`` by ``dw``) with the ``blocks`` (slices of the last axis) set to
    the digital update :math:`w + \Delta w`: the digital stages of a mixed pipeline (Theorem 2M).

    Modifies and returns ``new``.
    """
    for block in blocks:
        new[..., block] = digital_update(w[..., block], dw[..., block])
    return new


def expected_update(w: np.ndarray, dw: np.ndarray, device) -> np.ndarray:
    r"""Expected analog update :math:`w + \Delta w F(w) - |\Delta w| G(w)`, clipped to the range.

    Parameters
    ----------
    w : ndarray
        Current weights (device units).
    dw : ndarray
        Desired increments, broadcastable to ``w`` (e.g. :math:`-\alpha g`).
    device : theory.devices.Device
        Provides ``F``, ``G``, ``w_min``, ``w_max``.
    """
    out = np.abs(dw) * device.G(w)
    f = device.F_constant  # a constant F (soft bounds: 1) needs no array
    drift = dw * device.F(w) if f is None else (dw if f == 1.0 else f * dw)
    np.subtract(drift, out, out=out)
    out += w
    return np.clip(out, device.w_min, device.w_max, out=out)


def _per_member(rng: Rng, draw, shape: tuple[int, ...], sizes=None) -> np.ndarray:
    """Draw ``draw(generator, shape)`` for the whole array, or member by member along axis 0.

    With a sequence of generators, member ``r`` draws ``sizes[r]`` leading rows (default: none
    extra) of shape ``shape[1:]`` from its own generator, so its numbers do not depend on the other
    members; rows beyond a member's own size are zero padding.
    """
    if isinstance(rng, np.random.Generator):
        return draw(rng, shape)
    if len(rng) != shape[0 if sizes is None else 1]:
        raise ParameterError(
            f"got {len(rng)} generators for an ensemble axis of {shape[0 if sizes is None else 1]}"
        )
    if sizes is None:
        out = np.empty(shape)
        for r, g in enumerate(rng):
            out[r] = draw(g, shape[1:])
        return out
    out = np.zeros(shape)
    for r, (g, size) in enumerate(zip(rng, sizes, strict=True)):
        out[:size, r] = draw(g, (int(size),) + shape[2:])
    return out


def _uniforms(rng: Rng, shape: tuple[int, ...]) -> np.ndarray:
    """``_per_member(rng, lambda g, s: g.random(s), shape)``, each member's uniforms drawn into
    its row of the result (the same numbers, one array fewer)."""
    if isinstance(rng, np.random.Generator) or len(shape) < 2 or len(rng) != shape[0]:
        return _per_member(rng, lambda g, s: g.random(s), shape)
    out = np.empty(shape)
    for r, g in enumerate(rng):
        g.random(out=out[r])
    return out


#: pulse noise is drawn for this many weights' worth of pulses at a time (8 MB of float64)
_NOISE_BLOCK = 1 << 20


def _pulse_noise(rng: Rng, shape: tuple[int, ...], sizes, first: int, count: int) -> np.ndarray:
    """Standard normals of pulses ``first .. first + count - 1``, shape ``(count, *shape)``.

    The numbers are those of one draw of every pulse at once, in the same order. One generator:
    one draw. A sequence: member ``r`` draws only its own pulses ``p < sizes[r]``, so its numbers
    do not depend on the others; rows past a member's pulse count are zero (inactive there).
    """
    if isinstance(rng, np.random.Generator):
        return rng.standard_normal((count, *shape))
    out = np.zeros((count, *shape))
    for r, (g, size) in enumerate(zip(rng, sizes, strict=True)):
        rows = min(count, int(size) - first)
        if rows > 0:
            out[:rows, r] = g.standard_normal((rows, *shape[1:]))
    return out


def draw_dw_min_scale(device, shape: tuple[int, ...], rng: Rng) -> np.ndarray:
    r"""Per-element device-to-device factor of ``dw_min``, drawn once per run.

    .. math:: s = |1 + \sigma_{d2d}\, \xi|, \quad \xi \sim N(0, 1)

    The absolute value only matters with probability :math:`\Phi(-1/\sigma_{d2d})` (4e-4 at
    :math:`\sigma_{d2d} = 0.3`); it keeps every step size positive.
    """
    xi = _per_member(rng, lambda g, s: g.standard_normal(s), tuple(shape))
    return np.abs(1.0 + device.dw_min_dtod * xi)


def draw_bound_scale(device, shape: tuple[int, ...], rng: Rng) -> np.ndarray:
    r"""Per-element device-to-device factor of the weight range, drawn once per run.

    .. math:: s_b = |1 + \sigma_b\, \xi|, \quad
        \sigma_b = \frac{w_{\mathrm{bounds,dtod}}}{(w_{\max} - w_{\min})/2}

    (``w_bounds_dtod`` is in weight units; the range of element i is :math:`s_b [w_{\min},
    w_{\max}]`).
    """
    sigma = device.w_bounds_dtod / (0.5 * (device.w_max - device.w_min))
    xi = _per_member(rng, lambda g, s: g.standard_normal(s), tuple(shape))
    return np.abs(1.0 + sigma * xi)


@dataclass(frozen=True)
class DeviceSpread:
    """The fixed device-to-device variation of one run (``None``: no spread of that kind).

    Attributes
    ----------
    dw_min_scale : ndarray or None
        Per-element factor of ``dw_min`` (:func:`draw_dw_min_scale`).
    bound_scale : ndarray or None
        Per-element factor of the weight range (:func:`draw_bound_scale`).
    """

    dw_min_scale: np.ndarray | None = None
    bound_scale: np.ndarray | None = None

    @classmethod
    def draw(cls, device, shape: tuple[int, ...], rng: Rng) -> DeviceSpread:
        """Draw the spreads the device has (``dw_min`` first, then the bounds)."""
        step = draw_dw_min_scale(device, shape, rng) if device.dw_min_dtod > 0 else None
        bound = draw_bound_scale(device, shape, rng) if device.w_bounds_dtod > 0 else None
        return cls(step, bound)


def train_scale(lr: float, dw_min: float, bl: int) -> float:
    r"""aihwkit's probability scale of a bit train with update management off.

    .. math:: A = B = \sqrt{\frac{\eta}{\Delta w_{\min}\, BL}}

    (aihwkit ``PulsedUpdateMetaParameter::calculateBlAB``, ``fixed_BL``): an input value ``x``
    fires each of the ``BL`` bits with probability :math:`p_x = \min(1, A|x|)`, an error value
    ``d`` with :math:`p_d = \min(1, B|d|)`, so a device expects
    :math:`BL\, p_x p_d = \eta |x d| / \Delta w_{\min}` coincidences (unclipped), each one pulse.
    ``lr`` (:math:`\eta`) and ``dw_min`` in weight units, ``bl`` in pulses.
    """
    return float(np.sqrt(lr / (dw_min * bl)))


@dataclass(frozen=True)
class TrainScales:
    r"""aihwkit's bit length and probability scales of the two trains of one update.

    Attributes
    ----------
    bl : int
        Bits per train (0: nothing fires).
    a : float
        Scale of the error (d, row) train: :math:`p_d = \min(1, A|d|)` (aihwkit ``A``).
    b : float
        Scale of the input (x, column) train: :math:`p_x = \min(1, B|x|)` (aihwkit ``B``).
    """

    bl: int
    a: float
    b: float


def train_scales(lr: float, dw_min: float, desired_bl: int, x_abs_max: float | None = None,
                 d_abs_max: float | None = None, *, update_management: bool = False,
                 bl_management: bool = False, fixed_bl: bool = True,
                 um_grad_scale: float = 1.0) -> TrainScales:
    r"""Bit length and train scales of one update, as aihwkit computes them.

    IBM/aihwkit ``src/rpucuda/rpu_pulsed_meta_parameter.cpp``,
    ``PulsedUpdateMetaParameter::calculateBlAB`` then ``performUpdateManagement`` (with
    ``max_BL = desired_BL``; :math:`\eta` = ``lr``, :math:`\Delta w_{\min}` = ``dw_min``):

    - ``calculateBlAB``: with ``fixed_bl`` (aihwkit's default) or ``bl_management``,
      :math:`BL = BL_{des}`, :math:`A = B = \sqrt{\eta / (\Delta w_{\min} BL)}`; otherwise,
      when :math:`\Delta w_{\min} BL_{des} < \eta`, :math:`A = B = 1`,
      :math:`BL = \max(\lceil \eta / \Delta w_{\min} \rceil, 1)`.
    - with ``update_management`` or ``bl_management`` (the maxima ``x_abs_max``, ``d_abs_max``
      of :math:`|x|` and :math:`|d|` over the update are then needed): a zero maximum fires
      nothing (:math:`BL = 0`); else with :math:`d_v = s_{um} d_{\max}` and
      :math:`k = \eta\, x_{\max} d_v / \Delta w_{\min}` (the most pulses any device asks for),
      ``bl_management`` sets :math:`BL = \min(\lceil k \rceil, BL_{des})` and
      :math:`A = B = \sqrt{\eta / (\Delta w_{\min} BL)}`; ``update_management`` then, if
      :math:`k > BL_{des}`, scales :math:`d_v \leftarrow d_v BL_{des} / k`, and sets
      :math:`A \leftarrow A \sqrt{x_{\max} / d_v}`, :math:`B \leftarrow B \sqrt{d_v / x_{\max}}`,
      so that both trains fire with the same probability at their maxima (and the x-train is
      never clipped). :math:`A B` is unchanged by update management: the expected count
      :math:`BL\, p_x p_d = \eta |x d| / \Delta w_{\min}` of an unclipped device is the same.

    Parameters
    ----------
    lr, dw_min : float
        Learning rate (> 0) and pulse granularity (weight units).
    desired_bl : int
        aihwkit ``desired_BL`` (the most bits with ``bl_management``).
    x_abs_max, d_abs_max : float, optional
        :math:`\max_j |x_j|`, :math:`\max_i |d_i|`; required by the two managements.
    update_management, bl_management, fixed_bl : bool
        aihwkit ``update_management``, ``update_bl_management``, ``fixed_BL``.
    um_grad_scale : float
        aihwkit ``um_grad_scale`` (:math:`s_{um}`, 1 by default).
    """
    if lr < 0:
        raise ParameterError(f"lr={lr!r} must be >= 0")
    if lr == 0:
        return TrainScales(0, 0.0, 0.0)
    if fixed_bl or bl_management:
        bl = int(desired_bl)
        a = b = float(np.sqrt(lr / (dw_min * bl)))
    elif dw_min * desired_bl < lr:
        bl, a, b = max(int(np.ceil(lr / dw_min)), 1), 1.0, 1.0
    else:
        bl = int(desired_bl)
        a = b = float(np.sqrt(lr / (dw_min * bl)))
    if not (update_management or bl_management):
        return TrainScales(bl, a, b)
    if x_abs_max is None or d_abs_max is None:
        raise ParameterError("update_management and bl_management need x_abs_max and d_abs_max")
    if x_abs_max == 0 or d_abs_max == 0:
        return TrainScales(0, 1.0, 1.0)
    x_val, d_val = float(x_abs_max), um_grad_scale * float(d_abs_max)
    k = lr * x_val * d_val / dw_min
    if bl_management:
        bl = min(int(np.ceil(k)), int(desired_bl))
        a = b = float(np.sqrt(lr / (dw_min * bl)))
    if update_management:
        if k > desired_bl:
            d_val *= desired_bl / k
        a *= float(np.sqrt(x_val / d_val))
        b *= float(np.sqrt(d_val / x_val))
    return TrainScales(bl, a, b)


def check_bit_length(bl, name: str = "bl") -> int:
    """``bl`` as an int in ``[1, MAX_PULSES_PER_UPDATE]`` (pulses per update), else a one-line
    :class:`~theory.errors.ParameterError` starting ``name=``."""
    if type(bl) is int and 1 <= bl <= MAX_PULSES_PER_UPDATE:  # (the common case, at once)
        return bl
    return check_range(name, bl, 1, MAX_PULSES_PER_UPDATE, integer=True)


def coincidence_counts(x, d, lr: float, dw_min: float, bl: int, rng: np.random.Generator,
                       pulse_type: str = "stochastic", *, update_management: bool = False,
                       bl_management: bool = False) -> np.ndarray:
    r"""Pulses per device of one rank-1 update :math:`W \mathrel{-}= \eta\, d x^T` (aihwkit).

    ``stochastic`` (aihwkit ``StochasticCompressed``): one Bernoulli train of ``bl`` bits per
    input column ``j`` (probability :math:`p_{x,j} = \min(1, A|x_j|)`, shared by every row) and
    one per row ``i`` (:math:`p_{d,i} = \min(1, A|d_i|)`), :math:`A` from :func:`train_scale`;
    device ``(i, j)`` gets one pulse per coincidence,

    .. math:: n_{ij} = \sum_{k=1}^{BL} X_{jk} D_{ik} \le BL, \qquad
        E[n_{ij}] = BL\, p_{x,j} p_{d,i}, \quad
        \mathrm{Var}[n_{ij}] = BL\, p_{x,j} p_{d,i} (1 - p_{x,j} p_{d,i})

    (each device's count is exactly Binomial(BL, p_x p_d); devices sharing a train are
    correlated). ``mean-count`` (aihwkit ``MeanCount``): no train noise,
    :math:`c_x = \mathrm{rint}(BL\, p_x)`, :math:`c_d = \mathrm{rint}(BL\, p_d)`,
    :math:`n = \mathrm{rint}(c_x c_d / BL)`.

    Parameters
    ----------
    x : array of shape (cols,)
        Input values (one per column).
    d : array of shape (rows,)
        Error values (one per row).
    lr, dw_min : float
        Learning rate :math:`\eta` and nominal pulse granularity (weight units).
    bl : int
        Bit length (pulses per update at most; aihwkit ``desired_BL``).
    rng : Generator
        Draws the x-trains first, then the d-trains (``rng.random``, one row at a time).
    pulse_type : {"stochastic", "mean-count"}
    update_management, bl_management : bool
        aihwkit's update management and BL management (:func:`train_scales`, from
        :math:`\max|x|` and :math:`\max|d|` of this update): the x-train then fires with
        :math:`p_x = \min(1, B|x|)` and the d-train with :math:`p_d = \min(1, A|d|)`, and the
        trains have :math:`BL \le` ``bl`` bits. Off (the default), :math:`A = B` =
        :func:`train_scale`.

    Returns
    -------
    ndarray of int64, shape (rows, cols)
        Pulse counts; the pulse direction of device ``(i, j)`` is :math:`-\mathrm{sign}(x_j d_i)`.
    """
    x = np.atleast_1d(np.asarray(x, dtype=float))
    d = np.atleast_1d(np.asarray(d, dtype=float))
    if update_management or bl_management:
        scales = train_scales(lr, dw_min, bl, float(np.max(np.abs(x))), float(np.max(np.abs(d))),
                              update_management=update_management, bl_management=bl_management)
        if scales.bl == 0:
            return np.zeros((d.size, x.size), dtype=np.int64)
        bl, scale_x, scale_d = scales.bl, scales.b, scales.a
    else:
        scale_x = scale_d = train_scale(lr, dw_min, bl)
    p_x = np.minimum(1.0, scale_x * np.abs(x))
    p_d = np.minimum(1.0, scale_d * np.abs(d))
    if pulse_type == "mean-count":
        c_x = np.clip(np.rint(bl * p_x), 0, bl)
        c_d = np.clip(np.rint(bl * p_d), 0, bl)
        return np.rint(np.outer(c_d / bl, c_x)).astype(np.int64)
    if pulse_type != "stochastic":
        raise ParameterError(f"pulse_type={pulse_type!r} has no bit trains; valid: stochastic, "
                             "mean-count")
    x_bits = rng.random((x.size, bl)) < p_x[:, None]
    d_bits = rng.random((d.size, bl)) < p_d[:, None]
    # coincidences as a float matmul (BLAS): exact, every partial sum is an integer <= bl
    return (d_bits.astype(float) @ x_bits.T.astype(float)).astype(np.int64)


def pulse_counts(x: np.ndarray, rng: Rng, pulse_type: str, bl: int, *,
                 bl_management: bool = False) -> np.ndarray:
    r"""Pulses per element for ``x = |dw| / dw_min`` desired pulses, as :func:`pulsed_update`
    counts them for ``pulse_type`` with bit length ``bl`` (unused by ``deterministic``).

    With ``bl_management`` (``stochastic`` and ``mean-count``), each tile (the whole array for
    one generator, each member's row for a sequence of them) uses aihwkit's managed bit length
    :math:`BL = \min(\lceil \max x \rceil, bl)` (:func:`train_scales`: for a rank-1 update
    :math:`\max x = \eta\, x_{\max} d_{\max} / \Delta w_{\min}`), 0 if nothing is asked.
    """
    if pulse_type == "deterministic":
        from .pulse_kernels import stochastic_rounding

        u = _uniforms(rng, x.shape)
        counts, finite = stochastic_rounding(np.ascontiguousarray(x, dtype=float).reshape(-1),
                                             u.reshape(-1))
        if finite:
            return counts.reshape(x.shape)
        whole = np.floor(x)  # (numpy's conversion of a nan or an infinity)
        return (whole + (u < x - whole)).astype(np.int64)
    if bl_management:
        tiles = [x] if isinstance(rng, np.random.Generator) else list(x)
        bls = [min(int(np.ceil(t.max())), bl) if t.size and t.max() > 0 else 0 for t in tiles]
    if pulse_type == "mean-count":
        if not bl_management:
            return np.rint(np.minimum(x, bl)).astype(np.int64)
        return np.stack([np.rint(np.minimum(t, b)) for t, b in zip(tiles, bls, strict=True)]
                        ).reshape(x.shape).astype(np.int64)
    if not bl_management:
        return binomial_counts(bl, np.minimum(1.0, x / bl), rng)
    gens = [rng] if isinstance(rng, np.random.Generator) else list(rng)
    return np.stack([binomial_counts(b, np.minimum(1.0, t / b), g) if b else
                     np.zeros(t.shape, dtype=np.int64)
                     for t, b, g in zip(tiles, bls, gens, strict=True)]).reshape(x.shape)


#: elements whose mean count min(p, 1 - p) BL exceeds this are drawn by numpy's ``binomial``
#: (its BTPE algorithm: numpy itself inverts only up to a mean of 30); the others by inversion,
#: whose P(0) = (1 - q)^BL >= exp(-30 * 2 log 2) stays far from underflow
_INVERSION_MEAN = 30.0


def binomial_counts(bl: int, p: np.ndarray, rng: Rng) -> np.ndarray:
    r"""Binomial(``bl``, ``p``) counts, element-wise.

    ``rng`` is one generator, or one per row (ensemble member) of ``p``; each draws one uniform
    per element of its own, then numpy ``binomial`` draws for its own elements whose mean count
    :math:`BL \min(p, 1 - p)` exceeds 30 (none for :math:`BL \le 60`), so a member's counts
    depend on its own ``p`` only. The others are decided by the uniform :math:`u`, by
    inversion of the CDF (compiled: :func:`simulate.pulse_kernels.binomial_inversion`):
    :math:`n = \min\{k : u < P(N \le k)\}`, the pmf built by
    :math:`P(k) = P(k-1)\, \frac{q}{1 - q} \frac{BL - k + 1}{k}` from
    :math:`P(0) = (1 - q)^{BL}` (by squaring for :math:`BL \le 64`, else
    :math:`\exp(BL\, \mathrm{log1p}(-q))`) with :math:`q = \min(p, 1 - p)` (for :math:`p > 1/2`
    the count is :math:`BL - \mathrm{Binomial}(BL, 1 - p)`). Exact in distribution up to the
    rounding of the CDF (a few ulp times the length of the walk; :math:`P(0)` to about
    :math:`BL\,\epsilon` relative). Same seed, same counts; the bits are this package's (not
    numpy's ``binomial``).
    """
    return _binomial_counts(bl, p, rng)


def _binomial_counts(bl: int, values: np.ndarray, rng: Rng, dw_min: float = 0.0,
                     u: np.ndarray | None = None) -> np.ndarray:
    """:func:`binomial_counts` of ``p = values`` (``dw_min = 0``), or of
    ``p = min(1, (|values| / dw_min) / bl)`` for desired increments ``values``, from the
    uniforms ``u`` if given (else drawn here, :func:`_uniforms`)."""
    from .pulse_kernels import binomial_inversion

    values = np.ascontiguousarray(values, dtype=float)
    shape, dw_min = values.shape, float(dw_min)
    u = (_uniforms(rng, shape) if u is None else u).reshape(-1)
    counts, big, p_big = binomial_inversion(values.reshape(-1), dw_min, bl, u, _INVERSION_MEAN)
    if big.size:  # numpy's binomial, each member's elements (ascending) from its own generator
        if isinstance(rng, np.random.Generator):
            counts[big] = rng.binomial(bl, p_big)
        else:
            per = u.size // len(rng)
            ends = np.searchsorted(big, np.arange(len(rng) + 1) * per)
            for r, g in enumerate(rng):
                if ends[r + 1] > ends[r]:
                    part = slice(ends[r], ends[r + 1])
                    counts[big[part]] = g.binomial(bl, p_big[part])
    return counts.reshape(shape)


@functools.lru_cache(maxsize=32)
def _affine_constants(device, bl: int):
    """The constants of :func:`simulate.pulse_kernels.stochastic_affine_update` for ``device``
    (nominal ``dw_min``, no spread) and bit length ``bl``: ``(alpha_up, beta_up, alpha_down,
    beta_down, step, table_up, table_down, lo, hi)``, or ``None`` where the responses are not
    affine or a rate is outside ``[0, 1)`` (the general path then fires the pulses)."""
    coefficients = device.response.affine_responses()
    if coefficients is None:
        return None
    (alpha_up, beta_up), (alpha_down, beta_down) = coefficients
    step = float(device.dw_min)
    rate_up, rate_down = float(step * -beta_up), float(step * beta_down)  # Device.pulse_map's
    if not (0.0 <= rate_up < 1.0 and 0.0 <= rate_down < 1.0):
        return None
    counts = np.arange(bl + 1)
    tables = [np.ascontiguousarray(geometric_sum(counts, rate)) for rate in (rate_up, rate_down)]
    for table in tables:
        table.flags.writeable = False
    return (float(alpha_up), float(beta_up), float(alpha_down), float(beta_down), step,
            tables[0], tables[1], float(device.w_min), float(device.w_max))


def _stochastic_closed_form(w: np.ndarray, dw: np.ndarray, device, rng: Rng, bl: int,
                            scale: float = 1.0, out: np.ndarray | None = None
                            ) -> np.ndarray | None:
    """The ``stochastic`` update of a noise-free affine device without spread by desired
    increments ``scale * dw`` in one compiled call
    (:func:`simulate.pulse_kernels.stochastic_affine_update`; into ``out`` if given, a
    C-contiguous float64 array of ``w``'s shape), or ``None`` if it does not apply (then
    :func:`pulsed_update` takes the general path; nothing is drawn). A member (row) whose
    weights leave the range or whose mean counts exceed :data:`_INVERSION_MEAN` is redone by the
    general path from the same uniforms, so its bits are those it gets alone."""
    from .pulse_kernels import stochastic_affine_update

    one = isinstance(rng, np.random.Generator)
    if w.size == 0 or not (one or (w.ndim >= 2 and len(rng) == w.shape[0])):
        return None
    constants = _affine_constants(device, bl)
    if constants is None:
        return None
    flat = np.ascontiguousarray(w).reshape(-1)
    increments = np.ascontiguousarray(dw).reshape(-1)
    rows = 1 if one else len(rng)
    u = _uniforms(rng, w.shape).reshape(-1)
    result, ok = stochastic_affine_update(flat, increments, u, rows, float(device.dw_min), bl,
                                          _INVERSION_MEAN, *constants, float(scale),
                                          None if out is None else out.reshape(-1))
    result = result.reshape(w.shape)
    if not ok.all():
        for r in np.flatnonzero(~ok):
            part, g = (slice(None), rng) if one else (slice(r, r + 1), [rng[r]])
            per = u.size // rows
            increment = dw[part] * scale  # (numpy's product: the kernel's, bit for bit)
            counts = _binomial_counts(bl, increment, g, device.dw_min, u[r * per:(r + 1) * per])
            result[part] = apply_pulses(w[part], counts, increment >= 0, device, g,
                                        device.dw_min)
    return result


def stochastic_write(w: np.ndarray, gw: np.ndarray, scale: float, device, rng: Rng,
                     out: np.ndarray) -> bool:
    r"""The ``stochastic`` pulse update of ``w`` by desired increments :math:`\Delta w = s\,g_w`
    (``scale`` :math:`s`), in place and fused: the scaling, the counts and the closed form in one
    compiled call, the same bits as ``pulsed_update(w, s * gw, device, rng,
    pulse_type="stochastic")`` (default closed form, no spread, no BL management); ``gw`` is
    left unchanged.

    Parameters
    ----------
    w, gw : ndarray of shape (R, P)
        Weights (updated in place) and gradients, C-contiguous float64.
    scale : float
        :math:`s`, e.g. :math:`-\alpha`.
    device : theory.devices.Device
    rng : Generator or sequence of Generator
        As :func:`pulsed_update` (one per row for an ensemble).
    out : ndarray
        Work array of ``w``'s shape (C-contiguous float64, not ``w``).

    Returns
    -------
    bool
        ``False`` (nothing drawn, ``w`` unchanged) where the fused call does not apply: a
        device with cycle-to-cycle noise or without affine responses, a rate outside
        :math:`[0, 1)`; the caller then takes the general path.
    """
    if device.dw_min_std != 0:
        return False
    bl = check_bit_length(device.desired_bl, "desired_bl")
    new = _stochastic_closed_form(w, gw, device, rng, bl, scale, out)
    if new is None:
        return False
    np.copyto(w, new)
    return True


def pulsed_update(
    w: np.ndarray,
    dw: np.ndarray,
    device,
    rng: Rng,
    dw_min_scale: np.ndarray | None = None,
    bound_scale: np.ndarray | None = None,
    *,
    lr: float | None = None,
    pulse_type: str = "deterministic",
    bl: int | None = None,
    method: str = "closed-form",
    bl_management: bool = False,
) -> np.ndarray:
    r"""Pulse-level analog update: a pulse count per element, then pulse by pulse with c2c noise.

    The pulse count of an element with desired increment :math:`\Delta w` depends on
    ``pulse_type`` (:data:`PULSE_TYPES`, aihwkit's vocabulary); :math:`x = |\Delta w| /
    \Delta w_{\min}` with the element's own ``dw_min`` (device-to-device scaled) for
    ``deterministic``, the nominal ``dw_min`` for the others (aihwkit scales the trains with the
    tile's nominal granularity):

    - ``deterministic`` (the package's original model; mean and std of aihwkit's
      ``DeterministicImplicit`` to 0.07 % / 1.3 %): stochastic rounding,
      :math:`n = \lfloor x \rfloor + \mathrm{Bernoulli}(x - \lfloor x \rfloor)`, no cap
      (:math:`\mathrm{Var}[n] \le 1/4`);
    - ``stochastic`` (aihwkit's default ``StochasticCompressed``, per device):
      :math:`n \sim \mathrm{Binomial}(BL, p)`, :math:`p = \min(1, x / BL)` (drawn by
      :func:`binomial_counts`; for a noise-free affine device without spreads, fired by the
      closed form, counts and weights come from one compiled call with the responses
      :math:`\alpha_\pm + \beta_\pm w` evaluated there, which may differ from the device's
      compiled responses in the last bit): exactly the count of
      coincidences of an x-train and a d-train of ``BL`` bits with :math:`p_x = p_d = \sqrt{p}`
      (the symmetric factorisation :math:`A|x| = B|d|`), so :math:`E[n] = \min(x, BL)`,
      :math:`\mathrm{Var}[n] = BL\,p(1-p)`. Only ``dW`` is known here, not the ``x`` and ``d`` of
      an outer product, so the correlation between devices sharing a train is not modelled
      (:func:`coincidence_counts` has it for a rank-1 update, which the networks use at one
      sample per update, through :meth:`Updater.fire`);
    - ``mean-count``: :math:`n = \mathrm{rint}(\min(x, BL))`, the expected count without train
      noise (aihwkit ``MeanCount`` up to the rounding of its per-line counts).

    Pulse :math:`p` moves the weight by :math:`\mathrm{sign}(\Delta w)\, \Delta w_{\min}\,
    q_{\mathrm{sign}}(w_p) (1 + \sigma_c \xi_p)` at the weight :math:`w_p` left by the previous
    pulse (``additive`` ``c2c_noise``: :math:`\Delta w_{\min} (\mathrm{sign}(\Delta w)
    q_{\mathrm{sign}}(w_p) + \sigma_c \xi_p)`), clipped at the element's range.

    Parameters
    ----------
    w : ndarray
        Current weights.
    dw : ndarray
        Desired increments (same shape as ``w``).
    device : theory.devices.Device
        Provides ``q_plus``, ``q_minus``, ``dw_min``, ``dw_min_std`` (:math:`\sigma_c`, relative to
        one pulse), ``c2c_noise``, ``desired_bl`` and the bounds.
    rng : Generator or sequence of Generator
        One generator for the whole array, or one per index of the leading (ensemble) axis; member
        ``r`` then draws only from ``rng[r]`` and only as many numbers as its own pulses need.
    dw_min_scale : ndarray, optional
        Fixed per-element device-to-device factor of ``dw_min`` (:func:`draw_dw_min_scale`).
    bound_scale : ndarray, optional
        Fixed per-element device-to-device factor of the weight range (:func:`draw_bound_scale`):
        the response is evaluated at ``w / bound_scale`` and the clip range is scaled.
    lr : float, optional
        The learning rate that made ``dw`` (named in the error below; ``dw`` otherwise).
    pulse_type : {"deterministic", "stochastic", "mean-count"}
        How the pulse count is made (above); default ``deterministic``.
    bl : int, optional
        Bit length :math:`BL` of ``stochastic`` and ``mean-count`` (default
        ``device.desired_bl``): at most ``bl`` pulses per element and update.
    method : {"closed-form", "loop"}
        How the pulses are fired (:func:`apply_pulses`): all at once where the device's
        responses are affine (the default), or one by one.
    bl_management : bool
        aihwkit's BL management for ``stochastic`` and ``mean-count`` (:func:`pulse_counts`,
        per tile). aihwkit's update management has no counterpart here: it splits the
        probability between the x- and the d-train, which only ``dW`` does not determine; it
        leaves :math:`p_x p_d` unchanged unless a train clips, so the per-device count is the
        same (:func:`coincidence_counts` applies it where ``x`` and ``d`` are known).

    Returns
    -------
    ndarray
        The weights after all pulses, each pulse clipped at the element's range.

    Raises
    ------
    ParameterError
        If an element needs more than :data:`theory.limits.MAX_PULSES_PER_UPDATE` pulses
        (:math:`|\Delta w| / \Delta w_{\min}`; ``deterministic`` only, the others fire at most
        ``bl``), before any pulse is fired; it names ``lr``.
    """
    if pulse_type not in PULSE_TYPES:
        raise ParameterError(
            f"pulse_type={pulse_type!r} is unknown; valid: {', '.join(PULSE_TYPES)}"
        )
    w = np.asarray(w, dtype=float)  # (apply_pulses returns a new array)
    dw = np.asarray(dw, dtype=float)
    if dw.shape != w.shape:
        dw = np.broadcast_to(dw, w.shape)
    step = device.dw_min * (1.0 if dw_min_scale is None else dw_min_scale)
    if pulse_type == "deterministic":
        x = np.abs(dw) / step
        _check_pulses(x, dw, lr)
        pulses = pulse_counts(x, rng, pulse_type, 0)
    else:
        bl = check_bit_length(device.desired_bl, "desired_bl") if bl is None else \
            check_bit_length(bl)
        if pulse_type == "stochastic" and not bl_management:  # p from dw in the same pass
            if method == "closed-form" and dw_min_scale is None and bound_scale is None and \
                    device.dw_min_std == 0:
                out = _stochastic_closed_form(w, dw, device, rng, bl)
                if out is not None:
                    return out
            pulses = _binomial_counts(bl, dw, rng, device.dw_min)
        else:
            pulses = pulse_counts(np.abs(dw) / device.dw_min, rng, pulse_type, bl,
                                  bl_management=bl_management)
    return apply_pulses(w, pulses, dw >= 0, device, rng, step, bound_scale, method=method)


def _check_pulses(x: np.ndarray, dw: np.ndarray, lr: float | None) -> None:
    """Refuse ``x = |dw| / dw_min`` beyond MAX_PULSES_PER_UPDATE pulses (naming ``lr``)."""
    most = float(np.max(x)) if x.size else 0.0
    if most > MAX_PULSES_PER_UPDATE:  # pulses <= ceil(x): beyond, refuse before looping
        name, value = ("lr", lr) if lr is not None else ("dw", float(np.max(np.abs(dw))))
        check_size(name, value, need=most, limit=MAX_PULSES_PER_UPDATE,
                   what="pulses on one device in one update (|dw| / dw_min)", hint="lower lr")


#: an ensemble's update is computed this many elements' worth of members at a time (about
#: 256 KB per float64 array: the dozens of passes of a pulsed update stay in cache; every pass
#: is element-wise or per member, so the bits are those of one call)
_MEMBER_BLOCK = 1 << 15


def _member_blocks(w: np.ndarray, rng) -> list[slice] | None:
    """Slices of the ensemble axis of at most about :data:`_MEMBER_BLOCK` elements, or ``None``
    (one block) for one generator or a small array."""
    if isinstance(rng, np.random.Generator) or rng is None or w.ndim < 2 or \
            w.size <= _MEMBER_BLOCK:
        return None
    per = max(1, _MEMBER_BLOCK // max(1, w[0].size))
    blocks = [slice(r, min(r + per, w.shape[0])) for r in range(0, w.shape[0], per)]
    return blocks if len(blocks) > 1 else None


def apply_pulses(w: np.ndarray, pulses: np.ndarray, up: np.ndarray, device, rng: Rng,
                 step, bound_scale: np.ndarray | None = None, *,
                 method: str = "closed-form") -> np.ndarray:
    r"""Fire ``pulses[i]`` pulses on element ``i`` (up where ``up``), in one step or pulse by pulse.

    Pulse :math:`p` of element ``i`` moves it by :math:`\pm\,\Delta w_{\min,i}\, q_\pm(w_p)` with
    the device's cycle-to-cycle noise (:func:`pulsed_update`), clipped at the element's range;
    ``step`` is the element's ``dw_min`` (weight units, device-to-device scaled).

    ``method="closed-form"`` (the default) applies all pulses of an element at once where the
    device's responses are affine (soft bounds, asymmetric soft bounds, linear step, constant
    step; :meth:`theory.devices.Device.pulse_map`), else falls back to the loop; ``"loop"``
    always fires pulse by pulse, one vectorised pass per pulse. With :math:`c` the rate of one
    pulse, :math:`a = 1 - c`, :math:`\mathrm{inc}` the first (noise-free) increment and
    :math:`S_n(c) = \sum_{j<n} (1-c)^j`:

    - **no cycle-to-cycle noise**: :math:`w_n = \mathrm{clip}(w + \mathrm{inc}\, S_n(c))`, the
      exact iterate (equal to the loop up to floating-point rounding, bit for bit for one pulse);
    - **additive** noise :math:`\Delta w_{\min} \sigma_c \xi_p` per pulse: the iterate is the
      affine map plus :math:`\sum_j a^{n-1-j} \Delta w_{\min} \sigma_c \xi_j`, exactly Gaussian
      with variance :math:`\Delta w_{\min}^2 \sigma_c^2 S_n(1 - a^2)`, drawn as one normal per
      element (exact in distribution, not the loop's bits);
    - **multiplicative** noise :math:`\mathrm{inc}(w_p)\, \sigma_c \xi_p`: the distance to the
      fixed point :math:`u = r/c - w` evolves as :math:`u_{p+1} = u_p (a - c \sigma_c \xi_p)`, so
      :math:`E[w_n]` is the noise-free iterate and
      :math:`\mathrm{Var}[w_n] = u_0^2 ((a^2 + c^2 \sigma_c^2)^n - a^{2n})` exactly
      (:math:`n\, \mathrm{inc}^2 \sigma_c^2` at :math:`c = 0`); the closed form draws a Gaussian
      with this mean and variance (**an approximation**: the product of :math:`n` factors near 1
      is close to, not exactly, Gaussian; its mean and standard deviation over many devices are
      tested against the loop);
    - **clipping with noise**: the sum is clipped once at the end. That is exact while each
      increment keeps its sign (the walk is then monotone and sticks at the bound it reaches).
      Under additive noise an element whose walk ends within 6 standard deviations of a bound
      (where a pulse of :math:`q(w) + \sigma_c \xi` may point backwards, as at a soft bound) is
      fired by the loop instead (with its own generator, after the closed form's draw). Under
      multiplicative noise a pulse points backwards only with probability
      :math:`\Phi(-1/\sigma_c)` (4e-4 at :math:`\sigma_c = 0.3`); at a hard bound that is the
      one approximation left (tested: means within 1e-5 of the loop's at 0.3);
    - an element that starts **outside its range** (only possible with a spread of the bounds)
      first gets one noise-free pulse, clipped into the range as the loop's first pulse would be,
      then the closed form of the rest; an element whose pulse would overshoot its fixed point
      (rate :math:`c \ge 1`, possible with device-to-device spreads) is fired by the loop. Each
      such choice is the element's own, so a member's bits do not depend on the others.

    Random numbers: the loop draws the noise of pulse ``p`` as by one draw of every pulse at once
    (in blocks of bounded memory); the closed form draws one standard normal per element. Either
    way member ``r`` of a sequence of generators draws from ``rng[r]`` only, and only if its own
    pulses need it.
    """
    if method not in PULSE_METHODS:
        raise ParameterError(f"method={method!r} is unknown; valid: {', '.join(PULSE_METHODS)}")
    w = np.asarray(w, dtype=float)  # every path below returns a new array
    if pulses.size == 0 or pulses.max() == 0:
        return w.copy()
    if method == "closed-form":
        pulse = device.pulse_map(up, step, bound_scale, overshoot=True)
        if pulse is not None and not (isinstance(pulse.rate, float) and pulse.rate >= 1.0):
            return _closed_form_pulses(w, pulses, up, device, rng, step, bound_scale, pulse)
    return _pulse_loop(w, pulses, up, device, rng, step, bound_scale)


def _first_increment(w, up, device, signed_step, bound_scale):
    """The noise-free increment of one pulse at ``w`` (as the loop computes it)."""
    v = w if bound_scale is None else w / bound_scale
    return signed_step * np.where(up, device.q_plus(v), device.q_minus(v))


def _closed_form_pulses(w, pulses, up, device, rng, step, bound_scale, pulse) -> np.ndarray:
    """All pulses at once through the affine pulse map (:func:`apply_pulses`); an element whose
    pulse overshoots its fixed point (rate >= 1, only possible with a device-to-device spread)
    is fired by the loop, so the choice is the element's own."""
    if not isinstance(pulse.rate, float):
        over = pulse.rate >= 1.0
        if over.any():
            safe = PulseMap(np.where(over, 0.0, pulse.rate), pulse.lo, pulse.hi)
            out = _closed_form_pulses(w, pulses, up, device, rng, step, bound_scale, safe)
            _loop_where(out, over & (pulses > 0), w, pulses, device, rng, step, bound_scale, up)
            return out
    if device.dw_min_std == 0 and bound_scale is None and np.ndim(step) == 0 and \
            isinstance(pulse.rate, float) and pulses.dtype.kind in "iu":
        out = _affine_after(w, pulses, up, device, float(step), pulse)
        if out is not None:
            return out
    signed_step = np.where(up, step, -step)
    inc = _first_increment(w, up, device, signed_step, bound_scale)
    n = pulses
    # screened by two reductions: only a start outside the element ranges needs the full test
    outside = None
    if w.min() < np.max(pulse.lo) or w.max() > np.min(pulse.hi):
        outside = (w < pulse.lo) | (w > pulse.hi)
    if outside is not None and outside.any():
        # the loop's first pulse clips such an element into its range
        idle = outside & (pulses == 0)
        outside &= pulses > 0
        start, w = w, np.where(outside, np.clip(w + inc, pulse.lo, pulse.hi), w)
        n = n - outside
        inc = _first_increment(w, up, device, signed_step, bound_scale)
        rest = _closed_form_sum(w, n, inc, up, pulses, device, rng, step, bound_scale, pulse)
        return np.where(idle, start, rest)
    return _closed_form_sum(w, n, inc, up, pulses, device, rng, step, bound_scale, pulse)


def _affine_after(w, pulses, up, device, step: float, pulse) -> np.ndarray | None:
    """The noise-free closed form with one rate and one range, compiled
    (:func:`simulate.pulse_kernels.affine_apply`; the numbers of :meth:`PulseMap.after` of
    :func:`_first_increment`, with the responses evaluated, by numpy, only where a pulse fires
    or the weight is 0 or not finite), or ``None`` if a weight starts outside the range."""
    from .pulse_kernels import affine_apply, affine_split

    flat = np.ascontiguousarray(w).reshape(-1)
    n = np.ascontiguousarray(pulses, dtype=np.int64).reshape(-1)
    direction = np.asarray(up)
    if direction.shape != w.shape:
        direction = np.broadcast_to(direction, w.shape)
    direction = np.ascontiguousarray(direction).reshape(-1)
    lo, hi = float(pulse.lo), float(pulse.hi)
    up_index, w_up, down_index, w_down, inside, most = affine_split(flat, n, direction, lo, hi)
    if not inside:
        return None
    table = geometric_sum(np.arange(most + 1), pulse.rate)  # PulseMap.per_count's table
    out = affine_apply(flat, n, up_index, device.q_plus(w_up), down_index,
                       device.q_minus(w_down), step, table, lo, hi)
    return out.reshape(w.shape)


#: an element whose noisy walk ends within this many standard deviations of a bound is fired
#: pulse by pulse under additive noise (the walk touches the bound with probability about
#: 2 Phi(-6) = 2e-9 otherwise, and only a touch makes the per-pulse clip differ from the final one)
_NEAR_BOUND_STD = 6.0


def _closed_form_sum(w, n, inc, up, pulses, device, rng, step, bound_scale, pulse) -> np.ndarray:
    """``n`` pulses from ``w`` (inside its range) whose first one moves it by ``inc``."""
    if device.dw_min_std == 0:
        return pulse.after(w, n, inc)
    sigma = device.dw_min_std
    additive = device.c2c_noise == "additive"
    if additive:
        std = np.sqrt(pulse.per_count(_squares_sum, n))
        std *= sigma
        std = std * step
    else:
        std = pulse.per_count(lambda k, c: _multiplicative_spread(k, c, sigma), n)
        std *= np.abs(inc)
    mean = pulse.per_count(geometric_sum, n)
    mean *= inc
    mean += w
    near = None
    if additive:  # a walk that may touch a bound: the loop's per-pulse clip matters there
        reach = _NEAR_BOUND_STD * std
        near = ((np.minimum(w, mean) - reach < pulse.lo) | (np.maximum(w, mean) + reach > pulse.hi))
        near &= n > 0
    mean += std * _member_normals(rng, w.shape, pulses)
    out = np.clip(mean, pulse.lo, pulse.hi, out=mean)
    if near is not None and near.any():
        _loop_where(out, near, w, n, device, rng, step, bound_scale, up)
    return out


def _squares_sum(n, rate):
    r""":math:`\sum_{j<n} a^{2j}`, :math:`a = 1 - c` (the additive noise's variance factor)."""
    return geometric_sum(n, rate * (2.0 - rate))


def _multiplicative_spread(n, rate, sigma):
    r"""The std of ``n`` multiplicative-noise pulses per unit first increment:
    :math:`a^n \sqrt{(1 + (c\sigma/a)^2)^n - 1} / c`, :math:`\sigma \sqrt{n}` at :math:`c = 0`."""
    n = np.asarray(n, dtype=float)
    rate = np.asarray(rate, dtype=float)
    safe = np.where(rate > 0, rate, 1.0)
    growth = np.sqrt(np.expm1(n * np.log1p((safe * sigma / (1.0 - rate)) ** 2)))
    spread = np.where(rate > 0, growth / safe, sigma * np.sqrt(n))
    spread *= np.exp(n * np.log1p(-rate))
    return spread


def _loop_where(out, mask, w, n, device, rng, step, bound_scale, up) -> None:
    """Overwrite ``out[mask]`` with the pulse loop from ``w`` (``n`` pulses); a member of a
    sequence of generators fires its own masked elements with its own generator."""
    step = np.broadcast_to(step, w.shape)
    scale = None if bound_scale is None else np.broadcast_to(bound_scale, w.shape)

    up = np.broadcast_to(up, w.shape)

    def fire(index, g):
        out[index] = _pulse_loop(w[index], n[index].astype(np.int64), up[index], device, g,
                                 step[index], None if scale is None else scale[index])

    if isinstance(rng, np.random.Generator):
        fire(mask, rng)
        return
    for r, g in enumerate(rng):
        if mask[r].any():
            fire((r, mask[r]), g)


def _member_normals(rng: Rng, shape: tuple[int, ...], pulses: np.ndarray) -> np.ndarray:
    """One standard normal per element; a member of a sequence of generators draws its own only
    if any of its elements fires a pulse (zeros otherwise)."""
    if isinstance(rng, np.random.Generator):
        return rng.standard_normal(shape)
    if len(rng) != shape[0]:
        raise ParameterError(f"got {len(rng)} generators for an ensemble axis of {shape[0]}")
    out = np.zeros(shape)
    most = pulses.reshape(len(pulses), -1).max(axis=1)
    for r, g in enumerate(rng):
        if most[r] > 0:
            out[r] = g.standard_normal(shape[1:])
    return out


def _pulse_loop(w, pulses, up, device, rng, step, bound_scale) -> np.ndarray:
    """Pulse by pulse, one vectorised pass each (:func:`apply_pulses` with ``method="loop"``)."""
    signed_step = np.where(up, step, -step)
    sizes = None
    if device.dw_min_std > 0 and not isinstance(rng, np.random.Generator):
        sizes = pulses.reshape(len(pulses), -1).max(axis=1)
    lo, hi = device.w_min, device.w_max
    if bound_scale is not None:
        lo, hi = lo * bound_scale, hi * bound_scale
    block = max(1, _NOISE_BLOCK // max(w.size, 1))  # pulses per noise draw
    for p in range(int(pulses.max())):
        active = pulses > p
        v = w if bound_scale is None else w / bound_scale
        q = np.where(up, device.q_plus(v), device.q_minus(v))
        if device.dw_min_std == 0:
            inc = signed_step * q
        else:
            # drawn a block of pulses at a time: bounded memory, whatever the pulse count
            if p % block == 0:
                count = min(block, int(pulses.max()) - p)
                xi = _pulse_noise(rng, w.shape, sizes, p, count)
            noise = device.dw_min_std * xi[p % block]
            if device.c2c_noise == "additive":
                inc = signed_step * q + step * noise
            else:
                inc = signed_step * q * (1.0 + noise)
        w = np.where(active, np.clip(w + inc, lo, hi), w)
    return w


@dataclass(frozen=True)
class Updater:
    """The weight update of a run: ``digital``, ``expected`` (analog) or ``pulsed`` (analog).

    Parameters
    ----------
    kind : {"digital", "expected", "pulsed"}
    device : theory.devices.Device or None
        Required for the analog kinds.
    lr : float or None
        The run's learning rate, named when a pulsed update would need too many pulses.
    pulse_type : {"deterministic", "stochastic", "mean-count"}
        How the ``pulsed`` kind counts pulses (:func:`pulsed_update`; bit length
        ``device.desired_bl``); ignored by the other kinds.
    pulse_method : {"closed-form", "loop"}
        How the ``pulsed`` kind fires the pulses (:func:`apply_pulses`).
    update_management, bl_management : bool
        aihwkit's update and BL management of the ``stochastic`` and ``mean-count`` trains
        (:func:`train_scales`; the ``dW``-only path has BL management only,
        :func:`pulsed_update`).
    """

    kind: str
    device: Device | None = None
    lr: float | None = None
    pulse_type: str = "deterministic"
    pulse_method: str = "closed-form"
    update_management: bool = False
    bl_management: bool = False

    def __post_init__(self):
        if self.kind not in UPDATE_KINDS:
            raise ParameterError(f"kind={self.kind!r} is unknown; valid: {', '.join(UPDATE_KINDS)}")
        if self.kind != "digital" and self.device is None:
            raise ParameterError(f"kind={self.kind!r} needs a device")
        if self.pulse_type not in PULSE_TYPES:
            raise ParameterError(
                f"pulse_type={self.pulse_type!r} is unknown; valid: {', '.join(PULSE_TYPES)}"
            )
        if self.pulse_method not in PULSE_METHODS:
            raise ParameterError(f"pulse_method={self.pulse_method!r} is unknown; valid: "
                                 f"{', '.join(PULSE_METHODS)}")

    @classmethod
    def from_config(cls, config, device=None) -> Updater:
        """``digital`` for ``algorithm="digital"``, else ``config.update`` with the device."""
        if config.algorithm == "digital":
            return cls("digital", device, config.lr)
        return cls(config.update, device_from_config(config) if device is None else device,
                   config.lr, config.pulse_type, config.pulse_method, config.update_management,
                   config.bl_management)

    @property
    def uses_dtod(self) -> bool:
        """Whether the run needs a fixed device-to-device spread (``dw_min`` or bounds)."""
        return self.kind == "pulsed" and (
            self.device.dw_min_dtod > 0 or self.device.w_bounds_dtod > 0
        )

    def __call__(
        self, w, dw, rng: Rng | None = None, spread: DeviceSpread | None = None
    ) -> np.ndarray:
        """Apply the update to ``w`` with desired increments ``dw``."""
        if self.kind == "digital":
            return digital_update(w, dw)
        blocks = _member_blocks(np.asarray(w), rng)
        if blocks is not None:  # an ensemble: a few members at a time (the same bits)
            w, dw = np.asarray(w, dtype=float), np.broadcast_to(dw, np.shape(w))
            if self.kind == "pulsed" and self.pulse_type == "deterministic":
                step = self.device.dw_min
                if spread is not None and spread.dw_min_scale is not None:
                    step = step * spread.dw_min_scale
                _check_pulses(np.abs(dw) / step, dw, self.lr)  # the whole ensemble first
            out = np.empty_like(w)
            for part in blocks:
                part_spread = None if spread is None else DeviceSpread(
                    *(None if a is None else a[part]
                      for a in (spread.dw_min_scale, spread.bound_scale)))
                out[part] = self(w[part], dw[part], rng[part], part_spread)
            return out
        if self.kind == "expected":
            return expected_update(w, dw, self.device)
        if rng is None:
            raise ParameterError("the pulsed update needs a random generator")
        spread = DeviceSpread() if spread is None else spread
        return pulsed_update(w, dw, self.device, rng, spread.dw_min_scale, spread.bound_scale,
                             lr=self.lr, pulse_type=self.pulse_type, method=self.pulse_method,
                             bl_management=self.bl_management)

    def fire(self, w, pulses, up, rng: Rng, spread: DeviceSpread | None = None) -> np.ndarray:
        """Fire given pulse counts (``up`` where ``up``) with this pulsed update's device and the
        run's spread (:func:`apply_pulses`); for counts made outside, e.g. by
        :func:`coincidence_counts` on a layer's outer product."""
        if self.kind != "pulsed":
            raise ParameterError(f"kind={self.kind!r} fires no pulses; valid: pulsed")
        spread = DeviceSpread() if spread is None else spread
        step = self.device.dw_min
        if spread.dw_min_scale is not None:
            step = step * spread.dw_min_scale
        return apply_pulses(w, pulses, up, self.device, rng, step, spread.bound_scale,
                            method=self.pulse_method)

    def pinned_monitor(self, spread: DeviceSpread | None = None):
        """A :class:`simulate.staleness.PinnedMonitor` of this analog update's device bounds (with
        the run's device-to-device spread), or ``None`` for the digital update."""
        if self.kind == "digital":
            return None
        device, spread = self.device, DeviceSpread() if spread is None else spread
        lo, hi = device.w_min, device.w_max
        if spread.bound_scale is not None:
            lo, hi = lo * spread.bound_scale, hi * spread.bound_scale
        dw_min = device.dw_min
        if spread.dw_min_scale is not None:
            dw_min = dw_min * spread.dw_min_scale
        return PinnedMonitor(lo, hi, dw_min, self.lr)
