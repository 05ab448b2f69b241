"""Which device a name means: the shipped presets and the families, a range ``tau``, the pulse
vocabulary of the analog tile (aihwkit's names).

The run config (:class:`simulate.SimConfig`) and the pulse-response library resolve their
``device`` and ``tau`` here; nothing in :mod:`simulate.device` knows the run config.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

from theory import devices
from theory.devices import Device
from theory.errors import ParameterError, show_value

__all__ = [
    "DEFAULT_DW_MIN",
    "DEFAULT_TAU",
    "DIGITAL_FAST",
    "PULSE_METHODS",
    "PULSE_TYPES",
    "check_device_tau",
    "device_named",
    "fast_device_named",
]

#: pulse types of the pulse-level update (aihwkit vocabulary; :func:`simulate.device.pulsed_update`)
PULSE_TYPES = ("deterministic", "stochastic", "mean-count")
#: how the pulse-level update fires an element's pulses (:func:`simulate.device.apply_pulses`)
PULSE_METHODS = ("closed-form", "loop")
#: pulse granularity of a device named by its family alone (the paper's tau = 1 theory device)
DEFAULT_DW_MIN = 0.001
#: the default ``tau`` of :class:`simulate.SimConfig` (a preset of fixed range records ``None``)
DEFAULT_TAU = 1.0
#: ``fast_device`` value of an ideal (digital) fast array A: ``A += dw`` exactly, no device
DIGITAL_FAST = "digital"


@cache
def _preset(device: str) -> Device | None:
    """The preset named ``device`` (``None`` if it is not a preset name); cached."""
    return devices.load_preset(device) if device in devices.list_presets() else None


def _fixed_range_preset(device: str) -> Device | None:
    """The preset ``device`` if its range is fixed (no ``tau`` parameter), else ``None``."""
    preset = _preset(device)
    if preset is None or "tau" in preset.response.parameter_names():
        return None
    return preset


def check_device_tau(device: str, tau: float | None, *, explicit: bool = True) -> float | None:
    """The ``tau`` to record for ``device``: refuse one that would be ignored or is too small.

    A preset (or a family) whose range is ``[w_min, w_max]`` has no ``tau``: ``None`` is
    recorded there (the record says what ran), and a ``tau`` given ``explicit``-ly (by
    :class:`SimConfig`: any value but the default :data:`DEFAULT_TAU`) is refused. A device with
    a range ``tau`` holds ``[-tau, tau]``, which must be at least one pulse ``dw_min`` wide (the
    pulse of a family device is :data:`DEFAULT_DW_MIN`, which no flag sets: the message names
    ``tau``).

    Raises
    ------
    ParameterError
        Starting ``tau=``.
    """
    preset = _fixed_range_preset(device)
    fixed_family = (device in devices.FAMILIES
                    and "tau" not in devices.FAMILIES[device].parameter_names())
    if preset is not None or fixed_family:
        if tau is None or not explicit:
            return None
        with_tau = ", ".join(f for f, c in devices.FAMILIES.items() if "tau" in c.parameter_names())
        what = (f"the preset device={device!r}, whose range [{preset.w_min:g}, {preset.w_max:g}] "
                "is fixed" if preset is not None else
                f"the family device={device!r}, whose range is set by w_min and w_max")
        raise ParameterError(
            f"tau={tau:g} does not apply to {what}; leave tau unset, or set the range with a "
            f"family that has a tau as device ({with_tau}), e.g. device='softbounds'"
        )
    if tau is None:
        return None
    if _preset(device) is not None:
        dw_min = _preset(device).dw_min
    elif device in devices.FAMILIES:
        dw_min = DEFAULT_DW_MIN
    else:
        return tau  # an unknown name fails in device_from_config
    if 2 * tau < dw_min:
        raise ParameterError(
            f"tau={tau:g} is too small for device={device!r}: its range [-tau, tau] must hold "
            f"one pulse dw_min={dw_min:g}; valid range [{dw_min / 2:g}, inf)"
        )
    return tau


def device_named(device: str, tau: float | None) -> Device:
    """The :class:`theory.devices.Device` of a preset or family name and a range ``tau`` (or
    ``None``), as :func:`device_from_config` resolves ``SimConfig.device`` and ``SimConfig.tau``
    (``tau`` checked first with :func:`check_device_tau`).
    """
    if device in devices.list_presets():
        found = devices.load_preset(device)
        if tau is not None and "tau" in found.response.parameter_names():
            found = replace(found, response=replace(found.response, tau=float(tau)))
        return found
    if device not in devices.FAMILIES:
        raise ParameterError(
            f"device={show_value(device)} is unknown; valid presets: "
            f"{', '.join(devices.list_presets())}; valid families: {', '.join(devices.FAMILIES)}"
        )
    params = {"dw_min": DEFAULT_DW_MIN}
    if tau is not None and "tau" in devices.FAMILIES[device].parameter_names():
        params["tau"] = float(tau)
    return devices.make_device(device, **params)


def fast_device_named(fast_device: str | None, tau: float | None) -> Device | None:
    """The device of Tiki-Taka's fast array A: ``None`` (the run's device) unless ``fast_device``
    names one; a family with a range ``tau`` gets ``tau`` (or :data:`DEFAULT_TAU` when the run's
    device records none), a preset its own range. ``fast_device="digital"`` (:data:`DIGITAL_FAST`,
    an ideal A without a device) is refused here: :func:`simulate.device.tiki_taka.wrap` gives A a
    digital update instead."""
    if fast_device is None:
        return None
    if fast_device == DIGITAL_FAST:
        raise ParameterError(f"fast_device={DIGITAL_FAST!r} is an ideal buffer, not a device "
                             "(simulate.device.tiki_taka.wrap gives A a digital update)")
    tau = DEFAULT_TAU if tau is None else tau
    return device_named(fast_device, check_device_tau(fast_device, tau, explicit=False))
