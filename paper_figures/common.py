"""Shared infrastructure of the figure modules: the style sheet and deterministic output files.

Every figure module ``paper_figures.<name>`` provides ``NAME``, ``DESCRIPTION``,
``compute(quick) -> data`` (the numbers, separate from drawing), ``plot(data) -> Figure`` and
``write(out_dir, quick=False) -> list[Path]``, which calls :func:`save_figure`. For one figure
``NAME`` the output directory receives

* ``NAME.png`` and ``NAME.pdf``: the figure, byte-identical from run to run (fixed metadata, no
  creation date, fixed SVG hash salt, fonts shipped with matplotlib);
* ``NAME.csv``: exactly the numbers that are plotted, one row per plotted item;
* ``NAME.json``: the manifest (figure name, configuration, seed, the files written, and the
  versions of the package, Python, numpy and matplotlib).

Files are written atomically (a temporary file in the same directory, then :func:`os.replace`), so
an interrupted run never leaves a truncated figure behind.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import platform
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import matplotlib
import matplotlib.style
import numpy as np
from matplotlib.figure import Figure

from simulate.execution import package_version, source_fingerprint
from theory import ParameterError, atomic_write

__all__ = [
    "FigureOutput", "STYLE", "new_figure", "output_dir", "save_data", "save_figure", "use_style",
    "versions", "write_figures",
]

#: the package style sheet, applied by :func:`use_style`
STYLE = Path(__file__).resolve().parent / "style.mplstyle"

#: metadata written into every file: fixed values only (no dates, no host names)
_PNG_METADATA = {"Software": "aimc-pipeline"}
_PDF_METADATA = {"Creator": "aimc-pipeline", "Producer": "aimc-pipeline", "CreationDate": None,
                 "ModDate": None}


@dataclass(frozen=True)
class FigureOutput:
    """The files :func:`save_figure` wrote for one figure.

    Attributes
    ----------
    name : str
        The figure's name (the file stem).
    png, pdf, csv, manifest : pathlib.Path
        ``NAME.png``, ``NAME.pdf``, ``NAME.csv`` (the plotted numbers), ``NAME.json``.
    """

    name: str
    png: Path
    pdf: Path
    csv: Path
    manifest: Path

    @property
    def paths(self) -> list[Path]:
        """All four files, in the order PNG, PDF, CSV, manifest."""
        return [self.png, self.pdf, self.csv, self.manifest]


@contextlib.contextmanager
def use_style() -> Iterator[None]:
    """Apply the package style sheet (and only it) for the duration of the ``with`` block."""
    with matplotlib.style.context(["default", str(STYLE)]):
        yield


def new_figure(**kwargs) -> Figure:
    """A :class:`~matplotlib.figure.Figure` outside pyplot's global state (no GUI, no leaks).

    Call inside :func:`use_style` so that the style's size and layout apply.
    """
    return Figure(**kwargs)


def output_dir(path: str | Path, parameter: str = "out") -> Path:
    """Create the output directory ``path`` (and its parents) and return it as a Path.

    Raises
    ------
    ParameterError
        If ``path`` cannot be a directory (an existing file, no permission, ...), naming
        ``parameter`` and the path, so that the commands report one line instead of a traceback.
    """
    out = Path(path)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ParameterError(
            f"{parameter}={str(out)!r} cannot be used; valid: a writable directory "
            f"({error.strerror or error})"
        ) from None
    return out


def versions() -> dict[str, str]:
    """Versions of the package and of the libraries that shape the output."""
    return {
        "aimc-pipeline": package_version(),
        "aimc-pipeline-source": source_fingerprint(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "matplotlib": matplotlib.__version__,
    }


def _csv_bytes(rows: Sequence[Mapping[str, object]]) -> bytes:
    if not rows:
        raise ValueError("a figure's CSV needs at least one row of plotted data")
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return text.getvalue().encode()


def save_figure(
    fig: Figure,
    out_dir: str | Path,
    name: str,
    rows: Sequence[Mapping[str, object]],
    manifest: Mapping[str, object],
) -> FigureOutput:
    """Write ``fig`` as PNG and PDF, ``rows`` as CSV and the manifest as JSON, deterministically.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The drawn figure.
    out_dir : str or Path
        Output directory (created if missing).
    name : str
        File stem, the figure's ``NAME``.
    rows : sequence of mappings
        The plotted numbers, one mapping per row; the first row's keys are the CSV columns.
    manifest : mapping
        JSON-ready description of the run: at least ``config`` and ``seed`` (``None`` when the
        figure involves no randomness). Versions and file names are added.

    Returns
    -------
    FigureOutput
        The paths written.
    """
    out = output_dir(out_dir)
    result = FigureOutput(name, out / f"{name}.png", out / f"{name}.pdf", out / f"{name}.csv",
                          out / f"{name}.json")
    table = _csv_bytes(rows)  # fails on empty data before any file is written
    with use_style():
        atomic_write(result.png, lambda h: fig.savefig(h, format="png", metadata=_PNG_METADATA))
        atomic_write(result.pdf, lambda h: fig.savefig(h, format="pdf", metadata=_PDF_METADATA))
    atomic_write(result.csv, lambda h: h.write(table))
    document = {
        "figure": name,
        **manifest,
        "files": [path.name for path in result.paths[:3]],
        "versions": versions(),
    }
    text = json.dumps(document, indent=2, sort_keys=True) + "\n"
    atomic_write(result.manifest, lambda h: h.write(text.encode()))
    return result


def save_data(module: ModuleType, out_dir: str | Path, data, quick: bool = False) -> list[Path]:
    """Plot and save the figure of ``module`` from its computed ``data``; return the paths.

    :func:`save_figure` with ``module.plot(data)``, ``module.table(data)`` and the manifest
    ``module.manifest(data, quick)`` plus the figure's ``DESCRIPTION``.
    """
    manifest = {"description": module.DESCRIPTION, **module.manifest(data, quick)}
    return save_figure(module.plot(data), out_dir, module.NAME, module.table(data), manifest).paths


def write_figure(module: ModuleType, out_dir: str | Path, quick: bool = False,
                 **sweep) -> list[Path]:
    """Compute, plot and save the figure of ``module``; return the paths written.

    The one ``write`` of every figure module: ``module.compute(quick, **sweep)``, then
    :func:`save_data`.
    """
    return save_data(module, out_dir, module.compute(quick, **sweep), quick)


def write_figures(modules: Sequence[ModuleType], out_dir: str | Path, quick: bool = False,
                  **sweep) -> Iterator[tuple[ModuleType, list[Path]]]:
    """Write several figures; yield ``(module, paths)`` for each, in the order given.

    Where the sweeps run on a pool of more than one worker (``jobs`` not 1, or a scheduler),
    the data of the figures that simulate (``USES_SWEEP``) are computed in one background
    thread, figure after figure, while this thread writes the analytic figures and plots each
    simulated one as its data arrive: the parent's plotting and the workers' simulation overlap
    instead of taking turns (``figures all``, ``report``). Plotting stays in this thread; a
    point's result does not depend on when it runs, so the files are the same bytes as
    one figure at a time. The workers of an open
    :func:`simulate.execution.shared_pool` block are started before the thread
    (:func:`simulate.execution.warm_shared_pool`). On an error (or Ctrl-C) the figures not yet
    computed are cancelled and the block's workers stopped, so the running sweep ends at once.
    """
    from simulate.execution import default_jobs, stop_shared_pool, warm_shared_pool

    sweeping = [module for module in modules if module.USES_SWEEP]
    jobs = default_jobs() if sweep.get("jobs") is None else sweep["jobs"]
    if (jobs == 1 and sweep.get("scheduler") is None) or len(modules) < 2 or not sweeping:
        for module in modules:
            yield module, module.write(out_dir, quick=quick,
                                       **(sweep if module.USES_SWEEP else {}))
        return
    warm_shared_pool()
    with ThreadPoolExecutor(1, thread_name_prefix="figure-data") as background:
        data = {module.NAME: background.submit(module.compute, quick, **sweep)
                for module in sweeping}
        try:
            for module in modules:
                if module.USES_SWEEP:
                    yield module, save_data(module, out_dir, data[module.NAME].result(), quick)
                else:
                    yield module, module.write(out_dir, quick=quick)
        except BaseException:
            for future in data.values():
                future.cancel()
            stop_shared_pool()
            raise
