r"""Model descriptions for the planner: the analog weight matrices of a network, in pipeline order.

A :class:`Model` is a sequence of :class:`Layer` objects, each one crossbar weight matrix with its
shape (``rows`` inputs x ``cols`` outputs), the number of matrix-vector multiplications (MVMs) it
does per training sample, and the number of activation values it stores per sample for its
backward pass. A layer occupies

.. math::

    \mathrm{tiles} = \lceil \mathrm{rows}/r \rceil \, \lceil \mathrm{cols}/c \rceil

crossbar tiles of size :math:`r \times c`. A convolution is its im2col matrix
:math:`(k^2 c_\mathrm{in}) \times c_\mathrm{out}` and does one MVM per output position; a
transformer matrix does one MVM per token.

Descriptions are TOML files (the built-ins are shipped in ``bounds/planning/model_data/``, but for
the simulator's digits networks ``digits-mlp`` and ``digits-resmlp``, whose layers are those of
:func:`theory.networks.network_layers`, the one place their sizes are written:
:func:`network_table`)::

    name = "my-net"
    description = "one line"

    [parameters]                 # optional named integers, referenced by name below
    sequence_length = 512

    [[blocks]]                   # a group of layers, repeated `repeat` times (default 1)
    name = "block"               # optional: repeated layers are named block1.wq, block2.wq, ...
    repeat = 2
    layers = [
      { name = "wq", rows = 64, cols = 64, mvms_per_sample = "sequence_length" },
      { name = "fc", rows = 64, cols = 10, mvms_per_sample = 1, activations = 64 },
    ]

    [problem]                    # optional: the constants of f for this network and its data
    L = 2.5                      # smoothness (A1); also L_s, Delta, sigma2 (A1, A2, A4)

``mvms_per_sample`` (default 1) is an integer or the name of an entry of ``[parameters]`` (looked
up, never evaluated); ``[problem]`` sets :data:`~bounds.planning.constants.MODEL_PROBLEM_KEYS` for
the planner (:attr:`Model.problem`; a flag overrides it, a key not set keeps the default
placeholder of :class:`~bounds.params.ProblemParams`, :mod:`bounds.planning.constants`);
``activations`` defaults to ``rows * mvms_per_sample``. Unknown keys raise
:class:`theory.errors.ParameterError` listing the valid ones.

**Which accelerator kinds may host a layer.** A block may say ``hosts = "digital"`` (default
``"any"``: an analog or a digital accelerator): its layers must run on a digital accelerator
(:mod:`bounds.planning.hardware`). Digital-only blocks stand at the start or the end of the model
(an embedding, an output head); they are kept apart from :attr:`Model.layers`, in
:attr:`Model.digital_first` and :attr:`Model.digital_last`, so that the single-kind planner
(:mod:`bounds.planning.planner`, all accelerators analog) plans exactly the analog-capable layers,
as it always did, and treats the digital ends as done elsewhere; :attr:`Model.chain` is the whole
network for the kinds planner (:mod:`bounds.planning.kinds`). A layer's ``ops_per_mvm`` (default
``rows * cols``: one multiply-accumulate per weight) is its digital cost per MVM (an embedding
lookup reads one row: ``ops_per_mvm = cols``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from importlib import resources
from pathlib import Path

import numpy as np

from theory.errors import ParameterError, check_range, show_value
from theory.limits import MAX_LAYER_SIZE, MAX_MODEL_LAYERS
from theory.networks import NETWORK_DESCRIPTIONS, NETWORK_PROBLEMS, network_layers
from theory.userfiles import (
    STRING,
    array,
    in_file,
    integer,
    load_toml,
    number,
    read_user_text,
    table,
)

from ..params import check_keys
from .constants import MODEL_PROBLEM_KEYS

__all__ = ["HOSTS", "Layer", "MODEL_SCHEMA", "Model", "list_models", "load_model",
           "model_constants", "model_from_table", "network_table"]

_DATA = "model_data"
_TOP_KEYS = ("name", "description", "parameters", "problem", "blocks")
_BLOCK_KEYS = ("name", "repeat", "layers", "hosts")
_LAYER_KEYS = ("name", "rows", "cols", "mvms_per_sample", "activations", "ops_per_mvm")
#: the accelerator classes a layer may run on: ``("analog", "digital")`` or ``("digital",)``
HOSTS = {"any": ("analog", "digital"), "digital": ("digital",)}
_SIZE = integer(1, MAX_LAYER_SIZE)
#: the JSON Schema of a model description (:func:`load_model`; the module docstring's layout);
#: what depends on several keys (a parameter's name, the layer count after ``repeat``, where
#: digital-only blocks stand) is checked by :func:`model_from_table`
MODEL_SCHEMA = table({
    "name": STRING, "description": {"type": "string"},
    "parameters": {"type": "object", "additionalProperties": integer(1)},
    "problem": table({key: number(above=0) for key in MODEL_PROBLEM_KEYS}),
    "blocks": array(table({
        "name": STRING, "repeat": integer(1, MAX_MODEL_LAYERS), "hosts": {"enum": list(HOSTS)},
        "layers": array(table({
            "name": STRING, "rows": _SIZE, "cols": _SIZE,
            "mvms_per_sample": {"anyOf": [_SIZE, STRING]},
            "activations": integer(0, MAX_LAYER_SIZE**2),
            "ops_per_mvm": integer(1, MAX_LAYER_SIZE**2),
        }, ("rows", "cols"))),
    })),
})


def _ceil_div(a, b):
    return -(-np.asarray(a, dtype=np.int64) // b)


@dataclass(frozen=True)
class Layer:
    """One analog weight matrix of a model.

    Parameters
    ----------
    name : str
        Label (unique names are not required).
    rows, cols : int
        Matrix shape: ``rows`` inputs (crossbar rows) by ``cols`` outputs, >= 1.
    mvms_per_sample : int
        MVMs this layer does per training sample in a forward (and again in a backward), >= 1:
        1 for a dense layer, output positions for a convolution, tokens for a transformer matrix.
    activations : int, optional
        Activation values the layer stores per sample for its backward (its input), >= 0.
        Default ``rows * mvms_per_sample``.
    hosts : tuple of str
        Accelerator classes that may host it: ``("analog", "digital")`` (default) or
        ``("digital",)`` (:data:`HOSTS`).
    ops_per_mvm : int, optional
        Multiply-accumulates of one MVM on a digital accelerator, >= 1. Default ``rows * cols``.

    Notes
    -----
    ``rows``, ``cols`` and ``mvms_per_sample`` are at most :data:`MAX_LAYER_SIZE` (``2**31 - 1``)
    and ``activations`` at most its square, so that the planner's per-stage sums over up to
    :data:`theory.limits.MAX_MODEL_LAYERS` layers stay exact in int64.
    """

    name: str
    rows: int
    cols: int
    mvms_per_sample: int = 1
    activations: int | None = None
    hosts: tuple[str, ...] = HOSTS["any"]
    ops_per_mvm: int | None = None

    def __post_init__(self):
        if not isinstance(self.name, str):
            raise ParameterError(f"name={show_value(self.name)} of a layer is not a string")
        for key in ("rows", "cols", "mvms_per_sample"):
            object.__setattr__(self, key, check_range(
                f"{self.name}.{key}", getattr(self, key), 1, MAX_LAYER_SIZE, integer=True
            ))
        if self.activations is None:
            object.__setattr__(self, "activations", self.rows * self.mvms_per_sample)
        object.__setattr__(self, "activations", check_range(
            f"{self.name}.activations", self.activations, 0, MAX_LAYER_SIZE**2, integer=True
        ))
        if tuple(self.hosts) not in HOSTS.values():
            raise ParameterError(
                f"{self.name}.hosts={show_value(self.hosts)} is invalid; valid: "
                + " or ".join(repr(v) for v in HOSTS.values())
            )
        object.__setattr__(self, "hosts", tuple(self.hosts))
        if self.ops_per_mvm is None:
            object.__setattr__(self, "ops_per_mvm", self.rows * self.cols)
        object.__setattr__(self, "ops_per_mvm", check_range(
            f"{self.name}.ops_per_mvm", self.ops_per_mvm, 1, MAX_LAYER_SIZE**2, integer=True
        ))

    @property
    def analog(self) -> bool:
        """Whether an analog accelerator may host it."""
        return "analog" in self.hosts

    def tiles(self, tile_rows: int, tile_cols: int) -> int:
        r"""Tiles of size ``tile_rows x tile_cols`` it occupies.

        :math:`\lceil \mathrm{rows}/r\rceil \lceil \mathrm{cols}/c\rceil`.
        """
        return int(_ceil_div(self.rows, tile_rows) * _ceil_div(self.cols, tile_cols))


@dataclass(frozen=True)
class Model:
    """A network as its analog layers in pipeline order (stage 1 takes the first layers).

    Parameters
    ----------
    name : str
        Model name.
    layers : tuple of Layer
        At least one layer.
    description : str
        One line for listings.
    parameters : dict
        The named integers the description used (e.g. ``sequence_length``), for the record.
    digital_first, digital_last : tuple of Layer
        Digital-only layers before and after :attr:`layers` (an embedding, an output head); the
        single-kind planner does not plan them (they run on digital hardware outside its
        pipeline), the kinds planner plans :attr:`chain`. Default none.
    problem : dict
        The description's ``[problem]`` constants (:data:`~bounds.planning.constants.
        MODEL_PROBLEM_KEYS`, floats), for the planner; default none (every built-in: the
        constants are then the default placeholders).
    """

    name: str
    layers: tuple[Layer, ...]
    description: str = ""
    parameters: dict = field(default_factory=dict, compare=False)
    digital_first: tuple[Layer, ...] = ()
    digital_last: tuple[Layer, ...] = ()
    problem: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "layers", tuple(self.layers))
        if not self.layers:
            raise ParameterError(f"model {self.name!r} has no layers; valid: at least 1 layer")
        for key in ("digital_first", "digital_last"):
            object.__setattr__(self, key, tuple(getattr(self, key)))
        for layer in self.chain:
            if not isinstance(layer, Layer):
                raise ParameterError(f"model {self.name!r}: {layer!r} is not a Layer")
        for layer in (*self.digital_first, *self.digital_last):
            if layer.analog:
                raise ParameterError(
                    f"model {self.name!r}: layer {layer.name!r} of digital_first/digital_last "
                    f"has hosts={layer.hosts!r}; valid: ('digital',)"
                )
        if len(self.chain) > MAX_MODEL_LAYERS:
            raise ParameterError(
                f"model {self.name!r} has {len(self.chain)} layers, more than the limit of "
                f"{MAX_MODEL_LAYERS} (theory.limits.MAX_MODEL_LAYERS)"
            )

    @property
    def chain(self) -> tuple[Layer, ...]:
        """Every layer in pipeline order: :attr:`digital_first`, :attr:`layers`,
        :attr:`digital_last`."""
        return (*self.digital_first, *self.layers, *self.digital_last)

    def __len__(self) -> int:
        return len(self.layers)

    @cached_property
    def work(self) -> np.ndarray:
        """MVMs per sample of each layer, shape ``(layers,)`` (int64, read-only)."""
        return _frozen([layer.mvms_per_sample for layer in self.layers])

    @cached_property
    def activations(self) -> np.ndarray:
        """Activation values stored per sample by each layer, shape ``(layers,)`` (int64)."""
        return _frozen([layer.activations for layer in self.layers])

    @property
    def weights(self) -> int:
        """Analog weights in total (sum of rows x cols)."""
        return sum(layer.rows * layer.cols for layer in self.layers)

    def tiles(self, tile_rows: int, tile_cols: int) -> np.ndarray:
        """Tiles of each layer for the given tile size, shape ``(layers,)`` (int64)."""
        check_range("tile_rows", tile_rows, 1, integer=True)
        check_range("tile_cols", tile_cols, 1, integer=True)
        rows = np.array([layer.rows for layer in self.layers])
        cols = np.array([layer.cols for layer in self.layers])
        return _frozen(_ceil_div(rows, tile_rows) * _ceil_div(cols, tile_cols))

    def summary(self, tile_rows: int = 128, tile_cols: int = 128) -> dict:
        """JSON-ready summary: name, layers, weights, MVMs and activations per sample, tiles."""
        return {
            "name": self.name,
            "description": self.description,
            "layers": len(self),
            "weights": self.weights,
            "mvms_per_sample": int(self.work.sum()),
            "activations_per_sample": int(self.activations.sum()),
            "tiles": int(self.tiles(tile_rows, tile_cols).sum()),
            "tile_size": [tile_rows, tile_cols],
            "parameters": dict(self.parameters),
        }


def _frozen(values) -> np.ndarray:
    arr = np.asarray(values, dtype=np.int64)
    arr.setflags(write=False)
    return arr


def _layer(where: str, table: dict, parameters: dict, name: str,
           hosts: tuple[str, ...] = HOSTS["any"]) -> Layer:
    check_keys(where, table, _LAYER_KEYS)
    for key in ("rows", "cols"):
        if key not in table:
            raise ParameterError(f"{where}: missing key {key!r}; required: rows, cols")
    mvms = table.get("mvms_per_sample", 1)
    if isinstance(mvms, str):
        if mvms not in parameters:
            raise ParameterError(
                f"{where}: mvms_per_sample={mvms!r} names no parameter; valid: "
                f"{', '.join(parameters) or '(none: add a [parameters] table)'}"
            )
        mvms = parameters[mvms]
    return Layer(name, table["rows"], table["cols"], mvms, table.get("activations"),
                 hosts, table.get("ops_per_mvm"))


def model_from_table(table: dict, **parameters) -> Model:
    """Build a :class:`Model` from a parsed TOML description (layout in the module docstring).

    Parameters
    ----------
    table : dict
        The parsed TOML document.
    **parameters : int
        Overrides of its ``[parameters]`` entries (e.g. ``sequence_length=512``); a name the
        description does not define is an error.
    """
    check_keys("model description", table, _TOP_KEYS)
    name = table.get("name", "model")
    declared = table.get("parameters", {})
    if not isinstance(declared, dict):
        raise ParameterError(
            f"model {name!r}: parameters must be a TOML table ([parameters]), got {declared!r}"
        )
    unknown = sorted(set(parameters) - set(declared))
    if unknown:
        raise ParameterError(
            f"model {name!r} has no parameter {', '.join(map(repr, unknown))}; valid: "
            f"{', '.join(declared) or '(none)'}"
        )
    values = {**declared, **parameters}
    for key, value in values.items():
        values[key] = check_range(key, value, 1, integer=True)
    blocks = table.get("blocks", [])
    if not isinstance(blocks, list):
        raise ParameterError(f"model {name!r}: blocks must be an array of tables ([[blocks]])")
    layers = []
    for i, block in enumerate(blocks, 1):
        where = f"block {i} of model {name!r}"
        check_keys(where, block, _BLOCK_KEYS)
        repeat = check_range(f"{where}: repeat", block.get("repeat", 1), 1, MAX_MODEL_LAYERS,
                             integer=True)
        prefix = block.get("name")
        if prefix is not None and not isinstance(prefix, str):
            raise ParameterError(f"name={show_value(prefix)} of {where} is not a string")
        entries = block.get("layers", [])
        if not isinstance(entries, list):
            raise ParameterError(
                f"{where}: layers must be an array of tables ([{{ rows = ..., cols = ... }}]), "
                f"got {show_value(entries)}"
            )
        # refuse before expanding: repeat x entries layers, after those of the earlier blocks
        need = len(layers) + repeat * len(entries)
        if need > MAX_MODEL_LAYERS:
            raise ParameterError(
                f"{where}: repeat={repeat} gives {need:.3g} layers, more than the "
                f"limit of {MAX_MODEL_LAYERS:.3g} model layers (theory.limits.MAX_MODEL_LAYERS)"
            )
        hosts = block.get("hosts", "any")
        if not isinstance(hosts, str) or hosts not in HOSTS:
            raise ParameterError(f"hosts={show_value(hosts)} of {where} is invalid; valid: "
                                 f"{', '.join(map(repr, HOSTS))}")
        for r in range(1, repeat + 1):
            for j, entry in enumerate(entries, 1):
                base = entry.get("name", f"layer{j}") if isinstance(entry, dict) else f"layer{j}"
                label = (
                    f"{prefix}{r}.{base}" if prefix else (f"{base}.{r}" if repeat > 1 else base)
                )
                layers.append(_layer(f"layer {j} of {where}", entry, values, label,
                                     HOSTS[hosts]))
    problem = table.get("problem", {})
    check_keys(f"[problem] of model {name!r}", problem, MODEL_PROBLEM_KEYS)
    problem = {key: float(check_range(f"problem.{key}", value, 0, low_open=True))
               for key, value in problem.items()}
    return _split_ends(name, layers, table.get("description", ""), values, problem)


def _split_ends(name: str, layers: list[Layer], description: str, values: dict,
                problem: dict) -> Model:
    """The model with its leading and trailing digital-only layers kept apart (module docstring).

    A digital-only layer between analog-capable ones is refused (one line naming it).
    """
    analog = [i for i, layer in enumerate(layers) if layer.analog]
    if not layers:
        return Model(name, (), description, values, problem=problem)  # refused there: no layers
    if not analog:
        raise ParameterError(f"model {name!r} has no layer an analog accelerator may host; "
                             "valid: at least one block with hosts = \"any\"")
    first, last = analog[0], analog[-1]
    for layer in layers[first:last + 1]:
        if not layer.analog:
            raise ParameterError(
                f"model {name!r}: layer {layer.name!r} has hosts = \"digital\" between layers "
                "an analog accelerator may host; valid: digital-only blocks at the start or the "
                "end of the model"
            )
    return Model(name, tuple(layers[first:last + 1]), description, values,
                 digital_first=tuple(layers[:first]), digital_last=tuple(layers[last + 1:]),
                 problem=problem)


def model_constants(model) -> dict:
    """The ``[problem]`` constants of ``model`` (:attr:`Model.problem`); none for anything that
    is not a :class:`Model` (refused by the planners' type checks)."""
    return dict(model.problem) if isinstance(model, Model) else {}


def network_table(name: str) -> dict:
    """The description (as parsed TOML) of the simulator's digits network ``name``: one block of
    its default layers (:func:`theory.networks.network_layers`), each one crossbar matrix
    ``fan_in x fan_out`` with one MVM per sample, named by kind and position (``dense1``, ...,
    ``output16``); the biases are digital and not counted."""
    chain = network_layers(name)
    layers = [{"name": f"{kind}{i}", "rows": rows, "cols": cols}
              for i, (kind, rows, cols) in enumerate(chain, 1)]
    sizes = f"{chain[0][1]} -> {chain[0][2]} -> {chain[-1][2]}"
    return {"name": name, "blocks": [{"layers": layers}],
            "description": f"{NETWORK_DESCRIPTIONS[name]}: {len(chain)} layers {sizes}, the "
                           "simulator's network"}


def list_models() -> list[str]:
    """Names of the built-in models (sorted): the shipped descriptions and the digits networks."""
    folder = resources.files(__package__).joinpath(_DATA)
    return sorted([p.name[: -len(".toml")] for p in folder.iterdir() if p.name.endswith(".toml")]
                  + list(NETWORK_PROBLEMS))


def load_model(name_or_path, **parameters) -> Model:
    """A built-in model by name, or a model description from a TOML file.

    Parameters
    ----------
    name_or_path : str or os.PathLike
        A name of :func:`list_models`, or the path of a ``.toml`` description.
    **parameters : int
        Overrides of the description's ``[parameters]`` (e.g. ``sequence_length=512``).

    Raises
    ------
    ParameterError
        Unknown model name (the message lists the built-ins), invalid TOML or an invalid entry.
    FileNotFoundError
        A path that does not exist.
    """
    text_name = str(name_or_path)
    if text_name in NETWORK_PROBLEMS:  # the simulator's network, from its one spec
        for key, value in parameters.items():
            check_range(key, value, 1, integer=True)
        return model_from_table(network_table(text_name), **parameters)
    if text_name in list_models():
        source = resources.files(__package__).joinpath(_DATA, f"{text_name}.toml")
        text, where = source.read_text(encoding="utf-8"), text_name
    elif text_name.endswith(".toml") or Path(text_name).exists():
        path = Path(text_name)
        text, where = read_user_text(path, "model"), str(path)
    else:
        raise ParameterError(
            f"model={show_value(text_name)} is neither a built-in model nor a .toml file; "
            f"built-in models: {', '.join(list_models())}"
        )
    for key, value in parameters.items():  # the caller's (flags), not the file's
        check_range(key, value, 1, integer=True)
    doc = load_toml(where, "model", MODEL_SCHEMA, text=text)
    with in_file("model", where):
        return model_from_table(doc, **parameters)
