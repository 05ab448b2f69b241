"""The report: one folder a person can read, with bounds, plan, verification and figures.

:func:`write_report` (the ``aimc-pipeline report`` command, :mod:`paper_figures.commands.report`)
writes ``DIR/index.md``
and ``DIR/index.html`` (self-contained; the figures are relative ``<img>`` links into
``DIR/figures/``) with four sections:

1. the bound comparison for the preset at ``eps`` (:func:`bounds.compare`: iterations,
   samples, clock cycles, seconds and speedup of every registry entry);
2. the plan for the default model (:func:`bounds.plan`; the ``plan`` figure's model and
   accelerator count, the preset's device and timing);
3. the verification table (:func:`simulate.verification.suites.run_suite` ``"quick"``: every
checkable bound
   against simulation on the oracle problems);
4. every figure of :data:`paper_figures.registry.FIGURES`, each with one sentence computed from
   its CSV (the numbers it plots).

Simulation runs through :func:`simulate.execution.sweep.run_sweep` (``--jobs``, ``--scheduler``, the
cache). The last line printed says where to look.
"""

from __future__ import annotations

import csv
import html
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bounds import (
    DEFAULT_EPS,
    DEFAULT_PRESET,
    PlanHardware,
    ProblemParams,
    compare,
    from_preset,
    load_model,
    plan,
)
from simulate import run_suite
from theory import atomic_write, check_range, markdown_table

from . import plan as plan_figure
from .common import output_dir, write_figures
from .registry import FIGURES, load_figure

__all__ = ["Section", "figure_caption", "render_html", "render_markdown", "write_report"]

#: the verification suite the report runs
VERIFY_SUITE = "quick"


@dataclass(frozen=True)
class Section:
    """One section of the report: a heading and blocks rendered to Markdown and HTML.

    Attributes
    ----------
    title : str
    blocks : tuple
        Each block is ``("p", text)``, ``("pre", text)``, ``("table", (header, rows))`` or
        ``("img", (src, alt))``.
    """

    title: str
    blocks: tuple


# ------------------------------------------------------------------------------------------------
# figure captions, computed from each figure's CSV


def _schedule_caption(rows: Sequence[Mapping]) -> str:
    cycles = {}
    for row in rows:
        cycles[row["mode"]] = max(cycles.get(row["mode"], 0), int(row["cycle"]) + 1)
    return (f"Gantt charts of the three schedules for M = 4 stages and 5 micro-batches: "
            f"{cycles['none']} cycles without pipeline, {cycles['sync']} synchronous and "
            f"{cycles['async']} asynchronous.")


def _plan_caption(rows: Sequence[Mapping]) -> str:
    cells = [r for r in rows if r["seconds"]]
    best = min(cells, key=lambda r: float(r["seconds"]))
    return (f"Predicted time to eps over stages and micro-batches; the fastest plotted cell is "
            f"{best['mode']} with M = {best['stages']}, B = {best['micro_batches']}, "
            f"b = {best['micro_batch_size']}: {float(best['seconds']):.3g} s.")


_CAPTIONS: dict[str, Callable[[Sequence[Mapping]], str]] = {
    "schedule": _schedule_caption,
    "plan": _plan_caption,
}


def figure_caption(name: str, csv_path: str | Path) -> str:
    """One sentence on figure ``name`` computed from its CSV (the figure module's ``caption``)."""
    with open(csv_path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    module = load_figure(name)
    caption = getattr(module, "caption", None) or _CAPTIONS.get(name)
    if caption is None:
        return module.DESCRIPTION[0].upper() + module.DESCRIPTION[1:] + "."
    return caption(rows)


# ------------------------------------------------------------------------------------------------
# sections


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,d}"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _bounds_section(preset: str, eps: float) -> Section:
    comparison = compare(eps, from_preset(preset))
    comparison.require_analog()  # an eps no analog entry reaches fails here, before any figure
    header = ("bound", "provenance", "mode", "floor", "iterations", "samples", "cycles",
              "seconds", "speedup (cycles)")
    rows = []
    for r, speed in zip(comparison.results, comparison.speedup_cycles, strict=True):
        if r.reachable:
            rows.append((r.algorithm, r.provenance, r.mode, _fmt(r.floor), _fmt(r.iterations),
                         _fmt(r.samples), _fmt(r.cycles), _fmt(r.seconds),
                         "-" if speed is None else f"{speed:.3g}x"))
        else:
            note = "eps <= floor" if r.limiting == "floor" else r.limiting
            rows.append((r.algorithm, r.provenance, r.mode, _fmt(r.floor), note, "", "", "", ""))
    pipe = comparison.pipeline
    fastest = min((r for r in comparison.analog_results if r.reachable), key=lambda r: r.cycles)
    summary = (f"At eps = {eps:g} the fastest analog entry is {fastest.algorithm} with "
               f"{fastest.cycles:,d} clock cycles ({fastest.seconds:.3g} s).")
    intro = (f"Every registry bound for preset {preset!r} at eps = {eps:g} with M = "
             f"{pipe.stages}, B = {pipe.micro_batches}, b = {pipe.micro_batch_size} "
             f"(aimc-pipeline bounds --preset {preset} --eps {eps:g}). Speedups are over analog "
             f"SGD without pipeline. {summary}")
    return Section("Bounds", (("p", intro), ("table", (header, rows))))


def _plan_section(preset: str) -> Section:
    hardware = PlanHardware(from_preset(preset), accelerators=plan_figure.ACCELERATORS)
    result = plan(load_model(plan_figure.MODEL), hardware, ProblemParams(), plan_figure.EPS)
    intro = (f"The planner's choice for model {plan_figure.MODEL!r} on "
             f"{plan_figure.ACCELERATORS} accelerators at eps = {plan_figure.EPS:g}: "
             f"{result.mode} pipeline, M = {result.stages}, B = {result.micro_batches}, "
             f"b = {result.micro_batch_size}, {result.seconds:.3g} s guaranteed under the "
             f"problem constants the plan states "
             f"(aimc-pipeline plan --model {plan_figure.MODEL} --accelerators "
             f"{plan_figure.ACCELERATORS} --eps {plan_figure.EPS:g} --preset {preset}).")
    return Section("Plan", (("p", intro), ("pre", result.table())))


def _verify_section(sweep: Mapping) -> Section:
    checks = run_suite(VERIFY_SUITE, sweep.get("jobs"), sweep.get("scheduler"),
                       cache=sweep.get("cache", True), progress=False)
    header = ("bound", "problem", "M", "B", "b", "lr", "K", "seeds", "simulated", "bound value",
              "bound / simulated", "holds")
    rows = []
    for c in checks:
        cfg = c.config
        rows.append((c.bound_name, cfg.problem, _fmt(cfg.stages), _fmt(cfg.micro_batches),
                     _fmt(cfg.micro_batch_size), _fmt(cfg.lr), _fmt(cfg.steps), _fmt(cfg.seeds),
                     _fmt(c.empirical), _fmt(c.bound), f"{c.ratio:.3g}", _fmt(c.passed)))
    held = sum(c.passed for c in checks)
    intro = (f"Suite {VERIFY_SUITE!r} of aimc-pipeline verify: the average squared gradient norm "
             f"over every iterate (mean over seeds) against the bound at the constants that held "
             f"(one-sided, z = {checks[0].margin_z:g} standard errors). The bound holds in "
             f"{held} of {len(checks)} checks; bound / simulated ranges from "
             f"{min(c.ratio for c in checks):.3g} to {max(c.ratio for c in checks):.3g}.")
    return Section("Verification", (("p", intro), ("table", (header, rows))))


def _figure_sections(out: Path, quick: bool, sweep: Mapping) -> list[Section]:
    folder = out / "figures"
    sections = []
    modules = [load_figure(name) for name in FIGURES]
    for module, paths in write_figures(modules, folder, quick, **sweep):
        name = module.NAME
        png, pdf, table, manifest = (p.relative_to(out).as_posix() for p in paths)
        links = (f"Files: [PDF]({pdf}), [CSV of the plotted numbers]({table}), "
                 f"[manifest]({manifest}).")
        sections.append(Section(f"Figure: {name}", (
            ("p", figure_caption(name, paths[2])),
            ("img", (png, f"{name}: {module.DESCRIPTION}")),
            ("p", links),
        )))
    return sections


# ------------------------------------------------------------------------------------------------
# rendering


def render_markdown(title: str, sections: Sequence[Section]) -> str:
    """The report as Markdown (tables as pipe tables, figures as relative images)."""
    lines = [f"# {title}", ""]
    for section in sections:
        lines += [f"## {section.title}", ""]
        for kind, content in section.blocks:
            if kind == "p":
                lines += [content, ""]
            elif kind == "pre":
                lines += ["```", content, "```", ""]
            elif kind == "table":
                lines += [markdown_table(*content), ""]
            elif kind == "img":
                src, alt = content
                lines += [f"![{alt}]({src})", ""]
    return "\n".join(lines)


_CSS = ("body{font-family:sans-serif;max-width:64rem;margin:2rem auto;padding:0 1rem;"
        "line-height:1.4}table{border-collapse:collapse;font-size:0.85rem}"
        "th,td{border:1px solid #bbb;padding:0.2rem 0.5rem;text-align:right}"
        "th:first-child,td:first-child{text-align:left}pre{background:#f4f4f4;padding:0.6rem;"
        "overflow-x:auto}img{max-width:100%}")


def _md_links_to_html(text: str) -> str:
    """Escape ``text`` and turn ``[label](href)`` links into anchors."""
    escaped = html.escape(text)
    return re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r'<a href="\2">\1</a>', escaped)


def render_html(title: str, sections: Sequence[Section]) -> str:
    """The report as one self-contained HTML page (inline style, relative image links)."""
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>"]
    for section in sections:
        parts.append(f"<h2>{html.escape(section.title)}</h2>")
        for kind, content in section.blocks:
            if kind == "p":
                parts.append(f"<p>{_md_links_to_html(content)}</p>")
            elif kind == "pre":
                parts.append(f"<pre>{html.escape(content)}</pre>")
            elif kind == "table":
                header, rows = content
                head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
                body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row)
                               + "</tr>" for row in rows)
                parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
            elif kind == "img":
                src, alt = content
                parts.append(f'<p><img src="{html.escape(src)}" alt="{html.escape(alt)}"></p>')
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_report(out: str | Path, preset: str = DEFAULT_PRESET, eps: float = DEFAULT_EPS,
                 quick: bool = False, sweep: Mapping | None = None) -> tuple[Path, Path]:
    """Build every section and write ``out/index.md`` and ``out/index.html``.

    Parameters
    ----------
    out : path-like
        Output folder (created; figures go to ``out/figures``).
    preset : str
        Hardware preset of the bounds and plan sections.
    eps : float
        Target of the bounds section (> 0).
    quick : bool
        Quick figures (fewer seeds and steps).
    sweep : mapping, optional
        ``jobs``, ``scheduler``, ``cache`` for :func:`simulate.execution.sweep.run_sweep`.

    Returns
    -------
    (index.md, index.html) : tuple of Path
    """
    check_range("eps", eps, 0, None, low_open=True)
    out = output_dir(out)
    sweep = {} if sweep is None else dict(sweep)
    sections = [_bounds_section(preset, eps), _plan_section(preset), _verify_section(sweep),
                *_figure_sections(out, quick, sweep)]
    title = f"aimc-pipeline report: preset {preset}" + (" (quick)" if quick else "")
    md, page = out / "index.md", out / "index.html"
    atomic_write(md, render_markdown(title, sections).encode())
    atomic_write(page, render_html(title, sections).encode())
    return md, page
