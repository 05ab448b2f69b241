"""The names of the verification suites, without their case tables (``verify --suite``).

Building the tables of :mod:`simulate.verification.suites` reads the theorem registry (sympy); a
parser that offers the suites as choices needs only their names.

>>> SUITE_NAMES
('quick', 'standard', 'thorough')
"""

from __future__ import annotations

__all__ = ["SUITE_NAMES"]

#: the suites, fastest first (:data:`simulate.verification.suites.SUITES` is keyed by these)
SUITE_NAMES = ("quick", "standard", "thorough")
