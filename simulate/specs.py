"""The parts of a run record: small frozen specs, each validating its own fields.

:class:`simulate.SimConfig` is composed of eight parts (aihwkit-shaped, as
``SingleRPUConfig(device=..., forward=IOParameters(), update=UpdateParameters())``):

=================  ============  =================================================================
part               spec          fields
=================  ============  =================================================================
``problem``        ProblemSpec   problem, dim, sigma2, data, grad_bias, dtype
``pipeline``       PipelineSpec  mode, stages, micro_batches, micro_batch_size
``training``       TrainingSpec  algorithm, lr, steps, seeds, log_every, seed
``update``         UpdateSpec    device, tau, update, pulse_type, write, pulse_method,
                                 update_management, bl_management
``io``             IOSpec        forward_io, backward_io
``tiki_taka``      TikiTakaSpec  transfer_every, transfer_lr, tt_gamma, transfer_slice,
                                 fast_device, transfer_reset
``mixed``          MixedSpec     digital_stages
``replicas``       ReplicaSpec   replicas, average_every, programming_error
=================  ============  =================================================================

Every field is described once, in its ``metadata``: ``help`` (one line; also the help of its
flag of ``aimc-pipeline simulate``), optionally ``doc`` (what the reference adds to the help),
``choices`` and ``flags`` (short flags). The specs' docstrings (and :class:`SimConfig`'s) are
generated from it. A spec checks what its own fields can say alone: choices, types and ranges,
with one-line :class:`~theory.errors.ParameterError` messages starting with the field's name.
Which field applies to which run (a rule between fields) is :data:`simulate.config.RULES`; a spec
accepts every combination of its own valid values.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field

from theory.errors import ParameterError, check_range, show_value
from theory.limits import MAX_COUNT, MAX_TRANSFER_PERIOD
from theory.vocabulary import ALGORITHMS, MODES, TRANSFER_SLICES, WRITE_SEMANTICS

from .device import (
    DEFAULT_TAU,
    DIGITAL_FAST,
    IO_PRESETS,
    PULSE_METHODS,
    PULSE_TYPES,
    check_device_tau,
    fast_device_named,
)
from .problems import DATA_SETS, NETWORK_PROBLEMS, ORACLE_PROBLEMS

__all__ = [
    "DTYPES", "IOSpec", "IO_CHOICES", "MAX_REPLICAS", "MAX_STAGES", "MixedSpec",
    "NETWORK_LOG_POINTS", "ORACLE_LOG_EVERY", "PROBLEMS", "PipelineSpec", "ProblemSpec",
    "ReplicaSpec", "SPECS",
    "TRAIN_PULSE_TYPES", "TikiTakaSpec", "TrainingSpec", "UPDATES", "UpdateSpec",
    "default_log_every", "field_doc", "spec_of",
]

PROBLEMS = ORACLE_PROBLEMS + NETWORK_PROBLEMS
UPDATES = ("expected", "pulsed")
#: floating-point types of a run (``SimConfig.dtype``; the first is the default)
DTYPES = ("float64", "float32")
#: the pulse types that draw bit trains (what update and BL management act on)
TRAIN_PULSE_TYPES = ("stochastic", "mean-count")
#: IO presets of the analog forward and backward products (:data:`simulate.device.IO_PRESETS`)
IO_CHOICES = tuple(IO_PRESETS)
#: the most pipeline stages a run may have: a sanity cap on the input, not a limit of the method
#: (an async run keeps ``M - m + 1`` copies of stage m's block, about ``M / 2`` copies of the whole
#: model, and the paper's pipelines have at most a few dozen stages)
MAX_STAGES = 64
#: the most data-parallel replicas per member (a sanity cap on the input, like MAX_STAGES)
MAX_REPLICAS = 64


#: logging period of an oracle run whose ``log_every`` is not given (``None``)
ORACLE_LOG_EVERY = 10
#: a network run whose ``log_every`` is not given logs about this many times (at least every
#: ``ORACLE_LOG_EVERY`` updates): a logging point of the digits MLP costs about 4 updates of a
#: micro-batch of 4 and its last point (every image) about 35, so a fixed period of 10 made
#: measurement most of a short run (``bench/measurement_share.py``)
NETWORK_LOG_POINTS = 8


def default_log_every(steps: int, network: bool) -> int:
    r"""The logging period of a run whose ``log_every`` is ``None``.

    .. math:: \text{oracle: } 10, \qquad
              \text{network: } \max(10, \lfloor K / 8 \rfloor)

    for ``K = steps`` (:data:`ORACLE_LOG_EVERY`, :data:`NETWORK_LOG_POINTS`): a network run of
    256 updates logs every 32 (9 points), one of 80 or fewer every 10.
    """
    if not network:
        return ORACLE_LOG_EVERY
    return max(ORACLE_LOG_EVERY, steps // NETWORK_LOG_POINTS)


def _choice(name: str, value, valid: tuple[str, ...]) -> str:
    if value not in valid:
        raise ParameterError(f"{name}={value!r} is unknown; valid: {', '.join(valid)}")
    return value


def _boolean(name: str, value) -> bool:
    if not isinstance(value, bool):
        raise ParameterError(f"{name}={show_value(value)} must be true or false")
    return value


def _integers(spec, lows: dict[str, int], highs: dict[str, int] | None = None) -> None:
    """Check the integer fields ``lows`` of ``spec`` and store each as a Python int (``20.0`` ->
    ``20``, never a numpy scalar)."""
    highs = highs or {}
    for name, low in lows.items():
        value = check_range(name, getattr(spec, name), low, highs.get(name), integer=True)
        object.__setattr__(spec, name, value)


class _Spec:
    """What every spec shares: :meth:`to_dict`."""

    def to_dict(self) -> dict:
        """The fields as a JSON-ready dict (flat: field name -> value)."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class ProblemSpec(_Spec):
    problem: str = field(default="quadratic", metadata={
        "help": "training problem", "choices": PROBLEMS,
        "doc": "The oracle problems (:mod:`simulate.problems.oracle`) or the digits networks "
               "(:mod:`simulate.problems.network`).",
    })
    dim: int = field(default=16, metadata={"help": "dimension of the oracle quadratic"})
    sigma2: float = field(default=1.0, metadata={
        "help": "per-sample gradient-noise variance of the oracle problems",
        "doc": "Total variance ``sigma2 / n`` for a batch of ``n``.",
    })
    data: str = field(default="digits", metadata={
        "help": "training data of a digits network: digits (1437 images), digits-holdout (1150 + "
                "287 validation), digits-augmented (the 1150 and 12 rotated/shifted copies each)",
        "choices": DATA_SETS,
        "doc": "See :mod:`simulate.problems.digits`; always the same 360 test images.",
    })
    grad_bias: float = field(default=0.0, metadata={
        "help": "norm beta of a fixed bias added to the oracle gradient (along the direction "
                "from W_0 towards the minimiser; Proposition IO); 0 = unbiased",
        "doc": "Gradient units. The bias is ``beta`` times the unit vector from the initial "
               "weights towards the minimiser, the same in every update and every member: the "
               "signal ``g + b`` understates the descent (docs/theory.md, registry "
               "``analog_sgd_biased``). A network's gradient error comes from its IO "
               "non-idealities instead (``forward_io``, ``backward_io``).",
    })

    dtype: str = field(default="float64", metadata={
        "help": "floating-point type of the run's arithmetic (every problem): float64 or "
                "float32 (the weights, gradients, noise draws and device updates; the "
                "accumulated statistics stay float64)",
        "choices": DTYPES,
        "doc": "A ``float32`` run stores its weights in ``float32`` and computes in it. A network "
               "casts its data and initial weights (drawn in float64 from the same streams) and "
               "computes its products, activations and gradients in it. An oracle problem "
               "rounds its arrays (``A``, ``W*``, ``W_0``) and computes its gradients, the "
               "gradient noise (drawn in float32), the bias and the device updates in it; its "
               "exact constants (``L``, ``Delta``, ``f*``) and the accumulated statistics (the "
               "trace's loss and ``||grad f||^2`` columns, ``avg_grad_norm2``) are float64. The "
               "uniforms that round pulse counts stay float64 (they decide integers). Bits are "
               "reproducible within the dtype; the results agree with ``float64`` within their "
               "seed intervals (``tests/test_dtype.py``, ``tests/test_oracle_dtype.py``).",
    })

    def __post_init__(self):
        _choice("problem", self.problem, PROBLEMS)
        _choice("data", self.data, DATA_SETS)
        _choice("dtype", self.dtype, DTYPES)
        _integers(self, {"dim": 1})
        check_range("sigma2", self.sigma2, 0, None)
        object.__setattr__(self, "grad_bias",
                           float(check_range("grad_bias", self.grad_bias, 0, None)))


@dataclass(frozen=True)
class PipelineSpec(_Spec):
    mode: str = field(default="none", metadata={
        "help": "pipeline schedule", "choices": MODES,
        "doc": "``none`` and ``sync`` consume ``micro_batches * micro_batch_size`` samples per "
               "update (one mini-batch); ``async`` consumes ``micro_batch_size`` samples per "
               "update (one micro-batch) and updates every stage after every micro-batch.",
    })
    stages: int = field(default=1, metadata={
        "help": f"pipeline stages M (1 to {MAX_STAGES}; at most --dim for the quadratic, layers "
                "for networks)",
        "flags": ("-M",),
        "doc": "The model's weights are split into ``M`` contiguous blocks.",
    })
    micro_batches: int = field(default=1, metadata={
        "help": "micro-batches per mini-batch B (modes none and sync only)", "flags": ("-B",),
    })
    micro_batch_size: int = field(
        default=1, metadata={"help": "samples per micro-batch b", "flags": ("-b",)}
    )

    def __post_init__(self):
        _choice("mode", self.mode, MODES)
        _integers(self, {"stages": 1, "micro_batches": 1, "micro_batch_size": 1},
                  {"stages": MAX_STAGES})

    @property
    def samples_per_update(self) -> int:
        """Samples consumed by one update: ``b`` (async) or ``B b`` (none, sync)."""
        if self.mode == "async":
            return self.micro_batch_size
        return self.micro_batches * self.micro_batch_size


@dataclass(frozen=True)
class TrainingSpec(_Spec):
    algorithm: str = field(default="analog", metadata={
        "help": "digital SGD, analog SGD, tiki-taka (two analog arrays), or mixed (analog SGD "
                "but the --digital-stages digital)",
        "choices": ALGORITHMS,
        "doc": "Analog SGD goes through the device's response functions; Tiki-Taka is "
               ":mod:`simulate.device.tiki_taka`; ``mixed`` is Theorem 2M.",
    })
    lr: float = field(
        default=0.05, metadata={"help": "step size alpha (weight units per gradient unit)",
                                "doc": "Must be > 0."}
    )
    steps: int = field(default=1000, metadata={"help": "updates K", "flags": ("-K",)})
    seeds: int = field(default=1, metadata={
        "help": "ensemble size R (independent runs)", "flags": ("-R",),
        "doc": "Computed together along a leading axis.",
    })
    log_every: int | None = field(default=None, metadata={
        "help": "record the trace every this many updates (default: every 10 for the oracle "
                "problems, every max(10, steps // 8) for the networks)",
        "doc": "The last update is always recorded. ``None`` (the default) is "
               ":func:`simulate.specs.default_log_every` (:attr:`SimConfig.log_period`): a "
               "network's logging point costs several updates, so its default logs about 8 "
               "times a run.",
    })
    seed: int = field(default=0, metadata={
        "help": "root seed", "doc": "Ensemble member ``r`` uses ``SeedSequence(seed).spawn("
                                    "seeds)[r]``.",
    })

    def __post_init__(self):
        _choice("algorithm", self.algorithm, ALGORITHMS)
        _integers(self, {"steps": 1, "seeds": 1, "seed": 0}
                  | ({} if self.log_every is None else {"log_every": 1}))
        check_range("lr", self.lr, 0, None, low_open=True)


@dataclass(frozen=True)
class UpdateSpec(_Spec):
    device: str = field(default="softbounds", metadata={
        "help": "device preset (e.g. reram-softbounds) or response family (e.g. softbounds)",
        "doc": "A preset name of :func:`theory.devices.list_presets` or a family of "
               ":func:`theory.devices.make_device` (then ``tau`` sets its range).",
    })
    tau: float | None = field(default=DEFAULT_TAU, metadata={
        "help": "dynamic range tau of a soft-bounds/power/exponential device (weight units)",
        "doc": "Overrides the preset's range when given; at least ``dw_min / 2``. A preset with "
               "a fixed ``[w_min, w_max]`` range records ``None`` (the default ``1.0`` is "
               "replaced) and refuses any other value (:func:`simulate.device.check_device_tau`).",
    })
    update: str = field(default="expected", metadata={
        "help": "analog update: expected, or pulse-level (pulse counts: --pulse-type)",
        "choices": UPDATES,
        "doc": "The pulse-level update has cycle-to-cycle noise.",
    })
    pulse_type: str = field(default="stochastic", metadata={
        "help": "pulse counts of --update pulsed (aihwkit names): stochastic (the default, as "
                "aihwkit's) = coincidences of two bit trains of desired_bl bits (aihwkit "
                "StochasticCompressed, at most desired_bl pulses); deterministic = stochastic "
                "rounding of |dW|/dw_min (aihwkit DeterministicImplicit); mean-count = the "
                "expected count, no train noise",
        "choices": PULSE_TYPES,
        "doc": "See :func:`simulate.device.pulsed_update`. A network with one sample per update "
               "(or ``write = 'per-sample'``) fires the trains on each layer's outer product "
               "(:func:`simulate.device.coincidence_counts`).",
    })
    write: str = field(default="batch-mean", metadata={
        "help": "write semantics of one update: batch-mean = one update of the batch-mean "
                "gradient; per-sample = one rank-1 update per sample, -(lr/n) g_i each, in "
                "sample order (a crossbar, aihwkit)",
        "choices": WRITE_SEMANTICS,
        "doc": "The ``n`` = :attr:`samples_per_update` gradients of one update are all computed "
               "at the same read weights; under ``per-sample`` each write is at the weights the "
               "previous one left. Identical bits at ``n = 1``. The floor of analog SGD does not "
               "shrink with ``n`` under ``per-sample`` (docs/theory.md, Corollary 3PS).",
    })
    pulse_method: str = field(default="closed-form", metadata={
        "help": "how --update pulsed fires an element's pulses: closed-form = all at once where "
                "the device's responses are affine (soft bounds, linear and constant step; exact "
                "without cycle-to-cycle noise, a Gaussian sum with it), else one by one; loop = "
                "always one by one",
        "choices": PULSE_METHODS,
        "doc": "See :func:`simulate.device.apply_pulses`; with cycle-to-cycle noise the sum is "
               "exact for additive noise and moment-matched for multiplicative noise.",
    })
    update_management: bool = field(default=False, metadata={
        "help": "aihwkit update management of the stochastic and mean-count trains (balances "
                "the x- and d-train probabilities at their maxima; where x and d are known)",
        "doc": "Needs the rank-1 factors ``x`` and ``d`` (networks at one sample per update); "
               "with only ``dW`` known it changes nothing (:func:`simulate.device.train_scales`).",
    })
    bl_management: bool = field(default=False, metadata={
        "help": "aihwkit BL management of the stochastic and mean-count trains: BL = "
                "min(ceil(lr max|x| max|d| / dw_min), desired_bl) per update",
        "doc": "Per member: the whole weight vector, or per layer for the rank-1 trains.",
    })

    def __post_init__(self):
        _choice("update", self.update, UPDATES)
        _choice("pulse_type", self.pulse_type, PULSE_TYPES)
        _choice("write", self.write, WRITE_SEMANTICS)
        _choice("pulse_method", self.pulse_method, PULSE_METHODS)
        _boolean("update_management", self.update_management)
        _boolean("bl_management", self.bl_management)
        if not isinstance(self.device, str):
            raise ParameterError(f"device={show_value(self.device)} is not a name; valid: a "
                                 "preset or a family of theory.devices")
        if self.tau is not None:
            check_range("tau", self.tau, 0, None, low_open=True)
        tau = check_device_tau(self.device, self.tau, explicit=self.tau != DEFAULT_TAU)
        object.__setattr__(self, "tau", tau)


@dataclass(frozen=True)
class IOSpec(_Spec):
    forward_io: str = field(default="perfect", metadata={
        "help": "IO non-idealities of the analog forward products h W of a network (aihwkit "
                "IOParameters presets): perfect = exact; aihwkit = its defaults; companion = "
                "DAC 7 bits, ADC 9 bits, out_noise 0.06, out_bound 12, inp_bound 1",
        "choices": IO_CHOICES,
        "doc": "DAC, output noise, ADC, noise and bound management "
               "(:data:`simulate.device.IO_PRESETS`). The weight gradient ``h^T delta_z`` is the "
               "update, not an MVM.",
    })
    backward_io: str = field(default="perfect", metadata={
        "help": "IO non-idealities of the analog backward products delta W^T (as --forward-io; "
                "bound management is ignored in the backward, as in aihwkit)",
        "choices": IO_CHOICES,
    })

    def __post_init__(self):
        _choice("forward_io", self.forward_io, IO_CHOICES)
        _choice("backward_io", self.backward_io, IO_CHOICES)


@dataclass(frozen=True)
class TikiTakaSpec(_Spec):
    transfer_every: int = field(default=1, metadata={
        "help": "tiki-taka: transfer period T in updates (mini-batches), not writes: a transfer "
                "from A to C after every T-th update, also under --write per-sample (n writes "
                "per update) (1 to 1e9)",
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
        "doc": "``digital`` (:data:`simulate.device.DIGITAL_FAST`) is TT-v2's digital buffer.",
    })
    transfer_reset: bool = field(default=False, metadata={
        "help": "tiki-taka: after a transfer set the transferred columns of A back to 0 "
                "(default: A is not reset, aihwkit)",
        "doc": "``tt_gamma = 0``, ``transfer_slice = 'all'``, a digital A and the reset are "
               "Corollary TT0's variant (docs/theory.md, registry ``tiki_taka_reset``).",
    })

    def __post_init__(self):
        _integers(self, {"transfer_every": 1}, {"transfer_every": MAX_TRANSFER_PERIOD})
        check_range("transfer_lr", self.transfer_lr, 0, None)
        check_range("tt_gamma", self.tt_gamma, 0, None)
        _choice("transfer_slice", self.transfer_slice, TRANSFER_SLICES)
        _boolean("transfer_reset", self.transfer_reset)
        self.fast_device_at(None)

    def fast_device_at(self, tau: float | None):
        """The device of the fast array A at the run's range ``tau``
        (:func:`simulate.device.fast_device_named`; ``None``: the run's device or a digital A),
        its errors naming ``fast_device``."""
        if self.fast_device is None or self.fast_device == DIGITAL_FAST:
            return None
        try:
            return fast_device_named(self.fast_device, tau)
        except ParameterError as error:
            text = str(error)
            text = (f"fast_{text}" if text.startswith("device=")
                    else f"fast_device={self.fast_device!r}: {text}")
            raise ParameterError(text) from None


@dataclass(frozen=True)
class MixedSpec(_Spec):
    digital_stages: str = field(default="", metadata={
        "help": "algorithm mixed: comma list of 1-based stages updated digitally (e.g. 1,4); "
                "the others update through the device",
        "doc": "Each such stage's weight block updates as ``w + dw``. Checked against the "
               "pipeline's stages and stored sorted (``'3,1'`` -> ``'1,3'``) by "
               ":class:`simulate.SimConfig`; empty (the default) is every stage analog.",
    })

    def __post_init__(self):
        text = self.digital_stages
        if not isinstance(text, str):
            raise ParameterError(f"digital_stages={show_value(text)} is not a comma list; valid: "
                                 "e.g. '1,4'")
        if not text.strip():
            object.__setattr__(self, "digital_stages", "")


@dataclass(frozen=True)
class ReplicaSpec(_Spec):
    replicas: int = field(default=1, metadata={
        "help": "data-parallel replicas per ensemble member, each running the mode (dp: mode "
                "none; hybrid: sync or async), averaged every --average-every updates "
                "(simulate.pipeline.replicas; oracle problems)",
        "doc": f"1 to {MAX_REPLICAS}; each replica has its own gradient noise and device draws. "
               "1 (default): a single run, bit for bit.",
    })
    average_every: int = field(default=1, metadata={
        "help": "averaging period P: the replicas' weights are averaged digitally and "
                "programmed back every P updates"})
    programming_error: float = field(default=0.0, metadata={
        "help": "std of the per-weight error of programming the mean back (weight units; "
                "closed-loop programming, simulate.pipeline.replicas)",
        "doc": "The local-SGD row's ``nu = dim * programming_error**2``.",
    })

    def __post_init__(self):
        # a period beyond the run's updates never averages; beyond int64 it cannot be counted
        _integers(self, {"replicas": 1, "average_every": 1},
                  {"replicas": MAX_REPLICAS, "average_every": MAX_COUNT})
        check_range("programming_error", self.programming_error, 0, None)


#: part name -> its spec, in the order :class:`simulate.SimConfig` builds (and checks) them
SPECS: dict[str, type] = {
    "problem": ProblemSpec, "pipeline": PipelineSpec, "training": TrainingSpec,
    "update": UpdateSpec, "io": IOSpec, "tiki_taka": TikiTakaSpec, "mixed": MixedSpec,
    "replicas": ReplicaSpec,
}

#: field name -> part name
_PART_OF = {f.name: part for part, spec in SPECS.items() for f in dataclasses.fields(spec)}


def spec_of(name: str) -> tuple[str, dataclasses.Field]:
    """``(part, field)`` of the flat field ``name`` (``"stages"`` -> ``("pipeline", <field>)``)."""
    part = _PART_OF[name]
    (found,) = (f for f in dataclasses.fields(SPECS[part]) if f.name == name)
    return part, found


def _type_text(spec: type, f: dataclasses.Field) -> str:
    if "choices" in f.metadata:
        return "{" + ", ".join(f'"{c}"' for c in f.metadata["choices"]) + "}"
    hint = typing.get_type_hints(spec)[f.name]
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if args:
        return " or ".join([a.__name__ for a in args] + ["None"])
    return hint.__name__


def field_doc(spec: type, f: dataclasses.Field) -> str:
    """The numpydoc entry of field ``f`` of ``spec``: ``name : type``, then the help (first letter
    capitalised, a full stop) and the ``doc`` metadata, indented."""
    text = f.metadata["help"]
    text = text[0].upper() + text[1:] + "."
    text = text.replace("|", "\\|")  # a literal bar, not a reST substitution
    if "doc" in f.metadata:
        text += " " + f.metadata["doc"]
    default = f.default if f.default != "" else "''"
    return f"{f.name} : {_type_text(spec, f)}\n    {text} Default: ``{default}``."


def _document(spec: type, summary: str) -> None:
    entries = "\n".join(field_doc(spec, f) for f in dataclasses.fields(spec))
    spec.__doc__ = (f"{summary}\n\nParameters\n----------\n{entries}\n\nRaises\n------\n"
                    "ParameterError\n    One line starting with the field's name, for a value "
                    "outside its choices or range.\n")


for _part, _summary in (
    ("problem", "What is trained: an oracle problem or a digits network, and its data."),
    ("pipeline", "The pipeline schedule, its stages and its batches."),
    ("training", "The run: algorithm, step size, length, ensemble, logging, seed."),
    ("update", "How an update reaches the weights: the device, expected or pulse-level "
               "updates, their pulses and write semantics."),
    ("io", "The IO non-idealities of a network's analog forward and backward products."),
    ("tiki_taka", "Tiki-Taka's two arrays (:mod:`simulate.device.tiki_taka`): transfers and the "
                  "fast array A."),
    ("mixed", "Mixed stages (Theorem 2M): which stages update digitally."),
    ("replicas", "Data-parallel replicas (:mod:`simulate.pipeline.replicas`): how many, how "
                 "often they are averaged, the error of programming the mean back."),
):
    _document(SPECS[_part], _summary)
del _part, _summary
