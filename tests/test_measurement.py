"""What a network run measures at its logging points: the training loss on a fixed subset before
the last point and on every training image at the last; the accuracies on every image."""

from dataclasses import replace

import numpy as np
import pytest

from simulate import NetworkSpec, SimConfig, train_network
from simulate.problems import load_digits_data, softmax_cross_entropy
from simulate.problems.digits import SUBSET_SEED, loss_subset
from simulate.problems.network import LOSS_ROWS
from simulate.problems.network_run import NetworkTraining
from theory import ParameterError

SMALL = NetworkSpec(layers=4, width=8, grad_norm=False, loss_rows=100)


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


def test_points_before_the_last_measure_the_subset_and_the_last_every_image():
    cfg = _config()
    training = NetworkTraining(cfg, spec=SMALL)
    x, y = loss_subset(training.data, SMALL.loss_rows)
    first = softmax_cross_entropy(training.network.logits(training.w, training.c, x), y)
    subset = training.run()
    full = train_network(cfg, spec=replace(SMALL, loss_rows=None))
    np.testing.assert_array_equal(subset.trace.loss[:, 0], first)
    # the measurement does not touch the training: same weights, same accuracies, same last loss
    np.testing.assert_array_equal(subset.weights, full.weights)
    np.testing.assert_array_equal(subset.trace.test_accuracy, full.trace.test_accuracy)
    np.testing.assert_array_equal(subset.trace.loss[:, -1], full.trace.loss[:, -1])
    assert not np.any(subset.trace.loss[:, :-1] == full.trace.loss[:, :-1])
    assert subset.trace.config["network"]["loss_rows"] == 100
    assert subset.trace.config["measurement"] == {
        "loss": 100, "grad_norm2": 0, "test_accuracy": 360, "validation_accuracy": 0,
        "final_loss_rows": 1437, "subset_seed": SUBSET_SEED}
    assert full.trace.config["measurement"]["loss"] == 1437


def test_the_gradient_norm_is_measured_on_the_loss_rows():
    cfg = _config(data="digits-holdout", steps=3, log_every=3, seeds=1)
    spec = replace(SMALL, grad_norm=True)
    subset = train_network(cfg, spec=spec)
    full = train_network(cfg, spec=replace(spec, loss_rows=None))
    assert subset.trace.config["measurement"] == {
        "loss": 100, "grad_norm2": 100, "test_accuracy": 360, "validation_accuracy": 287,
        "final_loss_rows": 1150, "subset_seed": SUBSET_SEED}
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
