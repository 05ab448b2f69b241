"""The paper's figures (one module each), the ``report`` command, the ``aimc-pipeline`` dispatcher.

``python -m paper_figures all|list|NAME [--quick] [--out DIR]`` regenerates figures; each figure
module (see :data:`FIGURES`) provides ``NAME``, ``DESCRIPTION``, ``compute``, ``plot``, ``write``
and is imported on demand, so this package stays light to import (the console script uses it).
"""

from .cli import main
from .registry import FIGURES, load_figure

__all__ = ["FIGURES", "load_figure", "main"]
