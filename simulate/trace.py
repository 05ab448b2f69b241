"""The result of a simulation run: per-logging-point arrays with a leading ensemble axis."""

from __future__ import annotations

import csv
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["Trace", "strict_json"]

#: the per-point arrays of a Trace, in CSV column order
COLUMNS = (
    "step", "samples", "cycles", "loss", "grad_norm2", "test_accuracy", "max_abs_w",
)


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
        The run's configuration (JSON-serialisable), including the seed.
    avg_grad_norm2 : ndarray, shape (R,)
        Exact average of ``||grad f(W_k)||^2`` over **every** iterate ``k = 0..K-1`` (not only the
        logged ones), the left side of the theorems; empty where not computed.
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

    def write(self, out_dir: str | Path, stem: str = "trace") -> tuple[Path, Path]:
        """Write ``stem.csv`` (rows of :meth:`to_rows`) and ``stem.json`` (config, summary)."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        rows = self.to_rows()
        csv_path, json_path = out / f"{stem}.csv", out / f"{stem}.json"
        with csv_path.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        summary = {
            "config": self.config,
            "max_abs_w": self.max_abs_w.tolist(),
            "w_min_visited": self.w_min_visited.tolist(),
            "w_max_visited": self.w_max_visited.tolist(),
            "avg_grad_norm2": self.avg_grad_norm2.tolist(),
            "final": rows[-1],
        }
        json_path.write_text(json.dumps(strict_json(summary), indent=2, allow_nan=False))
        return csv_path, json_path

    def as_dict(self) -> dict:
        """Every field as plain Python (lists), for JSON."""
        items = asdict(self).items()
        return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in items}


def strict_json(value):
    """``value`` with numpy scalars and arrays as Python objects and non-finite floats as ``None``.

    NaN marks a quantity that was not computed (e.g. the test accuracy of an oracle problem);
    ``null`` keeps the output strict JSON, which every parser reads.
    """
    if isinstance(value, dict):
        return {k: strict_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strict_json(v) for v in value]
    if isinstance(value, np.ndarray):
        return strict_json(value.tolist())
    if isinstance(value, np.generic):
        return strict_json(value.item())
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value
