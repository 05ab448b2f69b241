"""Files every package writes: the one atomic writer, the one converter to plain JSON values, the
checks that an output can be written (before any work) and the package version outputs carry.

:func:`atomic_write` writes a regular file so that a reader sees the old file or the complete new
one; it never writes over a target that is not a regular file (a device node, a FIFO, a
directory). :func:`check_writable_dir`, :func:`check_output_file` and :func:`check_output_dir`
refuse an unusable output up front, with one line naming the flag; :func:`output_errors` turns an
OS error at write time (a full disk) into one line naming the flag and the path.

:func:`to_json_value` walks dicts, lists, tuples and numpy arrays and returns plain Python: numpy
scalars become Python numbers, tuples and arrays lists, and booleans, integers, floats and strings
their exact built-in type. With ``strict=True`` (:func:`strict_json`) non-finite floats become
``None``, so ``json.dumps(..., allow_nan=False)`` writes strict JSON that every parser reads (NaN
marks a quantity that was not computed, e.g. the test accuracy of an oracle problem); with
``strict=False`` they stay floats, which is what the result cache stores
(:func:`simulate.execution.cache.normalize_result`).

:func:`content_checksum` is the one checksum of a JSON document a file carries about itself (the
calibration file's ``checksum``): SHA-256 of its canonical JSON without that key.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import math
import os
import stat
import sys
import tempfile
import tomllib
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import BinaryIO

from .errors import ParameterError

__all__ = [
    "atomic_write", "check_output_dir", "check_output_file", "check_writable_dir",
    "content_checksum", "output_errors", "package_version", "strict_json", "to_json_value",
]


def to_json_value(value, *, strict: bool = True):
    """``value`` as plain JSON values (see the module docstring); other objects are kept as is.

    numpy is not imported here: a numpy value can only exist once numpy has been imported, so this
    module stays cheap to import (``theory.commands`` uses it).
    """
    if isinstance(value, dict):
        return {k: to_json_value(v, strict=strict) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json_value(v, strict=strict) for v in value]
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, np.ndarray):
        return to_json_value(value.tolist(), strict=strict)
    if np is not None and isinstance(value, np.generic):
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


def content_checksum(document, key: str = "checksum") -> str:
    """``"sha256:<64 hex digits>"`` of the JSON object ``document`` without its key ``key``.

    The hash is over the canonical JSON text: keys sorted, no whitespace, UTF-8, strict (no NaN),
    so it is the same for the value written and the value read back (JSON keeps every float
    exactly), and it changes with any edit of any other key's value.
    """
    body = {k: v for k, v in document.items() if k != key}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


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
    no temporary file behind (a full disk included). The file gets the usual permissions
    (``0o666`` minus the umask). An existing ``path`` that is not a regular file (a device node,
    a FIFO, a socket, a directory; a symbolic link is followed) is never replaced.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    OSError
        ``path`` exists and is not a regular file (``EEXIST``, ``EISDIR`` for a directory), or the
        write failed (``ENOSPC``, ...); ``filename`` is ``path``.
    """
    path = Path(path)
    _refuse_special(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as error:  # name the target, not the temporary file
        raise OSError(error.errno, error.strerror or str(error), str(path)) from error
    try:
        with os.fdopen(fd, "wb") as handle:
            if callable(payload):
                payload(handle)
            else:
                handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600
        _refuse_special(path)  # again: the target may have appeared while the file was written
        os.replace(tmp, path)
    except OSError as error:
        Path(tmp).unlink(missing_ok=True)
        if error.filename is not None and str(error.filename) == str(path):
            raise
        # name the target, not the temporary file (an ENOSPC from write() names none)
        raise OSError(error.errno, error.strerror or str(error), str(path)) from error
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _special_kind(path: Path) -> str | None:
    """What ``path`` is when it exists and is not a regular file (``None`` otherwise)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError:
        return None  # the write itself reports it
    if stat.S_ISREG(mode):
        return None
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a regular file"


def _refuse_special(path: Path) -> None:
    kind = _special_kind(path)
    if kind is not None:
        code = errno.EISDIR if kind == "a directory" else errno.EEXIST
        raise OSError(code, f"exists and is {kind}, not a regular file", str(path))


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


def check_output_file(path: str | os.PathLike, parameter: str) -> Path:
    """Check, before any work, that the file ``path`` can be written as a regular file.

    Refused: an existing ``path`` that is not a regular file (a device node, a FIFO, a directory;
    nothing is ever written over one), and a folder that cannot hold it (missing parent chain
    under a file, not a directory, not writable; :func:`check_writable_dir`).

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    ParameterError
        ``"{parameter}='PATH' cannot be used; valid: a regular file in a writable directory (it
        is a FIFO)"`` and the like.
    """
    path = Path(path)
    kind = _special_kind(path)
    if kind is not None:
        raise ParameterError(f"{parameter}={str(path)!r} cannot be used; valid: a regular file in "
                             f"a writable directory (it is {kind})")
    check_writable_dir(path.parent, parameter)
    return path


def check_output_dir(directory: str | os.PathLike, parameter: str,
                     names: Iterable[str] = ()) -> Path:
    """Check, before any work, that ``directory`` can hold the files ``names``.

    :func:`check_writable_dir` for the directory, then every ``directory / name`` that exists must
    be a regular file (a device node, FIFO or directory of that name is refused).

    Returns
    -------
    Path
        ``directory``.

    Raises
    ------
    ParameterError
        ``"{parameter}='DIR' cannot be used: NAME in it is a FIFO; valid: ..."``.
    """
    directory = check_writable_dir(directory, parameter)
    for name in names:
        kind = _special_kind(directory / name)
        if kind is not None:
            raise ParameterError(
                f"{parameter}={str(directory)!r} cannot be used: {name} in it is {kind}; valid: "
                "a directory where that file can be written as a regular file")
    return directory


@contextlib.contextmanager
def output_errors(parameter: str) -> Iterator[None]:
    """Turn an :class:`OSError` while writing an output into one line naming the flag and path.

    For the writes at the end of a command (a full disk, a folder removed meanwhile): the
    :class:`ParameterError` reads ``"{parameter}: cannot write 'PATH': no space left on
    device"``. :func:`atomic_write` has already removed its temporary file, so no partial file
    is left.

    Raises
    ------
    ParameterError
        From any :class:`OSError` raised in the block.
    """
    try:
        yield
    except OSError as error:
        where = f" {str(error.filename)!r}" if error.filename is not None else ""
        reason = (error.strerror or type(error).__name__).lower()
        raise ParameterError(f"{parameter}: cannot write{where}: {reason}") from None


@cache
def package_version() -> str:
    """The installed version of ``aimc-pipeline``, else the version in the source tree's pyproject.

    Returns ``"0+unknown"`` when neither is available. Every ``--json`` output carries it
    (:func:`theory.commands.json_document`), and so does every cache key.
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
