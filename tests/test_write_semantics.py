"""Write semantics (``SimConfig.write``): batch-mean and per-sample writes of one update.

- at one sample per update the two semantics give the same bits, for every problem, mode and
  update kind (digital, expected, pulsed with each pulse type, on a device with noise);
- digital per-sample writes equal one batch-mean write up to float rounding;
- per-sample writes are the sequence of single-sample updates at the weights the previous write
  left, all gradients read at the batch's weights (rebuilt by hand for the quadratic and for a
  network);
- the field is validated, recorded in every trace, a flag of ``aimc-pipeline simulate`` and part of
  the sweep cache key; the memory of per-sample noise is checked before allocating.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from simulate import (
    NetworkSpec,
    SimConfig,
    device_from_config,
    expected_update,
    load_digits_split,
    make_problem,
    run,
    train_network,
)
from simulate.execution import canonical_json
from simulate.problems import Network, sample_indices
from simulate.rng import member_generators
from theory import ParameterError
from theory.vocabulary import WRITE_SEMANTICS

FIELDS = ("loss", "grad_norm2", "test_accuracy", "max_abs_w", "w_min_visited", "w_max_visited",
          "avg_grad_norm2")

#: (algorithm, update, pulse type): every update kind of the simulator
KINDS = (
    ("digital", "expected", "stochastic"),  # (the expected update takes no pulse type)
    ("analog", "expected", "stochastic"),
    ("analog", "pulsed", "deterministic"),
    ("analog", "pulsed", "stochastic"),
    ("analog", "pulsed", "mean-count"),
)


def _same(a, b) -> bool:
    return all(np.array_equal(np.asarray(getattr(a, f)), np.asarray(getattr(b, f)),
                              equal_nan=True) for f in FIELDS)


@pytest.mark.parametrize("problem", ["quadratic", "least-squares", "digits-mlp", "digits-resmlp"])
@pytest.mark.parametrize("mode", ["none", "sync", "async"])
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: "-".join(k[:2]) + f"-{k[2]}")
def test_one_sample_per_update_same_bits(problem, mode, kind):
    algorithm, update, pulse_type = kind
    network = problem.startswith("digits")
    config = SimConfig(
        problem=problem, mode=mode, algorithm=algorithm, update=update, pulse_type=pulse_type,
        device="reram-softbounds", tau=None, stages=2, steps=12 if network else 60, seeds=2,
        log_every=6 if network else 10, lr=0.02 if network else 0.05,
    )
    assert config.samples_per_update == 1
    if network:  # a small network: the same code paths, a fraction of the time
        spec = NetworkSpec(layers=3, width=8)
        batch_mean = train_network(config, spec=spec).trace
        per_sample = train_network(replace(config, write="per-sample"), spec=spec).trace
    else:
        batch_mean = run(config)
        per_sample = run(replace(config, write="per-sample"))
    assert batch_mean.config["write"] == "batch-mean"
    assert per_sample.config["write"] == "per-sample"
    assert _same(batch_mean, per_sample)


@pytest.mark.parametrize("problem", ["quadratic", "least-squares"])
@pytest.mark.parametrize("mode,mb,b", [("none", 4, 2), ("sync", 2, 3), ("async", 1, 5)])
def test_per_sample_differs_from_batch_mean_for_analog(problem, mode, mb, b):
    """The test above can fail: with several samples the analog writes differ."""
    config = SimConfig(problem=problem, mode=mode, micro_batches=mb, micro_batch_size=b,
                       stages=2, steps=40, seeds=2)
    assert not _same(run(config), run(replace(config, write="per-sample")))


def test_digital_per_sample_equals_batch_mean_up_to_rounding_oracle():
    """Digital per-sample writes sum to the batch-mean write; the per-sample noise
    sqrt(sigma2/d) xi_i is another draw than the batch's sqrt(sigma2/(n d)) xi, so the comparison
    is noiseless (sigma2 = 0)."""
    config = SimConfig(algorithm="digital", micro_batches=4, micro_batch_size=4, sigma2=0.0,
                       steps=200, seeds=2, log_every=20)
    a, b = run(config), run(replace(config, write="per-sample"))
    np.testing.assert_allclose(b.loss, a.loss, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(b.grad_norm2, a.grad_norm2, rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("problem", ["digits-mlp", "digits-resmlp"])
def test_digital_per_sample_equals_batch_mean_up_to_rounding_networks(problem):
    config = SimConfig(problem=problem, algorithm="digital", micro_batches=2, micro_batch_size=8,
                       stages=2, steps=30, seeds=2, log_every=10, lr=0.1)
    spec = NetworkSpec(layers=4, width=8)
    a = train_network(config, spec=spec)
    b = train_network(replace(config, write="per-sample"), spec=spec)
    # 16 writes of one sample per update instead of one of their sum: rounding only (1e-16
    # relative per addition, 30 updates), far below any training effect
    np.testing.assert_allclose(b.weights, a.weights, rtol=0, atol=1e-12)
    np.testing.assert_allclose(b.trace.loss, a.trace.loss, rtol=1e-11)


def test_per_sample_oracle_is_the_sequence_of_single_sample_writes():
    """One update of n = 3 per-sample writes rebuilt from the engine's streams by hand."""
    config = SimConfig(micro_batches=3, micro_batch_size=1, steps=1, seeds=1, log_every=1,
                       lr=0.2, sigma2=4.0, write="per-sample")
    problem = make_problem(config)
    device = device_from_config(config)
    xi = member_generators(config.seed, [0])["noise"][0].standard_normal((1, 3, problem.dim))[0]
    w = problem.w0.copy()
    g = problem.grad(w)  # every sample's gradient read at W_0
    visited = [w]
    for i in range(3):
        sample = g + np.sqrt(config.sigma2 / problem.dim) * xi[i]
        w = expected_update(w, -(config.lr / 3) * sample, device)
        visited.append(w)
    trace = run(config)
    np.testing.assert_array_equal(trace.loss[0, -1], problem.loss(w))
    lo = min(v.min() for v in visited)
    hi = max(v.max() for v in visited)
    assert trace.w_min_visited[0] == lo and trace.w_max_visited[0] == hi


def test_per_sample_network_is_the_sequence_of_single_sample_writes():
    """Two updates of a small MLP, b = 3 per-sample expected writes, rebuilt with single-sample
    gradients at the batch's weights (forward and backward of the batch first, then the writes)."""
    spec = NetworkSpec(layers=3, width=6)
    config = SimConfig(problem="digits-mlp", micro_batch_size=3, steps=2, seeds=1, log_every=1,
                       lr=0.3, write="per-sample")
    device = device_from_config(config)
    data = load_digits_split()
    net = Network.build(config.problem, spec, 1, data.n_features, data.n_classes)
    rngs = member_generators(config.seed, [0])["data"]
    w, c = net.init(rngs, spec.init_fraction * device.w_min, spec.init_fraction * device.w_max)
    chunk = sample_indices(rngs, data.n_train, 3, batches=2)
    for k in range(2):
        idx = chunk[k][0]
        grads = []
        for t in idx:  # each sample's own gradient, read at the batch's weights
            gw, gc = np.empty_like(w), np.empty_like(c)
            view = net.views(w, c)
            net.gradient(data.x_train[[t]][None], data.y_train[[t]][None], view,
                         [v.weights for v in view], net.views(gw, gc))
            grads.append((gw, gc))
        for gw, _ in grads:
            w = expected_update(w, -(config.lr / 3) * gw, device)
        c = c - config.lr * sum(gc for _, gc in grads) / 3
    run_ = train_network(config, spec=spec)
    np.testing.assert_allclose(run_.weights, w, rtol=0, atol=1e-13)
    np.testing.assert_allclose(run_.biases, c, rtol=0, atol=1e-13)


def test_per_sample_stochastic_trains_fire_once_per_sample():
    """Per-sample writes with aihwkit's trains on a network run (b = 4), draw the trains of every
    sample (a different device stream use than batch-mean's per-device Binomials) and stay
    reproducible."""
    config = SimConfig(problem="digits-mlp", micro_batch_size=4, steps=6, seeds=2, log_every=3,
                       update="pulsed", pulse_type="stochastic", lr=0.1, write="per-sample")
    spec = NetworkSpec(layers=3, width=8)
    a, b = train_network(config, spec=spec), train_network(config, spec=spec)
    np.testing.assert_array_equal(a.weights, b.weights)
    mean = train_network(replace(config, write="batch-mean"), spec=spec)
    assert not np.array_equal(a.weights, mean.weights)


def test_field_validated_recorded_flag_and_cache_key():
    assert WRITE_SEMANTICS == ("batch-mean", "per-sample")
    assert SimConfig().write == "batch-mean"
    with pytest.raises(ParameterError, match=r"^write='rows' is unknown; valid: batch-mean, "):
        SimConfig(write="rows")
    a, b = SimConfig(), SimConfig(write="per-sample")
    assert a.to_dict()["write"] == "batch-mean" and b.to_dict()["write"] == "per-sample"
    assert canonical_json({"config": a.to_dict()}) != canonical_json({"config": b.to_dict()})


def test_cli_flag(capsys):
    from simulate.commands.simulate import main

    assert main(["--steps", "20", "-B", "4", "--write", "per-sample", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"write": "per-sample"' in out


def test_per_sample_noise_memory_checked_before_allocating():
    with pytest.raises(ParameterError, match=r"^micro_batch_size=\d+ asks for .* per-sample"):
        SimConfig(micro_batch_size=2**23, dim=64, steps=10, write="per-sample", mode="async")
    SimConfig(micro_batch_size=2**23, dim=64, steps=10, mode="async")  # batch-mean: one draw
