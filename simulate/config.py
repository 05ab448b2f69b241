"""The configuration of one simulation run (validated, frozen, JSON-serialisable).

:class:`SimConfig` is the contract between the simulator's parts: its fields (with their help texts
and short flags in the field metadata) are also the flags of ``aimc-pipeline simulate``.
:func:`device_from_config` resolves its ``device`` and ``tau`` to a :class:`theory.devices.Device`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from theory.devices import Device
from theory.errors import ParameterError, check_range, show_value
from theory.limits import MAX_ARRAY_BYTES, MAX_COUNT, MAX_UPDATES, check_size
from theory.schedules import MODES, TRANSFER_SLICES  # what a transfer event moves
from theory.theorems import ALGORITHMS, WRITE_SEMANTICS  # write semantics: Corollary 3PS

from .device import (
    DEFAULT_DW_MIN,
    DEFAULT_TAU,
    DIGITAL_FAST,
    IO_PRESETS,
    PULSE_METHODS,
    PULSE_TYPES,
    check_device_tau,
    device_named,
    fast_device_named,
)
from .problems import (
    DATA_SETS,
    DIGITS_FEATURES,
    DRAW_CHUNK,
    LEAST_SQUARES_DIM,
    NETWORK_PROBLEMS,
    ORACLE_PROBLEMS,
    network_bytes_per_member,
    train_rows,
)

__all__ = [
    "ALGORITHMS", "DATA_SETS", "DEFAULT_DW_MIN", "DEFAULT_TAU", "DIGITAL_FAST", "IO_CHOICES",
    "MAX_REPLICAS", "MAX_STAGES", "NETWORK_PROBLEMS", "ORACLE_PROBLEMS", "PROBLEMS",
    "PULSE_METHODS", "PULSE_TYPES", "SimConfig", "TRANSFER_SLICES", "UPDATES", "WRITE_SEMANTICS",
    "check_device_tau", "device_from_config", "device_named", "fast_device_from_config",
    "network_bytes_per_member",
]

PROBLEMS = ORACLE_PROBLEMS + NETWORK_PROBLEMS
UPDATES = ("expected", "pulsed")
#: IO presets of the analog forward and backward products (:data:`simulate.device.IO_PRESETS`)
IO_CHOICES = tuple(IO_PRESETS)
#: the most pipeline stages a run may have: a sanity cap on the input, not a limit of the method
#: (an async run keeps ``M - m + 1`` copies of stage m's block, about ``M / 2`` copies of the whole
#: model, and the paper's pipelines have at most a few dozen stages)
MAX_STAGES = 64
#: the most data-parallel replicas per member (a sanity cap on the input, like MAX_STAGES)
MAX_REPLICAS = 64
#: the integer fields of :class:`SimConfig` (an integral float such as ``20.0`` is stored as int)
_INTEGER_FIELDS = ("stages", "micro_batches", "micro_batch_size", "steps", "seeds", "log_every",
                   "dim", "seed", "transfer_every", "replicas",
                   "average_every")


def _choice(name: str, value: str, valid: tuple[str, ...]) -> str:
    if value not in valid:
        raise ParameterError(f"{name}={value!r} is unknown; valid: {', '.join(valid)}")
    return value


@dataclass(frozen=True)
class SimConfig:
    """One simulated training run: problem, pipeline, algorithm, device and optimisation settings.

    Iterations are **updates**: ``none`` and ``sync`` consume ``micro_batches * micro_batch_size``
    samples per update (one mini-batch), ``async`` consumes ``micro_batch_size`` samples per update
    (one micro-batch) and updates every stage after every micro-batch.

    Parameters
    ----------
    problem : {"quadratic", "least-squares", "digits-mlp", "digits-resmlp"}
    mode : {"none", "sync", "async"}
        Pipeline schedule (paper-notes section 2).
    algorithm : {"digital", "analog", "tiki-taka", "mixed"}
        Plain SGD, analog SGD through the device's response functions, Tiki-Taka (two analog
        arrays, :mod:`simulate.device.tiki_taka`), or ``mixed``: analog SGD except on the stages of
        ``digital_stages``, whose blocks update digitally (Theorem 2M).
    stages : int
        Pipeline stages ``M`` (1 to :data:`MAX_STAGES`); the model's weights are split into ``M``
        contiguous blocks.
    micro_batches : int
        ``B``, micro-batches per mini-batch (``none``, ``sync``); ignored by ``async``.
    micro_batch_size : int
        ``b``, samples per micro-batch.
    device : str
        A preset name of :func:`theory.devices.list_presets` or a family of
        :func:`theory.devices.make_device` (then ``tau`` sets its range).
    tau : float or None
        Dynamic range of a soft-bounds family device (overrides the preset's range when given).
        Must be at least ``dw_min / 2``; a preset with a fixed ``[w_min, w_max]`` range records
        ``None`` (the default ``1.0`` is replaced) and refuses any other value.
    update : {"expected", "pulsed"}
        Expected analog update, or pulse-level (counts by ``pulse_type``) with cycle-to-cycle
        noise.
    pulse_type : {"deterministic", "stochastic", "mean-count"}
        How the pulse-level update counts pulses (aihwkit vocabulary): ``stochastic`` (the
        default, as aihwkit's default ``StochasticCompressed``: the coincidences of two
        Bernoulli trains of ``desired_bl`` bits, Binomial per device), ``deterministic``
        (stochastic rounding of ``|dW| / dw_min``, matching aihwkit's ``DeterministicImplicit``;
        the default before issue 13) or ``mean-count`` (the expected count, no train noise); see
        :func:`simulate.device.pulses.pulsed_update`. A network with one sample per update (or
        ``write = "per-sample"``) fires the trains on each layer's outer product
        (:func:`simulate.device.trains.coincidence_counts`).
        Recorded with every run; unused by ``expected``.
    write : {"batch-mean", "per-sample"}
        How the ``n`` = :attr:`samples_per_update` gradients of one update (all computed at the
        same read weights) are written: ``batch-mean`` (the default) applies one update with the
        desired increment ``-lr * mean_i g_i``; ``per-sample`` applies ``n`` updates in sample
        order, the i-th with desired increment ``-(lr / n) g_i`` through the device (each at the
        weights the previous write left), as a crossbar's rank-1 outer-product updates do
        (aihwkit). Identical bits at ``n = 1``. The floor of analog SGD does not shrink with ``n``
        under ``per-sample`` (docs/theory.md,
        Corollary 3PS).
    pulse_method : {"closed-form", "loop"}
        How the pulse-level update fires the pulses of an element
        (:func:`simulate.device.pulses.apply_pulses`): ``closed-form`` (the default) all at once
        where the device's responses are affine (exact without cycle-to-cycle noise; with it, the
        exact Gaussian sum of additive noise or a moment-matched Gaussian of multiplicative
        noise), else one by one; ``loop`` always one by one.
    update_management, bl_management : bool
        aihwkit's update management and BL management of the ``stochastic`` and ``mean-count``
        trains (:func:`simulate.device.trains.train_scales`), both off by default. Update management
        needs the rank-1 factors ``x`` and ``d`` (networks at one sample per update); with only
        ``dW`` known it changes nothing (:func:`simulate.device.pulses.pulsed_update`). BL
        management sets each update's bit length from its largest desired pulse count (per member:
        the whole weight vector, or per layer for the rank-1 trains).
    lr : float
        Step size ``alpha`` (> 0).
    steps : int
        Number of updates ``K`` (>= 1).
    seeds : int
        Ensemble size ``R``: independent runs computed together along a leading axis.
    log_every : int
        Record the trace every this many updates (the last update is always recorded).
    dim : int
        Dimension of the oracle quadratic (ignored by other problems).
    sigma2 : float
        Per-sample gradient-noise variance of the oracle problems (total variance ``sigma2 / n`` for
        a batch of ``n``).
    seed : int
        Root seed; ensemble member ``r`` uses ``SeedSequence(seed).spawn(seeds)[r]``.
    forward_io, backward_io : {"perfect", "aihwkit", "companion"}
        IO non-idealities (DAC, output noise, ADC, noise and bound management) of the analog
        products of the networks' forward (``h W``) and backward (``delta_z W^T``) passes,
        presets of :data:`simulate.device.mvm.IO_PRESETS`; ``perfect`` (default) is the exact
        product. Only for ``algorithm="analog"`` on a network problem (a digital run computes
        exactly; an oracle problem's gradient is not an MVM): anything but ``perfect`` elsewhere
        is refused. The weight gradient ``h^T delta_z`` is the update, not an MVM.
    transfer_every, transfer_lr, tt_gamma, transfer_slice, fast_device, transfer_reset
        Tiki-Taka (``algorithm="tiki-taka"``, :mod:`simulate.device.tiki_taka`; unused otherwise):
        the period ``T`` (updates), the transfer rate relative to ``lr`` (``beta = transfer_lr *
        lr``, aihwkit's ``scale_transfer_lr``), the weight ``gamma`` of A in
        ``W = gamma A + C``, the slice moved per event (``column`` round robin or ``all``),
        the fast array's device (``None``: the run's device; ``"digital"``
        (:data:`DIGITAL_FAST`): an ideal buffer, ``A += dw`` exactly, TT-v2's digital buffer)
        and whether a transfer sets the transferred columns of A back to 0 (``transfer_reset``;
        default ``False``, aihwkit's TransferCompound: A is not reset). ``gamma = 0``, ``all``,
        a digital A and the reset are Corollary TT0's variant (docs/theory.md, registry
        ``tiki_taka_reset``).
    digital_stages : str
        ``algorithm="mixed"`` only: comma list of 1-based stages whose weight block updates
        digitally (``w + dw``); the other stages update through the device. Stored sorted
        (``"3,1"`` -> ``"1,3"``); empty (the default) is every stage analog.
    data : {"digits", "digits-holdout", "digits-augmented"}
        The training data of a network problem (:mod:`simulate.problems.digits`): the 1437 training
        images (default), 1150 of them with 287 held out for validation, or those 1150 with
        12 rotated and shifted copies each; always the same 360 test images. Oracle problems
        take only the default.
    grad_bias : float
        Norm ``beta`` of a fixed bias added to the oracle gradient signal (gradient units, >= 0;
        default 0: the unbiased signal, today's bits). The bias is ``beta`` times the unit
        vector from the initial weights towards the minimiser, the same in every update and
        every member: the signal ``g + b`` understates the descent (docs/theory.md,
        Proposition IO, registry ``analog_sgd_biased``). Oracle problems only (a network's
        gradient error comes from its IO non-idealities, ``forward_io``/``backward_io``).
    replicas : int
        Data-parallel replicas per ensemble member (1 to ``MAX_REPLICAS``; oracle problems), each
        running ``mode`` on its own gradient noise and device draws
        (:mod:`simulate.pipeline.replicas`): mode ``none`` is the planner's ``dp``,
        ``sync``/``async`` its ``hybrid``. 1 (default): today's run, bit for bit.
    average_every : int
        Averaging period ``P`` (updates between averagings; ignored at ``replicas = 1``).
    programming_error : float
        Std of the per-weight error when the mean is programmed back, weight units (>= 0,
        default 0); the local-SGD row's ``nu = dim * programming_error**2``.

    Notes
    -----
    Integer fields accept an integral float (``20.0`` is stored as ``20``). Resource limits of
    :mod:`theory.limits` are checked here, before anything is allocated: ``steps`` at most
    ``MAX_UPDATES``; samples and cycles of the run at most ``MAX_COUNT`` (exact integers); every
    array of the run (trace, ensemble state, noise draws, Hessian, network batches) at most
    ``MAX_ARRAY_BYTES``. Every refusal is a one-line :class:`~theory.errors.ParameterError`
    starting with the field's name.
    """

    problem: str = field(
        default="quadratic", metadata={"help": "training problem", "choices": PROBLEMS}
    )
    mode: str = field(default="none", metadata={"help": "pipeline schedule", "choices": MODES})
    algorithm: str = field(
        default="analog",
        metadata={"help": "digital SGD, analog SGD or tiki-taka", "choices": ALGORITHMS},
    )
    stages: int = field(default=1, metadata={
        "help": f"pipeline stages M (1 to {MAX_STAGES}; at most --dim for the quadratic, layers "
                "for networks)",
        "flags": ("-M",),
    })
    micro_batches: int = field(default=1, metadata={
        "help": "micro-batches per mini-batch B (none, sync; ignored by async)", "flags": ("-B",),
    })
    micro_batch_size: int = field(
        default=1, metadata={"help": "samples per micro-batch b", "flags": ("-b",)}
    )
    device: str = field(default="softbounds", metadata={
        "help": "device preset (e.g. reram-softbounds) or response family (e.g. softbounds)",
    })
    tau: float | None = field(default=DEFAULT_TAU, metadata={
        "help": "dynamic range tau of a soft-bounds/power/exponential device (weight units)",
    })
    update: str = field(default="expected", metadata={
        "help": "analog update: expected, or pulse-level (pulse counts: --pulse-type)",
        "choices": UPDATES,
    })
    pulse_type: str = field(default="stochastic", metadata={
        "help": "pulse counts of --update pulsed (aihwkit names): stochastic (the default, as "
                "aihwkit's) = coincidences of two bit trains of desired_bl bits (aihwkit "
                "StochasticCompressed, at most desired_bl pulses); deterministic = stochastic "
                "rounding of |dW|/dw_min (aihwkit DeterministicImplicit); mean-count = the "
                "expected count, no train noise",
        "choices": PULSE_TYPES,
    })
    write: str = field(default="batch-mean", metadata={
        "help": "write semantics of one update: batch-mean = one update of the batch-mean "
                "gradient; per-sample = one rank-1 update per sample, -(lr/n) g_i each, in "
                "sample order (a crossbar, aihwkit)",
        "choices": WRITE_SEMANTICS,
    })
    pulse_method: str = field(default="closed-form", metadata={
        "help": "how --update pulsed fires an element's pulses: closed-form = all at once where "
                "the device's responses are affine (soft bounds, linear and constant step; exact "
                "without cycle-to-cycle noise, a Gaussian sum with it), else one by one; loop = "
                "always one by one",
        "choices": PULSE_METHODS,
    })
    update_management: bool = field(default=False, metadata={
        "help": "aihwkit update management of the stochastic and mean-count trains (balances "
                "the x- and d-train probabilities at their maxima; where x and d are known)",
    })
    bl_management: bool = field(default=False, metadata={
        "help": "aihwkit BL management of the stochastic and mean-count trains: BL = "
                "min(ceil(lr max|x| max|d| / dw_min), desired_bl) per update",
    })
    lr: float = field(
        default=0.05, metadata={"help": "step size alpha (weight units per gradient unit)"}
    )
    steps: int = field(default=1000, metadata={"help": "updates K", "flags": ("-K",)})
    seeds: int = field(
        default=1, metadata={"help": "ensemble size R (independent runs)", "flags": ("-R",)}
    )
    log_every: int = field(
        default=10, metadata={"help": "record the trace every this many updates"}
    )
    dim: int = field(default=16, metadata={"help": "dimension of the oracle quadratic"})
    sigma2: float = field(
        default=1.0, metadata={"help": "per-sample gradient-noise variance of the oracle problems"}
    )
    seed: int = field(default=0, metadata={"help": "root seed"})
    forward_io: str = field(default="perfect", metadata={
        "help": "IO non-idealities of the analog forward products h W of a network (aihwkit "
                "IOParameters presets): perfect = exact; aihwkit = its defaults; companion = "
                "DAC 7 bits, ADC 9 bits, out_noise 0.06, out_bound 12, inp_bound 1",
        "choices": IO_CHOICES,
    })
    backward_io: str = field(default="perfect", metadata={
        "help": "IO non-idealities of the analog backward products delta W^T (as --forward-io; "
                "bound management is ignored in the backward, as in aihwkit)",
        "choices": IO_CHOICES,
    })
    transfer_every: int = field(default=1, metadata={
        "help": "tiki-taka: a transfer from A to C after every T-th update (>= 1)",
        "flags": ("-T",),
    })
    transfer_lr: float = field(default=1.0, metadata={
        "help": "tiki-taka: transfer rate relative to --lr (aihwkit scale_transfer_lr): "
                "C += transfer_lr * lr * (column of A) through C's update (>= 0)",
    })
    tt_gamma: float = field(default=0.0, metadata={
        "help": "tiki-taka: weight gamma of A in the effective weight W = gamma A + C (>= 0)",
    })
    transfer_slice: str = field(default="column", metadata={
        "help": "tiki-taka: what a transfer moves: one column of every tile (round robin, "
                "aihwkit) or all of A", "choices": TRANSFER_SLICES,
    })
    fast_device: str | None = field(default=None, metadata={
        "help": "tiki-taka: device preset or family of the fast array A (default: --device), or "
                "digital: an ideal buffer (A += dw exactly, no device)",
    })
    transfer_reset: bool = field(default=False, metadata={
        "help": "tiki-taka: after a transfer set the transferred columns of A back to 0 "
                "(default: A is not reset, aihwkit)",
    })
    digital_stages: str = field(default="", metadata={
        "help": "algorithm mixed: comma list of 1-based stages updated digitally (e.g. 1,4); "
                "the others update through the device",
    })
    data: str = field(default="digits", metadata={
        "help": "training data of a digits network: digits (1437 images), digits-holdout (1150 + "
                "287 validation), digits-augmented (the 1150 and 12 rotated/shifted copies each)",
        "choices": DATA_SETS,
    })
    grad_bias: float = field(default=0.0, metadata={
        "help": "norm beta of a fixed bias added to the oracle gradient (along the direction "
                "from W_0 towards the minimiser; Proposition IO); 0 = unbiased",
    })

    replicas: int = field(default=1, metadata={
        "help": "data-parallel replicas per ensemble member, each running the mode (dp: mode "
                "none; hybrid: sync or async), averaged every --average-every updates "
                "(simulate.pipeline.replicas; oracle problems)"})
    average_every: int = field(default=1, metadata={
        "help": "averaging period P: the replicas' weights are averaged digitally and "
                "programmed back every P updates"})
    programming_error: float = field(default=0.0, metadata={
        "help": "std of the per-weight error of programming the mean back (weight units; "
                "closed-loop programming, simulate.pipeline.replicas)"})

    def __post_init__(self):
        _choice("problem", self.problem, PROBLEMS)
        _choice("mode", self.mode, MODES)
        _choice("algorithm", self.algorithm, ALGORITHMS)
        _choice("update", self.update, UPDATES)
        _choice("pulse_type", self.pulse_type, PULSE_TYPES)
        _choice("write", self.write, WRITE_SEMANTICS)
        for name in ("forward_io", "backward_io"):
            value = _choice(name, getattr(self, name), IO_CHOICES)
            if value == "perfect":
                continue
            if self.problem in ORACLE_PROBLEMS:
                raise ParameterError(
                    f"{name}={value!r} does not apply to problem={self.problem!r}: an oracle "
                    "gradient is not a matrix-vector product; use a network problem "
                    f"({', '.join(NETWORK_PROBLEMS)}) or the preset 'perfect'")
            if self.algorithm != "analog":
                raise ParameterError(
                    f"{name}={value!r} applies to algorithm='analog' only (a digital run "
                    "computes in exact arithmetic); use the preset 'perfect'")
        _choice("data", self.data, DATA_SETS)
        if self.data != DATA_SETS[0] and self.problem not in NETWORK_PROBLEMS:
            raise ParameterError(
                f"data={self.data!r} applies to the digits networks only; valid for "
                f"problem={self.problem!r}: {DATA_SETS[0]}"
            )
        _choice("pulse_method", self.pulse_method, PULSE_METHODS)
        for name in ("update_management", "bl_management", "transfer_reset"):
            if not isinstance(getattr(self, name), bool):
                raise ParameterError(f"{name}={show_value(getattr(self, name))} must be true or "
                                     "false")
        if not isinstance(self.device, str):
            raise ParameterError(f"device={show_value(self.device)} is not a name; valid: a "
                                 "preset or a family of theory.devices")
        lows = {"stages": 1, "micro_batches": 1, "micro_batch_size": 1, "steps": 1, "seeds": 1,
                "log_every": 1, "dim": 1, "seed": 0, "transfer_every": 1, "replicas": 1,
                "average_every": 1}
        for name in _INTEGER_FIELDS:  # stored as Python int (20.0 -> 20), never a numpy scalar
            high = {"stages": MAX_STAGES, "replicas": MAX_REPLICAS}.get(name)
            value = check_range(name, getattr(self, name), lows[name], high, integer=True)
            object.__setattr__(self, name, value)
        if self.tau is not None:
            check_range("tau", self.tau, 0, None, low_open=True)
        check_range("lr", self.lr, 0, None, low_open=True)
        check_range("sigma2", self.sigma2, 0, None)
        check_range("transfer_lr", self.transfer_lr, 0, None)
        check_range("tt_gamma", self.tt_gamma, 0, None)
        _choice("transfer_slice", self.transfer_slice, TRANSFER_SLICES)
        if self.fast_device is not None and self.fast_device != DIGITAL_FAST:
            try:
                fast_device_from_config(self)
            except ParameterError as error:
                text = str(error)
                text = (f"fast_{text}" if text.startswith("device=")
                        else f"fast_device={self.fast_device!r}: {text}")
                raise ParameterError(text) from None
        object.__setattr__(self, "grad_bias", float(check_range("grad_bias", self.grad_bias, 0,
                                                                None)))
        if self.grad_bias != 0 and self.problem not in ORACLE_PROBLEMS:
            raise ParameterError(
                f"grad_bias={self.grad_bias:g} applies to the oracle problems only "
                f"({', '.join(ORACLE_PROBLEMS)}); a network's gradient error comes from its IO "
                "non-idealities (forward_io, backward_io)")
        check_range("programming_error", self.programming_error, 0, None)
        if self.replicas > 1 and self.problem not in ORACLE_PROBLEMS:
            raise ParameterError(
                f"replicas={self.replicas} is simulated for the oracle problems only "
                f"({', '.join(ORACLE_PROBLEMS)}); use replicas=1 for problem={self.problem!r}")
        if self.replicas > 1 and self.algorithm not in ("digital", "analog"):
            raise ParameterError(
                f"replicas={self.replicas} is simulated for algorithm='digital' or 'analog'; "
                f"use replicas=1 for algorithm={self.algorithm!r}")
        if self.stages > self.dim and self.problem == "quadratic":
            raise ParameterError(
                f"stages={self.stages} exceeds dim={self.dim}; valid range [1, {self.dim}]"
            )
        object.__setattr__(self, "digital_stages", _digital_stages(self))
        tau = check_device_tau(self.device, self.tau, explicit=self.tau != DEFAULT_TAU)
        object.__setattr__(self, "tau", tau)
        _check_counts(self)
        _check_memory(self)

    @property
    def digital_stage_indices(self) -> tuple[int, ...]:
        """The 1-based stages of ``digital_stages`` (sorted; empty unless ``mixed``)."""
        return tuple(int(x) for x in self.digital_stages.split(",")) if self.digital_stages else ()

    @property
    def samples_per_update(self) -> int:
        """Samples consumed by one update: ``b`` (async) or ``B b`` (none, sync)."""
        if self.mode == "async":
            return self.micro_batch_size
        return self.micro_batches * self.micro_batch_size

    def to_dict(self) -> dict:
        """The configuration as a JSON-ready dict."""
        return asdict(self)


def _digital_stages(config: SimConfig) -> str:
    """``config.digital_stages`` checked (stages in ``[1, M]``, no repeat, only for ``mixed``) and
    written sorted without spaces."""
    text = config.digital_stages
    if not isinstance(text, str):
        raise ParameterError(f"digital_stages={show_value(text)} is not a comma list; valid: e.g. "
                             "'1,4'")
    if not text.strip():
        return ""
    if config.algorithm != "mixed":
        raise ParameterError(f"digital_stages={text!r} applies to algorithm='mixed' only (the "
                             f"algorithm is {config.algorithm!r})")
    stages = []
    for item in text.split(","):
        try:
            stage = int(item.strip())
        except ValueError:
            stage = None
        if stage is None or not 1 <= stage <= config.stages or stage in stages:
            raise ParameterError(
                f"digital_stages={text!r} is out of range: {item.strip()!r} is not a new stage "
                f"of 1..{config.stages}; valid: distinct stages in [1, {config.stages}]"
            )
        stages.append(stage)
    return ",".join(str(x) for x in sorted(stages))


def _limit(name: str, value, *, need, limit: float, what: str, hint: str = "") -> None:
    """:func:`theory.limits.check_size` for a ``need`` that may be an integer beyond the float
    range (such a need exceeds every limit; it is shown as ``inf``)."""
    need = need if need < 1e300 else float("inf")
    check_size(name, value, need=need, limit=limit, what=what, hint=hint)


def _check_counts(config: SimConfig) -> None:
    """Refuse a run whose updates exceed MAX_UPDATES or whose samples or cycles exceed an int64.

    Exact Python integers, before anything runs: the trace's counts are int64 and never wrap.
    """
    k, b, big_b, m = config.steps, config.micro_batch_size, config.micro_batches, config.stages
    _limit("steps", k, need=k, limit=MAX_UPDATES, what="updates",
               hint="split the run or lower steps")
    hint = "the trace counts in int64"
    _limit("micro_batch_size", b, need=k * b, limit=MAX_COUNT, what="samples", hint=hint)
    if config.mode == "async":
        cycles = 2 * (k + m - 1)
    else:
        _limit("micro_batches", big_b, need=k * b * big_b, limit=MAX_COUNT, what="samples",
                   hint=hint)
        cycles = 2 * m * big_b * k if config.mode == "none" else 2 * (big_b + m - 1) * k
    if config.replicas > 1:  # the trace's samples count every replica's
        n = b if config.mode == "async" else b * big_b
        _limit("replicas", config.replicas, need=k * n * config.replicas, limit=MAX_COUNT,
               what="samples", hint=hint)
    _limit("micro_batches" if config.mode != "async" else "steps",
               big_b if config.mode != "async" else k,
               need=cycles, limit=MAX_COUNT, what="clock cycles", hint=hint)


def _check_memory(config: SimConfig) -> None:
    """Refuse a run any one of whose arrays would exceed MAX_ARRAY_BYTES (estimated up front).

    Per member first (naming the field that sets it), then for the whole ensemble (``seeds``):
    the trace (``R`` rows of one value per logging point), the oracle's weights, noise draws and
    Hessian (``dim``), a network's batches (``micro_batch_size``, ``micro_batches``).
    """
    limit, seeds = MAX_ARRAY_BYTES, config.seeds
    points = config.steps // config.log_every + 2
    _limit("log_every", config.log_every, need=8 * points, limit=limit,
               what="bytes of trace per member", hint="record less often")
    per_member = 8 * points
    if config.problem == "quadratic":
        dim = config.dim
        _limit("dim", dim, need=8 * dim * dim, limit=limit,
                   what="bytes of its Hessian (dim x dim)")
        per_member = max(per_member, 8 * dim * min(DRAW_CHUNK, config.steps))
        _limit("dim", dim, need=per_member, limit=limit,
                   what="bytes of weights and noise per member")
    if config.problem in ORACLE_PROBLEMS and config.write == "per-sample":
        # per-sample noise: n draws per update, max(1, 256 // n) updates at a time (engine)
        n = config.samples_per_update
        dim = config.dim if config.problem == "quadratic" else LEAST_SQUARES_DIM
        rows = n * min(max(1, DRAW_CHUNK // n), config.steps)
        per_member = max(per_member, 8 * dim * rows)
        _limit("micro_batch_size", config.micro_batch_size, need=per_member, limit=limit,
               what="bytes of per-sample gradient noise per member (write='per-sample')")
    elif config.problem in NETWORK_PROBLEMS:
        _limit("data", config.data, need=8 * DIGITS_FEATURES * train_rows(config.data),
               limit=limit, what="bytes of training images")
        b, n = config.micro_batch_size, config.samples_per_update
        _limit("micro_batch_size", b, need=network_bytes_per_member(b, config.steps),
                   limit=limit, what="bytes of batch arrays per member")
        per_member = max(per_member, network_bytes_per_member(n, config.steps))
        if n != b:
            _limit("micro_batches", config.micro_batches, need=per_member, limit=limit,
                       what="bytes of batch arrays per member")
    _limit("seeds", seeds, need=seeds * per_member, limit=limit,
               what="bytes of ensemble arrays", hint="run fewer seeds at a time")
    if config.replicas > 1:  # every replica holds its weights and noise draws (engine)
        _limit("replicas", config.replicas, need=seeds * config.replicas * per_member,
               limit=limit, what="bytes of replica arrays", hint="run fewer seeds or replicas")


def device_from_config(config: SimConfig) -> Device:
    """The :class:`theory.devices.Device` a :class:`SimConfig` names.

    ``config.device`` is a preset name (:func:`theory.devices.list_presets`) or a family of
    :func:`theory.devices.make_device` (then built with ``dw_min =`` :data:`DEFAULT_DW_MIN` and no
    pulse noise). ``config.tau`` (when not ``None``) sets the range ``tau`` of a family that has one
    (soft bounds, power, exponential), also overriding a preset's; devices whose range is given by
    ``w_min``/``w_max`` have no ``tau`` (:class:`SimConfig` records ``tau=None`` for them and
    refuses another value, :func:`check_device_tau`).
    """
    return device_named(config.device, config.tau)


def fast_device_from_config(config: SimConfig) -> Device | None:
    """The device of Tiki-Taka's fast array A of ``config``
    (:func:`simulate.device.fast_device_named` of ``config.fast_device`` and ``config.tau``)."""
    return fast_device_named(config.fast_device, config.tau)
