"""The result of a simulation run: per-logging-point arrays with a leading ensemble axis.

- :class:`Trace`: what a run measured, with the problem constants that held in it
  (:class:`RunConstants`, the checker's inputs);
- :func:`log_steps`: the updates at which a run records its trace.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import numpy as np

from theory.fileio import atomic_write, strict_json

__all__ = ["RunConstants", "Trace", "log_steps"]


def log_steps(steps: int, every: int) -> np.ndarray:
    """The logging points of a run of ``steps`` updates: ``0, every, 2 every, ...`` and ``steps``.

    Sorted, without repeats; the last update is always recorded.
    """
    return np.unique(np.append(np.arange(0, steps + 1, every), steps))


@dataclass(frozen=True)
class RunConstants:
    """The constants of the theory that held exactly in an oracle run (measured by the problem).

    Attributes
    ----------
    L : float
        Smoothness constant of the objective (gradient units per weight unit).
    Delta : float
        Initial suboptimality ``f(W_0) - f*`` (loss units).
    sigma2 : float
        Per-sample gradient-noise variance.
    f_star : float
        Minimum of the objective (loss units).
    dim : int
        Number of weights.
    samples_per_update : int
        Samples one update consumes (``b`` for async, ``B b`` otherwise).
    beta : float
        Norm of the bias added to the gradient signal (``SimConfig.grad_bias``; 0: unbiased).
    """

    L: float  # noqa: N815 - the theory's symbol
    Delta: float  # noqa: N815 - the theory's symbol
    sigma2: float
    f_star: float
    dim: int
    samples_per_update: int
    beta: float = 0.0

    def to_dict(self) -> dict:
        """The constants by name (the ``config["constants"]`` of the trace's JSON)."""
        return asdict(self)


@dataclass(frozen=True)
class Trace:
    """Per-logging-point measurements of ``R`` independent runs (one row per seed).

    Attributes
    ----------
    step : ndarray, shape (T,)
        Iteration (update) index of each logging point, starting at 0 (the initial weights).
    samples : ndarray, shape (T,)
        Training samples consumed before that point.
    cycles : ndarray, shape (T,)
        Clock cycles elapsed (per the schedule of the run's mode) before that point.
    loss : ndarray, shape (R, T)
        Training objective at the current weights.
    grad_norm2 : ndarray, shape (R, T)
        Squared norm of the full objective's gradient at the current weights (``nan`` where not
        computed).
    test_accuracy : ndarray, shape (R, T)
        Test accuracy for networks (fraction in [0, 1]); ``nan`` for oracle problems.
    max_abs_w : ndarray, shape (R,)
        Largest ``|w|`` any weight reached during the run (the region A3 must hold on).
    w_min_visited, w_max_visited : ndarray, shape (R,)
        Smallest / largest weight value visited (for asymmetric devices).
    config : dict
        The run's configuration (JSON-serialisable), with the seed, the members computed and, for
        networks, the architecture (``"network"``).
    avg_grad_norm2 : ndarray, shape (R,)
        Exact average of ``||grad f(W_k)||^2`` over **every** iterate ``k = 0..K-1`` (not only the
        logged ones), the left side of the theorems; empty where not computed.
    constants : RunConstants or None
        The problem constants of an oracle run (``None`` for networks). In JSON
        (:meth:`as_dict`, :meth:`write`) they appear as ``config["constants"]``.
    """

    step: np.ndarray
    samples: np.ndarray
    cycles: np.ndarray
    loss: np.ndarray
    grad_norm2: np.ndarray
    test_accuracy: np.ndarray
    max_abs_w: np.ndarray
    w_min_visited: np.ndarray
    w_max_visited: np.ndarray
    config: dict = field(default_factory=dict)
    avg_grad_norm2: np.ndarray = field(default_factory=lambda: np.empty(0))
    constants: RunConstants | None = None

    @property
    def seeds(self) -> int:
        """Ensemble size ``R``."""
        return int(self.loss.shape[0])

    def mean(self, name: str) -> np.ndarray:
        """Ensemble mean of a per-point quantity, shape (T,)."""
        return np.mean(getattr(self, name), axis=0)

    def to_rows(self) -> list[dict]:
        """One dict per logging point with ensemble means and standard deviations."""
        rows = []
        for t in range(len(self.step)):
            row = {"step": int(self.step[t]), "samples": int(self.samples[t]),
                   "cycles": int(self.cycles[t])}
            for name in ("loss", "grad_norm2", "test_accuracy"):
                values = getattr(self, name)[:, t]
                row[f"{name}_mean"] = float(np.mean(values))
                row[f"{name}_std"] = float(np.std(values, ddof=1)) if self.seeds > 1 else 0.0
            rows.append(row)
        return rows

    def json_config(self) -> dict:
        """``config`` with the constants as ``config["constants"]`` (the JSON layout)."""
        if self.constants is None:
            return dict(self.config)
        return {**self.config, "constants": self.constants.to_dict()}

    def write(self, out_dir: str | Path, stem: str = "trace") -> tuple[Path, Path]:
        """Write ``stem.csv`` (rows of :meth:`to_rows`) and ``stem.json`` (config, summary).

        Both are written atomically (:func:`theory.fileio.atomic_write`).
        """
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        rows = self.to_rows()
        csv_path, json_path = out / f"{stem}.csv", out / f"{stem}.json"
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
        atomic_write(csv_path, text.getvalue().encode())
        summary = {
            "config": self.json_config(),
            "max_abs_w": self.max_abs_w.tolist(),
            "w_min_visited": self.w_min_visited.tolist(),
            "w_max_visited": self.w_max_visited.tolist(),
            "avg_grad_norm2": self.avg_grad_norm2.tolist(),
            "final": rows[-1],
        }
        text = json.dumps(strict_json(summary), indent=2, allow_nan=False)
        atomic_write(json_path, text.encode())
        return csv_path, json_path

    def as_dict(self) -> dict:
        """Every array as a list, and ``config`` as :meth:`json_config`, for JSON."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "constants"}
        out["config"] = self.json_config()
        return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in out.items()}
