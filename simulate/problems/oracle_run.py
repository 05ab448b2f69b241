"""The oracle problems' run: the problem of a run record, its gradient bias and the update loop
(the iteration is described in :mod:`simulate.engine`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from theory.errors import ParameterError

from ..device import DeviceSpread, Updater, digital_blocks, ratio_tau, tiki_taka
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
from .oracle import LeastSquares, OracleProblem, Quadratic, row_dot, sum_in_order
from .oracle_kernels import quadratic_steps
from .sizes import ORACLE_PROBLEMS

__all__ = [
    "OracleTraining",
    "Progress",
    "VersionHook",
    "W_STAR_SCALE",
    "WeightsHook",
    "gradient_bias",
    "make_problem",
    "run_oracle",
]

#: the oracle minimiser is uniform in [-W_STAR_SCALE, W_STAR_SCALE]^d (weight units)
W_STAR_SCALE = 0.3

#: gradient-noise draws per member come in chunks of this many updates (bits do not depend on it)
_NOISE_CHUNK = 256
#: the compiled loop records at most this many elements of gradients (and of iterates) per piece
_COMPILED_ELEMENTS = 1 << 20

#: called with the number of updates done since its previous call (e.g. ``tqdm.update``)
Progress = Callable[[int], None]
#: called as ``hook(k, versions)`` before update ``k`` (which iterate each block's signal read)
VersionHook = Callable[[int, tuple[int, ...]], None]
#: called as ``hook(k, w)`` at every logging point ``k``, after its measurement, with the
#: iterate ``W_k`` (``(members * replicas, d)``; read it, do not keep or change it)
WeightsHook = Callable[[int, np.ndarray], None]


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


def run_oracle(config, seed: int, problem: OracleProblem, updater, members: Sequence[int],
               progress: Progress | None, record_versions: VersionHook | None,
               observe: WeightsHook | None = None) -> Trace:
    """Run the oracle iteration of :mod:`simulate.engine` on ``problem``: an
    :class:`OracleTraining` measured at every logging point and stepped between them.

    Parameters
    ----------
    config : SimConfig
        An oracle run (``quadratic`` or ``least-squares``).
    seed : int
        Root seed (the members' streams, :func:`simulate.pipeline.replicas.replica_generators`).
    problem : OracleProblem
        The problem of ``config`` and ``seed`` (:func:`make_problem`).
    updater : Updater
        The update of ``config`` on its device (:meth:`simulate.device.Updater.from_config`).
    members : sequence of int
        Ensemble members to compute; a member gives the same bits whichever others run with it.
    progress : callable or None
        Called with the number of updates done since its previous call (:data:`Progress`).
    record_versions : callable or None
        Called as ``hook(k, versions)`` before update ``k`` (:data:`VersionHook`).
    observe : callable or None
        Called as ``hook(k, w)`` at every logging point (:data:`WeightsHook`).

    Returns
    -------
    Trace

    Raises
    ------
    DivergenceError
        The gradient norm or a weight left its limit (relative to the start) or became
        non-finite.
    """
    return OracleTraining(config, seed, problem, updater, members, progress,
                          record_versions).run(observe)


class OracleTraining:
    """An oracle run as a state: set up here (the weights ``W_0`` and their gradient), then
    :meth:`measure` and :meth:`step`, then :meth:`finish` (:meth:`run` does the three in order;
    :func:`run_oracle` is that).

    The state holds the gradient at the current iterate (and its norm, checked for divergence):
    :meth:`step` writes update ``k``, averages the replicas where due and takes the gradient at
    ``W_{k+1}``. The write (the batch's one, or one per sample) is chosen once, here. ``step(k)``
    must be called for ``k = 0, ..., steps - 1`` in order, and ``measure(k)`` before ``step(k)``
    at every ``k`` of :attr:`log_at` (the last one, ``steps``, after the last step).

    Parameters
    ----------
    config, seed, problem, updater, members, progress, record_versions
        As for :func:`run_oracle`.

    Attributes
    ----------
    config : SimConfig
    seed : int
    problem : OracleProblem
    members : sequence of int
    log_at : ndarray of int
        The iterates measured (:func:`simulate.trace.log_steps`).
    w : ndarray, shape (members * replicas, d)
        The current iterate (a new array after every write).
    """

    def __init__(self, config, seed: int, problem: OracleProblem, updater,
                 members: Sequence[int], progress: Progress | None = None,
                 record_versions: VersionHook | None = None):
        # the arithmetic in config.dtype (the exact constants those of the float64 problem)
        self._dtype = dtype = np.dtype(config.dtype)
        self._bias = _in_dtype(gradient_bias(problem, config.grad_bias), dtype)  # None: unbiased
        problem = problem.in_dtype(dtype)
        self.config, self.seed, self.problem, self.members = config, seed, problem, members
        n_members, reps = len(members), config.replicas
        self._streams = streams = replica_generators(seed, members, reps)  # rows member-major
        self._noise_rngs, self._device_rngs = streams["noise"], streams["device"]
        self.w = w = np.tile(problem.w0, (n_members * reps, 1))
        self._spread = spread = (DeviceSpread.draw(updater.device, w.shape, self._device_rngs)
                                 .astype(dtype) if updater.uses_dtod else None)
        self._blocks = blocks = problem.blocks
        self._updater = updater = tiki_taka.wrap(config, updater, spread, w,
                                                 tiki_taka.oracle_tiles(blocks),
                                                 self._device_rngs)
        # mixed: exact blocks
        self._digital = [blocks[stage - 1] for stage in config.digital_stage_indices]
        # the visited region (A3) is that of the analog stages; all weights if every stage is
        # digital
        self._seen = _analog_columns(problem.dim, blocks, config.digital_stage_indices)
        self._stale = StaleVersions(forward_delays(config.mode, config.stages),
                                    [(w[:, b],) for b in blocks])
        self._monitor = monitor = updater.pinned_monitor(spread)
        self._lo, self._hi = (None, None) if monitor is None else (monitor.lo, monitor.hi)
        self.log_at = logged = log_steps(config.steps, config.log_period)
        self._loss = np.full((n_members, len(logged)), np.nan)
        self._grad_norm2 = np.full_like(self._loss, np.nan)
        self._sum_grad_norm2 = np.zeros(n_members)
        self._w_lo, self._w_hi = w[:, self._seen].min(axis=1), w[:, self._seen].max(axis=1)
        self._w_limit = divergence_limit(w)  # limits relative to the start (gradient: at k = 0)
        self._g_limit = None
        self._t, self._reported = 0, 0
        self._progress, self._record_versions = progress, record_versions
        per_sample = config.write == "per-sample"
        # per-sample writes draw n noise vectors per update, fewer updates per chunk (same bits)
        n = config.samples_per_update
        self._chunk = max(1, _NOISE_CHUNK // n) if per_sample else _NOISE_CHUNK
        self._noise_shape = (n, problem.dim) if per_sample else (problem.dim,)
        self._xi = None
        self._loss_here = None  # the loss at the current iterate when it is a logging point
        self._write_update = self._write_samples if per_sample else self._write_batch
        # the noise of one write (a sample's, or the batch's): problem.noise's scale, once
        self._noise_scale = problem.noise_scale(1 if per_sample else n)
        self._gradient(0)

    def run(self, observe: WeightsHook | None = None) -> Trace:
        """Every measurement and update in order, then :meth:`finish`; ``observe(k, w)`` after
        each measurement (:data:`WeightsHook`).

        The common run on the quadratic (:meth:`_compiled_terms`) takes the compiled loop
        (:func:`simulate.problems.oracle_kernels.quadratic_steps`), with the bits of the
        :meth:`step` by :meth:`step` loop it replaces."""
        terms = self._compiled_terms()
        if terms is not None:
            self._run_compiled(terms, observe)
            return self.finish()
        steps = self.config.steps
        for k in range(steps + 1):
            if k == self.log_at[self._t]:
                self.measure(k)
                if observe is not None:
                    observe(k, self.w)
            if k < steps:
                self.step(k)
        return self.finish()

    def measure(self, k: int) -> None:
        """Record the loss and squared gradient norm of the replicas' mean at iterate ``k`` and
        report progress."""
        t = self._t
        loss = self.problem.loss(self._w_bar) if self._loss_here is None else self._loss_here
        self._loss[:, t], self._grad_norm2[:, t] = loss, self._gn2
        if self._monitor is not None:
            self._monitor.observe(k, self.w)
        self._t += 1
        self._report(k)

    def _report(self, k: int) -> None:
        """Report the updates done up to iterate ``k`` to the progress callable."""
        if self._progress is not None and k > self._reported:
            self._progress(k - self._reported)
            self._reported = k

    def _draw_noise(self, k: int) -> None:
        """At the start of a noise chunk, its standard normals, member by member."""
        if k % self._chunk == 0:
            rows = min(self._chunk, self.config.steps - k)
            self._xi = np.stack([r.standard_normal((rows, *self._noise_shape), self._dtype)
                                 for r in self._noise_rngs])

    def step(self, k: int) -> None:
        """Update ``k``: the signal at the (stale) point read, its write(s), the replicas'
        average where due, and the gradient at the new iterate.

        Raises
        ------
        DivergenceError
            At the new iterate, the gradient norm or a weight left its limit.
        """
        config, problem = self.config, self.problem
        self._sum_grad_norm2 += self._gn2
        chunk = self._chunk
        self._draw_noise(k)
        g = self._g
        if not self._stale.stale:
            versions = (k,) * config.stages
        else:
            w_hat, versions = _stale_point(self._stale, k, self.w, self._blocks)
            g = problem.grad(w_hat)
        if self._record_versions is not None:
            self._record_versions(k, versions)
        self._write_update(g, self._xi[:, k % chunk])
        reps = config.replicas
        if reps > 1 and (k + 1) % config.average_every == 0:  # after update k
            w = program_mean(self.w, reps, config.programming_error, self._streams["program"],
                             self._lo, self._hi)
            self.w = w = w.astype(self._dtype, copy=False)
            self._w_lo = np.minimum(self._w_lo, w.min(axis=1))
            self._w_hi = np.maximum(self._w_hi, w.max(axis=1))
        self._gradient(k + 1)

    def _compiled_terms(self) -> dict | None:
        """The arguments of the compiled loop, or ``None`` where it does not apply: it takes
        the quadratic (``d >= 2``) in float64 or float32, one replica, the ``analog``,
        ``digital`` or ``mixed`` algorithm with the digital or the expected update of a device
        whose ``G`` is ``w / tau`` (soft bounds; :func:`simulate.device.updates.ratio_tau`), no
        spread, and no version hook; and in float64 Corollary TT0's Tiki-Taka
        (:meth:`_tiki_taka_terms`) on such a device."""
        config, problem, updater = self.config, self.problem, self._updater
        dtype = self._dtype
        tt = self._tiki_taka_terms()
        if tt is not None:
            updater = updater.slow  # C's update; A's is the digital buffer
        if not (isinstance(problem, Quadratic) and problem.dim >= 2
                and problem.A.flags.c_contiguous and problem.A.dtype == dtype
                and dtype in (np.float64, np.float32) and config.replicas == 1
                and (config.algorithm in ("analog", "digital", "mixed") or tt is not None)
                and self._spread is None and self._record_versions is None
                and isinstance(updater, Updater) and updater.kind in ("digital", "expected")):
            return None
        d = problem.dim
        analog = np.full(d, updater.kind == "expected")
        for block in self._digital:  # mixed: the digital stages' weights
            analog[block] = False
        tau = lo = hi = 1.0
        if analog.any():
            tau = ratio_tau(updater.device, dtype) if updater.device.F_constant == 1.0 else None
            if tau is None:
                return None
            lo, hi = updater.device.w_min, updater.device.w_max
        tracked = np.zeros(d, dtype=bool)
        tracked[self._seen] = True
        n = config.samples_per_update if config.write == "per-sample" else 1
        blocks = self._blocks
        delays = np.asarray(self._stale.delays, dtype=np.int64)
        scalar = dtype.type
        return {"analog": analog, "tracked": tracked, "tau": scalar(tau), "lo": scalar(lo),
                "hi": scalar(hi),
                "step": scalar(-(config.lr / n)) if n > 1 else scalar(-config.lr), "n": n,
                "bias": (np.empty(0, dtype) if self._bias is None else self._bias),
                "delays": delays,
                "starts": np.array([b.start for b in blocks], dtype=np.int64),
                "ends": np.array([b.stop for b in blocks], dtype=np.int64),
                "ring": np.repeat(self.w[None], int(delays.max()) + 1 if self._stale.stale
                                  else 1, axis=0),
                **(tt or {"fast": np.empty((0, 0), dtype), "every": 0, "beta": scalar(0.0)})}

    def _tiki_taka_terms(self) -> dict | None:
        """The Tiki-Taka arguments of the compiled loop, or ``None``: it takes Corollary TT0's
        variant (``gamma = 0``, every column of every tile, the reset, a digital fast buffer;
        :data:`simulate.verification.checks.TT0_SETTINGS`) in float64 (the state computes in
        float64) whose event moves the weights in order."""
        tt = self._updater
        if not isinstance(tt, tiki_taka.TikiTaka):
            return None
        rule = tt.rule
        if not (self._dtype == np.float64 and rule.gamma == 0 and rule.slice == "all"
                and rule.reset and tt.fast.kind == "digital"
                and np.array_equal(tt.due_columns(), np.arange(self.problem.dim))):
            return None
        return {"fast": tt.a.copy(), "every": rule.every, "beta": np.float64(rule.lr)}

    def _run_compiled(self, terms: dict, observe: WeightsHook | None) -> None:
        """:meth:`run`'s loop through the compiled kernel: the updates in pieces (at most one
        noise chunk, at most :data:`_COMPILED_ELEMENTS` elements of recorded iterates), then per
        piece, in numpy, the squared gradient norms, the sum of them, the divergence checks and
        the measurements at the logging points in it (the operations of :meth:`_gradient` and
        :meth:`measure`, on the recorded iterates)."""
        config, problem, steps, chunk = self.config, self.problem, self.config.steps, self._chunk
        self.measure(0)
        if observe is not None:
            observe(0, self.w)
        w, g = self.w.copy(), self._g.copy()
        rows, d = w.shape
        piece = max(1, min(chunk, _COMPILED_ELEMENTS // (rows * d)))
        grads = np.empty((piece, rows, d), self._dtype)
        iterates = np.empty_like(grads)
        max_abs = np.empty((piece, rows), self._dtype)
        k = 0
        while k < steps:
            self._draw_noise(k)
            start = k % chunk
            count = min(piece, steps - k, chunk - start)
            xi = self._xi[:, start:start + count]
            xi = xi.reshape(rows, count, terms["n"], d)
            quadratic_steps(w, g, problem.w_star, problem.A, xi, self._noise_scale,
                            terms["step"], terms["bias"], terms["analog"], terms["tracked"],
                            terms["tau"], terms["lo"], terms["hi"], terms["delays"],
                            terms["starts"], terms["ends"], terms["ring"], k, self._w_lo,
                            self._w_hi, grads[:count], iterates[:count], max_abs[:count],
                            terms["fast"], terms["every"], terms["beta"])
            gn2 = row_dot(grads[:count], grads[:count])  # iterates k + 1 .. k + count
            self._sum_grad_norm2 = sum_in_order(self._sum_grad_norm2,  # iterates k .. k+count-1
                                                np.concatenate([self._gn2[None], gn2[:-1]]))
            # check_divergence's test (False for nan) on every iterate of the piece at once
            ok = ((np.abs(gn2) <= self._g_limit).all(axis=1)
                  & (max_abs[:count] <= self._w_limit).all(axis=1))
            done = count if ok.all() else int(np.argmin(ok))  # the updates before a divergence
            self._measure_compiled(k, done, gn2, grads, iterates, observe)
            if done < count:  # the error the step loop raises at iterate k + done + 1
                check_divergence(k + done + 1, "||grad f(W)||^2", gn2[done], self._g_limit,
                                 config.lr)
                check_divergence(k + done + 1, "max |w|", max_abs[done], self._w_limit, config.lr)
            self._gn2 = gn2[count - 1]
            k += count
        self.w = self._w_bar = w
        self._g = g
        if terms["every"]:  # the Tiki-Taka state after the run, as the step loop leaves it
            tt, writes = self._updater, terms["n"]
            tt.a, tt.c, tt.count, tt.writes = terms["fast"], w.copy(), steps, steps * writes

    def _measure_compiled(self, k: int, count: int, gn2, grads, iterates,
                          observe: WeightsHook | None) -> None:
        """:meth:`measure` (and ``observe``) at the logging points among the iterates
        ``k + 1 .. k + count`` recorded by the compiled loop (``gn2``, ``grads``, ``iterates``
        indexed from iterate ``k + 1``), the loss by :meth:`Quadratic.loss_from_grad`."""
        first = int(np.searchsorted(self.log_at, k + 1, side="left"))
        last = int(np.searchsorted(self.log_at, k + count, side="right"))
        logged = self.log_at[first:last]
        if count == 0 or not logged.size:
            return
        at = logged - (k + 1)
        loss = self.problem.loss_from_grad(iterates[at], grads[at])
        self._loss[:, first:last], self._grad_norm2[:, first:last] = loss.T, gn2[at].T
        if self._monitor is not None:
            self._monitor.observe_all(logged, iterates[at])
        self._t = last
        self._report(int(logged[-1]))
        if observe is not None:
            for step, t in zip(logged, at, strict=True):
                observe(int(step), iterates[t])

    def finish(self) -> Trace:
        """The run's :class:`~simulate.trace.Trace`, after the last measurement (that of
        ``k = steps``)."""
        config, problem, updater = self.config, self.problem, self._updater
        n, reps, logged = config.samples_per_update, config.replicas, self.log_at
        if self._monitor is not None:
            self._monitor.warn()
        constants = RunConstants(
            L=problem.L, Delta=problem.Delta, sigma2=problem.sigma2, f_star=problem.f_star,
            dim=problem.dim, samples_per_update=n, beta=config.grad_bias,
        )
        cycles = cycles_after(config.mode, config.stages, config.micro_batches, logged)
        w_lo, w_hi = self._w_lo, self._w_hi
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
            loss=self._loss,
            grad_norm2=self._grad_norm2,
            test_accuracy=np.full_like(self._loss, np.nan),
            max_abs_w=np.maximum(np.abs(w_lo), np.abs(w_hi)),
            w_min_visited=w_lo,
            w_max_visited=w_hi,
            config=config.to_dict() | {"seed": int(self.seed), "members": self.members},
            avg_grad_norm2=self._sum_grad_norm2 / config.steps,
            constants=constants,
        )

    def _gradient(self, k: int) -> None:
        """The gradient at iterate ``k`` (each replica's, and at the replicas' mean), its
        squared norm, and the divergence checks of both (the gradient's limit set at ``k = 0``)."""
        problem, lr = self.problem, self.config.lr
        self._loss_here = None
        if self.config.replicas == 1 and self._t < len(self.log_at) and k == self.log_at[self._t]:
            # a logging point: the loss from the gradient's product (the bits of problem.loss)
            self._g, self._loss_here = problem.grad_and_loss(self.w)
        else:
            self._g = problem.grad(self.w)
        self._w_bar = replica_mean(self.w, self.config.replicas)  # w itself at replicas = 1
        g_bar = self._g if self.config.replicas == 1 else problem.grad(self._w_bar)
        self._gn2 = gn2 = row_dot(g_bar, g_bar)
        if self._g_limit is None:
            self._g_limit = divergence_limit(gn2, squared=True)
        check_divergence(k, "||grad f(W)||^2", gn2, self._g_limit, lr)
        check_divergence(k, "max |w|", np.abs(self.w).max(axis=1), self._w_limit, lr)

    def _write_batch(self, g: np.ndarray, xi: np.ndarray) -> None:
        """The batch's write: desired increment ``-lr (g + noise + bias)``."""
        signal = g + self._noise_scale * xi  # g + problem.noise(xi, n)
        self._write(-self.config.lr * (signal if self._bias is None else signal + self._bias))

    def _write_samples(self, g: np.ndarray, xi: np.ndarray) -> None:
        """Per-sample writes: sample i's gradient ``g + sqrt(sigma2/d) xi_i`` (read at the same
        point), written with desired increment ``-(lr/n) g_i`` at the weights the previous write
        left; the visited region includes the intermediate weights (where A3 must hold,
        Corollary 3PS)."""
        n = self.config.samples_per_update
        step = self.config.lr / n
        for i in range(n):
            signal = g + self._noise_scale * xi[:, i]  # g + problem.noise(xi_i, 1)
            self._write(-step * (signal if self._bias is None else signal + self._bias))

    def _write(self, dw: np.ndarray) -> None:
        """One write of desired increment ``dw`` (:func:`_write`) and the visited region."""
        self.w = w = _write(self._updater, self.w, dw, self._device_rngs, self._spread,
                            self._digital)
        w_seen = w[:, self._seen]
        self._w_lo = np.minimum(self._w_lo, w_seen.min(axis=1))
        self._w_hi = np.maximum(self._w_hi, w_seen.max(axis=1))


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
    w_next = updater(w, dw, rngs, spread).astype(w.dtype, copy=False)  # (see _in_dtype)
    return digital_blocks(w_next, w, dw, digital) if digital else w_next


def _in_dtype(x: np.ndarray | None, dtype: np.dtype) -> np.ndarray | None:
    """``x`` rounded to the run's ``dtype`` (``None`` stays ``None``): the float64 constants of a
    run (the gradient bias) and the result of an update that computes in float64 inside
    (Tiki-Taka, the pulse paths that do; docs/guide/simulation.md) are rounded to the dtype of
    the weights, so the iterate stays in ``SimConfig.dtype``."""
    return None if x is None else np.asarray(x).astype(dtype, copy=False)


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
