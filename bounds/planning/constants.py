r"""The problem constants a plan used, and where each one came from.

Every proved iteration count scales with the problem's constants: :math:`L` and :math:`\Delta`
(A1), :math:`\sigma^2` (A2), :math:`L_s` (A4) and the Young split :math:`\theta`. ``eps`` is a
target for :math:`\frac1K\sum_k \mathbb{E}\lVert\nabla f(W_k)\rVert^2`, in the squared-gradient
units of these constants (those of :math:`\sigma^2`), so a plan's iterations, cycles and seconds
are a guarantee *under* them. :class:`ProblemConstants` records each value with its source:

- ``flag --L`` (``--L-s``, ``--delta``, ``--sigma2``, ``--theta``): given on the command line;
- ``FILE: problem.KEY``: the ``[problem]`` table of a model description
  (:mod:`bounds.planning.models`);
- ``default placeholder``: the default of :class:`~bounds.params.ProblemParams`
  (:math:`L = \Delta = \sigma^2 = 1`, :math:`\theta = 1/2`), a normalisation, not a property of
  any model; :math:`L_s` left unset follows :math:`L` (``follows L``);
- ``given``: a value a caller of the library passed in a :class:`~bounds.params.ProblemParams`
  that is not the default.

Later sources override earlier ones: default, then the model file, then the flags.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from ..params import ProblemParams

__all__ = ["DEFAULT_SOURCE", "EPS_UNITS", "MODEL_PROBLEM_KEYS", "PLAN_CONSTANTS",
           "ProblemConstants"]

#: the :class:`ProblemParams` fields a plan's bounds use, in the order shown (``beta`` is for the
#: biased-gradient entries only, which no plan uses)
PLAN_CONSTANTS = ("L", "L_s", "Delta", "sigma2", "theta")
#: the constants shown on every plan's text (the others when they are not their default)
_ALWAYS = ("L", "Delta", "sigma2")
#: the keys a model description's ``[problem]`` table may set (constants of f, not of a proof)
MODEL_PROBLEM_KEYS = ("L", "L_s", "Delta", "sigma2")
#: the source of a constant nobody gave
DEFAULT_SOURCE = "default placeholder"
#: the source of an unset ``L_s`` (it follows ``L``, Notes of :class:`ProblemParams`)
FOLLOWS_L = "follows L"
#: what eps (and so every iteration count and time) is measured in
EPS_UNITS = "squared-gradient units of these constants"
#: where each flag-given constant came from (the flags of ``bounds.commands.options``)
_FLAGS = {"L": "--L", "L_s": "--L-s", "Delta": "--delta", "sigma2": "--sigma2",
          "theta": "--theta"}


@dataclass(frozen=True)
class ProblemConstants:
    """The constants of :data:`PLAN_CONSTANTS` a plan used, each with its source.

    Attributes
    ----------
    values : dict
        Name to value (floats).
    sources : dict
        Name to source (module docstring: ``flag --L``, ``FILE: problem.L``, ``default
        placeholder``, ``follows L``, ``given``).
    """

    values: Mapping[str, float]
    sources: Mapping[str, str]

    @classmethod
    def build(cls, flags: Mapping[str, float] | None = None,
              file: Mapping[str, float] | None = None, where: str = "model") -> tuple[
                  ProblemParams, ProblemConstants]:
        """The problem of defaults, then ``file`` (a ``[problem]`` table), then ``flags``.

        Parameters
        ----------
        flags : mapping, optional
            Constants given on the command line, by :class:`ProblemParams` field name.
        file : mapping, optional
            The ``[problem]`` table of a model description (:data:`MODEL_PROBLEM_KEYS`).
        where : str
            The file's name, for the sources (``where: problem.KEY``).

        Returns
        -------
        (ProblemParams, ProblemConstants)
            The problem (checked by :class:`ProblemParams`) and its constants with sources.
        """
        values, sources = {}, {}
        for key, value in (file or {}).items():
            values[key], sources[key] = value, f"{where}: problem.{key}"
        for key, value in (flags or {}).items():
            values[key], sources[key] = value, f"flag {_FLAGS.get(key, '--' + key)}"
        if "L" in values and "L_s" not in values:
            values["L_s"] = None  # follows the given L
        problem = ProblemParams(**values)
        return problem, cls.of(problem, sources)

    @classmethod
    def of(cls, problem: ProblemParams, sources: Mapping[str, str] | None = None
           ) -> ProblemConstants:
        """``problem``'s constants with ``sources``; a constant without one is the default
        placeholder when it has the default value (``L_s`` equal to ``L``: ``follows L``),
        else ``given``."""
        sources = dict(sources or {})
        defaults = {f.name: f.default for f in dataclasses.fields(ProblemParams)}
        values, out = {}, {}
        for name in PLAN_CONSTANTS:
            values[name] = float(getattr(problem, name))
            if name in sources:
                out[name] = sources[name]
            elif name == "L_s":
                out[name] = FOLLOWS_L if problem.L_s == problem.L else "given"
            else:
                out[name] = DEFAULT_SOURCE if values[name] == defaults[name] else "given"
        return cls(values, out)

    @property
    def placeholders(self) -> tuple[str, ...]:
        """The constants of f (L, Delta, sigma2) that are default placeholders."""
        return tuple(n for n in _ALWAYS if self.sources[n] == DEFAULT_SOURCE)

    def shown(self) -> tuple[str, ...]:
        """The constants the text shows: L, Delta, sigma2, and L_s / theta when not default."""
        extra = tuple(n for n in ("L_s", "theta")
                      if self.sources[n] not in (DEFAULT_SOURCE, FOLLOWS_L))
        return (*_ALWAYS, *extra)

    def line(self) -> str:
        """``problem constants: L = 1 (default placeholder), ...; eps in ... units``."""
        parts = ", ".join(f"{n} = {self.values[n]:.6g} ({self.sources[n]})" for n in self.shown())
        return f"problem constants: {parts}; eps in {EPS_UNITS}"

    def note(self, model: str) -> str | None:
        """One line when a constant of f is a default placeholder (else ``None``)."""
        names = self.placeholders
        if not names:
            return None
        flags = ", ".join(_FLAGS[n] for n in names)
        what = ("is a default placeholder, not a constant" if len(names) == 1
                else "are default placeholders, not constants")
        return (f"{', '.join(names)} {what} of {model!r}: the "
                f"guarantee holds for a problem with these values; give the model's own with "
                f"{flags} or a [problem] table in its model file")

    def lines(self, model: str) -> list[str]:
        """The constants line and, with placeholders, the ``note:`` line."""
        note = self.note(model)
        return [self.line(), *([f"note: {note}"] if note else [])]

    def to_dict(self) -> dict:
        """``{"constants": {name: {"value", "source"}}, "eps_units": ...}`` (JSON-ready)."""
        return {
            "constants": {n: {"value": self.values[n], "source": self.sources[n]}
                          for n in PLAN_CONSTANTS},
            "eps_units": EPS_UNITS,
        }
