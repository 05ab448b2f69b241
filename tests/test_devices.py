"""Device response models: closed forms, symmetric points, constants, compilation, presets."""

from __future__ import annotations

import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from theory import symbols
from theory.devices import (
    FAMILIES,
    TIMING_KEYS,
    AsymmetricSoftBounds,
    ConstantStep,
    Device,
    ExponentialStep,
    LinearStep,
    PowerStep,
    SoftBounds,
    device_from_table,
    list_presets,
    load_preset,
    make_device,
    preset_table,
    soft_bounds_constants,
    w,
)
from theory.errors import ParameterError

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


def test_examples_cover_every_family():
    assert set(EXAMPLES) == set(FAMILIES)


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
    assert set(table["timing"]) == set(TIMING_KEYS)
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
