"""Accelerator kinds (bounds.planning.hardware), layer hosts (bounds.planning.models) and the plan
command's kinds flags (--hardware, --digital-accelerators, --compare-modes)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from bounds import (
    AcceleratorKind,
    KindsHardware,
    Layer,
    Model,
    PlanHardware,
    from_preset,
    load_hardware,
    load_model,
    model_from_table,
    single_kind,
    with_digital,
)
from paper_figures.cli import main
from theory import ParameterError

HARDWARE = """
link_bytes_per_s = 32e9

[[kinds]]
name = "aimc"
type = "analog"
count = 3
tiles = 64
preset = "softbounds-tau1"
read_time_s = 100e-9

[[kinds]]
name = "gpu"
type = "digital"
count = 2
memory_bytes = 1e6
"""
SMALL = ["--max-micro-batches", "8", "--max-micro-batch-size", "8", "--no-relax",
         "--mode-micro-batch-sizes", "1", "2"]


@pytest.fixture
def hardware_file(tmp_path):
    path = tmp_path / "hw.toml"
    path.write_text(HARDWARE)
    return path


def test_load_hardware(hardware_file):
    hw = load_hardware(hardware_file)
    assert [k.name for k in hw.kinds] == ["aimc", "gpu"] and hw.counts == (3, 2)
    analog, gpu = hw.kinds
    assert analog.analog and not gpu.analog and hw.accelerators == 5
    assert analog.hardware.read_time_s == 100e-9 and analog.tiles == 64
    assert analog.hardware.device.name == "softbounds-tau1"
    assert gpu.memory_bytes == 1e6 and hw.link_bytes_per_s == 32e9
    assert json.dumps(hw.to_dict())  # JSON-ready


@pytest.mark.parametrize(("text", "message"), [
    ("[[kinds]]\ntype = 'analog'\ncount = 1\ntiles = 1\ncolour = 1\n", "valid keys"),
    ("speed = 1\n", "valid keys"),
    ("link_bytes_per_s = 1e9\n", "missing key 'kinds'"),
    ("[[kinds]]\ntype = 'digital'\ncount = 1\n", "no analog kind"),
    ("[[kinds]]\ntype = 'digital'\ncount = 1\ntiles = 3\n", "valid keys"),
    ("[[kinds]]\ntype = 'analog'\ncount = 1\n", "tiles"),
    ("[[kinds]]\ntype = 'analog'\ntiles = 4\n", "count"),
    ("[[kinds]]\ntype = 'optical'\ncount = 1\n",
     "kinds[0].type = 'optical' is not valid; valid: one of 'analog', 'digital'"),
    ("[[kinds]]\ntype = 'analog'\ncount = 0\ntiles = 4\n",
     "kinds[0].count = 0 is out of range; valid: integer in [1, "),
    ("[[kinds]]\ntype = 'analog'\ncount = 1\ntiles = 4\npreset = 'nope'\n", "valid presets"),
    ("[[kinds]]\nname = 'a'\ntype = 'analog'\ncount = 1\ntiles = 4\n"
     "[[kinds]]\nname = 'a'\ntype = 'digital'\ncount = 1\n", "unique"),
])
def test_bad_hardware_files_name_the_problem(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ParameterError, match=message.replace("[", r"\[")):
        load_hardware(path)


def test_single_kind_and_with_digital():
    plan_hw = PlanHardware(from_preset("reram-softbounds"), accelerators=6,
                           tiles_per_accelerator=100)
    one = single_kind(plan_hw)
    assert one.counts == (6,) and one.kinds[0].tiles == 100
    assert one.kinds[0].hardware is plan_hw.hardware
    two = with_digital(one, 2)
    assert two.counts == (6, 2) and not two.kinds[1].analog
    assert two.with_counts((3, 0)).counts == (3,)


def test_stage_times_follow_the_timing_rules():
    hw = from_preset("reram-softbounds")
    analog = AcceleratorKind("a", "analog", 1, hardware=hw, tiles=10)
    work = np.array([1, 7, 300])
    assert np.array_equal(analog.stage_time_s(4, work, 0, 0), hw.timing.stage_time_s(4 * work))
    gpu = AcceleratorKind("g", "digital", 1, mac_time_s=1e-12, update_time_per_weight_s=2e-12,
                          clock_hz=1e9)
    # 3 samples x 1e6 MACs x 1 ps + 1e5 weights x 2 ps = 3.2 us, whole clock periods
    assert gpu.stage_time_s(3, 0, 1e6, 1e5) == pytest.approx(3.2e-6)
    assert gpu.stage_time_s(1, 0, 1500, 0) == pytest.approx(2e-9)  # 1.5 ns rounds up to 2
    with pytest.raises(ParameterError, match="digital"):
        AcceleratorKind("g", "digital", 1, hardware=hw)
    with pytest.raises(ParameterError, match="analog kind needs a device"):
        AcceleratorKind("a", "analog", 1)
    with pytest.raises(ParameterError, match="no analog kind"):
        KindsHardware((gpu,))


# -- which kinds may host a layer ---------------------------------------------------------------

def test_llama_keeps_embedding_and_head_digital_explicitly():
    model = load_model("llama2-7b", sequence_length=512)
    assert len(model) == 224  # the analog-capable layers, as the single-kind planner sees them
    assert [x.name for x in model.digital_first] == ["embedding"]
    assert [x.name for x in model.digital_last] == ["lm_head"]
    chain = model.chain
    assert len(chain) == 226 and chain[0].hosts == ("digital",) == chain[-1].hosts
    assert all(layer.analog for layer in model.layers)
    assert chain[0].ops_per_mvm == 4096 and chain[0].mvms_per_sample == 512
    assert chain[-1].ops_per_mvm == 4096 * 32000


def test_hosts_in_model_files():
    base = {"name": "m", "blocks": [
        {"hosts": "digital", "layers": [{"rows": 2, "cols": 2}]},
        {"layers": [{"rows": 4, "cols": 4}]},
    ]}
    model = model_from_table(base)
    assert len(model) == 1 and len(model.chain) == 2
    middle = {"name": "m", "blocks": [*base["blocks"], *base["blocks"]]}
    with pytest.raises(ParameterError, match="between layers"):
        model_from_table(middle)
    with pytest.raises(ParameterError, match="hosts='gpu'"):
        model_from_table({"name": "m", "blocks": [{"hosts": "gpu", "layers": [
            {"rows": 1, "cols": 1}]}]})
    with pytest.raises(ParameterError, match="no layer an analog accelerator may host"):
        model_from_table({"name": "m", "blocks": [base["blocks"][0]]})
    assert Layer("x", 3, 5).ops_per_mvm == 15 and Layer("x", 3, 5).hosts == ("analog", "digital")
    with pytest.raises(ParameterError, match="digital_first"):
        Model("m", (Layer("x", 1, 1),), digital_first=(Layer("y", 1, 1),))


# -- the plan command ------------------------------------------------------------------------------

def test_plan_without_kind_flags_prints_no_mode_comparison(capsys):
    assert main(["plan", "--model", "digits-mlp", "--accelerators", "4", *SMALL]) == 0
    assert "best plan per mode" not in capsys.readouterr().out


def test_plan_with_digital_accelerators_prints_every_mode(capsys):
    assert main(["plan", "--model", "digits-mlp", "--accelerators", "4",
                 "--digital-accelerators", "2", *SMALL]) == 0
    out = capsys.readouterr().out
    assert out.index("plan for model") < out.index("best plan per mode")
    for label in ("sync", "async", "layout", "dominant", "4 x aimc", "2 x gpu", "basis",
                  "guaranteed s", "estimated s", "best guarantee: "):
        assert label in out
    table = out[out.index("best plan per mode"):]
    for line in table.splitlines():
        words = line.split()
        if words and words[0] in ("sync", "async", "dp", "hybrid") and words[1] != "layout":
            proved = words[0] in ("sync", "async")
            assert words[1] == ("guarantee" if proved else "estimate"), line
            assert (words[3] if proved else words[2]) == "-", line  # the other column is empty


def test_plan_json_carries_the_modes(capsys, hardware_file, tmp_path):
    argv = ["plan", "--model", "digits-mlp", "--hardware", str(hardware_file), *SMALL,
            "--json", "--out", str(tmp_path / "out")]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    modes = data["modes"]
    assert modes["hardware"]["kinds"][0]["name"] == "aimc"
    assert {p["mode"] for p in modes["plans"]} | {r["mode"] for r in modes["ruled_out"]} == {
        "sync", "async", "dp", "hybrid"}
    for p in modes["plans"]:
        assert len(p["stage_kinds"]) == len(p["partition"]) == p["stages"]
        assert p["accelerators"] <= 5 and p["dominant"] in ("bubbles", "staleness", "floor",
                                                            "averaging", "none")
        # a proved time or an estimate, never both, never an unlabelled "seconds"
        assert "seconds" not in p
        proved = p["mode"] in ("sync", "async")
        assert p["basis"] == ("guarantee" if proved else "estimate")
        time, other = ((p["guaranteed_seconds"], p["estimated_seconds"]) if proved
                       else (p["estimated_seconds"], p["guaranteed_seconds"]))
        assert math.isfinite(time) and other is None
    assert modes["best_guarantee"] in ("sync", "async")
    assert modes["best_estimate"] in ("dp", "hybrid", None)
    assert data["plan"]["stages"] <= 3  # today's plan uses the first analog kind (3 accelerators)
    written = json.loads((tmp_path / "out" / "modes.json").read_text())
    assert written == modes


def test_plan_refuses_both_hardware_and_digital_flags(hardware_file, capsys):
    assert main(["plan", "--model", "digits-mlp", "--hardware", str(hardware_file),
                 "--digital-accelerators", "2", *SMALL]) == 2
    assert "digital-accelerators=2" in capsys.readouterr().err


def test_analog_only_hardware_leaves_the_digital_ends_unplanned():
    from bounds import ModeLimits, plan_modes

    model = model_from_table({"name": "m", "blocks": [
        {"hosts": "digital", "layers": [{"rows": 8, "cols": 8}]},
        {"repeat": 3, "layers": [{"rows": 16, "cols": 16}]},
    ]})
    hw = KindsHardware((AcceleratorKind("aimc", "analog", 3, hardware=from_preset(
        "softbounds-tau1"), tiles=4, programming_error_std=1e-4),))
    lim = ModeLimits(max_micro_batches=4, micro_batch_sizes=(1,), replica_micro_batches=(1, 2),
                     periods=(1, 2))
    result = plan_modes(model, hw, eps=2.0, limits=lim)
    assert result.unplanned == ("layer1",) and "not planned" in result.table()
    assert all(sum(p.partition.sizes) == 3 for p in result.plans)
    pipe, data = result.best_of(("sync", "async")), result.best_of(("dp", "hybrid"))
    assert result.ratio() == pipe.seconds / data.seconds
    # the best guarantee is chosen among the proved plans only; estimates apart
    assert result.best_guarantee is pipe and result.best_guarantee.guaranteed
    assert result.best_estimate is data and data.basis == "estimate" and not data.guaranteed
    assert "estimates (dp/hybrid)" in result.table() and "not proved" in result.table()


def test_an_estimate_is_never_the_best_guarantee():
    """Even when the data-parallel estimate is faster than every pipeline, best_guarantee is a
    pipeline (a proved row), and the text and JSON say which number is which."""
    from dataclasses import replace

    from bounds import ModeComparison, ModeLimits, plan_modes

    model = model_from_table({"name": "m", "blocks": [
        {"repeat": 3, "layers": [{"rows": 16, "cols": 16}]}]})
    hw = KindsHardware((AcceleratorKind("aimc", "analog", 3, hardware=from_preset(
        "softbounds-tau1"), tiles=4, programming_error_std=1e-4),))
    lim = ModeLimits(max_micro_batches=4, micro_batch_sizes=(1,), replica_micro_batches=(1, 2),
                     periods=(1, 2))
    result = plan_modes(model, hw, eps=2.0, limits=lim)
    pipes = [p for p in result.plans if p.mode in ("sync", "async")]
    estimates = [replace(p, seconds=min(q.seconds for q in pipes) / 10)
                 for p in result.plans if p.mode in ("dp", "hybrid")]
    assert pipes and estimates
    fast = ModeComparison(model="m", eps=2.0, hardware=hw, plans=(*pipes, *estimates),
                          ruled_out=())
    assert fast.best_guarantee.mode in ("sync", "async")
    assert fast.best_guarantee.seconds == min(p.seconds for p in pipes)
    assert fast.best_estimate.seconds < fast.best_guarantee.seconds
    data = fast.to_dict()
    assert data["best_guarantee"] == fast.best_guarantee.mode
    assert data["best_estimate"] == fast.best_estimate.mode
    with pytest.raises(ParameterError, match="^basis='proved' is unknown"):
        replace(pipes[0], basis="proved")


def test_mode_comparison_runs_when_the_single_kind_plan_cannot(tmp_path, capsys):
    """One analog accelerator cannot hold the model; two digital ones can: the command reports
    why today's plan is missing and still prints the comparison."""
    path = tmp_path / "hw.toml"
    path.write_text("[[kinds]]\ntype = 'analog'\ncount = 1\ntiles = 4\n"
                    "[[kinds]]\ntype = 'digital'\ncount = 2\n")
    assert main(["plan", "--model", "digits-mlp", "--hardware", str(path), *SMALL]) == 0
    out = capsys.readouterr().out
    assert "not available" in out and "best plan per mode" in out
    assert main(["plan", "--model", "digits-mlp", "--hardware", str(path), *SMALL,
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert "tiles" in data["plan_error"] and data["modes"]["plans"] and data["plan"] is None


@pytest.mark.parametrize("counts, sizes", [((3,), (1, 4)), ((3, 2), (1,)), ((2, 1, 2), (1, 2))])
def test_search_cost_bounds_the_layouts_the_search_evaluates(counts, sizes, monkeypatch):
    """search_cost's candidates (counted before the search) are an upper bound on the layouts
    plan_modes evaluates (every subset's DP queried per (b, R, M)), and not a loose one."""
    from bounds.planning import ModeLimits, plan_modes, search_cost
    from bounds.planning import kinds as kinds_module

    device = from_preset("softbounds-tau1")
    hardware = KindsHardware(tuple(
        AcceleratorKind(f"k{t}", "analog", c, hardware=device, tiles=10**6)
        for t, c in enumerate(counts)))
    model = load_model("digits-mlp")
    limits = ModeLimits(micro_batch_sizes=sizes, replica_micro_batches=(1, 2), periods=(1, 4))
    queried = []
    original = kinds_module._KindSearch.layouts

    def counting(self, b, stages, available):
        queried.append(len(self.subsets))
        return original(self, b, stages, available)

    monkeypatch.setattr(kinds_module._KindSearch, "layouts", counting)
    plan_modes(model, hardware, eps=1.0, limits=limits)
    need = search_cost(len(model.chain), counts, limits)["candidates"]
    assert sum(queried) <= need <= 4 * sum(queried), (sum(queried), need)


def test_check_search_refuses_before_any_work_naming_the_parameter(monkeypatch):
    from bounds.planning import kinds as kinds_module
    from bounds.planning.search_size import check_search

    hardware = KindsHardware(tuple(
        AcceleratorKind(f"k{t}", "analog", 1, hardware=from_preset("softbounds-tau1"), tiles=64)
        for t in range(16)))
    model = load_model("digits-mlp")
    monkeypatch.setattr(kinds_module, "kind_partitions", None)  # no DP may run
    with pytest.raises(ParameterError, match=r"^kinds=16 asks for at least 2\.1e\+07 candidate"):
        check_search(model, hardware, parameter=("kinds", 16))
    with pytest.raises(ParameterError, match=r"^kinds=16 asks for"):
        kinds_module.plan_modes(model, hardware)
