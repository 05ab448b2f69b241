"""Digits networks: stagewise gradients, pipeline semantics, reproducibility, accuracy."""

from dataclasses import replace

import numpy as np
import pytest

from simulate import NetworkSpec, SimConfig, load_digits_split, run_network, train_network
from simulate.problems import Network, sample_indices, softmax_cross_entropy
from simulate.rng import member_generators
from theory import DivergenceError, ParameterError, evaluate_schedule

SMALL = NetworkSpec(layers=4, width=8, grad_norm=False)
PROBLEMS = ("digits-mlp", "digits-resmlp")


def _config(**kw) -> SimConfig:
    base = dict(problem="digits-mlp", mode="none", algorithm="analog", device="softbounds",
                tau=1.0, update="expected", micro_batch_size=4, lr=0.1, steps=20, log_every=10)
    return SimConfig(**{**base, **kw})


def _random_params(network: Network, rng, r=2, scale=0.6):
    w = scale * rng.standard_normal((r, network.n_weights))
    c = 0.3 * rng.standard_normal((r, network.n_biases))
    return w, c


def _gradient(network, x, y, forward, backward):
    """Gradient through the flat versions ``forward = (w, c)`` and ``backward = w``."""
    gw, gc = np.empty_like(forward[0]), np.empty_like(forward[1])
    backward_views = network.views(backward, forward[1])
    network.gradient(x, y, network.views(*forward), [v.weights for v in backward_views],
                     network.views(gw, gc))
    return gw, gc


# --- data ---------------------------------------------------------------------------------------

def test_digits_split_is_fixed_stratified_and_scaled():
    data = load_digits_split()
    assert data.x_train.shape == (1437, 64) and data.x_test.shape == (360, 64)
    assert data.n_classes == 10
    assert 0.0 <= data.x_train.min() and data.x_train.max() <= 1.0
    assert data.x_train.max() == 1.0  # divided by 16, not by the sample maximum
    # stratified: each class's test share matches its share of the whole set to one image
    all_counts = np.bincount(np.concatenate([data.y_train, data.y_test]))
    test_counts = np.bincount(data.y_test)
    assert np.all(np.abs(test_counts - all_counts * 360 / 1797) <= 1.0)
    with pytest.raises(ValueError):
        data.x_train[0, 0] = 0.5  # read-only: the cached split cannot be corrupted


def test_sample_indices_per_member_streams():
    rngs = [np.random.default_rng(s) for s in (1, 2, 3)]
    idx = sample_indices(rngs, 10, 1000)
    assert idx.shape == (3, 1000) and idx.min() == 0 and idx.max() == 9
    alone = sample_indices([np.random.default_rng(2)], 10, 1000)
    np.testing.assert_array_equal(idx[1], alone[0])
    one_by_one = [np.random.default_rng(s) for s in (4, 5)]
    at_once = [np.random.default_rng(s) for s in (4, 5)]
    successive = np.stack([sample_indices(one_by_one, 1437, 16) for _ in range(7)])
    np.testing.assert_array_equal(sample_indices(at_once, 1437, 16, batches=7), successive)


# --- architecture and partition -----------------------------------------------------------------

@pytest.mark.parametrize("problem", PROBLEMS)
@pytest.mark.parametrize("stages", [1, 3, 5, 16])
def test_stages_partition_layers_evenly_and_contiguously(problem, stages):
    network = Network.build(problem, NetworkSpec(), stages, 64, 10)
    sizes = [len(stage) for stage in network.stages]
    assert sum(sizes) == 16 and max(sizes) - min(sizes) <= 1
    kinds = [layer.kind for layer in network.layers]
    assert kinds[-1] == "output" and kinds.count("output") == 1
    assert (problem == "digits-resmlp") == ("residual" in kinds)
    assert network.layers[0].fan_in == 64 and network.layers[-1].fan_out == 10
    assert network.weight_slices[0].start == 0
    for prev, nxt in zip(network.weight_slices, network.weight_slices[1:], strict=False):
        assert prev.stop == nxt.start
    assert network.n_weights == sum(layer.w_size for layer in network.layers)
    # the per-layer views write through to the flat arrays (gradients are written through them)
    w, c = np.zeros((2, network.n_weights)), np.zeros((2, network.n_biases))
    views = network.views(w, c)
    last = network.stages[-1][-1]
    views[-1].weights[-1][...] = 1.0
    views[-1].biases[-1][...] = 2.0
    assert w.sum() == 2 * last.w_size and np.all(w[:, -last.w_size:] == 1.0)
    assert c.sum() == 2 * 2 * last.fan_out and np.all(c[:, -last.fan_out:] == 2.0)


def test_bad_network_inputs_name_the_parameter():
    with pytest.raises(ParameterError, match="stages=17"):
        train_network(_config(stages=17))
    with pytest.raises(ParameterError, match="stages=5"):
        train_network(_config(stages=5), spec=SMALL)
    with pytest.raises(ParameterError, match="problem='quadratic'"):
        train_network(_config(problem="quadratic"))
    with pytest.raises(ParameterError, match="activation='sigmoid'"):
        NetworkSpec(activation="sigmoid")
    with pytest.raises(ParameterError, match="layers=1"):
        NetworkSpec(layers=1)


# --- gradients ----------------------------------------------------------------------------------

@pytest.mark.parametrize("problem", PROBLEMS)
@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_stagewise_gradient_matches_finite_differences(problem, activation):
    spec = NetworkSpec(layers=5, width=6, activation=activation)
    network = Network.build(problem, spec, 3, 64, 10)
    rng = np.random.default_rng(7)
    w, c = _random_params(network, rng)
    data = load_digits_split()
    x, y = data.x_train[:9], data.y_train[:9]
    gw, gc = _gradient(network, x, y, (w, c), w)

    def loss(w_, c_):
        return softmax_cross_entropy(network.logits(w_, c_, x), y)

    # central differences: truncation ~ h^2 |L'''| ~ 1e-10, round-off ~ 2 eps |L| / h ~ 1e-10
    h = 1e-5
    for params, grad in ((w, gw), (c, gc)):
        columns = rng.choice(params.shape[1], size=min(40, params.shape[1]), replace=False)
        for j in columns:
            plus, minus = params.copy(), params.copy()
            plus[:, j] += h
            minus[:, j] -= h
            args_p = (plus, c) if params is w else (w, plus)
            args_m = (minus, c) if params is w else (w, minus)
            numeric = (loss(*args_p) - loss(*args_m)) / (2 * h)  # one value per member
            np.testing.assert_allclose(grad[:, j], numeric, rtol=1e-6, atol=1e-8)


def test_stale_forward_current_backward_semantics_by_hand():
    """Two layers, two stages: gW2 uses stale h1; the signal to stage 1 uses the current W2."""
    spec = NetworkSpec(layers=2, width=5)
    network = Network.build("digits-mlp", spec, 2, 64, 10)
    rng = np.random.default_rng(3)
    w_old, c_old = _random_params(network, rng)
    w_new, _ = _random_params(network, rng)
    data = load_digits_split()
    x, y = data.x_train[:6], data.y_train[:6]
    gw, gc = _gradient(network, x, y, (w_old, c_old), w_new)

    w1 = w_old[:, :64 * 5].reshape(2, 64, 5)
    w2_old = w_old[:, 64 * 5:].reshape(2, 5, 10)
    w2_new = w_new[:, 64 * 5:].reshape(2, 5, 10)
    h1 = np.tanh(x @ w1 + c_old[:, None, :5])
    z = h1 @ w2_old + c_old[:, None, 5:]
    p = np.exp(z - z.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    delta = (p - np.eye(10)[y]) / len(y)
    g2 = np.swapaxes(h1, 1, 2) @ delta
    dz1 = (delta @ np.swapaxes(w2_new, 1, 2)) * (1 - h1 ** 2)
    g1 = x.T @ dz1
    np.testing.assert_allclose(gw, np.concatenate([g1.reshape(2, -1), g2.reshape(2, -1)], 1),
                               rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(gc, np.concatenate([dz1.sum(1), delta.sum(1)], 1),
                               rtol=1e-12, atol=1e-15)
    # and it differs from the gradient that reads W2 old in the backward (weight stashing)
    gw_stash, _ = _gradient(network, x, y, (w_old, c_old), w_old)
    assert not np.allclose(gw_stash[:, :320], gw[:, :320])


# --- pipeline semantics -------------------------------------------------------------------------

@pytest.mark.parametrize("problem", PROBLEMS)
def test_sync_iterates_equal_none_bit_for_bit(problem):
    base = _config(problem=problem, stages=4, micro_batches=3, steps=15, seeds=2)
    none = train_network(replace(base, mode="none"), spec=SMALL)
    sync = train_network(replace(base, mode="sync"), spec=SMALL)
    np.testing.assert_array_equal(none.weights, sync.weights)
    np.testing.assert_array_equal(none.biases, sync.biases)
    np.testing.assert_array_equal(none.trace.loss, sync.trace.loss)
    steps = none.trace.step
    np.testing.assert_array_equal(none.trace.cycles, 2 * 4 * 3 * steps)
    np.testing.assert_array_equal(sync.trace.cycles, 2 * (3 + 4 - 1) * steps)


def test_async_with_one_stage_equals_none_with_one_micro_batch():
    base = _config(problem="digits-resmlp", stages=1, micro_batches=1, steps=25, seeds=2)
    none = train_network(replace(base, mode="none"), spec=SMALL)
    asyn = train_network(replace(base, mode="async"), spec=SMALL)
    np.testing.assert_array_equal(none.weights, asyn.weights)
    np.testing.assert_array_equal(none.trace.loss, asyn.trace.loss)


def test_async_reads_the_predicted_weight_versions():
    stages, steps = 4, 13
    run = train_network(_config(mode="async", stages=stages, steps=steps), spec=SMALL,
                        record_versions=True)
    k = np.arange(steps)[:, None]
    m = np.arange(1, stages + 1)[None, :]
    delay = np.array([evaluate_schedule("async", "forward_delay", stages=stages, stage=j)
                      for j in range(1, stages + 1)])
    np.testing.assert_array_equal(delay, stages - np.arange(1, stages + 1))
    np.testing.assert_array_equal(run.forward_versions, np.maximum(0, k - (stages - m)))
    np.testing.assert_array_equal(run.backward_versions, np.broadcast_to(k, (steps, stages)))
    assert run.trace.cycles[-1] == 2 * (steps + stages - 1)


def test_async_update_recomputed_from_the_weight_history():
    """Update K of a digital async run: gradient through W_{K-d_m} forward, W_K backward."""
    stages, last, seed = 3, 6, 11
    spec = NetworkSpec(layers=3, width=6, grad_norm=False)
    base = _config(mode="async", algorithm="digital", stages=stages, seeds=1, log_every=1000)
    history = [train_network(replace(base, steps=j), seed, spec=spec) for j in (1, 2, 3, 4, 5, 6)]
    history.insert(0, None)
    for j in range(1, last + 1):
        assert history[j].trace.step[-1] == j
    # W_0 and the batches, from the streams the run uses
    network = history[1].network
    rngs = member_generators(seed, [0])["data"]
    w0, c0 = network.init(rngs, -0.5, 0.5)
    data = load_digits_split()
    batches = [sample_indices(rngs, data.n_train, 4) for _ in range(last)]
    versions = [(w0, c0)] + [(h.weights, h.biases) for h in history[1:]]
    K = last - 1
    w_k, c_k = versions[K]
    # stage s (0-based) has delay M - 1 - s: assemble the stale point block by block
    w_hat, c_hat = w_k.copy(), c_k.copy()
    for s, (ws, cs) in enumerate(zip(network.weight_slices, network.bias_slices, strict=True)):
        w_read, c_read = versions[max(0, K - (stages - 1 - s))]
        w_hat[:, ws], c_hat[:, cs] = w_read[:, ws], c_read[:, cs]
    assert not np.array_equal(w_hat, w_k)
    idx = batches[K]
    gw, gc = _gradient(network, data.x_train[idx], data.y_train[idx], (w_hat, c_hat), w_k)
    np.testing.assert_array_equal(versions[K + 1][0], w_k + gw * -base.lr)
    np.testing.assert_array_equal(versions[K + 1][1], c_k - base.lr * gc)
    # staleness matters here: reading W_K everywhere would give a different update
    gw, gc = _gradient(network, data.x_train[idx], data.y_train[idx], (w_k, c_k), w_k)
    assert not np.array_equal(versions[K + 1][0], w_k + gw * -base.lr)


# --- reproducibility ----------------------------------------------------------------------------

@pytest.mark.parametrize("update", ["expected", "pulsed"])
def test_same_seed_same_bits_alone_and_in_an_ensemble(update):
    cfg = _config(mode="async", stages=2, update=update, steps=12, log_every=6, seeds=3)
    spec = replace(SMALL, grad_norm=True)
    ensemble = train_network(cfg, 5, spec=spec)
    alone = train_network(replace(cfg, seeds=1), 5, spec=spec)
    last = train_network(replace(cfg, seeds=1), 5, spec=spec, members=[2])
    again = train_network(cfg, 5, spec=spec)
    for single, r in ((alone, 0), (last, 2)):
        np.testing.assert_array_equal(single.weights[0], ensemble.weights[r])
        for name in ("loss", "grad_norm2", "test_accuracy"):
            np.testing.assert_array_equal(getattr(single.trace, name)[0],
                                          getattr(ensemble.trace, name)[r])
        assert single.trace.max_abs_w[0] == ensemble.trace.max_abs_w[r]
    np.testing.assert_array_equal(again.weights, ensemble.weights)
    assert not np.array_equal(ensemble.weights[0], ensemble.weights[1])
    other = train_network(replace(cfg, seeds=1), 6, spec=spec)
    assert not np.array_equal(other.weights[0], alone.weights[0])


# --- algorithms ---------------------------------------------------------------------------------

def test_digital_sgd_learns_the_digits():
    """The default 16-layer tanh MLP passes 90% test accuracy within 600 updates of 32 images."""
    cfg = _config(algorithm="digital", micro_batch_size=32, lr=0.15, steps=600, log_every=600,
                  seeds=2)
    trace = run_network(cfg)
    assert np.all(trace.test_accuracy[:, 0] < 0.3)
    assert np.all(trace.test_accuracy[:, -1] > 0.9), trace.test_accuracy
    assert np.all(trace.loss[:, -1] < 0.5 * trace.loss[:, 0])


def test_analog_with_large_tau_matches_digital():
    base = _config(mode="async", stages=2, steps=40, seeds=2, tau=1e6)
    digital = train_network(replace(base, algorithm="digital"), spec=SMALL)
    analog = train_network(base, spec=SMALL)
    np.testing.assert_allclose(analog.weights, digital.weights, rtol=0, atol=1e-6)
    np.testing.assert_allclose(analog.trace.loss, digital.trace.loss, rtol=1e-6)
    # at tau = 1 the asymmetric bias is visible at the same tolerance
    digital1 = train_network(replace(base, algorithm="digital", tau=1.0), spec=SMALL)
    analog1 = train_network(replace(base, tau=1.0), spec=SMALL)
    assert np.max(np.abs(analog1.weights - digital1.weights)) > 1e-4


def test_trace_bookkeeping():
    cfg = _config(mode="sync", stages=2, micro_batches=2, micro_batch_size=3, steps=7,
                  log_every=3, seeds=2)
    trace = train_network(cfg, spec=replace(SMALL, grad_norm=True)).trace
    np.testing.assert_array_equal(trace.step, [0, 3, 6, 7])
    np.testing.assert_array_equal(trace.samples, trace.step * 6)
    per_update = evaluate_schedule("sync", "total_cycles", stages=2, micro_batches=2)
    np.testing.assert_array_equal(trace.cycles, per_update * trace.step)
    assert trace.loss.shape == trace.grad_norm2.shape == trace.test_accuracy.shape == (2, 4)
    assert np.all(trace.grad_norm2 > 0) and np.all(np.isfinite(trace.grad_norm2))
    assert np.all(trace.max_abs_w <= 1.0)  # soft bounds, tau = 1
    assert np.all(trace.w_min_visited < 0) and np.all(trace.w_max_visited > 0)
    assert trace.config["network"]["layers"] == 4 and trace.config["problem"] == "digits-mlp"
    nan_trace = train_network(cfg, spec=SMALL).trace
    assert np.all(np.isnan(nan_trace.grad_norm2))


def test_engine_delegates_networks():
    from simulate import run

    cfg = _config(steps=3, log_every=3, seeds=1)
    via_engine = run(cfg, 4)
    direct = run_network(cfg, 4)
    np.testing.assert_array_equal(via_engine.loss, direct.loss)
    assert via_engine.config["seed"] == 4


def test_divergence_names_step_and_lr():
    cfg = _config(algorithm="digital", lr=1e7, steps=50)
    with pytest.raises(DivergenceError, match=r"diverged at step \d+: .*lr=1e\+07"):
        train_network(cfg, spec=SMALL)


def test_diverging_loss_is_caught_relative_to_the_start():
    """digits-mlp with lr = 1e4: the loss climbs from 2.3 to 9141 nats by step 10 (was exit 0)."""
    cfg = _config(lr=1e4, steps=40, micro_batch_size=1)  # the flags of simulate, as the issue
    with pytest.raises(DivergenceError, match=r"^diverged at step 10: training loss = .* "
                                              r"lr=10000"):
        run_network(cfg)


def test_default_network_ensemble_members_have_the_bits_of_the_run_alone():
    """The default 16-layer network has 16714 weights (beyond einsum's 8192-element buffer):
    grad_norm2 of member r is the R = 1 run's, bit for bit (it differed by 1e-15 relative)."""
    cfg = _config(mode="async", stages=4, steps=6, log_every=3, seeds=3)
    ensemble = train_network(cfg)
    assert ensemble.network.n_weights > 8192
    for r in range(3):
        alone = train_network(cfg, members=[r])
        for name in ("loss", "grad_norm2", "test_accuracy"):
            np.testing.assert_array_equal(getattr(alone.trace, name)[0],
                                          getattr(ensemble.trace, name)[r])


def test_network_memory_is_estimated_with_the_architecture():
    with pytest.raises(ParameterError, match=r"^width=100000 asks for .* bytes"):
        train_network(_config(steps=2), spec=NetworkSpec(layers=4, width=100_000))
