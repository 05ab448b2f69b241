r"""The one place where sympy expressions become numpy functions.

Every numeric evaluation of a closed form in the package goes through :func:`compile_expr`:
the expression is compiled with ``sympy.lambdify(..., "numpy")`` once (cached by expression and
leading arguments) and called with a mapping from symbol *name* to value, so every caller uses the
same argument convention:

>>> import sympy as sp
>>> from theory.symbols import K, L, M
>>> f = compile_expr(2 * (K + M - 1) * L, leading=(K,))
>>> f.parameters
('L', 'M')
>>> float(f(10, {"L": 1.0, "M": 4}))
26.0

Values broadcast (numpy rules) and the result always has the broadcast shape of every argument,
also for an expression that does not depend on all of them (a constant is broadcast, not returned
as a scalar).  Names in the mapping that the expression does not use are ignored, so one mapping
of every constant can serve every expression.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import sympy as sp

from .errors import ParameterError

__all__ = ["CompiledExpr", "compile_expr"]


@dataclass(frozen=True, eq=False)
class CompiledExpr:
    """A sympy expression compiled to numpy, called as ``f(*leading, values)``.

    Attributes
    ----------
    expr : sympy.Expr
        The compiled expression.
    leading : tuple of sympy.Symbol
        Symbols passed positionally, before the mapping (e.g. ``K`` or ``(theta, K, alpha)``).
    parameters : tuple of str
        Sorted names of the other free symbols, looked up in the mapping.
    """

    expr: sp.Expr
    leading: tuple
    parameters: tuple[str, ...]
    _fn: object

    def __call__(self, *args) -> np.ndarray:
        """Evaluate at ``(*leading_values, values)``; ``values`` maps symbol names to values.

        Raises
        ------
        ParameterError
            If the number of leading values is wrong or ``values`` lacks a parameter (the message
            lists the required names).
        """
        *head, values = args
        if len(head) != len(self.leading) or not isinstance(values, Mapping):
            names = ", ".join([*(s.name for s in self.leading), "values"])
            raise TypeError(f"call as f({names}) with values a mapping by symbol name")
        missing = [p for p in self.parameters if p not in values]
        if missing:
            raise ParameterError(
                f"missing parameter(s) {', '.join(missing)}; required: "
                f"{', '.join(self.parameters)}"
            )
        inputs = [*head, *(values[p] for p in self.parameters)]
        out = np.asarray(self._fn(*inputs))
        shape = np.broadcast_shapes(out.shape, *(np.shape(a) for a in inputs))
        if out.shape != shape:
            out = np.broadcast_to(out, shape)
        return out


@lru_cache(maxsize=2048)
def _compile(expr: sp.Expr, leading: tuple) -> CompiledExpr:
    free = sorted(sp.sympify(expr).free_symbols - set(leading), key=lambda s: s.name)
    fn = sp.lambdify((*leading, *free), expr, "numpy")
    return CompiledExpr(expr, leading, tuple(s.name for s in free), fn)


def compile_expr(expr, leading: tuple | sp.Symbol = ()) -> CompiledExpr:
    r"""Compile ``expr`` once (cached) to a numpy function of ``(*leading, values)``.

    Parameters
    ----------
    expr : sympy.Expr or number
        The closed form.
    leading : sympy.Symbol or tuple of sympy.Symbol
        Symbols passed positionally, in this order; every other free symbol is read from the
        mapping by its name.

    Returns
    -------
    CompiledExpr
    """
    if isinstance(leading, sp.Symbol):
        leading = (leading,)
    return _compile(sp.sympify(expr), tuple(leading))
