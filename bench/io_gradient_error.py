r"""How the analog IO non-idealities of the forward and backward products bend the gradient.

Run ``python -m bench.io_gradient_error [--quick] [--out DIR]`` from the repository root. With
the ``companion`` IO preset (:mod:`simulate.device.mvm`: DAC 7 bits, ADC 9 bits, output noise 0.06,
output bound 12, input bound 1, abs-max noise management, iterative bound management) on the
forward (``h W``) and backward (``delta_z W^T``) products of every layer of the digits MLP (width
32, tanh), it prints

(a) **depth**: for ``L = 2, 4, 8, 16`` layers, the relative gradient error
    :math:`\|g_{io} - g\| / \|g\|` (root mean square over ``N`` noise draws) and its **bias part**
    :math:`\|\bar g_{io} - g\| / \|g\|` (:math:`\bar g_{io}` the mean of the ``N`` draws), with
    the same weights and the same batch of 32 training images, ``g`` in exact arithmetic, over
    every trained parameter (weights and biases). The bias is reported with the noise floor
    removed, :math:`\sqrt{\max(0, \|\bar g_{io} - g\|^2 - \mathrm{tr\,Cov}/N)}/\|g\|`
    (``bias_raw`` keeps it; ``bias_floor`` is :math:`\sqrt{\mathrm{tr\,Cov}/N}/\|g\|`); also the
    error and bias of the forward or the backward IO alone. At the initial weights and after
    300 updates of analog SGD (sync, B = 4 x b = 8, step 0.1, soft bounds tau = 2, exact IO).
    In a synchronous pipeline the stages do not change the arithmetic: every layer's product is
    the same whatever the cut (tests/test_mvm.py checks the bits for M = 1, 2, 4).
(b) **stages** (async): with ``M = 1, 2, 4, 8`` stages of the 16-layer MLP, stage m's forward
    reads weights ``M - m`` updates old and its backward the current ones. The error against the
    exact gradient at the current weights of: the stale forward alone (exact arithmetic), the
    stale forward with IO (total and bias part). The weight versions are the last 8 iterates of
    exact SGD (b = 8, step 0.025, the async settings of bench_simulate) after the training of (a);
    every number is the mean over 4 such continuations.
(c) **accuracy**: test accuracy of the 16-layer digits MLP trained with the IO on or off, sync
    (M = 4, B = 4 x b = 8, step 0.1) and async (M = 4, b = 8, step 0.025) at equal samples
    (19,200), soft bounds tau = 2, expected update, ``--seeds`` seeds (mean, std); the test
    accuracy of the trained weights read exactly and through the analog forward (inference on
    the same tiles), and the paired change against the exact-IO run of the same seeds (the IO
    draws come from their own stream: same initial weights, same batches), with its standard
    error.

With ``--out DIR`` it writes ``io_depth.csv``, ``io_stages.csv`` and ``io_accuracy.csv``.
"""

from __future__ import annotations

import argparse
import csv
import io
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from simulate import NetworkSpec, SimConfig, device_from_config, load_digits_split, train_network
from simulate.device import AnalogPass, IOParameters, io_preset
from simulate.problems import Network
from simulate.rng import member_generators
from theory import atomic_write, check_writable_dir, text_table

PRESET = "companion"
WIDTH = 32
BATCH = 32
BASE = SimConfig(problem="digits-mlp", algorithm="analog", device="softbounds", tau=2.0,
                 update="expected", mode="sync", stages=1, micro_batches=4, micro_batch_size=8,
                 lr=0.1, steps=1, log_every=1)


def gradient_draws(network: Network, w, c, x, y, *, forward_io: IOParameters | None,
                   backward_io: IOParameters | None, draws: int, seed: int = 0,
                   forward_versions=None) -> np.ndarray:
    """``draws`` gradients (weights then biases, shape ``(draws, P)``) of the batch ``x, y`` at
    the weights ``w, c`` (shape ``(1, ...)``), each with its own IO noise (one ensemble member per
    draw); ``forward_versions``: per stage, the ``(w, c)`` its forward reads (default ``w, c``)."""
    n = draws if (forward_io is not None or backward_io is not None) else 1
    tile = lambda a: np.repeat(a, n, axis=0)  # noqa: E731
    wt, ct = tile(w), tile(c)
    rngs = tuple(member_generators(seed, range(n))["io"])
    current = network.views(wt, ct)
    if forward_versions is None:
        forward = current
    else:
        forward = [network.views(tile(fw), tile(fc))[s]
                   for s, (fw, fc) in enumerate(forward_versions)]
    gw, gc = np.empty_like(wt), np.empty_like(ct)
    fwd = None if forward_io is None else AnalogPass(forward_io, rngs, "forward")
    bwd = None if backward_io is None else AnalogPass(backward_io, rngs, "backward")
    network.gradient(x, y, forward, [v.weights for v in current], network.views(gw, gc),
                     forward_mvm=fwd, backward_mvm=bwd)
    return np.concatenate([gw, gc], axis=1)


def error_stats(draws: np.ndarray, exact: np.ndarray) -> dict[str, float]:
    """Relative RMS error, bias part and the bias estimate's noise floor of ``draws`` vs
    ``exact``."""
    norm = np.linalg.norm(exact)
    mean = draws.mean(axis=0)
    err = np.sqrt(np.mean(np.sum((draws - exact) ** 2, axis=1))) / norm
    spread = np.sum((draws - mean) ** 2) / max(len(draws) - 1, 1)  # tr Cov
    bias = np.linalg.norm(mean - exact) / norm
    floor = np.sqrt(spread / len(draws)) / norm
    # E ||mean - exact||^2 = ||E g_io - g||^2 + tr Cov / N: the bias with the noise floor removed
    return {"error": float(err), "bias": float(bias), "floor": float(floor),
            "debiased": float(np.sqrt(max(bias**2 - floor**2, 0.0)))}


def trained(layers: int, steps: int, seed: int = 0, stages: int = 1):
    """The network and its weights at init and after ``steps`` updates of exact analog SGD."""
    spec = NetworkSpec(layers=layers, width=WIDTH, grad_norm=False)
    cfg = replace(BASE, steps=steps, log_every=steps, seed=seed)
    run = train_network(cfg, spec=spec)
    device = device_from_config(cfg)  # the initial weights exactly as train_network draws them
    init = run.network.init(member_generators(seed, [0])["data"],
                            spec.init_fraction * device.w_min, spec.init_fraction * device.w_max)
    data = load_digits_split()
    net = Network.build("digits-mlp", spec, stages, data.n_features, data.n_classes)
    return net, init, (run.weights, run.biases)


def fixed_batch(seed: int = 123):
    data = load_digits_split()
    idx = np.random.default_rng(seed).choice(data.n_train, BATCH, replace=False)
    return data.x_train[idx], data.y_train[idx]


def depth_table(draws: int, steps: int):
    io_ = io_preset(PRESET)
    x, y = fixed_batch()
    rows = []
    for layers in (2, 4, 8, 16):
        net, init, after = trained(layers, steps)
        for label, (w, c) in (("init", init), (f"trained {steps}", after)):
            exact = gradient_draws(net, w, c, x, y, forward_io=None, backward_io=None, draws=1)[0]
            both = error_stats(gradient_draws(net, w, c, x, y, forward_io=io_, backward_io=io_,
                                              draws=draws), exact)
            fwd = error_stats(gradient_draws(net, w, c, x, y, forward_io=io_, backward_io=None,
                                             draws=draws), exact)
            bwd = error_stats(gradient_draws(net, w, c, x, y, forward_io=None, backward_io=io_,
                                             draws=draws), exact)
            rows.append({"layers": layers, "weights": label, "error": both["error"],
                         "bias": both["debiased"], "bias_raw": both["bias"],
                         "bias_floor": both["floor"],
                         "error_fwd_only": fwd["error"], "bias_fwd_only": fwd["debiased"],
                         "error_bwd_only": bwd["error"], "bias_bwd_only": bwd["debiased"]})
    return rows


def sgd_versions(net: Network, w, c, count: int, lr: float, batch: int, seed: int = 7):
    """``count + 1`` successive iterates of exact SGD from ``w, c`` (oldest first)."""
    data = load_digits_split()
    rng = np.random.default_rng(seed)
    versions = [(w.copy(), c.copy())]
    for _ in range(count):
        w, c = versions[-1]
        idx = rng.integers(0, data.n_train, batch)
        g = gradient_draws(net, w, c, data.x_train[idx], data.y_train[idx], forward_io=None,
                           backward_io=None, draws=1)[0]
        versions.append((w - lr * g[None, :w.shape[1]], c - lr * g[None, w.shape[1]:]))
    return versions


def stage_table(draws: int, steps: int, layers: int = 16, trajectories: int = 4):
    """Per stage count, the errors averaged over ``trajectories`` SGD continuations."""
    io_ = io_preset(PRESET)
    x, y = fixed_batch()
    _, _, (w0, c0) = trained(layers, steps)
    rows = []
    for stages in (1, 2, 4, 8):
        net = Network.build("digits-mlp", NetworkSpec(layers=layers, width=WIDTH), stages, 64, 10)
        parts = []
        for t in range(trajectories):
            versions = sgd_versions(net, w0, c0, 7, 0.025, 8, seed=7 + t)
            w, c = versions[-1]
            # stage s (0-based) reads the weights M - 1 - s updates old, the backward the current
            stale = [versions[-1 - (stages - 1 - s)] for s in range(stages)]
            exact = gradient_draws(net, w, c, x, y, forward_io=None, backward_io=None,
                                   draws=1)[0]
            sync_io = error_stats(gradient_draws(net, w, c, x, y, forward_io=io_,
                                                 backward_io=io_, draws=draws, seed=t), exact)
            stale_exact = gradient_draws(net, w, c, x, y, forward_io=None, backward_io=None,
                                         draws=1, forward_versions=stale)
            stale_io = error_stats(gradient_draws(net, w, c, x, y, forward_io=io_,
                                                  backward_io=io_, draws=draws, seed=t,
                                                  forward_versions=stale), exact)
            parts.append([sync_io["error"], sync_io["debiased"],
                          error_stats(stale_exact, exact)["error"], stale_io["error"],
                          stale_io["debiased"], stale_io["floor"]])
        mean = np.mean(parts, axis=0)
        rows.append({"stages": stages, "max_delay": stages - 1,
                     **dict(zip(("sync_io_error", "sync_io_bias", "stale_error", "stale_io_error",
                                 "stale_io_bias", "bias_floor"), map(float, mean), strict=True))})
    return rows


def accuracy_table(samples: int, seeds: int):
    spec = NetworkSpec(layers=16, width=WIDTH, grad_norm=False)
    data = load_digits_split()
    sync = replace(BASE, mode="sync", stages=4, seeds=seeds)
    asyn = replace(sync, mode="async", lr=0.025)
    rows = []
    for name, cfg in (("sync M=4, B=4 x b=8", sync), ("async M=4, b=8", asyn)):
        reference = None
        for preset in ("perfect", PRESET):
            steps = samples // cfg.samples_per_update
            run_cfg = replace(cfg, steps=steps, log_every=steps, forward_io=preset,
                              backward_io=preset)
            start = time.perf_counter()
            run = train_network(run_cfg, spec=spec)
            seconds = time.perf_counter() - start
            acc = run.trace.test_accuracy[:, -1]
            rngs = tuple(member_generators(99, range(seeds))["io"])
            logits = run.network.logits(run.weights, run.biases, data.x_test,
                                        AnalogPass(io_preset(PRESET), rngs, "forward"))
            acc_io = np.mean(np.argmax(logits, axis=-1) == data.y_test, axis=-1)
            reference = acc if reference is None else reference
            diff = acc - reference  # paired: same seeds, same initial weights and batches
            rows.append({"run": name, "io": preset, "updates": steps, "seeds": seeds,
                         "accuracy": float(acc.mean()), "accuracy_std": float(acc.std(ddof=1)),
                         "paired_change": float(diff.mean()),
                         "paired_change_se": float(diff.std(ddof=1) / np.sqrt(seeds)),
                         "accuracy_analog_inference": float(acc_io.mean()),
                         "loss": float(run.trace.loss[:, -1].mean()), "seconds": seconds})
    return rows


def show(rows, columns, fmt="{:.4f}"):
    header = list(columns)
    body = [[fmt.format(r[k]) if isinstance(r[k], float) else r[k] for k in columns]
            for r in rows]
    return text_table(header, body)


def write_csv(path: Path, rows) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    atomic_write(path, buffer.getvalue().encode())


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer draws and samples (smoke)")
    parser.add_argument("--skip-accuracy", action="store_true", help="skip part (c)")
    parser.add_argument("--skip-gradient", action="store_true", help="skip parts (a) and (b)")
    parser.add_argument("--seeds", type=int, default=6, help="seeds of part (c) (default 6)")
    parser.add_argument("--out", type=Path, help="write the CSV files into this directory")
    args = parser.parse_args(argv)
    if args.out is not None:
        check_writable_dir(args.out, "out")
    draws, steps = (32, 50) if args.quick else (256, 300)
    samples, seeds = (1920, 2) if args.quick else (19200, args.seeds)
    tables = {}
    if not args.skip_gradient:
        print(f"(a) gradient error vs depth, IO preset {PRESET!r}, {draws} draws, batch {BATCH}")
        tables["io_depth"] = depth_table(draws, steps)
        print(show(tables["io_depth"], tables["io_depth"][0]))
        print(f"\n(b) async: stale forward and IO vs stages, 16 layers, {draws} draws")
        tables["io_stages"] = stage_table(draws, steps)
        print(show(tables["io_stages"], tables["io_stages"][0]))
    if not args.skip_accuracy:
        print(f"\n(c) test accuracy after {samples} samples, {seeds} seeds, soft bounds tau = 2")
        tables["io_accuracy"] = accuracy_table(samples, seeds)
        print(show(tables["io_accuracy"], tables["io_accuracy"][0], "{:.3f}"))
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        for name, rows in tables.items():
            write_csv(args.out / f"{name}.csv", rows)


if __name__ == "__main__":
    main()
