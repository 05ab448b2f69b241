"""Resource limits: what any entry point refuses before it allocates or loops (the one place).

Every command and every public constructor estimates the memory and work an input asks for
*before* starting, and refuses beyond these documented limits with a one-line
:class:`~theory.errors.ParameterError` that names the parameter (the README's reliability section
lists them). The limits are far above any run a 24 GiB, 2-core machine finishes in a day, and far
below what would exhaust it; where the work can be streamed instead (a schedule summary from the
closed forms), it is streamed and no limit applies.

>>> check_size("steps", 10**12, need=10**12, limit=MAX_UPDATES, what="updates")
Traceback (most recent call last):
...
theory.errors.ParameterError: steps=1000000000000 asks for 1e+12 updates, more than the limit 1e+09
"""

from __future__ import annotations

from .errors import ParameterError, show_value

__all__ = [
    "MAX_ARRAY_BYTES",
    "MAX_BYTES_PER_ACTIVATION",
    "MAX_COUNT",
    "MAX_DEVICE_PULSES",
    "MAX_FILE_BYTES",
    "MAX_FILE_DEPTH",
    "MAX_GANTT_CELLS",
    "MAX_GRID_POINTS",
    "MAX_INTEGER_DIGITS",
    "MAX_JOBS",
    "MAX_LAYER_SIZE",
    "MAX_MODEL_LAYERS",
    "MAX_PLAN_CANDIDATES",
    "MAX_PLAN_DP_CELLS",
    "MAX_PULSES_PER_UPDATE",
    "MAX_RESAMPLES",
    "MAX_SEQUENTIAL_WRITES",
    "MAX_TIMELINE_CELLS",
    "MAX_TOML_DEPTH",
    "MAX_TRANSFER_PERIOD",
    "MAX_UPDATES",
    "check_size",
]

#: bytes of any one array a run may allocate (ensemble state, trace, weight versions, batches)
MAX_ARRAY_BYTES = 2 * 2**30
#: updates (iterations) of one simulated run
MAX_UPDATES = 10**9
#: cells (stages x cycles) of a discrete-event timeline that is built event by event
MAX_TIMELINE_CELLS = 2 * 10**7
#: pulses one analog update may fire on one device (|dW| / dw_min); beyond, lower the step
MAX_PULSES_PER_UPDATE = 10**5
#: device-bits of one ``pulse-response`` run (devices x bit length x (w0, delta) cases): the work
#: of its bit trains and of its pulse loop (each case fires at most BL vectorised pulses)
MAX_DEVICE_PULSES = 10**10
#: points of a planner grid (micro-batch counts x micro-batch sizes x stage counts)
MAX_GRID_POINTS = 5 * 10**7
#: layouts the mode search of ``plan --compare-modes`` / ``--hardware`` evaluates (about 1.5 ms
#: each here: under a minute), counted before it starts: kind subsets (2^kinds) x micro-batch sizes
#: x stage counts, and x replica counts for dp and hybrid
#: (``bounds.planning.search_size.search_cost``)
MAX_PLAN_CANDIDATES = 3 * 10**4
#: cells of the kinds DPs of that search (every subset of the kinds, every micro-batch size)
MAX_PLAN_DP_CELLS = 10**10
#: bootstrap resamples of a calibration (each refits every mode: 15-50 ms here, so minutes)
MAX_RESAMPLES = 10**4
#: samples x updates of a pulsed run whose writes are sequential, one per sample
#: (``--update pulsed --write per-sample``; seeds and replicas are vectorised: about 40 us per
#: write here, so minutes)
MAX_SEQUENTIAL_WRITES = 10**7
#: updates between two Tiki-Taka transfers (``--transfer-every``; beyond any run's updates)
MAX_TRANSFER_PERIOD = 10**9
#: local worker processes of a sweep (``--jobs``; each about 150 MB)
MAX_JOBS = 1024
#: layers of a model description after its blocks are repeated
MAX_MODEL_LAYERS = 10**6
#: nesting depth of a value in a user's file (TOML or JSON; :mod:`theory.userfiles`)
MAX_FILE_DEPTH = 32
#: the same limit under its first name (TOML files)
MAX_TOML_DEPTH = MAX_FILE_DEPTH
#: bytes of a file a user gives (calibration, hardware, config, model; :mod:`theory.userfiles`)
MAX_FILE_BYTES = 16 * 2**20
#: digits of an integer in a user's file (beyond, refused before any arithmetic on it)
MAX_INTEGER_DIGITS = 30
#: rows, columns or MVMs per sample of one model layer (int32)
MAX_LAYER_SIZE = 2**31 - 1
#: bytes of one stored activation value
MAX_BYTES_PER_ACTIVATION = 1024
#: cells (stages x cycles) of a schedule drawn as a Gantt chart (built event by event: about 4 s
#: and 100 MB here); beyond, the schedule summary comes from the closed forms
MAX_GANTT_CELLS = 10**5
#: largest count (samples, cycles, iterations) an int64 holds; beyond: refused, never wrapped
MAX_COUNT = 2**63 - 1


def check_size(name: str, value, *, need: float, limit: float, what: str,
               hint: str = "", at_least: bool = False) -> None:
    """Refuse ``value`` of parameter ``name`` if the work or memory it needs exceeds ``limit``.

    Parameters
    ----------
    name : str
        The parameter (a config field; the commands show it as the flag the user typed).
    value : object
        Its value, shown in the message.
    need : float
        What the input asks for, in the unit ``what`` (an estimate made before any work).
    limit : float
        The documented limit, in the same unit.
    what : str
        The unit, e.g. ``"bytes of ensemble state"`` or ``"updates"``.
    hint : str, optional
        What to do instead (appended after a semicolon).
    at_least : bool, optional
        ``need`` is a lower bound (counted until it passed the limit): "asks for at least".

    Raises
    ------
    ParameterError
        ``"{name}={value} asks for {need} {what}, more than the limit {limit}; {hint}"``.
    """
    if need > limit:
        tail = f"; {hint}" if hint else ""
        raise ParameterError(
            f"{name}={show_value(value)} asks for {'at least ' * at_least}{_amount(need)} {what}, "
            f"more than the limit "
            f"{limit:.3g}{tail}"
        )


def _amount(x) -> str:
    """``x`` with 3 significant digits; an integer beyond the float range as ``~1e+400``."""
    try:
        return f"{x:.3g}"
    except OverflowError:  # a Python int too large for a float
        return f"~1e+{len(str(abs(int(x)))) - 1}"
