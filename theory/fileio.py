"""Files every package writes: the one atomic writer, the one converter to plain JSON values, and
the one check that an output directory can be written (before any work).

:func:`atomic_write` writes a file so that a reader sees the old file or the complete new one.

:func:`to_json_value` walks dicts, lists, tuples and numpy arrays and returns plain Python: numpy
scalars become Python numbers, tuples and arrays lists, and booleans, integers, floats and strings
their exact built-in type. With ``strict=True`` (:func:`strict_json`) non-finite floats become
``None``, so ``json.dumps(..., allow_nan=False)`` writes strict JSON that every parser reads (NaN
marks a quantity that was not computed, e.g. the test accuracy of an oracle problem); with
``strict=False`` they stay floats, which is what the result cache stores
(:func:`simulate.execution.cache.normalize_result`).
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import numpy as np

from .errors import ParameterError

__all__ = ["atomic_write", "check_writable_dir", "strict_json", "to_json_value"]


def to_json_value(value, *, strict: bool = True):
    """``value`` as plain JSON values (see the module docstring); other objects are kept as is."""
    if isinstance(value, dict):
        return {k: to_json_value(v, strict=strict) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json_value(v, strict=strict) for v in value]
    if isinstance(value, np.ndarray):
        return to_json_value(value.tolist(), strict=strict)
    if isinstance(value, np.generic):
        return to_json_value(value.item(), strict=strict)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return None if strict and not math.isfinite(value) else float(value)
    if isinstance(value, str):
        return str(value)
    return value


def strict_json(value):
    """``value`` with numpy scalars and arrays as Python objects and non-finite floats as ``None``.

    NaN marks a quantity that was not computed (e.g. the test accuracy of an oracle problem);
    ``null`` keeps the output strict JSON, which every parser reads.
    """
    return to_json_value(value, strict=True)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(path: str | os.PathLike, payload: bytes | Callable[[BinaryIO], None]) -> Path:
    """Write a file atomically: to a temporary file next to it, fsynced, then :func:`os.replace`.

    Parameters
    ----------
    path : path-like
        The file to write (its directory must exist).
    payload : bytes or callable
        The bytes to write, or ``write(handle)`` called with the binary temporary file.

    A reader sees the old file or the complete new one, never a partial one; an exception leaves
    no temporary file behind. The file gets the usual permissions (``0o666`` minus the umask).

    Returns
    -------
    Path
        ``path``.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            if callable(payload):
                payload(handle)
            else:
                handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def check_writable_dir(directory: str | os.PathLike, parameter: str = "cache") -> Path:
    """Check that ``directory`` is, or can be created as, a writable directory.

    Called before any work (for the cache directory and every command's output directory), so
    that an unusable directory (an existing file, a path under a file, a read-only file system,
    ``/proc``) is a one-line error up front rather than a failure after the first point or at the
    end of the run. Nothing is left behind: the directory is not created
    (the first write does that); a temporary file is made and removed in it, or in its nearest
    existing ancestor.

    Returns
    -------
    Path
        ``directory``.

    Raises
    ------
    ParameterError
        ``"{parameter}='DIR' cannot be used; valid: a writable directory (reason)"``.
    """
    path = Path(directory)
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        reason = "not a directory" if existing == path else f"{str(existing)!r} is not a directory"
    else:
        try:
            with tempfile.TemporaryFile(dir=existing, prefix=".write-check."):
                reason = None
        except OSError as error:
            reason = f"no file can be created in {str(existing)!r}: " + (
                error.strerror or str(error)).lower()
    if reason is not None:
        raise ParameterError(
            f"{parameter}={str(path)!r} cannot be used; valid: a writable directory ({reason})"
        )
    return path
