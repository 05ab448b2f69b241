"""What a calibration is given, without the simulation: the design's settings and the problem's
fields with their defaults.

The parser of ``aimc-pipeline calibrate`` shows these defaults; reading them here loads neither
the engine nor the theorem registry. :mod:`simulate.verification.calibration_design` builds on
them (:class:`~simulate.verification.calibration_design.CalibrationProblem` validates the fields
of :class:`ProblemFields` and runs the design).

>>> ProblemFields().problem, CALIBRATION_QUICK["steps"]
('quadratic', 1500)
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ASYNC_DESIGN",
    "CALIBRATION_QUICK",
    "CALIBRATION_STANDARD",
    "FRACTIONS",
    "ProblemFields",
    "SYNC_DESIGN",
]

#: (M, B, b) of the synchronous design points
SYNC_DESIGN = ((1, 1, 1), (2, 4, 1), (4, 2, 2), (8, 8, 1))
#: (M, B, b) of the asynchronous design points (B = 1: one update per micro-batch)
ASYNC_DESIGN = ((2, 1, 1), (4, 1, 2), (8, 1, 1), (16, 1, 1))
#: the steps of the design as fractions of the mode's step cap
FRACTIONS = (0.1, 0.3, 0.9)
#: the settings of the standard and the quick design (``steps`` K, ensemble ``seeds`` R,
#: bootstrap ``resamples``)
CALIBRATION_STANDARD = {"steps": 3000, "seeds": 32, "resamples": 200}
CALIBRATION_QUICK = {"steps": 1500, "seeds": 12, "resamples": 50,
         "sync": ((2, 4, 1), (8, 1, 1)), "async": ((2, 1, 1), (8, 1, 1)), "fractions": (0.2, 0.8)}


@dataclass(frozen=True)
class ProblemFields:
    """The fields of a calibration's problem and their defaults, unvalidated (the attributes of
    :class:`~simulate.verification.calibration_design.CalibrationProblem`, documented there)."""

    problem: str = "quadratic"
    dim: int = 16
    sigma2: float = 1.0
    device: str = "softbounds"
    tau: float | None = 1.0
    weight_bound: float = 0.6
    theta: float = 0.5
    seed: int = 0
    algorithm: str = "analog"
    transfer_every: int = 1
    transfer_slice: str = "column"
    update: str = "expected"
    pulse_type: str | None = None
    write: str = "batch-mean"
