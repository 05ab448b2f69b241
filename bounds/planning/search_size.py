r"""The size of the kinds planner's mode search, counted before it starts (:func:`search_cost`),
and its refusal beyond :mod:`theory.limits` (:func:`check_search`), without the planner.

:func:`bounds.planning.kinds.plan_modes` checks it first; ``aimc-pipeline plan`` checks it before
the single-kind plan, so that an oversized search is refused before any work.
"""

from __future__ import annotations

import math

from theory.limits import MAX_ARRAY_BYTES, MAX_PLAN_CANDIDATES, MAX_PLAN_DP_CELLS, check_size

from .hardware import KindsHardware
from .mode_limits import ModeLimits
from .models import Model

__all__ = ["check_search", "planned_model", "search_cost"]


def planned_model(model: Model, hardware: KindsHardware) -> tuple[Model, tuple[str, ...]]:
    """The model the search plans and the digital-only layers it leaves out (no digital kind)."""
    if all(k.analog for k in hardware.kinds) and len(model.chain) > len(model):
        unplanned = tuple(x.name for x in (*model.digital_first, *model.digital_last))
        return Model(model.name, model.layers, model.description, model.parameters), unplanned
    return model, ()


def search_cost(layers: int, counts, limits: ModeLimits, stop: float = math.inf) -> dict:
    r"""What :func:`plan_modes` will do, counted before it starts (no table is built).

    With :math:`n` layers, kinds counts :math:`c_t`, :math:`S = 2^{\#kinds} - 1` subsets of the
    kinds, :math:`|b|` micro-batch sizes and :math:`M_{max} = \min(n, \sum_t c_t)`:

    - ``candidates``: layouts the search evaluates, an upper bound: per pipeline mode
      :math:`|b|\,M_{max}\,S`, per replicated mode
      :math:`|b|\,S\sum_{R \ge 2,\ a_R \ge 1} \#\{M: M_{low} \le M \le \min(M_{max}, a_R)\}`
      with :math:`a_R = \sum_t \lfloor c_t/R\rfloor` (counted until it exceeds ``stop``, so the
      count costs at most ``stop`` steps whatever the counts);
    - ``dp_cells``: cells of the kinds DPs, an upper bound:
      :math:`|b|\,M_{max}\,\#kinds\,(n+1)^2\cdot 2\prod_{t<last}(c_t + 2)` (every subset's
      state count summed);
    - ``dp_bytes``: the largest DP's memory, :math:`24\,M_{max}(n+1)\prod_{t<last}(c_t+1)`.
    """
    counts = tuple(int(c) for c in counts)
    subsets = 2 ** len(counts) - 1
    sizes = len(limits.micro_batch_sizes)
    top = min(layers, sum(counts))
    candidates = sum(m in ("sync", "async") for m in limits.modes) * sizes * top * subsets
    for low in [lo for m, lo in (("dp", 1), ("hybrid", 2)) if m in limits.modes]:
        replicas = 2
        while candidates <= stop:
            available = sum(c // replicas for c in counts)
            if available == 0:
                break
            candidates += sizes * subsets * max(0, min(top, available) - low + 1)
            replicas += 1
    states = math.prod(c + 1 for c in counts[:-1])
    all_states = 2 * math.prod(c + 2 for c in counts[:-1])
    return {"candidates": candidates,
            "dp_cells": sizes * top * len(counts) * (layers + 1) ** 2 * all_states,
            "dp_bytes": 24 * top * (layers + 1) * states}


def check_search(model: Model, hardware: KindsHardware, limits: ModeLimits | None = None,
                 parameter: tuple[str, object] | None = None) -> None:
    """Refuse, before any work, a mode search beyond :mod:`theory.limits` (:func:`search_cost`).

    The limits: ``MAX_PLAN_CANDIDATES`` layouts evaluated (the subset loop of many kinds, the
    replica loop of many accelerators), ``MAX_PLAN_DP_CELLS`` cells of the kinds DPs and
    ``MAX_ARRAY_BYTES`` for the segment-time tables and for one DP.

    Raises
    ------
    ParameterError
        ``"{name}={value} asks for N candidate layouts ..., more than the limit ..."``;
        ``parameter`` is ``(name, value)``, default ``("kinds", number of kinds)``.
    """
    limits = ModeLimits() if limits is None else limits
    name, value = parameter if parameter is not None else ("kinds", len(hardware.kinds))
    n, kinds = len(planned_model(model, hardware)[0].chain), len(hardware.kinds)
    what = f"{kinds} kind{'s' * (kinds > 1)}, {hardware.accelerators} accelerators"
    check_size(name, value, need=8.0 * kinds * (n + 1) ** 2, limit=MAX_ARRAY_BYTES,
               what=f"bytes of the segment-time tables of {n} layers x {kinds} kinds",
               hint="a model with fewer layers")
    cost = search_cost(n, hardware.counts, limits, stop=MAX_PLAN_CANDIDATES)
    hint = "fewer kinds or accelerators, or fewer micro-batch sizes"
    check_size(name, value, need=cost["candidates"], limit=MAX_PLAN_CANDIDATES,
               what=f"candidate layouts of the mode search ({what})", hint=hint,
               at_least=cost["candidates"] > MAX_PLAN_CANDIDATES)
    check_size(name, value, need=cost["dp_cells"], limit=MAX_PLAN_DP_CELLS,
               what=f"cells of the kinds DPs ({what})", hint=hint)
    check_size(name, value, need=cost["dp_bytes"], limit=MAX_ARRAY_BYTES,
               what=f"bytes of one kinds DP ({what})", hint=hint)
