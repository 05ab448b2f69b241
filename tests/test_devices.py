"""Device response models: closed forms, symmetric points, constants, compilation, presets."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from theory import ParameterError, symbols
from theory.devices import (
    FAMILIES,
    AsymmetricSoftBounds,
    ConstantStep,
    Device,
    ExponentialStep,
    LinearStep,
    PowerStep,
    ResponseFamily,
    SoftBounds,
    device_from_table,
    device_to_table,
    list_presets,
    load_preset,
    make_device,
    preset_table,
    soft_bounds_constants,
    unknown_keys,
    w,
)

#: one representative of every family, with non-trivial parameters
EXAMPLES = {
    "softbounds": SoftBounds(tau=1.5),
    "asymmetric-softbounds": AsymmetricSoftBounds(w_min=-0.75, w_max=1.25, up=1.2, down=0.7),
    "linear-step": LinearStep(w_min=-0.8276, w_max=1.1724, gamma_up=0.1153, gamma_down=0.5085),
    "power": PowerStep(tau=2.0, pow_gamma=1.7),
    "exponential": ExponentialStep(tau=1.0, gamma=2.5),
    "constant-step": ConstantStep(w_min=-1.0, w_max=1.0, up=1.0, down=1.0),
}
EXPECTED_PRESETS = [
    "capacitor-linearstep", "ecram-linearstep", "gokmen-vlasov-constantstep",
    "idealized-constantstep", "reram-softbounds", "softbounds-tau1",
]

_pos = st.floats(0.1, 5.0)
_gamma01 = st.one_of(st.just(0.0), st.floats(1e-6, 1.0))  # no subnormal slopes (G ~ 1e-324)

#: hypothesis strategies drawing a valid object of every family
RESPONSES = {
    "softbounds": st.builds(SoftBounds, tau=_pos),
    "asymmetric-softbounds": st.builds(
        AsymmetricSoftBounds, w_min=st.floats(-3.0, -0.1), w_max=st.floats(0.1, 3.0), up=_pos,
        down=_pos),
    "linear-step": st.builds(
        LinearStep, w_min=st.floats(-3.0, -0.1), w_max=st.floats(0.1, 3.0), gamma_up=_gamma01,
        gamma_down=_gamma01),
    "power": st.builds(PowerStep, tau=_pos, pow_gamma=st.floats(0.2, 5.0)),
    "exponential": st.builds(ExponentialStep, tau=_pos, gamma=st.floats(0.05, 10.0)),
    "constant-step": st.builds(
        lambda lo, width, up, down: ConstantStep(lo, lo + width, up, down),
        st.floats(-3.0, 0.0), st.floats(0.1, 5.0), _pos, _pos),
}
any_response = st.one_of(*RESPONSES.values())


def _at(response: ResponseFamily, frac: float) -> float:
    """The point a fraction ``frac`` of the way through the response's range."""
    return response.w_min + frac * (response.w_max - response.w_min)



def test_examples_cover_every_family():
    assert set(EXAMPLES) == set(FAMILIES) == set(RESPONSES)


# -- closed forms ---------------------------------------------------------------------------------
@pytest.mark.parametrize("response", EXAMPLES.values(), ids=EXAMPLES.keys())
def test_F_G_saturation_definitions(response):
    qp, qm = response.q_plus_expr, response.q_minus_expr
    assert sp.simplify(response.F_expr - (qm + qp) / 2) == 0
    assert sp.simplify(response.G_expr - (qm - qp) / 2) == 0
    assert sp.simplify(response.saturation_expr - qp * qm) == 0
    assert sp.simplify(response.saturation_expr - (response.F_expr**2 - response.G_expr**2)) == 0


def test_softbounds_closed_forms():
    tau = sp.Rational(3, 2)
    r = SoftBounds(tau=1.5)
    assert sp.simplify(r.F_expr - 1) == 0
    assert sp.simplify(r.G_expr - w / tau) == 0
    assert sp.simplify(r.saturation_expr - (1 - w**2 / tau**2)) == 0


def test_linear_step_is_soft_bounds_at_gamma_one():
    lin = LinearStep(w_min=-0.75, w_max=1.25, gamma_up=1.0, gamma_down=1.0)
    asym = AsymmetricSoftBounds(w_min=-0.75, w_max=1.25)
    assert sp.simplify(lin.q_plus_expr - asym.q_plus_expr) == 0
    assert sp.simplify(lin.q_minus_expr - asym.q_minus_expr) == 0


def test_power_and_exponential_reduce_to_soft_bounds():
    sb = SoftBounds(tau=2.0)
    power = PowerStep(tau=2.0, pow_gamma=1.0)
    assert sp.simplify(power.q_plus_expr - sb.q_plus_expr) == 0
    exp_qp = ExponentialStep.symbolic()[0]
    syms = ExponentialStep.symbols()
    gamma, tau = syms["gamma"], syms["tau"]
    limit = sp.series(exp_qp, gamma, 0, 1).removeO()  # the gamma -> 0 limit
    assert sp.simplify(limit - SoftBounds.responses(w, tau=tau)[0]) == 0


# -- symmetric points -----------------------------------------------------------------------------
@pytest.mark.parametrize("response", EXAMPLES.values(), ids=EXAMPLES.keys())
def test_symmetric_point_is_a_root_of_G(response):
    point = response.symmetric_point()
    assert response.w_min <= point <= response.w_max
    g = float(response.G_expr.subs(w, sp.Rational(repr(point))))
    assert abs(g) < 1e-12


@pytest.mark.parametrize("name", [k for k in EXAMPLES if k != "constant-step"])
def test_closed_form_symmetric_point_equals_numeric_root(name):
    response = EXAMPLES[name]
    assert type(response).symmetric_point_expr() is not None
    numeric = response.numeric_symmetric_point()
    assert response.symmetric_point() == pytest.approx(numeric, abs=1e-12)


def test_asymmetric_softbounds_symmetric_point_formula():
    syms = AsymmetricSoftBounds.symbols()
    up, down, w_min, w_max = (syms[k] for k in ("up", "down", "w_min", "w_max"))
    expected = (up - down) / (up / w_max - down / w_min)
    assert sp.simplify(AsymmetricSoftBounds.symmetric_point_expr() - expected) == 0


def test_constant_step_symmetric_point():
    assert ConstantStep(-1.0, 3.0).symmetric_point() == 1.0  # every point: the midpoint
    with pytest.raises(ParameterError, match="no symmetric point"):
        ConstantStep(-1.0, 1.0, up=1.0, down=0.9).symmetric_point()


# -- soft-bounds constants ------------------------------------------------------------------------
def test_soft_bounds_constants_closed_forms():
    c = soft_bounds_constants()
    W, tau = symbols.W_max, symbols.tau
    assert sp.simplify(c.q_min - (1 - W / tau)) == 0
    assert sp.simplify(c.q_max - (1 + W / tau)) == 0
    assert sp.simplify(c.G_inf - W / tau) == 0


@given(tau=st.floats(0.1, 10.0), frac=st.floats(0.0, 0.999))
def test_soft_bounds_constants_equal_device_constants(tau, frac):
    W = frac * tau
    dev = Device("sb", SoftBounds(tau=tau), dw_min=1e-3 * tau)
    num = dev.constants(-W, W)
    sym = soft_bounds_constants(symbols.W_max, symbols.tau)
    values = {symbols.W_max: W, symbols.tau: tau}
    assert num.q_min == pytest.approx(float(sym.q_min.subs(values)), rel=1e-12, abs=1e-15)
    assert num.q_max == pytest.approx(float(sym.q_max.subs(values)), rel=1e-12, abs=1e-15)
    assert num.G_inf == pytest.approx(float(sym.G_inf.subs(values)), rel=1e-12, abs=1e-15)


def test_soft_bounds_w_max_at_tau_is_rejected():
    dev = load_preset("softbounds-tau1")
    with pytest.raises(ParameterError, match=r"W_max=1 must be < tau=1"):
        dev.constants(-1.0, 1.0)
    with pytest.raises(ParameterError, match="W_max"):
        soft_bounds_constants(2, 1)


# -- presets --------------------------------------------------------------------------------------
def test_list_presets():
    assert list_presets() == EXPECTED_PRESETS


@pytest.mark.parametrize("name", EXPECTED_PRESETS)
def test_presets_load(name):
    dev = load_preset(name)
    table = preset_table(name)
    assert dev.name == name == table["device"]["name"]
    assert dev.family == table["device"]["family"]
    assert device_from_table(table["device"]) == dev


def test_bad_inputs_name_the_parameter():
    with pytest.raises(ParameterError, match="family='nope'.*softbounds"):
        make_device("nope", dw_min=0.01)
    with pytest.raises(ParameterError, match="bogus.*valid keys.*tau"):
        make_device("softbounds", tau=1.0, dw_min=0.01, bogus=1)
    with pytest.raises(ParameterError, match="tau=-1"):
        make_device("softbounds", tau=-1.0, dw_min=0.01)
    with pytest.raises(ParameterError, match="preset='nope'.*reram-softbounds"):
        load_preset("nope")


# -- monotonicity (what makes Device.constants exact at the interval ends) ---------------------
@pytest.mark.parametrize("family", FAMILIES)
def test_monotone_responses_proved_symbolically(family):
    """dq_+/dw <= 0 and dq_-/dw >= 0 for all admissible parameters, proved by sympy.

    The derivative is taken at ``w = w_max (1 - x)`` (for q_+) and ``w = w_min (1 - x)`` (for q_-)
    with ``x > 0``, i.e. anywhere inside the range; the exponential shape is written
    ``gamma = log(1 + h)``, ``h > 0``, so that sympy knows ``exp(gamma) - 1 > 0``.
    """
    cls = FAMILIES[family]
    syms = cls.symbols()
    q_plus, q_minus = cls.symbolic()
    lo, hi = (-syms["tau"], syms["tau"]) if "tau" in syms else (syms["w_min"], syms["w_max"])
    x, h = sp.Symbol("x", positive=True), sp.Symbol("h", positive=True)
    d_plus = sp.diff(q_plus, w).subs(w, hi * (1 - x))
    d_minus = sp.diff(q_minus, w).subs(w, lo * (1 - x))
    if "gamma" in syms:
        d_plus, d_minus = (d.subs(syms["gamma"], sp.log(1 + h)) for d in (d_plus, d_minus))
    assert d_plus.is_nonpositive is True
    assert d_minus.is_nonnegative is True


@given(response=any_response)
def test_monotone_on_a_dense_grid(response):
    grid = np.linspace(response.w_min, response.w_max, 2001)
    f = response.compiled()
    assert np.all(np.diff(f.q_plus(grid)) <= 1e-12)
    assert np.all(np.diff(f.q_minus(grid)) >= -1e-12)
    assert np.all(np.diff(f.G(grid)) >= -1e-12)


# -- compiled numpy equals sympy -----------------------------------------------------------------
@given(response=any_response, frac=st.floats(1e-5, 1.0 - 1e-5))
def test_compiled_equals_subs(response, frac):
    """Agreement to 1e-10 relative. Within ``frac`` of a bound, ``1 - w/w_max`` loses about
    ``eps/frac`` relative accuracy to cancellation in floating point (a conditioning limit, not a
    compilation error), so points are drawn at least 1e-5 of the range inside; the bounds
    themselves are checked by ``test_compiled_is_finite_at_the_bounds``."""
    x = _at(response, frac)
    dev = Device("d", response, dw_min=1e-3 * (response.w_max - response.w_min))
    exact = sp.Float(x, 30)
    pairs = [
        (dev.q_plus, response.q_plus_expr), (dev.q_minus, response.q_minus_expr),
        (dev.F, response.F_expr), (dev.G, response.G_expr),
        (dev.saturation, response.saturation_expr),
    ]
    for fn, expr in pairs:
        assert float(fn(x)) == pytest.approx(float(expr.subs(w, exact)), rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("response", EXAMPLES.values(), ids=EXAMPLES.keys())
def test_compiled_keeps_the_shape(response):
    grid = np.zeros((2, 3))
    for fn in response.compiled():
        assert np.shape(fn(grid)) == (2, 3)
        assert np.ndim(fn(0.0)) == 0


@pytest.mark.parametrize("response", EXAMPLES.values(), ids=EXAMPLES.keys())
def test_compiled_is_finite_at_the_bounds(response):
    ends = np.array([response.w_min, response.w_max])
    for fn in response.compiled():
        assert np.all(np.isfinite(fn(ends)))
    if not isinstance(response, LinearStep | ConstantStep):  # responses that vanish at the bounds
        assert response.compiled().q_plus(response.w_max) == 0.0
        assert response.compiled().q_minus(response.w_min) == 0.0


def test_compilation_is_cached_per_equal_object():
    assert SoftBounds(tau=2.0).compiled() is SoftBounds(tau=2).compiled()
    assert SoftBounds(tau=2.0).compiled() is not SoftBounds(tau=3.0).compiled()


# -- symmetric points over drawn parameters ------------------------------------------------------
@given(response=st.one_of(*(RESPONSES[k] for k in FAMILIES if k != "constant-step")))
def test_drawn_closed_form_symmetric_point_equals_numeric_root(response):
    closed = response.symmetric_point()
    assert response.w_min <= closed <= response.w_max
    assert closed == pytest.approx(response.numeric_symmetric_point(), abs=1e-10)
    scale = float(response.compiled().q_plus(_at(response, 0.0)))  # the largest |q|
    assert abs(float(response.compiled().G(closed))) <= 1e-12 * max(scale, 1.0)


def test_linear_step_without_slopes_is_symmetric_everywhere():
    flat = LinearStep(w_min=-1.0, w_max=3.0, gamma_up=0.0, gamma_down=0.0)
    assert flat.G_expr == 0
    assert flat.symmetric_point() == flat.numeric_symmetric_point() == 1.0


# -- constants over an interval ------------------------------------------------------------------
@given(response=any_response, a=st.floats(0.0, 1.0), b=st.floats(0.0, 1.0))
def test_constants_equal_dense_grid(response, a, b):
    lo, hi = sorted((_at(response, 0.02 + 0.96 * a), _at(response, 0.02 + 0.96 * b)))
    dev = Device("d", response, dw_min=1e-3 * (response.w_max - response.w_min))
    c = dev.constants(lo, hi)
    grid = np.linspace(lo, hi, 4001)
    qp, qm, g = dev.q_plus(grid), dev.q_minus(grid), dev.G(grid)
    assert c.q_min == pytest.approx(min(qp.min(), qm.min()), rel=1e-12, abs=1e-14)
    assert c.q_max == pytest.approx(max(qp.max(), qm.max()), rel=1e-12, abs=1e-14)
    assert c.G_inf == pytest.approx(np.abs(g).max(), rel=1e-12, abs=1e-14)
    assert (c.w_lo, c.w_hi) == (lo, hi)


def test_constants_reject_bad_intervals():
    dev = make_device("asymmetric-softbounds", w_min=-0.75, w_max=1.25, dw_min=0.002)
    with pytest.raises(ParameterError, match="w_hi=1.25"):
        dev.constants(-0.5, 1.25)  # q_+ = 0 at w_max
    with pytest.raises(ParameterError, match="w_lo=-1"):
        dev.constants(-1.0, 0.5)  # leaves the range
    with pytest.raises(ParameterError, match="w_hi=-0.5"):
        dev.constants(0.0, -0.5)  # empty interval
    lin = load_preset("capacitor-linearstep")  # q stays > 0 up to the hard bounds
    assert lin.constants(-1.0, 1.0).q_min == pytest.approx(0.95)


# -- presets against paper-notes section 5 -------------------------------------------------------
#: (family, range, dw_min, extra family parameters) as listed in paper-notes section 5
NOTES_SECTION_5 = {
    "reram-softbounds": ("asymmetric-softbounds", (-0.75, 1.25), 0.002, {}),
    "ecram-linearstep": ("linear-step", (-0.8276, 1.1724), 0.002,
                         {"gamma_up": 0.1153, "gamma_down": 0.5085}),
    "capacitor-linearstep": ("linear-step", (-1.0, 1.0), 0.005,
                             {"gamma_up": 0.05, "gamma_down": 0.05}),
    "idealized-constantstep": ("constant-step", (-1.0, 1.0), 0.0002, {}),
    "gokmen-vlasov-constantstep": ("constant-step", (-1.0, 1.0), 0.0016, {}),
    "softbounds-tau1": ("softbounds", (-1.0, 1.0), 0.001, {"tau": 1.0}),
}


@pytest.mark.parametrize("name", EXPECTED_PRESETS)
def test_preset_numbers_match_the_notes(name):
    family, (lo, hi), dw_min, extra = NOTES_SECTION_5[name]
    dev = load_preset(name)
    assert (dev.family, dev.w_min, dev.w_max, dev.dw_min) == (family, lo, hi, dw_min)
    for key, value in extra.items():
        assert getattr(dev.response, key) == value
    assert dev.symmetric_point() == 0.0  # every preset is calibrated to its symmetry point
    timing = preset_table(name)["timing"]
    assert timing == {"clock_hz": 1e9, "read_time_s": 80e-9, "pulse_width_s": 1e-9,
                      "bit_length": 10, "tile_rows": 128, "tile_cols": 128}


def test_reram_cycle_to_cycle_noise_is_stored_as_given():
    assert load_preset("reram-softbounds").dw_min_std == 3.75


def test_preset_table_is_a_copy():
    table = preset_table("softbounds-tau1")
    table["device"]["tau"] = 5.0
    assert preset_table("softbounds-tau1")["device"]["tau"] == 1.0


# -- tables and bad inputs -----------------------------------------------------------------------
def test_device_from_table_round_trip_and_errors():
    table = {"family": "power", "name": "p", "tau": 2.0, "pow_gamma": 1.5, "dw_min": 0.01,
             "desired_bl": 10}
    dev = device_from_table(table)
    assert dev == make_device("power", name="p", tau=2.0, pow_gamma=1.5, dw_min=0.01,
                              desired_bl=10)
    with pytest.raises(ParameterError, match="unknown device key.*w_max.*valid keys: .*pow_gamma"):
        device_from_table({**table, "w_max": 1.0})
    with pytest.raises(ParameterError, match="'family'"):
        device_from_table({"tau": 1.0, "dw_min": 0.01})
    with pytest.raises(ParameterError, match="dw_min"):
        device_from_table({"family": "softbounds", "tau": 1.0})
    with pytest.raises(ParameterError, match="needs pow_gamma"):
        device_from_table({"family": "power", "tau": 1.0, "dw_min": 0.01})


@pytest.mark.parametrize(("factory", "param"), [
    (lambda: SoftBounds(tau=0.0), "tau"),
    (lambda: SoftBounds(tau=float("nan")), "tau"),
    (lambda: AsymmetricSoftBounds(w_min=0.5, w_max=1.0), "w_min"),
    (lambda: AsymmetricSoftBounds(w_min=-0.5, w_max=-0.1), "w_max"),
    (lambda: AsymmetricSoftBounds(w_min=-0.5, w_max=1.0, up=0.0), "up"),
    (lambda: AsymmetricSoftBounds(w_min=-0.5, w_max=1.0, down=-1.0), "down"),
    (lambda: LinearStep(w_min=-1.0, w_max=1.0, gamma_up=1.5, gamma_down=0.1), "gamma_up"),
    (lambda: LinearStep(w_min=-1.0, w_max=1.0, gamma_up=0.1, gamma_down=-0.1), "gamma_down"),
    (lambda: PowerStep(tau=1.0, pow_gamma=0.0), "pow_gamma"),
    (lambda: ExponentialStep(tau=1.0, gamma=-2.0), "gamma"),
    (lambda: ExponentialStep(tau=1.0, gamma=400.0), "gamma"),  # e^(2 gamma) overflows
    (lambda: ExponentialStep(tau="1", gamma=2.0), "tau"),
    (lambda: ConstantStep(w_min=1.0, w_max=1.0), "w_max"),
    (lambda: Device("d", SoftBounds(1.0), dw_min=0.0), "dw_min"),
    (lambda: Device("d", SoftBounds(1.0), dw_min=3.0), "dw_min"),
    (lambda: Device("d", SoftBounds(1.0), dw_min=0.01, dw_min_std=-0.1), "dw_min_std"),
    (lambda: Device("d", SoftBounds(1.0), dw_min=0.01, dw_min_dtod=-1.0), "dw_min_dtod"),
    (lambda: Device("d", SoftBounds(1.0), dw_min=0.01, w_bounds_dtod=-1.0), "w_bounds_dtod"),
    (lambda: Device("d", SoftBounds(1.0), dw_min=0.01, desired_bl=2.5), "desired_bl"),
    (lambda: Device("d", SoftBounds(1.0), dw_min=0.01, desired_bl=0), "desired_bl"),
    (lambda: Device("", SoftBounds(1.0), dw_min=0.01), "name"),
    (lambda: Device("d", "softbounds", dw_min=0.01), "response"),
])
def test_bad_parameters_are_named(factory, param):
    with pytest.raises(ParameterError, match=rf"^{param}="):
        factory()


def test_objects_are_frozen_and_hashable():
    dev = load_preset("ecram-linearstep")
    with pytest.raises(dataclasses.FrozenInstanceError):
        dev.dw_min = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        dev.response.gamma_up = 0.2
    assert hash(dev) == hash(load_preset("ecram-linearstep"))
    assert isinstance(SoftBounds(tau=2).tau, float)


@given(response=any_response, dw_frac=st.floats(1e-4, 1.0), std=st.floats(0.0, 5.0))
def test_device_table_round_trip(response, dw_frac, std):
    dev = Device("user", response, dw_min=dw_frac * (response.w_max - response.w_min),
                 dw_min_std=std, desired_bl=7)
    assert device_from_table(device_to_table(dev)) == dev


def test_F_constant_is_the_value_of_a_weight_independent_F():
    assert make_device("softbounds", tau=2.0, dw_min=0.01).F_constant == 1.0
    assert make_device("constant-step", w_min=-1, w_max=1, up=0.5, down=1.5,
                       dw_min=0.01).F_constant == 1.0
    assert make_device("power", tau=1.0, pow_gamma=2.0, dw_min=0.01).F_constant is None


def test_exponential_at_the_largest_gamma_is_finite():
    """Up to GAMMA_MAX every response is a finite float on the whole range (no inf constants)."""
    response = ExponentialStep(tau=1.0, gamma=ExponentialStep.GAMMA_MAX)
    grid = np.linspace(-1.0, 1.0, 101)
    fns = response.compiled()
    with np.errstate(all="raise"):
        for fn in (fns.q_plus, fns.q_minus, fns.F, fns.G):
            assert np.all(np.isfinite(fn(grid)))
    constants = Device("exp", response, dw_min=0.01).constants(-0.5, 0.5)
    assert np.isfinite([constants.q_min, constants.q_max, constants.G_inf]).all()


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [(dict(W_max=-0.5, tau=1.0), "W_max"), (dict(W_max=0.5, tau=-1.0), "tau"),
     (dict(W_max=0.0, tau=1.0), "W_max"), (dict(W_max=-symbols.W_max), "W_max")],
)
def test_soft_bounds_constants_reject_non_positive_values(kwargs, param):
    """A negative W_max would give q_min > q_max and a negative G_inf."""
    with pytest.raises(ParameterError, match=rf"^{param}=.*range"):
        soft_bounds_constants(**kwargs)


# -- type confusion and long key lists in [device] tables --------------------------------------

@pytest.mark.parametrize("family", [["softbounds"], {"a": 1}, 3])
def test_family_of_another_type_is_named(family):
    with pytest.raises(ParameterError, match="^family=.* is unknown .*not a string.*; valid: "
                                             "softbounds"):
        device_from_table({"family": family, "tau": 1.0, "dw_min": 0.01})
    with pytest.raises(ParameterError, match="^family="):
        make_device(family, tau=1.0, dw_min=0.01)


def test_unknown_family_string_keeps_its_message():
    with pytest.raises(ParameterError, match="^family='nope' is unknown; valid: softbounds"):
        device_from_table({"family": "nope"})


def test_many_unknown_device_keys_give_a_short_message():
    table = {"family": "softbounds", "tau": 1.0, "dw_min": 0.01,
             **{f"x{i:05d}": 1 for i in range(5000)}}
    with pytest.raises(ParameterError) as info:
        device_from_table(table)
    text = str(info.value)
    assert text.startswith("5000 unknown device keys: 'x00000', 'x00001'") and len(text) < 400
    assert "valid keys: family, name, tau" in text


def test_unknown_keys_lists_a_few():
    assert unknown_keys(["a"]) == "unknown key 'a'"
    assert unknown_keys(["a", "b"], "timing key") == "unknown timing keys 'a', 'b'"
    assert unknown_keys(map(str, range(6))) == "6 unknown keys: '0', '1', '2', '3', '4', ..."


def test_integer_beyond_the_float_range_is_named():
    with pytest.raises(ParameterError, match=r"^tau=.*\(401 digits\) is beyond the float range"):
        device_from_table({"family": "softbounds", "tau": 10**400, "dw_min": 0.01})
