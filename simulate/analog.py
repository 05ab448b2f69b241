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

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from theory.devices import Device
from theory.errors import ParameterError, check_range
from theory.limits import MAX_PULSES_PER_UPDATE, check_size

from .config import PULSE_TYPES, device_from_config
from .staleness import PinnedMonitor

__all__ = [
    "DeviceSpread", "PULSE_TYPES", "UPDATE_KINDS", "Updater", "apply_pulses", "check_bit_length",
    "coincidence_counts", "digital_blocks", "digital_update", "draw_bound_scale",
    "draw_dw_min_scale", "expected_update", "pulse_counts", "pulsed_update", "train_scale",
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
        return np.stack([draw(g, shape[1:]) for g in rng])
    out = np.zeros(shape)
    for r, (g, size) in enumerate(zip(rng, sizes, strict=True)):
        out[:size, r] = draw(g, (int(size),) + shape[2:])
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


def check_bit_length(bl, name: str = "bl") -> int:
    """``bl`` as an int in ``[1, MAX_PULSES_PER_UPDATE]`` (pulses per update), else a one-line
    :class:`~theory.errors.ParameterError` starting ``name=``."""
    return check_range(name, bl, 1, MAX_PULSES_PER_UPDATE, integer=True)


def coincidence_counts(x, d, lr: float, dw_min: float, bl: int, rng: np.random.Generator,
                       pulse_type: str = "stochastic") -> np.ndarray:
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
        Bit length (pulses per update at most).
    rng : Generator
        Draws the x-trains first, then the d-trains (``rng.random``, one row at a time).
    pulse_type : {"stochastic", "mean-count"}

    Returns
    -------
    ndarray of int64, shape (rows, cols)
        Pulse counts; the pulse direction of device ``(i, j)`` is :math:`-\mathrm{sign}(x_j d_i)`.
    """
    x = np.atleast_1d(np.asarray(x, dtype=float))
    d = np.atleast_1d(np.asarray(d, dtype=float))
    scale = train_scale(lr, dw_min, bl)
    p_x = np.minimum(1.0, scale * np.abs(x))
    p_d = np.minimum(1.0, scale * np.abs(d))
    if pulse_type == "mean-count":
        c_x = np.clip(np.rint(bl * p_x), 0, bl)
        c_d = np.clip(np.rint(bl * p_d), 0, bl)
        return np.rint(np.outer(c_d / bl, c_x)).astype(np.int64)
    if pulse_type != "stochastic":
        raise ParameterError(f"pulse_type={pulse_type!r} has no bit trains; valid: stochastic, "
                             "mean-count")
    x_bits = rng.random((x.size, bl)) < p_x[:, None]
    d_bits = rng.random((d.size, bl)) < p_d[:, None]
    return (d_bits.astype(np.int64) @ x_bits.T.astype(np.int64))


def pulse_counts(x: np.ndarray, rng: Rng, pulse_type: str, bl: int) -> np.ndarray:
    """Pulses per element for ``x = |dw| / dw_min`` desired pulses, as :func:`pulsed_update`
    counts them for ``pulse_type`` with bit length ``bl`` (unused by ``deterministic``)."""
    if pulse_type == "deterministic":
        whole = np.floor(x)
        u = _per_member(rng, lambda g, s: g.random(s), x.shape)
        return (whole + (u < x - whole)).astype(np.int64)
    if pulse_type == "mean-count":
        return np.rint(np.minimum(x, bl)).astype(np.int64)
    p = np.minimum(1.0, x / bl)
    if isinstance(rng, np.random.Generator):
        return rng.binomial(bl, p).astype(np.int64)
    if len(rng) != x.shape[0]:
        raise ParameterError(f"got {len(rng)} generators for an ensemble axis of {x.shape[0]}")
    return np.stack([g.binomial(bl, p[r]) for r, g in enumerate(rng)]).astype(np.int64)


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
      :math:`n \sim \mathrm{Binomial}(BL, p)`, :math:`p = \min(1, x / BL)`: exactly the count of
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
    w = np.array(w, dtype=float)
    dw = np.broadcast_to(np.asarray(dw, dtype=float), w.shape)
    step = device.dw_min * (1.0 if dw_min_scale is None else dw_min_scale)
    if pulse_type == "deterministic":
        x = np.abs(dw) / step
        most = float(np.max(x)) if x.size else 0.0
        if most > MAX_PULSES_PER_UPDATE:  # pulses <= ceil(x): beyond, refuse before looping
            name, value = ("lr", lr) if lr is not None else ("dw", float(np.max(np.abs(dw))))
            check_size(name, value, need=most, limit=MAX_PULSES_PER_UPDATE,
                       what="pulses on one device in one update (|dw| / dw_min)",
                       hint="lower lr")
        pulses = pulse_counts(x, rng, pulse_type, 0)
    else:
        bl = check_bit_length(device.desired_bl, "desired_bl") if bl is None else \
            check_bit_length(bl)
        pulses = pulse_counts(np.abs(dw) / device.dw_min, rng, pulse_type, bl)
    return apply_pulses(w, pulses, dw >= 0, device, rng, step, bound_scale)


def apply_pulses(w: np.ndarray, pulses: np.ndarray, up: np.ndarray, device, rng: Rng,
                 step, bound_scale: np.ndarray | None = None) -> np.ndarray:
    r"""Fire ``pulses[i]`` pulses on element ``i`` (up where ``up``), one vectorised pass each.

    Pulse :math:`p` of element ``i`` moves it by :math:`\pm\,\Delta w_{\min,i}\, q_\pm(w_p)` with
    the device's cycle-to-cycle noise (:func:`pulsed_update`), clipped at the element's range;
    ``step`` is the element's ``dw_min`` (weight units, device-to-device scaled). The noise of
    pulse ``p`` is drawn as by one draw of every pulse at once (member by member for a sequence
    of generators), in blocks of bounded memory.
    """
    w = np.array(w, dtype=float)
    if pulses.size == 0 or pulses.max() == 0:
        return w
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
    """

    kind: str
    device: Device | None = None
    lr: float | None = None
    pulse_type: str = "deterministic"

    def __post_init__(self):
        if self.kind not in UPDATE_KINDS:
            raise ParameterError(f"kind={self.kind!r} is unknown; valid: {', '.join(UPDATE_KINDS)}")
        if self.kind != "digital" and self.device is None:
            raise ParameterError(f"kind={self.kind!r} needs a device")
        if self.pulse_type not in PULSE_TYPES:
            raise ParameterError(
                f"pulse_type={self.pulse_type!r} is unknown; valid: {', '.join(PULSE_TYPES)}"
            )

    @classmethod
    def from_config(cls, config, device=None) -> Updater:
        """``digital`` for ``algorithm="digital"``, else ``config.update`` with the device."""
        if config.algorithm == "digital":
            return cls("digital", device, config.lr)
        return cls(config.update, device_from_config(config) if device is None else device,
                   config.lr, config.pulse_type)

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
        if self.kind == "expected":
            return expected_update(w, dw, self.device)
        if rng is None:
            raise ParameterError("the pulsed update needs a random generator")
        spread = DeviceSpread() if spread is None else spread
        return pulsed_update(w, dw, self.device, rng, spread.dw_min_scale, spread.bound_scale,
                             lr=self.lr, pulse_type=self.pulse_type)

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
        return apply_pulses(w, pulses, up, self.device, rng, step, spread.bound_scale)

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
