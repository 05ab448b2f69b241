"""One analog tile: its updates (digital, expected, pulse-level with aihwkit's pulse trains),
the compiled kernels beside their numpy references, the IO non-idealities of its products,
Tiki-Taka's two arrays and the pulse-response library.

The room imports :mod:`theory` only: it knows no run record, no problem and no schedule.

Names are imported on first use (:func:`theory.lazy.attach`): importing one module of the
room does not import the others.
"""

from theory.lazy import attach

#: module -> the names it gives
_EXPORTS = {
    ".catalog": (
        "DEFAULT_DW_MIN", "DEFAULT_TAU", "DIGITAL_FAST", "PULSE_METHODS", "PULSE_TYPES",
        "check_device_tau", "device_named", "fast_device_named",
    ),
    ".draws": (
        "NOISE_BLOCK", "DeviceSpread", "Rng", "draw_bound_scale", "draw_dw_min_scale", "per_member",
        "pulse_noise", "uniforms",
    ),
    ".mvm": (
        "BOUND_MANAGEMENT", "IO_PRESETS", "NOISE_MANAGEMENT", "W_NOISE_TYPES", "AnalogPass",
        "IOParameters", "analog_matmul", "bits_to_res", "io_preset", "resolution_step",
    ),
    ".pinned": (
        "PINNED_FRACTION", "PinnedMonitor", "PinnedWarning",
    ),
    ".pulse_kernels": (
        "affine_apply", "affine_split", "binomial_inversion", "stochastic_affine_update",
        "stochastic_rounding",
    ),
    ".pulses": (
        "MEMBER_BLOCK", "apply_pulses", "check_pulses", "member_blocks", "pulsed_update",
        "stochastic_write",
    ),
    ".response": (
        "MAX_CASES", "PulseResponse", "PulseResponseConfig", "pulse_response",
    ),
    ".sample_writes": (
        "SampleLayer", "SampleWrites",
    ),
    ".tiki_taka": (
        "CYCLES_PER_COLUMN", "TikiTaka", "Tile", "TransferRule", "layer_tiles", "oracle_tiles",
        "transfer_cycles", "wrap",
    ),
    ".trains": (
        "INVERSION_MEAN", "TrainScales", "affine_constants", "binomial_counts",
        "binomial_from_values", "check_bit_length", "coincidence_counts", "pulse_counts",
        "train_scale", "train_scales",
    ),
    ".update_kernels": (
        "add_bias", "add_bias_numpy", "dense_backward", "dense_backward_numpy", "expected_step",
        "expected_step_numpy", "expected_step_ratio", "expected_step_ratio_numpy",
        "soft_bounds_write", "softmax_delta", "softmax_delta_numpy",
    ),
    ".updates": (
        "UPDATE_KINDS", "Updater", "digital_blocks", "digital_update", "expected_update",
        "ratio_tau",
    ),
}

#: every module of the room is also an attribute before anything imported it
__getattr__, __dir__, __all__ = attach(__name__, _EXPORTS,
                                      (*(m[1:] for m in _EXPORTS), "sample_kernels"))
