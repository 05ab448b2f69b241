r"""scikit-learn's bundled handwritten digits: fixed splits, an augmented set, batch sampling.

The data ship with scikit-learn (``sklearn.datasets.load_digits``: 1797 images of 8 x 8 pixels with
integer intensities 0..16, ten classes), so nothing is downloaded at run time. Features are divided
by 16, so every feature lies in [0, 1]. The split is fixed: a stratified
``train_test_split(test_size=360, random_state=0)`` gives 1437 training and 360 test images with the
class proportions of the whole set, identical on every machine and in every run.

Three data sets (:data:`DATA_SETS`, the ``data`` field of :class:`simulate.config.SimConfig`) share
those 360 test images:

- ``digits``: the 1437 training images (the default; today's bits);
- ``digits-holdout``: the 1437 split once more, stratified, ``random_state=0``, into 1150 training
  and :data:`VALIDATION_SIZE` = 287 **validation** images (for choosing a step size without
  looking at the test images);
- ``digits-augmented``: those 1150 training images followed by :data:`AUGMENT_COPIES` = 12
  transformed copies of each (14 950 rows: 13 times the 1150, over 10 times the 1437 images of
  ``digits``), validation and test images unchanged. Copy ``j`` of image ``x`` is ``x`` rotated
  by an angle :math:`\theta \sim U[-10^\circ, 10^\circ]` about the image centre and shifted by
  :math:`(d_y, d_x)`, each uniform in ``{-1, 0, 1}`` pixels, by one bilinear resampling
  (``scipy.ndimage.affine_transform``, ``order=1``, zeros outside; values clipped to [0, 1]):

  .. math:: x'(p) = x\big(R_{-\theta}\,(p - c - d) + c\big),\qquad c = (3.5, 3.5).

  The angles and shifts are drawn from ``SeedSequence(AUGMENT_SEED)`` in a fixed order, so the
  set is the same on every machine. The training loss of a run is measured on the 1150
  un-augmented images (:attr:`DigitsData.x_loss`): measuring it on all 14 950 rows would cost
  thirteen times as much per logging point.

**Loss subset.** Before its last logging point, a network run measures the training loss on a
fixed subset of those rows (:func:`loss_subset`, ``NetworkSpec.loss_rows`` of them): the rows of
one permutation drawn from ``SeedSequence(SUBSET_SEED)``, the first ``loss_rows`` of it, sorted;
the same subset for every member, step and run of a data set, so the measured curve is an unbiased
estimate of the full training loss (sampling without replacement) with the same error at every
point of every run. The test accuracy before the last point is measured likewise on a fixed subset
of the test images (:func:`accuracy_subset`, ``NetworkSpec.test_rows``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from theory.errors import ParameterError, check_range

__all__ = [
    "AUGMENT_COPIES", "AUGMENT_SEED", "DATA_SETS", "DigitsData", "SUBSET_SEED", "VALIDATION_SIZE",
    "accuracy_subset", "augment", "load_digits_data", "load_digits_split", "loss_subset",
    "measurement_record", "sample_indices", "train_rows", "transform_image",
]

#: number of test images of the fixed split (the remaining 1437 images train)
TEST_SIZE = 360
#: ``random_state`` of the fixed stratified split
SPLIT_SEED = 0
#: the largest pixel intensity of the digits data (features are divided by it)
MAX_INTENSITY = 16.0
#: the data sets a network run can train on (``SimConfig.data``; the first is the default)
DATA_SETS = ("digits", "digits-holdout", "digits-augmented")
#: validation images split off the 1437 training images by ``digits-holdout`` (20 %)
VALIDATION_SIZE = 287
#: transformed copies of each training image in ``digits-augmented``
AUGMENT_COPIES = 12
#: root seed of the augmentation draws (angles and shifts)
AUGMENT_SEED = 0
#: root seed of the fixed training-loss and test subsets (:func:`loss_subset`,
#: :func:`accuracy_subset`)
SUBSET_SEED = 0
#: largest rotation (degrees) and shift (pixels) of an augmented copy
_MAX_ANGLE, _MAX_SHIFT = 10.0, 1
#: images of the whole set and of the fixed training split
_TOTAL, _TRAIN = 1797, 1797 - TEST_SIZE


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
    x_val, y_val : ndarray or None
        Validation images and labels (``digits-holdout``, ``digits-augmented``), else ``None``.
    n_loss : int or None
        The training loss is measured on the first ``n_loss`` training rows (the un-augmented
        images of ``digits-augmented``); ``None``: on all of them.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    x_val: np.ndarray | None = None
    y_val: np.ndarray | None = None
    n_loss: int | None = None

    @property
    def x_loss(self) -> np.ndarray:
        """The training rows the training loss is measured on."""
        return self.x_train if self.n_loss is None else self.x_train[:self.n_loss]

    @property
    def y_loss(self) -> np.ndarray:
        """Their labels."""
        return self.y_train if self.n_loss is None else self.y_train[:self.n_loss]

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
    return DigitsData(*_frozen(x_train, y_train, x_test, y_test))


def _frozen(*arrays: np.ndarray) -> list[np.ndarray]:
    out = [np.ascontiguousarray(a) for a in arrays]
    for array in out:
        array.setflags(write=False)
    return out


def train_rows(name: str) -> int:
    """Training rows of data set ``name`` (without loading it): 1437, 1150 or 14 950."""
    if name not in DATA_SETS:
        raise ParameterError(f"data={name!r} is unknown; valid: {', '.join(DATA_SETS)}")
    if name == "digits":
        return _TRAIN
    originals = _TRAIN - VALIDATION_SIZE
    return originals * (1 + AUGMENT_COPIES) if name == "digits-augmented" else originals


@cache
def load_digits_data(name: str = "digits", dtype: str = "float64") -> DigitsData:
    """The data set ``name`` of :data:`DATA_SETS` (cached; read-only arrays; module docstring),
    its features in ``dtype`` (``"float64"`` or ``"float32"``: the float64 features rounded).

    Raises
    ------
    ParameterError
        ``data=...`` for an unknown name.
    """
    train_rows(name)  # checks the name
    if dtype != "float64":
        data = load_digits_data(name)
        cast = [None if a is None else a.astype(dtype)
                for a in (data.x_train, data.x_test, data.x_val)]
        x_train, x_test, x_val = (None if a is None else _frozen(a)[0] for a in cast)
        return DigitsData(x_train, data.y_train, x_test, data.y_test, x_val, data.y_val,
                          n_loss=data.n_loss)
    split = load_digits_split()
    if name == "digits":
        return split
    from sklearn.model_selection import train_test_split

    x_train, x_val, y_train, y_val = train_test_split(
        split.x_train, split.y_train, test_size=VALIDATION_SIZE, random_state=SPLIT_SEED,
        stratify=split.y_train,
    )
    n_loss = None
    if name == "digits-augmented":
        n_loss = x_train.shape[0]
        x_train, y_train = augment(x_train, y_train, AUGMENT_COPIES, AUGMENT_SEED)
    arrays = _frozen(x_train, y_train, split.x_test, split.y_test, x_val, y_val)
    return DigitsData(*arrays, n_loss=n_loss)


def loss_subset(data: DigitsData, rows: int | None) -> tuple[np.ndarray, np.ndarray]:
    """The fixed subset of ``rows`` of the loss rows (:attr:`DigitsData.x_loss`) and its labels.

    The rows are the first ``rows`` of one permutation of the loss rows drawn from
    ``SeedSequence(SUBSET_SEED)``, sorted (module docstring); ``None``, or at least as many rows
    as there are, gives all of them (``x_loss`` itself).

    Raises
    ------
    ParameterError
        ``rows`` not a positive integer.
    """
    return _fixed_subset("loss_rows", data.x_loss, data.y_loss, rows)


def accuracy_subset(data: DigitsData, rows: int | None) -> tuple[np.ndarray, np.ndarray]:
    """The fixed subset of ``rows`` of the 360 test images and their labels, drawn as
    :func:`loss_subset` draws its rows (a permutation of the test images from
    ``SeedSequence(SUBSET_SEED)``, its first ``rows``, sorted); ``None``, or at least 360, gives
    all of them (``x_test`` itself).

    Raises
    ------
    ParameterError
        ``rows`` not a positive integer (``test_rows``).
    """
    return _fixed_subset("test_rows", data.x_test, data.y_test, rows)


def _fixed_subset(name: str, x: np.ndarray, y: np.ndarray,
                  rows: int | None) -> tuple[np.ndarray, np.ndarray]:
    """The first ``rows`` of one permutation of the rows of ``x`` drawn from
    ``SeedSequence(SUBSET_SEED)``, sorted, and their labels (read-only); all of ``x`` for
    ``None`` or ``rows >= len(x)``; a bad ``rows`` is refused naming ``name``."""
    if rows is None or check_range(name, rows, 1, None, integer=True) >= x.shape[0]:
        return x, y
    permutation = np.random.default_rng(np.random.SeedSequence(SUBSET_SEED)).permutation(
        x.shape[0])
    picked = np.sort(permutation[:rows])
    x_subset, y_subset = _frozen(x[picked], y[picked])
    return x_subset, y_subset


def augment(x: np.ndarray, y: np.ndarray, copies: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    r"""The images ``x`` followed by ``copies`` rotated and shifted copies of each (docstring).

    Parameters
    ----------
    x : ndarray, shape (n, 64)
        Flattened 8 x 8 images with values in [0, 1].
    y : ndarray, shape (n,)
        Their labels (repeated for the copies).
    copies : int
        Copies per image (>= 0).
    seed : int
        Root seed of the draws: copy ``j`` of image ``i`` uses the ``(j, i)``-th angle
        :math:`\theta \sim U[-10, 10]` degrees and shifts :math:`d_y, d_x \in \{-1, 0, 1\}`.

    Returns
    -------
    x_aug : ndarray, shape ((1 + copies) n, 64)
        ``x`` first, then copy 0 of every image, copy 1, ...
    y_aug : ndarray, shape ((1 + copies) n,)
    """
    check_range("copies", copies, 0, None, integer=True)
    check_range("seed", seed, 0, None, integer=True)
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    rng = np.random.default_rng(np.random.SeedSequence(int(seed)))
    angles = np.deg2rad(rng.uniform(-_MAX_ANGLE, _MAX_ANGLE, size=(copies, n)))
    shifts = rng.integers(-_MAX_SHIFT, _MAX_SHIFT + 1, size=(copies, n, 2))
    images = x.reshape(n, 8, 8)
    out = np.empty(((1 + copies) * n, 64))
    out[:n] = x
    for j in range(copies):
        for i in range(n):
            out[(1 + j) * n + i] = transform_image(images[i], angles[j, i], *shifts[j, i]).ravel()
    return out, np.tile(np.asarray(y, dtype=np.int64), 1 + copies)


def transform_image(image: np.ndarray, radians: float, dy: float, dx: float) -> np.ndarray:
    r"""One augmented copy: ``image`` (8 x 8) rotated by ``radians`` about its centre, shifted
    by ``(dy, dx)`` pixels (rows down, columns right), bilinear, zeros outside, clipped to [0, 1].

    .. math:: x'(p) = x\big(R_{-\theta}(p - c - d) + c\big), \qquad
              R_{-\theta} = \begin{pmatrix}\cos\theta & \sin\theta \\
              -\sin\theta & \cos\theta\end{pmatrix}

    in (row, column) coordinates, so a positive angle turns the image counter-clockwise as
    displayed (row 0 at the top): ``pi / 2`` gives ``numpy.rot90(image)``.
    """
    from scipy.ndimage import affine_transform

    centre = np.array([3.5, 3.5])
    cos, sin = np.cos(radians), np.sin(radians)
    inverse = np.array([[cos, sin], [-sin, cos]])  # output pixel -> input position
    offset = centre - inverse @ (centre + np.array([dy, dx], dtype=float))
    moved = affine_transform(np.asarray(image, dtype=np.float64), inverse, offset=offset,
                             order=1, mode="constant", cval=0.0)
    return np.clip(moved, 0.0, 1.0, out=moved)


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


def measurement_record(data: DigitsData, loss_rows: int, test_rows: int, grad_norm: bool,
                       log_every: int) -> dict:
    """What a network run's curves were measured on (the trace's ``config["measurement"]``):
    the logging period ``log_every`` (:attr:`simulate.SimConfig.log_period`, also where the
    config's ``log_every`` is ``None``), images per curve before the last logging point
    (``loss``, ``grad_norm2``: the loss subset, 0 where not measured; ``test_accuracy``: the test
    subset; ``validation_accuracy``: every validation image, 0 without them), at the last point
    ``final_loss_rows`` (its loss and gradient norm: every training loss row) and
    ``final_test_rows`` (every test image), and the subsets' ``subset_seed``
    (:func:`simulate.problems.digits.loss_subset`,
    :func:`~simulate.problems.digits.accuracy_subset`)."""
    return {"log_every": int(log_every), "loss": int(loss_rows),
            "grad_norm2": int(loss_rows) if grad_norm else 0, "test_accuracy": int(test_rows),
            "validation_accuracy": 0 if data.x_val is None else int(data.x_val.shape[0]),
            "final_loss_rows": int(data.x_loss.shape[0]),
            "final_test_rows": int(data.x_test.shape[0]), "subset_seed": SUBSET_SEED}
