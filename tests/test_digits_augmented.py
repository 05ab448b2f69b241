"""The digits data sets (``SimConfig.data``): the holdout split, the augmented set, the field."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import simulate.config as config_module
from simulate import NetworkSpec, SimConfig, load_digits_split, train_network
from simulate.problems import (
    AUGMENT_COPIES,
    VALIDATION_SIZE,
    augment,
    load_digits_data,
    train_rows,
    transform_image,
)
from theory import ParameterError


def _rows(x):
    return {row.tobytes() for row in np.asarray(x)}


def test_default_data_is_the_fixed_split():
    assert load_digits_data("digits") is load_digits_split()
    assert load_digits_data().x_val is None and load_digits_data().n_loss is None
    assert SimConfig().data == "digits"


def test_holdout_split_is_disjoint_stratified_and_keeps_the_test_images():
    split, hold = load_digits_split(), load_digits_data("digits-holdout")
    assert hold.x_train.shape == (1437 - VALIDATION_SIZE, 64) == (train_rows("digits-holdout"), 64)
    assert hold.x_val.shape == (VALIDATION_SIZE, 64)
    np.testing.assert_array_equal(hold.x_test, split.x_test)
    assert not _rows(hold.x_train) & _rows(hold.x_val) - _rows(split.x_test)
    assert _rows(hold.x_train) | _rows(hold.x_val) == _rows(split.x_train)
    # stratified: every class within one image of its share of the validation images
    share = np.bincount(split.y_train) * VALIDATION_SIZE / split.n_train
    assert np.all(np.abs(np.bincount(hold.y_val) - share) <= 1)
    assert not hold.x_train.flags.writeable and not hold.x_val.flags.writeable


def test_augmented_set_size_labels_range_and_loss_rows():
    hold, aug = load_digits_data("digits-holdout"), load_digits_data("digits-augmented")
    n = hold.n_train
    assert aug.n_train == n * (1 + AUGMENT_COPIES) == train_rows("digits-augmented")
    assert aug.n_train >= 10 * 1437  # at least ten times the training set
    np.testing.assert_array_equal(aug.x_train[:n], hold.x_train)  # originals first
    np.testing.assert_array_equal(aug.y_train, np.tile(hold.y_train, 1 + AUGMENT_COPIES))
    np.testing.assert_array_equal(aug.x_loss, hold.x_train)  # loss on the originals
    np.testing.assert_array_equal(aug.x_val, hold.x_val)
    assert aug.x_train.min() >= 0.0 and aug.x_train.max() <= 1.0
    copies = aug.x_train[n:].reshape(AUGMENT_COPIES, n, 64)
    assert np.all(np.abs(copies - hold.x_train).sum(axis=2) > 0)  # no copy is left unchanged...
    # ...and each stays close: the ink's centre moves by at most a shift (sqrt 2) plus what a
    # 10 degree turn moves a point at most 5 pixels from the centre (0.9)
    grid = np.indices((8, 8)).reshape(2, 64).T

    def centre(x):
        return (x @ grid) / x.sum(axis=-1, keepdims=True)

    moved = np.linalg.norm(centre(copies) - centre(hold.x_train), axis=-1)
    assert moved.max() <= np.sqrt(2) + 0.9 + 0.5  # + 0.5: ink pushed off the border


def test_augment_is_deterministic_and_seeded():
    x, y = load_digits_data("digits-holdout").x_train[:20], np.arange(20)
    a, ya = augment(x, y, 3, seed=0)
    b, _ = augment(x, y, 3, seed=0)
    c, _ = augment(x, y, 3, seed=1)
    np.testing.assert_array_equal(a, b)  # the same seed, the same bits
    assert not np.array_equal(a[20:], c[20:])
    assert a.shape == (80, 64) and list(ya[:40]) == list(range(20)) * 2


def test_transform_image_rotation_direction_and_shift():
    image = np.zeros((8, 8))
    image[1, 2], image[5, 6] = 1.0, 0.5
    np.testing.assert_allclose(transform_image(image, np.pi / 2, 0, 0), np.rot90(image),
                               atol=1e-12)
    shifted = transform_image(image, 0.0, 1, -1)  # one row down, one column left
    expected = np.zeros((8, 8))
    expected[2, 1], expected[6, 5] = 1.0, 0.5
    np.testing.assert_array_equal(shifted, expected)
    np.testing.assert_array_equal(transform_image(image, 0.0, 0, 0), image)


def test_data_field_validation_and_memory_check(monkeypatch):
    with pytest.raises(ParameterError, match="^data='mnist' is unknown; valid: digits"):
        SimConfig(problem="digits-mlp", data="mnist")
    with pytest.raises(ParameterError, match="^data='digits-augmented' applies to the digits"):
        SimConfig(problem="quadratic", data="digits-augmented")
    monkeypatch.setattr(config_module, "MAX_ARRAY_BYTES", 8 * 64 * 2000)
    SimConfig(problem="digits-mlp", data="digits-holdout", steps=10)
    with pytest.raises(ParameterError, match="^data='digits-augmented' asks for .* bytes of "
                                             "training images"):
        SimConfig(problem="digits-mlp", data="digits-augmented", steps=10)


def test_network_trains_on_the_augmented_set_and_measures_validation():
    config = SimConfig(problem="digits-mlp", data="digits-augmented", mode="async", stages=2,
                       micro_batch_size=4, lr=0.02, steps=60, seeds=2, log_every=30)
    run = train_network(config, spec=NetworkSpec(layers=3, grad_norm=False))
    assert run.validation_accuracy.shape == run.trace.test_accuracy.shape == (2, 3)
    assert run.trace.config["data"] == "digits-augmented"
    plain = train_network(replace(config, data="digits"), spec=NetworkSpec(layers=3,
                                                                            grad_norm=False))
    assert plain.validation_accuracy is None
