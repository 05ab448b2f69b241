"""The exact search's strategies (bounds.planning.strategies): each one's contract, and the public
planners as compositions of one GridSearch with an objective and a cost."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bounds import (
    Layer,
    Model,
    PlanHardware,
    PlanLimits,
    ProblemParams,
    TransferSettings,
    from_preset,
    load_model,
    plan,
    plan_tiki_taka,
    theory_values,
)
from bounds.planning import (
    AnalogBounds,
    ForecastObjective,
    GridSearch,
    GuaranteeObjective,
    Partition,
    PlainCost,
    TikiTakaBounds,
    TransferCost,
)
from theory.calibration import Calibration, ModeFit, problem_fingerprint
from theory.complexity import REACHABLE

#: the proved Tiki-Taka variant (Corollary TT0's settings)
PROVED = TransferSettings(every=4, slice="all", reset=True, fast_device="digital")


def _hardware(accelerators=4) -> PlanHardware:
    return PlanHardware(from_preset("capacitor-linearstep", weight_bound=0.6),
                        accelerators=accelerators)


def _problem() -> ProblemParams:
    return ProblemParams(Delta=0.138716, sigma2=0.1)


def _partitions(layers: int, stages: int):
    """Every contiguous split of ``layers`` layers into ``stages`` non-empty stages (starts)."""
    for cuts in itertools.combinations(range(1, layers), stages - 1):
        yield (0, *cuts)


def _model(rows) -> Model:
    return Model("m", tuple(Layer(f"l{i}", r, 8) for i, r in enumerate(rows)))


def test_plain_cost_does_not_depend_on_the_partition():
    model = _model([3, 5, 7, 2])
    cost = PlainCost()
    k = np.array([1.0, 7.0, 100.0, np.inf])
    for starts in _partitions(4, 2):
        part = Partition.from_starts(starts, model.work, np.ones(4), model.activations)
        assert np.array_equal(cost.cycles("sync", k, 2, 3, part),
                              cost.least_cycles("sync", k, 2, 3))


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.integers(1, 40), min_size=1, max_size=7),
       stages=st.integers(1, 7), every=st.integers(1, 9), slice_=st.sampled_from(["column", "all"]),
       mode=st.sampled_from(["sync", "async"]), k=st.integers(1, 10**6))
def test_transfer_cost_least_cycles_is_below_every_partition(rows, stages, every, slice_, mode, k):
    """The grid's lower bound (what makes the branch and bound exact) holds for every split."""
    stages = min(stages, len(rows))
    model = _model(rows)
    cost = TransferCost(TransferSettings(every=every, slice=slice_), model)
    low = cost.least_cycles(mode, float(k), stages, 2)
    for starts in _partitions(len(rows), stages):
        part = Partition.from_starts(starts, model.work, np.ones(len(rows)), model.activations)
        assert low <= cost.cycles(mode, float(k), stages, 2, part)
        assert cost.candidate({
            "mode": mode, "stages": stages, "micro_batches": 2, "micro_batch_size": 1,
            "iterations": k, "cycles": 0, "cycle_time_s": 1.0, "seconds": 0.0,
            "partition": part, "memory_bytes": (0,) * stages, "bound": "none",
        }).event_cycles == cost.event_cycles(part)


def test_guarantee_objective_is_inf_exactly_where_unreachable():
    hw, problem = _hardware(), _problem()
    bounds = AnalogBounds(1e-4, theory_values(hw.hardware, problem))
    grid = {"B": np.arange(1, 65)[:, None], "b": np.arange(1, 9)[None, :], "M": 4}
    k = GuaranteeObjective(bounds).iterations("sync", grid)
    reachable = np.broadcast_to(bounds.guarantee("sync", grid).status == REACHABLE, k.shape)
    assert reachable.any() and (~reachable).any()  # the grid straddles the floor
    assert np.array_equal(np.isfinite(k), reachable)


def test_forecast_objective_has_no_iterations_where_the_guarantee_has_no_step():
    hw, problem = _hardware(), _problem()
    bounds = AnalogBounds(1e-4, theory_values(hw.hardware, problem))
    fit = ModeFit("sync", (0.2, 0.04, 1e-12), (0.2, 0.04, 1e-12), (0.2, 0.04, 1e-12), (), 0.1,
                  20)
    calibration = Calibration(fits={"sync": fit}, problem={"start": 2.0},
                              fingerprint=problem_fingerprint({"start": 2.0}), design=(),
                              seeds={}, version="test")
    grid = {"B": np.arange(1, 65)[:, None], "b": np.arange(1, 9)[None, :], "M": 4}
    step, k, low, high = ForecastObjective(bounds, calibration).forecast("sync", grid)
    assert np.array_equal(np.isfinite(k), np.isfinite(step))
    assert np.isfinite(step).any() and not np.isfinite(step).all()
    assert np.all(low[np.isfinite(k)] <= high[np.isfinite(k)])


def test_tiki_taka_bounds_without_an_entry_step_at_the_analog_step_cap():
    hw, problem = _hardware(), _problem()
    values = theory_values(hw.hardware, problem)
    bounds = TikiTakaBounds(1e-6, values, TransferSettings())  # no proved entry covers these
    assert bounds.entries["sync"] == () and bounds.label("sync", {"B": 1, "b": 1, "M": 2}) == \
        "none"
    grid = {"B": np.array([[1]]), "b": np.array([[1]]), "M": np.array([[2]])}
    assert bounds.analog.guarantee("sync", grid).status.ravel()[0] != REACHABLE
    assert bounds.step("sync", grid).ravel()[0] == bounds.analog.step_cap("sync", grid).ravel()[0]
    assert bounds.values["T"] == 1 and bounds.values["rho"] == 1.0


def test_the_analog_plan_is_the_guarantee_with_the_plain_cost():
    model, hw, problem = load_model("digits-mlp"), _hardware(), _problem()
    limits = PlanLimits(max_micro_batches=16, max_micro_batch_size=4)
    expected = plan(model, hw, problem, 0.02, limits, relax=False)
    bounds = AnalogBounds(0.02, theory_values(hw.hardware, problem))
    found = GridSearch(model, hw, limits, GuaranteeObjective(bounds), PlainCost()).search(
        limits.modes).found
    assert found == [expected.best, *expected.alternatives]


@pytest.mark.parametrize("slice_", ["all", "column"])
def test_the_tiki_taka_plan_is_the_guarantee_with_the_transfer_cost(slice_):
    transfer = PROVED if slice_ == "all" else TransferSettings(every=4)
    model, hw, problem = load_model("digits-mlp"), _hardware(), _problem()
    limits = PlanLimits(max_micro_batches=16, max_micro_batch_size=4)
    bounds = TikiTakaBounds(0.02, theory_values(hw.hardware, problem), transfer)
    search = GridSearch(model, hw, limits, GuaranteeObjective(bounds),
                        TransferCost(transfer, model))
    if slice_ == "column":  # no proved entry: the planner refuses without a calibration
        assert not any(bounds.entries.values())
        with pytest.raises(Exception, match="no proved"):
            plan_tiki_taka(model, hw, problem, 0.02, limits, transfer=transfer)
        return
    expected = plan_tiki_taka(model, hw, problem, 0.02, limits, transfer=transfer)
    found = search.search(limits.modes).found
    assert found == [expected.best, *expected.alternatives]
    assert all(c.cycles == c.transfer_cycles + int(PlainCost().cycles(
        c.mode, c.iterations, c.stages, c.micro_batches, c.partition)) for c in found)
