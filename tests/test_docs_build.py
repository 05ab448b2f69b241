"""The documentation site builds with Sphinx, warnings as errors (``sphinx -W``).

The same command as a person's (docs/getting-started.md): ``python -m sphinx -W -b html docs OUT``,
in a subprocess, into a temporary folder. Any warning (a broken link or cross-reference, a page
missing from every toctree, a docstring of the curated API that numpydoc or docutils cannot read,
math that MyST cannot parse) fails it, with Sphinx's own message. The build takes about 20 s of
CPU on 2 cores (most of it importing the four packages for the API pages).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_sphinx_builds_without_warnings(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         "-d", str(tmp_path / "doctrees"), "docs", str(tmp_path / "html")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, f"sphinx -W failed:\n{result.stderr[-6000:]}"
    html = tmp_path / "html"
    for page in ("index", "getting-started", "theory", "verification", "architecture",
                 "bounds-table", "paper-notes", "device-model", "guide/bounds", "guide/planning",
                 "api/theory", "api/bounds", "api/simulate", "api/paper_figures", "results/index"):
        assert (html / f"{page}.html").is_file(), page
    # the API pages carry the curated names, and the theory page its rendered math
    api = (html / "api" / "simulate.html").read_text(encoding="utf-8")
    assert 'id="simulate.SimConfig"' in api and 'id="simulate.run"' in api
    assert "math" in (html / "theory.html").read_text(encoding="utf-8")


def test_every_page_is_in_a_toctree():
    """Sphinx warns about orphans already; this names them without building."""
    pages = {p.relative_to(ROOT / "docs").with_suffix("").as_posix()
             for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts}
    text = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs").rglob("*.md"))
    for page in sorted(pages - {"index"}):
        name = page.rsplit("/", 1)[-1]
        assert f"\n{name}\n" in text or f"\n{page}\n" in text, f"docs/{page}.md is in no toctree"
