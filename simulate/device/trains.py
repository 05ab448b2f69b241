"""Pulse trains: aihwkit's bit lengths and train scales, pulse counts of the pulse types."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from theory.devices import geometric_sum
from theory.errors import ParameterError, check_range
from theory.limits import MAX_PULSES_PER_UPDATE

from .draws import Rng, uniforms

__all__ = [
    "INVERSION_MEAN",
    "TrainScales",
    "affine_constants",
    "binomial_counts",
    "binomial_from_values",
    "check_bit_length",
    "coincidence_counts",
    "pulse_counts",
    "train_scale",
    "train_scales",
]


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

        u = uniforms(rng, x.shape)
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
INVERSION_MEAN = 30.0


def binomial_counts(bl: int, p: np.ndarray, rng: Rng) -> np.ndarray:
    r"""Binomial(``bl``, ``p``) counts, element-wise.

    ``rng`` is one generator, or one per row (ensemble member) of ``p``; each draws one uniform
    per element of its own, then numpy ``binomial`` draws for its own elements whose mean count
    :math:`BL \min(p, 1 - p)` exceeds 30 (none for :math:`BL \le 60`), so a member's counts
    depend on its own ``p`` only. The others are decided by the uniform :math:`u`, by
    inversion of the CDF (compiled: :func:`simulate.device.pulse_kernels.binomial_inversion`):
    :math:`n = \min\{k : u < P(N \le k)\}`, the pmf built by
    :math:`P(k) = P(k-1)\, \frac{q}{1 - q} \frac{BL - k + 1}{k}` from
    :math:`P(0) = (1 - q)^{BL}` (by squaring for :math:`BL \le 64`, else
    :math:`\exp(BL\, \mathrm{log1p}(-q))`) with :math:`q = \min(p, 1 - p)` (for :math:`p > 1/2`
    the count is :math:`BL - \mathrm{Binomial}(BL, 1 - p)`). Exact in distribution up to the
    rounding of the CDF (a few ulp times the length of the walk; :math:`P(0)` to about
    :math:`BL\,\epsilon` relative). Same seed, same counts; the bits are this package's (not
    numpy's ``binomial``).
    """
    return binomial_from_values(bl, p, rng)


def binomial_from_values(bl: int, values: np.ndarray, rng: Rng, dw_min: float = 0.0,
                     u: np.ndarray | None = None) -> np.ndarray:
    """:func:`binomial_counts` of ``p = values`` (``dw_min = 0``), or of
    ``p = min(1, (|values| / dw_min) / bl)`` for desired increments ``values``, from the
    uniforms ``u`` if given (else drawn here, :func:`uniforms`)."""
    from .pulse_kernels import binomial_inversion

    values = np.ascontiguousarray(values, dtype=float)
    shape, dw_min = values.shape, float(dw_min)
    u = (uniforms(rng, shape) if u is None else u).reshape(-1)
    counts, big, p_big = binomial_inversion(values.reshape(-1), dw_min, bl, u, INVERSION_MEAN)
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
def affine_constants(device, bl: int):
    """The constants of :func:`simulate.device.pulse_kernels.stochastic_affine_update` for
    ``device`` (nominal ``dw_min``, no spread) and bit length ``bl``: ``(alpha_up, beta_up,
    alpha_down, beta_down, step, table_up, table_down, lo, hi)``, or ``None`` where the responses
    are not affine or a rate is outside ``[0, 1)`` (the general path then fires the pulses)."""
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


