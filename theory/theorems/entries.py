r"""The registry: one row per bound (a declarative table), built on first use and cached.

Each row names its provenance, reference, proof, schedule, algorithm, write semantics, gradient
signal and conditions, and the formula of :mod:`theory.theorems.formulas` or
:mod:`theory.theorems.delayed` that gives its expressions. :func:`registry` turns the rows into
:class:`~theory.theorems.Bound` objects once (the symbolic work takes seconds, so it is not done
at import); :func:`get_bound`, :func:`bounds_for` and :func:`bound_for` read it. Until something
asks for the whole registry, they build only the entries they return (each once, the same object
the registry holds later), and :func:`names` lists the rows without building any.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cache, partial

import sympy as sp

from .. import local_sgd
from ..errors import ParameterError
from ..symbols import B, D, M, b, n
from ..vocabulary import ALGORITHMS, GRADIENT_SIGNALS, MODES, WRITE_SEMANTICS
from .biased import analog_biased_parts, analog_biased_sharp_parts
from .bound import Bound
from .delayed import (
    analog_ap_b_parts,
    analog_ap_mixed_parts,
    analog_ap_parts,
    analog_ap_per_sample_parts,
    tiki_taka_reset_ap_parts,
)
from .formulas import (
    analog_mixed_parts,
    analog_parts,
    analog_per_sample_parts,
    companion_parts,
    digital_parts,
    literature_parts,
    local_floor_parts,
    tiki_taka_parts,
    tiki_taka_reset_parts,
)

__all__ = ["bound_for", "bounds_for", "get_bound", "names", "registry"]


@dataclass(frozen=True)
class _Row:
    """One row of the registry table: what its :class:`Bound` says, and where its formula is."""

    name: str
    provenance: str
    reference: str
    mode: str
    algorithm: str
    conditions: Sequence[str]
    parts: Callable[[], dict[str, sp.Expr]]
    proof: str | None = None
    write: str = "batch-mean"
    gradient: str = "unbiased"
    floor_kind: str = "worst-case"

    def build(self) -> Bound:
        """The registry entry of this row (its formula evaluated)."""
        return Bound(
            name=self.name, provenance=self.provenance, reference=self.reference,
            proof=self.proof, mode=self.mode, algorithm=self.algorithm,
            conditions=tuple(self.conditions), write=self.write, gradient=self.gradient,
            floor_kind=self.floor_kind, **self.parts(),
        )


def _through_sync(row: _Row, name: str, reference: str, *, proof: str | None = None,
                  conditions: Sequence[str] | None = None) -> _Row:
    """The synchronous pipeline's row of a non-pipelined batch-``n`` row: the same statement at
    ``n = B b`` (Corollary 3's step: the synchronous pipeline keeps the non-pipelined iterates,
    each update averaging ``B`` micro-batches of ``b``).

    ``row.parts`` is ``partial(formula, n)``; the new row's is ``partial(formula, B b)``. Its
    conditions are ``row``'s and ``"n = B b"`` unless ``conditions`` says otherwise; its proof
    is ``row``'s unless ``proof`` is given.
    """
    return replace(row, name=name, reference=reference, mode="sync",
                   proof=row.proof if proof is None else proof,
                   conditions=[*row.conditions, "n = B b"] if conditions is None else conditions,
                   parts=partial(row.parts.func, B * b))


# ------------------------------------------------------------------------------------------------
# the conditions the rows share

_A1 = "A1: f is L-smooth and bounded below, Delta = f(W_0) - f*"
_A2 = "A2: unbiased stochastic gradient, variance <= sigma2 per sample (sigma2/batch per batch)"
_A3 = "A3: response functions in [q_min, q_max] and |G| <= G_inf on the region the weights visit"
_A4 = (
    "A4: ||g_k - grad f(W_k; xi_k)|| <= L_s ||W_hat_k - W_k|| with the error F_k-measurable "
    "(exact for the oracle problems with L_s = L; an assumption for networks)"
)
_THETA = "0 < theta < 1 (free Young split)"
_AP_CONDITIONS = (
    _A1, _A2, _A3, _A4, _THETA, "D = M - 1 (maximal stage delay)",
    "kappa = (1 + theta^2)/(2 (1 - theta)) + (q_max/q_min - 1)/4",
)
_AP_CAP = (
    "alpha <= 1/(L q_max^2 (1 + min(D, 1))/((1 - theta) q_min) "
    "+ L_s D q_max sqrt(8 kappa/(1 - theta)))"
)
_ORDER = "order only: the unknown constants of the published rate are set to 1"
_TT_CONDITIONS = (
    _A1, _A2,
    "both arrays soft bounds (linear response, range tau) with saturation bounded away from "
    "tau along the run (a condition on the iterates, as the companion's S_min)",
    "transfer of the whole fast array after every update (T = 1, slice all) with rates alpha "
    "and beta as the theorem prescribes; column round robin (T >= 1) is not covered",
    "uncertain: the published constants (and their dependence on tau, beta, gamma) are not "
    "verified here; the row uses C_TT = 1 in the rate a = C_TT sqrt(L Delta sigma2/n), "
    "c = L Delta, which is NOT a valid bound: bench/tiki_taka.py measures the simulated average "
    "at 3.6-3.9 times it without pipeline and 2.8-3.2 times it in the synchronous pipeline "
    "(oracle quadratic, tau = 0.4, K = 500-8000, 8 seeds; --quick: 2.8-3.8), i.e. C_TT ~ 4 "
    "there; not checked by the suites (a measurement, not a guarantee)",
)
_TT0_CONDITIONS = (
    _A1, _A2, _A3.replace("the weights visit", "C visits"), _THETA,
    "Corollary TT0 variant: gamma = 0 (the forward reads C), transfer slice all, digital fast "
    "buffer (A += dw exactly: fast_device digital), A reset to 0 after each transfer "
    "(transfer_reset), expected update of C",
    "transfer every T updates with beta = rho alpha (rho = transfer_lr): each write of C is the "
    "analog update of -rho alpha^2 T times the mean of the window's T gradients",
    "K (updates) a multiple of T: K/T writes of C",
    "alpha <= sqrt((1 - theta) q_min/(rho T L q_max^2)) (Theorem 2's cap on the step "
    "rho alpha^2 T)",
    # machine-checked by the planner (theory.complexity.conditions_met)
    "setting tt_gamma=0", "setting transfer_slice=all", "setting fast_device=digital",
    "setting transfer_reset=true",
)

#: Corollary TT0-AP: the variant's conditions, A4, and the delay counted in writes of C
_TT0_AP_CONDITIONS = (
    *_TT0_CONDITIONS, _A4,
    "D = ceil((M - 1)/T): the maximal delay in writes of C (theory.schedules.write_delay; any "
    "larger D is also valid)",
    "cycles 2 (K + M - 1) + (K/T) c_T (transfers counted on top)",
)


_A2_PS = (
    "A2 per sample: each sample's gradient noise has mean 0 and variance <= sigma2 given the "
    "earlier samples of its update (independent samples)"
)
_A3_PS = (
    "A3 on the region the weights visit, the weights between the writes of one update included"
)
_PER_SAMPLE = "per-sample writes: n updates of -(alpha/n) g_i, all g_i read at W_k"
_A2_BETA = (
    "A2_beta: signal grad f(W_k) + beta_k + nu_k with beta_k F_k-measurable, ||beta_k|| <= beta, "
    "E_k nu_k = 0, E_k ||nu_k||^2 <= sigma2/n"
)

_MIXED = (
    "per block m (stage): A3 with q_min_m, q_max_m, G_inf_m (digital: 1, 1, 0) and noise share "
    "s_m (E||nu^(m)||^2 <= s_m sigma2/batch, sum s_m = 1); q_min = min_m q_min_m, q_max = max_m "
    "q_max_m, p2_bar = sum_m s_m q_max_m^2, G2_bar = sum_m s_m G_inf_m^2 (theory.mixed)"
)


# ------------------------------------------------------------------------------------------------
# the rows, family by family, in the registry's order

#: Theorem 1: digital SGD without a pipeline
_DIGITAL_ROWS = (
    _Row(
        "digital_sgd", provenance="derived", proof="Theorem 1",
        reference="Theorem 1 of docs/theory.md (Ghadimi and Lan 2013 form)",
        mode="none", algorithm="digital",
        conditions=[_A1, _A2, "alpha <= 1/L"], parts=digital_parts,
    ),
)

_THEOREM_2 = _Row(
    "analog_sgd", provenance="derived", proof="Theorem 2",
    reference="Theorem 2 of docs/theory.md", mode="none", algorithm="analog",
    conditions=[_A1, _A2, _A3, _THETA, "alpha <= (1 - theta) q_min/(L q_max^2)"],
    parts=partial(analog_parts, n),
)

#: analog SGD with batch-mean writes: the companion theorem, Theorem 2, Corollary 3, Theorems 4'
#: and 4'B
_ANALOG_ROWS = (
    _Row(
        "analog_sgd_companion", provenance="companion",
        reference="Wu et al., NeurIPS 2025 (arXiv 2502.06309), analog SGD theorem; "
        "paper-notes section 3; soft bounds, F_max = 1",
        mode="none", algorithm="analog",
        conditions=[
            _A1, _A2, "soft bounds: ||W_k||_inf <= W_max < tau (S_min = 1 - W_max^2/tau^2)",
            "alpha = sqrt(Delta n/(sigma2 L K)) <= 1/(4 L), i.e. K >= 16 L Delta n/sigma2 "
            "(automatic when eps - floor <= sigma2/(n S_min))",
            "per-gradient variance of the published theorem taken as sigma2/n",
        ],
        parts=companion_parts,
    ),
    _THEOREM_2,
    _through_sync(_THEOREM_2, "analog_sgd_sp",
                  "Corollary 3 of docs/theory.md (Theorem 2 with n = B b)", proof="Corollary 3"),
    _Row(
        "analog_sgd_ap", provenance="derived", proof="Theorem 4'",
        reference="Theorem 4' of docs/theory.md", mode="async", algorithm="analog",
        conditions=[*_AP_CONDITIONS, _AP_CAP], parts=analog_ap_parts,
    ),
    _Row(
        "analog_sgd_ap_b", provenance="derived", proof="Theorem 4'B",
        reference="Theorem 4'B of docs/theory.md (Theorem 4' with the bias charged to the "
        "floor)",
        mode="async", algorithm="analog",
        conditions=[
            *_AP_CONDITIONS, _AP_CAP,
            "floor factor 1 + theta (1 - theta) q_min^2/q_max^2 for D >= 1 (1 at D = 0)",
        ],
        parts=analog_ap_b_parts,
    ),
)

#: Corollary 3PS: analog SGD with one write per sample
_COROLLARY_3PS = _Row(
    "analog_sgd_per_sample", provenance="derived", proof="Corollary 3PS",
    reference="Corollary 3PS of docs/theory.md (Theorem 2 with per-sample writes)",
    mode="none", algorithm="analog", write="per-sample",
    conditions=[_A1, _A2_PS, _A3_PS, _THETA, "alpha <= (1 - theta) q_min/(L q_max^2)",
                _PER_SAMPLE],
    parts=partial(analog_per_sample_parts, n),
)
_PER_SAMPLE_ROWS = (
    _COROLLARY_3PS,
    _through_sync(_COROLLARY_3PS, "analog_sgd_sp_per_sample",
                  "Corollary 3PS of docs/theory.md (Corollary 3 with per-sample writes)",
                  conditions=[*_COROLLARY_3PS.conditions[:-1], _PER_SAMPLE + " (n = B b)"]),
    _Row(
        "analog_sgd_ap_per_sample", provenance="derived", proof="Theorem 4'PS",
        reference="Theorem 4'PS of docs/theory.md (Theorem 4' with per-sample writes)",
        mode="async", algorithm="analog", write="per-sample",
        conditions=[
            _A1, _A2_PS, _A3_PS, _A4, _THETA, *_AP_CONDITIONS[5:], _AP_CAP,
            "per-sample writes: b updates of -(alpha/b) g_i, all g_i read at the stale point "
            "W_hat_k (A4 per sample: the same F_k-measurable error e_k in every g_i)",
        ],
        parts=analog_ap_per_sample_parts,
    ),
)

#: Tiki-Taka: the companion statement (Proposition TT), Corollaries TT0 and TT0-AP
_TIKI_TAKA_ROWS = (
    _Row(
        "tiki_taka_companion", provenance="companion",
        reference="Wu, Gokmen, Rasch and Chen, NeurIPS 2024 (arXiv 2406.12774), Tiki-Taka "
        "convergence theorem: exact convergence to a critical point, no asymptotic error; "
        "paper-notes section 3",
        mode="none", algorithm="tiki-taka",
        conditions=[*_TT_CONDITIONS, "batch n per update"], parts=partial(tiki_taka_parts, n),
    ),
    _Row(
        "tiki_taka_sp", provenance="companion", proof="Proposition TT",
        reference="tiki_taka_companion at n = B b through Proposition TT of docs/theory.md "
        "(the synchronous pipeline keeps the non-pipelined iterates)",
        mode="sync", algorithm="tiki-taka",
        conditions=[*_TT_CONDITIONS, "n = B b (Proposition TT)",
                    "cycles 2 (B + M - 1) K + floor(K/T) c_T (transfers counted on top)"],
        parts=partial(tiki_taka_parts, B * b),
    ),
    _Row(
        "tiki_taka_reset", provenance="derived", proof="Corollary TT0",
        reference="Corollary TT0 of docs/theory.md (accumulate and transfer: Theorem 2 on C "
        "with step rho alpha^2 T, batch n T, K/T writes)",
        mode="none", algorithm="tiki-taka",
        conditions=[*_TT0_CONDITIONS, "batch n per update"],
        parts=partial(tiki_taka_reset_parts, n),
    ),
    _Row(
        "tiki_taka_reset_sp", provenance="derived", proof="Corollary TT0",
        reference="Corollary TT0 of docs/theory.md at n = B b (Proposition TT: the "
        "synchronous pipeline keeps the non-pipelined iterates)",
        mode="sync", algorithm="tiki-taka",
        conditions=[*_TT0_CONDITIONS, "n = B b (Proposition TT)",
                    "cycles 2 (B + M - 1) K + (K/T) c_T (transfers counted on top)"],
        parts=partial(tiki_taka_reset_parts, B * b),
    ),
    _Row(
        "tiki_taka_reset_ap", provenance="derived", proof="Corollary TT0-AP",
        reference="Corollary TT0-AP of docs/theory.md (Theorem 4' on the writes of C: step "
        "rho alpha^2 T, micro-batch b T, delay D = ceil((M - 1)/T) writes, K/T writes)",
        mode="async", algorithm="tiki-taka",
        conditions=list(_TT0_AP_CONDITIONS),
        parts=lambda: tiki_taka_reset_ap_parts(analog_ap_parts()),
    ),
    _Row(
        "tiki_taka_reset_ap_b", provenance="derived", proof="Corollary TT0-AP",
        reference="Corollary TT0-AP of docs/theory.md with Theorem 4'B on the writes of C",
        mode="async", algorithm="tiki-taka",
        conditions=list(_TT0_AP_CONDITIONS),
        parts=lambda: tiki_taka_reset_ap_parts(analog_ap_b_parts()),
    ),
)

#: per-sample writes of the fast buffer A (its own update ``-(alpha/n) g_i`` per sample, all read
#: at the update's weights): the writes add exactly (digital A), so C's writes are those of the
#: batch-mean runs
_TT0_PER_SAMPLE = (
    "per-sample writes of the digital buffer A: n (async: b) writes of -(alpha/n) g_i per update, "
    "all g_i read at the update's weights; T counts updates (an event after the last write of "
    "every T-th update); C is written once per event, as under batch-mean writes"
)


def _per_sample(row: _Row) -> _Row:
    """Corollary TT0PS: ``row`` (a Corollary TT0 or TT0-AP row) under per-sample writes, the same
    formula (``row.parts``), name ``row.name + "_per_sample"``."""
    return replace(row, name=f"{row.name}_per_sample", proof="Corollary TT0PS",
                   reference=f"Corollary TT0PS of docs/theory.md ({row.name} under per-sample "
                   "writes of the digital fast buffer: the same writes of C)",
                   write="per-sample", conditions=[*row.conditions, _TT0_PER_SAMPLE])


_TT0_PER_SAMPLE_ROWS = tuple(_per_sample(row) for row in _TIKI_TAKA_ROWS
                             if row.provenance == "derived")

#: Theorem 2M: analog and digital blocks in one pipeline
_THEOREM_2M = _Row(
    "analog_sgd_mixed", provenance="derived", proof="Theorem 2M",
    reference="Theorem 2M (a) of docs/theory.md (Theorem 2 with per-block constants)",
    mode="none", algorithm="mixed",
    conditions=[_A1, _A2, _MIXED, _THETA, "alpha <= (1 - theta) q_min/(L q_max^2)"],
    parts=partial(analog_mixed_parts, n),
)
_MIXED_ROWS = (
    _THEOREM_2M,
    _through_sync(_THEOREM_2M, "analog_sgd_sp_mixed",
                  "Theorem 2M (b) of docs/theory.md (Corollary 3 with per-block constants)"),
    _Row(
        "analog_sgd_ap_mixed", provenance="derived", proof="Theorem 2M",
        reference="Theorem 2M (c) of docs/theory.md (Theorem 4' with per-block constants)",
        mode="async", algorithm="mixed",
        conditions=[*(c for c in _AP_CONDITIONS if c != _A3), _MIXED, _AP_CAP],
        parts=analog_ap_mixed_parts,
    ),
)

#: Propositions IO and IO': analog SGD with a biased gradient
_BIASED_ROWS = (
    _Row(
        "analog_sgd_biased", provenance="derived", proof="Proposition IO",
        reference="Proposition IO of docs/theory.md (Theorem 2 with a biased gradient, "
        "bias norm <= beta)",
        mode="none", algorithm="analog", gradient="biased",
        conditions=[_A1, _A2_BETA, _A3, _THETA,
                    "alpha <= (1 - theta) q_min/(2 L q_max^2) (half Theorem 2's cap)"],
        parts=partial(analog_biased_parts, n),
    ),
    _Row(
        "analog_sgd_biased_sharp", provenance="derived", proof="Proposition IO'",
        reference="Proposition IO' of docs/theory.md (Proposition IO with the bias paid by "
        "Lemma A of Theorem 4': floor Theorem 2's plus 2 kappa beta^2)",
        mode="none", algorithm="analog", gradient="biased",
        conditions=[_A1, _A2_BETA, _A3, _THETA,
                    "kappa = (1 + theta^2)/(2 (1 - theta)) + (q_max/q_min - 1)/4 (Lemma A of "
                    "Theorem 4' at kappa_2 = (1 - theta)/4)",
                    "alpha <= (1 - theta) q_min/(2 L q_max^2) (half Theorem 2's cap)"],
        parts=partial(analog_biased_sharp_parts, n),
    ),
)

#: published orders (unknown constants set to 1) and local SGD
_LITERATURE_ROWS = (
    _Row(
        "literature_sgd", provenance="literature",
        reference="Ghadimi and Lan 2013: N = O(L Delta/eps + L Delta sigma2/eps^2)",
        mode="none", algorithm="digital",
        conditions=[_A1, _A2, _ORDER], parts=partial(literature_parts, n, sp.Integer(1)),
    ),
    _Row(
        "literature_delay_fixed", provenance="literature",
        reference="Stich and Karimireddy 2020; Arjevani, Shamir and Srebro 2020: "
        "O(L Delta sigma2/eps^2 + tau_d L Delta/eps)",
        mode="async", algorithm="digital",
        conditions=[
            _A1, _A2, _ORDER, "fixed delay tau_d = D; factor 1 + D so that D = 0 gives SGD",
        ],
        parts=partial(literature_parts, b, 1 + D),
    ),
    _Row(
        "literature_delay_arbitrary", provenance="literature",
        reference="Koloskova, Stich and Jaggi 2022, constant step: "
        "O(L Delta sigma2/eps^2 + sqrt(tau_max tau_avg) L Delta/eps)",
        mode="async", algorithm="digital",
        conditions=[
            _A1, _A2, _ORDER,
            "tau_max = D, tau_avg = D/2 (mean of the stage delays M - m over equal stages); "
            "factor 1 + sqrt(tau_max tau_avg) so that D = 0 gives SGD",
        ],
        parts=partial(literature_parts, b, 1 + sp.sqrt(D * D / 2)),
    ),
    _Row(
        "literature_async_sgd", provenance="literature",
        reference="Mishchenko et al. 2022, asynchronous SGD with n workers: "
        "O(L Delta sigma2/eps^2 + n L Delta/eps)",
        mode="async", algorithm="digital",
        conditions=[_A1, _A2, _ORDER, "workers = M (micro-batches in flight in the pipeline)"],
        parts=partial(literature_parts, b, M),
    ),
    _Row(
        "local_sgd", provenance="literature", reference=local_sgd.REFERENCE,
        mode="none", algorithm="analog",
        conditions=[*local_sgd.CONDITIONS, "rate form at the step cap (no rate form at the "
                    "best step: the programming noise grows as the step shrinks)"],
        parts=local_sgd.parts,
    ),
)

#: Theorem LF's assumption on what G2_iter is (the local-floor rows)
_A2S = (
    "A2S (noise shares): E_k nu_i^2 <= s_i sigma2/batch per coordinate i, sum_i s_i = 1 (the "
    "oracle noise is isotropic: s_i = 1/d)",
    "G2_iter = (1/K) sum_k E sum_i s_i G_i(W_k)^2, the iterate average over the points where the "
    "proof evaluates the response (per-sample writes: the intermediate weights V_{k,i}; "
    "Tiki-Taka: C at its writes; mixed blocks: digital coordinates G = 0); at most G_inf^2 "
    "(G2_bar); measured, not a hardware constant: a check estimates it by the ensemble mean over "
    "the iterates W_k of its run",
)


def _local(row: _Row) -> _Row:
    """Theorem LF: ``row`` (an analog row with a floor) with the worst case of ``|G|`` replaced by
    the iterate average ``G2_iter`` (:func:`local_floor_parts`), name ``row.name + "_local"``."""
    parts = row.parts
    return replace(row, name=f"{row.name}_local", proof="Theorem LF",
                   reference=f"Theorem LF of docs/theory.md ({row.name} with G_inf^2 replaced "
                   "by the iterate average G2_iter)",
                   floor_kind="iterate-average", conditions=[*row.conditions, *_A2S],
                   parts=lambda: local_floor_parts(parts()))


#: the derived rows with a floor (every analog, Tiki-Taka-variant and mixed row)
_FLOORED_ROWS = tuple(
    row for row in (*_ANALOG_ROWS, *_PER_SAMPLE_ROWS, *_TIKI_TAKA_ROWS, *_TT0_PER_SAMPLE_ROWS,
                    *_MIXED_ROWS, *_BIASED_ROWS)
    if row.provenance == "derived"
)
#: Theorem LF: one local-floor row per floored row, in the same order
_LOCAL_ROWS = tuple(_local(row) for row in _FLOORED_ROWS)

#: every row, in the registry's order (derived first, then the literature rows)
_ROWS = (
    *_DIGITAL_ROWS, *_ANALOG_ROWS, *_PER_SAMPLE_ROWS, *_TIKI_TAKA_ROWS, *_TT0_PER_SAMPLE_ROWS,
    *_MIXED_ROWS,
    *_BIASED_ROWS, *_LOCAL_ROWS, *_LITERATURE_ROWS,
)


#: every row by name
_ROW_OF = {row.name: row for row in _ROWS}


@cache
def _entry(name: str) -> Bound:
    """The entry of row ``name``, built once (the registry holds this same object)."""
    return _ROW_OF[name].build()


@cache
def registry() -> dict[str, Bound]:
    """Every bound by name, in a fixed order (derived first, then the literature rows).

    Built on the first call and cached: every later call returns the same dictionary, which is
    also :data:`theory.theorems.REGISTRY`.
    """
    return {row.name: _entry(row.name) for row in _ROWS}


def _known() -> dict[str, Bound] | dict[str, _Row]:
    """Every entry by name: the registry once it is built (with anything added to it), else the
    rows, none built (a row has its entry's provenance, mode, algorithm, write, gradient and
    floor kind)."""
    return registry() if registry.cache_info().currsize else _ROW_OF


def names(provenance: str | None = None) -> tuple[str, ...]:
    """The registry's names in its order (of one ``provenance`` if given), building no entry."""
    return tuple(name for name, item in _known().items()
                 if provenance is None or item.provenance == provenance)


def get_bound(name: str) -> Bound:
    """Return the registry entry ``name``; :class:`ParameterError` lists the valid names."""
    known = _known()
    if name not in known:
        raise ParameterError(f"bound={name!r} is unknown; valid: {', '.join(known)}")
    item = known[name]
    return item if isinstance(item, Bound) else _entry(name)


def _check_choice(name: str, value: str, valid: tuple[str, ...]) -> None:
    if value not in valid:
        raise ParameterError(f"{name}={value!r} is unknown; valid: {', '.join(valid)}")


def _derived_by_kind() -> dict[tuple[str, str, str, str], tuple[str, ...]]:
    """``(mode, algorithm, write, gradient)`` -> the names of the ``derived`` entries of that
    kind with a worst-case floor (the local-floor rows of Theorem LF need a measured
    ``G2_iter``), in order.

    Read on every call (from the rows, or from :func:`registry` once it is built, so that an
    entry added to it is found); only the entries returned are built.
    """
    table: dict[tuple[str, str, str, str], tuple[str, ...]] = {}
    for name, item in _known().items():
        if item.provenance == "derived" and item.floor_kind == "worst-case":
            kind = (item.mode, item.algorithm, item.write, item.gradient)
            table[kind] = (*table.get(kind, ()), name)
    return table


def _no_bound_message(mode: str, algorithm: str, write: str, gradient: str) -> str:
    """Why :func:`bounds_for` has nothing for this kind, and the kinds it has."""
    entries = registry().values()
    wanted = "batch-mean" if algorithm == "digital" else write
    if gradient != "unbiased":
        biased = [x for x in entries if x.gradient == gradient]
        return (
            f"no derived bound for gradient={gradient!r} with algorithm={algorithm!r}, "
            f"mode={mode!r}, write={write!r}; valid: "
            + ", ".join(f"{x.algorithm}/{x.mode}/{x.write}" for x in biased)
        )
    derived = [x for x in entries
               if x.provenance == "derived" and x.write in ("batch-mean", wanted)]
    pairs = sorted({(x.algorithm, x.mode) for x in derived
                    if x.write == wanted or x.algorithm == "digital"})
    semantics = "" if write == "batch-mean" else f" and write={write!r}"
    return (
        f"no derived bound for algorithm={algorithm!r} with mode={mode!r}{semantics}; valid "
        "pairs: " + ", ".join(f"{a}/{m}" for a, m in pairs)
    )


def bounds_for(mode: str, algorithm: str = "analog",
               write: str = "batch-mean", gradient: str = "unbiased") -> tuple[Bound, ...]:
    """The ``derived`` entries proved for ``algorithm`` under the ``mode`` schedule, the
    ``write`` semantics and the ``gradient`` signal, in order.

    The default ``gradient="unbiased"`` (A2) gives the guarantees of the planner; ``"biased"``
    the entries for a gradient with a bias of norm at most ``beta`` (Propositions IO, IO'), which
    need a measured ``beta`` and are not planned with. The local-floor rows of Theorem LF
    (``floor_kind = "iterate-average"``) need a measured ``G2_iter`` and are never returned.

    These are the guarantees the package turns into iterations, cycles and plans; the first one is
    :func:`bound_for`'s answer. A digital update is linear in its increment, so per-sample digital
    writes sum to the batch-mean write exactly: ``write`` does not change the digital entries.

    Raises
    ------
    ParameterError
        For an unknown mode, algorithm or write semantics, or a combination without a derived
        bound (e.g. mixed analog and digital stages with per-sample writes).
    """
    for name, value, valid in (("mode", mode, MODES), ("algorithm", algorithm, ALGORITHMS),
                               ("write", write, WRITE_SEMANTICS),
                               ("gradient", gradient, GRADIENT_SIGNALS)):
        _check_choice(name, value, valid)
    wanted = "batch-mean" if algorithm == "digital" else write
    found = tuple(get_bound(name) for name in
                  _derived_by_kind().get((mode, algorithm, wanted, gradient), ()))
    if not found:
        raise ParameterError(_no_bound_message(mode, algorithm, write, gradient))
    return found


def bound_for(mode: str, algorithm: str = "analog", write: str = "batch-mean") -> Bound:
    """The registry's primary ``derived`` bound for ``algorithm`` under the ``mode`` schedule.

    ``("digital", "none")`` is Theorem 1, ``("analog", "none")`` Theorem 2, ``("analog", "sync")``
    Corollary 3 and ``("analog", "async")`` Theorem 4' (``bounds_for`` adds Theorem 4'B); with
    ``write="per-sample"``, ``("analog", "none")`` and ``("analog", "sync")`` are Corollary 3PS and
    ``("analog", "async")`` is Theorem 4'PS.
    """
    return bounds_for(mode, algorithm, write)[0]
