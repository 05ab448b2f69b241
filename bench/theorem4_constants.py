"""The step cap and the eps^-1 coefficient c of the asynchronous bounds, old and new.

Run ``python -m bench.theorem4_constants`` from the repository root. It prints, at
``L = L_s = Delta = sigma2 = 1``, ``theta = 0.5``, ``b = 1``, for two devices (``q_min = 0.5``,
``q_max = 1.5``, ``G_inf = 0.4``, and the ideal ``q = 1``, ``G_inf = 0``) and ``D = 1, 3, 7, 15``:
the step cap and ``c`` (``rate_c``) of the retired Theorem 4 (its formulas, kept here and in the
remark of docs/theory.md for comparison), of Theorem 4' (``analog_sgd_ap``) and of Theorem 4'B
(``analog_sgd_ap_b``), both from the registry, the stability limit ``2 sin(pi/(4D + 2))/(L
q_max)`` of the delayed recursion ``x_{k+1} = x_k - a x_{k-D}``, and the ``c`` of Theorem 4''s
general form (:func:`theory.theorems.ap_general_parts`) with ``kappa_2``, ``lambda`` optimised on a
grid. Every number is computed with
:func:`theory.compiled.compile_expr`; nothing is typed in.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import sympy as sp

from theory import ap_general_parts, compile_expr, get_bound
from theory.symbols import D, Delta, L, L_s, q_max, q_min, theta

#: the retired Theorem 4 (commit 07a7a73): 1/alpha_AP and c, for the comparison column
OLD_INV_CAP = q_max**2 / ((1 - theta) * q_min) * sp.Max(L * (1 + 2 * D), 8 * sp.sqrt(2) * L_s * D)
OLD_RATE_C = 2 * Delta * OLD_INV_CAP / q_min + 32 * L_s**2 * D**2 * q_max**2 * Delta / (
    (1 - theta) * L * q_min**2
)

COMMON = {"L": 1.0, "L_s": 1.0, "Delta": 1.0, "sigma2": 1.0, "theta": 0.5, "b": 1}
DEVICES = {
    "q_min 0.5, q_max 1.5, G_inf 0.4": {"q_min": 0.5, "q_max": 1.5, "G_inf": 0.4},
    "ideal (q = 1, G_inf = 0)": {"q_min": 1.0, "q_max": 1.0, "G_inf": 0.0},
}
DELAYS = (1, 3, 7, 15)


def constants(values: dict) -> dict[str, tuple[float, float]]:
    """``{label: (step cap, c)}`` of the old Theorem 4, of Theorem 4' and 4'B at ``values``."""
    rows = {"Theorem 4 (old)": (OLD_INV_CAP, OLD_RATE_C)}
    for label, name in (("Theorem 4'", "analog_sgd_ap"), ("Theorem 4'B", "analog_sgd_ap_b")):
        bound = get_bound(name)
        rows[label] = (bound.inv_step_cap, bound.rate_c)
    return {
        label: (1.0 / float(compile_expr(inv)(values)), float(compile_expr(c)(values)))
        for label, (inv, c) in rows.items()
    }


def optimised_general(values: dict, points: int = 120) -> tuple[float, float, float]:
    """``(c, kappa_2, lambda)``: the smallest ``c`` of Theorem 4's general form on a grid.

    ``kappa_2`` over ``(0, (1 - theta)/2)``, ``lambda`` over ``(0, 1)``, ``theta`` as given.
    """
    half = (1 - values["theta"]) / 2
    k2, lam = np.meshgrid(np.linspace(half / points, half * (1 - 1 / points), points),
                          np.linspace(1 / points, 1 - 1 / points, points))
    c = compile_expr(ap_general_parts()["rate_c"])({**values, "kappa_2": k2, "lam": lam})
    best = int(np.argmin(c))
    return float(c.flat[best]), float(k2.flat[best]), float(lam.flat[best])


def stability_limit(delay: int, values: dict) -> float:
    """Largest stable step of ``w_{k+1} = w_k - alpha L q_max w_{k-D}``.

    It is ``2 sin(pi/(4D + 2))/(L q_max)`` (docs/theory.md, Theorem 4', Remark on the cap).
    """
    return 2 * math.sin(math.pi / (4 * delay + 2)) / (values["L"] * values["q_max"])


def table() -> str:
    """The table as Markdown text."""
    lines = [
        "| device | D | cap: Thm 4 | 4' | 4'B | stability limit | c: Thm 4 | 4' | 4'B |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for device, dev in DEVICES.items():
        for delay in DELAYS:
            values = {**COMMON, **dev, "D": delay}
            got = constants(values)
            caps = " | ".join(f"{cap:.3g}" for cap, _ in got.values())
            cs = " | ".join(f"{c:,.0f}" for _, c in got.values())
            lines.append(
                f"| {device} | {delay} | {caps} | {stability_limit(delay, values):.3g} | {cs} |"
            )
    lines += [
        "",
        "Theorem 4' general form, c minimised over kappa_2 and lambda (theta fixed):",
        "",
        "| device | D | c at (1 - theta)/4, 1/2 (kappa_3 exact) | best c | kappa_2 | lambda |",
        "|---|---|---|---|---|---|",
    ]
    for device, dev in DEVICES.items():
        for delay in DELAYS:
            values = {**COMMON, **dev, "D": delay}
            instance = {**values, "kappa_2": (1 - values["theta"]) / 4, "lam": 0.5}
            at = float(compile_expr(ap_general_parts()["rate_c"])(instance))
            c, k2, lam = optimised_general(values)
            lines.append(f"| {device} | {delay} | {at:,.0f} | {c:,.0f} | {k2:.3g} | {lam:.3g} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    """Print the table (no options besides ``--help``)."""
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    print(table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
