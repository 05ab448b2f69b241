"""float32 against float64 oracle runs (``SimConfig.dtype``), ratios in one process.

Run from the repository root: ``python -m bench.oracle_dtype [--repeats N] [--steps K]``.

Each row is a default-ish oracle ``simulate`` (the quadratic, ``M = 4`` asynchronous stages,
``b = 4``, soft bounds ``tau = 1``, ``lr = 0.05``, 16 seeds in one ensemble) at a dimension
``d``, with one update kind; the time is the best of ``N`` runs of :func:`simulate.run` (after
one warm-up run per dtype, so the numba compilation is not timed), and the ratio is float64 time
over float32 time (above 1: float32 faster). The first-call times (the warm-up runs) are printed
too: the first float32 pulsed run compiles the kernels' float32 specialisations (cached on disk
afterwards, ``numba.njit(cache=True)``). Nothing is asserted.
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
if __name__ == "__main__" and str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from simulate import SimConfig, run  # noqa: E402
from theory import text_table  # noqa: E402

#: (dimension d, update kind) of the rows
ROWS = ((16, "digital"), (16, "expected"), (16, "pulsed"), (256, "expected"), (256, "pulsed"),
        (1024, "expected"), (1024, "pulsed"))


def config(dim: int, kind: str, steps: int) -> SimConfig:
    """The float64 run of a row (module docstring)."""
    kind_kw = {"algorithm": "digital"} if kind == "digital" else {"update": kind}
    return SimConfig(problem="quadratic", mode="async", stages=4, micro_batch_size=4,
                     device="softbounds", tau=1.0, lr=0.05, steps=steps, seeds=16, dim=dim,
                     **kind_kw)


def best_of(cfg: SimConfig, repeats: int) -> float:
    """The least wall time of ``repeats`` runs of ``cfg`` (seconds)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run(cfg)
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per cell (best of)")
    parser.add_argument("--steps", type=int, default=400, help="updates per run")
    args = parser.parse_args(argv)
    rows = []
    for dim, kind in ROWS:
        double = config(dim, kind, args.steps)
        single = replace(double, dtype="float32")
        first = []
        for cfg in (double, single):
            start = time.perf_counter()
            run(cfg)  # warm-up (the first call compiles)
            first.append(time.perf_counter() - start)
        t64, t32 = best_of(double, args.repeats), best_of(single, args.repeats)
        rows.append([dim, kind, f"{first[0]:.3f}", f"{first[1]:.3f}", f"{t64:.3f}",
                     f"{t32:.3f}", f"{t64 / t32:.2f}"])
    print(f"quadratic, async M=4, b=4, softbounds tau=1, lr=0.05, 16 seeds, {args.steps} "
          f"updates, best of {args.repeats}")
    print(text_table(["d", "update", "first f64 s", "first f32 s", "float64 s", "float32 s",
                      "f64/f32"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
