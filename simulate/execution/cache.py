r"""A content-addressed on-disk cache of sweep results (JSON + NPZ, no pickle, atomic writes).

A result is stored under the key

.. math::

    k = \operatorname{sha256}\bigl(\operatorname{json}(f, p, v)\bigr)

where ``f`` is the function's qualified name, ``p`` the point (a JSON-serialisable dict) and
``v`` the cache version :func:`cache_version`: the package version plus a fingerprint of the
package's source files, all in canonical JSON (sorted keys, no whitespace). A new version of the
package, or an edited source tree, therefore never reads results computed by other code.

and the entry format :data:`FORMAT`. Each entry is ``DIR/k[:2]/k.json`` (the JSON part of the
result, the point, the version, the SHA-256 of the arrays file and the SHA-256 ``checksum`` of the
canonical JSON of everything else in the record) and, when the result holds numpy arrays,
``DIR/k[:2]/k.npz`` (read with ``allow_pickle=False``). Both are written to a temporary file in the
same directory, flushed, fsynced and moved into place with :func:`os.replace`, the arrays first:
the JSON file is the commit record.

Every read verifies the whole entry: the record's checksum (so an entry edited to another valid
JSON value, a removed key or a NaN written into it is caught), its key, format and version, the
arrays' checksum, and the JSON's structure (nesting too deep for the parser is damage too).
A missing entry is a miss; any other failure is a :class:`CorruptEntryError` (:meth:`ResultCache.
read`), which :meth:`ResultCache.get` reads as a miss and :func:`simulate.execution.sweep.run_sweep`
recomputes and counts, so an interrupted writer or a damaged file at worst costs a recomputation.

:meth:`ResultCache.lock` takes an exclusive :func:`fcntl.flock` on ``DIR/k[:2]/k.lock`` (released by
the kernel when its holder dies), so that two sweeps into one cache compute each point once: the
second waits for the first's point and reads it.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from theory.fileio import atomic_write, package_version, to_json_value

try:  # POSIX; elsewhere the per-key lock is a no-op
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

__all__ = [
    "CACHE_ENV",
    "CorruptEntryError",
    "EntryLock",
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
#: entry format (part of every key); bump when the layout changes. 2: the record's checksum
FORMAT = 2

#: what a damaged entry raises while it is read (RecursionError: pathologically deep JSON)
_READ_ERRORS = (OSError, ValueError, KeyError, TypeError, EOFError, IndexError, RecursionError,
                zipfile.BadZipFile)


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


class CorruptEntryError(ValueError):
    """A cache entry exists but is damaged: unreadable, malformed, edited or mismatched.

    Attributes
    ----------
    path : pathlib.Path
        The entry's JSON record.
    reason : str
        What is wrong with it.
    """

    def __init__(self, path: Path, reason: str):
        self.path, self.reason = Path(path), reason
        super().__init__(f"cache entry {str(path)!r} is corrupt: {reason}")


#: descriptors of the entry locks this process holds (closed in a forked child, see below)
_HELD_LOCKS: set[int] = set()


def _close_inherited_locks() -> None:
    """In a child made by ``fork`` (a process-pool worker): close the copies of the parent's lock
    descriptors, so that an flock is released when its holder releases it, not when the last
    child that inherited it exits."""
    for fd in list(_HELD_LOCKS):
        try:
            os.close(fd)
        except OSError:  # pragma: no cover - already closed
            pass
    _HELD_LOCKS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_inherited_locks)


class EntryLock:
    """An exclusive lock on one cache key (see :meth:`ResultCache.lock`); release it once.

    Usable as a context manager. The kernel releases it when the holding process dies; a forked
    child does not keep it.
    """

    def __init__(self, fd: int | None):
        self._fd = fd
        if fd is not None:
            _HELD_LOCKS.add(fd)

    def release(self) -> None:
        """Release the lock (closing its file); a second call does nothing."""
        fd, self._fd = self._fd, None
        if fd is not None:
            _HELD_LOCKS.discard(fd)
            os.close(fd)

    def __enter__(self) -> EntryLock:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _record_checksum(record: Mapping) -> str:
    """SHA-256 of the canonical JSON of a record without its ``checksum`` field."""
    body = {name: value for name, value in record.items() if name != "checksum"}
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()


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
        """SHA-256 (hex) of the canonical JSON of ``(function, point, version, FORMAT)``."""
        text = canonical_json(
            {"format": FORMAT, "function": function, "point": point, "version": self.version}
        )
        return hashlib.sha256(text.encode()).hexdigest()

    def paths(self, key: str) -> tuple[Path, Path]:
        """The entry's JSON and NPZ paths."""
        folder = self.directory / key[:2]
        return folder / f"{key}.json", folder / f"{key}.npz"

    def read(self, key: str) -> dict | None:
        """The stored result; ``None`` when there is no entry.

        Raises
        ------
        CorruptEntryError
            When the entry exists but does not verify (see the module docstring).
        """
        json_path, npz_path = self.paths(key)
        try:
            text = json_path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as error:
            raise CorruptEntryError(json_path, f"unreadable ({error.strerror or error})") from None
        try:
            record = json.loads(text)
            if not isinstance(record, dict):
                raise CorruptEntryError(json_path, f"a JSON {type(record).__name__}, not a record")
            if record.get("checksum") != _record_checksum(record):
                raise CorruptEntryError(json_path, "its checksum does not match its content")
            for name, want in (("format", FORMAT), ("key", key), ("version", self.version)):
                if record[name] != want:
                    raise CorruptEntryError(json_path, f"{name} {record[name]!r} is not {want!r}")
            arrays: dict[str, np.ndarray] = {}
            if record["arrays_sha256"] is not None:
                blob = npz_path.read_bytes()
                if hashlib.sha256(blob).hexdigest() != record["arrays_sha256"]:
                    raise CorruptEntryError(npz_path, "its checksum does not match its content")
                with np.load(io.BytesIO(blob), allow_pickle=False) as npz:
                    arrays = {name: npz[name] for name in npz.files}
            result = decode_result(record["result"], arrays)
            if not isinstance(result, dict):
                raise CorruptEntryError(json_path, "its result is not a dict")
            return result
        except CorruptEntryError:
            raise
        except _READ_ERRORS as error:
            reason = f"{type(error).__name__}: {' '.join(str(error).split())[:200]}"
            raise CorruptEntryError(json_path, reason) from None

    def get(self, key: str) -> dict | None:
        """The stored result, or ``None`` when the entry is missing, partial or corrupt."""
        try:
            return self.read(key)
        except CorruptEntryError:
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
        record["checksum"] = _record_checksum(record)
        atomic_write(json_path, json.dumps(record, default=_plain).encode())
        return json_path

    def lock(self, key: str, *, block: bool = True) -> EntryLock | None:
        """An exclusive lock on ``key`` (``DIR/k[:2]/k.lock``, :func:`fcntl.flock`).

        With ``block=False``, ``None`` when another holder has it. Where :mod:`fcntl` does not
        exist the lock is a no-op. The lock files stay (empty) next to the entries.
        """
        if fcntl is None:  # pragma: no cover - Windows
            return EntryLock(None)
        path = self.directory / key[:2] / f"{key}.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if block else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            return None
        except BaseException:
            os.close(fd)
            raise
        return EntryLock(fd)

    def entries(self) -> list[Path]:
        """The JSON records present (complete or not), sorted."""
        return sorted(self.directory.glob("??/*.json"))
