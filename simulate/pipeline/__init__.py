"""Time and staleness of the pipeline schedules: discrete-event timelines, per-stage delays, the
ring buffer of stale weight versions, the divergence rule, data-parallel replicas.

Names are imported on first use (:func:`theory.lazy.attach`): importing one module of the
room does not import the others.
"""

from theory.lazy import attach

#: module -> the names it gives
_EXPORTS = {
    ".replicas": (
        "PULSE_CYCLES", "averaging_cycles", "cycles_with_averaging", "program_mean",
        "replica_generators", "replica_mean",
    ),
    ".staleness": (
        "DIVERGENCE_FACTOR", "NETWORK_LOSS_FACTOR", "StaleVersions", "check_divergence",
        "cycles_after", "divergence_limit", "forward_delays",
    ),
    ".timeline": (
        "Event", "Timeline", "build_timeline", "timeline_cells",
    ),
}

#: every module of the room is also an attribute before anything imported it
__getattr__, __dir__, __all__ = attach(__name__, _EXPORTS, (m[1:] for m in _EXPORTS))
