"""Top-level sweep functions for tests/test_sweep.py (imported by worker processes by name)."""

from __future__ import annotations

import os
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

__all__ = ["blas_threads", "die_once", "failing", "logged", "noisy_mean", "simulate_point"]


def noisy_mean(point: dict) -> dict:
    """Mean and spread of ``n`` normal draws from the point's seed, plus the draws themselves."""
    rng = np.random.default_rng(np.random.SeedSequence(point["seed"]))
    draws = point["scale"] * rng.standard_normal(point["n"])
    return {
        "seed": point["seed"],
        "mean": float(draws.mean()),
        "std": np.float64(draws.std(ddof=1)),
        "draws": draws,
        "counts": np.histogram(draws, bins=4)[0],
        "summary": (int(point["n"]), "ok"),
    }


def logged(point: dict) -> dict:
    """:func:`noisy_mean` after ``point["sleep"]`` seconds; leaves one file per call in ``log``."""
    time.sleep(point["sleep"])
    log = Path(point["log"])
    (log / f"{point['seed']}-{os.getpid()}-{time.monotonic_ns()}").touch()
    return noisy_mean(point)


def failing(point: dict) -> dict:
    """:func:`noisy_mean`, except that the point with ``seed == point["bad"]`` raises."""
    if point["seed"] == point["bad"]:
        raise ValueError(f"seed {point['seed']} is bad")
    return noisy_mean(point)


def die_once(point: dict) -> dict:
    """:func:`logged`, except that the ``bad`` point kills its worker the first time it runs."""
    marker = Path(point["log"]) / "died"
    if point["seed"] == point["bad"] and not marker.exists():
        marker.touch()
        os._exit(1)
    return logged(point)


def blas_threads(point: dict) -> dict:
    """The worker's BLAS/OpenMP thread counts (threadpoolctl) and thread environment variables."""
    from threadpoolctl import threadpool_info

    return {
        "pools": {info["internal_api"]: info["num_threads"] for info in threadpool_info()},
        "env": {var: os.environ.get(var) for var in point["vars"]},
    }


def simulate_point(point: dict) -> dict:
    """:func:`simulate.engine.run` of ``SimConfig(**point["config"])`` with ``point["seed"]``."""
    from simulate import SimConfig, run

    return asdict(run(SimConfig(**point["config"]), point["seed"]))
