"""The configuration of one simulation run (validated, frozen, JSON-serialisable).

:class:`SimConfig` is the contract between the simulator's parts: its fields (with their help texts
and short flags in the field metadata) are also the flags of ``aimc-pipeline simulate``.
:func:`device_from_config` resolves its ``device`` and ``tau`` to a :class:`theory.devices.Device`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from theory import devices
from theory.devices import Device
from theory.errors import ParameterError, check_range
from theory.schedules import MODES
from theory.theorems import ALGORITHMS

__all__ = [
    "ALGORITHMS",
    "DEFAULT_DW_MIN",
    "MAX_STAGES",
    "NETWORK_PROBLEMS",
    "ORACLE_PROBLEMS",
    "PROBLEMS",
    "UPDATES",
    "SimConfig",
    "device_from_config",
]

#: problems with every constant of the theory known exactly (:mod:`simulate.problems`)
ORACLE_PROBLEMS = ("quadratic", "least-squares")
#: digits networks trained stage by stage (:mod:`simulate.networks`)
NETWORK_PROBLEMS = ("digits-mlp", "digits-resmlp")
PROBLEMS = ORACLE_PROBLEMS + NETWORK_PROBLEMS
UPDATES = ("expected", "pulsed")
#: the most pipeline stages a run may have: a sanity cap on the input, not a limit of the method
#: (an async run keeps ``M - m + 1`` copies of stage m's block, about ``M / 2`` copies of the whole
#: model, and the paper's pipelines have at most a few dozen stages)
MAX_STAGES = 64
#: pulse granularity of a device named by its family alone (the paper's tau = 1 theory device)
DEFAULT_DW_MIN = 0.001


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
    algorithm : {"digital", "analog"}
        Plain SGD, or analog SGD through the device's response functions.
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
    update : {"expected", "pulsed"}
        Expected analog update, or pulse-level with stochastic rounding and cycle-to-cycle noise.
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
    """

    problem: str = field(
        default="quadratic", metadata={"help": "training problem", "choices": PROBLEMS}
    )
    mode: str = field(default="none", metadata={"help": "pipeline schedule", "choices": MODES})
    algorithm: str = field(
        default="analog", metadata={"help": "digital or analog SGD", "choices": ALGORITHMS}
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
    tau: float | None = field(default=1.0, metadata={
        "help": "dynamic range tau of a soft-bounds/power/exponential device (weight units)",
    })
    update: str = field(default="expected", metadata={
        "help": "analog update: expected, or pulse-level with stochastic rounding",
        "choices": UPDATES,
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

    def __post_init__(self):
        _choice("problem", self.problem, PROBLEMS)
        _choice("mode", self.mode, MODES)
        _choice("algorithm", self.algorithm, ALGORITHMS)
        _choice("update", self.update, UPDATES)
        check_range("stages", self.stages, 1, MAX_STAGES, integer=True)
        check_range("micro_batches", self.micro_batches, 1, None, integer=True)
        check_range("micro_batch_size", self.micro_batch_size, 1, None, integer=True)
        if self.tau is not None:
            check_range("tau", self.tau, 0, None, low_open=True)
        check_range("lr", self.lr, 0, None, low_open=True)
        check_range("steps", self.steps, 1, None, integer=True)
        check_range("seeds", self.seeds, 1, None, integer=True)
        check_range("log_every", self.log_every, 1, None, integer=True)
        check_range("dim", self.dim, 1, None, integer=True)
        check_range("sigma2", self.sigma2, 0, None)
        check_range("seed", self.seed, 0, None, integer=True)
        if self.stages > self.dim and self.problem == "quadratic":
            raise ParameterError(
                f"stages={self.stages} exceeds dim={self.dim}; valid range [1, {self.dim}]"
            )

    @property
    def samples_per_update(self) -> int:
        """Samples consumed by one update: ``b`` (async) or ``B b`` (none, sync)."""
        if self.mode == "async":
            return self.micro_batch_size
        return self.micro_batches * self.micro_batch_size

    def to_dict(self) -> dict:
        """The configuration as a JSON-ready dict."""
        return asdict(self)


def device_from_config(config: SimConfig) -> Device:
    """The :class:`theory.devices.Device` a :class:`SimConfig` names.

    ``config.device`` is a preset name (:func:`theory.devices.list_presets`) or a family of
    :func:`theory.devices.make_device` (then built with ``dw_min =`` :data:`DEFAULT_DW_MIN` and no
    pulse noise). ``config.tau`` (when not ``None``) sets the range ``tau`` of a family that has one
    (soft bounds, power, exponential), also overriding a preset's; devices whose range is given by
    ``w_min``/``w_max`` have no ``tau`` and keep their range.
    """
    if config.device in devices.list_presets():
        device = devices.load_preset(config.device)
        if config.tau is not None and "tau" in device.response.parameter_names():
            device = replace(device, response=replace(device.response, tau=float(config.tau)))
        return device
    if config.device not in devices.FAMILIES:
        raise ParameterError(
            f"device={config.device!r} is unknown; valid presets: "
            f"{', '.join(devices.list_presets())}; valid families: {', '.join(devices.FAMILIES)}"
        )
    params = {"dw_min": DEFAULT_DW_MIN}
    if config.tau is not None and "tau" in devices.FAMILIES[config.device].parameter_names():
        params["tau"] = float(config.tau)
    return devices.make_device(config.device, **params)
