"""The engine: pipeline semantics (sync = none, async staleness), seeds, ensembles, divergence."""

from __future__ import annotations

import numpy as np
import pytest

from simulate import SimConfig, make_problem, run
from simulate.rng import member_generators
from theory import DivergenceError, ParameterError

ITERATES = ("loss", "grad_norm2", "max_abs_w", "w_min_visited", "w_max_visited", "avg_grad_norm2")


def _same_iterates(a, b):
    return all(np.array_equal(getattr(a, name), getattr(b, name)) for name in ITERATES)


def _config(**kw):
    base = dict(stages=4, micro_batches=3, micro_batch_size=2, steps=60, log_every=1, lr=0.2,
                dim=12, sigma2=0.5, seed=3)
    if kw.get("mode") == "async":  # B applies to none and sync only (simulate.config.RULES)
        del base["micro_batches"]
    return SimConfig(**(base | kw))


@pytest.mark.parametrize("algorithm,update", [("digital", "expected"), ("analog", "expected"),
                                              ("analog", "pulsed")])
def test_sync_iterates_equal_none_bit_for_bit(algorithm, update):
    kw = dict(algorithm=algorithm, update=update, device="reram-softbounds", seeds=2)
    none, sync = run(_config(mode="none", **kw)), run(_config(mode="sync", **kw))
    assert _same_iterates(none, sync)
    k = none.step
    np.testing.assert_array_equal(none.cycles, 2 * 4 * 3 * k)  # 2 M B per update
    np.testing.assert_array_equal(sync.cycles, 2 * (3 + 4 - 1) * k)  # 2 (B + M - 1) per update
    np.testing.assert_array_equal(sync.samples, 3 * 2 * k)


def _reference(config, delays):
    """Digital SGD with a full weight history: W_{k+1} = W_k - lr (grad f(W_hat_k) + noise_k)."""
    problem = make_problem(config)
    n = config.samples_per_update
    noise_rng = member_generators(config.seed, [0])["noise"][0]
    xi = noise_rng.standard_normal((config.steps, problem.dim))  # one chunk: steps <= 256
    history = [problem.w0.copy()]
    for k in range(config.steps):
        w_hat = np.concatenate([history[max(0, k - d)][blk]
                                for blk, d in zip(problem.blocks, delays, strict=True)])
        signal = problem.grad(w_hat) + problem.noise(xi[k], n)
        history.append(history[-1] - config.lr * signal)
    return problem, np.array(history)


@pytest.mark.parametrize("mode,stages", [("async", 4), ("async", 1), ("sync", 4), ("none", 3)])
def test_iterates_match_full_history_reference(mode, stages):
    config = _config(mode=mode, stages=stages, algorithm="digital", steps=40)
    delays = [stages - m if mode == "async" else 0 for m in range(1, stages + 1)]
    problem, history = _reference(config, delays)
    trace = run(config)
    np.testing.assert_allclose(trace.loss[0], problem.loss(history), rtol=1e-12, atol=1e-15)
    gn2 = np.sum(problem.grad(history) ** 2, axis=1)
    np.testing.assert_allclose(trace.avg_grad_norm2[0], gn2[:-1].mean(), rtol=1e-12)


@pytest.mark.parametrize("stages", [1, 2, 5])
def test_async_reads_the_predicted_versions(stages):
    """Instrumented run: block m of update k's signal is W_{max(0, k - (M - m))}."""
    seen = {}
    run(_config(mode="async", stages=stages, steps=25, seeds=2),
        record_versions=lambda k, versions: seen.__setitem__(k, versions))
    assert sorted(seen) == list(range(25))
    for k, versions in seen.items():
        assert versions == tuple(max(0, k - (stages - m)) for m in range(1, stages + 1))


def test_async_cycles_and_samples():
    trace = run(_config(mode="async", stages=4, steps=30, log_every=7))
    np.testing.assert_array_equal(trace.step, [0, 7, 14, 21, 28, 30])
    np.testing.assert_array_equal(trace.cycles, [0] + [2 * (k + 4 - 1) for k in trace.step[1:]])
    np.testing.assert_array_equal(trace.samples, 2 * trace.step)  # b samples per update


def test_logging_interval_does_not_change_the_run():
    dense = run(_config(mode="async", log_every=1, seeds=2))
    sparse = run(_config(mode="async", log_every=13, seeds=2))
    idx = np.searchsorted(dense.step, sparse.step)
    assert np.array_equal(dense.loss[:, idx], sparse.loss)
    assert np.array_equal(dense.avg_grad_norm2, sparse.avg_grad_norm2)
    np.testing.assert_allclose(dense.avg_grad_norm2, dense.grad_norm2[:, :-1].mean(axis=1),
                               rtol=1e-12)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_same_seed_same_bits_alone_and_in_ensemble(mode):
    """Pulsed update with device-to-device and cycle-to-cycle noise: every stream is exercised."""
    kw = dict(mode=mode, update="pulsed", device="idealized-constantstep", steps=30, lr=0.01)
    ensemble = run(_config(seeds=4, **kw))
    assert _same_iterates(ensemble, run(_config(seeds=4, **kw)))
    alone = run(_config(seeds=1, **kw))
    assert all(np.array_equal(getattr(alone, n)[0], getattr(ensemble, n)[0]) for n in ITERATES)
    member = run(_config(seeds=4, **kw), members=[2])
    assert all(np.array_equal(getattr(member, n)[0], getattr(ensemble, n)[2]) for n in ITERATES)
    # members differ from each other, and another root seed differs
    assert not np.array_equal(ensemble.loss[0], ensemble.loss[1])
    other = run(_config(seeds=1, **kw), seed=4)
    assert not np.array_equal(other.loss[0], alone.loss[0])
    assert other.config["seed"] == 4


def test_analog_with_unit_response_is_digital_sgd():
    """q_+ = q_- = 1 (idealized constant-step device, weights inside its range) is digital SGD."""
    kw = dict(mode="async", steps=50, seeds=2)
    analog = run(_config(algorithm="analog", device="idealized-constantstep", **kw))
    digital = run(_config(algorithm="digital", device="idealized-constantstep", **kw))
    assert np.all(analog.max_abs_w < 1.0)
    assert _same_iterates(analog, digital)


def test_soft_bounds_analog_differs_from_digital_and_stays_in_range():
    kw = dict(mode="sync", steps=200, seeds=2, lr=0.3, tau=0.5)
    analog, digital = run(_config(**kw)), run(_config(algorithm="digital", **kw))
    assert not np.array_equal(analog.loss, digital.loss)
    assert np.all(analog.max_abs_w < 0.5)
    np.testing.assert_array_equal(analog.max_abs_w,
                                  np.maximum(-analog.w_min_visited, analog.w_max_visited))


def test_least_squares_converges():
    trace = run(_config(problem="least-squares", mode="sync", steps=300, log_every=50, lr=0.05,
                        sigma2=0.01, seeds=2))
    assert np.all(trace.loss[:, -1] < 0.1 * trace.loss[:, 0])
    assert trace.constants.Delta == pytest.approx(trace.loss[0, 0])


def test_divergence_names_step_and_lr():
    with pytest.raises(DivergenceError, match=r"diverged at step \d+: .* lr=7") as info:
        run(_config(algorithm="digital", lr=7.0, steps=500))
    assert 0 < info.value.step < 500 and info.value.lr == 7.0


def test_progress_callback_counts_every_update():
    done = []
    run(_config(steps=37, log_every=5), progress=done.append)
    assert sum(done) == 37


def test_networks_are_delegated(monkeypatch):
    import simulate.engine

    calls = []

    def fake(config, seed, *, members=None, progress=None):
        calls.append((config, seed, members, progress))
        return "trace"

    monkeypatch.setattr(simulate.engine, "run_network", fake)
    config = SimConfig(problem="digits-resmlp", seed=5)
    assert run(config, 9, members=[1], progress=print) == "trace"
    (got, seed, members, progress), = calls
    assert got.problem == "digits-resmlp" and got.seed == seed == 9
    assert members == [1] and progress is print
    with pytest.raises(ParameterError, match="record_versions"):
        run(config, record_versions=lambda k, v: None)


def test_make_problem_of_a_network_names_the_oracle_problems():
    with pytest.raises(ParameterError, match="problem='digits-mlp' is not an oracle problem"):
        make_problem(SimConfig(problem="digits-mlp"))


# --- validation and resource limits (issue 11) ---------------------------------------------------

def test_integer_fields_accept_integral_floats_and_store_ints():
    cfg = SimConfig(steps=20.0, stages=2.0, dim=4.0, seeds=np.int64(2), log_every=5.0)
    assert (cfg.steps, cfg.stages, cfg.dim, cfg.seeds, cfg.log_every) == (20, 2, 4, 2, 5)
    assert all(type(getattr(cfg, name)) is int for name in ("steps", "stages", "dim", "seeds"))
    as_int = run(SimConfig(stages=2, dim=4, steps=20, seeds=2, log_every=5))
    assert _same_iterates(run(cfg), as_int)
    assert run(SimConfig(stages=2.0, dim=4)).loss.shape == (1, 101)


@pytest.mark.parametrize(("kw", "message"), [
    (dict(steps=20.5), r"^steps=20\.5 is not an integer; valid range \[1, inf\)"),
    (dict(stages="2"), r"^stages='2' is not an integer"),
    (dict(seed=-1.0), r"^seed=-1\.0 is out of range"),
    (dict(micro_batches=True), r"^micro_batches=True is not an integer"),
    (dict(steps=10**12), r"^steps=1000000000000 asks for 1e\+12 updates, more than the limit"),
    (dict(steps=10**400), r"^steps=1000000000\.\.\.0000000000 \(401 digits\) asks for"),
    (dict(seeds=10**9), r"^seeds=1000000000 asks for .* bytes of ensemble arrays"),
    (dict(dim=10**9), r"^dim=1000000000 asks for .* bytes of its Hessian"),
    (dict(steps=10**9, log_every=1), r"^log_every=1 asks for 8e\+09 bytes of trace"),
    (dict(problem="digits-mlp", micro_batch_size=10**8), r"^micro_batch_size=100000000 asks"),
    (dict(problem="digits-mlp", micro_batches=10**6, micro_batch_size=100),
     r"^micro_batches=1000000 asks for .* bytes of batch arrays"),
    (dict(problem="digits-mlp", seeds=10**4), r"^seeds=10000 asks for .* bytes"),
    (dict(steps=5, micro_batches=10**18), r"^micro_batches=1000000000000000000 asks for 1e\+19 "
                                          r"clock cycles"),
    (dict(steps=10, micro_batch_size=10**18), r"^micro_batch_size=1000000000000000000 asks for "
                                              r"1e\+19 samples"),
    (dict(device=["softbounds"]), r"^device=\['softbounds'\] is not a name"),
])
def test_config_refuses_with_the_field_name_first(kw, message):
    with pytest.raises(ParameterError, match=message):
        SimConfig(**kw)


def test_counts_are_exact_integers_beyond_the_float_mantissa():
    """2 M B K with B = 3^33 (> 2^53 / 10): the cycles are exact, not rounded through a float."""
    big = 3**33
    trace = run(SimConfig(steps=5, log_every=5, micro_batches=big))
    assert trace.cycles.dtype == np.int64 and int(trace.cycles[-1]) == 2 * big * 5
    assert int(trace.samples[-1]) == big * 5
    assert float(2 * big * 5) != 2 * big * 5  # the float would have rounded it


def test_pinned_run_warns_once_and_a_normal_run_does_not(recwarn):
    from simulate import PinnedWarning

    with pytest.warns(PinnedWarning, match=r"^lr=1e\+06: the run was pinned at the device "
                                           r"bounds on 10 of 10 logging points"):
        run(SimConfig(lr=1e6, steps=100))
    run(SimConfig(steps=100))  # the default run stays well inside its range
    run(SimConfig(algorithm="digital", lr=0.5, steps=100))  # no device bounds: no check
    assert not [w for w in recwarn if issubclass(w.category, PinnedWarning)]


def test_ensemble_members_keep_their_bits_beyond_einsums_buffer():
    """The squared gradient norm of a row longer than 8192 weights is the R = 1 run's bits."""
    from simulate.problems import row_dot

    g = np.random.default_rng(0).standard_normal((3, 9000))
    together = row_dot(g, g)
    for r in range(3):
        assert together[r] == row_dot(g[r:r + 1], g[r:r + 1])[0]
        assert together[r] == np.einsum("ri,ri->r", g[r:r + 1], g[r:r + 1])[0]
    short = g[:, :8192]  # within the buffer the vectorised reduction is already row-wise exact
    np.testing.assert_array_equal(row_dot(short, short), np.einsum("ri,ri->r", short, short))
