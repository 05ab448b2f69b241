"""The ``>>>`` examples in the docstrings of the library modules run and print what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ("theory.compiled", "theory.errors", "theory.limits", "theory.tables",
           # the light modules a parser reads (tests/test_fast_start.py)
           "bounds.planning.mode_limits", "simulate.problems.sizes",
           "simulate.verification.calibration_settings", "simulate.verification.suite_names")


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0, result
