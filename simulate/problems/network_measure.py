r"""What a network run measures at a logging point, member by member: the training loss and the
squared gradient norm on given training rows, the test accuracy on given test rows, the
validation accuracy (:mod:`simulate.problems.network` describes the measurements; the run,
:class:`simulate.problems.network_run.NetworkTraining`, picks the rows).

Member by member: each member's arrays (its rows through one network) then stay in cache, and a
member computes what its run alone computes (measured faster than one stacked pass of every
member, ``bench/measurement_share.py`` (c)). A member's views of the weights and of its
gradient work arrays (:class:`MemberViews`) are built once per run: building them costs about
30 us a set, about 10 % of a default logging point of one member.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from .digits import DigitsData
from .network import Network, StageView, softmax_cross_entropy
from .oracle import row_dot

__all__ = [
    "MEASURE_CHUNK",
    "MemberViews",
    "measure_members",
]

#: rows per chunk of a measured loss (the default loss subset is one chunk)
MEASURE_CHUNK = 256


class MemberViews(NamedTuple):
    """One member's row of the weights and biases and of its gradient work arrays, with their
    stage views (:meth:`simulate.problems.network.Network.views`).

    Attributes
    ----------
    w, c : ndarray, shape (1, n_weights), (1, n_biases)
        Views of the member's row of the run's arrays (updated in place by the run, so the
        views stay valid).
    current : tuple of StageView
    gw, gc : ndarray
        Work arrays of the gradient norm, shaped as ``w`` and ``c``.
    grads : tuple of StageView
        Views of ``gw`` and ``gc``.
    """

    w: np.ndarray
    c: np.ndarray
    current: tuple[StageView, ...]
    gw: np.ndarray
    gc: np.ndarray
    grads: tuple[StageView, ...]

    @classmethod
    def of(cls, network: Network, w: np.ndarray, c: np.ndarray) -> list[MemberViews]:
        """The views of every member of the arrays ``w`` ``(R, n_weights)``, ``c``
        ``(R, n_biases)``."""
        members = []
        for r in range(w.shape[0]):
            wr, cr = w[r:r + 1], c[r:r + 1]
            gw, gc = np.empty_like(wr), np.empty_like(cr)
            members.append(cls(wr, cr, network.views(wr, cr), gw, gc, network.views(gw, gc)))
        return members


def measure_members(network: Network, data: DigitsData, members: Sequence[MemberViews],
                    grad_norm: bool, x_loss: np.ndarray, y_loss: np.ndarray, x_test: np.ndarray,
                    y_test: np.ndarray):
    """Training loss and squared gradient norm (``nan`` unless ``grad_norm``) on the training
    rows ``x_loss`` (labels ``y_loss``), test accuracy on the test rows ``x_test`` (labels
    ``y_test``), validation accuracy (``nan`` without validation images), per member.

    Returns
    -------
    loss, grad_norm2, test_accuracy, validation_accuracy : ndarray, shape (R,)
    """
    columns = [_measure_member(network, data, member, grad_norm, x_loss, y_loss, x_test, y_test)
               for member in members]
    return tuple(np.concatenate(column) for column in zip(*columns, strict=True))


def _measure_member(network: Network, data: DigitsData, member: MemberViews, grad_norm: bool,
                    x_loss: np.ndarray, y_loss: np.ndarray, x_test: np.ndarray,
                    y_test: np.ndarray):
    """:func:`measure_members` of one member."""
    loss, norm2 = _chunked_loss(network, member, x_loss, y_loss, grad_norm)
    predicted = np.argmax(network.logits(member.w, member.c, x_test, views=member.current),
                          axis=-1)
    accuracy = np.mean(predicted == y_test, axis=-1)
    if data.x_val is None:
        return loss, norm2, accuracy, np.full(1, np.nan)
    validation = np.argmax(network.logits(member.w, member.c, data.x_val,
                                          views=member.current), axis=-1) == data.y_val
    return loss, norm2, accuracy, np.mean(validation, axis=-1)


def _chunked_loss(network: Network, member: MemberViews, x: np.ndarray, y: np.ndarray,
                  grad_norm: bool):
    r"""Mean loss of the rows ``x`` and the squared norm of its gradient (``nan`` unless
    ``grad_norm``), in chunks of at most :data:`MEASURE_CHUNK` rows (whose activations stay in
    cache): :math:`L = \sum_j (n_j / n) L_j` and :math:`g = \sum_j (n_j / n) g_j` over chunks
    ``j`` of ``n_j`` rows (one chunk, the loss subset: the unchunked bits)."""
    n = x.shape[0]
    loss, gw_sum, gc_sum = 0.0, 0.0, 0.0
    current, gw, gc = member.current, member.gw, member.gc
    backward = [view.weights for view in current]
    for start in range(0, n, MEASURE_CHUNK):
        xs, ys = x[start:start + MEASURE_CHUNK], y[start:start + MEASURE_CHUNK]
        share = xs.shape[0] / n
        if grad_norm:
            part = network.gradient(xs, ys, current, backward, member.grads)
            gw_sum, gc_sum = (gw, gc) if share == 1 else (gw_sum + share * gw, gc_sum + share * gc)
        else:
            part = softmax_cross_entropy(network.logits(member.w, member.c, xs, views=current), ys)
        loss = part if share == 1 else loss + share * part
    if not grad_norm:
        return loss, np.full(1, np.nan)
    return loss, row_dot(gw_sum, gw_sum) + row_dot(gc_sum, gc_sum)
