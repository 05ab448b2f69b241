r"""The digits networks' names and layer shapes, the one place both the simulator and the planner
read them (no sympy, no numpy).

``digits-mlp`` is ``layers - 1`` dense layers (the first maps the ``features`` pixels to
``width``) and an output layer to the ``classes``; ``digits-resmlp`` is a dense input
projection, ``layers - 2`` residual blocks :math:`h + \phi(hW + c)` of ``width x width`` and an
output layer. :mod:`simulate.problems.network` builds and trains them
(:meth:`~simulate.problems.network.Network.build` cuts :func:`network_layers` into stages), and
:mod:`bounds.planning.models` makes the planner's built-in models ``digits-mlp`` and
``digits-resmlp`` from the same shapes (one crossbar matrix per layer, one MVM per sample; the
biases are digital and not counted).

>>> [(kind, rows, cols) for kind, rows, cols in network_layers("digits-resmlp", layers=4)]
[('dense', 64, 32), ('residual', 32, 32), ('residual', 32, 32), ('output', 32, 10)]
"""

from __future__ import annotations

from .errors import ParameterError, check_range

__all__ = [
    "DIGITS_CLASSES",
    "DIGITS_FEATURES",
    "DIGITS_TRAIN",
    "NETWORK_DESCRIPTIONS",
    "NETWORK_LAYERS",
    "NETWORK_PROBLEMS",
    "NETWORK_TARGETS",
    "NETWORK_WIDTH",
    "network_layers",
    "target_level",
]

#: the digits training split (images, features, classes)
DIGITS_TRAIN, DIGITS_FEATURES, DIGITS_CLASSES = 1437, 64, 10
#: the default network: weight layers and hidden width
NETWORK_LAYERS, NETWORK_WIDTH = 16, 32
#: the digits networks trained stage by stage (:mod:`simulate.problems.network`)
NETWORK_PROBLEMS = ("digits-mlp", "digits-resmlp")
#: what each network is, for listings
NETWORK_DESCRIPTIONS = {"digits-mlp": "digits MLP", "digits-resmlp": "digits residual MLP"}


def network_layers(problem: str, layers: int = NETWORK_LAYERS, width: int = NETWORK_WIDTH,
                   n_in: int = DIGITS_FEATURES, n_out: int = DIGITS_CLASSES
                   ) -> tuple[tuple[str, int, int], ...]:
    """The weight layers of a digits network, input side first: ``(kind, fan_in, fan_out)``.

    ``kind`` is ``"dense"``, ``"residual"`` or ``"output"`` (module docstring); ``fan_in`` is
    ``n_in`` for the first layer and ``width`` after it, ``fan_out`` ``n_out`` for the output
    layer and ``width`` before it.
    """
    if problem not in NETWORK_PROBLEMS:
        raise ParameterError(
            f"problem={problem!r} is not a network; valid: {', '.join(NETWORK_PROBLEMS)}")
    check_range("layers", layers, 2, None, integer=True)
    for name, value in (("width", width), ("n_in", n_in), ("n_out", n_out)):
        check_range(name, value, 1, None, integer=True)
    if problem == "digits-mlp":
        kinds = ["dense"] * (layers - 1) + ["output"]
    else:
        kinds = ["dense"] + ["residual"] * (layers - 2) + ["output"]
    return tuple((kind, n_in if i == 0 else width, n_out if kind == "output" else width)
                 for i, kind in enumerate(kinds))


#: the targets of a network calibration: a test accuracy to reach (``>=``) or a training loss to
#: get below (``<=``); the measure fitted is the test error or the loss
NETWORK_TARGETS = ("accuracy", "loss")


def target_level(kind: str, value: float) -> float:
    """The level ``eps`` of the fitted measure at a network target: ``1 - value`` for a test
    accuracy (the test error), ``value`` for a training loss (nats)."""
    if kind not in NETWORK_TARGETS:
        raise ParameterError(f"target={kind!r} is unknown; valid: {', '.join(NETWORK_TARGETS)}")
    if kind == "accuracy":
        check_range("target_value", value, 0, 1, low_open=True, high_open=True)
        return 1.0 - float(value)
    return float(check_range("target_value", value, 0, None, low_open=True))
