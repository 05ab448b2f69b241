r"""The calibration file: its schema, integrity checks, checksum and reader.

A calibration file (written by ``aimc-pipeline calibrate --out DIR`` as ``DIR/calibration.json``,
read by ``aimc-pipeline plan --calibration FILE``) is strict JSON of format
:data:`~theory.calibration.CALIBRATION_FORMAT` (3), written by :func:`write_calibration`.
:func:`read_calibration` reads it in these steps, and the first that fails is one
:class:`~theory.errors.ParameterError` line ``calibration='FILE': key.path = value ...; valid:
...``:


1. **The limits of every file users give** (:func:`theory.userfiles.load_json`): size, strict
   UTF-8, nesting depth, integer size, no ``NaN`` or infinity.
2. **The format.** A file of an earlier format (1: no checksum, a fingerprint of the constants
   only; 2: four async coefficients, no shares, identifiability or error factors) is refused
   with one line saying to re-run ``aimc-pipeline calibrate`` (its runs are cached, so the
   refit is quick); no unverifiable file is read.
3. **The schema** :data:`CALIBRATION_SCHEMA` (JSON Schema, :func:`theory.userfiles.validate`):
   every key present and of its type (a network calibration: the network, its data and its
   target instead of the oracle's dimension and unknown ``L``, ``Delta``, ``sigma2``); every
   coefficient, interval end and bootstrap draw a finite
   number ``> 0`` (the fit's coefficients are at least ``1e-12``: a zero or negative coefficient
   is an edit); at least one draw per mode and ``resamples >= 1``; the problem complete (its
   eight constants, the start ``S > 0``, the description of the runs: problem, dimension,
   device, region, seed, algorithm (and Tiki-Taka's transfers), update kind, pulse type (``null``
   for the expected update) and write semantics).
4. **Integrity** (:func:`check_integrity`): each interval holds its estimate, ``low <= value <=
   high``; each interval is the one its draws give (the ``ci_level`` central percentile interval,
   inverted CDF, widened to hold the fit: what
   :func:`simulate.verification.calibration_fit.fit_calibration` computes), so draws, intervals and
   estimates cannot be edited apart; a coefficient not identified has its profile upper bound at
   or above its fit; no more draws than ``seeds.resamples``; ``q_min <= q_max``;
   every design point's mode is fitted; the ``fingerprint`` is that of the problem
   (:func:`theory.calibration.problem_fingerprint`).

5. **The checksum** ``checksum`` = :func:`theory.fileio.content_checksum` of the file's content
   (SHA-256 of the canonical JSON of every other key). A mismatch means the file was changed
   after ``calibrate`` wrote it (a coefficient scaled together with its interval and draws, a
   constant changed with a recomputed fingerprint): refused, unless the caller passes
   ``accept_edited=True`` (``plan --accept-edited-calibration``); the calibration is then read
   with :attr:`~theory.calibration.Calibration.edited` set, and the plan reports it in its text
   and its JSON.

Steps 3 and 4 apply to accepted edited files too: an edited file must still be a calibration.
The checksum detects edits and corruption, not forgery: whoever can recompute the SHA-256 can
write a consistent file.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from .calibration import (
    CALIBRATED_ALGORITHMS,
    CALIBRATED_MODES,
    CALIBRATION_FORMAT,
    COEFFICIENTS,
    Calibration,
    ModeFit,
    problem_fingerprint,
)
from .errors import ParameterError
from .fileio import atomic_write, content_checksum
from .networks import NETWORK_PROBLEMS, NETWORK_TARGETS
from .schedules import TRANSFER_SLICES
from .userfiles import STRING, array, file_error, integer, load_json, number, table, validate
from .vocabulary import WRITE_SEMANTICS

__all__ = ["CALIBRATION_SCHEMA", "PARAMETER", "calibration_of", "check_integrity", "from_file_dict",
           "read_calibration", "write_calibration"]

#: the parameter every message names (the plan command shows it as ``--calibration``)
PARAMETER = "calibration"
#: the update kinds and pulse types a calibration's runs can have (:class:`simulate.SimConfig`)
_UPDATES = ("expected", "pulsed")
_PULSE_TYPES = ("deterministic", "stochastic", "mean-count")
#: the earlier formats, refused with a line saying what they lack
_EARLIER = {1: "no checksum; a fingerprint of the constants only",
            2: "four async coefficients; no shares, identifiability or error factors"}


def _coefficients(mode: str) -> dict:
    width = len(COEFFICIENTS[mode])
    return {**array(number(above=0)), "minItems": width, "maxItems": width}


def _per_coefficient(mode: str, item: dict) -> dict:
    width = len(COEFFICIENTS[mode])
    return {**array(item), "minItems": width, "maxItems": width}


def _fit_schema(mode: str) -> dict:
    width = len(COEFFICIENTS[mode])
    return table({
        "mode": {"const": mode}, "names": {"const": list(COEFFICIENTS[mode])},
        "values": _coefficients(mode), "low": _coefficients(mode), "high": _coefficients(mode),
        "draws": array(_coefficients(mode), 1), "residual_rms": number(minimum=0),
        "observations": integer(width),
        "shares": _per_coefficient(mode, number(minimum=0, maximum=1)),
        "identified": _per_coefficient(mode, {"type": "boolean"}),
        "profile_high": _per_coefficient(mode, {"anyOf": [number(above=0), {"type": "null"}]}),
        "error_factor": {"anyOf": [number(minimum=1), {"type": "null"}]},
        "error_scores": integer(0),
    }, ("mode", "names", "values", "low", "high", "draws", "residual_rms", "observations",
        "shares", "identified", "profile_high", "error_factor", "error_scores"))


#: the constants of the problem (symbol names) and their ranges
_CONSTANTS = {
    "L": number(above=0), "L_s": number(above=0), "Delta": number(above=0),
    "sigma2": number(above=0), "theta": number(above=0, below=1), "q_min": number(above=0),
    "q_max": number(above=0), "G_inf": number(minimum=0), "start": number(above=0),
}
#: the description of the runs (:class:`simulate.verification.CalibrationProblem`)
_RUNS = {
    "problem": STRING, "dim": integer(1), "device": STRING,
    "tau": {"type": ["number", "null"], "exclusiveMinimum": 0}, "weight_bound": number(above=0),
    "seed": integer(0), "algorithm": {"enum": list(CALIBRATED_ALGORITHMS)},
    "transfer_every": integer(1), "transfer_slice": {"enum": list(TRANSFER_SLICES)},
    "update": {"enum": list(_UPDATES)},
    "pulse_type": {"enum": [*_PULSE_TYPES, None]}, "write": {"enum": list(WRITE_SEMANTICS)},
}
#: what a network calibration records instead of the oracle's ``dim`` and its unknown ``L``,
#: ``L_s``, ``Delta``, ``sigma2`` (:class:`simulate.verification.NetworkCalibrationProblem`)
_NETWORK = {
    "layers": integer(2), "width": integer(1), "activation": STRING, "data": STRING,
    "target": {"enum": list(NETWORK_TARGETS)}, "target_value": number(above=0),
    "budget": integer(1),
}
_COMMON = ("problem", "device", "tau", "weight_bound", "seed", "algorithm", "update",
           "pulse_type", "write")
_PROBLEM_SCHEMA = {
    **table({**_RUNS, **_CONSTANTS, **_NETWORK}, ("problem",)),
    "allOf": [{"if": {"properties": {"algorithm": {"const": "tiki-taka"}},
                      "required": ["algorithm"]},
               "then": {"required": ["transfer_every", "transfer_slice"]}},
              {"if": {"properties": {"update": {"const": "pulsed"}}, "required": ["update"]},
               "then": {"properties": {"pulse_type": {"enum": list(_PULSE_TYPES)}}},
               "else": {"properties": {"pulse_type": {"const": None}}}},
              {"if": {"properties": {"problem": {"enum": list(NETWORK_PROBLEMS)}}},
               "then": {"required": [*_COMMON, "theta", "q_min", "q_max", "G_inf", "start",
                                     *_NETWORK]},
               "else": {"required": [*_COMMON, "dim", *_CONSTANTS]}}],
}
#: a design point; a network calibration's also says whether its mean curve reached the target,
#: after how many updates (``null``: censored at ``steps``) and whether a seed diverged
_POINT_SCHEMA = table({"mode": {"enum": list(CALIBRATED_MODES)}, "M": integer(1),
                       "B": integer(1), "b": integer(1), "lr": number(above=0),
                       "steps": integer(1), "seeds": integer(1), "reached": {"type": "boolean"},
                       "updates": {"anyOf": [integer(1), {"type": "null"}]},
                       "diverged": {"type": "boolean"}},
                      ("mode", "M", "B", "b", "lr", "steps", "seeds"))
#: the JSON Schema of a calibration file (format 3; the module docstring's step 3)
CALIBRATION_SCHEMA = table({
    "format": {"const": CALIBRATION_FORMAT},
    "checksum": {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"},
    "fingerprint": {"type": "string", "pattern": "^[0-9a-f]{16}$"},
    "problem": _PROBLEM_SCHEMA,
    "fits": {**table({mode: _fit_schema(mode) for mode in CALIBRATED_MODES}),
             "minProperties": 1},
    "design": array(_POINT_SCHEMA, 1),
    "seeds": table({"root": integer(0), "R": array(integer(2), 1), "resamples": integer(1)},
                   ("root", "R", "resamples")),
    "version": STRING, "created_by": {"type": "object"},
    "ci_level": number(above=0, below=1), "prediction_level": number(above=0, below=1),
}, ("format", "checksum", "fingerprint", "problem", "fits", "design", "seeds", "version",
    "created_by", "ci_level", "prediction_level"))


def check_integrity(data: Mapping, path) -> None:
    """The checks of step 4 of the module docstring on a file's value ``data`` (which meets
    :data:`CALIBRATION_SCHEMA`); the first failure is one line naming its key path."""
    level = float(data["ci_level"])
    tail = (1.0 - level) / 2
    for mode, fit in data["fits"].items():
        names = COEFFICIENTS[mode]
        draws = np.asarray(fit["draws"], dtype=float)
        ends = np.quantile(draws, [tail, 1.0 - tail], axis=0, method="inverted_cdf")
        for i, name in enumerate(names):
            value, low, high = fit["values"][i], fit["low"][i], fit["high"][i]
            if not low <= value <= high:
                raise file_error(PARAMETER, path, ("fits", mode, "values", i),
                                 f"= {value!r} ({name}) lies outside its interval [low, high] "
                                 f"= [{low!r}, {high!r}]; valid: low <= value <= high")
            want = (min(float(ends[0, i]), value), max(float(ends[1, i]), value))
            if not (math.isclose(low, want[0], rel_tol=1e-12)
                    and math.isclose(high, want[1], rel_tol=1e-12)):
                raise file_error(
                    PARAMETER, path, ("fits", mode, "low", i),
                    f"= {low!r}, high = {high!r} ({name}) is not the interval its "
                    f"{draws.shape[0]} draws give, [{want[0]!r}, {want[1]!r}] (the "
                    f"{100 * level:g}% percentile interval widened to hold the fit); valid: "
                    "the interval of the draws")
        for i, (value, ok, bound) in enumerate(zip(fit["values"], fit["identified"],
                                                   fit["profile_high"], strict=True)):
            if not ok and bound is not None and bound < value:
                raise file_error(PARAMETER, path, ("fits", mode, "profile_high", i),
                                 f"= {bound!r} ({names[i]}) is below its fit {value!r}; valid: a "
                                 "profile upper bound at or above the fit")
        if len(fit["draws"]) > data["seeds"]["resamples"]:
            raise file_error(PARAMETER, path, ("fits", mode, "draws"),
                             f"= {len(fit['draws'])} draws, more than seeds.resamples = "
                             f"{data['seeds']['resamples']}; valid: at most one per resample")
    problem = data["problem"]
    if problem.get("target") == "accuracy" and not problem["target_value"] < 1:
        raise file_error(PARAMETER, path, ("problem", "target_value"),
                         f"= {problem['target_value']!r} is not an accuracy; valid: (0, 1)")
    if problem["q_min"] > problem["q_max"]:
        raise file_error(PARAMETER, path, ("problem", "q_min"),
                         f"= {problem['q_min']!r} is above problem.q_max = {problem['q_max']!r}; "
                         "valid: q_min <= q_max")
    for i, point in enumerate(data["design"]):
        if point["mode"] not in data["fits"]:
            raise file_error(PARAMETER, path, ("design", i, "mode"),
                             f"= {point['mode']!r} has no fit; fitted: {', '.join(data['fits'])}")
    want = problem_fingerprint(problem)
    if data["fingerprint"] != want:
        raise file_error(PARAMETER, path, ("fingerprint",),
                         f"= {data['fingerprint']!r} is not the fingerprint of the file's problem "
                         f"({want!r}); valid: the problem's fingerprint")


def from_file_dict(data: Mapping, *, edited: bool = False) -> Calibration:
    """The :class:`~theory.calibration.Calibration` of a checked file value ``data``."""
    fits = {mode: ModeFit(mode=mode, values=tuple(raw["values"]), low=tuple(raw["low"]),
                          high=tuple(raw["high"]),
                          draws=tuple(tuple(row) for row in raw["draws"]),
                          residual_rms=float(raw["residual_rms"]),
                          observations=int(raw["observations"]), shares=tuple(raw["shares"]),
                          identified=tuple(raw["identified"]),
                          profile_high=tuple(math.inf if v is None else v
                                             for v in raw["profile_high"]),
                          error_factor=raw["error_factor"],
                          error_scores=int(raw["error_scores"]))
            for mode, raw in data["fits"].items()}
    return Calibration(fits=fits, problem=dict(data["problem"]),
                       fingerprint=str(data["fingerprint"]), design=tuple(data["design"]),
                       seeds=dict(data["seeds"]), version=str(data["version"]),
                       created_by=dict(data["created_by"]), ci_level=float(data["ci_level"]),
                       prediction_level=float(data["prediction_level"]), edited=edited)


def calibration_of(data, path, *, accept_edited: bool = False) -> Calibration:
    """The calibration of the parsed file value ``data`` of ``path``: steps 2-5 of the module
    docstring (``accept_edited``: a checksum mismatch gives ``edited=True``)."""
    if not isinstance(data, dict):
        raise file_error(PARAMETER, path, (), "the file does not hold a JSON object; valid: a "
                         "calibration file of aimc-pipeline calibrate")
    if data.get("format") in _EARLIER:
        raise file_error(PARAMETER, path, ("format",), f"= {data['format']} is the format of an "
                         f"earlier release ({_EARLIER[data['format']]}), which is no longer read; "
                         f"valid: {CALIBRATION_FORMAT} (re-run aimc-pipeline calibrate with the "
                         "flags of its created_by: its runs are cached)")
    validate(data, CALIBRATION_SCHEMA, PARAMETER, path)
    check_integrity(data, path)
    want = content_checksum(data)
    edited = data["checksum"] != want
    if edited and not accept_edited:
        raise file_error(PARAMETER, path, ("checksum",),
                         f"= {data['checksum'][:19]}... does not match the file's content "
                         f"({want[:19]}...): it was edited after aimc-pipeline calibrate wrote it;"
                         " valid: an unedited file (re-run calibrate, or pass "
                         "--accept-edited-calibration to use it anyway)")
    try:
        return from_file_dict(data, edited=edited)
    except ParameterError as error:
        raise file_error(PARAMETER, path, (), str(error)) from None


def read_calibration(path: str | os.PathLike, *, accept_edited: bool = False) -> Calibration:
    """Read and check a calibration file (the module docstring's steps 1-5).

    Parameters
    ----------
    path : path-like
        The file.
    accept_edited : bool
        Read a file whose checksum does not match its content (every other check still applies);
        the result has ``edited=True``.

    Raises
    ------
    ParameterError
        One line ``calibration='PATH': ...`` naming the first failure and its key path.
    """
    try:
        data = load_json(path, PARAMETER)
    except FileNotFoundError as error:
        raise ParameterError(f"{PARAMETER}={str(path)!r} cannot be read: {error.strerror}") \
            from None
    return calibration_of(data, path, accept_edited=accept_edited)


def write_calibration(path: str | os.PathLike, cal: Calibration) -> Path:
    """Write ``cal`` to ``path`` as strict JSON with its checksum (atomically); returns the path.

    The content is checked as :func:`read_calibration` checks a file before anything is written
    (no file is written that ``plan`` would refuse: e.g. a fit of ``resamples=0`` has no draws).
    """
    data = cal.to_dict()
    calibration_of(data, path)
    text = json.dumps(data, indent=1, allow_nan=False) + "\n"
    return atomic_write(path, text.encode())
