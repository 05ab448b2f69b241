"""Synthetic calibrations that are complete files (theory.calibration_file), for the tests."""

from __future__ import annotations

import numpy as np

from theory.calibration import Calibration, ModeFit, problem_fingerprint

#: the constants of the synthetic problem
CONSTANTS = {"L": 1.0, "L_s": 1.0, "Delta": 0.1, "sigma2": 0.1, "theta": 0.5, "q_min": 0.8,
             "q_max": 1.2, "G_inf": 0.2, "start": 0.2}
#: the description of its runs (simulate.verification.CalibrationProblem's fields)
RUNS = {"problem": "quadratic", "dim": 16, "device": "softbounds", "tau": 1.0,
        "weight_bound": 0.6, "seed": 0, "algorithm": "analog", "update": "expected",
        "pulse_type": None, "write": "batch-mean"}


def complete_problem(**changes) -> dict:
    """A problem a calibration file may hold: :data:`RUNS` and :data:`CONSTANTS`, changed."""
    return {**RUNS, **CONSTANTS, **changes}


def consistent_fit(mode: str, values, draws=None, level: float = 0.95) -> ModeFit:
    """A fit whose interval is the one its draws give (the 95 % percentile interval, inverted
    CDF, widened to hold ``values``), as the calibration fit computes it."""
    draws = np.asarray([values] if draws is None else draws, dtype=float)
    tail = (1 - level) / 2
    low, high = np.quantile(draws, [tail, 1 - tail], axis=0, method="inverted_cdf")
    width = len(values)
    high = tuple(np.maximum(high, values))
    return ModeFit(mode=mode, values=tuple(values), low=tuple(np.minimum(low, values)),
                   high=high, draws=tuple(map(tuple, draws)), residual_rms=0.01,
                   observations=10, shares=(0.5,) * width, identified=(True,) * width,
                   profile_high=high)


def file_calibration(values: dict, problem: dict | None = None, draws: dict | None = None
                     ) -> Calibration:
    """A calibration of ``values`` (``{mode: coefficients}``) that reads back from its file."""
    problem = complete_problem() if problem is None else problem
    draws = draws or {}
    fits = {mode: consistent_fit(mode, v, draws.get(mode)) for mode, v in values.items()}
    design = tuple({"mode": mode, "M": 2, "B": 1, "b": 1, "lr": 0.1, "steps": 100, "seeds": 8}
                   for mode in values)
    resamples = max(1, *(len(f.draws) for f in fits.values()))
    return Calibration(fits=fits, problem=problem, fingerprint=problem_fingerprint(problem),
                       design=design, seeds={"root": 0, "R": [8], "resamples": resamples},
                       version="test")
