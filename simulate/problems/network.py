r"""Digits MLP and residual MLP written stage by stage, trained through the pipeline schedules.

A network is a chain of layers, cut into ``M`` contiguous **stages** (one accelerator each). Every
stage's forward and backward take the weights to read as arguments, so the asynchronous pipeline can
run a micro-batch's forward through stale weights and its backward through the current ones, exactly
as the schedule prescribes (paper-notes section 2).

Layers (input ``h`` of shape ``(R, n, fan_in)``, weights ``W`` of shape ``(R, fan_in, fan_out)``,
bias ``c``, activation ``phi`` = tanh or ReLU):

=============  =====================================  ==============================================
kind           forward                                backward (``delta`` = dL/d output)
=============  =====================================  ==============================================
``dense``      :math:`a = \phi(hW + c)`               :math:`\delta_z = \delta \odot \phi'(z)`,
                                                      :math:`\delta_h = \delta_z W^\top`
``residual``   :math:`h + \phi(hW + c)`               :math:`\delta_h = \delta + \delta_z W^\top`
``output``     :math:`hW + c` (logits)                :math:`\delta_z = \delta`,
                                                      :math:`\delta_h = \delta_z W^\top`
=============  =====================================  ==============================================

and for every kind :math:`\partial L/\partial W = h^\top \delta_z`,
:math:`\partial L/\partial c = \sum_i \delta_{z,i}`.

``digits-mlp`` is ``layers - 1`` dense layers (the first maps the 64 pixels to ``width``) and an
output layer; ``digits-resmlp`` is a dense input projection, ``layers - 2`` residual blocks and an
output layer. The loss is the mean softmax cross-entropy
:math:`L = \frac1n \sum_i (\log\sum_j e^{z_{ij}} - z_{i y_i})`.

**Pipeline semantics, no weight stashing.** Update ``k`` (0-based) trains on micro-batch ``k``. Let
``W_j^(m)`` be stage m's weights after ``j`` updates and ``d_m`` the forward delay of the schedule
(:func:`theory.schedules.evaluate_schedule`: ``M - m`` for ``async``, 0 otherwise). Then

- the forward at stage m reads ``W^(m)_{max(0, k - d_m)}`` (weights and biases); it stores its input
  ``h`` and its activation ``phi(z)`` computed with those stale weights;
- the backward at stage m reads the current ``W^(m)_k``: the gradient passed to the previous
  stage is :math:`\delta_z W_k^\top` (the crossbar holding the current weights does that MVM),
  while the weight gradient :math:`h^\top \delta_z` and :math:`\phi'(z)` use the stale stored
  input and activation;
- every stage then applies its update, giving ``W_{k+1}``: one write of the batch-mean gradient
  (``SimConfig.write = "batch-mean"``), or (``"per-sample"``) one write per sample of the batch in
  sample order, sample t's desired increment :math:`-\alpha\, h_t\, \delta_{z,t}^\top` per layer
  (:math:`-(\alpha/n)` times its own loss's gradient; every write at the weights the previous one
  left, all gradients read before the first write, as a crossbar does). With the
  ``stochastic``/``mean-count`` pulse types each such write fires aihwkit's bit trains on the
  outer product. Biases (digital) take the batch mean once in both semantics (equal to per-sample
  digital writes up to rounding).

Before the pipeline has filled (``k < d_m``) the forward reads ``W_0``. Only the versions that
will be read are kept: a ring buffer of ``d_m + 1`` copies of stage m's block (none for
``d_m = 0``; :class:`simulate.pipeline.staleness.StaleVersions`, the one the oracle engine uses
too). ``none`` and ``sync`` compute the exact gradient of the whole mini-batch of ``B b`` samples in
one pass, so their iterates are identical; they differ in the cycles counted.

**Analog and digital parameters.** The weight matrices are the analog arrays: they are updated by
the run's algorithm (digital ``w + dw`` or analog through :mod:`simulate.device`, with
:math:`dw = -\alpha\,\partial L/\partial W`) and are what ``max_abs_w`` and ``w_min/max_visited``
measure (``algorithm="mixed"``: the weights of ``digital_stages`` update digitally, the others
through the device). Biases are digital for every algorithm (``c - alpha dL/dc``), as in a
periphery that adds the bias after the crossbar MVM; they are read with the same staleness as
their stage's weights.

**Initialisation.** ``W ~ N(0, 1/fan_in)`` clipped to ``init_fraction`` times the device range
``[w_min, w_max]`` (default half of it), biases 0. The device range is used for digital runs too, so
a digital and an analog run of one configuration start from the same weights.

**Measurements** (at every logging point, :class:`~simulate.trace.Trace`): ``loss`` is the mean
cross-entropy over the training split (1437 images of ``digits``; the un-augmented rows of
``digits-augmented``, :attr:`simulate.problems.digits.DigitsData.x_loss`) at the current weights,
at the logging points before the last on a fixed subset of ``NetworkSpec.loss_rows`` of them
(default 128, :func:`simulate.problems.digits.loss_subset`: an unbiased estimate, one subset for
every member and step) and at the last point on all of them; ``grad_norm2`` the squared norm of
its gradient with respect to every trained parameter (weights and biases) on the same rows, one
extra backward pass (``nan`` with ``NetworkSpec(grad_norm=False)``; on the subset it overestimates
the full norm by the sampling variance of the subset's mean gradient);
``test_accuracy`` on a fixed subset of ``NetworkSpec.test_rows`` of the 360 test images (default
120, :func:`simulate.problems.digits.accuracy_subset`) before the last point and on all 360 at the
last (and :attr:`NetworkRun.validation_accuracy` on every validation image of the data sets that
hold some, at every point). A network's default logging period is ``max(10, steps // 8)``
(:func:`simulate.specs.default_log_every`); the trace's ``config["measurement"]`` records the
period and the images of every curve. ``Trace.avg_grad_norm2`` (the average over
every iterate) is left empty: it would cost a full-training-set backward pass per update, about
90 times the work of the update itself.

**Randomness.** Member ``r`` draws its initial weights and then its batches (with replacement) from
its ``data`` stream, its pulses from its ``device`` stream (:mod:`simulate.rng`); all arithmetic is
row-wise, so a member gives the same bits alone and inside an ensemble. The float64 ``tanh`` is
:func:`simulate.problems.activation.tanh_inplace` (IEEE operations only: the same bits on every
CPU, about 3x numpy's where numpy's is the C library's scalar one); float32's is numpy's.

**Analog forward and backward products.** With ``SimConfig.forward_io`` / ``backward_io`` other
than ``perfect`` (analog runs only), the products ``h W`` of every layer's forward and
``delta_z W^T`` of its backward go through the tile's DAC, output noise and ADC with noise and
bound management (:mod:`simulate.device.mvm`, aihwkit's rules), drawing from the member's ``io``
stream; the weight gradient ``h^T delta_z`` (the update) and the measurements (training loss,
gradient norm, test accuracy of the weights) are exact.

**Divergence.** The training loss (at every logging point) and the weights (after every update)
are checked with the rules of :mod:`simulate.pipeline.staleness`: a non-finite value, or one beyond
``NETWORK_LOSS_FACTOR`` (10, the loss) or ``DIVERGENCE_FACTOR`` (the weights) times
``max(1, |value at the start|)``, raises :class:`theory.errors.DivergenceError` with the update
index and the learning rate. An analog run pinned at its device bounds on most logging points
issues a :class:`simulate.device.pinned.PinnedWarning`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np

from theory.errors import ParameterError, check_range
from theory.networks import network_layers

from ..device import (
    AnalogPass,
    add_bias,
    dense_backward,
    softmax_delta,
)
from .activation import tanh_inplace
from .sizes import NETWORK_LAYERS, NETWORK_WIDTH

__all__ = [
    "ACTIVATIONS",
    "Buffers",
    "CURVE_SPEC",
    "DenseLayer",
    "LOSS_ROWS",
    "Network",
    "NetworkSpec",
    "StageView",
    "TEST_ROWS",
    "contiguous_slices",
    "one_blas_thread",
    "softmax_cross_entropy",
]

ACTIVATIONS = ("tanh", "relu")
#: default training images of the loss subset measured before a run's last logging point
#: (``NetworkSpec.loss_rows``): the standard error of the loss estimate is about
#: ``sd / sqrt(128)``, 9 % of the per-image spread, at a tenth of the full set's cost
LOSS_ROWS = 128
#: default test images of the accuracy subset measured before a run's last logging point
#: (``NetworkSpec.test_rows``): a third of the 360, the standard error of an accuracy near 0.9
#: about 2.7 points (1.6 on all 360) at a third of the cost
TEST_ROWS = 120


@dataclass(frozen=True)
class NetworkSpec:
    """Architecture and measurement settings of the digits networks (not part of SimConfig).

    Parameters
    ----------
    layers : int
        Weight layers ``L`` (>= 2), the most stages the network can be cut into.
    width : int
        Hidden width.
    activation : {"tanh", "relu"}
    init_fraction : float
        Initial weights are clipped to this fraction of the device range, in (0, 1].
    grad_norm : bool
        Whether each logging point computes the gradient norm on the rows its training loss is
        measured on (one extra backward pass over them); ``nan`` otherwise.
    loss_rows : int or None
        Training images the training loss (and gradient norm) is measured on at the logging points
        before the last: a fixed subset (:func:`simulate.problems.digits.loss_subset`, the same for
        every member and step); the last point measures all of them. ``None``: all of them at
        every point. Default :data:`LOSS_ROWS`.
    test_rows : int or None
        Test images the test accuracy is measured on at the logging points before the last: a
        fixed subset (:func:`simulate.problems.digits.accuracy_subset`, the same for every member
        and step); the last point measures all 360. ``None``: all of them at every point.
        Default :data:`TEST_ROWS`. The validation accuracy is always measured on every validation
        image (a study picks its step on it).
    """

    layers: int = NETWORK_LAYERS
    width: int = NETWORK_WIDTH
    activation: str = "tanh"
    init_fraction: float = 0.5
    grad_norm: bool = True
    loss_rows: int | None = LOSS_ROWS
    test_rows: int | None = TEST_ROWS

    def __post_init__(self):
        check_range("layers", self.layers, 2, None, integer=True)
        check_range("width", self.width, 1, None, integer=True)
        if self.activation not in ACTIVATIONS:
            raise ParameterError(
                f"activation={self.activation!r} is unknown; valid: {', '.join(ACTIVATIONS)}"
            )
        check_range("init_fraction", self.init_fraction, 0, 1, low_open=True)
        for name in ("loss_rows", "test_rows"):
            if getattr(self, name) is not None:
                check_range(name, getattr(self, name), 1, None, integer=True)


#: the measurement of the studies that read whole curves (the speedup study picks a step on every
#: point and reports its test accuracy, the training figure plots them): every test image at
#: every point, the loss on a subset of 256 training images, no gradient norm (as before the
#: defaults shrank; a default run's intermediate points are sized for a small share of its time)
CURVE_SPEC = NetworkSpec(grad_norm=False, loss_rows=256, test_rows=None)


@dataclass(frozen=True)
class DenseLayer:
    """One weight layer (a dense matrix and a bias): its kind, shape and offsets into the flat
    parameter arrays.

    Attributes
    ----------
    kind : {"dense", "residual", "output"}
    fan_in, fan_out : int
    w_offset : int
        Offset of its ``fan_in * fan_out`` weights in its stage's weight block.
    c_offset : int
        Offset of its ``fan_out`` biases in its stage's bias block.
    """

    kind: str
    fan_in: int
    fan_out: int
    w_offset: int
    c_offset: int

    @property
    def w_size(self) -> int:
        """Number of weights, ``fan_in * fan_out``."""
        return self.fan_in * self.fan_out


@dataclass(frozen=True)
class Network:
    """A layer chain cut into contiguous stages, over flat parameter arrays of shape ``(R, P)``.

    The weights of all layers are stored in one array of shape ``(R, n_weights)`` and the biases in
    one of shape ``(R, n_biases)``; stage ``s`` (0-based) owns the contiguous columns
    ``weight_slices[s]`` / ``bias_slices[s]``, and its layers index into that stage block.

    Attributes
    ----------
    stages : tuple of tuple of DenseLayer
        The layers of each stage, input side first.
    activation : str
    """

    stages: tuple[tuple[DenseLayer, ...], ...]
    activation: str

    @classmethod
    def build(cls, problem: str, spec: NetworkSpec, stages: int, n_in: int, n_out: int) -> Network:
        """The network of ``problem`` with ``spec.layers`` layers cut into ``stages`` stages.

        Layers are split as evenly as possible: the first ``L mod M`` stages get
        ``ceil(L / M)`` layers, the others ``floor(L / M)``.
        """
        chain = network_layers(problem, spec.layers, spec.width, n_in, n_out)
        check_range("stages", stages, 1, spec.layers, integer=True)
        n_layers = len(chain)
        per_stage, extra = divmod(n_layers, stages)
        built, first = [], 0
        for s in range(stages):
            count = per_stage + (1 if s < extra else 0)
            layers, w_off, c_off = [], 0, 0
            for i in range(first, first + count):
                kind, fan_in, fan_out = chain[i]
                layers.append(DenseLayer(kind, fan_in, fan_out, w_off, c_off))
                w_off += fan_in * fan_out
                c_off += fan_out
            built.append(tuple(layers))
            first += count
        return cls(tuple(built), spec.activation)

    @property
    def n_stages(self) -> int:
        """Number of stages ``M``."""
        return len(self.stages)

    @property
    def layers(self) -> tuple[DenseLayer, ...]:
        """All layers, input side first."""
        return tuple(layer for stage in self.stages for layer in stage)

    @cached_property
    def weight_slices(self) -> tuple[slice, ...]:
        """Columns of each stage's weights in the flat weight array."""
        return contiguous_slices([sum(layer.w_size for layer in stage) for stage in self.stages])

    @cached_property
    def bias_slices(self) -> tuple[slice, ...]:
        """Columns of each stage's biases in the flat bias array."""
        return contiguous_slices([sum(layer.fan_out for layer in stage) for stage in self.stages])

    @property
    def n_weights(self) -> int:
        """Total number of (analog) weights."""
        return self.weight_slices[-1].stop

    @property
    def n_biases(self) -> int:
        """Total number of (digital) biases."""
        return self.bias_slices[-1].stop

    def init(
        self, rngs: Sequence[np.random.Generator], w_lo: float, w_hi: float
    ) -> tuple[np.ndarray, np.ndarray]:
        r"""Initial weights :math:`W \sim N(0, 1/\mathrm{fan\_in})` clipped to ``[w_lo, w_hi]``.

        Member ``r`` draws its layers in order from ``rngs[r]`` only. Biases start at 0.

        Returns
        -------
        w : ndarray, shape (R, n_weights)
        c : ndarray, shape (R, n_biases)
        """
        if not w_lo < 0 < w_hi:
            raise ParameterError(
                f"initial weight interval [{w_lo:g}, {w_hi:g}] must contain 0 in its interior"
            )
        w = np.empty((len(rngs), self.n_weights))
        for r, rng in enumerate(rngs):
            draws = [rng.standard_normal(layer.w_size) / np.sqrt(layer.fan_in)
                     for layer in self.layers]
            w[r] = np.concatenate(draws)
        np.clip(w, w_lo, w_hi, out=w)
        return w, np.zeros((len(rngs), self.n_biases))

    def stage_view(self, s: int, w_block: np.ndarray, c_block: np.ndarray) -> StageView:
        """Per-layer views of stage ``s``'s weight block ``(R, stage weights)`` and bias block
        ``(R, stage biases)`` (views share memory with the blocks: build them once per array)."""
        r = w_block.shape[0]
        weights, biases = [], []
        for layer in self.stages[s]:
            block = w_block[:, layer.w_offset:layer.w_offset + layer.w_size]
            weights.append(block.reshape(r, layer.fan_in, layer.fan_out))
            biases.append(c_block[:, None, layer.c_offset:layer.c_offset + layer.fan_out])
        return StageView(tuple(weights), tuple(biases))

    def views(self, w: np.ndarray, c: np.ndarray) -> tuple[StageView, ...]:
        """:meth:`stage_view` of every stage of the flat arrays ``w`` ``(R, n_weights)`` and
        ``c`` ``(R, n_biases)``."""
        return tuple(self.stage_view(s, w[:, ws], c[:, cs]) for s, (ws, cs)
                     in enumerate(zip(self.weight_slices, self.bias_slices, strict=True)))

    def forward_stage(self, s: int, params: StageView, h: np.ndarray,
                      mvm: AnalogPass | None = None, buffers: Buffers | None = None):
        """Forward of stage ``s`` through the weights and biases ``params`` it reads.

        Parameters
        ----------
        s : int
            Stage index, 0-based.
        params : StageView
            The weight version the forward reads.
        h : ndarray, shape (R, n, fan_in) or (n, fan_in)
            The stage's input.
        mvm : AnalogPass, optional
            The analog product ``h W`` with IO non-idealities (:mod:`simulate.device.mvm`); exact
            ``h @ W`` when ``None``.
        buffers : optional
            Reusable output arrays of the training step (the same bits; a fresh array of the
            ensemble's size would cost a page fault per page at every step).

        Returns
        -------
        h_out : ndarray, shape (R, n, fan_out)
        saved : list of (h_in, a)
            Per layer, its input and its activation ``phi(z)`` (``None`` for the output layer),
            stored for the backward.
        """
        saved = []
        tanh = self.activation == "tanh"
        for i, (layer, weight, bias) in enumerate(zip(self.stages[s], params.weights,
                                                      params.biases, strict=True)):
            if mvm is not None:
                z = mvm(h, weight)
            elif buffers is None or h.ndim != weight.ndim:
                z = h @ weight
            else:
                z = np.matmul(h, weight, out=buffers(s, i, "z", h, weight.shape[-1]))
            add_bias(z, bias)
            if layer.kind == "output":
                saved.append((h, None))
                h = z
                continue
            a = tanh_inplace(z) if tanh else np.maximum(z, 0.0, out=z)
            saved.append((h, a))
            if layer.kind == "dense":
                h = a
            else:
                h = h + a if buffers is None or h.shape != a.shape else \
                    np.add(h, a, out=buffers(s, i, "h", a))
        return h, saved

    def backward_stage(
        self, s: int, weights: Sequence[np.ndarray], saved, delta: np.ndarray, grads: StageView,
        input_grad: bool = True, factors: list | None = None, mvm: AnalogPass | None = None,
        buffers: Buffers | None = None,
    ) -> np.ndarray | None:
        """Backward of stage ``s`` through the layer ``weights`` it reads (the current ones).

        Writes the stage's weight and bias gradients into the views ``grads`` and returns
        dL/d input (``None`` when ``input_grad`` is false, for the first stage). With a list
        ``factors``, appends ``(i, h, dz)`` per layer ``i`` of the stage (last layer first): the
        layer's input ``h`` and error ``dz``, whose product ``h^T dz`` is its weight gradient
        (for the rank-1 pulse trains of a one-sample batch). With ``mvm``
        (:class:`simulate.device.mvm.AnalogPass`), the product ``dz W^T`` passed back is the analog
        one with IO non-idealities; the weight gradient ``h^T dz`` stays exact (it is the update).
        ``buffers``: reusable output arrays (:meth:`forward_stage`).
        """
        layers = self.stages[s]
        tanh = self.activation == "tanh"
        for i in range(len(layers) - 1, -1, -1):
            h, a = saved[i]
            if a is None:
                dz = delta
                dz.sum(axis=-2, keepdims=True, out=grads.biases[i])
            else:  # dz = delta * phi'(z) and its sum over the batch, fused
                # (dz is dead once the layer's two products are done: unless the factors keep
                # it, one buffer per stage and width serves every layer, a smaller working set)
                dz = np.empty_like(a) if buffers is None else \
                    buffers(s, -1 if factors is None else i, f"dz{a.shape[-1]}", a)
                dense_backward(a, delta, dz, grads.biases[i], tanh)
            np.matmul(h.swapaxes(-1, -2), dz, out=grads.weights[i])
            if factors is not None:
                factors.append((i, h, dz))
            if i == 0 and not input_grad:
                return None
            transposed = weights[i].swapaxes(-1, -2)
            if mvm is not None:
                back = mvm(dz, transposed)
            elif buffers is None:
                back = dz @ transposed
            else:
                # two buffers in turn: the next layer reads this one while writing the other
                fan_in = layers[i].fan_in
                back = np.matmul(dz, transposed,
                                 out=buffers(s, -1 - i % 2, f"back{fan_in}", dz, fan_in))
            if layers[i].kind == "residual":
                back += delta
            delta = back
        return delta

    def gradient(
        self, x: np.ndarray, y: np.ndarray, forward: Sequence[StageView],
        backward: Sequence[Sequence[np.ndarray]], grads: Sequence[StageView],
        factors: list | None = None, forward_mvm: AnalogPass | None = None,
        backward_mvm: AnalogPass | None = None, loss: bool = True,
        buffers: Buffers | None = None,
    ) -> np.ndarray | None:
        """Loss and gradient of one batch through given weight versions, stage by stage.

        Parameters
        ----------
        x : ndarray, shape (R, n, 64) or (n, 64)
        y : ndarray of int, shape (R, n) or (n,)
        forward : sequence of StageView
            Per stage, the weights and biases its forward reads.
        backward : sequence of sequence of ndarray
            Per stage, the layer weights its backward reads.
        grads : sequence of StageView
            Output: views of the gradient arrays, written with the gradient of the mean loss.
        factors : list, optional
            Filled with ``(s, i, h, dz)`` per layer ``i`` of stage ``s`` (backward order): the
            factors of its weight gradient ``h^T dz`` (:meth:`backward_stage`).
        forward_mvm, backward_mvm : AnalogPass, optional
            The analog products of the forward (``h W``) and backward (``dz W^T``) passes
            (:mod:`simulate.device.mvm`); exact when ``None``.
        loss : bool
            Whether to compute and return the loss (the training step does not need it).
        buffers : optional
            Reusable output arrays, kept by the caller from one step to the next (a
            ``Buffers``); the arrays a call returns or fills into ``factors`` are overwritten
            by the next call with the same buffers.

        Returns
        -------
        loss : ndarray, shape (R,), or None
            Mean cross-entropy of the batch (computed by the forward, through the forward weights);
            ``None`` when ``loss`` is false.
        """
        h, saved = x, []
        for s, params in enumerate(forward):
            h, stage_saved = self.forward_stage(s, params, h, forward_mvm, buffers)
            saved.append(stage_saved)
        loss, delta = _softmax(h, y, loss, True)
        for s in range(self.n_stages - 1, -1, -1):
            stage = None if factors is None else []
            delta = self.backward_stage(s, backward[s], saved[s], delta, grads[s],
                                        input_grad=s > 0, factors=stage, mvm=backward_mvm,
                                        buffers=buffers)
            if factors is not None:
                factors += [(s, i, h, dz) for i, h, dz in stage]
        return loss

    def logits(self, w: np.ndarray, c: np.ndarray, x: np.ndarray,
               mvm: AnalogPass | None = None,
               views: Sequence[StageView] | None = None) -> np.ndarray:
        """Logits of ``x`` through the flat weights ``w`` and biases ``c`` (one version), exact
        or through the analog forward products ``mvm``; ``views``: their :meth:`views`, if
        built already."""
        h = x
        for s, params in enumerate(self.views(w, c) if views is None else views):
            h, _ = self.forward_stage(s, params, h, mvm)
        return h


def softmax_cross_entropy(logits: np.ndarray, y: np.ndarray, grad: bool = False):
    r"""Mean softmax cross-entropy per ensemble member, and optionally its gradient.

    .. math:: L_r = \frac1n \sum_{i=1}^n \Big(\log \sum_j e^{z_{rij}} - z_{r i y_{ri}}\Big),
              \qquad \frac{\partial L_r}{\partial z_{rij}} = \frac{p_{rij} - [j = y_{ri}]}{n}

    Parameters
    ----------
    logits : ndarray, shape (R, n, classes)
    y : ndarray of int, shape (R, n) or (n,)
    grad : bool

    Returns
    -------
    loss : ndarray, shape (R,) (nats)
    delta : ndarray, shape (R, n, classes), only when ``grad``
    """
    return _softmax(logits, y, True, grad)


def _softmax(logits: np.ndarray, y: np.ndarray, loss: bool, grad: bool):
    """:func:`softmax_cross_entropy`'s loss (``None`` unless ``loss``) and, with ``grad``, its
    gradient (the training step needs only the gradient)."""
    n, classes = logits.shape[-2:]
    shifted = logits - logits.max(axis=-1, keepdims=True)
    exp = np.exp(shifted)
    total = exp.sum(axis=-1, keepdims=True)
    value = None
    if loss:
        onehot = y[..., None] == np.arange(classes)
        picked = np.where(onehot, shifted, 0.0).sum(axis=-1)
        value = (np.log(total[..., 0]) - picked).mean(axis=-1)
    if not grad:
        return value
    softmax_delta(exp, total, y, n)  # exp / total - onehot, divided by n
    return value, exp


class StageView(NamedTuple):
    """Per-layer views of one stage's parameters (or gradients) in a flat array.

    Attributes
    ----------
    weights : tuple of ndarray
        Per layer, shape ``(R, fan_in, fan_out)``.
    biases : tuple of ndarray
        Per layer, shape ``(R, 1, fan_out)``.
    """

    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]


class Buffers:
    """Output arrays of the training step's layers, allocated at their first use and reused at
    every step (``buffers(s, i, role, like, last=None)``: the array of stage ``s``, layer ``i``
    and ``role`` with the shape and dtype of ``like``, its last axis ``last`` if given)."""

    def __init__(self):
        self._arrays: dict = {}

    def __call__(self, s: int, i: int, role: str, like: np.ndarray,
                 last: int | None = None) -> np.ndarray:
        shape = like.shape if last is None else like.shape[:-1] + (last,)
        array = self._arrays.get((s, i, role))
        if array is None or array.shape != shape or array.dtype != like.dtype:
            array = self._arrays[s, i, role] = np.empty(shape, dtype=like.dtype)
        return array


#: the threadpoolctl controller of :func:`one_blas_thread` and ``len(sys.modules)`` when it was made
_CONTROLLER: list = [None, -1]


def one_blas_thread():
    """A context in which BLAS runs on one thread (:mod:`threadpoolctl`; the limits before it are
    restored after it).

    A network's products are small (at most a few hundred rows by 64 by 32 per member): BLAS
    threads gain nothing on them and, on a loaded machine, cost a waiting core at every call
    (measured in one process on 2 shared cores: a 16-seed ensemble at ``b = 4`` 1.5x slower on
    two threads, float32 at ``b = 32`` 1.7x, ``docs/results/throughput.md``), and the bits of a
    float32 product split between threads depend on their number. A network run
    (:meth:`simulate.problems.network_run.NetworkTraining.run`) is run in it.

    Finding the loaded BLAS libraries costs about 3 ms (5 % of a default run), so the controller
    is kept, and made again when modules were imported since (a library loaded later, as
    scipy's, is then limited too); a kept controller limits in about 10 us.
    """
    import sys

    if _CONTROLLER[1] != len(sys.modules):
        from threadpoolctl import ThreadpoolController

        _CONTROLLER[0] = ThreadpoolController()
        _CONTROLLER[1] = len(sys.modules)
    return _CONTROLLER[0].limit(limits=1, user_api="blas")


def contiguous_slices(sizes: Sequence[int]) -> tuple[slice, ...]:
    """Consecutive slices of the given sizes: ``[0, s0), [s0, s0 + s1), ...``."""
    ends = np.cumsum(sizes)
    return tuple(slice(int(end - size), int(end)) for size, end in zip(sizes, ends, strict=True))

