"""Network runs in float32 (``SimConfig.dtype``): the same bits within the dtype, curves that agree
with float64 within their seed intervals (the oracle problems: tests/test_oracle_dtype.py)."""

import json
from dataclasses import replace

import numpy as np
import pytest

from simulate import NetworkSpec, SimConfig, train_network
from simulate.commands import simulate as simulate_command
from simulate.problems import load_digits_data
from theory import ParameterError

SPEC = NetworkSpec(layers=4, width=16, grad_norm=False)


def _config(**kw) -> SimConfig:
    base = dict(problem="digits-mlp", mode="none", algorithm="analog", device="softbounds",
                tau=1.0, update="expected", micro_batch_size=8, lr=0.1, steps=40, log_every=20,
                seeds=2, dtype="float32")
    return SimConfig(**{**base, **kw})


def test_a_float32_run_computes_in_float32_and_repeats_its_bits():
    cfg = _config()
    run = train_network(cfg, spec=SPEC)
    assert run.weights.dtype == run.biases.dtype == run.trace.loss.dtype == np.float32
    again = train_network(cfg, spec=SPEC)
    np.testing.assert_array_equal(run.weights, again.weights)
    np.testing.assert_array_equal(run.trace.loss, again.trace.loss)
    alone = train_network(cfg, spec=SPEC, members=[1])  # a member alone: its ensemble bits
    np.testing.assert_array_equal(alone.weights[0], run.weights[1])
    np.testing.assert_array_equal(alone.trace.test_accuracy[0], run.trace.test_accuracy[1])
    assert run.trace.config["dtype"] == "float32"
    double = train_network(replace(cfg, dtype="float64"), spec=SPEC)
    assert double.weights.dtype == np.float64 and not np.array_equal(double.weights, run.weights)


def test_float32_data_are_the_float64_data_rounded():
    single = load_digits_data("digits-holdout", "float32")
    double = load_digits_data("digits-holdout")
    assert single.x_train.dtype == single.x_val.dtype == np.float32
    np.testing.assert_array_equal(single.x_test, double.x_test.astype(np.float32))
    assert single.y_train is double.y_train and not single.x_train.flags.writeable


def test_float32_agrees_with_float64_within_the_seed_intervals():
    """8 seeds, same initial weights and batches: the mean over seeds of the float32 - float64
    difference of the final loss and test accuracy lies within 3 standard errors of the float64
    curve's seed spread (a float32 run that trained differently, e.g. lost its updates to
    rounding, would fall outside)."""
    cfg = _config(seeds=8, steps=120, log_every=40)
    single, double = (train_network(c, spec=SPEC).trace
                      for c in (cfg, replace(cfg, dtype="float64")))
    for name in ("loss", "test_accuracy"):
        a, b = getattr(single, name), getattr(double, name)
        standard_error = b.std(axis=0, ddof=1) / np.sqrt(b.shape[0])
        assert np.all(np.abs((a - b).mean(axis=0)) <= 3 * standard_error + 1e-12), name
    assert double.loss[:, -1].mean() < 0.8 * double.loss[:, 0].mean()  # the runs did train


def test_an_unknown_dtype_is_refused():
    with pytest.raises(ParameterError, match=r"^dtype='float16' is unknown; valid: float64, "):
        SimConfig(problem="digits-mlp", dtype="float16")
    with pytest.raises(ParameterError, match=r"^dtype='float16' is unknown; valid: float64, "):
        SimConfig(dtype="float16")  # an oracle problem (which runs in float32 too)


def test_the_cli_takes_dtype(capsys):
    code = simulate_command.main(["--problem", "digits-mlp", "--dtype", "float32", "--steps", "2",
                                  "--log-every", "2", "--json"])
    assert code in (0, None)
    trace = json.loads(capsys.readouterr().out)["trace"]
    assert trace["config"]["dtype"] == "float32"
    with pytest.raises(SystemExit) as stop:
        simulate_command.main(["--dtype", "float16", "--steps", "2"])
    assert stop.value.code == 2
    assert "--dtype: invalid choice: 'float16'" in capsys.readouterr().err


def test_a_network_run_has_the_same_bits_whatever_the_blas_threads():
    """A run is on one BLAS thread (simulate.problems.network.one_blas_thread): its bits do not
    depend on the caller's thread count (float32 losses measured on two threads differed by
    2e-7 relative: the products of 256 rows by 64 pixels are split between the threads)."""
    from threadpoolctl import threadpool_limits

    cfg = _config(steps=4, log_every=2, seeds=1)
    spec = NetworkSpec()  # (float32 on two threads: its gradient norms differed on main 316249f)
    traces = []
    for threads in (1, 2):
        with threadpool_limits(limits=threads, user_api="blas"):
            traces.append(train_network(cfg, spec=spec).trace)
    for name in ("loss", "grad_norm2", "test_accuracy"):
        np.testing.assert_array_equal(getattr(traces[0], name), getattr(traces[1], name))
