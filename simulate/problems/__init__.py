"""What is trained: the oracle problems (every constant known) and the digits networks, each with
its run (setup, the update loop, the measurements). The run record is read, never imported.

Names are imported on first use (:func:`theory.lazy.attach`): importing one module of the
room does not import the others.
"""

from theory.lazy import attach

#: module -> the names it gives
_EXPORTS = {
    ".digits": (
        "AUGMENT_COPIES", "AUGMENT_SEED", "DATA_SETS", "VALIDATION_SIZE", "DigitsData", "augment",
        "load_digits_data", "load_digits_split", "sample_indices", "train_rows", "transform_image",
    ),
    ".network": (
        "ACTIVATIONS", "Buffers", "CURVE_SPEC", "DenseLayer", "Network", "NetworkSpec",
        "StageView", "contiguous_slices", "one_blas_thread", "softmax_cross_entropy",
    ),
    ".network_measure": (
        "MEASURE_CHUNK", "MemberViews", "measure_members",
    ),
    ".network_run": (
        "NetworkRun", "NetworkTraining", "io_passes", "run_network", "train_network",
    ),
    ".oracle": (
        "LeastSquares", "OracleProblem", "Quadratic", "row_dot", "stage_blocks", "sum_in_order",
    ),
    ".oracle_run": (
        "W_STAR_SCALE", "OracleTraining", "Progress", "VersionHook", "WeightsHook", "gradient_bias",
        "make_problem", "run_oracle",
    ),
    ".sizes": (
        "DIGITS_CLASSES", "DIGITS_FEATURES", "DIGITS_TRAIN", "DRAW_CHUNK", "LEAST_SQUARES_DIM",
        "NETWORK_LAYERS", "NETWORK_PROBLEMS", "NETWORK_WIDTH", "ORACLE_PROBLEMS",
        "network_bytes_per_member",
    ),
}

#: every module of the room is also an attribute before anything imported it
__getattr__, __dir__, __all__ = attach(__name__, _EXPORTS, (m[1:] for m in _EXPORTS))
