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
import sys
import types
import typing
from collections.abc import Callable, Iterable, Sequence

from .errors import DivergenceError, ParameterError, UnreachableTargetError

__all__ = ["add_config_flags", "command_main", "config_from_args", "flag_name"]

USER_ERRORS = (
    ParameterError,
    UnreachableTargetError,
    DivergenceError,
    FileNotFoundError,
    IsADirectoryError,
    NotADirectoryError,
    PermissionError,
)


def command_main(
    prog: str,
    description: str,
    build_parser: Callable[[argparse.ArgumentParser], None],
    run: Callable[[argparse.Namespace], int | None],
    argv: Sequence[str] | None = None,
) -> int:
    """Parse ``argv`` for one command and run it; user errors exit 2 with a one-line message."""
    parser = argparse.ArgumentParser(
        prog=prog, description=description, formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    build_parser(parser)
    args = parser.parse_args(argv)
    try:
        return int(run(args) or 0)
    except Exception as error:
        # a user error, or one raised inside a worker and wrapped (e.g. a sweep naming its point)
        if not isinstance(error, USER_ERRORS) and not isinstance(error.__cause__, USER_ERRORS):
            raise
        print(f"{prog}: error: {error}", file=sys.stderr)
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
