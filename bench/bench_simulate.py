"""Benchmarks of the simulator; every number is a ratio or rate measured in this same run.

Run from the repository root: ``python bench/bench_simulate.py [--quick] [--skip-accuracy]``.

(a) Asynchronous analog pipeline training of the digits MLP (16 layers of width 32, tanh, M = 4,
    expected soft-bounds update, micro-batches of 16) against plain numpy digital SGD of the same
    network without pipeline, written straightforwardly below (2-D arrays, a list of layers).
    Target: overhead at most 1.5x.
(b) An ensemble of 64 seeds in one vectorised run against 64 sequential runs (the quadratic
    through :func:`simulate.engine.run`, and the digits MLP).
(c) Samples per second for each problem.
(d) Test accuracy on the digits reached at equal samples by digital SGD, analog SGD (soft bounds),
    and analog SGD through the synchronous and asynchronous pipelines with 4 stages.

No timing is asserted: the machine may be shared, so each timing is the minimum of a few repeats.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np

from simulate import NetworkSpec, SimConfig, load_digits_split, run, train_network

SPEC = NetworkSpec(grad_norm=False)


def best_times(functions: dict, repeats: int, clock=time.perf_counter) -> dict[str, float]:
    """Minimum seconds of each function over ``repeats`` rounds by ``clock`` (wall-clock by
    default; ``time.process_time``: this process's CPU seconds); the rounds interleave the
    functions, so a change of the machine's load affects all of them alike."""
    times = {name: float("inf") for name in functions}
    for _ in range(repeats):
        for name, fn in functions.items():
            start = clock()
            fn()
            times[name] = min(times[name], clock() - start)
    return times


def plain_digital_sgd(steps: int, batch: int, lr: float, seed: int = 0, layers: int = 16,
                      width: int = 32) -> float:
    """Plain numpy mini-batch SGD of the digits MLP, no pipeline; returns the test accuracy.

    Like a run logged only at its first and last update, it measures the training loss and the
    test accuracy before and after training."""
    data = load_digits_split()
    x_all, y_all = data.x_train, data.y_train
    rng = np.random.default_rng(seed)
    sizes = [64] + [width] * (layers - 1) + [10]
    weights = [np.clip(rng.standard_normal((i, o)) / np.sqrt(i), -0.5, 0.5)
               for i, o in zip(sizes[:-1], sizes[1:], strict=True)]
    biases = [np.zeros(o) for o in sizes[1:]]
    rows = np.arange(batch)

    def forward(x):
        hs = [x]
        for w, c in zip(weights[:-1], biases[:-1], strict=True):
            hs.append(np.tanh(hs[-1] @ w + c))
        return hs, hs[-1] @ weights[-1] + biases[-1]

    def measure():  # the same work as a trace's logging point: training loss, test accuracy
        z = forward(data.x_train)[1]
        z = z - z.max(axis=1, keepdims=True)
        loss = np.mean(np.log(np.exp(z).sum(axis=1)) - z[np.arange(len(y_all)), y_all])
        return loss, np.mean(np.argmax(forward(data.x_test)[1], axis=1) == data.y_test)

    measure()
    for _ in range(steps):
        idx = rng.integers(0, len(y_all), batch)
        hs, z = forward(x_all[idx])
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        p[rows, y_all[idx]] -= 1.0
        delta = p / batch
        for layer in range(layers - 1, -1, -1):
            grad_w, grad_c = hs[layer].T @ delta, delta.sum(axis=0)
            if layer > 0:
                delta = (delta @ weights[layer].T) * (1.0 - hs[layer] ** 2)
            weights[layer] -= lr * grad_w
            biases[layer] -= lr * grad_c
    return float(measure()[1])


def bench_overhead(steps: int, repeats: int) -> None:
    print(f"(a) digits MLP, {steps} updates of 16 samples, min of {repeats} repeats")
    cfg = SimConfig(problem="digits-mlp", mode="async", stages=4, algorithm="analog",
                    device="softbounds", tau=1.0, update="expected", micro_batch_size=16,
                    lr=0.05, steps=steps, log_every=steps, seeds=1)
    train_network(replace(cfg, steps=10), spec=SPEC)  # warm caches (data, compiled device)
    times = best_times({
        "plain numpy digital SGD (baseline)": lambda: plain_digital_sgd(steps, 16, 0.05),
        "simulator, digital, no pipeline": lambda: train_network(
            replace(cfg, mode="none", stages=1, algorithm="digital"), spec=SPEC),
        "simulator, analog expected, no pipeline": lambda: train_network(
            replace(cfg, mode="none", stages=1), spec=SPEC),
        "simulator, analog expected, async M=4": lambda: train_network(cfg, spec=SPEC),
    }, repeats)
    base = times["plain numpy digital SGD (baseline)"]
    for name, seconds in times.items():
        print(f"    {name:42s} {seconds:7.3f} s   {seconds / base:5.2f}x baseline"
              f"   {1e6 * seconds / steps:7.1f} us/update")


def bench_ensemble(steps: int, net_steps: int, repeats: int) -> None:
    print("(b) ensemble in one vectorised run vs sequential runs of its members")
    cases = [
        ("quadratic async M=4, 64 seeds", SimConfig(
            problem="quadratic", mode="async", stages=4, dim=64, steps=steps, log_every=steps,
            seeds=64), 64),
        ("digits-mlp async M=4, 64 seeds", SimConfig(
            problem="digits-mlp", mode="async", stages=4, micro_batch_size=16, lr=0.05,
            steps=net_steps, log_every=net_steps, seeds=64), 64),
    ]
    for name, cfg, members in cases:
        runner = (lambda c, **kw: train_network(c, spec=SPEC, **kw)) \
            if cfg.problem.startswith("digits") else run
        runner(replace(cfg, steps=5, log_every=5))
        times = best_times({
            "ensemble": lambda cfg=cfg, runner=runner: runner(cfg),
            "sequential": lambda cfg=cfg, runner=runner, members=members: [
                runner(cfg, members=[r]) for r in range(members)],
        }, repeats)
        ratio = times["sequential"] / times["ensemble"]
        print(f"    {name:34s} ensemble {times['ensemble']:7.3f} s, sequential "
              f"{times['sequential']:7.3f} s, speedup {ratio:5.1f}x")


def bench_rates(steps: int) -> None:
    print("(c) samples per second (analog expected, async M=4, micro-batches of 16)")
    for problem in ("quadratic", "least-squares", "digits-mlp", "digits-resmlp"):
        for seeds in (1, 16):
            cfg = SimConfig(problem=problem, mode="async", stages=4, micro_batch_size=16,
                            lr=0.05, steps=steps, log_every=steps, seeds=seeds, dim=64)
            if problem.startswith("digits"):
                def go(cfg=cfg):
                    return train_network(cfg, spec=SPEC)
            else:
                def go(cfg=cfg):
                    return run(cfg)
            go(replace(cfg, steps=5, log_every=5))
            seconds = best_times({"run": go}, 2)["run"]
            rate = steps * cfg.samples_per_update * seeds / seconds
            print(f"    {problem:14s} R={seeds:<3d} {rate:12.0f} samples/s (all members)")


def bench_accuracy(samples: int, seeds: int) -> None:
    """Test accuracy at equal samples; the step is scaled with the batch (``lr / samples per
    update`` fixed at 0.1/32), so each sample moves the weights by the same nominal amount."""
    print(f"(d) test accuracy after {samples} samples ({samples / 1437:.0f} epochs), "
          f"{seeds} seeds, mean +- std; soft bounds tau = 2; lr = 0.1 per 32 samples")
    for problem in ("digits-mlp", "digits-resmlp"):
        base = SimConfig(problem=problem, algorithm="analog", device="softbounds", tau=2.0,
                         update="expected", seeds=seeds, stages=4, micro_batches=4,
                         micro_batch_size=8, lr=0.1, steps=1, log_every=1)
        stale = replace(base, mode="async", lr=0.025)
        cases = [
            ("digital SGD, none, B=4 x b=8", replace(base, mode="none", algorithm="digital")),
            ("analog SGD, none, B=4 x b=8", replace(base, mode="none")),
            ("analog sync M=4, B=4 x b=8", replace(base, mode="sync")),
            ("analog async M=4, b=8", stale),
            ("analog async M=1 (SGD b=8)", replace(stale, stages=1)),
            ("digital async M=4, b=8", replace(stale, algorithm="digital")),
        ]
        print(f"    {problem}")
        for name, cfg in cases:
            steps = samples // cfg.samples_per_update
            cfg = replace(cfg, steps=steps, log_every=steps)
            start = time.perf_counter()
            trace = train_network(cfg, spec=SPEC).trace
            acc = trace.test_accuracy[:, -1]
            print(f"      {name:30s} updates {steps:5d}  cycles {int(trace.cycles[-1]):6d}  "
                  f"accuracy {acc.mean():.3f} +- {acc.std(ddof=1) if seeds > 1 else 0:.3f}  "
                  f"loss {trace.loss[:, -1].mean():.3f}  max|w| {trace.max_abs_w.max():.3f}  "
                  f"({time.perf_counter() - start:.0f} s)")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer updates (a smoke run)")
    parser.add_argument("--skip-accuracy", action="store_true", help="skip part (d)")
    args = parser.parse_args(argv)
    scale = 10 if args.quick else 1
    bench_overhead(2000 // scale, 3)
    bench_ensemble(2000 // scale, 300 // scale, 2)
    bench_rates(1000 // scale)
    if not args.skip_accuracy:
        bench_accuracy(38400 // scale, 4)


if __name__ == "__main__":
    main()
