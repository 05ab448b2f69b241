"""Benchmark: compiled complexity evaluators on a 10^6-point grid against per-point sympy ``subs``.

Run ``python -m bench.bench_bounds [--points N] [--subs-points S]`` from the repository root. It
times :func:`theory.complexity.evaluate_complexity` for ``analog_sgd_ap`` (iterations, samples,
cycles and step, vectorised over a broadcast grid of ``eps, M, b, sigma2, G_inf, q_min``), then the
same four quantities by substituting a few hundred grid points into the sympy expressions
(``iterations_expr``, ``samples_expr``, ``cycles_expr``, ``best_step``) and extrapolates that
rate. It prints both rates and their ratio; it asserts nothing about timings (it does check that
the two agree at the sampled points).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from theory import complexity, get_bound, schedules, symbols

NAME = "analog_sgd_ap"
FIXED = {"L": 1.0, "L_s": 1.0, "Delta": 1.0, "theta": 0.5, "q_max": 1.3}


def grid(points: int) -> dict[str, np.ndarray]:
    """A broadcast grid of about ``points`` points over six axes, all used by the AP bound (every
    floor, at most 0.04/(0.5 * 0.36) = 0.22, lies below every eps >= 0.5)."""
    side = max(2, round(points ** (1 / 6)))
    axes = {
        "eps": np.geomspace(0.5, 5.0, side),
        "M": np.arange(1, side + 1),
        "b": np.arange(1, side + 1),
        "sigma2": np.geomspace(0.1, 1.0, side),
        "G_inf": np.linspace(0.0, 0.2, side),
        "q_min": np.linspace(0.6, 0.9, side),
    }
    shaped = {}
    for i, (name, axis) in enumerate(axes.items()):
        shape = [1] * len(axes)
        shape[i] = side
        shaped[name] = axis.reshape(shape)
    return shaped


def time_compiled(values: dict[str, np.ndarray]) -> tuple[float, int, object]:
    """Seconds of one vectorised evaluation (after a compiling warm-up), point count, result."""
    eps = values.pop("eps")
    complexity.evaluate_complexity(NAME, eps, **FIXED, **values)  # compile once (cached)
    start = time.perf_counter()
    result = complexity.evaluate_complexity(NAME, eps, **FIXED, **values)
    elapsed = time.perf_counter() - start
    values["eps"] = eps
    return elapsed, int(np.size(result.iterations)), result


def time_subs(values: dict[str, np.ndarray], count: int, seed: int = 0):
    """Seconds per point of sympy ``subs``+``evalf`` at ``count`` random grid points, and checks."""
    bound = get_bound(NAME)
    exprs = (
        complexity.iterations_expr(bound), complexity.samples_expr(bound),
        complexity.cycles_expr(bound),
    )
    shape = np.broadcast_shapes(*(v.shape for v in values.values()))
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    picks = [tuple(int(rng.integers(n)) for n in shape) for _ in range(count)]
    sym = {name: getattr(symbols, name) for name in (*FIXED, *values) if name != "eps"}
    sym["eps"] = symbols.eps
    rows = []
    start = time.perf_counter()
    for index in picks:
        point = {name: np.broadcast_to(v, shape)[index].item() for name, v in values.items()}
        mapping = {sym[name]: value for name, value in {**FIXED, **point}.items()}
        mapping[symbols.D] = point["M"] - 1
        k_real = float(exprs[0].subs(mapping).evalf())
        samples_real = float(exprs[1].subs(mapping).evalf())
        cycles_real = float(exprs[2].subs(mapping).evalf())
        step = float(bound.best_step.subs(mapping).subs(symbols.K, math.ceil(k_real)).evalf())
        rows.append((index, k_real, samples_real, cycles_real, step))
    return (time.perf_counter() - start) / count, rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=10**6, help="grid points (default 10^6)")
    parser.add_argument("--subs-points", type=int, default=300,
                        help="points evaluated with subs (default 300)")
    args = parser.parse_args(argv)

    values = grid(args.points)
    compiled_s, n, result = time_compiled(values)
    per_point_subs, rows = time_subs(values, args.subs_points)
    cycles_of = schedules.cycles_for_iterations(get_bound(NAME).mode)
    for index, k_real, samples_real, cycles_real, step in rows:  # the two routes agree
        k_int = math.ceil(k_real)
        assert np.isclose(result.iterations[index], k_real, rtol=1e-9)
        assert np.isclose(result.step[index], step, rtol=1e-9)
        # samples and cycles: the compiled ones count whole iterations, subs gave them at K real
        assert np.isclose(result.samples[index], samples_real / k_real * k_int, rtol=1e-9)
        stages = np.broadcast_to(values["M"], result.iterations.shape)[index].item()
        cycles_int = float(cycles_of.subs({symbols.K: k_int, symbols.M: stages}))
        assert np.isclose(result.cycles[index], cycles_int, rtol=1e-9)
        assert np.isclose(cycles_real, float(cycles_of.subs({symbols.K: k_real,
                                                             symbols.M: stages})), rtol=1e-9)

    compiled_rate = n / compiled_s
    subs_rate = 1.0 / per_point_subs
    print(f"bound {NAME}: iterations, samples, cycles and step on a grid of {n:,} points")
    print(f"compiled (lambdify, numpy): {compiled_s:.3f} s  -> {compiled_rate:,.0f} points/s")
    print(f"sympy subs ({args.subs_points} points): {per_point_subs * 1e3:.2f} ms/point "
          f"-> {subs_rate:,.1f} points/s (extrapolated: {n * per_point_subs:,.0f} s for the grid)")
    print(f"ratio compiled/subs: {compiled_rate / subs_rate:,.0f}x")


if __name__ == "__main__":
    main()
