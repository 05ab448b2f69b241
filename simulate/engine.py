r"""The simulation engine: :func:`run` trains an oracle problem (or a network) through a pipeline.

Oracle problems (``quadratic``, ``least-squares``), update :math:`k = 0, \dots, K-1`:

.. math::

    g_k = \nabla f(\hat W_k) + \sqrt{\sigma^2/(n d)}\, \xi_k, \qquad
    W_{k+1} = U(W_k, -\alpha g_k),

with :math:`U` the digital, expected-analog or pulse-level update (:mod:`simulate.device`; for
``algorithm="mixed"`` the analog update with the blocks of ``digital_stages`` updated digitally,
:func:`simulate.device.updates.digital_blocks`; the trace's visited region, where A3 must hold, is
then that of the analog stages) and

- ``none`` / ``sync``: :math:`\hat W_k = W_k`, :math:`n = B b` (the mean of ``B`` micro-batch
  gradients). The two modes draw the same numbers and produce the same iterates bit for bit; they
  differ only in the clock cycles counted, :math:`2MB` or :math:`2(B + M - 1)` per update;
- ``async``: :math:`n = b` and block ``m`` of :math:`\hat W_k` is block ``m`` of
  :math:`W_{\max(0,\, k - d_m)}`, :math:`d_m` = :func:`simulate.pipeline.staleness.forward_delays`
  :math:`= M - m`. Before the pipeline has filled (``k < d_m``) the missing versions are the
  initial weights :math:`W_0` (the weights every stage held before the first update). Each block
  keeps its last :math:`d_m + 1` versions only (:class:`simulate.pipeline.staleness.StaleVersions`).
  After ``k`` updates, :math:`2(k + M - 1)` cycles have elapsed (0 before the first).

**Write semantics** (``SimConfig.write``). ``batch-mean`` (above) writes the batch mean once.
``per-sample`` draws the ``n`` samples' gradients :math:`g_{k,i} = \nabla f(\hat W_k) +
\sqrt{\sigma^2/d}\, \xi_{k,i}` at the same read point (so their mean has the law of :math:`g_k`)
and writes them one after the other, :math:`V_i = U(V_{i-1}, -(\alpha/n)\, g_{k,i})`,
:math:`V_0 = W_k`, :math:`W_{k+1} = V_n`; the visited region (``w_min/max_visited``) includes the
intermediate :math:`V_i`. At ``n = 1`` both semantics give the same bits (tested).

**Gradient bias** (``SimConfig.grad_bias`` :math:`= \beta`, Proposition IO). With
:math:`\beta > 0` every signal above (each sample's with per-sample writes) gets the fixed bias
:math:`b = \beta\,(W^* - W_0)/\lVert W^* - W_0\rVert` (:func:`gradient_bias`; :math:`W^*` the
minimiser): the same vector in every update and member, drawn from nothing (no random number
changes), pointing against the descent. At :math:`\beta = 0` nothing is added (today's bits).

**Replicas** (``SimConfig.replicas = R``, :mod:`simulate.pipeline.replicas`): each member holds
``R`` replicas on the leading axis, each running the mode above on its own streams, averaged and
programmed back every ``average_every`` updates; the trace records the replicas' mean
:math:`\bar W_k` (loss, ``||grad f||^2``), every replica's samples and the averagings' cycles.
``R = 1`` is the run above, bit for bit.

**Floating-point type** (``SimConfig.dtype``, ``float64`` or ``float32``). The problem's arrays are
rounded to the dtype (:meth:`simulate.problems.oracle.OracleProblem.in_dtype`; the exact constants
stay those of the float64 problem), and the iterate, gradients, noise draws, bias and device
updates are in it; the trace's loss and :math:`\|\nabla f\|^2` columns and ``avg_grad_norm2``
accumulate in float64. Same seed and dtype, same bits; the two dtypes draw different noise.

Cycles come from :func:`simulate.pipeline.staleness.cycles_after` (the closed forms of
:mod:`theory.schedules`).

Randomness: member ``r`` of the ensemble draws from its own streams (:mod:`simulate.rng`), and all
arithmetic is row-wise independent of the ensemble size, so a member reproduces the bits of the same
member run alone (every problem, networks included: a reduction over more weights than einsum's
8192-element buffer is done row by row, :func:`simulate.problems.oracle.row_dot`).

Divergence: the squared gradient norm at the current weights and the weights are checked at every
iterate with the rule of :mod:`simulate.pipeline.staleness` (a non-finite value, or one beyond
``DIVERGENCE_FACTOR`` times ``max(1, |value at the start|)``, squared for ``||grad f||^2``), which
raises :class:`theory.errors.DivergenceError` naming the step and the learning rate.

Networks (``digits-mlp``, ``digits-resmlp``) are trained by :mod:`simulate.problems.network`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from theory.errors import ParameterError

from .config import SimConfig, device_from_config
from .device import Updater
from .problems import (
    NETWORK_PROBLEMS,
    Progress,
    VersionHook,
    WeightsHook,
    make_problem,
    run_network,
    run_oracle,
)
from .trace import Trace

__all__ = [
    "run",
]

def run(
    config: SimConfig,
    seed: int | None = None,
    *,
    members: Iterable[int] | None = None,
    progress: Progress | None = None,
    record_versions: VersionHook | None = None,
    observe: WeightsHook | None = None,
) -> Trace:
    """Simulate ``config`` and return its :class:`~simulate.trace.Trace`.

    Parameters
    ----------
    config : SimConfig
        The run.
    seed : int, optional
        Root seed (default ``config.seed``); recorded in ``trace.config["seed"]``.
    members : iterable of int, optional
        Ensemble members to compute (default ``range(config.seeds)``); member ``r`` gives the same
        bits whichever other members run with it (use it to split an ensemble across workers).
    progress : callable, optional
        Called with the number of updates done since its previous call (e.g. ``tqdm.update``).
    record_versions : callable, optional
        Instrumentation (oracle problems): called as ``record_versions(k, versions)`` before update
        ``k``, where ``versions[m - 1]`` is the iterate index whose block ``m`` the signal read.
    observe : callable, optional
        Instrumentation (oracle problems): called as ``observe(k, w)`` at every logging point
        ``k``, after its measurement, with the iterate (``(members, d)``; read only); the run's
        bits do not depend on it (:func:`simulate.verification.local_floor.run_measuring_g2`).

    Networks (``digits-mlp``, ``digits-resmlp``) are delegated to
    :func:`simulate.problems.network_run.run_network` (the default architecture) with ``members``
    and ``progress``.

    **Same bits.** For a given ``config`` and ``seed``, member ``r`` of the trace (every array:
    loss, grad_norm2, test accuracy, the visited weights, avg_grad_norm2) is bit for bit the
    trace of ``run(config, seed, members=[r])`` and of any other ``members`` containing ``r``,
    for the oracle problems and the networks, every mode and update (tested, including networks
    of more than 8192 weights). Across machines the bits may differ with the BLAS and the CPU
    (the network matmuls); on one machine and one numpy they do not.

    Raises
    ------
    DivergenceError
        If the run blows up (see the module docstring).
    ParameterError
        A pulsed update that needs more than :data:`theory.limits.MAX_PULSES_PER_UPDATE` pulses
        on one device (it names ``lr``; checked before any pulse).

    Warns
    -----
    PinnedWarning
        An analog run pinned at its device bounds on most logging points
        (:class:`simulate.device.pinned.PinnedMonitor`).
    """
    seed = config.seed if seed is None else seed
    if config.problem in NETWORK_PROBLEMS:
        if record_versions is not None or observe is not None:
            raise ParameterError(
                "record_versions and observe are for the oracle problems; for networks use "
                "simulate.problems.network_run.train_network(..., record_versions=True)"
            )
        return run_network(
            replace(config, seed=seed), seed, members=members, progress=progress
        )
    problem = make_problem(config, seed)
    updater = Updater.from_config(config, device_from_config(config))
    members = list(range(config.seeds) if members is None else members)
    return run_oracle(config, seed, problem, updater, members, progress, record_versions,
                      observe)
