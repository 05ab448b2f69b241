"""The aihwkit side of ``bench/aihwkit_training.py``, run by aihwkit's own Python interpreter.

``python bench/aihwkit_side.py IN.npz OUT.npz`` (with the interpreter of a venv holding torch and
aihwkit 1.1.0). It imports numpy, torch and aihwkit only, never the project: everything it needs
comes in ``IN.npz``, written by :func:`bench.aihwkit_training.export_runs`:

- ``x_train``, ``y_train``, ``x_test``, ``y_test``: the digits split (float64 features in [0, 1]);
- ``shapes`` ``(L, 2)``: each layer's ``(fan_in, fan_out)``, input side first; the last layer is
  the output layer (no activation), the others ``tanh``;
- ``w0_i`` ``(R, fan_in, fan_out)``: layer ``i``'s initial weights per member (biases start at 0);
- ``batches`` ``(K, R, b)``: the training indices of update ``k`` of member ``r``;
- ``settings``: a JSON string with ``lr``, ``tau``, ``dw_min``, ``desired_bl``, ``mode``
  (``"train"`` or ``"step"``) and, for ``"step"``, ``repeats``.

aihwkit's pulse draws cannot be seeded from Python (``torch.manual_seed`` does not reach the C++
generators, which a zero seed starts from the clock): every run draws afresh, so its accuracies
are a record, not bits to reproduce.

``mode = "train"``: every member trains on its batches (one update per batch: forward, mean
cross-entropy, backward, ``AnalogSGD.step``, which writes each sample's rank-1 update as its own
pulse trains, sample by sample); ``OUT.npz`` gets ``accuracy`` ``(R,)`` (test accuracy of the
final weights, read exactly) and ``final_i`` (the final weights). ``mode = "step"``: one update
of member 0 on its first batch, ``repeats`` times from the same initial weights; ``OUT.npz`` gets
``dw_mean_i``, ``dw_sq_i`` (the mean and mean square of each layer's weight change).
``mode = "forward"``: ``x_probe`` ``(n, fan_in)`` through one tile holding ``w_probe``, with
aihwkit's forward IO (:func:`forward_moments`); ``OUT.npz`` gets ``y_mean``, ``y_sq``.

The tile: ``SingleRPUConfig`` with ``SoftBoundsDevice(w_min=-tau, w_max=tau, dw_min)`` and every
noise and spread of the device set to 0, ``StochasticCompressed`` pulses of ``desired_bl`` bits
with update and BL management off, perfect forward and backward (exact IO), digital bias.
"""

from __future__ import annotations

import json
import os
import sys

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402


def rpu_config(settings: dict):
    """The aihwkit tile configuration of the comparison (module docstring)."""
    from aihwkit.simulator.configs import PulseType, SingleRPUConfig, SoftBoundsDevice
    from aihwkit.simulator.parameters import IOParameters, UpdateParameters

    tau = float(settings["tau"])
    device = SoftBoundsDevice(
        w_min=-tau, w_max=tau, dw_min=float(settings["dw_min"]),
        dw_min_dtod=0.0, dw_min_std=0.0, w_min_dtod=0.0, w_max_dtod=0.0, up_down=0.0,
        up_down_dtod=0.0, write_noise_std=0.0, lifetime=0.0, diffusion=0.0, reset_std=0.0,
        corrupt_devices_prob=0.0)
    update = UpdateParameters(desired_bl=int(settings["desired_bl"]), fixed_bl=True,
                              pulse_type=PulseType.STOCHASTIC_COMPRESSED,
                              update_management=False, update_bl_management=False)
    return SingleRPUConfig(device=device, forward=IOParameters(is_perfect=True),
                           backward=IOParameters(is_perfect=True), update=update)


def build(shapes, weights, config):
    """The MLP (tanh between layers) with the given initial weights ``(fan_in, fan_out)`` each,
    biases 0."""
    import torch
    from aihwkit.nn import AnalogLinear

    layers = []
    for i, ((fan_in, fan_out), w) in enumerate(zip(shapes, weights, strict=True)):
        layer = AnalogLinear(int(fan_in), int(fan_out), bias=True, rpu_config=config)
        layer.set_weights(torch.tensor(np.asarray(w).T, dtype=torch.float32),
                          torch.zeros(int(fan_out)))
        layers.append(layer)
        if i < len(shapes) - 1:
            layers.append(torch.nn.Tanh())
    return torch.nn.Sequential(*layers)


def weights_of(model):
    """Each analog layer's weights ``(fan_in, fan_out)`` as float64."""
    from aihwkit.nn import AnalogLinear

    out = []
    for module in model:
        if isinstance(module, AnalogLinear):
            w, _ = module.get_weights()
            out.append(w.detach().numpy().astype(np.float64).T)
    return out


def train(model, x, y, batches, lr: float):
    """One ``AnalogSGD`` update per batch (mean cross-entropy)."""
    import torch
    from aihwkit.optim import AnalogSGD

    optimizer = AnalogSGD(model.parameters(), lr=lr)
    optimizer.regroup_param_groups(model)
    loss_fn = torch.nn.CrossEntropyLoss()
    for idx in batches:
        optimizer.zero_grad()
        loss = loss_fn(model(x[idx]), y[idx])
        loss.backward()
        optimizer.step()


def accuracy(model, x, y) -> float:
    """Test accuracy of ``model`` (the analog forward is exact here)."""
    import torch

    with torch.no_grad():
        return float((model(x).argmax(dim=1) == y).float().mean())


def forward_moments(x, w, settings: dict) -> dict:
    """``mode = "forward"``: the rows ``x`` ``(n, fan_in)`` through one tile holding ``w``
    ``(fan_in, fan_out)`` with aihwkit's default forward ``IOParameters`` (its fields overridden
    by ``settings["io"]``), ``repeats`` times: the mean and mean square of every output."""
    import torch
    from aihwkit.nn import AnalogLinear
    from aihwkit.simulator.parameters import IOParameters

    config = rpu_config(settings)
    config.forward = IOParameters(**settings.get("io", {}))
    layer = AnalogLinear(w.shape[0], w.shape[1], bias=False, rpu_config=config)
    layer.set_weights(torch.tensor(np.asarray(w).T, dtype=torch.float32))
    xs = torch.tensor(x, dtype=torch.float32)
    total = np.zeros((x.shape[0], w.shape[1]))
    square = np.zeros_like(total)
    repeats = int(settings["repeats"])
    with torch.no_grad():
        for _ in range(repeats):
            y = layer(xs).numpy().astype(np.float64)
            total += y
            square += y * y
    return {"y_mean": total / repeats, "y_sq": square / repeats}


def main(argv=None) -> int:
    import torch

    torch.set_num_threads(1)
    path_in, path_out = (sys.argv[1:] if argv is None else argv)[:2]
    data = np.load(path_in, allow_pickle=False)
    settings = json.loads(str(data["settings"]))
    out = {}
    if settings["mode"] == "forward":
        out.update(forward_moments(data["x_probe"], data["w_probe"], settings))
        return _save(path_out, out)
    shapes = data["shapes"].tolist()
    x_train = torch.tensor(data["x_train"], dtype=torch.float32)
    y_train = torch.tensor(data["y_train"], dtype=torch.int64)
    x_test = torch.tensor(data["x_test"], dtype=torch.float32)
    y_test = torch.tensor(data["y_test"], dtype=torch.int64)
    w0 = [data[f"w0_{i}"] for i in range(len(shapes))]
    batches = torch.tensor(data["batches"], dtype=torch.int64)
    config = rpu_config(settings)
    if settings["mode"] == "train":
        members = w0[0].shape[0]
        acc, finals = np.empty(members), [[] for _ in shapes]
        for r in range(members):
            model = build(shapes, [w[r] for w in w0], config)
            train(model, x_train, y_train, batches[:, r], float(settings["lr"]))
            acc[r] = accuracy(model, x_test, y_test)
            for i, w in enumerate(weights_of(model)):
                finals[i].append(w)
        out["accuracy"] = acc
        out.update({f"final_{i}": np.stack(f) for i, f in enumerate(finals)})
    elif settings["mode"] == "step":
        repeats = int(settings["repeats"])
        sums = [np.zeros(w.shape[1:]) for w in w0]
        squares = [np.zeros(w.shape[1:]) for w in w0]
        for _ in range(repeats):
            model = build(shapes, [w[0] for w in w0], config)
            start = weights_of(model)
            train(model, x_train, y_train, batches[:1, 0], float(settings["lr"]))
            for i, (w, w_start) in enumerate(zip(weights_of(model), start, strict=True)):
                dw = w - w_start
                sums[i] += dw
                squares[i] += dw * dw
        out.update({f"dw_mean_{i}": s / repeats for i, s in enumerate(sums)})
        out.update({f"dw_sq_{i}": s / repeats for i, s in enumerate(squares)})
    else:
        raise SystemExit(f"mode={settings['mode']!r} is unknown; valid: train, step, forward")
    return _save(path_out, out)


def _save(path_out, out: dict) -> int:
    """``out`` and the versions to ``path_out``."""
    import aihwkit
    import torch

    out["versions"] = json.dumps({"aihwkit": aihwkit.__version__, "torch": torch.__version__,
                                  "numpy": np.__version__})
    np.savez(path_out, **out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
