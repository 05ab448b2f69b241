"""The oracle problems' run: the problem of a run record, its gradient bias and the update loop
(the iteration is described in :mod:`simulate.engine`)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from theory.errors import ParameterError

from ..device import DeviceSpread, digital_blocks, tiki_taka
from ..pipeline import (
    StaleVersions,
    averaging_cycles,
    check_divergence,
    cycles_after,
    cycles_with_averaging,
    divergence_limit,
    forward_delays,
    program_mean,
    replica_generators,
    replica_mean,
)
from ..rng import problem_generator
from ..trace import RunConstants, Trace, log_steps
from .oracle import ORACLE_PROBLEMS, LeastSquares, OracleProblem, Quadratic, row_dot

__all__ = [
    "Progress",
    "VersionHook",
    "W_STAR_SCALE",
    "gradient_bias",
    "make_problem",
    "run_oracle",
]

#: the oracle minimiser is uniform in [-W_STAR_SCALE, W_STAR_SCALE]^d (weight units)
W_STAR_SCALE = 0.3

#: gradient-noise draws per member come in chunks of this many updates (bits do not depend on it)
_NOISE_CHUNK = 256

#: called with the number of updates done since its previous call (e.g. ``tqdm.update``)
Progress = Callable[[int], None]
#: called as ``hook(k, versions)`` before update ``k`` (which iterate each block's signal read)
VersionHook = Callable[[int, tuple[int, ...]], None]


def make_problem(config, seed: int | None = None) -> OracleProblem:
    r"""The oracle problem of ``config`` (drawn from the problem stream of the root seed).

    The minimiser is uniform in ``[-W_STAR_SCALE, W_STAR_SCALE]^d`` and the initial weights are 0,
    whatever the algorithm and device, so digital and analog runs (and runs on devices of
    different ``tau``) of one seed solve the same problem. With the paper's ``tau = 1`` device this
    keeps :math:`\|W^*\|_\infty \le 0.3\,\tau`; a device of range below that saturates (visible in
    the trace's ``max_abs_w``).
    """
    seed = config.seed if seed is None else seed
    scale = W_STAR_SCALE
    rng = problem_generator(seed)
    if config.problem == "quadratic":
        return Quadratic.random(
            config.dim, config.stages, rng, sigma2=config.sigma2, w_star_scale=scale
        )
    if config.problem == "least-squares":
        return LeastSquares.random(config.stages, rng, sigma2=config.sigma2, x_star_scale=scale)
    raise ParameterError(
        f"problem={config.problem!r} is not an oracle problem; valid: {', '.join(ORACLE_PROBLEMS)}"
    )


def gradient_bias(problem: OracleProblem, beta: float) -> np.ndarray | None:
    r"""The fixed bias of norm ``beta`` added to the oracle signal, or ``None`` at ``beta = 0``.

    .. math:: b = \beta\,\frac{W^* - W_0}{\lVert W^* - W_0\rVert}

    (``W^*`` the quadratic's ``w_star`` or the least-squares ``x_lstsq``; the first unit vector
    if ``W^* = W_0``). Along the minimiser offset the signal understates the descent, so the
    iterates settle short of ``W^*``, where :math:`\nabla f \approx -b`: the bias costs
    :math:`\lVert\nabla f\rVert^2 \approx \beta^2` (gradient units squared).
    """
    if beta == 0:
        return None
    optimum = problem.w_star if isinstance(problem, Quadratic) else problem.x_lstsq
    offset = np.asarray(optimum, dtype=float) - problem.w0
    norm = float(np.sqrt(row_dot(offset, offset)))
    if norm == 0:
        offset, norm = np.eye(problem.dim)[0], 1.0
    return beta * (offset / norm)


def run_oracle(config, seed, problem, updater, members, progress, record_versions) -> Trace:
    n_members, dim, steps = len(members), problem.dim, config.steps
    n, reps = config.samples_per_update, config.replicas
    streams = replica_generators(seed, members, reps)  # rows member-major (pipeline.replicas)
    noise_rngs, device_rngs = streams["noise"], streams["device"]
    w = np.tile(problem.w0, (n_members * reps, 1))
    spread = DeviceSpread.draw(updater.device, w.shape, device_rngs) if updater.uses_dtod else None
    blocks = problem.blocks
    tiles = tiki_taka.oracle_tiles(blocks)
    updater = tiki_taka.wrap(config, updater, spread, w, tiles, device_rngs)
    digital = [blocks[stage - 1] for stage in config.digital_stage_indices]  # mixed: exact blocks
    # the visited region (A3) is that of the analog stages; all weights if every stage is digital
    seen = _analog_columns(dim, blocks, config.digital_stage_indices)
    stale = StaleVersions(forward_delays(config.mode, config.stages), [(w[:, b],) for b in blocks])

    monitor = updater.pinned_monitor(spread)
    lo, hi = (None, None) if monitor is None else (monitor.lo, monitor.hi)
    logged = log_steps(steps, config.log_every)
    loss = np.full((n_members, len(logged)), np.nan)
    grad_norm2 = np.full_like(loss, np.nan)
    sum_grad_norm2 = np.zeros(n_members)
    w_lo, w_hi = w[:, seen].min(axis=1), w[:, seen].max(axis=1)
    w_limit = divergence_limit(w)  # limits relative to the start (the gradient's: at k = 0)
    g_limit = None
    t, reported = 0, 0
    per_sample = config.write == "per-sample"
    # per-sample writes draw n noise vectors per update, fewer updates per chunk (same bits)
    chunk = max(1, _NOISE_CHUNK // n) if per_sample else _NOISE_CHUNK
    bias = gradient_bias(problem, config.grad_bias)  # None: unbiased (nothing added)
    for k in range(steps + 1):
        if reps > 1 and k > 0 and k % config.average_every == 0:  # after update k - 1
            w = program_mean(w, reps, config.programming_error, streams["program"], lo, hi)
            w_lo, w_hi = np.minimum(w_lo, w.min(axis=1)), np.maximum(w_hi, w.max(axis=1))
        g = problem.grad(w)
        w_bar = replica_mean(w, reps)  # the replicas' mean (w itself at replicas = 1)
        g_bar = g if reps == 1 else problem.grad(w_bar)
        gn2 = row_dot(g_bar, g_bar)
        if g_limit is None:
            g_limit = divergence_limit(gn2, squared=True)
        check_divergence(k, "||grad f(W)||^2", gn2, g_limit, config.lr)
        check_divergence(k, "max |w|", np.abs(w).max(axis=1), w_limit, config.lr)
        if k == logged[t]:
            loss[:, t], grad_norm2[:, t] = problem.loss(w_bar), gn2
            if monitor is not None:
                monitor.observe(k, w)
            t += 1
            if progress is not None and k > reported:
                progress(k - reported)
                reported = k
        if k == steps:
            break
        sum_grad_norm2 += gn2
        if k % chunk == 0:
            rows = min(chunk, steps - k)
            shape = (rows, n, dim) if per_sample else (rows, dim)
            xi = np.stack([r.standard_normal(shape) for r in noise_rngs])
        if not stale.stale:
            w_hat, versions = w, (k,) * config.stages
        else:
            w_hat, versions = _stale_point(stale, k, w, blocks)
            g = problem.grad(w_hat)
        if record_versions is not None:
            record_versions(k, versions)
        if not per_sample:
            signal = g + problem.noise(xi[:, k % chunk], n)
            if bias is not None:
                signal = signal + bias
            w = _write(updater, w, -config.lr * signal, device_rngs, spread, digital)
            w_seen = w[:, seen]
            w_lo, w_hi = np.minimum(w_lo, w_seen.min(axis=1)), np.maximum(w_hi, w_seen.max(axis=1))
            continue
        # per-sample writes: sample i's gradient g + sqrt(sigma2/d) xi_i (read at the same point),
        # written with desired increment -(lr/n) g_i at the weights the previous write left; the
        # visited region includes the intermediate weights (where A3 must hold, Corollary 3PS)
        step = config.lr / n
        for i in range(n):
            signal = g + problem.noise(xi[:, k % chunk, i], 1)
            if bias is not None:
                signal = signal + bias
            w = _write(updater, w, -step * signal, device_rngs, spread, digital)
            w_seen = w[:, seen]
            w_lo, w_hi = np.minimum(w_lo, w_seen.min(axis=1)), np.maximum(w_hi, w_seen.max(axis=1))

    if monitor is not None:
        monitor.warn()
    constants = RunConstants(
        L=problem.L, Delta=problem.Delta, sigma2=problem.sigma2, f_star=problem.f_star, dim=dim,
        samples_per_update=n, beta=config.grad_bias,
    )
    cycles = cycles_after(config.mode, config.stages, config.micro_batches, logged)
    if reps > 1:
        device = updater.device
        cycles = cycles_with_averaging(cycles, logged, config.average_every, averaging_cycles(
            device is not None and updater.kind != "digital",
            0.0 if device is None else device.w_max - device.w_min,
            1.0 if device is None else device.dw_min))
        w_lo, w_hi = w_lo.reshape(-1, reps).min(axis=1), w_hi.reshape(-1, reps).max(axis=1)
    return Trace(
        step=logged,
        samples=logged * n * reps,
        cycles=cycles + tiki_taka.transfer_cycles(updater, logged),
        loss=loss,
        grad_norm2=grad_norm2,
        test_accuracy=np.full_like(loss, np.nan),
        max_abs_w=np.maximum(np.abs(w_lo), np.abs(w_hi)),
        w_min_visited=w_lo,
        w_max_visited=w_hi,
        config=config.to_dict() | {"seed": int(seed), "members": members},
        avg_grad_norm2=sum_grad_norm2 / steps,
        constants=constants,
    )


def _analog_columns(dim: int, blocks, digital_stages: tuple[int, ...]):
    """The weights whose visited region the trace records: every weight (``slice(None)``, the
    same bits as before) unless some stages are digital, then the analog stages' weights (all
    weights if no stage is analog)."""
    if not digital_stages or len(digital_stages) == len(blocks):
        return slice(None)
    cols = [np.arange(dim)[b] for s, b in enumerate(blocks, start=1) if s not in digital_stages]
    return np.concatenate(cols)


def _write(updater, w: np.ndarray, dw: np.ndarray, rngs, spread, digital) -> np.ndarray:
    """One write of desired increment ``dw``: through the updater, except on the ``digital``
    blocks (``mixed`` runs, Theorem 2M), which take ``w + dw``."""
    w_next = updater(w, dw, rngs, spread)
    return digital_blocks(w_next, w, dw, digital) if digital else w_next


def _stale_point(stale: StaleVersions, k: int, w: np.ndarray, blocks) -> tuple[np.ndarray, tuple]:
    """Store ``W_k`` and return the stale point (block m from version ``max(0, k - d_m)``) and the
    version each block was read from."""
    stale.push(k, [(w[:, b],) for b in blocks])
    w_hat = np.empty_like(w)
    versions = []
    for s, b in enumerate(blocks):
        stored = stale.read(k, s)
        w_hat[:, b] = w[:, b] if stored is None else stored[0]
        versions.append(stale.version(k, s))
    return w_hat, tuple(versions)
