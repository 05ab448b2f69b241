"""The kinds planner (bounds.plan_modes) against exhaustive enumeration, and its building blocks.

Brute force: every contiguous layout with every stage-to-kind assignment (the kinds DP), and every
(mode, R, M, layout, b, B, P, step) of a small instance (the per-mode comparison), computed
directly from the primitives (stage times, evaluate_guarantee, cycles_after, the local-SGD
closed form written out here, the averaging time), not through the planner's search.
"""

import itertools
import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from bounds import (
    AcceleratorKind,
    KindsHardware,
    Layer,
    Model,
    ModeLimits,
    ProblemParams,
    from_preset,
    plan_modes,
)
from bounds.planning import (
    STEP_GRID,
    averaging_time_s,
    guarantee_values,
    kind_partitions,
    programming_noise,
    segment_times,
)
from simulate import build_timeline
from theory import REACHABLE, cycles_after, evaluate_guarantee, local_sgd, theorems
from theory.mixed import Block, digital_block, mixed_constants
from theory.symbols import K, alpha, n

ANALOG = from_preset("reram-softbounds")


def _hardware(analog=3, digital=2, tiles=3, memory=2e4, std=None):
    kinds = [AcceleratorKind("aimc", "analog", analog, hardware=ANALOG, tiles=tiles,
                             programming_error_std=std)]
    if digital:
        kinds.append(AcceleratorKind("gpu", "digital", digital, memory_bytes=memory,
                                     mac_time_s=2e-12, clock_hz=1e9))
    return KindsHardware(tuple(kinds))


def _model(shapes, mvms, digital_last=True):
    pairs = enumerate(zip(shapes, mvms, strict=True))
    layers = [Layer(f"l{i}", r, c, w) for i, ((r, c), w) in pairs]
    last = (Layer("head", 64, 40, 2, hosts=("digital",)),) if digital_last else ()
    return Model("tiny", tuple(layers), digital_last=last)


def _layouts(n_layers, stages, kinds):
    """Every split into ``stages`` contiguous stages and every assignment of kinds to them."""
    for cuts in itertools.combinations(range(1, n_layers), stages - 1):
        starts = (0, *cuts)
        for assign in itertools.product(range(kinds), repeat=stages):
            yield starts, assign


def _brute_layout(seg, counts, stages, available):
    best = math.inf
    n_layers = seg[0].shape[0] - 1
    for starts, assign in _layouts(n_layers, stages, len(seg)):
        limits = enumerate(zip(counts, available, strict=True))
        if any(assign.count(t) > min(c, a) for t, (c, a) in limits):
            continue
        ends = (*starts[1:], n_layers)
        best = min(best, max(seg[t][s, e] for t, s, e in zip(assign, starts, ends, strict=False)))
    return best


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_kind_dp_matches_brute_force(data):
    n_layers = data.draw(st.integers(1, 6))
    kinds = data.draw(st.integers(1, 3))
    counts = tuple(data.draw(st.lists(st.integers(1, 3), min_size=kinds, max_size=kinds)))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    seg = []
    for _ in range(kinds):
        table = rng.integers(1, 20, size=(n_layers + 1, n_layers + 1)).astype(float)
        table[rng.random(table.shape) < 0.2] = np.inf  # segments that do not fit
        seg.append(table)
    top = min(n_layers, sum(counts))
    dp = kind_partitions(seg, counts, top)
    for stages in range(1, top + 1):
        available = tuple(data.draw(st.integers(0, c)) for c in counts)
        value, state = dp.best(stages, available)
        assert value == _brute_layout(seg, counts, stages, available)
        if math.isfinite(value):
            part = dp.partition(stages, state)
            assert part.stages == stages and sum(part.sizes) == n_layers
            assert part.bottleneck == value
            assert all(u <= a for u, a in zip(part.used(kinds), available, strict=False))


def test_digital_only_layers_stay_off_analog_and_capacity_holds():
    model = _model([(100, 100), (200, 100), (100, 50)], [4, 2, 8])
    hw = _hardware()
    seg = segment_times(model, hw, 1)
    n_layers = len(model.chain)
    assert np.isinf(seg[0][:, n_layers]).all()  # the head may not sit on the analog kind
    assert np.isfinite(seg[1][n_layers - 1, n_layers])
    tiles = [layer.tiles(128, 128) for layer in model.chain]
    for k in range(n_layers):
        for i in range(k + 1, n_layers):
            fits = sum(tiles[k:i]) <= 3
            assert np.isfinite(seg[0][k, i]) == fits


def _local_sgd_k(v, step, eps, replicas, batch, period, nu):
    """K of the local-SGD row at a fixed step, written out (theory.local_sgd docstring)."""
    floor = (v["L"] * step * v["q_max"] ** 2 * v["sigma2"] / (replicas * batch * v["q_min"])
             + v["G_inf"] ** 2 * v["sigma2"] / (v["theta"] * batch * v["q_min"] ** 2)
             + v["L"] ** 2 * step**2 * v["q_max"] ** 2 * v["sigma2"] * (period - 1)
             / (batch * v["q_min"])
             + v["L"] * nu / (step * v["q_min"] * period))
    if eps <= floor:
        return math.inf
    k = 2 * v["Delta"] / (step * v["q_min"] * (eps - floor))
    return math.ceil(k) if k < 2.0**62 else math.inf


def _theorem_2m_values(kinds, stage_w, problem):
    """Theorem 2M's constants of a layout, from the primitives (theory.mixed, the kind's A3
    constants, shares = the stages' weight shares), and the algorithm of its rows."""
    blocks = []
    for kind, w in zip(kinds, stage_w, strict=True):
        share = w / sum(stage_w)
        if kind.analog:
            dc = kind.hardware.device_constants()
            blocks.append(Block(float(dc.q_min), float(dc.q_max), float(dc.G_inf), share))
        else:
            blocks.append(digital_block(share))
    base = guarantee_values(kinds, problem)
    if len({(x.q_min, x.q_max, x.G_inf) for x in blocks}) == 1:
        return base, "analog"
    return base | mixed_constants(blocks).values(), "mixed"


def _brute_modes(model, hw, problem, eps, lim, block_wise=False):
    """The best time of every mode over every choice; ``block_wise``: the pipelines' guarantee
    of each layout is Theorem 2M's at its weight shares (else the all-coordinate constants)."""
    chain_n = len(model.chain)
    counts = hw.counts
    weights = [layer.rows * layer.cols for layer in model.chain]
    best = dict.fromkeys(("sync", "async", "dp", "hybrid"), math.inf)
    for b_ in lim.micro_batch_sizes:
        seg = segment_times(model, hw, b_)
        for stages in range(1, min(chain_n, hw.accelerators) + 1):
            for starts, assign in _layouts(chain_n, stages, len(hw.kinds)):
                ends = (*starts[1:], chain_n)
                times = [seg[t][s, e] for t, s, e in zip(assign, starts, ends, strict=False)]
                if not all(map(math.isfinite, times)):
                    continue
                usage = [assign.count(t) for t in range(len(hw.kinds))]
                kinds = [hw.kinds[t] for t in assign]
                v = guarantee_values(kinds, problem)
                stage_w = [sum(weights[s:e]) for s, e in zip(starts, ends, strict=False)]
                pv, algo = (_theorem_2m_values(kinds, stage_w, problem) if block_wise
                            else (v, "analog"))
                cyc = max(times)
                if all(u <= c for u, c in zip(usage, counts, strict=False)):
                    for count in range(1, lim.max_micro_batches + 1):
                        r = evaluate_guarantee("sync", eps, algorithm=algo,
                                               on_unreachable="status", **pv, B=count, b=b_,
                                               M=stages)
                        if r.status == REACHABLE:
                            t = float(cycles_after("sync", r.iterations_int, stages, count)) * cyc
                            best["sync"] = min(best["sync"], t)
                    r = evaluate_guarantee("async", eps, algorithm=algo, on_unreachable="status",
                                           **pv, b=b_, M=stages)
                    if r.status == REACHABLE:
                        t = float(cycles_after("async", r.iterations_int, stages)) * cyc
                        best["async"] = min(best["async"], t)
                for replicas in range(2, hw.accelerators + 1):
                    if not all(replicas * u <= c for u, c in zip(usage, counts, strict=False)):
                        continue
                    avail = [c // replicas for c in counts]
                    fewest = min(
                        (m for m in range(1, chain_n + 1)
                         for st_, asg in _layouts(chain_n, m, len(hw.kinds))
                         if all(asg.count(t) <= avail[t] for t in range(len(hw.kinds)))
                         and all(math.isfinite(seg[t][s, e]) for t, s, e in
                                 zip(asg, st_, (*st_[1:], chain_n), strict=False))),
                        default=None)
                    nu = sum(float(programming_noise(k, w))
                             for k, w in zip(kinds, stage_w, strict=True))
                    t_avg = averaging_time_s(kinds, stage_w, replicas, hw.link_bytes_per_s,
                                             hw.bytes_per_weight)
                    for mode in ("dp", "hybrid"):
                        if (mode == "dp" and stages != fewest) or (mode == "hybrid"
                                                                      and stages < 2):
                            continue
                        for count in lim.replica_micro_batches:
                            per_step = (2 * stages * count if mode == "dp"
                                        else 2 * (count + stages - 1)) * cyc
                            for period in lim.periods:
                                inv_cap = max(v["L"] * v["q_max"] ** 2
                                              / ((1 - v["theta"]) * v["q_min"]),
                                              2 * v["L"] * period)
                                for frac in STEP_GRID:
                                    k = _local_sgd_k(v, frac / inv_cap, eps, replicas,
                                                     count * b_, period, nu)
                                    if math.isfinite(k):
                                        t = k * per_step + (k // period) * t_avg
                                        best[mode] = min(best[mode], t)
    return best


@pytest.mark.parametrize(("digital", "memory", "std", "eps", "every_mode"), [
    (0, 2e4, None, 0.6, False),  # the device's programming noise: dp, hybrid below their floor
    (2, 2e4, None, 0.6, False),
    (0, 2e4, 1e-4, 1.0, True),  # a precise programming: every mode has a plan
    (2, 1e5, 1e-4, 0.6, True),  # digital kinds large enough for whole replicas
    (2, 2e4, 1e-4, 1.0, True),  # mixed layouts
])
def test_mode_planner_matches_brute_force(digital, memory, std, eps, every_mode):
    """dp, hybrid and single-kind pipelines: exactly the brute force. Pipelines of mixed stages
    (Theorem 2M at the layout's weight shares): between the brute force over every layout with
    Theorem 2M (the true optimum of the block-wise guarantee) and the brute force with the
    all-coordinate constants (the previous planner's answer), and the plan's time is its own
    Theorem 2M guarantee."""
    model = _model([(100, 100), (200, 100), (100, 50)], [4, 2, 8], digital_last=bool(digital))
    hw = _hardware(analog=4, digital=digital, memory=memory, std=std)
    lim = ModeLimits(max_micro_batches=3, micro_batch_sizes=(1, 2), replica_micro_batches=(1, 2),
                     periods=(1, 2, 4))
    problem = ProblemParams()
    got = plan_modes(model, hw, problem, eps, lim)
    want = _brute_modes(model, hw, problem, eps, lim)
    block_wise = _brute_modes(model, hw, problem, eps, lim, block_wise=True)
    for mode, value in want.items():
        plan = got.get(mode)
        exact = mode in ("dp", "hybrid") or not digital  # no stages on different kinds
        if exact:
            assert block_wise[mode] == pytest.approx(value, rel=1e-12), mode
        if plan is None:  # (the block-wise optimum may reach eps on a layout not searched)
            assert math.isinf(value) and mode in dict(got.ruled_out), mode
            continue
        assert plan.accelerators <= hw.accelerators
        if exact:
            assert plan.seconds == pytest.approx(value, rel=1e-12), mode
            continue
        assert block_wise[mode] * (1 - 1e-12) <= plan.seconds <= value * (1 + 1e-12), mode
        kinds = [hw.kinds[t] for t in plan.partition.kinds]
        sizes = [layer.rows * layer.cols for layer in model.chain]
        ends = (*plan.partition.starts[1:], plan.partition.layers)
        stage_w = [sum(sizes[s:e]) for s, e in zip(plan.partition.starts, ends, strict=True)]
        pv, algo = _theorem_2m_values(kinds, stage_w, problem)
        grid = {"b": plan.micro_batch_size, "M": plan.stages} | (
            {"B": plan.micro_batches} if mode == "sync" else {})
        r = evaluate_guarantee(mode, eps, algorithm=algo, **pv, **grid)
        assert int(r.iterations_int) == plan.iterations, mode
        assert plan.bound.split(" (")[0] == str(r.algorithm), mode
    assert set(want) == {p.mode for p in got.plans} | {m for m, _ in got.ruled_out}
    if every_mode:  # the brute force covers the choices of R, P and the kinds of every mode
        assert {p.mode for p in got.plans} == set(want)
        assert any(p.replicas > 1 for p in got.plans)


# -- the conservative guarantee of mixed stages --------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(q_min=st.floats(0.05, 1.0), spread=st.floats(1.0, 3.0), g=st.floats(0.0, 1.0),
       widen=st.floats(1.0, 2.0), mode=st.sampled_from(["sync", "async"]),
       stages=st.integers(1, 8))
def test_guarantee_is_monotone_in_the_device_constants(q_min, spread, g, widen, mode, stages):
    """Wider A3 constants (smaller q_min, larger q_max or G_inf) never need fewer iterations, so
    the all-coordinates constants of guarantee_values bound any block-wise constants."""
    base = {"L": 1.0, "L_s": 1.0, "Delta": 1.0, "sigma2": 1.0, "theta": 0.5}
    grid = {"b": 4, "M": stages} | ({"B": 8} if mode == "sync" else {})
    g = g * q_min * (spread - 1) / 2  # A3: G_inf <= (q_max - q_min)/2
    tight = base | {"q_min": q_min, "q_max": q_min * spread, "G_inf": g}
    wide = base | {"q_min": q_min / widen, "q_max": q_min * spread * widen, "G_inf": g * widen}

    def iters(v):
        r = evaluate_guarantee(mode, 2.0, on_unreachable="status", **v, **grid)
        return float(r.iterations_int) if r.status == REACHABLE else math.inf

    assert iters(wide) >= iters(tight)


def test_guarantee_values_of_mixed_stages_contain_the_digital_response():
    problem = ProblemParams()
    analog = AcceleratorKind("aimc", "analog", 1, hardware=ANALOG, tiles=10)
    gpu = AcceleratorKind("gpu", "digital", 1)
    alone = guarantee_values([analog], problem)
    mixed = guarantee_values([analog, gpu], problem)
    assert mixed["q_min"] <= min(alone["q_min"], 1.0) and mixed["q_max"] >= max(alone["q_max"], 1)
    assert mixed["G_inf"] == alone["G_inf"]
    digital = guarantee_values([gpu], problem)
    assert (digital["q_min"], digital["q_max"], digital["G_inf"]) == (1.0, 1.0, 0.0)


# -- the local-SGD row ---------------------------------------------------------------------------

def test_local_sgd_is_theorem_2_without_replicas_averaging_or_noise():
    row = local_sgd.expr().subs({local_sgd.R: 1, local_sgd.P: 1, local_sgd.nu: 0})
    assert sp.simplify(row - theorems.get_bound("analog_sgd").expr) == 0
    # the fixed-step K solves expr = eps
    k_at = local_sgd.iterations_at_step()
    from theory.symbols import eps
    assert sp.simplify(local_sgd.expr().subs(K, k_at) - eps) == 0
    parts = local_sgd.parts()
    assert parts["rate_a"] == 0 and not parts["floor"].has(alpha) and not parts["floor"].has(K)
    assert parts["batch"] == local_sgd.R * n
    # the parts make a registry entry as they are (registration: one _make call in theorems.py)
    entry = theorems.Bound(name="local_sgd", provenance="literature",
                           reference=local_sgd.REFERENCE, proof=None, mode="sync",
                           algorithm="analog", conditions=local_sgd.CONDITIONS, **parts)
    assert {"R", "P", "nu"} <= set(entry.parameters)


def test_programming_noise_and_averaging_time():
    kind = AcceleratorKind("aimc", "analog", 2, hardware=ANALOG, tiles=10)
    dev = ANALOG.device
    assert float(programming_noise(kind, 1000)) == pytest.approx(
        1000 * dev.dw_min**2 * (1 / 12 + dev.dw_min_std**2))
    assert averaging_time_s([kind], [1000.0], 1, 64e9, 2) == 0.0
    two = averaging_time_s([kind], [1000.0], 2, 64e9, 2)
    four = averaging_time_s([kind], [1000.0], 4, 64e9, 2)
    pulses = math.ceil(2 * ANALOG.weight_bound / dev.dw_min)
    local = 128 * ANALOG.read_time_s + 128 * (pulses * ANALOG.pulse_width_s + ANALOG.read_time_s)
    assert two >= local and four > two  # the all-reduce share grows with R
    gpu = AcceleratorKind("gpu", "digital", 2)
    assert float(programming_noise(gpu, 1000)) == 0.0


# -- unequal stage times: the closed form against the discrete-event timeline --------------------

def _replay(timeline, durations):
    """Finish time of the timeline's actions, each stage in the timeline's order, each action
    starting when its dependencies and its stage are done (a dataflow replay with unequal stage
    times: stage m takes durations[m - 1] per forward or backward)."""
    done = {}
    free = dict.fromkeys(range(1, timeline.stages + 1), 0.0)
    actions = sorted((e for e in timeline.events if e.kind != "U"), key=lambda e: e.cycle)
    for e in actions:
        deps = []
        if e.kind == "F" and e.stage > 1:
            deps.append(done[("F", e.micro_batch, e.stage - 1)])
        if e.kind == "B":
            deps.append(done[("F", e.micro_batch, e.stage)])
            if e.stage < timeline.stages:
                deps.append(done[("B", e.micro_batch, e.stage + 1)])
        start = max([free[e.stage], *deps])
        done[(e.kind, e.micro_batch, e.stage)] = free[e.stage] = start + durations[e.stage - 1]
    return max(done.values())


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 9), min_size=1, max_size=6))
def test_unequal_stage_times_fill_is_the_sum_and_the_cycle_the_slowest(durations):
    stages = len(durations)
    one = build_timeline("none", stages, 1)
    assert _replay(one, durations) == 2 * sum(durations)  # fill and drain: the sum
    count = 40
    run = build_timeline("async", stages, count)
    longer = build_timeline("async", stages, count + 1)
    total = _replay(run, durations)
    # the clocked pipeline (cycle = slowest stage) is never faster than the dataflow replay
    assert total <= run.cycles * max(durations)
    # steady state: one more micro-batch costs one forward and one backward of the slowest stage
    assert _replay(longer, durations) - total == 2 * max(durations)
    sync = build_timeline("sync", stages, 6)
    assert _replay(sync, durations) <= sync.cycles * max(durations)


@pytest.mark.parametrize("model_name", ["digits-mlp", "resnet-cnn"])
def test_one_analog_kind_reproduces_the_single_kind_planner(model_name):
    """Without digital kinds and with memory not binding, the kinds planner's sync and async
    plans are today's planner's (same grids: every b, every B)."""
    from bounds import PlanHardware, PlanLimits, load_model, plan, single_kind

    hardware = PlanHardware(from_preset("reram-softbounds"), accelerators=6,
                            tiles_per_accelerator=16384, activation_buffer_bytes=2.0**40)
    model = load_model(model_name)
    for mode in ("sync", "async"):
        old = plan(model, hardware, ProblemParams(), 0.5, PlanLimits(12, 12, (mode,)),
                   relax=False)
        new = plan_modes(model, single_kind(hardware), ProblemParams(), 0.5,
                         ModeLimits(12, tuple(range(1, 13)), modes=(mode,))).get(mode)
        assert new.seconds == pytest.approx(old.seconds, rel=1e-12)
        assert (new.stages, new.micro_batches, new.micro_batch_size) == (
            old.stages, old.micro_batches, old.micro_batch_size)
        assert new.bound == old.best.bound


def test_kind_dp_in_chunks_of_states_is_the_same(monkeypatch):
    from bounds.planning import partition

    rng = np.random.default_rng(7)
    seg = [rng.integers(1, 30, size=(9, 9)).astype(float) for _ in range(3)]
    whole = kind_partitions(seg, (3, 2, 3), 8)
    monkeypatch.setattr(partition, "_CHUNK_CELLS", 5)  # a block of about one state at a time
    chunked = kind_partitions(seg, (3, 2, 3), 8)
    for a, b_ in zip(whole.value, chunked.value, strict=True):
        assert np.array_equal(a, b_)
    for stages in range(1, 9):
        assert whole.best(stages) == chunked.best(stages)
        assert whole.best(stages)[0] == _brute_layout(seg, (3, 2, 3), stages, (3, 2, 3))


# -- Theorem 2M for stages on different kinds ------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(pattern=st.lists(st.booleans(), min_size=1, max_size=6),
       weights=st.lists(st.floats(1.0, 1e6), min_size=6, max_size=6),
       mode=st.sampled_from(["sync", "async"]), eps=st.floats(0.2, 4.0))
def test_theorem_2m_never_needs_more_iterations_than_the_all_coordinate_constants(
        pattern, weights, mode, eps):
    """stage_guarantee with the stages' weights (Theorem 2M when the stages' constants differ, or
    the all-coordinate guarantee where that needs fewer: hypothesis found async, b = 2, where
    Theorem 4'B beats Theorem 2M (c), which builds on Theorem 4') needs at most the iterations of
    the all-coordinate constants, and is Theorem 2 / Corollary 3 /
    Theorem 4' exactly when every stage is on one kind."""
    from bounds.planning import stage_guarantee, stage_values

    analog = AcceleratorKind("aimc", "analog", 8, hardware=ANALOG, tiles=10)
    gpu = AcceleratorKind("gpu", "digital", 8)
    kinds = [analog if a else gpu for a in pattern]
    w = weights[:len(kinds)]
    grid = {"b": 2, "M": len(kinds)} | ({"B": 4} if mode == "sync" else {})
    problem = ProblemParams()
    block = stage_guarantee(mode, eps, kinds, problem, weights=w, **grid)
    whole = stage_guarantee(mode, eps, kinds, problem, **grid)
    values, algorithm = stage_values(kinds, problem, w)
    assert algorithm == ("mixed" if len(set(pattern)) > 1 else "analog")
    if algorithm == "analog":
        assert str(block.algorithm) == str(whole.algorithm)
        assert block.status == whole.status and block.iterations_int == whole.iterations_int
    else:
        # Theorem 2M, or the all-coordinate guarantee where it needs fewer (Theorem 4'B)
        assert str(block.algorithm) in (*theorems.MIXED_ENTRIES, str(whole.algorithm))
        share = sum(x for x, a in zip(w, pattern, strict=True) if a) / sum(w)
        assert values["G2_bar"] == pytest.approx(share * values["G_inf"] ** 2, rel=1e-12)
    if whole.status == REACHABLE:
        assert block.status == REACHABLE
        assert int(block.iterations_int) <= int(whole.iterations_int)
