"""Benchmark of the pulse-level update (issue 13, item 4); every number is a ratio or a rate
measured in this same run.

Run from the repository root: ``python -m bench.bench_pulse [--samples N] [--repeats R]``.

The digits MLP (16 layers of width 32, tanh), no pipeline, one thread (the script sets the BLAS
and OpenMP thread counts to 1 before numpy is imported), trained at ``b = 32`` and ``b = 4``;
samples per second of

- plain numpy digital SGD, written minimally below (the baseline);
- the package's digital SGD, expected analog update, and pulse-level update with the
  ``deterministic`` and the ``stochastic`` pulse types (soft bounds, tau = 1, dw_min = 0.001),
  closed-form pulses (the default) and the pulse loop;
- a 16-seed ensemble in one vectorised run against 16 sequential runs of its members (expected
  and stochastic pulses, ``b = 32`` and ``b = 4``; each run logged at its first and last update),
  and a longer expected-update run (``--long-steps``, default 1,024 updates) on its own line.

First, a decomposition of one expected-update step alone (R = 1) and in the 16-member ensemble:
the time in the matmuls, the tanh, the other element-wise work and the update (each timed alone
with the network's real shapes), the rest (Python overhead, allocations, small numpy calls), the
fixed cost of a run (set-up and its two measurements), and the ensemble ratio these imply if
only the unavoidable work remained (``--decompose-only`` prints only this part).

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
from simulate import (  # noqa: E402
    NetworkSpec,
    SimConfig,
    Updater,
    device_from_config,
    load_digits_split,
    train_network,
)
from simulate.device import add_bias, dense_backward, expected_step_ratio, softmax_delta  # noqa: E402

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


def ensemble(steps: int, batch: int, repeats: int, seeds: int = 16, long_steps: int = 0) -> None:
    """The ``seeds``-member ensemble against ``seeds`` sequential runs of ``steps`` updates
    (expected update and stochastic pulses), and with ``long_steps`` a longer run of the
    expected update, labelled as such (the same protocol otherwise: logged at its first and
    last update)."""
    print(f"{seeds}-seed ensemble vs {seeds} sequential runs, b = {batch}, {steps} updates, "
          f"min of {repeats}")
    cases = [("expected", "deterministic", steps), ("pulsed", "stochastic", steps)]
    if long_steps:
        cases.append(("expected", "deterministic", long_steps))
    for update, pulse_type, count in cases:
        config = SimConfig(problem="digits-mlp", device="softbounds", tau=1.0, lr=0.05,
                           micro_batch_size=batch, steps=count, log_every=count, seeds=seeds,
                           update=update, pulse_type=pulse_type)
        times = best_times({
            "ensemble": lambda config=config: train_network(config, spec=SPEC),
            "sequential": lambda config=config: [train_network(config, spec=SPEC, members=[r])
                                                 for r in range(seeds)],
        }, repeats)
        name = update if update == "expected" else f"pulsed {pulse_type}"
        if count != steps:
            name = f"{name}, {count} updates"
        ratio = times["sequential"] / times["ensemble"]
        print(f"    {name:22s} ensemble {times['ensemble']:7.3f} s, sequential "
              f"{times['sequential']:7.3f} s, speedup {ratio:5.2f}x")


def _components(batch: int, members: int, reps: int) -> dict[str, float]:
    """Seconds per training step of the unavoidable numpy work of one expected-update step of
    ``members`` runs at once, each part timed alone with the network's real shapes: the
    (stacked) matmuls, the tanh, the other element-wise work of the forward and backward (bias
    add, the fused ``(1 - a^2) delta`` and bias sums, the softmax gradient) and the update
    (the fused expected update with soft bounds' ``G(w) = w / tau`` inside the pass, the
    extremes), each by the kernel the network uses."""
    data = load_digits_split()
    sizes = [data.x_train.shape[1]] + [SPEC.width] * (SPEC.layers - 1) + [10]
    rng = np.random.default_rng(0)
    shapes = list(zip(sizes[:-1], sizes[1:], strict=True))
    ws = [rng.uniform(-0.3, 0.3, (members, i, o)) for i, o in shapes]
    cs = [np.zeros((members, 1, o)) for _, o in shapes]
    hs = [rng.uniform(-0.9, 0.9, (members, batch, i)) for i, _ in shapes]
    zs = [np.empty((members, batch, o)) for _, o in shapes]
    gws = [np.empty((members, i, o)) for i, o in shapes]
    backs = [np.empty((members, batch, i)) for i, _ in shapes]
    gcs = [np.empty((members, 1, o)) for _, o in shapes]
    dzs = [np.empty_like(z) for z in zs]
    y = rng.integers(0, 10, (members, batch))
    device = device_from_config(SimConfig(problem="digits-mlp", device="softbounds", tau=1.0))
    w = rng.uniform(-0.5, 0.5, (members, sum(i * o for i, o in shapes)))
    gw = 1e-9 * rng.standard_normal(w.shape)
    w_min, w_max = w.min(axis=1), w.max(axis=1)

    def matmuls():
        for layer in range(len(shapes)):
            np.matmul(hs[layer], ws[layer], out=zs[layer])
            np.matmul(hs[layer].swapaxes(-1, -2), zs[layer], out=gws[layer])
            if layer:
                np.matmul(zs[layer], ws[layer].swapaxes(-1, -2), out=backs[layer])

    def tanh():
        for z in zs[:-1]:
            np.tanh(z, out=z)

    def elementwise():
        for z, c in zip(zs, cs, strict=True):
            add_bias(z, c)
        for layer in range(len(shapes) - 1):
            dense_backward(zs[layer], zs[layer], dzs[layer], gcs[layer], True)
        logits = zs[-1]
        exp = np.exp(logits - logits.max(axis=-1, keepdims=True))
        softmax_delta(exp, exp.sum(axis=-1, keepdims=True), y, batch)
        zs[-1].sum(axis=-2, keepdims=True, out=gcs[-1])

    def update():
        expected_step_ratio(w, gw, 1.0, -1e-9, 1.0, device.w_min, device.w_max, w_min, w_max)

    parts = {"matmuls": matmuls, "tanh": tanh, "other element-wise": elementwise,
             "update": update}
    for fn in parts.values():
        fn()
    times = best_times({name: lambda fn=fn: [fn() for _ in range(reps)]
                        for name, fn in parts.items()}, 5)
    return {name: seconds / reps for name, seconds in times.items()}


def _pulsed_update_time(batch: int, members: int, repeats: int) -> float:
    """Seconds of one stochastic-pulse update of the digits MLP's weights for ``members`` runs
    (the desired increments of a typical step: ``lr`` times gradients of size 0.01)."""
    config = SimConfig(problem="digits-mlp", device="softbounds", tau=1.0, lr=0.05,
                       micro_batch_size=batch, update="pulsed", pulse_type="stochastic")
    update = Updater.from_config(config)
    rng = np.random.default_rng(0)
    n_weights = sum(i * o for i, o in zip([64] + [SPEC.width] * (SPEC.layers - 1),
                                          [SPEC.width] * (SPEC.layers - 1) + [10], strict=True))
    w = rng.uniform(-0.5, 0.5, (members, n_weights))
    dw = -config.lr * 0.01 * rng.standard_normal(w.shape)
    rngs = [np.random.default_rng(r) for r in range(members)]
    reps = max(3, 64 // members)
    times = best_times({"update": lambda: [update(w, dw, rngs) for _ in range(reps)]}, repeats)
    return times["update"] / reps


def decomposition(batch: int, steps: int, repeats: int, seeds: int = 16) -> None:
    """Where the time of one expected-update step goes, alone (R = 1) and in a ``seeds``-member
    ensemble, and the ensemble speedup that the unavoidable work allows.

    A run of ``steps`` updates takes ``fixed + steps * step``: ``fixed`` (set-up and the two
    measurements of the training loss and test accuracy, the same work alone and in the
    ensemble) is timed as a run of one update, ``step`` from a run of ``steps``. The step is
    split into the parts of :func:`_components` (timed alone) and the rest, Python overhead. The
    ideal ensemble is the measured one without that overhead."""
    base = SimConfig(problem="digits-mlp", device="softbounds", tau=1.0, lr=0.05,
                     micro_batch_size=batch, steps=steps, log_every=steps)
    runs = {}
    for members in (1, seeds):
        for count in (1, steps):
            config = replace(base, steps=count, log_every=count, seeds=members)
            runs[members, count] = lambda config=config: train_network(config, spec=SPEC)
    train_network(replace(base, steps=2, log_every=2), spec=SPEC)
    times = best_times(runs, repeats)
    print(f"decomposition of one expected-update step, b = {batch}, R = 1 and {seeds} members "
          f"(microseconds per step; min of {repeats})")
    rows = {}
    for members in (1, seeds):
        step = (times[members, steps] - times[members, 1]) / (steps - 1)
        fixed = times[members, 1] - step
        parts = _components(batch, members, max(20, 2000 // members))
        rows[members] = step, fixed, sum(parts.values())
        cells = "  ".join(f"{name} {1e6 * t:6.0f}" for name, t in parts.items())
        print(f"    R = {members:2d}: step {1e6 * step:6.0f} = {cells}  overhead "
              f"{1e6 * (step - rows[members][2]):6.0f};  fixed (set-up, 2 measurements) "
              f"{1e3 * fixed:5.1f} ms")
    (step1, fixed1, work1), (step_r, fixed_r, work_r) = rows[1], rows[seeds]
    sequential = seeds * (steps * step1 + fixed1)
    measured = steps * step_r + fixed_r
    ideal = steps * work_r + fixed_r
    print(f"    {seeds} runs of {steps} updates: sequential {sequential:5.3f} s, ensemble "
          f"{measured:5.3f} s ({sequential / measured:4.2f}x); ensemble without overhead "
          f"{ideal:5.3f} s: ideal ratio {sequential / ideal:4.2f}x; no ensemble can beat "
          f"{sequential / (seeds * fixed1):4.1f}x (the measurements alone)")
    need = (sequential / 4 - fixed_r) / steps
    print(f"    4x at {steps} updates needs an ensemble step <= {1e6 * need:5.0f} us (its work "
          f"alone: {1e6 * work_r:5.0f} us; the {seeds} members' set-up and measurements "
          f"{1e3 * fixed_r:5.1f} ms of the {1e3 * sequential / 4:5.1f} ms allowed); at "
          f"{4 * steps} updates the same step and fixed costs give "
          f"{seeds * (4 * steps * step1 + fixed1) / (4 * steps * step_r + fixed_r):4.2f}x")
    print(f"    training step alone: {seeds * step1 / step_r:4.2f}x measured, "
          f"{seeds * step1 / work_r:4.2f}x ideal ({seeds} x {1e6 * step1:4.0f} us vs "
          f"{1e6 * work_r:4.0f} us of work), {seeds * work1 / work_r:4.2f}x if the sequential "
          f"runs had no overhead either")
    one, many = _pulsed_update_time(batch, 1, repeats), _pulsed_update_time(batch, seeds, repeats)
    print(f"    stochastic-pulse update alone: R = 1 {1e6 * one:6.0f} us, R = {seeds} "
          f"{1e6 * many:6.0f} us ({seeds * one / many:4.2f}x)")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=16384, help="samples per timed run")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved repeats (min taken)")
    parser.add_argument("--ensemble-steps", type=int, default=256,
                        help="updates of each ensemble / sequential run")
    parser.add_argument("--long-steps", type=int, default=1024,
                        help="updates of a longer expected-update ensemble run, printed as "
                             "its own line (0: none)")
    parser.add_argument("--decompose-only", action="store_true",
                        help="print only the decomposition of one step")
    args = parser.parse_args(argv)
    for batch in (32, 4):
        decomposition(batch, args.ensemble_steps, args.repeats)
    if args.decompose_only:
        return
    for batch in (32, 4):
        rates(args.samples if batch == 32 else args.samples // 4, batch, args.repeats)
    for batch in (32, 4):
        ensemble(args.ensemble_steps, batch, args.repeats, long_steps=args.long_steps)


if __name__ == "__main__":
    main()
