"""What a network run measures at its logging points: the training loss and the test accuracy on
fixed subsets before the last point and on every training and test image at the last; the
validation accuracy on every image; a network's default logging period."""

from dataclasses import replace

import numpy as np
import pytest

from simulate import NetworkSpec, SimConfig, train_network
from simulate.problems import load_digits_data, softmax_cross_entropy
from simulate.problems.digits import SUBSET_SEED, accuracy_subset, loss_subset
from simulate.problems.network import CURVE_SPEC, LOSS_ROWS, TEST_ROWS
from simulate.problems.network_run import NetworkTraining
from simulate.specs import default_log_every
from theory import ParameterError

SMALL = NetworkSpec(layers=4, width=8, grad_norm=False, loss_rows=100, test_rows=50)


def _config(**kw) -> SimConfig:
    base = dict(problem="digits-mlp", mode="none", algorithm="analog", device="softbounds",
                tau=1.0, update="expected", micro_batch_size=4, lr=0.1, steps=6, log_every=3,
                seeds=2)
    return SimConfig(**{**base, **kw})


def test_the_subset_is_fixed_sorted_distinct_and_drawn_from_the_loss_rows():
    data = load_digits_data("digits")
    x, y = loss_subset(data, 100)
    again, _ = loss_subset(data, 100)
    np.testing.assert_array_equal(x, again)
    picked = np.random.default_rng(np.random.SeedSequence(SUBSET_SEED)).permutation(1437)[:100]
    np.testing.assert_array_equal(x, data.x_loss[np.sort(picked)])
    np.testing.assert_array_equal(y, data.y_loss[np.sort(picked)])
    assert len({row.tobytes() for row in x}) == len(np.unique(np.sort(picked)))
    assert loss_subset(data, None)[0] is data.x_loss and loss_subset(data, 5000)[0] is data.x_loss
    augmented = load_digits_data("digits-augmented")
    assert loss_subset(augmented, 5000)[0].shape[0] == 1150  # the un-augmented rows only
    with pytest.raises(ParameterError, match="loss_rows"):
        NetworkSpec(loss_rows=0)


def test_the_test_subset_is_fixed_sorted_and_drawn_from_the_test_images():
    data = load_digits_data("digits-holdout")
    x, y = accuracy_subset(data, 50)
    picked = np.sort(np.random.default_rng(np.random.SeedSequence(SUBSET_SEED)).permutation(
        360)[:50])
    np.testing.assert_array_equal(x, data.x_test[picked])
    np.testing.assert_array_equal(y, data.y_test[picked])
    np.testing.assert_array_equal(accuracy_subset(data, 50)[0], x)
    assert accuracy_subset(data, None)[0] is data.x_test
    assert accuracy_subset(data, 360)[0] is data.x_test
    assert accuracy_subset(load_digits_data("digits"), TEST_ROWS)[0].shape == (TEST_ROWS, 64)
    with pytest.raises(ParameterError, match="test_rows"):
        NetworkSpec(test_rows=0)


def test_points_before_the_last_measure_the_subsets_and_the_last_every_image():
    cfg = _config()
    training = NetworkTraining(cfg, spec=SMALL)
    x, y = loss_subset(training.data, SMALL.loss_rows)
    first = softmax_cross_entropy(training.network.logits(training.w, training.c, x), y)
    x_test, y_test = accuracy_subset(training.data, SMALL.test_rows)
    predicted = np.argmax(training.network.logits(training.w, training.c, x_test), axis=-1)
    first_accuracy = np.mean(predicted == y_test, axis=-1)
    subset = training.run()
    full = train_network(cfg, spec=replace(SMALL, loss_rows=None, test_rows=None))
    np.testing.assert_array_equal(subset.trace.loss[:, 0], first)
    np.testing.assert_array_equal(subset.trace.test_accuracy[:, 0], first_accuracy)
    # the measurement does not touch the training: same weights, same last loss and accuracy
    np.testing.assert_array_equal(subset.weights, full.weights)
    np.testing.assert_array_equal(subset.trace.loss[:, -1], full.trace.loss[:, -1])
    np.testing.assert_array_equal(subset.trace.test_accuracy[:, -1],
                                  full.trace.test_accuracy[:, -1])
    assert not np.any(subset.trace.loss[:, :-1] == full.trace.loss[:, :-1])
    assert subset.trace.config["network"]["loss_rows"] == 100
    assert subset.trace.config["network"]["test_rows"] == 50
    assert subset.trace.config["measurement"] == {
        "log_every": 3, "loss": 100, "grad_norm2": 0, "test_accuracy": 50,
        "validation_accuracy": 0, "final_loss_rows": 1437, "final_test_rows": 360,
        "subset_seed": SUBSET_SEED}
    assert full.trace.config["measurement"]["loss"] == 1437
    assert full.trace.config["measurement"]["test_accuracy"] == 360


def test_a_network_logs_every_eighth_of_its_run_by_default_an_oracle_every_10():
    assert SimConfig().log_every is None
    assert default_log_every(256, network=True) == 32
    assert default_log_every(80, network=True) == 10 == default_log_every(10**6, network=False)
    assert default_log_every(5, network=True) == 10
    network = _config(steps=40, log_every=None, seeds=1)
    assert network.log_period == 10
    assert replace(network, steps=96).log_period == 12
    assert replace(network, steps=96, log_every=7).log_period == 7
    trace = train_network(replace(network, steps=96), spec=SMALL).trace
    np.testing.assert_array_equal(trace.step, np.arange(0, 97, 12))
    assert trace.config["log_every"] is None and trace.config["measurement"]["log_every"] == 12
    assert SimConfig(steps=25).log_period == 10
    with pytest.raises(ParameterError, match="log_every"):
        SimConfig(log_every=0)


def test_the_studies_measure_every_test_image_and_256_loss_rows():
    assert (CURVE_SPEC.test_rows, CURVE_SPEC.loss_rows, CURVE_SPEC.grad_norm) == (None, 256, False)
    assert (NetworkSpec().test_rows, NetworkSpec().loss_rows) == (TEST_ROWS, LOSS_ROWS)


def test_the_gradient_norm_is_measured_on_the_loss_rows():
    cfg = _config(data="digits-holdout", steps=3, log_every=3, seeds=1)
    spec = replace(SMALL, grad_norm=True)
    subset = train_network(cfg, spec=spec)
    full = train_network(cfg, spec=replace(spec, loss_rows=None))
    assert subset.trace.config["measurement"] == {
        "log_every": 3, "loss": 100, "grad_norm2": 100, "test_accuracy": 50,
        "validation_accuracy": 287, "final_loss_rows": 1150, "final_test_rows": 360,
        "subset_seed": SUBSET_SEED}
    np.testing.assert_array_equal(subset.trace.grad_norm2[:, -1], full.trace.grad_norm2[:, -1])
    # the last point's loss and gradient, measured in chunks of 256 rows, are those of one pass
    data, network = load_digits_data("digits-holdout"), subset.network
    gw, gc = np.empty_like(subset.weights), np.empty_like(subset.biases)
    views = network.views(subset.weights, subset.biases)
    loss = network.gradient(data.x_loss, data.y_loss, views, [v.weights for v in views],
                            network.views(gw, gc))
    np.testing.assert_allclose(subset.trace.loss[:, -1], loss, rtol=1e-12)
    np.testing.assert_allclose(subset.trace.grad_norm2[:, -1],
                               np.sum(gw * gw, axis=1) + np.sum(gc * gc, axis=1), rtol=1e-10)
    assert subset.trace.grad_norm2[0, 0] != full.trace.grad_norm2[0, 0]
    np.testing.assert_array_equal(subset.validation_accuracy, full.validation_accuracy)


def test_the_default_subset_loss_estimates_the_full_loss():
    """At trained weights of 6 seeds, the default subset's loss is within 4 standard errors
    (sampling without replacement, from each seed's per-image losses) of the full loss."""
    run = train_network(_config(steps=60, log_every=60, seeds=6, lr=0.2),
                        spec=NetworkSpec(layers=4, width=16, grad_norm=False))
    data = load_digits_data("digits")
    x, y = loss_subset(data, LOSS_ROWS)
    logits = run.network.logits(run.weights, run.biases, data.x_loss)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    per_image = np.log(np.exp(shifted).sum(axis=-1)) - np.take_along_axis(
        shifted, np.broadcast_to(data.y_loss, shifted.shape[:2])[..., None], axis=-1)[..., 0]
    full = per_image.mean(axis=1)
    np.testing.assert_allclose(full, run.trace.loss[:, -1], rtol=1e-12)
    subset = softmax_cross_entropy(run.network.logits(run.weights, run.biases, x), y)
    n, s = data.x_loss.shape[0], LOSS_ROWS
    standard_error = per_image.std(axis=1, ddof=1) / np.sqrt(s) * np.sqrt((n - s) / (n - 1))
    z = (subset - full) / standard_error
    assert np.all(np.abs(z) < 4), z
    assert np.all(np.abs(subset - full) > 0)


def test_a_network_run_is_on_one_blas_thread_and_restores_the_limits():
    from threadpoolctl import threadpool_info, threadpool_limits

    def blas_threads():
        return {info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"}

    inside = []
    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        train_network(_config(), spec=SMALL, progress=lambda done: inside.append(blas_threads()))
        after = blas_threads()
    assert inside and all(threads == {1} for threads in inside)
    assert after == before and 2 in before  # (a BLAS built single-threaded stays at 1)
