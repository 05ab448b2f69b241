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
``W_j^(m)`` be stage m's weights after ``j`` updates and ``d_m`` the forward delay of
:func:`theory.schedules.evaluate` (``M - m`` for ``async``, 0 for ``none`` and ``sync``). Then

- the forward at stage m reads ``W^(m)_{max(0, k - d_m)}`` (weights and biases); it stores its input
  ``h`` and its activation ``phi(z)`` computed with those stale weights;
- the backward at stage m reads the current ``W^(m)_k``: the gradient passed to the previous
  stage is :math:`\delta_z W_k^\top` (the crossbar holding the current weights does that MVM),
  while the weight gradient :math:`h^\top \delta_z` and :math:`\phi'(z)` use the stale stored
  input and activation;
- every stage then applies its update, giving ``W_{k+1}``.

Before the pipeline has filled (``k < d_m``) the forward reads ``W_0``. Only the versions that
will be read are kept: a ring buffer of ``d_m + 1`` copies of stage m's block (none for
``d_m = 0``).
``none`` and ``sync`` compute the exact gradient of the whole mini-batch of ``B b`` samples in one
pass, so their iterates are identical; they differ in the cycles counted.

**Analog and digital parameters.** The weight matrices are the analog arrays: they are updated by
the run's algorithm (digital ``w + dw`` or analog through :mod:`simulate.analog`, with
:math:`dw = -\alpha\,\partial L/\partial W`) and are what ``max_abs_w`` and ``w_min/max_visited``
measure. Biases are digital for every algorithm (``c - alpha dL/dc``), as in a periphery that adds
the bias after the crossbar MVM; they are read with the same staleness as their stage's weights.

**Initialisation.** ``W ~ N(0, 1/fan_in)`` clipped to ``init_fraction`` times the device range
``[w_min, w_max]`` (default half of it), biases 0. The device range is used for digital runs too, so
a digital and an analog run of one configuration start from the same weights.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from theory.errors import DivergenceError, ParameterError, check_range
from theory.schedules import evaluate

from .analog import Updater, device_from_config, draw_dw_min_scale
from .config import SimConfig
from .digits import DigitsData, load_digits_split, sample_indices
from .engine import _cycles
from .rng import member_generators
from .trace import Trace

__all__ = [
    "ACTIVATIONS",
    "NETWORK_PROBLEMS",
    "Layer",
    "Network",
    "NetworkRun",
    "NetworkSpec",
    "run_network",
    "softmax_cross_entropy",
    "train_network",
]

#: the problems of :class:`simulate.config.SimConfig` this module trains
NETWORK_PROBLEMS = ("digits-mlp", "digits-resmlp")
ACTIVATIONS = ("tanh", "relu")
LAYER_KINDS = ("dense", "residual", "output")
#: a weight or loss beyond this magnitude is reported as a divergence
DIVERGENCE_LIMIT = 1e6


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
class Layer:
    """One weight layer: its kind, shape and offsets into the flat parameter arrays.

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
    stages : tuple of tuple of Layer
        The layers of each stage, input side first.
    activation : str
    """

    stages: tuple[tuple[Layer, ...], ...]
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
                layers.append(Layer(kinds[i], fan_in, fan_out, w_off, c_off))
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
    def layers(self) -> tuple[Layer, ...]:
        """All layers, input side first."""
        return tuple(layer for stage in self.stages for layer in stage)

    @property
    def weight_slices(self) -> tuple[slice, ...]:
        """Columns of each stage's weights in the flat weight array."""
        return _slices([sum(layer.w_size for layer in stage) for stage in self.stages])

    @property
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

    def forward_stage(self, s: int, w: np.ndarray, c: np.ndarray, h: np.ndarray):
        """Forward of stage ``s`` through the weight block ``w`` and bias block ``c`` it reads.

        Parameters
        ----------
        s : int
            Stage index, 0-based.
        w, c : ndarray, shapes (R, stage weights), (R, stage biases)
            The block of the weight version the forward reads.
        h : ndarray, shape (R, n, fan_in) or (n, fan_in)
            The stage's input.

        Returns
        -------
        h_out : ndarray, shape (R, n, fan_out)
        saved : list of (h_in, a)
            Per layer, its input and its activation ``phi(z)`` (``None`` for the output layer),
            stored for the backward.
        """
        saved = []
        for layer in self.stages[s]:
            z = h @ _weight(w, layer)
            z += c[:, None, layer.c_offset:layer.c_offset + layer.fan_out]
            if layer.kind == "output":
                saved.append((h, None))
                h = z
                continue
            a = np.tanh(z, out=z) if self.activation == "tanh" else np.maximum(z, 0.0, out=z)
            saved.append((h, a))
            h = a if layer.kind == "dense" else h + a
        return h, saved

    def backward_stage(
        self, s: int, w: np.ndarray, saved, delta: np.ndarray, gw: np.ndarray, gc: np.ndarray,
        input_grad: bool = True,
    ) -> np.ndarray | None:
        """Backward of stage ``s`` through the weight block ``w`` it reads (the current one).

        Writes the stage's weight and bias gradients into ``gw`` and ``gc`` (views of shapes
        (R, stage weights) and (R, stage biases)) and returns dL/d input (``None`` when
        ``input_grad`` is false, for the first stage).
        """
        layers = self.stages[s]
        for i in range(len(layers) - 1, -1, -1):
            layer = layers[i]
            h, a = saved[i]
            if a is None:
                dz = delta
            elif self.activation == "tanh":
                dz = delta * (1.0 - a * a)
            else:
                dz = delta * (a > 0.0)
            gw_layer = _weight(gw, layer)
            np.matmul(np.swapaxes(h, -1, -2), dz, out=gw_layer)
            np.sum(dz, axis=-2, out=gc[:, layer.c_offset:layer.c_offset + layer.fan_out])
            if i == 0 and not input_grad:
                return None
            back = dz @ np.swapaxes(_weight(w, layer), -1, -2)
            delta = delta + back if layer.kind == "residual" else back
        return delta

    def gradient(
        self, x: np.ndarray, y: np.ndarray, forward_blocks, backward_blocks, gw: np.ndarray,
        gc: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Loss and gradient of one batch through given weight versions, stage by stage.

        Parameters
        ----------
        x : ndarray, shape (R, n, 64) or (n, 64)
        y : ndarray of int, shape (R, n) or (n,)
        forward_blocks : sequence of (w_block, c_block)
            Per stage, the weight and bias blocks its forward reads.
        backward_blocks : sequence of ndarray
            Per stage, the weight block its backward reads.
        gw, gc : ndarray, shapes (R, n_weights), (R, n_biases)
            Output: the gradient of the mean loss.

        Returns
        -------
        loss : ndarray, shape (R,)
            Mean cross-entropy of the batch (computed by the forward, through the forward weights).
        logits : ndarray, shape (R, n, classes)
        """
        h, saved = x, []
        for s, (w_block, c_block) in enumerate(forward_blocks):
            h, stage_saved = self.forward_stage(s, w_block, c_block, h)
            saved.append(stage_saved)
        loss, delta = softmax_cross_entropy(h, y, grad=True)
        for s, wsl, csl in zip(range(self.n_stages - 1, -1, -1), self.weight_slices[::-1],
                               self.bias_slices[::-1], strict=True):
            delta = self.backward_stage(s, backward_blocks[s], saved[s], delta, gw[:, wsl],
                                        gc[:, csl], input_grad=s > 0)
        return loss, h

    def logits(self, w: np.ndarray, c: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Logits of ``x`` through the flat weights ``w`` and biases ``c`` (one version)."""
        h = x
        for s, (wsl, csl) in enumerate(zip(self.weight_slices, self.bias_slices, strict=True)):
            h, _ = self.forward_stage(s, w[:, wsl], c[:, csl], h)
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
    n = logits.shape[-2]
    y = np.broadcast_to(y, logits.shape[:-1])[..., None]
    shifted = logits - np.max(logits, axis=-1, keepdims=True)
    exp = np.exp(shifted)
    total = np.sum(exp, axis=-1, keepdims=True)
    picked = np.take_along_axis(shifted, y, axis=-1)
    loss = np.mean(np.log(total) - picked, axis=(-2, -1))
    if not grad:
        return loss
    delta = exp / total
    np.put_along_axis(delta, y, np.take_along_axis(delta, y, axis=-1) - 1.0, axis=-1)
    delta /= n
    return loss, delta


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
    """

    trace: Trace
    network: Network
    weights: np.ndarray
    biases: np.ndarray
    forward_versions: np.ndarray | None = None
    backward_versions: np.ndarray | None = None


class _StageBuffers:
    """Ring buffers of the stale weight versions each stage's forward will still read.

    Stage ``s`` with delay ``d > 0`` keeps ``d + 1`` slots; version ``j`` lives in slot
    ``j mod (d + 1)``. At update ``k`` the forward reads version ``max(0, k - d)``; pushing version
    ``k + 1`` overwrites version ``k - d``, the oldest, which is never read again.
    """

    def __init__(self, network: Network, delays: Sequence[int], w: np.ndarray, c: np.ndarray):
        self.delays = tuple(delays)
        self.wsl, self.csl = network.weight_slices, network.bias_slices
        self.w_slots, self.c_slots, self.versions = [], [], []
        for s, d in enumerate(self.delays):
            if d == 0:
                self.w_slots.append(None)
                self.c_slots.append(None)
                self.versions.append(None)
                continue
            w_ring = np.empty((d + 1, *w[:, self.wsl[s]].shape))
            c_ring = np.empty((d + 1, *c[:, self.csl[s]].shape))
            w_ring[0], c_ring[0] = w[:, self.wsl[s]], c[:, self.csl[s]]
            versions = np.full(d + 1, -1, dtype=np.int64)
            versions[0] = 0
            self.w_slots.append(w_ring)
            self.c_slots.append(c_ring)
            self.versions.append(versions)

    def forward_blocks(self, k: int, w: np.ndarray, c: np.ndarray, record: np.ndarray | None):
        """The (weight, bias) blocks each stage's forward reads at update ``k``."""
        blocks = []
        for s, d in enumerate(self.delays):
            if d == 0:
                blocks.append((w[:, self.wsl[s]], c[:, self.csl[s]]))
                if record is not None:
                    record[s] = k
                continue
            slot = max(0, k - d) % (d + 1)
            blocks.append((self.w_slots[s][slot], self.c_slots[s][slot]))
            if record is not None:
                record[s] = self.versions[s][slot]
        return blocks

    def push(self, version: int, w: np.ndarray, c: np.ndarray) -> None:
        """Store weights ``w``, biases ``c`` (flat, current) as ``version`` of every stage."""
        for s, d in enumerate(self.delays):
            if d == 0:
                continue
            slot = version % (d + 1)
            self.w_slots[s][slot] = w[:, self.wsl[s]]
            self.c_slots[s][slot] = c[:, self.csl[s]]
            self.versions[s][slot] = version


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
        A weight or the training loss became non-finite or exceeded :data:`DIVERGENCE_LIMIT`.
    """
    spec = NetworkSpec() if spec is None else spec
    seed = config.seed if seed is None else check_range("seed", seed, 0, None, integer=True)
    members = list(range(config.seeds) if members is None else members)
    data = load_digits_split()
    network = Network.build(config.problem, spec, config.stages, data.n_features, data.n_classes)
    n_stages, steps = config.stages, config.steps
    delays = [int(evaluate(config.mode, "forward_delay", stages=n_stages, stage=m))
              for m in range(1, n_stages + 1)]
    device = device_from_config(config)
    update = Updater.from_config(config, device)
    streams = member_generators(seed, members)
    data_rngs, device_rngs = streams["data"], streams["device"]

    w, c = network.init(data_rngs, spec.init_fraction * device.w_min,
                        spec.init_fraction * device.w_max)
    scale = draw_dw_min_scale(device, w.shape, device_rngs) if update.uses_dtod else None
    buffers = _StageBuffers(network, delays, w, c)
    gw, gc = np.empty_like(w), np.empty_like(c)
    w_min, w_max = np.min(w, axis=1), np.max(w, axis=1)
    fwd_rec = np.empty((steps, n_stages), dtype=np.int64) if record_versions else None
    bwd_rec = np.empty((steps, n_stages), dtype=np.int64) if record_versions else None
    log_at = _log_points(steps, config.log_every)
    records, reported = [], 0
    batch = config.samples_per_update

    for k in range(steps + 1):
        if k == log_at[len(records)]:
            records.append(_measure(network, data, w, c, spec.grad_norm))
            _check(k, "training loss", records[-1][0], config.lr)
            if progress is not None and k > reported:
                progress(k - reported)
                reported = k
        if k == steps:
            break
        idx = sample_indices(data_rngs, data.n_train, batch)
        forward = buffers.forward_blocks(k, w, c, None if fwd_rec is None else fwd_rec[k])
        backward = [w[:, sl] for sl in network.weight_slices]
        if bwd_rec is not None:
            bwd_rec[k] = k
        network.gradient(data.x_train[idx], data.y_train[idx], forward, backward, gw, gc)
        gw *= -config.lr
        w = update(w, gw, device_rngs, scale)
        c = c - config.lr * gc
        np.minimum(w_min, np.min(w, axis=1), out=w_min)
        np.maximum(w_max, np.max(w, axis=1), out=w_max)
        _check(k + 1, "max |w|", np.maximum(-w_min, w_max), config.lr)
        buffers.push(k + 1, w, c)

    loss, grad_norm2, accuracy = (np.stack(column, axis=1) for column in zip(*records, strict=True))
    step = np.asarray(log_at, dtype=np.int64)
    trace = Trace(
        step=step,
        samples=step * batch,
        cycles=_cycles(config, step),
        loss=loss,
        grad_norm2=grad_norm2,
        test_accuracy=accuracy,
        max_abs_w=np.maximum(-w_min, w_max),
        w_min_visited=w_min,
        w_max_visited=w_max,
        config={**config.to_dict(), "seed": int(seed), "members": members,
                "network": asdict(spec)},
    )
    return NetworkRun(trace, network, w, c, fwd_rec, bwd_rec)


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


def _measure(network: Network, data: DigitsData, w: np.ndarray, c: np.ndarray, grad_norm: bool):
    """Training loss and squared gradient norm on the whole training set, test accuracy."""
    if grad_norm:
        gw, gc = np.empty_like(w), np.empty_like(c)
        blocks = [(w[:, wsl], c[:, csl])
                  for wsl, csl in zip(network.weight_slices, network.bias_slices, strict=True)]
        loss, _ = network.gradient(data.x_train, data.y_train, blocks, [b for b, _ in blocks],
                                   gw, gc)
        norm2 = np.sum(gw * gw, axis=1) + np.sum(gc * gc, axis=1)
    else:
        loss = softmax_cross_entropy(network.logits(w, c, data.x_train), data.y_train)
        norm2 = np.full(w.shape[0], np.nan)
    predicted = np.argmax(network.logits(w, c, data.x_test), axis=-1)
    accuracy = np.mean(predicted == data.y_test, axis=-1)
    return loss, norm2, accuracy


def _check(step: int, quantity: str, values: np.ndarray, lr: float) -> None:
    worst = np.max(np.where(np.isfinite(values), np.abs(values), np.inf))
    if worst > DIVERGENCE_LIMIT:
        bad = values[~np.isfinite(values)]
        raise DivergenceError(step, quantity, float(bad[0] if bad.size else worst), lr)


def _log_points(steps: int, every: int) -> list[int]:
    points = list(range(0, steps, every))
    return points + [steps]


def _slices(sizes: Sequence[int]) -> tuple[slice, ...]:
    ends = np.cumsum(sizes)
    return tuple(slice(int(end - size), int(end)) for size, end in zip(sizes, ends, strict=True))


def _weight(flat: np.ndarray, layer: Layer) -> np.ndarray:
    """The ``(R, fan_in, fan_out)`` view of ``layer``'s weights in a stage block."""
    block = flat[:, layer.w_offset:layer.w_offset + layer.w_size]
    return block.reshape(flat.shape[0], layer.fan_in, layer.fan_out)
