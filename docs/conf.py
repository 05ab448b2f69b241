"""Sphinx configuration of the aimc-pipeline documentation (MyST Markdown + numpydoc).

Build: ``python -m sphinx -W -b html docs docs/_build/html`` (tests/test_docs_build.py does this
with warnings as errors).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("MPLBACKEND", "Agg")

project = "aimc-pipeline"
author = "the aimc-pipeline developers"
copyright = "2026, the aimc-pipeline developers"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# MyST: $...$ and $$...$$ math (docs/theory.md), amsmath environments, heading anchors for
# [text](page.md#a-heading) links
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
myst_dmath_double_inline = True

# The API pages list each package's curated ``__all__`` on one page per package (docs/api/*.rst):
# no stub page per object, which keeps the build well under a minute.
autosummary_generate = False
autodoc_member_order = "bysource"
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set[str] = set()
numpydoc_xref_param_type = False

html_theme = "furo"
html_title = "aimc-pipeline"
html_static_path: list[str] = []
# the text of the pages, not their Markdown sources, is what is published
html_copy_source = False
html_show_sourcelink = False
