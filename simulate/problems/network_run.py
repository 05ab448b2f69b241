"""Training a digits network through a pipeline: :func:`train_network` (the model, the
measurements and the randomness are described in :mod:`simulate.problems.network`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import NamedTuple

import numpy as np

from theory.errors import check_range
from theory.limits import MAX_ARRAY_BYTES, check_size

from ..device import (
    AnalogPass,
    DeviceSpread,
    SampleLayer,
    SampleWrites,
    Updater,
    check_bit_length,
    coincidence_counts,
    device_named,
    digital_blocks,
    expected_step,
    expected_step_ratio,
    io_preset,
    ratio_tau,
    stochastic_write,
    tiki_taka,
)
from ..pipeline import (
    NETWORK_LOSS_FACTOR,
    StaleVersions,
    check_divergence,
    cycles_after,
    divergence_limit,
    forward_delays,
)
from ..rng import member_generators
from ..trace import Trace, log_steps
from .digits import (
    accuracy_subset,
    load_digits_data,
    loss_subset,
    measurement_record,
    sample_indices,
)
from .network import (
    Buffers,
    Network,
    NetworkSpec,
    StageView,
    one_blas_thread,
)
from .network_measure import MemberViews, measure_members
from .sizes import DRAW_CHUNK, network_bytes_per_member

__all__ = [
    "NetworkRun",
    "NetworkTraining",
    "io_passes",
    "run_network",
    "train_network",
]

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
        them (:mod:`simulate.problems.digits`).
    """

    trace: Trace
    network: Network
    weights: np.ndarray
    biases: np.ndarray
    forward_versions: np.ndarray | None = None
    backward_versions: np.ndarray | None = None
    validation_accuracy: np.ndarray | None = None


def train_network(
    config,
    seed: int | None = None,
    *,
    spec: NetworkSpec | None = None,
    members: Iterable[int] | None = None,
    progress: Callable[[int], None] | None = None,
    record_versions: bool = False,
) -> NetworkRun:
    """Train a digits network with the config's mode, algorithm and device; all members at once.

    The run is a :class:`NetworkTraining`: set up, then :meth:`~NetworkTraining.measure` at every
    logging point and :meth:`~NetworkTraining.step` between them, then
    :meth:`~NetworkTraining.finish`.

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
        :func:`simulate.pipeline.staleness.divergence_limit` (relative to its initial value).
    """
    return NetworkTraining(config, seed, spec=spec, members=members, progress=progress,
                           record_versions=record_versions).run()


class NetworkTraining:
    """A network run as a state: set up here, then :meth:`measure` and :meth:`step`, then
    :meth:`finish` (:meth:`run` does the three in order; :func:`train_network` is that).

    The write of every update (per sample, a fused expected or stochastic pass, or through the
    updater) is chosen once, here. ``step(k)`` must be called for ``k = 0, 1, ..., steps - 1`` in
    order, and ``measure(k)`` before ``step(k)`` at every ``k`` of :attr:`log_at` (the last one,
    ``steps``, after the last step); :meth:`run` does exactly that.

    Parameters
    ----------
    config, seed, spec, members, progress, record_versions
        As for :func:`train_network`.

    Attributes
    ----------
    config : SimConfig
    seed : int
        The root seed.
    spec : NetworkSpec
    members : list of int
    network : Network
    data : DigitsData
    log_at : ndarray of int
        The updates after which the run is measured (:func:`simulate.trace.log_steps`).
    w, c : ndarray, shape (R, n_weights), (R, n_biases)
        The weights and biases, updated in place.
    w_min, w_max : ndarray, shape (R,)
        The lowest and highest weight visited so far, per member.
    """

    def __init__(self, config, seed: int | None = None, *, spec: NetworkSpec | None = None,
                 members: Iterable[int] | None = None,
                 progress: Callable[[int], None] | None = None, record_versions: bool = False):
        self.config = config
        self.spec = spec = NetworkSpec() if spec is None else spec
        self.seed = config.seed if seed is None else check_range("seed", seed, 0, None,
                                                                 integer=True)
        self.members = members = list(range(config.seeds) if members is None else members)
        per_member = network_bytes_per_member(config.samples_per_update, config.steps,
                                              spec.layers, spec.width)
        check_size("width", spec.width, need=per_member, limit=MAX_ARRAY_BYTES,
                   what="bytes of one member's largest array")
        check_size("seeds", len(members), need=len(members) * per_member, limit=MAX_ARRAY_BYTES,
                   what="bytes of ensemble arrays", hint="run fewer seeds at a time")
        self.data = data = load_digits_data(config.data, config.dtype)
        self.network = network = Network.build(config.problem, spec, config.stages,
                                               data.n_features, data.n_classes)
        self._delays = delays = forward_delays(config.mode, config.stages)
        device = device_named(config.device, config.tau)
        update = Updater.from_config(config, device)
        streams = member_generators(self.seed, members)
        self._data_rngs, device_rngs = streams["data"], streams["device"]
        self._forward_mvm, self._backward_mvm = io_passes(config, streams["io"])

        self.w, self.c = w, c = tuple(a.astype(config.dtype, copy=False) for a in network.init(
            self._data_rngs, spec.init_fraction * device.w_min, spec.init_fraction * device.w_max))
        spread = DeviceSpread.draw(device, w.shape, device_rngs) if update.uses_dtod else None
        self._update = update = tiki_taka.wrap(config, update, spread, w,
                                               tiki_taka.layer_tiles(network), device_rngs)
        self._monitor = update.pinned_monitor(spread)
        # w and c are updated in place, so their stage blocks and views stay valid for the run
        self._blocks = [(w[:, ws], c[:, cs])
                        for ws, cs in zip(network.weight_slices, network.bias_slices, strict=True)]
        self._stale = stale = StaleVersions(delays, self._blocks)
        # algorithm "mixed": the weights of these stages update digitally (w + dw)
        digital = [network.weight_slices[stage - 1] for stage in config.digital_stage_indices]
        self._current = network.views(w, c)
        self._slot_views = [[network.stage_view(s, *stale.stored(s, j)) for j in range(d + 1)]
                            if d else None for s, d in enumerate(delays)]
        self._backward = [view.weights for view in self._current]
        self._gw, self._gc = np.empty_like(w), np.empty_like(c)
        self._grads = network.views(self._gw, self._gc)
        self.w_min, self.w_max = w.min(axis=1), w.max(axis=1)
        recorded = (config.steps, config.stages)
        self._fwd_rec = np.empty(recorded, dtype=np.int64) if record_versions else None
        self._bwd_rec = np.empty(recorded, dtype=np.int64) if record_versions else None
        self.log_at = log_steps(config.steps, config.log_period)
        self._progress, self._records, self._reported = progress, [], 0
        self._w_limit, self._loss_limit = divergence_limit(w), None
        self._write = _writer(config, update, network, w, c, spread, device_rngs, digital,
                              self._grads)
        self._buffers = Buffers()
        self._chunk = None
        self._subset = loss_subset(data, spec.loss_rows)
        self._test_subset = accuracy_subset(data, spec.test_rows)
        self._members = MemberViews.of(network, w, c)  # the measurement's views, built once

    def run(self) -> NetworkRun:
        """Every measurement and update in order, then :meth:`finish`, on one BLAS thread
        (:func:`simulate.problems.network.one_blas_thread`)."""
        steps = self.config.steps
        with one_blas_thread():
            for k in range(steps + 1):
                if k == self.log_at[len(self._records)]:
                    self.measure(k)
                if k < steps:
                    self.step(k)
        return self.finish()

    def measure(self, k: int) -> None:
        """Measure the weights after ``k`` updates (loss, gradient norm, accuracies), check the
        training loss for divergence and report progress. The loss and gradient norm are
        measured on the loss subset (``spec.loss_rows``) and the test accuracy on the test
        subset (``spec.test_rows``) before the last update, on every training and test image
        after it (:func:`measurement_record`).

        Raises
        ------
        DivergenceError
            The training loss left its limit (relative to the first measurement).
        """
        data = self.data
        last = k == self.config.steps
        rows = (data.x_loss, data.y_loss) if last else self._subset
        test = (data.x_test, data.y_test) if last else self._test_subset
        self._records.append(measure_members(self.network, data, self._members,
                                             self.spec.grad_norm, *rows, *test))
        if self._monitor is not None:
            self._monitor.observe(k, self.w)
        if self._loss_limit is None:
            self._loss_limit = divergence_limit(self._records[0][0], factor=NETWORK_LOSS_FACTOR)
        check_divergence(k, "training loss", self._records[-1][0], self._loss_limit,
                         self.config.lr)
        if self._progress is not None and k > self._reported:
            self._progress(k - self._reported)
            self._reported = k

    def step(self, k: int) -> None:
        """Update ``k``: draw its batch, read the (stale) weights, back-propagate, write.

        Raises
        ------
        DivergenceError
            A weight left its limit (relative to the initial weights) or became non-finite.
        """
        config, network, data, stale = self.config, self.network, self.data, self._stale
        if k % DRAW_CHUNK == 0:
            self._chunk = sample_indices(self._data_rngs, data.n_train,
                                         config.samples_per_update,
                                         batches=min(DRAW_CHUNK, config.steps - k))
        idx = self._chunk[k % DRAW_CHUNK]
        forward = [self._current[s] if d == 0 else self._slot_views[s][stale.slot(k, s)]
                   for s, d in enumerate(self._delays)]
        if self._fwd_rec is not None:
            self._fwd_rec[k] = [stale.version(k, s) for s in range(config.stages)]
            self._bwd_rec[k] = k
        factors = [] if self._write.wants_factors else None
        network.gradient(data.x_train[idx], data.y_train[idx], forward, self._backward,
                         self._grads, factors, self._forward_mvm, self._backward_mvm,
                         loss=False, buffers=self._buffers)
        self._write(self.w, self._gw, factors, self.w_min, self.w_max)
        self._gc *= config.lr
        self.c -= self._gc
        w_min, w_max, w_limit = self.w_min, self.w_max, self._w_limit
        if not (-w_limit <= w_min.min() and w_max.max() <= w_limit):  # False for nan too
            check_divergence(k + 1, "max |w|", np.maximum(-w_min, w_max), w_limit, config.lr)
        stale.push(k + 1, self._blocks)

    def finish(self) -> NetworkRun:
        """The :class:`NetworkRun`, after the last measurement (that of ``k = steps``)."""
        config = self.config
        if self._monitor is not None:
            self._monitor.warn()
        loss, grad_norm2, accuracy, validation = (np.stack(column, axis=1)
                                                  for column in zip(*self._records, strict=True))
        step = np.asarray(self.log_at, dtype=np.int64)
        trace = Trace(
            step=step,
            samples=step * config.samples_per_update,
            cycles=cycles_after(config.mode, config.stages, config.micro_batches, step)
            + tiki_taka.transfer_cycles(self._update, step),
            loss=loss,
            grad_norm2=grad_norm2,
            test_accuracy=accuracy,
            max_abs_w=np.maximum(-self.w_min, self.w_max),
            w_min_visited=self.w_min,
            w_max_visited=self.w_max,
            config={**config.to_dict(), "seed": int(self.seed), "members": self.members,
                    "network": asdict(self.spec),
                    "measurement": measurement_record(
                        self.data, self._subset[0].shape[0], self._test_subset[0].shape[0],
                        self.spec.grad_norm, config.log_period)},
        )
        return NetworkRun(trace, self.network, self.w, self.c, self._fwd_rec, self._bwd_rec,
                          None if self.data.x_val is None else validation)


def run_network(
    config,
    seed: int | None = None,
    *,
    members: Iterable[int] | None = None,
    progress: Callable[[int], None] | None = None,
) -> Trace:
    """The :class:`~simulate.trace.Trace` of :func:`train_network` with the default
    :class:`NetworkSpec` (the entry point of :func:`simulate.engine.run` for the networks)."""
    return train_network(config, seed, members=members, progress=progress).trace


def io_passes(config, rngs: Sequence[np.random.Generator]):
    """The analog forward and backward products of ``config`` (``config.forward_io``,
    ``config.backward_io``; ``None`` for ``perfect``, the exact product), drawing from the
    members' generators ``rngs`` (the ``io`` stream). The forward pass draws before the backward
    pass of each layer's update, both from one stream per member."""
    passes = []
    for name, direction in ((config.forward_io, "forward"), (config.backward_io, "backward")):
        io = io_preset(name)
        passes.append(None if io.is_perfect else AnalogPass(io, tuple(rngs), direction))
    return tuple(passes)


def _writer(config, update, network: Network, w: np.ndarray, c: np.ndarray, spread, rngs,
            digital, grads: Sequence[StageView]):
    """The write of every update of a run, chosen once: per sample (``config.write``), else a
    fused pass (:class:`_FusedExpected`, :class:`_FusedStochastic`) where one applies, else
    through the updater (:class:`_UpdaterWrite`).

    One sample per update, or per-sample writes: each write is a layer's rank-1 outer product, so
    the stochastic and mean-count pulse types fire aihwkit's bit trains on it (shared along rows
    and columns); their counts are written into one work array (and its stage views).
    """
    batch = config.samples_per_update
    per_sample = config.write == "per-sample"
    trains = update.kind == "pulsed" and update.pulse_type != "deterministic"
    rank1 = trains and (batch == 1 or per_sample)
    count_views = None
    if rank1:
        check_bit_length(update.device.desired_bl, "desired_bl")
        counts = np.zeros(w.shape, dtype=np.int64)
        count_views = (counts, network.views(counts, np.zeros(c.shape, dtype=np.int64)))
    general = _UpdaterWrite(update, rngs, spread, rank1, count_views, config, digital)
    if per_sample:
        numpy_path = _PerSampleWrite(general, grads, batch, config.lr)
        # (one sample per update keeps the batch-mean write's bits: the numpy path)
        compiled = SampleWrites.of(update, spread) if rank1 and batch > 1 else None
        return numpy_path if compiled is None else \
            _CompiledSampleWrite.of(compiled, numpy_path, network, config, rngs)
    if digital or rank1:
        return general
    fused = _FusedExpected.of(update, w) or _FusedStochastic.of(update, w, spread, rngs)
    return general if fused is None else _FusedWrite(fused, general)


class _UpdaterWrite(NamedTuple):
    """The write through the updater (:func:`_write`) of the batch's desired increment
    ``-lr gw``; ``wants_factors``: the write needs the layers' factors ``h, dz`` (the bit
    trains of a rank-1 write)."""

    update: Updater
    rngs: Sequence[np.random.Generator]
    spread: DeviceSpread | None
    rank1: bool
    count_views: tuple | None
    config: object
    digital: list

    @property
    def wants_factors(self) -> bool:
        """The gradient must list each layer's factors (for the bit trains)."""
        return self.rank1

    def __call__(self, w: np.ndarray, gw: np.ndarray, factors, w_min: np.ndarray,
                 w_max: np.ndarray) -> None:
        """Write ``-lr gw`` into ``w`` (``gw`` is overwritten) and the running extremes."""
        gw *= -self.config.lr
        self.apply(w, gw, factors, 0, w_min, w_max)

    def apply(self, w: np.ndarray, gw: np.ndarray, factors, t: int, w_min: np.ndarray,
              w_max: np.ndarray) -> None:
        """Write the desired increment ``gw`` (of sample ``t`` where rank-1) and the running
        extremes."""
        _write(self.update, w, gw, self.rngs, self.spread, factors, t, self.rank1,
               self.count_views, self.config, self.digital)
        np.minimum(w_min, w.min(axis=1), out=w_min)
        np.maximum(w_max, w.max(axis=1), out=w_max)


class _PerSampleWrite(NamedTuple):
    """Per-sample writes: one write per sample, in order, each read at the batch's weights
    (:func:`_write_sample`, then :meth:`_UpdaterWrite.apply`)."""

    general: _UpdaterWrite
    grads: Sequence[StageView]
    batch: int
    lr: float

    wants_factors = True

    def __call__(self, w: np.ndarray, gw: np.ndarray, factors, w_min: np.ndarray,
                 w_max: np.ndarray) -> None:
        """The batch's writes into ``w`` (``gw`` is their work array) and the running extremes."""
        for t in range(self.batch):
            _write_sample(t, factors, self.grads, gw, self.lr)
            self.general.apply(w, gw, factors, t, w_min, w_max)


class _CompiledSampleWrite(NamedTuple):
    """Per-sample pulse-train writes compiled, one call per layer for the whole batch
    (:class:`simulate.device.SampleWrites`), or the numpy path (:class:`_PerSampleWrite`) for
    a batch the kernel refuses; ``bases[s][i]``: the first column of layer ``i`` of stage ``s``
    in the flat weights, ``digital[s]``: stage ``s`` updates digitally (``mixed``)."""

    compiled: SampleWrites
    numpy_path: _PerSampleWrite
    bases: tuple
    digital: tuple
    rngs: Sequence[np.random.Generator]

    wants_factors = True

    @classmethod
    def of(cls, compiled, numpy_path, network: Network, config, rngs) -> _CompiledSampleWrite:
        """The write of ``network``'s layers (stages ``config.digital_stage_indices`` digital)."""
        digital_stages = {stage - 1 for stage in config.digital_stage_indices}
        bases = tuple(tuple(ws.start + layer.w_offset for layer in stage)
                      for ws, stage in zip(network.weight_slices, network.stages, strict=True))
        digital = tuple(s in digital_stages for s in range(network.n_stages))
        return cls(compiled, numpy_path, bases, digital, rngs)

    def __call__(self, w: np.ndarray, gw: np.ndarray, factors, w_min: np.ndarray,
                 w_max: np.ndarray) -> None:
        """The batch's writes into ``w`` and the running extremes."""
        layers = [SampleLayer(self.bases[s][i], h, dz, self.digital[s])
                  for s, i, h, dz in factors]
        if not self.compiled.write(w, layers, self.rngs, w_min, w_max):
            self.numpy_path(w, gw, factors, w_min, w_max)


class _FusedWrite(NamedTuple):
    """A fused pass (:class:`_FusedExpected` or :class:`_FusedStochastic`), or the write
    through the updater where it does not apply."""

    fused: object
    general: _UpdaterWrite

    wants_factors = False

    def __call__(self, w: np.ndarray, gw: np.ndarray, factors, w_min: np.ndarray,
                 w_max: np.ndarray) -> None:
        """Write ``-lr gw`` into ``w`` (``gw`` may be overwritten) and the running extremes."""
        if not self.fused.step(w, gw, -self.general.config.lr, w_min, w_max):
            self.general(w, gw, factors, w_min, w_max)


class _FusedExpected(NamedTuple):
    """The plain expected update with a constant ``F`` as one fused pass
    (:func:`simulate.device.update_kernels.expected_step`): ``response(w)`` gives ``G(w)`` with the
    shape of ``w`` (numpy), ``constants`` are ``(F, w_min, w_max)``; ``ratio`` is ``tau`` where
    the compiled ``G`` is ``w / tau`` (soft bounds), evaluated inside the pass
    (:func:`simulate.device.update_kernels.expected_step_ratio`, the same bits), else ``None``."""

    response: Callable[[np.ndarray], np.ndarray]
    constants: tuple[float, float, float]
    ratio: float | None = None

    @classmethod
    def of(cls, update, w: np.ndarray) -> _FusedExpected | None:
        """The fused form of ``update`` on ``w``, or ``None`` where the general path must run
        (not a plain :class:`simulate.device.updates.Updater` of kind ``expected``, an ``F`` that
        depends on the weight, or ``w`` not a C-contiguous float64 or float32 array)."""
        if type(update) is not Updater or update.kind != "expected":
            return None
        device = update.device
        f = device.F_constant
        if f is None or w.dtype not in (np.float64, np.float32) or not w.flags.c_contiguous:
            return None

        def response(x: np.ndarray) -> np.ndarray:
            g = device.G(x)  # (the compiled responses return the shape of x)
            return g if g.shape == x.shape else np.ascontiguousarray(np.broadcast_to(g, x.shape))

        return cls(response, (float(f), float(device.w_min), float(device.w_max)),
                   ratio_tau(device))

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
    (:func:`simulate.device.pulses.stochastic_write`: the scaling ``-lr gw``, the counts and the
    closed form, the bits of the general path), with its work array and the members'
    generators."""

    device: object
    rngs: Sequence[np.random.Generator]
    out: np.ndarray

    @classmethod
    def of(cls, update, w: np.ndarray, spread, rngs) -> _FusedStochastic | None:
        """The fused form of ``update`` on ``w``, or ``None`` where the general path must run
        (not a plain :class:`simulate.device.updates.Updater` of kind ``pulsed`` with the
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
           rank1: bool, count_views, config, digital=()) -> None:
    """Apply one write of desired increment ``gw`` to ``w`` in place: through the update, or
    (``rank1``) as aihwkit's bit trains on each layer's outer product ``h_t dz_t^T`` (sample
    ``t`` of the batch) fired by :meth:`simulate.device.updates.Updater.fire`; the ``digital``
    weight slices (``mixed`` runs, Theorem 2M) take ``w + gw`` instead."""
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
