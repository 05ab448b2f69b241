"""scikit-learn's bundled handwritten digits: a fixed split, features in [0, 1], batch sampling.

The data ship with scikit-learn (``sklearn.datasets.load_digits``: 1797 images of 8 x 8 pixels with
integer intensities 0..16, ten classes), so nothing is downloaded at run time. Features are divided
by 16, so every feature lies in [0, 1]. The split is fixed: a stratified
``train_test_split(test_size=360, random_state=0)`` gives 1437 training and 360 test images with the
class proportions of the whole set, identical on every machine and in every run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from theory.errors import check_range

__all__ = ["DigitsData", "load_digits_split", "sample_indices"]

#: number of test images of the fixed split (the remaining 1437 images train)
TEST_SIZE = 360
#: ``random_state`` of the fixed stratified split
SPLIT_SEED = 0
#: the largest pixel intensity of the digits data (features are divided by it)
MAX_INTENSITY = 16.0


@dataclass(frozen=True, eq=False)
class DigitsData:
    """The fixed train/test split of the digits data (read-only arrays).

    Attributes
    ----------
    x_train : ndarray, shape (1437, 64)
        Training features in [0, 1] (pixel intensity / 16), float64.
    y_train : ndarray, shape (1437,)
        Training labels 0..9, int64.
    x_test : ndarray, shape (360, 64)
        Test features in [0, 1].
    y_test : ndarray, shape (360,)
        Test labels.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray

    @property
    def n_features(self) -> int:
        """Input dimension (64)."""
        return int(self.x_train.shape[1])

    @property
    def n_classes(self) -> int:
        """Number of classes (10)."""
        return int(np.max(self.y_train)) + 1

    @property
    def n_train(self) -> int:
        """Number of training images (1437)."""
        return int(self.x_train.shape[0])


@cache
def load_digits_split() -> DigitsData:
    """Load the digits and split them once (cached; the arrays are read-only).

    Returns
    -------
    DigitsData
        1437 training and 360 test images, stratified by class, ``random_state=0``.
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = digits.data.astype(np.float64) / MAX_INTENSITY
    y = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=TEST_SIZE, random_state=SPLIT_SEED, stratify=y
    )
    arrays = [np.ascontiguousarray(a) for a in (x_train, y_train, x_test, y_test)]
    for array in arrays:
        array.setflags(write=False)
    return DigitsData(*arrays)


def sample_indices(
    rngs: Sequence[np.random.Generator], population: int, size: int, batches: int | None = None
) -> np.ndarray:
    """Draw micro- or mini-batches of training indices, with replacement, for each ensemble member.

    Member ``r`` draws from its own generator ``rngs[r]`` only, so a member's batches do not depend
    on the ensemble it runs in. ``batches=n`` draws the same numbers as ``n`` successive calls
    without it (one call per chunk of updates saves the per-call overhead).

    Parameters
    ----------
    rngs : sequence of numpy.random.Generator
        One generator per ensemble member (length ``R``).
    population : int
        Number of training samples to draw from.
    size : int
        Samples per member and batch.
    batches : int, optional
        Number of successive batches to draw at once.

    Returns
    -------
    ndarray of int64, shape (R, size), or (batches, R, size) when ``batches`` is given
    """
    check_range("population", population, 1, None, integer=True)
    check_range("size", size, 1, None, integer=True)
    count = 1 if batches is None else check_range("batches", batches, 1, None, integer=True)
    draws = np.stack([rng.integers(0, population, size=(count, size)) for rng in rngs], axis=1)
    return draws[0] if batches is None else draws
