"""Benchmark of the compiled per-sample pulse-train writes (:mod:`simulate.device.sample_writes`,
issue 26 item 3).

Run from the repository root: ``python -m bench.per_sample_writes [--updates K] [--repeats R]
[--no-numpy-path] [--device NAME]``.

One thread (the script sets the BLAS and OpenMP thread counts before numpy is imported). For the
digits MLP (16 layers of width 32, tanh; soft bounds, tau = 1, lr = 0.05; ``K`` updates, 300 by
default, logged at the first and the last) at ``b = 32`` and ``b = 4``, samples per second of

- the expected update (batch-mean writes): the baseline of every ratio;
- pulsed ``stochastic`` per-sample writes through the compiled kernel (target >= 0.30x);
- the same through the numpy path (the kernel switched off), the speed before the kernel;
- pulsed ``mean-count`` per-sample writes (compiled; the numpy path's bits);
- pulsed ``stochastic`` batch-mean writes (a path the kernel does not touch).

``--device PRESET`` runs the same cases on a preset with its own range, e.g. one with
cycle-to-cycle noise and device-to-device spreads (which the kernel covers too).

Each number is the minimum over interleaved repeats, so a change of the machine's load affects
all cases alike. No timing is asserted; the numbers are ratios and rates of this same run.
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import sys  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
if __name__ == "__main__" and str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import simulate.problems.network_run as network_run  # noqa: E402
from bench.bench_simulate import best_times  # noqa: E402
from simulate import NetworkSpec, SimConfig, train_network  # noqa: E402

SPEC = NetworkSpec(grad_norm=False)

#: the target of issue 26 item 3 (samples per second relative to the expected update)
TARGET = 0.30


def _numpy_path(config):
    """A run with the compiled per-sample writes switched off (the numpy path)."""
    original = network_run.SampleWrites.of
    network_run.SampleWrites.of = lambda *args, **kwargs: None
    try:
        return train_network(config, spec=SPEC)
    finally:
        network_run.SampleWrites.of = original


def cases(batch: int, updates: int, numpy_path: bool, device: str = "softbounds"
          ) -> dict[str, object]:
    """The timed runs at micro-batch ``batch`` (name -> zero-argument function) on ``device``
    (soft bounds with tau = 1, or a preset with its own range, noise and spreads)."""
    base = SimConfig(problem="digits-mlp", device=device,
                     tau=1.0 if device == "softbounds" else None, lr=0.05,
                     micro_batch_size=batch, steps=updates, log_every=updates)
    stochastic = replace(base, update="pulsed", pulse_type="stochastic")
    configs = {
        "expected": base,
        "per-sample stochastic": replace(stochastic, write="per-sample"),
        "per-sample mean-count": replace(stochastic, pulse_type="mean-count",
                                         write="per-sample"),
        "batch-mean stochastic": stochastic,
    }
    functions = {name: (lambda c=c: train_network(c, spec=SPEC)) for name, c in configs.items()}
    if numpy_path:
        slow = configs["per-sample stochastic"]
        functions["per-sample stochastic, numpy path"] = lambda: _numpy_path(slow)
    for name in functions:  # warm caches (and compile or load the kernels)
        config = configs.get(name, configs["per-sample stochastic"])
        short = replace(config, steps=3, log_every=3)
        (_numpy_path(short) if "numpy" in name else train_network(short, spec=SPEC))
    return functions


def rates(batch: int, updates: int, repeats: int, numpy_path: bool = True,
          device: str = "softbounds") -> dict[str, float]:
    """Samples per second of each case at micro-batch ``batch`` (min over ``repeats``)."""
    times = best_times(cases(batch, updates, numpy_path, device), repeats)
    return {name: updates * batch / seconds for name, seconds in times.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--updates", type=int, default=300, help="updates per timed run")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved repeats (min taken)")
    parser.add_argument("--no-numpy-path", action="store_true",
                        help="skip the (slow) numpy path of the per-sample writes")
    parser.add_argument("--device", default="softbounds",
                        help="softbounds (tau = 1, noise-free; the default) or a preset, e.g. "
                             "ecram-linearstep (cycle-to-cycle noise and spreads)")
    args = parser.parse_args(argv)
    ratios = {}
    for batch in (32, 4):
        rate = rates(batch, args.updates, args.repeats, not args.no_numpy_path, args.device)
        print(f"digits MLP, {args.device}, b = {batch}, {args.updates} updates, "
              f"min of {args.repeats}")
        for name, value in rate.items():
            print(f"    {name:34s} {value:9.0f} samples/s   {value / rate['expected']:6.3f}x "
                  "expected")
        ratios[batch] = rate["per-sample stochastic"] / rate["expected"]
    print("per-sample stochastic / expected: " + ", ".join(
        f"b = {b}: {r:.3f} ({'meets' if r >= TARGET else 'below'} {TARGET:.2f})"
        for b, r in ratios.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
