"""The one progress bar of the package's long work (simulations, sweeps): tqdm on stderr.

Shown on a terminal and quiet otherwise (tqdm's ``disable=None``), unless asked for explicitly.
"""

from __future__ import annotations

import sys

from tqdm.auto import tqdm

__all__ = ["progress_bar"]


def progress_bar(
    total: int, *, desc: str | None = None, unit: str = "it", initial: int = 0,
    show: bool | None = None,
) -> tqdm:
    """A tqdm bar on stderr counting to ``total``.

    Parameters
    ----------
    total : int
        The count at completion.
    desc : str, optional
        Its label.
    unit : str
        What is counted (``"update"``, ``"pt"``, ...).
    initial : int
        The count it starts at (e.g. points already cached).
    show : bool, optional
        ``True``: always shown; ``False``: never; ``None`` (default): only when stderr is a
        terminal. A hidden bar still accepts ``update`` calls (they do nothing).
    """
    return tqdm(
        total=total, initial=initial, desc=desc, unit=unit, file=sys.stderr,
        disable=None if show is None else not show,
    )
