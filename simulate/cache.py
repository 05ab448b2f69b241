r"""A content-addressed on-disk cache of sweep results (JSON + NPZ, no pickle, atomic writes).

A result is stored under the key

.. math::

    k = \operatorname{sha256}\bigl(\operatorname{json}(f, p, v)\bigr)

where ``f`` is the function's qualified name, ``p`` the point (a JSON-serialisable dict) and
``v`` the cache version :func:`cache_version`: the package version plus a fingerprint of the
package's source files, all in canonical JSON (sorted keys, no whitespace). A new version of the
package, or an edited source tree, therefore never reads results computed by other code.

Each entry is ``DIR/k[:2]/k.json`` (the JSON part of the result, the point, the version and the
SHA-256 of the arrays file) and, when the result holds numpy arrays, ``DIR/k[:2]/k.npz`` (read with
``allow_pickle=False``). Both are written to a temporary file in the same directory, flushed,
fsynced and moved into place with :func:`os.replace`, the arrays first: the JSON file is the commit
record. A missing, truncated, corrupt or mismatched entry reads as a miss, so an interrupted writer
at worst costs a recomputation.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tomllib
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from theory.fileio import atomic_write, to_json_value

__all__ = [
    "CACHE_ENV",
    "ResultCache",
    "cache_version",
    "canonical_json",
    "decode_result",
    "default_cache_dir",
    "encode_result",
    "function_name",
    "normalize_result",
    "package_version",
    "source_fingerprint",
]

#: environment variable overriding the default cache directory
CACHE_ENV = "AIMC_PIPELINE_CACHE"
#: the default cache directory, relative to the current working directory
DEFAULT_DIR = Path(".cache") / "aimc-pipeline"
#: the marker of an array placeholder in the JSON part of a result
ARRAY_TAG = "__ndarray__"
#: entry format; bump when the layout changes
FORMAT = 1

_READ_ERRORS = (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile)


@cache
def package_version() -> str:
    """The installed version of ``aimc-pipeline``, else the version in the source tree's pyproject.

    Returns ``"0+unknown"`` when neither is available.
    """
    try:
        return metadata.version("aimc-pipeline")
    except metadata.PackageNotFoundError:
        pass
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        return str(tomllib.loads(pyproject.read_text())["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "0+unknown"


@cache
def source_fingerprint() -> str:
    """SHA-256 (first 12 hex digits) of the package's ``.py`` and ``.toml`` source files.

    Covers ``theory``, ``bounds``, ``simulate`` and ``paper_figures`` (path and bytes of each file,
    in sorted order), so cached results are invalidated by any change of the code that made them.
    """
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for package in ("theory", "bounds", "simulate", "paper_figures"):
        for path in sorted((root / package).rglob("*")):
            if path.suffix in (".py", ".toml") and path.is_file():
                digest.update(path.relative_to(root).as_posix().encode() + b"\0")
                digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def cache_version() -> str:
    """The version in every cache key: ``{package_version()}+src.{source_fingerprint()}``."""
    return f"{package_version()}+src.{source_fingerprint()}"


def default_cache_dir() -> Path:
    """``$AIMC_PIPELINE_CACHE`` when set and non-empty, else ``.cache/aimc-pipeline`` (relative)."""
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_DIR)


def function_name(fn) -> str:
    """``module.qualname`` of a top-level function that worker processes can import.

    Raises
    ------
    TypeError
        For lambdas, nested functions, ``functools.partial`` objects and other callables without
        a stable importable name (their results could not be keyed, nor run in another process).
    """
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None)
    if not callable(fn) or not module or not qualname or "<" in qualname:
        raise TypeError(
            f"fn={fn!r} is not a top-level function; sweeps need a named, importable function "
            "(defined at module level, not a lambda, closure or partial)"
        )
    return f"{module}.{qualname}"


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")


def canonical_json(value) -> str:
    """Canonical JSON: sorted keys, no whitespace, numpy scalars as Python numbers."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=_plain)


def encode_result(value: Mapping) -> tuple[dict, dict[str, np.ndarray]]:
    """Split a result into its JSON part and its arrays.

    Every numpy array (at any depth) is replaced by ``{"__ndarray__": "aN"}`` and returned in the
    arrays dict; numpy scalars become Python numbers and tuples become lists.

    Raises
    ------
    TypeError
        If the result is not a dict with string keys, holds an object array, a value JSON cannot
        represent, or a dict with the reserved key ``"__ndarray__"``.
    """
    if not isinstance(value, Mapping):
        raise TypeError(f"a sweep function must return a dict, got {type(value).__name__}")
    arrays: dict[str, np.ndarray] = {}

    def walk(item, where: str):
        if isinstance(item, np.ndarray):
            if item.dtype.hasobject:
                raise TypeError(f"result{where} is an object array; store numbers or strings")
            name = f"a{len(arrays)}"
            arrays[name] = item
            return {ARRAY_TAG: name}
        if isinstance(item, np.generic):
            return item.item()
        if isinstance(item, Mapping):
            if ARRAY_TAG in item:
                raise TypeError(f"result{where} uses the reserved key {ARRAY_TAG!r}")
            out = {}
            for key, sub in item.items():
                if not isinstance(key, str):
                    raise TypeError(f"result{where} has a non-string key {key!r}")
                out[key] = walk(sub, f"{where}[{key!r}]")
            return out
        if isinstance(item, list | tuple):
            return [walk(sub, f"{where}[{i}]") for i, sub in enumerate(item)]
        if item is None or isinstance(item, bool | int | float | str):
            return item
        raise TypeError(f"result{where} of type {type(item).__name__} is not JSON-serialisable")

    return walk(value, ""), arrays


def decode_result(data, arrays: Mapping[str, np.ndarray]):
    """Inverse of :func:`encode_result`: put the arrays back in place of their placeholders."""
    if isinstance(data, dict):
        if set(data) == {ARRAY_TAG}:
            return arrays[data[ARRAY_TAG]]
        return {key: decode_result(sub, arrays) for key, sub in data.items()}
    if isinstance(data, list):
        return [decode_result(sub, arrays) for sub in data]
    return data


def normalize_result(value: Mapping) -> dict:
    """The result exactly as the cache would return it (lists for tuples, Python scalars).

    A freshly computed result and a cached one are then equal in type and value.
    """
    data, arrays = encode_result(value)
    return decode_result(to_json_value(data, strict=False), arrays)


@dataclass(frozen=True)
class ResultCache:
    """Sweep results on disk, keyed by function, point and cache version (package + source).

    Parameters
    ----------
    directory : path-like, optional
        Where entries live (created on first write). Default :func:`default_cache_dir`.
    version : str, optional
        The version that is part of every key. Default :func:`cache_version`.

    Examples
    --------
    >>> store = ResultCache(tmp_dir)                                     # doctest: +SKIP
    >>> key = store.key("mod.fn", {"seed": 1})                           # doctest: +SKIP
    >>> store.put(key, {"x": np.arange(3)}, function="mod.fn", point={"seed": 1})  # doctest: +SKIP
    >>> store.get(key)                                                   # doctest: +SKIP
    {'x': array([0, 1, 2])}
    """

    directory: Path = field(default_factory=default_cache_dir)
    version: str = field(default_factory=cache_version)

    def __post_init__(self):
        object.__setattr__(self, "directory", Path(self.directory))
        if not isinstance(self.version, str) or not self.version:
            raise TypeError(f"version={self.version!r} must be a non-empty string")

    def key(self, function: str, point: Mapping) -> str:
        """SHA-256 (hex) of the canonical JSON of ``(function, point, version)``."""
        text = canonical_json({"function": function, "point": point, "version": self.version})
        return hashlib.sha256(text.encode()).hexdigest()

    def paths(self, key: str) -> tuple[Path, Path]:
        """The entry's JSON and NPZ paths."""
        folder = self.directory / key[:2]
        return folder / f"{key}.json", folder / f"{key}.npz"

    def get(self, key: str) -> dict | None:
        """The stored result, or ``None`` when the entry is missing, partial or corrupt."""
        json_path, npz_path = self.paths(key)
        try:
            record = json.loads(json_path.read_text())
            if record["format"] != FORMAT or record["key"] != key:
                return None
            arrays: dict[str, np.ndarray] = {}
            if record["arrays_sha256"] is not None:
                blob = npz_path.read_bytes()
                if hashlib.sha256(blob).hexdigest() != record["arrays_sha256"]:
                    return None
                with np.load(io.BytesIO(blob), allow_pickle=False) as npz:
                    arrays = {name: npz[name] for name in npz.files}
            return decode_result(record["result"], arrays)
        except _READ_ERRORS:
            return None

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def put(self, key: str, result: Mapping, *, function: str, point: Mapping) -> Path:
        """Store ``result`` atomically (arrays first, then the JSON record); return the record."""
        data, arrays = encode_result(result)
        json_path, npz_path = self.paths(key)
        json_path.parent.mkdir(parents=True, exist_ok=True)
        digest = None
        if arrays:
            buffer = io.BytesIO()
            np.savez(buffer, **arrays)
            blob = buffer.getvalue()
            digest = hashlib.sha256(blob).hexdigest()
            atomic_write(npz_path, blob)
        record: dict[str, Any] = {
            "format": FORMAT,
            "key": key,
            "function": function,
            "version": self.version,
            "point": point,
            "arrays_sha256": digest,
            "result": data,
        }
        atomic_write(json_path, json.dumps(record, default=_plain).encode())
        return json_path

    def entries(self) -> list[Path]:
        """The JSON records present (complete or not), sorted."""
        return sorted(self.directory.glob("??/*.json"))
