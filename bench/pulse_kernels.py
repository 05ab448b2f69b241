"""Focused benchmark of the compiled pulse update (:mod:`simulate.device.pulse_kernels`, issue 13
item 4).

Run from the repository root: ``python -m bench.pulse_kernels [--samples N] [--repeats R]``.

One thread (the script sets the BLAS and OpenMP thread counts before numpy is imported). Prints

- samples per second of the digits MLP (16 layers of width 32, tanh; soft bounds, tau = 1,
  lr = 0.05, batch-mean writes) with the expected update and with the pulse-level update
  (``stochastic`` and ``deterministic`` pulse types, closed form), at ``b = 32`` and ``b = 4``,
  and the ratio of each pulse type to the expected update (target: stochastic >= 0.5x). Each
  number is the minimum over interleaved repeats, so a change of the machine's load affects
  all cases alike;
- the time of the first call of the kernels in a fresh process with an empty numba cache (the
  JIT compilation) and with the cache this first process wrote (loading the compiled code).

No timing is asserted anywhere; the numbers are ratios and rates of this same run.
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_simulate import best_times  # noqa: E402
from simulate import NetworkSpec, SimConfig, train_network  # noqa: E402

SPEC = NetworkSpec(grad_norm=False)

#: run in a fresh interpreter: the seconds of the first pulse-level updates (kernels compiled or
#: loaded from the numba cache), then of the same updates again (compiled code in memory)
_FIRST_CALL = """
import time
import numpy as np
from simulate.device import pulsed_update
from theory.devices import make_device
device = make_device("softbounds", tau=1.0, dw_min=0.001)
w = np.zeros((1, 1000))
dw = np.random.default_rng(0).normal(0.0, 0.002, (1, 1000))
seconds = []
for _ in range(2):
    start = time.perf_counter()
    for pulse_type in ("stochastic", "deterministic"):
        pulsed_update(w, dw, device, [np.random.default_rng(1)], pulse_type=pulse_type)
    seconds.append(time.perf_counter() - start)
print(seconds[0], seconds[1])
"""


def rates(samples: int, batch: int, repeats: int) -> dict[str, float]:
    """Samples per second of each case at micro-batch ``batch`` (min over ``repeats``)."""
    steps = max(1, samples // batch)
    base = SimConfig(problem="digits-mlp", device="softbounds", tau=1.0, lr=0.05,
                     micro_batch_size=batch, steps=steps, log_every=steps)
    cases = {
        "expected": base,
        "pulsed stochastic": replace(base, update="pulsed", pulse_type="stochastic"),
        "pulsed deterministic": replace(base, update="pulsed", pulse_type="deterministic"),
    }
    functions = {name: (lambda case=case: train_network(case, spec=SPEC))
                 for name, case in cases.items()}
    for case in cases.values():  # warm caches (and compile or load the kernels)
        train_network(replace(case, steps=3, log_every=3), spec=SPEC)
    times = best_times(functions, repeats)
    return {name: steps * batch / seconds for name, seconds in times.items()}


def first_call(cache_dir: str) -> float:
    """Seconds of the first pulse-level updates of a fresh process whose numba cache is
    ``cache_dir`` (compilation when empty, loading otherwise), less those of the same updates
    repeated (the work itself)."""
    environment = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    out = subprocess.run([sys.executable, "-c", _FIRST_CALL], cwd=ROOT, env=environment,
                         check=True, capture_output=True, text=True).stdout.split()
    return float(out[0]) - float(out[1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=16384, help="samples per timed run at "
                        "b = 32 (a quarter at b = 4)")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved repeats (min taken)")
    parser.add_argument("--no-jit", action="store_true", help="skip the compile-time part")
    parser.add_argument("--no-rates", action="store_true", help="skip the training rates")
    args = parser.parse_args(argv)
    for batch in () if args.no_rates else (32, 4):
        samples = args.samples if batch == 32 else args.samples // 4
        rate = rates(samples, batch, args.repeats)
        print(f"digits MLP, b = {batch}, {samples} samples, min of {args.repeats}")
        for name, value in rate.items():
            print(f"    {name:22s} {value:9.0f} samples/s   {value / rate['expected']:5.2f}x "
                  "expected")
    if args.no_jit:
        return
    with tempfile.TemporaryDirectory() as cache:
        cold = first_call(cache)
        warm = first_call(cache)
    print(f"first pulse-level updates of a fresh process: {cold:.2f} s with an empty numba "
          f"cache (compilation), {warm:.2f} s with the cache (loading)")


if __name__ == "__main__":
    main()
