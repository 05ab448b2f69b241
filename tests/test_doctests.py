"""The ``>>>`` examples in the docstrings of the library modules run and print what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ("theory.compiled", "theory.errors", "theory.limits", "theory.tables")


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0, result
