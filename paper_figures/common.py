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
    "FigureOutput", "STYLE", "new_figure", "output_dir", "save_figure", "use_style", "versions",
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


def write_figure(module: ModuleType, out_dir: str | Path, quick: bool = False,
                 **sweep) -> list[Path]:
    """Compute, plot and save the figure of ``module``; return the paths written.

    The one ``write`` of every figure module: ``module.compute(quick, **sweep)``, then
    :func:`save_figure` with ``module.plot``, ``module.table`` and the manifest
    ``module.manifest(data, quick)`` plus the figure's ``DESCRIPTION``.
    """
    data = module.compute(quick, **sweep)
    manifest = {"description": module.DESCRIPTION, **module.manifest(data, quick)}
    return save_figure(module.plot(data), out_dir, module.NAME, module.table(data), manifest).paths
