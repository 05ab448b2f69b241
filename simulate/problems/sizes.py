"""The names and sizes of the problems, without their kernels: what a run record needs.

:class:`simulate.SimConfig` checks a run's memory before anything is allocated and names the
oracle and network problems; both come from here, so that reading a configuration (and
``aimc-pipeline simulate --help``) loads neither :mod:`simulate.problems.network`,
:mod:`simulate.problems.oracle` nor their compiled kernels.

>>> network_bytes_per_member(1, 1000) == 8 * DIGITS_TRAIN * max(NETWORK_WIDTH, DIGITS_FEATURES)
True
"""

from __future__ import annotations

from theory.networks import (
    DIGITS_CLASSES,
    DIGITS_FEATURES,
    DIGITS_TRAIN,
    NETWORK_LAYERS,
    NETWORK_PROBLEMS,
    NETWORK_WIDTH,
)

__all__ = [
    "DIGITS_CLASSES",
    "DIGITS_FEATURES",
    "DIGITS_TRAIN",
    "DRAW_CHUNK",
    "LEAST_SQUARES_DIM",
    "NETWORK_LAYERS",
    "NETWORK_PROBLEMS",
    "NETWORK_WIDTH",
    "ORACLE_PROBLEMS",
    "network_bytes_per_member",
]

#: problems with every constant of the theory known exactly
ORACLE_PROBLEMS = ("quadratic", "least-squares")
#: weights of the least-squares oracle problem (columns of its A)
LEAST_SQUARES_DIM = 40
#: updates whose gradient noise (oracle) or batches (networks) are drawn at once (the bits do not
#: depend on it; see the runs)
DRAW_CHUNK = 256
# the digits split (images, features, classes), the default network (layers, width) and the
# network names are :mod:`theory.networks`' (the planner's models read them too), re-exported here


def network_bytes_per_member(samples: int, steps: int, layers: int = NETWORK_LAYERS,
                             width: int = NETWORK_WIDTH) -> int:
    """Bytes of the largest array one ensemble member of a digits network run allocates.

    The largest of: its weights, a layer's activations over the whole training split (the
    measurements), a layer's activations of one batch of ``samples``, and the indices of the
    batches drawn at once (``min(256, steps)`` batches of int64).
    """
    wide = max(width, DIGITS_FEATURES, DIGITS_CLASSES)
    weights = DIGITS_FEATURES * width + (layers - 2) * width * width + width * DIGITS_CLASSES
    return 8 * max(weights, DIGITS_TRAIN * wide, samples * wide, min(DRAW_CHUNK, steps) * samples)
