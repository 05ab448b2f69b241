"""Figure ``modes``: predicted time to eps against the number of accelerators, for each mode.

One panel per built-in model; one line per mode (``sync``, ``async``, ``dp``, ``hybrid``), each
point the best plan of that mode (:func:`bounds.plan_modes`) on ``N`` accelerators,
three quarters analog (preset ``reram-softbounds``, 16,384 tiles of 128 x 128 each) and one
quarter digital (the A100-like defaults of :func:`bounds.with_digital`); default problem constants,
``eps = 0.5``, ``llama2-7b`` at 2048 tokens per sample. A mode without a plan (no layout fits,
or its bound cannot reach eps, e.g. dp and hybrid below the programming-noise floor) has no
point. The sync and async times are guarantees (derived rows); the dp and hybrid times are
estimates (the order-only ``local_sgd`` row, not proved for analog replicas: dashed lines labelled
"estimate", :attr:`bounds.ModePlan.basis`), and the caption names the fastest guarantee and the
fastest estimate apart. The CSV holds every point: model, accelerators, mode, basis, seconds, R,
M, P, B, b, the dominant cost and the layer-to-kind assignment.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from bounds import (
    MODES,
    AcceleratorKind,
    KindsHardware,
    ModeLimits,
    ProblemParams,
    from_preset,
    list_models,
    load_model,
    plan_modes,
)

from .common import new_figure, use_style, write_figure

__all__ = [
    "DESCRIPTION", "NAME", "caption", "compute", "hardware", "manifest", "plot", "table", "write",
]

NAME = "modes"
DESCRIPTION = "predicted time to eps against accelerators, per mode (sync, async, dp, hybrid)"
#: whether compute/write take the sweep keywords jobs, scheduler, cache
USES_SWEEP = False

PRESET = "reram-softbounds"
TILES = 16384
EPS = 0.5
MODEL_PARAMETERS = {"llama2-7b": {"sequence_length": 2048}}


def _config(quick: bool) -> dict:
    return {
        "preset": PRESET, "tiles": TILES, "eps": EPS, "digital_share": 0.25,
        "accelerators": [8, 32] if quick else [8, 16, 32, 64],
        "micro_batch_sizes": [1, 4] if quick else [1, 2, 4, 8, 16, 32],
        "periods": [1, 4, 16, 64] if quick else [2**i for i in range(13)],
        "models": list_models(), "model_parameters": MODEL_PARAMETERS,
    }


def hardware(accelerators: int, digital_share: float = 0.25) -> KindsHardware:
    """``accelerators`` split into analog (``PRESET``, ``TILES``) and a ``digital_share``."""
    digital = int(round(accelerators * digital_share))
    kinds = [AcceleratorKind("aimc", "analog", accelerators - digital,
                             hardware=from_preset(PRESET), tiles=TILES)]
    if digital:
        kinds.append(AcceleratorKind("gpu", "digital", digital))
    return KindsHardware(tuple(kinds))


def compute(quick: bool = False) -> dict:
    """The per-mode comparison of every model on every accelerator count (deterministic)."""
    cfg = _config(quick)
    limits = ModeLimits(micro_batch_sizes=tuple(cfg["micro_batch_sizes"]),
                        replica_micro_batches=tuple(cfg["micro_batch_sizes"]),
                        periods=tuple(cfg["periods"]))
    results = {}
    for name in cfg["models"]:
        model = load_model(name, **MODEL_PARAMETERS.get(name, {}))
        for count in cfg["accelerators"]:
            results[name, count] = plan_modes(model, hardware(count, cfg["digital_share"]),
                                              ProblemParams(), cfg["eps"], limits)
    return {"config": cfg, "results": results}


def table(data: dict) -> list[dict[str, object]]:
    """One row per (model, accelerators, mode); a mode without a plan has empty numbers."""
    rows = []
    for (name, count), comparison in sorted(data["results"].items()):
        for mode in MODES:
            p = comparison.get(mode)
            reason = dict(comparison.ruled_out).get(mode, "")
            rows.append({
                "model": name, "accelerators": count, "mode": mode,
                "basis": "" if p is None else p.basis,
                "seconds": "" if p is None else repr(p.seconds),
                "replicas": "" if p is None else p.replicas,
                "stages": "" if p is None else p.stages,
                "period": "" if p is None else p.period,
                "micro_batches": "" if p is None else p.micro_batches,
                "micro_batch_size": "" if p is None else p.micro_batch_size,
                "dominant": "" if p is None else p.dominant,
                "assignment": "" if p is None else p.assignment(),
                "ruled_out": reason,
            })
    return rows


def caption(rows: Sequence[Mapping]) -> str:
    """One sentence from the CSV: at the most accelerators, the fastest guaranteed mode of each
    model, then the fastest estimate (dp, hybrid: unproved) apart."""
    largest = max(int(r["accelerators"]) for r in rows)
    parts = {"guarantee": [], "estimate": []}
    for name in dict.fromkeys(r["model"] for r in rows):
        for basis, found in parts.items():
            rows_of = [r for r in rows if r["model"] == name and r["basis"] == basis
                       and int(r["accelerators"]) == largest and r["seconds"]]
            if rows_of:
                best = min(rows_of, key=lambda r: float(r["seconds"]))
                found.append(f"{best['mode']} for {name} ({float(best['seconds']):.3g} s, "
                             f"{best['dominant']})")
    if not parts["guarantee"] and not parts["estimate"]:
        return f"No mode reaches eps on {largest} accelerators."
    text = (f"On {largest} accelerators the fastest guaranteed mode is "
            + ", ".join(parts["guarantee"]) + "." if parts["guarantee"]
            else f"On {largest} accelerators no guaranteed mode reaches eps.")
    if parts["estimate"]:
        text += " Fastest estimate (unproved local-SGD row): " + ", ".join(parts["estimate"]) + "."
    return text


def plot(data: dict) -> Figure:
    """Time to eps over accelerators, log-log, one panel per model."""
    cfg = data["config"]
    models = cfg["models"]
    with use_style():
        fig = new_figure(figsize=(7.0, 5.2), layout="constrained")
        axes = np.atleast_1d(fig.subplots(2, (len(models) + 1) // 2, squeeze=False)).ravel()
        for ax, name in zip(axes, models, strict=False):
            for i, mode in enumerate(MODES):
                xs, ys = [], []
                for count in cfg["accelerators"]:
                    p = data["results"][name, count].get(mode)
                    if p is not None:
                        xs.append(count)
                        ys.append(p.seconds)
                # dashed and thinner for the later modes, so that equal times stay visible
                label = mode if mode in ("sync", "async") else f"{mode} (estimate)"
                ax.plot(xs, ys, marker="os^D"[i], color=f"C{i}", label=label,
                        linestyle=("-", "--", "-.", ":")[i], linewidth=2.2 - 0.4 * i,
                        markersize=7 - i)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(name)
            ax.set_xlabel("accelerators (3/4 analog, 1/4 digital)")
            ax.set_ylabel("time to eps (s): guarantee or estimate")
        for ax in axes[len(models):]:
            ax.set_visible(False)
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncols=len(MODES))
    return fig


def manifest(data: dict, quick: bool) -> dict:
    """The figure's JSON manifest: configuration (no randomness)."""
    best = {basis: {f"{name}@{count}": getattr(c, f"best_{basis}").to_dict()
                    for (name, count), c in data["results"].items()
                    if getattr(c, f"best_{basis}") is not None}
            for basis in ("guarantee", "estimate")}
    return {"config": data["config"], "seed": None, "best_guarantee": best["guarantee"],
            "best_estimate": best["estimate"]}


def write(out_dir: str | Path, quick: bool = False) -> list[Path]:
    """Compute, plot and save the figure; return the paths written (PNG, PDF, CSV, manifest)."""
    return write_figure(sys.modules[__name__], out_dir, quick)
