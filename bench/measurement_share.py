"""Measurement share of a default network run, the ensemble ratio and float32 (issue 28).

Run from the repository root: ``python bench/measurement_share.py [--quick]``. Every number is a
time or a ratio measured in this same process; each timing is the minimum over a few repeats
whose rounds interleave the cases (the machine may be shared). One BLAS thread (the script sets
the thread counts before numpy is imported, as the issue's measurements and the other benches
do; a network run limits BLAS to one thread itself,
:func:`simulate.problems.network.one_blas_thread`, but the parts timed in (a) and (c) are called
outside a run). ``--cpu``: every time is this process's CPU seconds (``time.process_time``; on
one thread the work of the run, without the waits for a core of a loaded machine) instead of
wall-clock seconds; ``--repeats N`` (default 3, 1 with ``--quick``).

The runs are the package's defaults apart from the digits MLP, micro-batches of 4 and 256 updates
(``simulate --problem digits-mlp --micro-batch-size 4 --steps 256``: no pipeline, analog expected
soft-bounds update, float64, the default :class:`~simulate.NetworkSpec` with its gradient norm,
the default logging period ``max(10, steps // 8)`` = 32). The baselines are the measurement
before this change (``log_every = 10``, loss on 256 images, every test image) and at the start
of issue 28 (``log_every = 10``, every image).

(a) Share of a run spent measuring (:meth:`NetworkTraining.measure` over the whole run), for the
    default and the baselines (target: <= 25 % for the default).
(b) A 16-seed ensemble in one run against 16 sequential runs of its members (target: >= 3x),
    with the default measurement, the one before, and only the first and last points.
(c) The measurement of 16 members member by member (what the package does) against one stacked
    pass of all of them, at one logging point.
(d) A 16-seed ensemble in float32 against the same ensemble in float64 (``SimConfig.dtype``) at
    micro-batches of 32, 256 updates (target: >= 1.5x), with the default logging and with only
    the first and last points.
(e) Where the time of a default run goes, for 16 members together and for one member alone:
    the set-up, the updates (the gradient's forward and backward products, the write and the
    rest of a step) and the measurements (the points before the last, the last point), and the
    ensemble ratio each part allows (16 sequential runs over the ensemble's time with that part
    alone).
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

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_simulate import best_times  # noqa: E402
from simulate import NetworkSpec, SimConfig, train_network  # noqa: E402
from simulate.problems.network import softmax_cross_entropy  # noqa: E402
from simulate.problems.network_measure import MemberViews, measure_members  # noqa: E402
from simulate.problems.network_run import NetworkTraining  # noqa: E402

DEFAULT = SimConfig(problem="digits-mlp", micro_batch_size=4, steps=256)
SUBSET, FULL = NetworkSpec(), NetworkSpec(loss_rows=None, test_rows=None)


#: the clock of every timing (``--cpu``: ``time.process_time``)
CLOCK = [time.perf_counter]


def timed_run(config: SimConfig, spec: NetworkSpec) -> tuple[float, float]:
    """Seconds of one run (set-up, measurements, updates, finish) and of its measurements."""
    clock = CLOCK[0]
    start = clock()
    training = NetworkTraining(config, spec=spec)
    measuring, logged = 0.0, 0
    for k in range(config.steps + 1):
        if k == training.log_at[logged]:
            t = clock()
            training.measure(k)
            measuring += clock() - t
            logged += 1
        if k < config.steps:
            training.step(k)
    training.finish()
    return clock() - start, measuring


#: name -> (config, spec) of the measurements compared by (a) and (b)
CASES = {
    "default (every 32, loss 128 rows, test 120 images)": (DEFAULT, SUBSET),
    "before (every 10, loss 256 rows, every test image)": (
        replace(DEFAULT, log_every=10), NetworkSpec(loss_rows=256, test_rows=None)),
    "issue 28's start (every 10, every image)": (replace(DEFAULT, log_every=10), FULL),
    "first and last points only": (replace(DEFAULT, log_every=DEFAULT.steps), SUBSET),
}


def bench_share(repeats: int) -> None:
    print(f"(a) measurement share of a default run (b = 4, 256 updates), min of {repeats}")
    best = {}
    for _ in range(repeats):
        for name, (config, spec) in CASES.items():
            total, measuring = timed_run(config, spec)
            if name not in best or total < best[name][0]:
                best[name] = (total, measuring)
    reference = best[next(iter(CASES))][0]
    for name, (total, measuring) in best.items():
        print(f"    {name:52s} {total:6.3f} s, measuring {100 * measuring / total:4.1f} %, "
              f"{total / reference:4.2f}x the default's time")


def bench_ensemble(repeats: int, seeds: int = 16) -> None:
    print(f"(b) {seeds}-seed ensemble vs {seeds} sequential runs (b = 4, 256 updates), "
          f"min of {repeats}")
    for name in (n for i, n in enumerate(CASES) if i != 2):
        config, spec = CASES[name]
        config = replace(config, seeds=seeds)
        times = best_times({
            "ensemble": lambda c=config, s=spec: train_network(c, spec=s),
            "sequential": lambda c=config, s=spec: [train_network(c, spec=s, members=[r])
                                                    for r in range(seeds)],
        }, repeats, CLOCK[0])
        ratio = times["sequential"] / times["ensemble"]
        print(f"    {name:52s} ensemble {times['ensemble']:6.3f} s, sequential "
              f"{times['sequential']:6.3f} s, ratio {ratio:4.2f}x")


def stacked_measure(network, data, w, c, x_loss, y_loss):
    """One stacked pass of every member (the alternative to
    :func:`~simulate.problems.network_measure.measure_members`, loss without the gradient
    norm)."""
    loss = softmax_cross_entropy(network.logits(w, c, x_loss), y_loss)
    accuracy = np.mean(np.argmax(network.logits(w, c, data.x_test), axis=-1) == data.y_test,
                       axis=-1)
    return loss, accuracy


def bench_batched(repeats: int, seeds: int = 16) -> None:
    print(f"(c) one logging point of {seeds} members (loss, test accuracy; no gradient norm), "
          f"min of {repeats}")
    training = NetworkTraining(replace(DEFAULT, seeds=seeds), spec=SUBSET)
    network, data, w, c = training.network, training.data, training.w, training.c
    members = MemberViews.of(network, w, c)
    for rows, (x, y) in (("subset", training._subset), ("all rows", (data.x_loss, data.y_loss))):
        times = best_times({
            "member by member": lambda x=x, y=y: measure_members(
                network, data, members, False, x, y, data.x_test, data.y_test),
            "stacked": lambda x=x, y=y: stacked_measure(network, data, w, c, x, y),
        }, repeats, CLOCK[0])
        print(f"    loss on {rows:8s} member by member {1e3 * times['member by member']:7.1f} ms, "
              f"stacked {1e3 * times['stacked']:7.1f} ms")


def bench_dtype(repeats: int, seeds: int = 16) -> None:
    print(f"(d) {seeds}-seed ensemble, float32 vs float64 (b = 32, 256 updates), min of {repeats}")
    config = replace(DEFAULT, micro_batch_size=32, seeds=seeds)
    train_network(replace(config, steps=5, seeds=1, dtype="float32"))  # compile the float32 kernels
    for name, every in (("default logging", None), ("first and last points only", config.steps)):
        configs = {d: replace(config, log_every=every, dtype=d) for d in ("float64", "float32")}
        times = best_times({d: lambda c=c: train_network(c) for d, c in configs.items()},
                           repeats, CLOCK[0])
        print(f"    {name:28s} float64 {times['float64']:6.3f} s, float32 "
              f"{times['float32']:6.3f} s, ratio {times['float64'] / times['float32']:4.2f}x")


def decomposed_run(config: SimConfig) -> dict[str, float]:
    """Seconds of the parts of one run (``timed_run``'s loop, the gradient and the write of
    every step timed inside it)."""
    clock, parts = CLOCK[0], dict.fromkeys(
        ("set-up", "gradient (products)", "write", "rest of the steps", "points before the last",
         "last point"), 0.0)
    start = clock()
    training = NetworkTraining(config)
    parts["set-up"] = clock() - start
    network, write = training.network, training._write

    def timed(part, fn):
        def call(*args, **kwargs):
            t = clock()
            out = fn(*args, **kwargs)
            parts[part] += clock() - t
            return out
        return call

    proxy = type("Timed", (), {"gradient": staticmethod(timed("gradient (products)",
                                                               network.gradient))})()
    training._write = timed("write", write)
    training._write.wants_factors = write.wants_factors
    logged = 0
    for k in range(config.steps + 1):
        if k == training.log_at[logged]:
            t = clock()
            training.measure(k)
            parts["last point" if k == config.steps else "points before the last"] += clock() - t
            logged += 1
        if k < config.steps:
            training.network = proxy  # (the step reads only its gradient)
            t = clock()
            training.step(k)
            parts["rest of the steps"] += clock() - t
            training.network = network
    parts["rest of the steps"] -= parts["gradient (products)"] + parts["write"]
    return parts


def bench_decomposition(repeats: int, seeds: int = 16) -> None:
    print(f"(e) where a default run's time goes (b = 4, 256 updates), min of {repeats}, ms")
    best: dict = {}
    for _ in range(repeats):
        for members in (seeds, 1):
            parts = decomposed_run(replace(DEFAULT, seeds=members))
            for part, seconds in parts.items():
                best[members, part] = min(best.get((members, part), float("inf")), seconds)
    parts = [part for (members, part) in best if members == seeds]
    ensemble = sum(best[seeds, p] for p in parts)
    sequential = seeds * sum(best[1, p] for p in parts)
    print(f"    {'part':28s} {seeds} members  1 member  x{seeds}   ratio with this part alone")
    for part in parts:
        print(f"    {part:28s} {1e3 * best[seeds, part]:9.1f} {1e3 * best[1, part]:9.2f} "
              f"{1e3 * seeds * best[1, part]:7.1f}   {sequential / best[seeds, part]:6.1f}x")
    print(f"    {'total':28s} {1e3 * ensemble:9.1f} {1e3 * sequential / seeds:9.2f} "
          f"{1e3 * sequential:7.1f}   ratio {sequential / ensemble:4.2f}x")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    parser.add_argument("--repeats", type=int, default=None, help="repeats (default 3)")
    parser.add_argument("--cpu", action="store_true",
                        help="time this process's CPU seconds, not wall-clock seconds")
    args = parser.parse_args(argv)
    repeats = args.repeats or (1 if args.quick else 3)
    CLOCK[0] = time.process_time if args.cpu else time.perf_counter
    print(f"clock: {'CPU seconds of this process' if args.cpu else 'wall-clock seconds'}")
    train_network(replace(DEFAULT, steps=5))  # warm caches (data, compiled device)
    bench_share(repeats)
    bench_ensemble(repeats)
    bench_batched(repeats)
    bench_dtype(repeats)
    bench_decomposition(repeats)


if __name__ == "__main__":
    main()
