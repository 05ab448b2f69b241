r"""Files users give us, read safely: the one reader of calibration JSON and of hardware, config
and model TOML files.

Every file a user names on the command line (``plan --calibration``, ``plan --hardware``,
``plan --model``, ``bounds --config``) is read here, in this order, each step refusing with one
:class:`~theory.errors.ParameterError` line before the next begins:

1. **Size** (:func:`read_user_text`): at most :data:`theory.limits.MAX_FILE_BYTES` (16 MiB). A
   regular file's size is checked before it is read; anything else (``/dev/zero``, a FIFO) is
   read to at most ``limit + 1`` bytes, so no file makes the reader allocate more than the limit.
2. **Encoding**: strict UTF-8 (a leading byte-order mark is allowed); a binary or UTF-16 file is
   one line giving the offset of the first bad byte.
3. **Syntax** (:func:`load_json`, :func:`load_toml`): the parser's own error, with its line.
4. **Nesting** deeper than :data:`theory.limits.MAX_FILE_DEPTH` levels is refused, without a
   ``RecursionError`` whatever the depth (the parsers' recursion is caught, and the parsed
   value's depth is measured without recursion).
5. **Integers** of more than :data:`theory.limits.MAX_INTEGER_DIGITS` digits (and in JSON every
   non-finite number) are refused with their key path, before any arithmetic can overflow on them.
6. **Schema** (:func:`validate`): a declared JSON Schema (Draft 2020-12, :mod:`jsonschema`),
   kept next to each reader (:data:`bounds.planning.hardware.HARDWARE_SCHEMA`, ...). The first
   violation is one line naming the key path.

Messages read ``{parameter}='{path}': {key path} = {value} {what is wrong}; valid: {range}``,
e.g. ``hardware='hw.toml': kinds[3].count = -1 is out of range; valid: integer >= 1``; the
commands show the parameter as the flag the user typed (``--hardware='hw.toml': ...``), and never
as a flag of a key inside the file. Key paths count array entries from 0 (``kinds[0]`` is the
first ``[[kinds]]`` table). :func:`in_file` turns an error a constructor raises for a value of
the file (``weight_bound=5 is out of range``) into the same form (``kinds[1].weight_bound = 5
is out of range``).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import stat
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from .errors import ParameterError, show_value
from .limits import MAX_FILE_BYTES, MAX_FILE_DEPTH, MAX_INTEGER_DIGITS

__all__ = [
    "STRING",
    "array",
    "file_error",
    "in_file",
    "integer",
    "key_path",
    "load_json",
    "load_toml",
    "number",
    "read_user_text",
    "table",
    "validate",
    "where",
]

#: integers at or beyond this magnitude are refused (:data:`MAX_INTEGER_DIGITS` digits)
_INTEGER_BOUND = 10**MAX_INTEGER_DIGITS


def where(parameter: str, path: str | os.PathLike) -> str:
    """``parameter='path'``, the head of every message about the file."""
    return f"{parameter}={str(path)!r}"


def key_path(parts: Sequence) -> str:
    """A key path as a user reads it: ``("kinds", 3, "count")`` -> ``kinds[3].count``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def file_error(parameter: str, path, keys: Sequence = (), message: str = "") -> ParameterError:
    """The one-line error ``parameter='path': key.path message`` (see the module docstring)."""
    at = key_path(keys)
    head = where(parameter, path)
    if not at:
        return ParameterError(f"{head}: {message.removeprefix(': ')}")
    return ParameterError(f"{head}: {at}{'' if message[:1] in (' ', ':') else ' '}{message}")


_NAMED = re.compile(r"^([A-Za-z_][\w.]*)=(.*)$", re.DOTALL)


@contextlib.contextmanager
def in_file(parameter: str, path, keys: Sequence = (), *,
            tables: Mapping[str, Sequence] | None = None) -> Iterator[None]:
    """Report a :class:`ParameterError` raised in the block as one about key ``keys`` of the file.

    A message ``name=value ...`` (a constructor's range check on a value the file gave) becomes
    ``parameter='path': keys.name = value ...`` (``tables`` maps a ``name`` to the key path of
    its table when it is not ``keys``: ``{"read_time_s": ("timing",)}``); any other message is
    prefixed with the file and ``keys``. An error that already names the file passes unchanged.
    """
    try:
        yield
    except ParameterError as error:
        text = " ".join(str(error).split())
        if text.startswith(f"{parameter}="):
            raise
        match = _NAMED.match(text)
        if match:
            name, rest = match.groups()
            at = tuple((tables or {}).get(name.split(".")[0], keys))
            raise file_error(parameter, path, (*at, *name.split(".")), f"= {rest}") from None
        sep = ": " if keys else ""
        raise ParameterError(f"{where(parameter, path)}: {key_path(keys)}{sep}{text}") from None


def read_user_text(path: str | os.PathLike, parameter: str, *,
                   limit: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of the file ``path`` (the value of ``parameter``), at most ``limit`` bytes.

    Raises
    ------
    FileNotFoundError
        The file does not exist (``filename`` is ``path``: the command names the flag).
    ParameterError
        A directory or an unreadable file, a file of more than ``limit`` bytes (checked before
        reading a regular file; anything else is read to at most ``limit + 1`` bytes), or bytes
        that are not UTF-8.
    """
    path = Path(path)
    head = where(parameter, path)
    try:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            if stat.S_ISREG(info.st_mode) and info.st_size > limit:
                raise _too_big(head, info.st_size, limit)
            data = handle.read(limit + 1)
    except FileNotFoundError as error:
        error.filename = str(path) if error.filename is None else error.filename
        raise
    except IsADirectoryError:
        raise ParameterError(f"{head} cannot be read: it is a directory; valid: a file") from None
    except OSError as error:
        raise ParameterError(f"{head} cannot be read: {error.strerror or error}") from None
    if len(data) > limit:
        raise _too_big(head, None, limit)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        hint = " (a UTF-16 file?)" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
        raise ParameterError(
            f"{head} is not UTF-8 text: byte 0x{data[error.start]:02x} at offset {error.start}"
            f"{hint}; valid: a UTF-8 text file") from None
    return text.removeprefix("\ufeff")


def _too_big(head: str, size: int | None, limit: int) -> ParameterError:
    has = "" if size is None else f" (it has {size} bytes)"
    return ParameterError(f"{head} is larger than the limit of {limit} bytes ({limit / 2**20:g} "
                          f"MiB, theory.limits.MAX_FILE_BYTES){has}; valid: a smaller file")


class _HugeInteger:
    """A JSON integer literal of too many digits, kept as text until its key path is known."""

    def __init__(self, text: str):
        self.text = text


def _json_int(text: str):
    return _HugeInteger(text) if len(text.lstrip("-")) > MAX_INTEGER_DIGITS else int(text)


def _deep_error(parameter: str, path) -> ParameterError:
    return file_error(parameter, path, (), f"values nested deeper than the limit of "
                      f"{MAX_FILE_DEPTH} levels (theory.limits.MAX_FILE_DEPTH)")


def load_json(path: str | os.PathLike, parameter: str, schema: Mapping | None = None, *,
              text: str | None = None):
    """The parsed JSON value of the file ``path``: steps 1-6 of the module docstring.

    ``NaN``, ``Infinity`` and numbers beyond the float range are refused with their key path
    (strict JSON has none of them); ``schema``, when given, validates the value (:func:`validate`).
    """
    text = read_user_text(path, parameter) if text is None else text
    try:
        data = json.loads(text, parse_int=_json_int, parse_constant=float)
    except json.JSONDecodeError as error:
        raise file_error(parameter, path, (), f"not JSON (line {error.lineno}, column "
                         f"{error.colno}: {error.msg})") from None
    except RecursionError:
        raise _deep_error(parameter, path) from None
    _check_values(data, parameter, path, finite=True)
    if schema is not None:
        validate(data, schema, parameter, path)
    return data


def load_toml(path: str | os.PathLike, parameter: str, schema: Mapping | None = None, *,
              text: str | None = None) -> dict:
    """The parsed TOML document of the file ``path``: steps 1-6 of the module docstring.

    ``text`` is the file's content if already read (a built-in model description).
    """
    text = read_user_text(path, parameter) if text is None else text
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise file_error(parameter, path, (), f"not valid TOML ({error})") from None
    except RecursionError:  # the parser recurses on nested arrays and inline tables
        raise _deep_error(parameter, path) from None
    except ValueError:  # an integer literal beyond Python's int-from-text limit (4300 digits)
        raise file_error(parameter, path, (), "holds an integer of more than 4300 digits; "
                         f"valid: integers of at most {MAX_INTEGER_DIGITS} digits "
                         "(theory.limits.MAX_INTEGER_DIGITS)") from None
    _check_values(doc, parameter, path, finite=False)
    if schema is not None:
        validate(doc, schema, parameter, path)
    return doc


def _check_values(value, parameter: str, path, *, finite: bool) -> None:
    """Depth, integer size and (``finite``) finiteness of every value, without recursion."""
    stack = [(value, ())]
    while stack:
        item, keys = stack.pop()
        if len(keys) > MAX_FILE_DEPTH:  # a value of the top table is at level 1
            raise _deep_error(parameter, path)
        if isinstance(item, dict):
            stack.extend((v, (*keys, k)) for k, v in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((v, (*keys, i)) for i, v in reversed(list(enumerate(item))))
        elif isinstance(item, _HugeInteger) or (
                isinstance(item, int) and not isinstance(item, bool)
                and not -_INTEGER_BOUND < item < _INTEGER_BOUND):
            text = item.text if isinstance(item, _HugeInteger) else str(item)
            sign, digits = ("-", text[1:]) if text.startswith("-") else ("", text)
            raise file_error(parameter, path, keys, f"= {sign}{digits[:10]}...{digits[-10:]} "
                             f"({len(digits)} digits) is out of range; valid: an integer of at "
                             f"most {MAX_INTEGER_DIGITS} digits")
        elif finite and isinstance(item, float) and not math.isfinite(item):
            raise file_error(parameter, path, keys, f"= {item!r} is not a finite number; valid: "
                             "a finite number (strict JSON)")


# -- schema validation ----------------------------------------------------------------------


def validate(value, schema: Mapping, parameter: str, path) -> None:
    """Check ``value`` against the JSON Schema ``schema``; the first violation is one line.

    Raises
    ------
    ParameterError
        ``parameter='path': key.path = value is out of range; valid: integer >= 1`` and the like
        (unknown keys list the valid ones; a missing key names itself).
    """
    from jsonschema import Draft202012Validator  # imported when a user file is read

    error = next(iter(Draft202012Validator(schema).iter_errors(value)), None)
    if error is None:
        return
    error = _deepest(error)
    keys = list(error.absolute_path)
    raise file_error(parameter, path, keys, _describe_error(error))


def _deepest(error):
    """For a failed ``allOf``/``if``-``then``, the violation inside it (it names the key)."""
    while error.context:
        error = min(error.context, key=lambda e: -len(e.absolute_path))
    return error


def _valid(schema: Mapping) -> str:
    """What a (sub)schema accepts, in words: ``integer >= 1``, ``one of 'a', 'b'``."""
    if "enum" in schema:
        return "one of " + ", ".join(repr(v) for v in schema["enum"])
    if "const" in schema:
        return repr(schema["const"])
    kind = schema.get("type", "value")
    kind = " or ".join(kind) if isinstance(kind, list) else kind
    kind = {"object": "a table", "array": "an array", "string": "a string"}.get(kind, kind)
    parts = [kind]
    low = next(((schema[k], b) for k, b in (("minimum", "["), ("exclusiveMinimum", "("))
                if k in schema), None)
    high = next(((schema[k], b) for k, b in (("maximum", "]"), ("exclusiveMaximum", ")"))
                 if k in schema), None)
    if low and high:
        parts.append(f"in {low[1]}{low[0]:g}, {high[0]:g}{high[1]}")
    elif low:
        parts.append(f"{'>=' if low[1] == '[' else '>'} {low[0]:g}")
    elif high:
        parts.append(f"{'<=' if high[1] == ']' else '<'} {high[0]:g}")
    if "minItems" in schema:
        parts.append(f"of at least {schema['minItems']} entries")
    if "minLength" in schema:
        parts.append("non-empty")
    return " ".join(parts) if len(parts) > 1 or kind != "value" else "see the documentation"


def _describe_error(error) -> str:
    """The message after the key path for one :class:`jsonschema.ValidationError`."""
    schema, value, kind = error.schema, error.instance, error.validator
    if kind == "additionalProperties":
        allowed = list(schema.get("properties", {}))
        unknown = sorted(set(value) - set(allowed))
        shown = ", ".join(repr(k) for k in unknown[:5]) + (
            f", ... ({len(unknown)} unknown keys)" if len(unknown) > 5 else "")
        return f": unknown key{'s' if len(unknown) > 1 else ''} {shown}; valid keys: " + (
            ", ".join(allowed))
    if kind == "required":
        missing = [k for k in schema["required"] if k not in value]
        return f": missing key {missing[0]!r}; required: {', '.join(schema['required'])}"
    shown = show_value(value) if not isinstance(value, dict | list) or len(value) <= 8 else (
        "a table" if isinstance(value, dict) else f"an array of {len(value)}")
    if kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return f"= {shown} is out of range; valid: {_valid(schema)}"
    if kind in ("enum", "const"):
        return f"= {shown} is not valid; valid: {_valid(schema)}"
    if kind == "type":
        return f"= {shown} is {_type_word(value)}; valid: {_valid(schema)}"
    if kind in ("minItems", "maxItems"):
        return f"= {shown} has {len(value)} entries; valid: {_valid(schema)}"
    if kind == "minLength":
        return f"= {shown} is empty; valid: a non-empty string"
    return f"= {shown}: {error.message[:200]}"


def _type_word(value) -> str:
    if isinstance(value, bool):
        return "a boolean"
    return {dict: "a table", list: "an array", str: "a string", int: "an integer",
            float: "a float"}.get(type(value), f"a {type(value).__name__}")


# -- schema builders (the readers declare their schemas with these) ------------------------------


def integer(minimum: int | None = None, maximum: int | None = None) -> dict:
    """The schema of an integer in ``[minimum, maximum]``."""
    out: dict = {"type": "integer"}
    if minimum is not None:
        out["minimum"] = minimum
    if maximum is not None:
        out["maximum"] = maximum
    return out


def number(*, above: float | None = None, minimum: float | None = None,
           below: float | None = None, maximum: float | None = None) -> dict:
    """The schema of a number: ``> above``, ``>= minimum``, ``< below``, ``<= maximum``."""
    out: dict = {"type": "number"}
    for key, value in (("exclusiveMinimum", above), ("minimum", minimum),
                       ("exclusiveMaximum", below), ("maximum", maximum)):
        if value is not None:
            out[key] = value
    return out


def table(properties: Mapping[str, Mapping], required: Sequence[str] = (), *,
          closed: bool = True) -> dict:
    """The schema of a table (JSON object) with these keys; ``closed``: no other key."""
    out: dict = {"type": "object", "properties": dict(properties)}
    if closed:  # an unknown key is reported before a missing one (a misspelt key is both)
        out["additionalProperties"] = False
    if required:
        out["required"] = list(required)
    return out


def array(items: Mapping, min_items: int = 0) -> dict:
    """The schema of an array of ``items``, at least ``min_items`` long."""
    out: dict = {"type": "array", "items": dict(items)}
    if min_items:
        out["minItems"] = min_items
    return out


#: a non-empty string
STRING = {"type": "string", "minLength": 1}
