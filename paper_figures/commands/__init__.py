"""The ``paper_figures`` commands ``figures`` and ``report`` (argparse lives only here)."""

__all__: list[str] = []  # a room of command modules; nothing to re-export
