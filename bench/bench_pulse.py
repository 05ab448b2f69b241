"""Benchmark of the pulse-level update (issue 13, item 4); every number is a ratio or a rate
measured in this same run.

Run from the repository root: ``python bench/bench_pulse.py [--samples N] [--repeats R]``.

The digits MLP (16 layers of width 32, tanh), no pipeline, one thread (the script sets the BLAS
and OpenMP thread counts to 1 before numpy is imported), trained at ``b = 32`` and ``b = 4``;
samples per second of

- plain numpy digital SGD, written minimally below (the baseline);
- the package's digital SGD, expected analog update, and pulse-level update with the
  ``deterministic`` and the ``stochastic`` pulse types (soft bounds, tau = 1, dw_min = 0.001),
  closed-form pulses (the default) and the pulse loop;
- a 16-seed ensemble in one vectorised run against 16 sequential runs of its members (expected
  and stochastic pulses, ``b = 32`` and ``b = 4``; each run logged at its first and last update).

Targets of the issue: stochastic pulses >= 0.5x the expected update, the expected update >= 0.9x
plain numpy SGD, the 16-seed ensemble >= 4x the 16 sequential runs. No timing is asserted: each
number is the minimum over a few interleaved repeats (the machine may be shared).
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import sys  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_simulate import best_times  # noqa: E402
from simulate.config import SimConfig  # noqa: E402
from simulate.digits import load_digits_split  # noqa: E402
from simulate.networks import NetworkSpec, train_network  # noqa: E402

SPEC = NetworkSpec(grad_norm=False)


def plain_sgd(steps: int, batch: int, lr: float = 0.05, seed: int = 0) -> None:
    """Minimal numpy SGD of the 16 x 32 tanh digits MLP (weights clipped to +-0.5 at the start,
    as the package's initialisation); like a run logged at its first and last update only, it
    computes the training loss and the test accuracy before and after training."""
    data = load_digits_split()
    rng = np.random.default_rng(seed)
    sizes = [64] + [32] * 15 + [10]
    ws = [np.clip(rng.standard_normal((i, o)) / np.sqrt(i), -0.5, 0.5)
          for i, o in zip(sizes[:-1], sizes[1:], strict=True)]
    cs = [np.zeros(o) for o in sizes[1:]]
    rows = np.arange(batch)

    def measure():
        out = []
        for x in (data.x_train, data.x_test):
            h = x
            for w, c in zip(ws[:-1], cs[:-1], strict=True):
                h = np.tanh(h @ w + c)
            out.append(h @ ws[-1] + cs[-1])
        z = out[0] - out[0].max(axis=1, keepdims=True)
        loss = np.mean(np.log(np.exp(z).sum(axis=1)) - z[np.arange(len(z)), data.y_train])
        return loss, np.mean(np.argmax(out[1], axis=1) == data.y_test)

    measure()
    for _ in range(steps):
        idx = rng.integers(0, len(data.y_train), batch)
        hs = [data.x_train[idx]]
        for w, c in zip(ws[:-1], cs[:-1], strict=True):
            hs.append(np.tanh(hs[-1] @ w + c))
        z = hs[-1] @ ws[-1] + cs[-1]
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        p[rows, data.y_train[idx]] -= 1.0
        delta = p / batch
        for layer in range(15, -1, -1):
            gw, gc = hs[layer].T @ delta, delta.sum(axis=0)
            if layer > 0:
                delta = (delta @ ws[layer].T) * (1.0 - hs[layer] ** 2)
            ws[layer] -= lr * gw
            cs[layer] -= lr * gc
    measure()


def rates(samples: int, batch: int, repeats: int) -> None:
    steps = max(1, samples // batch)
    base = SimConfig(problem="digits-mlp", device="softbounds", tau=1.0, lr=0.05,
                     micro_batch_size=batch, steps=steps, log_every=steps)
    cases = {
        "plain numpy SGD (baseline)": lambda: plain_sgd(steps, batch),
        "package digital": replace(base, algorithm="digital"),
        "package expected": base,
        "pulsed deterministic": replace(base, update="pulsed", pulse_type="deterministic"),
        "pulsed stochastic": replace(base, update="pulsed", pulse_type="stochastic"),
    }
    if "pulse_method" in SimConfig.__dataclass_fields__:  # (absent before the closed form)
        cases["pulsed stochastic, loop"] = replace(base, update="pulsed",
                                                   pulse_type="stochastic", pulse_method="loop")
    functions = {name: case if callable(case) else
                 (lambda case=case: train_network(case, spec=SPEC)) for name, case in cases.items()}
    train_network(replace(base, steps=3, log_every=3), spec=SPEC)  # warm caches
    times = best_times(functions, repeats)
    print(f"digits MLP, b = {batch}, {steps} updates ({steps * batch} samples), "
          f"min of {repeats}")
    for name, seconds in times.items():
        print(f"    {name:30s} {steps * batch / seconds:9.0f} samples/s   "
              f"{times['plain numpy SGD (baseline)'] / seconds:5.2f}x baseline   "
              f"{times['package expected'] / seconds:5.2f}x expected")


def ensemble(steps: int, batch: int, repeats: int, seeds: int = 16) -> None:
    print(f"{seeds}-seed ensemble vs {seeds} sequential runs, b = {batch}, {steps} updates, "
          f"min of {repeats}")
    for update, pulse_type in (("expected", "deterministic"), ("pulsed", "stochastic")):
        config = SimConfig(problem="digits-mlp", device="softbounds", tau=1.0, lr=0.05,
                           micro_batch_size=batch, steps=steps, log_every=steps, seeds=seeds,
                           update=update, pulse_type=pulse_type)
        times = best_times({
            "ensemble": lambda config=config: train_network(config, spec=SPEC),
            "sequential": lambda config=config: [train_network(config, spec=SPEC, members=[r])
                                                 for r in range(seeds)],
        }, repeats)
        name = update if update == "expected" else f"pulsed {pulse_type}"
        ratio = times["sequential"] / times["ensemble"]
        print(f"    {name:22s} ensemble {times['ensemble']:7.3f} s, sequential "
              f"{times['sequential']:7.3f} s, speedup {ratio:5.2f}x")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=16384, help="samples per timed run")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved repeats (min taken)")
    parser.add_argument("--ensemble-steps", type=int, default=256,
                        help="updates of each ensemble / sequential run")
    args = parser.parse_args(argv)
    for batch in (32, 4):
        rates(args.samples if batch == 32 else args.samples // 4, batch, args.repeats)
    for batch in (32, 4):
        ensemble(args.ensemble_steps, batch, args.repeats)


if __name__ == "__main__":
    main()
