r"""Figure ``sp-ap-writes``: SP against AP under batch-mean and per-sample (crossbar) writes.

The main arms of the speedup study (:mod:`paper_figures.speedup`: the same workloads, step grid,
seeds, sample budget, targets and tuning protocol; no sensitivity variants) are run once per write
semantics of :data:`WRITES` (``SimConfig.write``): ``batch-mean``, one analog update of the mean
gradient (the paper's model), and ``per-sample``, one analog write per sample, as a crossbar and
aihwkit do. Per workload, target, stage count ``M`` and write, three speedups:

- **SP over mini-batch SGD** (of the same write): exactly :math:`MB/(B+M-1)` (same iterates);
- **AP over mini-batch SGD** (of the same write): the speedup study's ``async`` / ``minibatch``
  row, median cycles of the baseline over median cycles of AP, each at its own tuned step;
- **AP over SP**: median cycles of SP over median cycles of AP, the direct comparison. SP's cycles
  are mini-batch SGD's updates counted on the synchronous schedule, :math:`2(B+M-1)K`, a fixed
  multiple :math:`c = (B+M-1)/(MB)` of the baseline's :math:`2MBK` for every seed, so every
  bootstrap resample of the paired ratio scales by :math:`1/c`:

  .. math::

      S_{\mathrm{AP/SP}} = \frac{S_{\mathrm{AP/mb}}}{S_{\mathrm{SP/mb}}}, \qquad
      [\ell, h]_{\mathrm{AP/SP}} = \frac{[\ell, h]_{\mathrm{AP/mb}}}{S_{\mathrm{SP/mb}}}
      \quad (S_{\mathrm{SP/mb}} = MB/(B+M-1)),

  with the censoring status of the AP row (SP is censored exactly when mini-batch SGD is).
  :func:`ap_over_sp` derives these rows from the study's rows (one place for the rule).

The figure: per workload, at :func:`shown_target` (the
:attr:`~paper_figures.speedup.SpeedupSettings.sensitivity_target` unless a median there is
censored), the speedups over mini-batch SGD against ``M`` (SP and AP under each write, 95 %
intervals, and linear), and AP over SP against ``M`` per write (a line at 1: above it AP is
faster). The CSV holds
every time-to-target row of both studies (``write`` set on every row) and the derived
``ap-over-sp`` rows; the manifest the settings, each write's chosen steps and sweep counts and the
comparison in Markdown (``comparison_markdown``). Not part of ``figures all``
(:data:`paper_figures.registry.ON_DEMAND`): the per-sample runs are slower than the whole
``all --quick``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from simulate.verification import CI_LEVEL
from theory import markdown_table

from . import speedup
from .common import new_figure, use_style, write_figure

__all__ = [
    "DESCRIPTION", "NAME", "WRITES", "ap_over_sp", "comparison_markdown", "compute",
    "from_tables", "manifest", "plot", "settings", "shown_target", "table", "write",
]

NAME = "sp-ap-writes"
DESCRIPTION = ("SP vs AP under batch-mean and per-sample (crossbar) writes: time-to-target "
               "speedups with tuned steps (the speedup study's main arms, CIs over seeds)")
#: whether compute/write take the sweep keywords jobs, scheduler, cache
USES_SWEEP = True
#: the write semantics compared, the paper's model first
WRITES = ("batch-mean", "per-sample")


def settings(quick: bool) -> speedup.SpeedupSettings:
    """The speedup study's settings (:func:`paper_figures.speedup.settings`) with only the
    reference variant (no sensitivity runs): the main arms, which are the comparison."""
    s = speedup.settings(quick)
    return replace(s, variants=tuple(v for v in s.variants if not v.changes)[:1])


def _float(value) -> float:
    return float("nan") if value == "" else float(value)


def ap_over_sp(rows: Sequence[Mapping]) -> list[dict]:
    """The ``ap-over-sp`` rows of one study's rows (:func:`paper_figures.speedup.table` form).

    For every (workload, target, ``M``) the ``async`` / ``minibatch`` row divided by the ``sync``
    / ``minibatch`` row's exact factor :math:`MB/(B+M-1)` (module docstring): speedup and both
    interval ends; median cycles and steps of AP (``median_cycles``, ``step``) and of SP
    (``baseline_*``).
    """
    tta = [r for r in rows if r["kind"] == "time-to-target" and r["baseline"] == "minibatch"]
    sync = {(r["workload"], r["target"], int(r["stages"])): r for r in tta if r["mode"] == "sync"}
    out = []
    for r in tta:
        if r["mode"] != "async":
            continue
        sp = sync[r["workload"], r["target"], int(r["stages"])]
        factor = _float(sp["speedup"])
        row = dict(r, kind="ap-over-sp", mode="async", baseline="sync",
                   baseline_reached=sp["reached"], baseline_median_cycles=sp["median_cycles"],
                   baseline_step=sp["step"])
        for name in ("speedup", "ci_low", "ci_high"):
            row[name] = repr(_float(r[name]) / factor)
        out.append(row)
    return out


def from_tables(study: speedup.SpeedupSettings, tables: Mapping[str, Sequence[Mapping]]) -> dict:
    """The figure's data from each write's study rows (``tables[write]``, the speedup CSV's rows
    or :func:`paper_figures.speedup.table`): their time-to-target rows and :func:`ap_over_sp`,
    each with ``write`` set. ``{"settings": study, "rows": [...]}``."""
    rows = []
    for write in WRITES:
        picked = [r for r in tables[write] if r["kind"] == "time-to-target"]
        rows += [dict(r, write=write) for r in picked + ap_over_sp(picked)]
    return {"settings": study, "rows": rows}


def compute(quick: bool = False, jobs: int | None = None, scheduler=None, cache=True) -> dict:
    """Both studies (one cached sweep each, :func:`paper_figures.speedup.compute`), merged by
    :func:`from_tables`; ``chosen`` and ``sweep`` per write."""
    s = settings(quick)
    studies = {w: speedup.compute(quick, jobs=jobs, scheduler=scheduler, cache=cache, write=w,
                                  study=s) for w in WRITES}
    data = from_tables(s, {w: speedup.table(d) for w, d in studies.items()})
    data["chosen"] = {w: d["chosen"] for w, d in studies.items()}
    data["sweep"] = {w: d["sweep"] for w, d in studies.items()}
    return data


def table(data: dict) -> list[dict[str, object]]:
    """The CSV rows (:data:`paper_figures.speedup.COLUMNS`; floats as ``repr``)."""
    return speedup.table(data)


def _pick(rows, **want) -> list[Mapping]:
    return sorted((r for r in rows if all(str(r[k]) == str(v) for k, v in want.items())),
                  key=lambda r: int(r["stages"]))


def _errors(picked) -> tuple[np.ndarray, np.ndarray]:
    values = np.array([_float(r["speedup"]) for r in picked])
    low = np.array([_float(r["ci_low"]) for r in picked])
    high = np.array([_float(r["ci_high"]) for r in picked])
    return values, np.vstack([np.clip(values - low, 0, None), np.clip(high - values, 0, None)])


_STYLE = {("sync", "batch-mean"): ("C0", None), ("sync", "per-sample"): ("C0", "//"),
          ("async", "batch-mean"): ("C1", None), ("async", "per-sample"): ("C1", "//")}


def shown_target(data: dict, workload: str) -> str:
    """The target drawn for ``workload``: the sensitivity target when none of its rows (both
    writes, every ``M``) has a censored median, else the highest accuracy target below it
    without one (the first accuracy target if none): a censored median is a bound, not a
    speedup."""
    s, rows = data["settings"], data["rows"]
    labels = [f"{100 * t:g}% accuracy" for t in sorted(s.accuracy_targets)
              if t <= s.sensitivity_target]
    for label in reversed(labels):
        if all(r["status"] == "ok" for r in rows
               if r["workload"] == workload and r["target"] == label):
            return label
    return labels[0]


def plot(data: dict) -> Figure:
    """Per workload at :func:`shown_target`: speedups over mini-batch SGD vs M; AP over SP vs M
    (both writes)."""
    s, rows = data["settings"], data["rows"]
    x = np.arange(len(s.stages))
    with use_style():
        fig = new_figure(figsize=(7.0, 2.6 * len(s.workloads) + 0.4), layout="constrained")
        axes = np.atleast_2d(fig.subplots(len(s.workloads), 2))
        for (left, right), w in zip(axes, s.workloads, strict=True):
            target = shown_target(data, w.label)
            width = 0.17
            for j, (mode, write) in enumerate(_STYLE):
                picked = _pick(rows, kind="time-to-target", workload=w.label, mode=mode,
                               baseline="minibatch", target=target, write=write)
                values, errors = _errors(picked)
                color, hatch = _STYLE[mode, write]
                name = {"sync": "SP", "async": "AP"}[mode]
                left.bar(x + (j - 2) * width, values, width, yerr=errors, capsize=2,
                         color=color, hatch=hatch, edgecolor="white", label=f"{name}, {write}",
                         error_kw={"linewidth": 0.8})
            left.bar(x + 2 * width, [float(m) for m in s.stages], width, color="0.6",
                     label="linear (= M)")
            left.set_ylabel("speedup over mini-batch SGD")
            left.set_title(f"time to {target}, tuned steps: {w.label}", fontsize=7)
            for k, write in enumerate(WRITES):
                picked = _pick(rows, kind="ap-over-sp", workload=w.label, target=target,
                               write=write)
                values, errors = _errors(picked)
                right.errorbar(x + (k - 0.5) * 0.15, values, yerr=errors, fmt="o-", ms=3,
                               capsize=2, linewidth=0.8, color=("C2", "C3")[k], label=write)
            right.axhline(1.0, color="0.6", linewidth=0.8)
            right.set_ylabel("AP over SP (median cycles)")
            right.set_title(f"AP over SP, time to {target}: {w.label}", fontsize=7)
            right.legend(fontsize=6)
            for ax in (left, right):
                ax.set_xticks(x, [str(m) for m in s.stages])
                ax.set_xlabel("stages M")
        handles, labels = axes[0, 0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncols=5, fontsize=6)
        fig.suptitle(f"median over {s.seeds} seeds, {100 * CI_LEVEL:g}% paired bootstrap CI; "
                     "each write against mini-batch SGD of the same write", fontsize=7)
    return fig


def comparison_markdown(rows: Sequence[Mapping], target: str | None = None) -> str:
    """SP vs AP per workload, target and ``M`` under each write, as Markdown: the speedups over
    mini-batch SGD (AP with its interval), AP over SP with its interval, the median cycles and
    the tuned steps of SP and AP, the fraction of AP's seeds that reached the target. ``target``
    (a label such as ``"85% accuracy"``) keeps one target."""
    head = ("workload", "target", "M", "write", "SP / mb-SGD", "AP / mb-SGD [CI]",
            "AP / SP [CI]", "median cycles SP", "median cycles AP", "step SP", "step AP",
            "AP reached")
    body = []

    def cell(r):
        return (f"{_float(r['speedup']):.2f} [{_float(r['ci_low']):.2f}, "
                f"{_float(r['ci_high']):.2f}]" + ("" if r["status"] == "ok" else "*"))

    for r in rows:
        if r["kind"] != "ap-over-sp" or (target is not None and r["target"] != target):
            continue
        key = dict(workload=r["workload"], target=r["target"], stages=r["stages"],
                   write=r["write"], kind="time-to-target", baseline="minibatch")
        sp, = _pick(rows, mode="sync", **key)
        ap, = _pick(rows, mode="async", **key)
        body.append((r["workload"], r["target"], r["stages"], r["write"],
                     f"{_float(sp['speedup']):.2f}", cell(ap), cell(r),
                     f"{_float(r['baseline_median_cycles']):g}",
                     f"{_float(r['median_cycles']):g}", f"{_float(r['baseline_step']):g}",
                     f"{_float(r['step']):g}", f"{_float(r['reached']):.0%}"))
    body.sort(key=lambda b: (b[0], b[1], int(b[2]), WRITES.index(b[3])))
    return markdown_table(head, body)


def manifest(data: dict, quick: bool) -> dict:
    """The settings (seeds), each write's chosen steps and sweep, the comparison in Markdown."""
    s = data["settings"]
    out = {"config": {**asdict(s), "quick": quick, "writes": list(WRITES)},
           "seed": list(range(s.seeds)),
           "protocol": "paper_figures.speedup (its manifest's protocol), main arms only",
           "comparison_markdown": comparison_markdown(table(data))}
    for name in ("chosen", "sweep"):
        if name in data:
            out[name] = data[name]
    return out


def write(out_dir: str | Path, quick: bool = False, jobs: int | None = None, scheduler=None,
          cache=True) -> list[Path]:
    """Compute, plot and save the figure; return the paths written (PNG, PDF, CSV, manifest)."""
    return write_figure(sys.modules[__name__], out_dir, quick, jobs=jobs, scheduler=scheduler,
                        cache=cache)
