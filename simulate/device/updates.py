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

from dataclasses import dataclass

import numpy as np

from theory.devices import Device
from theory.errors import ParameterError

from .catalog import PULSE_METHODS, PULSE_TYPES, device_named
from .draws import DeviceSpread, Rng
from .pinned import PinnedMonitor
from .pulses import apply_pulses, check_pulses, member_blocks, pulsed_update

__all__ = [
    "UPDATE_KINDS",
    "Updater",
    "digital_blocks",
    "digital_update",
    "expected_update",
    "ratio_tau",
]


UPDATE_KINDS = ("digital", "expected", "pulsed")



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


def ratio_tau(device, dtype=np.float64) -> float | None:
    """``tau`` when the device's compiled ``G`` is the ratio ``w / tau`` of the weight and one
    parameter (soft bounds), else ``None``: the family's symbolic ``G = (q_- - q_+)/2`` must be
    exactly ``w / tau`` (compiled to numpy as ``w/tau``), and the compiled ``G`` must give the
    bits of ``x / tau`` on probe values in ``dtype`` (float64 or float32; ``tau`` rounded to it,
    as numpy rounds a Python float that meets a float32 array). The compiled kernels
    (:mod:`simulate.device.update_kernels`, :mod:`simulate.problems.oracle_kernels`) evaluate
    ``G`` inside their pass where this holds."""
    family = type(device.response)
    q_plus, q_minus = family.symbolic()
    g = (q_minus - q_plus) / 2
    weight = g.free_symbols - set(family.symbols().values())
    if len(weight) != 1:
        return None
    (weight,) = weight
    dtype = np.dtype(dtype)
    for symbol, value in zip(family.symbols().values(), device.response.params().values(),
                             strict=True):
        if g == weight / symbol:
            tau = float(value)
            probe = np.array([-0.0, 0.0, 1.0, -1.0, 0.1, -0.3, 1 / 3, 0.7, np.nan, 5e-324])
            probe = np.concatenate([probe, probe * tau]).astype(dtype)
            got = device.G(probe)
            want = probe / dtype.type(tau)
            if got.shape == probe.shape and got.dtype == dtype and np.array_equal(
                    got.view(np.uint8), want.view(np.uint8)):
                return tau
            return None
    return None


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
        device = device_named(config.device, config.tau) if device is None else device
        return cls(config.update, device,
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
        blocks = member_blocks(np.asarray(w), rng)
        if blocks is not None:  # an ensemble: a few members at a time (the same bits)
            w, dw = np.asarray(w, dtype=float), np.broadcast_to(dw, np.shape(w))
            if self.kind == "pulsed" and self.pulse_type == "deterministic":
                step = self.device.dw_min
                if spread is not None and spread.dw_min_scale is not None:
                    step = step * spread.dw_min_scale
                check_pulses(np.abs(dw) / step, dw, self.lr)  # the whole ensemble first
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
        """A :class:`simulate.device.pinned.PinnedMonitor` of this analog update's device bounds
        (with the run's device-to-device spread), or ``None`` for the digital update."""
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
