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
    "NETWORK_CALIBRATION",
    "NETWORK_CALIBRATION_QUICK",
    "NETWORK_TARGET",
    "ProblemFields",
    "STABILITY_FRACTIONS",
    "SYNC_DESIGN",
]

#: (M, B, b) of the synchronous design points
SYNC_DESIGN = ((1, 1, 1), (2, 4, 1), (4, 2, 2), (8, 8, 1))
#: (M, B, b) of the asynchronous design points (B = 1: one update per micro-batch)
ASYNC_DESIGN = ((2, 1, 1), (4, 1, 2), (8, 1, 1), (16, 1, 1))
#: the steps of the design as fractions of the mode's step cap
FRACTIONS = (0.1, 0.3, 0.9)
#: the further asynchronous steps as fractions of the stability limit of the delayed recursion
#: (:func:`theory.step_choice.stability_limit` at the pipeline's delay, ``L`` and ``q_max``):
#: larger ``alpha D`` than any proved cap, where the staleness and its bias show
STABILITY_FRACTIONS = (0.3, 0.6)
#: the settings of the standard and the quick design (``steps`` K, ensemble ``seeds`` R,
#: bootstrap ``resamples``)
CALIBRATION_STANDARD = {"steps": 3000, "seeds": 32, "resamples": 200}
CALIBRATION_QUICK = {"steps": 1500, "seeds": 12, "resamples": 50,
         "sync": ((2, 4, 1), (8, 1, 1)), "async": ((2, 1, 1), (8, 1, 1)), "fractions": (0.2, 0.8),
         "stability": (0.6,)}


#: the default target of each digits network (``calibrate --target-accuracy``): 85 % test
#: accuracy for the residual MLP, the speedup study's (``paper_figures.speedup``); 70 % for the
#: plain MLP, which on the soft-bounds device reaches 85 % on no design point within the budget
#: (its mean curve reaches 70 % in about 6 000 samples at the synchronous steps, 12 000 at the
#: asynchronous ones)
NETWORK_TARGET = {"digits-mlp": ("accuracy", 0.7), "digits-resmlp": ("accuracy", 0.85)}
#: the design of a network calibration, per network: ``(M, B, b)`` rows per mode (as
#: :data:`SYNC_DESIGN`; M only sets the delay of async and the cycles of sync, whose iterates
#: depend on ``n = B b`` only), the steps of each mode (the network has no proved cap; around the
#: speedup study's tuned steps), the training samples of every point (updates = samples / n),
#: seeds and bootstrap resamples
NETWORK_CALIBRATION = {
    "digits-resmlp": {
        "sync": ((2, 2, 4), (4, 4, 4), (8, 8, 4)), "async": ((2, 1, 4), (8, 1, 4), (16, 1, 4),
                                                              (4, 1, 8)),
        "steps": {"sync": (0.0125, 0.025, 0.05), "async": (0.003125, 0.00625, 0.0125)},
        "samples": 6400, "seeds": 3, "resamples": 200},
    "digits-mlp": {
        "sync": ((2, 2, 4), (4, 4, 4), (8, 8, 4)), "async": ((2, 1, 4), (4, 1, 4), (8, 1, 4),
                                                              (4, 1, 8)),
        "steps": {"sync": (0.0125, 0.025, 0.05), "async": (0.005, 0.01, 0.02)},
        "samples": 16000, "seeds": 3, "resamples": 200},
}
#: ``calibrate --quick`` for a network: one synchronous and two asynchronous pipelines at 2 steps,
#: 2 seeds, 1600 samples a point, 20 resamples: seconds
NETWORK_CALIBRATION_QUICK = {
    "digits-resmlp": {
        "sync": ((4, 4, 4),), "async": ((2, 1, 4), (8, 1, 4)),
        "steps": {"sync": (0.0125, 0.05), "async": (0.003125, 0.0125)},
        "samples": 1600, "seeds": 2, "resamples": 20},
    "digits-mlp": {
        "sync": ((4, 4, 4),), "async": ((2, 1, 4), (8, 1, 4)),
        "steps": {"sync": (0.025, 0.05), "async": (0.01, 0.02)},
        "samples": 1600, "seeds": 2, "resamples": 20},
}


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
