r"""Parameters of a bound evaluation: hardware, problem, pipeline (frozen, validated dataclasses).

Three small objects feed :func:`bounds.evaluate`:

- :class:`HardwareParams`: the device (a :class:`theory.devices.Device`), the weight region the run
  visits (``weight_bound`` :math:`W_{\max}`, symmetric around the device's symmetric point), and the
  timing fields of :class:`bounds.timing.TimingModel` plus the tile size;
- :class:`ProblemParams`: the constants of assumptions A1, A2 and A4 (``L``, ``L_s``, ``Delta``,
  ``sigma2``) and the Young split ``theta`` of the analog bounds;
- :class:`PipelineConfig`: stages ``M``, micro-batches per mini-batch ``B`` and samples per
  micro-batch ``b``.

They come from keyword arguments, from a named preset (:func:`from_preset`, reading the ``[device]``
and ``[timing]`` tables of ``theory/presets/NAME.toml``) or from a user TOML file
(:func:`load_config`), whose layout is::

    preset = "reram-softbounds"   # or a [device] table (theory.devices.device_from_table)
    weight_bound = 0.3            # optional; default: half the distance to the nearer bound
    eps = 3.0                     # optional target

    [timing]                      # optional; overrides the preset's [timing]
    layers = 16
    read_time_s = 80e-9

    [problem]                     # optional; L, L_s, Delta, sigma2, theta, beta
    sigma2 = 0.5

    [pipeline]                    # optional; stages, micro_batches, micro_batch_size
    stages = 8

Unknown keys, an unknown preset or a value out of range raise :class:`theory.errors.ParameterError`
naming the parameter and the valid range (or the valid keys / presets; a long list of unknown
keys is shortened). Values are type-checked before use, integers of any size are refused with
the range (:data:`PIPELINE_LIMITS`), and a file nested deeper than
:data:`theory.limits.MAX_TOML_DEPTH` is refused naming the file (:func:`read_toml`).
The ``[timing]`` keys are known here (:data:`TIMING_KEYS`; a preset's
:data:`PRESET_TIMING_KEYS`, checked by :func:`validate_timing`): :mod:`theory.devices` reads
only ``[device]``.

The planner's hardware and search range (:class:`PlanHardware`, :class:`PlanLimits`) and the
defaults of the commands (:data:`DEFAULT_PRESET`, :data:`DEFAULT_EPS`) are parameters too and
live here.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from theory import devices
from theory.errors import ParameterError, check_range, show_value
from theory.limits import (
    MAX_BYTES_PER_ACTIVATION,
    MAX_COUNT,
    MAX_GRID_POINTS,
    MAX_MODEL_LAYERS,
    MAX_PULSES_PER_UPDATE,
    check_size,
)
from theory.userfiles import STRING, in_file, integer, load_toml, number, read_user_text, table
from theory.vocabulary import TRANSFER_SLICES, WRITE_SEMANTICS

from .timing import TimingModel

__all__ = [
    "BoundsConfig",
    "DEFAULT_EPS",
    "DEFAULT_PRESET",
    "HardwareParams",
    "PIPELINE_LIMITS",
    "PLAN_MODES",
    "PRESET_TIMING_KEYS",
    "PipelineConfig",
    "PlanHardware",
    "PlanLimits",
    "ProblemParams",
    "STEP_CHOICES",
    "TIMING_KEYS",
    "TransferSettings",
    "check_keys",
    "check_type",
    "dump_config",
    "from_preset",
    "load_config",
    "read_text",
    "read_toml",
    "validate_timing",
]

#: preset used when neither a preset nor a config file is given (``bounds``, ``plan``, the report)
DEFAULT_PRESET = "softbounds-tau1"
#: target used when neither ``--eps`` nor the config file gives one
DEFAULT_EPS = 1.0
#: the keys a preset's ``[timing]`` table may hold (units in the name)
PRESET_TIMING_KEYS = (
    "clock_hz", "read_time_s", "pulse_width_s", "bit_length", "tile_rows", "tile_cols",
)
#: timing fields of HardwareParams (the keys of a user ``[timing]`` table): a preset's timing keys
#: plus the model's number of analog layers
TIMING_KEYS = ("layers", *PRESET_TIMING_KEYS)
#: the pipeline modes the planner chooses between
PLAN_MODES = ("sync", "async")
#: the step a forecast plan runs at (``plan --step``): the guarantee's best step for eps (the
#: default), or the step of fewest calibrated iterations within the stability limit
STEP_CHOICES = ("guarantee", "forecast")
#: upper limits of the :class:`PipelineConfig` fields: a stage holds at least one layer, and
#: ``B * b <= 1e18`` stays below :data:`theory.limits.MAX_COUNT`
PIPELINE_LIMITS = {"stages": MAX_MODEL_LAYERS, "micro_batches": 10**9, "micro_batch_size": 10**9}
#: the JSON Schema of a ``[timing]`` table (:data:`TIMING_KEYS`; a preset's keys and ``layers``)
TIMING_SCHEMA = {
    "layers": integer(1, MAX_MODEL_LAYERS), "clock_hz": number(above=0),
    "read_time_s": number(above=0), "pulse_width_s": number(above=0),
    "bit_length": integer(1, MAX_PULSES_PER_UPDATE), "tile_rows": integer(1),
    "tile_cols": integer(1),
}
#: the JSON Schema of a config file (:func:`load_config`; the module docstring's layout). The
#: ``[device]`` table is checked by :func:`theory.devices.device_from_table`.
CONFIG_SCHEMA = table({
    "preset": STRING, "weight_bound": number(above=0), "eps": number(above=0),
    "device": table({}, closed=False), "timing": table(TIMING_SCHEMA),
    "problem": table({"L": number(above=0), "Delta": number(above=0),
                      "sigma2": number(above=0), "L_s": number(above=0),
                      "theta": number(above=0, below=1), "beta": number(minimum=0)}),
    "pipeline": table({name: integer(1, high) for name, high in PIPELINE_LIMITS.items()}),
})


@dataclass(frozen=True)
class HardwareParams:
    r"""The accelerator: device, visited weight region and timing.

    Parameters
    ----------
    device : theory.devices.Device
        The device model (response functions and pulse parameters).
    weight_bound : float, optional
        :math:`W_{\max}`, half-width of the weight region the run visits, centred on the device's
        symmetric point :math:`w^*` (the range midpoint when the device has none, i.e. a constant
        step with ``up != down``): weights stay in :math:`[w^* - W_{\max}, w^* + W_{\max}]`.
        Valid range :math:`(0, d)` with :math:`d = \min(w^* - w_{\min}, w_{\max} - w^*)` the
        distance to the nearer device bound (for symmetric soft bounds :math:`d = \tau`).
        Default :math:`d/2`.
    layers : int
        Analog layers of the whole model (default 16).
    clock_hz, read_time_s, pulse_width_s, bit_length : float, float, float, int
        Timing of :class:`bounds.timing.TimingModel` (Hz, s, s, pulses; defaults 1 GHz, 80 ns,
        1 ns, 10 from paper-notes section 5).
    tile_rows, tile_cols : int
        Crossbar tile size (default 128 x 128, DNN+NeuroSim). Not used by the bounds timing rule
        (which assumes each layer's tiles work in parallel); the planner counts tiles with it.

    Notes
    -----
    :meth:`device_constants` gives the constants of assumption A3 over the region,

    .. math::

        q_{\min} = \min_{|w - w^*| \le W_{\max}} \min(q_+, q_-), \quad
        q_{\max} = \max \max(q_+, q_-), \quad G_\infty = \max |G|,

    computed by :meth:`theory.devices.Device.constants` (validated at construction).
    """

    device: devices.Device
    weight_bound: float | None = None
    layers: int = 16
    clock_hz: float = 1e9
    read_time_s: float = 80e-9
    pulse_width_s: float = 1e-9
    bit_length: int = 10
    tile_rows: int = 128
    tile_cols: int = 128
    _timing: TimingModel = field(init=False, repr=False, compare=False)
    _constants: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        if not isinstance(self.device, devices.Device):
            raise ParameterError(
                f"device={self.device!r} is not a theory.devices.Device; build one with "
                "theory.devices.make_device or load_preset"
            )
        for name in ("tile_rows", "tile_cols"):
            object.__setattr__(self, name, check_range(name, getattr(self, name), 1, integer=True))
        object.__setattr__(self, "_timing", self._timing_model())  # validates the timing fields
        centre, reach = self.centre, self.reach
        if self.weight_bound is None:
            object.__setattr__(self, "weight_bound", reach / 2)
        try:
            check_range("weight_bound", self.weight_bound, 0, reach, low_open=True, high_open=True)
        except ParameterError as error:
            raise ParameterError(
                f"{error}: W_max, the half-width around the symmetric point {centre:g} of device "
                f"{self.device.name!r}, must be < {reach:g}, the distance to the nearer device "
                "bound (tau for symmetric soft bounds)"
            ) from None
        try:
            half = self.weight_bound
            constants = self.device.constants(centre - half, centre + half)
        except ParameterError as error:
            raise ParameterError(f"weight_bound={self.weight_bound!r}: {error}") from None
        object.__setattr__(self, "_constants", constants)

    def _timing_model(self) -> TimingModel:
        return TimingModel(
            layers=self.layers, read_time_s=self.read_time_s, pulse_width_s=self.pulse_width_s,
            bit_length=self.bit_length, clock_hz=self.clock_hz,
        )

    @property
    def timing(self) -> TimingModel:
        """The :class:`~bounds.timing.TimingModel` of these timing fields."""
        return self._timing

    @property
    def centre(self) -> float:
        """Centre :math:`w^*` of the weight region: the symmetric point, else the range midpoint."""
        try:
            return float(self.device.symmetric_point())
        except ParameterError:
            return (self.device.w_min + self.device.w_max) / 2

    @property
    def reach(self) -> float:
        """Distance from :attr:`centre` to the nearer device bound."""
        centre, lo, hi = self.centre, self.device.w_min, self.device.w_max
        if not lo < centre < hi:
            raise ParameterError(
                f"device {self.device.name!r}: symmetric point {centre:g} is outside its range "
                f"[{lo:g}, {hi:g}]"
            )
        return min(centre - lo, hi - centre)

    def device_constants(self):
        """The A3 constants ``q_min, q_max, G_inf`` over the visited region (DeviceConstants)."""
        return self._constants


@dataclass(frozen=True)
class ProblemParams:
    r"""Constants of the optimisation problem (assumptions A1, A2, A4).

    Parameters
    ----------
    L : float
        Smoothness constant of f (A1), > 0. Default 1.
    Delta : float
        Initial optimality gap :math:`f(W_0) - f^*`, > 0. Default 1.
    sigma2 : float
        Per-sample gradient variance :math:`\sigma^2` (A2), > 0; a batch of n has
        :math:`\sigma^2/n`. Default 1.
    L_s : float, optional
        Lipschitz constant of the stale update signal (A4), > 0. Default ``L`` (exact for the
        oracle problems).
    theta : float
        Young's-inequality split of the analog bounds, in (0, 1). Default 1/2.
    beta : float
        Norm bound of the gradient signal's bias (A2_beta, gradient units), >= 0; used by the
        biased-gradient entries ``analog_sgd_biased`` and ``analog_sgd_biased_sharp`` only
        (Propositions IO and IO'). Default 0 (unbiased).

    Notes
    -----
    The defaults normalise the problem (:math:`L = \Delta = \sigma^2 = 1`), so ``eps`` is in units
    of :math:`\sigma^2` and iteration counts scale as the theory says when they change.
    """

    L: float = 1.0
    Delta: float = 1.0
    sigma2: float = 1.0
    L_s: float | None = None
    theta: float = 0.5
    beta: float = 0.0

    def __post_init__(self):
        check_range("L", self.L, 0, low_open=True)
        check_range("Delta", self.Delta, 0, low_open=True)
        check_range("sigma2", self.sigma2, 0, low_open=True)
        if self.L_s is None:
            object.__setattr__(self, "L_s", self.L)
        check_range("L_s", self.L_s, 0, low_open=True)
        check_range("theta", self.theta, 0, 1, low_open=True, high_open=True)
        check_range("beta", self.beta, 0, None)


@dataclass(frozen=True)
class PipelineConfig:
    r"""Pipeline shape: stages, micro-batches per mini-batch, samples per micro-batch.

    Parameters
    ----------
    stages : int
        :math:`M`, pipeline stages (one accelerator each), >= 1. Default 8.
    micro_batches : int
        :math:`B`, micro-batches per mini-batch of the synchronous pipeline (and of the
        non-pipelined baselines, which use the same mini-batch), >= 1. Default 8.
    micro_batch_size : int
        :math:`b`, samples per micro-batch, >= 1. Default 4.

    Notes
    -----
    Each field has the documented upper limit of :data:`PIPELINE_LIMITS` (stages at most
    :data:`theory.limits.MAX_MODEL_LAYERS`, since every stage holds a layer; ``B`` and ``b`` at
    most 1e9 each), so the mini-batch :math:`Bb` and the cycles per iteration stay far below
    :data:`theory.limits.MAX_COUNT` and the timing model's floats stay finite.
    """

    stages: int = 8
    micro_batches: int = 8
    micro_batch_size: int = 4

    def __post_init__(self):
        for name, high in PIPELINE_LIMITS.items():
            object.__setattr__(
                self, name, check_range(name, getattr(self, name), 1, high, integer=True)
            )

    @property
    def mini_batch(self) -> int:
        """Samples per mini-batch, :math:`B b`."""
        return self.micro_batches * self.micro_batch_size

    @property
    def max_delay(self) -> int:
        """Largest staleness of the asynchronous pipeline, :math:`D = M - 1`
        (:func:`theory.schedules.max_delay`)."""
        from theory.schedules import max_delay  # sympy: on first use, not at import

        return int(max_delay(self.stages))


@dataclass(frozen=True)
class PlanHardware:
    r"""The accelerators available to the planner.

    Parameters
    ----------
    hardware : HardwareParams
        Device, visited weight region, timing (MVM read time, pulse width, bit length, clock) and
        tile size (``tile_rows x tile_cols``). Its ``layers`` field is not used: the model gives the
        layers.
    accelerators : int
        :math:`P`, accelerators available (>= 1); a pipeline of :math:`M \le P` stages uses
        :math:`M` of them. Default 8.
    tiles_per_accelerator : int
        Crossbar tiles of one accelerator (>= 1). Default 1024 (16.8 M weights of 128 x 128 tiles).
    activation_buffer_bytes : float
        Bytes of activation memory per accelerator (> 0). Default 2**30 (1 GiB).
    bytes_per_activation : int
        Bytes per stored activation value, in ``[1, 1024]``. Default 2 (16-bit).

    Notes
    -----
    ``accelerators`` and ``tiles_per_accelerator`` are at most
    :data:`theory.limits.MAX_COUNT` (the planner's tile sums are int64).
    """

    hardware: HardwareParams
    accelerators: int = 8
    tiles_per_accelerator: int = 1024
    activation_buffer_bytes: float = float(2**30)
    bytes_per_activation: int = 2

    def __post_init__(self):
        check_type("hardware", self.hardware, HardwareParams, "e.g. bounds.from_preset(NAME)")
        for key, high in (("accelerators", MAX_COUNT), ("tiles_per_accelerator", MAX_COUNT),
                          ("bytes_per_activation", MAX_BYTES_PER_ACTIVATION)):
            object.__setattr__(self, key, check_range(key, getattr(self, key), 1, high,
                                                      integer=True))
        check_range("activation_buffer_bytes", self.activation_buffer_bytes, 0, low_open=True)

    @property
    def timing(self) -> TimingModel:
        """The :class:`~bounds.timing.TimingModel` of the hardware."""
        return self.hardware.timing


@dataclass(frozen=True)
class TransferSettings:
    r"""Tiki-Taka's transfer settings of a plan (``plan --algorithm tiki-taka``).

    The fields mirror the :class:`simulate.config.SimConfig` fields of the same meaning and
    default (``bounds`` does not import ``simulate``; a test checks the defaults agree).

    Parameters
    ----------
    every : int
        ``T`` >= 1: a transfer event after every ``T``-th update (``transfer_every``).
    slice : {"column", "all"}
        What an event moves (``transfer_slice``): one column of every layer's tile (round robin),
        or all of them (:func:`theory.schedules.transfer_event_cycles`).
    lr : float
        Transfer rate relative to the step (``transfer_lr``), >= 0.
    gamma : float
        Weight of A in ``W = gamma A + C`` (``tt_gamma``), >= 0.
    reset : bool
        Whether a transfer sets the transferred columns of A back to 0 (``transfer_reset``;
        default ``False``, aihwkit's TransferCompound).
    fast_device : str or None
        A's device (``fast_device``; ``None``: the run's device, ``"digital"``: an ideal buffer).
        Matched against the proved entries' settings only: the plan's device constants are those
        of the preset (C's device).
    """

    every: int = 1
    slice: str = "column"
    lr: float = 1.0
    gamma: float = 0.0
    reset: bool = False
    fast_device: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "every", check_range("transfer_every", self.every, 1,
                                                      MAX_COUNT, integer=True))
        if self.slice not in TRANSFER_SLICES:
            raise ParameterError(f"transfer_slice={self.slice!r} is unknown; valid: "
                                 f"{', '.join(TRANSFER_SLICES)}")
        check_range("transfer_lr", self.lr, 0, None)
        check_range("tt_gamma", self.gamma, 0, None)
        if not isinstance(self.reset, bool):
            raise ParameterError(f"transfer_reset={show_value(self.reset)} must be true or false")
        if self.fast_device is not None and not isinstance(self.fast_device, str):
            raise ParameterError(f"fast_device={show_value(self.fast_device)} is not a device "
                                 "name")

    def settings(self) -> dict:
        """The run settings a registry entry's ``setting`` conditions are checked against
        (:func:`theory.complexity.conditions_met`), by the :class:`SimConfig` field names."""
        return {"algorithm": "tiki-taka", "transfer_every": self.every,
                "transfer_slice": self.slice, "transfer_lr": float(self.lr),
                "tt_gamma": float(self.gamma), "transfer_reset": self.reset,
                "fast_device": "device" if self.fast_device is None else self.fast_device}


@dataclass(frozen=True)
class PlanLimits:
    """The bounded integer range the planner searches (and relaxes).

    Parameters
    ----------
    max_micro_batches : int
        :math:`B_{\\max}` for ``sync`` (>= 1). Default 512.
    max_micro_batch_size : int
        :math:`b_{\\max}` (>= 1). Default 512. The grid :math:`B_{\\max} b_{\\max}` has at most
        :data:`theory.limits.MAX_GRID_POINTS` points.
    modes : tuple of str
        Modes to consider, a non-empty subset of :data:`PLAN_MODES` (``("sync", "async")``).
    write : {"batch-mean", "per-sample"}
        The write semantics the guarantees are taken for (:func:`theory.theorems.bounds_for`):
        ``per-sample`` plans with Corollary 3PS (sync) and Theorem 4'PS (async).
    """

    max_micro_batches: int = 512
    max_micro_batch_size: int = 512
    modes: tuple[str, ...] = PLAN_MODES
    write: str = "batch-mean"

    def __post_init__(self):
        for key in ("max_micro_batches", "max_micro_batch_size"):
            object.__setattr__(self, key, check_range(key, getattr(self, key), 1,
                                                      MAX_GRID_POINTS, integer=True))
        grid = self.max_micro_batches * self.max_micro_batch_size
        key = ("max_micro_batches" if self.max_micro_batches >= self.max_micro_batch_size
               else "max_micro_batch_size")
        check_size(key, getattr(self, key), need=grid, limit=MAX_GRID_POINTS,
                   what="planner grid points (max_micro_batches x max_micro_batch_size)",
                   hint="search a smaller range")
        modes = tuple(self.modes)
        bad = [mode for mode in modes if mode not in PLAN_MODES]
        if bad or not modes:
            raise ParameterError(f"modes={modes!r} is invalid; valid: a non-empty subset of "
                                 f"{', '.join(PLAN_MODES)}")
        object.__setattr__(self, "modes", tuple(dict.fromkeys(modes)))
        if self.write not in WRITE_SEMANTICS:
            raise ParameterError(f"write={self.write!r} is unknown; valid: "
                                 f"{', '.join(WRITE_SEMANTICS)}")


@dataclass(frozen=True)
class BoundsConfig:
    """Everything a bound evaluation needs, as read by :func:`load_config`.

    Attributes
    ----------
    hardware : HardwareParams
    problem : ProblemParams
    pipeline : PipelineConfig
    eps : float or None
        Target for :math:`(1/K)\\sum_k E\\|\\nabla f(W_k)\\|^2`, if the file sets one.
    preset : str or None
        The preset the device came from, if any (kept so :func:`dump_config` can write it back).
    """

    hardware: HardwareParams
    problem: ProblemParams = field(default_factory=ProblemParams)
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)
    eps: float | None = None
    preset: str | None = None

    def __post_init__(self):
        check_type("hardware", self.hardware, HardwareParams, "e.g. bounds.from_preset(NAME)")
        check_type("problem", self.problem, ProblemParams)
        check_type("pipeline", self.pipeline, PipelineConfig)
        if self.eps is not None:
            check_range("eps", self.eps, 0, low_open=True)


def check_type(name: str, value, kind: type, hint: str = ""):
    """Return ``value`` if it is a ``kind``, else raise a ParameterError naming both.

    >>> check_type("hardware", "reram", HardwareParams)
    Traceback (most recent call last):
    ...
    theory.errors.ParameterError: hardware='reram' is a str, not a bounds.HardwareParams
    """
    if not isinstance(value, kind):
        tail = f" ({hint})" if hint else ""
        raise ParameterError(f"{name}={show_value(value)} is a {type(value).__name__}, not a "
                             f"bounds.{kind.__name__}{tail}")
    return value


def _field_names(cls) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if f.init)


def check_keys(where: str, table: dict, valid) -> None:
    """Raise a ParameterError listing ``valid`` if ``table`` is not a dict or has other keys.

    The message names at most a few of the unknown keys (and how many there are), so that a
    file with thousands of them still gives one short line.
    """
    if not isinstance(table, dict):
        raise ParameterError(f"{where} must be a TOML table, got {show_value(table)}")
    unknown = sorted(set(table) - set(valid))
    if unknown:
        raise ParameterError(
            f"{devices.unknown_keys(unknown)} in {where}; valid keys: {', '.join(valid)}"
        )


def validate_timing(table: dict[str, Any]) -> dict[str, Any]:
    """Check that a preset's ``[timing]`` table has only known keys (:data:`PRESET_TIMING_KEYS`).

    Returns the table; raises a ParameterError listing the valid keys otherwise.
    """
    unknown = sorted(set(table) - set(PRESET_TIMING_KEYS))
    if unknown:
        raise ParameterError(f"{devices.unknown_keys(unknown, 'timing key')}; valid keys: "
                             f"{', '.join(PRESET_TIMING_KEYS)}")
    return table


def _check_preset(name: str) -> None:
    presets = devices.list_presets()
    if not isinstance(name, str):
        raise ParameterError(f"preset={show_value(name)} is not a string; valid presets: "
                             f"{', '.join(presets)}")
    if name not in presets:
        raise ParameterError(f"preset={name!r} is unknown; valid presets: {', '.join(presets)}")


def from_preset(name: str, **overrides) -> HardwareParams:
    """Hardware of preset ``name``: its ``[device]`` and ``[timing]`` tables, then ``overrides``.

    Parameters
    ----------
    name : str
        A name of :func:`theory.devices.list_presets`.
    **overrides
        Fields of :class:`HardwareParams` (e.g. ``weight_bound``, ``layers``).
    """
    _check_preset(name)
    check_keys("from_preset overrides", overrides, _field_names(HardwareParams)[1:])
    timing = validate_timing(dict(devices.preset_table(name).get("timing", {})))
    return HardwareParams(device=devices.load_preset(name), **{**timing, **overrides})


def read_toml(name: str, path: Path, text: str | None = None) -> dict:
    """The parsed TOML document of file ``path`` (the value of parameter ``name``).

    :func:`theory.userfiles.load_toml` (size, UTF-8, depth and integer limits); ``text`` is the
    file's content if already read. A missing file raises FileNotFoundError (with its filename);
    anything else is a one-line ParameterError naming ``name`` and the file.
    """
    return load_toml(path, name, text=text)


def read_text(name: str, path: Path) -> str:
    """The UTF-8 text of file ``path`` (the value of parameter ``name``):
    :func:`theory.userfiles.read_user_text`."""
    return read_user_text(path, name)


def load_config(path) -> BoundsConfig:
    """Read a bounds configuration from a TOML file (layout in the module docstring).

    Parameters
    ----------
    path : str or os.PathLike
        The TOML file.

    Raises
    ------
    ParameterError
        Unknown keys (the message lists the valid ones), an unknown preset (lists the presets),
        both or neither of ``preset`` and ``[device]``, or any value out of its range.
    FileNotFoundError
        The file does not exist.
    """
    path = Path(path)
    doc = load_toml(path, "config", CONFIG_SCHEMA)
    timing, problem, pipeline = (doc.get(key, {}) for key in ("timing", "problem", "pipeline"))
    extra = {"weight_bound": doc["weight_bound"]} if "weight_bound" in doc else {}
    preset = doc.get("preset")
    if (preset is None) == ("device" not in doc):
        raise ParameterError(f"config={str(path)!r}: give exactly one of preset = \"NAME\" and "
                             "a [device] table")
    # the timing fields and weight_bound are checked with the device
    with in_file("config", path, tables=dict.fromkeys(TIMING_KEYS, ("timing",))):
        if preset is not None:
            hardware = from_preset(preset, **timing, **extra)
        else:
            with in_file("config", path, ("device",)):
                device = devices.device_from_table(doc["device"])
            hardware = HardwareParams(device=device, **timing, **extra)
    with in_file("config", path, ("problem",)):
        problem = ProblemParams(**problem)
    with in_file("config", path, ("pipeline",)):
        pipeline = PipelineConfig(**pipeline)
    return BoundsConfig(hardware=hardware, problem=problem, pipeline=pipeline,
                        eps=doc.get("eps"), preset=preset)


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ParameterError(f"cannot write the non-finite value {value!r} to TOML")
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    raise ParameterError(f"cannot write {value!r} ({type(value).__name__}) to TOML")


def _toml_table(name: str, table: dict) -> str:
    lines = [f"[{name}]"] + [f"{key} = {_toml_value(value)}" for key, value in table.items()]
    return "\n".join(lines) + "\n"


def dump_config(config: BoundsConfig) -> str:
    """The TOML text of ``config``; :func:`load_config` of it gives back an equal config.

    A preset device is written as ``preset = "NAME"`` (with the timing fields in ``[timing]``);
    any other device as its ``[device]`` table (read by :func:`theory.devices.device_from_table`).
    """
    hw = config.hardware
    head = {"weight_bound": float(hw.weight_bound)}
    if config.eps is not None:
        head["eps"] = float(config.eps)
    parts = []
    if config.preset is not None:
        parts.append(f"preset = {_toml_value(config.preset)}")
    parts += [f"{key} = {_toml_value(value)}" for key, value in head.items()]
    text = "\n".join(parts) + "\n\n"
    if config.preset is None:
        text += _toml_table("device", devices.device_to_table(hw.device)) + "\n"
    text += _toml_table("timing", {key: getattr(hw, key) for key in TIMING_KEYS}) + "\n"
    problem = dataclasses.asdict(config.problem)
    if problem["beta"] == 0:  # the default (unbiased gradient): files written before beta existed
        del problem["beta"]
    text += _toml_table("problem", problem) + "\n"
    text += _toml_table("pipeline", dataclasses.asdict(config.pipeline))
    return text
