r"""Does the theory rank configurations like the simulation? (:func:`ranking_agreement`)

Two checks of a suite (:mod:`simulate.verification.suites`) are ranked at a common target by
the guarantee (the cycles the bound predicts at each run's step) and by the simulation (the
cycles the ensemble's running average takes): a synchronous check against an asynchronous one
at the same stage count, and one entry at two stage counts at the same step fraction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from theory.errors import ParameterError
from theory.theorems import get_bound

from ..pipeline import cycles_after
from .checks import Check, region_step_cap
from .prediction import first_hit, predicted_iterations, target
from .suites import step_region

__all__ = ["RankedPair", "RankingAgreement", "ranking_agreement"]


#: the asynchronous entries a synchronous check is ranked against
_ASYNC_ENTRIES = ("analog_sgd_ap", "analog_sgd_ap_b")
#: significant digits of a check's step fraction (its lr over the cap) when pairing by stages
_FRACTION_DIGITS = 3


@dataclass(frozen=True)
class RankedPair:
    """Two checks ranked at a common target by the guarantee and by the simulation.

    Attributes
    ----------
    kind : str
        ``"mode"`` (a synchronous check against an asynchronous one) or ``"stages"`` (one entry
        at two stage counts).
    first, second : int
        Indices of the two checks in the list given to :func:`ranking_agreement`.
    bounds : (str, str)
        Their registry entries.
    eps : float
        The common target :func:`simulate.verification.prediction.target` of the larger floor and
        the smaller start of the two.
    predicted, simulated : (int, int)
        Clock cycles to ``eps`` of the two checks: the guarantee at each run's step
        (:func:`simulate.verification.prediction.predicted_iterations`) and the first ``K`` of each
        ensemble
        mean running average.
    """

    kind: str
    first: int
    second: int
    bounds: tuple[str, str]
    eps: float
    predicted: tuple[int, int]
    simulated: tuple[int, int]

    @property
    def agree(self) -> bool:
        """The guarantee orders the two as the simulation does (a tie only matches a tie)."""
        def order(pair):
            return (pair[0] > pair[1]) - (pair[0] < pair[1])
        return order(self.predicted) == order(self.simulated)


@dataclass(frozen=True)
class RankingAgreement:
    """How often the guarantee ranks two checks like the simulation (:func:`ranking_agreement`).

    Attributes
    ----------
    pairs : tuple of RankedPair
        The ranked pairs.
    vacuous, unreached : dict
        Per kind, pairs left out because one floor is at or above the start (no common target),
        or because a run did not reach the common target within its ``K`` (or the guarantee
        never does).
    """

    pairs: tuple[RankedPair, ...]
    vacuous: dict
    unreached: dict

    def count(self, kind: str, bound: str | None = None) -> tuple[int, int]:
        """``(agreeing, ranked)`` pairs of ``kind``, only those involving ``bound`` if given."""
        mine = [p for p in self.pairs if p.kind == kind and (bound is None or bound in p.bounds)]
        return sum(p.agree for p in mine), len(mine)

    def fraction(self, kind: str, bound: str | None = None) -> float | None:
        """Agreeing / ranked pairs of ``kind`` (``None`` when there is none)."""
        agree, ranked = self.count(kind, bound)
        return agree / ranked if ranked else None

    def to_dict(self) -> dict:
        """JSON-ready: the counts and fractions per kind, and the pairs."""
        return {
            **{f"{kind}_{name}": value for kind in ("mode", "stages") for name, value in (
                ("agree", self.count(kind)[0]), ("pairs", self.count(kind)[1]),
                ("fraction", self.fraction(kind)), ("vacuous", self.vacuous[kind]),
                ("unreached", self.unreached[kind]))},
            "pairs": [{"kind": p.kind, "first": p.first, "second": p.second,
                       "bounds": list(p.bounds), "eps": p.eps, "predicted": list(p.predicted),
                       "simulated": list(p.simulated), "agree": p.agree} for p in self.pairs],
        }


def _step_fraction(check: Check) -> float:
    config = check.config
    cap = region_step_cap(check.bound_name, config, *step_region(config))
    return float(f"{config.lr / cap:.{_FRACTION_DIGITS}g}")


def _pair_kind(a: Check, b: Check, fraction: Callable[[Check], float]) -> str | None:
    ca, cb = a.config, b.config
    shared = ("problem", "device", "tau", "sigma2", "seed", "steps", "seeds", "micro_batch_size",
              "algorithm")
    if any(getattr(ca, f) != getattr(cb, f) for f in shared):
        return None
    if (a.bound_name == "analog_sgd_sp" and b.bound_name in _ASYNC_ENTRIES
            and ca.stages == cb.stages):
        return "mode"
    if (a.bound_name == b.bound_name and ca.stages != cb.stages
            and ca.micro_batches == cb.micro_batches and fraction(a) == fraction(b)):
        return "stages"
    return None


def ranking_agreement(checks: Sequence[Check]) -> RankingAgreement:
    r"""The fraction of pairs of checks the guarantee ranks in the simulation's order.

    **Pairs.** Two checks of the same problem, device, ``tau``, ``sigma2``, root seed, ``K``,
    ``R`` and micro-batch size ``b`` form

    - a ``"mode"`` pair: ``analog_sgd_sp`` and an asynchronous entry (``analog_sgd_ap`` or
      ``analog_sgd_ap_b``) at the same stage count ``M`` (each at its own step and ``B``);
    - a ``"stages"`` pair: one entry at two stage counts ``M != M'``, the same ``B`` and the same
      step fraction of its cap (:func:`step_region`, 3 significant digits).

    **Ranking.** At the common target :math:`\epsilon = \sqrt{\max(F_a, F_b)\,\min(S_a, S_b)}`
    (:func:`simulate.verification.prediction.target` of the larger floor and the smaller start, so
    at least each check's own target and below both starts) each check gets predicted cycles (the
    bound at its run's step, :func:`simulate.verification.prediction.predicted_iterations`) and
    simulated cycles (the first ``K`` of its ensemble mean running average, from
    :attr:`~simulate.verification.prediction.Prediction.running`). A pair agrees when the signs of
    ``predicted_a - predicted_b`` and ``simulated_a - simulated_b`` are equal (a tie only matches
    a tie). Pairs without a common target (a floor at or above the start: vacuous) or with a run
    that did not reach it are counted apart and not ranked.

    Only the worst-case rows are paired: a local-floor row (Theorem LF) reads its ``G2_iter`` off
    its own run, so it is no guarantee made before the run.

    Every check needs its :attr:`~simulate.verification.checks.Check.prediction`.
    """
    checks = list(checks)
    worst_case = [get_bound(check.bound_name).floor_kind == "worst-case" for check in checks]
    if any(check.prediction is None for check in checks):
        raise ParameterError("checks: every check needs its prediction (simulate.check_bound "
                             "computes it); valid: checks of run_suite or check_bound")
    fractions: dict[int, float] = {}

    def fraction(check: Check) -> float:
        key = id(check)
        if key not in fractions:
            fractions[key] = _step_fraction(check)
        return fractions[key]

    pairs, vacuous, unreached = [], {"mode": 0, "stages": 0}, {"mode": 0, "stages": 0}
    for i, a in enumerate(checks):
        for j, b in enumerate(checks):
            if i == j or (a.bound_name == b.bound_name and j < i):
                continue  # a stages pair once; a mode pair in its (sync, async) order
            if not (worst_case[i] and worst_case[j]):
                continue
            kind = _pair_kind(a, b, fraction)
            if kind is None:
                continue
            pa, pb = a.prediction, b.prediction
            eps = target(max(pa.floor, pb.floor), min(pa.start, pb.start))
            if eps is None:
                vacuous[kind] += 1
                continue
            ks = [(predicted_iterations(check.bound_name, check.constants, eps),
                   int(first_hit(check.prediction.running, eps)) or None) for check in (a, b)]
            if any(None in pair for pair in ks):
                unreached[kind] += 1
                continue
            predicted, simulated = [], []
            for check, (k_pred, k_sim) in zip((a, b), ks, strict=True):
                c = check.config
                predicted.append(int(cycles_after(c.mode, c.stages, c.micro_batches, k_pred)))
                simulated.append(int(cycles_after(c.mode, c.stages, c.micro_batches, k_sim)))
            pairs.append(RankedPair(kind=kind, first=i, second=j,
                                    bounds=(a.bound_name, b.bound_name), eps=float(eps),
                                    predicted=tuple(predicted), simulated=tuple(simulated)))
    return RankingAgreement(pairs=tuple(pairs), vacuous=vacuous, unreached=unreached)
