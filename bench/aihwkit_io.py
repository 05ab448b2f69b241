"""The analog forward with aihwkit's default IO: the package next to aihwkit 1.1.0, per output.

Run from the repository root: ``python -m bench.aihwkit_io [--repeats N]`` (aihwkit's interpreter
as in ``bench/aihwkit_training.py``; without it the script says so and exits 0).

Two probes, each ``N`` forward passes of the same rows through the same weights on each side
(:func:`simulate.device.analog_matmul` with the ``aihwkit`` IO preset; an ``AnalogLinear`` with
``IOParameters()``):

- ``digits``: 64 training images (pixels k/16, so the DAC input 0.5 of pixel 8 falls on a half
  step of the 7-bit DAC) through the first layer's initial weights (64 x 32) of the digits MLP;
- ``bound``: non-negative rows ``0.5 u``, ``u ~ U[0, 1)^32`` (abs-max noise management scales
  them back to ``u``) through weights ``N(0.75, 0.3^2)`` clipped to ``[-1, 1]`` (32 x 10): analog
  outputs ``u W`` near the ADC bound 12, so bound management acts on most rows (outputs ``|z|``
  up to about 6).

Per probe it prints the mean difference of the per-output means (package - aihwkit), the share of
outputs whose difference exceeds 3 standard errors, the largest ``|z|``, and the same for two
variants of the package's quantiser applied by this script only (nothing in the package changes):
the quantisation computed in float32 as aihwkit does (in both converters, in the DAC only, in the
ADC only), and the bound test counting the ADC's top level as a hit. Nothing is asserted.
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import contextlib  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
if __name__ == "__main__" and str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import simulate.device.mvm as mvm  # noqa: E402
from bench.aihwkit_training import aihwkit_python, run_side  # noqa: E402
from simulate import load_digits_split  # noqa: E402
from simulate.device import analog_matmul, io_preset  # noqa: E402
from simulate.problems import Network, NetworkSpec  # noqa: E402
from simulate.rng import member_generators  # noqa: E402
from theory import text_table  # noqa: E402


def probes() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The rows and weights of each probe (module docstring)."""
    data = load_digits_split()
    network = Network.build("digits-mlp", NetworkSpec(), 1, 64, 10)
    w, _ = network.init(member_generators(0, [0])["data"], -0.5, 0.5)
    first = w[0, :64 * 32].reshape(64, 32)
    rng = np.random.default_rng(np.random.SeedSequence([26, 4]))
    x = 0.5 * rng.random((64, 32))
    weights = np.clip(rng.normal(0.75, 0.3, (32, 10)), -1.0, 1.0)
    return {"digits": (data.x_train[:64].copy(), first), "bound": (x, weights)}


def _float32_quantise(v, step, stochastic, uniform):
    """aihwkit's arithmetic: the step and the quotient in float32."""
    if step <= 0:
        return v
    step32 = np.float32(step)
    q = np.rint(v.astype(np.float32) / step32)
    return (q * step32).astype(np.float64)


@contextlib.contextmanager
def variant(name: str):
    """The package's quantiser as is, in float32 arithmetic, or with the top level a hit."""
    original_q, original_pass = mvm._quantise, mvm._one_pass
    if name == "float32":
        mvm._quantise = _float32_quantise
    elif name in ("float32 DAC only", "float32 ADC only"):
        dac = name == "float32 DAC only"
        inp_step = mvm.io_preset("aihwkit").inp_step

        def quantise(v, step, stochastic, uniform):
            use = (step == inp_step) == dac
            return (_float32_quantise if use else original_q)(v, step, stochastic, uniform)
        mvm._quantise = quantise
    elif name == "top level hits":
        def one_pass(x, w, scale, io, normal, uniform, *, bm):
            y, passed = original_pass(x, w, scale, io, normal, uniform, bm=bm)
            if bm and passed is not None:
                passed &= ~(np.abs(y) >= io.out_bound).any(axis=-1)
            return y, passed
        mvm._one_pass = one_pass
    try:
        yield
    finally:
        mvm._quantise, mvm._one_pass = original_q, original_pass


def aimc_moments(x: np.ndarray, w: np.ndarray, repeats: int, seed: int = 0):
    """Mean and variance of every output over ``repeats`` passes (one member per pass)."""
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence([seed, 7]).spawn(repeats)]
    y = analog_matmul(np.broadcast_to(x, (repeats,) + x.shape),
                      np.broadcast_to(w, (repeats,) + w.shape), io_preset("aihwkit"), rngs)
    return y.mean(0), y.var(0, ddof=1)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=2000, help="passes per side")
    args = parser.parse_args(argv)
    python = aihwkit_python()
    if python is None:
        print("skipped: the IO comparison needs aihwkit")
        return 0
    n = args.repeats
    header = ["probe", "package variant", "mean diff", "share |z| > 3", "max |z|"]
    rows = []
    for probe, (x, w) in probes().items():
        out = run_side(python, {"x_probe": x, "w_probe": w},
                       {"mode": "forward", "repeats": n, "tau": 1.0, "dw_min": 0.001,
                        "desired_bl": 31, "lr": 0.0})
        mean_k = out["y_mean"]
        var_k = np.maximum(out["y_sq"] - mean_k**2, 0.0) * n / (n - 1)
        for name in ("as is", "float32", "float32 DAC only", "float32 ADC only",
                     "top level hits"):
            with variant(name):
                mean_a, var_a = aimc_moments(x, w, n)
            se = np.sqrt((var_a + var_k) / n)
            z = (mean_a - mean_k) / np.where(se > 0, se, np.inf)
            exact = np.abs(mean_a - mean_k)[se == 0]
            if exact.size and exact.max() > 0:
                z[se == 0] = np.inf
            rows.append([probe, name, f"{(mean_a - mean_k).mean():+.5f}",
                         f"{np.mean(np.abs(z) > 3):.3f}", f"{np.abs(z).max():.1f}"])
            print(text_table(header, rows[-1:]), flush=True)
    print()
    print(text_table(header, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
