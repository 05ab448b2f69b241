r"""Accelerator kinds: a hardware description with analog and digital accelerators.

A :class:`KindsHardware` is a tuple of :class:`AcceleratorKind` (each with its count) plus what
they share (the link between accelerators, bytes per weight). Per kind:

- **analog** (``type = "analog"``): a device preset (:func:`bounds.params.from_preset`, whose
  ``[timing]`` gives the MVM read time, pulse width, bit length, clock and tile size; every key
  may be overridden), crossbar ``tiles`` per accelerator, optionally ``weight_bound``. A stage of
  :math:`W` MVMs per sample takes, per micro-batch of :math:`b` samples, the cycle time of
  :meth:`bounds.timing.TimingModel.stage_time_s` of :math:`bW` (the one timing rule);
- **digital** (``type = "digital"``): ``memory_bytes`` for the stage's weights, ``mac_time_s``
  seconds per multiply-accumulate and ``update_time_per_weight_s`` seconds of an exact update per
  weight; a stage of :math:`O` multiply-accumulates per sample and :math:`N` weights takes

  .. math::

      t = \lceil f_\mathrm{clk}\,(b\,O\,t_\mathrm{mac} + N\,t_\mathrm{upd}) \rceil / f_\mathrm{clk}

  (rounded to its clock like the analog rule). Digital stages update exactly (:math:`q = 1`,
  :math:`G = 0`).

Defaults of a digital kind: an NVIDIA A100-80GB-like accelerator, 312 TFLOP/s dense BF16 (156e12
multiply-accumulates per second, ``mac_time_s = 1/156e12``), 80 GB of memory, 2.0 TB/s of HBM
bandwidth (an update reads the weight and its gradient and writes the weight: 3 x 2 bytes, so
``update_time_per_weight_s = 3e-12``), 1.41 GHz boost clock (NVIDIA A100 datasheet). Shared:
``link_bytes_per_s = 64e9`` (PCIe 5.0 x16, one direction) and ``bytes_per_weight = 2``.

TOML layout (:func:`load_hardware`)::

    link_bytes_per_s = 64e9      # optional
    bytes_per_weight = 2         # optional

    [[kinds]]
    name = "aimc"
    type = "analog"
    count = 48
    tiles = 16384
    preset = "reram-softbounds"  # its [timing]; read_time_s, bit_length, ... may be overridden
    # programming_error_std = 1e-4  # optional (weight units); default from the device

    [[kinds]]
    name = "gpu"
    type = "digital"
    count = 16
    memory_bytes = 80e9          # optional, like mac_time_s, update_time_per_weight_s, clock_hz

Unknown keys are errors listing the valid ones. :func:`single_kind` builds the one-kind
description of today's flags (all accelerators analog), :func:`with_digital` adds a digital kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from theory.errors import ParameterError, check_range, show_value
from theory.limits import MAX_COUNT
from theory.userfiles import STRING, array, in_file, integer, load_toml, number, table

from ..params import (
    DEFAULT_PRESET,
    PRESET_TIMING_KEYS,
    TIMING_SCHEMA,
    HardwareParams,
    PlanHardware,
    check_type,
    from_preset,
)
from ..timing import ROUNDING_SLACK

__all__ = [
    "ANALOG",
    "AcceleratorKind",
    "DIGITAL",
    "HARDWARE_SCHEMA",
    "KIND_TYPES",
    "KindsHardware",
    "load_hardware",
    "single_kind",
    "with_digital",
]

ANALOG = "analog"
DIGITAL = "digital"
#: the two types of accelerator
KIND_TYPES = (ANALOG, DIGITAL)
#: A100-80GB-like defaults of a digital kind (module docstring)
_DIGITAL_DEFAULTS = {
    "memory_bytes": 80e9, "mac_time_s": 1 / 156e12, "update_time_per_weight_s": 3e-12,
    "clock_hz": 1.41e9,
}
_ANALOG_KEYS = ("name", "type", "count", "tiles", "preset", "weight_bound",
                "programming_error_std", *PRESET_TIMING_KEYS)
_DIGITAL_KEYS = ("name", "type", "count", *_DIGITAL_DEFAULTS)
_COMMON = {"name": STRING, "count": integer(1, MAX_COUNT)}
_ANALOG_SCHEMA = table({
    **_COMMON, "type": {"const": "analog"}, "tiles": integer(1, MAX_COUNT), "preset": STRING,
    "weight_bound": number(above=0), "programming_error_std": number(minimum=0),
    **{key: TIMING_SCHEMA[key] for key in PRESET_TIMING_KEYS},
}, ("type", "count", "tiles"))
_DIGITAL_SCHEMA = table({**_COMMON, "type": {"const": "digital"},
                         **{key: number(above=0) for key in _DIGITAL_DEFAULTS}},
                        ("type", "count"))
#: the JSON Schema of a hardware file (:func:`load_hardware`; the module docstring's layout):
#: each ``[[kinds]]`` table is checked against the keys of its ``type``
HARDWARE_SCHEMA = table({
    "link_bytes_per_s": number(above=0), "bytes_per_weight": integer(1, 16),
    "kinds": array({"type": "object", "required": ["type"],
                    "properties": {"type": {"enum": list(KIND_TYPES)}},
                    "allOf": [{"if": {"properties": {"type": {"const": kind}}},
                               "then": schema}
                              for kind, schema in ((ANALOG, _ANALOG_SCHEMA),
                                                   (DIGITAL, _DIGITAL_SCHEMA))]}, 1),
}, ("kinds",))


@dataclass(frozen=True)
class AcceleratorKind:
    r"""One kind of accelerator and how many there are.

    Parameters
    ----------
    name : str
        Label (unique within a description).
    type : {"analog", "digital"}
    count : int
        Accelerators of this kind, >= 1.
    hardware : HardwareParams, optional
        Analog only: device, weight region, timing and tile size.
    tiles : int
        Analog only: crossbar tiles per accelerator, >= 1.
    memory_bytes, mac_time_s, update_time_per_weight_s, clock_hz : float
        Digital only: weight memory (bytes), seconds per multiply-accumulate, seconds of an exact
        update per weight, clock (Hz); defaults in the module docstring.
    programming_error_std : float, optional
        Analog only: standard deviation of a weight programmed to a target (weight units), >= 0;
        default from the device (:func:`bounds.planning.modes.programming_noise`).
    """

    name: str
    type: str
    count: int
    hardware: HardwareParams | None = None
    tiles: int = 1
    memory_bytes: float = _DIGITAL_DEFAULTS["memory_bytes"]
    mac_time_s: float = _DIGITAL_DEFAULTS["mac_time_s"]
    update_time_per_weight_s: float = _DIGITAL_DEFAULTS["update_time_per_weight_s"]
    clock_hz: float = _DIGITAL_DEFAULTS["clock_hz"]
    programming_error_std: float | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ParameterError(f"name={show_value(self.name)} of a kind is not a non-empty "
                                 "string")
        if self.type not in KIND_TYPES:
            raise ParameterError(f"{self.name}.type={show_value(self.type)} is unknown; valid: "
                                 f"{', '.join(KIND_TYPES)}")
        object.__setattr__(self, "count", check_range(f"{self.name}.count", self.count, 1,
                                                      MAX_COUNT, integer=True))
        if self.analog:
            check_type(f"{self.name}.hardware", self.hardware, HardwareParams,
                       "an analog kind needs a device: bounds.from_preset(NAME)")
            object.__setattr__(self, "tiles", check_range(f"{self.name}.tiles", self.tiles, 1,
                                                          MAX_COUNT, integer=True))
            if self.programming_error_std is not None:
                check_range(f"{self.name}.programming_error_std", self.programming_error_std, 0)
        else:
            if self.programming_error_std is not None:
                raise ParameterError(f"{self.name}.programming_error_std is given for a digital "
                                     "kind; valid: None (digital weights are averaged exactly)")
            if self.hardware is not None:
                raise ParameterError(f"{self.name}.hardware is given for a digital kind; valid: "
                                     "None (digital stages update exactly)")
            for key in ("memory_bytes", "mac_time_s", "update_time_per_weight_s", "clock_hz"):
                check_range(f"{self.name}.{key}", getattr(self, key), 0, low_open=True)

    @property
    def analog(self) -> bool:
        """Whether this kind is analog."""
        return self.type == ANALOG

    def capacity_ok(self, tiles, weights, bytes_per_weight: int) -> np.ndarray:
        """Whether a stage of ``tiles`` tiles and ``weights`` weights fits one accelerator."""
        if self.analog:
            return np.asarray(tiles) <= self.tiles
        return np.asarray(weights, dtype=float) * bytes_per_weight <= self.memory_bytes

    def stage_time_s(self, b, mvms, ops, weights) -> np.ndarray:
        r"""Seconds of one forward (or backward) of a micro-batch of ``b`` samples on a stage.

        ``mvms``: MVMs per sample of the stage (analog rule of :mod:`bounds.timing`); ``ops``:
        multiply-accumulates per sample and ``weights``: its weights (digital rule of the module
        docstring). Vectorised.
        """
        if self.analog:
            return self.hardware.timing.stage_time_s(np.asarray(b) * np.asarray(mvms))
        raw = (np.asarray(b, dtype=float) * np.asarray(ops, dtype=float) * self.mac_time_s
               + np.asarray(weights, dtype=float) * self.update_time_per_weight_s) * self.clock_hz
        return np.ceil(raw * (1 - ROUNDING_SLACK)) / self.clock_hz

    def to_dict(self) -> dict:
        """JSON-ready fields (an analog kind's device by name)."""
        out = {"name": self.name, "type": self.type, "count": self.count}
        if self.analog:
            h = self.hardware
            out |= {"tiles": self.tiles, "device": h.device.name,
                    "weight_bound": float(h.weight_bound),
                    "programming_error_std": self.programming_error_std,
                    **{key: getattr(h, key) for key in PRESET_TIMING_KEYS}}
        else:
            out |= {key: getattr(self, key) for key in _DIGITAL_DEFAULTS}
        return out


@dataclass(frozen=True)
class KindsHardware:
    """Accelerator kinds available to the kinds planner (:mod:`bounds.planning.kinds`).

    Parameters
    ----------
    kinds : tuple of AcceleratorKind
        At least one analog kind; names unique.
    link_bytes_per_s : float
        Bandwidth of the link each accelerator uses to exchange weights (averaging), bytes/s.
        Default 64e9 (PCIe 5.0 x16).
    bytes_per_weight : int
        Bytes per weight when weights are exchanged or held digitally, in [1, 16]. Default 2.
    """

    kinds: tuple[AcceleratorKind, ...]
    link_bytes_per_s: float = 64e9
    bytes_per_weight: int = 2

    def __post_init__(self):
        object.__setattr__(self, "kinds", tuple(self.kinds))
        for kind in self.kinds:
            check_type("kinds", kind, AcceleratorKind)
        names = [k.name for k in self.kinds]
        if len(set(names)) != len(names):
            raise ParameterError(f"kinds={names!r}: kind names must be unique")
        if not any(k.analog for k in self.kinds):
            raise ParameterError(f"kinds={names!r} has no analog kind; valid: at least one "
                                 "kind with type = \"analog\"")
        check_range("link_bytes_per_s", self.link_bytes_per_s, 0, low_open=True)
        object.__setattr__(self, "bytes_per_weight", check_range(
            "bytes_per_weight", self.bytes_per_weight, 1, 16, integer=True))

    @property
    def accelerators(self) -> int:
        """All accelerators of all kinds."""
        return sum(k.count for k in self.kinds)

    @property
    def counts(self) -> tuple[int, ...]:
        """Accelerators of each kind."""
        return tuple(k.count for k in self.kinds)

    def with_counts(self, counts) -> KindsHardware:
        """The same kinds with other counts (a kind with count 0 is dropped)."""
        kinds = tuple(
            AcceleratorKind(**{**_fields(k), "count": int(c)})
            for k, c in zip(self.kinds, counts, strict=True) if c > 0
        )
        return KindsHardware(kinds, self.link_bytes_per_s, self.bytes_per_weight)

    def describe(self) -> str:
        """One line, e.g. ``48 x aimc (analog, reram-softbounds) + 16 x gpu (digital)``."""
        parts = []
        for k in self.kinds:
            what = f"analog, {k.hardware.device.name}, {k.tiles} tiles" if k.analog \
                else f"digital, {k.memory_bytes:.3g} bytes"
            parts.append(f"{k.count} x {k.name} ({what})")
        return " + ".join(parts)

    def to_dict(self) -> dict:
        """JSON-ready fields."""
        return {"kinds": [k.to_dict() for k in self.kinds],
                "link_bytes_per_s": self.link_bytes_per_s,
                "bytes_per_weight": self.bytes_per_weight}


def _fields(kind: AcceleratorKind) -> dict:
    return {key: getattr(kind, key) for key in AcceleratorKind.__dataclass_fields__}


def single_kind(hardware: PlanHardware, name: str = "aimc") -> KindsHardware:
    """Today's single-kind hardware (``--preset``, ``--accelerators``, ``--tiles-per-accelerator``)
    as a one-kind description."""
    check_type("hardware", hardware, PlanHardware)
    kind = AcceleratorKind(name, ANALOG, hardware.accelerators, hardware=hardware.hardware,
                           tiles=hardware.tiles_per_accelerator)
    return KindsHardware((kind,))


def with_digital(hardware: KindsHardware, count: int, name: str = "gpu", **fields) -> \
        KindsHardware:
    """``hardware`` plus ``count`` digital accelerators (defaults of the module docstring)."""
    kind = AcceleratorKind(name, DIGITAL, count, **fields)
    return KindsHardware((*hardware.kinds, kind), hardware.link_bytes_per_s,
                         hardware.bytes_per_weight)


def _kind_from_table(table: dict) -> AcceleratorKind:
    """One ``[[kinds]]`` table (checked by :data:`HARDWARE_SCHEMA`) as its kind."""
    kind_type = table["type"]
    name = table.get("name", kind_type)
    if kind_type == DIGITAL:
        extra = {key: table[key] for key in _DIGITAL_DEFAULTS if key in table}
        return AcceleratorKind(name, DIGITAL, table["count"], **extra)
    overrides = {key: table[key] for key in (*PRESET_TIMING_KEYS, "weight_bound") if key in table}
    hardware = from_preset(table.get("preset", DEFAULT_PRESET), **overrides)
    return AcceleratorKind(name, ANALOG, table["count"], hardware=hardware, tiles=table["tiles"],
                           programming_error_std=table.get("programming_error_std"))


def load_hardware(path) -> KindsHardware:
    """Read a hardware description with accelerator kinds from a TOML file (module docstring).

    The file is read by :func:`theory.userfiles.load_toml` and checked against
    :data:`HARDWARE_SCHEMA`; every error is one line naming the file and the key path
    (``hardware='hw.toml': kinds[1].count = 0 is out of range; valid: integer in [1, ...]``,
    entries counted from 0).

    Raises
    ------
    ParameterError
        Unknown keys (the message lists the valid ones), no ``[[kinds]]``, no analog kind, or a
        value out of range.
    FileNotFoundError
        The file does not exist.
    """
    path = Path(path)
    doc = load_toml(path, "hardware", HARDWARE_SCHEMA)
    kinds = []
    for i, entry in enumerate(doc["kinds"]):
        with in_file("hardware", path, ("kinds", i)):
            kinds.append(_kind_from_table(entry))
    extra = {key: doc[key] for key in ("link_bytes_per_s", "bytes_per_weight") if key in doc}
    with in_file("hardware", path):
        return KindsHardware(tuple(kinds), **extra)
