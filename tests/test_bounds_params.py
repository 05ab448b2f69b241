"""bounds.params and bounds.timing: validation, presets, TOML round trip, the timing rule."""

from __future__ import annotations

import math
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bounds import (
    PIPELINE_LIMITS,
    PRESET_TIMING_KEYS,
    TIMING_KEYS,
    BoundsConfig,
    HardwareParams,
    PipelineConfig,
    PlanHardware,
    PlanLimits,
    ProblemParams,
    TimingModel,
    check_keys,
    dump_config,
    from_preset,
    load_config,
    read_toml,
    validate_timing,
)
from theory import ParameterError, devices

PRESETS = devices.list_presets()
BAD_NUMBERS = st.sampled_from([0.0, -1.0, -1e-12, math.nan, math.inf, -math.inf])
positive = st.floats(1e-3, 1e3)


def _load_text(text: str):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.toml"
        path.write_text(text, encoding="utf-8")
        return load_config(path)


# -- HardwareParams -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", PRESETS)
def test_preset_loads_with_its_timing_and_default_region(name):
    hw = from_preset(name)
    table = devices.preset_table(name)
    assert hw.device == devices.load_preset(name)
    for key, value in table.get("timing", {}).items():
        assert getattr(hw, key) == value
    device = hw.device
    reach = min(hw.centre - device.w_min, device.w_max - hw.centre)
    assert hw.weight_bound == pytest.approx(reach / 2)
    c = hw.device_constants()
    assert (c.w_lo, c.w_hi) == pytest.approx((hw.centre - reach / 2, hw.centre + reach / 2))
    assert 0 < c.q_min <= c.q_max and c.G_inf >= 0


@pytest.mark.parametrize("name", PRESETS)
def test_preset_timing_table_has_every_key(name):  # moved from test_devices.test_presets_load
    table = devices.preset_table(name)
    assert set(table["timing"]) == set(PRESET_TIMING_KEYS)


def test_validate_timing_rejects_unknown_keys():  # moved from test_devices
    assert validate_timing({"clock_hz": 2e9}) == {"clock_hz": 2e9}
    with pytest.raises(ParameterError, match="clock_ghz.*valid keys: clock_hz"):
        validate_timing({"clock_ghz": 2.0})


@given(tau=st.floats(0.1, 10), fraction=st.floats(0.01, 0.99))
def test_softbounds_constants_are_the_theory_closed_forms(tau, fraction):
    device = devices.make_device("softbounds", tau=tau, dw_min=tau / 1000)
    hw = HardwareParams(device=device, weight_bound=fraction * tau)
    closed = devices.soft_bounds_constants(fraction * tau, tau)
    c = hw.device_constants()
    assert c.q_min == pytest.approx(float(closed.q_min), rel=1e-12)
    assert c.q_max == pytest.approx(float(closed.q_max), rel=1e-12)
    assert c.G_inf == pytest.approx(float(closed.G_inf), rel=1e-12)


@given(tau=st.floats(0.1, 10), factor=st.floats(1.0, 100))
def test_weight_bound_at_or_beyond_tau_names_parameter_and_range(tau, factor):
    device = devices.make_device("softbounds", tau=tau, dw_min=tau / 1000)
    with pytest.raises(ParameterError) as info:
        HardwareParams(device=device, weight_bound=tau * factor)
    message = str(info.value)
    assert message.startswith("weight_bound=")
    assert f"valid range (0, {tau:g})" in message


@given(bad=BAD_NUMBERS)
def test_non_positive_weight_bound_rejected(bad):
    with pytest.raises(ParameterError, match="^weight_bound="):
        from_preset("softbounds-tau1", weight_bound=bad)


@pytest.mark.parametrize("field", ["layers", "bit_length", "tile_rows", "tile_cols"])
@given(bad=st.sampled_from([0, -3, 2.5]))
def test_hardware_integer_fields_validated(field, bad):
    with pytest.raises(ParameterError, match=f"^{field}="):
        from_preset("softbounds-tau1", **{field: bad})


@pytest.mark.parametrize("field", ["clock_hz", "read_time_s", "pulse_width_s"])
@given(bad=BAD_NUMBERS)
def test_hardware_time_fields_validated(field, bad):
    with pytest.raises(ParameterError, match=f"^{field}="):
        from_preset("softbounds-tau1", **{field: bad})


def test_hardware_needs_a_device():
    with pytest.raises(ParameterError, match="device="):
        HardwareParams(device="softbounds-tau1")


def test_unknown_preset_lists_presets():
    with pytest.raises(ParameterError) as info:
        from_preset("no-such-device")
    assert "no-such-device" in str(info.value)
    assert all(name in str(info.value) for name in PRESETS)


def test_unknown_override_lists_valid_keys():
    with pytest.raises(ParameterError, match="unknown key 'tau'.*valid keys: weight_bound"):
        from_preset("softbounds-tau1", tau=2.0)


def test_hardware_is_frozen():
    hw = from_preset("softbounds-tau1")
    with pytest.raises(AttributeError):
        hw.weight_bound = 0.1


# -- ProblemParams and PipelineConfig ------------------------------------------------------------

@pytest.mark.parametrize("field", ["L", "Delta", "sigma2", "L_s"])
@given(bad=BAD_NUMBERS)
def test_problem_constants_must_be_positive(field, bad):
    with pytest.raises(ParameterError, match=f"^{field}=.*valid range \\(0, inf\\)"):
        ProblemParams(**{field: bad})


@given(theta=st.one_of(st.floats(max_value=0.0), st.floats(min_value=1.0), st.just(math.nan)))
def test_theta_must_lie_in_open_unit_interval(theta):
    with pytest.raises(ParameterError, match="^theta=.*valid range \\(0, 1\\)"):
        ProblemParams(theta=theta)


@given(L=positive, L_s=st.one_of(st.none(), positive))
def test_L_s_defaults_to_L(L, L_s):
    problem = ProblemParams(L=L, L_s=L_s)
    assert problem.L_s == (L if L_s is None else L_s)


@pytest.mark.parametrize("field", ["stages", "micro_batches", "micro_batch_size"])
@given(bad=st.sampled_from([0, -1, 1.5, math.nan]))
def test_pipeline_fields_are_positive_integers(field, bad):
    high = PIPELINE_LIMITS[field]  # the documented upper limit is part of the range
    expected = f"^{field}=.*valid range " + re.escape(f"[1, {high:g}]")
    with pytest.raises(ParameterError, match=expected):
        PipelineConfig(**{field: bad})


@pytest.mark.parametrize("field", ["stages", "micro_batches", "micro_batch_size"])
@pytest.mark.parametrize("huge", [10**400, 2**64])
def test_pipeline_fields_refuse_huge_integers_with_the_range(field, huge):
    high = PIPELINE_LIMITS[field]
    with pytest.raises(ParameterError, match=f"^{field}=.* out of range; valid range "
                                             + re.escape(f"[1, {high:g}]")):
        PipelineConfig(**{field: huge})
    assert PipelineConfig(**{field: high}).mini_batch <= 10**18  # the limit itself is valid


def test_pipeline_limits_keep_counts_in_int64():
    top = PipelineConfig(**PIPELINE_LIMITS)
    per_iteration = (top.mini_batch, 2 * top.stages * top.micro_batches,
                     2 * (top.micro_batches + top.stages - 1))  # samples, cycles (none, sync)
    assert max(per_iteration) < 2**63 - 1


@pytest.mark.parametrize("values", [(10**400, 4), (4, 10**400), ([1, 10**30], 4)])
def test_timing_refuses_integers_beyond_int64(values):
    with pytest.raises(ParameterError, match="out of range"):
        TimingModel().cycle_time_s(*values)


@pytest.mark.parametrize("kwargs, name", [({"layers": 10**400}, "layers"),
                                          ({"bit_length": 10**30}, "bit_length"),
                                          ({"read_time_s": 1e300}, "read_time_s")])
def test_timing_model_refuses_values_beyond_the_float_range(kwargs, name):
    with pytest.raises(ParameterError, match=f"^{name}="):
        TimingModel(**kwargs)


@given(M=st.integers(1, 64), B=st.integers(1, 64), b=st.integers(1, 64))
def test_pipeline_derived_sizes(M, B, b):
    pipe = PipelineConfig(M, B, b)
    assert (pipe.mini_batch, pipe.max_delay) == (B * b, M - 1)


# -- TOML ---------------------------------------------------------------------------------------

@st.composite
def configs(draw):
    if draw(st.booleans()):
        preset = draw(st.sampled_from(PRESETS))
        base = from_preset(preset)
        device = base.device
    else:
        preset = None
        tau = draw(st.floats(0.2, 5))
        device = devices.make_device(
            "softbounds", name="custom", tau=tau, dw_min=tau / draw(st.integers(10, 10_000)),
            dw_min_std=draw(st.floats(0, 2)),
        )
        base = HardwareParams(device=device)
    hardware = HardwareParams(
        device=device,
        weight_bound=draw(st.floats(0.01, 0.99)) * base.reach,
        layers=draw(st.integers(1, 64)),
        read_time_s=draw(st.floats(1e-9, 1e-6)),
        bit_length=draw(st.integers(1, 64)),
    )
    problem = ProblemParams(
        L=draw(positive), Delta=draw(positive), sigma2=draw(positive), L_s=draw(positive),
        theta=draw(st.floats(0.01, 0.99)),
    )
    pipeline = PipelineConfig(draw(st.integers(1, 32)), draw(st.integers(1, 32)),
                              draw(st.integers(1, 32)))
    eps = draw(st.one_of(st.none(), positive))
    return BoundsConfig(hardware, problem, pipeline, eps=eps, preset=preset)


@given(config=configs())
def test_toml_round_trip(config):
    assert _load_text(dump_config(config)) == config


def test_load_config_preset_with_overrides():
    config = _load_text(
        'preset = "reram-softbounds"\nweight_bound = 0.2\neps = 2.5\n'
        "[timing]\nlayers = 12\nread_time_s = 1e-7\n"
        "[problem]\nsigma2 = 0.5\n[pipeline]\nstages = 4\n"
    )
    assert config.preset == "reram-softbounds" and config.eps == 2.5
    assert config.hardware.device == devices.load_preset("reram-softbounds")
    assert (config.hardware.weight_bound, config.hardware.layers) == (0.2, 12)
    assert config.hardware.read_time_s == 1e-7
    assert config.hardware.bit_length == devices.preset_table("reram-softbounds")["timing"][
        "bit_length"]
    assert config.problem == ProblemParams(sigma2=0.5)
    assert config.pipeline == PipelineConfig(stages=4)


def test_load_config_device_table():
    config = _load_text('[device]\nfamily = "softbounds"\ntau = 2.0\ndw_min = 0.01\n')
    assert config.hardware.device == devices.make_device("softbounds", tau=2.0, dw_min=0.01)
    assert config.hardware.weight_bound == 1.0  # half of tau
    assert config.preset is None and config.eps is None


C = "^config='.*': "  # every message about the file names it, then the key path


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ('preset = "softbounds-tau1"\ncolour = 1\n', "unknown key 'colour'.*valid keys: preset"),
        ('preset = "softbounds-tau1"\n[problem]\nsigma = 1\n',
         C + "problem: unknown key 'sigma'; valid keys: L, Delta, sigma2, L_s, theta"),
        ('preset = "softbounds-tau1"\n[timing]\nclock = 1\n',
         C + "timing: unknown key 'clock'; valid keys: " + ", ".join(TIMING_KEYS)),
        ('preset = "softbounds-tau1"\n[pipeline]\nstages = 0\n',
         C + "pipeline.stages = 0 is out of range; valid: integer in \\[1, 1e\\+06\\]"),
        ('preset = "nope"\n', C + "preset = 'nope' is unknown; valid presets: "),
        ("eps = 1.0\n", "exactly one of preset"),
        ('preset = "softbounds-tau1"\n[device]\nfamily = "softbounds"\ntau = 1.0\n'
         "dw_min = 0.01\n", "exactly one of preset"),
        ('preset = "softbounds-tau1"\nweight_bound = 1.5\n',
         C + "weight_bound = 1.5 .*valid range"),
        ('preset = "softbounds-tau1"\neps = -1.0\n',
         C + "eps = -1.0 is out of range; valid: number > 0"),
        ('[device]\nfamily = "softbounds"\ntau = 1.0\ndw_min = 0.01\nspeed = 3\n',
         C + "device: unknown device key.*speed.*valid keys"),
        ("preset = \n", "not valid TOML"),
        # type confusion and huge values: named, never a TypeError or OverflowError
        ('preset = ["softbounds-tau1"]\n',
         C + "preset = \\['softbounds-tau1'\\] is an array; valid: a string"),
        ('[device]\nfamily = ["softbounds"]\n',
         C + "device.family = \\['softbounds'\\] is unknown"),
        ('preset = "softbounds-tau1"\n[pipeline]\nstages = ' + "9" * 400 + "\n",
         C + "pipeline.stages = .*\\(400 digits\\)"
             " is out of range; valid: an integer of at most 30 "),
        ('preset = "softbounds-tau1"\n[timing]\nlayers = ' + "9" * 30 + "\n",
         C + "timing.layers = 999999999999999999999999999999 is out of range; valid: integer in "),
        ('preset = "softbounds-tau1"\n[timing]\nread_time_s = 1e300\n',
         C + "timing.read_time_s = 1e\\+300"),
        ('preset = "softbounds-tau1"\nproblem = 3\n',
         C + "problem = 3 is an integer; valid: a table"),
        ('preset = "softbounds-tau1"\n' + "".join(f"k{i} = 1\n" for i in range(20000)),
         C + "unknown keys 'k0', 'k1', 'k10', 'k100', 'k1000', \\.\\.\\. \\(20000 unknown keys\\)"),
        ("x = " + "[" * 2000 + "]" * 2000 + "\n", "^config='.*': values nested deeper"),
        ("x = " + "{a = " * 40 + "1" + "}" * 40 + "\n", "limit of 32 levels"),
    ],
)
def test_load_config_errors(text, pattern):
    with pytest.raises(ParameterError, match=pattern):
        _load_text(text)


def test_load_config_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        load_config(tmp_path / "absent.toml")
    assert info.value.filename == str(tmp_path / "absent.toml")  # the command names --config


def test_unknown_key_messages_stay_short():
    with pytest.raises(ParameterError) as info:
        check_keys("where", {f"key{i}": 1 for i in range(524_000)}, ("a", "b"))
    assert len(str(info.value)) < 400 and str(info.value).startswith("524000 unknown keys: ")
    with pytest.raises(ParameterError, match="^unknown timing keys 'x', 'y'; valid keys"):
        validate_timing({"x": 1, "y": 2})


def test_nesting_within_the_limit_is_read(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('preset = "softbounds-tau1"\n[problem]\nsigma2 = 0.5\n')
    assert read_toml("config", path)["problem"] == {"sigma2": 0.5}
    path.write_text("x = " + "[" * 31 + "]" * 31 + "\n")  # depth 32 with the top table
    assert "x" in read_toml("config", path)


@pytest.mark.parametrize("kwargs, name", [
    ({"max_micro_batches": 10**6}, "max_micro_batches"),
    ({"max_micro_batch_size": 10**7, "max_micro_batches": 10}, "max_micro_batch_size"),
])
def test_plan_limits_refuse_huge_grids_before_allocating(kwargs, name):
    with pytest.raises(ParameterError, match=f"^{name}=.* asks for .* planner grid points"):
        PlanLimits(**kwargs)
    with pytest.raises(ParameterError, match="^max_micro_batches=.*401 digits.* out of range"):
        PlanLimits(max_micro_batches=10**400)
    with pytest.raises(ParameterError, match="^max_micro_batch_size=100000000 is out of range; "
                                             "valid range \\[1, 5e\\+07\\]"):
        PlanLimits(max_micro_batch_size=10**8, max_micro_batches=1)
    assert PlanLimits(max_micro_batches=5000, max_micro_batch_size=10_000).max_micro_batches


@pytest.mark.parametrize("kwargs, name", [({"hardware": "reram"}, "hardware"),
                                          ({"problem": 1.0}, "problem"),
                                          ({"pipeline": [8, 8, 4]}, "pipeline")])
def test_bounds_config_checks_types(kwargs, name):
    args = {"hardware": from_preset("softbounds-tau1"), **kwargs}
    with pytest.raises(ParameterError, match=f"^{name}=.* is a .*, not a bounds."):
        BoundsConfig(**args)
    with pytest.raises(ParameterError, match="^hardware='x' is a str, not a bounds.Hardware"):
        PlanHardware("x")


# -- TimingModel --------------------------------------------------------------------------------

@given(layers=st.integers(1, 64), data=st.data())
def test_cycle_time_is_slowest_stage_plus_update(layers, data):
    M = data.draw(st.integers(1, layers))
    b = data.draw(st.integers(1, 64))
    read = data.draw(st.floats(1e-9, 1e-6))
    timing = TimingModel(layers=layers, read_time_s=read, pulse_width_s=1e-9, bit_length=10)
    # even split: the largest of M near-equal shares, computed by splitting, not by the formula
    shares = np.array_split(np.arange(layers), M)
    slowest = max(len(share) for share in shares)
    expected = slowest * b * read + 10e-9
    cycle = timing.cycle_time_s(M, b)
    # rounded up to a whole 1 GHz period (within the model's documented 1e-9 relative slack)
    assert expected * (1 - 1e-9) <= cycle < expected + 1e-9
    assert cycle * 1e9 == pytest.approx(round(cycle * 1e9), abs=1e-6)
    cycles = data.draw(st.integers(0, 10**9))
    assert timing.seconds(cycles, M, b) == pytest.approx(cycles * cycle, rel=1e-12)


def test_cycle_time_defaults_exact_periods():
    # 2 layers x 80 ns + 10 x 1 ns = 170 ns, exactly 170 periods of 1 GHz (no spurious round-up)
    assert TimingModel().cycle_time_s(8, 1) == pytest.approx(170e-9, rel=1e-12)


def test_cycle_time_vectorised_equals_scalar():
    timing = TimingModel(layers=16)
    M, b = np.meshgrid(np.arange(1, 17), np.arange(1, 9))
    grid = timing.cycle_time_s(M, b)
    scalar = [[timing.cycle_time_s(int(m), int(bb)) for m, bb in zip(row_m, row_b, strict=True)]
              for row_m, row_b in zip(M, b, strict=True)]
    np.testing.assert_array_equal(grid, np.array(scalar))


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [({"stages": 17, "micro_batch_size": 1}, "^stages=17 is out of range; valid range \\[1, 16\\]"),
     ({"stages": 0, "micro_batch_size": 1}, "^stages=0"),
     ({"stages": 2, "micro_batch_size": 0}, "^micro_batch_size=0"),
     ({"stages": 2.5, "micro_batch_size": 1}, "^stages=2.5 is not an integer")],
)
def test_cycle_time_rejects_bad_shapes(kwargs, pattern):
    with pytest.raises(ParameterError, match=pattern):
        TimingModel(layers=16).cycle_time_s(kwargs["stages"], kwargs["micro_batch_size"])


def test_too_many_stages_names_the_layers_and_nan_cycles_are_rejected():
    timing = TimingModel(layers=4)
    with pytest.raises(ParameterError, match=r"^stages=5 .*\[1, 4\].*layers=4"):
        timing.cycle_time_s(5, 1)
    for bad in (math.nan, -1.0):
        with pytest.raises(ParameterError, match="^cycles="):
            timing.seconds(np.array([3.0, bad]), 2, 1)
