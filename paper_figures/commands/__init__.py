"""The ``paper_figures`` commands ``figures`` and ``report`` (argparse lives only here)."""
