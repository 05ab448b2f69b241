"""The configuration of one simulation run (validated, frozen, JSON-serialisable).

:class:`SimConfig` is composed of the parts of :mod:`simulate.specs` (problem, pipeline, training,
update, IO, Tiki-Taka, mixed stages, replicas), each of which validates its own fields; it holds
only what is between the parts: :data:`RULES`, the one table of which field applies to which run,
and the checks that need several parts (stages against the quadratic's ``dim``, the mixed stages
against the stages, the fast array's device against the range ``tau``, the run's counts and
memory). Its flat fields are generated from the specs' fields (type, default, help text and short
flags, each written once, in its spec; :data:`FIELD_ORDER` only orders them) and are also the
flags of ``aimc-pipeline simulate``; :meth:`SimConfig.to_dict` is flat (cache keys and trace
JSON). :func:`device_from_config` resolves its ``device`` and ``tau`` to a
:class:`theory.devices.Device`.

**Given, and where it applies.** A field is *given* when its value differs from its default
(whether it comes from a flag, a TOML file, :meth:`SimConfig.from_dict` or a keyword); a given
field that does not apply to the run (a row of :data:`RULES` whose condition fails) is refused in
one line that names it and says why. A field left at its default is never refused.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from theory.devices import Device
from theory.errors import ParameterError, show_value
from theory.limits import (
    MAX_ARRAY_BYTES,
    MAX_COUNT,
    MAX_SEQUENTIAL_WRITES,
    MAX_UPDATES,
    check_size,
)
from theory.userfiles import in_file, load_toml

from .device import device_named, fast_device_named
from .problems import (
    DIGITS_FEATURES,
    DRAW_CHUNK,
    LEAST_SQUARES_DIM,
    NETWORK_PROBLEMS,
    ORACLE_PROBLEMS,
    network_bytes_per_member,
    train_rows,
)
from .specs import (
    SPECS,
    TRAIN_PULSE_TYPES,
    IOSpec,
    MixedSpec,
    PipelineSpec,
    ProblemSpec,
    ReplicaSpec,
    TikiTakaSpec,
    TrainingSpec,
    UpdateSpec,
    default_log_every,
    spec_of,
)

__all__ = [
    "AtLeast", "ConfigParts", "FIELD_ORDER", "NotApplicableError", "OneOf", "RULES", "Rule",
    "SimConfig", "check_rules", "device_from_config", "fast_device_from_config",
]


# ------------------------------------------------------------------------------------------------
# the rules: which field applies to which run

def _flag(name: str) -> str:
    """The long flag of a field (``micro_batches`` -> ``--micro-batches``)."""
    return "--" + name.replace("_", "-")


@dataclass(frozen=True)
class OneOf:
    """The condition ``field`` in ``values``; ``label`` names the values in a message (``"the
    oracle problems"``; default: the values themselves)."""

    field: str
    values: tuple
    label: str = ""

    def holds(self, values: Mapping) -> bool:
        """Whether the run of the flat ``values`` meets the condition."""
        return values[self.field] in self.values

    def wanted(self, *, flags: bool = False) -> str:
        """The condition as a message says it (``algorithm='tiki-taka'``, or on the command line
        ``--algorithm tiki-taka``)."""
        if self.label:
            return self.label
        if flags:
            return f"{_flag(self.field)} " + " or ".join(str(v) for v in self.values)
        return f"{self.field}=" + " or ".join(repr(v) for v in self.values)

    def actual(self, values: Mapping, *, flags: bool = False) -> str:
        """What the run has instead (``algorithm='analog'`` / ``--algorithm analog``)."""
        value = values[self.field]
        return f"{_flag(self.field)} {value}" if flags else f"{self.field}={value!r}"


@dataclass(frozen=True)
class AtLeast:
    """The condition ``field >= low``."""

    field: str
    low: int

    def holds(self, values: Mapping) -> bool:
        """Whether the run of the flat ``values`` meets the condition."""
        return values[self.field] >= self.low

    def wanted(self, *, flags: bool = False) -> str:
        """The condition as a message says it (``replicas >= 2`` / ``--replicas >= 2``)."""
        return f"{_flag(self.field) if flags else self.field} >= {self.low}"

    def actual(self, values: Mapping, *, flags: bool = False) -> str:
        """What the run has instead (``replicas=1`` / ``--replicas 1``)."""
        value = values[self.field]
        return f"{_flag(self.field)} {value}" if flags else f"{self.field}={value!r}"


@dataclass(frozen=True)
class Rule:
    """One row of :data:`RULES`: ``field``, when given, applies only where ``condition`` holds,
    for ``reason``."""

    field: str
    condition: OneOf | AtLeast
    reason: str

    def fields(self) -> tuple[str, str]:
        """The two fields the row reads: the ruled field and the condition's."""
        return self.field, self.condition.field

    def message(self, values: Mapping, *, flags: bool = False) -> str:
        """The one-line refusal of the flat ``values`` (Python names, or with ``flags`` the
        command line's): ``transfer_every=5 applies to algorithm='tiki-taka' only, not
        algorithm='analog': ...``."""
        value = values[self.field]
        if not flags:
            subject = f"{self.field}={show_value(value)}"
        elif isinstance(value, bool):
            subject = _flag(self.field) if value else f"--no-{_flag(self.field)[2:]}"
        else:
            subject = f"{_flag(self.field)}={value}"
        return (f"{subject} applies to {self.condition.wanted(flags=flags)} only, not "
                f"{self.condition.actual(values, flags=flags)}: {self.reason}")


_ANALOG = ("analog", "tiki-taka", "mixed")
_TIKI_TAKA = OneOf("algorithm", ("tiki-taka",))
_PULSED = OneOf("update", ("pulsed",))
_TRAINS = OneOf("pulse_type", TRAIN_PULSE_TYPES)
_NETWORKS = OneOf("problem", NETWORK_PROBLEMS, "the network problems")
_ORACLES = OneOf("problem", ORACLE_PROBLEMS, "the oracle problems")
_IO_ANALOG = ("the IO model is of analog SGD's forward and backward products; use the preset "
              "'perfect'")
_IO_ORACLE = ("an oracle gradient is not a matrix-vector product; use a network problem or the "
              "preset 'perfect'")

#: which field applies to which run: a given field (one not at its default) whose row's condition
#: fails is refused (:func:`check_rules`); a field with several rows must meet them all, the
#: first failing row is the message
RULES: tuple[Rule, ...] = (
    Rule("micro_batches", OneOf("mode", ("none", "sync")),
         "the asynchronous pipeline updates after every micro-batch of b samples"),
    Rule("update", OneOf("algorithm", _ANALOG), "a digital run writes w + dw exactly"),
    Rule("pulse_type", _PULSED, "the expected update fires no pulses"),
    Rule("pulse_method", _PULSED, "the expected update fires no pulses"),
    Rule("update_management", _PULSED, "the expected update draws no pulse trains"),
    Rule("update_management", _TRAINS, "deterministic pulse counts draw no pulse trains"),
    Rule("bl_management", _PULSED, "the expected update draws no pulse trains"),
    Rule("bl_management", _TRAINS, "deterministic pulse counts draw no pulse trains"),
    Rule("forward_io", _NETWORKS, _IO_ORACLE),
    Rule("forward_io", OneOf("algorithm", ("analog",)), _IO_ANALOG),
    Rule("backward_io", _NETWORKS, _IO_ORACLE),
    Rule("backward_io", OneOf("algorithm", ("analog",)), _IO_ANALOG),
    Rule("transfer_every", _TIKI_TAKA, "it is the period of Tiki-Taka's transfers from A to C"),
    Rule("transfer_lr", _TIKI_TAKA, "it is the rate of Tiki-Taka's transfers from A to C"),
    Rule("tt_gamma", _TIKI_TAKA, "it is the weight of Tiki-Taka's fast array A"),
    Rule("transfer_slice", _TIKI_TAKA, "it is what a Tiki-Taka transfer moves"),
    Rule("fast_device", _TIKI_TAKA, "it is the device of Tiki-Taka's fast array A"),
    Rule("transfer_reset", _TIKI_TAKA, "it resets Tiki-Taka's fast array A after a transfer"),
    Rule("digital_stages", OneOf("algorithm", ("mixed",)),
         "the other algorithms update every stage alike"),
    Rule("data", OneOf("problem", NETWORK_PROBLEMS, "the digits networks"),
         "an oracle problem draws its own samples; valid for it: data='digits'"),
    Rule("grad_bias", _ORACLES,
         "a network's gradient error comes from its IO non-idealities (forward_io, backward_io)"),
    Rule("replicas", _ORACLES, "replicas are simulated for the oracle problems only"),
    Rule("replicas", OneOf("algorithm", ("digital", "analog")),
         "replicas are simulated for digital and analog SGD only"),
    Rule("average_every", AtLeast("replicas", 2), "it is the period of averaging the replicas"),
    Rule("programming_error", AtLeast("replicas", 2),
         "it is the error of programming the replicas' mean back"),
)


class NotApplicableError(ParameterError):
    """A given field that does not apply to its run: a row of :data:`RULES` failed.

    ``str(error)`` names the field as Python does (``transfer_every=5 ...``);
    :attr:`flag_message` names flags (``--transfer-every=5 ... --algorithm tiki-taka ...``).
    """

    def __init__(self, rule: Rule, values: Mapping, *, flags: bool = False):
        self.rule, self.values = rule, dict(values)
        super().__init__(rule.message(self.values, flags=flags))

    @property
    def flag_message(self) -> str:
        """The message as the command line says it."""
        return self.rule.message(self.values, flags=True)


def check_rules(values: Mapping, defaults: Mapping | None = None, *, flags: bool = False) -> None:
    """Refuse a given field of the flat ``values`` that does not apply to their run.

    Parameters
    ----------
    values : mapping
        Field name -> value; a row of :data:`RULES` that reads a field not in ``values`` is
        skipped (a command can check the few flags it has).
    defaults : mapping, optional
        Field name -> the value that counts as not given (default: :class:`SimConfig`'s).
    flags : bool
        Word the message as the command line (``--transfer-every=5 applies to --algorithm
        tiki-taka only, ...``).

    Raises
    ------
    NotApplicableError
        For the first row (in :data:`RULES`'s order) that the values break.
    """
    defaults = _DEFAULTS if defaults is None else defaults
    for rule in RULES:
        if not all(name in values for name in rule.fields()):
            continue
        if values[rule.field] != defaults[rule.field] and not rule.condition.holds(values):
            raise NotApplicableError(rule, values, flags=flags)


# ------------------------------------------------------------------------------------------------
# the run record

#: the flat fields in the order of :meth:`SimConfig.to_dict` (the record's order when it was split
#: into parts: trace JSON and the order of the flags depend on it); a spec field not listed here
#: follows, in the order of :data:`~simulate.specs.SPECS`
FIELD_ORDER = (
    "problem", "mode", "algorithm", "stages", "micro_batches", "micro_batch_size", "device", "tau",
    "update", "pulse_type", "write", "pulse_method", "update_management", "bl_management", "lr",
    "steps", "seeds", "log_every", "dim", "sigma2", "seed", "forward_io", "backward_io",
    "transfer_every", "transfer_lr", "tt_gamma", "transfer_slice", "fast_device", "transfer_reset",
    "digital_stages", "data", "grad_bias", "dtype", "replicas", "average_every",
    "programming_error",
)


def _flat_fields(cls: type) -> type:
    """Give ``cls`` (before :func:`~dataclasses.dataclass`) one field per field of the specs, in
    the order of :data:`FIELD_ORDER`: its spec field's annotation, default and metadata (its help,
    the flag's; its part under ``metadata["part"]``). Each field is described once, in its spec."""
    names = [f.name for spec in SPECS.values() for f in fields(spec)]
    unknown = sorted(set(FIELD_ORDER) - set(names))
    if unknown:
        raise TypeError(f"FIELD_ORDER names {unknown}, which no spec has")
    annotations = {}
    for name in (*FIELD_ORDER, *(name for name in names if name not in FIELD_ORDER)):
        part, spec_field = spec_of(name)
        annotations[name] = spec_field.type  # as the spec writes it (a string: "float | None")
        setattr(cls, name, field(default=spec_field.default,
                                 metadata={**spec_field.metadata, "part": part}))
    cls.__annotations__ = {**annotations, **cls.__dict__.get("__annotations__", {})}
    return cls


@dataclass(frozen=True)
class ConfigParts:
    """The parts of a :class:`SimConfig` (:attr:`SimConfig.parts`), as validated."""

    problem: ProblemSpec
    pipeline: PipelineSpec
    training: TrainingSpec
    update: UpdateSpec
    io: IOSpec
    tiki_taka: TikiTakaSpec
    mixed: MixedSpec
    replicas: ReplicaSpec


@dataclass(frozen=True)
@_flat_fields
class SimConfig:
    """One simulated training run: the parts of :mod:`simulate.specs` and the rules between them.

    Give the fields flat (``SimConfig(mode="sync", stages=4, lr=0.02)``) or by part, as aihwkit's
    ``SingleRPUConfig(device=..., forward=IOParameters(), update=UpdateParameters())``::

        SimConfig(pipeline=PipelineSpec(mode="sync", stages=4, micro_batches=4),
                  training=TrainingSpec(algorithm="tiki-taka", lr=0.02),
                  tiki_taka=TikiTakaSpec(transfer_every=4))

    Each field is described once, in its spec (the field metadata, also the flag help of
    ``aimc-pipeline simulate``); the parameters below are generated from it.

    Parameters
    ----------
    (generated: see the end of this docstring)

    Notes
    -----
    Iterations are **updates**: ``none`` and ``sync`` consume ``micro_batches * micro_batch_size``
    samples per update (one mini-batch), ``async`` consumes ``micro_batch_size`` samples per update
    (one micro-batch) and updates every stage after every micro-batch.

    A part given whole (``pipeline=PipelineSpec(...)``; for the parts whose name is also a field,
    ``problem=ProblemSpec(...)``, ``update=UpdateSpec(...)``, ``replicas=ReplicaSpec(...)``) sets
    all its fields; one of its fields given again on its own is refused. :attr:`parts` holds the
    validated parts (``config.parts.update.pulse_type``); the parts whose name is not a field are
    also attributes (``config.pipeline``, ``config.training``, ``config.io``,
    ``config.tiki_taka``, ``config.mixed``). ``dataclasses.replace`` takes the flat names.

    A given field (one not at its default) that does not apply to the run is refused by its row of
    :data:`RULES` (the rows are listed below). Integer fields accept an integral float (``20.0``
    is stored as ``20``). Resource limits of :mod:`theory.limits` are checked here, before anything
    is allocated: ``steps`` at most ``MAX_UPDATES``; samples and cycles of the run at most
    ``MAX_COUNT`` (exact integers); every array of the run (trace, ensemble state, noise draws,
    Hessian, network batches) at most ``MAX_ARRAY_BYTES``. Every refusal is a one-line
    :class:`~theory.errors.ParameterError` starting with the field's name.
    """

    def __post_init__(self):
        parts = {}
        for part, spec in SPECS.items():  # each part checks its own fields
            built = spec(**{f.name: getattr(self, f.name) for f in fields(spec)})
            for name, value in built.to_dict().items():  # as normalised (20.0 -> 20)
                object.__setattr__(self, name, value)
            parts[part] = built
        check_rules(self.to_dict())
        if self.stages > self.dim and self.problem == "quadratic":
            raise ParameterError(
                f"stages={self.stages} exceeds dim={self.dim}; valid range [1, {self.dim}]"
            )
        stages = _digital_stages(self.digital_stages, self.stages)
        object.__setattr__(self, "digital_stages", stages)
        parts["mixed"] = MixedSpec(digital_stages=stages)
        parts["tiki_taka"].fast_device_at(self.tau)  # the fast array's range is the run's tau
        self.__dict__["_parts"] = ConfigParts(**parts)
        _check_counts(self)
        _check_memory(self)

    @property
    def parts(self) -> ConfigParts:
        """The validated parts (``config.parts.pipeline.stages``)."""
        return self.__dict__["_parts"]

    @property
    def pipeline(self) -> PipelineSpec:
        """The pipeline part (``mode``, ``stages``, ``micro_batches``, ``micro_batch_size``)."""
        return self.parts.pipeline

    @property
    def training(self) -> TrainingSpec:
        """The training part (``algorithm``, ``lr``, ``steps``, ``seeds``, ``log_every``,
        ``seed``)."""
        return self.parts.training

    @property
    def io(self) -> IOSpec:
        """The IO part (``forward_io``, ``backward_io``)."""
        return self.parts.io

    @property
    def tiki_taka(self) -> TikiTakaSpec:
        """The Tiki-Taka part (``transfer_every``, ..., ``transfer_reset``)."""
        return self.parts.tiki_taka

    @property
    def mixed(self) -> MixedSpec:
        """The mixed-stages part (``digital_stages``, sorted)."""
        return self.parts.mixed

    @property
    def digital_stage_indices(self) -> tuple[int, ...]:
        """The 1-based stages of ``digital_stages`` (sorted; empty unless ``mixed``)."""
        return tuple(int(x) for x in self.digital_stages.split(",")) if self.digital_stages else ()

    @property
    def log_period(self) -> int:
        """The updates between logging points: ``log_every``, or where it is ``None``
        :func:`simulate.specs.default_log_every` (10 for the oracle problems,
        ``max(10, steps // 8)`` for the networks)."""
        if self.log_every is not None:
            return self.log_every
        return default_log_every(self.steps, self.problem in NETWORK_PROBLEMS)

    @property
    def samples_per_update(self) -> int:
        """Samples consumed by one update: ``b`` (async) or ``B b`` (none, sync)."""
        return self.pipeline.samples_per_update

    def to_dict(self) -> dict:
        """The configuration as a JSON-ready dict (flat: field name -> value)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping) -> SimConfig:
        """The configuration of a mapping: flat (as :meth:`to_dict` writes it) or with a table
        per part (``{"pipeline": {"mode": "sync", "stages": 4}, "lr": 0.02}``).

        Raises
        ------
        ParameterError
            For a key that is neither a field nor a part (the message lists the valid keys), and
            every refusal of :class:`SimConfig`.
        """
        kwargs = {}
        for key, value in data.items():
            if key in SPECS and isinstance(value, Mapping):
                spec = SPECS[key]
                valid = [f.name for f in fields(spec)]
                for name in value:
                    if name not in valid:
                        raise ParameterError(f"{key}.{name} is not a field of {spec.__name__}; "
                                             f"valid: {', '.join(valid)}")
                kwargs[key] = spec(**value)
            elif key in _DEFAULTS:
                kwargs[key] = value
            else:
                raise ParameterError(f"{key}={show_value(value)} is not a field; valid: "
                                     f"{', '.join(_DEFAULTS)} or a part ({', '.join(SPECS)})")
        return cls(**kwargs)

    @classmethod
    def from_toml(cls, path: str | Path) -> SimConfig:
        """The configuration of a TOML file (:meth:`from_dict` of its top table; a field that TOML
        cannot write as ``None``, such as ``fast_device``, is left out)."""
        data = load_toml(path, "config")  # size, UTF-8, depth, integers: theory.userfiles
        with in_file("config", path):
            return cls.from_dict(data)


#: field name -> default (what counts as not given)
_DEFAULTS = {f.name: f.default for f in fields(SimConfig)}
#: the parts whose name is not also a field: given only as their spec
_PART_ONLY = tuple(part for part in SPECS if part not in _DEFAULTS)
_FLAT_INIT = SimConfig.__init__


def _init(self, *args, **kwargs):
    _FLAT_INIT(self, *args, **_flatten(kwargs))


def _flatten(kwargs: dict) -> dict:
    """The flat keywords of ``kwargs``, whose parts (a spec under its part name) are expanded."""
    out = dict(kwargs)
    for part, spec in SPECS.items():
        if part not in out or (part in _DEFAULTS and not isinstance(out[part], spec)):
            continue  # a flat value of the field of the same name (problem, update, replicas)
        given = out.pop(part)
        if not isinstance(given, spec):
            raise ParameterError(f"{part}={show_value(given)} is not a {spec.__name__}")
        for name, value in given.to_dict().items():
            if name in out:
                raise ParameterError(f"{name}={show_value(out[name])} is given twice: on its own "
                                     f"and in {part}={spec.__name__}(...); give it once")
            out[name] = value
    return out


_init.__doc__ = SimConfig.__init__.__doc__
_init.__signature__ = inspect.signature(_FLAT_INIT).replace(parameters=[
    *inspect.signature(_FLAT_INIT).parameters.values(),
    *(inspect.Parameter(part, inspect.Parameter.KEYWORD_ONLY, default=None,
                        annotation=SPECS[part].__name__ + " | None") for part in _PART_ONLY),
])
_init.__qualname__ = "SimConfig.__init__"
SimConfig.__init__ = _init


def _document_config() -> str:
    """The generated part of :class:`SimConfig`'s docstring: its parameters by part (from the
    specs' field metadata) and the rows of :data:`RULES`."""
    lines = []
    for part, spec in SPECS.items():
        names = ", ".join(f.name for f in fields(spec))
        lines += [names, f"    The fields of :class:`~simulate.specs.{spec.__name__}` (the "
                         f"``{part}`` part)."]
    for part in _PART_ONLY:
        lines += [f"{part} : {SPECS[part].__name__}, optional",
                  f"    The ``{part}`` part whole, instead of its fields."]
    rows = [f"- ``{r.field}`` applies to {r.condition.wanted()} only: {r.reason}." for r in RULES]
    return "\n".join(lines), "\n".join(rows)


_PARAMETERS, _ROWS = _document_config()
SimConfig.__doc__ = (SimConfig.__doc__
                     .replace("    (generated: see the end of this docstring)\n",
                              "\n".join("    " + line for line in _PARAMETERS.splitlines())
                              + "\n")
                     + "\n    The rows of :data:`RULES`:\n\n"
                     + "\n".join("    " + row for row in _ROWS.splitlines()) + "\n")


def _digital_stages(text: str, count: int) -> str:
    """``digital_stages`` checked against the ``count`` stages of the pipeline (stages in
    ``[1, M]``, no repeat) and written sorted without spaces."""
    if not text:
        return ""
    stages = []
    for item in text.split(","):
        try:
            stage = int(item.strip())
        except ValueError:
            stage = None
        if stage is None or not 1 <= stage <= count or stage in stages:
            raise ParameterError(
                f"digital_stages={text!r} is out of range: {item.strip()!r} is not a new stage "
                f"of 1..{count}; valid: distinct stages in [1, {count}]"
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
    if config.update == "pulsed" and config.write == "per-sample":
        # one pulsed write per sample, one after another (seeds and replicas are vectorised)
        n = config.samples_per_update
        name = "micro_batch_size" if b > 1 else "micro_batches" if n > 1 else "steps"
        _limit(name, getattr(config, name), need=k * n, limit=MAX_SEQUENTIAL_WRITES,
               what="sequential pulsed writes (steps x samples per update, write='per-sample')",
               hint="lower steps or the micro-batch, or write='batch-mean'")


def _check_memory(config: SimConfig) -> None:
    """Refuse a run any one of whose arrays would exceed MAX_ARRAY_BYTES (estimated up front).

    Per member first (naming the field that sets it), then for the whole ensemble (``seeds``):
    the trace (``R`` rows of one value per logging point), the oracle's weights, noise draws and
    Hessian (``dim``), a network's batches (``micro_batch_size``, ``micro_batches``).
    """
    limit, seeds = MAX_ARRAY_BYTES, config.seeds
    points = config.steps // config.log_period + 2
    _limit("log_every", config.log_period, need=8 * points, limit=limit,
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
    :func:`theory.devices.make_device` (then built with ``dw_min =``
    :data:`~simulate.device.DEFAULT_DW_MIN` and no pulse noise). ``config.tau`` (when not
    ``None``) sets the range ``tau`` of a family that has one (soft bounds, power, exponential),
    also overriding a preset's; devices whose range is given by ``w_min``/``w_max`` have no
    ``tau`` (:class:`SimConfig` records ``tau=None`` for them and refuses another value,
    :func:`~simulate.device.check_device_tau`).
    """
    return device_named(config.device, config.tau)


def fast_device_from_config(config: SimConfig) -> Device | None:
    """The device of Tiki-Taka's fast array A of ``config``
    (:func:`simulate.device.fast_device_named` of ``config.fast_device`` and ``config.tau``)."""
    return fast_device_named(config.fast_device, config.tau)
