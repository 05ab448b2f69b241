"""Named device presets: TOML files shipped in ``theory/presets/`` (package data).

Each file has a ``[device]`` table (``name``, ``family``, the family's parameters and the pulse
fields of :class:`~theory.devices.Device`) and a ``[timing]`` table (hardware timing defaults that
:mod:`bounds` interprets and validates, :func:`bounds.params.validate_timing`; theory reads only
``[device]``). Sources are cited in each file.
User TOML files use the same ``[device]`` layout through :func:`device_from_table`.
"""

from __future__ import annotations

import tomllib
from functools import cache
from typing import Any

from ..errors import ParameterError
from ..vocabulary import list_presets, preset_dir
from .device import DEVICE_FIELDS, Device, check_family, make_device, unknown_keys
from .families import FAMILIES

__all__ = [
    "PRESET_TABLES",
    "device_from_table",
    "device_to_table",
    "list_presets",
    "load_preset",
    "preset_table",
]

#: the top-level tables of a preset file (``timing`` is read and validated by :mod:`bounds`)
PRESET_TABLES = ("device", "timing")


@cache
def _read(name: str) -> dict[str, Any]:
    presets = list_presets()
    if name not in presets:
        raise ParameterError(f"preset={name!r} is unknown; valid: {', '.join(presets)}")
    table = tomllib.loads(preset_dir().joinpath(f"{name}.toml").read_text(encoding="utf-8"))
    unknown = sorted(set(table) - set(PRESET_TABLES))
    if unknown:
        raise ParameterError(f"preset {name!r}: unknown table(s) {', '.join(unknown)}; "
                             f"valid: {', '.join(PRESET_TABLES)}")
    return table


def preset_table(name: str) -> dict[str, Any]:
    """The raw parsed TOML of a preset (a fresh copy: ``{"device": {...}, "timing": {...}}``).

    Raises
    ------
    ParameterError
        For an unknown preset (the message lists the valid names).
    """
    return {key: dict(value) for key, value in _read(name).items()}


def load_preset(name: str) -> Device:
    """The :class:`~theory.devices.Device` of a named preset (see :func:`list_presets`)."""
    return device_from_table(_read(name)["device"])


def device_from_table(table: dict[str, Any]) -> Device:
    """Build a :class:`~theory.devices.Device` from a ``[device]`` table (preset or user TOML).

    Keys: ``family`` (required), ``name`` (optional), the family's parameters, and the pulse
    fields ``dw_min``, ``dw_min_dtod``, ``dw_min_std``, ``w_bounds_dtod``, ``desired_bl``.

    Raises
    ------
    ParameterError
        For a missing or unknown family, or an unknown key (the message lists the valid keys).
    """
    if not isinstance(table, dict):
        raise ParameterError(f"device table must be a TOML table, got {type(table).__name__}")
    params = dict(table)
    family = params.pop("family", None)
    if family is None:
        raise ParameterError(f"device table needs a 'family' key; valid: {', '.join(FAMILIES)}")
    valid = ("family", "name", *FAMILIES[check_family(family)].parameter_names(), *DEVICE_FIELDS)
    unknown = sorted(set(table) - set(valid))
    if unknown:
        raise ParameterError(f"{unknown_keys(unknown, 'device key')} for family {family!r}; "
                             f"valid keys: {', '.join(valid)}")
    return make_device(family, **params)


def device_to_table(device: Device) -> dict[str, Any]:
    """The ``[device]`` table of a device (:func:`device_from_table` gives back an equal one)."""
    pulse = {key: getattr(device, key) for key in DEVICE_FIELDS}
    return {"name": device.name, "family": device.family, **device.response.params(), **pulse}
