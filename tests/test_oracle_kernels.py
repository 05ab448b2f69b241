"""The compiled product of the oracle problems has einsum's bits; the loss computed with the
gradient has the bits of the loss computed alone; the compiled loop of the quadratic runs has the
bits, the hooks, the warnings and the errors of the step-by-step numpy loop."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulate import SimConfig
from simulate.config import device_from_config
from simulate.device import Updater
from simulate.problems import OracleTraining, make_problem
from simulate.problems.oracle import LeastSquares, Quadratic
from simulate.problems.oracle_kernels import matvec, matvec_numpy
from simulate.verification.checks import TT0_SETTINGS
from theory.errors import DivergenceError

#: Corollary TT0's Tiki-Taka, the variant the compiled loop takes
TT0 = {"algorithm": "tiki-taka", **TT0_SETTINGS}


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 64), n=st.integers(1, 300), m=st.integers(1, 300),
       dtype=st.sampled_from(["float64", "float32"]), lead=st.sampled_from([(), (2,), (3, 2)]),
       seed=st.integers(0, 2**32 - 1))
def test_matvec_has_einsums_bits(rows, n, m, dtype, lead, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((*lead, rows, n)).astype(dtype)
    a = rng.standard_normal((n, m)).astype(dtype)
    got, want = matvec(x, a), matvec_numpy(x, a)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want)


@pytest.mark.parametrize("layout", ["transposed", "strided x", "fortran x", "mixed dtypes",
                                    "vector"])
def test_matvec_layouts_have_einsums_bits(layout):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((40, 40))
    x = rng.standard_normal((48, 40))
    if layout == "transposed":
        a = rng.standard_normal((60, 40)).T  # einsum's own order (the kernel steps aside)
    elif layout == "strided x":
        x = rng.standard_normal((48, 80))[:, ::2]
    elif layout == "fortran x":
        x = np.asfortranarray(x)
    elif layout == "mixed dtypes":
        x = x.astype(np.float32)
    else:
        x = x[0]
    assert np.array_equal(matvec(x, a), matvec_numpy(x, a))


def test_matvec_rows_do_not_depend_on_the_others():
    rng = np.random.default_rng(4)
    x, a = rng.standard_normal((48, 64)), rng.standard_normal((64, 64))
    whole = matvec(x, a)
    assert all(np.array_equal(whole[r], matvec(x[r:r + 1], a)[0]) for r in range(48))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kind", ["quadratic", "least-squares"])
def test_grad_and_loss_have_the_bits_of_each(kind, dtype):
    rng = np.random.default_rng(5)
    problem = (Quadratic.random(24, 3, rng, sigma2=1.0) if kind == "quadratic"
               else LeastSquares.random(2, rng, sigma2=1.0)).in_dtype(dtype)
    w = rng.standard_normal((7, problem.dim)).astype(dtype)
    g, loss = problem.grad_and_loss(w)
    assert np.array_equal(g, problem.grad(w)) and np.array_equal(loss, problem.loss(w))
    assert g.dtype == problem.grad(w).dtype


def _oracle(config: SimConfig) -> OracleTraining:
    problem = make_problem(config)
    updater = Updater.from_config(config, device_from_config(config))
    return OracleTraining(config, config.seed, problem, updater, list(range(config.seeds)))


def _by_steps(state: OracleTraining, observe):
    """The numpy path: :meth:`OracleTraining.measure` and :meth:`step` one at a time."""
    steps = state.config.steps
    for k in range(steps + 1):
        if k in state.log_at:
            state.measure(k)
            observe(k, state.w)
        if k < steps:
            state.step(k)
    return state.finish()


def _two_paths(config: SimConfig):
    """The compiled run and the step-by-step run of ``config``: traces, observed iterates,
    warnings."""
    results = []
    for drive in (lambda s, o: s.run(o), _by_steps):
        state, seen = _oracle(config), []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            trace = drive(state, lambda k, w, seen=seen: seen.append((k, np.array(w, copy=True))))
        results.append((trace, seen, [str(w.message) for w in caught], state))
    assert results[0][3]._compiled_terms() is not None  # the first took the compiled loop
    return results


COMPILED = [
    {},
    {"mode": "async", "stages": 4, "lr": 0.05},
    {"mode": "sync", "stages": 3, "micro_batches": 2, "dtype": "float32"},
    {"write": "per-sample", "micro_batch_size": 3, "grad_bias": 0.2},
    {"mode": "async", "stages": 3, "write": "per-sample", "micro_batch_size": 2,
     "dtype": "float32", "tau": 0.5},
    {"algorithm": "digital", "mode": "async", "stages": 2, "grad_bias": 0.1},
    {"algorithm": "mixed", "mode": "async", "stages": 3, "digital_stages": "2"},
    {"algorithm": "mixed", "stages": 2, "digital_stages": "1,2", "write": "per-sample",
     "micro_batch_size": 2},
    {"lr": 3.0, "tau": 0.3, "dim": 4, "stages": 2},  # pinned at the bounds: the warning
    # Corollary TT0's Tiki-Taka (TT0_SETTINGS): fresh, asynchronous, per-sample, no transfer
    {**TT0, "transfer_every": 4, "transfer_lr": 0.7},
    {**TT0, "mode": "async", "stages": 4, "transfer_every": 2, "grad_bias": 0.1},
    {**TT0, "mode": "sync", "stages": 3, "micro_batches": 2, "write": "per-sample",
     "micro_batch_size": 3, "transfer_every": 5},
    {**TT0, "transfer_every": 3, "transfer_lr": 0.0},
    {**TT0, "transfer_every": 1, "lr": 2.0, "tau": 0.3, "dim": 4},  # pinned: the warning
]


@pytest.mark.parametrize("options", COMPILED)
def test_the_compiled_loop_has_the_bits_of_the_step_loop(options):
    config = SimConfig(problem="quadratic", steps=300, seeds=3, log_every=7, **options)
    (fast, fast_seen, fast_warned, fast_state), (slow, slow_seen, slow_warned, slow_state) = \
        _two_paths(config)
    for name in ("step", "cycles", "loss", "grad_norm2", "max_abs_w", "w_min_visited",
                 "w_max_visited", "avg_grad_norm2"):
        left, right = np.asarray(getattr(fast, name)), np.asarray(getattr(slow, name))
        assert left.dtype == right.dtype and left.tobytes() == right.tobytes(), name
    assert [k for k, _ in fast_seen] == [k for k, _ in slow_seen] == list(fast.step)
    pairs = zip(fast_seen, slow_seen, strict=True)
    assert all(a.tobytes() == b.tobytes() for (_, a), (_, b) in pairs)
    assert fast_warned == slow_warned
    if options.get("algorithm") == "tiki-taka":  # the state left behind: A, C and the counts
        left, right = fast_state._updater, slow_state._updater
        assert left.a.tobytes() == right.a.tobytes() and left.c.tobytes() == right.c.tobytes()
        assert (left.count, left.writes) == (right.count, right.writes)


@pytest.mark.parametrize("options", [COMPILED[8], COMPILED[-1]])
def test_the_pinned_cases_warn(options):
    config = SimConfig(problem="quadratic", steps=300, seeds=3, log_every=7, **options)
    assert any("pinned" in message for message in _two_paths(config)[0][2])


@pytest.mark.parametrize("options", [{"algorithm": "digital", "lr": 50.0},
                                     {"algorithm": "digital", "lr": 4.0, "mode": "async",
                                      "stages": 4, "dtype": "float32"}])
def test_the_compiled_loop_diverges_where_the_step_loop_does(options):
    config = SimConfig(problem="quadratic", steps=400, seeds=2, log_every=1, **options)
    errors, seen = [], []
    for drive in (lambda s, o: s.run(o), _by_steps):
        state, points = _oracle(config), []
        with pytest.raises(DivergenceError) as caught:
            drive(state, lambda k, w, points=points: points.append(k))
        errors.append(caught.value)
        seen.append(points)
    assert str(errors[0]) == str(errors[1]) and errors[0].step == errors[1].step
    assert seen[0] == seen[1] and len(seen[0]) == errors[0].step


@pytest.mark.parametrize("options", [{"problem": "least-squares"}, {"replicas": 2},
                                     {"algorithm": "tiki-taka"}, {**TT0, "tt_gamma": 0.5},
                                     {**TT0, "transfer_slice": "column"},
                                     {**TT0, "transfer_reset": False}, {**TT0, "dtype": "float32"},
                                     {**TT0, "fast_device": "softbounds"},
                                     {"device": "ecram-linearstep"},
                                     {"update": "pulsed"}, {"dim": 1, "stages": 1},
                                     {"algorithm": "mixed", "stages": 2, "digital_stages": "1",
                                      "device": "ecram-linearstep"}])
def test_the_other_runs_take_the_step_loop(options):
    assert _oracle(SimConfig(steps=10, seeds=2, **options))._compiled_terms() is None
