"""The runs as states (simulate.problems): set up, measure and step one update at a time, finish.

Driving a :class:`NetworkTraining` or an :class:`OracleTraining` by hand gives the bits of
:func:`train_network` / :func:`simulate.engine.run`, and the state can be read between updates.
"""

from __future__ import annotations

import numpy as np
import pytest

from simulate import NetworkSpec, SimConfig, Updater, device_from_config, run, train_network
from simulate.problems import NetworkTraining, OracleTraining, make_problem
from theory.errors import DivergenceError

SMALL = NetworkSpec(layers=3, width=8)


def _drive(state, steps: int):
    """Measure at every logging point and step between them, by hand; the per-update weights."""
    seen = []
    for k in range(steps + 1):
        if k in state.log_at:
            state.measure(k)
        if k < steps:
            state.step(k)
            seen.append(np.array(state.w, copy=True))
    return state.finish(), seen


def _same_trace(a, b) -> None:
    for name in ("step", "samples", "cycles", "loss", "grad_norm2", "test_accuracy",
                 "max_abs_w", "w_min_visited", "w_max_visited"):
        left, right = np.asarray(getattr(a, name)), np.asarray(getattr(b, name))
        assert left.shape == right.shape and left.tobytes() == right.tobytes(), name
    assert a.config == b.config


@pytest.mark.parametrize("options", [
    {},
    {"update": "pulsed"},
    {"update": "pulsed", "micro_batches": 2, "micro_batch_size": 2, "write": "per-sample"},
    {"mode": "async", "stages": 3, "update": "pulsed", "pulse_type": "deterministic"},
    {"algorithm": "mixed", "stages": 3, "digital_stages": "2"},
])
def test_a_network_stepped_by_hand_has_the_bits_of_train_network(options):
    config = SimConfig(problem="digits-mlp", steps=12, seeds=2, log_every=5, **options)
    whole = train_network(config, spec=SMALL)
    by_hand, seen = _drive(NetworkTraining(config, spec=SMALL), config.steps)
    _same_trace(by_hand.trace, whole.trace)
    assert by_hand.weights.tobytes() == whole.weights.tobytes()
    assert by_hand.biases.tobytes() == whole.biases.tobytes()
    assert len(seen) == config.steps and not np.array_equal(seen[0], seen[-1])


def test_a_network_state_reads_its_weights_between_updates():
    config = SimConfig(problem="digits-mlp", steps=4, seeds=2)
    state = NetworkTraining(config, spec=SMALL, record_versions=True)
    start = state.w.copy()
    state.measure(0)
    state.step(0)
    assert state.w.shape == start.shape and not np.array_equal(state.w, start)
    assert np.all(state.w_min <= np.minimum(start.min(axis=1), state.w.min(axis=1)))
    assert np.all(state.w_max >= np.maximum(start.max(axis=1), state.w.max(axis=1)))


def _oracle(config: SimConfig) -> OracleTraining:
    problem = make_problem(config)
    updater = Updater.from_config(config, device_from_config(config))
    return OracleTraining(config, config.seed, problem, updater, list(range(config.seeds)))


@pytest.mark.parametrize("options", [
    {},
    {"mode": "async", "stages": 4, "algorithm": "tiki-taka", "tau": 0.4, "lr": 0.02},
    {"replicas": 3, "average_every": 4, "programming_error": 1e-3, "lr": 0.1},
    {"micro_batches": 4, "write": "per-sample", "update": "pulsed", "tau": 0.5, "lr": 0.02},
    {"problem": "least-squares", "algorithm": "digital", "stages": 2, "grad_bias": 0.05},
])
def test_an_oracle_run_stepped_by_hand_has_the_bits_of_run(options):
    config = SimConfig(steps=40, seeds=2, log_every=3, **options)
    whole = run(config)
    by_hand, seen = _drive(_oracle(config), config.steps)
    _same_trace(by_hand, whole)
    assert by_hand.avg_grad_norm2.tobytes() == whole.avg_grad_norm2.tobytes()
    assert by_hand.constants == whole.constants
    assert len(seen) == config.steps


def test_an_oracle_state_reports_divergence_at_the_step_that_diverged():
    config = SimConfig(algorithm="digital", lr=50.0, steps=200, seeds=2)
    state = _oracle(config)
    with pytest.raises(DivergenceError) as caught:
        for k in range(config.steps):
            state.step(k)
    with pytest.raises(DivergenceError) as whole:
        run(config)
    assert str(caught.value) == str(whole.value)
