r"""What a device does with one update: the increments of a tile of rows under one pulse train.

The experiment of ``aimc-pipeline pulse-response`` (issue 13): a tile of ``devices`` rows and one
input column, input value :math:`x` whose bit train is shared along the column, per-row error
:math:`d = -\delta / x` (aihwkit's :math:`W \mathrel{-}= \eta\, x d` with :math:`\eta = 1`, so the
desired increment of every row is :math:`\delta`), every row starting at :math:`w_0`. For each
case :math:`(w_0, \delta)` it reports the mean and standard deviation over the rows of the
increment :math:`w_1 - w_0` (weight units) and of the pulse count.

Pulse counts by ``pulse_type`` (:func:`simulate.device.trains.coincidence_counts`,
:func:`simulate.device.pulses.pulsed_update`): ``stochastic`` fires one x-train of ``bl`` bits with
:math:`p_x = \min(1, A|x|)` and one d-train per row with :math:`p_d = \min(1, A|d|)`,
:math:`A = \sqrt{1/(\Delta w_{\min} BL)}`, and counts coincidences (at most ``bl``);
``mean-count`` uses aihwkit's ``MeanCount`` rounding of the expected count; ``deterministic``
rounds :math:`|\delta| / \Delta w_{\min}` stochastically (no cap). Then each row fires its pulses
one by one with the device's response and cycle-to-cycle noise
(:func:`simulate.device.pulses.apply_pulses`) and, for a preset with device-to-device spread, its
own fixed spread.

Because the x-train is shared, the rows' counts are correlated: given the x-train's number of
ones :math:`S`, a row's count is Binomial(S, p_d), so the std over the rows of one tile is about
:math:`\sqrt{S p_d (1 - p_d)}` pulses, slightly below the marginal
:math:`\sqrt{BL\, p_x p_d (1 - p_x p_d)}`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

import numpy as np

from theory.errors import ParameterError, check_range, show_value
from theory.limits import (
    MAX_ARRAY_BYTES,
    MAX_DEVICE_PULSES,
    MAX_PULSES_PER_UPDATE,
    check_size,
)

from .catalog import DEFAULT_TAU, PULSE_TYPES, check_device_tau, device_named
from .draws import DeviceSpread
from .pulses import apply_pulses
from .trains import check_bit_length, coincidence_counts, pulse_counts, train_scale

__all__ = ["MAX_CASES", "PulseResponse", "PulseResponseConfig", "pulse_response"]

#: the most (w0, delta) cases of one run (the length of each list)
MAX_CASES = 10**4


def _values(name: str, values) -> tuple[float, ...]:
    """A non-empty tuple of finite floats, at most :data:`MAX_CASES` long."""
    if isinstance(values, str) or not hasattr(values, "__len__"):
        values = (values,)
    if len(values) == 0:
        raise ParameterError(f"{name}=[] is empty; give at least one value")
    check_size(name, show_value(list(values[:3])) + ("..." if len(values) > 3 else ""),
               need=len(values), limit=MAX_CASES, what="values")
    return tuple(float(check_range(name, v)) for v in values)


@dataclass(frozen=True)
class PulseResponseConfig:
    """One ``pulse-response`` experiment (validated; fields are the command's flags).

    Parameters
    ----------
    device : str
        Preset or response family (as ``SimConfig.device``).
    tau : float or None
        Range of a family with a ``tau`` (as ``SimConfig.tau``).
    dw_min : float or None
        Pulse granularity (weight units); default the device's.
    pulse_type : {"deterministic", "stochastic", "mean-count"}
    bl : int or None
        Bit length, pulses per update at most (default the device's ``desired_bl``).
    devices : int
        Rows of the tile (>= 1).
    x : float
        Input value of the column (non-zero).
    w0, delta : tuple of float
        Start weights (inside the device range) and desired increments (weight units); every
        pair is one case.
    seed : int
        Root seed; case ``k`` draws from ``SeedSequence(seed).spawn(k + 1)[k]``.
    """

    device: str = field(default="softbounds", metadata={
        "help": "device preset (e.g. reram-softbounds) or response family (e.g. softbounds)"})
    tau: float | None = field(default=DEFAULT_TAU, metadata={
        "help": "dynamic range tau of a soft-bounds/power/exponential device (weight units)"})
    dw_min: float | None = field(default=None, metadata={
        "help": "pulse granularity dw_min (weight units; default: the device's)"})
    pulse_type: str = field(default="stochastic", metadata={
        "help": "pulse counts (aihwkit names): stochastic = coincidences of two bit trains "
                "(StochasticCompressed), mean-count = the expected count (MeanCount), "
                "deterministic = stochastic rounding of |delta|/dw_min (the package's default)",
        "choices": PULSE_TYPES})
    bl: int | None = field(default=None, metadata={
        "help": f"bit length BL, pulses per update at most (1 to {MAX_PULSES_PER_UPDATE}; "
                "default: the device's desired_bl)"})
    devices: int = field(default=1000, metadata={"help": "rows of the tile (devices, >= 1)"})
    x: float = field(default=0.25, metadata={
        "help": "input value of the column (non-zero); its bit train is shared by every row"})
    w0: tuple[float, ...] = (0.0,)
    delta: tuple[float, ...] = (0.01,)
    seed: int = field(default=0, metadata={"help": "root seed"})

    def __post_init__(self):
        set_ = object.__setattr__
        if self.pulse_type not in PULSE_TYPES:
            raise ParameterError(
                f"pulse_type={self.pulse_type!r} is unknown; valid: {', '.join(PULSE_TYPES)}")
        if self.tau is not None:
            check_range("tau", self.tau, 0, None, low_open=True)
        set_(self, "tau", check_device_tau(self.device, self.tau,
                                           explicit=self.tau != DEFAULT_TAU))
        if self.dw_min is not None:
            set_(self, "dw_min", float(check_range("dw_min", self.dw_min, 0, None,
                                                   low_open=True)))
        set_(self, "devices", check_range("devices", self.devices, 1, None, integer=True))
        set_(self, "seed", check_range("seed", self.seed, 0, None, integer=True))
        x = check_range("x", self.x)
        if x == 0:
            raise ParameterError("x=0 fires no input pulses; valid: any non-zero value")
        set_(self, "x", float(x))
        set_(self, "w0", _values("w0", self.w0))
        set_(self, "delta", _values("delta", self.delta))
        device = self.resolved_device()  # names device, tau, dw_min on failure
        set_(self, "bl", check_bit_length(device.desired_bl if self.bl is None else self.bl))
        for w0 in self.w0:
            if not device.w_min <= w0 <= device.w_max:
                raise ParameterError(
                    f"w0={w0:g} is outside the device range; valid range "
                    f"[{device.w_min:g}, {device.w_max:g}]")
        cases = len(self.w0) * len(self.delta)
        check_size("devices", self.devices, need=8 * self.devices * self.bl,
                   limit=MAX_ARRAY_BYTES, what="bytes of d-trains (devices x bl bits as float64)",
                   hint="lower devices or bl")
        check_size("devices", self.devices, need=self.devices * self.bl * cases,
                   limit=MAX_DEVICE_PULSES, what="device-bits (devices x bl x cases)",
                   hint="lower devices, bl or the number of w0 and delta values")
        if self.pulse_type == "deterministic":
            most = max(abs(d) for d in self.delta) / device.dw_min
            check_size("delta", max(self.delta, key=abs), need=most,
                       limit=MAX_PULSES_PER_UPDATE, what="pulses per device (|delta| / dw_min)")
            check_size("devices", self.devices, need=self.devices * most * cases,
                       limit=MAX_DEVICE_PULSES, what="device-pulses (devices x pulses x cases)",
                       hint="lower devices or |delta|")

    def resolved_device(self):
        """The :class:`theory.devices.Device` (with ``dw_min`` when given)."""
        device = device_named(self.device, self.tau)
        return device if self.dw_min is None else replace(device, dw_min=self.dw_min)

    def to_dict(self) -> dict:
        """The configuration as a JSON-ready dict."""
        return asdict(self) | {"w0": list(self.w0), "delta": list(self.delta)}


@dataclass(frozen=True)
class PulseResponse:
    r"""The increments of one case over the rows of the tile.

    Attributes
    ----------
    w0, delta : float
        Start weight and desired increment (weight units).
    mean, std : float
        Mean and standard deviation (``ddof=0``) over the rows of :math:`w_1 - w_0`.
    n : int
        Rows (devices) the statistics are over.
    pulses_mean, pulses_std : float
        Mean and standard deviation over the rows of the pulse count.
    expected_pulses : float
        The count's expectation over the trains: :math:`BL \min(1, A|x|) \min(1, A|d|)`
        (``stochastic``), :math:`|\delta| / \Delta w_{\min}` (``deterministic``), the rounded
        count (``mean-count``).
    """

    w0: float
    delta: float
    mean: float
    std: float
    n: int
    pulses_mean: float
    pulses_std: float
    expected_pulses: float

    def to_dict(self) -> dict:
        """The row as a JSON-ready dict."""
        return asdict(self)


def pulse_response(config: PulseResponseConfig) -> list[PulseResponse]:
    """Run every ``(w0, delta)`` case of ``config`` (``w0`` outer, ``delta`` inner)."""
    device = config.resolved_device()
    n, bl = config.devices, config.bl
    cases = [(w0, delta) for w0 in config.w0 for delta in config.delta]
    seeds = np.random.SeedSequence(config.seed).spawn(len(cases))
    out = []
    for (w0, delta), seq in zip(cases, seeds, strict=True):
        rng = np.random.default_rng(seq)
        spread = DeviceSpread.draw(device, (n,), rng)
        w = np.full(n, w0)
        step = device.dw_min * (1.0 if spread.dw_min_scale is None else spread.dw_min_scale)
        if config.pulse_type == "deterministic":
            pulses = pulse_counts(abs(delta) / step * np.ones(n), rng, "deterministic", bl)
            expected = abs(delta) / device.dw_min
        else:
            d = np.full(n, -delta / config.x)
            pulses = coincidence_counts([config.x], d, 1.0, device.dw_min, bl, rng,
                                        config.pulse_type)[:, 0]
            scale = train_scale(1.0, device.dw_min, bl)
            p_x, p_d = (min(1.0, scale * abs(v)) for v in (config.x, delta / config.x))
            expected = bl * p_x * p_d
            if config.pulse_type == "mean-count":
                expected = float(pulses[0])
        w1 = apply_pulses(w, pulses, np.full(n, delta >= 0), device, rng, step,
                          spread.bound_scale)
        inc = w1 - w0
        out.append(PulseResponse(
            w0=float(w0), delta=float(delta), mean=float(inc.mean()), std=float(inc.std()),
            n=int(n), pulses_mean=float(pulses.mean()), pulses_std=float(pulses.std()),
            expected_pulses=float(expected)))
    return out
