"""How long each paper figure takes in its quick form, as a ratio to a reference run.

Run from the repository root: ``python -m bench.bench_figures``.

Each figure's ``compute(quick=True)`` runs once without the cache (jobs = 1, so the numbers do not
depend on the pool), and its wall-clock time is printed as seconds and as a ratio to a reference
measured in the same process: one quick digits-MLP training run of 2,000 samples (the unit of work
the simulated figures are made of). Nothing is asserted; the machine may be shared.
"""

from __future__ import annotations

import time

from paper_figures.registry import FIGURES, load_figure
from simulate import SimConfig, run

REFERENCE = SimConfig(problem="digits-mlp", mode="none", algorithm="analog", stages=4,
                      micro_batches=1, micro_batch_size=16, steps=125, lr=0.05, seeds=1)


def seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    run(REFERENCE, 0)  # warm the data and compile caches
    reference = min(seconds(lambda: run(REFERENCE, 0)) for _ in range(3))
    print(f"reference: digits-mlp, 2,000 samples, analog, no pipeline: {reference:.3f} s")
    total = 0.0
    for name in FIGURES:
        module = load_figure(name)
        options = {"jobs": 1, "cache": False} if module.USES_SWEEP else {}
        took = seconds(lambda module=module, options=options: module.compute(True, **options))
        total += took
        print(f"{name:<14} {took:8.2f} s  {took / reference:8.1f} x reference")
    print(f"{'all --quick':<14} {total:8.2f} s  {total / reference:8.1f} x reference")


if __name__ == "__main__":
    main()
