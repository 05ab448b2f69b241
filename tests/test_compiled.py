"""The one compile helper: name -> value mapping, broadcasting, caching, clear errors."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from theory import ParameterError, compile_expr
from theory.symbols import B, K, L, M


def test_mapping_call_and_parameters():
    f = compile_expr(2 * (B + M - 1) * K * L, leading=K)
    assert f.parameters == ("B", "L", "M")
    assert float(f(3, {"B": 2, "M": 4, "L": 0.5, "unused": 1})) == 2 * 5 * 3 * 0.5


def test_constant_is_broadcast_to_the_inputs():
    f = compile_expr(sp.Integer(0) * M + 7, leading=K)
    out = f(np.arange(4), {})
    assert out.shape == (4,) and np.all(out == 7)
    g = compile_expr(M - 1)
    assert g({"M": np.array([[1], [3]])}).shape == (2, 1)


def test_cached_per_expression_and_leading():
    assert compile_expr(M - 1) is compile_expr(M - 1)
    assert compile_expr(M * K, K) is not compile_expr(M * K)


def test_missing_parameter_names_the_required_ones():
    with pytest.raises(ParameterError, match="missing parameter.*M; required: L, M"):
        compile_expr(L * M)({"L": 1.0})
    with pytest.raises(TypeError, match=r"f\(K, values\)"):
        compile_expr(L * K, K)({"L": 1.0})
