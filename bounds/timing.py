r"""The one timing rule that turns pipeline clock cycles into seconds.

A pipeline *clock cycle* (``theory.schedules``) is one stage doing one forward or one backward of
one micro-batch. Its duration is set by the slowest stage (as in DNN+NeuroSim's pipeline mode) plus
the pulsed update of the crossbar:

.. math::

    t_\mathrm{cycle}(M, b) = \left\lceil f_\mathrm{clk}\,\Big(\Big\lceil \frac{\ell}{M}
        \Big\rceil \, b \, t_\mathrm{read} + \mathrm{BL}\; t_\mathrm{pulse}\Big) \right\rceil
        \big/ f_\mathrm{clk},

with :math:`\ell` analog layers split over :math:`M` stages as evenly as possible (the slowest
stage holds :math:`\lceil \ell/M \rceil` of them), :math:`b` samples per micro-batch, one
matrix-vector multiplication (MVM) per layer and sample taking the read (integration) time
:math:`t_\mathrm{read}`, and one update of :math:`\mathrm{BL}` pulses of width
:math:`t_\mathrm{pulse}`. The result is rounded up to whole periods of the digital controller clock
:math:`f_\mathrm{clk}` (phases start on a clock edge). Each layer is assumed to fit on tiles that
operate in parallel, so one MVM takes :math:`t_\mathrm{read}` whatever the layer's size. The update
term is charged on every cycle, which is exact for the asynchronous pipeline (a stage updates after
every backward) and conservative for the synchronous one (which updates once per mini-batch).

Defaults and their sources (``paper-notes`` section 5):

- ``clock_hz = 1e9``: DNN+NeuroSim V2.1 default clock (1 GHz).
- ``read_time_s = 80e-9``: forward/backward integration time of one MVM on a 4096 x 4096
  resistive processing unit (RPU) array, Gokmen and Vlasov (2016).
- ``pulse_width_s = 1e-9`` and ``bit_length = 10``: the RPU update cycle of about 10 ns, made of
  about 10 pulses of 1 ns (Gokmen and Vlasov 2016).
- ``layers = 16``: the depth of the simulator's networks (16 dense layers, enough for 16 stages).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from theory.errors import ParameterError, check_range
from theory.limits import MAX_COUNT, MAX_MODEL_LAYERS, MAX_PULSES_PER_UPDATE

__all__ = ["ROUNDING_SLACK", "TimingModel"]

#: relative slack when rounding to clock periods, so that 80 ns at 1 GHz is 80 periods, not 81
ROUNDING_SLACK = 1e-9
#: the largest samples per micro-batch of a pipeline (bounds.params.PIPELINE_LIMITS)
_MAX_WORK = 10**9
_INT64_MAX = MAX_COUNT


@dataclass(frozen=True)
class TimingModel:
    r"""Seconds per pipeline clock cycle, and seconds for a number of cycles.

    Parameters
    ----------
    layers : int
        Analog layers of the model (all stages together), in
        ``[1, theory.limits.MAX_MODEL_LAYERS]``.
    read_time_s : float
        Seconds for one MVM (forward or backward integration of one sample through one layer), > 0.
    pulse_width_s : float
        Seconds per update pulse, > 0.
    bit_length : int
        Pulses per update (BL), in ``[1, theory.limits.MAX_PULSES_PER_UPDATE]``.
    clock_hz : float
        Clock of the digital controller in Hz, > 0; cycle times are whole periods of it.

    Notes
    -----
    .. math::

        t_\mathrm{cycle}(M, b) = \lceil f_\mathrm{clk}(\lceil \ell/M \rceil\, b\, t_\mathrm{read}
            + \mathrm{BL}\, t_\mathrm{pulse}) \rceil / f_\mathrm{clk},
        \qquad t(C) = C\, t_\mathrm{cycle}(M, b).

    The module docstring gives the sources of the defaults.
    """

    layers: int = 16
    read_time_s: float = 80e-9
    pulse_width_s: float = 1e-9
    bit_length: int = 10
    clock_hz: float = 1e9

    def __post_init__(self):
        object.__setattr__(
            self, "layers", check_range("layers", self.layers, 1, MAX_MODEL_LAYERS, integer=True)
        )
        check_range("read_time_s", self.read_time_s, 0, low_open=True)
        check_range("pulse_width_s", self.pulse_width_s, 0, low_open=True)
        object.__setattr__(
            self, "bit_length",
            check_range("bit_length", self.bit_length, 1, MAX_PULSES_PER_UPDATE, integer=True),
        )
        check_range("clock_hz", self.clock_hz, 0, low_open=True)
        # the longest cycle: the whole model on one stage, the largest micro-batch
        longest = (self.layers * _MAX_WORK * self.read_time_s + self.update_time_s) * self.clock_hz
        if not math.isfinite(longest):
            raise ParameterError(
                f"read_time_s={self.read_time_s:g} with clock_hz={self.clock_hz:g}, "
                f"pulse_width_s={self.pulse_width_s:g} and layers={self.layers} gives cycle "
                "times beyond the float range of clock periods; use seconds and Hz"
            )

    @property
    def update_time_s(self) -> float:
        r"""Seconds of one pulsed update, :math:`\mathrm{BL}\; t_\mathrm{pulse}`."""
        return self.bit_length * self.pulse_width_s

    def layers_per_stage(self, stages):
        r"""Layers on the slowest stage, :math:`\lceil \ell / M \rceil` (even split); vectorised."""
        try:
            stages = _check_integers("stages", stages, 1, self.layers)
        except ParameterError as error:
            raise ParameterError(
                f"{error} (every stage holds at least one of the model's layers={self.layers})"
            ) from None
        out = -(-self.layers // stages)
        return out[()] if out.ndim == 0 else out

    def stage_time_s(self, mvms_per_micro_batch):
        r"""Cycle time of a stage doing ``mvms_per_micro_batch`` MVMs per forward (or backward).

        :math:`\lceil f_\mathrm{clk}(W t_\mathrm{read} + \mathrm{BL}\, t_\mathrm{pulse})\rceil /
        f_\mathrm{clk}` for ``W`` MVMs; the primitive the planner uses for an uneven partition
        (``W`` = the slowest stage's MVMs per micro-batch). Vectorised over ``W``. A relative
        slack of 1e-9 absorbs floating-point error in the rounding (80 ns at 1 GHz is 80 periods).
        """
        work = np.asarray(mvms_per_micro_batch, dtype=float)
        raw = (work * self.read_time_s + self.update_time_s) * self.clock_hz
        if not np.all(np.isfinite(raw)):
            bad = work[~np.isfinite(raw)].flat[0].item()
            raise ParameterError(
                f"mvms_per_micro_batch={bad:g} gives a cycle time beyond the float range of "
                f"clock periods (read_time_s={self.read_time_s:g}, clock_hz={self.clock_hz:g})"
            )
        periods = np.ceil(raw * (1 - ROUNDING_SLACK))
        out = periods / self.clock_hz
        return out[()] if out.ndim == 0 else out

    def cycle_time_s(self, stages, micro_batch_size):
        r"""Seconds per pipeline clock cycle, :math:`t_\mathrm{cycle}(M, b)`; vectorised.

        Parameters
        ----------
        stages : int or array of int
            ``M``, pipeline stages, ``1 <= M <= layers``.
        micro_batch_size : int or array of int
            ``b``, samples per micro-batch, >= 1.
        """
        b = _check_integers("micro_batch_size", micro_batch_size, 1)
        return self.stage_time_s(self.layers_per_stage(stages) * b)

    def seconds(self, cycles, stages, micro_batch_size):
        r"""Seconds for ``cycles`` pipeline clock cycles, :math:`C\, t_\mathrm{cycle}(M, b)`.

        Parameters
        ----------
        cycles : float or array
            Pipeline clock cycles (``theory.complexity`` cycle counts), >= 0 (``inf`` gives
            ``inf``; NaN is an error).
        stages, micro_batch_size : int or array of int
            ``M`` and ``b`` (see :meth:`cycle_time_s`).
        """
        cycles = np.asarray(cycles, dtype=float)
        bad = np.isnan(cycles) | (cycles < 0)
        if np.any(bad):
            check_range("cycles", float(cycles[bad].flat[0]), 0)
        out = cycles * self.cycle_time_s(stages, micro_batch_size)
        return out[()] if np.ndim(out) == 0 else out


def _check_integers(name: str, values, low: int, high: int | None = None) -> np.ndarray:
    """Return ``values`` as an integer array, or raise the ParameterError of the first bad entry."""
    arr = np.asarray(values)
    if arr.dtype == object or arr.dtype.kind not in "iufb":  # e.g. an integer beyond int64
        for value in np.atleast_1d(arr).ravel():
            check_range(name, value, low, high, integer=True)
            check_range(name, value, low, _INT64_MAX, integer=True)
        arr = arr.astype(np.int64)
    flat = np.atleast_1d(arr).ravel()
    bad = ~np.isfinite(flat.astype(float)) | (flat != np.round(flat)) | (flat < low)
    if high is not None:
        bad |= flat > high
    if np.any(bad):
        check_range(name, flat[bad][0].item(), low, high, integer=True)
    return arr.astype(np.int64)
