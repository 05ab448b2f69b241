"""Hardware fidelity of the pulse-level update (issue 13): aihwkit's pulse types, the BL cap,
cycle-to-cycle noise per pulse, and the ``pulse-response`` command."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulate import SimConfig, Updater, UpdateSpec, pulsed_update, run
from simulate.commands import pulse_response as command
from simulate.device import (
    DeviceSpread,
    PulseResponseConfig,
    coincidence_counts,
    pulse_counts,
    pulse_response,
    train_scale,
)
from theory import ParameterError, load_preset, make_device, preset_table

Z = 4.0


def _binomial_moments(bl: int, p: float) -> tuple[float, float, float]:
    """Mean, variance and fourth central moment of Binomial(bl, p)."""
    q = 1.0 - p
    var = bl * p * q
    return bl * p, var, var * (1.0 + 3.0 * (bl - 2) * p * q)


def _check_binomial(counts: np.ndarray, bl: int, p: float) -> None:
    """Sample mean and variance of independent counts against Binomial(bl, p) at z = 4."""
    n = counts.size
    mean, var, mu4 = _binomial_moments(bl, p)
    assert abs(counts.mean() - mean) <= Z * np.sqrt(var / n)
    s2 = counts.var(ddof=1)
    var_of_s2 = (mu4 - var**2 * (n - 3) / (n - 1)) / n
    assert abs(s2 - var) <= Z * np.sqrt(var_of_s2)


# -- the reference: the pulsed update as it was before pulse types (ad85997), self-contained ----

def _reference_pulsed_update(w, dw, device, rng, dw_min_scale=None, bound_scale=None):
    w = np.array(w, dtype=float)
    dw = np.broadcast_to(np.asarray(dw, dtype=float), w.shape)
    step = device.dw_min * (1.0 if dw_min_scale is None else dw_min_scale)
    x = np.abs(dw) / step
    whole = np.floor(x)
    if isinstance(rng, np.random.Generator):
        u = rng.random(w.shape)
    else:
        u = np.stack([g.random(w.shape[1:]) for g in rng])
    pulses = (whole + (u < x - whole)).astype(np.int64)
    if pulses.max() == 0:
        return w
    up = dw >= 0
    signed_step = np.where(up, step, -step)
    lo, hi = device.w_min, device.w_max
    if bound_scale is not None:
        lo, hi = lo * bound_scale, hi * bound_scale
    most = int(pulses.max())
    if device.dw_min_std > 0:
        if isinstance(rng, np.random.Generator):
            xi = rng.standard_normal((most, *w.shape))
        else:
            sizes = pulses.reshape(len(pulses), -1).max(axis=1)
            xi = np.zeros((most, *w.shape))
            for r, (g, size) in enumerate(zip(rng, sizes, strict=True)):
                xi[:size, r] = g.standard_normal((int(size), *w.shape[1:]))
    for p in range(most):
        v = w if bound_scale is None else w / bound_scale
        q = np.where(up, device.q_plus(v), device.q_minus(v))
        if device.dw_min_std == 0:
            inc = signed_step * q
        elif device.c2c_noise == "additive":
            inc = signed_step * q + step * (device.dw_min_std * xi[p])
        else:
            inc = signed_step * q * (1.0 + device.dw_min_std * xi[p])
        w = np.where(pulses > p, np.clip(w + inc, lo, hi), w)
    return w


@pytest.mark.parametrize("preset", ["reram-softbounds", "ecram-linearstep", "softbounds-tau1",
                                    "gokmen-vlasov-constantstep"])
@pytest.mark.parametrize("ensemble", [False, True])
def test_deterministic_is_the_original_pulsed_update_bit_for_bit(preset, ensemble):
    device = load_preset(preset)
    shape = (3, 40)
    start = np.random.default_rng(1)
    w = start.uniform(0.5 * device.w_min, 0.5 * device.w_max, shape)
    dw = start.normal(0.0, 20 * device.dw_min, shape)

    def rngs():
        if ensemble:
            return [np.random.default_rng(s) for s in (5, 6, 7)]
        return np.random.default_rng(5)

    spread = DeviceSpread.draw(device, shape, np.random.default_rng(9))
    want = _reference_pulsed_update(w, dw, device, rngs(), spread.dw_min_scale,
                                    spread.bound_scale)
    # the pulse loop (the closed form of the default method is compared with it in
    # tests/test_closed_form_pulses.py)
    for got in (
        pulsed_update(w, dw, device, rngs(), spread.dw_min_scale, spread.bound_scale,
                      method="loop"),
        pulsed_update(w, dw, device, rngs(), spread.dw_min_scale, spread.bound_scale,
                      pulse_type="deterministic", method="loop"),
        Updater("pulsed", device, pulse_method="loop")(w, dw, rngs(), spread),
    ):
        assert np.array_equal(got, want)


def test_the_default_pulse_type_is_aihwkits():
    """New runs count pulses as aihwkit's default (StochasticCompressed); the package's original
    model stays available as ``deterministic`` and is recorded as such."""
    base = SimConfig(problem="quadratic", update="pulsed", device="reram-softbounds", tau=None,
                     steps=30, seeds=2, dim=6, lr=0.02)
    assert base.pulse_type == "stochastic"
    a = run(base, 3)
    b = run(replace(base, pulse_type="stochastic"), 3)
    assert np.array_equal(a.loss, b.loss) and a.config["pulse_type"] == "stochastic"
    c = run(replace(base, pulse_type="deterministic"), 3)
    assert c.config["pulse_type"] == "deterministic" and not np.array_equal(a.loss, c.loss)


# -- stochastic: the coincidence count ------------------------------------------------------------

@pytest.mark.parametrize("x, d, lr, dw_min, bl", [
    (0.25, 0.2, 1.0, 5e-4, 1000),   # the case: n = 100, p_x p_d = 0.1
    (0.7, 0.9, 0.01, 1e-3, 31),     # aihwkit's default BL
    (1.0, 3.0, 1.0, 1e-2, 50),      # p_d clipped at 1: p = p_x
])
def test_stochastic_train_count_is_the_binomial_coincidence_count(x, d, lr, dw_min, bl):
    """Independent 1 x 1 tiles: the count of each is Binomial(BL, p_x p_d) exactly."""
    rng = np.random.default_rng(11)
    counts = np.array([coincidence_counts([x], [d], lr, dw_min, bl, rng)[0, 0]
                       for _ in range(4000)])
    scale = train_scale(lr, dw_min, bl)
    p = min(1.0, scale * x) * min(1.0, scale * d)
    assert counts.max() <= bl
    _check_binomial(counts, bl, p)


def test_the_x_train_is_shared_along_the_column():
    """Rows of one column share the x-train: each row's count is at most its number of ones,
    and with p_d = 1 every row gets exactly that number."""
    rng = np.random.default_rng(2)
    bl, dw_min = 200, 1e-3
    scale = train_scale(1.0, dw_min, bl)
    counts = coincidence_counts([0.5 / scale], np.full(500, 1.0 / scale), 1.0, dw_min, bl, rng)
    assert counts.shape == (500, 1) and np.all(counts == counts[0, 0])
    assert 0 < counts[0, 0] < bl


@pytest.mark.parametrize("x, bl", [(100.0, 1000), (3.4, 31), (0.3, 31), (500.0, 100)])
def test_stochastic_count_per_device_is_binomial(x, bl):
    """The dW-only path (oracle, networks): Binomial(BL, min(1, x / BL)) per device."""
    counts = pulse_counts(np.full(20000, x), np.random.default_rng(4), "stochastic", bl)
    _check_binomial(counts, bl, min(1.0, x / bl))


def test_stochastic_ensemble_members_are_independent_of_each_other():
    device = make_device("constant-step", w_min=-1.0, w_max=1.0, dw_min=1e-3, dw_min_std=0.3)
    w, dw = np.zeros((2, 50)), np.full((2, 50), 0.01)
    both = pulsed_update(w, dw, device, [np.random.default_rng(s) for s in (1, 2)],
                         pulse_type="stochastic", bl=100)
    alone = pulsed_update(w[:1], dw[:1], device, [np.random.default_rng(1)],
                          pulse_type="stochastic", bl=100)
    assert np.array_equal(both[:1], alone)


@pytest.mark.parametrize("noise", ["multiplicative", "additive"])
def test_cycle_to_cycle_noise_is_applied_per_pulse(noise):
    """Constant step (q = 1): increment = dw_min sum_{p < n} (1 + s xi_p) (either convention), so
    mean dw_min E[n] and variance dw_min^2 (Var[n] + E[n] s^2), n ~ Binomial(BL, p)."""
    sigma, bl, dw_min, dw = 0.3, 100, 1e-3, 0.02
    device = make_device("constant-step", w_min=-1.0, w_max=1.0, dw_min=dw_min,
                         dw_min_std=sigma, c2c_noise=noise)
    n = 20000
    inc = pulsed_update(np.zeros(n), np.full(n, dw), device, np.random.default_rng(8),
                        pulse_type="stochastic", bl=bl)
    mean_n, var_n, _ = _binomial_moments(bl, dw / dw_min / bl)
    var = dw_min**2 * (var_n + mean_n * sigma**2)
    assert abs(inc.mean() - dw_min * mean_n) <= Z * np.sqrt(var / n)
    assert abs(inc.var() / var - 1.0) <= 6 * np.sqrt(2.0 / n)


# -- the BL cap and mean-count --------------------------------------------------------------------

@pytest.mark.parametrize("pulse_type", ["stochastic", "mean-count"])
def test_at_most_bl_pulses_per_update(pulse_type):
    device = make_device("constant-step", w_min=-1.0, w_max=1.0, dw_min=1e-3)
    x = np.array([10.0, 31.0, 32.0, 500.0])
    counts = pulse_counts(np.tile(x, 100), np.random.default_rng(0), pulse_type, 31)
    assert counts.max() <= 31 and np.all(counts[3::4] == 31)
    w = pulsed_update(np.zeros(4), x * 1e-3, device, np.random.default_rng(0),
                      pulse_type=pulse_type)  # BL = device.desired_bl = 31
    assert np.all(w <= 31 * 1e-3 + 1e-15) and w[3] == pytest.approx(0.031)
    big = coincidence_counts([100.0], [100.0, -100.0], 1.0, 1e-3, 31,
                             np.random.default_rng(0), pulse_type)
    assert np.array_equal(big, [[31], [31]])


def test_mean_count_has_no_count_variance():
    counts = pulse_counts(np.full(1000, 7.4), np.random.default_rng(0), "mean-count", 31)
    assert np.all(counts == 7)
    tile = coincidence_counts([0.25], np.full(1000, -0.2), 1.0, 5e-4, 1000,
                              np.random.default_rng(0), "mean-count")
    # aihwkit MeanCount: rint(rint(BL p_x) rint(BL p_d) / BL) = rint(354 * 283 / 1000)
    assert np.all(tile == 100)
    rows = pulse_response(PulseResponseConfig(pulse_type="mean-count", dw_min=5e-4, bl=1000,
                                              devices=500, w0=(0.0, 0.5), delta=(0.05, -0.01)))
    assert all(r.pulses_std == 0.0 and r.std < 1e-12 for r in rows)


@settings(max_examples=30, deadline=None)
@given(p_x=st.floats(0.0, 1.0), p_d=st.floats(0.0, 1.0), bl=st.integers(1, 300),
       seed=st.integers(0, 2**32 - 1))
def test_coincidences_never_exceed_either_train(p_x, p_d, bl, seed):
    """n_i <= ones of the shared x-train <= BL; p = 0 fires nothing, p = 1 fires every bit."""
    dw_min = 1e-3
    scale = train_scale(1.0, dw_min, bl)
    d = np.full(64, p_d / scale)
    counts = coincidence_counts([p_x / scale], d, 1.0, dw_min, bl, np.random.default_rng(seed))
    ones = np.random.default_rng(seed).random((1, bl)) < min(1.0, scale * (p_x / scale))
    assert np.all(counts <= ones.sum()) and counts.max() <= bl and counts.min() >= 0
    if p_x == 0.0 or p_d == 0.0:
        assert counts.max() == 0
    if p_x == 1.0 and p_d == 1.0:
        assert np.all(counts == bl)


# -- pulse-response ----------------------------------------------------------------------------

DONE_WHEN = ["--device", "softbounds", "--tau", "1", "--dw-min", "0.0005", "--bl", "1000",
             "--pulse-type", "stochastic", "--devices", "2000", "--w0", "0", "--delta", "0.05",
             "--json"]


def test_pulse_response_done_when_command(capsys):
    assert command.main(DONE_WHEN) == 0
    (row,) = json.loads(capsys.readouterr().out)["rows"]
    assert {"w0", "delta", "mean", "std", "n"} <= set(row) and row["n"] == 2000
    # n = 100 pulses of dw_min q(w) ~ 0.0005 (1 - w): mean ~ 0.0488, std over rows sharing one
    # x-train ~ dw_min sqrt(S p_d (1 - p_d)) with S ~ BL p_x = 354, p_d = 0.283: ~ 0.0042
    assert row["mean"] == pytest.approx(0.0488, rel=0.08)
    assert 0.003 < row["std"] < 0.0055
    assert command.main([*DONE_WHEN[:9], "deterministic", *DONE_WHEN[10:]]) == 0
    (det,) = json.loads(capsys.readouterr().out)["rows"]
    assert det["std"] < 1e-12 and det["mean"] == pytest.approx(0.0487825, rel=1e-5)


def test_pulse_response_table_lists_every_case(capsys):
    assert command.main(["--devices", "50", "--w0", "0", "0.5", "--delta", "0.01", "-0.01"]) == 0
    out = capsys.readouterr().out
    assert "pulses std" in out and len(out.strip().splitlines()) == 2 + 1 + 4


@pytest.mark.parametrize("argv, start", [
    (["--x", "0"], "--x=0"),
    (["--w0", "3"], "--w0=3"),
    (["--bl", "0"], "--bl=0"),
    (["--devices", "0"], "--devices=0"),
    (["--devices", "100000000", "--bl", "1000"], "--devices=100000000"),
    (["--device", "nosuch"], "--device='nosuch'"),
    (["--dw-min", "-1"], "--dw-min=-1"),
    (["--pulse-type", "deterministic", "--delta", "1e9"], "--delta=1000000000.0 asks for"),
])
def test_pulse_response_bad_input_is_one_line(argv, start, capsys):
    assert command.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith(f"aimc-pipeline pulse-response: error: {start}"), err


def test_pulse_response_config_refuses_bad_lists():
    with pytest.raises(ParameterError, match=r"^w0=\[\] is empty"):
        PulseResponseConfig(w0=())
    with pytest.raises(ParameterError, match=r"^pulse_type='implicit' is unknown"):
        PulseResponseConfig(pulse_type="implicit")
    with pytest.raises(ParameterError, match=r"^pulse_type='x' is unknown"):
        SimConfig(pulse_type="x")


#: how each preset's aihwkit counterpart applies cycle-to-cycle noise (mult_noise in IBM/aihwkit
#: src/aihwkit/simulator/presets/devices.py; constant step: both conventions coincide at q = 1)
AIHWKIT_C2C = {
    "reram-softbounds": "additive",        # ReRamSBPresetDevice, mult_noise = False
    "capacitor-linearstep": "additive",    # CapacitorPresetDevice, mult_noise = False
    "ecram-linearstep": "multiplicative",  # EcRamPresetDevice, mult_noise = True
    "idealized-constantstep": "multiplicative",
    "gokmen-vlasov-constantstep": "multiplicative",
    "softbounds-tau1": "multiplicative",   # SoftBoundsDevice
}


@pytest.mark.parametrize("name", sorted(AIHWKIT_C2C))
def test_every_preset_declares_its_cycle_to_cycle_noise(name):
    assert preset_table(name)["device"]["c2c_noise"] == AIHWKIT_C2C[name]
    assert load_preset(name).c2c_noise == AIHWKIT_C2C[name]


def test_a_device_bit_length_beyond_the_limit_is_named():
    device = make_device("softbounds", tau=1.0, dw_min=1e-3, desired_bl=10**6)
    with pytest.raises(ParameterError, match=r"^desired_bl=1000000 is out of range"):
        pulsed_update(np.zeros(3), np.full(3, 0.01), device, np.random.default_rng(0),
                      pulse_type="stochastic")


@pytest.mark.parametrize("problem", ["digits-mlp", "digits-resmlp"])
@pytest.mark.parametrize("pulse_type", ["stochastic", "mean-count"])
def test_one_sample_network_updates_fire_trains_on_the_outer_product(problem, pulse_type):
    """b = 1: each layer's update is rank 1, fired as aihwkit's trains; a member's bits do not
    depend on the ensemble; the run differs from the per-device Binomial stand-in at b = 2."""
    from simulate import train_network
    config = SimConfig(problem=problem, update="pulsed", pulse_type=pulse_type, steps=6,
                       seeds=2, lr=0.1, micro_batch_size=1, stages=2, mode="async", log_every=3)
    both = train_network(config, 4)
    alone = train_network(replace(config, seeds=1), 4, members=[1])
    assert np.array_equal(both.weights[1:], alone.weights)
    assert both.trace.config["pulse_type"] == pulse_type
    # one large step on an almost linear device (tau = 1000: q = 1 +- 1e-3): at most BL = 31
    # pulses per weight (deterministic rounding fires hundreds)
    big = replace(config, tau=1000.0, lr=2.0, steps=1, seeds=1, mode="none", stages=1)
    start = train_network(replace(big, update="expected", pulse_type=UpdateSpec().pulse_type,
                                  lr=1e-300), 0).weights
    moved = np.abs(train_network(big, 0).weights - start) / 1e-3
    assert 30 < moved.max() <= 31 * 1.002
    if problem == "digits-mlp":  # (the residual network diverges with so many pulses)
        assert np.abs(train_network(replace(big, pulse_type="deterministic"), 0).weights
                      - start).max() / 1e-3 > 100
