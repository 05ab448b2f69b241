r"""Device response models: response-function families, devices, and named presets.

- :mod:`theory.devices.families`: one frozen object per response formula (:class:`SoftBounds`,
  :class:`AsymmetricSoftBounds`, :class:`LinearStep`, :class:`PowerStep`,
  :class:`ExponentialStep`, :class:`ConstantStep`) with sympy :math:`q_\pm`, :math:`F`, :math:`G`,
  saturation and symmetric point in the weight symbol :data:`w`.
- :mod:`theory.devices.device`: :class:`Device` (family + pulse parameters; numpy evaluators
  compiled once and cached), :class:`DeviceConstants` (:math:`q_{\min}, q_{\max}, G_\infty` on a
  weight interval), :class:`PulseMap` and :meth:`Device.n_pulse_map` (the closed-form n-pulse
  map of the families with affine responses), :func:`make_device`,
  :func:`soft_bounds_constants`, :func:`check_family`, :func:`unknown_keys`.
- :mod:`theory.devices.presets`: the TOML presets of ``theory/presets/`` (paper-notes section 5):
  :func:`list_presets`, :func:`load_preset`, :func:`preset_table`, :func:`device_from_table`,
  :func:`device_to_table` (:func:`list_presets` is :func:`theory.vocabulary.list_presets`,
  free of sympy).

Names are imported on first use (:func:`theory.lazy.attach`): ``from theory import devices`` and
``devices.list_presets()`` load no sympy; a device, a family or a preset does.
"""

from ..lazy import attach

#: submodule -> the names ``theory.devices`` re-exports from it
_NAMES = {
    ".device": (
        "DEVICE_FIELDS", "Device", "DeviceConstants", "PulseMap", "check_family", "geometric_sum",
        "make_device", "soft_bounds_constants", "unknown_keys",
    ),
    ".families": (
        "AsymmetricSoftBounds", "ConstantStep", "ExponentialStep", "FAMILIES", "LinearStep",
        "PowerStep", "ResponseFamily", "SoftBounds", "w",
    ),
    ".presets": (
        "PRESET_TABLES", "device_from_table", "device_to_table", "load_preset", "preset_table",
    ),
    "..vocabulary": ("list_presets",),
}

__getattr__, __dir__, __all__ = attach(__name__, _NAMES, ("device", "families", "presets"))
