"""Time and staleness of the pipeline schedules: discrete-event timelines, per-stage delays, the
ring buffer of stale weight versions, the divergence rule, data-parallel replicas.
"""

from .replicas import (
    PULSE_CYCLES,
    averaging_cycles,
    cycles_with_averaging,
    program_mean,
    replica_generators,
    replica_mean,
)
from .staleness import (
    DIVERGENCE_FACTOR,
    NETWORK_LOSS_FACTOR,
    StaleVersions,
    check_divergence,
    cycles_after,
    divergence_limit,
    forward_delays,
)
from .timeline import (
    Event,
    Timeline,
    build_timeline,
    timeline_cells,
)

__all__ = [
    "DIVERGENCE_FACTOR",
    "Event",
    "NETWORK_LOSS_FACTOR",
    "PULSE_CYCLES",
    "StaleVersions",
    "Timeline",
    "averaging_cycles",
    "build_timeline",
    "check_divergence",
    "cycles_after",
    "cycles_with_averaging",
    "divergence_limit",
    "forward_delays",
    "program_mean",
    "replica_generators",
    "replica_mean",
    "timeline_cells",
]
