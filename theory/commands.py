"""What every command-line entry point of the package shares (the only argparse in ``theory``).

- :func:`command_main`: a command module defines ``build_parser(parser)`` and ``run(args) -> int``;
  this builds the parser, runs it, and turns the package's user errors (bad parameter, unreachable
  target, divergence) into a one-line message on stderr and exit status 2, never a traceback.
- :func:`add_config_flags` / :func:`config_from_args`: the flags of a frozen config dataclass are
  derived from its fields (type, default, and ``metadata`` ``help``/``flags``/``choices``), so a
  new field is one edit.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
import types
import typing
import warnings
from collections.abc import Callable, Iterable, Sequence

from .errors import DivergenceError, ParameterError, UnreachableTargetError

__all__ = [
    "INTERRUPTED", "add_config_flags", "command_main", "config_from_args", "flag_name",
    "user_message",
]

USER_ERRORS = (
    ParameterError,
    UnreachableTargetError,
    DivergenceError,
    FileNotFoundError,
    FileExistsError,
    IsADirectoryError,
    NotADirectoryError,
    PermissionError,
)

#: exit status of a command stopped by Ctrl-C (128 + SIGINT), as shells report it
INTERRUPTED = 130

#: argparse's type-error wording -> the package's (what the value must be)
_TYPE_WORDS = {"invalid int value": "not an integer", "invalid float value": "not a number"}


class _OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (no usage block), ending with a pointer to
    ``--help`` where the valid values and units are explained."""

    def error(self, message: str):
        for theirs, ours in _TYPE_WORDS.items():
            message = message.replace(theirs, ours)
        self.exit(2, f"{self.prog}: error: {message}; see {self.prog} --help\n")


def _flags_by_dest(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Parameter name -> the long flag the user types (``lr`` -> ``--lr``)."""
    out = {}
    for action in parser._actions:
        longs = [o for o in action.option_strings if o.startswith("--")]
        if longs:
            out[action.dest] = longs[0]
            out[longs[0][2:]] = longs[0]
    return out


_NAMED = re.compile(r"^([A-Za-z_][\w.-]*)=")


def user_message(error: BaseException, parser: argparse.ArgumentParser,
                 args: argparse.Namespace) -> str:
    """The one-line message of a user error, naming the flag as the user typed it.

    A :class:`ParameterError` that starts ``name=value`` names a parameter; when ``name`` is a
    flag's destination, it is shown as the flag (``steps=...`` -> ``--steps=...``). A file-system
    error names the flag whose value is the file.
    """
    text = " ".join(str(error).split())  # one line, whatever the message held
    flags = _flags_by_dest(parser)
    match = _NAMED.match(text)
    if match and match.group(1) in flags:
        text = flags[match.group(1)] + text[len(match.group(1)):]
    filename = getattr(error, "filename", None)
    if isinstance(error, OSError) and filename is not None:
        reason = error.strerror or type(error).__name__
        for dest, value in vars(args).items():
            values = value if isinstance(value, (list, tuple)) else [value]
            if any(v is not None and str(v) == str(filename) for v in values):
                text = f"{flags.get(dest, dest)}={str(filename)!r}: {reason.lower()}"
                break
        else:
            text = f"{str(filename)!r}: {reason.lower()}"
    return text


def command_main(
    prog: str,
    description: str,
    build_parser: Callable[[argparse.ArgumentParser], None],
    run: Callable[[argparse.Namespace], int | None],
    argv: Sequence[str] | None = None,
) -> int:
    """Parse ``argv`` for one command and run it.

    User errors (a bad parameter, an unreachable target, a divergence, a file problem) exit 2 with
    one line on stderr that names the flag; Ctrl-C exits 130 with one line (finished sweep points
    stay cached); numerical warnings of numpy are not shown (results are checked instead); any
    other exception is a bug and keeps its traceback.
    """
    parser = _OneLineParser(
        prog=prog, description=description, formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    build_parser(parser)
    args = parser.parse_args(argv)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return int(run(args) or 0)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted (finished points stay cached)", file=sys.stderr)
        return INTERRUPTED
    except Exception as error:
        # a user error, or one raised inside a worker and wrapped (e.g. a sweep naming its point)
        if not isinstance(error, USER_ERRORS) and not isinstance(error.__cause__, USER_ERRORS):
            raise
        print(f"{prog}: error: {user_message(error, parser, args)}", file=sys.stderr)
        return 2


def flag_name(field_name: str) -> str:
    """The long flag of a config field: ``micro_batch_size`` -> ``--micro-batch-size``."""
    return "--" + field_name.replace("_", "-")


def _scalar_type(annotation) -> tuple[type, bool]:
    """``(type, optional)`` of a field annotation such as ``int``, ``float | None``, ``str``."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and type(None) in args:
        (inner,) = (a for a in args if a is not type(None))
        return inner, True
    return annotation, False


def add_config_flags(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, config_class: type,
    *, exclude: Iterable[str] = (), defaults=None,
) -> None:
    """Add one flag per field of the dataclass ``config_class`` (its metadata says how).

    Each field gives ``--field-name`` with the field's type and default (``defaults``, an instance,
    overrides them); ``field.metadata`` may hold ``help`` (required: units and range), ``flags``
    (extra short flags such as ``("-M",)``) and ``choices``.
    """
    hints = typing.get_type_hints(config_class)
    defaults = defaults if defaults is not None else config_class()
    skip = set(exclude)
    for f in dataclasses.fields(config_class):
        if f.name in skip or not f.init:
            continue
        kind, _ = _scalar_type(hints[f.name])
        meta = f.metadata
        kwargs = dict(default=getattr(defaults, f.name), help=meta["help"], dest=f.name)
        if "choices" in meta:
            kwargs["choices"] = tuple(meta["choices"])
        if kind is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        else:
            kwargs["type"] = kind
        parser.add_argument(flag_name(f.name), *meta.get("flags", ()), **kwargs)


def config_from_args(config_class: type, args: argparse.Namespace, **overrides):
    """The ``config_class`` instance of the parsed flags (fields without a flag keep defaults)."""
    given = {
        f.name: getattr(args, f.name)
        for f in dataclasses.fields(config_class) if f.init and hasattr(args, f.name)
    }
    return config_class(**(given | overrides))
