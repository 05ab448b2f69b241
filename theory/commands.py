"""What every command-line entry point of the package shares (the only argparse in ``theory``).

- :func:`command_main`: a command module defines ``build_parser(parser)`` and ``run(args) -> int``;
  this builds the parser, runs it, and turns the package's user errors (bad parameter, unreachable
  target, divergence) into a one-line message on stderr and exit status 2, never a traceback.
- :func:`add_config_flags` / :func:`config_from_args`: the flags of a frozen config dataclass are
  derived from its fields (type, default, and ``metadata`` ``help``/``flags``/``choices``/
  ``metavar``), so a new field is one edit.
- :class:`HelpFormatter`: ``--help`` states each default once (appended only when the help text
  does not already say it), lists and byte counts written as a user types them.
- :func:`json_document` / :func:`print_json`: the one envelope of every ``--json`` output,
  ``{"schema": "aimc-pipeline/COMMAND/N", "version": PACKAGE_VERSION, NAME: DATA, ...}``.
- :func:`add_alias`: an old spelling of a flag, kept working but hidden from ``--help``.

The conventions every command follows: ``--out DIR`` for the files a command writes (each named
after its content, e.g. ``DIR/calibration.json``, ``DIR/bounds.csv``), checked before any work;
``--json`` for one JSON object on stdout; ``--device NAME`` for a device preset or response
family; ``--hardware FILE.toml`` for a hardware file; placeholders ``M`` (stages), ``B``
(micro-batches), ``b`` (micro-batch size), ``K`` (steps, updates), ``R`` (seeds) and ``T`` (the
Tiki-Taka transfer period only). This module imports neither sympy nor numpy.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
import types
import typing
import warnings
from collections.abc import Callable, Iterable, Sequence
from gettext import gettext

from .errors import DivergenceError, ParameterError, UnreachableTargetError

__all__ = [
    "HelpFormatter", "INTERRUPTED", "add_alias", "add_config_flags", "command_main",
    "config_from_args", "flag_name", "format_default", "json_document", "print_json",
    "schema_name", "user_message",
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

#: the namespace attribute where :func:`add_alias` records the old spellings typed (dest -> flag)
_ALIASES_TYPED = "_aliases_typed"

#: argparse's type-error wording -> the package's (what the value must be)
_TYPE_WORDS = {"invalid int value": "not an integer", "invalid float value": "not a number"}


class _OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (no usage block), ending with a pointer to
    ``--help`` where the valid values and units are explained.

    A flag the command does not have is named before a required flag that is missing (argparse
    checks the required ones first, so ``schedule --no-such-flag`` would only list ``--stages,
    --micro-batches, --mode``).
    """

    _argv: list[str] | None = None  # what parse_args was given, while it parses

    def parse_args(self, args=None, namespace=None):
        self._argv = list(sys.argv[1:] if args is None else args)
        try:
            return super().parse_args(args, namespace)
        finally:
            self._argv = None

    def error(self, message: str):
        required = gettext("the following arguments are required: %s").split("%s")[0]  # argparse's
        if self._argv is not None and message.startswith(required):
            extras = self._unrecognized(self._argv)
            if extras:
                message = f"unrecognized arguments: {' '.join(extras)}"
        for theirs, ours in _TYPE_WORDS.items():
            message = message.replace(theirs, ours)
        self.exit(2, f"{self.prog}: error: {message}; see {self.prog} --help\n")

    def _unrecognized(self, argv: list[str]) -> list[str]:
        """The arguments of ``argv`` no flag takes, parsed with no flag required (every value
        was read before the missing ones were found, so this parse raises nothing)."""
        required = [action for action in self._actions if action.required]
        self._argv = None
        try:
            for action in required:
                action.required = False
            return self.parse_known_args(argv)[1]
        finally:
            for action in required:
                action.required = True


def _flags_by_dest(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Parameter name -> the long flag the user types (``lr`` -> ``--lr``).

    A hidden alias (:func:`add_alias`) never replaces the flag ``--help`` shows for the same
    parameter.
    """
    out, shown = {}, set()
    for action in parser._actions:
        longs = [o for o in action.option_strings if o.startswith("--")]
        if not longs:
            continue
        hidden = action.help == argparse.SUPPRESS
        for key in (action.dest, longs[0][2:]):
            if not hidden or key not in shown:
                out[key] = longs[0]
            if not hidden:
                shown.add(key)
    return out


_NAMED = re.compile(r"^([A-Za-z_][\w.-]*)=")


def user_message(error: BaseException, parser: argparse.ArgumentParser,
                 args: argparse.Namespace) -> str:
    """The one-line message of a user error, naming the flag as the user typed it (an old
    spelling of :func:`add_alias` included).

    A :class:`ParameterError` that starts ``name=value`` names a parameter; when ``name`` is a
    flag's destination, it is shown as the flag (``steps=...`` -> ``--steps=...``). A file-system
    error names the flag whose value is the file.
    """
    text = " ".join(str(error).split())  # one line, whatever the message held
    flags = _flags_by_dest(parser) | getattr(args, _ALIASES_TYPED, {})
    match = _NAMED.match(text)
    if match and match.group(1) in flags:
        text = flags[match.group(1)] + text[len(match.group(1)):]
    filename = getattr(error, "filename", None)
    if isinstance(error, OSError) and filename is not None:
        reason = error.strerror or type(error).__name__
        for dest, value in vars(args).items():
            if dest == _ALIASES_TYPED:
                continue
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
    parser = _OneLineParser(prog=prog, description=description, formatter_class=HelpFormatter)
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
    (extra short flags such as ``("-M",)``), ``choices`` and ``metavar`` (the placeholder in
    ``--help``; without it a field with a one-letter short flag shows that letter, ``-M`` ->
    ``M``, and any other the upper-case name).
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
            metavar = meta.get("metavar") or _short_letter(meta.get("flags", ()))
            if metavar is not None and "choices" not in kwargs:
                kwargs["metavar"] = metavar
        parser.add_argument(flag_name(f.name), *meta.get("flags", ()), **kwargs)


def config_from_args(config_class: type, args: argparse.Namespace, **overrides):
    """The ``config_class`` instance of the parsed flags (fields without a flag keep defaults)."""
    given = {
        f.name: getattr(args, f.name)
        for f in dataclasses.fields(config_class) if f.init and hasattr(args, f.name)
    }
    return config_class(**(given | overrides))


def _short_letter(flags: Sequence[str]) -> str | None:
    """The letter of a one-letter short flag (``("-M",)`` -> ``"M"``), else ``None``."""
    letters = [f[1:] for f in flags if len(f) == 2 and f[0] == "-" and f[1] != "-"]
    return letters[0] if letters else None


#: actions whose default says nothing (a switch is off unless given; help and version)
_NO_DEFAULT_SHOWN = (
    argparse._StoreTrueAction, argparse._StoreFalseAction, argparse._StoreConstAction,
    argparse._AppendConstAction, argparse._CountAction, argparse._HelpAction,
    argparse._VersionAction,
)

#: a help text that states its default (``"defaults"`` of something else does not count)
_SAYS_DEFAULT = re.compile(r"\bdefault\b", re.IGNORECASE)

#: what :class:`argparse.BooleanOptionalAction` appends to its help itself (Python < 3.13)
_BOOLEAN_SUFFIX = " (default: %(default)s)"


def format_default(value, action: argparse.Action | None = None) -> str:
    """A default as a user would type it: ``sync async`` for a list, ``1073741824`` for a float
    that holds a whole number of at least 10^4 (bytes), ``none`` for an empty value, and the
    flag itself for an on/off switch (``--no-transfer-reset``)."""
    if isinstance(action, argparse.BooleanOptionalAction) and isinstance(value, bool):
        positive = next(o for o in action.option_strings if not o.startswith("--no-"))
        return positive if value else "--no-" + positive.lstrip("-")
    if isinstance(value, list | tuple):
        return " ".join(format_default(v) for v in value) if value else "none"
    if isinstance(value, float) and value.is_integer() and 1e4 <= abs(value) < 1e18:
        return str(int(value))
    if value == "":
        return "none"
    return str(value)


class HelpFormatter(argparse.HelpFormatter):
    """``--help`` with each default stated once.

    ``(default: X)`` is appended only when the help text does not mention a default itself
    (the word ``default`` in it), the option has one (not ``None``, not suppressed, not
    required) and it is not a plain switch; ``X`` is :func:`format_default` of it.
    """

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if isinstance(action, argparse.BooleanOptionalAction) and text.endswith(_BOOLEAN_SUFFIX):
            text = text[: -len(_BOOLEAN_SUFFIX)]
        default = action.default
        if (_SAYS_DEFAULT.search(text) or default is None or default is argparse.SUPPRESS
                or action.required or isinstance(action, _NO_DEFAULT_SHOWN)
                or not (action.option_strings or action.nargs in ("?", "*"))):
            return text
        shown = format_default(default, action).replace("%", "%%")
        return f"{text} (default: {shown})" if text else f"(default: {shown})"


class _AliasAction(argparse.Action):
    """Store the value (as the action it aliases would), for :func:`add_alias`."""

    def __init__(self, option_strings, dest, target=None, **kwargs):
        self.target = target
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        self.target(parser, namespace, values, self.target.option_strings[0])
        # messages name the spelling the user typed (user_message)
        typed = dict(getattr(namespace, _ALIASES_TYPED, {}))
        typed[self.dest] = option_string
        setattr(namespace, _ALIASES_TYPED, typed)


def add_alias(container, alias: str, target: argparse.Action) -> argparse.Action:
    """Add ``alias``, an old spelling of the flag of ``target``, hidden from ``--help``.

    Parameters
    ----------
    container : argparse.ArgumentParser or argument group
        Where ``target`` was added (a mutually exclusive group keeps the two exclusive with
        the group's other flags).
    alias : str
        The old flag, e.g. ``"--preset"``.
    target : argparse.Action
        The action ``add_argument`` returned for the flag that replaces it.

    Returns
    -------
    argparse.Action
        The alias' action: it takes the same values (type, choices, ``nargs``) and stores under
        the same ``dest``; messages name the new flag.
    """
    kwargs = dict(dest=target.dest, default=argparse.SUPPRESS, help=argparse.SUPPRESS,
                  action=_AliasAction, target=target, metavar=target.metavar)
    if target.nargs != 0:
        kwargs.update(type=target.type, choices=target.choices, nargs=target.nargs)
    else:
        kwargs["nargs"] = 0
    return container.add_argument(alias, **kwargs)


def schema_name(command: str, format_version: int = 1) -> str:
    """The ``schema`` of a command's JSON output: ``aimc-pipeline/COMMAND/N``."""
    return f"aimc-pipeline/{command}/{format_version}"


def json_document(command: str, format_version: int = 1, **data) -> dict:
    """The one JSON object a command's ``--json`` prints.

    Parameters
    ----------
    command : str
        The command (``simulate``, ``plan``, ...).
    format_version : int
        The version of this command's layout (raised when a key changes meaning or goes).
    **data
        The named parts (``trace=...``, ``rows=...``), as strict JSON values
        (:func:`theory.fileio.strict_json`: non-finite floats become ``null``).

    Returns
    -------
    dict
        ``{"schema": schema_name(command, format_version), "version": package_version(),
        **data}``.
    """
    from .fileio import package_version, strict_json

    if {"schema", "version"} & set(data):
        raise ValueError("'schema' and 'version' are the envelope's keys")
    return {"schema": schema_name(command, format_version), "version": package_version(),
            **strict_json(data)}


def print_json(command: str, *, indent: int | None = None, format_version: int = 1,
               **data) -> None:
    """Print :func:`json_document` as strict JSON (``allow_nan=False``) on stdout."""
    document = json_document(command, format_version, **data)
    print(json.dumps(document, indent=indent, allow_nan=False))
