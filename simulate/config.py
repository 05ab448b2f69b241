"""The configuration of one simulation run (validated, frozen, JSON-serialisable)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from theory.errors import ParameterError, check_range
from theory.schedules import MODES

__all__ = ["ALGORITHMS", "PROBLEMS", "UPDATES", "SimConfig"]

PROBLEMS = ("quadratic", "least-squares", "digits-mlp", "digits-resmlp")
ALGORITHMS = ("digital", "analog")
UPDATES = ("expected", "pulsed")


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
        Pipeline stages ``M`` (>= 1); the model's weights are split into ``M`` contiguous blocks.
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

    problem: str = "quadratic"
    mode: str = "none"
    algorithm: str = "analog"
    stages: int = 1
    micro_batches: int = 1
    micro_batch_size: int = 1
    device: str = "softbounds"
    tau: float | None = 1.0
    update: str = "expected"
    lr: float = 0.05
    steps: int = 1000
    seeds: int = 1
    log_every: int = 10
    dim: int = 16
    sigma2: float = 1.0
    seed: int = 0

    def __post_init__(self):
        _choice("problem", self.problem, PROBLEMS)
        _choice("mode", self.mode, MODES)
        _choice("algorithm", self.algorithm, ALGORITHMS)
        _choice("update", self.update, UPDATES)
        check_range("stages", self.stages, 1, 64, integer=True)
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
