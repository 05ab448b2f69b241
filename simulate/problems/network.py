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
``d_m = 0``; :class:`simulate.staleness.StaleVersions`, the one the oracle engine uses too).
``none`` and ``sync`` compute the exact gradient of the whole mini-batch of ``B b`` samples in one
pass, so their iterates are identical; they differ in the cycles counted.

**Analog and digital parameters.** The weight matrices are the analog arrays: they are updated by
the run's algorithm (digital ``w + dw`` or analog through :mod:`simulate.analog`, with
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
``digits-augmented``, :attr:`simulate.digits.DigitsData.x_loss`) at the current weights;
``grad_norm2`` the squared norm of its gradient with respect to every trained parameter (weights
and biases), one extra backward pass (``nan`` with ``NetworkSpec(grad_norm=False)``);
``test_accuracy`` on the 360 test images (and :attr:`NetworkRun.validation_accuracy` on the
validation images of the data sets that hold some). ``Trace.avg_grad_norm2`` (the average over
every iterate) is left empty: it would cost a full-training-set backward pass per update, about
90 times the work of the update itself.

**Randomness.** Member ``r`` draws its initial weights and then its batches (with replacement) from
its ``data`` stream, its pulses from its ``device`` stream (:mod:`simulate.rng`); all arithmetic is
row-wise, so a member gives the same bits alone and inside an ensemble.

**Analog forward and backward products.** With ``SimConfig.forward_io`` / ``backward_io`` other
than ``perfect`` (analog runs only), the products ``h W`` of every layer's forward and
``delta_z W^T`` of its backward go through the tile's DAC, output noise and ADC with noise and
bound management (:mod:`simulate.mvm`, aihwkit's rules), drawing from the member's ``io`` stream;
the weight gradient ``h^T delta_z`` (the update) and the measurements (training loss, gradient
norm, test accuracy of the weights) are exact.

**Divergence.** The training loss (at every logging point) and the weights (after every update)
are checked with the rules of :mod:`simulate.staleness`: a non-finite value, or one beyond
``NETWORK_LOSS_FACTOR`` (10, the loss) or ``DIVERGENCE_FACTOR`` (the weights) times
``max(1, |value at the start|)``, raises :class:`theory.errors.DivergenceError` with the update
index and the learning rate. An analog run pinned at its device bounds on most logging points
issues a :class:`simulate.staleness.PinnedWarning`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np

from theory.errors import ParameterError, check_range
from theory.limits import MAX_ARRAY_BYTES, check_size

from . import tiki_taka
from .analog import (
    DeviceSpread,
    Updater,
    check_bit_length,
    coincidence_counts,
    digital_blocks,
    stochastic_write,
)
from .config import NETWORK_PROBLEMS, SimConfig, device_from_config, network_bytes_per_member
from .digits import DigitsData, load_digits_data, sample_indices
from .mvm import AnalogPass, io_preset
from .problems import row_dot
from .rng import member_generators
from .staleness import (
    NETWORK_LOSS_FACTOR,
    StaleVersions,
    check_divergence,
    cycles_after,
    divergence_limit,
    forward_delays,
)
from .trace import Trace, log_steps
from .update_kernels import (
    add_bias,
    dense_backward,
    expected_step,
    expected_step_ratio,
    softmax_delta,
)

__all__ = [
    "ACTIVATIONS",
    "DenseLayer",
    "Network",
    "NetworkRun",
    "NetworkSpec",
    "StageView",
    "io_passes",
    "run_network",
    "softmax_cross_entropy",
    "train_network",
]

ACTIVATIONS = ("tanh", "relu")
#: batches are drawn this many updates at a time (the bits do not depend on it)
_BATCH_CHUNK = 256


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
        Whether each logging point computes the full-training-set gradient norm (one extra
        backward pass over the 1437 training images); ``nan`` otherwise.
    """

    layers: int = 16
    width: int = 32
    activation: str = "tanh"
    init_fraction: float = 0.5
    grad_norm: bool = True

    def __post_init__(self):
        check_range("layers", self.layers, 2, None, integer=True)
        check_range("width", self.width, 1, None, integer=True)
        if self.activation not in ACTIVATIONS:
            raise ParameterError(
                f"activation={self.activation!r} is unknown; valid: {', '.join(ACTIVATIONS)}"
            )
        check_range("init_fraction", self.init_fraction, 0, 1, low_open=True)


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
        if problem not in NETWORK_PROBLEMS:
            raise ParameterError(
                f"problem={problem!r} is not a network; valid: {', '.join(NETWORK_PROBLEMS)}"
            )
        check_range("stages", stages, 1, spec.layers, integer=True)
        width, n_layers = spec.width, spec.layers
        if problem == "digits-mlp":
            kinds = ["dense"] * (n_layers - 1) + ["output"]
        else:
            kinds = ["dense"] + ["residual"] * (n_layers - 2) + ["output"]
        shapes = [(n_in if i == 0 else width, n_out if kind == "output" else width)
                  for i, kind in enumerate(kinds)]
        per_stage, extra = divmod(n_layers, stages)
        built, first = [], 0
        for s in range(stages):
            count = per_stage + (1 if s < extra else 0)
            layers, w_off, c_off = [], 0, 0
            for i in range(first, first + count):
                fan_in, fan_out = shapes[i]
                layers.append(DenseLayer(kinds[i], fan_in, fan_out, w_off, c_off))
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
        return _slices([sum(layer.w_size for layer in stage) for stage in self.stages])

    @cached_property
    def bias_slices(self) -> tuple[slice, ...]:
        """Columns of each stage's biases in the flat bias array."""
        return _slices([sum(layer.fan_out for layer in stage) for stage in self.stages])

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
                      mvm: AnalogPass | None = None, buffers: _Buffers | None = None):
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
            The analog product ``h W`` with IO non-idealities (:mod:`simulate.mvm`); exact
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
            a = np.tanh(z, out=z) if tanh else np.maximum(z, 0.0, out=z)
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
        buffers: _Buffers | None = None,
    ) -> np.ndarray | None:
        """Backward of stage ``s`` through the layer ``weights`` it reads (the current ones).

        Writes the stage's weight and bias gradients into the views ``grads`` and returns
        dL/d input (``None`` when ``input_grad`` is false, for the first stage). With a list
        ``factors``, appends ``(i, h, dz)`` per layer ``i`` of the stage (last layer first): the
        layer's input ``h`` and error ``dz``, whose product ``h^T dz`` is its weight gradient
        (for the rank-1 pulse trains of a one-sample batch). With ``mvm``
        (:class:`simulate.mvm.AnalogPass`), the product ``dz W^T`` passed back is the analog one
        with IO non-idealities; the weight gradient ``h^T dz`` stays exact (it is the update).
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
        buffers: _Buffers | None = None,
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
            (:mod:`simulate.mvm`); exact when ``None``.
        loss : bool
            Whether to compute and return the loss (the training step does not need it).
        buffers : optional
            Reusable output arrays, kept by the caller from one step to the next (a
            ``_Buffers``); the arrays a call returns or fills into ``factors`` are overwritten
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
               mvm: AnalogPass | None = None) -> np.ndarray:
        """Logits of ``x`` through the flat weights ``w`` and biases ``c`` (one version), exact
        or through the analog forward products ``mvm``."""
        h = x
        for s, params in enumerate(self.views(w, c)):
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


@dataclass(frozen=True, eq=False)
class NetworkRun:
    """The outcome of :func:`train_network`.

    Attributes
    ----------
    trace : Trace
    network : Network
    weights : ndarray, shape (R, n_weights)
        Final (analog) weights.
    biases : ndarray, shape (R, n_biases)
        Final (digital) biases.
    forward_versions, backward_versions : ndarray of int, shape (K, M), or None
        With ``record_versions``: for update ``k`` and stage ``m``, the index ``j`` of the weights
        ``W_j`` its forward / backward read (taken from the buffer slot actually read).
    validation_accuracy : ndarray, shape (R, T), or None
        Accuracy on the validation images at every logging point, when the run's ``data`` has
        them (:mod:`simulate.digits`).
    """

    trace: Trace
    network: Network
    weights: np.ndarray
    biases: np.ndarray
    forward_versions: np.ndarray | None = None
    backward_versions: np.ndarray | None = None
    validation_accuracy: np.ndarray | None = None


def train_network(
    config: SimConfig,
    seed: int | None = None,
    *,
    spec: NetworkSpec | None = None,
    members: Iterable[int] | None = None,
    progress: Callable[[int], None] | None = None,
    record_versions: bool = False,
) -> NetworkRun:
    """Train a digits network with the config's mode, algorithm and device; all members at once.

    Parameters
    ----------
    config : SimConfig
        ``problem`` must be ``digits-mlp`` or ``digits-resmlp``; ``dim`` and ``sigma2`` are unused
        (the gradient noise is the data's own).
    seed : int, optional
        Root seed (default ``config.seed``). Member ``r`` uses the streams of
        :func:`simulate.rng.member_generators`: ``data`` for its initial weights, then its batches;
        ``device`` for its pulses and device-to-device spread.
    spec : NetworkSpec, optional
        Architecture (default ``NetworkSpec()``: 16 layers of width 32, tanh).
    members : iterable of int, optional
        Ensemble members to compute (default ``range(config.seeds)``); a member gives the same
        bits whichever other members run with it.
    progress : callable, optional
        Called with the number of updates done since its previous call.
    record_versions : bool
        Record which weight version each stage's forward and backward read at every update.

    Returns
    -------
    NetworkRun

    Raises
    ------
    ParameterError
        Not a network problem, or more stages than layers.
    DivergenceError
        A weight or the training loss became non-finite or left the limit of
        :func:`simulate.staleness.divergence_limit` (relative to its initial value).
    """
    spec = NetworkSpec() if spec is None else spec
    seed = config.seed if seed is None else check_range("seed", seed, 0, None, integer=True)
    members = list(range(config.seeds) if members is None else members)
    per_member = network_bytes_per_member(config.samples_per_update, config.steps, spec.layers,
                                          spec.width)
    check_size("width", spec.width, need=per_member, limit=MAX_ARRAY_BYTES,
               what="bytes of one member's largest array")
    check_size("seeds", len(members), need=len(members) * per_member, limit=MAX_ARRAY_BYTES,
               what="bytes of ensemble arrays", hint="run fewer seeds at a time")
    data = load_digits_data(config.data)
    network = Network.build(config.problem, spec, config.stages, data.n_features, data.n_classes)
    n_stages, steps = config.stages, config.steps
    delays = forward_delays(config.mode, n_stages)
    device = device_from_config(config)
    update = Updater.from_config(config, device)
    streams = member_generators(seed, members)
    data_rngs, device_rngs = streams["data"], streams["device"]
    forward_mvm, backward_mvm = io_passes(config, streams["io"])

    w, c = network.init(data_rngs, spec.init_fraction * device.w_min,
                        spec.init_fraction * device.w_max)
    spread = DeviceSpread.draw(device, w.shape, device_rngs) if update.uses_dtod else None
    update = tiki_taka.wrap(config, update, spread, w, tiki_taka.layer_tiles(network), device_rngs)
    monitor = update.pinned_monitor(spread)
    # w and c are updated in place, so their stage blocks and views stay valid for the whole run
    blocks = [(w[:, ws], c[:, cs])
              for ws, cs in zip(network.weight_slices, network.bias_slices, strict=True)]
    stale = StaleVersions(delays, blocks)
    # algorithm "mixed": the weights of these stages update digitally (w + dw)
    digital = [network.weight_slices[stage - 1] for stage in config.digital_stage_indices]
    current = network.views(w, c)
    slot_views = [[network.stage_view(s, *stale.stored(s, j)) for j in range(d + 1)] if d else None
                  for s, d in enumerate(delays)]
    backward = [view.weights for view in current]
    gw, gc = np.empty_like(w), np.empty_like(c)
    grads = network.views(gw, gc)
    w_min, w_max = w.min(axis=1), w.max(axis=1)
    fwd_rec = np.empty((steps, n_stages), dtype=np.int64) if record_versions else None
    bwd_rec = np.empty((steps, n_stages), dtype=np.int64) if record_versions else None
    log_at = log_steps(steps, config.log_every)
    records, reported = [], 0
    batch = config.samples_per_update
    w_limit, loss_limit = divergence_limit(w), None
    # one sample per update, or per-sample writes: each write is a layer's rank-1 outer product,
    # so the stochastic and mean-count pulse types fire aihwkit's bit trains on it (shared along
    # rows and columns)
    per_sample = config.write == "per-sample"
    trains = update.kind == "pulsed" and update.pulse_type != "deterministic"
    rank1 = trains and (batch == 1 or per_sample)
    count_views = None
    if rank1:
        check_bit_length(update.device.desired_bl, "desired_bl")
        counts = np.zeros(w.shape, dtype=np.int64)
        count_views = (counts, network.views(counts, np.zeros(c.shape, dtype=np.int64)))

    fused = None if per_sample or digital or rank1 else \
        _FusedExpected.of(update, w) or _FusedStochastic.of(update, w, spread, device_rngs)
    buffers = _Buffers()

    for k in range(steps + 1):
        if k == log_at[len(records)]:
            records.append(_measure(network, data, w, c, spec.grad_norm))
            if monitor is not None:
                monitor.observe(k, w)
            if loss_limit is None:
                loss_limit = divergence_limit(records[0][0], factor=NETWORK_LOSS_FACTOR)
            check_divergence(k, "training loss", records[-1][0], loss_limit, config.lr)
            if progress is not None and k > reported:
                progress(k - reported)
                reported = k
        if k == steps:
            break
        if k % _BATCH_CHUNK == 0:
            chunk = sample_indices(data_rngs, data.n_train, batch,
                                   batches=min(_BATCH_CHUNK, steps - k))
        idx = chunk[k % _BATCH_CHUNK]
        forward = [current[s] if d == 0 else slot_views[s][stale.slot(k, s)]
                   for s, d in enumerate(delays)]
        if fwd_rec is not None:
            fwd_rec[k] = [stale.version(k, s) for s in range(n_stages)]
            bwd_rec[k] = k
        factors = [] if rank1 or per_sample else None
        network.gradient(data.x_train[idx], data.y_train[idx], forward, backward, grads, factors,
                         forward_mvm, backward_mvm, loss=False, buffers=buffers)
        if per_sample:  # one write per sample, in order, each read at the batch's weights
            for t in range(batch):
                _write_sample(t, factors, grads, gw, config.lr)
                _write(update, w, gw, device_rngs, spread, factors, t, rank1, count_views, config,
                       digital)
                np.minimum(w_min, w.min(axis=1), out=w_min)
                np.maximum(w_max, w.max(axis=1), out=w_max)
        elif not (fused is not None and fused.step(w, gw, -config.lr, w_min, w_max)):
            gw *= -config.lr
            _write(update, w, gw, device_rngs, spread, factors, 0, rank1, count_views, config,
                   digital)
            np.minimum(w_min, w.min(axis=1), out=w_min)
            np.maximum(w_max, w.max(axis=1), out=w_max)
        gc *= config.lr
        c -= gc
        if not (-w_limit <= w_min.min() and w_max.max() <= w_limit):  # False for nan too
            check_divergence(k + 1, "max |w|", np.maximum(-w_min, w_max), w_limit, config.lr)
        stale.push(k + 1, blocks)

    if monitor is not None:
        monitor.warn()
    loss, grad_norm2, accuracy, validation = (np.stack(column, axis=1)
                                              for column in zip(*records, strict=True))
    step = np.asarray(log_at, dtype=np.int64)
    trace = Trace(
        step=step,
        samples=step * batch,
        cycles=cycles_after(config.mode, config.stages, config.micro_batches, step)
        + tiki_taka.transfer_cycles(update, step),
        loss=loss,
        grad_norm2=grad_norm2,
        test_accuracy=accuracy,
        max_abs_w=np.maximum(-w_min, w_max),
        w_min_visited=w_min,
        w_max_visited=w_max,
        config={**config.to_dict(), "seed": int(seed), "members": members,
                "network": asdict(spec)},
    )
    return NetworkRun(trace, network, w, c, fwd_rec, bwd_rec,
                      None if data.x_val is None else validation)


def run_network(
    config: SimConfig,
    seed: int | None = None,
    *,
    members: Iterable[int] | None = None,
    progress: Callable[[int], None] | None = None,
) -> Trace:
    """The :class:`~simulate.trace.Trace` of :func:`train_network` with the default
    :class:`NetworkSpec` (the entry point of :func:`simulate.engine.run` for the networks)."""
    return train_network(config, seed, members=members, progress=progress).trace


def io_passes(config: SimConfig, rngs: Sequence[np.random.Generator]):
    """The analog forward and backward products of ``config`` (``config.forward_io``,
    ``config.backward_io``; ``None`` for ``perfect``, the exact product), drawing from the
    members' generators ``rngs`` (the ``io`` stream). The forward pass draws before the backward
    pass of each layer's update, both from one stream per member."""
    passes = []
    for name, direction in ((config.forward_io, "forward"), (config.backward_io, "backward")):
        io = io_preset(name)
        passes.append(None if io.is_perfect else AnalogPass(io, tuple(rngs), direction))
    return tuple(passes)


class _Buffers:
    """Output arrays of the training step's layers, allocated at their first use and reused at
    every step (``buffers(s, i, role, like, last=None)``: the array of stage ``s``, layer ``i``
    and ``role`` with the shape of ``like``, its last axis ``last`` if given)."""

    def __init__(self):
        self._arrays: dict = {}

    def __call__(self, s: int, i: int, role: str, like: np.ndarray,
                 last: int | None = None) -> np.ndarray:
        shape = like.shape if last is None else like.shape[:-1] + (last,)
        array = self._arrays.get((s, i, role))
        if array is None or array.shape != shape:
            array = self._arrays[s, i, role] = np.empty(shape)
        return array


class _FusedExpected(NamedTuple):
    """The plain expected update with a constant ``F`` as one fused pass
    (:func:`simulate.update_kernels.expected_step`): ``response(w)`` gives ``G(w)`` with the
    shape of ``w`` (numpy), ``constants`` are ``(F, w_min, w_max)``; ``ratio`` is ``tau`` where
    the compiled ``G`` is ``w / tau`` (soft bounds), evaluated inside the pass
    (:func:`simulate.update_kernels.expected_step_ratio`, the same bits), else ``None``."""

    response: Callable[[np.ndarray], np.ndarray]
    constants: tuple[float, float, float]
    ratio: float | None = None

    @classmethod
    def of(cls, update, w: np.ndarray) -> _FusedExpected | None:
        """The fused form of ``update`` on ``w``, or ``None`` where the general path must run
        (not a plain :class:`simulate.analog.Updater` of kind ``expected``, an ``F`` that depends
        on the weight, or ``w`` not a C-contiguous float64 array)."""
        if type(update) is not Updater or update.kind != "expected":
            return None
        device = update.device
        f = device.F_constant
        if f is None or w.dtype != np.float64 or not w.flags.c_contiguous:
            return None

        def response(x: np.ndarray) -> np.ndarray:
            g = device.G(x)  # (the compiled responses return the shape of x)
            return g if g.shape == x.shape else np.ascontiguousarray(np.broadcast_to(g, x.shape))

        return cls(response, (float(f), float(device.w_min), float(device.w_max)),
                   _ratio_of(device))

    def step(self, w: np.ndarray, gw: np.ndarray, scale: float, w_min: np.ndarray,
             w_max: np.ndarray) -> bool:
        """The expected update of ``w`` by ``scale * gw`` in place, and the running extremes
        (``gw`` may be overwritten); ``True``."""
        if self.ratio is None:
            expected_step(w, gw, self.response(w), scale, *self.constants, w_min, w_max)
        else:
            expected_step_ratio(w, gw, self.ratio, scale, *self.constants, w_min, w_max)
        return True


class _FusedStochastic(NamedTuple):
    """The batch-mean ``stochastic`` pulse update as one fused call
    (:func:`simulate.analog.stochastic_write`: the scaling ``-lr gw``, the counts and the
    closed form, the bits of the general path), with its work array and the members'
    generators."""

    device: object
    rngs: Sequence[np.random.Generator]
    out: np.ndarray

    @classmethod
    def of(cls, update, w: np.ndarray, spread, rngs) -> _FusedStochastic | None:
        """The fused form of ``update`` on ``w``, or ``None`` where the general path must run
        (not a plain :class:`simulate.analog.Updater` of kind ``pulsed`` with the
        ``stochastic`` pulse type, its closed form and no BL management; cycle-to-cycle noise;
        a device-to-device spread; ``w`` not a C-contiguous float64 array)."""
        if type(update) is not Updater or update.kind != "pulsed" or \
                update.pulse_type != "stochastic" or update.pulse_method != "closed-form" or \
                update.bl_management or update.device.dw_min_std != 0:
            return None
        if spread is not None and (spread.dw_min_scale is not None or
                                   spread.bound_scale is not None):
            return None
        if w.dtype != np.float64 or not w.flags.c_contiguous:
            return None
        return cls(update.device, rngs, np.empty_like(w))

    def step(self, w: np.ndarray, gw: np.ndarray, scale: float, w_min: np.ndarray,
             w_max: np.ndarray) -> bool:
        """The update of ``w`` by ``scale * gw`` in place and the running extremes, or
        ``False`` (nothing done, ``gw`` unchanged) where the fused call does not apply."""
        if not stochastic_write(w, gw, scale, self.device, self.rngs, self.out):
            return False
        np.minimum(w_min, w.min(axis=1), out=w_min)
        np.maximum(w_max, w.max(axis=1), out=w_max)
        return True


def _ratio_of(device) -> float | None:
    """``tau`` when the device's compiled ``G`` is the ratio ``w / tau`` of the weight and one
    parameter (soft bounds), else ``None``: the family's symbolic ``G = (q_- - q_+)/2`` must be
    exactly ``w / tau`` (compiled to numpy as ``w/tau``), and the compiled ``G`` must give the
    bits of ``x / tau`` on probe values."""
    family = type(device.response)
    q_plus, q_minus = family.symbolic()
    g = (q_minus - q_plus) / 2
    weight = g.free_symbols - set(family.symbols().values())
    if len(weight) != 1:
        return None
    (weight,) = weight
    for symbol, value in zip(family.symbols().values(), device.response.params().values(),
                             strict=True):
        if g == weight / symbol:
            tau = float(value)
            probe = np.array([-0.0, 0.0, 1.0, -1.0, 0.1, -0.3, 1 / 3, 0.7, np.nan, 5e-324])
            probe = np.concatenate([probe, probe * tau])
            got = device.G(probe)
            if got.shape == probe.shape and np.array_equal(got.view(np.int64),
                                                           (probe / tau).view(np.int64)):
                return tau
            return None
    return None


def _write_sample(t: int, factors, grads: Sequence[StageView], gw: np.ndarray, lr: float) -> None:
    r"""Fill ``gw`` with sample ``t``'s desired increment :math:`-(\alpha/n)\, g_t`.

    Layer ``i``'s part of the gradient of sample ``t``'s own loss is :math:`n\, h_t\, dz_t^\top`
    (``dz`` of the mean loss carries the ``1/n``), so the increment is
    :math:`-\alpha\, h_t\, dz_t^\top`, computed as the batch path computes its ``h^T dz``
    times ``-lr`` (at ``n = 1`` the same bits).
    """
    for s, i, h, dz in factors:
        np.multiply(h[:, t, :, None], dz[:, t, None, :], out=grads[s].weights[i])
    gw *= -lr


def _write(update: Updater, w: np.ndarray, gw: np.ndarray, rngs, spread, factors, t: int,
           rank1: bool, count_views, config: SimConfig, digital=()) -> None:
    """Apply one write of desired increment ``gw`` to ``w`` in place: through the update, or
    (``rank1``) as aihwkit's bit trains on each layer's outer product ``h_t dz_t^T`` (sample
    ``t`` of the batch) fired by :meth:`simulate.analog.Updater.fire`; the ``digital`` weight
    slices (``mixed`` runs, Theorem 2M) take ``w + gw`` instead."""
    if not rank1:
        new = update(w, gw, rngs, spread)
        np.copyto(w, digital_blocks(new, w, gw, digital) if digital else new)
        return
    counts, views = count_views
    device = update.device
    for s, i, h, dz in factors:
        for r, g in enumerate(rngs):
            views[s].weights[i][r] = coincidence_counts(
                h[r, t], dz[r, t], config.lr, device.dw_min, device.desired_bl, g,
                config.pulse_type, update_management=config.update_management,
                bl_management=config.bl_management).T
    new = update.fire(w, counts, gw >= 0, rngs, spread)
    np.copyto(w, digital_blocks(new, w, gw, digital) if digital else new)


def _measure(network: Network, data: DigitsData, w: np.ndarray, c: np.ndarray, grad_norm: bool):
    """Training loss and squared gradient norm on the training set (its un-augmented rows),
    test accuracy, validation accuracy (``nan`` without validation images), per member.

    Member by member: each member's arrays (the whole training set through one network) then
    stay in cache, and a member computes what its run alone computes."""
    columns = [_measure_member(network, data, w[r:r + 1], c[r:r + 1], grad_norm)
               for r in range(w.shape[0])]
    return tuple(np.concatenate(column) for column in zip(*columns, strict=True))


def _measure_member(network: Network, data: DigitsData, w: np.ndarray, c: np.ndarray,
                    grad_norm: bool):
    """:func:`_measure` of one member, ``w`` of shape ``(1, n_weights)``."""
    if grad_norm:
        gw, gc = np.empty_like(w), np.empty_like(c)
        current = network.views(w, c)
        loss = network.gradient(data.x_loss, data.y_loss, current,
                                [view.weights for view in current], network.views(gw, gc))
        norm2 = row_dot(gw, gw) + row_dot(gc, gc)
    else:
        loss = softmax_cross_entropy(network.logits(w, c, data.x_loss), data.y_loss)
        norm2 = np.full(w.shape[0], np.nan)
    predicted = np.argmax(network.logits(w, c, data.x_test), axis=-1)
    accuracy = np.mean(predicted == data.y_test, axis=-1)
    if data.x_val is None:
        return loss, norm2, accuracy, np.full(w.shape[0], np.nan)
    validation = np.argmax(network.logits(w, c, data.x_val), axis=-1) == data.y_val
    return loss, norm2, accuracy, np.mean(validation, axis=-1)


def _slices(sizes: Sequence[int]) -> tuple[slice, ...]:
    ends = np.cumsum(sizes)
    return tuple(slice(int(end - size), int(end)) for size, end in zip(sizes, ends, strict=True))
